"""fptosi-to-select: thresholds checked against numpy, rewritten IR run on the CPU,
real CuTeDSL kernels compiled for sm_90a and sm_100a.

1. The threshold plan (pure Python, no IR) on every f16 and bf16 pattern for many
   random chains of clamps and roundeven, against a numpy model of the chain.
2. The rewritten IR itself, JIT-compiled for the host (`cute_lowering.hostjit`), on every
   f16/bf16 pattern or on f32 patterns around every threshold (±64 ulps), ±0, ±inf,
   NaNs, denormals and random bits, against the same numpy model.
3. Real kernels (tests/clamp_kernels.py): no fptosi/fptoui left, CuTeDSL's pipeline
   compiles them, and the PTX holds no float-to-integer cvt and no cvt.rni.

The model of the original IR, in float64 (exact for these sources): the options'
promise clips the input (NaN passes), minnumf/maxnumf are np.fmin/np.fmax (NaN-quiet),
minimumf/maximumf np.minimum/np.maximum (NaN-propagating), roundeven np.rint, then
trunc. A NaN that reaches the conversion is poison there; the pass documents the
lowest result for it, and that is what is checked.
"""

from __future__ import annotations

import functools
import random
import re
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from cute_lowering import run_pipeline
from cute_lowering.cutedsl import compile_ir, trace_ir
from cute_lowering.mlir import new_context, parse_module
from cute_lowering.passes.fptosi_to_select import _FORMATS, _plan, _representable
from cute_lowering.rewriting import Leave

DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
BITS = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}
NUMPY_STAGE = {
    "arith.minnumf": np.fmin, "arith.maxnumf": np.fmax, "arith.minimumf": np.minimum, "arith.maximumf": np.maximum,
}  # fmt: skip
PLAN_STAGE = {  # op -> (kind, NaN-quiet)
    "arith.minnumf": ("min", True), "arith.maxnumf": ("max", True),
    "arith.minimumf": ("min", False), "arith.maximumf": ("max", False),
}  # fmt: skip


# -- the numpy model --------------------------------------------------------------
def model(x: np.ndarray, stages, promise=(None, None)) -> np.ndarray:
    """Integer results of `stages` (("arith.minnumf", c), ("math.roundeven",), ...) on x."""
    with np.errstate(invalid="ignore"):
        y = x.astype(np.float64)
    low, high = promise
    if low is not None:
        y = np.where(np.isnan(y), y, np.maximum(y, low))
    if high is not None:
        y = np.where(np.isnan(y), y, np.minimum(y, high))
    with np.errstate(invalid="ignore"):
        for stage in stages:
            y = np.rint(y) if stage[0] == "math.roundeven" else NUMPY_STAGE[stage[0]](y, stage[1])
    lowest = np.trunc(np.nanmin(model_range(stages, promise)))
    return np.where(np.isnan(y), lowest, np.trunc(np.where(np.isnan(y), 0, y))).astype(np.int64)


def model_range(stages, promise):
    ends = np.array([-np.inf, np.inf])
    low, high = promise
    if low is not None:
        ends = np.maximum(ends, low)
    if high is not None:
        ends = np.minimum(ends, high)
    for stage in stages:
        ends = np.rint(ends) if stage[0] == "math.roundeven" else NUMPY_STAGE[stage[0]](ends, stage[1])
    return ends


def all16(src: str) -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(DTYPES[src])


def f32_inputs(low: float, high: float) -> np.ndarray:
    """Every integer and half-integer in [low - 3, high + 3] ±64 ulps, specials, random bits."""
    marks = np.arange(np.floor(low) - 3, np.ceil(high) + 3.5, 0.5, dtype=np.float32)
    bits = np.abs(marks).view(np.uint32).astype(np.int64)
    near = (bits[:, None] + np.arange(-64, 65)[None, :]).clip(0, 0x7F7FFFFF).astype(np.uint32).reshape(-1)
    near = np.concatenate([near, near | 0x80000000])
    specials = np.array(
        [0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
         0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF, 0x3F000000, 0xBF000000],
        dtype=np.uint32,
    )  # fmt: skip
    rand = np.random.default_rng(7).integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([near, specials, rand]).view(np.float32)


# -- 1. the plan alone ------------------------------------------------------------------
def evaluate_plan(plan, x: np.ndarray) -> np.ndarray:
    """What the emitted select chain computes, in numpy."""
    with np.errstate(invalid="ignore"):
        y = x.astype(np.float64)
    result = np.full(y.shape, plan.low, np.int64)
    nan = np.isnan(y)
    for i, th in enumerate(plan.thresholds):
        with np.errstate(invalid="ignore"):
            passes = y >= float(th.value) if th.predicate == "ge" else y > float(th.value)
        if i == plan.unordered:
            passes |= nan
        result = np.where(passes, th.code, result)
    if plan.nan_select is not None:
        result = np.where(nan, plan.nan_select, result)
    return result


def plan_chain(stages):
    chain = []
    for stage in stages:
        if stage[0] == "math.roundeven":
            chain.append(("rne",))
        else:
            kind, quiet = PLAN_STAGE[stage[0]]
            chain.append((kind, Fraction(stage[1]), quiet))
    return tuple(chain)


def random_chain(rng: random.Random, src: str):
    """A clamp on both sides in random order, spelling and bounds, a roundeven maybe
    before, between or after; sometimes a second clamp."""
    step = rng.choice([1, 0.5, 0.25, 0.125])
    a, b = sorted(rng.randint(-40, 40) * step for _ in range(2))
    dtype = DTYPES[src]
    a, b = float(dtype(a)), float(dtype(b))
    mins = rng.choice(["arith.minnumf", "arith.minimumf"])
    maxs = rng.choice(["arith.maxnumf", "arith.maximumf"])
    stages = [(mins, b), (maxs, a)] if rng.random() < 0.5 else [(maxs, a), (mins, b)]
    if rng.random() < 0.3:
        stages.insert(rng.randint(0, 2), (rng.choice(list(NUMPY_STAGE)), float(dtype(rng.randint(-30, 30) * step))))
    if rng.random() < 0.6:
        stages.insert(rng.randint(0, len(stages)), ("math.roundeven",))
    promise = (None, None)
    if rng.random() < 0.3:
        lo = rng.randint(-60, 20) * 0.25
        promise = (lo, lo + rng.randint(0, 80) * 0.25)
    return stages, promise


@pytest.mark.parametrize("src", ["f16", "bf16"])
def test_plan_matches_the_model_on_every_pattern(src):
    rng = random.Random(src)
    x = all16(src)
    checked = 0
    for _ in range(300):
        stages, promise = random_chain(rng, src)
        fraction_promise = tuple(None if p is None else Fraction(p) for p in promise)
        try:
            plan = _plan(plan_chain(stages), fraction_promise, _FORMATS[src], True, 32, 64)
        except Leave as why:
            assert "more than max-thresholds" in str(why), (stages, promise, why)
            continue
        expected = model(x, stages, promise)
        got = evaluate_plan(plan, x)
        bad = np.flatnonzero(expected != got)
        assert bad.size == 0, (stages, promise, [(float(x[i]), expected[i], got[i]) for i in bad[:8]])
        for th in plan.thresholds:
            assert th.value == np.inf or _representable(th.value, _FORMATS[src])
        checked += 1
    assert checked > 200


def test_plan_thresholds_rz_and_rne_by_hand():
    fmt = _FORMATS["f32"]
    rz = _plan((("max", Fraction(-3), True), ("min", Fraction(3), True)), (None, None), fmt, True, 8, 16)
    assert [(t.predicate, t.value, t.code) for t in rz.thresholds] == [
        ("gt", -3, -2), ("gt", -2, -1), ("gt", -1, 0), ("ge", 1, 1), ("ge", 2, 2), ("ge", 3, 3)
    ]  # fmt: skip
    rne = _plan((("max", Fraction(-3), True), ("min", Fraction(3), True), ("rne",)), (None, None), fmt, True, 8, 16)
    assert [(t.predicate, str(t.value), t.code) for t in rne.thresholds] == [
        ("ge", "-5/2", -2), ("gt", "-3/2", -1), ("ge", "-1/2", 0), ("gt", "1/2", 1), ("ge", "3/2", 2), ("gt", "5/2", 3)
    ]  # fmt: skip: the tie k - 1/2 rounds to k when k is even (ge), else to k - 1 (gt)
    assert rne.unordered is None and rne.nan_select is None  # maxnumf(NaN, -3) = -3: the lowest result


def test_plan_refuses_what_it_cannot_do():
    fmt = _FORMATS["f32"]
    clamp = (("max", Fraction(0), True), ("min", Fraction(300), True))
    with pytest.raises(Leave, match="more than max-thresholds=16"):
        _plan(clamp, (None, None), fmt, True, 32, 16)
    with pytest.raises(Leave, match=r"do not fit the destination \(i8\)"):
        _plan(clamp, (None, None), fmt, True, 8, 1000)
    with pytest.raises(Leave, match="unbounded above"):
        _plan(clamp[:1], (None, None), fmt, True, 32, 16)
    with pytest.raises(Leave, match="min=2 is above max=1"):
        _plan(clamp, (Fraction(2), Fraction(1)), fmt, True, 32, 16)
    # huge ranges are refused without walking them
    with pytest.raises(Leave, match="more than max-thresholds"):
        _plan((), (Fraction(-10**18), Fraction(10**18)), fmt, True, 64, 16)


# -- 2. the rewritten IR on the CPU -------------------------------------------------------
def chain_function(src: str, dst: str, stages, op: str = "arith.fptosi", vector: int = 0) -> str:
    """`func.func @convert` applying `stages` then `op`; bounds as constants of the source type."""
    ty = f"vector<{vector}x{src}>" if vector else src
    rty = f"vector<{vector}x{dst}>" if vector else dst
    lines = [f"func.func @convert(%x: {ty}) -> {rty} {{"]
    v = "%x"
    for i, stage in enumerate(stages):
        if stage[0] == "math.roundeven":
            lines.append(f"  %s{i} = math.roundeven {v} : {ty}")
        else:
            value = float(DTYPES[src](stage[1]))
            const = f"dense<{value!r}>" if vector else repr(value)
            lines.append(f"  %c{i} = arith.constant {const} : {ty}")
            operands = f"{v}, %c{i}" if i % 2 == 0 else f"%c{i}, {v}"  # both operand orders
            lines.append(f"  %s{i} = {stage[0]} {operands} : {ty}")
        v = f"%s{i}"
    lines += [f"  %y = {op} {v} : {ty} to {rty}", f"  return %y : {rty}", "}"]
    return "\n".join(lines) + "\n"


NUM, IMUM = ("arith.minnumf", "arith.maxnumf"), ("arith.minimumf", "arith.maximumf")
RNE = ("math.roundeven",)

# (name, src, dst, op, stages, options)
JIT_CASES = [
    ("cute-clamp-rne-i32", "f32", "i32", "arith.fptosi", [(NUM[0], 1.0), (NUM[1], -2.0), RNE], ""),
    ("num-rz-i8", "f32", "i8", "arith.fptosi", [(NUM[1], -8.0), (NUM[0], 7.0)], ""),
    ("imum-rz-frac-i16", "f32", "i16", "arith.fptosi", [(IMUM[0], 5.5), (IMUM[1], -3.75)], ""),
    ("rne-then-imum-u8-f16", "f16", "i8", "arith.fptoui", [RNE, (IMUM[0], 3.0), (IMUM[1], 0.0)], ""),
    ("bf16-merged-rz", "bf16", "i32", "arith.fptosi", [(IMUM[1], 250.0), (IMUM[0], 260.0)], ""),
    ("bf16-wide-rne", "bf16", "i16", "arith.fptosi", [(NUM[0], 600.0), (NUM[1], -600.0), RNE],
     "{max-thresholds=2048}"),
    ("f16-inexact-half-thresholds", "f16", "i32", "arith.fptosi", [(NUM[1], 1020.5), (NUM[0], 1030.0), RNE],
     "{max-thresholds=64}"),
    ("f16-inexact-bounds", "f16", "i8", "arith.fptosi", [(NUM[0], 4.7), (NUM[1], -3.3), RNE], ""),
    ("nan-beyond-the-range", "f32", "i32", "arith.fptosi", [(IMUM[0], 2.2), (NUM[0], 2.6), (NUM[1], 0.0), RNE], ""),
    ("options-only-rne", "f32", "i32", "arith.fptosi", [RNE], "{min=-2.25 max=3.7}"),
    ("options-only-rz", "f32", "i64", "arith.fptosi", [], "{min=-100 max=100 max-thresholds=256}"),
    ("options-and-clamp", "f32", "i32", "arith.fptosi", [(NUM[1], -2.0), (NUM[0], 2.0)], "{min=-1 max=1.5}"),
    ("negative-ties-i64", "f32", "i64", "arith.fptosi", [(NUM[0], 3.5), (NUM[1], -3.5), RNE], ""),
    ("f64-rne", "f64", "i32", "arith.fptosi", [(IMUM[1], -5.0), (IMUM[0], 5.0), RNE], ""),
    ("u8-full-range", "f32", "i8", "arith.fptoui", [(NUM[1], 0.0), (NUM[0], 255.0)], "{max-thresholds=256}"),
    ("rz-mode-keeps-roundeven", "f16", "i32", "arith.fptosi", [RNE, (NUM[0], 4.0), (NUM[1], -4.0)],
     "{rounding=rz}"),
]


@functools.cache
def _hostjit():
    return pytest.importorskip("cute_lowering.hostjit", reason="the host JIT harness (lowering/hostjit.py) is absent")


def f64_inputs(low, high):
    with np.errstate(invalid="ignore"):
        x = f32_inputs(low, high).astype(np.float64)
    return np.concatenate([x, np.nextafter(x, np.inf), np.nextafter(x, -np.inf)])


@pytest.mark.parametrize("case", JIT_CASES, ids=[c[0] for c in JIT_CASES])
def test_rewritten_ir_on_the_cpu(case):
    hostjit = _hostjit()
    name, src, dst, op, stages, options = case
    text = chain_function(src, dst, stages, op)
    kernel = hostjit.compile_function(text, src, dst, f"builtin.module(fptosi-to-select{options})")
    assert "arith.fpto" not in kernel.rewritten_text
    if "rounding=rz" not in options:  # with rz a roundeven stays and the compares read it
        assert "math.roundeven" not in kernel.rewritten_text
    found = dict(re.findall(r"(min|max)=(\S+?)[ }]", options))
    promise = (float(found["min"]) if "min" in found else None, float(found["max"]) if "max" in found else None)
    lo, hi = model_range(stages, promise)
    if src in ("f16", "bf16"):
        x = all16(src)
    elif src == "f64":
        x = f64_inputs(max(lo, -1e6), min(hi, 1e6))
    else:
        x = f32_inputs(max(lo, -1e6), min(hi, 1e6))
    typed = [(s[0], float(DTYPES[src](s[1]))) if len(s) > 1 else s for s in stages]
    expected = model(x, typed, promise)
    got = kernel(x).astype(np.int64)
    bad = np.flatnonzero(expected != got)
    assert bad.size == 0, f"{name}: {bad.size} mismatches: " + ", ".join(
        f"{float(x[i])!r} ({x[i:i+1].view(BITS[src])[0]:#x}) expected {expected[i]} got {got[i]}" for i in bad[:8]
    )


def test_rewritten_vector_ir_on_the_cpu():
    hostjit = _hostjit()
    stages = [(NUM[0], 3.0), (NUM[1], -4.0), RNE]
    text = chain_function("f32", "i8", stages, vector=4)
    kernel = hostjit.compile_function(text, "vector<4xf32>", "vector<4xi8>", "builtin.module(fptosi-to-select)")
    assert "vector.extract" not in kernel.rewritten_text  # no unrolling
    x = f32_inputs(-4, 3)
    x = x[: x.size - x.size % 4]
    np.testing.assert_array_equal(kernel(x).astype(np.int64), model(x, stages))


# -- 3. real kernels through CuTeDSL's pipeline -------------------------------------------
ARCHS = ("sm_90a", "sm_100a")
FLOAT_TO_INT_CVT = re.compile(r"\bcvt\.(?:r[nzmp]i\.)?(?:sat\.)?[su](?:8|16|32|64)\.(?:f16|bf16|f32|f64)\b")


@functools.cache
def traced(case: str) -> str:
    from clamp_kernels import CASES

    launcher, arguments = CASES[case][:2]
    return trace_ir(launcher, *arguments())


@functools.cache
def rewritten(case: str) -> tuple[str, dict]:
    with new_context() as context:
        module = parse_module(traced(case), context)
        result = run_pipeline(module, "builtin.module(fptosi-to-select)")
        return str(module), result.counts("fptosi-to-select")


def kernel_cases():
    from clamp_kernels import CASES

    return sorted(CASES)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("case", kernel_cases())
def test_kernel_compiles_without_a_float_to_int_conversion(case, arch):
    from clamp_kernels import CASES

    _, _, thresholds, folded, conversions = CASES[case]
    original = traced(case)
    assert re.search(r"arith\.fpto[su]i", original), "the kernel no longer converts: the test would prove nothing"
    native = compile_ir(original, arch)
    assert FLOAT_TO_INT_CVT.search(native), "natively CuTeDSL emits a cvt to integer"

    text, counts = rewritten(case)
    assert counts == {"rewritten": conversions, "left": 0, "folded": folded, "thresholds": thresholds * conversions}
    assert not re.search(r"arith\.fpto[su]i|math\.roundeven|llvm\.inline_asm|nvvm\.inline_ptx", text)
    ptx = compile_ir(text, arch)
    assert f".target {arch}" in ptx
    assert not FLOAT_TO_INT_CVT.search(ptx), FLOAT_TO_INT_CVT.findall(ptx)
    assert "cvt.rni" not in ptx and "// begin inline asm" not in ptx
    assert not re.search(r"\b(?:min|max)(?:\.NaN)?\.f(?:16|32)", ptx), "the clamp should be gone"
    lanes = 8 if case.startswith("vector") else 1
    assert len(re.findall(r"\bsetp\.", ptx)) >= thresholds * lanes


@pytest.mark.slow
@pytest.mark.parametrize(
    "stages, dst",
    [([(NUM[0], 7.0), (NUM[1], -8.0), RNE], "i32"), ([(IMUM[1], -128.0), (IMUM[0], 127.0)], "i8")],
    ids=["clamp-rne-i32", "imum-rz-i8"],
)
def test_rewritten_ir_on_every_f32_pattern(stages, dst):
    hostjit = _hostjit()
    text = chain_function("f32", dst, stages)
    kernel = hostjit.compile_function(text, "f32", dst, "fptosi-to-select{max-thresholds=256}")

    def check(bits, got):
        expected = model(bits.view(np.float32), stages)
        return int(np.count_nonzero(expected != got.astype(np.int64)))

    assert sum(hostjit.run_chunks(kernel, hostjit.all_bit_patterns(32), check)) == 0
