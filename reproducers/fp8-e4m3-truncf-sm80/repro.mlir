// fp8-e4m3-truncf-sm80: f32 -> FP8 E4M3 conversion fails on targets without the cvt instruction
// arith.truncf vector<8xf32> to vector<8xf8E4M3FN> (TensorSSA.to(cutlass.Float8E4M3FN))
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {
      %x = llvm.load %src : !llvm.ptr<1> -> vector<8xf32>
      %y = arith.truncf %x : vector<8xf32> to vector<8xf8E4M3FN>
      llvm.store %y, %dst : vector<8xf8E4M3FN>, !llvm.ptr<1>
      gpu.return
    }
  }
}
