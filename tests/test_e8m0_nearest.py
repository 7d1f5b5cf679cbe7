"""E8M0 `to_nearest_even` is MLIR's own: LLVM's APFloat, asked through the bindings.

`FloatAttr.get(f8E8M0FNU, x)` converts x with APFloat's round-to-nearest-even, the
semantics MLIR gives `arith.truncf`. The rounding rule in lowering/formats.py and the
independent reference in tests/references.py are both checked against it here; the
pass is checked against the reference (tests/test_select_conversions.py, and all 2^32
inputs by bench/exhaustive_cpu.py e8m0-rne).

APFloat sends every E8M0 tie 1.5 * 2^k up (3.0 -> 4.0); the pass used to send it to the
even code (3.0 -> 2.0). Where we part from APFloat on purpose (saturation instead of
NaN beyond 2^127 and for +inf; 0x00 for negatives) is checked to be only there.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import references as ref
from cute_lowering.formats import E2M1, E4M3, E5M2, E8M0
from cute_lowering.mlir import ir

APFLOAT_NAN = 0xFF


def apfloat_codes(values, mlir_type: str) -> list[int | None]:
    """APFloat's nearest-even result for each value, as a magnitude code (None for NaN)."""
    fmt = {"f8E8M0FNU": E8M0, "f4E2M1FN": E2M1, "f8E4M3FN": E4M3, "f8E5M2": E5M2}[mlir_type]
    by_value = {v: c for c, v in fmt.finite_codes()}
    out = []
    with ir.Context(), ir.Location.unknown():
        t = ir.Type.parse(mlir_type)
        for x in values:
            got = ir.FloatAttr.get(t, float(x)).value
            out.append(None if math.isnan(got) or math.isinf(got) else by_value[abs(Fraction(got))])
    return out


def positive_f32_around_every_e8m0_tie() -> np.ndarray:
    """For every f32 exponent field: the power of two, the tie 1.5 * 2^e, 1 ulp either
    side of both, the top of the binade; for denormals the same around 2^-128,
    2^-127 and the tie 1.5 * 2^-127; plus a few random mantissas."""
    mantissas = [0, 1, 0x1FFFFF, 0x200000, 0x200001, 0x3FFFFF, 0x400000, 0x400001,
                 0x5FFFFF, 0x600000, 0x600001, 0x7FFFFF]  # fmt: skip
    rng = np.random.default_rng(12)
    bits = [(e << 23) | m for e in range(0, 255) for m in mantissas]
    bits += [(int(e) << 23) | int(m) for e, m in zip(rng.integers(0, 255, 2000), rng.integers(0, 1 << 23, 2000))]
    bits = np.array(sorted(set(bits) - {0}), dtype=np.uint32)
    return bits


def test_reference_nearest_is_apfloats():
    bits = positive_f32_around_every_e8m0_tie()
    values = bits.view(np.float32)
    ours = ref.encode_e8m0(bits, "nearest")
    theirs = apfloat_codes(values.astype(np.float64), "f8E8M0FNU")
    bad = []
    for b, x, mine, apf in zip(bits, values, ours, theirs):
        if apf is None:  # APFloat overflows to NaN beyond 2^127; we saturate, on purpose
            if not (x > 2.0**127 and mine == 0xFE):
                bad.append((hex(int(b)), float(x), int(mine), "NaN"))
        elif mine != apf:
            bad.append((hex(int(b)), float(x), int(mine), apf))
    assert not bad, bad[:12]
    # The cases of the issue, and the denormal tie.
    assert apfloat_codes([3.0, 0.75, 6.0, 1.5 * 2.0**-127, 1.25 * 2.0**-127], "f8E8M0FNU") == [129, 127, 130, 1, 0]


def test_apfloat_specials_are_where_the_docstring_says():
    # 0 and below 2^-127: the smallest value; +inf and beyond 2^127: NaN (we saturate).
    assert apfloat_codes([0.0, 2.0**-128, 2.0**-140], "f8E8M0FNU") == [0, 0, 0]
    assert apfloat_codes([math.inf, 1.5 * 2.0**127, 2.0**128], "f8E8M0FNU") == [None, None, None]
    assert ref.encode_e8m0(np.array([np.inf, 1.5 * 2.0**127], np.float32), "nearest").tolist() == [0xFE, 0xFE]


@pytest.mark.parametrize("fmt", [E2M1, E4M3, E5M2, E8M0], ids=lambda f: f.mlir_name)
def test_formats_tie_rule_is_apfloats(fmt):
    """formats.py's `nearest_tie_goes_up` against APFloat, at every tie of the format."""
    thresholds = fmt.nearest_even_thresholds()
    ties = [float(midpoint) for midpoint, _, _ in thresholds]
    apf = apfloat_codes(ties, fmt.mlir_name)
    for (midpoint, ties_up, code_above), got in zip(thresholds, apf):
        if got is None:  # beyond max for E8M0's top tie: APFloat overflows
            continue
        assert (got == code_above) == ties_up, (fmt.mlir_name, float(midpoint), got, code_above, ties_up)
