"""Rewrite float<->integer bitcasts of 16, 32 and 64 bits into a PTX mov.

Before:

    %i = arith.bitcast %x : f32 to i32
    %h = llvm.bitcast %y : i16 to bf16

After (`emit=ptx`; `emit=asm` builds pure `llvm.inline_asm` instead):

    %i = nvvm.inline_ptx "mov.b32 {$w0}, {$r0};" ro(%x : f32) -> i32
    %h = nvvm.inline_ptx "mov.b16 {$w0}, {$r0};" ro(%y : i16) -> bf16

A bitcast keeps every bit, NaN payloads and -0 included, and so does `mov.b32`:
the rewrite is exact for all inputs. Pairs: f32<->i32 (`mov.b32`), f16/bf16<->i16
(`mov.b16`), f64<->i64 (`mov.b64`); 1-D vectors lane by lane when both sides have
the same number of lanes. Other bitcasts (same class, lane-count changes such as
vector<2xf16> to i32, pointers) are left with a remark.
"""

from __future__ import annotations

from cute_lowering.mlir import element_type, ir, is_float, is_integer
from cute_lowering.ptx import PtxEmitter, emit_option
from cute_lowering.registry import register_pass
from cute_lowering.rewriting import Leave, RewritePass
from cute_lowering.vectors import is_lane_vector, lanewise

_MOV_BY_WIDTH = {16: "mov.b16", 32: "mov.b32", 64: "mov.b64"}


def _width(t: ir.Type) -> int | None:
    if is_integer(t):
        return ir.IntegerType(t).width
    if is_float(t):
        return ir.FloatType(t).width
    return None


@register_pass("bitcast-to-ptx", options=(emit_option("asm"),))
class BitcastToPtx(RewritePass):
    """Rewrite arith.bitcast/llvm.bitcast between floats and integers as PTX mov.b16/b32/b64."""

    roots = ("arith.bitcast", "llvm.bitcast")

    def __init__(self, options, sink):
        super().__init__(options, sink)
        self.ptx = PtxEmitter(options["emit"])

    def match(self, op: ir.OpView) -> tuple[str, ir.Type, ir.Type]:
        source_type, result_type = op.operands[0].type, op.results[0].type
        mov = self.decide((source_type, result_type), lambda: self._instruction(source_type, result_type))
        return mov, result_type, element_type(result_type)

    @staticmethod
    def _instruction(source_type: ir.Type, result_type: ir.Type) -> str:
        shaped = [ir.VectorType.isinstance(t) for t in (source_type, result_type)]
        if any(shaped):
            if not all(is_lane_vector(t) for t in (source_type, result_type)):
                raise Leave(f"{source_type} to {result_type} is not a lane-by-lane bitcast of 1-D vectors")
            if ir.VectorType(source_type).shape != ir.VectorType(result_type).shape:
                raise Leave(f"{source_type} to {result_type} changes the number of lanes")
        source, result = element_type(source_type), element_type(result_type)
        if not ((is_float(source) and is_integer(result)) or (is_integer(source) and is_float(result))):
            raise Leave(f"only float<->integer bitcasts are rewritten, not {source} to {result}")
        width = _width(source)
        if width not in _MOV_BY_WIDTH:
            raise Leave(f"no PTX register for a {width}-bit value")
        return _MOV_BY_WIDTH[width]

    def rewrite(self, op: ir.OpView, match: tuple[str, ir.Type, ir.Type]) -> list[ir.Value]:
        mov, result_type, scalar_result = match
        ptx = f"{mov} {{$w0}}, {{$r0}};"
        moved = lanewise(op.operands[0], result_type, lambda x: self.ptx.instruction(ptx, scalar_result, [x]))
        return [moved]
