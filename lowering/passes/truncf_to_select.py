"""Rewrite arith.truncf to FP4/FP8/E8M0 as compares, selects and integer bit arithmetic.

Before:

    %q = arith.truncf %x : vector<8xf32> to vector<8xf4E2M1FN>

After, with `e2m1=select` (one compare and one select per rounding threshold on |x|):

    %bits = arith.bitcast %x : vector<8xf32> to vector<8xi32>
    %abs  = arith.bitcast (%bits & 0x7FFFFFFF) : vector<8xi32> to vector<8xf32>
    %c1   = arith.select (%abs ugt 0.25), 1, 0      // one pair per threshold
    %c2   = arith.select (%abs uge 0.75), 2, %c1    // ties go to the even code
    ...
    %c7   = arith.select (%abs ugt 5.0), 7, %c6
    %code = %c7 | (sign of x, unless x is NaN)
    %q    = arith.bitcast (arith.trunci %code to vector<8xi4>) to vector<8xf4E2M1FN>

With the default `e2m1=fma` the f32 FMA does the rounding and a scale does the encoding:

    %a = llvm.intr.minnum(|x|, 6.0)           // saturate; NaN -> 6
    %p = 2^max(exponent(%a), 0)               // integer max and mask on the pattern
    %t = math.fma %p, 2^22, %a                // ONE rounding, on E2M1's grid near %a
    %r = math.fma %p, -2^22, %t               // the rounded |x|, exact
    %s = arith.mulf %r, 2^-126                // its pattern is the E2M1 code << 22
    %v = (bits(%s) << 6) | sign of minnum(x, +inf)   // code in bits 28..31

`t` lies in [2^(e+22), 2^(e+23)), where f32's spacing is 2^(e-1): E2M1's spacing
near `a` (0.5 below 2, 1 in [2, 4), 2 in [4, 6]), and `p * 2^22` is an even
multiple of it, so the FMA's round-to-nearest-even is E2M1's, ties included. Scaled
by 2^-126 the eight E2M1 magnitudes land on the f32 patterns with E2M1's own layout
(0.5 -> the denormal 2^-127, 1 -> 2^-126, 6 -> 1.5 * 2^-124): the code is the bit
pattern, no compare. This needs f32 denormals (no flush-to-zero), which arith ops
get in CuTeDSL's pipeline. On sm_90a ptxas makes it 8.9 SASS instructions per value
against 17.9 for the seven thresholds, packing included (`bench/RESULTS.md`). The
minimum is `llvm.intr.minnum` (PTX `min.f32`, one FMNMX; it returns the other operand
for any NaN): CuTeDSL expands `arith.minnumf` into three instructions. LLVM allows
minnum to return NaN for a signalling NaN input, which no target we compile for does;
all 2^32 inputs are checked on the CPU and on the H200.

No float-to-int op is left either way: codes are integer constants picked by float
compares, or bit patterns of exact float results (FP8: E4M3 has 126 finite
magnitudes, so thresholds would be a chain of 126: integer arithmetic on the f32
pattern instead; E8M0 is the f32 exponent). Vectors are converted lane-parallel (the
ops take vectors), scalars the same way; eight E2M1 codes are packed per i32. f16
and bf16 sources are widened to f32 first (exact). The thresholds and codes come
from `lowering/formats.py`.

Semantics: those of PTX `cvt.rn.satfinite.{e2m1x2,e4m3x2,e5m2x2}.f32` and
`cvt.rp.satfinite.ue8m0x2.f32`, where `arith.truncf` itself says less:

| input         | E2M1 / E4M3 / E5M2 (round to nearest even)   | E8M0 (`upward`, or nearest even) |
| ------------- | -------------------------------------------- | -------------------------------- |
| finite        | nearest value, ties to the even code         | 2^ceil(log2 x) / nearest power, ties up |
| beyond max    | ±max finite (6, 448, 57344): satfinite       | 2^127 (0xFE)                     |
| ±inf          | ±max finite (arith.truncf would give inf or poison) | +inf -> 0xFE               |
| NaN           | E2M1: +6 (code 0x7; E2M1 has no NaN); FP8: 0x7F | 0xFF (NaN)                    |
| -0, tiny < 0  | -0 (the sign is kept)                        | 0x00 (2^-127): no zero, no sign  |
| f32 denormals | ±0 (they are far below the smallest value)   | by value (2^-127 is one)         |

E8M0 nearest is MLIR's own `to_nearest_even`, that of LLVM's APFloat (which defines
and folds `arith.truncf`): its ties-to-even keeps the lower neighbour only when the
significand's last bit is 0, and E8M0's significand is the implicit leading 1 alone,
so every tie 1.5 * 2^k goes up (3.0 -> 4.0, 0.75 -> 1.0, 1.5 * 2^-127 -> 2^-126).
Where APFloat and this table part (read from APFloat.cpp and checked with
`FloatAttr.get(f8E8M0FNU, x)`, tests/test_references.py): APFloat gives NaN (0xFF)
beyond 2^127 and for +inf, where we saturate like the other formats; it gives 2^-127
for ±0 and for everything below 2^-127, as we do; for a negative input it keeps a sign
E8M0 cannot hold (an invalid value), where we give 0x00.

`arith.truncf`'s own rounding is the op's `roundingmode` (default to-nearest-even):
E2M1/E4M3/E5M2 accept only to-nearest-even; E8M0 accepts `upward` (what CuTeDSL
emits for block scales), `to_nearest_even`, `downward` and `toward_zero`. Any other
mode is left with a remark.

Arch-aware: with `arch=sm_100a` (or any target where CuTeDSL 4.8.1 lowers the
conversion itself, per `lowering/targets.py`) and `prefer-hardware=true`, the op is
left for CuTeDSL's native lowering, which emits the hardware convert as inline PTX
with its own packing (for 8 E2M1 values: four `cvt.rn.satfinite.e2m1x2.f32` and one
`mov.b32`, what this pass would emit too); the statistic `native` counts these. Without
`arch` every op is rewritten. The one semantic difference: CuTeDSL's E8M0 convert is
`cvt.rp.ue8m0x2.f32` without `.satfinite`, so beyond 2^127 and for +inf the hardware
result may differ from the 0xFE of the table above.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from cute_lowering.elementwise import Elementwise
from cute_lowering.formats import E2M1, E8M0, FORMATS, NarrowFloat
from cute_lowering.mlir import arith, create_op, element_type, ir, math_ops, vector
from cute_lowering.narrow_conversion import ARCH_OPTIONS, NarrowConversionPass
from cute_lowering.registry import choice, register_pass
from cute_lowering.rewriting import Leave

NEAREST_EVEN = "to_nearest_even"
E8M0_ROUNDINGS = (NEAREST_EVEN, "upward", "downward", "toward_zero")


# arith::RoundingMode, stored as an i32 attribute: the enum's order in ArithBase.td
_ROUNDING_MODES = (NEAREST_EVEN, "downward", "upward", "toward_zero", "to_nearest_away")


def rounding_mode(op: ir.OpView) -> str:
    """The op's `roundingmode` as spelled in the IR; nearest-even when absent."""
    if "roundingmode" not in op.attributes:
        return NEAREST_EVEN
    value = ir.IntegerAttr(op.attributes["roundingmode"]).value
    return _ROUNDING_MODES[value] if 0 <= value < len(_ROUNDING_MODES) else f"#{value}"


@dataclass
class _Match:
    fmt: NarrowFloat
    rounding: str


@register_pass(
    "truncf-to-select",
    options=(
        *ARCH_OPTIONS,
        choice("e2m1", ("fma", "select"), "fma", "E2M1 formulation: an FMA rounds and a scale encodes, or a select per threshold"),
    ),
)
class TruncfToSelect(NarrowConversionPass):
    """Rewrite arith.truncf to f4E2M1FN/f8E4M3FN/f8E5M2/f8E8M0FNU as selects and bit arithmetic (RNE, satfinite)."""

    roots = ("arith.truncf",)
    kind = "truncf"

    def relevant(self, op: ir.OpView) -> bool:
        return str(element_type(op.results[0].type)) in FORMATS

    def match(self, op: ir.OpView) -> _Match:
        source_type = op.operands[0].type
        fmt = FORMATS[str(element_type(op.results[0].type))]
        self.check_lanes(source_type)
        source = element_type(source_type)
        if not any(t.isinstance(source) for t in (ir.F32Type, ir.F16Type, ir.BF16Type)):
            raise Leave(f"source {source} is not f32, f16 or bf16")
        rounding = rounding_mode(op)
        allowed = E8M0_ROUNDINGS if fmt is E8M0 else (NEAREST_EVEN,)
        if rounding not in allowed:
            raise Leave(f"rounding '{rounding}' to {fmt.mlir_name} is not supported (only {', '.join(allowed)})")
        self.leave_if_native(fmt, op, rounding)
        return _Match(fmt, rounding)

    def rewrite(self, op: ir.OpView, m: _Match) -> list[ir.Value]:
        x = op.operands[0]
        result_type = op.results[0].type
        lanes = Elementwise(x.type)
        if not ir.F32Type.isinstance(element_type(x.type)):
            x = arith.extf(lanes.type(ir.F32Type.get()), x)  # exact
        narrow_int = ir.IntegerType.get_signless(m.fmt.bits)
        if m.fmt is E2M1:  # the code in bits 28..31, zeros below
            by_thresholds = self.options["e2m1"] == "select"
            top = e2m1_top_by_thresholds(lanes, x) if by_thresholds else e2m1_top_by_fma(lanes, x)
            if lanes.shape is not None and lanes.shape[0] % 8 == 0:
                return [arith.bitcast(result_type, pack_nibbles(top, lanes.shape[0], narrow_int))]
            code = arith.shrui(top, lanes.int(28))
        elif m.fmt is E8M0:
            code = e8m0_by_exponent(lanes, x, m.rounding)
        else:
            code = nearest_even_by_bits(lanes, x, m.fmt)
        return [arith.bitcast(result_type, arith.trunci(lanes.type(narrow_int), code))]


def pack_nibbles(top: ir.Value, lanes: int, nibble: ir.Type) -> ir.Value:
    """4-bit codes (one per i32 lane, in bits 28..31) packed eight to an i32, lane 0 lowest.

    Horner from the last lane, `word = (word << 4) | (lane >> 28)`: LLVM makes each
    step one funnel shift (SHF). Left to LLVM, a vector<16xi4> result would be
    assembled and stored 16 bits at a time on sm_90a (four 2-byte stores per 8 bytes);
    packed words keep the store one piece.
    """
    i32 = ir.IntegerType.get_signless(32)
    four, twenty_eight = arith.constant(i32, 4), arith.constant(i32, 28)
    words = []
    for w in range(lanes // 8):
        word = arith.shrui(vector.extract(top, [], [8 * w + 7]), twenty_eight)
        for j in range(6, -1, -1):
            lane = arith.shrui(vector.extract(top, [], [8 * w + j]), twenty_eight)
            word = arith.ori(arith.shli(word, four), lane)
        words.append(word)
    packed = vector.from_elements(ir.VectorType.get([lanes // 8], i32), words)
    return vector.bitcast(ir.VectorType.get([lanes], nibble), packed)


def _sign_unless_nan(lanes: Elementwise, bits: ir.Value, sign: int) -> ir.Value:
    """`sign` when x (as `bits`) is negative and not NaN, else 0 (PTX's NaN result is positive).

    One signed compare of the bit pattern: as i32, -0 and the negative floats down to
    -inf (0xFF800000) are exactly the values <= -2^23; negative NaN patterns lie
    between -2^23 and 0.
    """
    negative = arith.cmpi(arith.CmpIPredicate.sle, bits, lanes.int(0xFF800000))
    return arith.select(negative, lanes.int(sign), lanes.int(0))


def _magnitude(lanes: Elementwise, bits: ir.Value) -> ir.Value:
    return lanes.as_f32(arith.andi(bits, lanes.int(0x7FFFFFFF)))


def e2m1_top_by_thresholds(lanes: Elementwise, x: ir.Value) -> ir.Value:
    """E2M1 code << 28 in i32 lanes: a select per round-to-nearest-even threshold on |x|.

    Unordered compares count NaN as above every threshold, giving the largest code (6).
    """
    bits = lanes.bits(x)
    magnitude = _magnitude(lanes, bits)
    code = lanes.int(0)
    for midpoint, ties_up, code_above in E2M1.nearest_even_thresholds():
        predicate = arith.CmpFPredicate.UGE if ties_up else arith.CmpFPredicate.UGT
        above = arith.cmpf(predicate, magnitude, lanes.float(float(midpoint)))
        code = arith.select(above, lanes.int(code_above << 28), code)
    return arith.ori(code, _sign_unless_nan(lanes, bits, E2M1.sign_bit << 28))


def e2m1_top_by_fma(lanes: Elementwise, x: ir.Value) -> ir.Value:
    """E2M1 code << 28 in i32 lanes: the FMA rounds, a scale by 2^-126 encodes (module docstring)."""
    a = _minnum(math_ops.absf(x), lanes.float(6.0))  # +-inf, beyond 6 and NaN -> 6
    one_or_more = arith.maxui(lanes.bits(a), lanes.int(_f32_bits(1.0)))  # below 1.0 the spacing stays 0.5
    p = lanes.as_f32(arith.andi(one_or_more, lanes.int(0x7F800000)))  # 2^max(e, 0)
    t = math_ops.fma(p, lanes.float(2.0**22), a)  # the rounding
    rounded = math_ops.fma(p, lanes.float(-(2.0**22)), t)  # exact
    code = lanes.bits(arith.mulf(rounded, lanes.float(2.0**-126)))  # code << 22, exact
    sign_source = lanes.bits(_minnum(x, lanes.float(math.inf)))  # x, but +inf for NaN (PTX: NaN -> +6)
    sign = arith.andi(sign_source, lanes.int(0x80000000))
    return arith.ori(arith.shli(code, lanes.int(6)), sign)


def _minnum(a: ir.Value, b: ir.Value) -> ir.Value:
    """`llvm.intr.minnum`: one PTX min.f32; CuTeDSL expands arith.minnumf into a compare and two selects."""
    return create_op("llvm.intr.minnum", [a.type], [a, b], {}).result


def nearest_even_by_bits(lanes: Elementwise, x: ir.Value, fmt: NarrowFloat) -> ir.Value:
    """FP8 code in i32 lanes: saturate |x|, then round the f32 bit pattern to nearest even.

    Normal results: add half an output ulp minus one, plus the kept lsb, and shift;
    a carry moves into the exponent as it should. Subnormal results: |x| scaled so
    one output step is 1.0, plus 2^23, lets the f32 adder round to nearest even, and
    the integer sits in the low mantissa bits.
    """
    drop = 23 - fmt.mantissa_bits  # f32 mantissa bits the format does not keep
    bits = lanes.bits(x)
    # |x| clamped to the largest finite value on the bit pattern: inf and NaN patterns are
    # larger and clamp too (NaN is overridden at the end); one integer min, where
    # `minnumf` costs three instructions on sm_90a
    max_bits = _f32_bits(float(fmt.max_finite))
    kept = arith.minui(arith.andi(bits, lanes.int(0x7FFFFFFF)), lanes.int(max_bits))
    magnitude = lanes.as_f32(kept)
    lsb = arith.andi(arith.shrui(kept, lanes.int(drop)), lanes.int(1))
    rounded = arith.addi(arith.addi(kept, lanes.int((1 << (drop - 1)) - 1)), lsb)
    rebias = (127 - fmt.bias) << fmt.mantissa_bits
    normal = arith.subi(arith.shrui(rounded, lanes.int(drop)), lanes.int(rebias))

    step_scale = float(2 ** (fmt.bias - 1 + fmt.mantissa_bits))  # 1 / (smallest subnormal)
    shifted = math_ops.fma(magnitude, lanes.float(step_scale), lanes.float(2.0**23))  # the product is exact
    subnormal = arith.subi(lanes.bits(shifted), lanes.int(0x4B000000))

    is_subnormal = arith.cmpi(arith.CmpIPredicate.ult, kept, lanes.int(_f32_bits(float(fmt.min_normal))))
    code = arith.select(is_subnormal, subnormal, normal)
    sign = arith.andi(arith.shrui(bits, lanes.int(32 - fmt.bits)), lanes.int(fmt.sign_bit))
    is_nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    return arith.select(is_nan, lanes.int(_nan_result(fmt)), arith.ori(code, sign))


def _f32_bits(value: float) -> int:
    """The f32 bit pattern of a value f32 holds exactly (the formats' max and min normal)."""
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _nan_result(fmt: NarrowFloat) -> int:
    """What NaN converts to: the format's NaN, or +max for formats without one (E2M1)."""
    return fmt.nan_code if fmt.nan_code is not None else fmt.max_finite_code


# E8M0 rounding of the f32 mantissa m (23 bits) for exponent field e:
#   whether to go up one power of two, for normal f32 (e >= 1), and the threshold on
#   m above which an f32 denormal (e == 0, value m * 2^-149) becomes 2^-126 (code 1)
#   rather than 2^-127 (code 0, the smallest E8M0 value).
_E8M0_DENORMAL_UP_ABOVE = {
    "upward": 0x400000,  # above 2^-127
    NEAREST_EVEN: 0x5FFFFF,  # at or above the midpoint 1.5 * 2^-127: ties go up (APFloat)
    "downward": 0x7FFFFF,  # never
    "toward_zero": 0x7FFFFF,
}


def e8m0_by_exponent(lanes: Elementwise, x: ir.Value, rounding: str) -> ir.Value:
    """E8M0 code in i32 lanes: the f32 exponent field, moved up when rounding says so."""
    i32 = arith.CmpIPredicate
    bits = lanes.bits(x)
    exponent = arith.shrui(bits, lanes.int(23))  # sign bit included: negatives handled below
    mantissa = arith.andi(bits, lanes.int(0x7FFFFF))
    up: ir.Value | None = None  # whether a normal input goes up one power of two
    if rounding == "upward":
        up = arith.cmpi(i32.ne, mantissa, lanes.int(0))
    elif rounding == NEAREST_EVEN:
        # At or above the midpoint 1.5 * 2^e: E8M0 has no mantissa bit, so APFloat's
        # ties-to-even sends every tie up (`E8M0.nearest_tie_goes_up`, formats.py).
        up = arith.cmpi(i32.uge, mantissa, lanes.int(0x400000))
    normal = exponent if up is None else arith.addi(exponent, lanes.zext(up))
    normal = arith.minui(normal, lanes.int(0xFE))  # satfinite: never the NaN code

    denormal_up = arith.cmpi(i32.ugt, mantissa, lanes.int(_E8M0_DENORMAL_UP_ABOVE[rounding]))
    is_denormal = arith.cmpi(i32.eq, exponent, lanes.int(0))
    code = arith.select(is_denormal, lanes.zext(denormal_up), normal)
    not_positive = arith.cmpi(i32.slt, bits, lanes.int(1))  # -0, negatives (and +0) -> 2^-127
    code = arith.select(not_positive, lanes.int(0), code)
    is_nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    return arith.select(is_nan, lanes.int(E8M0.nan_code), code)
