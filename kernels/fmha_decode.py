"""FMHA forward for short queries over long keys (decode): GQA packing, split-KV, a combine.

    fn = fmha_decode.compile_decode("bfloat16", 128, False, True, False, "sm_90a", key_warps=True)
    fn(q, k, v, out, lse, sink, o_partial, lse_partial, counters, b, sq, sk, hq, hkv, num_splits, scale_log2, left, right, stream)

Same API and semantics as `cute_lowering.kernels.fmha` (bottom-right aligned causal/window, sink, GQA,
LSE; a row with no visible key gives 0 and LSE -inf, or the sink). The public
`fmha.attention` (and `cute_lowering::attention`) takes this path on its own for short
queries (`choose_splits`); `path="decode"` forces it.

Why another kernel: with Sq = 1 the other paths give each q head its own CTA of 128
query rows, of which one is real, and each of the group's q heads reads its kv head's K/V
again; with B * Hkv small there are fewer CTAs than SMs. Decode is memory-bound: what
counts is streaming K/V once with enough bytes in flight on every SM.

  - GQA packing: the q heads of one kv head share a tile. Packed row r of (batch, kv head)
    is query r // G of q head kv_head * G + r % G (G = Hq / Hkv), so Sq = 1 with G = 8 is
    8 rows of one tile reading K/V once. The masks use the row's query (`softmax(group=)`).
  - Split-KV: the key blocks of a tile are cut into `num_splits` contiguous ranges, one CTA
    each (grid: m-tile fastest, so the m-tiles of one range read K/V while it is in L2).
    Grid x = (batch * Hkv + kv head) * m-tiles + m-tile, y = split.
    A CTA writes its rows' O normalized by its own sum, in f32, and its LSE (log2 units):
    [splits, B * Hkv, G * Sq, D] and [splits, B * Hkv, G * Sq], one caller-given buffer.
  - Combine (`combine_row`, one warp per packed row): LSE = log2 sum_i 2^LSE_i (+ the
    sink's 2^(sink*log2 e)), O = sum_i 2^(LSE_i - LSE) O_i, written to O [B, Sq, Hq, D] and
    LSE [B, Hq, Sq] (natural log). An empty split has LSE_i = -inf and O_i = 0 (written,
    never garbage), so it weighs 0. Where it runs depends on the tile (below).

Two split kernels, both `fmha_sm80._Fmha`'s mma.sync pieces (cp.async K/V tiles of 64 keys,
ldmatrix, m16n8k16, online softmax; sm_80+), K/V through a ring of STAGES = 3 (K, V) pairs
(two blocks, 64 KB at D = 128, in flight while one is computed; 112 KB of shared memory):
  - `split_kernel`, 17..256 packed rows: 64-row tiles, 4 warps of 16 rows (a warp whose rows
    are all past G * Sq skips the math); two CTAs an SM (198 registers at D = 128, no spills);
    the combine is a second kernel launched by the same host function (one TVM-FFI call).
  - `split_kernel_key_warps`, <= 16 packed rows (`key_warps=True`; Sq = 1 with G <= 16): one
    16-row tile, warp w takes keys 16w..16w+15 of every block, the warps' softmax states are
    merged through shared memory; then each CTA counts its arrival on the tile's counter
    (acq_rel, after a release fence) and the last one combines the tile and resets the
    counter: one launch. The counters (int32, one per tile) must be zero on entry; each call
    leaves them zero (`kernels/ops.py` keeps one buffer per stream).

No NVFP4 output here: `fmha.attention(out_format="nvfp4")` keeps the other paths.
"""

from __future__ import annotations

import functools

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp
from cutlass.cute.runtime import make_ptr

import cute_lowering
from cute_lowering.kernels.attention_parts import (
    LN2,
    LOG2E,
    add,
    bshd_tensors,
    fake_io_pointers,
    finish_row,
    ldmatrix_copies,
    quad_allreduce,
    row_copy,
    softmax_state,
    swizzled_rows_atom,
)
from cute_lowering.kernels.cutedsl_compat import SmemAllocator
from cute_lowering.kernels.fmha_sm80 import DTYPES, HEAD_DIMS, _as_operand_a, _Fmha, _mn_view

# --- tuning knobs ---------------------------------------------------------------
BLOCK_M = 64  # packed rows per CTA: 4 warps x 16 (one m16 MMA row block each)
KEY_WARPS_ROWS = 16  # at most this many packed rows: one 16-row tile, the 4 warps split each key block
BLOCK_N = 64  # keys per streamed K/V tile
STAGES = 3  # K/V tile pairs in shared memory: two blocks in flight while one is computed
# the <= 16-row kernel's ring (one CTA an SM, so 227 KB of shared memory: up to 6 stages of 32 KB
# at D = 128). 4, 5 and 6 stages measured even with 3 at Sq = 1: bytes in flight are not what
# bounds it (bit-identical: test_gpu_key_warps_ring_depth_keeps_the_bits)
KEY_WARPS_STAGES = 3
THREADS = 128
COMBINE_WARPS = 4  # combine: one warp per packed row, 4 rows per CTA
# the combine kernel as a programmatic dependent launch (PDL) where the arch has it: the split
# kernel's CTAs allow it at their start (griddepcontrol.launch_dependents), so its CTAs are
# scheduled as the split kernel's leave, and each waits (griddepcontrol.wait) until the split
# kernel has finished and its partials are visible; without PDL the combine starts only after
# the split kernel's end has gone through the launch queue. It pays at 2 splits and costs at
# 16: the early-scheduled combine CTAs cost a many-split kernel more than the launch gap they
# save. Off; for small split counts the packed wgmma split kernel takes it anyway
# (fmha_sm90.SPLIT_COMBINE_PDL_MAX).
COMBINE_PDL = False
# where the packed wgmma split kernel (fmha_sm90), when its combine is a PDL (COMBINE_PDL, or
# fmha_sm90.SPLIT_COMBINE_PDL_MAX), allows the combine: "start", at each CTA's start (as the
# mma.sync split kernel does); "last_load", once the CTA's producer warp has issued its last K/V
# load (CUTLASS's GEMMs likewise trigger near the end of their loads: early dependents compete
# with the kernel, late ones leave the launch gap). With a plain launch the combine starts 1-2 us
# after the split kernel ends (FA3's before its main kernel ends); "last_load" is even with or
# slightly ahead of "start" at 2 and 4 splits, and both beat the plain launch there.
PDL_TRIGGER = "last_load"
PDL_TRIGGERS = ("start", "last_load")
PDL_ARCHS = ("sm_90a", "sm_100a")
COMBINE_UNROLL = 8  # splits whose partial O loads are in flight at once per warp
MAX_SPLITS = 128
# choose_splits (H200, bench/fmha_decode_sweep.py, bench/RESULTS.md): the decode path is
# taken for at most MAX_PACKED_ROWS packed rows (G * Sq) per (batch, kv head) and at least
# MIN_KEYS keys (at 256 rows: 2x faster than wgmma; at 512: 0.7x); the splits fill one
# wave of CTAS_PER_SM CTAs per SM (16-row tiles: one, its fused combine is the tail; 64-row
# tiles: two, 112 KB of shared memory each at D = 128; past one wave a second costs more
# than it gives), each split keeping at least MIN_BLOCKS_PER_SPLIT key blocks
MAX_PACKED_ROWS = 256
MIN_KEYS = 1024
CTAS_PER_SM = 2
CTAS_PER_SM_KEY_WARPS = 1
MIN_BLOCKS_PER_SPLIT = 4
ARCHS = ("sm_80", "sm_90a", "sm_100a")
SHARED_MEMORY_BYTES = {"sm_80": 163 * 1024, "sm_90a": 227 * 1024, "sm_100a": 227 * 1024}  # a CTA's most (opt-in)

F32 = cutlass.Float32
I32 = cutlass.Int32


def choose_splits(b: int, sq: int, sk: int, hq: int, hkv: int, left: int, right: int, sms: int, forced: bool = False) -> int:
    """How many key ranges per tile (>= 1), or 0 where the decode path should not be taken.

    Plain integer arithmetic (called on every launch). `left`/`right`: the window, -1 =
    unbounded; only the keys a query can see count. `forced`: the caller asked for this
    path, so any shape gets a split count.
    """
    rows = (hq // hkv) * sq
    keys = sk if left < 0 else min(sk, left + sq + (right if right > 0 else 0))
    if not forced and (rows > MAX_PACKED_ROWS or keys < MIN_KEYS):
        return 0
    if rows <= KEY_WARPS_ROWS:
        tiles, slots = b * hkv, sms * CTAS_PER_SM_KEY_WARPS
    else:
        tiles, slots = -(-rows // BLOCK_M) * b * hkv, sms * CTAS_PER_SM
    return max(1, min(slots // tiles, -(-keys // BLOCK_N) // MIN_BLOCKS_PER_SPLIT, MAX_SPLITS))


def _merge_lse(top, total, other_top, other_total):
    """(max, sum of 2^(x - max)) of two such pairs (log2 units); -inf maxima weigh 0, never NaN."""
    new_top = cute.arch.fmax(top, other_top)
    safe = cutlass.select_(new_top == -F32.inf, F32(0.0), new_top)
    return new_top, total * cute.math.exp2(top - safe, fastmath=True) + other_total * cute.math.exp2(other_top - safe, fastmath=True)


class _SplitKV(_Fmha):
    """One compiled configuration (dtype, head dim, masks, sink): split kernel + combine kernel."""

    def __init__(
        self, dtype, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, key_warps: bool = False, pdl: bool = False,
        stages: int = STAGES,
    ):
        super().__init__(dtype, head_dim, has_left, has_right, has_sink)
        self.pdl = pdl  # COMBINE_PDL on an arch in PDL_ARCHS
        # <= 16 packed rows: one 16-row tile, warp w takes keys 16w .. 16w + 15 of every block
        # (one warp of 64-row tiles would do all the math on one SM sub-partition), and the
        # four warps' softmax states are merged through shared memory at the end
        self.key_warps = key_warps
        self.tile_m = KEY_WARPS_ROWS if key_warps else BLOCK_M
        self.stages = stages

    # --- host side: layouts, copies, two launches ------------------------------------------
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
        mQ, mK, mV, mO, mLSE, mSink = bshd_tensors(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sink_ptr, b, sq, sk, hq, hkv, d)
        # partial results, indexed by packed row: [split, batch * Hkv + kv head, row, D]
        rows = (hq // hkv) * sq
        bh = b * hkv
        row_d = cute.assume(rows * d, divby=d)
        mPartO = cute.make_tensor(
            part_o_ptr, cute.make_layout((num_splits, bh, rows, d), stride=(cute.assume(bh * row_d, divby=d), row_d, d, 1))
        )
        mPartLSE = cute.make_tensor(part_lse_ptr, cute.make_layout((num_splits, bh, rows), stride=(bh * rows, rows, 1)))
        tiles = cute.ceil_div(rows, self.tile_m) * bh
        mCounters = cute.make_tensor(counters_ptr, cute.make_layout((tiles,)))  # key_warps: zero on entry, left zero

        atom = swizzled_rows_atom()
        sQ_layout = cute.tile_to_shape(atom, (self.tile_m, d), (0, 1))
        sKV_layout = cute.tile_to_shape(atom, (BLOCK_N, d, self.stages), (0, 1, 2))

        @cute.struct
        class Smem:
            q: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
            k: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
            v: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
            stats: cute.struct.Align[cute.struct.MemRange[F32, 2 * (THREADS // 32) * KEY_WARPS_ROWS], 16]
            arrivals: cute.struct.Align[cute.struct.MemRange[I32, 4], 16]

        g2s = row_copy(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), dt, THREADS)
        if cutlass.const_expr(self.key_warps):
            mma = cute.make_tiled_mma(warp.MmaF16BF16Op(dt, F32, (16, 8, 16)), (1, 1, 1), permutation_mnk=(16, 16, 16))
            kernel = self.split_kernel_key_warps(
                mQ, mK, mV, mPartO, mPartLSE, mCounters, mO, mLSE, mSink, scale_log2, left, right, sQ_layout, sKV_layout, g2s, mma, Smem
            )
        else:
            mma = cute.make_tiled_mma(
                warp.MmaF16BF16Op(dt, F32, (16, 8, 16)),
                (THREADS // 32, 1, 1),
                permutation_mnk=(THREADS // 32 * 16, 16, 16),
            )
            kernel = self.split_kernel(mQ, mK, mV, mPartO, mPartLSE, scale_log2, left, right, sQ_layout, sKV_layout, g2s, mma, Smem)
        kernel.launch(
            grid=(tiles, num_splits, 1), block=[THREADS, 1, 1], stream=stream,
            min_blocks_per_mp=CTAS_PER_SM, preferred_smem_carveout=100,  # (a carveout: compiles without a GPU)
        )
        if cutlass.const_expr(not self.key_warps):  # (the key_warps kernel's last CTA of a tile combines it)
            self.combine_kernel(mPartO, mPartLSE, mO, mLSE, mSink).launch(
                grid=(cute.ceil_div(rows, COMBINE_WARPS) * bh, 1, 1), block=[COMBINE_WARPS * 32, 1, 1], stream=stream,
                use_pdl=self.pdl,
            )

    # --- the split kernel: one (m-tile of packed rows, key range, batch * kv head) --------------
    @cute.kernel
    def split_kernel(
        self,
        mQ: cute.Tensor,
        mK: cute.Tensor,
        mV: cute.Tensor,
        mPartO: cute.Tensor,
        mPartLSE: cute.Tensor,
        scale_log2: F32,
        left: I32,
        right: I32,
        sQ_layout: cute.ComposedLayout,
        sKV_layout: cute.ComposedLayout,
        g2s: cute.TiledCopy,
        mma: cute.TiledMma,
        Smem: cutlass.Constexpr,
    ):
        d = self.d
        dt = self.dtype
        if cutlass.const_expr(self.pdl):
            cute.arch.griddepcontrol_launch_dependents()  # (COMBINE_PDL: the combine may be scheduled)
        tidx, _, _ = cute.arch.thread_idx()
        tile, split, _ = cute.arch.block_idx()
        sk = mK.shape[1]
        rows = mPartO.shape[2]
        m0, bh, batch, kv_head, group, offset = self.tile_coords(mQ, mK, mPartO, tile)
        q_first, q_last, n_block_min, n_block_max = self.key_blocks(m0, rows, group, sk, offset, left, right, split, mPartO.shape[0])
        n_blocks = cutlass.max(n_block_max - n_block_min, 0)
        m_block = m0 // BLOCK_M

        storage, sQ, sK, sVt, tQs, tKg, tKs, tVg, tVs, tQc, tKVc = self.staged_tiles(
            mK, mV, batch, kv_head, Smem, sQ_layout, sKV_layout, g2s, tidx, BLOCK_M
        )

        thr_mma = mma.get_slice(tidx)
        tSrQ = thr_mma.make_fragment_A(thr_mma.partition_A(sQ))
        tSrK = thr_mma.make_fragment_B(thr_mma.partition_B(sK[None, None, 0]))
        tOrVt = thr_mma.make_fragment_B(thr_mma.partition_B(sVt[None, None, 0]))
        acc_O = cute.make_rmem_tensor(thr_mma.partition_shape_C((BLOCK_M, d)), F32)
        acc_O.fill(0.0)

        (s2r_q, s2r_k, s2r_v), (thr_s2r_q, thr_s2r_k, thr_s2r_v) = ldmatrix_copies(mma, dt, tidx)
        tSsQ = thr_s2r_q.partition_S(sQ)
        tSrQ_v = thr_s2r_q.retile(tSrQ)
        tSsK = thr_s2r_k.partition_S(sK)
        tSrK_v = thr_s2r_k.retile(tSrK)
        tOsVt = thr_s2r_v.partition_S(sVt)
        tOrVt_v = thr_s2r_v.retile(tOrVt)

        tScS = _mn_view(thr_mma.partition_C(cute.make_identity_tensor((BLOCK_M, BLOCK_N))))
        n_rows, row_max, row_sum = softmax_state(acc_O)
        # warp w holds rows 16w .. 16w + 15 of the tile (the MMA's M permutation is 4 x 16);
        # a warp with no packed row left skips the math and only streams K/V
        has_rows = m0 + (tidx // 32) * 16 < rows

        # --- prologue: Q's packed rows, then K/V of the first stages - 1 blocks -------------------
        self.load_q_packed(g2s, tQs, tQc, mQ, m0, rows, group, batch, kv_head)
        self.load_first_stages(g2s, tKg, tKs, tVg, tVs, tKVc, n_block_max, n_blocks, sk)

        # --- main loop: this split's key blocks from the last to the first; block `it` sits in
        # stage it % stages, and the loads of the next stages - 1 blocks stay in flight
        for it in cutlass.range(n_blocks, unroll=1):
            n_block = n_block_max - 1 - it
            stage = it % self.stages
            self.advance_ring(g2s, tKg, tKs, tVg, tVs, tKVc, it, n_block_max, n_blocks, sk)

            if has_rows:
                acc_S = cute.make_rmem_tensor(thr_mma.partition_shape_C((BLOCK_M, BLOCK_N)), F32)
                acc_S.fill(0.0)
                self.gemm(mma, acc_S, s2r_q, tSsQ, tSrQ_v, tSrQ, s2r_k, tSsK[None, None, None, stage], tSrK_v, tSrK)
                n0 = n_block * BLOCK_N
                need_mask = n0 + BLOCK_N > sk
                if cutlass.const_expr(self.has_right):
                    need_mask = need_mask | (n0 + BLOCK_N - 1 > q_first + offset + right)
                if cutlass.const_expr(self.has_left):
                    need_mask = need_mask | (n0 < q_last + offset - left)
                if need_mask:
                    self.softmax(acc_S, acc_O, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, True, group)
                else:
                    self.softmax(acc_S, acc_O, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, False, group)
                rP = cute.make_fragment_like(acc_S, dt)
                rP.store(acc_S.load().to(dt))
                self.gemm_pv(mma, acc_O, _as_operand_a(rP), s2r_v, tOsVt[None, None, None, stage], tOrVt_v, tOrVt)

        # --- epilogue: this split's O (normalized by its own sum) and LSE, valid rows only -----
        cute.arch.cp_async_wait_group(0)
        acc_O_mn = _mn_view(acc_O)
        tOgO = _mn_view(thr_mma.partition_C(cute.local_tile(mPartO[split, bh, None, None], (BLOCK_M, d), (m_block, 0))))
        for r in cutlass.range_constexpr(n_rows):
            scale, lse2 = finish_row(row_sum[r], row_max[r], scale_log2, None)  # the sink joins in the combine
            row = m0 + tScS[r, 0][0]
            if row < rows:
                for c in cutlass.range_constexpr(cute.size(acc_O_mn.shape[1])):
                    tOgO[r, c] = acc_O_mn[r, c] * scale
                if tidx % 4 == 0:
                    mPartLSE[split, bh, row] = lse2

    # --- what both split kernels share ------------------------------------------------------------
    def tile_coords(self, mQ, mK, mPartO, tile):
        """(first packed row, batch * Hkv + kv head, batch, kv head, G, Sk - Sq) of CTA `tile`.

        Grid x = (batch * Hkv + kv head) * m-tiles + m-tile: one dimension, no 65535 limit.
        """
        rows = mPartO.shape[2]
        m_tiles = (rows + self.tile_m - 1) // self.tile_m
        bh = tile // m_tiles
        hkv = mK.shape[2]
        batch = bh // hkv
        return (tile - bh * m_tiles) * self.tile_m, bh, batch, bh - batch * hkv, mQ.shape[2] // hkv, mK.shape[1] - mQ.shape[1]

    def key_blocks(self, m0, rows, group, sk, offset, left, right, split, num_splits):
        """(first query, last query, this split's key blocks [min, max)) of the tile at packed row m0.

        The tile's blocks come from its first and last query (the last rounded up: a
        conservative bound, the element masks are exact); split i takes the i-th of
        num_splits equal contiguous shares, possibly empty.
        """
        q_first = m0 // group
        q_last = cutlass.min(m0 + self.tile_m, rows) // group
        hi = sk
        if cutlass.const_expr(self.has_right):
            hi = cutlass.min(sk, q_last + offset + right + 1)
        tile_max = (cutlass.max(hi, 0) + BLOCK_N - 1) // BLOCK_N
        tile_min = I32(0)
        if cutlass.const_expr(self.has_left):
            tile_min = cutlass.max(q_first + offset - left, 0) // BLOCK_N
        per_split = (cutlass.max(tile_max - tile_min, 0) + num_splits - 1) // num_splits
        n_block_min = tile_min + split * per_split
        return q_first, q_last, n_block_min, cutlass.min(n_block_min + per_split, tile_max)

    def staged_tiles(self, mK, mV, batch, kv_head, Smem, sQ_layout, sKV_layout, g2s, tidx, q_rows: int):
        """Both split kernels' staging: the CTA's shared memory (`Smem`: Q, the K/V ring, V's
        (D, N, stage) view for the transposing ldmatrix), the (batch, kv head)'s K/V tiles in
        global memory, and thread `tidx`'s cp.async partitions with their coordinates (Q's
        `q_rows` rows, a K/V tile's keys). Called while tracing.

        (storage, sQ, sK, sVt, tQs, tKg, tKs, tVg, tVs, tQc, tKVc)
        """
        d = self.d
        gK = cute.local_tile(mK[batch, None, kv_head, None], (BLOCK_N, d), (None, 0))
        gV = cute.local_tile(mV[batch, None, kv_head, None], (BLOCK_N, d), (None, 0))
        storage = SmemAllocator().allocate(Smem)
        sQ = storage.q.get_tensor(sQ_layout)
        sK = storage.k.get_tensor(sKV_layout)
        sV = storage.v.get_tensor(sKV_layout)
        sVt = cute.composition(sV, cute.make_layout((d, BLOCK_N, self.stages), stride=(BLOCK_N, 1, BLOCK_N * d)))
        thr_g2s = g2s.get_slice(tidx)
        tQc = thr_g2s.partition_S(cute.make_identity_tensor((q_rows, d)))
        tKVc = thr_g2s.partition_S(cute.make_identity_tensor((BLOCK_N, d)))
        partitions = (thr_g2s.partition_D(sQ), thr_g2s.partition_S(gK), thr_g2s.partition_D(sK), thr_g2s.partition_S(gV), thr_g2s.partition_D(sV))
        return (storage, sQ, sK, sVt, *partitions, tQc, tKVc)

    @cute.jit
    def load_q_packed(self, g2s, tQs, tQc, mQ, m0: I32, rows: I32, group: I32, batch: I32, kv_head: I32):
        """cp.async the tile's packed Q rows, one row pointer each (row r: query r // G, q head kv_head * G + r % G)."""
        vec = cute.size(tQs.shape[0][0])
        for m in cutlass.range_constexpr(cute.size(tQs.shape[1])):
            r = m0 + tQc[0, m, 0][0]
            if r < rows:
                query = r // group
                q_row = cute.tiled_divide(mQ[batch, query, kv_head * group + (r - query * group), None], (vec,))
                for kk in cutlass.range_constexpr(cute.size(tQs.shape[2])):
                    cute.copy(g2s, q_row[None, tQc[0, m, kk][1] // vec], tQs[None, m, kk])
            else:
                tQs[None, m, None].fill(0)

    @cute.jit
    def advance_ring(self, g2s, tKg, tKs, tVg, tVs, tKVc, it: I32, n_block_max: I32, n_blocks: I32, sk: I32):
        """Loop step `it` of the K/V ring: wait for block `it` (stage it % self.stages), then refill
        the stage block it - 1 used with block it + self.stages - 1, if the split has it."""
        cute.arch.cp_async_wait_group(self.stages - 2)
        cute.arch.barrier()  # block `it` is in; everyone is done with block it - 1's stage
        ahead = it + self.stages - 1
        if ahead < n_blocks:
            nxt = ahead % self.stages
            self.load_kv(g2s, tKg, tKs[None, None, None, nxt], tKVc, n_block_max - 1 - ahead, sk)
            self.load_kv(g2s, tVg, tVs[None, None, None, nxt], tKVc, n_block_max - 1 - ahead, sk)
        cute.arch.cp_async_commit_group()

    @cute.jit
    def load_first_stages(self, g2s, tKg, tKs, tVg, tVs, tKVc, n_block_max: I32, n_blocks: I32, sk: I32):
        """K/V of the split's first self.stages - 1 blocks (the last keys first), one commit group per stage."""
        for s in cutlass.range_constexpr(self.stages - 1):
            if s < n_blocks:
                self.load_kv(g2s, tKg, tKs[None, None, None, s], tKVc, n_block_max - 1 - s, sk)
                self.load_kv(g2s, tVg, tVs[None, None, None, s], tKVc, n_block_max - 1 - s, sk)
            cute.arch.cp_async_commit_group()  # empty or not: the wait counts stay exact

    # --- the split kernel for <= 16 packed rows: the warps split each key block --------------------
    @cute.kernel
    def split_kernel_key_warps(
        self,
        mQ: cute.Tensor,
        mK: cute.Tensor,
        mV: cute.Tensor,
        mPartO: cute.Tensor,
        mPartLSE: cute.Tensor,
        mCounters: cute.Tensor,
        mO: cute.Tensor,
        mLSE: cute.Tensor,
        mSink: cute.Tensor,
        scale_log2: F32,
        left: I32,
        right: I32,
        sQ_layout: cute.ComposedLayout,
        sKV_layout: cute.ComposedLayout,
        g2s: cute.TiledCopy,
        mma: cute.TiledMma,
        Smem: cutlass.Constexpr,
    ):
        d = self.d
        dt = self.dtype
        tm = KEY_WARPS_ROWS
        warps = THREADS // 32
        kw = BLOCK_N // warps  # keys of a block per warp
        tidx, _, _ = cute.arch.thread_idx()
        warp_id = cute.arch.make_warp_uniform(tidx // 32)
        lane = tidx % 32
        tile, split, _ = cute.arch.block_idx()
        sk = mK.shape[1]
        rows = mPartO.shape[2]
        m0, bh, batch, kv_head, group, offset = self.tile_coords(mQ, mK, mPartO, tile)
        q_first, q_last, n_block_min, n_block_max = self.key_blocks(m0, rows, group, sk, offset, left, right, split, mPartO.shape[0])
        n_blocks = cutlass.max(n_block_max - n_block_min, 0)

        storage, sQ, sK, sVt, tQs, tKg, tKs, tVg, tVs, tQc, tKVc = self.staged_tiles(
            mK, mV, batch, kv_head, Smem, sQ_layout, sKV_layout, g2s, tidx, tm
        )

        # one warp's MMA: all 16 rows against its kw keys (S), then P (16 x kw) against those keys' V
        thr_mma = mma.get_slice(lane)
        tSrQ = thr_mma.make_fragment_A(thr_mma.partition_A(sQ))
        tSrK = thr_mma.make_fragment_B(thr_mma.partition_B(cute.local_tile(sK[None, None, 0], (kw, d), (0, 0))))
        tOrVt = thr_mma.make_fragment_B(thr_mma.partition_B(cute.local_tile(sVt[None, None, 0], (d, kw), (0, 0))))
        acc_O = cute.make_rmem_tensor(thr_mma.partition_shape_C((tm, d)), F32)
        acc_O.fill(0.0)
        (s2r_q, s2r_k, s2r_v), (thr_s2r_q, thr_s2r_k, thr_s2r_v) = ldmatrix_copies(mma, dt, lane)
        tSsQ = thr_s2r_q.partition_S(sQ)
        tSrQ_v = thr_s2r_q.retile(tSrQ)
        tSrK_v = thr_s2r_k.retile(tSrK)
        tOrVt_v = thr_s2r_v.retile(tOrVt)

        tScS = _mn_view(thr_mma.partition_C(cute.make_identity_tensor((tm, kw))))
        n_rows, row_max, row_sum = softmax_state(acc_O)

        self.load_q_packed(g2s, tQs, tQc, mQ, m0, rows, group, batch, kv_head)
        self.load_first_stages(g2s, tKg, tKs, tVg, tVs, tKVc, n_block_max, n_blocks, sk)

        # --- main loop: as split_kernel's, each warp on its kw keys of the block --------------------
        for it in cutlass.range(n_blocks, unroll=1):
            n_block = n_block_max - 1 - it
            stage = it % self.stages
            self.advance_ring(g2s, tKg, tKs, tVg, tVs, tKVc, it, n_block_max, n_blocks, sk)

            acc_S = cute.make_rmem_tensor(thr_mma.partition_shape_C((tm, kw)), F32)
            acc_S.fill(0.0)
            tSsK = thr_s2r_k.partition_S(cute.local_tile(sK[None, None, stage], (kw, d), (warp_id, 0)))
            self.gemm(mma, acc_S, s2r_q, tSsQ, tSrQ_v, tSrQ, s2r_k, tSsK, tSrK_v, tSrK)
            n0 = n_block * BLOCK_N + warp_id * kw
            need_mask = n0 + kw > sk
            if cutlass.const_expr(self.has_right):
                need_mask = need_mask | (n0 + kw - 1 > q_first + offset + right)
            if cutlass.const_expr(self.has_left):
                need_mask = need_mask | (n0 < q_last + offset - left)
            if need_mask:
                self.softmax(acc_S, acc_O, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, True, group)
            else:
                self.softmax(acc_S, acc_O, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, False, group)
            rP = cute.make_fragment_like(acc_S, dt)
            rP.store(acc_S.load().to(dt))
            tOsVt = thr_s2r_v.partition_S(cute.local_tile(sVt[None, None, stage], (d, kw), (0, warp_id)))
            self.gemm_pv(mma, acc_O, _as_operand_a(rP), s2r_v, tOsVt, tOrVt_v, tOrVt)

        # --- merge the warps' softmax states through shared memory (K's stages, now free) -------------
        cute.arch.cp_async_wait_group(0)
        cute.arch.barrier()
        sStats = storage.stats.get_tensor(cute.make_layout((tm, warps, 2), stride=(2 * warps, 2, 1)))  # (row, warp, max2 | sum)
        pad = d + 4  # row stride of the f32 O slabs: the MMA layout's stores avoid bank conflicts
        sO = cute.make_tensor(cute.recast_ptr(storage.k.data_ptr(), dtype=F32), cute.make_layout((tm, d, warps), stride=(pad, 1, tm * pad)))
        for r in cutlass.range_constexpr(n_rows):
            total = quad_allreduce(row_sum[r], add)
            if lane % 4 == 0:
                sStats[tScS[r, 0][0], warp_id, 0] = row_max[r] * scale_log2
                sStats[tScS[r, 0][0], warp_id, 1] = total
        cute.arch.barrier()
        acc_O_mn = _mn_view(acc_O)
        tOcO = _mn_view(thr_mma.partition_C(cute.make_identity_tensor((tm, d))))
        for r in cutlass.range_constexpr(n_rows):
            row = tScS[r, 0][0]
            top = sStats[row, 0, 0]
            for w in cutlass.range_constexpr(1, warps):
                top = cute.arch.fmax(top, sStats[row, w, 0])
            top_safe = cutlass.select_(top == -F32.inf, F32(0.0), top)
            factor = cute.math.exp2(row_max[r] * scale_log2 - top_safe, fastmath=True)  # 0 for a warp that saw nothing
            for c in cutlass.range_constexpr(cute.size(acc_O_mn.shape[1])):
                sO[row, tOcO[0, c][1], warp_id] = acc_O_mn[r, c] * factor
        cute.arch.barrier()
        # 8 threads a row, 4 consecutive columns each per pass: the sum over warps, normalized
        row = tidx // 8
        top = sStats[row, 0, 0]
        for w in cutlass.range_constexpr(1, warps):
            top = cute.arch.fmax(top, sStats[row, w, 0])
        top_safe = cutlass.select_(top == -F32.inf, F32(0.0), top)
        total = F32(0.0)
        for w in cutlass.range_constexpr(warps):
            total += cute.math.exp2(sStats[row, w, 0] - top_safe, fastmath=True) * sStats[row, w, 1]
        empty = total == F32(0.0)
        scale = cutlass.select_(empty, F32(0.0), F32(1.0) / cutlass.select_(empty, F32(1.0), total))
        if m0 + row < rows:
            for j in cutlass.range_constexpr(d // 32):
                for e in cutlass.range_constexpr(4):
                    col = (tidx % 8) * 4 + j * 32 + e
                    acc = sO[row, col, 0]
                    for w in cutlass.range_constexpr(1, warps):
                        acc += sO[row, col, w]
                    mPartO[split, bh, m0 + row, col] = acc * scale
            if tidx % 8 == 0:
                mPartLSE[split, bh, m0 + row] = cutlass.select_(empty, -F32.inf, top_safe + cute.math.log2(cutlass.select_(empty, F32(1.0), total), fastmath=True))

        # --- the tile's last CTA to finish combines its splits (no second launch) ----------------------
        # release: every thread's partial stores, then one arrival per CTA on the tile's counter;
        # the CTA that sees num_splits - 1 arrivals before its own acquires them all and combines,
        # then puts the counter back to 0 for the next call (ops gives each stream its own counters)
        num_splits = mPartO.shape[0]
        cute.arch.fence_acq_rel_gpu()
        cute.arch.barrier()
        arrivals = storage.arrivals.get_tensor(cute.make_layout((4,)))
        if tidx == 0:
            arrivals[0] = cute.arch.atomic_add((mCounters.iterator + tile).llvm_ptr, I32(1), sem="acq_rel", scope="gpu")
        cute.arch.barrier()
        if arrivals[0] == num_splits - 1:
            cute.arch.fence_acq_rel_gpu()
            for i in cutlass.range_constexpr(tm // warps):
                r = m0 + warp_id + i * warps
                if r < rows:
                    self.combine_row(mPartO, mPartLSE, mO, mLSE, mSink, bh, r, lane, group, batch, kv_head)
            if tidx == 0:
                mCounters[tile] = I32(0)

    # --- the combine kernel: one warp per packed row ------------------------------------------
    @cute.kernel
    def combine_kernel(self, mPartO: cute.Tensor, mPartLSE: cute.Tensor, mO: cute.Tensor, mLSE: cute.Tensor, mSink: cute.Tensor):
        if cutlass.const_expr(self.pdl):
            cute.arch.griddepcontrol_wait()  # the split kernel is done, its partials visible
        tidx, _, _ = cute.arch.thread_idx()
        tile, _, _ = cute.arch.block_idx()
        lane = tidx % 32
        rows = mPartO.shape[2]
        row_blocks = (rows + COMBINE_WARPS - 1) // COMBINE_WARPS
        bh = tile // row_blocks
        row_block = tile - bh * row_blocks
        hkv = mPartO.shape[1] // mO.shape[0]
        group = mO.shape[2] // hkv
        batch = bh // hkv
        kv_head = bh - batch * hkv
        r = row_block * COMBINE_WARPS + tidx // 32
        if r < rows:
            self.combine_row(mPartO, mPartLSE, mO, mLSE, mSink, bh, r, lane, group, batch, kv_head)

    @cute.jit
    def combine_row(self, mPartO, mPartLSE, mO, mLSE, mSink, bh: I32, r: I32, lane: I32, group: I32, batch: I32, kv_head: I32):
        """One warp: packed row r of (batch, kv head) from the splits' partials into O and LSE."""
        per_lane = self.d // 32
        num_splits = mPartO.shape[0]
        # the row's largest split LSE and sum of 2^(LSE_i - largest) in one pass, lanes over
        # splits (a running max and a rescaled sum), then merged across the warp
        top = -F32.inf
        total = F32(0.0)
        for j in cutlass.range(lane, num_splits, 32, unroll=1):
            top, total = _merge_lse(top, total, mPartLSE[j, bh, r], F32(1.0))
        for offset in (16, 8, 4, 2, 1):
            other_top = cute.arch.shuffle_sync_bfly(top, offset=offset, mask=-1, mask_and_clamp=31)
            other_total = cute.arch.shuffle_sync_bfly(total, offset=offset, mask=-1, mask_and_clamp=31)
            top, total = _merge_lse(top, total, other_top, other_total)
        top_safe = cutlass.select_(top == -F32.inf, F32(0.0), top)  # every split empty
        query = r // group
        head = kv_head * group + (r - query * group)
        empty = total == F32(0.0)
        lse2 = cutlass.select_(empty, -F32.inf, top_safe + cute.math.log2(cutlass.select_(empty, F32(1.0), total), fastmath=True))
        if cutlass.const_expr(self.has_sink):
            # log2(2^lse2 + 2^sink2), finish_row's form: exact for an empty row (lse2 = -inf)
            s2 = mSink[head] * F32(LOG2E)
            hi = cute.arch.fmax(top_safe, s2)
            lse2 = hi + cute.math.log2(
                total * cute.math.exp2(top_safe - hi, fastmath=True) + cute.math.exp2(s2 - hi, fastmath=True), fastmath=True
            )
        lse2_safe = cutlass.select_(lse2 == -F32.inf, F32(0.0), lse2)  # weights 2^(-inf) = 0
        acc = cute.make_rmem_tensor((per_lane,), F32)
        acc.fill(0.0)
        for j in cutlass.range(num_splits, unroll=COMBINE_UNROLL):
            w = cute.math.exp2(mPartLSE[j, bh, r] - lse2_safe, fastmath=True)
            part = cute.make_rmem_tensor((per_lane,), F32)
            cute.autovec_copy(cute.local_tile(mPartO[j, bh, r, None], (per_lane,), (lane,)), part)
            acc.store(acc.load() + part.load() * w)
        out = cute.make_rmem_tensor((per_lane,), self.dtype)
        out.store(acc.load().to(self.dtype))
        cute.autovec_copy(out, cute.local_tile(mO[batch, query, head, None], (per_lane,), (lane,)))
        if lane == 0:
            mLSE[batch, head, query] = lse2 * F32(LN2)


# --- compile (no GPU needed) ------------------------------------------------------
def compile_decode(
    dtype: str, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, arch: str, options: str = "", key_warps: bool = False
):
    """The compiled split + combine host function for one configuration; works without a GPU for any arch in ARCHS.

    `key_warps`: the kernel for <= KEY_WARPS_ROWS packed rows (`key_warps()` says when).
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}, not {head_dim!r}")
    if arch not in ARCHS:
        raise ValueError(f"the decode path needs one of {ARCHS}, not {arch!r}")
    # (the knob is read here and passed on, so that the cache below is keyed by it)
    pdl = COMBINE_PDL and arch in PDL_ARCHS and not key_warps
    stages = KEY_WARPS_STAGES if key_warps else STAGES
    ring = 2 * stages * BLOCK_N * head_dim * 2  # K and V, 2-byte elements
    q_tile = (KEY_WARPS_ROWS if key_warps else BLOCK_M) * head_dim * 2
    if stages < 2 or q_tile + ring + 4096 > SHARED_MEMORY_BYTES[arch]:  # (4 KB: the stats, the alignment)
        raise ValueError(
            f"{'KEY_WARPS_STAGES' if key_warps else 'STAGES'} = {stages}: a ring of at least 2 stages whose "
            f"{ring // 1024} KB (+ Q's {q_tile // 1024} KB) fit the {SHARED_MEMORY_BYTES[arch] // 1024} KB of "
            f"shared memory a CTA may take on {arch}"
        )
    return _compile_decode(dtype, head_dim, has_left, has_right, has_sink, arch, options, key_warps, pdl, stages)


@functools.cache
def _compile_decode(
    dtype: str, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, arch: str, options: str, key_warps: bool, pdl: bool,
    stages: int,
):
    dt = DTYPES[dtype]
    kernel = _SplitKV(dt, head_dim, has_left, has_right, has_sink, key_warps, pdl, stages)
    with cute_lowering.prelowering(cute_lowering.auto_pipeline(arch)):
        return cute.compile(kernel, *fake_arguments(dt), options=f"--gpu-arch {arch} {options}".strip())


def fake_arguments(dt) -> tuple:
    """Compile-time stand-ins for a split-KV host function's arguments (this module's call,
    shared by fmha_sm90's packed split-KV build): q, k, v, out, lse, sink, O and LSE partials,
    counters, b, sq, sk, hq, hkv, num_splits, scale_log2, left, right, stream."""
    gmem = cute.AddressSpace.gmem
    return (
        *fake_io_pointers(dt),
        make_ptr(F32, 16, gmem, assumed_align=16),
        make_ptr(F32, 16, gmem, assumed_align=4),
        make_ptr(I32, 16, gmem, assumed_align=4),
        I32(1), I32(1), I32(1), I32(1), I32(1), I32(1),
        F32(1.0), I32(0), I32(0),
        cuda.CUstream(0),
    )  # fmt: skip
