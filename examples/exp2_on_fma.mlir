// IR of tests/cute_kernels.py::_exp2_on_fma as CuTeDSL 4.8.1 traces it (before its own passes).
!memref_gmem_f32 = !cute.memref<f32, gmem, "(1024):(1)">
module attributes {gpu.container_module} {
  gpu.module @kernels {
    cuda.kernel @kernel_cutlass__exp2_on_fma_tensorptrf32gmemo10241_tensorptrf32gmemo10241_0(%arg0: !memref_gmem_f32, %arg1: !memref_gmem_f32) attributes {cu_attrs = {max_dynamic_shared_size_bytes = #cuda.dev_max_shared_memory_optin, non_portable_cluster_size_allowed = 1 : i32}, cute.kernel, cutlass_launch_facts = {cluster_launch = false, cooperative_launch = false, exact_block_dim = array<i64: 128, 1, 1>, exact_grid_dim = array<i64: 8, 1, 1>, schema_version = 1 : i64}, gpu.kernel, nvvm.reqntid = array<i32: 128, 1, 1>, smem.hint_smem_base_uniform, smem.partition_num = 2 : i32} {
      %iter = cute.get_iter(%arg0) : !memref_gmem_f32
      %iter_0 = cute.get_iter(%arg1) : !memref_gmem_f32
      %iter_1 = cute.get_iter(%arg0) : !memref_gmem_f32
      %iter_2 = cute.get_iter(%arg1) : !memref_gmem_f32
      %lay = cute.get_layout(%arg0) : !memref_gmem_f32
      %lay_3 = cute.get_layout(%arg1) : !memref_gmem_f32
      %0 = nvvm.read.ptx.sreg.tid.x : i32
      %1 = nvvm.read.ptx.sreg.tid.y : i32
      %2 = nvvm.read.ptx.sreg.tid.z : i32
      %3 = nvvm.read.ptx.sreg.ctaid.x : i32
      %4 = nvvm.read.ptx.sreg.ctaid.y : i32
      %5 = nvvm.read.ptx.sreg.ctaid.z : i32
      %c128_i32 = arith.constant 128 : i32
      %6 = arith.muli %3, %c128_i32 : i32
      %7 = arith.addi %6, %0 : i32
      %coord = cute.make_coord(%7) : (i32) -> !cute.coord<"?">
      %8 = cute.memref.load(%arg0, %coord) : (!memref_gmem_f32, !cute.coord<"?">) -> f32
      %9 = math.floor %8 : f32
      %10 = arith.subf %8, %9 : f32
      %cst = arith.constant 0.0555041097 : f32
      %11 = arith.mulf %cst, %10 : f32
      %cst_4 = arith.constant 0.240226492 : f32
      %12 = arith.addf %11, %cst_4 : f32
      %13 = arith.mulf %12, %10 : f32
      %cst_5 = arith.constant 0.693147182 : f32
      %14 = arith.addf %13, %cst_5 : f32
      %15 = arith.mulf %14, %10 : f32
      %cst_6 = arith.constant 1.000000e+00 : f32
      %16 = arith.addf %15, %cst_6 : f32
      %17 = arith.bitcast %16 : f32 to i32
      %18 = arith.fptosi %9 : f32 to i32
      %c23_i32 = arith.constant 23 : i32
      %19 = arith.shli %18, %c23_i32 : i32
      %20 = arith.addi %17, %19 : i32
      %21 = arith.bitcast %20 : i32 to f32
      %coord_7 = cute.make_coord(%7) : (i32) -> !cute.coord<"?">
      cute.memref.store(%arg1, %coord_7, %21) : (!memref_gmem_f32, !cute.coord<"?">, f32) -> ()
      return
    }
  }
  func.func @cutlass_launch_FakeTensorFloat3210241_FakeTensorFloat3210241(%arg0: !memref_gmem_f32, %arg1: !memref_gmem_f32) -> i32 attributes {llvm.emit_c_interface} {
    %iter = cute.get_iter(%arg0) : !memref_gmem_f32
    %iter_0 = cute.get_iter(%arg1) : !memref_gmem_f32
    %iter_1 = cute.get_iter(%arg0) : !memref_gmem_f32
    %iter_2 = cute.get_iter(%arg1) : !memref_gmem_f32
    %lay = cute.get_layout(%arg0) : !memref_gmem_f32
    %lay_3 = cute.get_layout(%arg1) : !memref_gmem_f32
    %0 = cute.kernel_smem_size @kernels::@kernel_cutlass__exp2_on_fma_tensorptrf32gmemo10241_tensorptrf32gmemo10241_0 : i64
    %c232448_i64 = arith.constant 232448 : i64
    %1 = arith.cmpi sgt, %0, %c232448_i64 : i64
    scf.if %1 {
      cute.print("\0AError: kernel '@kernels::@kernel_cutlass__exp2_on_fma_tensorptrf32gmemo10241_tensorptrf32gmemo10241_0' launch shared memory exceeds current GPU arch sm_100a allowed. Allocated: {} bytes. Max: 232448 bytes.\0A\0A", %0) : i64
    }
    %c0_i64 = arith.constant 0 : i64
    %2 = cuda.cast %c0_i64 : i64 -> !cuda.stream
    %c128_i32 = arith.constant 128 : i32
    %c1_i32 = arith.constant 1 : i32
    %c8_i32 = arith.constant 8 : i32
    %3 = cuda.launch_cfg.create<max_attrs = 17 : i32> (blockDim = (%c128_i32, %c1_i32, %c1_i32), dynamicSmemBytes = %0, gridDim = (%c8_i32, %c1_i32, %c1_i32), stream = %2) : i32, i32, i32, i64, i32, i32, i32, !cuda.stream -> !cuda.launch_cfg<max_attrs = 17>
    %c0_i32 = arith.constant 0 : i32
    cuda.launch_cfg.programmatic_stream_serialization_allowed[%3] %c0_i32 : !cuda.launch_cfg<max_attrs = 17>, i32
    %c0_i32_4 = arith.constant 0 : i32
    cuda.launch_cfg.cooperative[%3] %c0_i32_4 : !cuda.launch_cfg<max_attrs = 17>, i32
    %4 = cuda.launch_ex @kernels::@kernel_cutlass__exp2_on_fma_tensorptrf32gmemo10241_tensorptrf32gmemo10241_0<%3> (%arg0, %arg1) {assume_kernel_attr = #cuda.assume_kernel_attr<true>} : !cuda.launch_cfg<max_attrs = 17>, (!memref_gmem_f32, !memref_gmem_f32) -> !cuda.result
    %5 = cuda.cast %4 : !cuda.result -> i32
    cuda.return_if_error %5 : i32
    %c0_i32_5 = arith.constant 0 : i32
    return %c0_i32_5 : i32
  }
}
