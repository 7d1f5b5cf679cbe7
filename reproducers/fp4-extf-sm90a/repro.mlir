// fp4-extf-sm90a: FP4 E2M1 -> f32 conversion fails on targets without the cvt instruction
// arith.extf vector<8xf4E2M1FN> to vector<8xf32> (TensorSSA.to(cutlass.Float32))
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {
      %x = llvm.load %src : !llvm.ptr<1> -> vector<8xf4E2M1FN>
      %y = arith.extf %x : vector<8xf4E2M1FN> to vector<8xf32>
      llvm.store %y, %dst : vector<8xf32>, !llvm.ptr<1>
      gpu.return
    }
  }
}
