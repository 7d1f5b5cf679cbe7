"""What the pre-lowering hook adds to `cute.compile`: the largest kernels, with and without it.

    python bench/hook_overhead.py [--repeat 5] [--only gemm]

For each (kernel, arch): one warm-up compile of each variant, then `--repeat` rounds of
a plain compile and a compile inside `cute_lowering.prelowering()` ("auto"), interleaved
(the order alternates each round), CuTeDSL's caches off. Prints the medians, their
ratio, and our passes' own time (`cute_lowering.last_report().seconds`, everything the
hook does) as a share of the hooked compile. The goal: the hook adds <= 5%.

Kernels: quack-kernels' GEMMs (the largest CuTeDSL kernels at hand, when quack is
installed: `pip install -e '.[peers]'`), the NVFP4 quantize kernel of `cute_lowering.kernels.nvfp4`
(when importable) and the FP4 kernel of tests/narrow_float_kernels.py. Where the plain
compile fails (FP4 on sm_90a: the reason the hook exists), only the hooked time and
the passes' share are given.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

# Before CuTeDSL is imported: no cache may serve a compile, no PTX dumps.
os.environ["CUTE_DSL_NO_CACHE"] = "1"
os.environ.pop("CUTE_DSL_KEEP", None)
os.environ.pop("CUTE_LOWERING_PIPELINE", None)
os.environ.pop("CUTE_LOWERING_DUMP", None)
os.environ.setdefault("QUACK_CACHE_ENABLED", "0")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests")]

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

import cute_lowering  # noqa: E402
from cute_lowering.cutedsl import dsl_singletons  # noqa: E402


def set_arch(arch: str) -> None:
    """The DSL's target (what CUTE_DSL_ARCH sets): quack's compile functions take no option."""
    for dsl in dsl_singletons():
        dsl.envar.arch = arch


def cases():
    """(label, arch, build) for every kernel available here; build() compiles with the DSL's arch."""
    found = []
    try:
        import quack_kernels

        quack_kernels.import_quack()
        quack = quack_kernels.builders()
    except ImportError as e:
        print(f"# quack-kernels not available ({e}): no GEMMs", file=sys.stderr)
    else:
        for arch in ("sm_90a", "sm_100a"):
            found.append(("quack gemm bf16 -> bf16", arch, lambda arch=arch: quack["gemm_bf16"](arch)))
            found.append(("quack gemm bf16 -> fp4 (SR epilogue)", arch, lambda arch=arch: quack["gemm_fp4_out_sr"](arch)))
            found.append(("quack gemm bf16 -> fp4 (RN epilogue)", arch, lambda arch=arch: quack["gemm_fp4_out_rn"](arch)))
    try:
        from cute_lowering.kernels import nvfp4, nvfp4_kernels

        launcher = nvfp4_kernels._make_quantize("plain", nvfp4.BLOCKS_PER_THREAD)
        # the quantize launcher's arguments as compile_quantize traces them: pointers at a fake
        # address, the element count, the stream
        pointers = nvfp4_kernels._pointer_args(nvfp4.INPUT_TYPES["bfloat16"], *[nvfp4_kernels._TRACE_ADDRESS] * 4)
        args = (*pointers, cutlass.Int32(nvfp4_kernels.BLOCK), nvfp4_kernels._stream_arg())
    except (ImportError, AttributeError) as e:
        print(f"# cute_lowering.kernels.nvfp4 not available ({type(e).__name__}: {e})", file=sys.stderr)
    else:
        for arch in ("sm_90a", "sm_100a"):
            found.append(("nvfp4 quantize bf16", arch, lambda: cute.compile(launcher, *args)))
    from narrow_float_kernels import CASES as NARROW

    _, _, narrow_launcher, narrow_args = NARROW["f32_to_f4E2M1FN"]
    for arch in ("sm_90a", "sm_100a"):
        found.append(("narrow f32 -> fp4 (1k elements)", arch, lambda: cute.compile(narrow_launcher, *narrow_args())))
    return found


def timed(build, hooked: bool) -> dict | None:
    """Wall and CPU seconds of one compile (None if it failed), and the hook's own seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        if hooked:
            with cute_lowering.prelowering():
                build()
        else:
            build()
    except Exception:
        return None
    return {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "passes": cute_lowering.last_report().seconds if hooked else None,
    }


def measure(build, repeat: int) -> dict:
    """Medians over `repeat` interleaved rounds: {"plain"|"hooked": {"wall", "cpu"} or None, "passes"}."""
    timed(build, False), timed(build, True)  # warm-up: first-call costs (imports, Python tracing caches)
    runs = {False: [], True: []}
    for round_ in range(repeat):
        for hooked in (False, True) if round_ % 2 == 0 else (True, False):
            result = timed(build, hooked)
            if result is not None:
                runs[hooked].append(result)

    def medians(rs):
        return {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu")} if rs else None

    passes = [r["passes"] for r in runs[True]]
    return {"plain": medians(runs[False]), "hooked": medians(runs[True]), "passes": statistics.median(passes) if passes else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds per kernel (default 5)")
    parser.add_argument("--only", default="", help="only kernels whose label contains this text")
    options = parser.parse_args()
    print(f"# cute.compile seconds (wall / this process's CPU), median of {options.repeat} interleaved rounds; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")  # fmt: skip
    print("| kernel | arch | plain s (wall / CPU) | hooked s (wall / CPU) | ratio (wall / CPU) | passes ms | passes % of hooked wall |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, arch, build in cases():
        if options.only not in label:
            continue
        set_arch(arch)
        r = measure(build, options.repeat)
        plain, hooked = r["plain"], r["hooked"]
        cell = lambda m: f"{m['wall']:.2f} / {m['cpu']:.2f}" if m else "fails"  # noqa: E731
        ratio = f"{hooked['wall'] / plain['wall']:.3f} / {hooked['cpu'] / plain['cpu']:.3f}" if plain and hooked else "-"
        passes = f"{r['passes'] * 1e3:.1f}" if r["passes"] is not None else "-"
        share = f"{100 * r['passes'] / hooked['wall']:.2f}%" if hooked else "-"
        print(f"| {label} | {arch} | {cell(plain)} | {cell(hooked)} | {ratio} | {passes} | {share} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
