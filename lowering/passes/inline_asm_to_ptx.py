"""Rewrite pure register-only llvm.inline_asm PTX into nvvm.inline_ptx.

Before:

    %0 = llvm.inline_asm "cvt.rni.s32.f32 $0, $1;", "=r,f" %x : (f32) -> i32
    %1 = llvm.inline_asm "mov.b64 {$0, $1}, $2;", "=r,=r,l" %p : (i64) -> !llvm.struct<(i32, i32)>

After:

    %0 = nvvm.inline_ptx "cvt.rni.s32.f32 {$w0}, {$r0};" ro(%x : f32) -> i32
    %w:2 = nvvm.inline_ptx "mov.b64 {{$w0}, {$w1}}, {$r0};" ro(%p : i64) -> i32, i32
    %u = llvm.mlir.undef : !llvm.struct<(i32, i32)>
    %s = llvm.insertvalue %w#0, %u[0] : !llvm.struct<(i32, i32)>
    %1 = llvm.insertvalue %w#1, %s[1] : !llvm.struct<(i32, i32)>

Operands: `$N` (or `${N}`) numbers outputs first, then inputs, as in LLVM; outputs
become `{$wN}`, inputs `{$rN}`, `$$` a literal `$`. `nvvm.inline_ptx` picks each
register class from the operand's type, so a constraint must be the one that type
implies: `r` i32, `l` i64 or pointer, `h` i16/f16/bf16, `f` f32, `d` f64.

Left with a remark, because `nvvm.inline_ptx` cannot say the same thing:
side effects (`has_side_effects`: it would lose nothing but `asm` was chosen for
purity, and memory effects have no spelling there), clobbers (`~{memory}`),
memory or immediate operands (`m`, `n`, `i`), early-clobber (`=&r`), tied
operands (`0`), indirect (`*`) operands, operand modifiers (`${0:x}`), the Intel
dialect, and float-constant inputs (CuTeDSL 4.8.1 would give them the `n`
constraint; see `ptx-float-operands`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from cute_lowering.mlir import ir, llvm
from cute_lowering.ptx import inline_ptx, is_float_constant, register_letter
from cute_lowering.registry import register_pass
from cute_lowering.rewriting import Leave, RewritePass

_OPERAND = re.compile(r"\$(\$|\{(\d+)(:[^}]*)?\}|\d+)")


@dataclass
class _Match:
    ptx: str
    output_types: list[ir.Type]


def _translate(asm: str, outputs: int, inputs: int) -> str:
    """LLVM `$N` operand references -> nvvm.inline_ptx `{$wN}`/`{$rN}`."""

    def replace(m: re.Match) -> str:
        if m.group(1) == "$":
            return "$"
        if m.group(3):
            raise Leave(f"operand modifier '{m.group(0)}' has no nvvm.inline_ptx spelling")
        index = int(m.group(2) if m.group(2) is not None else m.group(1))
        if index < outputs:
            return f"{{$w{index}}}"
        if index < outputs + inputs:
            return f"{{$r{index - outputs}}}"
        raise Leave(f"'{m.group(0)}' refers to no operand")

    return _OPERAND.sub(replace, asm)


@functools.lru_cache(maxsize=4096)
def _parse(asm: str, constraints: str) -> tuple[str, list[str], list[str]] | str:
    """(translated PTX, output letters, input letters), or why it cannot be translated.

    Cached: kernels repeat the same few asm strings many times.
    """
    parts = [c.strip() for c in constraints.split(",")] if constraints else []
    outputs = [c[1:] for c in parts if c.startswith("=")]
    inputs = [c for c in parts if not c.startswith("=")]
    for c in parts:
        if c.startswith("~"):
            return f"clobber '{c}'"
        body = c.lstrip("=")
        if body.startswith("&") or body.startswith("*") or body[:1].isdigit():
            return f"constraint '{c}' (early-clobber, indirect or tied) has no nvvm.inline_ptx spelling"
        if body not in ("r", "l", "h", "f", "d"):
            return f"constraint '{c}' is not a plain register class"
    if not outputs:
        return "it has no outputs"
    try:
        return _translate(asm, len(outputs), len(inputs)), outputs, inputs
    except Leave as why:
        return str(why)


@register_pass("inline-asm-to-ptx")
class InlineAsmToPtx(RewritePass):
    """Rewrite pure, register-only llvm.inline_asm into nvvm.inline_ptx with {$wN}/{$rN} operands."""

    roots = ("llvm.inline_asm",)

    def match(self, op: ir.OpView) -> _Match:
        attrs = op.attributes
        if "has_side_effects" in attrs:
            raise Leave("it has side effects")
        if "asm_dialect" in attrs and "intel" in str(attrs["asm_dialect"]):
            raise Leave("Intel asm dialect")
        if "operand_attrs" in attrs:
            raise Leave("operand attributes (indirect operands) have no nvvm.inline_ptx spelling")
        parsed = _parse(ir.StringAttr(attrs["asm_string"]).value, ir.StringAttr(attrs["constraints"]).value)
        if isinstance(parsed, str):
            raise Leave(parsed)
        ptx, outputs, inputs = parsed

        output_types = self._output_types(op, len(outputs))
        for letter, t in zip(outputs, output_types):
            self._check_class(letter, t)
        for letter, value in zip(inputs, op.operands):
            self._check_class(letter, value.type)
            if is_float_constant(value):
                raise Leave("a float-constant input would get the 'n' constraint in CuTeDSL 4.8.1's lowering")
        if len(inputs) != len(op.operands):
            raise Leave("constraint count does not match the operands")
        return _Match(ptx, output_types)

    @staticmethod
    def _output_types(op: ir.OpView, count: int) -> list[ir.Type]:
        result_type = op.results[0].type
        if count == 1:
            return [result_type]
        if not llvm.StructType.isinstance(result_type):
            raise Leave(f"{count} outputs but the result is not a struct")
        body = list(llvm.StructType(result_type).body)
        if len(body) != count:
            raise Leave("struct fields do not match the outputs")
        return body

    @staticmethod
    def _check_class(letter: str, t: ir.Type) -> None:
        implied = register_letter(t)
        if implied != letter:
            raise Leave(f"constraint '{letter}' on {t}: nvvm.inline_ptx would use '{implied}'")

    def rewrite(self, op: ir.OpView, m: _Match) -> list[ir.Value]:
        ptx = inline_ptx(m.ptx, m.output_types, list(op.operands))
        values = list(ptx.results)
        if len(values) == 1:
            return values
        struct_type = op.results[0].type
        struct = llvm.mlir_undef(struct_type)
        for i, v in enumerate(values):
            struct = llvm.insertvalue(struct, v, [i])
        return [struct]
