"""The Hopper FMHA's packed split-KV kernel (the "decode_wgmma" path): `_PackedSplitSm90`.

Owns the host function that runs `_FmhaSm90`'s kernel over GQA-packed rows and key splits
(f32 partials) and then `cute_lowering.kernels.fmha_decode`'s combine kernel, in one call; when it is taken
and with how many splits is `cute_lowering.kernels.fmha_sm90`'s planning (`choose_splits`).
"""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

from cute_lowering.kernels import fmha_decode
from cute_lowering.kernels.attention_parts import bshd_tensors, row_copy
from cute_lowering.kernels.fmha_sm90_kernel import _FmhaSm90
from cute_lowering.kernels.fmha_sm90_parts import F32, I32


class _PackedSplitSm90(_FmhaSm90):
    """Short queries over long keys on wgmma: GQA packing and split-KV, then fmha_decode's combine.

    The rows of a tile are packed rows of one (batch, kv head): row r is query r // G of q
    head kv_head * G + r % G (G = Hq / Hkv, a compile-time divisor of BLOCK_M), so the G q
    heads that share K/V read it once, and Sq = 16 with G = 8 fills a 128-row tile. TMA
    loads them as one box: Q seen as ((G, Sq), D, Hkv, B). The tile's key blocks are cut
    into num_splits shares, one CTA each; a CTA writes its rows' O normalized by its own sum
    and its LSE (log2) as f32 partials [splits, B * Hkv, G * Sq, D] and [splits, B * Hkv,
    G * Sq], and `fmha_decode`'s combine kernel (launched by the same host function) merges
    them into O and LSE, adding the sink. Same call as `fmha_decode.compile_decode`'s (the
    counters are not read), so kernels/ops.py launches either the same way.
    """

    @cute.jit
    def __call__(
        self,
        q_ptr: cute.Pointer,
        k_ptr: cute.Pointer,
        v_ptr: cute.Pointer,
        o_ptr: cute.Pointer,
        lse_ptr: cute.Pointer,
        sink_ptr: cute.Pointer,
        part_o_ptr: cute.Pointer,
        part_lse_ptr: cute.Pointer,
        counters_ptr: cute.Pointer,
        b: I32,
        sq: I32,
        sk: I32,
        hq: I32,
        hkv: I32,
        num_splits: I32,
        scale_log2: F32,
        left: I32,
        right: I32,
        stream: cuda.CUstream,
    ):
        d = self.d
        dt = self.dtype
        g = self.group
        q_row = cute.assume(hq * d, divby=d)
        kv_row = cute.assume(hkv * d, divby=d)
        # Q packed: ((G, Sq), D, Hkv, B); K/V (Sk, D, Hkv, B) as in _FmhaSm90
        mQ = cute.make_tensor(
            q_ptr, cute.make_layout(((g, sq), d, hkv, b), stride=((d, q_row), 1, g * d, cute.assume(sq * q_row, divby=d)))
        )
        kv_lay = cute.make_layout((sk, d, hkv, b), stride=(kv_row, 1, d, cute.assume(sk * kv_row, divby=d)))
        mK = cute.make_tensor(k_ptr, kv_lay)
        mV = cute.make_tensor(v_ptr, kv_lay)
        mO, mLSE, mSink = bshd_tensors(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sink_ptr, b, sq, sk, hq, hkv, d)[3:]
        rows = g * sq
        bh = b * hkv
        row_d = cute.assume(rows * d, divby=d)
        mPartO = cute.make_tensor(
            part_o_ptr, cute.make_layout((num_splits, bh, rows, d), stride=(cute.assume(bh * row_d, divby=d), row_d, d, 1))
        )
        mPartLSE = cute.make_tensor(part_lse_ptr, cute.make_layout((num_splits, bh, rows), stride=(bh * rows, rows, 1)))

        sQ_layout, sKV_layout, (tma_q, tQ), (tma_k, tK), (tma_v, tV), mma_qk, mma_pv = self.loads_and_mmas(mQ, mK, mV)
        if cutlass.const_expr(self.mask_relative):
            self.col_offsets = self.score_columns(mma_qk)
        stages = self.stages

        @cute.struct
        class Smem:
            bar_q: cute.struct.MemRange[cutlass.Int64, 2]
            bar_k: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            bar_v: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            q: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
            k: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
            v: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]

        s2g = row_copy(cute.nvgpu.CopyUniversalOp(), dt, 128)  # (not used: no O buffer)
        m_tiles = cute.ceil_div(rows, self.block_m)
        n_tiles = m_tiles * num_splits * bh
        # the kernel's O and LSE are the partials here (partials_epilogue); the NVFP4 outputs and
        # the scheduler's counters (one CTA per tile) are never read
        self.kernel(
            tQ, tK, tV, tma_q, tma_k, tma_v, mPartO, mPartLSE, mSink, mPartO, mPartLSE, mPartO, mPartLSE, mPartO, mPartLSE, scale_log2,
            left, right, m_tiles, n_tiles, num_splits, sQ_layout, sKV_layout, mma_qk, mma_pv, s2g, Smem,
        ).launch(grid=(n_tiles, 1, 1), block=[self.threads, 1, 1], stream=stream, min_blocks_per_mp=1)  # fmt: skip
        combine = fmha_decode._SplitKV(dt, d, self.has_left, self.has_right, self.has_sink, pdl=bool(self.pdl))
        combine.combine_kernel(mPartO, mPartLSE, mO, mLSE, mSink).launch(
            grid=(cute.ceil_div(rows, fmha_decode.COMBINE_WARPS) * bh, 1, 1), block=[fmha_decode.COMBINE_WARPS * 32, 1, 1], stream=stream,
            use_pdl=bool(self.pdl),
        )
