"""Run arithmetic-only conversion IR on the host CPU, to check rewrites bit by bit.

A scalar (or vector) conversion function

    func.func @convert(%x: f32) -> f4E2M1FN { ... }

possibly already rewritten by one of our passes, is wrapped in a loop kernel over
`!llvm.ptr` buffers, lowered with MLIR's own passes
(`inline, canonicalize, convert-scf-to-cf, convert-to-llvm, reconcile-unrealized-casts`)
and JIT-compiled once by the bindings' `ExecutionEngine`. The result is a numpy
callable:

    f = host_conversion("f32", "f4E2M1FN", "builtin.module(truncf-to-select,canonicalize)")
    codes = f(np.array([0.3, 1.25, -7.0], np.float32))   # uint8 array of E2M1 codes

Values cross the boundary as raw bits. The kernel loads the source's storage integer
(i8 for the narrow floats, i16 for f16/bf16, i32 for f32), truncates it to the type's
width and bitcasts it; the result is bitcast back to an integer and zero-extended (or
sign-extended for `fptosi` integer results) to its storage width. Narrow floats thus
come back as their code bits; after inlining, `canonicalize` folds the bitcast pairs
a select-based rewrite leaves behind, so no narrow float type reaches LLVM.

What these bindings lack (see shared/CUTEDSL-FACTS.md): the `memref` dialect and the
func/math-specific LLVM conversions; `convert-to-llvm` covers func, arith, math,
vector and cf through their conversion interfaces. Plain arith/math/vector/scf/llvm IR
therefore runs; anything else (PTX inline asm, CuTe ops) is reported, not run.

Speed (2-core CI machine): LLVM vectorizes the loop; a select-chain conversion runs
at 0.6-3 G elements/s (2^24 in 5-30 ms), JIT compilation takes 0.05-0.2 s (2 s for
an 800-threshold chain). The packed C entry is called through ctypes, which releases
the GIL, so `run_chunks` overlaps kernel runs with the caller's numpy checking on two
threads: all 2^32 f32 patterns checked against a numpy reference take 25-60 s.

What the host run does not model: a GPU kernel compiled with flush-to-zero, or with
mul+add contracted into fma, may differ from these IEEE results in the last place
of arithmetic that a rewrite performs in floating point.

bf16: the LLVM bundled with CuTeDSL lowers host bf16 differently by CPU, and wrongly on
both kinds: with AVX512-BF16 it flushes f32 denormals in f32 -> bf16 and aborts the process
on bf16 arithmetic feeding a bf16 compare at -O1+
(reproducers/host-bf16-add-compare-avx512bf16); without it, f32 -> bf16 is a call to
`__truncsfbf2`, which GCC 12's libgcc lacks, so the JIT cannot link. `widen_bf16`
(lowering/host_bf16.py) therefore rewrites bf16 conversions as exact integer arithmetic
and computes bf16 arithmetic in f32 before lowering, so no bf16 float op reaches LLVM. A
module still holding one (an op that file leaves, such as a bf16 fma) is JIT-compiled at
-O0, which does not abort (`HostKernel.opt_level` says which level was used).
"""

from __future__ import annotations

import ctypes
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

import numpy as np

from cute_lowering.host_bf16 import widen_bf16
from cute_lowering.mlir import execution_engine, ir, passmanager

__all__ = [
    "HostKernel",
    "HostJitError",
    "ConversionNotRewritten",
    "compile_function",
    "conversion_function_text",
    "host_conversion",
    "run_chunks",
    "all_bit_patterns",
    "LOWER_TO_LLVM",
]

# MLIR's passes that take a rewritten module to the LLVM dialect for the host.
LOWER_TO_LLVM = "builtin.module(inline,canonicalize,convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts)"

NARROW_FLOATS = {"f4E2M1FN": 4, "f8E4M3FN": 8, "f8E5M2": 8, "f8E8M0FNU": 8, "f6E2M3FN": 6, "f6E3M2FN": 6,
                 "f8E4M3": 8, "f8E4M3FNUZ": 8, "f8E5M2FNUZ": 8, "f8E4M3B11FNUZ": 8, "f8E3M4": 8}  # fmt: skip
WIDE_FLOATS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
CONVERSION_OPS = ("arith.truncf", "arith.extf", "arith.fptosi", "arith.fptoui")


class HostJitError(RuntimeError):
    """The IR could not be lowered or compiled for the host."""


class ConversionNotRewritten(HostJitError):
    """The pipeline left a conversion op the harness was meant to see rewritten."""


@dataclass(frozen=True)
class _Scalar:
    """How one element type crosses the numpy boundary."""

    name: str  # MLIR type, e.g. "f4E2M1FN" or "i32"
    bits: int  # its width
    storage_bits: int  # the integer the buffer holds: 8, 16, 32 or 64
    is_float: bool

    @property
    def int_type(self) -> str:
        return f"i{self.bits}"

    @property
    def storage_type(self) -> str:
        return f"i{self.storage_bits}"


def _scalar(name: str) -> _Scalar:
    if name in NARROW_FLOATS:
        return _Scalar(name, NARROW_FLOATS[name], 8, True)
    if name in WIDE_FLOATS:
        return _Scalar(name, WIDE_FLOATS[name], WIDE_FLOATS[name], True)
    m = re.fullmatch(r"[isu]i?(\d+)", name)
    if m and name.startswith("i"):
        bits = int(m.group(1))
        if not 1 <= bits <= 64:
            raise HostJitError(f"integer type {name} is not supported by the host harness")
        storage = next(s for s in (8, 16, 32, 64) if s >= bits)
        return _Scalar(name, bits, storage, False)
    raise HostJitError(f"element type '{name}' is not supported by the host harness")


def _element_and_width(type_text: str) -> tuple[str, int]:
    """`f32` -> ("f32", 1); `vector<4xf32>` -> ("f32", 4)."""
    m = re.fullmatch(r"\s*vector<(\d+)x(\w+)>\s*", type_text)
    if m:
        return m.group(2), int(m.group(1))
    return type_text.strip(), 1


def _conversion_scalars(src_type: str, dst_type: str) -> tuple["_Scalar", "_Scalar", int]:
    """(source scalar, destination scalar, lanes) of a conversion; both sides must have the same lanes."""
    src_elem, width = _element_and_width(src_type)
    dst_elem, dst_width = _element_and_width(dst_type)
    if width != dst_width:
        raise HostJitError(f"vector lengths differ: {src_type} -> {dst_type}")
    return _scalar(src_elem), _scalar(dst_elem), width


def _numpy_dtype(s: _Scalar, signed: bool) -> np.dtype:
    """The dtype handed back to the caller for results of type `s`."""
    if s.is_float and s.name not in NARROW_FLOATS:
        if s.name == "bf16":
            try:
                import ml_dtypes

                return np.dtype(ml_dtypes.bfloat16)
            except ImportError:  # pragma: no cover
                return np.dtype(np.uint16)
        return np.dtype({16: np.float16, 32: np.float32, 64: np.float64}[s.bits])
    if s.is_float:
        return np.dtype(np.uint8)  # narrow float: code bits
    return np.dtype(f"{'i' if signed else 'u'}{s.storage_bits // 8}")


def conversion_function_text(src_type: str, dst_type: str, *, op: str | None = None,
                             rounding: str | None = None, name: str = "convert") -> str:
    """`func.func @convert(%x: src) -> dst` holding one arith conversion op.

    `op` defaults from the types: float to narrower float truncf, to wider extf, float
    to integer fptosi. `rounding` (e.g. "upward") becomes truncf's rounding mode.
    Either type may be a vector (`vector<4xf32>`), both with the same length.
    """
    src, dst, _ = _conversion_scalars(src_type, dst_type)
    if op is None:
        if src.is_float and dst.is_float:
            op = "arith.truncf" if dst.bits < src.bits or (dst.bits == src.bits and dst.name == "bf16") else "arith.extf"
        elif src.is_float:
            op = "arith.fptosi"
        else:
            raise HostJitError(f"no default conversion op from {src_type} to {dst_type}: pass op=")
    elif not op.startswith("arith."):
        op = "arith." + op
    mode = f" {rounding}" if rounding else ""
    return (
        f"func.func @{name}(%x: {src_type}) -> {dst_type} {{\n"
        f"  %y = {op} %x{mode} : {src_type} to {dst_type}\n"
        f"  return %y : {dst_type}\n"
        f"}}\n"
    )


def _wrapper_text(src_type: str, dst_type: str, signed_result: bool, func: str) -> str:
    """The loop kernel `@kernel(%in: !llvm.ptr, %out: !llvm.ptr, %n: i64)` calling `@func`.

    `%n` counts calls to `@func`, i.e. vectors when the types are vectors.
    """
    src_elem, width = _element_and_width(src_type)
    dst_elem, _ = _element_and_width(dst_type)
    src, dst = _scalar(src_elem), _scalar(dst_elem)

    def ty(scalar_type: str) -> str:
        return scalar_type if width == 1 and src_type == src_elem else f"vector<{width}x{scalar_type}>"

    lines = [
        f"func.func @kernel(%in: !llvm.ptr, %out: !llvm.ptr, %n: i64) attributes {{llvm.emit_c_interface}} {{",
        "  %c0 = arith.constant 0 : index",
        "  %c1 = arith.constant 1 : index",
        "  %count = arith.index_cast %n : i64 to index",
        "  scf.for %i = %c0 to %count step %c1 {",
        "    %i64 = arith.index_cast %i : index to i64",
        f"    %pin = llvm.getelementptr %in[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, {ty(src.storage_type)}",
        f"    %raw = llvm.load %pin {{alignment = {src.storage_bits // 8} : i64}} : !llvm.ptr -> {ty(src.storage_type)}",
    ]
    x = "%raw"
    if src.bits != src.storage_bits:
        lines.append(f"    %narrow = arith.trunci %raw : {ty(src.storage_type)} to {ty(src.int_type)}")
        x = "%narrow"
    if src.is_float:
        lines.append(f"    %x = arith.bitcast {x} : {ty(src.int_type)} to {ty(src.name)}")
        x = "%x"
    lines.append(f"    %y = func.call @{func}({x}) : ({ty(src.name)}) -> {ty(dst.name)}")
    y = "%y"
    if dst.is_float:
        lines.append(f"    %ybits = arith.bitcast %y : {ty(dst.name)} to {ty(dst.int_type)}")
        y = "%ybits"
    if dst.bits != dst.storage_bits:
        ext = "arith.extsi" if (signed_result and not dst.is_float) else "arith.extui"
        lines.append(f"    %ywide = {ext} {y} : {ty(dst.int_type)} to {ty(dst.storage_type)}")
        y = "%ywide"
    lines += [
        f"    %pout = llvm.getelementptr %out[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, {ty(dst.storage_type)}",
        f"    llvm.store {y}, %pout {{alignment = {dst.storage_bits // 8} : i64}} : {ty(dst.storage_type)}, !llvm.ptr",
        "  }",
        "  return",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _conversion_types(op) -> tuple[str, str]:
    return str(op.operands[0].type), str(op.results[0].type)


def _narrow_in(type_text: str) -> bool:
    elem, _ = _element_and_width(type_text)
    return elem in NARROW_FLOATS


def _left_conversions(module: ir.Module, src_type: str, dst_type: str, forbid: tuple[str, ...]) -> list[str]:
    """Conversion ops a rewrite was meant to remove: the harness's own op (same
    name family and types), and any truncf/extf to or from a narrow float."""
    found: list[str] = []

    def visit(op):
        name = op.name
        if name in forbid:
            a, b = _conversion_types(op)
            if (a, b) == (src_type, dst_type) or (name in ("arith.truncf", "arith.extf") and (_narrow_in(a) or _narrow_in(b))):
                found.append(f"{op.location}: {op}".strip())
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _execution_engine():
    return execution_engine()


class HostKernel:
    """A JIT-compiled conversion: `kernel(array) -> array`, elementwise, raw bits in and out.

    Inputs may be any numpy array whose item size is the source's storage size (the
    float dtype itself, or the unsigned integer of the same width); outputs are the
    destination's float dtype (f16/f32/f64, ml_dtypes.bfloat16), uint8 codes for
    narrow floats, or the integer dtype of the storage width (signed for fptosi).
    """

    def __init__(self, module_text: str, lowered_text: str, engine, src: _Scalar, dst: _Scalar, width: int,
                 out_dtype: np.dtype, rewritten_text: str, opt_level: int = 3):
        self.module_text = module_text  # the whole module before lowering to LLVM
        self.rewritten_text = rewritten_text  # the conversion function(s) after the body pipeline
        self.lowered_text = lowered_text  # LLVM dialect
        self.opt_level = opt_level  # the LLVM optimization level the JIT used (0 for bf16 left, see above)
        self._engine = engine
        try:
            self._entry = engine.lookup("kernel")  # ctypes CFUNCTYPE: releases the GIL while it runs
        except RuntimeError as e:  # the JIT printed why (e.g. "Symbols not found") on stderr
            raise HostJitError(f"the JIT could not link @kernel ({e}): a runtime symbol the host code calls "
                               "is missing; the JIT's own message is on stderr") from None
        self.src, self.dst, self.width = src, dst, width
        self.in_dtype = np.dtype(f"u{src.storage_bits // 8}")
        self.out_dtype = out_dtype

    def _as_input(self, values) -> np.ndarray:
        a = np.ascontiguousarray(values)
        if a.dtype.itemsize != self.in_dtype.itemsize or a.dtype.kind not in "fiuV":
            if a.dtype.kind == "f" and self.src.is_float and self.src.name in WIDE_FLOATS:
                a = a.astype(_numpy_dtype(self.src, True))  # e.g. float64 values for an f32 source
            else:
                raise HostJitError(
                    f"input dtype {a.dtype} does not match {self.src.name} (storage {self.in_dtype}); "
                    "pass the type itself or its raw bits"
                )
        return a.reshape(-1).view(self.in_dtype)

    def __call__(self, values, out: np.ndarray | None = None) -> np.ndarray:
        a = self._as_input(values)
        n = a.size
        pad = (-n) % self.width
        if pad:
            a = np.concatenate([a, np.zeros(pad, a.dtype)])
        if out is None or out.size != a.size or out.dtype != self.out_dtype or not out.flags.c_contiguous:
            out = np.empty(a.size, self.out_dtype)
        self._run(a, out, a.size // self.width)
        shape = np.shape(values) if not pad else (n,)
        return out[:n].reshape(shape)

    def _run(self, a: np.ndarray, out: np.ndarray, calls: int) -> None:
        pin = ctypes.c_void_p(a.ctypes.data)
        pout = ctypes.c_void_p(out.ctypes.data)
        count = ctypes.c_int64(calls)
        packed = (ctypes.c_void_p * 3)(
            ctypes.cast(ctypes.pointer(pin), ctypes.c_void_p),
            ctypes.cast(ctypes.pointer(pout), ctypes.c_void_p),
            ctypes.cast(ctypes.pointer(count), ctypes.c_void_p),
        )
        self._entry(packed)


def compile_function(func_text: str, src_type: str, dst_type: str, body_pipeline: str | None = None, *,
                     func: str = "convert", signed_result: bool | None = None,
                     forbid: tuple[str, ...] | None = CONVERSION_OPS, opt_level: int = 3) -> HostKernel:
    """JIT `func_text` (holding `func.func @convert(%x: src_type) -> dst_type`) for the host.

    `body_pipeline` (our pipeline syntax; None: none) runs on the function(s) first.
    With `forbid` (default: the four conversion ops), a `ConversionNotRewritten` is
    raised when the pipeline left the function's own conversion (an op of those names
    with types `src_type -> dst_type`) or any truncf/extf to or from a narrow float;
    `forbid=None` checks nothing (to JIT a hand-written or unrewritten function).
    `signed_result` (default: whether the text uses fptosi) picks sign extension for
    integer results narrower than their storage.
    """
    from cute_lowering.pipeline import run_pipeline  # late: keeps this module importable alone

    src, dst, width = _conversion_scalars(src_type, dst_type)
    if signed_result is None:
        signed_result = "arith.fptosi" in func_text
    with ir.Context() as context:
        module = ir.Module.parse(func_text, context)
        remarks = []
        if body_pipeline:
            result = run_pipeline(module, body_pipeline)
            remarks = [f"{d.severity}: {d.message}" for d in result.diagnostics]
        if forbid:
            left = _left_conversions(module, src_type, dst_type, forbid)
            if left:
                raise ConversionNotRewritten(
                    f"pipeline '{body_pipeline}' left {len(left)} conversion op(s) in @{func} "
                    f"({src_type} -> {dst_type}):\n  " + "\n  ".join(left + remarks)
                )
        rewritten = "\n".join(str(op) for op in module.body.operations)
    text = rewritten + "\n" + _wrapper_text(src_type, dst_type, signed_result, func)
    with ir.Context() as context:
        try:
            module = ir.Module.parse(text, context)
        except ir.MLIRError as e:
            raise HostJitError(f"the wrapped module does not parse: {e}\n{text}") from None
        widen_bf16(module)  # exact bf16 on every CPU, at every opt level (lowering/host_bf16.py)
        try:
            passmanager.PassManager.parse(LOWER_TO_LLVM).run(module.operation)
        except ir.MLIRError as e:
            raise HostJitError(f"lowering to the LLVM dialect failed: {e}") from None
        foreign = sorted({op.name for op in _all_ops(module) if not op.name.startswith(("llvm.", "builtin."))})
        if foreign:
            raise HostJitError(f"ops left after lowering to LLVM, the host cannot run them: {', '.join(foreign)}")
        lowered = str(module)
        if _has_bf16_arithmetic(module):
            opt_level = 0  # bf16 widen_bf16 left: the bundled LLVM may abort on it at -O1+ (module docstring)
        try:
            engine = _execution_engine()(module, opt_level=opt_level)
        except Exception as e:  # noqa: BLE001  (the bindings raise RuntimeError or MLIRError)
            raise HostJitError(f"JIT compilation failed: {e}") from None
    return HostKernel(text, lowered, engine, src, dst, width, _numpy_dtype(dst, signed_result), rewritten, opt_level)


_FLOAT_ARITHMETIC = ("llvm.fadd", "llvm.fsub", "llvm.fmul", "llvm.fdiv", "llvm.frem", "llvm.fneg", "llvm.fcmp")


def _is_float_arithmetic(op) -> bool:
    return op.name in _FLOAT_ARITHMETIC or op.name.startswith("llvm.intr.")


def _has_bf16_arithmetic(module: ir.Module) -> bool:
    """Whether the LLVM-dialect module computes on bf16: arithmetic or a compare with a bf16
    operand, or an fptrunc to bf16 of arithmetic (which InstCombine would narrow to bf16)."""
    for op in _all_ops(module):
        if _is_float_arithmetic(op) and any("bf16" in str(v.type) for v in op.operands):
            return True
        if op.name == "llvm.fptrunc" and "bf16" in str(op.results[0].type):
            source = op.operands[0].owner  # the defining op, or a Block for a block argument
            if not isinstance(source, ir.Block) and _is_float_arithmetic(source):
                return True
    return False


def _all_ops(module: ir.Module) -> list:
    ops = []

    def visit(op):
        ops.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return ops


def host_conversion(src_type: str, dst_type: str, body_pipeline: str | None, *, rounding: str | None = None,
                    op: str | None = None, **kwargs) -> HostKernel:
    """Build `@convert` with one conversion op, run `body_pipeline` on it, check the op
    is gone, and JIT the result. See `conversion_function_text` and `compile_function`.

        host_conversion("f32", "f8E8M0FNU", "truncf-to-select,canonicalize", rounding="upward")
    """
    text = conversion_function_text(src_type, dst_type, op=op, rounding=rounding)
    return compile_function(text, src_type, dst_type, body_pipeline, **kwargs)


def run_chunks(kernel: HostKernel, chunks: Iterable[np.ndarray],
               check: Callable[[np.ndarray, np.ndarray], object] | None = None, *, threads: int = 2) -> Iterator:
    """Run `kernel` on each input chunk, overlapping with `check(inputs, outputs)`.

    Yields `check`'s result (or `(inputs, outputs)` without one) per chunk, in order.
    The kernel call releases the GIL, as do most large numpy operations, so two
    threads keep both cores busy.
    """

    def one(inputs):
        outputs = kernel(inputs)
        return check(inputs, outputs) if check else (inputs, outputs)

    if threads <= 1:
        for inputs in chunks:
            yield one(inputs)
        return
    with ThreadPoolExecutor(threads) as pool:
        pending = []
        for inputs in chunks:
            pending.append(pool.submit(one, inputs))
            if len(pending) > threads:
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


def all_bit_patterns(bits: int = 32, chunk_bits: int = 22) -> Iterator[np.ndarray]:
    """Every `bits`-wide pattern (8, 16 or 32) in order, as unsigned chunks of 2^chunk_bits."""
    dtype = np.dtype(f"u{bits // 8}")
    chunk = 1 << min(bits, chunk_bits)
    base = np.arange(chunk, dtype=dtype)
    for start in range(0, 1 << bits, chunk):
        yield base + dtype.type(start)
