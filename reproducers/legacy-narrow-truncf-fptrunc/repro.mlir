// legacy-narrow-truncf-fptrunc: arith.truncf to FP8/FP4 reaches llvm.fptrunc with an integer result type (narrow float not converted): fails on every target
// arith.truncf vector<8xf32> to vector<8xf8E4M3FN> (any FP8/FP4 type)
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
