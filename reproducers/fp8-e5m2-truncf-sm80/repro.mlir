// fp8-e5m2-truncf-sm80: f32 -> FP8 E5M2 conversion fails on targets without the cvt instruction
// arith.truncf vector<8xf32> to vector<8xf8E5M2> (TensorSSA.to(cutlass.Float8E5M2))
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {
      %x = llvm.load %src : !llvm.ptr<1> -> vector<8xf32>
      %y = arith.truncf %x : vector<8xf32> to vector<8xf8E5M2>
      llvm.store %y, %dst : vector<8xf8E5M2>, !llvm.ptr<1>
      gpu.return
    }
  }
}
