"""The lattice of the uniformity analysis: scopes, per-value facts, the threads of a CTA, conditions.

A `Fact` says how uniform one SSA value is (`level`: the widest `Scope` over which every
thread holds the same value), and, where the IR allows, its exact value per thread
(`values`, a numpy array over the linear thread id) or up to an unknown CTA-uniform
term that is a multiple of `divisor` (`shifted`: `tidx + bidx * 128`, `n * 32`). A
`Condition` is one decision an op's execution depends on, with the threads that pass it
when they are known. `uniformity.py` computes them; `check_collectives.py` reads them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from cute_lowering.mlir import ir

WARP_SIZE = 32
WARPGROUP_SIZE = 128
MAX_THREADS = 1024  # what a CTA can hold: the assumption when the block shape is not in the IR
_MAX_LOOP_ALTERNATIVES = 8
_MAX_FIXPOINT_ROUNDS = 4


class Scope(enum.IntEnum):
    """Groups of threads, from the widest. A value uniform at a scope is uniform at every narrower one."""

    CTA = 0
    WARPGROUP = 1
    WARP = 2
    THREAD = 3

    @property
    def label(self) -> str:
        return {0: "CTA", 1: "warpgroup", 2: "warp", 3: "thread"}[int(self)]


@dataclass(frozen=True)
class Fact:
    """What is known about one SSA value across the threads of a CTA."""

    level: Scope
    values: np.ndarray | None = None  # shape () for a constant, (threads,) per thread
    why: str = ""  # for a non-uniform value: where its variation comes from
    data: bool = False  # varies through memory, not through the thread index alone
    shifted: bool = False  # `values` plus one unknown CTA-uniform term (`tidx + bidx * 128`)
    split: bool = False  # a comparison of a shifted value: splits its `level` groups for some inputs
    divisor: int = 1  # with `shifted`: the unknown term is a multiple of it (`bidx * 128`: 128)
    cluster: bool = False  # CTA-uniform, but may differ between the CTAs of a cluster (`cluster.ctarank`)
    # the value is exactly one of these per-thread arrays, which one decided by a CTA-uniform
    # input (`lim = lane if n > 0 else 31 - lane`); `values` is then None, `split` set
    choices: tuple | None = None
    # the same in every warp, lane for lane: a function of the lane id (and of uniform values, of
    # data read through such addresses); a warp broadcast or vote of it is uniform in the CTA
    symmetric: bool = False
    # path-sensitive refinements: (condition value, which way it went, the fact there), for a
    # value merged at an `if` on a divergent condition and read again under the same condition
    guards: tuple = ()

    @property
    def known(self) -> bool:
        return self.values is not None and not self.shifted


UNIFORM = Fact(Scope.CTA)


class Threads:
    """The threads of one CTA, by linear id (x fastest), as the launch shapes them."""

    def __init__(self, dims: tuple[int, int, int] | None):
        self.known = dims is not None
        self.dims = dims or (MAX_THREADS, 1, 1)
        dx, dy, dz = self.dims
        self.count = dx * dy * dz
        linear = np.arange(self.count, dtype=np.int64)
        self.tid = (linear % dx, (linear // dx) % dy, linear // (dx * dy))
        self.lane = linear % WARP_SIZE

    def group_size(self, scope: Scope) -> int:
        return {Scope.CTA: self.count, Scope.WARPGROUP: WARPGROUP_SIZE, Scope.WARP: WARP_SIZE, Scope.THREAD: 1}[scope]

    def groups(self, scope: Scope, per_thread: np.ndarray) -> np.ndarray:
        """`per_thread` as rows of one group each; the missing threads of a last partial group are padded
        with the group's first value (so they never make a group look mixed)."""
        size = self.group_size(scope)
        rows = -(-self.count // size)
        padded = np.empty(rows * size, dtype=per_thread.dtype)
        padded[: self.count] = per_thread
        if rows * size > self.count:
            padded[self.count :] = per_thread[(rows - 1) * size]
        return padded.reshape(rows, size)

    def level_of(self, values: np.ndarray) -> Scope:
        """The widest scope over which `values` is the same in every thread."""
        if values.ndim == 0:
            return Scope.CTA
        for scope in (Scope.CTA, Scope.WARPGROUP, Scope.WARP):
            rows = self.groups(scope, values)
            if (rows == rows[:, :1]).all():
                return scope
        return Scope.THREAD

    def describe(self, mask: np.ndarray) -> str:
        """'threads 0-63', 'lanes 0-15 of every warp', ... for a set of threads."""
        ids = np.flatnonzero(np.broadcast_to(mask, (self.count,)))
        if len(ids) == 0:
            return "no thread"
        lanes = sorted(set((ids % WARP_SIZE).tolist()))
        warps = sorted(set((ids // WARP_SIZE).tolist()))
        if len(ids) == len(lanes) * len(warps) and len(lanes) < WARP_SIZE:
            where = "every warp" if len(warps) == -(-self.count // WARP_SIZE) else f"warp{'s' if len(warps) > 1 else ''} {_ranges(warps)}"
            return f"lane{'s' if len(lanes) > 1 else ''} {_ranges(lanes)} of {where}"
        return f"thread{'s' if len(ids) > 1 else ''} {_ranges(ids.tolist())}"


def _ranges(ids: list[int]) -> str:
    parts, start = [], None
    for i, v in enumerate(ids):
        if start is None:
            start = v
        if i + 1 == len(ids) or ids[i + 1] != v + 1:
            parts.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    text = ", ".join(parts[:4])
    return text + (", ..." if len(parts) > 4 else "")


@dataclass(frozen=True)
class Condition:
    """One decision an op's execution depends on."""

    op: ir.Operation  # the op that decides: scf.if, scf.for, scf.condition, cf.cond_br, nvvm.exit
    value: ir.Value | None  # the deciding value (its defining op locates the condition)
    text: str  # what decides, in words
    level: Scope  # how uniform the decision is
    masks: tuple[np.ndarray, ...] | None = None  # threads that pass, per alternative; None: not known
    data: bool = False
    split: bool = False  # not known, but splits groups of `level` for some values of its uniform inputs
    exit: bool = False  # "has not exited": some threads executed `exit` before this point
    cluster: bool = False  # CTA-uniform, but may differ between the CTAs of a cluster

    @property
    def known(self) -> bool:
        return self.masks is not None


@dataclass
class Reached:
    """A watched op and the conditions it runs under (outermost first)."""

    op: ir.Operation
    conditions: tuple[Condition, ...]



def condition_location(cond: Condition):
    """The op that best locates a condition: the deciding value's defining op, else the deciding op."""
    if cond.value is not None:
        owner = cond.value.owner
        if not isinstance(owner, ir.Block):
            return owner.operation if hasattr(owner, "operation") else owner
    return cond.op


def threads_reaching(conds: Iterable[Condition], count: int, choice: tuple[int, ...] | None = None) -> np.ndarray:
    """The threads that pass every known condition (one alternative per loop condition)."""
    mask = np.ones(count, dtype=bool)
    known = [c for c in conds if c.known]
    for i, c in enumerate(known):
        mask &= c.masks[choice[i] if choice else 0]
    return mask


def alternatives(conds: list[Condition], limit: int = 64) -> list[tuple[int, ...]]:
    """Combinations of loop-iteration alternatives of the known conditions (at most `limit`)."""
    sizes = [len(c.masks) for c in conds if c.known]
    combos: list[tuple[int, ...]] = [()]
    for s in sizes:
        combos = [c + (k,) for c in combos for k in range(s)][:limit]
    return combos
