"""The round-2 facts of the uniformity analysis (issue 37) on small IR, checked by hand:
divisibility of unknown uniform terms, affine induction, warp-symmetric values, guarded facts.

A 128-thread CTA (tid.x in 0..127, lane = tid % 32, warp = tid / 32); `%n` a kernel argument.
"""

from __future__ import annotations

from cute_lowering.analysis.uniformity import Scope
from test_uniformity import _ops, run  # noqa: F401  (the fixture)


def results(u, name: str) -> list:
    """The results of the ops named `name`, in program order (the printer renumbers SSA names)."""
    return [r for op in _ops(u.func) if op.name == name for r in op.results]


def test_row_below_a_multiple_of_32_is_warp_uniform(run):
    body = """
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %bid = nvvm.read.ptx.sreg.ctaid.x : i32
    %c128 = arith.constant 128 : i32
    %c32 = arith.constant 32 : i32
    %c16 = arith.constant 16 : i32
    %base = arith.muli %bid, %c128 : i32
    %row = arith.addi %base, %tid : i32
    %lim32 = arith.muli %n, %c32 : i32
    %lim16 = arith.muli %n, %c16 : i32
    %in32 = arith.cmpi slt, %row, %lim32 : i32
    %in16 = arith.cmpi slt, %row, %lim16 : i32
    """
    u, _ = run(body, args="%n: i32")
    in32, in16 = results(u, "arith.cmpi")
    assert u.fact(in32).level == Scope.WARP  # bidx*128 + tid < 32n: decided per warp
    assert u.fact(in16).level == Scope.THREAD and u.fact(in16).split  # 16n: half a warp for odd n


def test_lane_stepping_by_32_is_lane_plus_a_multiple_of_32(run):
    body = """
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c32 = arith.constant 32 : i32
    %r = scf.while (%k = %lane) : (i32) -> i32 {
      %go = arith.cmpi slt, %k, %n : i32
      scf.condition(%go) %k : i32
    } do {
    ^bb0(%k2: i32):
      %next = arith.addi %k2, %c32 : i32
      scf.yield %next : i32
    }
    """
    u, _ = run(body, args="%n: i32")
    go = u.fact(results(u, "arith.cmpi")[0])
    assert go.level == Scope.THREAD and go.split  # lane + 32j < n: for n = 16, half a warp loops


def test_broadcast_of_a_lane_symmetric_load_is_cta_uniform(run):
    body = """
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %p = llvm.getelementptr %ptr[%lane] : (!llvm.ptr, i32) -> !llvm.ptr, i32
    %x = llvm.load %p : !llvm.ptr -> i32
    %full = arith.constant -1 : i32
    %c0 = arith.constant 0 : i32
    %c31 = arith.constant 31 : i32
    %b = nvvm.shfl.sync idx %full, %x, %c0, %c31 : i32 -> i32
    """
    u, _ = run(body, args="%ptr: !llvm.ptr")
    (x,), (b,) = results(u, "llvm.load"), results(u, "nvvm.shfl.sync")
    assert u.fact(x).level == Scope.THREAD and u.fact(x).data
    assert u.fact(b).level == Scope.CTA  # lane 0 of every warp read the same address


def test_value_set_under_a_condition_is_the_branch_value_under_it_again(run):
    body = """
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c0 = arith.constant 0 : i32
    %ok = arith.cmpi sgt, %n, %c0 : i32
    %bound = scf.if %ok -> (i32) {
      scf.yield %n : i32
    } else {
      scf.yield %lane : i32
    }
    %c1 = arith.constant 1 : i32
    scf.if %ok {
      %twice = arith.muli %bound, %c1 : i32
      scf.for %i = %c0 to %twice step %c1 : i32 {
        %full = arith.constant -1 : i32
        %c31 = arith.constant 31 : i32
        %s = nvvm.shfl.sync bfly %full, %i, %c1, %c31 : i32 -> i32
      }
    }
    """
    from cute_lowering.passes.check_collectives import check_collectives

    u, _ = run(body, args="%n: i32")
    bound = [r for op in _ops(u.func) if op.name == "scf.if" for r in op.results][0]
    assert u.fact(bound).level == Scope.THREAD  # merged: n or the lane
    module = u.func.parent  # the gpu.module
    assert check_collectives(module) == []  # under `ok` again, the trip count is n


def test_without_the_repeated_condition_the_merged_value_diverges(run):
    body = """
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %ok = arith.cmpi sgt, %n, %c0 : i32
    %bound = scf.if %ok -> (i32) {
      scf.yield %n : i32
    } else {
      scf.yield %lane : i32
    }
    scf.for %i = %c0 to %bound step %c1 : i32 {
      %full = arith.constant -1 : i32
      %c31 = arith.constant 31 : i32
      %s = nvvm.shfl.sync bfly %full, %i, %c1, %c31 : i32 -> i32
    }
    """
    from cute_lowering.passes.check_collectives import check_collectives

    u, _ = run(body, args="%n: i32")
    found = check_collectives(u.func.parent)
    assert [d.severity for d in found] == ["error"] and "nvvm.shfl.sync" in found[0].message
