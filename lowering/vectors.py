"""Apply a scalar rewrite to each lane of a 1-D vector (PTX registers are scalars)."""

from __future__ import annotations

from typing import Callable

from cute_lowering.mlir import ir, vector


def is_lane_vector(t: ir.Type) -> bool:
    """A fixed-length 1-D vector, the only shaped type we unroll."""
    if not ir.VectorType.isinstance(t):
        return False
    vt = ir.VectorType(t)
    return vt.rank == 1 and not vt.scalable


def lanewise(value: ir.Value, result_type: ir.Type, scalar: Callable[[ir.Value], ir.Value]) -> ir.Value:
    """`scalar(value)` for scalars; for a vector, `scalar` per lane, reassembled."""
    if not ir.VectorType.isinstance(value.type):
        return scalar(value)
    lanes = ir.VectorType(value.type).shape[0]
    results = [scalar(vector.extract(value, [], [i])) for i in range(lanes)]
    return vector.from_elements(result_type, results)
