"""Rewrite a clamped arith.fptosi/fptoui as float compares and integer selects.

Before (what `cutlass.Int32(cute.math.roundeven(cute.math.clamp(x, -2.0, 1.0)))` traces to):

    %c1 = arith.constant 1.000000e+00 : f32
    %cm2 = arith.constant -2.000000e+00 : f32
    %m = arith.minnumf %x, %c1 : f32
    %c = arith.maxnumf %cm2, %m : f32
    %r = math.roundeven %c : f32
    %i = arith.fptosi %r : f32 to i32

After (no float-to-int op, no inline asm; the clamp and the roundeven are gone if
nothing else used them):

    %lo = arith.constant -2 : i32
    %t0 = arith.constant -1.500000e+00 : f32
    %p0 = arith.cmpf ogt, %x, %t0 : f32        // x > -1.5 (the tie -1.5 goes to -2)
    %c0 = arith.constant -1 : i32
    %s0 = arith.select %p0, %c0, %lo : i32
    %t1 = arith.constant -5.000000e-01 : f32
    %p1 = arith.cmpf oge, %x, %t1 : f32        // x >= -0.5 (the tie goes to 0)
    %c1 = arith.constant 0 : i32
    %s1 = arith.select %p1, %c1, %s0 : i32
    %t2 = arith.constant 5.000000e-01 : f32
    %p2 = arith.cmpf ugt, %x, %t2 : f32        // x > 0.5, unordered: NaN -> 1, as the clamp made it
    %c2 = arith.constant 1 : i32
    %i = arith.select %p2, %c2, %s1 : i32

What is matched. The conversion's operand is followed back through a chain of
  - clamps: `arith.minimumf`, `arith.maximumf`, `arith.minnumf`, `arith.maxnumf`,
    and `nvvm.fmin`/`nvvm.fmax` (what `cute.arch.fmin/fmax` emit; two operands,
    no `abs`), with a constant bound as either operand: an `arith.constant`
    scalar or splat vector, or a `vector.broadcast` of a scalar constant (what
    TensorSSA's `cute.full_like` gives);
  - `math.roundeven`/`llvm.intr.roundeven`, before or after the clamps (folded:
    the thresholds become round-half-to-even ones).
The chain ends at the first other op, or at a clamp without a constant bound; the
compares read the value there (`%x`). Every op of the chain is bypassed and erased
once unused.

Options `min=`/`max=` (numbers: `-8`, `7.5`, `1e3`, `15/2`) promise that `%x`, the
chain's input (the data before the clamps and the folded roundeven), lies in
[min, max]. They intersect with the clamps: the promise acts first, then the IR's
clamps, so for every input that keeps the promise the result is the op's own; with
clamps and options both present, the tighter bound wins. `min` > `max` is an error of
the pipeline (`check_options`), refused before any IR is read.

The function. Clamps, roundeven and the final truncation are monotone, so the
conversion is a step function of `%x`: lo + the number of thresholds `%x` passes.
Each threshold is computed exactly (Python fractions) by following "result >= k"
back through the chain: truncation gives `x >= k` (k >= 1) or `x > k-1` (k <= 0);
roundeven gives the half-integer k-1/2 with `oge` when k is even (the tie rounds up
to it) and `ogt` when k is odd; a clamp bound either satisfies the condition for
every input or leaves it unchanged. A threshold that the source type (f16, bf16,
f32, f64) cannot hold is replaced by the nearest representable value on the same
side with `oge`: over the source type's values the set is the same, so the rewrite
is exact for every input (thresholds that then coincide are merged; their result
jumps by more than one). A range that needs more than `max-thresholds` compares is
left alone.

Why a select chain: each threshold costs one compare and one select (FSETP + SEL in
SASS, two instructions per threshold at most), merged thresholds cost nothing extra,
and NaN is steered with one predicate. Measured (ptxas 13.0, sm_90a and sm_100a) on
`Int32(roundeven(clamp(x, -8, 7)))`: 15 FSETP + 15 SEL + 1 MOV for the select
chain, against 45 instructions for `lo + sum zext(cmpf)` (LLVM turns the zext/add
chain into predicated IADD/MOV pairs); the native code is FMNMX x2 + F2I.

Rounding. `rounding=auto` folds a roundeven found in the chain (rne) and otherwise
truncates (rz). `rounding=rne` rewrites only conversions with a roundeven in their
chain and leaves the others (remark). `rounding=rz` folds no roundeven: the chain
stops at it, the compares read its result with truncation thresholds and it stays;
a conversion whose clamp sits before the roundeven then has no known range and is
left. In every mode the result is the op's own.

NaN and values out of range, compared with the original ops:
  - a clamp that quiets NaN (`minnumf`/`maxnumf`, `nvvm.fmin/fmax` without `nan`)
    turns NaN into its bound, so the conversion's result is defined: the rewrite
    gives the same code by making one compare unordered (`uge`/`ugt`), or, if no
    threshold can carry it, one `cmpf uno` + select at the end;
  - a NaN that reaches the conversion (`minimumf`/`maximumf` propagate it; no
    clamp at all) makes it poison: the select chain, all compares ordered, gives
    the lowest code of the range;
  - values outside `min=`/`max=` (the promise broken) give the result of the
    nearest bound (they saturate), ±inf included, as if clamped there; the promise
    lets NaN through to the IR's clamps, so the two rules above still hold for it;
    values outside a clamp in the IR are exact, the clamp saw to that.

Left alone (each with a remark): no known bound below or above (no clamp with a
constant bound, no option), an infinite or NaN bound, `min` > `max`, results that
do not fit the destination (signed or unsigned; for `fptoui` no result may be
negative), more thresholds than `max-thresholds`, a source other than
f16/bf16/f32/f64, and `rounding=rne` without a roundeven.

Statistics: rewritten, left, folded (roundeven ops folded into the thresholds),
thresholds (compare + select pairs emitted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from cute_lowering.mlir import arith, defining_op, element_type, ir
from cute_lowering.registry import Option, OptionError, choice, register_pass, text
from cute_lowering.rewriting import Leave, RewritePass

INF = math.inf

# clamp op -> (kind, NaN-quiet?); None: NaN-quiet unless the op has the `nan` unit attribute
_CLAMPS = {
    "arith.minimumf": ("min", False),
    "arith.maximumf": ("max", False),
    "arith.minnumf": ("min", True),
    "arith.maxnumf": ("max", True),
    "nvvm.fmin": ("min", None),
    "nvvm.fmax": ("max", None),
}
_ROUNDEVEN = ("math.roundeven", "llvm.intr.roundeven")

# source float: (significand bits with the hidden one, minimum normal exponent, maximum exponent)
_FORMATS = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127), "f64": (53, -1022, 1023)}


def _number(text: str) -> Fraction | None:
    """The exact value of a `min=`/`max=` option: a finite number (`-8`, `7.5`, `1e3`, `15/2`)."""
    if not text.strip():
        return None
    try:
        return Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError("expected a finite number (like -8, 7.5 or 1e3)") from None


def _count(value: int) -> None:
    if value < 0:
        raise ValueError("expected a non-negative integer")


# -- the step function ------------------------------------------------------------
# A chain is a tuple of stages applied to x in order: ("min", c, quiet), ("max", c, quiet),
# ("rne",); the final truncation is implicit. c is a Fraction or ±inf; quiet says whether
# the clamp turns NaN into c (True) or propagates it (False). The options' promise is a
# clamp first in the chain that lets NaN through.


def _apply(stage, y):
    kind = stage[0]
    if kind == "min":
        return min(y, stage[1])
    if kind == "max":
        return max(y, stage[1])
    if y in (INF, -INF):
        return y
    return _round_half_even(y)


def _round_half_even(y: Fraction) -> int:
    return round(y)  # Fraction.__round__ rounds half to even, exactly


def _truncate(y) -> int | None:
    if y in (INF, -INF):
        return None
    return math.trunc(y)


def _evaluate(chain, y):
    for stage in chain:
        y = _apply(stage, y)
    return y


def _nan_result(chain):
    """The final value a NaN input gives: a number, or None when NaN reaches the conversion (poison)."""
    y = None  # None: still NaN
    for stage in chain:
        if y is None:
            if stage[0] == "rne" or not stage[2]:
                continue  # propagates NaN
            y = stage[1]
        else:
            y = _apply(stage, y)
    return None if y is None else _truncate(y)


def _condition(chain, k: int):
    """{x : f(x) >= k} as ("ge"|"gt", t), or "all" / "none"."""
    if k >= 1:
        cond = ("ge", Fraction(k))
    else:
        cond = ("gt", Fraction(k - 1))
    for stage in reversed(chain):
        if cond in ("all", "none"):
            return cond
        op, t = cond
        if stage[0] == "rne":
            n0 = math.ceil(t) if op == "ge" else math.floor(t) + 1  # least integer in the set
            cond = ("ge" if n0 % 2 == 0 else "gt", Fraction(2 * n0 - 1, 2))
            continue
        c = stage[1]
        inside = c >= t if op == "ge" else c > t
        if stage[0] == "min" and not inside:
            cond = "none"
        elif stage[0] == "max" and inside:
            cond = "all"
    return cond


# -- exact thresholds in the source type ---------------------------------------------


def _exponent(mag: Fraction) -> int:
    """floor(log2(mag)) for mag > 0, exactly."""
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    if Fraction(2) ** e > mag:
        e -= 1
    elif Fraction(2) ** (e + 1) <= mag:
        e += 1
    return e


def _max_finite(fmt) -> Fraction:
    p, _, emax = fmt
    return (2 - Fraction(1, 2 ** (p - 1))) * Fraction(2) ** emax


def _round_up(t: Fraction, fmt):
    """The least value of the format >= t (+inf past the largest finite)."""
    p, emin, _ = fmt
    top = _max_finite(fmt)
    if t > top:
        return INF
    if t < -top:
        return -top
    if t == 0:
        return Fraction(0)
    ulp = Fraction(2) ** (max(_exponent(abs(t)), emin) - (p - 1))
    q = t / ulp
    return math.ceil(q) * ulp  # ceil works for both signs: toward +inf


def _representable(t: Fraction, fmt) -> bool:
    return _round_up(t, fmt) == t


def _least_above(t: Fraction, fmt):
    """The least value of the format > t, for representable t."""
    p, emin, _ = fmt
    tiny = Fraction(2) ** (emin - p - 2)  # below half the smallest spacing
    return _round_up(t + tiny, fmt)


@dataclass(frozen=True)
class _Threshold:
    predicate: str  # "ge" or "gt"
    value: object  # Fraction or INF, representable in the source type
    code: int  # the result when x passes this threshold (and no higher one)


@dataclass(frozen=True)
class _Plan:
    low: int  # the lowest result
    thresholds: tuple[_Threshold, ...]
    unordered: int | None  # index of the threshold whose compare NaN must pass (None: none)
    nan_select: int | None  # a NaN result no threshold can carry: cmpf uno + select
    folded: int  # roundeven stages folded


def _plan(chain, promise, fmt, signed: bool, width: int, max_thresholds: int) -> _Plan:
    """The thresholds for `promise` (the min, max options, on the input) then `chain` (the IR's stages)."""
    for stage in chain:
        if stage[0] != "rne" and isinstance(stage[1], float) and math.isnan(stage[1]):
            raise Leave("a clamp bound is NaN")
    least, most = promise
    if least is not None and most is not None and least > most:
        raise Leave(f"option min={least} is above max={most}")
    # The promise bounds the chain's input: it acts first, as a clamp NaN passes through.
    if most is not None:
        chain = (("min", most, False),) + chain
    if least is not None:
        chain = (("max", least, False),) + chain
    low, high = _truncate(_evaluate(chain, -INF)), _truncate(_evaluate(chain, INF))
    if low is None or high is None:
        side = "below" if low is None else "above"
        infinite = any(s[0] != "rne" and s[1] in (INF, -INF) for s in chain)
        raise Leave(f"the range is unbounded {side}" + (" (a clamp bound is infinite)" if infinite else ""))
    lo_limit, hi_limit = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    if low < lo_limit or high > hi_limit:
        if not signed and low < 0:
            raise Leave(f"fptoui of results {low}..{high}: negative results are poison")
        kind = "i" if signed else "u"
        raise Leave(f"results {low}..{high} do not fit the destination ({kind}{width})")

    # Walk the results upward: the least x reaching k is a threshold; every result up to
    # f(that x) shares it (a merged step), so the next threshold is for f(x) + 1.
    merged: list[tuple[str, object, int]] = []  # (predicate, value, code)
    k = low + 1
    while k <= high:
        if len(merged) == max_thresholds:
            raise Leave(f"results {low}..{high} need more than max-thresholds={max_thresholds} thresholds")
        cond = _condition(chain, k)
        if not isinstance(cond, tuple):  # cannot happen for low < k <= high: f is monotone
            raise Leave(f"internal: the threshold for result {k} is '{cond}'")
        predicate, t = cond
        if not _representable(t, fmt):
            predicate, t = "ge", _round_up(t, fmt)
        least = t if predicate == "ge" else _least_above(t, fmt)  # the set is {x >= least}
        code = high if least == INF else _truncate(_evaluate(chain, least))
        merged.append((predicate, t, code))
        k = code + 1
    thresholds = tuple(_Threshold(p, t, code) for p, t, code in merged)

    unordered = nan_select = None
    nan_code = _nan_result(chain)
    if nan_code is not None and nan_code != low:
        found = [i for i, th in enumerate(thresholds) if th.code == nan_code]
        if found:
            unordered = found[0]
        else:
            nan_select = nan_code
    folded = sum(1 for stage in chain if stage[0] == "rne")
    return _Plan(low, thresholds, unordered, nan_select, folded)


# -- matching the chain in the IR ------------------------------------------------------


def _source_format(t: ir.Type):
    for name, cls in (("f16", ir.F16Type), ("bf16", ir.BF16Type), ("f32", ir.F32Type), ("f64", ir.F64Type)):
        if cls.isinstance(t):
            return name
    return None


def _float_constant(value: ir.Value):
    """The number a scalar constant, splat vector constant or broadcast constant holds, or None."""
    op = defining_op(value)
    if op is None:
        return None
    if op.name == "vector.broadcast":
        return _float_constant(op.operands[0])
    if op.name not in ("arith.constant", "llvm.mlir.constant"):
        return None
    if "value" not in op.attributes:
        return None
    attr = op.attributes["value"]
    if isinstance(attr, ir.FloatAttr):
        number = attr.value
    elif isinstance(attr, ir.DenseFPElementsAttr) and attr.is_splat:
        number = ir.FloatAttr(attr.get_splat_value()).value
    else:
        return None
    if math.isinf(number) or math.isnan(number):
        return number
    return Fraction(number)


@dataclass
class _Match:
    source: ir.Value  # what the compares read
    plan: _Plan
    bypassed: list  # ops of the chain, from the source side to the conversion


@register_pass(
    "fptosi-to-select",
    options=(
        choice(
            "rounding",
            ("auto", "rne", "rz"),
            "auto",
            "auto: fold a roundeven in the chain, else truncate; rne: only conversions with a roundeven; "
            "rz: fold no roundeven (the compares read it)",
        ),
        text("min", "", "promise: the input (before clamps and roundeven) is >= this number", check=_number),
        text("max", "", "promise: the input (before clamps and roundeven) is <= this number", check=_number),
        Option("max-thresholds", int, 16, "leave conversions that need more compares than this", check=_count),
    ),
)
class FptosiToSelect(RewritePass):
    """Rewrite a clamped arith.fptosi/fptoui as arith.cmpf thresholds and arith.select."""

    roots = ("arith.fptosi", "arith.fptoui")
    statistics = {
        **RewritePass.statistics,
        "folded": "roundeven ops folded into the thresholds",
        "thresholds": "compare + select pairs emitted",
    }

    def __init__(self, options, sink):
        super().__init__(options, sink)
        self.promise = (_number(options["min"]), _number(options["max"]))

    @staticmethod
    def check_options(options) -> None:
        """min above max promises an empty range: the pipeline is wrong, whatever the IR."""
        least, most = _number(options["min"]), _number(options["max"])
        if least is not None and most is not None and least > most:
            raise OptionError(f"option min={options['min']} is above max={options['max']}: no input can keep"
                              " that promise")

    def match(self, op: ir.OpView) -> _Match:
        source = op.operands[0]
        result_type = op.results[0].type
        if ir.ShapedType.isinstance(source.type) and not ir.VectorType.isinstance(source.type):
            raise Leave(f"only scalars and vectors are rewritten, not {source.type}")
        fmt_name = _source_format(element_type(source.type))
        if fmt_name is None:
            raise Leave(f"source type {element_type(source.type)} is not f16, bf16, f32 or f64")
        width = ir.IntegerType(element_type(result_type)).width
        signed = op.name == "arith.fptosi"

        x, stages, bypassed, stop = self._chain(source)
        chain = tuple(reversed(stages))  # in the order they apply to x
        if self.options["rounding"] == "rne" and not any(s[0] == "rne" for s in chain):
            raise Leave("rounding=rne: no roundeven feeds this conversion")
        promise = self.promise
        fmt = _FORMATS[fmt_name]
        try:
            plan = self.decide(
                (chain, fmt_name, signed, width),
                lambda: _plan(chain, promise, fmt, signed, width, self.options["max-thresholds"]),
            )
        except Leave as why:
            if stop and "unbounded" in str(why):
                raise Leave(f"{why}: {stop}") from None
            raise
        return _Match(x, plan, list(reversed(bypassed)))

    def _chain(self, value: ir.Value):
        """(the chain's input, its stages and ops from the conversion side, why it stopped)."""
        stages, bypassed, stop = [], [], None
        fold = self.options["rounding"] != "rz"
        while True:
            op = defining_op(value)
            if op is None:
                break
            name = op.name
            if name in _ROUNDEVEN:
                if not fold:
                    stop = f"rounding=rz does not fold '{name}', whose result the conversion reads"
                    break
                stages.append(("rne",))
                bypassed.append(op)
                value = op.operands[0]
                continue
            if name not in _CLAMPS:
                break
            kind, quiet = _CLAMPS[name]
            if name.startswith("nvvm."):
                if len(op.operands) != 2 or "abs" in op.attributes:
                    stop = f"'{name}' with abs or three operands is no clamp"
                    break
                quiet = "nan" not in op.attributes
            bounds = [_float_constant(v) for v in op.operands]
            if bounds[1] is not None:
                bound, value_next = bounds[1], op.operands[0]
            elif bounds[0] is not None:
                bound, value_next = bounds[0], op.operands[1]
            else:
                stop = f"the bound of '{name}' is not a constant (scalar or splat)"
                break
            stages.append((kind, bound, quiet))
            bypassed.append(op)
            value = value_next
        return value, stages, bypassed, stop

    def rewrite(self, op: ir.OpView, m: _Match) -> list[ir.Value]:
        result_type = op.results[0].type
        source_type = m.source.type
        int_elem, float_elem = element_type(result_type), element_type(source_type)
        width = ir.IntegerType(int_elem).width

        def int_constant(value: int) -> ir.Value:
            attr = ir.IntegerAttr.get(int_elem, _wrap(value, width))
            if ir.VectorType.isinstance(result_type):
                attr = ir.DenseElementsAttr.get_splat(result_type, attr)
            return arith.constant(result_type, attr)

        def float_constant(value) -> ir.Value:
            attr = ir.FloatAttr.get(float_elem, float(value))
            if ir.VectorType.isinstance(source_type):
                attr = ir.DenseElementsAttr.get_splat(source_type, attr)
            return arith.constant(source_type, attr)

        plan = m.plan
        result = int_constant(plan.low)
        for i, th in enumerate(plan.thresholds):
            nan_passes = i == plan.unordered
            predicate = {
                ("ge", False): arith.CmpFPredicate.OGE,
                ("gt", False): arith.CmpFPredicate.OGT,
                ("ge", True): arith.CmpFPredicate.UGE,
                ("gt", True): arith.CmpFPredicate.UGT,
            }[th.predicate, nan_passes]
            passes = arith.cmpf(predicate, m.source, float_constant(th.value))
            result = arith.select(passes, int_constant(th.code), result)
        if plan.nan_select is not None:
            is_nan = arith.cmpf(arith.CmpFPredicate.UNO, m.source, m.source)
            result = arith.select(is_nan, int_constant(plan.nan_select), result)
        self.counts["thresholds"] += len(plan.thresholds)
        self.counts["folded"] += plan.folded
        for chained in m.bypassed:  # popped last-first: the op next to the conversion goes first
            self.erase_if_unused(chained)
        return [result]


def _wrap(value: int, width: int) -> int:
    """Two's-complement signed view of `value` in `width` bits (IntegerAttr wants it)."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value
