"""The select-based conversion passes, run on the CPU and checked bit by bit.

Each conversion is built as `func.func @convert`, rewritten by the real pass
(`cute_lowering.hostjit.host_conversion`), JIT-compiled for the host and compared with the
independent references in tests/references.py:

  * truncf-to-select: f32 sources on a bit over 2^24 stratified patterns (every
    exponent, every threshold and value +-64 ulps, ties, +-0, +-inf, NaN payloads,
    f32 denormals, out of range, random), f16 and bf16 sources on all 2^16 patterns;
  * extf-to-select: all 16/256 codes of each format to f32, f16, bf16;
  * fptosi-to-select: clamped conversions (minnumf/maxnumf, minimumf/maximumf,
    options min=/max=), rne and rz, reference numpy clip then rint or trunc.

A pass that is not registered yet skips its tests. The exhaustive 2^32 runs are
marked slow (`pytest -m slow`); bench/exhaustive_cpu.py runs them with a report.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
import references as ref

from cute_lowering import get_pass
from cute_lowering.hostjit import (
    ConversionNotRewritten,
    all_bit_patterns,
    compile_function,
    host_conversion,
    run_chunks,
)

TRUNCF, EXTF, FPTOSI = "truncf-to-select", "extf-to-select", "fptosi-to-select"


def needs(pass_name: str):
    return pytest.mark.skipif(
        get_pass(pass_name) is None, reason=f"pass '{pass_name}' is not registered yet (lowering-opt --list-passes)"
    )


def assert_same(inputs, expected, got, what: str, src: str = "f32"):
    if not np.array_equal(expected, got):
        pytest.fail(f"{what}: " + ref.describe_mismatches(inputs, expected, got, src), pytrace=False)


@functools.cache
def f32_inputs(fmt: str, rounding: str | None = None) -> np.ndarray:
    return ref.inputs_f32(fmt, rounding)


def all16() -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


# The five conversions to narrow floats: (MLIR destination, truncf rounding attribute,
# reference rounding). No attribute means arith.truncf's default, to-nearest-even.
TRUNCF_CASES = [
    ("f4E2M1FN", None, None),
    ("f8E4M3FN", None, None),
    ("f8E5M2", None, None),
    ("f8E8M0FNU", "upward", "upward"),
    ("f8E8M0FNU", None, "nearest"),
    ("f8E8M0FNU", "to_nearest_even", "nearest"),
]
TRUNCF_IDS = [f"{d}-{r or 'default'}" for d, r, _ in TRUNCF_CASES]
PIPELINE = "builtin.module({},canonicalize)"


# ---------------------------------------------------------------------------
# The harness itself, on hand-written IR (needs no pass)
# ---------------------------------------------------------------------------
def e2m1_select_chain(src_type: str = "f32") -> str:
    """A hand-written f32 -> E2M1 conversion: one compare + select per midpoint of the
    reference's values (ties to the even code), sign or'ed in unless NaN (NaN -> +6)."""
    values = ref.finite_values("f4E2M1FN")
    ty = src_type
    elem = src_type.split("x")[-1].rstrip(">") if src_type.startswith("vector") else src_type

    def vt(t):
        return src_type.replace(elem, t) if src_type.startswith("vector") else t

    def const(name, value, t):
        attr = f"dense<{value}> : {vt(t)}" if src_type.startswith("vector") else f"{value} : {t}"
        return f"  %{name} = arith.constant {attr}\n"

    body = const("mask", 0x7FFFFFFF, "i32") + const("zero", 0, "i32") + const("c28", 28, "i32") + const("c8", 8, "i32")
    body += f"  %b = arith.bitcast %x : {ty} to {vt('i32')}\n"
    body += f"  %ab = arith.andi %b, %mask : {vt('i32')}\n"
    body += f"  %a = arith.bitcast %ab : {vt('i32')} to {ty}\n"
    prev = "%zero"
    for k in range(1, len(values)):
        mid = (values[k - 1] + values[k]) / 2
        pred = "uge" if k % 2 == 0 else "ugt"  # NaN passes every compare: code 7
        body += const(f"t{k}", float(mid), elem) + const(f"k{k}", k, "i32")
        body += f"  %p{k} = arith.cmpf {pred}, %a, %t{k} : {ty}\n"
        body += f"  %s{k} = arith.select %p{k}, %k{k}, {prev} : {vt('i1')}, {vt('i32')}\n"
        prev = f"%s{k}"
    body += f"  %sh = arith.shrui %b, %c28 : {vt('i32')}\n  %sg = arith.andi %sh, %c8 : {vt('i32')}\n"
    body += f"  %nan = arith.cmpf uno, %x, %x : {ty}\n"
    body += f"  %sgn = arith.select %nan, %zero, %sg : {vt('i1')}, {vt('i32')}\n"
    body += f"  %code = arith.ori {prev}, %sgn : {vt('i32')}\n"
    body += f"  %c4 = arith.trunci %code : {vt('i32')} to {vt('i4')}\n"
    body += f"  %y = arith.bitcast %c4 : {vt('i4')} to {vt('f4E2M1FN')}\n"
    return f"func.func @convert(%x: {ty}) -> {vt('f4E2M1FN')} {{\n{body}  return %y : {vt('f4E2M1FN')}\n}}\n"


@pytest.mark.parametrize("src", ["f32", "vector<8xf32>"])
def test_harness_runs_a_hand_written_select_chain(src):
    dst = src.replace("f32", "f4E2M1FN")
    kernel = compile_function(e2m1_select_chain(src), src, dst)
    x = f32_inputs("f4E2M1FN")
    assert_same(x, ref.encode(x, "f4E2M1FN"), kernel(x), "hand-written E2M1 chain")
    assert "f4E2M1FN" not in kernel.lowered_text  # the bitcast pair folded away
    odd = x[:1001]  # not a multiple of the vector length: padded and cut
    assert_same(odd, ref.encode(odd, "f4E2M1FN"), kernel(odd), "odd length")


def test_harness_float_results_and_plain_llvm_conversions():
    kernel = host_conversion("f32", "f16", None, forbid=None)  # LLVM's own fptrunc
    x = f32_inputs("f4E2M1FN")
    y = kernel(x)
    assert y.dtype == np.float16
    with np.errstate(over="ignore", invalid="ignore"):
        expected = x.view(np.float32).astype(np.float16)
    ok = ~np.isnan(expected)
    assert np.array_equal(y.view(np.uint16)[ok], expected.view(np.uint16)[ok])
    assert np.isnan(y[~ok]).all()


def test_harness_narrow_sources_come_in_as_codes():
    # f4E2M1FN -> i8 through bitcast and zero extension: the identity on the low 4 bits.
    text = (
        "func.func @convert(%x: f4E2M1FN) -> i8 {\n"
        "  %b = arith.bitcast %x : f4E2M1FN to i4\n  %y = arith.extui %b : i4 to i8\n  return %y : i8\n}\n"
    )
    kernel = compile_function(text, "f4E2M1FN", "i8")
    codes = np.arange(256, dtype=np.uint8)
    assert np.array_equal(kernel(codes).view(np.uint8), codes & 0xF)


def test_harness_sign_extends_narrow_integer_results():
    kernel = host_conversion("f32", "i4", None, forbid=None)  # LLVM's fptosi, in range here
    x = np.arange(-8, 8, dtype=np.float32)
    y = kernel(x)
    assert y.dtype == np.int8 and y.tolist() == list(range(-8, 8))


def test_harness_reports_a_conversion_the_pipeline_left():
    with pytest.raises(ConversionNotRewritten, match=r"left 1 conversion op.*f32 -> f4E2M1FN"):
        host_conversion("f32", "f4E2M1FN", "builtin.module(canonicalize)")


def test_harness_chunks_overlap_and_cover_every_pattern():
    kernel = host_conversion("f16", "f32", None, forbid=None)
    seen = []
    for first, last, n in run_chunks(
        kernel, all_bit_patterns(bits=16, chunk_bits=12), lambda i, o: (int(i[0]), int(i[-1]), o.size)
    ):
        seen.append((first, last, n))
    assert seen == [(s, s + 4095, 4096) for s in range(0, 1 << 16, 4096)]


# ---------------------------------------------------------------------------
# truncf-to-select
# ---------------------------------------------------------------------------
@needs(TRUNCF)
@pytest.mark.parametrize("dst, rounding, ref_rounding", TRUNCF_CASES, ids=TRUNCF_IDS)
def test_truncf_f32_stratified(dst, rounding, ref_rounding):
    kernel = host_conversion("f32", dst, PIPELINE.format(TRUNCF), rounding=rounding)
    x = f32_inputs(dst, ref_rounding)
    assert x.size >= 1 << 24
    assert_same(x, ref.encode_any(x, dst, ref_rounding), kernel(x), f"truncf f32 -> {dst} {rounding}")


@needs(TRUNCF)
@pytest.mark.parametrize("dst, rounding, ref_rounding", TRUNCF_CASES[:5], ids=TRUNCF_IDS[:5])
def test_truncf_f32_vector(dst, rounding, ref_rounding):
    kernel = host_conversion("vector<8xf32>", f"vector<8x{dst}>", PIPELINE.format(TRUNCF), rounding=rounding)
    x = f32_inputs(dst, ref_rounding)[::7]
    assert_same(x, ref.encode_any(x, dst, ref_rounding), kernel(x), f"truncf vector<8xf32> -> {dst}")


@needs(TRUNCF)
@pytest.mark.parametrize("src", ["f16", "bf16"])
@pytest.mark.parametrize("dst, rounding, ref_rounding", TRUNCF_CASES, ids=TRUNCF_IDS)
def test_truncf_16bit_exhaustive(src, dst, rounding, ref_rounding):
    kernel = host_conversion(src, dst, PIPELINE.format(TRUNCF), rounding=rounding)
    x = all16()
    expected = ref.encode_any(ref.to_f32(x, src), dst, ref_rounding)
    assert_same(x, expected, kernel(x), f"truncf {src} -> {dst} {rounding}", src)


@needs(TRUNCF)
@pytest.mark.parametrize("formulation", ["fma", "select"])
@pytest.mark.parametrize("src", ["f32", "vector<8xf32>", "vector<16xf32>", "bf16", "vector<8xf16>"])
def test_truncf_e2m1_both_formulations(formulation, src):
    """Each E2M1 formulation, scalar and packed vectors, from every 16-bit source pattern
    or the stratified f32 set (every tie, boundary and special value)."""
    pipeline = PIPELINE.format(f"{TRUNCF}{{e2m1={formulation}}}")
    dst = src.replace("f32", "f4E2M1FN").replace("bf16", "f4E2M1FN").replace("f16", "f4E2M1FN")
    kernel = host_conversion(src, dst, pipeline)
    element = src.split("x")[-1].rstrip(">") if "<" in src else src
    if element == "f32":
        x = f32_inputs("f4E2M1FN")[:: 3 if "<" in src else 1]
        expected = ref.encode(x, "f4E2M1FN")
    else:
        x = all16()
        expected = ref.encode(ref.to_f32(x, element), "f4E2M1FN")
    assert_same(x, expected, kernel(x), f"truncf {src} -> E2M1, e2m1={formulation}", element)


@needs(TRUNCF)
@pytest.mark.parametrize("rounding", ["downward", "toward_zero"])
def test_truncf_e8m0_downward(rounding):
    kernel = host_conversion("f32", "f8E8M0FNU", PIPELINE.format(TRUNCF), rounding=rounding)
    x = f32_inputs("f8E8M0FNU", "nearest")
    assert_same(x, ref.encode_e8m0(x, rounding), kernel(x), f"truncf f32 -> E8M0 {rounding}")


# ---------------------------------------------------------------------------
# extf-to-select: every code
# ---------------------------------------------------------------------------
@needs(EXTF)
@pytest.mark.parametrize("src", list(ref.LAYOUTS))
@pytest.mark.parametrize("dst", ["f32", "f16", "bf16", "f64", "vector<4xf32>"])
def test_extf_every_code(src, dst):
    if dst.startswith("vector"):
        kernel = host_conversion(f"vector<4x{src}>", dst, PIPELINE.format(EXTF))
    else:
        kernel = host_conversion(src, dst, PIPELINE.format(EXTF))
    codes = ref.all_codes(src)
    got = kernel(codes)
    value = ref.decode(codes, src)  # exact f32
    scalar = dst.split("x")[-1].rstrip(">")
    with np.errstate(over="ignore"):
        expected = {
            "f32": value,
            "f16": value.astype(np.float16),
            "bf16": value.astype(ref.ml_dtypes.bfloat16),
            "f64": value.astype(np.float64),
        }[scalar]
    nan = np.isnan(expected.astype(np.float64))
    assert np.array_equal(np.isnan(got.astype(np.float64)), nan), f"NaN codes: {codes[nan]}"
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[expected.dtype.itemsize]
    assert_same(codes[~nan], expected.view(bits)[~nan], got.view(bits)[~nan], f"extf {src} -> {dst}", "code")


@needs(EXTF)
@needs(TRUNCF)
@pytest.mark.parametrize("fmt", ["f4E2M1FN", "f8E4M3FN", "f8E5M2", "f8E8M0FNU"])
def test_extf_then_truncf_round_trips_every_finite_code(fmt):
    text = (
        f"func.func @convert(%x: {fmt}) -> {fmt} {{\n  %f = arith.extf %x : {fmt} to f32\n"
        f"  %y = arith.truncf %f : f32 to {fmt}\n  return %y : {fmt}\n}}\n"
    )
    kernel = compile_function(text, fmt, fmt, f"builtin.module({EXTF},{TRUNCF},canonicalize)")
    codes = ref.all_codes(fmt)
    finite = np.isfinite(ref.decode(codes, fmt))
    assert_same(codes[finite], codes[finite], kernel(codes)[finite], f"{fmt} round trip", "code")


# ---------------------------------------------------------------------------
# fptosi-to-select
# ---------------------------------------------------------------------------
def clamp_function(src: str, dst: str, lo, hi, *, clamp: str, roundeven: bool, op: str = "arith.fptosi") -> str:
    """`op(roundeven?(clamp(x, lo, hi)))`; clamp "num" is minnumf/maxnumf, "imum"
    minimumf/maximumf, "none" no clamp at all."""
    lines = [f"func.func @convert(%x: {src}) -> {dst} {{"]
    v = "%x"

    def const(value):
        return f"dense<{float(value)!r}>" if src.startswith("vector") else repr(float(value))

    if clamp != "none":
        mn, mx = ("arith.minnumf", "arith.maxnumf") if clamp == "num" else ("arith.minimumf", "arith.maximumf")
        lines += [
            f"  %hi = arith.constant {const(hi)} : {src}",
            f"  %lo = arith.constant {const(lo)} : {src}",
            f"  %m = {mn} %x, %hi : {src}",
            f"  %c = {mx} %lo, %m : {src}",
        ]
        v = "%c"
    if roundeven:
        lines.append(f"  %r = math.roundeven {v} : {src}")
        v = "%r"
    lines += [f"  %y = {op} {v} : {src} to {dst}", f"  return %y : {dst}", "}"]
    return "\n".join(lines) + "\n"


def fptosi_reference(x32: np.ndarray, clamp: tuple | None, promise: tuple | None, *, round_even: bool,
                     nan_quiet: bool, promise_after_round: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """numpy clip then round-half-even or trunc, in f64 (exact for these sources), in
    the pass's documented order: the `min=`/`max=` promise on the chain's input first
    (broken: saturate, i.e. clip; NaN passes through), then the IR's clamp `(lo, hi)`
    (its constants as the IR holds them, in the source type), then round-half-even
    (if a roundeven is folded), then trunc. With `rounding=rz` a roundeven is not
    folded and the chain's input is its result: `promise_after_round`.
    Returns (values, defined): NaN is defined only through a NaN-quiet clamp (it
    becomes the upper bound: minnumf(NaN, hi) = hi)."""
    with np.errstate(invalid="ignore"):  # signalling NaNs
        x = x32.astype(np.float64)
    nan = np.isnan(x)
    y = x
    if promise is not None and not promise_after_round:
        y = np.where(nan, y, np.clip(y, *promise))
    if clamp is not None:
        y = np.clip(np.where(nan, clamp[1] if nan_quiet else 0.0, y), *clamp)
    else:
        y = np.where(nan, 0.0, y)
    if round_even:
        y = np.rint(y)
    if promise is not None and promise_after_round:
        y = np.clip(y, *promise)
    return np.trunc(y).astype(np.int64), (~nan) | nan_quiet


def fptosi_inputs(lo, hi) -> np.ndarray:
    """Stratified patterns plus every integer and half-integer in and around [lo, hi] +-64 ulps."""
    marks = np.arange(np.floor(lo) - 2, np.ceil(hi) + 2.5, 0.5)
    near = ref.near_thresholds_bits(np.abs(marks))
    return np.concatenate([ref.stratified_f32_bits()[::4], near, ref.special_f32_bits()])


# (name, src, dst, lo, hi, clamp, roundeven, pass options, op)
FPTOSI_CASES = [
    ("num-rne-i32", "f32", "i32", -2.0, 1.0, "num", True, "", "arith.fptosi"),
    ("num-rz-i8", "f32", "i8", -8.0, 7.0, "num", False, "", "arith.fptosi"),
    ("imum-rne-i4", "f32", "i4", -8.0, 7.0, "imum", True, "", "arith.fptosi"),
    ("imum-rz-frac", "f32", "i32", -3.75, 5.5, "imum", False, "", "arith.fptosi"),
    ("num-rne-frac", "f32", "i16", -2.5, 6.5, "num", True, "", "arith.fptosi"),
    ("fptoui-rne-u8", "f32", "i8", 0.0, 15.0, "num", True, "", "arith.fptoui"),
    ("options-rz", "f32", "i32", -100.0, 100.0, "none", False, "{min=-100 max=100 max-thresholds=256}", "arith.fptosi"),
    ("options-rne", "f32", "i32", -6.0, 9.0, "none", True, "{min=-6 max=9 rounding=rne}", "arith.fptosi"),
    ("options-tighter-than-clamp", "f32", "i32", -8.0, 8.0, "num", True, "{min=-4 max=3}", "arith.fptosi"),
    ("options-rz-keeps-roundeven", "f32", "i32", -5.0, 5.0, "none", True, "{rounding=rz min=-5 max=5}", "arith.fptosi"),
    ("f16-num-rne", "f16", "i32", -12.0, 12.0, "num", True, "{max-thresholds=32}", "arith.fptosi"),
    ("bf16-merged-thresholds", "bf16", "i16", -600.0, 600.0, "imum", True, "{max-thresholds=2048}", "arith.fptosi"),
    ("bf16-imum-rz", "bf16", "i8", -5.0, 4.0, "imum", False, "", "arith.fptosi"),
    ("f16-inexact-bounds", "f16", "i8", -3.3, 4.7, "num", True, "", "arith.fptosi"),
    ("f32-inexact-bounds-rz", "f32", "i8", -2.9, 5.1, "imum", False, "", "arith.fptosi"),
    ("options-fractional", "f32", "i32", -2.25, 3.7, "none", True, "{min=-2.25 max=3.7}", "arith.fptosi"),
    ("bf16-options-ties", "bf16", "i32", -2.5, 4.5, "none", True, "{min=-2.5 max=4.5}", "arith.fptosi"),
    ("vector-num-rne", "vector<4xf32>", "vector<4xi32>", -3.0, 3.0, "num", True, "", "arith.fptosi"),
]


@needs(FPTOSI)
@pytest.mark.parametrize("case", FPTOSI_CASES, ids=[c[0] for c in FPTOSI_CASES])
def test_fptosi_clamped(case):
    name, src, dst, lo, hi, clamp, roundeven, options, op = case
    text = clamp_function(src, dst, lo, hi, clamp=clamp, roundeven=roundeven, op=op)
    kernel = compile_function(text, src, dst, PIPELINE.format(FPTOSI + options))
    scalar = src.split("x")[-1].rstrip(">")
    if scalar == "f32":
        x = fptosi_inputs(lo, hi)
        x32 = x.view(np.float32)
    else:
        x = all16()
        x32 = ref.to_f32(x, scalar)
    bounds = None
    if clamp != "none":  # the clamp's constants are in the source type
        typed = {"f32": np.float32, "f16": np.float16, "bf16": ref.ml_dtypes.bfloat16}[scalar]
        bounds = (float(typed(lo)), float(typed(hi)))
    found = dict(re.findall(r"(min|max)=(\S+?)[ }]", options))
    promise = (float(found["min"]), float(found["max"])) if found else None
    expected, defined = fptosi_reference(x32, bounds, promise, round_even=roundeven, nan_quiet=(clamp == "num"),
                                         promise_after_round="rounding=rz" in options)
    got = kernel(x).astype(np.int64)  # sign-extended for fptosi, zero-extended for fptoui
    assert_same(x[defined], expected[defined], got[defined], f"{name}: {text}", scalar)


# ---------------------------------------------------------------------------
# Exhaustive: every f32 pattern (slow)
# ---------------------------------------------------------------------------
def exhaustive_mismatches(kernel, expected_of, defined_of=None) -> tuple[int, list]:
    """Run all 2^32 f32 patterns; count where the kernel differs from `expected_of(bits)`."""

    def check(inputs, outputs):
        expected = expected_of(inputs)
        diff = expected != outputs
        if defined_of is not None:
            diff &= defined_of(inputs)
        bad = np.flatnonzero(diff)
        return bad.size, [(int(inputs[i]), int(expected[i]), int(outputs[i])) for i in bad[:5]]

    total, examples = 0, []
    for n, first in run_chunks(kernel, all_bit_patterns(32), check):
        total += n
        examples += first
    return total, examples


def _listing(total, examples) -> str:
    return f"{total} mismatches; first (input, expected, got): " + ", ".join(
        f"(0x{i:08x}, {e:#x}, {g:#x})" for i, e, g in examples[:10]
    )


@pytest.mark.slow
@needs(TRUNCF)
@pytest.mark.parametrize("dst, rounding, ref_rounding", TRUNCF_CASES[:5], ids=TRUNCF_IDS[:5])
def test_truncf_f32_exhaustive(dst, rounding, ref_rounding):
    kernel = host_conversion("f32", dst, PIPELINE.format(TRUNCF), rounding=rounding)
    total, examples = exhaustive_mismatches(kernel, lambda bits: ref.encode_any(bits, dst, ref_rounding))
    assert total == 0, _listing(total, examples)


@pytest.mark.slow
@needs(FPTOSI)
@pytest.mark.parametrize("name", ["num-rne-frac", "imum-rz-frac", "options-fractional"])
def test_fptosi_f32_exhaustive(name):
    _, src, dst, lo, hi, clamp, roundeven, options, op = next(c for c in FPTOSI_CASES if c[0] == name)
    text = clamp_function(src, dst, lo, hi, clamp=clamp, roundeven=roundeven, op=op)
    kernel = compile_function(text, src, dst, PIPELINE.format(FPTOSI + options))
    bounds = (float(np.float32(lo)), float(np.float32(hi))) if clamp != "none" else None
    found = dict(re.findall(r"(min|max)=(\S+?)[ }]", options))
    promise = (float(found["min"]), float(found["max"])) if found else None

    def reference(bits):
        return fptosi_reference(bits.view(np.float32), bounds, promise, round_even=roundeven,
                                nan_quiet=clamp == "num", promise_after_round="rounding=rz" in options)

    total, examples = exhaustive_mismatches(
        kernel, lambda bits: reference(bits)[0], lambda bits: reference(bits)[1]
    )
    assert total == 0, _listing(total, examples)
