"""exp2 on the FMA units (FlashAttention-4's MUFU relief): a device helper of the attention kernels.

Owns the polynomial 2^x for part of an S tile's scores (`exp2_row`), in two formulations:
"natural" (floor + Int32(...) + bitcasts, built with fptosi-to-ptx,bitcast-to-ptx) and
"magic" (x + 1.5*2^23 rounded down puts floor(x) in the low mantissa bits, no float->int
conversion). Used by the mma_sync kernel (`exp2_on_fma`) and the wgmma kernel's EXP2_FMA.
Imports nothing of this package.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass._mlir import ir
from cutlass._mlir.dialects import arith

F32 = cutlass.Float32
I32 = cutlass.Int32

# 2^f on [0, 1), f32 minimax of the relative error with p(0) = 1 exactly (fitted by
# IRLS; max relative error 8.6e-5 in f32 Horner: < 0.2 ulp of fp16, < 0.03 ulp of bf16).
EXP2_POLY = (1.0, 0.6951168179512024, 0.22764484584331512, 0.07706717401742935)


EXP2_CLAMP = -127.0  # 2^-127 rounds the exponent field to 0: x = -inf gives exactly +0


def _poly_ex2(frac):
    """2^frac for frac in [0, 1): Horner on FMA, EXP2_POLY."""
    p = F32(EXP2_POLY[-1])
    for c in reversed(EXP2_POLY[:-1]):
        p = cute.math.fma(p, frac, F32(c))
    return p


def _f32_bits(x):
    return I32(arith.bitcast(ir.IntegerType.get_signless(32), x.ir_value()))


def _bits_f32(x):
    return F32(arith.bitcast(ir.F32Type.get(), x.ir_value()))


def exp2_fma_natural(x):
    """2^x on the FMA units, written the natural way: floor, Int32(...), bitcasts.

    fptosi-to-ptx folds floor + Int32 into one cvt.rmi.s32.f32, bitcast-to-ptx makes the
    bitcasts mov.b32. x <= 0 here (scores after the max); below -127 it is clamped.
    """
    x = cute.arch.fmax(x, F32(EXP2_CLAMP))
    whole = cute.math.floor(x)
    p = _poly_ex2(x - whole)
    return _bits_f32(_f32_bits(p) + (I32(whole) << 23))


_MAGIC = 12582912.0  # 1.5 * 2^23: ulp 1, and the low 22 mantissa bits hold the integer


def exp2_fma_magic(x):
    """2^x on the FMA units, FA4's way: no float->int conversion.

    x + 1.5*2^23 rounded down is floor(x) + 1.5*2^23 exactly (|x| < 2^22); its low
    mantissa bits are floor(x) in two's complement, so shifting its bit pattern left by
    23 puts floor(x) (mod 2^9) in the exponent field. Subtracting the magic back is exact.
    """
    x = cute.arch.fmax(x, F32(EXP2_CLAMP))
    r = cute.math.add(x, F32(_MAGIC), rounding=cute.math.RoundingMode.DOWN, ftz=True)
    p = _poly_ex2(x - (r - F32(_MAGIC)))
    return _bits_f32(_f32_bits(p) + (_f32_bits(r) << 23))


def _fma_columns(n_cols: int, n_fma: int) -> tuple[bool, ...]:
    """Which of a thread's n_cols score columns use the polynomial: n_fma of them, spread evenly."""
    return tuple((c + 1) * n_fma // n_cols > c * n_fma // n_cols for c in range(n_cols))


def exp2_row(S: cute.Tensor, r: int, x, fma_cols: int, fma_impl: str = "magic"):
    """2^x for row r of a thread's score tile S (x: that row's exponents, <= 0), as a TensorSSA.

    On MUFU; or, with `fma_cols` > 0, that many of the row's columns (`_fma_columns`) by the
    polynomial on the FMA units (FA4's relief for MUFU), x going through S. Called while
    tracing, with r known then (both FMHA paths' softmax).
    """
    if fma_cols == 0:
        return cute.math.exp2(x, fastmath=True)
    S[r, None] = x
    on_fma = _fma_columns(cute.size(S.shape[1]), fma_cols)
    exp2_fma = exp2_fma_natural if fma_impl == "natural" else exp2_fma_magic
    for c in range(cute.size(S.shape[1])):
        S[r, c] = exp2_fma(S[r, c]) if on_fma[c] else cute.math.exp2(S[r, c], fastmath=True)
    return S[r, None].load()
