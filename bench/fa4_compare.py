"""FlashAttention-4 with and without our hook, and FA4 against our FMHA (H200).

    python bench/fa4_compare.py outputs --out plain.pt                      # FA4 as shipped
    python -m cute_lowering.run bench/fa4_compare.py outputs --out hooked.pt      # FA4 + auto hook
    python bench/fa4_compare.py compare plain.pt hooked.pt
    python bench/fa4_compare.py bench --out fa4_bench.json

`outputs` runs FA4's forward (flash-attn-4 4.0.0b36, its own CuTeDSL kernels) on fixed
random inputs and saves out and LSE; under `python -m cute_lowering.run` every one of its
compiles goes through our `auto` pipeline first, and what our passes did is saved too.
`compare` demands bit-identical tensors. `bench` times FA4 and `cute_lowering.kernels.fmha` on the
issue's shapes in one process (median of CUDA-event timings, TFLOP/s counting only the
unmasked score area): "ours" is the default path (wgmma on the H200), "ours_mma_sync"
the mma.sync path on the same inputs; it writes only its --out file. The comparison with
FA3, FA4 and cuDNN together, and results.json's `fmha_*` entries: `bench/fmha_peers.py`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys

import torch


from cuda_timing import median_ms  # noqa: E402

OUTPUT_CASES = [
    # (B, H, Hkv, S, D, causal, window, sink)
    (2, 8, 8, 1000, 128, False, (-1, -1), False),
    (2, 8, 2, 1000, 128, True, (-1, -1), True),
    (1, 8, 8, 2048, 64, True, (256, 0), False),
]
BENCH_CASES = [
    (4, 16, 4096, 128, False, (-1, -1), False),
    (4, 16, 4096, 128, True, (-1, -1), False),
    (2, 16, 8192, 128, False, (-1, -1), False),
    (2, 16, 8192, 128, True, (-1, -1), False),
    (4, 16, 4096, 64, False, (-1, -1), False),
    (4, 16, 4096, 64, True, (-1, -1), False),
    (1, 32, 16384, 128, False, (-1, -1), False),
    (1, 32, 16384, 128, True, (-1, -1), False),
    (4, 16, 4096, 128, True, (1024, 0), False),
    (4, 16, 4096, 128, False, (-1, -1), True),
]


def fa4(q, k, v, causal, window, sink):
    from flash_attn.cute import flash_attn_func

    left, right = window
    window_size = (None if left < 0 else left, None if right < 0 else right)
    out = flash_attn_func(q, k, v, causal=causal, window_size=window_size, learnable_sink=sink, return_lse=True)
    return out if isinstance(out, tuple) else (out, None)


def inputs(b, h, hkv, s, d, sink, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, s, h, d, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(b, s, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(b, s, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
    sinks = torch.randn(h, device="cuda", generator=g).float() if sink else None
    return q, k, v, sinks


def outputs(path):
    import cute_lowering

    saved = {}
    for case in OUTPUT_CASES:
        b, h, hkv, s, d, causal, window, sink = case
        q, k, v, sinks = inputs(b, h, hkv, s, d, sink)
        out, lse = fa4(q, k, v, causal, window, sinks)
        saved[str(case)] = {"out": out.cpu(), "lse": None if lse is None else lse.cpu()}
    reports = [
        {"function": r.function, "arch": r.arch, "pipeline": r.pipeline, "seconds": r.seconds,
         "passes": {p.name: p.counts for p in r.passes}}
        for r in cute_lowering.reports()
    ]
    torch.save({"tensors": saved, "reports": reports}, path)
    print(f"{len(saved)} cases, {len(reports)} compiles went through our passes")
    for r in reports:
        print(" ", r["function"][:80], r["arch"], {k: {c: n for c, n in v.items() if n} for k, v in r["passes"].items()})


def compare(plain_path, hooked_path):
    plain, hooked = torch.load(plain_path), torch.load(hooked_path)
    assert plain["reports"] == [], "the plain run must not have gone through our passes"
    assert hooked["reports"], "the hooked run saw no compile"
    same = True
    for case, tensors in plain["tensors"].items():
        for name, t in tensors.items():
            other = hooked["tensors"][case][name]
            equal = (t is None and other is None) or torch.equal(t.view(torch.uint8) if t.dtype == torch.bfloat16 else t, other.view(torch.uint8) if other.dtype == torch.bfloat16 else other)
            print(f"{case} {name}: {'identical' if equal else 'DIFFERENT'}")
            same &= bool(equal)
    rewritten = sum(n.get("rewritten", 0) for r in hooked["reports"] for n in r["passes"].values())
    print(f"{len(hooked['reports'])} hooked compiles, {rewritten} ops rewritten; outputs {'bit-identical' if same else 'DIFFER'}")
    return 0 if same else 1


def score_pairs(s, causal, window):
    """Unmasked (query, key) pairs for square S, bottom-right aligned."""
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    total = 0
    for i in range(s):
        lo = 0 if left < 0 else max(0, i - left)
        hi = s - 1 if right < 0 else min(s - 1, i + right)
        total += max(0, hi - lo + 1)
    return total


def bench(out_path):
    from cute_lowering.kernels import fmha

    rows, gpu, today = [], torch.cuda.get_device_name(), datetime.date.today().isoformat()
    for b, h, s, d, causal, window, sink in BENCH_CASES:
        q, k, v, sinks = inputs(b, h, h, s, d, sink)
        flops = 4 * b * h * d * score_pairs(s, causal, window)
        ours = median_ms(lambda: fmha.attention(q, k, v, causal=causal, window=window, sink=sinks))
        ours_mma_sync = median_ms(lambda: fmha.attention(q, k, v, causal=causal, window=window, sink=sinks, path="mma_sync"))
        peer = median_ms(lambda: fa4(q, k, v, causal, window, sinks))
        name = f"fmha_vs_fa4_b{b}_h{h}_s{s}_d{d}" + ("_causal" if causal else "") + (
            f"_window{window[0]}" if window[0] >= 0 else "") + ("_sink" if sink else "")
        row = {"name": name, "ours": round(flops / ours / 1e9, 1), "peer": round(flops / peer / 1e9, 1),
               "ratio": round(peer / ours, 3), "unit": "TFLOP/s (peer: FlashAttention-4 4.0.0b36)",
               "gpu": gpu, "date": today, "ours_ms": round(ours, 3), "peer_ms": round(peer, 3),
               "ours_mma_sync": round(flops / ours_mma_sync / 1e9, 1), "ours_mma_sync_ms": round(ours_mma_sync, 3)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    with open(out_path, "w") as f:
        json.dump(rows, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    o = sub.add_parser("outputs")
    o.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("plain")
    c.add_argument("hooked")
    bn = sub.add_parser("bench")
    bn.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.mode == "outputs":
        outputs(args.out)
    elif args.mode == "compare":
        sys.exit(compare(args.plain, args.hooked))
    else:
        bench(args.out)


if __name__ == "__main__":
    main()
