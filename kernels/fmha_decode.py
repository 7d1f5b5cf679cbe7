"""FMHA forward for short queries over long keys (decode): GQA packing, split-KV, a combine.

    fn = fmha_decode.compile_decode("bfloat16", 128, has_left=False, has_right=True, has_sink=False, arch="sm_90a")
    fn(q, k, v, out, lse, sink, o_partial, lse_partial, b, sq, sk, hq, hkv, num_splits, scale_log2, left, right, stream)

Same API and semantics as `kernels.fmha` (bottom-right aligned causal/window, sink, GQA,
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
  - Combine (second kernel of the same host function, so one launch call): one warp per
    packed row: LSE = log2 sum_i 2^LSE_i (+ the sink's 2^(sink*log2 e)), O = sum_i
    2^(LSE_i - LSE) O_i, written to O [B, Sq, Hq, D] and LSE [B, Hq, Sq] (natural log).
    An empty split has LSE_i = -inf and O_i = 0 (written, never garbage), so it weighs 0.

The split kernel is `fmha._Fmha`'s mma.sync loop (cp.async K/V tiles of 64 keys, ldmatrix,
m16n8k16, online softmax; sm_80+) on 64-row tiles: 4 warps of 16 rows, and a warp whose
16 rows are all past the G * Sq packed rows skips the math (with Sq = 1, G = 8 only warp 0
computes; all four stream K/V). K/V tiles go through a ring of STAGES = 3 (K, V) pairs, so
two blocks (64 KB at D = 128) are in flight while one is computed, and two CTAs share an SM
(112 KB of shared memory, 198 registers a thread at D = 128, no spills).

No NVFP4 output here: `fmha.attention(out_format="nvfp4")` keeps the other paths.
"""

from __future__ import annotations

import functools
import math

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp
from cutlass.cute.runtime import make_ptr

import lowering
from kernels.attention_parts import LN2, LOG2E, finish_row
from kernels.cutedsl_compat import SmemAllocator
from kernels.fmha import DTYPES, HEAD_DIMS, _as_operand_a, _Fmha, _mn_view

# --- tuning knobs ---------------------------------------------------------------
BLOCK_M = 64  # packed rows per CTA: 4 warps x 16 (one m16 MMA row block each)
BLOCK_N = 64  # keys per streamed K/V tile
STAGES = 3  # K/V tile pairs in shared memory: two blocks in flight while one is computed
THREADS = 128
COMBINE_WARPS = 4  # combine: one warp per packed row, 4 rows per CTA
COMBINE_UNROLL = 4  # splits whose partial O loads are in flight at once per warp
MAX_SPLITS = 128
# choose_splits: the decode path is taken for at most this many packed rows (G * Sq)
# per (batch, kv head) and at least this many keys; splits fill CTAS_PER_SM per SM,
# each split keeping at least MIN_BLOCKS_PER_SPLIT key blocks
MAX_PACKED_ROWS = 128
MIN_KEYS = 1024
CTAS_PER_SM = 2  # what fits at D = 128: 112 KB of shared memory each, <= 255 registers
MIN_BLOCKS_PER_SPLIT = 4
ARCHS = ("sm_80", "sm_90a", "sm_100a")

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
    tiles = -(-rows // BLOCK_M) * b * hkv
    blocks = -(-keys // BLOCK_N)
    want = -(-(sms * CTAS_PER_SM) // tiles)
    return max(1, min(want, blocks // MIN_BLOCKS_PER_SPLIT, MAX_SPLITS))


def partial_floats(b: int, sq: int, hq: int, d: int, num_splits: int) -> int:
    """f32 elements of the partial-result buffer: O then LSE, `num_splits` of each per packed row."""
    return num_splits * b * hq * sq * (d + 1)


class _SplitKV(_Fmha):
    """One compiled configuration (dtype, head dim, masks, sink): split kernel + combine kernel."""

    def __init__(self, dtype, head_dim: int, has_left: bool, has_right: bool, has_sink: bool):
        super().__init__(dtype, head_dim, has_left, has_right, has_sink)

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
        q_row = cute.assume(hq * d, divby=d)
        kv_row = cute.assume(hkv * d, divby=d)
        mQ = cute.make_tensor(q_ptr, cute.make_layout((b, sq, hq, d), stride=(cute.assume(sq * q_row, divby=d), q_row, d, 1)))
        mO = cute.make_tensor(o_ptr, cute.make_layout((b, sq, hq, d), stride=(cute.assume(sq * q_row, divby=d), q_row, d, 1)))
        kv_batch = cute.assume(sk * kv_row, divby=d)
        mK = cute.make_tensor(k_ptr, cute.make_layout((b, sk, hkv, d), stride=(kv_batch, kv_row, d, 1)))
        mV = cute.make_tensor(v_ptr, cute.make_layout((b, sk, hkv, d), stride=(kv_batch, kv_row, d, 1)))
        mLSE = cute.make_tensor(lse_ptr, cute.make_layout((b, hq, sq), stride=(hq * sq, sq, 1)))
        mSink = cute.make_tensor(sink_ptr, cute.make_layout((hq,), stride=(1,)))
        # partial results, indexed by packed row: [split, batch * Hkv + kv head, row, D]
        rows = (hq // hkv) * sq
        bh = b * hkv
        row_d = cute.assume(rows * d, divby=d)
        mPartO = cute.make_tensor(
            part_o_ptr, cute.make_layout((num_splits, bh, rows, d), stride=(cute.assume(bh * row_d, divby=d), row_d, d, 1))
        )
        mPartLSE = cute.make_tensor(part_lse_ptr, cute.make_layout((num_splits, bh, rows), stride=(bh * rows, rows, 1)))

        # shared memory: 128-byte rows of 64 elements, XOR-swizzled (conflict-free ldmatrix)
        atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
        sQ_layout = cute.tile_to_shape(atom, (BLOCK_M, d), (0, 1))
        sKV_layout = cute.tile_to_shape(atom, (BLOCK_N, d, STAGES), (0, 1, 2))

        @cute.struct
        class Smem:
            q: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
            k: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
            v: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]

        vec = 128 // dt.width
        thr = cute.make_layout((THREADS // (64 // vec), 64 // vec), stride=(64 // vec, 1))
        g2s = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), dt, num_bits_per_copy=128),
            thr,
            cute.make_layout((1, vec)),
        )
        mma = cute.make_tiled_mma(
            warp.MmaF16BF16Op(dt, F32, (16, 8, 16)),
            (THREADS // 32, 1, 1),
            permutation_mnk=(THREADS // 32 * 16, 16, 16),
        )
        self.split_kernel(mQ, mK, mV, mPartO, mPartLSE, scale_log2, left, right, sQ_layout, sKV_layout, g2s, mma, Smem).launch(
            grid=(cute.ceil_div(rows, BLOCK_M) * bh, num_splits, 1), block=[THREADS, 1, 1], stream=stream,
            min_blocks_per_mp=CTAS_PER_SM, preferred_smem_carveout=100,  # (a carveout: compiles without a GPU)
        )
        self.combine_kernel(mPartO, mPartLSE, mO, mLSE, mSink).launch(
            grid=(cute.ceil_div(rows, COMBINE_WARPS) * bh, 1, 1), block=[COMBINE_WARPS * 32, 1, 1], stream=stream
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
        tidx, _, _ = cute.arch.thread_idx()
        tile, split, _ = cute.arch.block_idx()
        num_splits = mPartO.shape[0]
        rows = mPartO.shape[2]
        m_tiles = (rows + BLOCK_M - 1) // BLOCK_M
        bh = tile // m_tiles  # x = (batch * Hkv + kv head) * m_tiles + m-tile: a 1-D x, no 65535 limit
        m_block = tile - bh * m_tiles
        sq = mQ.shape[1]
        sk = mK.shape[1]
        hkv = mK.shape[2]
        group = mQ.shape[2] // hkv
        batch = bh // hkv
        kv_head = bh - batch * hkv
        offset = sk - sq  # bottom-right alignment of the masks
        m0 = m_block * BLOCK_M

        # --- the tile's key blocks (from its first and last query), then this split's share ---
        q_first = m0 // group
        q_last = cutlass.min(m0 + BLOCK_M, rows) // group  # rounds up past the last row's query: conservative
        hi = sk
        if cutlass.const_expr(self.has_right):
            hi = cutlass.min(sk, q_last + offset + right + 1)
        hi = cutlass.max(hi, 0)
        tile_max = (hi + BLOCK_N - 1) // BLOCK_N
        tile_min = I32(0)
        if cutlass.const_expr(self.has_left):
            tile_min = cutlass.max(q_first + offset - left, 0) // BLOCK_N
        per_split = (cutlass.max(tile_max - tile_min, 0) + num_splits - 1) // num_splits
        n_block_min = tile_min + split * per_split
        n_block_max = cutlass.min(n_block_min + per_split, tile_max)
        n_blocks = cutlass.max(n_block_max - n_block_min, 0)

        gK = cute.local_tile(mK[batch, None, kv_head, None], (BLOCK_N, d), (None, 0))
        gV = cute.local_tile(mV[batch, None, kv_head, None], (BLOCK_N, d), (None, 0))

        smem = SmemAllocator()
        storage = smem.allocate(Smem)
        sQ = storage.q.get_tensor(sQ_layout)
        sK = storage.k.get_tensor(sKV_layout)
        sV = storage.v.get_tensor(sKV_layout)
        # (D, N, stage) view of V for the transposing ldmatrix
        sVt = cute.composition(sV, cute.make_layout((d, BLOCK_N, STAGES), stride=(BLOCK_N, 1, BLOCK_N * d)))

        thr_g2s = g2s.get_slice(tidx)
        tQs = thr_g2s.partition_D(sQ)
        tKg = thr_g2s.partition_S(gK)
        tKs = thr_g2s.partition_D(sK)
        tVg = thr_g2s.partition_S(gV)
        tVs = thr_g2s.partition_D(sV)
        tQc = thr_g2s.partition_S(cute.make_identity_tensor((BLOCK_M, d)))
        tKVc = thr_g2s.partition_S(cute.make_identity_tensor((BLOCK_N, d)))

        thr_mma = mma.get_slice(tidx)
        tSrQ = thr_mma.make_fragment_A(thr_mma.partition_A(sQ))
        tSrK = thr_mma.make_fragment_B(thr_mma.partition_B(sK[None, None, 0]))
        tOrVt = thr_mma.make_fragment_B(thr_mma.partition_B(sVt[None, None, 0]))
        acc_O = cute.make_rmem_tensor(thr_mma.partition_shape_C((BLOCK_M, d)), F32)
        acc_O.fill(0.0)

        s2r_q = cute.make_tiled_copy_A(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(transpose=False, num_matrices=4), dt), mma)
        s2r_k = cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(transpose=False, num_matrices=4), dt), mma)
        s2r_v = cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(transpose=True, num_matrices=4), dt), mma)
        thr_s2r_q = s2r_q.get_slice(tidx)
        thr_s2r_k = s2r_k.get_slice(tidx)
        thr_s2r_v = s2r_v.get_slice(tidx)
        tSsQ = thr_s2r_q.partition_S(sQ)
        tSrQ_v = thr_s2r_q.retile(tSrQ)
        tSsK = thr_s2r_k.partition_S(sK)
        tSrK_v = thr_s2r_k.retile(tSrK)
        tOsVt = thr_s2r_v.partition_S(sVt)
        tOrVt_v = thr_s2r_v.retile(tOrVt)

        tScS = _mn_view(thr_mma.partition_C(cute.make_identity_tensor((BLOCK_M, BLOCK_N))))
        n_rows = acc_O.shape[0][0] * acc_O.shape[1]
        row_max = cute.make_rmem_tensor((n_rows,), F32)
        row_sum = cute.make_rmem_tensor((n_rows,), F32)
        row_max.fill(-F32.inf)
        row_sum.fill(0.0)
        # warp w holds rows 16w .. 16w + 15 of the tile (the MMA's M permutation is 4 x 16);
        # a warp with no packed row left skips the math and only streams K/V
        has_rows = m0 + (tidx // 32) * 16 < rows

        # --- prologue: Q's packed rows (one pointer per row), then K/V of the first STAGES - 1 blocks
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
        for s in cutlass.range_constexpr(STAGES - 1):
            if s < n_blocks:
                self.load_kv(g2s, tKg, tKs[None, None, None, s], tKVc, n_block_max - 1 - s, sk)
                self.load_kv(g2s, tVg, tVs[None, None, None, s], tKVc, n_block_max - 1 - s, sk)
            cute.arch.cp_async_commit_group()  # one group per stage, empty or not: the wait counts stay exact

        # --- main loop: this split's key blocks from the last to the first; block `it` sits in
        # stage it % STAGES, and the loads of the next STAGES - 1 blocks stay in flight
        for it in cutlass.range(n_blocks, unroll=1):
            n_block = n_block_max - 1 - it
            stage = it % STAGES
            cute.arch.cp_async_wait_group(STAGES - 2)
            cute.arch.barrier()  # block `it` is in; everyone is done with block it - 1's stage
            ahead = it + STAGES - 1
            if ahead < n_blocks:
                nxt = ahead % STAGES
                self.load_kv(g2s, tKg, tKs[None, None, None, nxt], tKVc, n_block_max - 1 - ahead, sk)
                self.load_kv(g2s, tVg, tVs[None, None, None, nxt], tKVc, n_block_max - 1 - ahead, sk)
            cute.arch.cp_async_commit_group()

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

    # --- the combine kernel: one warp per packed row ------------------------------------------
    @cute.kernel
    def combine_kernel(self, mPartO: cute.Tensor, mPartLSE: cute.Tensor, mO: cute.Tensor, mLSE: cute.Tensor, mSink: cute.Tensor):
        d = self.d
        per_lane = d // 32
        tidx, _, _ = cute.arch.thread_idx()
        tile, _, _ = cute.arch.block_idx()
        lane = tidx % 32
        num_splits = mPartO.shape[0]
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
            # the row's largest split LSE, then sum of 2^(LSE_i - max): lanes over splits
            top = -F32.inf
            for j in cutlass.range(lane, num_splits, 32, unroll=1):
                top = cute.arch.fmax(top, mPartLSE[j, bh, r])
            top = cute.arch.warp_reduction(top, cute.arch.fmax)
            top_safe = cutlass.select_(top == -F32.inf, F32(0.0), top)  # every split empty
            total = F32(0.0)
            for j in cutlass.range(lane, num_splits, 32, unroll=1):
                total += cute.math.exp2(mPartLSE[j, bh, r] - top_safe, fastmath=True)
            total = cute.arch.warp_reduction(total, lambda x, y: x + y)
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
@functools.cache
def compile_decode(dtype: str, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, arch: str, options: str = ""):
    """The compiled split + combine host function for one configuration; works without a GPU for any arch in ARCHS."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}, not {head_dim!r}")
    if arch not in ARCHS:
        raise ValueError(f"the decode path needs one of {ARCHS}, not {arch!r}")
    dt = DTYPES[dtype]
    kernel = _SplitKV(dt, head_dim, has_left, has_right, has_sink)
    gmem = cute.AddressSpace.gmem
    args = (
        make_ptr(dt, 16, gmem, assumed_align=16),
        make_ptr(dt, 16, gmem, assumed_align=16),
        make_ptr(dt, 16, gmem, assumed_align=16),
        make_ptr(dt, 16, gmem, assumed_align=16),
        make_ptr(F32, 16, gmem, assumed_align=4),
        make_ptr(F32, 16, gmem, assumed_align=4),
        make_ptr(F32, 16, gmem, assumed_align=16),
        make_ptr(F32, 16, gmem, assumed_align=4),
        I32(1), I32(1), I32(1), I32(1), I32(1), I32(1),
        F32(1.0), I32(0), I32(0),
        cuda.CUstream(0),
    )  # fmt: skip
    with lowering.prelowering(lowering.auto_pipeline(arch)):
        return cute.compile(kernel, *args, options=f"--gpu-arch {arch} {options}".strip())
