"""Real CuTeDSL kernels that clamp, maybe round, then convert to an integer.

Each is written the way a kernel author would, with the clamp spelled in one of the
ways CuTeDSL offers; the comment says what it traces to. `fptosi-to-select` turns
the clamp + conversion into compares and selects.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor

from cute_kernels import THREADS, _index

ELEMENTS = 1024


@cute.kernel
def _arch_clamp_roundeven_i32(src: cute.Tensor, dst: cute.Tensor):
    # nvvm.fmin, nvvm.fmax (NaN-quiet), math.roundeven, arith.fptosi f32 -> i32
    i = _index()
    dst[i] = cutlass.Int32(cute.math.roundeven(cute.arch.fmax(cute.arch.fmin(src[i], 7.0), -8.0)))


@cute.kernel
def _math_clamp_roundeven_i32(src: cute.Tensor, dst: cute.Tensor):
    # arith.minnumf %x, 1.0; arith.maxnumf -2.0, %m; math.roundeven; arith.fptosi
    i = _index()
    x = cute.math.clamp(src[i], cutlass.Float32(-2.0), cutlass.Float32(1.0))
    dst[i] = cutlass.Int32(cute.math.roundeven(x))


@cute.kernel
def _minmax_truncate_u8(src: cute.Tensor, dst: cute.Tensor):
    # Python's min/max: arith.minimumf, arith.maximumf (NaN-propagating); arith.fptoui f32 -> i8
    i = _index()
    dst[i] = cutlass.Uint8(max(min(src[i], cutlass.Float32(15.0)), cutlass.Float32(0.0)))


def _vector_kernel(body):
    @cute.kernel
    def kernel(src: cute.Tensor, dst: cute.Tensor):
        tile = cute.local_tile(src, (8,), (_index(),))
        out = cute.local_tile(dst, (8,), (_index(),))
        out.store(body(tile.load()))

    return kernel


def _clamp_roundeven_to_int8(v):
    # vector.broadcast bounds, arith.minnumf/maxnumf and math.roundeven on vector<8xf32>,
    # arith.fptosi vector<8xf32> -> vector<8xi8>
    clamped = cute.math.clamp(v, cute.full_like(v, -4.0), cute.full_like(v, 3.0))
    return cute.math.roundeven(clamped).to(cutlass.Int8)


def _roundeven_clamp_f16_to_int32(v):
    # roundeven first, then a NaN-propagating clamp, on vector<8xf16>
    rounded = cute.math.roundeven(v)
    clamped = cute.math.clamp(rounded, cute.full_like(v, -2.0), cute.full_like(v, 2.0), propagate_nan=True)
    return clamped.to(cutlass.Int32)


def _launcher(kernel, per_thread: int = 1):
    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor):
        kernel(src, dst).launch(grid=(ELEMENTS // (THREADS * per_thread), 1, 1), block=(THREADS, 1, 1))

    return launch


def _tensors(src_type, dst_type):
    return lambda: (
        make_fake_compact_tensor(src_type, (ELEMENTS,)),
        make_fake_compact_tensor(dst_type, (ELEMENTS,)),
    )


# name -> (launcher, arguments, thresholds per conversion, roundeven folded, conversions)
CASES = {
    "arch_clamp_roundeven_i32": (
        _launcher(_arch_clamp_roundeven_i32), _tensors(cutlass.Float32, cutlass.Int32), 15, 1, 1,
    ),
    "math_clamp_roundeven_i32": (
        _launcher(_math_clamp_roundeven_i32), _tensors(cutlass.Float32, cutlass.Int32), 3, 1, 1,
    ),
    "minmax_truncate_u8": (
        _launcher(_minmax_truncate_u8), _tensors(cutlass.Float32, cutlass.Uint8), 15, 0, 1,
    ),
    "vector_clamp_roundeven_i8": (
        _launcher(_vector_kernel(_clamp_roundeven_to_int8), 8), _tensors(cutlass.Float32, cutlass.Int8), 7, 1, 1,
    ),
    "vector_f16_roundeven_clamp_i32": (
        _launcher(_vector_kernel(_roundeven_clamp_f16_to_int32), 8),
        _tensors(cutlass.Float16, cutlass.Int32), 4, 1, 1,
    ),
}
