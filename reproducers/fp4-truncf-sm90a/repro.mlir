// fp4-truncf-sm90a: f32 -> FP4 E2M1 conversion fails on targets without the cvt instruction
// arith.truncf vector<8xf32> to vector<8xf4E2M1FN> (TensorSSA.to(cutlass.Float4E2M1FN))
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {
      %x = llvm.load %src : !llvm.ptr<1> -> vector<8xf32>
      %y = arith.truncf %x : vector<8xf32> to vector<8xf4E2M1FN>
      llvm.store %y, %dst : vector<8xf4E2M1FN>, !llvm.ptr<1>
      gpu.return
    }
  }
}
