"""NVFP4 quantize on the GPU: effective bandwidth against a device copy and torch.compile, latency, SASS.

    python bench/nvfp4_bench.py --out DIR     (on the GPU machine, CuTeDSL staged)

Effective bandwidth = (bytes read + bytes written) / time: M*K*2 in (bf16), M*K/2
codes and M*K/16 scales out. The peer is `dst.copy_(src)` moving the same number of
bytes in the same run. torch.compile runs `torch_quantize`, a torch transcription of
the same semantics (also checked bit for bit against ours). Kernel times are CUDA-event
medians over back-to-back launches of the compiled kernel (the API's Python wrapper
adds its own cost: reported separately for the latency shape, where launches are also
timed replayed from a CUDA graph, the GPU's own time without Python's launch cost).

SASS: the cubin CuTeDSL keeps (CUTE_DSL_KEEP=cubin), `cuobjdump --dump-sass`; the
instructions per element are the difference between builds with 8 and 4 blocks per
thread (both the full-tile and the tail path grow by 4 blocks), over 2 * 4 * 16.

Writes DIR/results.json (entries `nvfp4_quantize_<M>x<K>`: ours, peer, ratio, unit,
gpu, date, merged into bench/results.json when that exists), DIR/nvfp4_bench.md and
DIR/*.sass.
"""

from __future__ import annotations

import os

os.environ.setdefault("CUTE_DSL_KEEP", "cubin")

import argparse
import datetime
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import torch  # noqa: E402

from cute_lowering.kernels import nvfp4  # noqa: E402
from cute_lowering.kernels.torch_device import arch_of  # noqa: E402
from cuda_timing import graph_ms, median_ms  # noqa: E402

SHAPES = [(8192, 8192), (16384, 16384), (4096, 7168)]
LATENCY_SHAPE = (16, 7168)


def torch_quantize(x, gs):
    """The same NVFP4 semantics in torch (for torch.compile): packed codes, scale bits."""
    m, k = x.shape
    xf = x.float().view(m, k // 16, 16)
    a = xf.abs()
    amax = torch.where(torch.isnan(a), 0.0, a).amax(-1)
    sf = gs * (amax * torch.tensor(1.0 / 6.0, dtype=torch.float32))
    sf8 = sf.clamp(max=448.0).to(torch.float8_e4m3fn)
    sff = sf8.float()
    scale = torch.where(sff != 0, 1.0 / (sff * (1.0 / gs)), 0.0)
    y = xf * scale[..., None]
    ay = y.abs()
    code = (
        (ay > 0.25).int() + (ay >= 0.75).int() + (ay > 1.25).int() + (ay >= 1.75).int()
        + (ay > 2.5).int() + (ay >= 3.5).int() + (ay > 5.0).int()
    )
    code = torch.where(torch.isnan(y), 7, code + torch.signbit(y).int() * 8).view(m, k)
    packed = (code[:, 0::2] | (code[:, 1::2] << 4)).to(torch.uint8)
    return packed, sf8.view(torch.uint8).view(m, k // 16)


def torch_global_scale(x):
    """448 * 6 / amax(|x|) over the finite elements, 1 when that is 0 (cute_lowering.kernels.nvfp4's rule)."""
    a = x.float().abs()
    amax = torch.where(torch.isfinite(a), a, 0.0).amax()
    return torch.where(amax > 0, torch.full_like(amax, 2688.0) / amax, 1.0)


def with_global_scale(x, packed, scales):
    """A zero-argument launcher: the global amax kernel, the scale, then the quantize kernel."""
    fn = nvfp4.compile_quantize("bfloat16", arch_of(x.device), "plain")
    stream = nvfp4._stream(torch, x.device)

    def launch():
        gs = nvfp4.compute_global_scale(x)
        fn(*nvfp4.quantize_arguments(x, packed, scales, gs), stream)

    return launch


def kernel_call(x, variant="plain", per_thread=None):
    """A zero-argument launcher of the compiled kernel on prebuilt arguments (no API overhead)."""
    m, k = x.shape
    packed = torch.empty((m, k // 2), dtype=torch.uint8, device=x.device)
    scales = torch.empty((m, k // 16), dtype=torch.uint8, device=x.device)
    gs = nvfp4.compute_global_scale(x).reshape(1).contiguous()
    kwargs = {} if per_thread is None else {"per_thread": per_thread}
    fn = nvfp4.compile_quantize("bfloat16", arch_of(x.device), variant, **kwargs)
    args = (*nvfp4.quantize_arguments(x, packed, scales, gs), nvfp4._stream(torch, x.device))
    return (lambda: fn(*args)), packed, scales, gs


def sass_of(compiled, path: Path):
    cubin = compiled.__cubin__
    tool = shutil.which("cuobjdump")
    if not isinstance(cubin, (bytes, bytearray)) or tool is None:
        return None
    cub = path.with_suffix(".cubin")
    cub.write_bytes(cubin)
    text = subprocess.run([tool, "--dump-sass", str(cub)], capture_output=True, text=True).stdout
    path.write_text(text)
    cub.unlink()
    ops = [m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", text)]
    return [o for o in ops if not o.startswith("NOP")]


def histogram(ops):
    h = {}
    for o in ops:
        base = o.split(".")[0]
        h[base] = h.get(base, 0) + 1
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "nvfp4_out")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    gpu = torch.cuda.get_device_name(dev)
    date = datetime.date.today().isoformat()
    results, md = {}, [f"# NVFP4 quantize on {gpu} ({date})", ""]
    compiled_ref = torch.compile(torch_quantize)

    md += ["| shape | ours GB/s | copy GB/s | ours/copy | torch.compile GB/s | ours/compile | fptosi variant GB/s | ours ms | compile bit-exact |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    compiled_full = torch.compile(lambda x: torch_quantize(x, torch_global_scale(x)))
    md_gs = [
        "",
        "With the global scale computed in the same call (ours: the amax kernel, then quantize; "
        "torch.compile: amax and quantize in one compiled function); GB/s over the same bytes as above:",
        "",
        "| shape | ours ms | ours GB/s | torch.compile ms | torch.compile GB/s | torch.compile / ours |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for m, k in SHAPES[:1] if args.quick else SHAPES:
        n = m * k
        moved = n * 2 + n // 2 + n // 16
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        call, packed, scales, gs = kernel_call(x)
        iters = max(5, int(2e10 // moved))
        t_ours = median_ms(call, repeat=7, iters=iters)
        call_f, packed_f, scales_f, _ = kernel_call(x, "fptosi")
        t_fptosi = median_ms(call_f, repeat=7, iters=iters)
        src = torch.empty(moved // 2, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        t_copy = median_ms(lambda: dst.copy_(src), repeat=7, iters=iters)
        g = gs.reshape(())
        cp, cs = compiled_ref(x, g)
        t_comp = median_ms(lambda: compiled_ref(x, g), repeat=7, iters=iters)
        # with the global scale computed too (the amax read of x included), both sides
        launch_with_amax = with_global_scale(x, packed, scales)
        t_ours_gs = median_ms(launch_with_amax, repeat=7, iters=iters)
        t_comp_gs = median_ms(lambda: compiled_full(x), repeat=7, iters=iters)
        call()
        call_f()
        torch.cuda.synchronize()
        exact = bool(torch.equal(cp, packed) and torch.equal(cs, scales))
        exact_f = bool(torch.equal(packed_f, packed) and torch.equal(scales_f, scales))
        bw = lambda t: moved / (t * 1e-3) / 1e9  # noqa: E731
        key = f"nvfp4_quantize_{m}x{k}"
        results[key] = {
            "ours": round(bw(t_ours), 1),
            "peer": round(bw(t_copy), 1),
            "ratio": round(t_copy / t_ours, 3),
            "unit": "GB/s (bytes read + written)",
            "gpu": gpu,
            "date": date,
            "ours_ms": round(t_ours, 4),
            "copy_ms": round(t_copy, 4),
            "torch_compile": round(bw(t_comp), 1),
            "ratio_vs_torch_compile": round(t_comp / t_ours, 2),
            "fptosi_variant": round(bw(t_fptosi), 1),
            "with_global_scale_ms": round(t_ours_gs, 4),
            "torch_compile_with_global_scale_ms": round(t_comp_gs, 4),
            "torch_compile_bit_exact": exact,
            "fptosi_variant_bit_exact": exact_f,
        }
        r = results[key]
        md.append(
            f"| {m}x{k} | {r['ours']:.0f} | {r['peer']:.0f} | {r['ratio']:.3f} | {r['torch_compile']:.0f} | "
            f"{r['ratio_vs_torch_compile']:.2f}x | {r['fptosi_variant']:.0f} | {t_ours:.3f} | {exact} / fptosi {exact_f} |"
        )
        print(md[-1], flush=True)
        md_gs.append(
            f"| {m}x{k} | {t_ours_gs:.3f} | {bw(t_ours_gs):.0f} | {t_comp_gs:.3f} | {bw(t_comp_gs):.0f} | {t_comp_gs / t_ours_gs:.2f}x |"
        )
        del x, src, dst, packed, scales, cp, cs, packed_f, scales_f
        torch.cuda.empty_cache()

    md += md_gs
    print("\n".join(md_gs), flush=True)
    # latency of a small (decode-sized) tensor: back-to-back launches from Python (what a
    # caller pays without graphs) and per launch inside a CUDA graph (the GPU's own time)
    m, k = LATENCY_SHAPE
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    call, packed, scales, gs = kernel_call(x)
    t_kernel = median_ms(call, repeat=7, iters=2000)
    fn = nvfp4.compile_quantize("bfloat16", arch_of(dev), "plain")
    pointers = nvfp4.quantize_arguments(x, packed, scales, gs)
    g_ours = graph_ms(lambda: fn(*pointers, nvfp4._stream(torch, dev)))
    nvfp4.quantize(x, gs)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(2000):
        nvfp4.quantize(x, gs)
    torch.cuda.synchronize()
    t_api = (time.perf_counter() - t0) / 2000 * 1e3
    t_comp = median_ms(lambda: compiled_ref(x, gs), repeat=7, iters=2000)
    g_comp = graph_ms(lambda: compiled_ref(x, gs))
    results[f"nvfp4_quantize_{m}x{k}_latency"] = {
        "ours": round(t_kernel * 1e3, 2),
        "peer": round(t_comp * 1e3, 2),
        "ratio": round(t_comp / t_kernel, 3),  # higher is better, like the bandwidth entries
        "unit": "us per call (back-to-back launches; peer: torch.compile of the reference; ratio = peer / ours)",
        "api_us": round(t_api * 1e3, 2),
        "graph_us": None if g_ours is None else round(g_ours * 1e3, 2),
        "peer_graph_us": None if g_comp is None else round(g_comp * 1e3, 2),
        "gpu": gpu,
        "date": date,
    }
    shown = lambda t: "n/a" if t is None else f"{t * 1e3:.2f}"  # noqa: E731
    md += [
        "",
        f"Latency {m}x{k}, us per call: ours {t_kernel * 1e3:.2f} launched back-to-back from Python, "
        f"{shown(g_ours)} inside a CUDA graph, {t_api * 1e3:.2f} through `nvfp4.quantize` (checks + pointers); "
        f"torch.compile {t_comp * 1e3:.2f} back-to-back, {shown(g_comp)} inside a CUDA graph",
        "",
    ]
    print(md[-2], flush=True)

    # SASS: instructions per element from the difference of two unrolls
    md += ["| build (sm_90a) | SASS instrs, 4 blocks/thread | 8 blocks/thread | per element | per-element opcodes |", "| --- | --- | --- | --- | --- |"]
    arch = arch_of(dev)
    for variant in ("plain", "fptosi"):
        counts = {}
        for bpt in (4, 8):
            compiled = nvfp4.compile_quantize("bfloat16", arch, variant, bpt)
            counts[bpt] = sass_of(compiled, args.out / f"quantize_{variant}_{arch}_bpt{bpt}.sass")
        if counts[4] is None:
            md.append(f"| {variant} | no SASS (no cubin or cuobjdump) | | | |")
            continue
        h4, h8 = histogram(counts[4]), histogram(counts[8])
        per = {op: (h8.get(op, 0) - h4.get(op, 0)) / 128 for op in set(h4) | set(h8)}
        per = {op: round(v, 2) for op, v in sorted(per.items(), key=lambda kv: -kv[1]) if v}
        total = (len(counts[8]) - len(counts[4])) / 128
        # not `nvfp4_quantize_*`: those keys are the bandwidth cases (ours, peer, ratio)
        results[f"sass_nvfp4_quantize_{variant}_{arch}"] = {"instrs_bpt4": len(counts[4]), "instrs_bpt8": len(counts[8]), "per_element": round(total, 2), "per_element_by_opcode": per}
        md.append(f"| {variant} | {len(counts[4])} | {len(counts[8])} | {total:.2f} | {', '.join(f'{o} {v}' for o, v in per.items())} |")
        print(md[-1], flush=True)

    merged = {}
    existing = ROOT / "bench" / "results.json"
    if existing.exists():
        merged = json.loads(existing.read_text())
    merged.update(results)
    (args.out / "results.json").write_text(json.dumps(merged, indent=2) + "\n")
    (args.out / "nvfp4_bench.md").write_text("\n".join(md) + "\n")
    if existing.exists() or args.out.resolve() == (ROOT / "bench").resolve():
        existing.write_text(json.dumps(merged, indent=2) + "\n")


if __name__ == "__main__":
    main()
