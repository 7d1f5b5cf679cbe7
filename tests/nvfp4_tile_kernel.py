"""A kernel that stages [128, D] tiles in shared memory and quantizes them with
`nvfp4.quantize_tile_rows` (the shared-memory tile epilogue for other kernels; the FMHA
used it until `attention_parts.store_nvfp4` replaced it, and
4161db4:bench/h200/fmha_nvfp4/epilogue_ab.py measured it as "before"): its output must be
bit-identical to `nvfp4.quantize` of the same tensor."""

from __future__ import annotations

import functools

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_lowering
from cute_lowering.kernels import nvfp4, nvfp4_kernels
from cute_lowering.kernels.cutedsl_compat import SmemAllocator

ROWS = 128  # rows per CTA
THREADS = 128


def _launcher(dtype, d: int, swizzled: bool):
    @cute.kernel
    def kernel(x: cute.Tensor, q: cute.Tensor, s: cute.Tensor, g: cute.Tensor, m: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        # a swizzled tile (as attention kernels keep O) must read back the same values
        layout = cute.make_layout((ROWS, d), stride=(d, 1))
        if cutlass.const_expr(swizzled):
            layout = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, layout)
        smem = SmemAllocator()
        tile = smem.allocate_tensor(dtype, layout, byte_alignment=128)
        rows_valid = m - bidx * ROWS
        gx = cute.local_tile(x, (ROWS, d), (bidx, 0))
        for i in cutlass.range(ROWS * d // THREADS):
            e = tidx + i * THREADS
            if e // d < rows_valid:
                tile[e // d, e % d] = gx[e // d, e % d]
        cute.arch.barrier()
        codes = cute.local_tile(q, (ROWS, d // 8), (bidx, 0))
        scales = cute.local_tile(s, (ROWS, d // 16), (bidx, 0))
        gs = g[0]
        nvfp4.quantize_tile_rows(tile, codes, scales, rows_valid, gs, cutlass.Float32(1.0) / gs, tidx, THREADS)

    @cute.jit
    def launch(xp: cute.Pointer, qp: cute.Pointer, sp: cute.Pointer, gp: cute.Pointer, m: cutlass.Int32, stream: cuda.CUstream):
        x = cute.make_tensor(xp, cute.make_layout((m, d), stride=(d, 1)))
        q = cute.make_tensor(qp, cute.make_layout((m, d // 8), stride=(d // 8, 1)))
        s = cute.make_tensor(sp, cute.make_layout((m, d // 16), stride=(d // 16, 1)))
        g = cute.make_tensor(gp, cute.make_layout((1,)))
        kernel(x, q, s, g, m).launch(grid=((m + ROWS - 1) // ROWS, 1, 1), block=(THREADS, 1, 1), stream=stream)

    return launch


@functools.cache
def compile_tile_quantizer(dtype_name: str, d: int, arch: str, swizzled: bool = True):
    dtype = nvfp4.INPUT_TYPES[dtype_name]
    args = (*nvfp4_kernels._pointer_args(dtype, *[256] * 4), cutlass.Int32(ROWS), cuda.CUstream(0))
    with cute_lowering.prelowering():
        return cute.compile(_launcher(dtype, d, swizzled), *args, options=f"--gpu-arch {arch}")
