"""The split-KV paths' knobs on the H200: split counts around each `choose_splits`, against wgmma.

    python bench/fmha_decode_sweep.py --out DIR

For each shape: our wgmma path, the decode path (fmha_decode, mma.sync) and the
decode_wgmma path (fmha_sm90's packed split-KV) each with the split count its module's
`choose_splits` gives and with half and twice that, and path "auto" (which kernel it takes
is in the row), same timer as bench/fmha_peers.py (cuda_timing.gpu_ms: L2 flushed, host cost hidden).
Each split-KV output is checked against the wgmma output first (relative error <= 1e-2).
Writes DIR/fmha_decode_sweep.json and prints a table; what the choose_splits constants
(fmha_decode: MIN_KEYS, MAX_PACKED_ROWS, CTAS_PER_SM; fmha_sm90: SPLIT_*) are measured on.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

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
    (2, 32, 4, 128, 32768, 128, False, (-1, -1), False),
    (4, 32, 4, 64, 8192, 128, True, (-1, -1), False),
    (4, 32, 4, 64, 8192, 64, False, (-1, -1), False),
    (2, 32, 8, 128, 16384, 128, False, (-1, -1), False),
    (1, 32, 4, 256, 16384, 128, True, (-1, -1), False),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    import torch

    from fmha_peers import case_name, make_inputs, time_ms
    from cute_lowering.kernels import fmha, fmha_decode, fmha_sm90, ops

    args.out.mkdir(parents=True, exist_ok=True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    # each split-KV path and the module whose choose_splits gives its split count
    paths = {"decode": fmha_decode, "decode_wgmma": fmha_sm90}
    rows = []
    for case in SHAPES:
        b, h, hkv, sq, sk, d, causal, window, sink = case
        q, k, v, _ = make_inputs(torch, case)
        left, right = window[0], 0 if causal else window[1]
        row = {"case": case_name(case), "auto_takes": ops._decode_choice(q, b, sq, sk, h, hkv, left, right, "auto", None)}
        ref = fmha.attention(q, k, v, causal=causal, window=window, path="wgmma")
        row["wgmma_ms"] = time_ms(lambda: fmha.attention(q, k, v, causal=causal, window=window, path="wgmma"))
        for path, module in paths.items():
            if path == "decode_wgmma" and not fmha_sm90.packed_groups(h // hkv):
                continue
            chosen_fn = module.choose_splits
            chosen = chosen_fn(b, sq, sk, h, hkv, left, right, sms, forced=True)
            row[f"{path}_chosen"] = chosen
            for splits in sorted({max(1, chosen // 2), chosen, min(128, 2 * chosen)}):
                module.choose_splits = lambda *a, n=splits, **kw: n
                ops._DECODE_PLANS.clear()  # (the split count is looked up once per call shape)
                try:
                    out = fmha.attention(q, k, v, causal=causal, window=window, path=path)
                    err = float((out.double() - ref.double()).norm() / ref.double().norm())
                    assert err <= 1e-2, f"{path} with {splits} splits differs from wgmma: {err}"
                    row[f"{path}_{splits}_ms"] = time_ms(lambda: fmha.attention(q, k, v, causal=causal, window=window, path=path))
                finally:
                    module.choose_splits = chosen_fn
                    ops._DECODE_PLANS.clear()
        row["auto_ms"] = time_ms(lambda: fmha.attention(q, k, v, causal=causal, window=window))
        timed = [key for key in row if key.endswith("_ms") and key not in ("auto_ms",)]
        row["best"] = min(timed, key=lambda key: row[key])
        print(json.dumps(row), flush=True)
        rows.append(row)
        del q, k, v, ref
    (args.out / "fmha_decode_sweep.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("| case | auto takes | wgmma ms | decode ms (chosen splits) | decode_wgmma ms (chosen splits) | auto ms | best |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        cells = []
        for path in paths:
            n = r.get(f"{path}_chosen")
            cells.append("-" if n is None else f"{r[f'{path}_{n}_ms']:.4f} ({n})")
        print(f"| {r['case']} | {r['auto_takes']} | {r['wgmma_ms']:.4f} | {cells[0]} | {cells[1]} | {r['auto_ms']:.4f} | "
              f"{r['best']} {r[r['best']]:.4f} |")  # fmt: skip


if __name__ == "__main__":
    main()
