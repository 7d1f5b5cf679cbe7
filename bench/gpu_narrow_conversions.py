"""f32 -> E2M1 / E4M3 / E8M0 software conversions on the GPU: every f32 bit pattern, and speed.

    python bench/gpu_narrow_conversions.py --out DIR [--log2-total 32]

A CuTeDSL kernel converts with the plain `TensorSSA.to(...)`; `truncf-to-select` runs in
the compile through `cute_lowering.prelowering` (no arch given: always the software path,
also for E4M3, which sm_90a could do in hardware). The results are compared on the GPU
with references written here in torch, independent of the pass:
- E2M1: the nearest of the 8 magnitudes in float64, ties to the even code; |x| > 6 and
  ±inf -> ±6; NaN -> +6; the sign kept for -0 and values rounding to 0.
- E4M3: torch's own float32 -> float8_e4m3fn after clamping to ±448; NaN -> 0x7F.
- E8M0 upward: 2^ceil(log2 x) from torch.frexp in float64; <= 2^-127 (0 and negatives too)
  -> 0x00; above 2^127 and +inf -> 0xFE; NaN -> 0xFF.
Speed: f32 and bf16 buffers converted to packed E2M1 against a device copy of the same
number of bytes (read + written), in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch


import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402

import cute_lowering  # noqa: E402
from cuda_timing import median_ms  # noqa: E402

THREADS = 256
PER_THREAD = 16  # values per thread: 64 B of f32 in, 8 B of E2M1 out


def converter(target, per_thread=PER_THREAD):
    @cute.kernel
    def convert_kernel(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        tile = bidx * THREADS + tidx
        values = cute.local_tile(src, (per_thread,), (tile,)).load()
        cute.local_tile(dst, (per_thread,), (tile,)).store(values.to(target))

    @cute.jit
    def launch(src: cute.Tensor, raw_dst: cute.Tensor):
        dst = cute.recast_tensor(raw_dst, target)
        blocks = src.shape[0] // (THREADS * per_thread)
        convert_kernel(src, dst).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1))

    return launch


def compile_converter(target, src, dst, pipeline):
    with cute_lowering.prelowering(pipeline):
        compiled = cute.compile(converter(target), from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16))
    report = cute_lowering.last_report()
    return compiled, report


def unpack_nibbles(packed: torch.Tensor) -> torch.Tensor:
    low = packed & 0xF
    high = packed >> 4
    return torch.stack((low, high), dim=1).reshape(-1)


E2M1_GRID = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)


def e2m1_reference(x: torch.Tensor) -> torch.Tensor:
    grid = E2M1_GRID.to(x.device)
    # satfinite: every magnitude above 6 (inf too) becomes 6; clamping first also keeps
    # the float64 distances below exact for huge |x|
    a = x.double().abs().clamp(max=6.0)
    distance = (a[:, None] - grid[None, :]).abs()
    nearest = distance == distance.min(dim=1, keepdim=True).values
    preference = nearest.to(torch.int8) * (2 - (torch.arange(8, device=x.device) % 2)).to(torch.int8)
    code = preference.argmax(dim=1).to(torch.uint8)
    sign = torch.signbit(x).to(torch.uint8) * 8
    nan = torch.isnan(x)
    return torch.where(nan, torch.full_like(code, 7), code | sign)


def e4m3_reference(x: torch.Tensor) -> torch.Tensor:
    clamped = x.clamp(-448.0, 448.0)
    code = clamped.to(torch.float8_e4m3fn).view(torch.uint8)
    return torch.where(torch.isnan(x), torch.full_like(code, 0x7F), code)


def e8m0_upward_reference(x: torch.Tensor) -> torch.Tensor:
    d = x.double()
    mantissa, exponent = torch.frexp(d)  # d = mantissa * 2^exponent, mantissa in [0.5, 1)
    power = torch.where(mantissa == 0.5, exponent - 1, exponent)  # 2^ceil(log2 d)
    code = (power + 127).clamp(0, 254)
    code = torch.where(d <= 2.0**-127, torch.zeros_like(code), code)
    code = torch.where(torch.isinf(d) & (d > 0), torch.full_like(code, 254), code)
    code = torch.where(torch.isnan(d), torch.full_like(code, 255), code)
    return code.to(torch.uint8)


CASES = {
    # name: (target type, pipeline, reference, codes per byte)
    "e2m1_fma": (cutlass.Float4E2M1FN, "builtin.module(truncf-to-select)", e2m1_reference, 2),
    "e2m1_select": (cutlass.Float4E2M1FN, "builtin.module(truncf-to-select{e2m1=select})", e2m1_reference, 2),
    "e4m3": (cutlass.Float8E4M3FN, "builtin.module(truncf-to-select)", e4m3_reference, 1),
    "e8m0_upward": (cutlass.Float8E8M0FNU, "builtin.module(truncf-to-select)", e8m0_upward_reference, 1),
}


def exhaustive(name, log2_total, log2_chunk, out):
    target, pipeline, reference, per_byte = CASES[name]
    n = 1 << log2_chunk
    src = torch.empty(n, dtype=torch.int32, device="cuda")
    dst = torch.empty(n // per_byte, dtype=torch.uint8, device="cuda")
    compiled, report = compile_converter(target, src.view(torch.float32), dst, pipeline)
    mismatches, examples, start = 0, [], time.perf_counter()
    for chunk in range(1 << (log2_total - log2_chunk)):
        base = chunk * n - (1 << 31)
        src.copy_(torch.arange(base, base + n, dtype=torch.int64, device="cuda").to(torch.int32))
        x = src.view(torch.float32)
        dst.fill_(0xAA)
        compiled(from_dlpack(x, assumed_align=16), from_dlpack(dst, assumed_align=16))
        got = unpack_nibbles(dst) if per_byte == 2 else dst
        for lo in range(0, n, 1 << 24):
            want = reference(x[lo : lo + (1 << 24)])
            bad = (got[lo : lo + (1 << 24)] != want).nonzero().flatten()
            mismatches += bad.numel()
            for i in bad[: max(0, 5 - len(examples))].tolist():
                bits = int(src[lo + i].item()) & 0xFFFFFFFF
                examples.append({"bits": hex(bits), "got": int(got[lo + i]), "want": int(want[i])})
    torch.cuda.synchronize()
    result = {
        "case": name,
        "patterns": 1 << log2_total,
        "mismatches": mismatches,
        "examples": examples,
        "seconds": round(time.perf_counter() - start, 1),
        "pipeline": pipeline,
        "rewritten": report.rewritten,
    }
    print(json.dumps(result), flush=True)
    return result


def bandwidth(src_dtype, n, pipeline):
    src = torch.randn(n, device="cuda", dtype=torch.float32).mul_(3).to(src_dtype)
    dst = torch.empty(n // 2, dtype=torch.uint8, device="cuda")
    compiled, _ = compile_converter(cutlass.Float4E2M1FN, src, dst, pipeline)
    a, b = from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16)
    moved = src.numel() * src.element_size() + dst.numel()
    ours = median_ms(lambda: compiled(a, b), repeat=30)
    copy_src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
    copy_dst = torch.empty_like(copy_src)
    peer = median_ms(lambda: copy_dst.copy_(copy_src), repeat=30)
    return {
        "source": str(src_dtype).replace("torch.", ""),
        "elements": n,
        "pipeline": pipeline,
        "ours_ms": round(ours, 4),
        "copy_ms": round(peer, 4),
        "ours_GBps": round(moved / ours / 1e6, 1),
        "copy_GBps": round(moved / peer / 1e6, 1),
        "ratio": round(peer / ours, 3),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--log2-total", type=int, default=32)
    parser.add_argument("--log2-chunk", type=int, default=28)
    parser.add_argument("--only", default="", help="comma-separated cases; empty: all, plus the bandwidth runs")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = {"gpu": torch.cuda.get_device_name(), "exhaustive": [], "bandwidth": []}
    for name in args.only.split(",") if args.only else CASES:
        results["exhaustive"].append(exhaustive(name, args.log2_total, args.log2_chunk, args.out))
    for dtype in () if args.only else (torch.float32, torch.bfloat16):
        for pipeline in ("builtin.module(truncf-to-select)", "builtin.module(truncf-to-select{e2m1=select})"):
            row = bandwidth(dtype, 1 << 28, pipeline)
            print(json.dumps(row), flush=True)
            results["bandwidth"].append(row)
    with open(os.path.join(args.out, "narrow_conversions.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
