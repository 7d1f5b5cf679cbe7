"""What the FMHA paths (`fmha_sm80.py`'s mma.sync kernel, `fmha_decode.py`'s split kernels,
`fmha_sm90.py`'s wgmma kernel) share.

Called while a kernel is traced (plain Python, and `store_nvfp4`, a @cute.jit function):
the [B, S, H, D] tensors over the raw pointers, the swizzled shared-memory rows and the
16-byte row copies, the ldmatrix copies feeding mma.sync, the online softmax's row state,
the quad reductions of an MMA row, the last step of the online softmax (normalizer and
LSE, with or without a sink), and the NVFP4 output of the epilogue. Importing it needs
neither torch nor a GPU.
"""

from __future__ import annotations

import math

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import warp
from cutlass.cute.runtime import make_ptr

from cute_lowering.kernels import nvfp4_block

F32 = cutlass.Float32
I32 = cutlass.Int32
LOG2E = math.log2(math.e)
LN2 = math.log(2.0)


def fake_io_pointers(dt) -> tuple:
    """Compile-time stand-ins for every attention host function's first arguments: q, k, v,
    out (16-byte aligned `dt`), lse and sink (f32)."""
    gmem = cute.AddressSpace.gmem
    return (
        make_ptr(dt, 16, gmem, assumed_align=16),
        make_ptr(dt, 16, gmem, assumed_align=16),
        make_ptr(dt, 16, gmem, assumed_align=16),
        make_ptr(dt, 16, gmem, assumed_align=16),
        make_ptr(F32, 16, gmem, assumed_align=4),
        make_ptr(F32, 16, gmem, assumed_align=4),
    )


def fake_arguments(dt) -> tuple:
    """Compile-time stand-ins for the attention host functions' arguments (fmha_sm80.py's and
    fmha_sm90.py's call): q, k, v, out, lse, sink, the NVFP4 outputs, counters, the tail
    split's partial O and LSE and piece count, b, sq, sk, hq, hkv, scale_log2, left, right, stream."""
    return (
        *fake_io_pointers(dt),
        *nvfp4_block.output_pointers(16, 16, 16),
        make_ptr(I32, 16, cute.AddressSpace.gmem, assumed_align=4),
        make_ptr(F32, 16, cute.AddressSpace.gmem, assumed_align=16),
        make_ptr(F32, 16, cute.AddressSpace.gmem, assumed_align=4),
        I32(1),
        I32(1), I32(1), I32(1), I32(1), I32(1),
        F32(1.0), I32(0), I32(0),
        cuda.CUstream(0),
    )  # fmt: skip


def ldmatrix_copies(mma: cute.TiledMma, dtype, thread):
    """The ldmatrix copies that feed `mma`'s operands from shared memory, and `thread`'s slices.

    ((Q copy, K copy, V^T copy), (their slices for `thread`)): Q as the A operand and K as
    the B operand as stored, V through the transposing ldmatrix as the B operand of P V.
    """

    def atom(transpose: bool):
        return cute.make_copy_atom(warp.LdMatrix8x8x16bOp(transpose=transpose, num_matrices=4), dtype)

    copies = (cute.make_tiled_copy_A(atom(False), mma), cute.make_tiled_copy_B(atom(False), mma), cute.make_tiled_copy_B(atom(True), mma))
    return copies, tuple(c.get_slice(thread) for c in copies)


def softmax_state(acc_O: cute.Tensor):
    """(rows, running row max = -inf, running row sum = 0) for the accumulator rows this thread holds."""
    n_rows = acc_O.shape[0][0] * acc_O.shape[1]
    row_max = cute.make_rmem_tensor((n_rows,), F32)
    row_sum = cute.make_rmem_tensor((n_rows,), F32)
    row_max.fill(-F32.inf)
    row_sum.fill(0.0)
    return n_rows, row_max, row_sum


def bshd_tensors(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sink_ptr, b, sq, sk, hq, hkv, d: int):
    """(Q, K, V, O, LSE, sink) over the raw pointers: Q/O [B, Sq, Hq, D], K/V [B, Sk, Hkv, D]
    row-major, LSE [B, Hq, Sq], sink [Hq]. Every stride but the last is a multiple of D
    (16-byte aligned rows, what the 16-byte copies need), said to the compiler."""
    q_row = cute.assume(hq * d, divby=d)
    kv_row = cute.assume(hkv * d, divby=d)
    mQ = cute.make_tensor(q_ptr, cute.make_layout((b, sq, hq, d), stride=(cute.assume(sq * q_row, divby=d), q_row, d, 1)))
    mO = cute.make_tensor(o_ptr, cute.make_layout((b, sq, hq, d), stride=(cute.assume(sq * q_row, divby=d), q_row, d, 1)))
    kv_batch = cute.assume(sk * kv_row, divby=d)
    mK = cute.make_tensor(k_ptr, cute.make_layout((b, sk, hkv, d), stride=(kv_batch, kv_row, d, 1)))
    mV = cute.make_tensor(v_ptr, cute.make_layout((b, sk, hkv, d), stride=(kv_batch, kv_row, d, 1)))
    mLSE = cute.make_tensor(lse_ptr, cute.make_layout((b, hq, sq), stride=(hq * sq, sq, 1)))
    mSink = cute.make_tensor(sink_ptr, cute.make_layout((hq,), stride=(1,)))
    return mQ, mK, mV, mO, mLSE, mSink


def swizzled_rows_atom():
    """Shared-memory layout atom: 128-byte rows of 64 elements, XOR-swizzled (conflict-free ldmatrix)."""
    return cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))


def row_copy(op, dtype, threads: int):
    """A tiled 16-byte copy of 64-element rows: 8 threads a row (bf16/fp16), `threads` // 8 rows a pass."""
    vec = 128 // dtype.width
    thr = cute.make_layout((threads // (64 // vec), 64 // vec), stride=(64 // vec, 1))
    return cute.make_tiled_copy_tv(cute.make_copy_atom(op, dtype, num_bits_per_copy=128), thr, cute.make_layout((1, vec)))


def quad_allreduce(x, op):
    """The 4 threads of an MMA row group hold one row between them: butterfly over them."""
    x = op(x, cute.arch.shuffle_sync_bfly(x, offset=2, mask=-1, mask_and_clamp=31))
    return op(x, cute.arch.shuffle_sync_bfly(x, offset=1, mask=-1, mask_and_clamp=31))


def fmax(a, b):
    return cute.arch.fmax(a, b)


def add(a, b):
    return a + b


def finish_row(partial_sum, row_max, scale_log2, sink_logit):
    """(scale for the row of O, LSE in log2 units) at the end of the online softmax.

    `partial_sum` is this thread's share of the row's sum of exp2 (the quad adds them),
    `row_max` the row's max score (-inf for a row that saw nothing), `sink_logit` the
    head's sink logit or None. Without a sink an empty row gives scale 0 and LSE -inf;
    with one, the sink joins the denominator, so the row's weights sum to less than 1.
    """
    total = quad_allreduce(partial_sum, add)
    m2 = row_max * scale_log2
    if sink_logit is not None:
        s2 = sink_logit * F32(LOG2E)
        top = cute.arch.fmax(m2, s2)
        e = cute.math.exp2(m2 - top, fastmath=True)
        denom = total * e + cute.math.exp2(s2 - top, fastmath=True)
        return e / denom, top + cute.math.log2(denom, fastmath=True)
    empty = total == F32(0.0)
    safe = cutlass.select_(empty, F32(1.0), total)
    scale = cutlass.select_(empty, F32(0.0), F32(1.0) / safe)
    return scale, cutlass.select_(empty, -F32.inf, m2 + cute.math.log2(safe, fastmath=True))


def nvfp4_outputs(codes_ptr, scales_ptr, global_scale_ptr, b, sq, hq, d: int):
    """The NVFP4 output as tensors: codes [B, S, H, D/8] u32, scales [B, S, H, D/16] u8, the global scale.

    Every stride but the last is a multiple of the last mode's extent (told to the compiler:
    `store_nvfp4` writes a row's codes 16 bytes and its scales 2 bytes at a time).
    """
    row_codes, row_scales = d // 8, d // 16
    codes = cute.make_tensor(
        codes_ptr,
        cute.make_layout(
            (b, sq, hq, row_codes),
            stride=(cute.assume(sq * hq * row_codes, divby=row_codes), cute.assume(hq * row_codes, divby=row_codes), row_codes, 1),
        ),
    )
    scales = cute.make_tensor(
        scales_ptr,
        cute.make_layout(
            (b, sq, hq, row_scales),
            stride=(cute.assume(sq * hq * row_scales, divby=row_scales), cute.assume(hq * row_scales, divby=row_scales), row_scales, 1),
        ),
    )
    return codes, scales, cute.make_tensor(global_scale_ptr, cute.make_layout((1,)))


PAIR = 2 * nvfp4_block.BLOCK  # columns a thread takes at a time: two NVFP4 blocks, 16 bytes of codes


@cute.jit
def store_nvfp4(tile, outputs, batch, head, tile_index, rows_valid, tidx, threads: cutlass.Constexpr, loads_ahead: cutlass.Constexpr = True):
    """O's rows `tile_index * rows ...` from the shared-memory `tile` as NVFP4 (rows_valid >= 1).

    `threads` threads (this one is `tidx`) share the [rows, D] tile: `threads // rows` per
    row, each taking pairs of 16-element blocks in turn along the row (thread h of a row:
    columns 32h.., then 32(h + threads/rows)..). Per pair: four 16-byte shared-memory loads,
    one 16-byte store of codes, one 2-byte store of scales. In the 128-byte-swizzled tiles of
    both paths the 8 threads of a load phase (wgmma: 4 rows x 2 halves, mma_sync: 8 rows)
    hit 8 different 16-byte bank groups (ncu, wgmma: the ideal number of shared wavefronts,
    against 3x the ideal for the element-wise reads before); where two threads share a row they
    write one whole 32-byte sector of codes per store. Every load is issued before the
    first block is quantized. The values are the tile's (already rounded to its
    dtype) and each block goes through `nvfp4`'s own block quantization, so the bytes are
    those of `nvfp4.quantize()` of the tensor the tile would have been stored to. Rows >=
    `rows_valid` are computed but not written. `loads_ahead` False (one row a thread only): each
    block is loaded (two 16-byte loads) just before it is quantized, so that few registers do
    (the FMHA's quantizing warps of NVFP4_OFFLOAD have 32); the stores are the same.
    """
    codes, scales, global_scale = outputs
    rows, d = cute.size(tile, mode=[0]), cute.size(tile, mode=[1])
    per_row = threads // rows
    if cutlass.const_expr(threads % rows or d % (PAIR * per_row)):
        raise ValueError(f"NVFP4 epilogue: a {rows}x{d} tile does not split into {PAIR}-column pairs over {threads} threads")
    gs = global_scale[0]
    inv_gs = F32(1.0) / gs
    codes_tile = cute.local_tile(codes[batch, None, head, None], (rows, d // 8), (tile_index, 0))
    scales_tile = cute.local_tile(scales[batch, None, head, None], (rows, d // 16), (tile_index, 0))
    scale_bytes = scales_tile if scales_tile.element_type == nvfp4_block.FP8 else cute.recast_tensor(scales_tile, nvfp4_block.FP8)

    if cutlass.const_expr(not loads_ahead and per_row != 1):
        raise ValueError(f"NVFP4 epilogue: loads_ahead=False takes one row a thread, not {threads} threads for {rows} rows")
    # shared -> registers: the thread's pairs (or, loads_ahead False, blocks), 16 bytes per load
    load = cute.make_tiled_copy_tv(
        cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), tile.element_type, num_bits_per_copy=128),
        cute.make_layout((rows, per_row), stride=(per_row, 1)),
        cute.make_layout((1, PAIR if loads_ahead else nvfp4_block.BLOCK)),
    )
    thr_load = load.get_slice(tidx)
    src = thr_load.partition_S(tile)  # (values of one pair or block, 1, pairs or blocks)
    where = thr_load.partition_S(cute.make_identity_tensor((rows, d)))
    values = cute.make_fragment_like(src)
    if cutlass.const_expr(loads_ahead):
        cute.copy(load, src, values)

    pairs = cute.size(src, mode=[2]) // (1 if loads_ahead else 2)
    row = where[0, 0, 0][0]
    block = cute.make_rmem_tensor((nvfp4_block.BLOCK,), tile.element_type)
    packed = cute.make_rmem_tensor((4,), cutlass.Uint32)
    sf = cute.make_rmem_tensor((2,), nvfp4_block.FP8)
    for p in cutlass.range_constexpr(pairs):
        pair = where[0, 0, p][1] // PAIR if loads_ahead else p  # which pair of the row
        for half in cutlass.range_constexpr(2):
            if cutlass.const_expr(loads_ahead):
                # by logical index: the fragment's registers need not be in column order (the
                # mma_sync tile at D=128 gives ((8,(2,2)),1,(2,2)):((1,(16,32)),0,(64,8)))
                for j in cutlass.range_constexpr(nvfp4_block.BLOCK):
                    block[j] = values[half * nvfp4_block.BLOCK + j, 0, p]
            else:
                # the row's block 2p + half, columns in order (one row a thread: blocks in turn)
                cute.copy(load, src[None, None, 2 * p + half], values[None, None, 2 * p + half])
                for j in cutlass.range_constexpr(nvfp4_block.BLOCK):
                    block[j] = values[j, 0, 2 * p + half]
            block_codes, block_sf = nvfp4_block._quantize_block(block.load(), gs, inv_gs, nvfp4_block.e2m1_plain)
            packed[2 * half] = block_codes[0]
            packed[2 * half + 1] = block_codes[1]
            sf[half] = block_sf
        if row < rows_valid:
            pair_codes = cute.local_tile(codes_tile, (1, PAIR // 8), (row, pair))  # local_tile takes tile indices
            pair_sf = cute.local_tile(scale_bytes, (1, 2), (row, pair))
            cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Uint32, num_bits_per_copy=128), packed, pair_codes[0, None])
            cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), nvfp4_block.FP8, num_bits_per_copy=16), sf, pair_sf[0, None])
