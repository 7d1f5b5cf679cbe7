"""The one door to CuTeDSL's bundled MLIR bindings (`cutlass._mlir`).

No other file imports the bindings' modules directly, so a change in how CuTeDSL
ships them is mended here. Importing `cutlass` registers the CuTe, CUDA, GPU, NVVM
and LLVM dialects with every context created afterwards, which is what lets us parse
IR dumped by `CUTE_DSL_KEEP=ir-debug`.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys

import cutlass  # noqa: F401  (side effect: dialect registration)
from cutlass._mlir import ir, passmanager, rewrite
from cutlass._mlir.dialects import arith, llvm, nvvm, vector
from cutlass._mlir.dialects import math as math_ops

__all__ = [
    "ir",
    "passmanager",
    "rewrite",
    "arith",
    "llvm",
    "nvvm",
    "vector",
    "math_ops",
    "new_context",
    "parse_module",
    "element_type",
    "is_float",
    "is_integer",
    "defining_op",
    "plain_values",
    "create_op",
]


def new_context() -> ir.Context:
    """A fresh context that knows every dialect CuTeDSL emits."""
    return ir.Context()


# MLIR's parser, verifier and printer recurse once per nesting level: on an 8 MB stack
# 2000 nested regions parse, 5000 crash the process (SIGSEGV), and so do 100000 nested
# `[` of an attribute. Real IR nests a few dozen levels; text nested deeper than this is
# refused before MLIR sees it.
MAX_TEXT_NESTING = 1000
_NESTING_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[\[({\])}]')


class NestingTooDeep(ValueError):
    """IR text nested deeper than `MAX_TEXT_NESTING`; `line`/`col` (1-based) of the bracket beyond it."""

    def __init__(self, line: int, col: int):
        super().__init__(f"IR nested deeper than {MAX_TEXT_NESTING} levels of brackets: not supported")
        self.line, self.col = line, col


def parse_module(text: str, context: ir.Context) -> ir.Module:
    """Parse textual IR; raises `ir.MLIRError` with located diagnostics on failure, and
    `NestingTooDeep` for text that would overflow the parser's stack."""
    _check_nesting(text)
    return ir.Module.parse(text, context)


def _check_nesting(text: str) -> None:
    if sum(text.count(c) for c in "([{") <= MAX_TEXT_NESTING:
        return  # cannot nest deeper than it has brackets
    depth = 0
    for token in _NESTING_TOKENS.finditer(text):
        c = token.group()[0]
        if c in "([{":
            depth += 1
            if depth > MAX_TEXT_NESTING:
                start = token.start()
                line = text.count("\n", 0, start) + 1
                raise NestingTooDeep(line, start - (text.rfind("\n", 0, start) + 1) + 1)
        elif c in ")]}":
            depth -= 1


def element_type(t: ir.Type) -> ir.Type:
    """The scalar type of `t`: itself for scalars, the element type for shaped types."""
    if isinstance(t, ir.ShapedType) or ir.VectorType.isinstance(t):
        return ir.ShapedType(t).element_type
    return t


def is_float(t: ir.Type) -> bool:
    return isinstance(t, ir.FloatType) or ir.FloatType.isinstance(t)


def is_integer(t: ir.Type) -> bool:
    return ir.IntegerType.isinstance(t)


def defining_op(value: ir.Value):
    """The op that produces `value`, or None for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.opview if hasattr(owner, "opview") else owner


def create_op(name: str, results: list[ir.Type], operands: list[ir.Value], attributes: dict) -> ir.Operation:
    """Build an op at the current insertion point without CuTeDSL's per-builder wrapper.

    CuTeDSL wraps every generated op builder (location capture, logging); going
    through `Operation.create` is about 5x cheaper, which matters for 100k-op modules.
    """
    return ir.Operation.create(name, results=results, operands=operands, attributes=attributes)


@functools.cache
def _dsl_value_casters() -> tuple:
    """(typeid, caster) pairs for the scalar types CuTeDSL wraps in its `ArithValue`.

    Found by looking, not assumed: a value of each type is created and its Python
    class checked, so another CuTeDSL release's choices are respected.
    """
    from cutlass._mlir_helpers.arith import ArithValue

    candidates = {
        "f32": ir.F32Type, "f16": ir.F16Type, "bf16": ir.BF16Type, "f64": ir.F64Type,
        "i32": ir.IntegerType, "f8E4M3FN": ir.Float8E4M3FNType, "f8E5M2": ir.Float8E5M2Type,
        "f8E8M0FNU": ir.Float8E8M0FNUType, "f4E2M1FN": ir.Float4E2M1FNType,
    }  # fmt: skip
    found = []
    with ir.Context(), ir.Location.unknown():
        names = list(candidates)
        signature = ", ".join(f"%a{i}: {n}" for i, n in enumerate(names))
        probe = ir.Module.parse(f"func.func @probe({signature}) {{ return }}")
        args = probe.body.operations[0].regions[0].blocks[0].arguments
        for i, name in enumerate(names):
            if isinstance(args[i], ArithValue):
                found.append((candidates[name].static_typeid, ArithValue))
    return tuple(found)


@contextlib.contextmanager
def plain_values(module: ir.Module | None = None):
    """Hand out plain `ir.Value`s instead of CuTeDSL's wrappers while our code reads IR.

    Importing cutlass registers a Python class as the "value caster" of many types:
    `ArithValue` for scalars (~4 us per value, ten times the value itself), and for
    CuTe types (`!cute.memref`, `!cute.ptr`, layouts) `_Tensor`, `_Pointer`, ...
    whose constructors build ops (e.g. `cute.get_iter`) on the value. Outside
    CuTeDSL's tracing there is no insertion point, so those ops are detached, owned by
    the Python wrapper, and they use a value of our module; CuTeDSL's `lru_cache_ir`
    caches keep the wrappers for the life of the process. When such a wrapper dies
    after its module (at interpreter exit, in whatever order the caches and modules
    go), destroying its op unlinks an operand from a use list in freed memory: the
    heap corruption ("corrupted double-linked list", SIGSEGV while "Garbage-collecting")
    that `lowering-repro reduce` hit in about 1 run in 8. So no code of ours may let
    CuTeDSL wrap a value it did not trace: inside this block the scalar casters, and
    with `module` the caster of every value type in that module, are swapped for the
    identity and put back after, even on error. Not thread-safe: do not trace CuTeDSL
    code in another thread meanwhile.
    """
    casters = dict(_dsl_value_casters())
    if module is not None:
        for typeid in _value_typeids(module):
            if typeid not in casters and typeid not in _swapped:
                caster = _registered_caster(typeid)
                if caster is not None:
                    casters[typeid] = caster
    with _swapped_out(casters.items()):
        yield


# typeid -> [the caster it had before, how many open blocks swapped it]: blocks nest (a
# check pass inside the pipeline's own block), and only the outermost puts a caster back
_swapped: dict = {}


@contextlib.contextmanager
def _swapped_out(casters):
    taken = []
    for typeid, caster in casters:
        entry = _swapped.get(typeid)
        if entry is None:
            ir.register_value_caster(typeid, replace=True)(_plain)
            _swapped[typeid] = [caster, 1]
        else:
            entry[1] += 1
        taken.append(typeid)
    try:
        yield
    finally:
        for typeid in taken:
            entry = _swapped[typeid]
            entry[1] -= 1
            if entry[1] == 0:
                ir.register_value_caster(typeid, replace=True)(entry[0])
                del _swapped[typeid]


def _value_typeids(module: ir.Module) -> set:
    """The TypeIDs of every op result and block argument type in `module` (no value is built)."""
    found = set()

    def visit(op):
        for t in op.results.types:
            found.add(t.typeid)
        for region in op.regions:
            for block in region.blocks:
                for t in block.arguments.types:
                    found.add(t.typeid)
                for inner in block.operations:
                    visit(inner.operation)

    visit(module.operation)
    return found


_ALREADY_REGISTERED = re.compile(r"already registered: <class '([\w.]+)'>")


def _registered_caster(typeid):
    """The caster registered for `typeid`: what the bindings name when asked to register another.

    The bindings can register a caster but not list them; registering without
    `replace` fails and names the one in place. Where none was, ours (the identity)
    stays, which changes nothing. None when the caster cannot be found by its name:
    the caller then leaves that type alone.
    """
    try:
        ir.register_value_caster(typeid)(_plain)
    except RuntimeError as e:
        match = _ALREADY_REGISTERED.search(str(e))
        return _resolve(match.group(1)) if match else None
    return _plain


def _resolve(dotted: str):
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:split]))
        if module is None:
            continue
        found = module
        for name in parts[split:]:
            found = getattr(found, name, None)
        return found if callable(found) else None
    return None


def _plain(value):
    return value


def execution_engine():
    """MLIR's host JIT class (`ExecutionEngine`), for running arith IR on the CPU in tests."""
    from cutlass._mlir import execution_engine as engine

    return engine.ExecutionEngine


@functools.cache
def _cute_value_casters() -> tuple:
    """(typeid, caster) for CuTeDSL's wrappers of CuTe and vector values (tensors, layouts,
    pointers, ...). Their constructors build ops (`cute.get_iter`): merely reading such a
    value from an analysed module would insert IR into it."""
    import cutlass._mlir.dialects.cute as cute_ir
    import cutlass._mlir.dialects.cute_nvgpu as cute_nvgpu_ir
    from cutlass._mlir_helpers.vector import Vector
    from cutlass.cute import core, tensor

    return (
        (cute_ir.MemRefType.get_static_typeid(), tensor._Tensor),
        (cute_ir.CoordTensorType.get_static_typeid(), tensor._Tensor),
        (cute_nvgpu_ir.SmemDescViewType.get_static_typeid(), tensor._Tensor),
        (cute_ir.SwizzleType.get_static_typeid(), core.Swizzle),
        (cute_ir.LayoutType.get_static_typeid(), core._Layout),
        (cute_ir.ComposedLayoutType.get_static_typeid(), core._ComposedLayout),
        (cute_ir.PtrType.get_static_typeid(), core._Pointer),
        *([(cute_ir.SparseElemType.get_static_typeid(), core.SparseElem)] if hasattr(core, "SparseElem") else []),  # 4.8+
        (ir.VectorType.static_typeid, Vector),
    )


@contextlib.contextmanager
def inert_values():
    """`plain_values`, for every value CuTeDSL wraps: what an analysis reading a whole
    kernel needs (it meets tensors, layouts and pointers, not only scalars)."""
    with plain_values(), _swapped_out(_cute_value_casters()):
        yield


def warm_value_casters() -> None:
    """Run the caster probes now, outside any CuTeDSL trace. The probe of `_dsl_value_casters`
    builds a throwaway context and CuTeDSL values (through CuTeDSL's op wrappers): run for the
    first time inside a trace-finalize hook, it corrupted a FlashAttention-4 compile
    (`malloc(): unaligned tcache chunk detected`, 3 of 3 runs); run before, the same compile
    passes (2 of 2). `cute_lowering.prelowering`/`install` call this before any compile."""
    _dsl_value_casters()
    _cute_value_casters()
