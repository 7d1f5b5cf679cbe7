// legacy-e8m0-truncf-unrealized-cast: arith.truncf to E8M0 leaves a builtin.unrealized_conversion_cast that LLVM translation rejects: fails on every target
// arith.truncf upward vector<8xf32> to vector<8xf8E8M0FNU>
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
