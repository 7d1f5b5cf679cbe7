// e8m0-truncf-sm90a: f32 -> E8M0 conversion fails on targets without the cvt instruction
// arith.truncf upward vector<8xf32> to vector<8xf8E8M0FNU> (TensorSSA.to(cutlass.Float8E8M0FNU))
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {
      %x = llvm.load %src : !llvm.ptr<1> -> vector<8xf32>
      %y = arith.truncf %x upward : vector<8xf32> to vector<8xf8E8M0FNU>
      llvm.store %y, %dst : vector<8xf8E8M0FNU>, !llvm.ptr<1>
      gpu.return
    }
  }
}
