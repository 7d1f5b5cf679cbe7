"""Build arith on scalars or 1-D vectors of one shape, with splat constants.

The select-based conversions work lane-parallel: `arith.cmpf`, `arith.select` and
the integer ops all accept vectors, so a vector conversion needs no unrolling.
"""

from __future__ import annotations

from cute_lowering.mlir import arith, ir


class Elementwise:
    """Types and constants shaped like `like` (a scalar type or a vector type)."""

    def __init__(self, like: ir.Type):
        self.shape = list(ir.VectorType(like).shape) if ir.VectorType.isinstance(like) else None

    def type(self, element: ir.Type) -> ir.Type:
        return ir.VectorType.get(self.shape, element) if self.shape is not None else element

    def int(self, value: int, width: int = 32) -> ir.Value:
        element = ir.IntegerType.get_signless(width)
        value = _wrap(value, width)
        return self._constant(element, ir.IntegerAttr.get(element, value))

    def float(self, value: float, element: ir.Type | None = None) -> ir.Value:
        element = element or ir.F32Type.get()
        return self._constant(element, ir.FloatAttr.get(element, value))

    def _constant(self, element: ir.Type, attr: ir.Attribute) -> ir.Value:
        if self.shape is None:
            return arith.constant(element, attr)
        shaped = self.type(element)
        return arith.constant(shaped, ir.DenseElementsAttr.get_splat(shaped, attr))

    # integer helpers on i32 lanes
    def bits(self, x: ir.Value) -> ir.Value:
        """The f32 lanes of `x` as i32."""
        return arith.bitcast(self.type(ir.IntegerType.get_signless(32)), x)

    def as_f32(self, bits: ir.Value) -> ir.Value:
        return arith.bitcast(self.type(ir.F32Type.get()), bits)

    def zext(self, flag: ir.Value, width: int = 32) -> ir.Value:
        return arith.extui(self.type(ir.IntegerType.get_signless(width)), flag)


def _wrap(value: int, width: int) -> int:
    """Two's-complement signed view of `value` in `width` bits (IntegerAttr wants it)."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value
