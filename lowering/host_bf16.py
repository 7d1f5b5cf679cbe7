"""bf16 for the host JIT: integer conversions and f32 arithmetic, so no bf16 float op reaches LLVM.

Why: the LLVM that CuTeDSL bundles lowers bf16 on x86-64 in two ways, both wrong for a
harness that checks rewrites bit by bit on whatever CPU runs the tests:
- with AVX512-BF16, `fptrunc f32 -> bf16` is VCVTNEPS2BF16, which treats f32 denormal
  inputs as zero (2^-127 gives 0x0000, not 0x0040), and bf16 arithmetic feeding a bf16
  compare aborts the process at -O1+ (reproducers/host-bf16-add-compare-avx512bf16);
- without it, `fptrunc` is a call to `__truncsfbf2`, which neither CuTeDSL's runtime nor
  GCC 12's libgcc (Debian 12, Ubuntu 22.04) exports: the JIT fails to link
  (`JIT session error: Symbols not found: [ __truncsfbf2 ]`), as on the CI machine.

So the harness rewrites, before lowering to LLVM (scalars and vectors alike):

    %y = arith.truncf %x : f32 to bf16
  ->
    %b    = arith.bitcast %x : f32 to i32
    %odd  = (%b >> 16) & 1
    %rne  = (%b + 0x7FFF + %odd) >> 16          // round to nearest, ties to even; a carry
                                                // into the exponent is the right result,
                                                // up to inf for values past bf16's max
    %nan  = (%b >> 16) | 0x40                   // NaN: sign and top payload kept, quiet
    %y    = arith.bitcast (trunci (select ((%b & 0x7FFFFFFF) > 0x7F800000), %nan, %rne)) : i16 to bf16

    %y = arith.extf %x : bf16 to f32     ->   %y = bitcast ((extui (bitcast %x to i16)) << 16) to f32

and computes bf16 arithmetic (`addf subf mulf divf remf negf maximumf minimumf maxnumf
minnumf`) and `cmpf` in f32 between those conversions. That is exact: bf16's 8-bit
significand is under half of f32's 24, so one f32 rounding then one bf16 rounding of
+ - * / gives the correctly rounded bf16 result (remf, min/max and negation are exact
anyway). This is what `arith.truncf` means (IEEE round-to-nearest-even, APFloat), on
every CPU and at every opt level. NaN payloads may differ from the GPU's (the GPU's
`cvt.rn.bf16.f32` gives the canonical NaN); tests compare NaN as NaN.

Left as they are: truncf with a rounding-mode attribute, truncf from f64 (one rounding
would need more than this; MLIR has no f16 -> bf16 truncf), and ops not listed above (fma, math ops); the harness
compiles a module still holding bf16 arithmetic at -O0 (lowering/hostjit.py).
"""

from __future__ import annotations

from cute_lowering.elementwise import Elementwise
from cute_lowering.mlir import arith, element_type, ir

__all__ = ["widen_bf16"]

# bf16 float ops computed in f32; each takes all-float operands and gives one result of
# the operands' type (cmpf: i1), with its attributes (predicate, fastmath) kept.
F32_EXACT_OPS = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.negf",
                 "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.cmpf")


def _is(t: ir.Type, float_type) -> bool:
    return float_type.isinstance(element_type(t))


def bf16_to_f32(value: ir.Value) -> ir.Value:
    """The f32 lanes equal to the bf16 lanes of `value` (exact: bf16 is f32's top half)."""
    lanes = Elementwise(value.type)
    raw = arith.bitcast(lanes.type(ir.IntegerType.get_signless(16)), value)
    return lanes.as_f32(arith.shli(lanes.zext(raw), lanes.int(16)))


def f32_to_bf16(value: ir.Value) -> ir.Value:
    """The bf16 lanes nearest the f32 lanes of `value`, ties to even; NaN stays NaN."""
    lanes = Elementwise(value.type)
    i32 = arith.CmpIPredicate
    bits = lanes.bits(value)
    high = arith.shrui(bits, lanes.int(16))
    odd = arith.andi(high, lanes.int(1))
    rounded = arith.shrui(arith.addi(bits, arith.addi(odd, lanes.int(0x7FFF))), lanes.int(16))
    quiet_nan = arith.ori(high, lanes.int(0x40))
    is_nan = arith.cmpi(i32.ugt, arith.andi(bits, lanes.int(0x7FFFFFFF)), lanes.int(0x7F800000))
    chosen = arith.select(is_nan, quiet_nan, rounded)
    narrow = arith.trunci(lanes.type(ir.IntegerType.get_signless(16)), chosen)
    return arith.bitcast(lanes.type(ir.BF16Type.get()), narrow)


def _rewrite(op: ir.OpView) -> list[ir.Value] | None:
    """The values replacing `op`'s results, or None to leave it."""
    name = op.name
    if name == "arith.truncf":
        source, result = op.operands[0], op.results[0]
        if not _is(result.type, ir.BF16Type) or "roundingmode" in op.attributes:
            return None
        if not _is(source.type, ir.F32Type):
            return None
        return [f32_to_bf16(source)]
    if name == "arith.extf":
        source, result = op.operands[0], op.results[0]
        if not _is(source.type, ir.BF16Type):
            return None
        wide = bf16_to_f32(source)
        if _is(result.type, ir.F32Type):
            return [wide]
        return [arith.extf(result.type, wide)]  # f64: exact from f32
    if name in F32_EXACT_OPS:
        if not all(_is(v.type, ir.BF16Type) for v in op.operands):
            return None
        wide = [bf16_to_f32(v) for v in op.operands]
        result = op.results[0]
        result_type = result.type if name == "arith.cmpf" else Elementwise(result.type).type(ir.F32Type.get())
        attributes = {op.attributes[i].name: op.attributes[i].attr for i in range(len(op.attributes))}
        computed = ir.Operation.create(name, results=[result_type], operands=wide, attributes=attributes).result
        return [computed if name == "arith.cmpf" else f32_to_bf16(computed)]
    return None


def widen_bf16(module: ir.Module) -> int:
    """Rewrite `module`'s bf16 conversions and arithmetic as above; returns how many ops."""
    candidates = []

    def visit(op):
        if op.name in ("arith.truncf", "arith.extf") or op.name in F32_EXACT_OPS:
            candidates.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    rewritten = 0
    for op in candidates:
        with ir.InsertionPoint(op), op.location:
            replacement = _rewrite(op.opview if hasattr(op, "opview") else op)
        if replacement is None:
            continue
        for old, new in zip(op.results, replacement):
            old.replace_all_uses_with(new)
        op.erase()
        rewritten += 1
    return rewritten
