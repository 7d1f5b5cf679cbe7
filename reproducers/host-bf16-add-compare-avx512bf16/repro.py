"""The host LLVM bundled with CuTeDSL aborts on bf16 arithmetic feeding a bf16 compare

Run: python repro.py [OPT_LEVEL]   (default 2; needs an x86-64 CPU with AVX512-BF16: see
     `grep -o avx512_bf16 /proc/cpuinfo`; no GPU)
Expected with CuTeDSL 4.8.1: the process aborts with `LLVM ERROR:  Error: unsupported operation`
at OPT_LEVEL 1, 2 or 3 (exit status 134); at 0 it prints "compiled".
"""
import sys

import cutlass  # noqa: F401  (registers the dialects)
from cutlass._mlir import ir, passmanager
from cutlass._mlir.execution_engine import ExecutionEngine

opt_level = int(sys.argv[1]) if len(sys.argv) > 1 else 2
with open(__file__.replace("repro.py", "repro.mlir"), encoding="utf-8") as f:
    text = f.read()

with ir.Context():
    module = ir.Module.parse(text)
    lowering = "builtin.module(convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts)"
    passmanager.PassManager.parse(lowering).run(module.operation)
    engine = ExecutionEngine(module, opt_level=opt_level)
    engine.lookup("kernel")  # the JIT compiles here, and aborts the process
print("compiled")
