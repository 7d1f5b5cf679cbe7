// inline-ptx-f32-constant: nvvm.inline_ptx gives a constant float operand the 'n' (integer immediate) constraint (NVIDIA/cutlass#3594, #3640)
// nvvm.inline_ptx with an arith.constant f32 operand: ro(%x, %cst : f32, f32)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {
      %x = llvm.load %src : !llvm.ptr<1> -> f32
      %c = arith.constant 1.5 : f32
      %y = nvvm.inline_ptx "add.rn.f32 {$w0}, {$r0}, {$r1};" ro(%x, %c : f32, f32) -> f32
      llvm.store %y, %dst : f32, !llvm.ptr<1>
      gpu.return
    }
  }
}
