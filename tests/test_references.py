"""The references themselves: hand-checked values, two implementations that agree,
decoding against ml_dtypes, and every disagreement with plain ml_dtypes explained."""

from __future__ import annotations

import numpy as np
import pytest
import references as ref

INF, NAN = np.inf, np.nan

# (value, code) pairs worked out by hand from the bit layouts and the PTX rules.
KNOWN = {
    "f4E2M1FN": [
        (0.0, 0x0), (-0.0, 0x8), (0.25, 0x0), (0.2500001, 0x1), (-0.1, 0x8), (0.75, 0x2), (1.25, 0x2),
        (1.75, 0x4), (2.5, 0x4), (3.5, 0x6), (5.0, 0x6), (5.0000005, 0x7), (7.0, 0x7), (1e30, 0x7),
        (-6.5, 0xF), (INF, 0x7), (-INF, 0xF), (NAN, 0x7), (-NAN, 0x7), (1e-45, 0x0), (-1e-45, 0x8),
    ],
    "f8E4M3FN": [
        (448.0, 0x7E), (464.0, 0x7E), (500.0, 0x7E), (-1e9, 0xFE), (INF, 0x7E), (-INF, 0xFE),
        (NAN, 0x7F), (-NAN, 0x7F), (2.0**-9, 0x01), (2.0**-10, 0x00), (-(2.0**-10), 0x80),
        (1.5 * 2.0**-9, 0x02), (1.0, 0x38), (1.0625, 0x38), (1.1875, 0x3A), (-0.0, 0x80),
    ],
    "f8E5M2": [
        (57344.0, 0x7B), (61440.0, 0x7B), (1e9, 0x7B), (INF, 0x7B), (-INF, 0xFB), (NAN, 0x7F),
        (-NAN, 0x7F), (2.0**-16, 0x01), (2.0**-17, 0x00), (-(2.0**-17), 0x80), (1.0, 0x3C),
        (1.125, 0x3C), (1.375, 0x3E), (-0.0, 0x80),
    ],
}  # fmt: skip
KNOWN_E8M0 = {
    "upward": [
        (1.0, 127), (1.0000001, 128), (0.75, 127), (3.0, 129), (2.0**127, 254), (3e38, 254), (INF, 254),
        (2.0**-127, 0), (1.1 * 2.0**-127, 1), (0.0, 0), (-0.0, 0), (-5.0, 0), (-INF, 0), (NAN, 255), (-NAN, 255),
    ],
    "nearest": [  # ties 1.5 * 2^k go up (APFloat: E8M0's significand is the implicit 1 alone)
        (1.0, 127), (0.75, 127), (1.5, 128), (3.0, 129), (6.0, 130), (12.0, 131), (0.375, 126),
        (1.4999999, 127), (1.5000001, 128), (1.5 * 2.0**127, 254), (INF, 254), (1.5 * 2.0**-127, 1),
        (1.25 * 2.0**-127, 0), (1.6 * 2.0**-127, 1), (2.0**-128, 0), (2.0**-130, 0), (0.0, 0), (-1.0, 0),
        (NAN, 255),
    ],
    "downward": [(1.0, 127), (1.9999999, 127), (2.0**-126 * 0.99, 0), (INF, 254), (3e38, 254), (-1.0, 0)],
}  # fmt: skip


@pytest.mark.parametrize("fmt", list(KNOWN))
def test_hand_checked_codes(fmt):
    values, codes = zip(*KNOWN[fmt])
    x = np.array(values, dtype=np.float32)  # -NAN keeps its sign bit
    assert np.signbit(x[np.isnan(x)]).any()
    for impl in (ref.encode, ref.encode_exact):
        assert impl(x, fmt).tolist() == list(codes), impl.__name__


@pytest.mark.parametrize("rounding", list(KNOWN_E8M0))
def test_hand_checked_e8m0(rounding):
    values, codes = zip(*KNOWN_E8M0[rounding])
    assert ref.encode_e8m0(np.array(values, dtype=np.float32), rounding).tolist() == list(codes)


@pytest.mark.parametrize("fmt", ["f4E2M1FN", "f8E4M3FN", "f8E5M2"])
def test_ml_dtypes_based_and_integer_references_agree(fmt):
    x = ref.inputs_f32(fmt)[::3]
    a, b = ref.encode(x, fmt), ref.encode_exact(x, fmt)
    assert np.array_equal(a, b), ref.describe_mismatches(x, a, b)


@pytest.mark.parametrize("fmt", list(ref.LAYOUTS))
def test_decode_matches_ml_dtypes_on_every_code(fmt):
    codes = ref.all_codes(fmt)
    mine = ref.decode(codes, fmt)
    theirs = codes.view(ref.LAYOUTS[fmt].ml_dtype).astype(np.float32)
    assert np.array_equal(np.isnan(mine), np.isnan(theirs))
    ok = ~np.isnan(mine)
    assert np.array_equal(mine[ok].view(np.uint32), theirs[ok].view(np.uint32))


@pytest.mark.parametrize("fmt", list(ref.LAYOUTS))
def test_encode_inverts_decode_on_every_finite_code(fmt):
    codes = ref.all_codes(fmt)
    values = ref.decode(codes, fmt)
    finite = np.isfinite(values)
    assert np.array_equal(ref.encode_any(values[finite], fmt), codes[finite])
    if fmt == "f8E8M0FNU":
        assert np.array_equal(ref.encode_e8m0(values[finite], "upward"), codes[finite])


@pytest.mark.parametrize(
    "fmt, rounding", [("f4E2M1FN", None), ("f8E4M3FN", None), ("f8E5M2", None), ("f8E8M0FNU", "upward"),
                      ("f8E8M0FNU", "nearest")]
)  # fmt: skip
def test_every_disagreement_with_plain_ml_dtypes_is_explained(fmt, rounding):
    x = ref.inputs_f32(fmt, rounding)
    counts = ref.ml_dtypes_disagreements(x, fmt, rounding)
    assert counts["unexplained"] == 0, counts
    assert counts["total"] > 0  # every format has its class (NaN at least)


def test_16bit_sources_widen_exactly():
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    f16 = ref.to_f32(h, "f16")
    ok = ~np.isnan(f16)
    assert np.array_equal(f16[ok].astype(np.float16).view(np.uint16), h[ok])
    bf16 = ref.to_f32(h, "bf16")
    assert np.array_equal(bf16.view(np.uint32) >> 16, h.astype(np.uint32))
