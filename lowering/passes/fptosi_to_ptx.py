"""Rewrite arith.fptosi/fptoui into one PTX cvt, folding a rounding op in front of it.

Before:

    %r = math.floor %x : f32
    %i = arith.fptosi %r : f32 to i32
    %u = arith.fptoui %y : f32 to i8

After (`emit=ptx`; `emit=asm` builds the same instructions as pure `llvm.inline_asm`):

    %i = nvvm.inline_ptx "cvt.rmi.s32.f32 {$w0}, {$r0};" ro(%x : f32) -> i32
    %w = nvvm.inline_ptx "cvt.rzi.u8.f32 {$w0}, {$r0};" ro(%y : f32) -> i32
    %u = arith.trunci %w : i32 to i8

Rounding: a plain conversion truncates (`cvt.rzi`). When the operand comes from
`math.roundeven`/`floor`/`ceil`/`trunc` (or `llvm.intr.*` of the same), the pair
becomes one `cvt.rni`/`rmi`/`rpi`/`rzi`; the rounding op is erased if nothing
else uses it. `math.round` (ties away from zero) stays: PTX has no such integer mode.
Option `rounding=auto` folds any of them; `rounding=rni|rmi|rpi|rzi` folds only
that mode and converts the rest with `cvt.rzi` after their rounding op, so the result
is the same either way.

Results: where `arith.fptosi`/`fptoui` is defined (the truncated value fits the
destination) the rewrite gives the same integer. Where they give poison, the result
is defined: it saturates to the destination's range (so -1.5 to u8 is 0, 1e10 to
i32 is 2^31-1), and NaN becomes 0. The `cvt` names the destination's own width, so
8- and 16-bit results saturate at their own bounds too. For 64-bit destinations
the hardware convert (`F2I.S64`, measured on the H200) turns NaN into INT64_MIN,
so the pass adds `arith.cmpf uno` + `arith.select` to keep NaN -> 0 there.

Sources: f32, f16, f64 directly; bf16 through an exact `arith.extf` to f32.
Destinations: i8, i16, i32, i64. Vectors are converted lane by lane. Anything else
(i1, i4, f8 sources, scalable or n-D vectors) is left with a remark.
"""

from __future__ import annotations

from dataclasses import dataclass

from cute_lowering.mlir import arith, defining_op, element_type, ir
from cute_lowering.ptx import PtxEmitter, emit_option
from cute_lowering.registry import choice, register_pass
from cute_lowering.rewriting import Leave, RewritePass
from cute_lowering.vectors import is_lane_vector, lanewise

# rounding producer -> PTX integer rounding modifier
ROUNDING_PRODUCERS = {
    "math.roundeven": "rni",
    "llvm.intr.roundeven": "rni",
    "math.floor": "rmi",
    "llvm.intr.floor": "rmi",
    "math.ceil": "rpi",
    "llvm.intr.ceil": "rpi",
    "math.trunc": "rzi",
    "llvm.intr.trunc": "rzi",
}
_DESTINATION_WIDTHS = (8, 16, 32, 64)


def _source_suffix(t: ir.Type) -> str | None:
    if ir.F32Type.isinstance(t):
        return "f32"
    if ir.F16Type.isinstance(t):
        return "f16"
    if ir.F64Type.isinstance(t):
        return "f64"
    if ir.BF16Type.isinstance(t):
        return "bf16"  # widened to f32 first
    return None


def _destination_width(source_type: ir.Type, result_type: ir.Type) -> int:
    """The destination's integer width, if PTX has a cvt for this pair (else Leave)."""
    if ir.VectorType.isinstance(source_type) and not is_lane_vector(source_type):
        raise Leave(f"only 1-D fixed-length vectors are converted, not {source_type}")
    source_elem, dest_elem = element_type(source_type), element_type(result_type)
    if _source_suffix(source_elem) is None:
        raise Leave(f"no PTX cvt from {source_elem}")
    width = ir.IntegerType(dest_elem).width
    if width not in _DESTINATION_WIDTHS:
        raise Leave(f"no PTX cvt to a {width}-bit integer (only 8, 16, 32, 64)")
    return width


@dataclass
class _Match:
    source: ir.Value  # what the cvt reads (the rounding op's operand when folded)
    mode: str  # rzi, rni, rmi, rpi
    folded: ir.OpView | None  # the rounding op folded in, if any
    signed: bool
    width: int  # destination integer width


@register_pass(
    "fptosi-to-ptx",
    options=(
        choice(
            "rounding",
            ("auto", "rzi", "rni", "rmi", "rpi"),
            "auto",
            "which rounding ops to fold into the cvt: auto folds all four kinds",
        ),
        emit_option("asm"),
    ),
)
class FptosiToPtx(RewritePass):
    """Rewrite arith.fptosi/fptoui as PTX cvt.{rzi,rni,rmi,rpi}, folding rounding ops."""

    roots = ("arith.fptosi", "arith.fptoui")
    statistics = {
        **RewritePass.statistics,
        "folded": "rounding ops folded into the cvt",
    }

    def __init__(self, options, sink):
        super().__init__(options, sink)
        self.ptx = PtxEmitter(options["emit"])

    def match(self, op: ir.OpView) -> _Match:
        source = op.operands[0]
        result_type = op.results[0].type
        width = self.decide((source.type, result_type), lambda: _destination_width(source.type, result_type))

        mode, folded = "rzi", None
        producer = defining_op(source)
        if producer is not None and producer.name in ROUNDING_PRODUCERS:
            wanted = ROUNDING_PRODUCERS[producer.name]
            if self.options["rounding"] in ("auto", wanted):
                mode, folded, source = wanted, producer, producer.operands[0]
        return _Match(source, mode, folded, op.name == "arith.fptosi", width)

    def rewrite(self, op: ir.OpView, m: _Match) -> list[ir.Value]:
        result_type = op.results[0].type
        dest_elem = element_type(result_type)
        integer = ("s" if m.signed else "u") + str(m.width)
        register_type = ir.IntegerType.get_signless(max(m.width, 32) if m.width != 16 else 16)

        def convert(x: ir.Value) -> ir.Value:
            suffix = _source_suffix(x.type)
            if suffix == "bf16":  # exact widening; PTX cvt from bf16 needs sm_90
                x, suffix = arith.extf(ir.F32Type.get(), x), "f32"
            value = self.ptx.instruction(f"cvt.{m.mode}.{integer}.{suffix} {{$w0}}, {{$r0}};", register_type, [x])
            if register_type != dest_elem:  # 8-bit results come in a 32-bit register
                value = arith.trunci(dest_elem, value)
            if m.width == 64:  # 64-bit F2I has no NaN-to-zero: select it
                is_nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
                value = arith.select(is_nan, arith.constant(dest_elem, 0), value)
            return value

        converted = lanewise(m.source, result_type, convert)
        if m.folded is not None:
            self.counts["folded"] += 1
            self.erase_if_unused(m.folded)  # pure: it goes once the cvt was its last user
        return [converted]
