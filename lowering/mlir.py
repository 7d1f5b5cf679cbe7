"""The one door to CuTeDSL's bundled MLIR bindings (`cutlass._mlir`).

No other file imports the bindings' modules directly, so a change in how CuTeDSL
ships them is mended here. Importing `cutlass` registers the CuTe, CUDA, GPU, NVVM
and LLVM dialects with every context created afterwards, which is what lets us parse
IR dumped by `CUTE_DSL_KEEP=ir-debug`.
"""

from __future__ import annotations

import cutlass  # noqa: F401  (side effect: dialect registration)
from cutlass._mlir import ir, passmanager, rewrite
from cutlass._mlir.dialects import arith, llvm, nvvm, vector

__all__ = [
    "ir",
    "passmanager",
    "rewrite",
    "arith",
    "llvm",
    "nvvm",
    "vector",
    "new_context",
    "parse_module",
    "element_type",
    "is_float",
    "is_integer",
    "defining_op",
]


def new_context() -> ir.Context:
    """A fresh context that knows every dialect CuTeDSL emits."""
    return ir.Context()


def parse_module(text: str, context: ir.Context) -> ir.Module:
    """Parse textual IR; raises `ir.MLIRError` with located diagnostics on failure."""
    return ir.Module.parse(text, context)


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
