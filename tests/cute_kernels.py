"""Small real CuTeDSL kernels, one per construct our passes rewrite.

Each `@cute.jit` launcher takes fake tensors (no GPU needed to trace or compile).
`CASES` maps a name to (launcher, argument factory).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass._mlir import ir
from cutlass._mlir.dialects import arith, llvm, nvvm
from cutlass.cute.runtime import make_fake_compact_tensor

N = 1024
THREADS = 128


def _index():
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    return bidx * THREADS + tidx


@cute.kernel
def _to_int32(src: cute.Tensor, dst: cute.Tensor):
    i = _index()
    dst[i] = cutlass.Int32(src[i])  # arith.fptosi f32 -> i32


@cute.kernel
def _floor_to_int32(src: cute.Tensor, dst: cute.Tensor):
    i = _index()
    dst[i] = cutlass.Int32(cute.math.floor(src[i]))  # math.floor + arith.fptosi


@cute.kernel
def _roundeven_to_int64(src: cute.Tensor, dst: cute.Tensor):
    i = _index()
    dst[i] = cutlass.Int64(cute.math.roundeven(src[i]))


@cute.kernel
def _to_uint8(src: cute.Tensor, dst: cute.Tensor):
    i = _index()
    dst[i] = cutlass.Uint8(src[i])  # arith.fptoui f32 -> i8


@cute.kernel
def _vector_to_int32(src: cute.Tensor, dst: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tile = cute.local_tile(src, (8,), (bidx * THREADS + tidx,))
    out = cute.local_tile(dst, (8,), (bidx * THREADS + tidx,))
    values = tile.load()
    out.store(values.to(cutlass.Int32))  # arith.fptosi vector<8xf32>


@cute.kernel
def _bitcast_f32_i32(src: cute.Tensor, dst: cute.Tensor):
    i = _index()
    x = src[i]
    bits = arith.bitcast(ir.IntegerType.get_signless(32), x.ir_value())
    dst[i] = cutlass.Int32(bits)


@cute.kernel
def _llvm_bitcast_i32_f32(src: cute.Tensor, dst: cute.Tensor):
    i = _index()
    bits = src[i]
    dst[i] = cutlass.Float32(llvm.bitcast(ir.F32Type.get(), bits.ir_value()))


@cute.kernel
def _inline_asm_cvt(src: cute.Tensor, dst: cute.Tensor):
    i = _index()
    x = src[i]
    r = llvm.inline_asm(ir.IntegerType.get_signless(32), [x.ir_value()], "cvt.rni.s32.f32 $0, $1;", "=r,f")
    dst[i] = cutlass.Int32(r)


@cute.kernel
def _inline_asm_two_outputs(src: cute.Tensor, dst: cute.Tensor):
    i = _index()
    i32 = ir.IntegerType.get_signless(32)
    pair = llvm.inline_asm(
        llvm.StructType.get_literal([i32, i32]), [src[i].ir_value()], "mov.b64 {$0, $1}, $2;", "=r,=r,l"
    )
    low = llvm.extractvalue(i32, pair, [0])
    high = llvm.extractvalue(i32, pair, [1])
    dst[i] = cutlass.Int32(low) ^ cutlass.Int32(high)


@cute.kernel
def _inline_ptx_constant(src: cute.Tensor, dst: cute.Tensor):
    i = _index()
    x = src[i]
    c = arith.constant(ir.F32Type.get(), 1.5)
    y = nvvm.inline_ptx([ir.F32Type.get()], [x.ir_value(), c], [], "add.rn.f32 {$w0}, {$r0}, {$r1};")
    dst[i] = cutlass.Float32(y)


@cute.kernel
def _exp2_on_fma(src: cute.Tensor, dst: cute.Tensor):
    """2^x without MUFU, written the natural way: floor, Int32(...), bitcasts."""
    i = _index()
    x = src[i]
    whole = cute.math.floor(x)
    frac = x - whole
    # degree-3 minimax polynomial for 2^f on [0, 1)
    p = cutlass.Float32(0.0555041086648216) * frac + cutlass.Float32(0.2402264923172690)
    p = p * frac + cutlass.Float32(0.6931471805599453)
    p = p * frac + cutlass.Float32(1.0)
    i32 = ir.IntegerType.get_signless(32)
    bits = cutlass.Int32(arith.bitcast(i32, p.ir_value())) + (cutlass.Int32(whole) << 23)
    dst[i] = cutlass.Float32(arith.bitcast(ir.F32Type.get(), bits.ir_value()))


def _launcher(kernel, per_thread: int = 1):
    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor):
        kernel(src, dst).launch(grid=(N // (THREADS * per_thread), 1, 1), block=(THREADS, 1, 1))

    return launch


def _tensors(src_type, dst_type):
    return lambda: (make_fake_compact_tensor(src_type, (N,)), make_fake_compact_tensor(dst_type, (N,)))


CASES = {
    "to_int32": (_launcher(_to_int32), _tensors(cutlass.Float32, cutlass.Int32)),
    "floor_to_int32": (_launcher(_floor_to_int32), _tensors(cutlass.Float32, cutlass.Int32)),
    "roundeven_to_int64": (_launcher(_roundeven_to_int64), _tensors(cutlass.Float32, cutlass.Int64)),
    "to_uint8": (_launcher(_to_uint8), _tensors(cutlass.Float32, cutlass.Uint8)),
    "vector_to_int32": (_launcher(_vector_to_int32, 8), _tensors(cutlass.Float32, cutlass.Int32)),
    "bitcast_f32_i32": (_launcher(_bitcast_f32_i32), _tensors(cutlass.Float32, cutlass.Int32)),
    "llvm_bitcast_i32_f32": (_launcher(_llvm_bitcast_i32_f32), _tensors(cutlass.Int32, cutlass.Float32)),
    "inline_asm_cvt": (_launcher(_inline_asm_cvt), _tensors(cutlass.Float32, cutlass.Int32)),
    "inline_asm_two_outputs": (_launcher(_inline_asm_two_outputs), _tensors(cutlass.Int64, cutlass.Int32)),
    "exp2_on_fma": (_launcher(_exp2_on_fma), _tensors(cutlass.Float32, cutlass.Float32)),
    "inline_ptx_constant": (_launcher(_inline_ptx_constant), _tensors(cutlass.Float32, cutlass.Float32)),
}
