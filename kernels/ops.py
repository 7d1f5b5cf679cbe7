"""The kernels as torch ops: `torch.ops.cute_lowering.*`, with fake impls, over a lean launch path.

    packed, scales = torch.ops.cute_lowering.nvfp4_quantize(x, global_scale)
    packed, scales, global_scale = torch.ops.cute_lowering.nvfp4_quantize_computing_scale(x)
    y = torch.ops.cute_lowering.nvfp4_dequantize(packed, scales, global_scale, torch.bfloat16)
    global_scale = torch.ops.cute_lowering.nvfp4_global_scale(x)
    out, lse = torch.ops.cute_lowering.attention(q, k, v, sink, softmax_scale, left, right)
    codes, scales, lse = torch.ops.cute_lowering.attention_nvfp4(q, k, v, sink, global_scale, softmax_scale, left, right)

The ops return E4M3 scales as their uint8 bits (torch's op checks cannot compare
float8 outputs: opcheck's schema test fails on them); the public functions view them as
float8_e4m3fn. Each op is a `torch.library` schema with a Python kernel (see "the ops"
below for why not `custom_op`) and a fake impl that gives the exact output shapes and
dtypes and applies the same shape/dtype rules as the CUDA impl, so
`torch.compile(fullgraph=True)` traces a model that calls them without a graph break,
and wrong shapes fail while tracing. The public functions (`cute_lowering.kernels.nvfp4.quantize`,
`dequantize`, `compute_global_scale`, `cute_lowering.kernels.fmha.attention`) call the ops while torch
compiles (or for tensor subclasses: fake, functional) and the ops' CUDA impls directly
otherwise (the dispatcher's ~2 us a call saved). One implementation either way.

The launch path, per call: a dict lookup for the compiled callable (per dtype, shape
class, device; the arch is the device's, looked up once), the input rules as one
boolean expression of cheap tensor attributes (the full checks, with their messages,
run only when it fails or on a cache miss), output allocation, and one call of the
compiled function through CuTeDSL's TVM-FFI convention: addresses, sizes and the
stream handle as Python ints, decoded in C. No host synchronisation (global scales
stay on the device), torch's current stream, so the calls are CUDA-graph capturable.

Adding a kernel: a `compile_*` in its module (built with `tvm_ffi=True`), a launcher
here (`_launcher`), an impl, its fake impl and a `_define` with the op's schema.
"""

from __future__ import annotations

import math
from typing import Optional

try:
    import torch
except ModuleNotFoundError as e:  # torch is optional: say which extra brings it, not a bare import error
    if e.name != "torch":
        raise
    raise ModuleNotFoundError(
        "cute_lowering.kernels.ops (the torch ops) needs torch, an optional dependency: install the extra `torch`, "
        "pip install -e '.[torch]' (on a CPU-only machine install the CPU torch first: README, \"Torch ops\")",
        name="torch") from None
from torch import Tensor

from cute_lowering.kernels import fmha_decode, fmha_paths, fmha_sm80, fmha_sm90, inputs, nvfp4_kernels
from cute_lowering.kernels.attention_parts import LOG2E
from cute_lowering.kernels.fmha_sm90_knobs import DEFAULT_KNOBS, Knobs
from cute_lowering.kernels.torch_device import arch_of

_F32 = torch.float32
_U8 = torch.uint8
_E4M3 = torch.float8_e4m3fn
VALUE_DTYPES = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}
ATTENTION_DTYPES = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
_BLOCK = nvfp4_kernels.BLOCK
_MAX_ELEMENTS = 2**31  # 32-bit indexing in the kernels


# --- compiled callables, once per key --------------------------------------------------
_LAUNCHERS: dict = {}


def _launcher(key, compile_fn):
    """The TVM-FFI function of `compile_fn()`, built on the first call for `key`.

    The raw `tvm_ffi.Function` is called, not CuTeDSL's wrapper around it: the wrapper
    re-walks the arguments in Python to convert pointer objects, and ours are ints.
    The compiled object stays referenced here (it owns the loaded module).
    """
    compiled = compile_fn()
    raw = compiled.__tvm_ffi_object__() if hasattr(compiled, "__tvm_ffi_object__") else compiled
    if raw is None:
        raise RuntimeError(f"internal error: {key} was compiled without a TVM-FFI function (a build for another arch?)")
    import tvm_ffi

    call = raw if type(raw) is tvm_ffi.Function else _bound_ffi_call(raw)
    _LAUNCHERS[key] = (call, compiled)
    return call


def _bound_ffi_call(fn):
    """tvm_ffi.Function's own __call__ on a subclass instance that overrides it in Python."""
    import functools

    import tvm_ffi

    return functools.partial(tvm_ffi.Function.__call__, fn)


def clear_launch_cache():
    """Forget every launcher and plan (and the compiled modules they hold). Not needed for other
    wgmma knobs: the plans key on the `Knobs` value a call passes (`knobs=`); for a test that
    stubs a planning function (`choose_splits`, `sm_count`), or a module's knob of another path
    changed by hand (fmha_decode's, fmha_sm80's)."""
    _LAUNCHERS.clear()
    _DECODE_PLANS.clear()
    _NVFP4_UNFUSED.clear()
    _FUSED_PLANS.clear()
    _CONFIGS.clear()


_DEVICE_ARCH: dict = {}


def _arch(index: int) -> str:
    arch = _DEVICE_ARCH.get(index)
    if arch is None:
        arch = _DEVICE_ARCH[index] = arch_of(torch.device("cuda", index))
    return arch


_DEVICE_SMS: dict = {}


def _sm_count(index: int) -> int:
    sms = _DEVICE_SMS.get(index)
    if sms is None:
        sms = _DEVICE_SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return sms


_DEVICE_CLUSTERS: dict = {}


def _has_clusters(index: int) -> bool:
    """Whether device `index` has thread-block clusters (looked up once)."""
    has = _DEVICE_CLUSTERS.get(index)
    if has is None:
        has = _DEVICE_CLUSTERS[index] = nvfp4_kernels.one_launch_arch(_arch(index))
    return has


def _stream(index: int) -> int:
    """torch's current stream on device `index`, as the raw handle the kernels take."""
    return torch._C._cuda_getCurrentRawStream(index)


# --- NVFP4 -----------------------------------------------------------------------------
def _quantize_ok(x, gs, variant) -> bool:
    """The quantize input rules in one expression (the full checks say which one failed)."""
    return (
        type(x) is Tensor
        and (gs is None or type(gs) is Tensor)
        and (variant == "plain" or variant == "fptosi")
        and x.is_cuda
        and x.dtype in VALUE_DTYPES
        and x.dim() == 2
        and x.is_contiguous()
        and x.shape[1] % _BLOCK == 0
        and x.numel() < _MAX_ELEMENTS
        and x.data_ptr() % nvfp4_kernels.ALIGN_VALUES == 0
        and (gs is None or (gs.dtype == _F32 and gs.numel() == 1 and gs.get_device() == x.get_device()))
    )


def _quantize_launch(x, variant: str, scale: str):
    key = ("quantize", x.dtype, x.get_device(), variant, scale)
    entry = _LAUNCHERS.get(key)
    if entry is not None:
        return entry[0]
    arch = _arch(x.get_device())
    return _launcher(key, lambda: nvfp4_kernels.compile_quantize(VALUE_DTYPES[x.dtype], arch, variant, tvm_ffi=True, scale=scale))


def quantize_impl(x: Tensor, global_scale: Tensor, variant: str = "plain") -> tuple[Tensor, Tensor]:
    """x [M, K] -> (packed uint8 [M, K/2], scales' E4M3 bits as uint8 [M, K/16]) with a given global scale."""
    if global_scale is None or not _quantize_ok(x, global_scale, variant):
        inputs.check_quantize_input(x, global_scale, variant, scale_given=True)
    m, k = x.shape
    packed = x.new_empty((m, k // 2), dtype=_U8)
    scales = x.new_empty((m, k // _BLOCK), dtype=_U8)
    if m * k:
        device = x.get_device()
        _quantize_launch(x, variant, "given")(
            x.data_ptr(), packed.data_ptr(), scales.data_ptr(), global_scale.data_ptr(), m * k, _stream(device)
        )
    return packed, scales


def quantize_computing_scale_impl(x: Tensor, variant: str = "plain") -> tuple[Tensor, Tensor, Tensor]:
    """x [M, K] -> (packed, scales, global scale f32 0-d = 448*6/amax(|x|) over the finite values, 1 if 0).

    No torch ops in between, no fill: allocations and one TVM-FFI call. Up to
    `nvfp4_kernels.ONE_LAUNCH_MAX_ELEMENTS` on sm_90 and later, one launch (a cluster of CTAs that
    exchange their maxima); otherwise two: the amax kernel writes per-CTA partial maxima
    into an uninitialised buffer, then the quantize kernel reduces them in every CTA (see
    `nvfp4_kernels.SCALE_SOURCES`).
    """
    if not _quantize_ok(x, None, variant):
        inputs.check_quantize_input(x, None, variant)
    m, k = x.shape
    packed = x.new_empty((m, k // 2), dtype=_U8)
    scales = x.new_empty((m, k // _BLOCK), dtype=_U8)
    n = m * k
    if not n:
        return packed, scales, x.new_ones((), dtype=_F32)
    device = x.get_device()
    if n <= nvfp4_kernels.ONE_LAUNCH_MAX_ELEMENTS and _has_clusters(device):
        scale = x.new_empty((), dtype=_F32)
        _quantize_launch(x, variant, "cluster")(x.data_ptr(), packed.data_ptr(), scales.data_ptr(), scale.data_ptr(), n, _stream(device))
        return packed, scales, scale
    # [global scale, the amax kernel's partial maxima]: one allocation, every element written
    # by the kernels, addressed by pointer arithmetic; the op returns element 0 (a view is
    # cheaper than a second allocation)
    scale_and_partials = x.new_empty((1 + nvfp4_kernels.amax_ctas(n),), dtype=_F32)
    scale_ptr = scale_and_partials.data_ptr()
    _quantize_launch(x, variant, "partials")(
        x.data_ptr(), packed.data_ptr(), scales.data_ptr(), scale_ptr + 4, scale_ptr, n, _stream(device)
    )
    return packed, scales, scale_and_partials[0]


def dequantize_impl(packed: Tensor, scales: Tensor, global_scale: Tensor, dtype: torch.dtype) -> Tensor:
    """(packed uint8 [M, K/2], scales e4m3/uint8 [M, K/16], global f32) -> [M, K] of `dtype`."""
    ok = (
        type(packed) is Tensor
        and type(scales) is Tensor
        and type(global_scale) is Tensor
        and dtype in VALUE_DTYPES
        and packed.is_cuda
        and packed.dtype == _U8
        and (scales.dtype == _E4M3 or scales.dtype == _U8)
        and packed.dim() == 2
        and scales.dim() == 2
        and packed.is_contiguous()
        and scales.is_contiguous()
        and packed.shape[1] % (_BLOCK // 2) == 0
        and scales.shape[0] == packed.shape[0]
        and scales.shape[1] * (_BLOCK // 2) == packed.shape[1]
        and 2 * packed.numel() < _MAX_ELEMENTS
        and scales.get_device() == packed.get_device()
        and global_scale.dtype == _F32
        and global_scale.numel() == 1
        and global_scale.get_device() == packed.get_device()
        and packed.data_ptr() % nvfp4_kernels.ALIGN_CODES == 0
        and scales.data_ptr() % nvfp4_kernels.ALIGN_SCALES == 0
    )
    if not ok:
        inputs.check_dequantize_input(packed, scales, global_scale, dtype)
    m, half = packed.shape
    out = packed.new_empty((m, 2 * half), dtype=dtype)
    if out.numel():
        device = packed.get_device()
        key = ("dequantize", dtype, device)
        entry = _LAUNCHERS.get(key)
        if entry is not None:
            launch = entry[0]
        else:
            arch = _arch(device)
            launch = _launcher(key, lambda: nvfp4_kernels.compile_dequantize(VALUE_DTYPES[dtype], arch, tvm_ffi=True))
        launch(packed.data_ptr(), scales.data_ptr(), global_scale.data_ptr(), out.data_ptr(), out.numel(), _stream(device))
    return out


# --- attention -------------------------------------------------------------------------
def _attention_ok(q, k, v, sink, softmax_scale, global_scale) -> bool:
    """The attention input rules in one expression (inputs.check_attention_input says which one failed)."""
    if not (type(q) is Tensor and type(k) is Tensor and type(v) is Tensor):
        return False
    if not (q.dim() == 4 and k.dim() == 4 and q.is_cuda and q.dtype in ATTENTION_DTYPES):
        return False
    b, sq, hq, d = q.shape
    _, _, hkv, _ = k.shape
    device = q.get_device()
    return (
        k.dtype == q.dtype
        and v.dtype == q.dtype
        and k.shape == v.shape
        and k.shape[0] == b
        and k.shape[3] == d
        and d in fmha_sm80.HEAD_DIMS
        and hkv > 0
        and hq % hkv == 0
        and k.get_device() == device
        and v.get_device() == device
        and q.is_contiguous()
        and k.is_contiguous()
        and v.is_contiguous()
        and q.numel() < _MAX_ELEMENTS
        and k.numel() < _MAX_ELEMENTS
        and b * hq * sq < _MAX_ELEMENTS
        and (q.data_ptr() | k.data_ptr() | v.data_ptr()) % 16 == 0
        and 0.0 < softmax_scale < math.inf
        and (
            sink is None
            or (type(sink) is Tensor and sink.dtype == _F32 and sink.shape == (hq,) and sink.get_device() == device and sink.is_contiguous())
        )
        and (
            global_scale is None
            or (type(global_scale) is Tensor and global_scale.dtype == _F32 and global_scale.numel() == 1 and global_scale.get_device() == device)
        )
    )


_CONFIGS: dict = {}  # shape class and knobs -> fmha_sm90's Config (computed once a shape class)


def _wgmma_config(d, sk, has_left, has_right, path, nvfp4_out, arch, knobs):
    """fmha_sm90's Config of the wgmma path for a call's shape class (`sk`, the keys, picks the
    wide-key build or not), computed once and kept; None where the call takes another path."""
    if not (path != "mma_sync" and arch in fmha_sm90.ARCHS):
        return None
    wide_keys = fmha_sm90.wide_keys(d, sk, knobs)  # (knobs.wide_key_tiles' build)
    key = (d, has_left, has_right, nvfp4_out, wide_keys, knobs)
    config = _CONFIGS.get(key)
    if config is None:
        config = _CONFIGS[key] = fmha_sm90.config_for(d, has_left, has_right, nvfp4_out, wide_keys, knobs)
    return config


def _attention_launch(q, sk, has_sink, left, right, path, exp2_on_fma, exp2_impl, nvfp4_out, knobs=DEFAULT_KNOBS):
    """(launcher, fmha_sm90's Config or None) for one shape class (`sk`, the keys, picks
    fmha_sm90's wide-key build or not); on a miss the options are checked against the arch first."""
    d = q.shape[3]
    device = q.get_device()
    arch = _arch(device)
    # the wgmma path's build (from `knobs`) is part of the key: another Knobs value gets the kernel it asks for
    config = _wgmma_config(d, sk, left >= 0, right >= 0, path, nvfp4_out, arch, knobs)
    # the same for the mma_sync path's exp2 knobs when the call leaves them to the module's defaults
    exp2_on_fma = fmha_sm80.EXP2_FMA_FRACTION if exp2_on_fma is None else exp2_on_fma
    exp2_impl = fmha_sm80.EXP2_FMA_IMPL if exp2_impl is None else exp2_impl
    key = ("attention", q.dtype, d, device, left >= 0, right >= 0, has_sink, path, exp2_on_fma, exp2_impl, nvfp4_out, config)
    entry = _LAUNCHERS.get(key)
    if entry is not None:
        return entry[0], config
    inputs.check_attention_options(path, exp2_on_fma, exp2_impl, arch)
    out_format = "nvfp4" if nvfp4_out else "bf16"
    return _launcher(
        key,
        lambda: fmha_paths.compile_attention(
            ATTENTION_DTYPES[q.dtype], d, False, (left, right), has_sink, arch, exp2_on_fma, exp2_impl,
            options=nvfp4_kernels.TVM_FFI_OPTION, path=path, out_format=out_format, config=config, knobs=knobs,
        ),
    ), config  # fmt: skip


# per call shape (and options, knobs): (launcher, fmha_sm90.LaunchPlan, or None off the wgmma
# path) of the one-kernel paths; a plain dict lookup on the launch path, cleared past _PLANS_MAX
_FUSED_PLANS: dict = {}


def _fused_plan(plan_key, q, b, sq, sk, hq, has_sink, left, right, path, exp2_on_fma, exp2_impl, nvfp4_out, knobs):
    launch, config = _attention_launch(q, sk, has_sink, left, right, path, exp2_on_fma, exp2_impl, nvfp4_out, knobs)
    plan = None if config is None else fmha_sm90.plan_launch(config, b, sq, sk, hq, q.shape[3], has_sink, knobs)
    if len(_FUSED_PLANS) >= _PLANS_MAX:
        _FUSED_PLANS.clear()
    entry = _FUSED_PLANS[plan_key] = (launch, plan)
    return entry


def _decode_launch(q, hkv, has_sink, left, right, exp2_on_fma, exp2_impl, kernel, combine_pdl=None, knobs=DEFAULT_KNOBS):
    """The launcher of a split-KV path (split + combine, one TVM-FFI call) for one shape class.

    kernel: "key_warps" or "split" (fmha_decode's, mma.sync), "wgmma" (fmha_sm90's packed split-KV,
    its combine a programmatic dependent launch or not: combine_pdl; its build from `knobs`).
    """
    device = q.get_device()
    group = q.shape[2] // hkv if kernel == "wgmma" else 0  # (a compile-time constant of the wgmma kernel)
    key = ("attention_decode", q.dtype, q.shape[3], device, left >= 0, right >= 0, has_sink, kernel, group, combine_pdl, knobs if group else None)
    entry = _LAUNCHERS.get(key)
    if entry is not None:
        return entry[0]
    arch = _arch(device)
    path = "decode_wgmma" if kernel == "wgmma" else "decode"
    inputs.check_attention_options(path, exp2_on_fma, exp2_impl, arch)
    if kernel == "wgmma":
        build = lambda: fmha_sm90.compile_packed_split(
            ATTENTION_DTYPES[q.dtype], q.shape[3], group, left >= 0, right >= 0, has_sink, arch, nvfp4_kernels.TVM_FFI_OPTION, combine_pdl,
            knobs=knobs,
        )  # fmt: skip
    else:
        build = lambda: fmha_decode.compile_decode(
            ATTENTION_DTYPES[q.dtype], q.shape[3], left >= 0, right >= 0, has_sink, arch, options=nvfp4_kernels.TVM_FFI_OPTION,
            key_warps=kernel == "key_warps",
        )  # fmt: skip
    return _launcher(key, build)


# The kernels' scratch, 4-byte words: counters (zero between calls: each call leaves them
# zero), the per-tile arrivals of the split-KV path's <= 16-row kernel (the last CTA of a tile
# combines it) or the wgmma kernel's dynamic tile scheduler, then the splits' f32 partials (written before they are read within a call). One
# buffer per (device, stream), kept: launches on one stream run in order, on two streams
# they get two buffers; a call then allocates only what it returns. While a CUDA graph is
# captured each call gets its own buffer, counters zeroed inside the graph (a graph may be
# replayed on any stream, alongside anything). torch says whether the CURRENT device's
# stream is capturing; for a tensor on another device that answer is not about the launch
# stream, so those calls take a fresh buffer too (correct either way), and so do calls whose
# partials pass _SCRATCH_MAX_WORDS (a long prefill-sized split is not kept alive).
_SCRATCH: dict = {}  # (device, stream) -> (address, counter words, partial words, the buffer kept alive)
_SCRATCH_MAX_WORDS = 16 << 20  # 64 MiB
_COUNTER_WORDS = 4096  # the counters' region: a multiple of 4 keeps the partials 16-byte aligned


def _fresh_scratch(device: int, counters: int, partials: int):
    buffer = torch.empty(counters + partials, dtype=_F32, device=torch.device("cuda", device))
    if counters:
        buffer[:counters].zero_()  # (the same bits as int32 zeros)
    return buffer


def _scratch(device: int, stream: int, counters: int, partials: int) -> tuple[int, int]:
    """Addresses of `counters` zero int32 words and (16-byte aligned) room for `partials` f32 words."""
    counters = -(-counters // 4) * 4
    if device != torch._C._cuda_getDevice() or torch._C._cuda_isCurrentStreamCapturing() or partials > _SCRATCH_MAX_WORDS:
        base = _fresh_scratch(device, counters, partials).data_ptr()  # freed after the launch is recorded: the allocator (or the graph's pool) reuses it in stream order
        return base, base + 4 * counters
    entry = _SCRATCH.get((device, stream))
    if entry is None or entry[1] < counters or entry[2] < partials:
        words = max(counters, _COUNTER_WORDS, entry[1] if entry else 0)
        room = max(partials, entry[2] if entry else 0)
        buffer = _fresh_scratch(device, words, room)
        entry = _SCRATCH[(device, stream)] = (buffer.data_ptr(), words, room, buffer)
    return entry[0], entry[0] + 4 * entry[1]


# per call shape (and options, knobs): (launcher, splits, uses counters), or False where no
# split-KV path is taken; a plain dict lookup on the launch path. Cleared when it grows past
# _PLANS_MAX (a decode loop makes one entry per key length).
_DECODE_PLANS: dict = {}
_PLANS_MAX = 4096


def _decode_plan(plan_key, q, b, sq, sk, hq, hkv, has_sink, left, right, path, exp2_on_fma, exp2_impl, knobs):
    kernel, splits = _decode_choice(q, b, sq, sk, hq, hkv, left, right, path, exp2_on_fma, knobs)
    plan = False
    if splits:
        combine_pdl = fmha_sm90.split_combine_pdl(splits, knobs) if kernel == "wgmma" else None  # (by the split count)
        plan = (_decode_launch(q, hkv, has_sink, left, right, exp2_on_fma, exp2_impl, kernel, combine_pdl, knobs), splits, kernel == "key_warps")
    if len(_DECODE_PLANS) >= _PLANS_MAX:
        _DECODE_PLANS.clear()
    _DECODE_PLANS[plan_key] = plan
    return plan


def _decode_choice(q, b, sq, sk, hq, hkv, left, right, path, exp2_on_fma, knobs=DEFAULT_KNOBS) -> tuple[str, int]:
    """(kernel, split count) of the split-KV path for this call; split count 0 where none is
    taken. path "auto": by shape (fmha_decode's for <= KEY_WARPS_ROWS packed rows, fmha_sm90's
    packed split-KV where it says so on sm_90a, else fmha_decode's where it says so)."""
    device = q.get_device()
    sms = _sm_count(device)
    mma_sync = "key_warps" if sq * (hq // hkv) <= fmha_decode.KEY_WARPS_ROWS else "split"
    if path == "decode":
        return mma_sync, fmha_decode.choose_splits(b, sq, sk, hq, hkv, left, right, sms, forced=True)
    if path == "decode_wgmma":
        if not fmha_sm90.packed_groups(hq // hkv):
            raise ValueError(f"path 'decode_wgmma' packs the Hq / Hkv q heads of a kv head into a tile: it takes Hq / Hkv in 2, 4, ..., 128, not {hq // hkv}")
        return "wgmma", fmha_sm90.choose_splits(b, sq, sk, hq, hkv, left, right, sms, forced=True, head_dim=q.shape[3], knobs=knobs)
    if path != "auto" or (fmha_sm80.EXP2_FMA_FRACTION if exp2_on_fma is None else exp2_on_fma):
        return mma_sync, 0  # another path asked for by name, or the FMA exp2 (mma_sync only)
    arch = _arch(device)
    if arch in fmha_sm90.ARCHS and mma_sync != "key_warps":
        splits = fmha_sm90.choose_splits(b, sq, sk, hq, hkv, left, right, sms, head_dim=q.shape[3], knobs=knobs)
        if splits:
            return "wgmma", splits
    if arch not in fmha_decode.ARCHS:
        return mma_sync, 0
    return mma_sync, fmha_decode.choose_splits(b, sq, sk, hq, hkv, left, right, sms)


def _attention_run(q, k, v, sink, softmax_scale, left, right, path, exp2_on_fma, exp2_impl, global_scale, knobs):
    if not _attention_ok(q, k, v, sink, softmax_scale, global_scale):
        inputs.check_attention_input(q, k, v, sink, softmax_scale, global_scale)
    b, sq, hq, d = q.shape
    _, sk, hkv, _ = k.shape
    device = q.get_device()
    if global_scale is None and path != "mma_sync" and path != "wgmma":  # split-KV paths; NVFP4 output: the others
        plan_key = (q.dtype, d, device, b, sq, sk, hq, hkv, left, right, sink is None, path, exp2_on_fma, exp2_impl, knobs)
        plan = _DECODE_PLANS.get(plan_key)
        if plan is None:
            plan = _decode_plan(plan_key, q, b, sq, sk, hq, hkv, sink is not None, left, right, path, exp2_on_fma, exp2_impl, knobs)
        if plan:
            launch, splits, counted = plan
            out = torch.empty_like(q)
            lse = q.new_empty((b, hq, sq), dtype=_F32)
            if q.numel():
                stream = _stream(device)
                # counters: one per 16-row tile, i.e. per (batch, kv head), for the key_warps kernel;
                # partials: the splits' O then their LSE, every element the combine reads written by the split kernel
                counters, part_ptr = _scratch(device, stream, b * hkv if counted else 0, splits * b * hq * sq * (d + 1))
                lse_ptr = lse.data_ptr()
                launch(
                    q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse_ptr,
                    lse_ptr if sink is None else sink.data_ptr(), part_ptr, part_ptr + 4 * splits * b * hq * sq * d, counters,
                    b, sq, sk, hq, hkv, splits, softmax_scale * LOG2E, left, right, stream,
                )  # fmt: skip
            return out, lse
    if global_scale is not None:
        # the NVFP4 output promises quantize() of the bf16 output's bits: where that call takes
        # arithmetic the NVFP4 build has not (a split-KV plan, the tail split's pieces, another
        # tile), it is that call's output quantized (two kernels, the same bits)
        shape_key = (q.dtype, d, device, b, sq, sk, hq, hkv, left, right, sink is None, path, exp2_on_fma, exp2_impl, knobs)
        unfused = _NVFP4_UNFUSED.get(shape_key)
        if unfused is None:
            unfused = _bf16_call_differs(q, b, sq, sk, hq, hkv, sink is not None, left, right, path, exp2_on_fma, exp2_impl, knobs)
            if len(_NVFP4_UNFUSED) >= _PLANS_MAX:
                _NVFP4_UNFUSED.clear()
            _NVFP4_UNFUSED[shape_key] = unfused
        if unfused:
            out, lse = _attention_run(q, k, v, sink, softmax_scale, left, right, path, exp2_on_fma, exp2_impl, None, knobs)
            codes, scales = quantize_impl(out.reshape(-1, d), global_scale)
            return codes.view(b, sq, hq, d // 2), scales.view(b, sq, hq, d // _BLOCK), lse
    nvfp4_out = global_scale is not None
    plan_key = (q.dtype, d, device, b, sq, sk, hq, left >= 0, right >= 0, sink is None, path, exp2_on_fma, exp2_impl, nvfp4_out, knobs)
    entry = _FUSED_PLANS.get(plan_key)
    if entry is None:
        entry = _fused_plan(plan_key, q, b, sq, sk, hq, sink is not None, left, right, path, exp2_on_fma, exp2_impl, nvfp4_out, knobs)
    launch, plan = entry
    lse = q.new_empty((b, hq, sq), dtype=_F32)
    if nvfp4_out:
        codes = q.new_empty((b, sq, hq, d // 2), dtype=_U8)
        scales = q.new_empty((b, sq, hq, d // _BLOCK), dtype=_U8)
        out = None
        outputs = (codes.data_ptr(), scales.data_ptr(), global_scale.data_ptr())
    else:
        out = torch.empty_like(q)
        outputs = (lse.data_ptr(),) * 3  # never read: the epilogue stores O itself
    if q.numel():
        lse_ptr = lse.data_ptr()
        stream = _stream(device)
        # the plan's scratch: the dynamic scheduler's counters and, where the tail split cuts
        # the last partial round's tiles into pieces (plan.splits > 1), their partials
        splits, o_words = (plan.splits, plan.o_words) if plan is not None else (1, 0)
        counters, tail_o = lse_ptr, lse_ptr  # (never read without the dynamic order, the tail split)
        if plan is not None and (plan.counter_words or splits > 1):
            counters, tail_o = _scratch(device, stream, plan.counter_words, o_words + plan.lse_words)
        launch(
            q.data_ptr(), k.data_ptr(), v.data_ptr(), (q if out is None else out).data_ptr(), lse_ptr,
            lse_ptr if sink is None else sink.data_ptr(), *outputs, counters, tail_o, tail_o + 4 * o_words, splits,
            b, sq, sk, hq, hkv, softmax_scale * LOG2E, left, right, stream,
        )  # fmt: skip
    return (out, lse) if global_scale is None else (codes, scales, lse)


_NVFP4_UNFUSED: dict = {}  # shape class -> _bf16_call_differs (cleared with the launchers)


def _bf16_call_differs(q, b, sq, sk, hq, hkv, has_sink, left, right, path, exp2_on_fma, exp2_impl, knobs=DEFAULT_KNOBS) -> bool:
    """Whether the bf16 call of this shape computes O otherwise than the fused NVFP4 build: a
    split-KV plan (the NVFP4 output has none), the tail split cutting this shape's last tiles
    into pieces (a different summation order: 583 codes differed at 1x32x16384x128), or another tile
    (knobs.wide_key_tiles' build, which the NVFP4 output does not take)."""
    if path != "mma_sync" and path != "wgmma":
        plan_key = (q.dtype, q.shape[3], q.get_device(), b, sq, sk, hq, hkv, left, right, not has_sink, path, exp2_on_fma, exp2_impl, knobs)
        plan = _DECODE_PLANS.get(plan_key)
        if plan is None:
            plan = _decode_plan(plan_key, q, b, sq, sk, hq, hkv, has_sink, left, right, path, exp2_on_fma, exp2_impl, knobs)
        if plan:
            return True
    arch = _arch(q.get_device())
    nvfp4_config = _wgmma_config(q.shape[3], sk, left >= 0, right >= 0, path, True, arch, knobs)
    config = _wgmma_config(q.shape[3], sk, left >= 0, right >= 0, path, False, arch, knobs)
    if config is None or nvfp4_config is None:
        return False  # (the mma_sync path: one build whatever the output)
    if config.tile != nvfp4_config.tile:
        return True
    return bool(config.tail_split) and fmha_sm90.tail_splits(config, b, sq, sk, hq, has_sink, knobs) > 1


def attention_impl(
    q: Tensor, k: Tensor, v: Tensor, sink: Optional[Tensor], softmax_scale: float, window_left: int, window_right: int,
    path: str = "auto", exp2_on_fma: Optional[float] = None, exp2_impl: Optional[str] = None, *, knobs: Optional[Knobs] = None,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """(out [B, Sq, Hq, D], lse [B, Hq, Sq] f32); window sides -1 = unbounded (causal: right = 0).
    `knobs`: the wgmma paths' `fmha_sm90_knobs.Knobs` (None: DEFAULT_KNOBS); not an op argument
    (the op always takes the defaults), a direct call's only (`cute_lowering.kernels.fmha.attention_with_knobs`)."""
    knobs = DEFAULT_KNOBS if knobs is None else knobs
    return _attention_run(q, k, v, sink, softmax_scale, window_left, window_right, path, exp2_on_fma, exp2_impl, None, knobs)


def attention_nvfp4_impl(
    q: Tensor, k: Tensor, v: Tensor, sink: Optional[Tensor], global_scale: Tensor, softmax_scale: float, window_left: int,
    window_right: int, path: str = "auto", exp2_on_fma: Optional[float] = None, exp2_impl: Optional[str] = None, *,
    knobs: Optional[Knobs] = None,
) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """(codes uint8 [B, Sq, Hq, D/2], scales' E4M3 bits uint8 [B, Sq, Hq, D/16], lse): O quantized by the epilogue.
    `knobs`: as attention_impl's."""
    if type(global_scale) is not Tensor:
        inputs.check_attention_input(q, k, v, sink, softmax_scale, global_scale)
    knobs = DEFAULT_KNOBS if knobs is None else knobs
    return _attention_run(q, k, v, sink, softmax_scale, window_left, window_right, path, exp2_on_fma, exp2_impl, global_scale, knobs)


# --- the ops -----------------------------------------------------------------------------
# Defined with a `torch.library.Library` schema and kernel, not `torch.library.custom_op`:
# custom_op puts Python layers around every dispatched call (an autograd kernel that
# redispatches, an output-aliasing check), ~9 us a call on the CI machine against ~2 us
# for a plain Python kernel (CPU stubs, same run). That is the cost each op pays inside
# a torch.compile'd graph, whose wrapper calls `torch.ops.cute_lowering.*` directly.
# The kernel is registered for every backend (CompositeExplicitAutograd) so that a CPU
# tensor reaches the impl's checks and gets their message; there is no autograd formula
# (a backward through an op is refused by torch's autograd fallback).
NAMESPACE = "cute_lowering"
_LIBRARY = torch.library.Library(NAMESPACE, "DEF")


def _define(schema: str, impl, fake):
    """Define `NAMESPACE::<schema>` with `impl` as its kernel and `fake` as its fake impl; its OpOverload."""
    name = schema.split("(", 1)[0]
    _LIBRARY.define(schema)
    _LIBRARY.impl(name, impl, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{NAMESPACE}::{name}", fake, lib=_LIBRARY)
    return getattr(getattr(torch.ops, NAMESPACE), name).default


def _quantize_fake(x, global_scale, variant="plain"):
    inputs.check_quantize_shapes(x, global_scale, variant)
    m, k = x.shape
    return x.new_empty((m, k // 2), dtype=_U8), x.new_empty((m, k // _BLOCK), dtype=_U8)


nvfp4_quantize = _define(
    'nvfp4_quantize(Tensor x, Tensor global_scale, str variant="plain") -> (Tensor, Tensor)', quantize_impl, _quantize_fake
)


def _quantize_computing_scale_fake(x, variant="plain"):
    inputs.check_quantize_shapes(x, None, variant)
    m, k = x.shape
    return x.new_empty((m, k // 2), dtype=_U8), x.new_empty((m, k // _BLOCK), dtype=_U8), x.new_empty((), dtype=_F32)


nvfp4_quantize_computing_scale = _define(
    'nvfp4_quantize_computing_scale(Tensor x, str variant="plain") -> (Tensor, Tensor, Tensor)',
    quantize_computing_scale_impl,
    _quantize_computing_scale_fake,
)


def _dequantize_fake(packed, scales, global_scale, dtype):
    inputs.check_dequantize_shapes(packed, scales, global_scale, dtype)
    m, half = packed.shape
    return packed.new_empty((m, 2 * half), dtype=dtype)


nvfp4_dequantize = _define(
    "nvfp4_dequantize(Tensor packed, Tensor scales, Tensor global_scale, ScalarType dtype) -> Tensor", dequantize_impl, _dequantize_fake
)


def compute_global_scale_eager(x):
    """`cute_lowering.kernels.nvfp4.compute_global_scale`'s work (the op's CUDA impl): on a CUDA tensor whose elements split into 16-element
    blocks one CuTeDSL build (`compile_global_scale`: x read once); otherwise torch ops."""
    if x.numel() == 0:
        return torch.ones((), dtype=torch.float32, device=x.device)
    name = inputs._value_dtype_name(torch, x.dtype)
    fused = x.device.type == "cuda" and name is not None and x.is_contiguous() and x.numel() % nvfp4_kernels.BLOCK == 0 and x.numel() < 2**31
    if fused and x.data_ptr() % nvfp4_kernels.ALIGN_VALUES == 0:
        return global_scale_fused(x)
    a = x.detach().abs().float()
    amax = torch.where(torch.isfinite(a), a, torch.zeros((), device=a.device)).amax()
    # IEEE division (tensor / tensor; `2688.0 / amax` would be a reciprocal and a multiply),
    # and device-side constants: a Python scalar tensor would be a synchronous copy
    return torch.where(amax > 0, torch.full_like(amax, nvfp4_kernels.GLOBAL_SCALE_NUMERATOR) / amax, torch.ones_like(amax))


def _global_scale_impl(x):
    return compute_global_scale_eager(x)


def _global_scale_fake(x):
    return x.new_empty((), dtype=_F32)


nvfp4_global_scale = _define("nvfp4_global_scale(Tensor x) -> Tensor", _global_scale_impl, _global_scale_fake)


def _attention_fake(q, k, v, sink, softmax_scale, window_left, window_right, path="auto", exp2_on_fma=None, exp2_impl=None):
    inputs.check_attention_shapes(q, k, v, sink, softmax_scale, None)
    b, sq, hq, _ = q.shape
    return torch.empty_like(q), q.new_empty((b, hq, sq), dtype=_F32)


attention = _define(
    "attention(Tensor q, Tensor k, Tensor v, Tensor? sink, float softmax_scale, SymInt window_left, SymInt window_right, "
    'str path="auto", float? exp2_on_fma=None, str? exp2_impl=None) -> (Tensor, Tensor)',
    attention_impl,
    _attention_fake,
)


def _attention_nvfp4_fake(
    q, k, v, sink, global_scale, softmax_scale, window_left, window_right, path="auto", exp2_on_fma=None, exp2_impl=None
):
    inputs.check_attention_shapes(q, k, v, sink, softmax_scale, global_scale)
    b, sq, hq, d = q.shape
    return (
        q.new_empty((b, sq, hq, d // 2), dtype=_U8),
        q.new_empty((b, sq, hq, d // _BLOCK), dtype=_U8),
        q.new_empty((b, hq, sq), dtype=_F32),
    )


attention_nvfp4 = _define(
    "attention_nvfp4(Tensor q, Tensor k, Tensor v, Tensor? sink, Tensor global_scale, float softmax_scale, SymInt window_left, "
    'SymInt window_right, str path="auto", float? exp2_on_fma=None, str? exp2_impl=None) -> (Tensor, Tensor, Tensor)',
    attention_nvfp4_impl,
    _attention_nvfp4_fake,
)


# --- what the public functions call -------------------------------------------------------
def direct(*tensors) -> bool:
    """Whether to call an impl directly: plain tensors outside torch.compile (else the op)."""
    if torch.compiler.is_compiling():
        return False
    for t in tensors:
        if type(t) is not Tensor and isinstance(t, Tensor):
            return False
    return True  # plain tensors, None, or non-tensors (the impl's checks name those)


def global_scale_fused(x: Tensor) -> Tensor:
    """448*6/amax(|x|) over the finite elements (1 if 0) as a 0-d f32: one TVM-FFI call.

    For `compute_global_scale_eager`, which has checked x: CUDA, a value dtype,
    contiguous, aligned, numel > 0 and a multiple of 16.
    """
    key = ("global_scale", x.dtype, x.get_device())
    entry = _LAUNCHERS.get(key)
    if entry is not None:
        launch = entry[0]
    else:
        arch = _arch(x.get_device())
        launch = _launcher(key, lambda: nvfp4_kernels.compile_global_scale(VALUE_DTYPES[x.dtype], arch, tvm_ffi=True))
    n = x.numel()
    # [global scale, partial maxima], every element written by the kernels; element 0 returned
    scale_and_partials = x.new_empty((1 + nvfp4_kernels.amax_ctas(n),), dtype=_F32)
    scale_ptr = scale_and_partials.data_ptr()
    launch(x.data_ptr(), scale_ptr + 4, scale_ptr, n, _stream(x.get_device()))
    return scale_and_partials[0]


nvfp4_global_scale_impl = compute_global_scale_eager
