"""SASS instructions per converted value of the software E2M1 conversions (no GPU needed).

    python bench/conversion_sass.py                 # both formulations, f32 -> E2M1, sm_90a
    python bench/conversion_sass.py --arch sm_80 --keep DIR

The kernel is `tests/narrow_float_kernels.py`'s converter (each thread loads 8 values,
`.to(<narrow>)`, stores them), traced once, rewritten by `truncf-to-select` with each
formulation, compiled through CuTeDSL's pipeline to PTX, assembled with `ptxas` and
disassembled (bench/sass.py: cuobjdump, else nvdisasm; ptxas on PATH or given). Per value = (SASS of
the kernel - SASS of the same kernel whose "conversion" is only a shift of the input
bits into place) / 8: loads, stores, address math and the packing of the baseline
cancel; the packing of eight E2M1 codes per i32 stays in (the baseline packs
constant-free shifted bits, which ptxas folds into fewer instructions). bf16 sources
are left out: the baseline's bf16 loads vectorize differently, which would skew the
difference; their widening is one IMAD per value on top.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import narrow_float_kernels as kernels  # noqa: E402
from sass import NoDisassembler, disassemble, disassembler  # noqa: E402

import cute_lowering.passes.truncf_to_select as truncf  # noqa: E402
from cute_lowering.cutedsl import compile_ir, trace_ir  # noqa: E402
from cute_lowering.mlir import arith, new_context, parse_module  # noqa: E402
from cute_lowering.pipeline import run_pipeline  # noqa: E402

FORMULATIONS = {
    # name: (kernel case, pipeline)
    "f32 -> E2M1, e2m1=fma": ("f32_to_f4E2M1FN", "builtin.module(truncf-to-select{e2m1=fma})"),
    "f32 -> E2M1, e2m1=select": ("f32_to_f4E2M1FN", "builtin.module(truncf-to-select{e2m1=select})"),
}
LANES = kernels.PER_THREAD
_OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")


def sass_opcodes(ptx: str, arch: str, ptxas: str, cuobjdump: str, keep: str | None, tag: str) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        ptx_path, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(ptx_path, "w") as f:
            f.write(ptx)
        subprocess.run([ptxas, f"-arch={arch}", "-O3", ptx_path, "-o", cubin], check=True)
        with open(cubin, "rb") as f:
            text = disassemble(f.read(), [cuobjdump, "--dump-sass"] if cuobjdump else None)
    if keep:
        with open(os.path.join(keep, re.sub(r"[^A-Za-z0-9]+", "_", tag) + ".sass"), "w") as f:
            f.write(text)
    return [op for op in _OPCODE.findall(text) if not op.startswith("NOP")]


def compiled_opcodes(case: str, pipeline: str, arch: str, tools: tuple, keep: str | None, tag: str) -> list[str]:
    _, _, launch, arguments = kernels.CASES[case]
    traced = trace_ir(launch, *arguments())  # outside our context: CuTeDSL traces in its own
    with new_context() as context:
        module = parse_module(traced, context)
        run_pipeline(module, pipeline)
        text = str(module)
    return sass_opcodes(compile_ir(text, arch), arch, *tools, keep, tag)


@contextmanager
def shift_only_e2m1():
    """The E2M1 'conversion' replaced by a shift of the input bits into bits 28..31 (the baseline)."""
    original = truncf.e2m1_top_by_fma
    truncf.e2m1_top_by_fma = lambda lanes, x: arith.shli(lanes.bits(x), lanes.int(28))
    try:
        yield
    finally:
        truncf.e2m1_top_by_fma = original


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--ptxas", default=shutil.which("ptxas"))
    parser.add_argument("--cuobjdump", help="a cuobjdump to use (default: bench/sass.py's disassembler: cuobjdump, else nvdisasm)")
    parser.add_argument("--keep", help="write each kernel's SASS into this directory")
    args = parser.parse_args(argv)
    if not args.ptxas:
        parser.error("needs ptxas (--ptxas)")
    if args.cuobjdump and not os.path.exists(args.cuobjdump):
        parser.error(f"--cuobjdump {args.cuobjdump}: no such file")
    try:
        disassembler()
    except NoDisassembler as e:
        if not args.cuobjdump:
            parser.error(str(e))
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    tools = (args.ptxas, args.cuobjdump)
    baselines = {}
    with shift_only_e2m1():
        for case in sorted({case for case, _ in FORMULATIONS.values()}):
            baselines[case] = compiled_opcodes(case, "builtin.module(truncf-to-select)", args.arch, tools, args.keep, f"baseline {case}")
    print(f"| conversion ({args.arch}) | SASS / value | kernel | baseline | mix per {LANES} values (minus baseline) |")
    print("| --- | --- | --- | --- | --- |")
    for name, (case, pipeline) in FORMULATIONS.items():
        ops, base = compiled_opcodes(case, pipeline, args.arch, tools, args.keep, name), baselines[case]
        mix = collections.Counter(op.split(".")[0] for op in ops)
        mix.subtract(collections.Counter(op.split(".")[0] for op in base))
        shown = ", ".join(f"{op} {n}" for op, n in mix.most_common() if n > 0)
        print(f"| {name} | {(len(ops) - len(base)) / LANES:.1f} | {len(ops)} | {len(base)} | {shown} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
