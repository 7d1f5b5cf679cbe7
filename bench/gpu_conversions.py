"""GPU verification of `fptosi-to-ptx` and `bitcast-to-ptx` inside real CuTeDSL compiles.

    python bench/gpu_conversions.py --out DIR            # on a machine with a CUDA GPU + torch
    python bench/gpu_conversions.py --out DIR --dry-run  # no GPU: compile everything for sm_90a only

Three parts, results in DIR/results.json and DIR/summary.md:

a. Semantics. For each conversion, a CuTeDSL kernel reads f32 (int32 bit patterns
   reinterpreted in torch with `.view(torch.float32)`), converts the natural CuTeDSL
   way (`cutlass.Int32(x)`, `cutlass.Int32(cute.math.floor(x))`, ...), and is compiled
   three ways: CuTeDSL alone (`native`) and with our pass run in the trace-finalize hook
   (`emit=ptx`, `emit=asm`). Each output is compared on the GPU with an independent
   torch float64 reference: where(isnan(x), 0, clamp(round(x), INT_MIN, INT_MAX)) of
   the destination type; for the bitcast the reference is the input bits. Where
   `arith.fptosi` itself is poison (NaN, out of range) the rewrite's defined result
   is saturation and NaN -> 0: that is exactly what is checked. `native` is reported
   for information only (poison there may be anything).
b. SASS of each conversion per form (cuobjdump of the cubin CuTeDSL keeps).
c. Speed: memory-bound (one conversion per element over 2^28 elements) and
   compute-bound (each thread converts 8192 values in registers), plus whether
   `nvvm.inline_ptx` (side-effecting) blocks CSE and loop-invariant hoisting that
   the pure `llvm.inline_asm` allows.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

if "--dry-run" in sys.argv:
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

# CuTeDSL reads these when it is imported: keep PTX and cubin so part b can disassemble.
_DUMP = tempfile.mkdtemp(prefix="cute_dump_")
os.environ.setdefault("CUTE_DSL_KEEP", "ptx,cubin")
os.environ.setdefault("CUTE_DSL_DUMP_DIR", _DUMP)
os.makedirs(os.environ["CUTE_DSL_DUMP_DIR"], exist_ok=True)  # CuTeDSL writes nothing if it is missing

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass._mlir import ir  # noqa: E402
from cutlass._mlir.dialects import arith  # noqa: E402

import cute_lowering  # noqa: E402
from cuda_timing import samples_ms  # noqa: E402

THREADS = 256
FORMS = ("native", "ptx", "asm")
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


# ---------------------------------------------------------------------------------
# Conversions: name -> (convert(x: Float32) -> DSL int, dest cutlass type, torch dtype
# name, rounding of the reference, (lo, hi), expected PTX in our forms)
# ---------------------------------------------------------------------------------
def _bitcast(x):
    return cutlass.Int32(arith.bitcast(ir.IntegerType.get_signless(32), x.ir_value()))


CASES = {
    "i32": (lambda x: cutlass.Int32(x), cutlass.Int32, "int32", "trunc", (I32_MIN, I32_MAX), "cvt.rzi.s32.f32"),
    "u32": (lambda x: cutlass.Int32(cutlass.Uint32(x)), cutlass.Int32, "int32", "trunc", (0, 2**32 - 1), "cvt.rzi.u32.f32"),
    "i8": (lambda x: cutlass.Int8(x), cutlass.Int8, "int8", "trunc", (-128, 127), "cvt.rzi.s8.f32"),
    "u8": (lambda x: cutlass.Uint8(x), cutlass.Uint8, "uint8", "trunc", (0, 255), "cvt.rzi.u8.f32"),
    "i16": (lambda x: cutlass.Int16(x), cutlass.Int16, "int16", "trunc", (-(2**15), 2**15 - 1), "cvt.rzi.s16.f32"),
    "i64": (lambda x: cutlass.Int64(x), cutlass.Int64, "int64", "trunc", (-(2**63), 2**63 - 1), "cvt.rzi.s64.f32"),
    "i32_floor": (lambda x: cutlass.Int32(cute.math.floor(x)), cutlass.Int32, "int32", "floor", (I32_MIN, I32_MAX), "cvt.rmi.s32.f32"),
    "i32_ceil": (lambda x: cutlass.Int32(cute.math.ceil(x)), cutlass.Int32, "int32", "ceil", (I32_MIN, I32_MAX), "cvt.rpi.s32.f32"),
    "i32_roundeven": (lambda x: cutlass.Int32(cute.math.roundeven(x)), cutlass.Int32, "int32", "roundeven", (I32_MIN, I32_MAX), "cvt.rni.s32.f32"),
    "i32_trunc": (lambda x: cutlass.Int32(cute.math.trunc(x)), cutlass.Int32, "int32", "trunc", (I32_MIN, I32_MAX), "cvt.rzi.s32.f32"),
    "bitcast": (_bitcast, cutlass.Int32, "int32", "bits", None, "mov.b32"),
}
# f32 -> i32 cases checked over all 2^32 patterns first (the brief's priority)
EXHAUSTIVE_FIRST = ("i32", "i32_floor", "i32_ceil", "i32_roundeven", "i32_trunc", "bitcast")


def pipeline_for(emit: str) -> str:
    return f"builtin.module(fptosi-to-ptx{{emit={emit}}}, bitcast-to-ptx{{emit={emit}}})"


def compile_form(jit_fn, args, form: str, record: dict | None = None):
    """cute.compile with our passes in the trace-finalize hook (none for `native`).

    PTX and cubin are kept through the compile's own options, so they are there
    whatever CUTE_DSL_KEEP was when CuTeDSL was first imported (e.g. under pytest),
    and written into this process's own folder: `__ptx__` is read back from a file
    named after the kernel, so two processes sharing the working directory (GPU tests
    split over several pytest processes) would read each other's PTX.
    """
    kwargs = {"options": f"--keep-ptx --keep-cubin --dump-dir {_DUMP}"}
    if form != "native":

        def hook(_owner, module, _name):
            result = cute_lowering.run_pipeline(module, pipeline_for(form))
            if record is not None:
                for p in ("fptosi-to-ptx", "bitcast-to-ptx"):
                    for k, v in result.counts(p).items():
                        record[f"{p}.{k}"] = record.get(f"{p}.{k}", 0) + v

        kwargs["trace_finalize_hooks"] = hook
    return cute.compile(jit_fn, *args, **kwargs)


# ---------------------------------------------------------------------------------
# Kernels (each call builds fresh function objects: no cache sharing between forms)
# ---------------------------------------------------------------------------------
def elementwise(convert, n: int):
    """dst[i] = convert(src[i]) for n elements, one per thread."""

    @cute.kernel
    def kernel(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * THREADS + tidx
        dst[i] = convert(src[i])

    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor):
        kernel(src, dst).launch(grid=(n // THREADS, 1, 1), block=(THREADS, 1, 1))

    return launch


HEAVY_UNROLL = 32


def heavy(convert, n_threads: int):
    """Each thread: `iters` x 32 conversions of distinct values in registers, summed."""

    @cute.kernel
    def kernel(src: cute.Tensor, dst: cute.Tensor, iters: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * THREADS + tidx
        x = src[i]
        acc = cutlass.Int32(0)
        for _k in cutlass.range(iters, unroll=1):
            for j in cutlass.range_constexpr(HEAVY_UNROLL):
                acc = acc + cutlass.Int32(convert(x + cutlass.Float32(0.25 * j)))
            x = x + cutlass.Float32(1.0)
        dst[i] = acc

    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor, iters: cutlass.Int32):
        kernel(src, dst, iters).launch(grid=(n_threads // THREADS, 1, 1), block=(THREADS, 1, 1))

    return launch


def twice(n: int):
    """The same conversion written twice: pure forms may CSE it."""

    @cute.kernel
    def kernel(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * THREADS + tidx
        x = src[i]
        a = cutlass.Int32(cute.math.floor(x))
        b = cutlass.Int32(cute.math.floor(x))
        dst[i] = a + b * cutlass.Int32(3)

    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor):
        kernel(src, dst).launch(grid=(n // THREADS, 1, 1), block=(THREADS, 1, 1))

    return launch


def invariant(n: int):
    """A loop-invariant conversion inside a runtime-length loop: pure forms may hoist it."""

    @cute.kernel
    def kernel(src: cute.Tensor, dst: cute.Tensor, iters: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * THREADS + tidx
        x = src[i]
        acc = cutlass.Int32(0)
        for k in cutlass.range(iters, unroll=1):
            acc = (acc ^ cutlass.Int32(cute.math.floor(x))) + k
        dst[i] = acc

    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor, iters: cutlass.Int32):
        kernel(src, dst, iters).launch(grid=(n // THREADS, 1, 1), block=(THREADS, 1, 1))

    return launch


# ---------------------------------------------------------------------------------
# PTX / SASS
# ---------------------------------------------------------------------------------
_CONV_OPS = re.compile(r"^(F2I|I2F|FRND|F2F|I2I|F2IP|I2IP|FMNMX|IMNMX|VIMNMX|FSETP|FSEL|SEL|PRMT|SGXT|LOP3|SHF)\b")


def ptx_lines(compiled) -> list[str]:
    ptx = compiled.__ptx__ or ""
    if not isinstance(ptx, str) or "\n" not in ptx:
        return []
    keep = re.compile(r"\b(cvt|mov\.b32|cvt\.rmi|floor|prmt|min|max|setp|selp)\b")
    return [line.strip() for line in ptx.splitlines() if keep.search(line) and "//" not in line[:3]]


def sass(compiled, workdir: Path, tag: str) -> list[str] | str:
    """The SASS instructions of the kernel (cuobjdump), or why there are none."""
    cubin = compiled.__cubin__
    if not isinstance(cubin, (bytes, bytearray)):
        return f"no cubin kept ({cubin!r})"
    tool = shutil.which("cuobjdump")
    if tool is None:
        return "no cuobjdump"
    path = workdir / f"{tag}.cubin"
    path.write_bytes(cubin)
    out = subprocess.run([tool, "--dump-sass", str(path)], capture_output=True, text=True)
    if out.returncode:
        return f"cuobjdump failed: {out.stderr.strip()[:300]}"
    instrs = []
    for line in out.stdout.splitlines():
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            instrs.append(label.group(1) + ":")  # kept so loops can be found
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if m:
            instrs.append(m.group(1).strip())  # NOPs kept: index * 16 is the address
    return instrs


def in_loop(instrs, prefix: str) -> int | None:
    """How many `prefix` instructions sit inside a loop (between a label and a branch back to it)."""
    if isinstance(instrs, str):
        return None
    inside = set()
    code = [i for i in instrs if not i.endswith(":")]  # one entry per 16-byte instruction
    for end, text in enumerate(code):
        m = re.search(r"BRA\W+(?:`?\(?(\.L_x_\d+)|0x([0-9a-f]+))", text)
        if not m:
            continue
        if m.group(1):
            labels = [i for i in instrs[: instrs.index(m.group(1) + ":")] if not i.endswith(":")]
            start = len(labels)
        else:
            start = int(m.group(2), 16) // 16
        if start < end:  # a backward branch
            inside.update(range(start, end))
    return sum(1 for i in inside if re.sub(r"^@!?U?P\w+\s+", "", code[i]).startswith(prefix))


def conversion_sass(instrs) -> list[str]:
    if isinstance(instrs, str):
        return [instrs]
    return [i for i in instrs if _CONV_OPS.match(re.sub(r"^@!?U?P\w+\s+", "", i))]


def count_op(instrs, prefix: str) -> int | None:
    if isinstance(instrs, str):
        return None
    return sum(1 for i in instrs if re.sub(r"^@!?U?P\w+\s+", "", i).startswith(prefix))


# ---------------------------------------------------------------------------------
# Reference and bit patterns (torch, on the GPU)
# ---------------------------------------------------------------------------------
def special_bits() -> list[int]:
    """±0, ±inf, NaNs with payloads, denormals, .5 ties, and values around each integer range."""
    import numpy as np

    vals = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000]
    vals += [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00001, 0x7FA5A5A5]
    vals += [0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x80400000, 0x00800000, 0x80800000]
    floats = []
    for k in range(-8, 9):
        floats += [k + 0.5, k - 0.5, k + 0.25, k + 0.75]
    floats += [2.0**22 + 0.5, -(2.0**22) - 0.5, 2.0**23 - 0.5, -(2.0**23) + 0.5, 2.0**23, 2.0**24]
    bounds = [2**7, 2**8, 2**15, 2**16, 2**31, 2**32, 2**63, 2**64]
    for b in bounds:
        for s in (1.0, -1.0):
            for d in (-1.0, -0.5, 0.0, 0.5, 1.0):
                floats.append(s * (b + d))
    f = np.array(floats, dtype=np.float32)
    neighbours = np.concatenate([f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))])
    vals += [int(v) for v in neighbours.view(np.uint32)]
    vals += [0x7F7FFFFF, 0xFF7FFFFF]  # ±FLT_MAX
    out = sorted(set(v & 0xFFFFFFFF for v in vals))
    return [v - 2**32 if v >= 2**31 else v for v in out]  # as int32


def stratified_bits(torch, n: int, seed: int, device):
    """n int32 patterns spread evenly over all 2^32 (one random pick per stride) plus the specials."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    stride = 2**32 // n
    base = torch.arange(n, dtype=torch.int64, device=device) * stride
    base += torch.randint(0, stride, (n,), generator=g, device=device, dtype=torch.int64)
    bits = (base - (base >= 2**31).to(torch.int64) * 2**32).to(torch.int32)
    specials = torch.tensor(special_bits(), dtype=torch.int32, device=device)
    bits[: specials.numel()] = specials
    return bits


def chunk_bits(torch, start: int, n: int, device, out=None):
    """Patterns start .. start+n-1 of the unsigned 32-bit range, as int32."""
    a = torch.arange(start, start + n, dtype=torch.int64, device=device)
    a = torch.where(a >= 2**31, a - 2**32, a).to(torch.int32)
    if out is not None:
        out.copy_(a)
        return out
    return a


def reference(torch, bits, case: str):
    """Expected results as int64 (bitcast: the bits), computed in float64."""
    rounding, bounds = CASES[case][3], CASES[case][4]
    if rounding == "bits":
        return bits.to(torch.int64)
    x = bits.view(torch.float32).double()
    r = {"trunc": torch.trunc, "floor": torch.floor, "ceil": torch.ceil, "roundeven": torch.round}[rounding](x)
    lo, hi = bounds
    nan = torch.isnan(r)
    if hi >= 2**63 - 1:  # int64: 2^63 is not an int64; clamp the ends by hand
        too_big = r >= 2.0**63
        too_small = r < -(2.0**63)
        safe = torch.where(too_big | too_small | nan, torch.zeros_like(r), r)
        out = safe.to(torch.int64)
        out = torch.where(too_big, torch.full_like(out, hi), out)
        out = torch.where(too_small, torch.full_like(out, lo), out)
    else:
        out = torch.clamp(torch.where(nan, torch.zeros_like(r), r), float(lo), float(hi)).to(torch.int64)
    return torch.where(nan, torch.zeros_like(out), out)


def as_int64(torch, dst, case: str):
    v = dst.to(torch.int64)
    if case == "u32":
        v = v & 0xFFFFFFFF
    return v


def torch_dtype(torch, case: str):
    return getattr(torch, CASES[case][2])


# ---------------------------------------------------------------------------------
# Part a: semantics
# ---------------------------------------------------------------------------------
class Checker:
    """Compiled kernels (every case x form) over one src buffer of n elements."""

    def __init__(self, torch, n: int, device, cases, forms=FORMS):
        from cutlass.cute.runtime import from_dlpack

        self.torch, self.n, self.cases, self.forms = torch, n, list(cases), list(forms)
        self.bits = torch.empty(n, dtype=torch.int32, device=device)
        self.src = self.bits.view(torch.float32)
        self.src_c = from_dlpack(self.src, assumed_align=16)
        self.dst, self.dst_c, self.fns, self.passes = {}, {}, {}, {}
        for case in self.cases:
            self.dst[case] = torch.empty(n, dtype=torch_dtype(torch, case), device=device)
            self.dst_c[case] = from_dlpack(self.dst[case], assumed_align=16)
            for form in self.forms:
                rec = {}
                fn = compile_form(elementwise(CASES[case][0], n), (self.src_c, self.dst_c[case]), form, rec)
                self.fns[case, form] = fn
                self.passes[case, form] = rec

    def check(self, case: str, mismatches: dict, examples: dict, forms=None, skip_nan: bool = False) -> None:
        """Run `forms` (default all) of `case` on the current bits; add mismatch counts."""
        torch = self.torch
        ref = reference(torch, self.bits, case)
        for form in forms or self.forms:
            dst = self.dst[case]
            dst.fill_(0x5A if dst.element_size() == 1 else 0x5A5A)  # poison: an unwritten element mismatches
            self.fns[case, form](self.src_c, self.dst_c[case])
            bad = as_int64(torch, dst, case) != ref
            if skip_nan:
                bad &= ~torch.isnan(self.src)
            count = int(bad.sum().item())
            mismatches[case, form] = mismatches.get((case, form), 0) + count
            if count and not skip_nan:  # how many of them are NaN inputs
                nan_bad = int((bad & torch.isnan(self.src)).sum().item())
                key = ("nan", case, form)
                mismatches[key] = mismatches.get(key, 0) + nan_bad
            if count and len(examples.setdefault((case, form), [])) < 8:
                idx = torch.nonzero(bad)[:8].flatten()
                for i in idx.tolist():
                    examples[case, form].append(
                        {
                            "bits": f"0x{self.bits[i].item() & 0xFFFFFFFF:08x}",
                            "x": repr(self.src[i].item()),
                            "got": int(as_int64(torch, dst[i : i + 1], case).item()),
                            "want": int(ref[i].item()),
                        }
                    )


def semantics(torch, device, mode: str, chunk_log2: int, results: dict, log) -> None:
    n = 2**chunk_log2
    t0 = time.perf_counter()
    checker = Checker(torch, n, device, CASES)
    log(f"[a] compiled {len(checker.fns)} kernels in {time.perf_counter() - t0:.1f}s")
    results["pass_counts"] = {f"{c}/{f}": r for (c, f), r in checker.passes.items() if f != "native"}
    results["ptx_conversion_lines"] = {f"{c}/{f}": ptx_lines(fn) for (c, f), fn in checker.fns.items()}
    for (c, f), fn in checker.fns.items():
        if f != "native":
            want = CASES[c][5]
            if not any(want in line for line in results["ptx_conversion_lines"][f"{c}/{f}"]):
                log(f"[a] WARNING {c}/{f}: '{want}' not in the PTX")
    mismatches, examples, coverage = {}, {}, {}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    # stratified sample with specials: every case
    stratified_n = n
    checker.bits.copy_(stratified_bits(torch, n, 1234, device))
    for case in CASES:
        checker.check(case, mismatches, examples)
        coverage[case] = f"2^{chunk_log2} stratified + {len(special_bits())} specials"
    log(f"[a] stratified pass done in {time.perf_counter() - t0:.1f}s")
    if mode == "exhaustive":
        exhaustive = list(EXHAUSTIVE_FIRST) + [c for c in CASES if c not in EXHAUSTIVE_FIRST]
        t0 = time.perf_counter()
        counts = {c: 0 for c in exhaustive}
        for start in range(0, 2**32, n):
            chunk_bits(torch, start, n, device, out=checker.bits)
            for case in exhaustive:
                checker.check(case, mismatches, examples)
                counts[case] += n
        for case in exhaustive:
            coverage[case] = f"all 2^32 patterns ({counts[case]}) + 2^{chunk_log2} stratified + specials"
        torch.cuda.synchronize()
        log(f"[a] exhaustive pass done in {time.perf_counter() - t0:.1f}s")
    results["semantics"] = {
        "chunk": stratified_n,
        "coverage": coverage,
        "mismatches": {f"{k[0]}/{k[1]}": v for k, v in mismatches.items() if len(k) == 2},
        "mismatches_on_nan_inputs": {f"{k[1]}/{k[2]}": v for k, v in mismatches.items() if len(k) == 3},
        "examples": {f"{c}/{f}": v for (c, f), v in examples.items()},
    }
    results["_checker"] = checker  # reused by part c (memory-bound timing)


# ---------------------------------------------------------------------------------
# Part b: SASS of one small kernel per case and form
# ---------------------------------------------------------------------------------
def sass_part(torch, device, workdir: Path, results: dict, log, fake: bool = False) -> None:
    n = 1024
    if fake:
        from cutlass.cute.runtime import make_fake_compact_tensor

        def args(case):
            return make_fake_compact_tensor(cutlass.Float32, (n,)), make_fake_compact_tensor(CASES[case][1], (n,))
    else:
        from cutlass.cute.runtime import from_dlpack

        src = torch.zeros(n, dtype=torch.float32, device=device)

        def args(case):
            return from_dlpack(src, assumed_align=16), from_dlpack(
                torch.zeros(n, dtype=torch_dtype(torch, case), device=device), assumed_align=16
            )

    out = {}
    for case in CASES:
        for form in FORMS:
            fn = compile_form(elementwise(CASES[case][0], n), args(case), form)
            instrs = sass(fn, workdir, f"{case}_{form}")
            out[f"{case}/{form}"] = {
                "ptx": ptx_lines(fn),
                "sass_conversion": conversion_sass(instrs),
                "sass_total": sum(1 for i in instrs if not i.endswith(":") and not i.startswith("NOP")) if isinstance(instrs, list) else None,
                "sass_all": instrs,
            }
    results["sass"] = out
    log("[b] SASS done")


# ---------------------------------------------------------------------------------
# Part c: speed and CSE/hoisting
# ---------------------------------------------------------------------------------
def bench_ms(torch, fn, reps: int = 30, warmup: int = 3) -> dict:
    times = sorted(samples_ms(fn, repeat=reps, warmup=warmup))
    return {"median_ms": times[len(times) // 2], "min_ms": times[0], "max_ms": times[-1]}


HEAVY_CASES = ("i32", "i32_floor", "i32_roundeven", "u8")


def speed(torch, device, workdir: Path, results: dict, log) -> None:
    from cutlass.cute.runtime import from_dlpack

    out = {"memory_bound": {}, "compute_bound": {}, "cse": {}}
    checker = results.get("_checker")
    if checker is not None:  # one conversion per element, 2^28 elements, from part a
        checker.bits.copy_(torch.randint(-(2**31), 2**31 - 1, (checker.n,), dtype=torch.int32, device=device))
        checker.src.copy_(torch.randn(checker.n, device=device) * 1000)
        for case in ("i32", "i32_floor", "i8", "bitcast"):
            row = {}
            for form in FORMS:
                fn = checker.fns[case, form]
                row[form] = bench_ms(torch, lambda: fn(checker.src_c, checker.dst_c[case]))
                moved = checker.n * (4 + checker.dst[case].element_size())
                row[form]["GBps"] = moved / row[form]["median_ms"] / 1e6
            out["memory_bound"][case] = row
        log("[c] memory-bound done")
    # compute-bound: 2^20 threads x iters x 32 conversions
    n_threads = 2**20
    iters = 256
    src = (torch.rand(n_threads, device=device) * 2000 - 1000).to(torch.float32)
    src_c = from_dlpack(src, assumed_align=16)
    for case in HEAVY_CASES:
        row, outputs = {}, {}
        for form in FORMS:
            dst = torch.empty(n_threads, dtype=torch.int32, device=device)
            dst_c = from_dlpack(dst, assumed_align=16)
            fn = compile_form(heavy(CASES[case][0], n_threads), (src_c, dst_c, cutlass.Int32(iters)), form)
            instrs = sass(fn, workdir, f"heavy_{case}_{form}")
            row[form] = bench_ms(torch, lambda: fn(src_c, dst_c, cutlass.Int32(iters)), reps=20)
            row[form]["conversions_per_s"] = n_threads * iters * HEAVY_UNROLL / row[form]["median_ms"] / 1e-3
            row[form]["sass_F2I"] = count_op(instrs, "F2I")
            row[form]["sass_FRND"] = count_op(instrs, "FRND")
            outputs[form] = dst.clone()
        row["outputs_equal"] = {f: bool(torch.equal(outputs["native"], outputs[f])) for f in ("ptx", "asm")}
        out["compute_bound"][case] = row
    log("[c] compute-bound done")
    # CSE and loop-invariant hoisting
    n = 2**20
    src = (torch.rand(n, device=device) * 200 - 100).to(torch.float32)
    dst = torch.empty(n, dtype=torch.int32, device=device)
    src_c, dst_c = from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16)
    for name, build, extra in (("twice", twice, ()), ("loop_invariant", invariant, (cutlass.Int32(1024),))):
        row = {}
        for form in FORMS:
            fn = compile_form(build(n), (src_c, dst_c, *extra), form)
            instrs = sass(fn, workdir, f"{name}_{form}")
            row[form] = {
                "sass_F2I": count_op(instrs, "F2I"),
                "sass_FRND": count_op(instrs, "FRND"),
                "sass_conversion": conversion_sass(instrs),
                "ptx_cvt": sum(1 for line in ptx_lines(fn) if line.startswith("cvt")),
                "sass_F2I_in_loop": in_loop(instrs, "F2I"),
                "sass_all": instrs,
            }
            if name == "loop_invariant":
                row[form].update(bench_ms(torch, lambda: fn(src_c, dst_c, *extra), reps=20))
        out["cse"][name] = row
    log("[c] CSE/hoisting done")
    results["speed"] = out


# ---------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------
def summary_md(results: dict) -> str:
    lines = [f"# GPU conversions: {results.get('device', '?')}", ""]
    sem = results.get("semantics")
    if sem:
        lines += ["## a. Semantics (mismatches vs float64 reference; ptx/asm must be 0)", ""]
        lines += ["| case | coverage | native | emit=ptx | emit=asm |", "| --- | --- | --- | --- | --- |"]
        for case in CASES:
            m = []
            for f in FORMS:
                total = sem["mismatches"].get(f"{case}/{f}", "-")
                on_nan = sem["mismatches_on_nan_inputs"].get(f"{case}/{f}", 0)
                m.append(f"{total} ({on_nan} NaN)" if on_nan else str(total))
            lines.append(f"| {case} | {sem['coverage'].get(case, '-')} | {m[0]} (info) | {m[1]} | {m[2]} |")
        lines.append("")
    sass_ = results.get("sass")
    if sass_:
        lines += ["## b. SASS conversion instructions (one element)", ""]
        lines += ["| case | native | emit=ptx | emit=asm |", "| --- | --- | --- | --- |"]
        for case in CASES:
            cells = ["<br>".join(sass_[f"{case}/{f}"]["sass_conversion"]) or "(none)" for f in FORMS]
            lines.append(f"| {case} | " + " | ".join(f"`{c}`" if c != "(none)" else c for c in cells) + " |")
        lines.append("")
    sp = results.get("speed")
    if sp:
        lines += ["## c. Speed (median ms, torch.cuda.Event)", ""]
        if sp.get("memory_bound"):
            lines += ["Memory-bound: 2^28 elements, one conversion each.", ""]
            lines += ["| case | native | ptx | asm | ptx/native | asm/native |", "| --- | --- | --- | --- | --- | --- |"]
            for case, row in sp["memory_bound"].items():
                t = [row[f]["median_ms"] for f in FORMS]
                lines.append(f"| {case} | {t[0]:.3f} | {t[1]:.3f} | {t[2]:.3f} | {t[1] / t[0]:.3f} | {t[2] / t[0]:.3f} |")
            lines.append("")
        if sp.get("compute_bound"):
            lines += [f"Compute-bound: 2^20 threads x 256 x {HEAVY_UNROLL} conversions (+FADD, IADD) in registers.", ""]
            lines += ["| case | native | ptx | asm | ptx/native | asm/native | F2I+FRND in SASS (n/p/a) | same output |"]
            lines += ["| --- | --- | --- | --- | --- | --- | --- | --- |"]
            for case, row in sp["compute_bound"].items():
                t = [row[f]["median_ms"] for f in FORMS]
                ops = "/".join(f"{row[f]['sass_F2I']}+{row[f]['sass_FRND']}" for f in FORMS)
                eq = all(row["outputs_equal"].values())
                lines.append(
                    f"| {case} | {t[0]:.3f} | {t[1]:.3f} | {t[2]:.3f} | {t[1] / t[0]:.3f} | {t[2] / t[0]:.3f} | {ops} | {eq} |"
                )
            lines.append("")
        if sp.get("cse"):
            lines += ["CSE / hoisting (F2I and FRND counted in SASS; PTX cvt count):", ""]
            lines += ["| kernel | native | ptx | asm |", "| --- | --- | --- | --- |"]
            for name, row in sp["cse"].items():
                cells = []
                for f in FORMS:
                    c = f"F2I {row[f]['sass_F2I']} ({row[f]['sass_F2I_in_loop']} in loop), PTX cvt {row[f]['ptx_cvt']}"
                    if "median_ms" in row[f]:
                        c += f", {row[f]['median_ms']:.3f} ms"
                    cells.append(c)
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
            lines.append("")
    if results.get("errors"):
        lines += ["## Errors", ""] + [f"- {e.splitlines()[-1]}" for e in results["errors"]] + [""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--mode", choices=("exhaustive", "stratified"), default="exhaustive")
    ap.add_argument("--chunk-log2", type=int, default=28)
    ap.add_argument("--parts", default="a,b,c")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: compile part b's kernels for sm_90a only")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="cubins_"))  # cubins stay out of --out
    parts = set(args.parts.split(","))

    def log(msg):
        print(msg, flush=True)

    results: dict = {"errors": []}
    if args.dry_run:
        from cutlass.cute.runtime import make_fake_compact_tensor

        sass_part(None, None, workdir, results, log, fake=True)
        n = 2**20
        fake = (make_fake_compact_tensor(cutlass.Float32, (n,)), make_fake_compact_tensor(cutlass.Int32, (n,)))
        dry = {}
        for form in FORMS:
            for case in HEAVY_CASES:
                dry[f"heavy_{case}/{form}"] = ptx_lines(compile_form(heavy(CASES[case][0], n), (*fake, cutlass.Int32(4)), form))
            dry[f"twice/{form}"] = ptx_lines(compile_form(twice(n), fake, form))
            dry[f"loop_invariant/{form}"] = ptx_lines(compile_form(invariant(n), (*fake, cutlass.Int32(4)), form))
        results["dry_run_ptx"] = dry
    else:
        import torch

        device = torch.device("cuda")
        results["device"] = torch.cuda.get_device_name()
        results["torch"] = torch.__version__
        for part, fn in (
            ("a", lambda: semantics(torch, device, args.mode, args.chunk_log2, results, log)),
            ("b", lambda: sass_part(torch, device, workdir, results, log)),
            ("c", lambda: speed(torch, device, workdir, results, log)),
        ):
            if part in parts:
                try:
                    fn()
                except Exception:
                    results["errors"].append(traceback.format_exc())
                    log(traceback.format_exc())
    results.pop("_checker", None)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    md = summary_md(results)
    (args.out / "summary.md").write_text(md)
    print(md)
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
