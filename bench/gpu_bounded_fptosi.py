"""Bounded f32 -> i32 on the GPU: threshold selects (`fptosi-to-select`) against cvt.rni/rzi (`fptosi-to-ptx`).

    python bench/gpu_bounded_fptosi.py --out DIR             # H200: every f32 pattern, ~1 min
    python bench/gpu_bounded_fptosi.py --out DIR --quick     # 2^24 sampled + boundary patterns, shorter timings
    python bench/gpu_bounded_fptosi.py --out DIR --dry-run   # no GPU: compile every kernel for sm_90a, check PTX/SASS

Issue 3's open item: on the H200, threshold-select against cvt.rni-based code for the
bounded fptosi. The kernel source is what an author writes, `Int32(roundeven(clamp(x, lo,
hi)))` (rne) or `Int32(clamp(x, lo, hi))` (rz), for [lo, hi] = [-8, 7] (E2M1-like, 15
thresholds), [0, 15] and [-2, 1], with the clamp spelled two ways: `arch`
(`cute.arch.fmax(cute.arch.fmin(x, hi), lo)`: nvvm.fmin/fmax, PTX min/max) and `math`
(`cute.math.clamp`: arith.minnumf/maxnumf, which LLVM lowers with NaN tests). Each source
is compiled (through `cute_lowering.prelowering`, so the pass runs in CuTeDSL's own compile) as
  - `select`: `builtin.module(fptosi-to-select)`: compares + selects of integer constants,
    the clamp and the roundeven folded into the thresholds, no float-to-int instruction;
  - `cvt`: `builtin.module(fptosi-to-ptx)`: the clamp stays, the roundeven folds into one
    `cvt.rni.s32.f32` (rz: `cvt.rzi.s32.f32`);
  - `native`: no pass, CuTeDSL's own lowering (for information);
and `baseline`: the same kernels with a bitcast in place of the conversion (all else they cost).

1. Semantics: every f32 bit pattern (chunks of 2^28) through each kernel, compared on the
   GPU with a torch float64 reference written from the definition: clamp, then round half
   to even (torch.round) or truncate. NaN: both spellings are NaN-quiet with the min first,
   so NaN becomes hi (fmin(NaN, hi) = hi); `fptosi-to-select` keeps that result with one
   unordered compare (its docstring), the `cvt` form keeps the clamp itself. All forms
   must give 0 mismatches; mismatches on NaN inputs are counted apart.
2. Speed (median of CUDA-event times, bench/cuda_timing.py): memory-bound, 2^28 elements,
   8 per thread (128-bit loads and stores), f32 in, i32 out; compute-bound, 2^20 threads
   each converting iters x 32 distinct values in registers (x + offset_j, x mirrored about
   the range's middle each iteration) and summing the codes. select/cvt is the ratio of
   the two medians in the same run; `net` subtracts the baseline kernel's time first.
3. SASS (cuobjdump of the cubin CuTeDSL keeps): per conversion = (instructions of the
   memory-bound kernel - those of its baseline) / 8, and the opcode mix of the conversion
   (opcodes whose name the baseline kernel lacks, per conversion).

DIR/bounded_fptosi.json:
  kernels[<range>/<rounding>/<clamp>/<form>] (and <range>/baseline): pass_counts (the
    pass's statistics on the memory-bound kernel), ptx_conversion (its PTX lines that
    compare, select, clamp or convert), sass_total, sass_ops (opcode counts),
    sass_per_conversion, sass_mix (opcode -> count per conversion);
  problems: PTX/SASS expectations that failed (select: no cvt.r*i, no float-to-int cvt,
    no F2I/FRND; cvt: exactly one cvt.rni/rzi.s32.f32 and one F2I per conversion);
  semantics: patterns checked, and per kernel mismatches, on_nan (of those, NaN inputs),
    examples (bits, x, got, want);
  speed: elements, threads, iters, conversions (compute-bound, per run); memory_bound and
    compute_bound: per kernel median_ms (+ GBps, conversions_per_ns); ratios per
    <range>/<rounding>/<clamp>: select_over_cvt and net_select_over_cvt (baseline time
    subtracted from both) per kind, same_output (compute-bound sums of select, cvt, native agree);
  errors: tracebacks of parts that failed.
DIR/summary.md: the same as markdown tables for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT / "bench",):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass._mlir import ir  # noqa: E402
from cutlass._mlir.dialects import arith  # noqa: E402
from cutlass.cute.runtime import make_fake_compact_tensor  # noqa: E402

import cute_lowering  # noqa: E402

RANGES = {"-8..7": (-8, 7), "0..15": (0, 15), "-2..1": (-2, 1)}
ROUNDINGS = ("rne", "rz")
CLAMPS = ("arch", "math")
FORMS = {"select": "builtin.module(fptosi-to-select)", "cvt": "builtin.module(fptosi-to-ptx)", "native": None}

THREADS = 256
PER_THREAD = 8  # memory-bound kernel: 32 B in and out per thread, two 128-bit accesses each way
HEAVY_UNROLL = 32  # compute-bound kernel: conversions per loop iteration
SENTINEL = 0x5A5A5A5A  # written before each run: outside every range, so an unwritten element mismatches


# -- the conversions, as an author writes them -------------------------------------------
def conversion(lo: int, hi: int, rounding: str, clamp: str):
    def clamped(x):
        if clamp == "arch":
            return cute.arch.fmax(cute.arch.fmin(x, float(hi)), float(lo))
        return cute.math.clamp(x, cutlass.Float32(lo), cutlass.Float32(hi))

    if rounding == "rne":
        return lambda x: cutlass.Int32(cute.math.roundeven(clamped(x)))
    return lambda x: cutlass.Int32(clamped(x))


def bitcast(x):
    """The baseline's stand-in for the conversion: free in SASS, and it keeps the load."""
    return cutlass.Int32(arith.bitcast(ir.IntegerType.get_signless(32), x.ir_value()))


# -- kernels (each call builds fresh functions) -------------------------------------------
def streaming(convert):
    """dst[i] = convert(src[i]); each thread loads 8 f32 into registers, converts, stores 8 i32."""

    @cute.kernel
    def kernel(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        tile = bidx * THREADS + tidx
        x = cute.make_rmem_tensor((PER_THREAD,), cutlass.Float32)
        x.store(cute.local_tile(src, (PER_THREAD,), (tile,)).load())
        y = cute.make_rmem_tensor((PER_THREAD,), cutlass.Int32)
        for j in cutlass.range_constexpr(PER_THREAD):
            y[j] = convert(x[j])
        cute.local_tile(dst, (PER_THREAD,), (tile,)).store(y.load())

    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor):
        kernel(src, dst).launch(grid=(cute.size(src) // (THREADS * PER_THREAD), 1, 1), block=(THREADS, 1, 1))

    return launch


def heavy(convert, lo: int, hi: int):
    """Each thread sums convert(x + offset_j) for iters x 32 offsets spanning the range and 2 beyond each end."""
    span = hi - lo + 4.0
    offsets = [span * (j / HEAVY_UNROLL - 0.5) for j in range(HEAVY_UNROLL)]
    mirror = float(lo + hi)  # x -> lo + hi - x: the values stay around the range instead of drifting off it

    @cute.kernel
    def kernel(src: cute.Tensor, dst: cute.Tensor, iters: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * THREADS + tidx
        x = src[i]
        acc = cutlass.Int32(0)
        for _k in cutlass.range(iters, unroll=1):
            for j in cutlass.range_constexpr(HEAVY_UNROLL):
                acc = acc + convert(x + cutlass.Float32(offsets[j]))
            x = cutlass.Float32(mirror) - x
        dst[i] = acc

    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor, iters: cutlass.Int32):
        kernel(src, dst, iters).launch(grid=(cute.size(src) // THREADS, 1, 1), block=(THREADS, 1, 1))

    return launch


def fake_args(per_thread: int, *extra):
    """Tensors of any length divisible by a block's elements: one compile serves every size, GPU or not."""
    return tuple(
        make_fake_compact_tensor(t, (cute.sym_int32(divisibility=THREADS * per_thread),), assumed_align=16)
        for t in (cutlass.Float32, cutlass.Int32)
    ) + extra


# -- compile, PTX, SASS ---------------------------------------------------------------------
class Build:
    """One compiled kernel with what the checks read: our pass's counts, its PTX, its SASS opcodes."""

    def __init__(self, launcher, args, pipeline: str | None, arch: str, workdir: Path, cuobjdump: str | None):
        # CuTeDSL names the kept PTX/cubin after the launcher's signature, the same for every
        # kernel here: a directory per compile keeps them apart, and no_cache makes each compile
        # produce them (a cache hit would hand back only a path).
        dump = Path(tempfile.mkdtemp(dir=workdir))
        options = f"--gpu-arch {arch} --keep-ptx --keep-cubin --dump-dir {dump}"
        with cute_lowering.prelowering(pipeline) if pipeline else contextlib.nullcontext():
            self.compiled = cute.compile(launcher, *args, options=options, no_cache=True)
        self.counts = dict(cute_lowering.last_report().passes[0].counts) if pipeline else {}
        self.ptx = self.compiled.__ptx__ if isinstance(self.compiled.__ptx__, str) else ""
        self.sass = sass_opcodes(self.compiled.__cubin__, dump / "kernel.cubin", cuobjdump)


def sass_opcodes(cubin, path: Path, cuobjdump: str | None) -> collections.Counter | str:
    """Opcode counts (with modifiers, NOPs left out) of the cubin's SASS, or why there are none."""
    if not isinstance(cubin, (bytes, bytearray)):
        return f"no cubin kept ({type(cubin).__name__})"
    if not cuobjdump:
        return "no cuobjdump"
    path.write_bytes(cubin)
    out = subprocess.run([cuobjdump, "--dump-sass", str(path)], capture_output=True, text=True)
    if out.returncode:
        return f"cuobjdump failed: {out.stderr.strip()[:200]}"
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", out.stdout)
    return collections.Counter(op for op in ops if not op.startswith("NOP"))


def base_opcode(op: str) -> str:
    return op.split(".")[0]


def sass_per_conversion(form: collections.Counter, baseline: collections.Counter, conversions: int):
    """(instructions per conversion, {opcode: per conversion} for the opcodes the baseline lacks)."""
    total = (sum(form.values()) - sum(baseline.values())) / conversions
    present = {base_opcode(op) for op in baseline}
    ranked = sorted(form.items(), key=lambda kv: -kv[1])
    return total, {op: n / conversions for op, n in ranked if base_opcode(op) not in present}


ROUNDING_CVT = re.compile(r"\bcvt\.r[nzmp]i\.\S+")  # cvt with an integer rounding: to an integer, or f32 -> f32
FLOAT_TO_INT = re.compile(r"\bcvt\.(?:r[nzmp]i\.)?(?:sat\.)?[su](?:8|16|32|64)\.(?:f16|bf16|f32|f64)\b")
PTX_CONVERSION = re.compile(r"^\s*(?:@%p\d+\s+)?(?:cvt|setp|selp|min|max)\.")


def expectations(build: Build, form: str, rounding: str, lo: int, hi: int, conversions: int) -> list[str]:
    """What each form must look like; a list of what is not so."""
    problems = []
    if form == "native":
        return problems
    folded = conversions if rounding == "rne" else 0
    expected = {"rewritten": conversions, "left": 0, "folded": folded}
    if form == "select":
        expected["thresholds"] = (hi - lo) * conversions  # one threshold per integer step
    if build.counts != expected:
        problems.append(f"pass statistics {build.counts}, expected {expected}")
    cvts = ROUNDING_CVT.findall(build.ptx) + [c for c in FLOAT_TO_INT.findall(build.ptx) if not ROUNDING_CVT.match(c)]
    sass = build.sass if isinstance(build.sass, collections.Counter) else collections.Counter()
    f2i = sum(n for op, n in sass.items() if base_opcode(op) in ("F2I", "FRND"))
    if form == "select":
        if cvts:
            problems.append(f"float-to-int cvt in the PTX: {sorted(set(cvts))}")
        if f2i:
            problems.append(f"{f2i} F2I/FRND in the SASS")
    else:
        want = f"cvt.{'rni' if rounding == 'rne' else 'rzi'}.s32.f32"
        if sorted(cvts) != [want] * conversions:
            problems.append(f"PTX cvts {sorted(cvts)}, expected {conversions} x {want}")
        if sass and f2i != conversions:
            problems.append(f"{f2i} F2I/FRND in the SASS, expected {conversions}")
    return problems


def build_all(arch: str, workdir: Path, cuobjdump: str | None, log) -> tuple[dict, dict, list[str]]:
    """Compile every kernel: {key: Build} for the memory-bound and the compute-bound kernels, problems."""

    def both(convert, lo, hi, pipeline):
        return (
            Build(streaming(convert), fake_args(PER_THREAD), pipeline, arch, workdir, cuobjdump),
            Build(heavy(convert, lo, hi), fake_args(1, cutlass.Int32(1)), pipeline, arch, workdir, cuobjdump),
        )

    streams, heavies, problems = {}, {}, []
    start = time.perf_counter()
    for rname, (lo, hi) in RANGES.items():
        streams[rname, "baseline"], heavies[rname, "baseline"] = both(bitcast, lo, hi, None)
        for rounding in ROUNDINGS:
            for clamp in CLAMPS:
                convert = conversion(lo, hi, rounding, clamp)
                for form, pipeline in FORMS.items():
                    key = (rname, rounding, clamp, form)
                    streams[key], heavies[key] = both(convert, lo, hi, pipeline)
                    for what, b, n in (("memory", streams[key], PER_THREAD), ("compute", heavies[key], HEAVY_UNROLL)):
                        for problem in expectations(b, form, rounding, lo, hi, n):
                            problems.append(f"{'/'.join(key)} ({what}-bound kernel): {problem}")
    log(f"[compile] {len(streams) + len(heavies)} kernels for {arch} in {time.perf_counter() - start:.1f} s")
    return streams, heavies, problems


def kernel_report(streams: dict) -> dict:
    out = {}
    for key, b in streams.items():
        entry = {
            "pass_counts": b.counts,
            "ptx_conversion": [line.strip() for line in b.ptx.splitlines() if PTX_CONVERSION.match(line)],
        }
        baseline = streams[key[0], "baseline"].sass
        if isinstance(b.sass, collections.Counter) and isinstance(baseline, collections.Counter):
            entry["sass_total"] = sum(b.sass.values())
            entry["sass_ops"] = dict(b.sass)
            if key[-1] != "baseline":
                entry["sass_per_conversion"], entry["sass_mix"] = sass_per_conversion(b.sass, baseline, PER_THREAD)
        else:
            entry["sass"] = b.sass if isinstance(b.sass, str) else baseline
        out["/".join(key)] = entry
    return out


# -- 1. semantics -------------------------------------------------------------------------
def reference(torch, x, lo: int, hi: int, rounding: str):
    """Int32(round(clamp(x, lo, hi))) in float64: NaN -> hi (the NaN-quiet min comes first)."""
    y = x.double().clamp_(lo, hi)  # torch.clamp keeps NaN; it is replaced below
    y = y.round_() if rounding == "rne" else y.trunc_()  # torch.round: half to even
    return y.nan_to_num_(nan=float(hi)).to(torch.int32)


def exhaustive_chunks(torch, bits):
    """Fill `bits` with patterns 0 .. 2^32-1 in turn (as int32); yields the count each time."""
    n = bits.numel()
    for start in range(0, 2**32, n):
        a = torch.arange(start, start + n, dtype=torch.int64, device=bits.device)
        bits.copy_(torch.where(a >= 2**31, a - 2**32, a))
        yield n


def boundary_bits(torch):
    """Every multiple of 1/2 within 3 of each range (thresholds, ties, bounds) and 2 ulps either
    side, ±0, ±inf, NaNs (quiet, signalling, payloads, both signs), denormals, ±FLT_MAX."""
    lows, highs = min(lo for lo, _ in RANGES.values()), max(hi for _, hi in RANGES.values())
    marks = torch.arange(2 * (lows - 3), 2 * (highs + 3) + 1, dtype=torch.float32) / 2
    near, up, down = [marks], marks, marks
    for _ in range(2):
        up, down = torch.nextafter(up, up + 1), torch.nextafter(down, down - 1)
        near += [up, down]
    words = torch.cat(near).view(torch.int32).tolist()
    words += [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001]
    words += [0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF]
    words += [0x7F7FFFFF, 0xFF7FFFFF]
    return torch.tensor([w - 2**32 if w >= 2**31 else w for w in words], dtype=torch.int32)


def sampled_chunk(torch, bits, seed: int = 3):
    """One chunk: a pattern drawn from each of n equal slices of the 2^32, then the boundary patterns."""
    n = bits.numel()
    stride = 2**32 // n
    g = torch.Generator(device=bits.device)
    g.manual_seed(seed)
    a = torch.arange(n, dtype=torch.int64, device=bits.device) * stride
    a += torch.randint(0, stride, (n,), generator=g, device=bits.device, dtype=torch.int64)
    bits.copy_(torch.where(a >= 2**31, a - 2**32, a))
    special = boundary_bits(torch).to(bits.device)
    bits[: special.numel()] = special
    yield n


def semantics(torch, bits, dst, launches: dict, chunks, log) -> dict:
    """Run every kernel on each chunk of `bits` (read as f32) and count mismatches against the reference.

    launches: {(range, rounding, clamp, form): zero-argument callable writing dst from bits}.
    """
    src = bits.view(torch.float32)
    found = {key: {"mismatches": 0, "on_nan": 0, "examples": []} for key in launches}
    patterns, start = 0, time.perf_counter()
    for n in chunks:
        patterns += n
        nan = torch.isnan(src)
        for rname, (lo, hi) in RANGES.items():
            for rounding in ROUNDINGS:
                want = reference(torch, src, lo, hi, rounding)
                for key in [k for k in launches if k[:2] == (rname, rounding)]:
                    dst.fill_(SENTINEL)
                    launches[key]()
                    bad = dst != want
                    count = int(torch.count_nonzero(bad))
                    if not count:
                        continue
                    entry = found[key]
                    entry["mismatches"] += count
                    entry["on_nan"] += int(torch.count_nonzero(bad & nan))
                    room = 4 - len(entry["examples"])
                    for i in torch.nonzero(bad)[:room].flatten().tolist() if room else []:
                        entry["examples"].append(
                            {"bits": f"0x{int(bits[i]) & 0xFFFFFFFF:08x}", "x": repr(float(src[i])),
                             "got": int(dst[i]), "want": int(want[i])}
                        )  # fmt: skip
        del want, nan
    log(f"[semantics] {patterns} patterns x {len(launches)} kernels in {time.perf_counter() - start:.1f} s")
    return {"patterns": patterns, "kernels": {"/".join(k): v for k, v in found.items()}}


# -- 2. speed -----------------------------------------------------------------------------
def uniform(torch, n: int, lo: float, hi: float, device, seed: int):
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return torch.rand(n, generator=g, device=device) * (hi - lo) + lo


def speed(torch, device, bind, timer, elements: int, threads: int, iters: int, repeat: int, log) -> dict:
    """Median times of every memory-bound and compute-bound kernel; select/cvt ratios per config.

    bind(kind, key, *tensors_or_ints) -> zero-argument callable that launches that kernel.
    """
    memory, compute, ratios = {}, {}, {}
    dst = torch.empty(elements, dtype=torch.int32, device=device)
    sums = torch.empty(threads, dtype=torch.int32, device=device)
    for rname, (lo, hi) in RANGES.items():
        src = uniform(torch, elements, lo - 2, hi + 2, device, seed=1)
        middle = uniform(torch, threads, (lo + hi) / 2 - 1, (lo + hi) / 2 + 1, device, seed=2)
        keys = [(rname, "baseline")] + [(rname, r, c, f) for r in ROUNDINGS for c in CLAMPS for f in FORMS]
        outputs = {}
        for key in keys:
            t = timer(bind("stream", key, src, dst), repeat=repeat)
            memory["/".join(key)] = {"median_ms": t, "GBps": elements * 8 / t / 1e6}
            run = bind("heavy", key, middle, sums, iters)
            t = timer(run, repeat=repeat)
            compute["/".join(key)] = {"median_ms": t, "conversions_per_ns": threads * iters * HEAVY_UNROLL / t / 1e6}
            run()
            outputs[key] = sums.clone()
        for rounding in ROUNDINGS:
            for clamp in CLAMPS:
                config = f"{rname}/{rounding}/{clamp}"
                row = {}
                for kind, table in (("memory_bound", memory), ("compute_bound", compute)):
                    s, c = (table[f"{config}/{f}"]["median_ms"] for f in ("select", "cvt"))
                    b = table[f"{rname}/baseline"]["median_ms"]
                    row[kind] = {"select_over_cvt": s / c, "net_select_over_cvt": (s - b) / (c - b) if c > b else None}
                select = outputs[rname, rounding, clamp, "select"]
                others = (outputs[rname, rounding, clamp, f] for f in ("cvt", "native"))
                row["same_output"] = all(torch.equal(select, other) for other in others)
                ratios[config] = row
        log(f"[speed] {rname} done")
    return {
        "elements": elements, "threads": threads, "iters": iters, "conversions": threads * iters * HEAVY_UNROLL,
        "memory_bound": memory, "compute_bound": compute, "ratios": ratios,
    }  # fmt: skip


def gpu_binder(streams: dict, heavies: dict):
    from cutlass.cute.runtime import from_dlpack

    def bind(kind, key, *args):
        compiled = (streams if kind == "stream" else heavies)[key].compiled
        converted = [
            from_dlpack(a, assumed_align=16).mark_layout_dynamic() if hasattr(a, "data_ptr") else cutlass.Int32(a)
            for a in args
        ]
        return lambda: compiled(*converted)

    return bind


# -- report --------------------------------------------------------------------------------
def configs():
    for rname in RANGES:
        for rounding in ROUNDINGS:
            for clamp in CLAMPS:
                yield f"{rname}/{rounding}/{clamp}"


def _three(values) -> str:
    return " / ".join(values)


def summary_md(results: dict) -> str:
    mode = results["mode"]
    head = f"# Bounded fptosi: threshold select vs cvt ({results.get('device', 'no GPU')}, {results['arch']}, {mode})"
    lines = [head, ""]
    sem, sp = results.get("semantics"), results.get("speed")
    kernels = results["kernels"]
    if sem:
        lines.append(f"Semantics: {sem['patterns']:,} f32 patterns per kernel vs the float64 reference (NaN -> hi).")
    if sp:
        lines.append(
            f"Memory-bound: {sp['elements']:,} elements, f32 in, i32 out. Compute-bound: {sp['threads']:,} threads x "
            f"{sp['iters']} x {HEAVY_UNROLL} conversions in registers. Median ms (CUDA events); `net` subtracts the "
            f"baseline kernel (the same kernel with a bitcast for the conversion)."
        )
    lines += ["", "Forms: select / cvt / native. SASS: instructions per conversion (memory-bound kernel - baseline)."]
    header = "| range | rounding | clamp | mismatches | SASS per conversion |"
    rule = "| --- | --- | --- | --- | --- |"
    if sp:
        header += " memory-bound ms | select/cvt | compute-bound ms | select/cvt (net) | same sums |"
        rule += " --- | --- | --- | --- | --- |"
    lines += ["", header, rule]
    for config in configs():
        rname, rounding, clamp = config.split("/")
        cells = [rname, rounding, clamp]
        if sem:
            ms = []
            for f in FORMS:
                e = sem["kernels"][f"{config}/{f}"]
                ms.append(f"{e['mismatches']:,}" + (f" ({e['on_nan']:,} NaN)" if e["on_nan"] else ""))
            cells.append(_three(ms))
        else:
            cells.append("-")
        cells.append(_three(_fmt(kernels[f"{config}/{f}"].get("sass_per_conversion"), "{:.2f}") for f in FORMS))
        if sp:
            r = sp["ratios"][config]
            cells.append(_three(f"{sp['memory_bound'][f'{config}/{f}']['median_ms']:.3f}" for f in FORMS))
            cells.append(f"{r['memory_bound']['select_over_cvt']:.3f}")
            cells.append(_three(f"{sp['compute_bound'][f'{config}/{f}']['median_ms']:.3f}" for f in FORMS))
            net = r["compute_bound"]["net_select_over_cvt"]
            cells.append(f"{r['compute_bound']['select_over_cvt']:.3f} ({_fmt(net, '{:.3f}')})")
            cells.append(str(r["same_output"]))
        lines.append("| " + " | ".join(cells) + " |")
    if sp:
        base = []
        for rname in RANGES:
            memory, compute = sp["memory_bound"][f"{rname}/baseline"], sp["compute_bound"][f"{rname}/baseline"]
            base.append(
                f"{rname}: memory {memory['median_ms']:.3f} ms ({memory['GBps']:.0f} GB/s), "
                f"compute {compute['median_ms']:.3f} ms"
            )
        lines += ["", "Baseline (bitcast): " + "; ".join(base) + "."]
    lines += ["", "SASS mix per conversion (opcodes the baseline kernel lacks):", ""]
    lines += ["| range | rounding | clamp | select | cvt | native |", "| --- | --- | --- | --- | --- | --- |"]
    for config in configs():
        mixes = []
        for f in FORMS:
            mix = kernels[f"{config}/{f}"].get("sass_mix")
            mixes.append(", ".join(f"{op} {n:g}" for op, n in mix.items()) if mix is not None else "-")
        lines.append(f"| {' | '.join(config.split('/'))} | " + " | ".join(mixes) + " |")
    if results["problems"]:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in results["problems"]]
    if results["errors"]:
        lines += ["", "## Errors", ""] + [f"- {e.strip().splitlines()[-1]}" for e in results["errors"]]
    return "\n".join(lines) + "\n"


def _fmt(value, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


def failed(results: dict) -> bool:
    """Errors, broken expectations, or a mismatch in a form the passes produced."""
    sem = results.get("semantics", {"kernels": {}})["kernels"]
    wrong = any(v["mismatches"] for k, v in sem.items() if not k.endswith("/native"))
    return bool(results["errors"] or results["problems"] or wrong)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--quick", action="store_true", help="2^24 sampled + boundary patterns, 2^26 elements, 64 iters")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: compile every kernel for --arch, check PTX/SASS")
    ap.add_argument("--arch", default="sm_90a", help="dry run only; on the GPU the device's own arch is used")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "/tmp/cudabin/cuobjdump")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    cuobjdump = args.cuobjdump if Path(args.cuobjdump).is_file() else None

    def log(msg):
        print(msg, flush=True)

    mode = "dry-run" if args.dry_run else "quick" if args.quick else "exhaustive"
    results: dict = {"mode": mode, "errors": []}
    if args.dry_run:
        arch = args.arch
    else:
        import torch

        from cute_lowering.kernels.torch_device import arch_of

        device = torch.device("cuda")
        arch = arch_of(device)
        results.update(device=torch.cuda.get_device_name(device), torch=torch.__version__)
    results["arch"] = arch
    with tempfile.TemporaryDirectory(prefix="bounded_fptosi_") as workdir:
        streams, heavies, results["problems"] = build_all(arch, Path(workdir), cuobjdump, log)
    results["kernels"] = kernel_report(streams)
    if not args.dry_run:
        from cuda_timing import median_ms

        bind = gpu_binder(streams, heavies)
        try:
            n = 2**24 if args.quick else 2**28
            bits = torch.empty(n, dtype=torch.int32, device=device)
            dst = torch.empty(n, dtype=torch.int32, device=device)
            launches = {key: bind("stream", key, bits.view(torch.float32), dst) for key in streams if len(key) == 4}
            chunks = sampled_chunk(torch, bits) if args.quick else exhaustive_chunks(torch, bits)
            results["semantics"] = semantics(torch, bits, dst, launches, chunks, log)
            del bits, dst, launches
        except Exception:
            results["errors"].append(traceback.format_exc())
            log(results["errors"][-1])
        try:
            elements, iters, repeat = (2**26, 64, 10) if args.quick else (2**28, 256, 20)
            results["speed"] = speed(torch, device, bind, median_ms, elements, 2**20, iters, repeat, log)
        except Exception:
            results["errors"].append(traceback.format_exc())
            log(results["errors"][-1])
    (args.out / "bounded_fptosi.json").write_text(json.dumps(results, indent=1))
    md = summary_md(results)
    (args.out / "summary.md").write_text(md)
    print(md)
    return 1 if failed(results) else 0


if __name__ == "__main__":
    sys.exit(main())
