"""A corpus for `check-collectives`: small CuTeDSL kernels with a divergent warp/CTA collective
planted in them, and correct kernels that sit close to them.

Every kernel compiles WITHOUT the check (CuTeDSL 4.8.1 lets each bug through; the GPU
then hangs, or computes garbage); `check-collectives` must flag each planted one and
stay quiet on each correct one. The expectation sits next to each kernel and was
written from its source, never from the pass's output:

- `expect="error"`, `op=` the IR op the collective lowers to (read from the traced IR
  of the call on the marked line), the line marked `# <- collective`, and the line of
  the condition that makes it diverge marked `# <- diverges` (the `if`/`for`/`while`
  whose predicate or bounds differ between the threads the collective needs; for the
  alloc-without-dealloc case, the branch that skips the dealloc). The TMEM rule cases
  (nCols, the dealloc address) have no diverging condition and mark none;
- `expect="warning"`: the collective sits under a condition read from memory; the issue
  asks for a "may diverge" warning there, never an error (same marks);
- `expect="ok"`: no error (warnings, "may diverge", are counted, not failed).

Each kernel takes `(dst, n)`: `dst` a 4096-float tensor it writes something to, `n` an
Int32 kernel argument (CTA-uniform: every thread of the grid sees the same value).
`sm_90a` kernels also run on an H200 (bench/collectives_synccheck.py runs the planted
ones under compute-sanitizer's synccheck); `sm_100a` kernels (TMEM, tcgen05) compile only.

Written the way a kernel author would write them: the bugs are the ones the issue
lists as seen in real kernels (a lane-strided TMEM loop, `if tidx == 0` around TMEM
ops, `sync_threads()` under `if tidx < 64`, ...).
"""

# no `from __future__ import annotations`: @cute.struct reads its fields' annotations as objects

import inspect
from dataclasses import dataclass
from typing import Callable

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90
from cutlass import Float32, Int32
from cutlass.cute.nvgpu import tcgen05, warp, warpgroup
from cutlass.cute.runtime import make_fake_compact_tensor

from cute_lowering.kernels.cutedsl_compat import LayoutEnum, SmemAllocator

DST_ELEMENTS = 4096
FULL_MASK = -1  # 0xFFFFFFFF as the Int32 CuTeDSL's wrappers take
COLLECTIVE_MARK = "# <- collective"
CONDITION_MARK = "# <- diverges"


@dataclass(frozen=True)
class Case:
    name: str
    arch: str  # the target it is compiled for: "sm_90a" (also runs on the H200) or "sm_100a"
    expect: str  # "error", "warning" (may diverge: data-dependent) or "ok"
    op: str | None  # the IR op the diagnostic must name (None for "ok")
    kernel: object  # the @cute.kernel
    block: int  # threads per CTA
    grid: int
    file: str
    collective_line: int | None  # absolute line numbers in `file`
    condition_line: int | None
    why: str  # one line: the bug, or why the near-miss is correct
    cluster: int = 1  # CTAs per cluster (the launch's cluster shape, along x)

    @property
    def runs_on_sm90(self) -> bool:
        return self.arch == "sm_90a"


CASES: dict[str, Case] = {}


def _marked_lines(fn) -> tuple[str, int | None, int | None]:
    """(file, line of `# <- collective`, line of `# <- diverges`) in fn's source."""
    fn = inspect.unwrap(fn)
    source, first = inspect.getsourcelines(fn)
    collective = [first + i for i, line in enumerate(source) if COLLECTIVE_MARK in line]
    condition = [first + i for i, line in enumerate(source) if CONDITION_MARK in line]
    if len(collective) > 1 or len(condition) > 1:
        raise ValueError(f"{fn.__name__}: mark one collective and one condition")
    return inspect.getsourcefile(fn), (collective or [None])[0], (condition or [None])[0]


def planted(name: str, arch: str, op: str, why: str, block: int = 128, grid: int = 2, cluster: int = 1):
    """Register a kernel whose marked collective diverges (expected: a located error)."""
    return _register(name, arch, "error", op, why, block, grid, cluster)


def data_dependent(name: str, arch: str, op: str, why: str, block: int = 128, grid: int = 2, cluster: int = 1):
    """Register a kernel whose collective sits under a condition read from memory: the
    issue asks for "may diverge", a warning, never an error (the analysis cannot know
    the values)."""
    return _register(name, arch, "warning", op, why, block, grid, cluster)


def correct(name: str, arch: str, why: str, block: int = 128, grid: int = 2, cluster: int = 1):
    """Register a near-miss: the same collective, reached by all the threads it needs."""
    return _register(name, arch, "ok", None, why, block, grid, cluster)


def _register(name, arch, expect, op, why, block, grid, cluster=1):
    def register(kernel):
        file, collective, condition = _marked_lines(kernel)  # @cute.kernel wraps with functools.wraps
        if expect != "ok" and collective is None:
            raise ValueError(f"{name}: a planted case marks its collective (and its condition, if one diverges)")
        if name in CASES:
            raise ValueError(f"{name} registered twice")
        CASES[name] = Case(name, arch, expect, op, kernel, block, grid, file, collective, condition, why, cluster)
        return kernel

    return register


def launcher(case: Case) -> Callable:
    """A @cute.jit that launches the case's kernel on (dst, n)."""
    kernel, grid, block, cluster = case.kernel, case.grid, case.block, case.cluster

    if cluster > 1:

        @cute.jit
        def launch_cluster(dst: cute.Tensor, n: Int32):
            kernel(dst, n).launch(grid=(grid, 1, 1), block=(block, 1, 1), cluster=(cluster, 1, 1))

        return launch_cluster

    @cute.jit
    def launch(dst: cute.Tensor, n: Int32):
        kernel(dst, n).launch(grid=(grid, 1, 1), block=(block, 1, 1))

    return launch


def fake_arguments() -> tuple:
    """Arguments to compile any case without a GPU."""
    return make_fake_compact_tensor(Float32, (DST_ELEMENTS,)), Int32(1)


def compile_case(case: Case, extra_options: str = ""):
    """cute.compile the case for its arch, with line info (the locations the check reports)."""
    options = f"--gpu-arch {case.arch} --generate-line-info {extra_options}".strip()
    return cute.compile(launcher(case), *fake_arguments(), options=options)


# ======================================================================================
# CTA barriers (bar.sync / barrier.sync): every thread of the CTA, or the named count
# ======================================================================================


@planted("barrier_under_tid_lt_64", "sm_90a", "nvvm.barrier", "sync_threads() reached by threads 0-63 of 128")
@cute.kernel
def _barrier_under_tid_lt_64(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    value = Float32(tidx)
    if tidx < 64:  # <- diverges
        dst[bidx * 128 + tidx] = value
        cute.arch.sync_threads()  # <- collective
    dst[bidx * 128 + 127 - tidx] = value


@correct("barrier_under_block_condition", "sm_90a", "sync_threads() under a block-index test: whole CTAs take it")
@cute.kernel
def _barrier_under_block_condition(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    if bidx < n:
        dst[bidx * 128 + tidx] = Float32(tidx)
        cute.arch.sync_threads()
    dst[bidx * 128 + 127 - tidx] = Float32(bidx)


@planted("barrier_under_warp0", "sm_90a", "nvvm.barrier", "cute.arch.barrier() (CTA scope) under warp_idx == 0: warp-uniform is not enough")
@cute.kernel
def _barrier_under_warp0(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 0:  # <- diverges
        dst[tidx] = Float32(1.0)
        cute.arch.barrier()  # <- collective
    dst[tidx + 128] = Float32(warp_idx)


@correct("barrier_under_kernel_argument", "sm_90a", "cute.arch.barrier() under `if n > 0`: a kernel argument is grid-uniform")
@cute.kernel
def _barrier_under_kernel_argument(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    for i in cutlass.range(n):
        dst[tidx] = Float32(i)
    if n > 0:
        cute.arch.barrier()
    dst[tidx + 128] = Float32(tidx)


@planted("barrier_under_warpgroup_branch", "sm_90a", "nvvm.barrier", "sync_threads() inside `if warp_group_idx == 0` of a 256-thread CTA", block=256)
@cute.kernel
def _barrier_under_warpgroup_branch(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_group_idx = cute.arch.make_warp_uniform(tidx // 128)
    if warp_group_idx == 0:  # <- diverges
        dst[tidx] = Float32(tidx)
        cute.arch.sync_threads()  # <- collective
        dst[tidx + 256] = Float32(tidx)


@correct("named_barrier_counts_its_warps", "sm_90a", "barrier(id=1, 64 threads) under warp_idx < 2: exactly the 64 threads that reach it")
@cute.kernel
def _named_barrier_counts_its_warps(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx < 2:
        dst[tidx] = Float32(tidx)
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
        dst[tidx + 128] = Float32(63 - tidx)


@planted("named_barrier_wrong_count", "sm_90a", "nvvm.barrier", "barrier(id=1, 128 threads) under warp_idx < 2: only 64 threads ever arrive")
@cute.kernel
def _named_barrier_wrong_count(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx < 2:  # <- diverges
        dst[tidx] = Float32(tidx)
        cute.arch.barrier(barrier_id=1, number_of_threads=128)  # <- collective
        dst[tidx + 128] = Float32(63 - tidx)


@correct("named_barrier_per_warpgroup", "sm_90a", "each warpgroup syncs on its own named barrier of 128 threads", block=256)
@cute.kernel
def _named_barrier_per_warpgroup(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_group_idx = cute.arch.make_warp_uniform(tidx // 128)
    dst[tidx] = Float32(tidx)
    cute.arch.barrier(barrier_id=1 + warp_group_idx, number_of_threads=128)
    dst[tidx + 256] = Float32(warp_group_idx)


@planted("barrier_after_thread_exit", "sm_90a", "nvvm.barrier", "`if i >= n: pass else:` (CuTeDSL has no early return) then sync_threads() in the else")
@cute.kernel
def _barrier_after_thread_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    if i >= n:  # <- diverges
        pass
    else:
        dst[i] = Float32(i)
        cute.arch.sync_threads()  # <- collective
        dst[i] = dst[i] + Float32(1.0)


@correct("barrier_after_block_exit", "sm_90a", "`if bidx * 128 >= n: pass else:` exits whole CTAs, so the barrier in the else is fine")
@cute.kernel
def _barrier_after_block_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    if bidx * 128 >= n:
        pass
    else:
        dst[bidx * 128 + tidx] = Float32(tidx)
        cute.arch.sync_threads()
        dst[bidx * 128 + tidx] = dst[bidx * 128 + 127 - tidx]


@data_dependent("barrier_under_loaded_value", "sm_90a", "nvvm.barrier", "sync_threads() under a value each thread loads from its own address")
@cute.kernel
def _barrier_under_loaded_value(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    mine = dst[tidx]
    if mine > Float32(0.0):  # <- diverges
        cute.arch.sync_threads()  # <- collective
    dst[tidx + 128] = mine


@correct("barrier_under_uniform_load", "sm_90a", "sync_threads() under a value every thread loads from the same address (may warn)")
@cute.kernel
def _barrier_under_uniform_load(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    flag = dst[bidx]
    if flag > Float32(0.0):
        cute.arch.sync_threads()
    dst[tidx + 128] = flag


# ======================================================================================
# Warp collectives (.sync with a member mask): shfl, vote, redux, match, bar.warp.sync, elect
# ======================================================================================


@planted("shfl_under_lane_lt_16", "sm_90a", "nvvm.shfl.sync", "shuffle_sync (full mask) under lane < 16")
@cute.kernel
def _shfl_under_lane_lt_16(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    value = Float32(tidx)
    if lane < 16:  # <- diverges
        value = value + cute.arch.shuffle_sync(value, lane + 16)  # <- collective
    dst[tidx] = value


@correct("shfl_masked_to_its_lanes", "sm_90a", "shuffle_sync under lane < 16 with mask 0x0000ffff: the mask names exactly the lanes that reach it")
@cute.kernel
def _shfl_masked_to_its_lanes(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    value = Float32(tidx)
    if lane < 16:
        value = value + cute.arch.shuffle_sync(value, 15 - lane, mask=0x0000FFFF)
    dst[tidx] = value


@correct("shfl_under_warp_condition", "sm_90a", "shuffle_sync (full mask) under warp_idx == 1: all 32 lanes of that warp take it")
@cute.kernel
def _shfl_under_warp_condition(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    value = Float32(tidx)
    if warp_idx == 1:
        value = cute.arch.warp_reduction_sum(value)
    dst[tidx] = value


@planted("shfl_under_tid_mod_32", "sm_90a", "nvvm.shfl.sync", "a butterfly shuffle under tidx % 32 < 8 (the lane computed by hand)")
@cute.kernel
def _shfl_under_tid_mod_32(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    value = Float32(tidx)
    if tidx % 32 < 8:  # <- diverges
        value = value + cute.arch.shuffle_sync_bfly(value, offset=1)  # <- collective
    dst[tidx] = value


@correct("shfl_under_tid_div_32", "sm_90a", "the same butterfly under tidx // 32 == 2 (the warp computed by hand)")
@cute.kernel
def _shfl_under_tid_div_32(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    value = Float32(tidx)
    if tidx // 32 == 2:
        value = value + cute.arch.shuffle_sync_bfly(value, offset=1)
    dst[tidx] = value


@planted("shfl_in_lane_strided_loop", "sm_90a", "nvvm.shfl.sync", "a shuffle in `for i in range(2 * lane, 48, 32)`: lanes 0-7 iterate twice, 8-23 once, 24-31 never")
@cute.kernel
def _shfl_in_lane_strided_loop(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    total = Float32(0.0)
    # (the start is computed on the `for` line, so the loop's line is in the IR: CuTeDSL
    # gives scf.for itself no location, only the ops that compute its bounds)
    for i in cutlass.range(2 * lane, 48, 32):  # <- diverges
        total = total + cute.arch.shuffle_sync_down(Float32(i), offset=1)  # <- collective
    dst[tidx] = total


@correct("shfl_in_uniform_loops", "sm_90a", "shuffles in loops whose bounds are a kernel argument and the warp index")
@cute.kernel
def _shfl_in_uniform_loops(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    total = Float32(tidx)
    for i in cutlass.range(n):
        total = total + cute.arch.shuffle_sync_down(total, offset=1)
    for w in cutlass.range(warp_idx, 8, 4):
        total = total + cute.arch.shuffle_sync_up(total, offset=1)
    dst[tidx] = total


@planted("shfl_in_lane_dependent_while", "sm_90a", "nvvm.shfl.sync", "a shuffle in a `while` whose condition depends on the lane")
@cute.kernel
def _shfl_in_lane_dependent_while(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    value = Float32(tidx)
    k = lane
    while k < 40:  # <- diverges
        value = value + cute.arch.shuffle_sync_bfly(value, offset=16)  # <- collective
        k = k + 32
    dst[tidx] = value


@correct("shfl_in_uniform_while", "sm_90a", "the same shuffle in a `while` counted by a kernel argument")
@cute.kernel
def _shfl_in_uniform_while(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    value = Float32(tidx)
    k = Int32(0)
    while k < n:
        value = value + cute.arch.shuffle_sync_bfly(value, offset=16)
        k = k + 1
    dst[tidx] = value


@planted("warp_reduce_after_thread_exit", "sm_90a", "nvvm.shfl.sync", "`if i >= n: pass else:` then a warp reduction: lanes past n are gone")
@cute.kernel
def _warp_reduce_after_thread_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    if i >= n:  # <- diverges
        pass
    else:
        dst[i] = cute.arch.shuffle_sync_bfly(dst[i], offset=4) + dst[i]  # <- collective


@correct("warp_reduce_predicated_not_exited", "sm_90a", "the bounds test guards only the load and the store; every lane reduces")
@cute.kernel
def _warp_reduce_predicated_not_exited(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    value = Float32(0.0)
    if i < n:
        value = dst[i]
    value = cute.arch.warp_reduction_sum(value)
    if i < n:
        dst[i] = value


@planted("vote_under_even_threads", "sm_90a", "nvvm.vote.sync", "vote_ballot_sync (full mask) under tidx % 2 == 0")
@cute.kernel
def _vote_under_even_threads(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    ballot = Int32(0)
    if tidx % 2 == 0:  # <- diverges
        ballot = cute.arch.vote_ballot_sync(tidx < n)  # <- collective
    dst[tidx] = Float32(ballot)


@correct("vote_under_warp_condition", "sm_90a", "vote_any_sync under a warp-index test")
@cute.kernel
def _vote_under_warp_condition(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    anyone = Float32(0.0)
    if warp_idx >= 2:
        if cute.arch.vote_any_sync(tidx < n):
            anyone = Float32(1.0)
    dst[tidx] = anyone


@planted("redux_under_lane_lt_16", "sm_90a", "nvvm.redux.sync", "warp_redux_sync (redux.sync, all lanes) under lane < 16")
@cute.kernel
def _redux_under_lane_lt_16(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    total = Int32(0)
    if lane < 16:  # <- diverges
        total = cute.arch.warp_redux_sync(tidx, "add")  # <- collective
    dst[tidx] = Float32(total)


@correct("redux_under_block_condition", "sm_90a", "warp_redux_sync under a block-index test")
@cute.kernel
def _redux_under_block_condition(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    total = Int32(0)
    if bidx == 0:
        total = cute.arch.warp_redux_sync(tidx, "max")
    dst[tidx] = Float32(total)


@planted("match_under_lane_ge_8", "sm_90a", "nvvm.match.sync", "match_sync with a full member mask under lane >= 8")
@cute.kernel
def _match_under_lane_ge_8(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    peers = cutlass.Uint32(0)
    if lane >= 8:  # <- diverges
        peers = cute.arch.match_sync(0xFFFFFFFF, tidx // 4)  # <- collective
    dst[tidx] = Float32(Int32(peers))


@correct("match_masked_to_its_lanes", "sm_90a", "match_sync under lane >= 8 with the mask 0xffffff00 of the lanes that reach it")
@cute.kernel
def _match_masked_to_its_lanes(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    peers = cutlass.Uint32(0)
    if lane >= 8:
        peers = cute.arch.match_sync(0xFFFFFF00, tidx // 4)
    dst[tidx] = Float32(Int32(peers))


@planted("warp_sync_under_lane_lt_16", "sm_90a", "nvvm.bar.warp.sync", "sync_warp() (full mask) under lane < 16")
@cute.kernel
def _warp_sync_under_lane_lt_16(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    if lane < 16:  # <- diverges
        dst[tidx] = Float32(lane)
        cute.arch.sync_warp()  # <- collective
    dst[tidx + 128] = Float32(tidx)


@correct("warp_sync_masked_to_its_lanes", "sm_90a", "sync_warp(mask=0x0000ffff) under lane < 16")
@cute.kernel
def _warp_sync_masked_to_its_lanes(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    if lane < 16:
        dst[tidx] = Float32(lane)
        cute.arch.sync_warp(mask=0x0000FFFF)
    dst[tidx + 128] = Float32(tidx)


@correct("warp_reduce_after_warp_exit", "sm_90a", "`if warp_idx >= n: pass else:` exits whole warps, so the warp reduction in the else is fine")
@cute.kernel
def _warp_reduce_after_warp_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx >= n:
        pass
    else:
        dst[tidx] = cute.arch.warp_reduction_max(dst[tidx])


@correct("producer_arrives_consumers_sync", "sm_90a", "warp 0 barrier_arrive(id=1, 128), warps 1-3 barrier(id=1, 128): 32 + 96 threads, the count")
@cute.kernel
def _producer_arrives_consumers_sync(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    if warp_idx == 0:
        dst[tidx] = Float32(tidx)
        cute.arch.barrier_arrive(barrier_id=1, number_of_threads=128)
    else:
        cute.arch.barrier(barrier_id=1, number_of_threads=128)
        dst[tidx] = dst[tidx - 32] + Float32(1.0)


@cute.struct
class _Barriers:
    full: cute.struct.MemRange[cutlass.Int64, 4]
    tmem_slot: Int32


@planted("elect_under_lane_lt_16", "sm_90a", "nvvm.elect.sync", "elect_one() (elect.sync, full mask) inside `if lane < 16`")
@cute.kernel
def _elect_under_lane_lt_16(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    storage = SmemAllocator().allocate(_Barriers)
    if lane < 16:  # <- diverges
        with cute.arch.elect_one():  # <- collective
            cute.arch.mbarrier_init(storage.full.data_ptr(), 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    dst[tidx] = Float32(tidx)


@correct("elect_under_warp0_around_mbarriers", "sm_90a", "elect_one() under warp_idx == 0 around per-thread mbarrier ops")
@cute.kernel
def _elect_under_warp0_around_mbarriers(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    barrier = storage.full.data_ptr()
    if warp_idx == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(barrier, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if warp_idx == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(barrier)
    cute.arch.mbarrier_wait(barrier, 0)
    dst[tidx] = Float32(tidx)


@correct("mbarriers_by_thread_zero", "sm_90a", "mbarrier init/arrive are per-thread ops: `if tidx == 0` around them is fine")
@cute.kernel
def _mbarriers_by_thread_zero(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    storage = SmemAllocator().allocate(_Barriers)
    barrier = storage.full.data_ptr()
    if tidx == 0:
        cute.arch.mbarrier_init(barrier, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if tidx == 0:
        cute.arch.mbarrier_arrive(barrier)
    cute.arch.mbarrier_wait(barrier, 0)
    dst[tidx] = Float32(tidx)


# ======================================================================================
# Warp tensor-core ops: ldmatrix and mma.sync take all 32 lanes (.sync.aligned)
# ======================================================================================

TILE_M, TILE_K = 64, 32  # four warps, 16 rows each; two k-blocks of 16


@cute.struct
class _TileA:
    a: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, TILE_M * TILE_K], 128]
    b: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, 8 * TILE_K], 128]


@cute.jit
def _warp_mma_operands(tidx: Int32):
    """The mma.sync tile every warp-MMA case shares: A (64x32) and B (8x32) in shared
    memory, read by ldmatrix into the mma.sync fragments, accumulator 64x8."""
    storage = SmemAllocator().allocate(_TileA)
    sA = storage.a.get_tensor(cute.make_layout((TILE_M, TILE_K), stride=(TILE_K, 1)))
    sB = storage.b.get_tensor(cute.make_layout((8, TILE_K), stride=(TILE_K, 1)))
    mma = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, Float32, (16, 8, 16)), (4, 1, 1))
    thr_mma = mma.get_slice(tidx)
    trA = thr_mma.make_fragment_A(thr_mma.partition_A(sA))
    trB = thr_mma.make_fragment_B(thr_mma.partition_B(sB))
    acc = cute.make_rmem_tensor(thr_mma.partition_shape_C((TILE_M, 8)), Float32)
    acc.fill(0.0)
    s2r = cute.make_tiled_copy_A(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16), mma)
    thr_s2r = s2r.get_slice(tidx)
    return mma, s2r, thr_s2r.partition_S(sA), thr_s2r.retile(trA), trA, trB, acc


@planted("ldmatrix_in_per_lane_tail_loop", "sm_90a", "cute.copy", "ldmatrix over the k-blocks from `lane // 16`: a per-lane trip count")
@cute.kernel
def _ldmatrix_in_per_lane_tail_loop(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    mma, s2r, tsA, trA_view, trA, trB, acc = _warp_mma_operands(tidx)
    for k in cutlass.range(lane // 16, 2):  # <- diverges
        cute.copy(s2r, tsA[None, None, k], trA_view[None, None, k])  # <- collective
    cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)
    dst[tidx] = acc[0]


@correct("ldmatrix_in_uniform_tail_loop", "sm_90a", "ldmatrix over the k-blocks from `n % 2`: the tail start is a kernel argument")
@cute.kernel
def _ldmatrix_in_uniform_tail_loop(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    mma, s2r, tsA, trA_view, trA, trB, acc = _warp_mma_operands(tidx)
    for k in cutlass.range(n % 2, 2):
        cute.copy(s2r, tsA[None, None, k], trA_view[None, None, k])
    cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)
    dst[tidx] = acc[0]


@planted("mma_sync_under_lane_condition", "sm_90a", "cute.gemm", "the warp MMA (mma.sync.aligned) only in lanes whose row is in range")
@cute.kernel
def _mma_sync_under_lane_condition(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    mma, s2r, tsA, trA_view, trA, trB, acc = _warp_mma_operands(tidx)
    cute.copy(s2r, tsA, trA_view)
    if lane // 4 < n:  # <- diverges
        cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)  # <- collective
    dst[tidx] = acc[0]


@correct("mma_sync_under_warp_condition", "sm_90a", "the warp MMA under `warp_idx < n`: whole warps skip it")
@cute.kernel
def _mma_sync_under_warp_condition(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    mma, s2r, tsA, trA_view, trA, trB, acc = _warp_mma_operands(tidx)
    cute.copy(s2r, tsA, trA_view)
    if warp_idx < n:
        for k in cutlass.range_constexpr(2):
            cute.gemm(mma, acc, trA[None, None, k], trB[None, None, k], acc)
    dst[tidx] = acc[0]


# ======================================================================================
# wgmma: all 128 threads of the warpgroup (wgmma.fence/mma_async/commit/wait .sync.aligned)
# ======================================================================================

WG_M, WG_N, WG_K = 64, 64, 64


@cute.struct
class _WgmmaTiles:
    a: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, WG_M * WG_K], 1024]
    b: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, WG_N * WG_K], 1024]


@cute.jit
def _wgmma_operands(tidx: Int32):
    """One warpgroup's 64x64x64 f16 wgmma, both operands K-major in 128B-swizzled smem."""
    atom = warpgroup.make_smem_layout_atom(sm90.get_smem_layout_atom(LayoutEnum.ROW_MAJOR, cutlass.Float16, WG_K), cutlass.Float16)
    layout_a = cute.tile_to_shape(atom, (WG_M, WG_K), (0, 1))
    layout_b = cute.tile_to_shape(atom, (WG_N, WG_K), (0, 1))
    storage = SmemAllocator().allocate(_WgmmaTiles)
    sA = storage.a.get_tensor(layout_a.outer, swizzle=layout_a.inner)
    sB = storage.b.get_tensor(layout_b.outer, swizzle=layout_b.inner)
    mma = sm90.make_trivial_tiled_mma(
        cutlass.Float16, cutlass.Float16, cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.K,
        Float32, (1, 1, 1), (WG_M, WG_N),
    )
    thr_mma = mma.get_slice(tidx % 128)
    trA = thr_mma.make_fragment_A(thr_mma.partition_A(sA))
    trB = thr_mma.make_fragment_B(thr_mma.partition_B(sB))
    acc = cute.make_rmem_tensor(thr_mma.partition_shape_C((WG_M, WG_N)), Float32)
    return mma, trA, trB, acc


@planted("wgmma_under_warp_condition", "sm_90a", "cute.gemm", "wgmma under `warp_idx == 0`: warp-uniform, but the warpgroup needs all four warps", block=256)
@cute.kernel
def _wgmma_under_warp_condition(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    mma, trA, trB, acc = _wgmma_operands(tidx)
    acc.fill(0.0)
    if warp_idx == 0:  # <- diverges
        warpgroup.fence()
        cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)  # <- collective
        warpgroup.commit_group()
        warpgroup.wait_group(0)
    dst[tidx] = acc[0]


@correct("wgmma_under_warpgroup_condition", "sm_90a", "wgmma under `warp_group_idx == 0` (tidx // 128, made warp-uniform): whole warpgroups", block=256)
@cute.kernel
def _wgmma_under_warpgroup_condition(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_group_idx = cute.arch.make_warp_uniform(tidx // 128)
    mma, trA, trB, acc = _wgmma_operands(tidx)
    acc.fill(0.0)
    if warp_group_idx == 0:
        warpgroup.fence()
        for k in cutlass.range_constexpr(cute.size(trA.shape[2])):
            cute.gemm(mma, acc, trA[None, None, k], trB[None, None, k], acc)
        warpgroup.commit_group()
        warpgroup.wait_group(0)
    dst[tidx] = acc[0]


@planted("wgmma_wait_under_thread_condition", "sm_90a", "nvvm.wgmma.wait.group.sync.aligned", "every thread issues the wgmma, but only threads with tidx < 64 wait for it", block=128)
@cute.kernel
def _wgmma_wait_under_thread_condition(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    mma, trA, trB, acc = _wgmma_operands(tidx)
    acc.fill(0.0)
    warpgroup.fence()
    cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)
    warpgroup.commit_group()
    if tidx < 64:  # <- diverges
        warpgroup.wait_group(0)  # <- collective
        dst[tidx] = acc[0]


# ======================================================================================
# Tensor memory (sm_100a): tcgen05.alloc/dealloc/relinquish and tcgen05.ld/st are
# warp-wide (.sync.aligned); nCols a power of two in [32, 512]; dealloc takes the
# address alloc wrote, retrieved from the shared-memory slot, not the slot itself
# ======================================================================================

TMEM_COLUMNS = 32


@cute.jit
def _tmem_views(tidx: Int32, tmem_ptr, dst: cute.Tensor):
    """The 128-lane x 32-column f32 accumulator in TMEM, and this thread's share of it:
    tcgen05.ld/st 32x32b.x32 (one lane, 32 columns per thread, warp w on lanes 32w..32w+31)."""
    mma = cute.make_tiled_mma(
        tcgen05.MmaF16BF16Op(
            cutlass.Float16, Float32, (128, TMEM_COLUMNS, 16), tcgen05.CtaGroup.ONE,
            tcgen05.OperandSource.SMEM, cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.K,
        )
    )
    layout = mma.make_fragment_C(mma.partition_shape_C((128, TMEM_COLUMNS))).layout
    accumulator = cute.make_tensor(tmem_ptr, layout)
    out = cute.make_tensor(dst.iterator, cute.make_layout(((128, TMEM_COLUMNS), 1, 1), stride=((TMEM_COLUMNS, 1), 0, 0)))
    load = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), Float32), accumulator)
    store = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.St32x32bOp(tcgen05.Repetition.x32), Float32), accumulator)
    thr_load = load.get_slice(tidx)
    thr_store = store.get_slice(tidx)
    tmem_src = thr_load.partition_S(accumulator)
    gmem_dst = thr_load.partition_D(out)
    registers = cute.make_rmem_tensor(gmem_dst.shape, Float32)
    registers.fill(1.0)
    return load, store, tmem_src, thr_store.partition_D(accumulator), registers, gmem_dst


@cute.jit
def _allocate_by_warp0(warp_idx: Int32, slot, columns):
    if warp_idx == 0:
        cute.arch.alloc_tmem(columns, slot)
    cute.arch.sync_threads()


@cute.jit
def _free_by_warp0(warp_idx: Int32, tmem_ptr, columns):
    cute.arch.sync_threads()
    if warp_idx == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(tmem_ptr, columns)


@correct("tmem_round_trip", "sm_100a", "warp 0 allocates and frees; all four warps tcgen05.st then tcgen05.ld their 32 lanes")
@cute.kernel
def _tmem_round_trip(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, TMEM_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr, dst)
    cute.copy(store, registers, tmem_dst)
    cute.arch.fence_view_async_tmem_store()
    cute.copy(load, tmem_src, registers)
    cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(registers, gmem_dst)
    _free_by_warp0(warp_idx, tmem_ptr, TMEM_COLUMNS)


@planted("tmem_ld_lane_strided_loop", "sm_100a", "cute.copy", "the TMEM epilogue `for col in range(lane, 16, 32)`: only lanes 0-15 enter the loop")
@cute.kernel
def _tmem_ld_lane_strided_loop(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, TMEM_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr, dst)
    for col in cutlass.range(lane, 16, 32):  # <- diverges
        cute.copy(load, tmem_src, registers)  # <- collective
        dst[tidx] = registers[col]
    _free_by_warp0(warp_idx, tmem_ptr, TMEM_COLUMNS)


@planted("tmem_ld_under_thread0", "sm_100a", "cute.copy", "`if tidx == 0:` around the tcgen05.ld of the accumulator")
@cute.kernel
def _tmem_ld_under_thread0(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, TMEM_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr, dst)
    if tidx == 0:  # <- diverges
        cute.copy(load, tmem_src, registers)  # <- collective
        cute.autovec_copy(registers, gmem_dst)
    _free_by_warp0(warp_idx, tmem_ptr, TMEM_COLUMNS)


@planted("tmem_st_under_lane_lt_16", "sm_100a", "cute.copy", "tcgen05.st only from lanes 0-15 (half a warp)")
@cute.kernel
def _tmem_st_under_lane_lt_16(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, TMEM_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr, dst)
    if lane < 16:  # <- diverges
        cute.copy(store, registers, tmem_dst)  # <- collective
    cute.arch.fence_view_async_tmem_store()
    cute.copy(load, tmem_src, registers)
    cute.autovec_copy(registers, gmem_dst)
    _free_by_warp0(warp_idx, tmem_ptr, TMEM_COLUMNS)


@correct("tmem_ld_by_epilogue_warps", "sm_100a", "192 threads: warps 0-3 (a warp-uniform test) read TMEM, warp 4 allocates and frees", block=192)
@cute.kernel
def _tmem_ld_by_epilogue_warps(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    if warp_idx == 4:
        cute.arch.alloc_tmem(TMEM_COLUMNS, storage.tmem_slot.ptr)
    cute.arch.sync_threads()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    if warp_idx < 4:
        load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr, dst)
        cute.copy(store, registers, tmem_dst)
        cute.arch.fence_view_async_tmem_store()
        cute.copy(load, tmem_src, registers)
        cute.autovec_copy(registers, gmem_dst)
    cute.arch.sync_threads()
    if warp_idx == 4:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(tmem_ptr, TMEM_COLUMNS)


@planted("tmem_dealloc_from_smem_slot", "sm_100a", "cute_nvgpu.arch.sm100.dealloc_tmem", "dealloc_tmem given the shared-memory slot alloc wrote into, not the TMEM address read from it")
@cute.kernel
def _tmem_dealloc_from_smem_slot(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, TMEM_COLUMNS)
    dst[tidx] = Float32(tidx)
    cute.arch.sync_threads()
    # the slot's own address taken for the TMEM address (retrieve_tmem_ptr reads the slot)
    slot_as_tmem = cute.make_ptr(Float32, storage.tmem_slot.ptr.toint(), cute.AddressSpace.tmem, assumed_align=16)
    if warp_idx == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(slot_as_tmem, TMEM_COLUMNS)  # <- collective


@planted("tmem_alloc_16_columns", "sm_100a", "cute_nvgpu.arch.sm100.alloc_tmem", "alloc_tmem(Int32(16)): nCols below the 32-column minimum (an Int32 skips CuTeDSL's own check)")
@cute.kernel
def _tmem_alloc_16_columns(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    columns = Int32(16)
    if warp_idx == 0:
        cute.arch.alloc_tmem(columns, storage.tmem_slot.ptr)  # <- collective
    cute.arch.sync_threads()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    dst[tidx] = Float32(tidx)
    _free_by_warp0(warp_idx, tmem_ptr, columns)


@planted("tmem_alloc_96_columns", "sm_100a", "cute_nvgpu.arch.sm100.alloc_tmem", "nCols = 3 * 32 = 96, in range but not a power of two")
@cute.kernel
def _tmem_alloc_96_columns(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    columns = Int32(3) * TMEM_COLUMNS
    if warp_idx == 0:
        cute.arch.alloc_tmem(columns, storage.tmem_slot.ptr)  # <- collective
    cute.arch.sync_threads()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    dst[tidx] = Float32(tidx)
    _free_by_warp0(warp_idx, tmem_ptr, columns)


@correct("tmem_alloc_512_columns", "sm_100a", "nCols = 16 * 32 = 512 as an Int32: a power of two, the maximum")
@cute.kernel
def _tmem_alloc_512_columns(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    columns = Int32(16) * TMEM_COLUMNS
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, columns)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    dst[tidx] = Float32(tidx)
    _free_by_warp0(warp_idx, tmem_ptr, columns)


@planted("tmem_dealloc_skipped_on_a_path", "sm_100a", "cute_nvgpu.arch.sm100.alloc_tmem", "dealloc only `if n > 0`: a launch with n <= 0 leaves the columns allocated")
@cute.kernel
def _tmem_dealloc_skipped_on_a_path(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    if warp_idx == 0:
        cute.arch.alloc_tmem(TMEM_COLUMNS, storage.tmem_slot.ptr)  # <- collective
    cute.arch.sync_threads()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    dst[tidx] = Float32(tidx)
    cute.arch.sync_threads()
    if n > 0:  # <- diverges
        if warp_idx == 0:
            cute.arch.relinquish_tmem_alloc_permit()
            cute.arch.dealloc_tmem(tmem_ptr, TMEM_COLUMNS)


@correct("tmem_dealloc_on_both_paths", "sm_100a", "`if n > 0: ... else: ...`, each branch frees the columns")
@cute.kernel
def _tmem_dealloc_on_both_paths(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, TMEM_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    if n > 0:
        dst[tidx] = Float32(tidx)
        _free_by_warp0(warp_idx, tmem_ptr, TMEM_COLUMNS)
    else:
        dst[tidx] = Float32(0.0)
        _free_by_warp0(warp_idx, tmem_ptr, TMEM_COLUMNS)


@planted("tmem_alloc_under_thread0", "sm_100a", "cute_nvgpu.arch.sm100.alloc_tmem", "alloc_tmem under `if tidx == 0`: tcgen05.alloc is warp-wide")
@cute.kernel
def _tmem_alloc_under_thread0(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    if tidx == 0:  # <- diverges
        cute.arch.alloc_tmem(TMEM_COLUMNS, storage.tmem_slot.ptr)  # <- collective
    cute.arch.sync_threads()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    dst[tidx] = Float32(tidx)
    _free_by_warp0(warp_idx, tmem_ptr, TMEM_COLUMNS)


@planted("tmem_relinquish_under_lane0", "sm_100a", "cute_nvgpu.arch.sm100.relinquish_tmem_alloc_permit", "relinquish_tmem_alloc_permit under `if lane == 0`: warp-wide too")
@cute.kernel
def _tmem_relinquish_under_lane0(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, TMEM_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    dst[tidx] = Float32(tidx)
    cute.arch.sync_threads()
    if warp_idx == 0:
        if lane == 0:  # <- diverges
            cute.arch.relinquish_tmem_alloc_permit()  # <- collective
        cute.arch.dealloc_tmem(tmem_ptr, TMEM_COLUMNS)


@correct("tcgen05_commit_under_elect_one", "sm_100a", "tcgen05.commit (one thread's op) inside elect_one() of warp 0, as CuTeDSL's docstring asks")
@cute.kernel
def _tcgen05_commit_under_elect_one(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    barrier = storage.full.data_ptr()
    if warp_idx == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(barrier, 1)
    cute.arch.mbarrier_init_fence()
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, TMEM_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    if warp_idx == 0:
        with cute.arch.elect_one():
            tcgen05.commit(barrier)
    cute.arch.mbarrier_wait(barrier, 0)
    dst[tidx] = Float32(tidx)
    _free_by_warp0(warp_idx, tmem_ptr, TMEM_COLUMNS)


@correct("mma_sync_after_warp_exit", "sm_90a", "`if warp_idx >= n: pass else:` then ldmatrix and the warp MMA: whole warps leave")
@cute.kernel
def _mma_sync_after_warp_exit(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    mma, s2r, tsA, trA_view, trA, trB, acc = _warp_mma_operands(tidx)
    if warp_idx >= n:
        pass
    else:
        cute.copy(s2r, tsA, trA_view)
        cute.gemm(mma, acc, trA[None, None, 0], trB[None, None, 0], acc)
        dst[tidx] = acc[0]


@correct("tmem_alloc_by_argument_warp", "sm_100a", "the allocating warp chosen by a kernel argument (`warp_idx == n % 4`): warp-uniform")
@cute.kernel
def _tmem_alloc_by_argument_warp(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    owner = n % 4
    if warp_idx == owner:
        cute.arch.alloc_tmem(TMEM_COLUMNS, storage.tmem_slot.ptr)
    cute.arch.sync_threads()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    dst[tidx] = Float32(tidx)
    cute.arch.sync_threads()
    if warp_idx == owner:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(tmem_ptr, TMEM_COLUMNS)


@correct("tmem_ld_every_lane_then_columns", "sm_100a", "the fix of tmem_ld_lane_strided_loop (README): every lane runs tcgen05.ld, then its strided columns come from registers")
@cute.kernel
def _tmem_ld_every_lane_then_columns(dst: cute.Tensor, n: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    warp_idx = cute.arch.warp_idx()
    storage = SmemAllocator().allocate(_Barriers)
    _allocate_by_warp0(warp_idx, storage.tmem_slot.ptr, TMEM_COLUMNS)
    tmem_ptr = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_slot.ptr)
    load, store, tmem_src, tmem_dst, registers, gmem_dst = _tmem_views(tidx, tmem_ptr, dst)
    cute.copy(load, tmem_src, registers)  # every lane: tcgen05.ld is warp-wide
    for col in cutlass.range(lane, 16, 32):
        dst[tidx] = registers[col]
    _free_by_warp0(warp_idx, tmem_ptr, TMEM_COLUMNS)
