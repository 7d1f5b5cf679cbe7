"""The decode path's knobs on the H200: split counts around `choose_splits`, and decode against wgmma.

    python bench/fmha_decode_sweep.py --out DIR

For each shape: our wgmma path, the decode path with the split count `choose_splits`
gives and with half and twice that, same timer as bench/fmha_peers.py (triton do_bench
median, L2 flushed). Each decode output is checked against the wgmma output first
(relative error <= 1e-2). Writes DIR/fmha_decode_sweep.json and prints a table; what
`choose_splits`' constants (MIN_KEYS, MAX_PACKED_ROWS, CTAS_PER_SM) are measured on.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

# (B, Hq, Hkv, Sq, Sk, D, causal, window, sink)
SHAPES = [
    (8, 32, 4, 1, 4096, 128, False, (-1, -1), False),
    (2, 32, 4, 1, 32768, 128, False, (-1, -1), False),
    (8, 32, 4, 16, 4096, 128, False, (-1, -1), False),
    (2, 32, 4, 16, 32768, 128, False, (-1, -1), False),
    (4, 32, 4, 64, 8192, 128, False, (-1, -1), False),
    (8, 32, 4, 128, 4096, 128, False, (-1, -1), False),
    (8, 32, 4, 1, 1024, 128, False, (-1, -1), False),
    (8, 32, 4, 1, 2048, 128, False, (-1, -1), False),
    (2, 32, 4, 32, 16384, 128, False, (-1, -1), False),
    (32, 32, 4, 1, 8192, 128, False, (-1, -1), False),
    (4, 32, 32, 1, 8192, 128, False, (-1, -1), False),
    (4, 32, 4, 1, 8192, 64, False, (-1, -1), False),
    (2, 32, 4, 16, 16384, 128, True, (-1, -1), False),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    import torch

    from fmha_peers import case_name, make_inputs, time_ms
    from kernels import fmha, fmha_decode

    args.out.mkdir(parents=True, exist_ok=True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    chosen_fn = fmha_decode.choose_splits
    rows = []
    for case in SHAPES:
        b, h, hkv, sq, sk, d, causal, window, sink = case
        q, k, v, _ = make_inputs(torch, case)
        chosen = chosen_fn(b, sq, sk, h, hkv, window[0], 0 if causal else window[1], sms, forced=True)
        row = {"case": case_name(case), "auto_takes_decode": chosen_fn(b, sq, sk, h, hkv, window[0], 0 if causal else window[1], sms) > 0,
               "chosen_splits": chosen}  # fmt: skip
        ref = fmha.attention(q, k, v, causal=causal, window=window, path="wgmma")
        row["wgmma_ms"] = time_ms(lambda: fmha.attention(q, k, v, causal=causal, window=window, path="wgmma"))
        for splits in sorted({max(1, chosen // 2), chosen, min(fmha_decode.MAX_SPLITS, 2 * chosen)}):
            fmha_decode.choose_splits = lambda *a, n=splits, **kw: n
            try:
                out = fmha.attention(q, k, v, causal=causal, window=window, path="decode")
                err = float((out.double() - ref.double()).norm() / ref.double().norm())
                assert err <= 1e-2, f"decode with {splits} splits differs from wgmma: {err}"
                row[f"decode_{splits}_ms"] = time_ms(lambda: fmha.attention(q, k, v, causal=causal, window=window, path="decode"))
            finally:
                fmha_decode.choose_splits = chosen_fn
        best = min((key for key in row if key.startswith("decode_")), key=lambda key: row[key])
        row["best_decode"] = best
        row["wgmma_over_best_decode"] = round(row["wgmma_ms"] / row[best], 3)
        row["wgmma_over_chosen"] = round(row["wgmma_ms"] / row[f"decode_{chosen}_ms"], 3)
        print(json.dumps(row), flush=True)
        rows.append(row)
        del q, k, v, ref
    (args.out / "fmha_decode_sweep.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("| case | auto decode | splits | wgmma ms | decode ms (chosen) | best decode | wgmma / chosen |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        chosen_ms = r["decode_%d_ms" % r["chosen_splits"]]
        best = r["best_decode"]
        print(f"| {r['case']} | {r['auto_takes_decode']} | {r['chosen_splits']} | {r['wgmma_ms']:.4f} | {chosen_ms:.4f} | "
              f"{best} {r[best]:.4f} | {r['wgmma_over_chosen']} |")  # fmt: skip


if __name__ == "__main__":
    main()
