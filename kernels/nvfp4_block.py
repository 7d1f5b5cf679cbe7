"""NVFP4's block code on the device: the piece every kernel that writes NVFP4 shares.

Owns: the E2M1 conversion (CuTeDSL's own, and the bit-exact `fptosi` formulation), the
quantization of one 16-element block to E2M1 codes and its E4M3 scale (`_quantize_block`),
the shared-memory tile epilogue `quantize_tile_rows`, and the output pointers and alignments
of an NVFP4 tensor. The quantize kernels (`cute_lowering.kernels.nvfp4_kernels`) and the FMHA epilogues
(`cute_lowering.kernels.attention_parts.store_nvfp4`) build on it, so the FMHA's NVFP4 output is
bit-identical to `nvfp4.quantize` of its bf16 output. The format itself (TensorRT-LLM's recipe):
`kernels/nvfp4_kernels.py`'s docstring. Imports nothing of this package; no torch.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_ptr

BLOCK = 16  # elements per E4M3 scale (NVFP4)
F32 = cutlass.Float32
FP4 = cutlass.Float4E2M1FN
FP8 = cutlass.Float8E4M3FN


def fptosi_pipeline(arch: str) -> str:
    """`auto` plus the bounded float-to-int rewrite, for the comparison build."""
    return (
        "builtin.module(ptx-float-operands,fptosi-to-select,"
        f"truncf-to-select{{arch={arch}}},extf-to-select{{arch={arch}}})"
    )


# --- the E2M1 conversion, two ways ------------------------------------------------
def e2m1_plain(y: cute.TensorSSA) -> cute.TensorSSA:
    """16 f32 -> 16 E2M1 codes packed in 2 x u32: CuTeDSL's own conversion."""
    return y.to(FP4).bitcast(cutlass.Uint32)


def e2m1_fptosi(y: cute.TensorSSA) -> cute.TensorSSA:
    """The same codes from three clamped integer roundings (bit-exact, see below).

    On a = 2|y| the E2M1 magnitudes are 0,1,2,3,4,6,8,12 (codes 0..7). RNE to that
    grid with ties to the even code is, piecewise, RNE to the integers on [0, 4], to
    even integers on [4, 8], to multiples of 4 on [8, 12]:
        code = re(clamp(a, 0, 4)) + re(clamp(a/2, 2, 4)) + re(clamp(a/4, 2, 3)) - 4
    (each tie of the E2M1 grid lands on a .5 of exactly one term, which rounds to the
    even code). Saturation is the clamps; NaN clamps to each upper bound (NaN-quiet
    min/max), code 7 = +6, and the sign bit is dropped for NaN (the +6 policy).
    """
    a = abs(y) * 2.0
    lo = cute.math.roundeven(cute.math.clamp(a, cute.full_like(a, 0.0), cute.full_like(a, 4.0)))
    mid = cute.math.roundeven(cute.math.clamp(a * 0.5, cute.full_like(a, 2.0), cute.full_like(a, 4.0)))
    hi = cute.math.roundeven(cute.math.clamp(a * 0.25, cute.full_like(a, 2.0), cute.full_like(a, 3.0)))
    code = lo.to(cutlass.Int32) + mid.to(cutlass.Int32) + hi.to(cutlass.Int32) - 4
    bits = cute.TensorSSA(y.bitcast(cutlass.Int32), y.shape, cutlass.Int32)  # bitcast flattens the shape
    negative = bits < 0  # the sign bit: -0 and tiny negatives give -0
    code = code + cute.where(negative, cute.full_like(code, 8), cute.full_like(code, 0))
    code = cute.where(y == y, code, cute.full_like(code, 7))  # NaN -> +6
    return code.to(cutlass.Int4).bitcast(cutlass.Uint32)


# --- the algorithm on one block ----------------------------------------------------
def _quantize_block(x16, gs, inv_gs, to_e2m1):
    """16 input values -> (2 x u32 of E2M1 codes, E4M3 scale)."""
    v = x16.to(F32)
    amax = F32(0.0)  # fmax ignores NaN; starting at 0 keeps amax a number
    for i in range(BLOCK):  # unrolled at trace time: a tree of FMNMX with |.|
        amax = cute.arch.fmax(amax, abs(v[i]))
    sf = cutlass.Float8E4M3FN(gs * (amax * F32(1.0 / 6.0)))  # 1/6 rounded to f32 once, here
    sf_f = F32(sf)
    scale = cutlass.select_(sf_f != F32(0.0), F32(1.0) / (sf_f * inv_gs), F32(0.0))
    return to_e2m1(v * scale), sf


def quantize_tile_rows(tile, codes, scales, rows_valid, gs, inv_gs, tidx, threads: int):
    """An epilogue for other kernels: a [rows, cols] tile (shared memory) -> NVFP4 in global memory.

    Call it while tracing a kernel. `codes` is the [rows, cols/8] u32 view of the packed
    output and `scales` the [rows, cols/16] E4M3 (or u8) scales, both tiles at the
    tile's rows; rows >= `rows_valid` (>= 1) are not written. Each of `threads` threads
    (this one is `tidx`) takes whole 16-element blocks, consecutive threads neighbouring
    blocks of a row (coalesced stores). The values are the tile's (already rounded to
    its dtype), so the result is bit-identical to `quantize()` of the tensor the tile
    would have been stored to.
    """
    rows, cols = cute.size(tile, mode=[0]), cute.size(tile, mode=[1])
    per_row = cols // BLOCK
    if rows * per_row % threads:
        raise ValueError(f"{rows}x{cols} tile: {rows * per_row} blocks do not split over {threads} threads")
    scale_bytes = scales if scales.element_type == FP8 else cute.recast_tensor(scales, FP8)
    for i in range(rows * per_row // threads):  # unrolled while tracing
        block = tidx + i * threads
        # a thread past the valid rows redoes the last valid row's block (same values, same
        # bytes): no branch, and no write outside the valid rows
        row = cutlass.select_(block // per_row < rows_valid, block // per_row, rows_valid - 1)
        col = block % per_row
        # element by element through the tiles' own layouts (a swizzled tile included):
        # 16 shared-memory loads and two 4-byte stores, a small cost for an epilogue
        values = cute.make_rmem_tensor((BLOCK,), tile.element_type)
        for j in range(BLOCK):
            values[j] = tile[row, col * BLOCK + j]
        packed, sf = _quantize_block(values.load(), gs, inv_gs, e2m1_plain)
        codes[row, 2 * col] = packed[0]
        codes[row, 2 * col + 1] = packed[1]
        scale_bytes[row, col] = sf


GLOBAL_SCALE_NUMERATOR = 448.0 * 6.0  # E4M3 max * E2M1 max: the global scale is this / amax


# --- compile (no GPU needed) ------------------------------------------------------
# Pointer alignments: the element tensors and the codes are read/written 16 bytes at a
# time; the API checks that the torch tensors honour them.
ALIGN_VALUES, ALIGN_CODES, ALIGN_SCALES = 16, 16, 4


def _f32_pointer(address: int):
    return make_ptr(F32, address, cute.AddressSpace.gmem, assumed_align=4)


def output_pointers(codes: int, scales: int, global_scale: int) -> tuple:
    """Pointer arguments for NVFP4 output, ours or another kernel's: codes as u32, scale bytes, the f32 global scale."""
    gmem = cute.AddressSpace.gmem
    return (
        make_ptr(cutlass.Uint32, codes, gmem, assumed_align=ALIGN_CODES),
        make_ptr(cutlass.Uint8, scales, gmem, assumed_align=ALIGN_SCALES),
        _f32_pointer(global_scale),
    )
