"""f32 -> E8M0 conversion fails on targets without the cvt instruction

Run: python repro.py [ARCH]   (default sm_90a; no GPU needed, CuTeDSL compiles down to a cubin)
Expected with CuTeDSL 4.8.1: Error: unsupported operation
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
    cute.local_tile(dst, (8,), (tidx,)).store(values.to(cutlass.Float8E8M0FNU))  # arith.truncf upward vector<8xf32> to vector<8xf8E8M0FNU>


@cute.jit
def launch(src: cute.Tensor, dst: cute.Tensor):
    kernel(src, dst).launch(grid=(1, 1, 1), block=(128, 1, 1))


cute.compile(launch, make_fake_compact_tensor(cutlass.Float32, (1024,)), make_fake_compact_tensor(cutlass.Float8E8M0FNU, (1024,)))
print("compiled")
