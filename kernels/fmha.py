"""FMHA forward: the public API (`attention`), the float64 reference, and the names of the paths.

    out, lse = fmha.attention(q, k, v, causal=True, window=(256, -1), sink=s, return_lse=True)

q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D] (Hq a multiple of Hkv: MHA, GQA, MQA), bf16 or fp16,
D in {64, 128}, any Sq, Sk (Sq != Sk allowed). Out [B, Sq, Hq, D] in the input dtype,
LSE [B, Hq, Sq] fp32 (natural log).

Semantics (FlashAttention's): query row i, key column j, offset = Sk - Sq (bottom-right
aligned). Column j is visible to row i iff j < Sk and
    j <= i + offset + right      (right >= 0; causal means right = 0)
    j >= i + offset - left       (left >= 0)
`window=(left, right)`, -1 meaning unbounded on that side. `sink` [Hq] fp32 is a
per-head logit (already in softmax units, like gpt-oss / FA4's `learnable_sink`) that
joins the softmax denominator and has no value:
    out_i = sum_j exp(s_ij - LSE_i) v_j,  LSE_i = log(sum_j exp(s_ij) + exp(sink_h)),
    s_ij = softmax_scale * q_i . k_j.
A row with no visible column gives out = 0 and LSE = -inf (LSE = sink_h with a sink):
never NaN.

Four paths behind one API (`path=`): "mma_sync" is the kernel above; "wgmma" is
`cute_lowering.kernels.fmha_sm90` (warpgroup MMA, TMA, a producer warp), sm_90a only; "decode" is
`cute_lowering.kernels.fmha_decode` (GQA-packed rows, split-KV and a combine kernel; sm_80+), for short
queries over long keys; "decode_wgmma" is the same idea on wgmma (`fmha_sm90`'s packed
split-KV kernel, then fmha_decode's combine; sm_90a, Hq / Hkv in 2, 4, ..., 128). "auto"
(the default) takes a split-KV path per call shape (`cute_lowering.kernels.ops`; not for NVFP4 output):
decode for at most 16 packed rows Hq/Hkv * Sq, decode_wgmma on sm_90a where
`fmha_sm90.choose_splits` says so (more packed rows, 1024 keys or more, and a plain grid
short of a wave or query tiles a quarter empty), else decode where
`fmha_decode.choose_splits` does (at most 256 packed rows); otherwise wgmma on sm_90a
and mma_sync elsewhere (sm_80, sm_100a), and mma_sync whenever `exp2_on_fma` asks for the
FMA exp2, which only that path has.

This module sits on top with `cute_lowering.kernels.nvfp4` and the torch ops (`cute_lowering.kernels.ops`, imported on
first use: torch is optional); below it `cute_lowering.kernels.fmha_paths` (the compile function over the
paths), the kernel modules (`fmha_sm80`, `fmha_sm90`, `fmha_decode`), and the device helpers
they share (`attention_parts`, `exp2`, `nvfp4_block`). Importing it needs neither torch nor a
GPU; the compile function works on fake arguments for any target.
"""

from __future__ import annotations

import math

from cute_lowering.kernels import fmha_decode, fmha_sm80, fmha_sm90, nvfp4  # noqa: F401 (the kernel modules, by their names here as before)
from cute_lowering.kernels.attention_parts import LN2, LOG2E  # noqa: F401
from cute_lowering.kernels.fmha_paths import PATHS, _normalize_window, compile_attention, resolve_path  # noqa: F401
from cute_lowering.kernels.fmha_sm80 import (  # noqa: F401 (the mma_sync path's knobs and names)
    ARCHS,
    BLOCK_M,
    BLOCK_N,
    DTYPES,
    EXP2_FMA_FRACTION,
    EXP2_FMA_IMPL,
    EXP2_FMA_IMPLS,
    HEAD_DIMS,
    THREADS,
    _compile,
    _fma_cols,
    prelowering_pipeline,
)
from cute_lowering.kernels.exp2 import EXP2_CLAMP, EXP2_POLY, exp2_fma_magic, exp2_fma_natural, exp2_row  # noqa: F401
from cute_lowering.kernels.inputs import _check_global_scale, check_attention_input, check_attention_options, check_attention_shapes  # noqa: F401
from cute_lowering.kernels.torch_device import torch_module


def _ops():
    from cute_lowering.kernels import ops  # torch, imported on first use (an optional dependency: this module imports without it)

    return ops


_OUT_FORMATS = ("bf16", "nvfp4", "bfloat16", "fp16", "float16")


def attention(
    q,
    k,
    v,
    causal: bool = False,
    window=(-1, -1),
    sink=None,
    softmax_scale=None,
    return_lse: bool = False,
    out_format: str = "bf16",
    exp2_on_fma=None,
    exp2_impl: str | None = None,
    path: str = "auto",
    global_scale=None,
):
    """FMHA forward: q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D] (CUDA, contiguous, bf16/fp16) -> out [B, Sq, Hq, D].

    causal: bottom-right aligned (query i sees keys j <= i + Sk - Sq). window=(left, right):
    sliding window, -1 = unbounded (causal sets right = 0). sink: fp32 [Hq] per-head logit
    joining the softmax denominator. softmax_scale: default 1/sqrt(D). return_lse: also
    return LSE [B, Hq, Sq] fp32. out_format: "bf16" (the default; the output has the
    input's dtype, bf16 or fp16) or "fp16"/"float16"/"bfloat16" (must match the input);
    "nvfp4": out is (codes uint8 [B, Sq, Hq, D/2], scales float8_e4m3fn [B, Sq, Hq, D/16],
    global_scale f32 0-d) as `cute_lowering.kernels.nvfp4.quantize` makes them, from the epilogue
    (both paths), bit-identical to quantizing the bf16/fp16 output (where the bf16 call
    computes O otherwise, by a split-KV plan or the tail split's pieces, it is that output
    through `nvfp4.quantize`: the same bits, two kernels); `global_scale`
    defaults to 448*6/amax(|v|), a bound that holds for O (each row of O is a convex
    combination of rows of v, less with a sink), so no block scale saturates. exp2_on_fma: share of the
    score exp2s computed on the FMA units (0..1, default EXP2_FMA_FRACTION = 0: all MUFU);
    exp2_impl: "natural" or "magic" (default EXP2_FMA_IMPL), see compile_attention.
    path: "auto" (decode for short queries over long keys, else wgmma on sm_90a and
    mma_sync elsewhere), "mma_sync", "wgmma", "decode" or "decode_wgmma" (see the module docstring).
    The ops `cute_lowering::attention` / `attention_nvfp4` (kernels/ops.py).
    """
    return _attention(q, k, v, causal, window, sink, softmax_scale, return_lse, out_format, exp2_on_fma, exp2_impl, path, global_scale)


def attention_with_knobs(q, k, v, *, knobs, **options):
    """`attention(q, k, v, **options)` with `knobs`, a `cute_lowering.kernels.fmha_sm90_knobs.Knobs`, for the
    wgmma paths' tuning instead of the shipped `DEFAULT_KNOBS`: for tests and sweeps (a variant
    is `dataclasses.replace(DEFAULT_KNOBS, pingpong=True)`), which then edit no module and clear
    no cache (the launch path keys its plans on the value). It calls the ops' impls directly (a
    Knobs value is no op argument): plain tensors, outside torch.compile."""
    return _attention(q, k, v, **options, knobs=knobs)


def _attention(
    q, k, v, causal=False, window=(-1, -1), sink=None, softmax_scale=None, return_lse=False, out_format="bf16", exp2_on_fma=None,
    exp2_impl=None, path="auto", global_scale=None, knobs=None,
):  # fmt: skip
    if out_format not in _OUT_FORMATS:
        raise ValueError(f"out_format must be one of {sorted(_OUT_FORMATS)}, not {out_format!r}")
    if global_scale is not None and out_format != "nvfp4":
        raise ValueError("global_scale is for out_format='nvfp4' only")
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise ValueError(f"window must be a pair (left, right), got {window!r}")
    ops = _ops()
    torch = ops.torch
    if knobs is not None and not ops.direct(q, k, v, sink, global_scale):
        raise ValueError("knobs= takes plain tensors outside torch.compile (the ops have no knobs argument)")
    if out_format in ("bfloat16", "fp16", "float16"):
        wanted = torch.bfloat16 if out_format == "bfloat16" else torch.float16
        if isinstance(q, torch.Tensor) and q.dtype != wanted:
            raise ValueError(f"out_format {out_format!r} must match the input dtype {q.dtype} (no conversion)")
    left, right = _normalize_window(causal, window)
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(q.shape[-1]) if isinstance(q, torch.Tensor) else 1.0
    softmax_scale = float(softmax_scale)
    if out_format == "nvfp4":
        if global_scale is None:
            if not isinstance(v, torch.Tensor):
                check_attention_shapes(q, k, v, sink, softmax_scale, None)
            global_scale = nvfp4.compute_global_scale(v)
        elif isinstance(global_scale, (int, float)):
            global_scale = _check_global_scale(torch, global_scale, q.device)
        if knobs is not None or ops.direct(q, k, v, sink, global_scale):
            codes, scales, lse = ops.attention_nvfp4_impl(
                q, k, v, sink, global_scale, softmax_scale, left, right, path, exp2_on_fma, exp2_impl, knobs=knobs
            )
        else:
            codes, scales, lse = ops.attention_nvfp4(q, k, v, sink, global_scale, softmax_scale, left, right, path, exp2_on_fma, exp2_impl)
        out = (codes, scales.view(torch.float8_e4m3fn), global_scale.reshape(()) if global_scale.dim() else global_scale)
    elif knobs is not None or ops.direct(q, k, v, sink):
        out, lse = ops.attention_impl(q, k, v, sink, softmax_scale, left, right, path, exp2_on_fma, exp2_impl, knobs=knobs)
    else:
        out, lse = ops.attention(q, k, v, sink, softmax_scale, left, right, path, exp2_on_fma, exp2_impl)
    return (out, lse) if return_lse else out


# --- the reference (float64, torch; CPU or GPU) -----------------------------------------
def reference_attention(q, k, v, causal: bool = False, window=(-1, -1), sink=None, softmax_scale=None):
    """(out, lse) in float64 by the definition above: dense scores, explicit masks, exact exp.

    Rows with no visible key (and no sink) give out = 0 and LSE = -inf.
    """
    torch = torch_module()
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else float(softmax_scale)
    left, right = _normalize_window(causal, window)
    qd, kd, vd = (t.to(torch.float64) for t in (q, k, v))
    kd = kd.repeat_interleave(hq // hkv, dim=2)
    vd = vd.repeat_interleave(hq // hkv, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) * scale
    i = torch.arange(sq, device=q.device)[:, None]
    j = torch.arange(sk, device=q.device)[None, :]
    visible = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if right >= 0:
        visible &= j <= i + (sk - sq) + right
    if left >= 0:
        visible &= j >= i + (sk - sq) - left
    s = s.masked_fill(~visible, -math.inf)
    logits = s
    if sink is not None:
        col = sink.to(torch.float64).reshape(1, hq, 1, 1).expand(b, hq, sq, 1)
        logits = torch.cat([s, col], dim=-1)
    lse = torch.logsumexp(logits, dim=-1)  # -inf for an empty row
    finite = torch.isfinite(lse)
    p = torch.exp(s - torch.where(finite, lse, torch.zeros_like(lse))[..., None])
    p = torch.where(finite[..., None], p, torch.zeros_like(p))
    out = torch.einsum("bhqk,bkhd->bqhd", p, vd)
    return out, lse
