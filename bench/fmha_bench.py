"""FMHA forward on the GPU: our CuTeDSL kernel against torch SDPA (cuDNN / flash backends), same run.

    python bench/fmha_bench.py --out DIR [--iters 20]
    python bench/fmha_bench.py --out DIR --exp2 [--iters 20]   # exp2 on the FMA units

`--exp2` times, instead, our kernel with part of the score exp2s on the FMA units
(`exp2_on_fma` 1/4 and 1/2, "natural" and "magic") against the all-MUFU build on
EXP2_CASES (non-causal), entries `attention_exp2_<impl>_<fraction>_<case>`: TFLOP/s, ratio to
MUFU, written to DIR/fmha_exp2_bench.md.

TFLOP/s counts the two matmuls: 4 * B * H * S * S * D (half of that with causal), bf16
inputs [B, S, H, D]. The peer is torch's scaled_dot_product_attention on [B, H, S, D]
views restricted to its cuDNN and flash backends (whichever torch picks of the two).
FlashAttention-4 is not installed on the GPU machine: not measured.
Writes DIR/results.json (entries `attention_vs_sdpa_<case>`: ours, peer, ratio = ours/peer, unit, gpu,
date), merged into bench/results.json, and DIR/fmha_bench.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]

from cuda_timing import median_ms  # noqa: E402

CASES = [(4, 16, 4096, 128), (2, 16, 8192, 128), (4, 16, 4096, 64), (1, 32, 16384, 128)]
EXP2_CASES = [(4, 16, 4096, 64), (2, 16, 8192, 128)]
EXP2_VARIANTS = [("mufu", 0.0), ("magic", 0.25), ("natural", 0.25), ("magic", 0.5), ("natural", 0.5)]


def exp2_bench(torch, fmha, args, gpu, date):
    results, md = {}, ["| case | exp2 | on FMA | TFLOP/s | ms | vs MUFU |", "| --- | --- | --- | --- | --- | --- |"]
    for b, h, s, d in EXP2_CASES:
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        flops = 4 * b * h * s * s * d
        base = None
        for impl, frac in EXP2_VARIANTS:
            ms = median_ms(lambda: fmha.attention(q, k, v, exp2_on_fma=frac, exp2_impl=impl if frac else None), repeat=1, iters=args.iters)
            base = base or ms
            case = f"b{b}_h{h}_s{s}_d{d}_full"
            name = f"attention_exp2_{impl}_{frac:g}_{case}"  # `fmha_*` entries are the peer comparison (fmha_peers.py)
            t = flops / ms / 1e9
            results[name] = {
                "ours": round(t, 1), "ratio_vs_mufu": round(base / ms, 3), "ms": round(ms, 3),
                "unit": "TFLOP/s (4*B*H*S^2*D); ratio = MUFU ms / this ms", "gpu": gpu, "date": date,
            }  # fmt: skip
            md.append(f"| {case} | {impl if frac else 'MUFU ex2'} | {frac:g} | {t:.1f} | {ms:.3f} | {base / ms:.3f} |")
            print(md[-1], flush=True)
        del q, k, v
    (args.out / "fmha_exp2_bench.md").write_text("\n".join(md) + "\n")
    return results


def main():
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from cute_lowering.kernels import fmha

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--exp2", action="store_true", help="time the exp2-on-FMA variants instead")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gpu = torch.cuda.get_device_name()
    date = datetime.date.today().isoformat()
    if args.exp2:
        _merge(args.out, exp2_bench(torch, fmha, args, gpu, date), "results_exp2.json")
        return
    results, md = {}, ["| case | ours TFLOP/s | SDPA TFLOP/s | ratio | ours ms |", "| --- | --- | --- | --- | --- |"]
    for b, h, s, d in CASES:
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))
        for causal in (False, True):
            flops = 4 * b * h * s * s * d / (2 if causal else 1)
            ours = median_ms(lambda: fmha.attention(q, k, v, causal=causal), repeat=1, iters=args.iters)
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION]):
                peer = median_ms(lambda: torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal), repeat=1, iters=args.iters)
            name = f"attention_vs_sdpa_b{b}_h{h}_s{s}_d{d}_{'causal' if causal else 'full'}"  # `fmha_*`: FA3/FA4/cuDNN (fmha_peers.py)
            t_ours, t_peer = flops / ours / 1e9, flops / peer / 1e9
            results[name] = {
                "ours": round(t_ours, 1),
                "peer": round(t_peer, 1),
                "ratio": round(t_ours / t_peer, 3),
                "unit": "TFLOP/s (4*B*H*S^2*D, /2 causal; peer torch SDPA cuDNN/flash)",
                "gpu": gpu,
                "date": date,
                "ours_ms": round(ours, 3),
                "peer_ms": round(peer, 3),
            }
            md.append(f"| {name} | {t_ours:.1f} | {t_peer:.1f} | {t_ours / t_peer:.3f} | {ours:.3f} |")
            print(md[-1], flush=True)
        del q, k, v, qt, kt, vt
    (args.out / "fmha_bench.md").write_text("\n".join(md) + "\n")
    _merge(args.out, results, "results.json")


def _merge(out, results, name):
    """DIR/<name>, and the entries merged into bench/results.json when it exists."""
    (out / name).write_text(json.dumps(results, indent=2) + "\n")
    existing = ROOT / "bench" / "results.json"
    if existing.exists():
        merged = json.loads(existing.read_text())
        merged.update(results)
        existing.write_text(json.dumps(merged, indent=2) + "\n")


if __name__ == "__main__":
    main()
