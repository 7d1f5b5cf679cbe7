"""What both FMHA paths (`fmha.py`'s mma.sync kernel, `fmha_sm90.py`'s wgmma kernel) share.

Plain Python called while a kernel is traced: the quad reductions of an MMA row, the
last step of the online softmax (normalizer and LSE, with or without a sink), and the
NVFP4 output of the epilogue. Importing it needs neither torch nor a GPU.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute

from kernels import nvfp4

F32 = cutlass.Float32
LOG2E = math.log2(math.e)
LN2 = math.log(2.0)


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
    """The NVFP4 output as tensors: codes [B, S, H, D/8] u32, scales [B, S, H, D/16] u8, the global scale."""
    codes = cute.make_tensor(
        codes_ptr, cute.make_layout((b, sq, hq, d // 8), stride=(sq * hq * (d // 8), hq * (d // 8), d // 8, 1))
    )
    scales = cute.make_tensor(
        scales_ptr, cute.make_layout((b, sq, hq, d // 16), stride=(sq * hq * (d // 16), hq * (d // 16), d // 16, 1))
    )
    return codes, scales, cute.make_tensor(global_scale_ptr, cute.make_layout((1,)))


def store_nvfp4(tile, outputs, batch, head, tile_index, rows_valid, tidx, threads: int):
    """O's rows `tile_index * rows ...` from the shared-memory `tile` as NVFP4 (rows_valid >= 1)."""
    codes, scales, global_scale = outputs
    rows, d = cute.size(tile, mode=[0]), cute.size(tile, mode=[1])
    gs = global_scale[0]
    codes_tile = cute.local_tile(codes[batch, None, head, None], (rows, d // 8), (tile_index, 0))
    scales_tile = cute.local_tile(scales[batch, None, head, None], (rows, d // 16), (tile_index, 0))
    nvfp4.quantize_tile_rows(tile, codes_tile, scales_tile, rows_valid, gs, F32(1.0) / gs, tidx, threads)
