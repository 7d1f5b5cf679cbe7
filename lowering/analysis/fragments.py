"""Register fragments: a value read from a thread's registers is as divergent as what was written there.

CuTeDSL keeps per-thread arrays (`cute.make_rmem_tensor`, predicate tensors, MMA
accumulators) in register memory: `cute.memref.alloca` of an `rmem` memref, written by
`cute.memref.store` (`frag[i] = x`), `cute.copy` (a load from global or shared memory, an
`ldmatrix`, a `tcgen05.ld`), `cute.gemm` (an accumulator), ..., and read by
`cute.memref.load`. The alloca itself is the same in every thread (its layout is), so
reading it as an ordinary load would make whatever it holds CTA-uniform: `frag[0] = gX[tid];
if frag[0] > 0: sync_threads()` would pass unseen.

A load from a fragment therefore takes the facts of everything written into the
fragment (flow-insensitively: any write may be the one read), joined; when the fragment
has exactly one writer, a `cute.memref.store` of one scalar, the load takes that value's
fact whole (its per-thread values too: `pred[0] = lane < 16; if pred[0]: ...` is as
decidable as `if lane < 16:`). A write whose fact is not computed yet (later in program
order: a loop's next iteration reads it) counts as per-thread; a fragment written at more
than `_MAX_WRITES` places (accumulators, softmax rows) is per-thread data, unread (following
thousands of writes per load cost CUTLASS's Blackwell FMHA 40 s).

A mixin of `Uniformity`; `writers_of` is what the slicing (`_what_matters`) adds to the
inputs of a fragment load.
"""

from __future__ import annotations

from cute_lowering.analysis.lattice import Fact, Scope
from cute_lowering.analysis.launch import _operation
from cute_lowering.mlir import ir

_VIEW_DEPTH = 32
_NO_MEMORY_OPERANDS = ("scf.", "cf.", "arith.", "math.", "vector.", "nvvm.read.ptx.sreg.")
_MAX_WRITES = 32  # a fragment written at more places is per-thread data, its writes not followed
# ops that read a fragment or make a view of it, never write it
_READERS = ("cute.memref.load", "cute.memref.load_vec", "cute.get_iter", "cute.get_layout", "cute.get_shape",
            "cute.get_stride", "cute.size", "cute.cosize", "cute.ptrtoint", "cute.print", "cute.printf")  # fmt: skip


_RMEM_TYPES: dict = {}  # type -> whether it is register memory (printing a type is slow: once per type)


def reset_type_cache() -> None:
    """Forget the types seen (a new analysis may run in a new context, where old types are gone)."""
    _RMEM_TYPES.clear()


def _is_rmem(value) -> bool:
    t = value.type
    found = _RMEM_TYPES.get(t)
    if found is None:
        found = _RMEM_TYPES[t] = "rmem" in str(t)
    return found


def fragment_root(value):
    """The allocation (`cute.memref.alloca`, `cute.mma.make_fragment`, ...) a register-memory
    value (a memref, an iterator, a view) comes from, following views and `scf.for` carried
    values; None when it cannot be told."""
    v = value
    for _ in range(_VIEW_DEPTH):
        owner = v.owner
        if isinstance(owner, ir.Block):
            parent = _operation(owner.owner)
            index = v.arg_number
            if parent.name == "scf.for" and index >= 1:
                v = list(parent.operands)[2 + index]
                continue
            return None
        op = _operation(owner)
        if op.name == "cute.memref.alloca":
            return op
        nxt = next((o for o in op.operands if _is_rmem(o)), None)
        if nxt is None:
            # register memory made from no other (`cute.mma.make_fragment`): an allocation
            return op if op.name.startswith("cute.") and not op.regions else None
        v = nxt
    return None


def _elsewhere(writer: "_Write", load) -> bool:
    """A store into the same view at another static coordinate than the load reads
    (`frag[1] = n` for a load of `frag[0]`)."""
    if not writer.store or load.name != "cute.memref.load" or writer.target is None:
        return False
    r = list(load.operands)
    if len(r) < 2 or writer.target != r[0]:
        return False
    b = str(r[1].type)
    return "?" not in writer.coord and "?" not in b and writer.coord != b


class _Write:
    """One op that may write into a fragment, read once: its inputs (the non-register operands),
    and for a `cute.memref.store`, the view and static coordinate it writes."""

    __slots__ = ("op", "name", "store", "inputs", "target", "coord")

    def __init__(self, op):
        operands = list(op.operands)
        self.op, self.name = op, op.name
        self.store = op.name == "cute.memref.store" and len(operands) >= 3
        self.inputs = [v for v in operands if not _is_rmem(v)]
        self.target = operands[0] if self.store else None
        self.coord = str(operands[1].type) if self.store else ""


class FragmentFacts:
    """`_fragment_load(op, operands)`: the fact of a value read from a register fragment."""

    _fragment_writers: dict | None = None
    _load_writes: dict | None = None

    def writers_of(self, alloca) -> list:
        """The ops that may write into the fragment `alloca` allocates (found once per function)."""
        return [w.op for w in self._writes_of(alloca)]

    def _writes_of(self, alloca) -> list:
        if self._fragment_writers is None:
            writers: dict = {}

            def visit(op):
                name = op.name
                if name in _READERS or name.startswith(_NO_MEMORY_OPERANDS):
                    return ir.WalkResult.ADVANCE  # (arith/math/vector ops take no memref: not listed)
                rmem = [o for o in op.operands if _is_rmem(o)]
                if rmem and not any(_is_rmem(r) for r in op.results):
                    write = _Write(op)
                    for root in {fragment_root(o) for o in rmem}:
                        writers.setdefault(root, []).append(write)
                return ir.WalkResult.ADVANCE

            _operation(self.func).walk(visit)
            self._fragment_writers = writers
        return self._fragment_writers.get(alloca, []) + self._fragment_writers.get(None, [])

    def load_inputs(self, load) -> list | None:
        """The writes a fragment load may read (None: its fragment cannot be traced, or is written
        at more than _MAX_WRITES places: taken as per-thread data unread); once per load."""
        if self._load_writes is None:
            self._load_writes = {}
        found = self._load_writes.get(load, False)
        if found is False:
            root = fragment_root(list(load.operands)[0])
            writes = self._writes_of(root) if root is not None else None
            if writes is None or len(writes) > _MAX_WRITES:
                found = None
            else:
                found = [w for w in writes if not _elsewhere(w, load)]
            self._load_writes[load] = found
        return found

    def _written(self, writer: _Write) -> Fact:
        """What one write puts into a fragment: a store's value; anything else (a copy, an MMA)
        whatever its operands are, as data when it differs per thread."""
        facts = self.facts
        if writer.store:
            f = facts.get(writer.inputs[-1])
            return f if f is not None else Fact(Scope.THREAD, None, "a register written later in program order")
        found = [facts.get(v) for v in writer.inputs]
        if any(f is None for f in found):
            return Fact(Scope.THREAD, None, f"a register written by '{writer.name}' later in program order", data=True)
        joined = self._join(found)
        if joined.level > Scope.CTA:
            return Fact(joined.level, None, f"a register written by '{writer.name}'", data=True)
        return joined

    def _fragment_load(self, op, operands: list[Fact]) -> Fact:
        writers = self.load_inputs(op)
        if writers is None:
            # (an accumulator, a softmax row: written all over the kernel; a predicate fragment,
            # what conditions read, is written at a few places)
            return Fact(Scope.THREAD, None, "a register fragment this analysis does not follow (untraced, or written "
                        f"at more than {_MAX_WRITES} places)", data=True)
        coord = self._join(operands[1:])
        if len(writers) == 1 and writers[0].store and op.name == "cute.memref.load":
            stored = self._written(writers[0])
            return stored if coord.level == Scope.CTA else self._join([stored, coord])
        joined = self._join([self._written(w) for w in writers] + [coord])
        if joined.level > Scope.CTA:
            return Fact(joined.level, None, joined.why or "a per-thread register fragment", joined.data)
        return joined
