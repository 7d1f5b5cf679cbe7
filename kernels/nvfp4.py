"""NVFP4 quantize / dequantize: the public API (`quantize`, `dequantize`, `compute_global_scale`,
`swizzle_scales`) over the CuTeDSL kernels of `cute_lowering.kernels.nvfp4_kernels`.

The format, the kernels and their compile functions: `kernels/nvfp4_kernels.py` (its names,
`compile_quantize` and the others, are reachable from here too). The public functions call
the torch ops of `kernels/ops.py` (their CUDA impls directly in eager mode; torch imported on
first use, so this module imports without torch); the full input checks, with messages, are
`cute_lowering.kernels.inputs`'. Importing this module needs neither torch nor a GPU.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

from cute_lowering.kernels.inputs import (  # noqa: F401 (the checks, by their names here as before)
    _check_device,
    _check_global_scale,
    _check_global_scale_shape,
    check_dequantize_input,
    check_dequantize_shapes,
    check_quantize_input,
    check_quantize_shapes,
)
from cute_lowering.kernels.nvfp4_block import (  # noqa: F401
    ALIGN_CODES,
    ALIGN_SCALES,
    ALIGN_VALUES,
    BLOCK,
    F32,
    FP4,
    FP8,
    GLOBAL_SCALE_NUMERATOR,
    e2m1_fptosi,
    e2m1_plain,
    fptosi_pipeline,
    output_pointers,
    quantize_tile_rows,
)
from cute_lowering.kernels.nvfp4_kernels import (  # noqa: F401 (the kernels' knobs and compile functions, by their names here as before)
    AMAX_BLOCKS_PER_THREAD,
    AMAX_CTAS,
    BLOCKS_PER_THREAD,
    DEQ_BLOCKS_PER_THREAD,
    INPUT_TYPES,
    ONE_LAUNCH_CLUSTER,
    ONE_LAUNCH_MAX_ELEMENTS,
    OUTPUT_TYPES,
    SCALE_SOURCES,
    THREADS,
    TVM_FFI_OPTION,
    VARIANTS,
    amax_ctas,
    compile_amax,
    compile_dequantize,
    compile_global_scale,
    compile_quantize,
    dequantize_arguments,
    one_launch_arch,
    quantize_arguments,
)
from cute_lowering.kernels.torch_device import torch_module


def _stream(torch, device):
    return cuda.CUstream(torch.cuda.current_stream(device).cuda_stream)


def _ops():
    from cute_lowering.kernels import ops  # torch, imported on first use (an optional dependency: this module imports without it)

    return ops


def compute_global_scale(x):
    """448 * 6 / amax(|x|) over the finite elements (1 when that is 0), as a 0-d f32 tensor on x's device.

    The op `cute_lowering::nvfp4_global_scale` (see `compute_global_scale_eager`).
    """
    ops = _ops()
    return ops.nvfp4_global_scale_impl(x) if ops.direct(x) else ops.nvfp4_global_scale(x)


def compute_global_scale_eager(x):
    """compute_global_scale's work in eager mode (`cute_lowering.kernels.ops.compute_global_scale_eager`)."""
    return _ops().compute_global_scale_eager(x)


def quantize(x, global_scale=None, swizzle: bool = False, *, variant: str = "plain"):
    """[M, K] bf16/fp16/fp32 CUDA tensor -> (packed uint8 [M, K//2], scales float8_e4m3fn [M, K//16], global f32 0-d).

    `global_scale`: a float32 tensor of one element on x's device, or None to compute
    448*6/amax(|x|) on the device (no host sync; the quantize kernel derives it from the
    amax). `swizzle=True` returns the scales in the 128x4 tile layout Blackwell's
    block-scaled GEMMs read (`swizzle_scales`). `variant="fptosi"`: the comparison build.
    The ops `cute_lowering::nvfp4_quantize` / `nvfp4_quantize_computing_scale`.
    """
    ops = _ops()
    if global_scale is None:
        if ops.direct(x):
            packed, scales, global_scale = ops.quantize_computing_scale_impl(x, variant)
        else:
            packed, scales, global_scale = ops.nvfp4_quantize_computing_scale(x, variant)
    else:
        if isinstance(global_scale, (int, float)):
            check_quantize_shapes(x, None, variant)
            global_scale = _check_global_scale(ops.torch, global_scale, x.device)
        if ops.direct(x, global_scale):
            packed, scales = ops.quantize_impl(x, global_scale, variant)
        else:
            packed, scales = ops.nvfp4_quantize(x, global_scale, variant)
        if global_scale.dim():
            global_scale = global_scale.reshape(())
    scales = scales.view(ops.torch.float8_e4m3fn)  # the ops return the E4M3 bits as uint8
    return packed, (swizzle_scales(scales) if swizzle else scales), global_scale


SWIZZLE_ROWS, SWIZZLE_COLS = 128, 4  # one tile: 128 rows x 4 scales = 512 bytes


def swizzle_scales(scales):
    """[M, K/16] scales -> the 1-D 128x4-tile layout of Blackwell block-scaled GEMMs.

    Rows are padded to a multiple of 128 and scale columns to a multiple of 4 with
    zeros. Tiles follow each other row-major over (row tile, column tile); inside a
    tile, scale (r, c) sits at byte (r % 32) * 16 + (r // 32) * 4 + c: four 32-row
    slabs interleaved so that one 16-byte load holds row r's 4 scales of every slab.
    """
    torch = torch_module()
    rows, cols = scales.shape
    tiles_r = -(-rows // SWIZZLE_ROWS)
    tiles_c = -(-cols // SWIZZLE_COLS)
    raw = scales.view(torch.uint8) if scales.dtype != torch.uint8 else scales
    padded = torch.zeros((tiles_r * SWIZZLE_ROWS, tiles_c * SWIZZLE_COLS), dtype=torch.uint8, device=scales.device)
    padded[:rows, :cols] = raw
    # [tile_r, slab (r // 32), lane (r % 32), tile_c, c] -> [tile_r, tile_c, lane, slab, c]
    tiled = padded.view(tiles_r, 4, 32, tiles_c, SWIZZLE_COLS).permute(0, 3, 2, 1, 4)
    out = tiled.reshape(-1).contiguous()
    return out.view(scales.dtype) if scales.dtype != torch.uint8 else out


def dequantize(packed, scales, global_scale, dtype=None):
    """(packed uint8 [M, K//2], scales float8_e4m3fn [M, K//16], global f32) -> [M, K] of `dtype` (bf16 default).

    The op `cute_lowering::nvfp4_dequantize`; a Python number as `global_scale` is moved to the device.
    """
    ops = _ops()
    dtype = ops.torch.bfloat16 if dtype is None else dtype
    if isinstance(global_scale, (int, float)):
        check_dequantize_shapes(packed, scales, ops.torch.ones((), dtype=ops.torch.float32), dtype)
        _check_device("packed", packed)
        global_scale = _check_global_scale(ops.torch, global_scale, packed.device)
    if ops.direct(packed, scales, global_scale):
        return ops.dequantize_impl(packed, scales, global_scale, dtype)
    return ops.nvfp4_dequantize(packed, scales, global_scale, dtype)
