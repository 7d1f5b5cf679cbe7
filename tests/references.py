"""Independent references for the narrow float conversions, numpy and ml_dtypes only.

Nothing here reads lowering/formats.py: each format is described by its bit layout
(sign, exponent bits, mantissa bits, bias) written below from the OCP MX / PTX
definitions, and every value follows from that.

Encoding f32 -> code bits (what the GPU's `cvt.rn.satfinite.{e2m1x2,e4m3x2,e5m2x2}.f32`
does, sm_89+/sm_100a):
  * round to nearest, ties to even;
  * saturate: a magnitude that rounds above the largest finite value, and +-inf,
    give +-max finite (E2M1 6, E4M3 448, E5M2 57344);
  * NaN: E2M1 has none, PTX gives +6 (code 0x7); E4M3FN 0x7F; E5M2 0x7F;
  * the sign is kept: -0 and negatives that round to zero give 0x8 / 0x80;
  * f32 denormals are far below half the smallest subnormal of each format: +-0.

Two implementations agree on every input they are asked about (tests/test_references.py,
bench/exhaustive_cpu.py): `encode` (ml_dtypes as the rounding engine, after clamping
and with NaN set apart) and `encode_exact` (integer arithmetic on the f32 bits).
`ml_dtypes_disagreements` classifies where *plain* `x.astype(ml_dtypes.<fmt>)` differs:
  E2M1: NaN (ml_dtypes gives a zero whose sign is the NaN's sign flipped: +NaN -> 0x8).
  E4M3: NaN (ml_dtypes keeps the NaN's sign: -NaN -> 0xFF); +-inf and magnitudes that
        round above 448 (ml_dtypes does not saturate: NaN).
  E5M2: NaN (ml_dtypes: 0x7E/0xFE, sign kept); +-inf and magnitudes that round above
        57344 (ml_dtypes: inf 0x7C/0xFC).

E8M0 (f8E8M0FNU: 8 exponent bits, bias 127, no sign, no mantissa, no zero, no inf;
code c is 2^(c-127) for c in 0..254, 0xFF is NaN). Defined here as:
  * `upward` (what CuTeDSL emits for MX scale factors): 2^ceil(log2 x);
  * `nearest` (MLIR's `to_nearest_even`, as LLVM's APFloat computes it): the nearest
    power of two, and the tie 1.5*2^k goes UP to 2^(k+1): APFloat's ties-to-even
    looks at the significand's last bit, which for E8M0 is the implicit leading 1
    (no mantissa bits), always odd. Computed here from the value (f64 arithmetic on
    the exact input), not from the f32 bit fields; checked against APFloat itself
    (`FloatAttr.get`) in tests/test_references.py;
  * `downward` / `toward_zero` (the same on this unsigned format): 2^floor(log2 x);
  * NaN -> 0xFF;
  * x <= 2^-127, including +-0, f32 denormals up to 2^-127 and every negative
    number (and -inf), -> 0x00, the smallest value: there is no zero to give;
    f32 denormals above 2^-127 round as any other value would (upward: 0x01;
    nearest: 0x01 from the tie 1.5*2^-127 up, 0x00 below it);
  * +inf and everything that would round above 2^127 -> 0xFE (satfinite).
Plain ml_dtypes `float8_e8m0fnu` rounds ties up too, but differs: f32 denormals
above 2^-127 all give 0x01 (2^-126), so (2^-127, 1.5*2^-127) rounds up where nearest
(and APFloat) is 0x00; zero,
negatives and values that round above 2^127 (and +inf) give NaN 0xFF; it has no
upward mode (against `upward` every non-power-of-two differs).

Decoding code -> f32 (`decode`): exact values; NaN codes give NaN, E5M2's inf codes
give +-inf. ml_dtypes agrees on all 16/256 codes of every format (checked in tests).
f16 and bf16 sources convert to f32 exactly first (`to_f32`): the same references.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class Layout:
    mlir_name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    signed: bool
    inf_nan: str  # "none" (E2M1), "all-ones-nan" (E4M3FN, E8M0FNU), "ieee" (E5M2)
    ml_dtype: type

    @property
    def bits(self) -> int:
        return self.signed + self.exponent_bits + self.mantissa_bits

    @property
    def sign_bit(self) -> int:
        return (1 << (self.bits - 1)) if self.signed else 0

    @property
    def max_code(self) -> int:
        """The largest finite magnitude code."""
        magnitude_all_ones = (1 << (self.exponent_bits + self.mantissa_bits)) - 1
        if self.inf_nan == "none":
            return magnitude_all_ones
        if self.inf_nan == "all-ones-nan":
            return magnitude_all_ones - 1
        return magnitude_all_ones - (1 << self.mantissa_bits)  # ieee: below the inf exponent

    @property
    def nan_code(self) -> int | None:
        """The code the satfinite conversion gives for NaN (positive)."""
        if self.inf_nan == "none":
            return self.max_code  # PTX: NaN -> +max (E2M1 +6)
        return (1 << (self.exponent_bits + self.mantissa_bits)) - 1


E2M1 = Layout("f4E2M1FN", 2, 1, 1, True, "none", ml_dtypes.float4_e2m1fn)
E4M3 = Layout("f8E4M3FN", 4, 3, 7, True, "all-ones-nan", ml_dtypes.float8_e4m3fn)
E5M2 = Layout("f8E5M2", 5, 2, 15, True, "ieee", ml_dtypes.float8_e5m2)
E8M0 = Layout("f8E8M0FNU", 8, 0, 127, False, "all-ones-nan", ml_dtypes.float8_e8m0fnu)
LAYOUTS = {f.mlir_name: f for f in (E2M1, E4M3, E5M2, E8M0)}


def _layout(fmt) -> Layout:
    return LAYOUTS[fmt] if isinstance(fmt, str) else fmt


# ---------------------------------------------------------------------------
# Sources: f32 bits
# ---------------------------------------------------------------------------
def to_f32(values, src: str = "f32") -> np.ndarray:
    """Exact f32 of f32/f16/bf16 inputs given as values or raw bits (uint32/uint16)."""
    a = np.asarray(values)
    if src == "f32":
        return a.view(np.float32) if a.dtype.itemsize == 4 and a.dtype.kind in "ui" else a.astype(np.float32)
    if src == "f16":
        h = a.view(np.float16) if a.dtype.kind in "ui" else a.astype(np.float16)
        return h.astype(np.float32)  # exact, NaN payload kept in the top bits
    if src == "bf16":
        bits = a.view(np.uint16) if a.dtype.kind in "ui" else a.astype(ml_dtypes.bfloat16).view(np.uint16)
        return (bits.astype(np.uint32) << 16).view(np.float32)
    raise ValueError(src)


def _bits(x) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == np.uint32:
        return x
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


# ---------------------------------------------------------------------------
# Encoding with ml_dtypes as the rounding engine
# ---------------------------------------------------------------------------
def encode(x, fmt) -> np.ndarray:
    """f32 (values or uint32 bits) -> code bits (uint8), RNE + satfinite, PTX NaN rule.

    E2M1/E4M3/E5M2 only; E8M0 is `encode_e8m0`.
    """
    f = _layout(fmt)
    if f is E8M0:
        raise ValueError("use encode_e8m0(x, rounding) for f8E8M0FNU")
    x = _bits(x).view(np.float32)
    nan = np.isnan(x)
    top = float(ml_dtypes.finfo(f.ml_dtype).max)
    with np.errstate(invalid="ignore"):
        clamped = np.clip(x, -top, top)  # inf and out of range -> max, then rounds to max
        codes = clamped.astype(f.ml_dtype).view(np.uint8).copy()
    codes[nan] = f.nan_code
    return codes


# ---------------------------------------------------------------------------
# Encoding by exact integer arithmetic on the f32 bits
# ---------------------------------------------------------------------------
def encode_exact(x, fmt) -> np.ndarray:
    """The same as `encode`, computed on the bits: no float operation, no ml_dtypes."""
    f = _layout(fmt)
    if f is E8M0:
        raise ValueError("use encode_e8m0(x, rounding) for f8E8M0FNU")
    b = _bits(x).astype(np.int64)
    sign = (b >> 31) & 1
    e = (b >> 23) & 0xFF
    m = b & 0x7FFFFF
    emin = 1 - f.bias  # the exponent of the smallest normal
    E = np.where(e == 0, -126, e - 127)  # unbiased; f32 denormals have no implicit 1
    sig = np.where(e == 0, m, m | 0x800000)  # value = sig * 2^(E - 23)
    # quantum of the target at this exponent: 2^(max(E, emin) - mbits)
    shift = np.maximum(E, emin) - f.mantissa_bits - (E - 23)  # >= 23 - mbits > 0
    shift = np.minimum(shift, 40)  # larger shifts all round to 0: sig < 2^24 << 2^39
    q = sig >> shift
    rem = sig & ((np.int64(1) << shift) - 1)
    half = np.int64(1) << (shift - 1)
    q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))
    # code: subnormal q < 2^mbits, normal (E - emin) * 2^mbits + q; a carry of q to
    # 2^(mbits+1) lands on the next exponent by itself.
    Ec = np.minimum(E, 64)  # beyond that all saturate; keeps the shift small
    code = (np.maximum(Ec, emin) - emin) * (1 << f.mantissa_bits) + q
    code = np.minimum(code, f.max_code)
    inf = (e == 255) & (m == 0)
    code = np.where(inf, f.max_code, code)
    code = code | (sign << (f.bits - 1))
    code = np.where((e == 255) & (m != 0), f.nan_code, code)
    return code.astype(np.uint8)


# ---------------------------------------------------------------------------
# E8M0
# ---------------------------------------------------------------------------
E8M0_ROUNDINGS = ("upward", "nearest", "downward", "toward_zero")


def encode_e8m0(x, rounding: str) -> np.ndarray:
    """f32 (values or uint32 bits) -> E8M0 code (uint8); see the module docstring."""
    if rounding not in E8M0_ROUNDINGS:
        raise ValueError(rounding)
    b = _bits(x).view(np.int32)  # 32-bit arithmetic is enough here: codes stay < 512
    sign = (b >> 31) & 1
    e = (b >> 23) & 0xFF
    m = b & 0x7FFFFF
    if rounding == "upward":
        # normal: exact powers of two keep their exponent, anything above goes up one;
        # denormal 0 < x <= 2^-127 (m <= 0x400000) -> 0, above -> 1
        code = np.where(e == 0, np.where(m > 0x400000, 1, 0), np.where(m == 0, e, e + 1))
    elif rounding in ("downward", "toward_zero"):
        # positive x: 2^floor(log2 x); below 2^-127 there is nothing smaller: 0x00
        code = np.where(e == 0, 0, e)
    else:
        # From the value: x = f * 2^k with f in [0.5, 1) (frexp, exact in f64), so the
        # powers of two around x are 2^(k-1) and 2^k, the midpoint 0.75 * 2^k; at or
        # above it x goes to 2^k (ties up, APFloat), below it to 2^(k-1). Code of 2^j: j + 127.
        with np.errstate(invalid="ignore"):  # NaN patterns: replaced below
            v = np.abs(b.view(np.float32).astype(np.float64))
            frac, k = np.frexp(np.where(np.isfinite(v), v, 1.0))
        j = np.where(frac >= 0.75, k, k - 1)
        code = np.where(v == 0, 0, np.clip(j + 127, 0, 0xFF))  # 0 and below 2^-127: 0x00
        code = np.where(e == 255, 0xFF, code)  # +inf: saturated below
    code = np.minimum(code, 0xFE)  # satfinite, +inf included (e = 255, m = 0 -> 255/256)
    code = np.where(sign == 1, 0, code)  # negatives, -0, -inf -> the smallest value
    code = np.where((e == 255) & (m != 0), 0xFF, code)  # NaN, either sign
    return code.astype(np.uint8)


def encode_any(x, fmt, rounding: str | None = None) -> np.ndarray:
    """`encode` or `encode_e8m0` by format; E8M0 rounding defaults to nearest."""
    f = _layout(fmt)
    if f is E8M0:
        return encode_e8m0(x, rounding or "nearest")
    if rounding not in (None, "nearest", "to_nearest_even"):
        raise ValueError(f"{f.mlir_name}: only nearest-even is specified, not {rounding}")
    return encode(x, f)


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------
def decode(codes, fmt) -> np.ndarray:
    """Code bits (any int array) -> exact f32 values; NaN codes -> NaN, E5M2 inf -> inf."""
    f = _layout(fmt)
    c = np.asarray(codes).astype(np.int64) & ((1 << f.bits) - 1)
    sign = (c >> (f.bits - 1)) & 1 if f.signed else np.zeros_like(c)
    mag = c & ((1 << (f.exponent_bits + f.mantissa_bits)) - 1)
    exp = mag >> f.mantissa_bits
    man = mag & ((1 << f.mantissa_bits) - 1)
    # subnormal: man * 2^(1 - bias - mbits); normal: (2^mbits + man) * 2^(exp - bias - mbits)
    sig = np.where((exp == 0) & (f.mantissa_bits > 0), man, man + (1 << f.mantissa_bits))
    scale = np.where((exp == 0) & (f.mantissa_bits > 0), 1 - f.bias, exp - f.bias) - f.mantissa_bits
    value = np.ldexp(sig.astype(np.float64), scale.astype(np.int32))
    value = np.where(sign == 1, -value, value)
    all_ones = (1 << (f.exponent_bits + f.mantissa_bits)) - 1
    if f.inf_nan == "all-ones-nan":
        value = np.where(mag == all_ones, np.nan, value)
    elif f.inf_nan == "ieee":
        top = exp == (1 << f.exponent_bits) - 1
        value = np.where(top & (man == 0), np.where(sign == 1, -np.inf, np.inf), value)
        value = np.where(top & (man != 0), np.nan, value)
    return value.astype(np.float32)


def all_codes(fmt) -> np.ndarray:
    return np.arange(1 << _layout(fmt).bits, dtype=np.uint8)


def finite_values(fmt) -> np.ndarray:
    """The distinct finite values >= 0 (as f64), increasing."""
    v = decode(all_codes(fmt), fmt).astype(np.float64)
    v = v[np.isfinite(v) & (v >= 0)]
    return np.unique(v)


def thresholds(fmt, rounding: str | None = None) -> np.ndarray:
    """Magnitudes (f32-exact, as f64) where the rounded result changes: every finite
    value and every midpoint between neighbours (for E8M0 upward: the values)."""
    v = finite_values(fmt)
    mids = (v[:-1] + v[1:]) / 2
    return np.unique(np.concatenate([v, mids, [0.0]]))


# ---------------------------------------------------------------------------
# Plain ml_dtypes, and why it differs
# ---------------------------------------------------------------------------
def plain_ml_dtypes(x, fmt) -> np.ndarray:
    f = _layout(fmt)
    with np.errstate(invalid="ignore", over="ignore"):
        return _bits(x).view(np.float32).astype(f.ml_dtype).view(np.uint8)


def ml_dtypes_disagreements(x, fmt, rounding: str | None = None, against=None) -> dict[str, int]:
    """Where plain ml_dtypes differs from the reference (or from the codes `against`,
    e.g. a rewrite's output), counted per explained class.

    Any difference that fits no class lands in "unexplained" (there should be none).
    """
    f = _layout(fmt)
    x = _bits(x).view(np.float32)
    ref = encode_any(x, f, rounding) if against is None else np.asarray(against)
    ml = plain_ml_dtypes(x, f)
    where = np.flatnonzero(ref != ml)  # classify only the differences
    x, ml = x[where], ml[where]
    diff = np.ones(where.size, dtype=bool)
    classes: dict[str, np.ndarray] = {}
    nan = np.isnan(x)
    classes["NaN"] = nan
    if f is E8M0:
        with np.errstate(invalid="ignore"):
            small = ~nan & (x <= 0)
            classes["zero or negative (ml_dtypes: NaN)"] = small
            big = ~nan & ~small & (ml == 0xFF)
            classes["above 2^127 after rounding, or +inf (ml_dtypes: NaN)"] = big
            rest = ~nan & ~small & ~big
            if rounding not in (None, "nearest"):
                classes["not a power of two (ml_dtypes rounds to nearest)"] = rest
            else:
                e = (x.view(np.uint32) >> 23) & 0xFF
                classes["f32 denormal in (2^-127, 1.5*2^-127) (ml_dtypes: 0x01, rounds denormals up)"] = rest & (e == 0)
    else:
        top = float(ml_dtypes.finfo(f.ml_dtype).max)
        with np.errstate(invalid="ignore"):
            over = ~nan & (np.abs(x) > top)
        if f is not E2M1:
            kind = "NaN" if f is E4M3 else "inf"
            classes[f"+-inf or rounds above max (ml_dtypes: {kind}, no saturation)"] = over
    counts: dict[str, int] = {}
    explained = np.zeros_like(diff)
    for name, mask in classes.items():
        hit = diff & mask & ~explained
        counts[name] = int(hit.sum())
        explained |= mask
    counts["unexplained"] = int((diff & ~explained).sum())
    counts["total"] = int(diff.sum())
    return counts


# ---------------------------------------------------------------------------
# Input patterns
# ---------------------------------------------------------------------------
def special_f32_bits() -> np.ndarray:
    """+-0, +-inf, NaNs with payloads (quiet, signalling, both signs), denormal extremes,
    min/max normal and neighbours."""
    pats = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7F7FFFFF, 0xFF7FFFFF,
            0x00800000, 0x80800000, 0x007FFFFF, 0x807FFFFF, 0x00000001, 0x80000001,
            0x00400000, 0x80400000, 0x00400001, 0x003FFFFF, 0x00600000, 0x00600001, 0x005FFFFF,
            0x00000002, 0x00100000, 0x3F800000, 0xBF800000]  # fmt: skip
    for sign in (0, 0x80000000):
        for payload in (1, 2, 0x3FFFFF, 0x400000, 0x400001, 0x7FFFFF, 0x2AAAAA, 0x155555, 0x12345):
            pats.append(sign | 0x7F800000 | payload)
    return np.array(pats, dtype=np.uint32)


def near_thresholds_bits(values, ulps: int = 64) -> np.ndarray:
    """Every f32 within `ulps` ulps of each value, both signs."""
    v = np.asarray(values, dtype=np.float64)
    base = v.astype(np.float32).view(np.uint32).astype(np.int64)
    offsets = np.arange(-ulps, ulps + 1, dtype=np.int64)
    out = (base[:, None] + offsets[None, :]).reshape(-1)
    out = out[(out >= 0) & (out < 0x7F800000)]
    out = out.astype(np.uint32)
    return np.concatenate([out, out | np.uint32(0x80000000)])


def stratified_f32_bits(seed: int = 1234, low_patterns: int = 32) -> np.ndarray:
    """2^24 f32 patterns: both signs x all 256 exponents x all 2^10 top mantissa
    patterns x `low_patterns` (32) patterns of the 13 low mantissa bits (0, 1, 2, all
    ones, all ones - 1, the halfway bit and neighbours, random). Every exponent, and
    every threshold with <= 10 significant mantissa bits, exactly and +-1..2 ulp."""
    rng = np.random.default_rng(seed)
    fixed = [0, 1, 2, 3, 0x1FFF, 0x1FFE, 0x1FFD, 0x1000, 0x0FFF, 0x1001, 0x0800, 0x17FF]
    low = np.array(fixed + list(rng.integers(0, 1 << 13, low_patterns - len(fixed))), dtype=np.uint32)
    top = np.arange(1 << 10, dtype=np.uint32) << 13
    mant = (top[:, None] | low[None, :]).reshape(-1)
    exps = np.arange(256, dtype=np.uint32) << 23
    mag = (exps[:, None] | mant[None, :]).reshape(-1)
    return np.concatenate([mag, mag | np.uint32(0x80000000)])


def inputs_f32(fmt, rounding: str | None = None, extra_random: int = 1 << 20, seed: int = 99) -> np.ndarray:
    """The f32 bit patterns a conversion to `fmt` is checked on (a bit over 2^24):
    stratified, every threshold +-64 ulps, specials, all denormals near the top and
    bottom, random patterns."""
    rng = np.random.default_rng(seed)
    parts = [
        stratified_f32_bits(),
        near_thresholds_bits(thresholds(fmt, rounding)),
        special_f32_bits(),
        np.arange(0, 1 << 12, dtype=np.uint32),  # smallest denormals
        np.arange(0x00800000 - (1 << 12), 0x00800000 + (1 << 12), dtype=np.uint32),  # denormal/normal edge
        rng.integers(0, 1 << 32, extra_random, dtype=np.uint64).astype(np.uint32),
    ]
    return np.concatenate(parts)


def describe_mismatches(inputs_bits, expected, got, src: str = "f32", limit: int = 12) -> str:
    """Readable list of the first mismatches: input bits and value, expected, got."""
    inputs_bits = np.asarray(inputs_bits)
    bad = np.flatnonzero(np.asarray(expected) != np.asarray(got))
    width = inputs_bits.dtype.itemsize * 2
    lines = [f"{bad.size} mismatches of {inputs_bits.size}"]
    for i in bad[:limit]:
        value = f" ({to_f32(inputs_bits[i : i + 1], src)[0]!r:>14})" if src in ("f32", "f16", "bf16") else ""
        lines.append(
            f"  in 0x{int(inputs_bits[i]):0{width}x}{value}: expected {_hex(expected[i])} got {_hex(got[i])}"
        )
    return "\n".join(lines)


def _hex(v) -> str:
    v = np.asarray(v)
    if v.dtype.kind == "i" and int(v) < 0:
        return str(int(v))
    return f"0x{int(v):02x}"
