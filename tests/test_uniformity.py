"""The uniformity analysis (lowering/analysis/uniformity.py) on small IR, facts checked by hand.

Every expectation here is worked out from the IR's meaning (a 128-thread CTA: tid.x in
0..127, lane = tid % 32, warp = tid / 32), not read back from the analysis.
"""

from __future__ import annotations

import numpy as np
import pytest

from cute_lowering.analysis.collective_ops import collective_of
from cute_lowering.analysis.uniformity import Scope, Threads, Uniformity, gpu_functions
from cute_lowering.mlir import inert_values, new_context, parse_module

THREADS = 128
TID = np.arange(THREADS)


def analyse(body: str, args: str = "", block: str = "nvvm.reqntid = array<i32: 128, 1, 1>", watch=None):
    """Run the analysis on one kernel; returns (analysis, {result name: value}) inside a live context."""
    attrs = f" attributes {{{block}}}" if block else ""
    text = f"gpu.module @m {{\n gpu.func @k({args}) kernel{attrs} {{\n{body}\n gpu.return\n }}\n}}"
    context = new_context()
    context.__enter__()
    module = parse_module(text, context)
    inert = inert_values()
    inert.__enter__()
    func = next(iter(gpu_functions(module.operation)))
    analysis = Uniformity(func, watch=watch)
    names = {}
    for op in _ops(func):
        for r in op.results:
            names[r.get_name()] = r
    return analysis, names, (module, context, inert)


def _ops(op):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = inner.operation
                yield inner
                yield from _ops(inner)


@pytest.fixture
def run():
    held = []

    def go(*args, **kwargs):
        analysis, names, keep = analyse(*args, **kwargs)
        held.append(keep)
        return analysis, names

    yield go
    for _module, context, inert in reversed(held):
        inert.__exit__(None, None, None)
        context.__exit__(None, None, None)


SOURCES = """
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %bid = nvvm.read.ptx.sreg.ctaid.x : i32
    %c16 = arith.constant 16 : i32
    %c32 = arith.constant 32 : i32
    %c64 = arith.constant 64 : i32
    %c128 = arith.constant 128 : i32
    %warp = arith.floordivsi %tid, %c32 : i32
    %wu = cute_nvgpu.arch.make_warp_uniform(%warp) : i32
    %wg = arith.floordivsi %tid, %c128 : i32
    %half = arith.cmpi slt, %tid, %c64 : i32
    %low = arith.cmpi slt, %lane, %c16 : i32
    %i = arith.addi %tid, %bid : i32
    %bounded = arith.cmpi slt, %i, %n : i32
"""


def test_sources_and_levels(run):
    u, v = run(SOURCES, "%n: i32")
    assert u.threads.count == THREADS and u.threads.known
    assert np.array_equal(u.fact(v["%0"]).values, TID)  # tid.x, the first result
    assert u.fact(v["%0"]).level == Scope.THREAD
    assert u.fact(v["%2"]).level == Scope.CTA  # ctaid.x
    warp = u.fact(v["%3"])
    assert warp.level == Scope.WARP and np.array_equal(warp.values, TID // 32)
    assert u.fact(v["%4"]).level == Scope.WARP  # make_warp_uniform keeps the known values
    assert u.fact(v["%5"]).level == Scope.CTA  # tid / 128 with 128 threads: one warpgroup, one value
    # tid < 64 splits warpgroup 0 (threads 0-63 / 64-127) but no warp
    half = u.fact(v["%6"])
    assert half.level == Scope.WARP and np.array_equal(half.values != 0, TID < 64)
    assert u.fact(v["%7"]).level == Scope.THREAD  # lane < 16 splits every warp


def test_threshold_against_a_uniform_value_splits(run):
    """`tid + bid < n`: which threads pass depends on n, but some n splits every group."""
    u, v = run(SOURCES, "%n: i32")
    bounded = u.fact(v["%9"])
    assert bounded.level == Scope.THREAD and bounded.split and not bounded.data and not bounded.known


def test_per_thread_load_is_data(run):
    u, v = run(
        """
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %q = llvm.getelementptr %p[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    %x = llvm.load %q : !llvm.ptr<1> -> i32
    %y = llvm.load %p : !llvm.ptr<1> -> i32
""",
        "%p: !llvm.ptr<1>",
    )
    per_thread, uniform = u.fact(v["%2"]), u.fact(v["%3"])
    assert per_thread.level == Scope.THREAD and per_thread.data
    assert uniform.level == Scope.CTA  # the same address in every thread


def test_shuffle_broadcast_and_vote_are_warp_uniform(run):
    u, v = run(
        """
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %f = arith.sitofp %tid : i32 to f32
    %full = arith.constant -1 : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c31 = arith.constant 31 : i32
    %b = nvvm.shfl.sync idx %full, %f, %c0, %c31 : f32 -> f32
    %d = nvvm.shfl.sync bfly %full, %f, %c1, %c31 : f32 -> f32
    %p = arith.cmpf ogt, %f, %f : f32
    %ballot = nvvm.vote.sync ballot %full, %p -> i32
"""
    )
    assert u.fact(v["%2"]).level == Scope.WARP  # broadcast from lane 0
    assert u.fact(v["%3"]).level == Scope.THREAD  # butterfly: every lane its own
    assert u.fact(v["%5"]).level == Scope.WARP


def _conditions_of(u, name):
    return [r.conditions for r in u.reached if r.op.name == name]


def test_if_condition_masks(run):
    u, _ = run(
        """
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c16 = arith.constant 16 : i32
    %low = arith.cmpi slt, %lane, %c16 : i32
    scf.if %low {
      nvvm.barrier
    } else {
      nvvm.bar.warp.sync %c16 : i32
    }
""",
        watch=lambda op: op.name in ("nvvm.barrier", "nvvm.bar.warp.sync"),
    )
    (then_conds,) = _conditions_of(u, "nvvm.barrier")
    (else_conds,) = _conditions_of(u, "nvvm.bar.warp.sync")
    assert np.array_equal(then_conds[0].masks[0], TID % 32 < 16)
    assert np.array_equal(else_conds[0].masks[0], TID % 32 >= 16)


def test_lane_strided_loop_masks_per_iteration(run):
    """for i in range(lane, 48, 32): lanes 0-15 iterate twice, 16-31 once."""
    u, _ = run(
        """
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c48 = arith.constant 48 : i32
    %c32 = arith.constant 32 : i32
    scf.for %i = %lane to %c48 step %c32 : i32 {
      nvvm.barrier
    }
""",
        watch=lambda op: op.name == "nvvm.barrier",
    )
    (conds,) = _conditions_of(u, "nvvm.barrier")
    masks = {m.tobytes() for m in conds[0].masks}
    assert masks == {(TID >= 0).tobytes(), (TID % 32 < 16).tobytes()}


def test_while_followed_per_thread(run):
    """k = lane; while k < 40: k += 32 -> every lane once, lanes 0-7 a second time."""
    u, _ = run(
        """
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c40 = arith.constant 40 : i32
    %c32 = arith.constant 32 : i32
    %r = scf.while (%k = %lane) : (i32) -> i32 {
      %go = arith.cmpi slt, %k, %c40 : i32
      scf.condition(%go) %k : i32
    } do {
    ^bb0(%k2: i32):
      nvvm.barrier
      %next = arith.addi %k2, %c32 : i32
      scf.yield %next : i32
    }
""",
        watch=lambda op: op.name == "nvvm.barrier",
    )
    (conds,) = _conditions_of(u, "nvvm.barrier")
    masks = [m.tobytes() for m in conds[0].masks]
    assert masks == [np.ones(THREADS, bool).tobytes(), (TID % 32 < 8).tobytes()]


def test_exit_makes_the_rest_conditional(run):
    u, _ = run(
        """
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c100 = arith.constant 100 : i32
    %late = arith.cmpi sge, %tid, %c100 : i32
    scf.if %late {
      nvvm.exit
    }
    nvvm.barrier
""",
        watch=lambda op: op.name == "nvvm.barrier",
    )
    (conds,) = _conditions_of(u, "nvvm.barrier")
    assert np.array_equal(conds[-1].masks[0], TID < 100)


def test_value_carried_unchanged_through_a_branch_keeps_its_fact(run):
    """A value yielded by both branches is not made divergent by the branch."""
    u, v = run(
        """
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c16 = arith.constant 16 : i32
    %low = arith.cmpi slt, %lane, %c16 : i32
    %r = scf.if %low -> (i32) {
      scf.yield %n : i32
    } else {
      scf.yield %n : i32
    }
    %s = scf.if %low -> (i32) {
      scf.yield %n : i32
    } else {
      scf.yield %c16 : i32
    }
""",
        "%n: i32",
    )
    assert u.fact(v["%2"]).level == Scope.CTA
    assert u.fact(v["%3"]).level == Scope.THREAD  # n or 16 depending on the lane


def test_unknown_block_shape():
    threads = Threads(None)
    assert not threads.known and threads.count == 1024


def test_describe():
    threads = Threads((128, 1, 1))
    assert threads.describe(TID < 64) == "threads 0-63"
    assert threads.describe(TID % 32 < 16) == "lanes 0-15 of every warp"
    assert threads.describe(TID == 0) == "lane 0 of warp 0"


def test_two_dimensional_block():
    """A (32, 4) block: tid.y is the warp, tid.x the lane."""
    threads = Threads((32, 4, 1))
    assert np.array_equal(threads.tid[1], TID // 32)
    assert threads.level_of(threads.tid[1]) == Scope.WARP
    assert threads.level_of(threads.tid[0]) == Scope.THREAD


@pytest.mark.parametrize(
    "atom, expected",
    [
        ("!cute_nvgpu.atom.tma_load<f16>", "elect.sync + cp.async.bulk.tensor"),
        ("!cute_nvgpu.atom.tma_store<f16>", None),  # a TMA store is per-thread
    ],
)
def test_table_reads_the_atom(atom, expected):
    class FakeValue:
        def __init__(self, t):
            self.type = t

    class FakeOp:
        name = "cute.copy"
        attributes = {}

        def __init__(self, t):
            self.operands = [FakeValue(t)]

    found = collective_of(FakeOp(atom))
    assert (found.ptx if found else None) == expected


def test_index_switch_cases(run):
    u, _ = run(
        """
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %i = arith.index_cast %lane : i32 to index
    scf.index_switch %i
    case 3 {
      nvvm.barrier
      scf.yield
    }
    default {
      nvvm.bar.warp.sync %lane : i32
      scf.yield
    }
""",
        watch=lambda op: op.name in ("nvvm.barrier", "nvvm.bar.warp.sync"),
    )
    (case_conds,) = _conditions_of(u, "nvvm.barrier")
    (default_conds,) = _conditions_of(u, "nvvm.bar.warp.sync")
    assert np.array_equal(case_conds[-1].masks[0], TID % 32 == 3)
    assert np.array_equal(default_conds[-1].masks[0], TID % 32 != 3)


def test_nested_plain_value_blocks_keep_values_plain():
    """The check runs inside the pipeline's own plain_values block: leaving its inner block
    must not put CuTeDSL's wrappers back for the passes after it."""
    from cutlass._mlir import ir

    from cute_lowering.mlir import plain_values

    def wrapped() -> bool:
        with ir.Context(), ir.Location.unknown():
            module = ir.Module.parse("func.func @f(%a: f32) { return }")
            arg = module.body.operations[0].regions[0].blocks[0].arguments[0]
            return type(arg) is not ir.BlockArgument

    with plain_values():
        with inert_values():
            assert not wrapped()
        assert not wrapped()
    assert wrapped()  # outside every block, CuTeDSL's own casters are back
