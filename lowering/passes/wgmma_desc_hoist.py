"""Compute wgmma descriptors as early as their inputs allow (post stage; exact: ops only move).

In the lowered module each wgmma's shared-memory descriptors are built right before it: the
base from the buffer's address and the stage, each k-step as `llvm.add %base, C : i64`. A
descriptor whose inputs do not change in a loop (Q's, in an attention key loop) is still
rebuilt on every iteration, next to its wgmma; ptxas then reuses one or two uniform-register
quads for all of a group's descriptors and puts the arithmetic between the HGMMAs. FA3 (C++
CUTLASS) computes such descriptors once, before its loop, and ptxas issues its 8 Q K^T
HGMMAs back to back (bench/RESULTS.md, "A post-lowering stage").

This pass moves every pure op of a descriptor's computation (the backward slice of each `l`
operand of a wgmma `llvm.inline_asm`, up to the first op that is not pure arithmetic) to right
after the latest definition of its operands: out of a loop where none of them changes, up in
its block where they are all older. Nothing else changes.

Before (inside the key loop's body, ^bb9):

    ^bb9:
      ...
      %a = llvm.bitcast %v : vector<2xi32> to i64           // Q's descriptor: %v is defined in ^bb2
      nvvm.wgmma.fence.aligned
      %s0 = llvm.inline_asm "...wgmma...", "...,l,l,..." %acc..., %a, %b, ...
      %a1 = llvm.add %a, %c2 : i64
      %s1 = llvm.inline_asm "...wgmma..." %s0..., %a1, %b1, ...

After (the loop-invariant part sits where %v and %c2 are defined, before the loop):

    ^bb2:
      %v = ...
      %a = llvm.bitcast %v : vector<2xi32> to i64
      %a1 = llvm.add %a, %c2 : i64
      ...
    ^bb9:
      nvvm.wgmma.fence.aligned
      %s0 = llvm.inline_asm "...wgmma..." %acc..., %a, %b, ...
      %s1 = llvm.inline_asm "...wgmma..." %s0..., %a1, %b1, ...

`operands=a` moves only the A descriptors of wgmmas that read both operands from shared memory
(Q's, in an attention kernel's Q K^T): fewer values live across the loop.

Exact: only ops without side effects or undefined behaviour move (integer arithmetic,
casts, vector element ops, `getelementptr`, `ptrtoint`; a division only by a constant that is
not 0, nor -1 when signed), each to a point that
its operands dominate and that dominates its old position (the latest operand definition in
the dominator tree: lowering/analysis/dominance.py), so it computes the same value for every
use it had; on a path that no longer reaches a use the value is simply unused. A descriptor
whose computation reaches an op that is not pure arithmetic (a load, a call) is moved up to
that op, with a remark saying which.
"""

from __future__ import annotations

from collections import Counter

from cute_lowering.analysis.dominance import Dominance
from cute_lowering.diagnostics import nearest_location
from cute_lowering.mlir import defining_op, ir
from cute_lowering.passes.wgmma_report import descriptor_operands, wgmma_shape
from cute_lowering.registry import choice, register_pass

# no side effects and no undefined behaviour on any operand (poison at most), so computing
# them earlier on more paths changes no value any use sees
PURE = frozenset(
    "llvm." + name
    for name in (
        "add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor", "zext", "sext", "trunc",
        "bitcast", "insertelement", "extractelement", "ptrtoint", "inttoptr", "getelementptr",
        "icmp", "select", "mlir.constant", "mlir.zero", "mlir.undef", "mlir.poison", "mlir.addressof",
    )
)  # fmt: skip


OPERANDS = choice(
    "operands",
    ("all", "a"),
    "all",
    "all: every descriptor; a: only the A operand of wgmmas that read A and B from shared memory (Q's in Q K^T)",
)


DIVISIONS = frozenset(("llvm.udiv", "llvm.urem", "llvm.sdiv", "llvm.srem"))


def _safe_division(op) -> bool:
    """A division whose divisor is a constant that is not 0 (nor -1, signed: INT_MIN / -1
    overflows): it has no undefined behaviour on any dividend, so it may move like arithmetic."""
    if op.name not in DIVISIONS:
        return False
    divisor = defining_op(op.operands[1])
    if divisor is None or divisor.name != "llvm.mlir.constant":
        return False
    try:
        value = ir.IntegerAttr(divisor.attributes["value"]).value
    except (ValueError, KeyError):  # a vector or splat constant: not handled
        return False
    return value != 0 and not (op.name.startswith("llvm.s") and value == -1)


@register_pass("wgmma-desc-hoist", options=(OPERANDS,), stage="post")
class WgmmaDescHoist:
    """Compute wgmma descriptors where their inputs are defined (out of loops that do not change them); exact."""

    statistics = {
        "descriptors": "wgmma descriptor operands seen",
        "moved": "pure ops moved earlier",
        "left": "descriptor computations cut at an op that is not pure arithmetic (each has a remark)",
    }

    def __init__(self, options, sink):
        self.options, self.sink = options, sink
        self.counts = Counter({name: 0 for name in self.statistics})

    def run(self, root) -> None:
        for function in _functions(root):
            self._function(function)

    def _function(self, function) -> None:
        region = function.regions[0]
        seeds = []
        for block in region.blocks:
            for op in block:
                if wgmma_shape(op.operation) is not None:
                    descriptors = descriptor_operands(op.operation)
                    if self.options["operands"] == "a":
                        descriptors = descriptors[:1] if len(descriptors) == 2 else []
                    seeds += descriptors
        if not seeds:
            return
        self.counts["descriptors"] += len(seeds)
        dominance = Dominance(region)
        order = _Positions(region)
        chain: dict = {}  # op -> None, in an order where operands come first
        reported = set()
        for seed in seeds:
            self._collect(seed, chain, reported)
        for op in sorted(chain, key=order.rank):
            target = self._target(op, order, dominance)
            if target is None:
                continue
            block, after = target
            if after is None:
                op.move_before(block.operations[0])
            else:
                op.move_after(after)
            order.moved(op, block)
            self.counts["moved"] += 1

    def _collect(self, value, chain: dict, reported: set) -> None:
        op = defining_op(value)
        if op is None:
            return
        op = op.operation
        if op in chain:
            return
        if op.name not in PURE and not _safe_division(op):
            if op not in reported:
                reported.add(op)
                self.counts["left"] += 1
                self.sink.remark(
                    f"wgmma-desc-hoist: a descriptor's computation stops at '{op.name}' (not pure "
                    "arithmetic): it and what it computes from stay where they are",
                    nearest_location(op),
                )
            return
        for operand in op.operands:
            self._collect(operand, chain, reported)
        chain[op] = None

    def _target(self, op, order: "_Positions", dominance: Dominance):
        """(block, op to move after or None for the block's start) when earlier than now, else None."""
        points = [order.of_value(v) for v in op.operands]
        if not points:
            return None  # constants: already where nothing can precede them usefully
        latest = points[0]
        for point in points[1:]:
            if dominance.point_dominates(latest[:2], point[:2]):
                latest = point
            elif not dominance.point_dominates(point[:2], latest[:2]):
                return None  # operands not on one dominator chain: cannot happen in valid IR; stay
        here = order.of_op(op)
        if latest[0] == here[0] and latest[1] >= here[1] - 1:
            return None  # already right after its latest operand
        if not dominance.point_dominates(latest[:2], here[:2]):
            return None
        return latest[0], latest[2]


class _Positions:
    """(block, index, op) of every op and block argument of one region, kept up to date as ops move."""

    def __init__(self, region):
        self.blocks = list(region.blocks)
        self.number = {block: i for i, block in enumerate(self.blocks)}
        self.where: dict = {}
        for block in self.blocks:
            self._number(block)

    def _number(self, block) -> None:
        for i, op in enumerate(block.operations):
            self.where[op.operation] = (block, i)

    def rank(self, op) -> tuple[int, int]:
        """A sort key in the region's text order (the slice's operands come first in it)."""
        block, index = self.where[op]
        return self.number[block], index

    def of_op(self, op) -> tuple:
        block, index = self.where[op]
        return block, index, op

    def of_value(self, value) -> tuple:
        op = defining_op(value)
        if op is None:  # a block argument: defined at the block's start
            return value.owner, -1, None
        return self.of_op(op.operation)

    def moved(self, op, block) -> None:
        old = self.where[op][0]
        self._number(block)
        if old != block:
            self._number(old)


def _functions(root) -> list:
    found = []

    def walk(op):
        if op.name == "llvm.func":
            if op.regions[0].blocks:
                found.append(op)
            return
        for region in op.regions:
            for block in region:
                for inner in block:
                    walk(inner.operation)

    walk(root)
    return found
