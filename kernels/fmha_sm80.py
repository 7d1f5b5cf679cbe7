"""The mma_sync FMHA forward (FlashAttention-2 style): the kernel and its compile function.

Owns `_Fmha` (the "mma_sync" path of `cute_lowering.kernels.fmha.attention`; `cute_lowering.kernels.fmha_decode`'s
split-KV kernels build on it), its knobs, the mma.sync register views (`_mn_view`,
`_as_operand_a`) and `_compile`. Semantics and the API: `kernels/fmha.py`.

The kernel: one CTA of 4 warps per (128-query tile, q head, batch). Q tile in shared
memory; K and V tiles of 64 keys stream through shared memory by cp.async (V of block n
loads while S = Q K^T runs, K of block n-1 while softmax and P V run). S and O live in
registers as mma.sync m16n8k16 accumulators (fp32); operands come from shared memory by
ldmatrix (V by the transposing ldmatrix). Online softmax in registers: per row the
running max m and sum l; each block rescales O by exp2((m_old - m_new) * c) with
c = softmax_scale * log2(e) folded into one FFMA per score. Key blocks are visited from
the last to the first; the loop bounds come from the causal/window limits of the query
tile, so blocks fully outside them are never loaded nor computed, and only blocks that
cross a limit (or the key tail) pay for the element mask. The epilogue normalizes O,
writes it through shared memory with 16-byte stores, and writes the LSE; with
`out_format="nvfp4"` it quantizes the shared-memory O tile instead
(`attention_parts.store_nvfp4`: E2M1 codes and E4M3 scales per 16 values along D; the
wgmma path does the same per warpgroup).

This path compiles for sm_80 and later (sm_90a, sm_100a) and is built inside
`cute_lowering.prelowering()`. Importing this module needs neither torch nor a GPU; the
compile function works on fake arguments (pointers, sizes) for any target.
"""

from __future__ import annotations

import functools

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp

import cute_lowering
from cute_lowering.kernels.cutedsl_compat import SmemAllocator
from cute_lowering.kernels.exp2 import exp2_row
from cute_lowering.kernels.attention_parts import (
    LN2,
    bshd_tensors,
    fake_arguments,
    finish_row,
    fmax,
    ldmatrix_copies,
    nvfp4_outputs,
    quad_allreduce,
    row_copy,
    softmax_state,
    store_nvfp4,
    swizzled_rows_atom,
)

# --- tuning knobs ---------------------------------------------------------------
BLOCK_M = 128  # query rows per CTA
BLOCK_N = 64  # keys per streamed K/V tile
THREADS = 128  # 4 warps, 16 x (BLOCK_M / 64) rows of the MMA each
HEAD_DIMS = (64, 128)
DTYPES = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}
ARCHS = ("sm_80", "sm_90a", "sm_100a")
# exp2 of the scores on the FMA units for part of each S tile (FlashAttention-4's trick to
# relieve MUFU): the share of each thread's score columns (rounded to 1/16: BLOCK_N / 4
# columns a thread per row) computed by the polynomial; 0 = all MUFU ex2.
EXP2_FMA_FRACTION = 0.0
# "natural": floor + Int32(...) + arith.bitcast, built with fptosi-to-ptx,bitcast-to-ptx
# (cvt.rmi.s32.f32, mov.b32); "magic": x + 1.5*2^23 rounded down puts floor(x) in the low
# mantissa bits (FA4's formulation, no float->int conversion).
EXP2_FMA_IMPL = "magic"
EXP2_FMA_IMPLS = ("natural", "magic")

F32 = cutlass.Float32
I32 = cutlass.Int32


# --- register-view helpers (trace-time layout algebra) --------------------------------
def _mn_view(acc: cute.Tensor) -> cute.Tensor:
    """An mma.sync accumulator ((2 cols, 2 rows), MMA_M, MMA_N) seen as (rows, cols)."""
    lay = cute.make_layout(acc.layout.shape)  # the same shape, compact column-major
    rows = (lay.shape[0][1], lay.shape[1])
    cols = (lay.shape[0][0], lay.shape[2])
    mn = cute.make_layout(
        (rows, cols),
        stride=((lay.stride[0][1], lay.stride[1]), (lay.stride[0][0], lay.stride[2])),
    )
    return cute.make_tensor(acc.iterator, cute.composition(acc.layout, mn))


def _as_operand_a(p: cute.Tensor) -> cute.Tensor:
    """P as the A operand of the P V product: (4, MMA_M, MMA_N) -> ((4, 2), MMA_M, MMA_N / 2).

    An m16n8k16 accumulator covers 8 columns; the A operand of the next MMA takes 16
    columns (k), i.e. two neighbouring accumulator tiles.
    """
    d = cute.logical_divide(p.layout, (None, None, 2))
    lay = cute.make_layout(
        ((d.shape[0], d.shape[2][0]), d.shape[1], d.shape[2][1]),
        stride=((d.stride[0], d.stride[2][0]), d.stride[1], d.stride[2][1]),
    )
    return cute.make_tensor(p.iterator, lay)


class _Fmha:
    """One compiled configuration: dtype, head dim and which masks exist (compile-time)."""

    def __init__(self, dtype, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, fma_cols: int = 0, fma_impl: str = "magic", nvfp4_out: bool = False):
        self.nvfp4_out = nvfp4_out  # the epilogue writes O as NVFP4 (codes + E4M3 scales) instead
        self.fma_cols = fma_cols  # of a thread's BLOCK_N // 4 score columns per row, on the FMA units
        self.fma_impl = fma_impl
        self.dtype = dtype
        self.d = head_dim
        self.has_left = has_left
        self.has_right = has_right
        self.has_sink = has_sink

    # --- host side: layouts, copies, launch ---------------------------------------
    @cute.jit
    def __call__(
        self,
        q_ptr: cute.Pointer,
        k_ptr: cute.Pointer,
        v_ptr: cute.Pointer,
        o_ptr: cute.Pointer,
        lse_ptr: cute.Pointer,
        sink_ptr: cute.Pointer,
        codes_ptr: cute.Pointer,
        scales_ptr: cute.Pointer,
        global_scale_ptr: cute.Pointer,
        counters_ptr: cute.Pointer,  # (fmha_sm90's scheduler counters: the same call, not read here)
        tail_o_ptr: cute.Pointer,  # (fmha_sm90's TAIL_SPLIT partials and piece count: not read here)
        tail_lse_ptr: cute.Pointer,
        tail_splits: I32,
        b: I32,
        sq: I32,
        sk: I32,
        hq: I32,
        hkv: I32,
        scale_log2: F32,
        left: I32,
        right: I32,
        stream: cuda.CUstream,
    ):
        d = self.d
        dt = self.dtype
        mQ, mK, mV, mO, mLSE, mSink = bshd_tensors(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sink_ptr, b, sq, sk, hq, hkv, d)
        # NVFP4 output, read only with nvfp4_out
        mCodes, mScales, mGlobal = nvfp4_outputs(codes_ptr, scales_ptr, global_scale_ptr, b, sq, hq, d)

        atom = swizzled_rows_atom()
        sQ_layout = cute.tile_to_shape(atom, (BLOCK_M, d), (0, 1))
        sKV_layout = cute.tile_to_shape(atom, (BLOCK_N, d), (0, 1))

        @cute.struct
        class Smem:
            q: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
            k: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
            v: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]

        # global -> shared: 16-byte cp.async, 8 threads per 64-element row, 16 rows a pass;
        # shared -> global for O: plain 16-byte copies, same thread layout
        g2s = row_copy(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), dt, THREADS)
        s2g = row_copy(cute.nvgpu.CopyUniversalOp(), dt, THREADS)
        mma = cute.make_tiled_mma(
            warp.MmaF16BF16Op(dt, F32, (16, 8, 16)),
            (THREADS // 32, 1, 1),
            permutation_mnk=(THREADS // 32 * 16, 16, 16),
        )
        grid = (cute.ceil_div(sq, BLOCK_M), hq, b)
        self.kernel(
            mQ, mK, mV, mO, mLSE, mSink, mCodes, mScales, mGlobal, scale_log2, left, right, sQ_layout, sKV_layout, g2s, s2g, mma, Smem
        ).launch(grid=grid, block=[THREADS, 1, 1], stream=stream)

    # --- device side ------------------------------------------------------------------
    @cute.kernel
    def kernel(
        self,
        mQ: cute.Tensor,
        mK: cute.Tensor,
        mV: cute.Tensor,
        mO: cute.Tensor,
        mLSE: cute.Tensor,
        mSink: cute.Tensor,
        mCodes: cute.Tensor,
        mScales: cute.Tensor,
        mGlobal: cute.Tensor,
        scale_log2: F32,
        left: I32,
        right: I32,
        sQ_layout: cute.ComposedLayout,
        sKV_layout: cute.ComposedLayout,
        g2s: cute.TiledCopy,
        s2g: cute.TiledCopy,
        mma: cute.TiledMma,
        Smem: cutlass.Constexpr,
    ):
        d = self.d
        dt = self.dtype
        tidx, _, _ = cute.arch.thread_idx()
        m_block, head, batch = cute.arch.block_idx()
        sq = mQ.shape[1]
        sk = mK.shape[1]
        group = mQ.shape[2] // mK.shape[2]
        kv_head = head // group
        offset = sk - sq  # bottom-right alignment of the masks
        m0 = m_block * BLOCK_M

        # --- which key blocks this query tile needs ---------------------------------
        hi = sk
        if cutlass.const_expr(self.has_right):
            hi = cutlass.min(sk, m0 + BLOCK_M + offset + right)  # last row's last visible column + 1
        hi = cutlass.max(hi, 0)
        n_block_max = (hi + BLOCK_N - 1) // BLOCK_N
        n_block_min = I32(0)
        if cutlass.const_expr(self.has_left):
            n_block_min = cutlass.max(m0 + offset - left, 0) // BLOCK_N
        n_blocks = cutlass.max(n_block_max - n_block_min, 0)

        # --- tiles -----------------------------------------------------------------------
        gQ = cute.local_tile(mQ[batch, None, head, None], (BLOCK_M, d), (m_block, 0))
        gK = cute.local_tile(mK[batch, None, kv_head, None], (BLOCK_N, d), (None, 0))
        gV = cute.local_tile(mV[batch, None, kv_head, None], (BLOCK_N, d), (None, 0))

        smem = SmemAllocator()
        storage = smem.allocate(Smem)
        sQ = storage.q.get_tensor(sQ_layout)
        sK = storage.k.get_tensor(sKV_layout)
        sV = storage.v.get_tensor(sKV_layout)
        sVt = cute.composition(sV, cute.make_layout((d, BLOCK_N), stride=(BLOCK_N, 1)))  # (D, N) view

        thr_g2s = g2s.get_slice(tidx)
        tQg = thr_g2s.partition_S(gQ)
        tQs = thr_g2s.partition_D(sQ)
        tKg = thr_g2s.partition_S(gK)
        tKs = thr_g2s.partition_D(sK)
        tVg = thr_g2s.partition_S(gV)
        tVs = thr_g2s.partition_D(sV)
        # row coordinates (within a tile) of this thread's copies
        tQc = thr_g2s.partition_S(cute.make_identity_tensor((BLOCK_M, d)))
        tKVc = thr_g2s.partition_S(cute.make_identity_tensor((BLOCK_N, d)))

        thr_mma = mma.get_slice(tidx)
        tSrQ = thr_mma.make_fragment_A(thr_mma.partition_A(sQ))
        tSrK = thr_mma.make_fragment_B(thr_mma.partition_B(sK))
        tOrVt = thr_mma.make_fragment_B(thr_mma.partition_B(sVt))
        acc_O = cute.make_rmem_tensor(thr_mma.partition_shape_C((BLOCK_M, d)), F32)
        acc_O.fill(0.0)

        (s2r_q, s2r_k, s2r_v), (thr_s2r_q, thr_s2r_k, thr_s2r_v) = ldmatrix_copies(mma, dt, tidx)
        tSsQ = thr_s2r_q.partition_S(sQ)
        tSrQ_v = thr_s2r_q.retile(tSrQ)
        tSsK = thr_s2r_k.partition_S(sK)
        tSrK_v = thr_s2r_k.retile(tSrK)
        tOsVt = thr_s2r_v.partition_S(sVt)
        tOrVt_v = thr_s2r_v.retile(tOrVt)

        # (row, col) within a (BLOCK_M, BLOCK_N) score tile for each accumulator element
        tScS = _mn_view(thr_mma.partition_C(cute.make_identity_tensor((BLOCK_M, BLOCK_N))))

        # softmax state per accumulator row of this thread (partial sums over its columns)
        n_rows, row_max, row_sum = softmax_state(acc_O)

        # --- prologue: Q, and K of the first visited block ---------------------------------
        for m in cutlass.range_constexpr(cute.size(tQs.shape[1])):
            if m0 + tQc[0, m, 0][0] < sq:
                cute.copy(g2s, tQg[None, m, None], tQs[None, m, None])
            else:
                tQs[None, m, None].fill(0)
        if n_blocks > 0:
            self.load_kv(g2s, tKg, tKs, tKVc, n_block_max - 1, sk)
        cute.arch.cp_async_commit_group()

        # --- main loop: key blocks from the last to the first --------------------------------
        for it in cutlass.range(n_blocks, unroll=1):
            n_block = n_block_max - 1 - it
            cute.arch.cp_async_wait_group(0)
            cute.arch.barrier()  # K(n) is in; everyone is done with V(n+1)
            self.load_kv(g2s, tVg, tVs, tKVc, n_block, sk)
            cute.arch.cp_async_commit_group()

            acc_S = cute.make_rmem_tensor(thr_mma.partition_shape_C((BLOCK_M, BLOCK_N)), F32)
            acc_S.fill(0.0)
            self.gemm(mma, acc_S, s2r_q, tSsQ, tSrQ_v, tSrQ, s2r_k, tSsK, tSrK_v, tSrK)

            cute.arch.cp_async_wait_group(0)
            cute.arch.barrier()  # V(n) is in; everyone is done with K(n)
            if n_block > n_block_min:
                self.load_kv(g2s, tKg, tKs, tKVc, n_block - 1, sk)
            cute.arch.cp_async_commit_group()

            n0 = n_block * BLOCK_N
            need_mask = n0 + BLOCK_N > sk
            if cutlass.const_expr(self.has_right):
                need_mask = need_mask | (n0 + BLOCK_N - 1 > m0 + offset + right)
            if cutlass.const_expr(self.has_left):
                need_mask = need_mask | (n0 < m0 + BLOCK_M - 1 + offset - left)
            if need_mask:
                self.softmax(acc_S, acc_O, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, True)
            else:
                self.softmax(acc_S, acc_O, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, False)

            rP = cute.make_fragment_like(acc_S, dt)
            rP.store(acc_S.load().to(dt))
            tOrP = _as_operand_a(rP)
            self.gemm_pv(mma, acc_O, tOrP, s2r_v, tOsVt, tOrVt_v, tOrVt)

        # --- epilogue: normalize, LSE, O through shared memory -------------------------------
        acc_O_mn = _mn_view(acc_O)
        lane = tidx % 4
        sink_logit = None  # the head's sink joins each row's denominator
        if cutlass.const_expr(self.has_sink):
            sink_logit = mSink[head]
        for r in cutlass.range_constexpr(n_rows):
            scale, lse2 = finish_row(row_sum[r], row_max[r], scale_log2, sink_logit)
            acc_O_mn[r, None] = acc_O_mn[r, None].load() * scale
            row = m0 + tScS[r, 0][0]
            if lane == 0:
                if row < sq:
                    mLSE[batch, head, row] = lse2 * F32(LN2)

        cute.arch.cp_async_wait_group(0)
        cute.arch.barrier()  # all ldmatrix reads of sQ done (and Q's load, if no block ran)
        rO = cute.make_fragment_like(acc_O, dt)
        rO.store(acc_O.load().to(dt))
        sO = cute.make_tensor(sQ.iterator, sQ_layout)
        r2s = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dt), mma)
        thr_r2s = r2s.get_slice(tidx)
        cute.copy(r2s, thr_r2s.retile(rO), thr_r2s.partition_D(sO))
        cute.arch.barrier()
        if cutlass.const_expr(self.nvfp4_out):
            # O as NVFP4, quantized from the tile as it would have been stored
            store_nvfp4(sO, (mCodes, mScales, mGlobal), batch, head, m_block, sq - m0, tidx, THREADS)
        else:
            gO = cute.local_tile(mO[batch, None, head, None], (BLOCK_M, d), (m_block, 0))
            thr_s2g = s2g.get_slice(tidx)
            tOs = thr_s2g.partition_S(sO)
            tOg = thr_s2g.partition_D(gO)
            tOr = cute.make_fragment_like(tOg, dt)
            cute.copy(s2g, tOs, tOr)
            for m in cutlass.range_constexpr(cute.size(tOg.shape[1])):
                if m0 + tQc[0, m, 0][0] < sq:
                    cute.copy(s2g, tOr[None, m, None], tOg[None, m, None])

    @cute.jit
    def load_kv(self, g2s: cute.TiledCopy, tg: cute.Tensor, ts: cute.Tensor, tc: cute.Tensor, n_block: I32, sk: I32):
        """cp.async one K or V tile; rows past the keys' end are zero-filled (no NaN * 0)."""
        for n in cutlass.range_constexpr(cute.size(ts.shape[1])):
            if n_block * BLOCK_N + tc[0, n, 0][0] < sk:
                cute.copy(g2s, tg[None, n, None, n_block], ts[None, n, None])
            else:
                ts[None, n, None].fill(0)

    @cute.jit
    def gemm(self, mma, acc, s2r_a, tsA, trA_v, trA, s2r_b, tsB, trB_v, trB):
        """acc += A B^T over the head dim, the next k-slice's ldmatrix ahead of the MMA."""
        ks = cute.size(tsA.shape[2])
        cute.copy(s2r_a, tsA[None, None, 0], trA_v[None, None, 0])
        cute.copy(s2r_b, tsB[None, None, 0], trB_v[None, None, 0])
        for k in cutlass.range_constexpr(ks):
            if cutlass.const_expr(k + 1 < ks):
                cute.copy(s2r_a, tsA[None, None, k + 1], trA_v[None, None, k + 1])
                cute.copy(s2r_b, tsB[None, None, k + 1], trB_v[None, None, k + 1])
            cute.gemm(mma, acc, trA[None, None, k], trB[None, None, k], acc)

    @cute.jit
    def gemm_pv(self, mma, acc, trP, s2r_v, tsV, trV_v, trV):
        """acc_O += P V: P from registers, V^T by the transposing ldmatrix."""
        ks = cute.size(trP.shape[2])
        cute.copy(s2r_v, tsV[None, None, 0], trV_v[None, None, 0])
        for k in cutlass.range_constexpr(ks):
            if cutlass.const_expr(k + 1 < ks):
                cute.copy(s2r_v, tsV[None, None, k + 1], trV_v[None, None, k + 1])
            cute.gemm(mma, acc, trP[None, None, k], trV[None, None, k], acc)

    @cute.jit
    def softmax(
        self,
        acc_S: cute.Tensor,
        acc_O: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        scale_log2: F32,
        tScS: cute.Tensor,
        m0: I32,
        n0: I32,
        sk: I32,
        offset: I32,
        left: I32,
        right: I32,
        masked: cutlass.Constexpr,
        group=None,
    ):
        """Online softmax of one score block; acc_S becomes P (unnormalized), O is rescaled.

        `group` (q heads per kv head): the tile's rows are GQA-packed (`fmha_decode`),
        row r of the tile is query (m0 + r) // group; None: row r is query m0 + r.
        """
        S = _mn_view(acc_S)
        O = _mn_view(acc_O)
        for r in cutlass.range_constexpr(cute.size(row_max)):
            if cutlass.const_expr(masked):
                row = m0 + tScS[r, 0][0]
                if cutlass.const_expr(group is not None):
                    row = row // group
                hi = sk
                if cutlass.const_expr(self.has_right):
                    hi = cutlass.min(hi, row + offset + right + 1)
                lo = I32(0)
                if cutlass.const_expr(self.has_left):
                    lo = row + offset - left
                for c in cutlass.range_constexpr(cute.size(S.shape[1])):
                    col = n0 + tScS[0, c][1]
                    if col >= hi or col < lo:
                        S[r, c] = -F32.inf
            s_row = S[r, None].load()
            m_blk = quad_allreduce(s_row.reduce(cute.ReductionOp.MAX, -F32.inf, 0), fmax)
            m_old = row_max[r]
            m_new = cute.arch.fmax(m_old, m_blk)
            m_safe = cutlass.select_(m_new == -F32.inf, F32(0.0), m_new) * scale_log2  # a row with nothing yet
            p = exp2_row(S, r, s_row * scale_log2 - m_safe, self.fma_cols, self.fma_impl)
            corr = cute.math.exp2(m_old * scale_log2 - m_safe, fastmath=True)
            row_sum[r] = row_sum[r] * corr + p.reduce(cute.ReductionOp.ADD, F32(0.0), 0)
            O[r, None] = O[r, None].load() * corr
            row_max[r] = m_new
            S[r, None] = p


def _fma_cols(fraction) -> int:
    """The exp2-on-FMA share as a count of a thread's BLOCK_N // 4 score columns per row."""
    f = float(fraction)
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"exp2_on_fma must be a fraction in [0, 1], not {fraction!r}")
    return round(f * (BLOCK_N // 4))


def prelowering_pipeline(arch: str, fma_cols: int = 0, fma_impl: str = "magic") -> str:
    """Our passes for one build: `auto` for the arch, plus fptosi-/bitcast-to-ptx for the natural exp2."""
    auto = cute_lowering.auto_pipeline(arch)
    if fma_cols and fma_impl == "natural":
        inner = auto[len("builtin.module(") : -1]
        return f"builtin.module(fptosi-to-ptx,bitcast-to-ptx,{inner})"
    return auto


@functools.cache
def _compile(dtype: str, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, arch: str, fma_cols: int = 0, fma_impl: str = "magic", options: str = "", nvfp4_out: bool = False):
    dt = DTYPES[dtype]
    kernel = _Fmha(dt, head_dim, has_left, has_right, has_sink, fma_cols, fma_impl, nvfp4_out)
    with cute_lowering.prelowering(prelowering_pipeline(arch, fma_cols, fma_impl)):
        return cute.compile(kernel, *fake_arguments(dt), options=f"--gpu-arch {arch} {options}".strip())


# --- torch API ----------------------------------------------------------------------


