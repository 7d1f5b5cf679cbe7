"""Facts of the ops that compute values: sources (the thread index, constants, loads, collectives'
results) and integer arithmetic, evaluated per thread where the operands are known.

A mixin of `Uniformity` (`uniformity.py`), which walks the control flow and calls
`_evaluate` on each op it visits.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from cute_lowering.analysis.fragments import _is_rmem
from cute_lowering.analysis.lattice import UNIFORM, WARP_SIZE, Fact, Scope
from cute_lowering.analysis.launch import _int_attr
from cute_lowering.mlir import ir

# --- sources -------------------------------------------------------------------------
_CTA_UNIFORM_SREGS = (
    "ctaid", "nctaid", "ntid", "clusterid", "nclusterid", "cluster.ctaid", "cluster.nctaid",
    "cluster.ctarank", "cluster.nctarank", "nwarpid", "nsmid", "smid", "gridid", "envreg",
)  # fmt: skip
# of those, the ones that differ between the CTAs of one cluster (uniform per CTA, not per cluster)
_CLUSTER_VARYING_SREGS = ("ctaid", "cluster.ctaid", "cluster.ctarank", "smid")
# results that differ per thread whatever their operands: atomics (each thread gets its own
# old value), mbarrier polls, and loads that hand each lane its own piece (TMEM lanes, ldmatrix)
_PER_THREAD_OPS = (
    "llvm.atomicrmw", "llvm.cmpxchg", "nvvm.atomic", "nvvm.red.", "cute.atomic", "cute_nvgpu.atomic",
    "nvvm.mbarrier.try_wait", "nvvm.mbarrier.test_wait", "nvvm.activemask", "nvvm.tcgen05.ld", "nvvm.ldmatrix",
)  # fmt: skip

_KINDS: dict[str, str] = {}


def _kind_of(name: str) -> str:
    """How the analysis treats an op by its name: a source of facts, arithmetic it evaluates, or generic."""
    if name in ("arith.constant", "cute_nvgpu.arch.make_warp_uniform", "nvvm.shfl.sync", "nvvm.vote.sync",
                "nvvm.redux.sync", "nvvm.elect.sync", "cute.memref.alloca") or name.startswith("nvvm.read.ptx.sreg."):
        return "source"
    if name.startswith(_PER_THREAD_OPS) or "load" in name or name.endswith(".ld") or ".ld." in name:
        return "source"
    if name in _BINARY or name in _CASTS or name in ("arith.cmpi", "arith.select"):
        return "arith"
    return "generic"


# --- evaluation of integer arithmetic on known per-thread values ----------------------
def _cmp(pred: int, a, b):
    # arith.cmpi predicates: eq ne slt sle sgt sge ult ule ugt uge
    ops = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)
    if pred < 6:
        return ops[pred](a, b)
    ua, ub = a.astype(np.uint64), b.astype(np.uint64)
    return (np.less, np.less_equal, np.greater, np.greater_equal)[pred - 6](ua, ub)


def _floordiv(a, b):
    return np.floor_divide(a, b)


def _truncdiv(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (b < 0), -q, q)


_BINARY = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.floordivsi": _floordiv, "arith.divsi": _truncdiv, "arith.divui": _floordiv,
    "arith.ceildivsi": lambda a, b: -np.floor_divide(-a, b), "arith.ceildivui": lambda a, b: -np.floor_divide(-a, b),
    "arith.remsi": lambda a, b: a - _truncdiv(a, b) * b, "arith.remui": np.remainder,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.shli": np.left_shift, "arith.shrsi": np.right_shift, "arith.shrui": np.right_shift,
    "arith.minsi": np.minimum, "arith.maxsi": np.maximum, "arith.minui": np.minimum, "arith.maxui": np.maximum,
}  # fmt: skip
_MINMAX = ("arith.minsi", "arith.maxsi", "arith.minui", "arith.maxui")
_ZERO = np.array(0, dtype=np.int64)
_CLUSTER_VARYING = Fact(Scope.CTA, cluster=True)
_FRAGMENT_LOADS = ("cute.memref.load", "cute.memref.load_vec")
_TMEM_PARTITIONS = ("cute.tiled.copy.partition_S", "cute.tiled.copy.partition_D")


def _threshold_key(pred: int | None, diff, g: int):
    """Per thread, what decides `diff + g*m <pred> 0` over every integer m: threads with the
    same key decide alike for every m (`<`/`>=`: floor(diff/g); `<=`/`>`: ceil(diff/g);
    `==`/`!=`: diff/g where g divides diff, else a key shared by no multiple)."""
    if g == 1:
        return diff
    if pred in (2, 5, 6, 9):  # slt sge ult uge
        return np.floor_divide(diff, g)
    if pred in (3, 4, 7, 8):  # sle sgt ule ugt
        return -np.floor_divide(-diff, g)
    return np.where(diff % g == 0, diff // g, np.iinfo(np.int64).min)


_CASTS = ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui", "arith.bitcast")



class ArithFacts:
    """The per-op half of the analysis: `_evaluate(op)` sets the facts of `op`'s results."""

    def _set(self, value: ir.Value, fact: Fact) -> None:
        if fact.values is not None and fact.values.ndim == 0 and not fact.shifted:
            fact = Fact(Scope.CTA, fact.values)
        self.facts[value] = fact

    def _known(self, values: np.ndarray, why: str = "") -> Fact:
        level = self.threads.level_of(values)
        return Fact(level, values, why if level != Scope.CTA else "")

    def _join(self, facts: list[Fact], why: str = "") -> Fact:
        """A value that is one of `facts` (or computed from all of them)."""
        worst, data = UNIFORM, False
        for f in facts:
            if f.level > worst.level or (f.level == worst.level and f.data and not worst.data):
                worst = f
            data = data or (f.data and f.level > Scope.CTA)
        if worst.level == Scope.CTA:
            return _CLUSTER_VARYING if any(f.cluster for f in facts) else UNIFORM
        return Fact(worst.level, None, worst.why or why, data, symmetric=all(self.symmetric(f) for f in facts))

    def _symmetric_values(self, v) -> bool:
        return self.symmetric(Fact(Scope.THREAD, np.asarray(v))) if np.ndim(v) else True

    def symmetric(self, f: Fact) -> bool:
        """Whether `f` is the same in every warp, lane for lane (uniform values are)."""
        if f.level == Scope.CTA or f.symmetric:
            return True
        if f.values is not None and f.values.ndim:  # (with `shifted`: plus a uniform term)
            count = self.threads.count
            if count % WARP_SIZE:
                return False
            rows = np.asarray(f.values).reshape(-1, WARP_SIZE)
            return bool((rows == rows[:1]).all())
        return False

    def _default(self, op, operands: list[Fact]) -> Fact:
        """A result computed from its operands by an op we do not evaluate."""
        return self._join(operands) if operands else UNIFORM

    def _evaluate(self, op) -> None:
        if self._needed is not None and op not in self._needed:
            return  # no fact the check reads depends on this op's results
        results = op.results
        if not len(results):
            return
        name = op.name
        kind = _KINDS.get(name)
        if kind is None:
            kind = _KINDS[name] = _kind_of(name)
        facts = self.facts
        if self._assumed:
            operands = [self.fact(v) for v in op.operands]
        else:
            operands = [facts.get(v) or self.fact(v) for v in op.operands]
        if kind != "source" and all(f is UNIFORM for f in operands):
            for r in results:  # the common case (layouts, shapes, uniform scalars): no more to decide
                facts[r] = UNIFORM
            return
        fact = self._compute(op, name, kind, operands)
        if fact.level > Scope.CTA and any(f.guards for f in operands):
            fact = self._guarded(op, name, kind, operands, fact)
        for r in results:
            self._set(r, fact)

    def _compute(self, op, name: str, kind: str, operands: list[Fact]) -> Fact:
        if name in _TMEM_PARTITIONS and len(operands) == 3 and operands[2].level > Scope.WARP:
            if any(atom in str(op.operands[0].type) for atom in ("tmem_load", "tmem_store")):
                # A TMEM copy's thread layout gives each warp one block of 32 TMEM lanes, the same
                # base address in all its threads: partitioned by the thread index, the view is
                # per warp (a coordinate sliced from it afterwards may still differ per lane)
                return self._join(operands[:2] + [dataclasses.replace(operands[2], level=Scope.WARP)])
        fact = None
        if kind == "source":
            fact = self._source(op, name, operands)
        elif kind == "arith":
            fact = self._arith(op, name, operands)
        return fact if fact is not None else self._default(op, operands)

    def _guarded(self, op, name: str, kind: str, operands: list[Fact], fact: Fact) -> Fact:
        """A result computed from values refined under a condition (see `Fact.guards`) is refined
        under it too: computed again from the refined operands."""
        keys = []
        for f in operands:
            for cond, holds, _ in f.guards:
                if (cond, holds) not in keys:
                    keys.append((cond, holds))
        guards = []
        for cond, holds in keys[:4]:
            refined = [next((g for c, h, g in f.guards if c == cond and h == holds), f) for f in operands]
            g = self._compute(op, name, kind, refined)
            if g.level < fact.level or (g.level == fact.level and g.data < fact.data):
                guards.append((cond, holds, g))
        return dataclasses.replace(fact, guards=tuple(guards)) if guards else fact

    def _source(self, op, name: str, operands: list[Fact]) -> Fact | None:
        t = self.threads
        if name == "arith.constant":
            try:
                attr = op.attributes["value"]
                if isinstance(attr, (ir.IntegerAttr, ir.BoolAttr)):
                    return Fact(Scope.CTA, np.array(int(attr.value), dtype=np.int64))
            except (KeyError, ValueError, TypeError):
                pass
            return UNIFORM
        if name.startswith("nvvm.read.ptx.sreg."):
            reg = name[len("nvvm.read.ptx.sreg.") :]
            if reg in ("tid.x", "tid.y", "tid.z"):
                axis = "xyz".index(reg[-1])
                if not t.known and axis:
                    return Fact(Scope.THREAD, None, f"the thread index ({reg})")
                return self._known(t.tid[axis].copy(), f"the thread index ({reg})")
            if reg == "laneid":
                return self._known(t.lane.copy(), "the lane id")
            if reg in ("ntid.x", "ntid.y", "ntid.z") and t.known:
                return Fact(Scope.CTA, np.array(t.dims["xyz".index(reg[-1])], dtype=np.int64))
            if reg in ("warpid",):
                return Fact(Scope.WARP)
            if any(reg == s or reg.startswith(s + ".") for s in _CLUSTER_VARYING_SREGS):
                return _CLUSTER_VARYING
            if any(reg == s or reg.startswith(s + ".") for s in _CTA_UNIFORM_SREGS):
                return UNIFORM
            return Fact(Scope.THREAD, None, f"the special register {reg}", data=True)
        if name == "cute_nvgpu.arch.make_warp_uniform":
            f = operands[0]
            if f.known:
                return f
            return Fact(min(f.level, Scope.WARP), None, f.why)
        if name == "nvvm.shfl.sync":
            return self._shuffle(op, operands)
        if name == "nvvm.vote.sync":
            # every lane of the mask gets the same ballot / answer; of a value the same in every
            # warp (lane for lane), the same answer in every warp
            return self._warp_wide(operands[1], operands[0])
        if name == "nvvm.redux.sync":
            return self._warp_wide(operands[0], operands[1])
        if name == "nvvm.elect.sync":
            # Full warp reaching it (elect.sync demands it): lane 0 is elected.
            return self._known(t.lane == 0, "elect.sync (one lane of the warp)")
        if name.startswith(_PER_THREAD_OPS):
            return Fact(Scope.THREAD, None, f"the result of '{name}'", data=True)
        if name in _FRAGMENT_LOADS and operands and _is_rmem(op.operands[0]):
            return self._fragment_load(op, operands)
        if "load" in name or name.endswith(".ld") or ".ld." in name:
            # A load through an address (and coordinate) uniform at a scope reads the same
            # value there; through a per-thread address it may differ per thread.
            joined = self._join(operands)
            if joined.level > Scope.CTA:
                return Fact(joined.level, None, f"a value loaded through a per-{joined.level.label} address ('{name}')", data=True,
                            symmetric=joined.symmetric)
            return UNIFORM
        if name == "cute.memref.alloca" and "smem" not in str(op.results[0].type) and operands == []:
            # registers: each thread's own fragment; what it holds is per-thread data
            return Fact(Scope.THREAD, None, "a per-thread register fragment", data=True)
        return None

    def _warp_wide(self, value: Fact, mask: Fact) -> Fact:
        """The result of a warp reduction or vote over `value`: one per warp."""
        if value.level == Scope.CTA or (self.symmetric(value) and mask.level == Scope.CTA):
            return _CLUSTER_VARYING if value.cluster else UNIFORM
        return Fact(min(value.level, Scope.WARP), None, value.why, value.data and value.level > Scope.WARP)

    def _shuffle(self, op, operands: list[Fact]) -> Fact:
        kind = str(op.attributes["kind"]) if "kind" in op.attributes else ""
        value, offset = operands[1], operands[2]
        if value.level <= Scope.WARP and not value.known:
            return Fact(value.level)
        if "idx" in kind and offset.level <= Scope.WARP:
            if self.symmetric(value) and offset.level == Scope.CTA:
                return UNIFORM  # lane k of every warp holds the same value: so does every thread
            return Fact(Scope.WARP)  # a broadcast from one lane: the same in the whole warp
        symmetric = self.symmetric(value) and self.symmetric(offset)
        return Fact(Scope.THREAD, None, f"a shuffle ({kind or 'shfl'}) of a per-thread value", value.data, symmetric=symmetric)

    def _shifted(self, op, name: str, operands: list[Fact]) -> Fact | None:
        """Integer arithmetic on values known up to a CTA-uniform term that is a multiple of a
        known divisor (`tidx + bidx * 128 < n * 32`: the unknown terms differ by multiples of
        32, so the comparison is the same in every lane of a warp)."""
        if any(f.data or (not f.known and not f.shifted and f.level > Scope.CTA) for f in operands):
            return None
        if any(f.split for f in operands):
            return self._split(name, operands)
        cluster = any(f.cluster for f in operands)
        # each operand as (its known part, the divisor of its unknown part; 0: none)
        parts = [(f.values, 0) if f.known else (f.values, f.divisor) if f.shifted else (_ZERO, 1) for f in operands]
        vals = [p[0] for p in parts]
        why = next((f.why for f in operands if f.why), "")
        if name in ("arith.addi", "arith.subi") and len(vals) == 2:
            v = vals[0] + vals[1] if name == "arith.addi" else vals[0] - vals[1]
            return self._shift(v, math.gcd(parts[0][1], parts[1][1]), why, cluster)
        if name in ("arith.muli", "arith.shli") and len(vals) == 2:
            scale = operands[1] if name == "arith.shli" else next((f for f in operands if f.known and f.values.ndim == 0), None)
            if scale is None or not scale.known or scale.values.ndim:
                return None
            c = int(scale.values) if name == "arith.muli" else (1 << int(scale.values) if 0 <= int(scale.values) < 62 else None)
            if c is None:
                return None
            other = parts[1] if name == "arith.muli" and operands[0] is scale else parts[0]
            return self._shift(other[0] * c, other[1] * abs(c), why, cluster)
        if name in _CASTS and len(vals) == 1:
            return operands[0]
        if name in _MINMAX and len(vals) == 2:
            # min(lane, n): the lane where n is large, n where it is small
            level = max(self.threads.level_of(np.broadcast_to(v, (self.threads.count,))) for v in vals)
            if level == Scope.CTA:
                return _CLUSTER_VARYING if cluster else UNIFORM
            return Fact(level, None, why, split=True, symmetric=all(self._symmetric_values(v) for v in vals))
        if name == "arith.cmpi" and len(vals) == 2:
            # which side of an unknown threshold each thread falls: the threads differ exactly
            # where the compared difference, in units of the unknown term's divisor, differs
            g = math.gcd(parts[0][1], parts[1][1]) or 1
            key = np.broadcast_to(_threshold_key(_int_attr(op, "predicate"), vals[0] - vals[1], g), (self.threads.count,))
            level = self.threads.level_of(key)
            if level == Scope.CTA:
                return _CLUSTER_VARYING if cluster else UNIFORM
            return Fact(level, None, why, split=True, symmetric=self._symmetric_values(vals[0] - vals[1]))
        return None

    def _shift(self, v, divisor: int, why: str, cluster: bool) -> Fact:
        if divisor == 0:
            return self._known(v, why)
        level = self.threads.level_of(v) if np.ndim(v) else Scope.CTA
        if level == Scope.CTA and divisor == 1:
            return _CLUSTER_VARYING if cluster else UNIFORM  # an unknown uniform value, nothing more
        return Fact(level, v, why if level > Scope.CTA else "", shifted=True, divisor=divisor, cluster=cluster)

    def _split(self, name: str, operands: list[Fact]) -> Fact | None:
        """Arithmetic on a value that splits its groups for some values of its uniform inputs
        (`min(lane, n)`) and on uniform values: the result splits them too."""
        if any(f.level > Scope.CTA and not f.split for f in operands):
            return None
        if name in ("arith.addi", "arith.subi") or name in _CASTS or name in _MINMAX:
            pass
        elif name == "arith.cmpi" and not any(f.known for f in operands):
            pass  # against an unknown threshold (against a constant, the split may not show)
        elif name == "arith.muli" and any(f.known and f.values.ndim == 0 and int(f.values) != 0 for f in operands):
            pass
        else:
            return None
        worst = max((f for f in operands if f.split), key=lambda f: f.level)
        return Fact(worst.level, None, worst.why, split=True, symmetric=all(self.symmetric(f) for f in operands))

    def _arith(self, op, name: str, operands: list[Fact]) -> Fact | None:
        if not operands:
            return None
        if any(f.choices for f in operands):
            fact = self._on_choices(op, name, operands)
            if fact is not None:
                return fact
        if not all(f.known for f in operands):
            return self._shifted(op, name, operands)
        return self._exact(op, name, operands)

    def _on_choices(self, op, name: str, operands: list[Fact]) -> Fact | None:
        """Arithmetic on a value that is one of several per-thread arrays (and on known values):
        evaluated on each."""
        which = [i for i, f in enumerate(operands) if f.choices]
        if len(which) != 1 or not all(f.known for i, f in enumerate(operands) if i != which[0]):
            return None
        results = []
        for choice in operands[which[0]].choices:
            f = self._exact(op, name, [self._known(choice) if i == which[0] else g for i, g in enumerate(operands)])
            if f is None or not f.known:
                return None
            results.append(f)
        return self.choose(results, operands[which[0]].why)

    def choose(self, facts: list[Fact], why: str = "") -> Fact:
        """A value that is exactly one of `facts` (all known), a CTA-uniform input deciding which."""
        arrays = []
        for f in facts:
            if not any(np.array_equal(f.values, a) for a in arrays):
                arrays.append(f.values)
        if len(arrays) == 1:
            return facts[0]
        level = max(f.level for f in facts)
        if level == Scope.CTA:
            return UNIFORM
        n = self.threads.count
        return Fact(level, None, why or next((f.why for f in facts if f.why), ""), split=True,
                    choices=tuple(np.broadcast_to(a, (n,)) for a in arrays))

    def _exact(self, op, name: str, operands: list[Fact]) -> Fact | None:
        vals = [f.values for f in operands]
        why = next((f.why for f in operands if f.why), "")
        try:
            with np.errstate(all="ignore"):
                if name in _BINARY and len(vals) == 2:
                    if name.startswith(("arith.floordiv", "arith.div", "arith.ceildiv", "arith.rem")) and (vals[1] == 0).any():
                        return None
                    if name in ("arith.shli", "arith.shrsi", "arith.shrui") and ((vals[1] < 0) | (vals[1] > 62)).any():
                        return None
                    return self._known(_BINARY[name](vals[0], vals[1]), why)
                if name == "arith.cmpi":
                    pred = _int_attr(op, "predicate")
                    if pred is None:
                        return None
                    return self._known(_cmp(pred, vals[0], vals[1]).astype(np.int64), why)
                if name == "arith.select" and len(vals) == 3:
                    return self._known(np.where(vals[0] != 0, vals[1], vals[2]), why)
                if name in _CASTS and len(vals) == 1:
                    return self._known(vals[0], why)
        except (TypeError, ValueError, OverflowError):
            return None
        return None

    # -- control ---------------------------------------------------------------------
