"""FMHA forward (FlashAttention-2 style): a CuTeDSL kernel on warp-level MMA and a torch API.

    out, lse = fmha.attention(q, k, v, causal=True, window=(256, -1), sink=s, return_lse=True)

q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D] (Hq a multiple of Hkv: MHA, GQA, MQA), bf16 or fp16,
D in {64, 128}, any Sq, Sk (Sq != Sk allowed). Out [B, Sq, Hq, D] in the input dtype,
LSE [B, Hq, Sq] fp32 (natural log).

Semantics (FlashAttention's): query row i, key column j, offset = Sk - Sq (bottom-right
aligned). Column j is visible to row i iff j < Sk and
    j <= i + offset + right      (right >= 0; causal means right = 0)
    j >= i + offset - left       (left >= 0)
`window=(left, right)`, -1 meaning unbounded on that side. `sink` [Hq] fp32 is a
per-head logit (already in softmax units, like gpt-oss / FA4's `learnable_sink`) that
joins the softmax denominator and has no value:
    out_i = sum_j exp(s_ij - LSE_i) v_j,  LSE_i = log(sum_j exp(s_ij) + exp(sink_h)),
    s_ij = softmax_scale * q_i . k_j.
A row with no visible column gives out = 0 and LSE = -inf (LSE = sink_h with a sink):
never NaN.

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
`lowering.prelowering()`. Importing this module needs neither torch nor a GPU; the
compile function works on fake arguments (pointers, sizes) for any target.

Four paths behind one API (`path=`): "mma_sync" is the kernel above; "wgmma" is
`kernels.fmha_sm90` (warpgroup MMA, TMA, a producer warp), sm_90a only; "decode" is
`kernels.fmha_decode` (GQA-packed rows, split-KV and a combine kernel; sm_80+), for short
queries over long keys; "decode_wgmma" is the same idea on wgmma (`fmha_sm90`'s packed
split-KV kernel, then fmha_decode's combine; sm_90a, Hq / Hkv in 2, 4, ..., 128). "auto"
(the default) takes a split-KV path per call shape (`kernels.ops`; not for NVFP4 output):
decode for at most 16 packed rows Hq/Hkv * Sq, decode_wgmma on sm_90a where
`fmha_sm90.choose_splits` says so (more packed rows, 1024 keys or more, and a plain grid
short of a wave or query tiles a quarter empty), else decode where
`fmha_decode.choose_splits` does (at most 256 packed rows); otherwise wgmma on sm_90a
and mma_sync elsewhere (sm_80, sm_100a), and mma_sync whenever `exp2_on_fma` asks for the
FMA exp2, which only that path has.
"""

from __future__ import annotations

import functools
import math

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp
from cutlass._mlir import ir
from cutlass._mlir.dialects import arith

import lowering
from kernels import fmha_sm90, nvfp4
from kernels.cutedsl_compat import SmemAllocator
from kernels.attention_parts import (
    LN2,
    LOG2E,
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
from kernels.torch_device import arch_of, torch_module

# --- tuning knobs ---------------------------------------------------------------
BLOCK_M = 128  # query rows per CTA
BLOCK_N = 64  # keys per streamed K/V tile
THREADS = 128  # 4 warps, 16 x (BLOCK_M / 64) rows of the MMA each
HEAD_DIMS = (64, 128)
DTYPES = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}
ARCHS = ("sm_80", "sm_90a", "sm_100a")
PATHS = ("auto", "mma_sync", "wgmma", "decode", "decode_wgmma")
# exp2 of the scores on the FMA units for part of each S tile (FlashAttention-4's trick to
# relieve MUFU): the share of each thread's score columns (rounded to 1/16: BLOCK_N / 4
# columns a thread per row) computed by the polynomial; 0 = all MUFU ex2.
EXP2_FMA_FRACTION = 0.0
# "natural": floor + Int32(...) + arith.bitcast, built with fptosi-to-ptx,bitcast-to-ptx
# (cvt.rmi.s32.f32, mov.b32); "magic": x + 1.5*2^23 rounded down puts floor(x) in the low
# mantissa bits (FA4's formulation, no float->int conversion).
EXP2_FMA_IMPL = "magic"
EXP2_FMA_IMPLS = ("natural", "magic")
# 2^f on [0, 1), f32 minimax of the relative error with p(0) = 1 exactly (fitted by
# IRLS; max relative error 8.6e-5 in f32 Horner: < 0.2 ulp of fp16, < 0.03 ulp of bf16).
EXP2_POLY = (1.0, 0.6951168179512024, 0.22764484584331512, 0.07706717401742935)
EXP2_CLAMP = -127.0  # 2^-127 rounds the exponent field to 0: x = -inf gives exactly +0

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


def _poly_ex2(frac):
    """2^frac for frac in [0, 1): Horner on FMA, EXP2_POLY."""
    p = F32(EXP2_POLY[-1])
    for c in reversed(EXP2_POLY[:-1]):
        p = cute.math.fma(p, frac, F32(c))
    return p


def _f32_bits(x):
    return I32(arith.bitcast(ir.IntegerType.get_signless(32), x.ir_value()))


def _bits_f32(x):
    return F32(arith.bitcast(ir.F32Type.get(), x.ir_value()))


def exp2_fma_natural(x):
    """2^x on the FMA units, written the natural way: floor, Int32(...), bitcasts.

    fptosi-to-ptx folds floor + Int32 into one cvt.rmi.s32.f32, bitcast-to-ptx makes the
    bitcasts mov.b32. x <= 0 here (scores after the max); below -127 it is clamped.
    """
    x = cute.arch.fmax(x, F32(EXP2_CLAMP))
    whole = cute.math.floor(x)
    p = _poly_ex2(x - whole)
    return _bits_f32(_f32_bits(p) + (I32(whole) << 23))


_MAGIC = 12582912.0  # 1.5 * 2^23: ulp 1, and the low 22 mantissa bits hold the integer


def exp2_fma_magic(x):
    """2^x on the FMA units, FA4's way: no float->int conversion.

    x + 1.5*2^23 rounded down is floor(x) + 1.5*2^23 exactly (|x| < 2^22); its low
    mantissa bits are floor(x) in two's complement, so shifting its bit pattern left by
    23 puts floor(x) (mod 2^9) in the exponent field. Subtracting the magic back is exact.
    """
    x = cute.arch.fmax(x, F32(EXP2_CLAMP))
    r = cute.math.add(x, F32(_MAGIC), rounding=cute.math.RoundingMode.DOWN, ftz=True)
    p = _poly_ex2(x - (r - F32(_MAGIC)))
    return _bits_f32(_f32_bits(p) + (_f32_bits(r) << 23))


def _fma_columns(n_cols: int, n_fma: int) -> tuple[bool, ...]:
    """Which of a thread's n_cols score columns use the polynomial: n_fma of them, spread evenly."""
    return tuple((c + 1) * n_fma // n_cols > c * n_fma // n_cols for c in range(n_cols))


def exp2_row(S: cute.Tensor, r: int, x, fma_cols: int, fma_impl: str = "magic"):
    """2^x for row r of a thread's score tile S (x: that row's exponents, <= 0), as a TensorSSA.

    On MUFU; or, with `fma_cols` > 0, that many of the row's columns (`_fma_columns`) by the
    polynomial on the FMA units (FA4's relief for MUFU), x going through S. Called while
    tracing, with r known then (both FMHA paths' softmax).
    """
    if fma_cols == 0:
        return cute.math.exp2(x, fastmath=True)
    S[r, None] = x
    on_fma = _fma_columns(cute.size(S.shape[1]), fma_cols)
    exp2_fma = exp2_fma_natural if fma_impl == "natural" else exp2_fma_magic
    for c in range(cute.size(S.shape[1])):
        S[r, c] = exp2_fma(S[r, c]) if on_fma[c] else cute.math.exp2(S[r, c], fastmath=True)
    return S[r, None].load()


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


# --- compile (no GPU needed) ------------------------------------------------------
def _normalize_window(causal: bool, window) -> tuple[int, int]:
    left, right = (int(window[0]), int(window[1]))
    left = -1 if left < 0 else left
    right = -1 if right < 0 else right
    if causal:
        right = 0
    return left, right


def _fma_cols(fraction) -> int:
    """The exp2-on-FMA share as a count of a thread's BLOCK_N // 4 score columns per row."""
    f = float(fraction)
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"exp2_on_fma must be a fraction in [0, 1], not {fraction!r}")
    return round(f * (BLOCK_N // 4))


def prelowering_pipeline(arch: str, fma_cols: int = 0, fma_impl: str = "magic") -> str:
    """Our passes for one build: `auto` for the arch, plus fptosi-/bitcast-to-ptx for the natural exp2."""
    auto = lowering.auto_pipeline(arch)
    if fma_cols and fma_impl == "natural":
        inner = auto[len("builtin.module(") : -1]
        return f"builtin.module(fptosi-to-ptx,bitcast-to-ptx,{inner})"
    return auto


@functools.cache
def _compile(dtype: str, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, arch: str, fma_cols: int = 0, fma_impl: str = "magic", options: str = "", nvfp4_out: bool = False):
    dt = DTYPES[dtype]
    kernel = _Fmha(dt, head_dim, has_left, has_right, has_sink, fma_cols, fma_impl, nvfp4_out)
    with lowering.prelowering(prelowering_pipeline(arch, fma_cols, fma_impl)):
        return cute.compile(kernel, *fake_arguments(dt), options=f"--gpu-arch {arch} {options}".strip())


def compile_attention(
    dtype: str = "bfloat16",
    head_dim: int = 128,
    causal: bool = False,
    window=(-1, -1),
    sink: bool = False,
    arch: str = "sm_90a",
    exp2_on_fma=None,
    exp2_impl: str | None = None,
    options: str = "",
    path: str = "auto",
    out_format: str = "bf16",
    group: int | None = None,
    wide_keys: bool = False,
):
    """The compiled FMHA forward for one configuration; works without a GPU for any arch.

    `window` values only matter by their sign here (the sizes are runtime arguments), so
    configurations that differ in the window's size share one compile. `exp2_on_fma`: the
    share of the score exp2s computed by the polynomial on the FMA units (default
    EXP2_FMA_FRACTION; 0 = all MUFU), `exp2_impl` "natural" or "magic" (default
    EXP2_FMA_IMPL). `options`: extra cute.compile options (e.g. "--keep-cubin").
    `path`: "auto", "mma_sync", "wgmma", "decode" or "decode_wgmma" (see the module
    docstring; `resolve_path`); "decode_wgmma" also needs `group` = Hq / Hkv (its tiles pack
    that many q heads, a compile-time constant).
    `out_format`: "nvfp4" builds the NVFP4 epilogue (mma_sync, wgmma); anything else the plain store.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}, not {head_dim!r}")
    impl = EXP2_FMA_IMPL if exp2_impl is None else exp2_impl
    if impl not in EXP2_FMA_IMPLS:
        raise ValueError(f"exp2_impl must be one of {EXP2_FMA_IMPLS}, not {impl!r}")
    cols = _fma_cols(EXP2_FMA_FRACTION if exp2_on_fma is None else exp2_on_fma)
    left, right = _normalize_window(causal, window)
    nvfp4_out = out_format == "nvfp4"
    resolved = resolve_path(path, arch, cols)
    if resolved == "decode":
        from kernels import fmha_decode  # (it imports this module)

        if nvfp4_out:
            raise ValueError("the decode path has no NVFP4 output; path='auto' takes another path for it")
        return fmha_decode.compile_decode(dtype, head_dim, left >= 0, right >= 0, bool(sink), arch, options)
    if resolved == "decode_wgmma":
        if nvfp4_out:
            raise ValueError("the decode_wgmma path has no NVFP4 output; path='auto' takes another path for it")
        if group is None:
            raise ValueError("path='decode_wgmma' needs group= (Hq / Hkv)")
        return fmha_sm90.compile_packed_split(dtype, head_dim, group, left >= 0, right >= 0, bool(sink), arch, options)
    if resolved == "wgmma":
        return fmha_sm90.compile_kernel(dtype, head_dim, left >= 0, right >= 0, bool(sink), arch, options, nvfp4_out, wide_keys)
    return _compile(dtype, head_dim, left >= 0, right >= 0, bool(sink), arch, cols, impl if cols else "magic", options, nvfp4_out)


def resolve_path(path: str, arch: str, fma_cols: int = 0) -> str:
    """"mma_sync", "wgmma", "decode" or "decode_wgmma" for a requested path on an arch.

    auto: wgmma on sm_90a, unless the FMA exp2 is asked for (the shape-dependent choice of
    decode is made per call, in `kernels.ops`, before this).
    """
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, not {path!r}")
    if path == "auto":
        return "wgmma" if arch in fmha_sm90.ARCHS and not fma_cols else "mma_sync"
    if path == "decode":
        from kernels.fmha_decode import ARCHS as decode_archs

        if arch not in decode_archs:
            raise ValueError(f"the decode path needs one of {decode_archs}, not {arch!r}")
        if fma_cols:
            raise ValueError("exp2_on_fma exists on the mma_sync path only")
    if path in ("wgmma", "decode_wgmma"):
        if arch not in fmha_sm90.ARCHS:
            raise ValueError(f"the {path} path needs {fmha_sm90.ARCHS}, not {arch!r}")
        if fma_cols:
            raise ValueError("exp2_on_fma exists on the mma_sync path only")
    return path


# --- torch API ----------------------------------------------------------------------


def check_attention_shapes(q, k, v, sink, softmax_scale, global_scale):
    """The rules on types, dtypes, shapes and values (fake tensors too), first broken one raised."""
    torch = torch_module()
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"q must be bfloat16 or float16, got {q.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k, v must have one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D [B, S, H, D], got shape {tuple(t.shape)}")
    bq, sq, hq, d = q.shape
    bk, sk, hkv, dk = k.shape
    if tuple(v.shape) != tuple(k.shape):
        raise ValueError(f"k and v must have one shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if bk != bq or dk != d:
        raise ValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} must agree in batch and head dim")
    if d not in HEAD_DIMS:
        raise ValueError(f"head dim must be one of {HEAD_DIMS}, got {d}")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"q heads ({hq}) must be a multiple of k/v heads ({hkv}) (MHA/GQA/MQA)")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous [B, S, H, D]; call .contiguous() first")
    if max(q.numel(), k.numel(), bq * hq * sq) >= 2**31:
        raise ValueError("tensors of 2^31 elements or more are not supported (32-bit indexing)")
    if not (softmax_scale > 0 and math.isfinite(softmax_scale)):
        raise ValueError(f"softmax_scale must be positive and finite, got {softmax_scale}")
    if sink is not None:
        if not isinstance(sink, torch.Tensor):
            raise TypeError(f"sink must be a torch.Tensor [Hq], got {type(sink).__name__}")
        if sink.dtype != torch.float32 or tuple(sink.shape) != (hq,):
            raise ValueError(f"sink must be float32 of shape ({hq},), got {sink.dtype} {tuple(sink.shape)}")
        if not sink.is_contiguous():
            raise ValueError("sink must be contiguous; call .contiguous() first")
    if global_scale is not None:
        nvfp4._check_global_scale_shape(torch, global_scale)


def check_attention_input(q, k, v, sink, softmax_scale, global_scale):
    """Every rule of the attention launch on its tensors, with a message for the first one broken."""
    check_attention_shapes(q, k, v, sink, softmax_scale, global_scale)
    extra = (("sink", sink),) if sink is not None else ()
    extra += (("global_scale", global_scale),) if global_scale is not None else ()
    for name, t in (("q", q), ("k", k), ("v", v)) + extra:
        if t.device.type != "cuda":
            raise ValueError(f"{name} must be on a CUDA device, got {t.device}")
    if any(t.device != q.device for _, t in (("k", k), ("v", v)) + extra):
        raise ValueError("q, k, v (and sink, global_scale) must be on one device")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.data_ptr() % 16:
            raise ValueError(f"{name} must be 16-byte aligned")


def check_attention_options(path: str, exp2_on_fma, exp2_impl, arch: str):
    """The build options against each other and the arch (raises on a bad one)."""
    cols = _fma_cols(EXP2_FMA_FRACTION if exp2_on_fma is None else exp2_on_fma)  # checks the range
    if exp2_impl is not None and exp2_impl not in EXP2_FMA_IMPLS:
        raise ValueError(f"exp2_impl must be one of {EXP2_FMA_IMPLS}, not {exp2_impl!r}")
    resolve_path(path, arch, cols)


_OUT_FORMATS = ("bf16", "nvfp4", "bfloat16", "fp16", "float16")


def attention(
    q,
    k,
    v,
    causal: bool = False,
    window=(-1, -1),
    sink=None,
    softmax_scale=None,
    return_lse: bool = False,
    out_format: str = "bf16",
    exp2_on_fma=None,
    exp2_impl: str | None = None,
    path: str = "auto",
    global_scale=None,
):
    """FMHA forward: q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D] (CUDA, contiguous, bf16/fp16) -> out [B, Sq, Hq, D].

    causal: bottom-right aligned (query i sees keys j <= i + Sk - Sq). window=(left, right):
    sliding window, -1 = unbounded (causal sets right = 0). sink: fp32 [Hq] per-head logit
    joining the softmax denominator. softmax_scale: default 1/sqrt(D). return_lse: also
    return LSE [B, Hq, Sq] fp32. out_format: "bf16" (the default; the output has the
    input's dtype, bf16 or fp16) or "fp16"/"float16"/"bfloat16" (must match the input);
    "nvfp4": out is (codes uint8 [B, Sq, Hq, D/2], scales float8_e4m3fn [B, Sq, Hq, D/16],
    global_scale f32 0-d) as `kernels.nvfp4.quantize` makes them, from the epilogue
    (both paths), bit-identical to quantizing the bf16/fp16 output (where the bf16 call
    computes O otherwise, by a split-KV plan or the tail split's pieces, it is that output
    through `nvfp4.quantize`: the same bits, two kernels); `global_scale`
    defaults to 448*6/amax(|v|), a bound that holds for O (each row of O is a convex
    combination of rows of v, less with a sink), so no block scale saturates. exp2_on_fma: share of the
    score exp2s computed on the FMA units (0..1, default EXP2_FMA_FRACTION = 0: all MUFU);
    exp2_impl: "natural" or "magic" (default EXP2_FMA_IMPL), see compile_attention.
    path: "auto" (decode for short queries over long keys, else wgmma on sm_90a and
    mma_sync elsewhere), "mma_sync", "wgmma", "decode" or "decode_wgmma" (see the module docstring).
    The ops `cute_lowering::attention` / `attention_nvfp4` (kernels/ops.py).
    """
    if out_format not in _OUT_FORMATS:
        raise ValueError(f"out_format must be one of {sorted(_OUT_FORMATS)}, not {out_format!r}")
    if global_scale is not None and out_format != "nvfp4":
        raise ValueError("global_scale is for out_format='nvfp4' only")
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise ValueError(f"window must be a pair (left, right), got {window!r}")
    from kernels import ops  # torch, imported on first use

    torch = ops.torch
    if out_format in ("bfloat16", "fp16", "float16"):
        wanted = torch.bfloat16 if out_format == "bfloat16" else torch.float16
        if isinstance(q, torch.Tensor) and q.dtype != wanted:
            raise ValueError(f"out_format {out_format!r} must match the input dtype {q.dtype} (no conversion)")
    left, right = _normalize_window(causal, window)
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(q.shape[-1]) if isinstance(q, torch.Tensor) else 1.0
    softmax_scale = float(softmax_scale)
    if out_format == "nvfp4":
        if global_scale is None:
            if not isinstance(v, torch.Tensor):
                check_attention_shapes(q, k, v, sink, softmax_scale, None)
            global_scale = nvfp4.compute_global_scale(v)
        elif isinstance(global_scale, (int, float)):
            global_scale = nvfp4._check_global_scale(torch, global_scale, q.device)
        if ops.direct(q, k, v, sink, global_scale):
            codes, scales, lse = ops.attention_nvfp4_impl(q, k, v, sink, global_scale, softmax_scale, left, right, path, exp2_on_fma, exp2_impl)
        else:
            codes, scales, lse = ops.attention_nvfp4(q, k, v, sink, global_scale, softmax_scale, left, right, path, exp2_on_fma, exp2_impl)
        out = (codes, scales.view(torch.float8_e4m3fn), global_scale.reshape(()) if global_scale.dim() else global_scale)
    elif ops.direct(q, k, v, sink):
        out, lse = ops.attention_impl(q, k, v, sink, softmax_scale, left, right, path, exp2_on_fma, exp2_impl)
    else:
        out, lse = ops.attention(q, k, v, sink, softmax_scale, left, right, path, exp2_on_fma, exp2_impl)
    return (out, lse) if return_lse else out


# --- the reference (float64, torch; CPU or GPU) -----------------------------------------
def reference_attention(q, k, v, causal: bool = False, window=(-1, -1), sink=None, softmax_scale=None):
    """(out, lse) in float64 by the definition above: dense scores, explicit masks, exact exp.

    Rows with no visible key (and no sink) give out = 0 and LSE = -inf.
    """
    torch = torch_module()
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else float(softmax_scale)
    left, right = _normalize_window(causal, window)
    qd, kd, vd = (t.to(torch.float64) for t in (q, k, v))
    kd = kd.repeat_interleave(hq // hkv, dim=2)
    vd = vd.repeat_interleave(hq // hkv, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) * scale
    i = torch.arange(sq, device=q.device)[:, None]
    j = torch.arange(sk, device=q.device)[None, :]
    visible = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if right >= 0:
        visible &= j <= i + (sk - sq) + right
    if left >= 0:
        visible &= j >= i + (sk - sq) - left
    s = s.masked_fill(~visible, -math.inf)
    logits = s
    if sink is not None:
        col = sink.to(torch.float64).reshape(1, hq, 1, 1).expand(b, hq, sq, 1)
        logits = torch.cat([s, col], dim=-1)
    lse = torch.logsumexp(logits, dim=-1)  # -inf for an empty row
    finite = torch.isfinite(lse)
    p = torch.exp(s - torch.where(finite, lse, torch.zeros_like(lse))[..., None])
    p = torch.where(finite[..., None], p, torch.zeros_like(p))
    out = torch.einsum("bhqk,bkhd->bqhd", p, vd)
    return out, lse
