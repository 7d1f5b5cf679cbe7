// legacy-narrow-extf-fpext: arith.extf from FP8/FP4 reaches llvm.fpext with an integer operand type: fails on every target
// arith.extf vector<8xf8E4M3FN> to vector<8xf32> (any FP8/FP4 type)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {
      %x = llvm.load %src : !llvm.ptr<1> -> vector<8xf8E4M3FN>
      %y = arith.extf %x : vector<8xf8E4M3FN> to vector<8xf32>
      llvm.store %y, %dst : vector<8xf32>, !llvm.ptr<1>
      gpu.return
    }
  }
}
