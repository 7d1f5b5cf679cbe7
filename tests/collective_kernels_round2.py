"""The second corpus for `check-collectives` (issue 37): the classes the held-out round-2 set
covers, written as kernel authors write them, registered into `collective_kernels.CASES`
(same marks, same expectations, same launcher: import this module to add them).

- dataflow: lane dependence that reaches a condition only through a loop-carried value,
  an `if` result, `min`/`max` of a lane value and a uniform one, a `while` counter;
- warp-uniform by arithmetic: `bidx * 128 + tidx < n * 32`, `range(tidx, n * 32, 128)`;
- register fragments: a predicate or a value kept in `make_rmem_tensor`;
- member masks given as inline-PTX operands (`redux.sync` with `0x0000FFFF`);
- counted barriers: one id at several sites, `bar.arrive` + `bar.sync` counts, differing counts;
- warpgroup scope (`setmaxnreg`), cluster scope (`barrier.cluster.arrive`);
- exits: what each collective requires of threads that executed `exit` (PTX ISA);
- constant conditions (issue 38): `if FLAG:` on a closure constant;
- collectives new to the table: FP8 `mma.sync`, `tcgen05.cp` (S2T copies), TMEM loads after exits.

`sm_90a` kernels also run on the H200 (`bench/collectives_synccheck.py`).
"""

# no `from __future__ import annotations`: @cute.struct reads its fields' annotations as objects

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from cutlass._mlir.dialects import llvm, nvvm
from cutlass.cute.nvgpu import tcgen05, warp, warpgroup
from cutlass.cutlass_dsl import T, dsl_user_op

from collective_kernels import (
    TMEM_COLUMNS as _TMEM_VIEWS_COLUMNS,
    _Barriers,
    _allocate_by_warp0,
    _free_by_warp0,
    _tmem_views,
    _warp_mma_operands,
    _wgmma_operands,
    correct,
    data_dependent,
    planted,
)
from cute_lowering.kernels.cutedsl_compat import SmemAllocator

NEVER = False  # a closure constant: CuTeDSL stages `if NEVER:` as a constant condition
ALWAYS = True


@cute.jit
def _exit():
    """`exit` for the threads that run it (CuTeDSL has no early return)."""
    nvvm.exit()


@dsl_user_op
def _redux_add(value: Int32, mask: Int32, *, loc=None, ip=None) -> Int32:
    """redux.sync.add.s32 as inline PTX, its member mask an operand (`$2`), as quack writes its
    inline PTX (a `dsl_user_op`: the op gets the caller's line)."""
    return Int32(
        llvm.inline_asm(
            T.i32(), [Int32(value).ir_value(loc=loc, ip=ip), Int32(mask).ir_value(loc=loc, ip=ip)],
            "redux.sync.add.s32 $0, $1, $2;", "=r,r,r",
            has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip,
        )
    )  # fmt: skip


# ======================================================================================
# Dataflow: lane dependence through loop-carried values, `if` results, min/max, `while`
# ======================================================================================


@planted("shfl_under_loop_carried_lane", "sm_90a", "nvvm.shfl.sync", "acc += lane three times in a loop, then `if acc < 24`: lanes 0-7")
@cute.kernel
def _shfl_under_loop_carried_lane(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    acc = Int32(0)
    for i in cutlass.range(3):
        acc = acc + lane
    value = Float32(tidx)
    if acc < 24:  # <- diverges
        value = cute.arch.shuffle_sync_bfly(value, 1)  # <- collective
    dst[tidx] = value


@correct("shfl_under_loop_carried_warp", "sm_90a", "acc += warp_idx three times, then `if acc < 3`: whole warps")
@cute.kernel
def _shfl_under_loop_carried_warp(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    acc = Int32(0)
    for i in cutlass.range(3):
        acc = acc + warp_idx
    value = Float32(tidx)
    if acc < 3:
        value = cute.arch.shuffle_sync_bfly(value, 1)
    dst[tidx] = value


@planted("shfl_under_if_result_lane", "sm_90a", "nvvm.shfl.sync", "lim = lane or 31 - lane (a uniform choice), then `if lim < 16`: half of every warp either way")
@cute.kernel
def _shfl_under_if_result_lane(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    lim = Int32(0)
    if n > 0:
        lim = lane
    else:
        lim = 31 - lane
    value = Float32(tidx)
    if lim < 16:  # <- diverges
        value = cute.arch.shuffle_sync_bfly(value, 2)  # <- collective
    dst[tidx] = value


@correct("shfl_under_if_result_warp", "sm_90a", "lim = warp_idx or 3 - warp_idx (a uniform choice), then `if lim < 2`: whole warps")
@cute.kernel
def _shfl_under_if_result_warp(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    lim = Int32(0)
    if n > 0:
        lim = warp_idx
    else:
        lim = 3 - warp_idx
    value = Float32(tidx)
    if lim < 2:
        value = cute.arch.shuffle_sync_bfly(value, 2)
    dst[tidx] = value


@planted("shfl_in_min_lane_loop", "sm_90a", "nvvm.shfl.sync", "`for i in range(min(lane, n))`: a per-lane trip count once n > 1")
@cute.kernel
def _shfl_in_min_lane_loop(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    value = Float32(tidx)
    for i in cutlass.range(cutlass.min(lane, n)):  # <- diverges
        value = value + cute.arch.shuffle_sync_down(value, 1)  # <- collective
    dst[tidx] = value


@correct("shfl_in_min_warp_loop", "sm_90a", "`for i in range(min(warp_idx, n))`: a per-warp trip count")
@cute.kernel
def _shfl_in_min_warp_loop(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    value = Float32(tidx)
    for i in cutlass.range(cutlass.max(warp_idx, n)):
        value = value + cute.arch.shuffle_sync_down(value, 1)
    dst[tidx] = value


@planted("shfl_in_lane_while_to_n", "sm_90a", "nvvm.shfl.sync", "`k = lane; while k < n: shuffle; k += 32`: for n = 16 half a warp loops")
@cute.kernel
def _shfl_in_lane_while_to_n(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    value = Float32(tidx)
    k = lane
    while k < n:  # <- diverges
        value = value + cute.arch.shuffle_sync_bfly(value, 4)  # <- collective
        k = k + 32
    dst[tidx] = value


@correct("shfl_in_tidx_while_to_multiple_of_32", "sm_90a", "`k = tidx; while k < n * 32: shuffle; k += 128`: lanes of a warp stop together")
@cute.kernel
def _shfl_in_tidx_while_to_multiple_of_32(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    value = Float32(tidx)
    k = tidx
    while k < n * 32:
        value = value + cute.arch.shuffle_sync_bfly(value, 4)
        k = k + 128
    dst[tidx] = value


# ======================================================================================
# Warp-uniform by arithmetic (near misses of the `tidx < n` bugs)
# ======================================================================================


@correct("shfl_in_tidx_loop_to_multiple_of_32", "sm_90a", "`for i in range(tidx, n * 32, 128)`: the same trip count in lanes 0-31 of each warp")
@cute.kernel
def _shfl_in_tidx_loop_to_multiple_of_32(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    value = Float32(tidx)
    for i in cutlass.range(tidx, n * 32, 128):
        value = value + cute.arch.shuffle_sync_bfly(value, 8)
    dst[tidx] = value


@planted("shfl_in_tidx_loop_to_even_n", "sm_90a", "nvvm.shfl.sync", "`for i in range(tidx, n * 2, 128)`: for n = 8 lanes 0-15 iterate once")
@cute.kernel
def _shfl_in_tidx_loop_to_even_n(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    value = Float32(tidx)
    for i in cutlass.range(tidx, n * 2, 128):  # <- diverges
        value = value + cute.arch.shuffle_sync_bfly(value, 8)  # <- collective
    dst[tidx] = value


@correct("shfl_under_row_lt_multiple_of_32", "sm_90a", "`if bidx * 128 + tidx < n * 32`: both sides differ by multiples of 32 within a warp")
@cute.kernel
def _shfl_under_row_lt_multiple_of_32(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    value = Float32(tidx)
    if bidx * 128 + tidx < n * 32:
        value = cute.arch.shuffle_sync_bfly(value, 16)
    dst[bidx * 128 + tidx] = value


@planted("shfl_under_row_lt_multiple_of_16", "sm_90a", "nvvm.shfl.sync", "`if bidx * 128 + tidx < n * 16`: for odd n half a warp passes")
@cute.kernel
def _shfl_under_row_lt_multiple_of_16(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    value = Float32(tidx)
    if bidx * 128 + tidx < n * 16:  # <- diverges
        value = cute.arch.shuffle_sync_bfly(value, 16)  # <- collective
    dst[bidx * 128 + tidx] = value


# ======================================================================================
# Register fragments: a value is as divergent as what was stored into it
# ======================================================================================


@planted("barrier_under_register_predicate", "sm_90a", "nvvm.barrier", "pred[0] = tidx < 64 kept in a register tensor, then `if pred[0]`: sync_threads()")
@cute.kernel
def _barrier_under_register_predicate(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    pred = cute.make_rmem_tensor((1,), Int32)
    pred[0] = Int32(tidx < 64)
    dst[tidx] = Float32(tidx)
    if pred[0] != 0:  # <- diverges
        cute.arch.sync_threads()  # <- collective
    dst[tidx + 128] = Float32(pred[0])


@data_dependent("barrier_under_register_loaded_value", "sm_90a", "nvvm.barrier", "frag[0] = dst[tidx] (a per-thread load kept in registers), then `if frag[0] > 0`: sync_threads()")
@cute.kernel
def _barrier_under_register_loaded_value(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    frag = cute.make_rmem_tensor((1,), Float32)
    frag[0] = dst[tidx]
    if frag[0] > Float32(0.0):  # <- diverges
        cute.arch.sync_threads()  # <- collective
    dst[tidx + 128] = frag[0]


@correct("barrier_under_register_argument", "sm_90a", "frag[0] = n (a kernel argument kept in registers), then `if frag[0] > 0`: sync_threads()")
@cute.kernel
def _barrier_under_register_argument(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    frag = cute.make_rmem_tensor((2,), Int32)
    frag[0] = n
    frag[1] = tidx
    if frag[0] > 0:
        cute.arch.sync_threads()
    dst[tidx] = Float32(frag[1])


@planted("ldmatrix_under_register_predicate", "sm_90a", "cute.copy", "ldmatrix under a predicate kept in a register tensor: pred[0] = lane < 16")
@cute.kernel
def _ldmatrix_under_register_predicate(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    mma, s2r, tsA, trA_view, trA, trB, acc = _warp_mma_operands(tidx)
    pred = cute.make_rmem_tensor((1,), cutlass.Boolean)
    pred[0] = lane < 16
    if pred[0]:  # <- diverges
        cute.copy(s2r, tsA, trA_view)  # <- collective
    cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)
    dst[tidx] = acc[0]


@correct("ldmatrix_under_register_warp_predicate", "sm_90a", "ldmatrix under a register predicate pred[0] = warp_idx < 2: whole warps")
@cute.kernel
def _ldmatrix_under_register_warp_predicate(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    mma, s2r, tsA, trA_view, trA, trB, acc = _warp_mma_operands(tidx)
    pred = cute.make_rmem_tensor((1,), cutlass.Boolean)
    pred[0] = warp_idx < 2
    if pred[0]:
        cute.copy(s2r, tsA, trA_view)
        cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)
    dst[tidx] = acc[0]


# ======================================================================================
# Member masks written as inline-PTX operands
# ======================================================================================


@correct("redux_inline_mask_of_its_lanes", "sm_90a", "inline redux.sync with mask operand 0x0000FFFF under lane < 16: the lanes that reach it")
@cute.kernel
def _redux_inline_mask_of_its_lanes(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    total = Int32(0)
    if lane < 16:
        total = _redux_add(tidx, Int32(0x0000FFFF))
    dst[tidx] = Float32(total)


@planted("redux_inline_full_mask_under_half", "sm_90a", "llvm.inline_asm", "inline redux.sync with a full mask operand under lane < 16")
@cute.kernel
def _redux_inline_full_mask_under_half(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    total = Int32(0)
    if lane < 16:  # <- diverges
        total = _redux_add(tidx, Int32(-1))  # <- collective
    dst[tidx] = Float32(total)


# ======================================================================================
# Counted barriers: the count against the warps that can reach the id, across its sites
# ======================================================================================


@planted("named_barrier_two_sites_short", "sm_90a", "nvvm.barrier", "barrier(1, 128) at two sites, warp 0 at one and warp 1 at the other: 64 threads ever arrive")
@cute.kernel
def _named_barrier_two_sites_short(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    dst[tidx] = Float32(tidx)
    if warp_idx == 0:  # <- diverges
        cute.arch.barrier(barrier_id=1, number_of_threads=128)  # <- collective
    elif warp_idx == 1:
        cute.arch.barrier(barrier_id=1, number_of_threads=128)
    dst[tidx + 128] = Float32(warp_idx)


@correct("named_barrier_two_sites_full", "sm_90a", "barrier(1, 128) at two sites, warps 0-1 at one, warps 2-3 at the other: 128 threads, the count; CuTeDSL's TmemAllocator does the same (GPUs count a named barrier by warp; unwatched, the H200 runs it to the end). PTX .aligned leaves one phase at two bar.sync instructions undefined and synccheck reports it (\"Divergent thread(s) in block\", H200 and H100): check-collectives{pedantic=true} reports it")
@cute.kernel
def _named_barrier_two_sites_full(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    dst[tidx] = Float32(tidx)
    if warp_idx < 2:  # <- diverges
        cute.arch.barrier(barrier_id=1, number_of_threads=128)  # <- collective
    else:
        cute.arch.barrier(barrier_id=1, number_of_threads=128)
    dst[tidx + 128] = Float32(warp_idx)


@correct("named_barrier_tmem_alloc_shape", "sm_90a", "barrier(2, 160): warp 4 at one site, warps 0-3 at another, warp 5 never: CuTeDSL's TmemAllocator shape (the MMA warp and the epilogue warps); synccheck reports it (\"Divergent thread(s) in block\", H100): pedantic=true reports it", block=192)
@cute.kernel
def _named_barrier_tmem_alloc_shape(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    dst[tidx] = Float32(tidx)
    if warp_idx == 4:
        cute.arch.barrier(barrier_id=2, number_of_threads=160)
        dst[tidx + 256] = Float32(1)
    elif warp_idx < 4:
        dst[tidx + 512] = Float32(2)
        cute.arch.barrier(barrier_id=2, number_of_threads=160)
    dst[tidx + 768] = Float32(warp_idx)


@planted("named_barrier_two_sites_split_in_warp", "sm_90a", "nvvm.barrier", "barrier(1, 128) at two sites, lanes 0-15 of every warp at one and lanes 16-31 at the other (synccheck, H100: \"Divergent thread(s) in warp\")")
@cute.kernel
def _named_barrier_two_sites_split_in_warp(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    dst[tidx] = Float32(tidx)
    if lane < 16:  # <- diverges
        cute.arch.barrier(barrier_id=1, number_of_threads=128)  # <- collective
    else:
        cute.arch.barrier(barrier_id=1, number_of_threads=128)
    dst[tidx + 128] = Float32(lane)


@cute.jit
def _sync_pair():
    """barrier(1, 64) in a helper: every call site traces one more bar.sync at this line."""
    cute.arch.barrier(barrier_id=1, number_of_threads=64)


@correct("named_barrier_helper_twice_in_turn", "sm_90a", "warps 0-1 call a barrier(1, 64) helper twice, one call after the other: one source line, two bar.sync instructions, each phase at one of them")
@cute.kernel
def _named_barrier_helper_twice_in_turn(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx < 2:
        dst[tidx] = Float32(tidx)
        _sync_pair()
        dst[tidx + 128] = dst[63 - tidx]
        _sync_pair()
        dst[tidx] = dst[tidx + 128] + Float32(1.0)


@correct("named_barrier_in_loop_and_after", "sm_90a", "warps 0-1 sync on barrier(1, 64) in every iteration of an n-trip loop and once after it: the same threads, phase after phase")
@cute.kernel
def _named_barrier_in_loop_and_after(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx < 2:
        for i in cutlass.range(n):
            dst[tidx] = dst[tidx] + Float32(1.0)
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
        dst[tidx + 128] = dst[63 - tidx]


@planted("arrive_and_sync_short", "sm_90a", "nvvm.barrier.arrive", "warp 0 bar.arrive(1, 128), warps 1-2 bar.sync(1, 128), warp 3 neither: 96 of 128")
@cute.kernel
def _arrive_and_sync_short(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 0:  # <- diverges
        dst[tidx] = Float32(tidx)
        cute.arch.barrier_arrive(barrier_id=1, number_of_threads=128)  # <- collective
    elif warp_idx < 3:
        cute.arch.barrier(barrier_id=1, number_of_threads=128)
        dst[tidx] = dst[tidx - 32] + Float32(1.0)


@correct("arrive_and_sync_per_warpgroup", "sm_90a", "warpgroup 0 bar.arrive(1, 256), warpgroup 1 bar.sync(1, 256): 128 + 128", block=256)
@cute.kernel
def _arrive_and_sync_per_warpgroup(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_group_idx = cute.arch.make_warp_uniform(tidx // 128)
    if warp_group_idx == 0:
        dst[tidx] = Float32(tidx)
        cute.arch.barrier_arrive(barrier_id=1, number_of_threads=256)
    else:
        cute.arch.barrier(barrier_id=1, number_of_threads=256)
        dst[tidx] = dst[tidx - 128] + Float32(1.0)


@planted("named_barrier_counts_differ", "sm_90a", "nvvm.barrier", "barrier 1 with 64 threads at one site and 128 at the other")
@cute.kernel
def _named_barrier_counts_differ(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    dst[tidx] = Float32(tidx)
    if warp_idx < 2:
        cute.arch.barrier(barrier_id=1, number_of_threads=64)  # <- collective
    else:
        cute.arch.barrier(barrier_id=1, number_of_threads=128)
    dst[tidx + 128] = Float32(warp_idx)


# More threads than the count (PTX ISA: a barrier completes at b arrivals and is reinitialized
# at once, so later arrivals open the next phase; a round of arrivals that is not a whole
# number of phases leaves its last threads waiting for a phase that never fills)


@planted("named_barrier_over_count", "sm_90a", "nvvm.barrier", "barrier(1, 96) reached by all 4 warps: 96 complete a phase, the last warp waits for 64 more that never come")
@cute.kernel
def _named_barrier_over_count(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    dst[tidx] = Float32(tidx)
    cute.arch.barrier(barrier_id=1, number_of_threads=96)  # <- collective
    dst[tidx + 128] = dst[127 - tidx]


@planted("arrive_and_sync_over_count", "sm_90a", "nvvm.barrier.arrive", "warp 0 bar.arrive(1, 96), warps 1-3 bar.sync(1, 96) after n steps of work: 128 arrive, the last sync warp waits for a second phase that never fills")
@cute.kernel
def _arrive_and_sync_over_count(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 0:  # <- diverges
        dst[tidx] = Float32(tidx)
        cute.arch.barrier_arrive(barrier_id=1, number_of_threads=96)  # <- collective
    else:
        acc = dst[tidx]
        for i in cutlass.range(n * 100):  # the producer's arrive comes first: the leftover warp is a syncing one
            acc = acc * Float32(0.5) + Float32(1.0)
        dst[tidx] = acc
        cute.arch.barrier(barrier_id=1, number_of_threads=96)
        dst[tidx + 128] = dst[tidx - 32]


@correct("arrive_and_sync_after_warp_exit_counted", "sm_90a", "warp 3 exits, warp 0 bar.arrive(1, 96), warps 1-2 bar.sync(1, 96): the 96 threads left, one phase")
@cute.kernel
def _arrive_and_sync_after_warp_exit_counted(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 3:
        _exit()
    if warp_idx == 0:
        dst[tidx] = Float32(tidx)
        cute.arch.barrier_arrive(barrier_id=1, number_of_threads=96)
    else:
        cute.arch.barrier(barrier_id=1, number_of_threads=96)
        dst[tidx + 128] = dst[tidx - 32]


# ======================================================================================
# Warpgroup scope: setmaxnreg by all warps of a warpgroup
# ======================================================================================


@planted("setmaxnreg_by_one_warp", "sm_90a", "nvvm.setmaxregister", "setmaxregister_decrease(40) by warp 0 only: warps 1-3 of its warpgroup never run it")
@cute.kernel
def _setmaxnreg_by_one_warp(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 0:  # <- diverges
        cute.arch.setmaxregister_decrease(40)  # <- collective
    dst[tidx] = Float32(tidx)


@correct("setmaxnreg_per_warp_same_count", "sm_90a", "warp 0 and warps 1-3 each run setmaxregister_decrease(40) at their own site (FA4's shape): the whole warpgroup", block=256)
@cute.kernel
def _setmaxnreg_per_warp_same_count(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 0:
        cute.arch.setmaxregister_decrease(40)
        dst[tidx] = Float32(1.0)
    elif warp_idx < 4:
        cute.arch.setmaxregister_decrease(40)
        dst[tidx] = Float32(2.0)
    else:
        cute.arch.setmaxregister_increase(232)
        dst[tidx] = Float32(3.0)


@planted("setmaxnreg_counts_differ_in_warpgroup", "sm_90a", "nvvm.setmaxregister", "warps 0-1 decrease to 40, warps 2-3 to 56: not the same setmaxnreg in one warpgroup")
@cute.kernel
def _setmaxnreg_counts_differ_in_warpgroup(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx < 2:  # <- diverges
        cute.arch.setmaxregister_decrease(40)  # <- collective
    else:
        cute.arch.setmaxregister_decrease(56)
    dst[tidx] = Float32(tidx)


# ======================================================================================
# Cluster scope: barrier.cluster.arrive by every CTA of the cluster
# ======================================================================================


FLAG = 4095  # dst's last element: the leader CTA's "I passed cluster_wait" flag (dst starts zeroed)


@dsl_user_op
def _load_volatile(address, *, loc=None, ip=None) -> Int32:
    """ld.volatile.u32 (generic address): a load the compiler neither hoists out of a spin loop nor caches."""
    return Int32(
        llvm.inline_asm(
            T.i32(), [cutlass.Int64(address).ir_value(loc=loc, ip=ip)], "ld.volatile.u32 $0, [$1];", "=r,l",
            has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip,
        )
    )  # fmt: skip


@dsl_user_op
def _store_volatile(address, value: Int32, *, loc=None, ip=None) -> None:
    llvm.inline_asm(
        None, [cutlass.Int64(address).ir_value(loc=loc, ip=ip), Int32(value).ir_value(loc=loc, ip=ip)],
        "st.volatile.u32 [$0], $1;", "l,r",
        has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip,
    )  # fmt: skip


@cute.jit
def _others_wait_for_the_leader(dst: cute.Tensor, rank: Int32, tidx: Int32):
    """After cluster_wait: the leader CTA (rank 0) sets FLAG, the other CTAs spin, alive, until
    they see it. Why: on the H200 a CTA that skipped the arrive passed its own cluster_wait and
    exited, and an exited thread releases the cluster barrier (PTX ISA, exit: "If the exiting
    threads are holding up the barrier, the barrier is released"), so the leader's wait
    completed and the planted bug ran clean. A CTA of a real kernel stays alive after the
    cluster barrier (it consumes what the leader multicasts); this one does too."""
    address = (dst.iterator + FLAG).toint()
    if rank == 0:
        if tidx == 0:
            _store_volatile(address, Int32(1))
    else:
        seen = _load_volatile(address)
        while seen == 0:
            seen = _load_volatile(address)


@planted("cluster_arrive_by_leader_cta", "sm_90a", "nvvm.cluster.arrive", "cluster_arrive() only `if block_idx_in_cluster() == 0`, every CTA waits, and the other CTA stays alive until the leader passes its wait: the leader waits forever", cluster=2)
@cute.kernel
def _cluster_arrive_by_leader_cta(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    rank = cute.arch.block_idx_in_cluster()
    dst[bidx * 128 + tidx] = Float32(rank)
    if rank == 0:  # <- diverges
        cute.arch.cluster_arrive()  # <- collective
    cute.arch.cluster_wait()
    _others_wait_for_the_leader(dst, rank, tidx)


@correct("cluster_arrive_by_every_cta_leader_flag", "sm_90a", "every CTA arrives and waits, then the other CTA waits, alive, for the leader's flag (the planted leader-only case's control: the flag alone does not hang)", cluster=2)
@cute.kernel
def _cluster_arrive_by_every_cta_leader_flag(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    rank = cute.arch.block_idx_in_cluster()
    dst[bidx * 128 + tidx] = Float32(rank)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    _others_wait_for_the_leader(dst, rank, tidx)


@correct("cluster_arrive_by_every_cta", "sm_90a", "cluster_arrive() and cluster_wait() in every thread of every CTA", cluster=2)
@cute.kernel
def _cluster_arrive_by_every_cta(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    rank = cute.arch.block_idx_in_cluster()
    dst[bidx * 128 + tidx] = Float32(rank)
    cute.arch.cluster_arrive_relaxed()
    cute.arch.cluster_wait()


@correct("cluster_arrive_in_both_branches", "sm_90a", "the leader CTA and the others arrive at their own sites: every CTA arrives", cluster=2)
@cute.kernel
def _cluster_arrive_in_both_branches(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    rank = cute.arch.block_idx_in_cluster()
    if rank == 0:
        dst[bidx * 128 + tidx] = Float32(1.0)
        cute.arch.cluster_arrive()
    else:
        dst[bidx * 128 + tidx] = Float32(2.0)
        cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@planted("cluster_arrive_by_even_blocks", "sm_90a", "nvvm.cluster.arrive", "cluster_arrive() under `bidx % 2 == 0`: CTA-uniform, but the odd CTA of each cluster skips it", cluster=2)
@cute.kernel
def _cluster_arrive_by_even_blocks(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    dst[bidx * 128 + tidx] = Float32(tidx)
    if bidx % 2 == 0:  # <- diverges
        cute.arch.cluster_arrive()  # <- collective
    cute.arch.cluster_wait()


# ======================================================================================
# Exits: what each collective requires of threads that executed `exit` (PTX ISA)
# ======================================================================================


@correct("vote_after_lane_exit", "sm_90a", "lanes 16-31 exit, then vote_any_sync (full mask): vote.sync waits for the non-exited lanes of its mask")
@cute.kernel
def _vote_after_lane_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    if lane >= 16:
        _exit()
    ok = cute.arch.vote_any_sync(tidx < 8)
    dst[tidx] = Float32(Int32(ok))


@correct("barrier_after_warp_exit", "sm_90a", "warp 3 exits, then sync_threads(): exited threads release a barrier for all the CTA")
@cute.kernel
def _barrier_after_warp_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 3:
        _exit()
    dst[tidx] = Float32(tidx)
    cute.arch.sync_threads()
    dst[tidx + 128] = dst[(tidx + 32) % 96]


@correct("barrier_after_thread_exit_ptx", "sm_90a", "threads 100-127 exit, then sync_threads(): the PTX ISA's exit releases the barrier (part of a warp too)")
@cute.kernel
def _barrier_after_thread_exit_ptx(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx >= 100:
        _exit()
    dst[tidx] = Float32(tidx)
    cute.arch.sync_threads()
    dst[tidx + 128] = dst[99 - tidx]


@planted("shfl_after_lane_exit", "sm_90a", "nvvm.shfl.sync", "lanes 16-31 exit, then a full-mask butterfly shuffle reads them")
@cute.kernel
def _shfl_after_lane_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    if lane >= 16:  # <- diverges
        _exit()
    value = cute.arch.shuffle_sync_bfly(Float32(tidx), 16)  # <- collective
    dst[tidx] = value


@correct("redux_after_lane_exit", "sm_90a", "lanes 16-31 exit, then warp_redux_sync (full mask): redux.sync waits for the non-exited lanes")
@cute.kernel
def _redux_after_lane_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    if lane >= 16:
        _exit()
    total = cute.arch.warp_redux_sync(tidx, "add")
    dst[tidx] = Float32(total)


@planted("warp_sync_after_lane_exit", "sm_90a", "nvvm.bar.warp.sync", "lanes 16-31 exit, then sync_warp() (full mask): the PTX ISA's bar.warp.sync waits for all threads of its mask, not the non-exited ones")
@cute.kernel
def _warp_sync_after_lane_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    if lane >= 16:  # <- diverges
        _exit()
    dst[tidx] = Float32(tidx)
    cute.arch.sync_warp()  # <- collective
    dst[tidx + 128] = dst[tidx ^ 1]


@correct("warp_sync_masked_after_lane_exit", "sm_90a", "lanes 16-31 exit, then sync_warp(mask=0x0000ffff): the mask names the lanes left")
@cute.kernel
def _warp_sync_masked_after_lane_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    if lane >= 16:
        _exit()
    dst[tidx] = Float32(tidx)
    cute.arch.sync_warp(mask=0x0000FFFF)
    dst[tidx + 128] = dst[tidx ^ 1]


@planted("elect_after_lane_exit", "sm_90a", "nvvm.elect.sync", "lanes 16-31 exit, then elect_one() (elect.sync, full mask): it waits for all threads in the membermask")
@cute.kernel
def _elect_after_lane_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    storage = SmemAllocator().allocate(_Barriers)
    if lane >= 16:  # <- diverges
        _exit()
    with cute.arch.elect_one():  # <- collective
        cute.arch.mbarrier_init(storage.full.data_ptr(), 1)
    cute.arch.mbarrier_init_fence()
    dst[tidx] = Float32(tidx)


@planted("ldmatrix_after_lane_exit", "sm_90a", "cute.copy", "lanes 16-31 exit, then ldmatrix (.sync.aligned: all 32 lanes)")
@cute.kernel
def _ldmatrix_after_lane_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    mma, s2r, tsA, trA_view, trA, trB, acc = _warp_mma_operands(tidx)
    if lane >= 16:  # <- diverges
        _exit()
    cute.copy(s2r, tsA, trA_view)  # <- collective
    cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)
    dst[tidx] = acc[0]


@planted("named_barrier_after_warp_exit_short", "sm_90a", "nvvm.barrier", "warp 3 exits, then barrier(1, 128): 96 threads arrive, the count is 128")
@cute.kernel
def _named_barrier_after_warp_exit_short(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 3:  # <- diverges
        _exit()
    dst[tidx] = Float32(tidx)
    cute.arch.barrier(barrier_id=1, number_of_threads=128)  # <- collective
    dst[tidx + 128] = Float32(warp_idx)


@correct("named_barrier_after_warp_exit_counted", "sm_90a", "warp 3 exits, then barrier(1, 96): the 96 threads left")
@cute.kernel
def _named_barrier_after_warp_exit_counted(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 3:
        _exit()
    dst[tidx] = Float32(tidx)
    cute.arch.barrier(barrier_id=1, number_of_threads=96)
    dst[tidx + 128] = Float32(warp_idx)


# ======================================================================================
# Constant conditions (issue 38): a Python `if` on a closure constant
# ======================================================================================


@correct("shfl_under_false_constant", "sm_90a", "`if NEVER:` (a closure constant False) around a half-warp shuffle: dead code")
@cute.kernel
def _shfl_under_false_constant(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    value = Float32(tidx)
    if cutlass.Boolean(NEVER):
        if lane < 16:
            value = cute.arch.shuffle_sync_bfly(value, 1)
    dst[tidx] = value


@planted("shfl_under_true_constant_then_lane", "sm_90a", "nvvm.shfl.sync", "`if ALWAYS:` then `if lane < 16:` a shuffle: the lane test diverges, not the constant")
@cute.kernel
def _shfl_under_true_constant_then_lane(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    value = Float32(tidx)
    if cutlass.Boolean(ALWAYS):
        if lane < 16:  # <- diverges
            value = cute.arch.shuffle_sync_bfly(value, 1)  # <- collective
    dst[tidx] = value


# ======================================================================================
# Collectives new to the table: FP8 mma.sync; TMEM after exits; tcgen05.cp
# ======================================================================================

FP8_M, FP8_K = 64, 32


@cute.struct
class _Fp8Tiles:
    a: cute.struct.Align[cute.struct.MemRange[cutlass.Float8E4M3FN, FP8_M * FP8_K], 128]
    b: cute.struct.Align[cute.struct.MemRange[cutlass.Float8E4M3FN, 8 * FP8_K], 128]


@cute.jit
def _fp8_mma_operands(tidx: Int32):
    """A 64x8x32 e4m3 warp MMA (mma.sync.aligned, sm_89+), four warps, operands copied from smem."""
    storage = SmemAllocator().allocate(_Fp8Tiles)
    sA = storage.a.get_tensor(cute.make_layout((FP8_M, FP8_K), stride=(FP8_K, 1)))
    sB = storage.b.get_tensor(cute.make_layout((8, FP8_K), stride=(FP8_K, 1)))
    mma = cute.make_tiled_mma(warp.MmaFP8Op(cutlass.Float8E4M3FN, Float32, (16, 8, 32)), (4, 1, 1))
    thr_mma = mma.get_slice(tidx)
    trA = thr_mma.make_fragment_A(thr_mma.partition_A(sA))
    trB = thr_mma.make_fragment_B(thr_mma.partition_B(sB))
    cute.autovec_copy(thr_mma.partition_A(sA), trA)
    cute.autovec_copy(thr_mma.partition_B(sB), trB)
    acc = cute.make_rmem_tensor(thr_mma.partition_shape_C((FP8_M, 8)), Float32)
    acc.fill(0.0)
    return mma, trA, trB, acc


@planted("mma_fp8_under_lane_guard", "sm_90a", "cute.gemm", "an e4m3 warp MMA (mma.sync.aligned) only in lanes whose row is in range")
@cute.kernel
def _mma_fp8_under_lane_guard(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    mma, trA, trB, acc = _fp8_mma_operands(tidx)
    if lane // 4 < n:  # <- diverges
        cute.gemm(mma, acc, trA, trB, acc)  # <- collective
    dst[tidx] = acc[0]


@correct("mma_fp8_under_warp_guard", "sm_90a", "the e4m3 warp MMA under `warp_idx < n`: whole warps")
@cute.kernel
def _mma_fp8_under_warp_guard(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    mma, trA, trB, acc = _fp8_mma_operands(tidx)
    if warp_idx < n:
        cute.gemm(mma, acc, trA, trB, acc)
    dst[tidx] = acc[0]


@planted("tmem_ld_after_lane_exit", "sm_100a", "cute.copy", "lanes 16-31 exit, then tcgen05.ld (.sync.aligned: all 32 lanes)")
@cute.kernel
def _tmem_ld_after_lane_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, _TMEM_VIEWS_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr, dst)
    if lane >= 16:  # <- diverges
        _exit()
    cute.copy(load, tmem_src, registers)  # <- collective
    cute.autovec_copy(registers, gmem_dst)
    _free_by_warp0(warp_idx, tmem_ptr, _TMEM_VIEWS_COLUMNS)


@correct("tmem_ld_after_warp_exit", "sm_100a", "warp 3 exits (whole), then warps 0-2 tcgen05.ld their lanes")
@cute.kernel
def _tmem_ld_after_warp_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, _TMEM_VIEWS_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr, dst)
    if warp_idx == 3:
        _exit()
    cute.copy(load, tmem_src, registers)
    cute.autovec_copy(registers, gmem_dst)
    _free_by_warp0(warp_idx, tmem_ptr, _TMEM_VIEWS_COLUMNS)


@planted("tmem_ld_under_register_predicate", "sm_100a", "cute.copy", "tcgen05.ld under a predicate kept in a register tensor: pred[0] = lane < 16")
@cute.kernel
def _tmem_ld_under_register_predicate(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, _TMEM_VIEWS_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr, dst)
    pred = cute.make_rmem_tensor((1,), cutlass.Boolean)
    pred[0] = lane < 16
    if pred[0]:  # <- diverges
        cute.copy(load, tmem_src, registers)  # <- collective
    cute.autovec_copy(registers, gmem_dst)
    _free_by_warp0(warp_idx, tmem_ptr, _TMEM_VIEWS_COLUMNS)


@cute.struct
class _S2TTile:
    a: cute.struct.Align[cute.struct.MemRange[Float32, 128 * 8], 1024]


@cute.jit
def _s2t_copy_views(tmem_ptr):
    """A 128-lane x 256-bit SMEM-to-TMEM copy (tcgen05.cp.128x256b): CuTe lowers each such copy
    to its own elect.sync + tcgen05.cp."""
    tile = SmemAllocator().allocate(_S2TTile)
    tmem = cute.make_tensor(tmem_ptr, cute.make_layout((128, 8), stride=(65536, 1)))
    smem = tile.a.get_tensor(cute.make_layout(((8, 16), (4, 2)), stride=((4, 32), (1, 512))))
    s2t = tcgen05.make_s2t_copy(cute.make_copy_atom(tcgen05.Cp128x256bOp(tcgen05.CtaGroup.ONE), Float32), tmem)
    thr = s2t.get_slice(0)
    return s2t, tcgen05.get_s2t_smem_desc_tensor(s2t, thr.partition_S(smem)), thr.partition_D(tmem)


@planted("tcgen05_cp_under_elect_one", "sm_100a", "cute.copy", "an S2T copy (its own elect.sync + tcgen05.cp) inside elect_one(): the inner elect.sync runs in one lane")
@cute.kernel
def _tcgen05_cp_under_elect_one(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, _TMEM_VIEWS_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    s2t, src, tmem = _s2t_copy_views(tmem_ptr)
    if warp_idx == 0:
        with cute.arch.elect_one():  # <- diverges
            cute.copy(s2t, src, tmem)  # <- collective
    dst[tidx] = Float32(tidx)
    _free_by_warp0(warp_idx, tmem_ptr, _TMEM_VIEWS_COLUMNS)


@correct("tcgen05_cp_by_warp0", "sm_100a", "the S2T copy by the whole of warp 0 (CuTe elects the issuing lane itself)")
@cute.kernel
def _tcgen05_cp_by_warp0(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, _TMEM_VIEWS_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    s2t, src, tmem = _s2t_copy_views(tmem_ptr)
    if warp_idx == 0:
        cute.copy(s2t, src, tmem)
    dst[tidx] = Float32(tidx)
    _free_by_warp0(warp_idx, tmem_ptr, _TMEM_VIEWS_COLUMNS)


@planted("wgmma_after_lane_exit", "sm_90a", "cute.gemm", "lanes 16-31 exit, then the warpgroup's wgmma (.sync.aligned)")
@cute.kernel
def _wgmma_after_lane_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    mma, trA, trB, acc = _wgmma_operands(tidx)
    acc.fill(0.0)
    if lane >= 16:  # <- diverges
        _exit()
    warpgroup.fence()
    cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)  # <- collective
    warpgroup.commit_group()
    warpgroup.wait_group(0)
    dst[tidx] = acc[0]


@dsl_user_op
def _ballot_low_half(flag: Int32, *, loc=None, ip=None) -> Int32:
    """vote.sync.ballot with the literal member mask 0x0000ffff written into the PTX."""
    return Int32(
        llvm.inline_asm(
            T.i32(), [Int32(flag).ir_value(loc=loc, ip=ip)],
            "{ .reg .pred p; setp.ne.s32 p, $1, 0; vote.sync.ballot.b32 $0, p, 0x0000ffff; }", "=r,r",
            has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip,
        )
    )  # fmt: skip


@correct("vote_inline_literal_mask_of_its_lanes", "sm_90a", "inline vote.sync.ballot with the literal mask 0x0000ffff under lane < 16")
@cute.kernel
def _vote_inline_literal_mask_of_its_lanes(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    ballot = Int32(0)
    if lane < 16:
        ballot = _ballot_low_half(Int32(tidx % 3 == 0))
    dst[tidx] = Float32(ballot)


@correct("named_barrier_one_id_two_phases", "sm_90a", "warps 0-1 sync on barrier(1, 64) at two sites, one after the other: 64 each time")
@cute.kernel
def _named_barrier_one_id_two_phases(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx < 2:
        dst[tidx] = Float32(tidx)
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
        dst[tidx + 128] = dst[63 - tidx]
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
        dst[tidx] = dst[tidx + 128] + Float32(1.0)


@correct("shfl_under_repeated_warp_test", "sm_90a", "bound = n under `if any_positive:` (a warp vote), read only under the same test: the mainloop trip count is n there")
@cute.kernel
def _shfl_under_repeated_warp_test(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    any_positive = cute.arch.vote_any_sync(dst[tidx] > Float32(0.0))
    bound = Int32(0)
    if any_positive:
        bound = n
    else:
        bound = lane
    value = Float32(tidx)
    if any_positive:
        for i in cutlass.range(bound):
            value = value + cute.arch.shuffle_sync_bfly(value, 1)
    dst[tidx] = value


@cute.jit
def _tmem_halves(tidx: Int32, tmem_ptr, dst: cute.Tensor):
    """Two 32-column accumulators side by side in TMEM (64 columns), each read by its own
    tcgen05.ld.32x32b.x32 (the corpus' `_tmem_views`, at column 0 and at column 32)."""
    load0, _, src0, _, registers, _ = _tmem_views(tidx, tmem_ptr, dst)
    load1, _, src1, _, _, _ = _tmem_views(tidx, tmem_ptr + _TMEM_VIEWS_COLUMNS, dst)
    return (load0, load1), (src0, src1), registers


@planted("tmem_ld_column_half_by_lane_parity", "sm_100a", "cute.copy", "each lane picks its 32-column half of TMEM by its parity: two half-warp tcgen05.ld")
@cute.kernel
def _tmem_ld_column_half_by_lane_parity(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, 2 * _TMEM_VIEWS_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    loads, sources, registers = _tmem_halves(tidx, tmem_ptr, dst)
    if lane % 2 == 0:  # <- diverges
        cute.copy(loads[0], sources[0], registers)  # <- collective
    else:
        cute.copy(loads[1], sources[1], registers)
    dst[tidx] = registers[0]
    _free_by_warp0(warp_idx, tmem_ptr, 2 * _TMEM_VIEWS_COLUMNS)


@correct("tmem_ld_both_halves_then_pick", "sm_100a", "every lane loads both 32-column halves (two warp-wide tcgen05.ld), then picks by its parity from registers")
@cute.kernel
def _tmem_ld_both_halves_then_pick(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, 2 * _TMEM_VIEWS_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    loads, sources, registers = _tmem_halves(tidx, tmem_ptr, dst)
    other = cute.make_rmem_tensor(registers.shape, Float32)
    cute.copy(loads[0], sources[0], registers)
    cute.copy(loads[1], sources[1], other)
    value = registers[0]
    if lane % 2 == 1:
        value = other[0]
    dst[tidx] = value
    _free_by_warp0(warp_idx, tmem_ptr, 2 * _TMEM_VIEWS_COLUMNS)


@planted("tmem_ld_address_by_lane_parity", "sm_100a", "cute.copy", "the TMEM accumulator's column base picked by lane parity (tmem_ptr + (lane % 2) * 32): one tcgen05.ld, two addresses in a warp")
@cute.kernel
def _tmem_ld_address_by_lane_parity(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, 2 * _TMEM_VIEWS_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr + (lane % 2) * _TMEM_VIEWS_COLUMNS, dst)
    cute.copy(load, tmem_src, registers)  # <- collective
    cute.autovec_copy(registers, gmem_dst)
    _free_by_warp0(warp_idx, tmem_ptr, 2 * _TMEM_VIEWS_COLUMNS)


@correct("tmem_ld_address_by_warp_parity", "sm_100a", "the column base picked by warp parity (tmem_ptr + (warp_idx % 2) * 32): one address per warp")
@cute.kernel
def _tmem_ld_address_by_warp_parity(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, 2 * _TMEM_VIEWS_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr + (warp_idx % 2) * _TMEM_VIEWS_COLUMNS, dst)
    cute.copy(load, tmem_src, registers)
    cute.autovec_copy(registers, gmem_dst)
    _free_by_warp0(warp_idx, tmem_ptr, 2 * _TMEM_VIEWS_COLUMNS)
