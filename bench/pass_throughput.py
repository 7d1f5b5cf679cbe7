"""How fast the passes run: a synthetic 100k-op module and the largest kernel IR in the repo.

    python bench/pass_throughput.py [--ops 100000] [--repeat 3]

Prints ops/s for each pass alone and for the full list; the goal is the full list in
<= 1 s on the 100k-op module. Two synthetic mixes, both reported:
- `kernel`: the body of an FMHA softmax step with exp2 on the FMA units (the shape of
  examples/exp2_on_fma.mlir): per 20 ops a floor folded into an fptosi and two
  bitcasts, 15% candidates, the rest arithmetic the passes must skip;
- `stress`: per 10 ops a floor + fptosi, two bitcasts, an inline asm and an inline
  PTX with a float constant: half the ops get rewritten.
"""

from __future__ import annotations

import argparse
import glob
import os
import time

from cute_lowering import run_pipeline
from cute_lowering.mlir import new_context, parse_module

ALL_PASSES = "builtin.module(inline-asm-to-ptx,fptosi-to-ptx,bitcast-to-ptx,ptx-float-operands)"
EACH_PASS = ["inline-asm-to-ptx", "fptosi-to-ptx", "bitcast-to-ptx", "ptx-float-operands"]
GROUP = """    %a{i} = arith.addf %x, %c : f32
    %f{i} = math.floor %a{i} : f32
    %n{i} = arith.fptosi %f{i} : f32 to i32
    %b{i} = arith.bitcast %a{i} : f32 to i32
    %s{i} = arith.addi %n{i}, %b{i} : i32
    %t{i} = arith.xori %s{i}, %k : i32
    %g{i} = arith.bitcast %t{i} : i32 to f32
    %m{i} = arith.mulf %g{i}, %x : f32
    %q{i} = llvm.inline_asm "cvt.rni.s32.f32 $0, $1;", "=r,f" %m{i} : (f32) -> i32
    %p{i} = nvvm.inline_ptx "add.f32 {{$w0}}, {{$r0}}, {{$r1}};" ro(%m{i}, %c : f32, f32) -> f32
"""
KERNEL_GROUP = """    %s{i} = arith.mulf %x, %c : f32
    %f{i} = math.floor %s{i} : f32
    %r{i} = arith.subf %s{i}, %f{i} : f32
    %p1{i} = arith.mulf %r{i}, %c : f32
    %p2{i} = arith.addf %p1{i}, %c : f32
    %p3{i} = arith.mulf %p2{i}, %r{i} : f32
    %p4{i} = arith.addf %p3{i}, %c : f32
    %p5{i} = arith.mulf %p4{i}, %r{i} : f32
    %p6{i} = arith.addf %p5{i}, %c : f32
    %b{i} = arith.bitcast %p6{i} : f32 to i32
    %n{i} = arith.fptosi %f{i} : f32 to i32
    %h{i} = arith.shli %n{i}, %k : i32
    %e{i} = arith.addi %b{i}, %h{i} : i32
    %v{i} = arith.bitcast %e{i} : i32 to f32
    %m{i} = arith.maximumf %v{i}, %x : f32
    %a{i} = arith.addf %m{i}, %x : f32
    %q{i} = arith.mulf %a{i}, %c : f32
    %t{i} = arith.subf %q{i}, %x : f32
    %u{i} = arith.mulf %t{i}, %t{i} : f32
    %w{i} = arith.addf %u{i}, %q{i} : f32
"""
MIXES = {"kernel": (KERNEL_GROUP, 20), "stress": (GROUP, 10)}


def synthetic_module(ops: int, mix: str = "stress") -> str:
    group, per_group = MIXES[mix]
    body = "".join(group.format(i=i) for i in range(ops // per_group))
    return (
        "func.func @body(%x: f32) {\n"
        "    %c = arith.constant 1.5 : f32\n"
        "    %k = arith.constant 7 : i32\n" + body + "    return\n}\n"
    )


def count_ops(module) -> int:
    count = 0

    def visit(op):
        nonlocal count
        count += 1
        from cute_lowering.mlir import ir

        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return count


def timed(text: str, pipeline: str, repeat: int) -> tuple[float, int]:
    """Best time over `repeat` runs of `pipeline` on fresh parses (parse not timed)."""
    best, ops = float("inf"), 0
    for _ in range(repeat):
        with new_context() as context:
            module = parse_module(text, context)
            ops = count_ops(module)
            start = time.perf_counter()
            run_pipeline(module, pipeline)
            best = min(best, time.perf_counter() - start)
    return best, ops


def report(name: str, text: str, repeat: int) -> None:
    seconds, ops = timed(text, ALL_PASSES, repeat)
    print(f"{name}: {ops} ops")
    print(f"  full list      {seconds * 1e3:9.1f} ms  {ops / seconds:12,.0f} ops/s")
    for p in EACH_PASS:
        s, _ = timed(text, f"builtin.module({p})", repeat)
        print(f"  {p:<18} {s * 1e3:7.1f} ms  {ops / s:12,.0f} ops/s")


def largest_kernel_ir() -> str | None:
    root = os.path.join(os.path.dirname(__file__), "..")
    files = glob.glob(os.path.join(root, "kernels", "**", "*.mlir"), recursive=True)
    files += glob.glob(os.path.join(root, "examples", "*.mlir"))
    return max(files, key=os.path.getsize) if files else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for mix in MIXES:
        report(f"synthetic module, {mix} mix ({args.ops} ops requested)", synthetic_module(args.ops, mix), args.repeat)
    path = largest_kernel_ir()
    if path:
        with open(path, encoding="utf-8") as f:
            report(os.path.relpath(path), f.read(), args.repeat)


if __name__ == "__main__":
    main()
