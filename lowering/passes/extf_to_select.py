"""Rewrite arith.extf from FP4/FP8/E8M0 into integer bit arithmetic and selects.

Before:

    %y = arith.extf %q : vector<8xf4E2M1FN> to vector<8xf32>

After (every format decoded from its bit layout in `lowering/formats.py`):

    %c    = arith.extui (arith.bitcast %q : vector<8xf4E2M1FN> to vector<8xi4>) to vector<8xi32>
    %mag  = %c & 0x7                                   // exponent and mantissa
    %norm = (%mag << 22) + (126 << 23)                 // rebias the exponent into f32
    %sub  = arith.uitofp %mag * 0.5                    // exponent 0: mantissa * 2^(1-bias-M)
    %val  = arith.select (%mag >> 1 == 0), %sub, %norm
    %y    = %val | ((%c & 0x8) << 28)                  // the sign

Exact for every code: each narrow value is an f32. Special codes: E4M3 S.1111.111
and E5M2 exponent-all-ones with a mantissa become NaN (sign kept), E5M2 S.11111.00
±inf, E8M0 0xFF NaN; E8M0 code c is 2^(c-127), so 0x00 is the f32 denormal 2^-127.
Destinations f16, bf16 and f64 go through f32 (exact for f64; for f16/bf16 one
rounding of an exact value, which is what `arith.extf` means there too).

`arith.uitofp` of a small mantissa is an int-to-float conversion, which every target
lowers; no float-to-int conversion is emitted. Arch-aware like `truncf-to-select`:
with `arch` set and `prefer-hardware=true`, conversions CuTeDSL lowers natively on
that target (`lowering/targets.py`) are left to it and counted as `native`.
"""

from __future__ import annotations

from cute_lowering.elementwise import Elementwise
from cute_lowering.formats import E8M0, FORMATS, NarrowFloat
from cute_lowering.mlir import arith, element_type, ir
from cute_lowering.narrow_conversion import ARCH_OPTIONS, NarrowConversionPass
from cute_lowering.registry import register_pass
from cute_lowering.rewriting import Leave

F32_NAN = 0x7FC00000
F32_INF = 0x7F800000


@register_pass("extf-to-select", options=ARCH_OPTIONS)
class ExtfToSelect(NarrowConversionPass):
    """Rewrite arith.extf from f4E2M1FN/f8E4M3FN/f8E5M2/f8E8M0FNU as integer bit arithmetic (exact)."""

    roots = ("arith.extf",)
    kind = "extf"

    def relevant(self, op: ir.OpView) -> bool:
        return str(element_type(op.operands[0].type)) in FORMATS

    def match(self, op: ir.OpView) -> NarrowFloat:
        source_type = op.operands[0].type
        fmt = FORMATS[str(element_type(source_type))]
        self.check_lanes(source_type)
        result = element_type(op.results[0].type)
        if not any(t.isinstance(result) for t in (ir.F32Type, ir.F16Type, ir.BF16Type, ir.F64Type)):
            raise Leave(f"destination {result} is not f32, f16, bf16 or f64")
        self.leave_if_native(fmt, op)
        return fmt

    def rewrite(self, op: ir.OpView, fmt: NarrowFloat) -> list[ir.Value]:
        narrow = op.operands[0]
        result_type = op.results[0].type
        lanes = Elementwise(narrow.type)
        raw = arith.bitcast(lanes.type(ir.IntegerType.get_signless(fmt.bits)), narrow)
        code = lanes.zext(raw) if fmt.bits < 32 else raw
        bits = e8m0_bits(lanes, code) if fmt is E8M0 else signed_format_bits(lanes, code, fmt)
        value = lanes.as_f32(bits)
        result = element_type(result_type)
        if ir.F64Type.isinstance(result):
            value = arith.extf(result_type, value)
        elif not ir.F32Type.isinstance(result):
            value = arith.truncf(result_type, value)
        return [value]


def signed_format_bits(lanes: Elementwise, code: ir.Value, fmt: NarrowFloat) -> ir.Value:
    """f32 bits of a sign/exponent/mantissa code (E2M1, E4M3, E5M2), specials included."""
    i32 = arith.CmpIPredicate
    m = fmt.mantissa_bits
    magnitude = arith.andi(code, lanes.int(fmt.magnitude_mask))
    exponent = arith.shrui(magnitude, lanes.int(m))
    rebias = (127 - fmt.bias) << 23
    normal = arith.addi(arith.shli(magnitude, lanes.int(23 - m)), lanes.int(rebias))
    # exponent 0: the magnitude is the mantissa, worth mantissa * 2^(1 - bias - m)
    step = float(2.0 ** (1 - fmt.bias - m))
    subnormal = lanes.bits(arith.mulf(arith.uitofp(lanes.type(ir.F32Type.get()), magnitude), lanes.float(step)))
    is_subnormal = arith.cmpi(i32.eq, exponent, lanes.int(0))
    bits = arith.select(is_subnormal, subnormal, normal)
    if fmt.ieee_specials:  # exponent all ones: inf (mantissa 0) or NaN
        top = (1 << fmt.exponent_bits) - 1
        is_special = arith.cmpi(i32.eq, exponent, lanes.int(top))
        is_inf = arith.cmpi(i32.eq, magnitude, lanes.int(fmt.inf_code))
        special = arith.select(is_inf, lanes.int(F32_INF), lanes.int(F32_NAN))
        bits = arith.select(is_special, special, bits)
    elif fmt.nan_all_ones:
        is_nan = arith.cmpi(i32.eq, magnitude, lanes.int(fmt.nan_code))
        bits = arith.select(is_nan, lanes.int(F32_NAN), bits)
    sign = arith.shli(arith.andi(code, lanes.int(fmt.sign_bit)), lanes.int(32 - fmt.bits))
    return arith.ori(bits, sign)


def e8m0_bits(lanes: Elementwise, code: ir.Value) -> ir.Value:
    """f32 bits of an E8M0 code: 2^(code-127); 0x00 is the denormal 2^-127, 0xFF NaN."""
    i32 = arith.CmpIPredicate
    bits = arith.shli(code, lanes.int(23))
    bits = arith.select(arith.cmpi(i32.eq, code, lanes.int(0)), lanes.int(0x00400000), bits)
    return arith.select(arith.cmpi(i32.eq, code, lanes.int(E8M0.nan_code)), lanes.int(F32_NAN), bits)
