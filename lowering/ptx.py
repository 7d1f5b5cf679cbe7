"""Build one inline PTX instruction in either form, so passes say *what*, never *how*.

Passes write PTX with `nvvm.inline_ptx` placeholders: `{$w0}` for the result and
`{$r0}`, `{$r1}`, ... for the operands. `emit` picks the op:

- `ptx`: `nvvm.inline_ptx`. CuTeDSL models it as side-effecting, so nothing CSEs,
  hoists or deletes it. Its 4.8.1 lowering gives any operand defined by a constant
  the immediate constraint `n`, which libNVVM rejects for floats (NVIDIA/cutlass#3594):
  we therefore move float constants into a register first (`in_register`).
- `asm`: `llvm.inline_asm` with explicit register constraints and no side effects:
  pure, so LLVM may CSE, hoist and delete it like any arithmetic.
"""

from __future__ import annotations

import re

from cute_lowering.mlir import create_op, defining_op, ir, llvm
from cute_lowering.registry import Option, choice

EMIT_FORMS = ("ptx", "asm")


def emit_option(default: str) -> Option:
    return choice(
        "emit",
        EMIT_FORMS,
        default,
        "ptx: nvvm.inline_ptx (side-effecting); asm: llvm.inline_asm with constraints, pure",
    )


def register_letter(t: ir.Type) -> str | None:
    """The NVPTX inline-asm constraint letter for a scalar type, or None if it has none."""
    if ir.F32Type.isinstance(t):
        return "f"
    if ir.F64Type.isinstance(t):
        return "d"
    if ir.F16Type.isinstance(t) or ir.BF16Type.isinstance(t):
        return "h"
    if ir.IntegerType.isinstance(t):
        return {16: "h", 32: "r", 64: "l"}.get(ir.IntegerType(t).width)
    if llvm.PointerType.isinstance(t):
        return "l"
    return None


_MOVE = {"f": "mov.b32 $0, $1;", "h": "mov.b16 $0, $1;", "d": "mov.b64 $0, $1;"}
_CONSTANT_OPS = ("arith.constant", "llvm.mlir.constant")


def is_float_constant(value: ir.Value) -> bool:
    op = defining_op(value)
    return op is not None and op.name in _CONSTANT_OPS and register_letter(value.type) in _MOVE


def in_register(value: ir.Value) -> ir.Value:
    """A copy of a float value that no lowering can see as a constant.

    A pure `llvm.inline_asm` mov: LLVM keeps the constant in a register for it, as
    CuTeDSL 4.8.1's own `cute.arch.inline_ptx` does for Float32 operands.
    """
    letter = register_letter(value.type)
    return pure_asm(_MOVE[letter], f"={letter},{letter}", [value.type], [value]).results[0]


def pure_asm(asm: str, constraints: str, result_types: list[ir.Type], operands: list[ir.Value]) -> ir.Operation:
    """`llvm.inline_asm` without side effects (no `has_side_effects` attribute)."""
    attributes = {"asm_string": ir.StringAttr.get(asm), "constraints": ir.StringAttr.get(constraints)}
    return create_op("llvm.inline_asm", result_types, operands, attributes)


def inline_ptx(ptx: str, result_types: list[ir.Type], read_only: list[ir.Value]) -> ir.Operation:
    """`nvvm.inline_ptx` with write-only results and read-only operands."""
    attributes = {
        "ptxCode": ir.StringAttr.get(ptx),
        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(read_only), 0, 0]),
    }
    return create_op("nvvm.inline_ptx", result_types, read_only, attributes)


_PLACEHOLDER = re.compile(r"\{\$(w|r)(\d+)\}")


class PtxEmitter:
    """Builds single-result PTX instructions in one `emit` form, at the current insertion point.

    Lives for one pass run (one MLIR context): it memoizes the attributes per
    (instruction, types), since kernels repeat the same few conversions many times.
    """

    def __init__(self, emit: str):
        if emit not in EMIT_FORMS:
            raise ValueError(f"emit must be one of {EMIT_FORMS}, not {emit!r}")
        self.emit = emit
        self._attributes: dict = {}

    def instruction(self, ptx: str, result_type: ir.Type, operands: list[ir.Value]) -> ir.Value:
        key = (ptx, result_type, *(v.type for v in operands))
        attributes = self._attributes.get(key)
        if attributes is None:
            attributes = self._attributes[key] = self._build_attributes(ptx, result_type, operands)
        if self.emit == "ptx":
            operands = [in_register(v) if is_float_constant(v) else v for v in operands]
            return create_op("nvvm.inline_ptx", [result_type], operands, attributes).results[0]
        return create_op("llvm.inline_asm", [result_type], operands, attributes).results[0]

    def _build_attributes(self, ptx: str, result_type: ir.Type, operands: list[ir.Value]) -> dict:
        if self.emit == "ptx":
            return {
                "ptxCode": ir.StringAttr.get(ptx),
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(operands), 0, 0]),
            }

        def positional(m: re.Match) -> str:
            role, index = m.group(1), int(m.group(2))
            return f"${index if role == 'w' else index + 1}"

        letters = [register_letter(result_type)] + [register_letter(v.type) for v in operands]
        if None in letters:
            raise ValueError(f"no register class for a type in: {ptx}")
        constraints = ",".join(["=" + letters[0]] + letters[1:])
        return {
            "asm_string": ir.StringAttr.get(_PLACEHOLDER.sub(positional, ptx)),
            "constraints": ir.StringAttr.get(constraints),
        }
