"""SASS of the FMHA softmax's exp2: MUFU ex2 vs the polynomial on the FMA units, both formulations.

    python bench/fmha_exp2_sass.py [--arch sm_90a] [--cuobjdump PATH] [--out DIR]

Compiles kernels/fmha.py (bf16, D 128, no mask) with exp2_on_fma = 0 and 1 (every score
exp2 on the FMA units) for "natural" and "magic", disassembles the cubins (bench/sass.py: cuobjdump, else nvdisasm;
no GPU needed) and prints, per opcode, the change per score exp2: (count(variant) -
count(MUFU build)) / number of score exp2s in the kernel (4 rows x 16 columns a thread,
in the masked and the unmasked softmax). Writes DIR/fmha_exp2_sass.md (and the SASS).
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

from sass import disassemble  # noqa: E402

N_EXP2 = 4 * 16 * 2  # rows x columns per thread, two traced softmax variants


def _opcodes(sass: str) -> collections.Counter:
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            ops[m.group(1)] += 1
    return ops


def main():
    from cute_lowering.kernels import fmha

    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--cuobjdump", help="a cuobjdump to use (default: bench/sass.py's disassembler: cuobjdump, else nvdisasm)")
    ap.add_argument("--out", type=pathlib.Path, default=None)
    args = ap.parse_args()
    out = args.out or pathlib.Path(tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    builds = {"mufu": (0.0, "magic"), "natural": (1.0, "natural"), "magic": (1.0, "magic")}
    counts = {}
    for name, (frac, impl) in builds.items():
        os.chdir(out)  # --keep-cubin also drops a copy in the working directory
        fn = fmha.compile_attention("bfloat16", 128, False, (-1, -1), False, args.arch, frac, impl, options="--keep-cubin")
        cubin = out / f"fmha_exp2_{name}.{args.arch}.cubin"
        cubin.write_bytes(fn.__cubin__)
        sass = disassemble(fn.__cubin__, [args.cuobjdump, "-sass"] if args.cuobjdump else None)
        (out / f"fmha_exp2_{name}.{args.arch}.sass").write_text(sass)
        counts[name] = _opcodes(sass)
    ops = sorted(set().union(*counts.values()))
    md = [f"SASS per score exp2 ({args.arch}, change against the MUFU build over {N_EXP2} exp2s; the MUFU build's own counts in the first column)", "",
          "| opcode | MUFU build (count) | natural - MUFU, per exp2 | magic - MUFU, per exp2 |", "| --- | --- | --- | --- |"]
    for op in ops:
        base = counts["mufu"][op]
        dn, dm = counts["natural"][op] - base, counts["magic"][op] - base
        if dn or dm:
            md.append(f"| {op} | {base} | {dn / N_EXP2:+.2f} | {dm / N_EXP2:+.2f} |")
    tot = {k: sum(v.values()) for k, v in counts.items()}
    md.append(f"| **all** | {tot['mufu']} | {(tot['natural'] - tot['mufu']) / N_EXP2:+.2f} | {(tot['magic'] - tot['mufu']) / N_EXP2:+.2f} |")
    text = "\n".join(md) + "\n"
    (out / "fmha_exp2_sass.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
