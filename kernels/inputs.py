"""The input rules of the public functions and the torch ops, for NVFP4 and attention.

Owns every check on the tensors a call is given (types, dtypes, shapes, devices, alignment:
fake tensors too), each raising with a message for the first rule broken. The ops' launch
path (`cute_lowering.kernels.ops`) runs one boolean expression per call and these full checks only when it
fails; the public functions (`cute_lowering.kernels.nvfp4`, `cute_lowering.kernels.fmha`) run them before tracing.
Sits below both; torch is imported on first use (`torch_device.torch_module`), so importing
this module needs no torch.
"""

from __future__ import annotations

import math

from cute_lowering.kernels.fmha_paths import resolve_path
from cute_lowering.kernels.fmha_sm80 import EXP2_FMA_FRACTION, EXP2_FMA_IMPLS, HEAD_DIMS, _fma_cols
from cute_lowering.kernels.nvfp4_kernels import ALIGN_CODES, ALIGN_SCALES, ALIGN_VALUES, BLOCK, VARIANTS
from cute_lowering.kernels.torch_device import torch_module


# --- NVFP4 ------------------------------------------------------------------------------
def _value_dtype_name(torch, dtype):
    return {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}.get(dtype)


def _check_aligned(name, t, align: int):
    if t.data_ptr() % align:
        raise ValueError(f"{name} must start at a {align}-byte aligned address (a fresh tensor does); got a view at offset {t.data_ptr() % align}")


def _check_2d(torch, name, t):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D [M, K], got shape {tuple(t.shape)}")


def _check_device(name, t):
    if t.device.type != "cuda":
        raise ValueError(f"{name} must be on a CUDA device, got {t.device}")


def _check_global_scale_shape(torch, global_scale):
    if not isinstance(global_scale, torch.Tensor):
        raise TypeError(f"global_scale must be a float32 torch.Tensor with one element, got {type(global_scale).__name__}")
    if global_scale.dtype != torch.float32 or global_scale.numel() != 1:
        raise ValueError(
            f"global_scale must be a float32 tensor with one element, got {global_scale.dtype} of shape {tuple(global_scale.shape)}"
        )


def _check_global_scale(torch, global_scale, device):
    """A float32 one-element tensor on `device` (a Python number is moved there)."""
    if isinstance(global_scale, (int, float)) and not isinstance(global_scale, bool):
        return torch.tensor(float(global_scale), dtype=torch.float32, device=device)
    _check_global_scale_shape(torch, global_scale)
    if global_scale.device != device:
        raise ValueError(f"global_scale must be on {device}, got {global_scale.device}")
    return global_scale


def check_quantize_shapes(x, global_scale, variant: str = "plain", scale_given: bool = False):
    """The rules on types, dtypes and shapes (fake tensors too): x [M, K], K % 16 == 0, contiguous."""
    torch = torch_module()
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if _value_dtype_name(torch, x.dtype) is None:
        raise TypeError(f"x must be bfloat16, float16 or float32, got {x.dtype}")
    _check_2d(torch, "x", x)
    m, k = x.shape
    if k % BLOCK:
        raise ValueError(f"K (x.shape[1] = {k}) must be a multiple of {BLOCK}")
    if not x.is_contiguous():
        raise ValueError("x must be contiguous (row-major); call .contiguous() first")
    if m * k >= 2**31:
        raise ValueError(f"x has {m * k} elements; at most 2^31 - 1 are supported (32-bit indexing)")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    if global_scale is not None or scale_given:
        _check_global_scale_shape(torch, global_scale)


def check_quantize_input(x, global_scale, variant: str = "plain", scale_given: bool = False):
    """Every rule of the quantize launch, with a message for the first one broken."""
    check_quantize_shapes(x, global_scale, variant, scale_given)
    _check_device("x", x)
    if global_scale is not None and global_scale.device != x.device:
        raise ValueError(f"global_scale must be on {x.device}, got {global_scale.device}")
    _check_aligned("x", x, ALIGN_VALUES)


def check_dequantize_shapes(packed, scales, global_scale, dtype):
    torch = torch_module()
    if _value_dtype_name(torch, dtype) is None:
        raise TypeError(f"dtype must be bfloat16, float16 or float32, got {dtype}")
    _check_2d(torch, "packed", packed)
    _check_2d(torch, "scales", scales)
    if packed.dtype != torch.uint8:
        raise TypeError(f"packed must be uint8, got {packed.dtype}")
    if scales.dtype not in (torch.float8_e4m3fn, torch.uint8):
        raise TypeError(f"scales must be float8_e4m3fn (or its uint8 bits), got {scales.dtype}")
    m, half = packed.shape
    if half % (BLOCK // 2) or tuple(scales.shape) != (m, half * 2 // BLOCK):
        raise ValueError(
            f"shapes do not match: packed {tuple(packed.shape)} needs scales ({m}, {half * 2 // BLOCK}) "
            f"and K = {half * 2} a multiple of {BLOCK}; got scales {tuple(scales.shape)}"
        )
    for name, t in (("packed", packed), ("scales", scales)):
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (row-major); call .contiguous() first")
    if 2 * packed.numel() >= 2**31:
        raise ValueError(f"the output would have {2 * packed.numel()} elements; at most 2^31 - 1 are supported")
    _check_global_scale_shape(torch, global_scale)


def check_dequantize_input(packed, scales, global_scale, dtype):
    """Every rule of the dequantize launch, with a message for the first one broken."""
    check_dequantize_shapes(packed, scales, global_scale, dtype)
    _check_device("packed", packed)
    if packed.device != scales.device:
        raise ValueError(f"packed and scales must be on one device, got {packed.device} and {scales.device}")
    if global_scale.device != packed.device:
        raise ValueError(f"global_scale must be on {packed.device}, got {global_scale.device}")
    _check_aligned("packed", packed, ALIGN_CODES)
    _check_aligned("scales", scales, ALIGN_SCALES)


# --- attention --------------------------------------------------------------------------
def check_attention_shapes(q, k, v, sink, softmax_scale, global_scale):
    """The rules on types, dtypes, shapes and values (fake tensors too), first broken one raised."""
    torch = torch_module()
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"q must be bfloat16 or float16, got {q.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k, v must have one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D [B, S, H, D], got shape {tuple(t.shape)}")
    bq, sq, hq, d = q.shape
    bk, sk, hkv, dk = k.shape
    if tuple(v.shape) != tuple(k.shape):
        raise ValueError(f"k and v must have one shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if bk != bq or dk != d:
        raise ValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} must agree in batch and head dim")
    if d not in HEAD_DIMS:
        raise ValueError(f"head dim must be one of {HEAD_DIMS}, got {d}")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"q heads ({hq}) must be a multiple of k/v heads ({hkv}) (MHA/GQA/MQA)")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous [B, S, H, D]; call .contiguous() first")
    if max(q.numel(), k.numel(), bq * hq * sq) >= 2**31:
        raise ValueError("tensors of 2^31 elements or more are not supported (32-bit indexing)")
    if not (softmax_scale > 0 and math.isfinite(softmax_scale)):
        raise ValueError(f"softmax_scale must be positive and finite, got {softmax_scale}")
    if sink is not None:
        if not isinstance(sink, torch.Tensor):
            raise TypeError(f"sink must be a torch.Tensor [Hq], got {type(sink).__name__}")
        if sink.dtype != torch.float32 or tuple(sink.shape) != (hq,):
            raise ValueError(f"sink must be float32 of shape ({hq},), got {sink.dtype} {tuple(sink.shape)}")
        if not sink.is_contiguous():
            raise ValueError("sink must be contiguous; call .contiguous() first")
    if global_scale is not None:
        _check_global_scale_shape(torch, global_scale)


def check_attention_input(q, k, v, sink, softmax_scale, global_scale):
    """Every rule of the attention launch on its tensors, with a message for the first one broken."""
    check_attention_shapes(q, k, v, sink, softmax_scale, global_scale)
    extra = (("sink", sink),) if sink is not None else ()
    extra += (("global_scale", global_scale),) if global_scale is not None else ()
    for name, t in (("q", q), ("k", k), ("v", v)) + extra:
        if t.device.type != "cuda":
            raise ValueError(f"{name} must be on a CUDA device, got {t.device}")
    if any(t.device != q.device for _, t in (("k", k), ("v", v)) + extra):
        raise ValueError("q, k, v (and sink, global_scale) must be on one device")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.data_ptr() % 16:
            raise ValueError(f"{name} must be 16-byte aligned")


def check_attention_options(path: str, exp2_on_fma, exp2_impl, arch: str):
    """The build options against each other and the arch (raises on a bad one)."""
    cols = _fma_cols(EXP2_FMA_FRACTION if exp2_on_fma is None else exp2_on_fma)  # checks the range
    if exp2_impl is not None and exp2_impl not in EXP2_FMA_IMPLS:
        raise ValueError(f"exp2_impl must be one of {EXP2_FMA_IMPLS}, not {exp2_impl!r}")
    resolve_path(path, arch, cols)
