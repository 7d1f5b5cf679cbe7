"""nvvm.inline_ptx gives a constant float operand the 'n' (integer immediate) constraint (NVIDIA/cutlass#3594, #3640)

Run: python repro.py [ARCH]   (default sm_90a; no GPU needed, CuTeDSL compiles down to a cubin)
Expected with CuTeDSL 4.8.1: constraint 'n' expects an integer constant expression
"""
import os
import sys

os.environ["CUTE_DSL_ARCH"] = sys.argv[1] if len(sys.argv) > 1 else "sm_90a"

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass._mlir import ir
from cutlass._mlir.dialects import arith, nvvm

@cute.kernel
def kernel(src: cute.Tensor, dst: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    c = arith.constant(ir.F32Type.get(), 1.5)  # the constant operand is what fails
    y = nvvm.inline_ptx([ir.F32Type.get()], [src[tidx].ir_value(), c], [], "add.rn.f32 {{$w0}}, {{$r0}}, {{$r1}};")
    dst[tidx] = cutlass.Float32(y)


@cute.jit
def launch(src: cute.Tensor, dst: cute.Tensor):
    kernel(src, dst).launch(grid=(1, 1, 1), block=(128, 1, 1))


cute.compile(launch, make_fake_compact_tensor(cutlass.Float32, (1024,)), make_fake_compact_tensor(cutlass.Float32, (1024,)))
print("compiled")
