"""On a GPU: our fptosi/bitcast rewrites inside real CuTeDSL compiles give exactly the
defined results (saturation, NaN -> 0; bitcast keeps every bit) on 2^24 stratified
f32 bit patterns plus the specials. Skipped without torch or without a CUDA GPU.

The full check (all 2^32 patterns, SASS, timings) is `python bench/gpu_conversions.py --out DIR`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

ROOT = Path(__file__).resolve().parents[1]
N_LOG2 = 24


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import gpu_conversions
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return gpu_conversions


@pytest.fixture(scope="module")
def checker(bench):
    device = torch.device("cuda")
    c = bench.Checker(torch, 2**N_LOG2, device, bench.CASES, forms=("ptx", "asm"))
    c.bits.copy_(bench.stratified_bits(torch, c.n, seed=7, device=device))
    return c


def test_specials_are_in_the_sample(bench, checker):
    specials = torch.tensor(bench.special_bits(), dtype=torch.int32, device="cuda")
    assert torch.equal(checker.bits[: specials.numel()], specials)
    x = checker.src[: specials.numel()]
    assert torch.isnan(x).sum() >= 8 and torch.isinf(x).sum() == 2


def test_reference_saturates_and_zeroes_nan(bench):
    bits = torch.tensor([0x7FC00000, 0x4F000000, -0x30800000, 0x3FC00000], dtype=torch.int32, device="cuda")
    # NaN, 2^31, about -4.3e9, 1.5
    assert bench.reference(torch, bits, "i32").tolist() == [0, 2**31 - 1, -(2**31), 1]
    assert bench.reference(torch, bits, "u8").tolist() == [0, 255, 0, 1]
    assert bench.reference(torch, bits, "i32_roundeven").tolist() == [0, 2**31 - 1, -(2**31), 2]


@pytest.mark.parametrize("form", ["ptx", "asm"])
@pytest.mark.parametrize(
    "case",
    [
        "i32", "u32", "i8", "u8", "i16",
        # i64: cvt.rzi.s64.f32 alone is F2I.S64.TRUNC (no .NTZ, NaN -> INT64_MIN on the H200);
        # the pass adds a NaN select, so NaN -> 0 like the narrower widths.
        "i64",
        "i32_floor", "i32_ceil", "i32_roundeven", "i32_trunc", "bitcast",
    ],
)
def test_conversion_matches_reference(bench, checker, case, form):
    want = bench.CASES[case][5]
    assert any(want in line for line in bench.ptx_lines(checker.fns[case, form])), f"{want} not in the PTX"
    mismatches, examples = {}, {}
    checker.check(case, mismatches, examples, forms=[form])
    assert mismatches[case, form] == 0, examples.get((case, form))
