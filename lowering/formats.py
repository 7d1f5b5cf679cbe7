"""The narrow float formats, once: code layout, values, rounding thresholds, saturation.

Passes, references and tests read these tables; no threshold is typed anywhere else.
A format is described by its bit layout; every value, threshold and special code is
derived from that layout here.

    E2M1 (f4E2M1FN)    1 sign, 2 exponent, 1 mantissa, bias 1; no inf, no NaN; max 6
    E4M3 (f8E4M3FN)    1 sign, 4 exponent, 3 mantissa, bias 7; no inf; NaN S.1111.111; max 448
    E5M2 (f8E5M2)      1 sign, 5 exponent, 2 mantissa, bias 15; IEEE-like inf/NaN; max 57344
    E8M0 (f8E8M0FNU)   no sign, 8 exponent, 0 mantissa, bias 127; NaN 0xFF; values 2^-127..2^127
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class NarrowFloat:
    mlir_name: str  # the MLIR builtin type, e.g. "f4E2M1FN"
    short: str  # e.g. "e2m1"
    exponent_bits: int
    mantissa_bits: int
    bias: int
    signed: bool
    ieee_specials: bool  # the top exponent holds inf (mantissa 0) and NaN, as in IEEE
    nan_all_ones: bool  # NaN is the all-ones exponent+mantissa pattern (E4M3FN, E8M0FNU)

    @property
    def bits(self) -> int:
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1) if self.signed else 0

    @property
    def magnitude_mask(self) -> int:
        return (1 << (self.exponent_bits + self.mantissa_bits)) - 1

    @property
    def has_nan(self) -> bool:
        return self.ieee_specials or self.nan_all_ones

    @property
    def nan_code(self) -> int | None:
        """The canonical positive NaN code, or None when the format has no NaN."""
        if self.nan_all_ones:
            return self.magnitude_mask
        if self.ieee_specials:
            return self.magnitude_mask  # exponent all ones, mantissa all ones
        return None

    @property
    def inf_code(self) -> int | None:
        return (self.magnitude_mask >> self.mantissa_bits) << self.mantissa_bits if self.ieee_specials else None

    def value(self, magnitude_code: int) -> Fraction | None:
        """The exact value of a non-negative code, or None for inf/NaN codes."""
        exponent = magnitude_code >> self.mantissa_bits
        mantissa = magnitude_code & ((1 << self.mantissa_bits) - 1)
        top = (1 << self.exponent_bits) - 1
        if self.ieee_specials and exponent == top:
            return None
        if self.nan_all_ones and magnitude_code == self.magnitude_mask:
            return None
        scale = 1 << self.mantissa_bits
        if exponent == 0 and self.mantissa_bits > 0:  # subnormal
            return Fraction(mantissa, scale) * Fraction(2) ** (1 - self.bias)
        return Fraction(scale + mantissa, scale) * Fraction(2) ** (exponent - self.bias)

    def finite_codes(self) -> list[tuple[int, Fraction]]:
        """(code, value) for every finite non-negative value, in increasing order."""
        found = [(c, self.value(c)) for c in range(self.magnitude_mask + 1)]
        return [(c, v) for c, v in found if v is not None]

    @property
    def max_finite(self) -> Fraction:
        return self.finite_codes()[-1][1]

    @property
    def max_finite_code(self) -> int:
        return self.finite_codes()[-1][0]

    @property
    def min_normal(self) -> Fraction:
        return Fraction(2) ** (1 - self.bias)

    def nearest_even_thresholds(self) -> list[tuple[Fraction, bool, int]]:
        """Round-to-nearest-even as thresholds on the magnitude.

        Returns (midpoint, ties_up, code_above) for each pair of neighbouring finite
        values: a magnitude rounds to `code_above` or higher when it is above the
        midpoint, or equal to it and `ties_up` (see `nearest_tie_goes_up`).
        """
        codes = self.finite_codes()
        out = []
        for (low_code, low), (high_code, high) in zip(codes, codes[1:]):
            out.append(((low + high) / 2, self.nearest_tie_goes_up(low_code), high_code))
        return out

    def nearest_tie_goes_up(self, low_code: int) -> bool:
        """Whether a tie just above `low_code` goes up, in MLIR's `to_nearest_even`.

        MLIR folds and defines `arith.truncf` with LLVM's APFloat, whose ties-to-even
        keeps the lower neighbour when the last bit of its significand is 0. With
        mantissa bits that bit is the code's lowest bit (the usual "even code"). E8M0
        has none: its significand is the implicit leading 1 alone, always odd, so
        every tie 1.5 * 2^k goes up (3.0 -> 4.0, 0.75 -> 1.0), as APFloat and
        ml_dtypes give (`FloatAttr.get(f8E8M0FNU, 3.0)` is 4.0).
        """
        if self.mantissa_bits == 0:
            return True
        return low_code % 2 == 1


E2M1 = NarrowFloat("f4E2M1FN", "e2m1", 2, 1, 1, True, ieee_specials=False, nan_all_ones=False)
E4M3 = NarrowFloat("f8E4M3FN", "e4m3", 4, 3, 7, True, ieee_specials=False, nan_all_ones=True)
E5M2 = NarrowFloat("f8E5M2", "e5m2", 5, 2, 15, True, ieee_specials=True, nan_all_ones=False)
E8M0 = NarrowFloat("f8E8M0FNU", "ue8m0", 8, 0, 127, False, ieee_specials=False, nan_all_ones=True)

FORMATS = {f.mlir_name: f for f in (E2M1, E4M3, E5M2, E8M0)}
