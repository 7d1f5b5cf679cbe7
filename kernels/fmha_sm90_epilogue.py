"""The Hopper FMHA's epilogues: O and LSE out of a consumer warpgroup's registers.

Owns `Sm90Epilogues` (a mixin of `fmha_sm90_kernel._FmhaSm90`): the bf16/fp16 store through
shared memory (16-byte stores or a TMA store, STMATRIX), O straight from registers
(Config.o_direct, the wide-key build), the NVFP4 output (quantized by the consumers or handed over to the producer's
quantizer warps: NVFP4_OFFLOAD), the split-KV partials (f32 O and LSE), and the tail split's
combine kernel.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync

from cute_lowering.kernels import fmha_decode
from cute_lowering.kernels.attention_parts import LN2, finish_row, store_nvfp4
from cute_lowering.kernels.fmha_sm90_parts import EPILOGUE_BARRIER, F32, I32, QUANTIZER_THREADS, TAIL_COMBINE_WARPS, _mn_view, _r2s_tiled_copy


class Sm90Epilogues:
    """The epilogue methods of `_FmhaSm90` (they read its compile-time fields)."""

    @cute.kernel
    def tail_combine_kernel(self, mTailO: cute.Tensor, mTailLSE: cute.Tensor, mO: cute.Tensor, mLSE: cute.Tensor, m_tiles: I32, full: I32):
        """TAIL_SPLIT: row r of tail tile t (tile `full` + t of the linear order, whose coordinates
        tile_coords gives) from its pieces' partials, by fmha_decode's combine of one row; rows
        past the queries are skipped, and with one piece (no tail split) nothing is done."""
        if cutlass.const_expr(self.pdl):
            cute.arch.griddepcontrol_wait()  # the pieces' kernel is done, its partials visible
        tidx, _, _ = cute.arch.thread_idx()
        block, _, _ = cute.arch.block_idx()
        row = block * TAIL_COMBINE_WARPS + tidx // 32
        t = row // self.block_m
        r = row - t * self.block_m
        pieces = mTailO.shape[0]
        if (pieces > 1) & (t < mTailO.shape[1]):
            sq, hq = mO.shape[1], mO.shape[2]
            tile = full + t
            m0 = (m_tiles - 1 - tile % m_tiles) * self.block_m
            head = (tile // m_tiles) % hq
            batch = tile // (m_tiles * hq)
            if m0 + r < sq:
                # the tile's partials seen at the row's query index (query q at row q - m0)
                d = self.d
                shift = (t * self.block_m - m0) * d
                part_o = cute.make_tensor(
                    mTailO.iterator + shift, cute.make_layout((pieces, 1, sq, d), stride=(mTailO.layout.stride[0], 0, d, 1))
                )  # fmt: skip
                part_lse = cute.make_tensor(
                    mTailLSE.iterator + (t * self.block_m - m0), cute.make_layout((pieces, 1, sq), stride=(mTailLSE.layout.stride[0], 0, 1))
                )  # fmt: skip
                combine = fmha_decode._SplitKV(self.dtype, d, False, False, False)
                combine.combine_row(part_o, part_lse, mO, mLSE, None, I32(0), m0 + r, tidx % 32, I32(1), batch, head)

    @cute.jit
    def copy_r2s(self, tiled_copy: cute.TiledCopy, thr_copy, regs: cute.Tensor, dst: cute.Tensor):
        """An accumulator-shaped register fragment into its shared-memory partition `dst` (_r2s_tiled_copy's
        copy). With STMATRIX the values go through a fragment shaped like `dst`, in the order the
        copy's retiling of the accumulator gives them (CUTLASS's epilogue does the same)."""
        if cutlass.const_expr(not self.stmatrix):
            cute.copy(tiled_copy, thr_copy.retile(regs), dst)
        else:
            staged = cute.make_rmem_tensor(cute.shape(dst), self.dtype)
            retiled = thr_copy.retile(regs)
            n = cute.size(staged)
            flat = cute.make_tensor(retiled.iterator, cute.composition(retiled.layout, cute.make_layout(n)))
            cute.make_tensor(staged.iterator, cute.make_layout(n)).store(flat.load())
            cute.copy(tiled_copy, staged, dst)

    @cute.jit
    def epilogue(
        self,
        acc_O: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        scale_log2: F32,
        tScS: cute.Tensor,
        mO: cute.Tensor,
        mLSE: cute.Tensor,
        mSink: cute.Tensor,
        mCodes: cute.Tensor,
        mScales: cute.Tensor,
        mGlobal: cute.Tensor,
        sO: cute.Tensor,
        handoff,
        mma_pv: cute.TiledMma,
        s2g: cute.CopyAtom,  # (a TiledCopy; with TMA_STORE the TMA store atom)
        ct: I32,
        wg: I32,
        m0: I32,
        head: I32,
        batch: I32,
    ):
        """Normalize O, write the LSE, and O through this warpgroup's rows of sO (or O as NVFP4,
        quantized here or, with NVFP4_OFFLOAD, handed over to the quantizing warps)."""
        d = self.d
        sq = mO.shape[0]
        acc_O_mn = _mn_view(acc_O)
        sink_logit = None  # the head's sink joins each row's denominator
        if cutlass.const_expr(self.has_sink):
            sink_logit = mSink[head]
        for r in cutlass.range_constexpr(cute.size(row_max)):
            scale, lse2 = finish_row(row_sum[r], row_max[r], scale_log2, sink_logit)
            acc_O_mn[r, None] = acc_O_mn[r, None].load() * scale
            row = m0 + tScS[r, 0][0]
            if ct % 4 == 0:
                if row < sq:
                    mLSE[batch, head, row] = lse2 * F32(LN2)

        rO = cute.make_fragment_like(acc_O, self.dtype)
        rO.store(acc_O.load().to(self.dtype))
        if cutlass.const_expr(self.o_direct):
            self.direct_epilogue(rO, tScS, mO, mma_pv, ct, m0, head, batch)
            return
        if cutlass.const_expr(self.tma_store):
            self.tma_store_epilogue(rO, mO, sO, s2g, ct, wg, m0, head, batch)
            return
        r2s = _r2s_tiled_copy(self.dtype, mma_pv, self.stmatrix)
        thr_r2s = r2s.get_slice(ct)
        # the warpgroup's rows of sO: every thread is done reading the previous tile's
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        if cutlass.const_expr(self.offload):
            sTiles, bar_o = handoff[0], handoff[1]
            cute.arch.mbarrier_wait(bar_o + 2 * wg + 1, sTiles[3, wg])  # and the quantizing warps with the last rows handed over
        self.copy_r2s(r2s, thr_r2s, rO, thr_r2s.partition_D(sO))
        if cutlass.const_expr(self.offload):
            if ct % 128 == 0:
                sTiles[0, wg] = batch
                sTiles[1, wg] = head
                sTiles[2, wg] = m0 + wg * 64  # (Sq or more: no rows to write)
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        if cutlass.const_expr(self.offload):
            if ct % 128 == 0:
                sTiles[3, wg] = sTiles[3, wg] ^ 1  # (read by the warpgroup before the barrier above)
            cute.arch.mbarrier_arrive(bar_o + 2 * wg)  # (every thread: its rows are in)
            return
        if cutlass.const_expr(self.defer):
            return  # (NVFP4_DEFER: quantize_pending, at the next tile's first S or after the last tile)
        if cutlass.const_expr(self.nvfp4_out):
            # O as NVFP4, quantized from this warpgroup's tile as it would have been stored
            self.quantize_own_rows(sO, (mCodes, mScales, mGlobal), batch, head, m0, m0 // 64, sq, ct, wg)
        else:
            sO = cute.local_tile(sO, (64, d), (wg, 0))
            gO = cute.local_tile(mO[None, None, head, batch], (64, d), (m0 // 64 + wg, 0))
            thr_s2g = s2g.get_slice(ct % 128)
            tOs = thr_s2g.partition_S(sO)
            tOg = thr_s2g.partition_D(gO)
            tOc = thr_s2g.partition_S(cute.make_identity_tensor((64, d)))
            tOr = cute.make_fragment_like(tOs, self.dtype)
            cute.copy(s2g, tOs, tOr)
            for m in cutlass.range_constexpr(cute.size(tOg.shape[1])):
                if m0 + wg * 64 + tOc[0, m, 0][0] < sq:
                    cute.copy(s2g, tOr[None, m, None], tOg[None, m, None])

    @cute.jit
    def quantize_own_rows(self, sO: cute.Tensor, outputs, batch: I32, head: I32, m0: I32, m64: I32, sq: I32, ct: I32, wg: I32):
        """The consumers' NVFP4 output: this warpgroup's rows of the tile at query row m0 (m64 = m0 / 64,
        as the caller has it), from O's buffer (sO: BLOCK_M x D), as NVFP4 (`outputs`: codes,
        scales, global scale); rows past Sq are not written."""
        first = m0 + wg * 64
        if first < sq:
            store_nvfp4(cute.local_tile(sO, (64, self.d), (wg, 0)), outputs, batch, head, m64 + wg, sq - first, ct % 128, 128)

    @cute.jit
    def quantize_pending(
        self, m_tiles: I32, num_splits: I32, mQ: cute.Tensor, mK: cute.Tensor, mO: cute.Tensor, outputs, sO: cute.Tensor, left: I32,
        right: I32, ct: I32, wg: I32, tail, pending: I32,
    ):  # fmt: skip
        """NVFP4_DEFER: this warpgroup's rows of tile `pending` (-1: none), which its epilogue left
        in O's buffer (after the barrier that saw them all in), as the epilogue would have written
        them (quantize_own_rows); the next epilogue's first barrier waits for these reads."""
        if pending >= 0:
            m_block, head, batch, _, _, _, _ = self.tile_coords(pending, m_tiles, num_splits, mQ, mK, left, right, tail)
            self.quantize_own_rows(sO, outputs, batch, head, m_block * self.block_m, m_block * (self.block_m // 64), mO.shape[0], ct, wg)

    @cute.jit
    def direct_epilogue(self, rO: cute.Tensor, tScS: cute.Tensor, mO: cute.Tensor, mma_pv: cute.TiledMma, ct: I32, m0: I32, head: I32, batch: I32):
        """Config.o_direct: this thread's O (rO, bf16/fp16, the P V accumulator's layout) straight into
        the tile's rows of mO, 16 bytes a store, rows past Sq skipped.

        In the accumulator, lane t of a quad holds, of each of its two rows, one 32-bit word (a
        pair of adjacent columns, 8 j + 2 t and the next) of every 8-column group j. Stored as
        they are, a warp's store writes 16 bytes in each of 8 rows: half sectors, eight 128-byte
        lines an instruction, 8 x the requests of O's 16-byte stores from shared memory (and 4%
        slower at D=128). So the quad first transposes each run of 4 groups among its
        lanes (a 4 x 4 transpose of words: two butterfly exchanges, across lane bit 0 then 1),
        after which lane t holds group 4 k + t whole, 16 contiguous bytes."""
        gO = mO[None, None, head, batch]  # (Sq, D)
        t = ct % 4  # (the lane's place in its quad: the quads' four lanes share their rows)
        odd, upper = (t & 1) == 1, (t & 2) == 2
        words_mn = _mn_view(cute.recast_tensor(rO, I32))  # (rows, D / 8): row r's word of group j
        for r in cutlass.range_constexpr(cute.size(words_mn.shape[0])):
            row = m0 + tScS[r, 0][0]
            for k in cutlass.range_constexpr(self.d // 32):
                m = [words_mn[r, 4 * k + i] for i in range(4)]  # (lane t, group 4 k + i)
                for j in (0, 2):  # the 2 x 2 blocks' corners, across lane bit 0
                    got = cute.arch.shuffle_sync_bfly(cutlass.select_(odd, m[j], m[j + 1]), offset=1)
                    m[j], m[j + 1] = cutlass.select_(odd, got, m[j]), cutlass.select_(odd, m[j + 1], got)
                for j in (0, 1):  # the 2 x 2 blocks themselves, across lane bit 1
                    got = cute.arch.shuffle_sync_bfly(cutlass.select_(upper, m[j], m[j + 2]), offset=2)
                    m[j], m[j + 2] = cutlass.select_(upper, got, m[j]), cutlass.select_(upper, m[j + 2], got)
                # m[i]: lane i's word of group 4 k + t, i.e. columns 8 (4 k + t) + 2 i and the next
                if row < mO.shape[0]:
                    vals = cute.make_rmem_tensor((4,), I32)
                    for i in cutlass.range_constexpr(4):
                        vals[i] = m[i]
                    dst = cute.recast_tensor(cute.local_tile(gO, (1, 8), (row, 4 * k + t)), I32)
                    cute.autovec_copy(vals, cute.make_tensor(dst.iterator, cute.make_layout(4)))

    @cute.jit
    def tma_store_epilogue(
        self, rO: cute.Tensor, mO: cute.Tensor, sO: cute.Tensor, tma_o: cute.CopyAtom, ct: I32, wg: I32, m0: I32, head: I32, batch: I32
    ):  # fmt: skip
        """TMA_STORE: this warpgroup's O (rO, bf16/fp16) into its own 64 x D stage of sO, then one
        thread stores the stage with TMA (rows past Sq are not written: TMA clips them) and the
        next tile's epilogue waits only until that store has read the stage."""
        d = self.d
        # the accumulator fragment of one warpgroup's 64 x D tile, whichever warpgroup it is
        r2s = _r2s_tiled_copy(self.dtype, self.pv_mma(1), self.stmatrix)
        thr_r2s = r2s.get_slice(ct % 128)
        stage = sO[None, None, wg]
        if ct % 128 == 0:
            cute.arch.cp_async_bulk_wait_group(0, read=True)  # the previous tile's store has read the stage
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        self.copy_r2s(r2s, thr_r2s, rO, thr_r2s.partition_D(stage))
        cute.arch.fence_proxy("async.shared", space="cta")  # the stage, visible to the TMA unit
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        if ct % 128 == 0:
            if m0 + wg * 64 < mO.shape[0]:
                gO = cute.local_tile(mO[None, None, head, batch], (64, d), (m0 // 64 + wg, 0))
                tOs, tOg = cpasync.tma_partition(tma_o, 0, cute.make_layout(1), cute.group_modes(stage, 0, 2), cute.group_modes(gO, 0, 2))
                cute.copy(tma_o, tOs, tOg)
                cute.arch.cp_async_bulk_commit_group()

    @cute.jit
    def quantize_handed_over(self, sO: cute.Tensor, handoff, outputs, sq: I32, qt: I32):
        """NVFP4_OFFLOAD, the quantizing warps of the producer warpgroup (this thread is `qt` of
        QUANTIZER_THREADS): each consumer warpgroup's rows of sO as it hands them over, as
        NVFP4, in rounds of one hand-over a warpgroup (its k-th in round k), until a hand-over
        without rows (first row -1, hand_over_end). Every warpgroup hands over every tile, so
        they end in the same round."""
        phase = I32(0)
        more = cutlass.Boolean(True)
        while more:
            for w in cutlass.range_constexpr(self.consumer_wgs):
                more = self.quantize_rows(sO, handoff, outputs, sq, qt, w, phase) >= 0
            phase = phase ^ 1

    @cute.jit
    def quantize_rows(self, sO: cute.Tensor, handoff, outputs, sq: I32, qt: I32, w: cutlass.Constexpr, phase: I32) -> I32:
        """NVFP4_OFFLOAD: the next rows warpgroup `w` hands over (phase `phase`), as NVFP4 (a row a
        thread, `store_nvfp4`), given back; returns their first row (-1: no rows, the last)."""
        sTiles, bar_o = handoff[0], handoff[1]
        cute.arch.mbarrier_wait(bar_o + 2 * w, phase)
        first = sTiles[2, w]
        if first >= 0:
            if first < sq:
                rows = cute.local_tile(sO, (64, self.d), (w, 0))
                store_nvfp4(rows, outputs, sTiles[0, w], sTiles[1, w], first // 64, sq - first, qt, QUANTIZER_THREADS, False)
        cute.arch.mbarrier_arrive(bar_o + 2 * w + 1)
        return first

    @cute.jit
    def hand_over_end(self, handoff, ct: I32, wg: I32):
        """NVFP4_OFFLOAD: a consumer warpgroup past its last tile tells the quantizing warps (a
        hand-over without rows), once they have given back its last rows."""
        sTiles, bar_o = handoff[0], handoff[1]
        # every thread arrives (the barrier counts the warpgroup); the first thread flipped the
        # phase in sTiles[3] after the last epilogue's barrier, so the warpgroup meets again first
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        cute.arch.mbarrier_wait(bar_o + 2 * wg + 1, sTiles[3, wg])
        if ct % 128 == 0:
            sTiles[2, wg] = I32(-1)
        cute.arch.mbarrier_arrive(bar_o + 2 * wg)

    @cute.jit
    def partials_epilogue(
        self,
        acc_O: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        scale_log2: F32,
        tScS: cute.Tensor,
        mPartO: cute.Tensor,
        mPartLSE: cute.Tensor,
        mma_pv: cute.TiledMma,
        ct: I32,
        m0: I32,
        bh: I32,
        split: I32,
    ):
        """Packed split-KV: this split's O (normalized by its own sum) and LSE (log2 units) of the
        tile's valid packed rows, f32, from registers; the sink joins in the combine."""
        rows = mPartO.shape[2]
        acc_O_mn = _mn_view(acc_O)
        tOgO = _mn_view(
            mma_pv.get_slice(ct).partition_C(cute.local_tile(mPartO[split, bh, None, None], (self.block_m, self.d), (m0 // self.block_m, 0)))
        )  # fmt: skip
        for r in cutlass.range_constexpr(cute.size(row_max)):
            scale, lse2 = finish_row(row_sum[r], row_max[r], scale_log2, None)
            row = m0 + tScS[r, 0][0]
            if row < rows:
                for c in cutlass.range_constexpr(cute.size(acc_O_mn.shape[1])):
                    tOgO[r, c] = acc_O_mn[r, c] * scale
                if ct % 4 == 0:
                    mPartLSE[split, bh, row] = lse2
