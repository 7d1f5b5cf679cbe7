"""The Hopper FMHA's online softmax and masking: per key block, the element mask, the running
row maximum and sum, exp2 (MUFU, or part on the FMA units), O's rescale.

Owns `Sm90Softmax` (a mixin of `fmha_sm90_kernel._FmhaSm90`: `online_softmax` and its
interleaved form, `mask_row`, `masked_iterations`, `score_columns`) and the row arithmetic it
shares with the epilogues (`_row_reference`: FA4's conditional rescale threshold; `_correction`;
`_rescale`). The pieces shared with the other FMHA paths (`finish_row`, `quad_allreduce`) are
`cute_lowering.kernels.attention_parts`'.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from cute_lowering.kernels.attention_parts import fmax, quad_allreduce
from cute_lowering.kernels.exp2 import exp2_row
from cute_lowering.kernels.fmha_sm90_parts import F32, I32, _mn_view

SCORE_COLUMNS_CHECK_ALL = False  # score_columns checks every consumer thread (seconds a build; the tests)


@cute.jit


def _rescale(acc_O: cute.Tensor, corr: cute.Tensor, conditional: cutlass.Constexpr = False):
    """O's rows times the online softmax's correction factors; `conditional` (RESCALE_THRESHOLD):
    not in a warp where every row's factor is 1 (the warp's lanes take the branch together)."""
    O = _mn_view(acc_O)
    if cutlass.const_expr(conditional):
        grew = corr[0] != F32(1.0)
        for r in cutlass.range_constexpr(1, cute.size(corr)):
            grew = grew | (corr[r] != F32(1.0))
        if cute.arch.vote_any_sync(grew):
            for r in cutlass.range_constexpr(cute.size(corr)):
                O[r, None] = O[r, None].load() * corr[r]
    else:
        for r in cutlass.range_constexpr(cute.size(corr)):
            O[r, None] = O[r, None].load() * corr[r]


def _row_reference(m_old: F32, m_blk: F32, scale_log2: F32, threshold: cutlass.Constexpr, inf_guard: cutlass.Constexpr = True):
    """The online softmax's new reference for one row: (the maximum to keep, it times scale_log2
    for the exponents to subtract, whether the old one is kept). threshold None: the running
    maximum (a row with nothing yet subtracts 0); a number: the old reference while the block's
    maximum exceeds it by at most `threshold` log2 units (RESCALE_THRESHOLD). inf_guard False:
    the caller knows the maximum is finite (a block none of whose scores is masked, finite
    inputs), so no select for a row with nothing yet (UNMASKED_INF_GUARD)."""
    m_new = cute.arch.fmax(m_old, m_blk)
    if cutlass.const_expr(inf_guard):
        m_safe = cutlass.select_(m_new == -F32.inf, F32(0.0), m_new) * scale_log2  # a row with nothing yet
    else:
        m_safe = m_new * scale_log2
    keep = None
    if cutlass.const_expr(threshold is not None):
        # (NaN when both are -inf, a row with nothing yet: not kept, as above)
        keep = (m_new - m_old) * scale_log2 <= F32(threshold)
        m_new = cutlass.select_(keep, m_old, m_new)
        m_safe = cutlass.select_(keep, m_old * scale_log2, m_safe)
    return m_new, m_safe, keep


def _correction(m_old: F32, m_safe: F32, scale_log2: F32, keep) -> F32:
    """O's (and the row sum's) factor for a new reference: exactly 1 where the old one is kept."""
    corr = cute.math.exp2(m_old * scale_log2 - m_safe, fastmath=True)
    if cutlass.const_expr(keep is not None):
        corr = cutlass.select_(keep, F32(1.0), corr)
    return corr


class Sm90Softmax:
    """The softmax and masking methods of `_FmhaSm90` (they read its compile-time fields)."""

    @cute.jit
    def masked_iterations(self, m0: I32, n_block_max: I32, n_blocks: I32, sk: I32, offset: I32, right: I32) -> I32:
        """right_end: with a right limit (causal) and no left one, iterations [1, right_end) of a
        tile's key loop need the element mask, the rest do not (iteration `it` is block
        n_block_max - 1 - it; iteration 0, the first block, decides for itself)."""
        q_first, _ = self.query_span(m0)
        # blocks below `unmasked_top` end at or before the key tail and the diagonal
        unmasked_top = cutlass.min(sk // self.block_n, cutlass.max(q_first + offset + right + 1, 0) // self.block_n)
        return cutlass.min(cutlass.max(n_block_max - unmasked_top, 1), n_blocks)

    @cute.jit
    def softmax(
        self,
        acc_S: cute.Tensor,
        corr: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        scale_log2: F32,
        tScS: cute.Tensor,
        m0: I32,
        sk: I32,
        offset: I32,
        left: I32,
        right: I32,
        n_block: I32,
        masked: cutlass.Constexpr = None,
    ):
        """Online softmax of one score block: acc_S becomes P (unnormalized), corr the factor for O.

        Only blocks that cross a causal/window limit or the key tail pay for the element mask:
        `masked` True/False when the caller knows (MASK_LOOPS), None to decide here.
        """
        n0 = n_block * self.block_n
        if cutlass.const_expr(masked is not None):
            self.online_softmax(acc_S, corr, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, masked)
            return
        q_first, q_last = self.query_span(m0)
        need_mask = n0 + self.block_n > sk
        if cutlass.const_expr(self.has_right):
            need_mask = need_mask | (n0 + self.block_n - 1 > q_first + offset + right)
        if cutlass.const_expr(self.has_left):
            need_mask = need_mask | (n0 < q_last + offset - left)
        if need_mask:
            self.online_softmax(acc_S, corr, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, True)
        else:
            self.online_softmax(acc_S, corr, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, False)

    @cute.jit
    def online_softmax(
        self,
        acc_S: cute.Tensor,
        corr: cute.Tensor,
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
    ):
        S = _mn_view(acc_S)
        if cutlass.const_expr(self.interleaved and self.fma_cols == 0):
            self.online_softmax_interleaved(S, corr, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, masked)
            return
        for r in cutlass.range_constexpr(cute.size(row_max)):
            if cutlass.const_expr(masked):
                self.mask_row(S, r, tScS, m0, n0, sk, offset, left, right)
            s_row = S[r, None].load()
            m_blk = quad_allreduce(s_row.reduce(cute.ReductionOp.MAX, -F32.inf, 0), fmax)
            m_old = row_max[r]
            m_new, m_safe, keep = _row_reference(m_old, m_blk, scale_log2, self.rescale_threshold, masked or self.inf_guard_unmasked)
            # EXP2_FMA: some columns' exp2 by polynomial on the FMA units, the rest on MUFU
            p = exp2_row(S, r, s_row * scale_log2 - m_safe, self.fma_cols)
            corr[r] = _correction(m_old, m_safe, scale_log2, keep)
            row_sum[r] = row_sum[r] * corr[r] + p.reduce(cute.ReductionOp.ADD, F32(0.0), 0)
            row_max[r] = m_new
            S[r, None] = p

    def score_columns(self, mma_qk: cute.TiledMma) -> list:
        """The columns of a consumer thread's scores relative to its first one, known while
        tracing (mask_row compares against them). The wgmma accumulator gives every thread the
        same pattern from its own first column ((lane % 4) * 2 + 8 k + j, PTX ISA's m64nNk16
        D fragment); checked here on the four lanes of a row group and a few more threads, or on
        every one with SCORE_COLUMNS_CHECK_ALL (seconds a build; the tests do)."""
        identity = cute.make_identity_tensor((self.block_m, self.block_n))
        offsets = None
        threads = range(128 * self.consumer_wgs) if SCORE_COLUMNS_CHECK_ALL else (0, 1, 2, 3, 4, 7, 31, 32, 77, 127, 128 * self.consumer_wgs - 1)
        for t in threads:
            cols = _mn_view(mma_qk.get_slice(t).partition_C(identity))
            mine = [cols[0, c][1] - cols[0, 0][1] for c in range(cute.size(cols.shape[1]))]
            if offsets is None:
                offsets = mine
            elif mine != offsets:
                raise RuntimeError(f"internal: MASK_RELATIVE needs every thread's score columns to be thread 0's shifted; thread {t} has {mine}, thread 0 {offsets}")
        return offsets

    @cute.jit
    def mask_row(self, S: cute.Tensor, r: cutlass.Constexpr, tScS: cute.Tensor, m0: I32, n0: I32, sk: I32, offset: I32, left: I32, right: I32):
        """Row r of the thread's score block S (columns from n0): -inf where the key is past the
        end or outside the row's causal/window limits."""
        row = m0 + tScS[r, 0][0]
        if cutlass.const_expr(self.group):
            row = row // self.group  # the packed row's query
        hi = sk
        if cutlass.const_expr(self.has_right):
            hi = cutlass.min(hi, row + offset + right + 1)
        if cutlass.const_expr(not self.mask_relative):
            lo = I32(0)
            if cutlass.const_expr(self.has_left):
                lo = row + offset - left
            for c in cutlass.range_constexpr(cute.size(S.shape[1])):
                col = n0 + tScS[0, c][1]
                if col >= hi or col < lo:
                    S[r, c] = -F32.inf
            return
        # MASK_RELATIVE: column c is first + col_offsets[c] (known while tracing); the row's limits
        # relative to its first column are compared with those constants
        first = n0 + tScS[0, 0][1]
        hi_rel = hi - first
        lo_rel = None
        if cutlass.const_expr(self.has_left):
            lo_rel = row + offset - left - first
        for c in cutlass.range_constexpr(cute.size(S.shape[1])):
            outside = self.col_offsets[c] >= hi_rel
            if cutlass.const_expr(self.has_left):
                outside = outside | (self.col_offsets[c] < lo_rel)
            S[r, c] = cutlass.select_(outside, -F32.inf, S[r, c])  # (a select: no branch per value)

    @cute.jit
    def online_softmax_interleaved(
        self,
        S: cute.Tensor,
        corr: cute.Tensor,
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
    ):
        """online_softmax with the thread's rows interleaved column by column: every row's max
        first (four partial maxima a row), then each column's exp2 for all rows in turn, summed
        into two partial sums a row, so the exp2s of different rows follow each other."""
        rows = cute.size(row_max)
        cols = cute.size(S.shape[1])
        if cutlass.const_expr(masked):
            for r in cutlass.range_constexpr(rows):
                self.mask_row(S, r, tScS, m0, n0, sk, offset, left, right)
        m_scaled = []
        for r in cutlass.range_constexpr(rows):
            part = [S[r, 0], S[r, 1], S[r, 2], S[r, 3]]
            for c in cutlass.range_constexpr(4, cols):
                part[c % 4] = cute.arch.fmax(part[c % 4], S[r, c])
            m_blk = quad_allreduce(cute.arch.fmax(cute.arch.fmax(part[0], part[1]), cute.arch.fmax(part[2], part[3])), fmax)
            m_old = row_max[r]
            m_new, m_safe, keep = _row_reference(m_old, m_blk, scale_log2, self.rescale_threshold, masked or self.inf_guard_unmasked)
            corr[r] = _correction(m_old, m_safe, scale_log2, keep)
            row_max[r] = m_new
            m_scaled.append(m_safe)
        sums = [[F32(0.0), F32(0.0)], [F32(0.0), F32(0.0)]][:rows]
        for c in cutlass.range_constexpr(cols):
            for r in cutlass.range_constexpr(rows):
                e = cute.math.exp2(S[r, c] * scale_log2 - m_scaled[r], fastmath=True)
                S[r, c] = e
                sums[r][c % 2] = sums[r][c % 2] + e
        for r in cutlass.range_constexpr(rows):
            row_sum[r] = row_sum[r] * corr[r] + (sums[r][0] + sums[r][1])
