"""arith.extf from FP8/FP4 reaches llvm.fpext with an integer operand type: fails on every target

Run: python repro.py [ARCH]   (default sm_90a; no GPU needed, CuTeDSL compiles down to a cubin)
Expected with CuTeDSL 4.2.1-4.5.3: 'llvm.fpext' op operand #0 must be floating point LLVM type
"""
import os
import sys

os.environ["CUTE_DSL_ARCH"] = sys.argv[1] if len(sys.argv) > 1 else "sm_90a"

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor


@cute.kernel
def kernel(src: cute.Tensor, dst: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    values = cute.local_tile(src, (8,), (tidx,)).load()
    cute.local_tile(dst, (8,), (tidx,)).store(values.to(cutlass.Float32))  # arith.extf vector<8xf8E4M3FN> to vector<8xf32>


@cute.jit
def launch(src: cute.Tensor, dst: cute.Tensor):
    kernel(src, dst).launch(grid=(1, 1, 1), block=(128, 1, 1))


cute.compile(launch, make_fake_compact_tensor(cutlass.Float8E4M3FN, (1024,)), make_fake_compact_tensor(cutlass.Float32, (1024,)))
print("compiled")
