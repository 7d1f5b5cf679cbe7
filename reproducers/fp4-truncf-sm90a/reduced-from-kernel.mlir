!memref_gmem_f32 = !cute.memref<f32, gmem, "(1024):(1)">
!memref_gmem_f32_1 = !cute.memref<f32, gmem, "(8):(1)">
!memref_gmem_f32_2 = !cute.memref<f32, gmem, "(8,1):(1,0)">
!memref_gmem_f4E2M1FN = !cute.memref<f4E2M1FN, gmem, align<1>, "(1024):(1)">
!memref_gmem_f4E2M1FN1 = !cute.memref<f4E2M1FN, gmem, align<1>, "(8):(1)">
!memref_rmem_f32 = !cute.memref<f32, rmem, align<32>, "(8):(1)">
!memref_rmem_f32_1 = !cute.memref<f32, rmem, align<32>, "(8,1):(1,0)">
module attributes {gpu.container_module} {
  gpu.module @kernels {
    cuda.kernel @kernel_cutlass_convert_kernel_tensorptrf32gmemo10241_tensorptrf4E2M1FNgmemalign1o10241_0(%arg0: !memref_gmem_f32, %arg1: !memref_gmem_f4E2M1FN) attributes {cute.kernel, gpu.kernel} {
      %0 = nvvm.read.ptx.sreg.tid.x : i32
      %tile = cute.make_tile() : () -> !cute.tile<"[8:1]">
      %coord = cute.make_coord(%0) : (i32) -> !cute.coord<"(?)">
      %tiled_view = cute.local_tile(%arg0, %tile, %coord) : (!memref_gmem_f32, !cute.tile<"[8:1]">, !cute.coord<"(?)">) -> !memref_gmem_f32_1
      %tile_0 = cute.make_tile() : () -> !cute.tile<"[8:1]">
      %coord_1 = cute.make_coord(%0) : (i32) -> !cute.coord<"(?)">
      %tiled_view_2 = cute.local_tile(%arg1, %tile_0, %coord_1) : (!memref_gmem_f4E2M1FN, !cute.tile<"[8:1]">, !cute.coord<"(?)">) -> !memref_gmem_f4E2M1FN1
      %lay = cute.get_layout(%tiled_view) : !memref_gmem_f32_1
      %1 = cute.make_layout_like(%lay) : !cute.layout<"(8):(1)"> to !cute.layout<"(8):(1)">
      %rmem = cute.memref.alloca(%1) : !memref_rmem_f32
      %lay_3 = cute.get_layout(%rmem) : !memref_rmem_f32
      %rinv = cute.right_inverse(%lay_3) : (!cute.layout<"(8):(1)">) -> !cute.layout<"8:1">
      %2 = cute.composition(%lay, %rinv) : (!cute.layout<"(8):(1)">, !cute.layout<"8:1">) -> !cute.layout<"8:1">
      %coalesce = cute.coalesce(%2) : (!cute.layout<"8:1">) -> !cute.layout<"8:1">
      %3 = cute.composition(%rinv, %coalesce) : (!cute.layout<"8:1">, !cute.layout<"8:1">) -> !cute.layout<"8:1">
      %div = cute.logical_divide(%tiled_view, %3) : !memref_gmem_f32_1, !cute.layout<"8:1">
      %div_4 = cute.logical_divide(%rmem, %3) : !memref_rmem_f32, !cute.layout<"8:1">
      %shape = cute.make_shape() : () -> !cute.shape<"1">
      %lay_5 = cute.make_layout(%shape) : !cute.layout<"1:0">
      %div_6 = cute.logical_divide(%div, %lay_5) : !memref_gmem_f32_2, !cute.layout<"1:0">
      %shape_7 = cute.make_shape() : () -> !cute.shape<"1">
      %lay_8 = cute.make_layout(%shape_7) : !cute.layout<"1:0">
      %div_9 = cute.logical_divide(%div_4, %lay_8) : !memref_rmem_f32_1, !cute.layout<"1:0">
      %4 = cute.memref.load_vec(%rmem) : (!memref_rmem_f32) -> vector<8xf32>
      %5 = arith.truncf %4 : vector<8xf32> to vector<8xf4E2M1FN>
      cute.memref.store_vec(%5, %tiled_view_2) : (vector<8xf4E2M1FN>, !memref_gmem_f4E2M1FN1) -> ()
      return
    }
  }
}
