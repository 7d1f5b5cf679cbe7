"""The four FMHA paths behind one compile function: which path a request takes, and its build.

Owns `PATHS`, `resolve_path` (a requested path on an arch) and `compile_attention` (the
compiled FMHA forward of one configuration: "mma_sync" is `cute_lowering.kernels.fmha_sm80`, "wgmma" and
"decode_wgmma" `cute_lowering.kernels.fmha_sm90`, "decode" `cute_lowering.kernels.fmha_decode`), and the window's
normal form. The per-call-shape choice of a split-KV path is the launch path's
(`cute_lowering.kernels.ops`). Imports only the kernel modules below it; no torch.
"""

from __future__ import annotations

from cute_lowering.kernels import fmha_decode, fmha_sm80, fmha_sm90
from cute_lowering.kernels.fmha_sm90_knobs import DEFAULT_KNOBS
from cute_lowering.kernels.fmha_sm80 import DTYPES, EXP2_FMA_FRACTION, EXP2_FMA_IMPL, EXP2_FMA_IMPLS, HEAD_DIMS, _fma_cols

PATHS = ("auto", "mma_sync", "wgmma", "decode", "decode_wgmma")


# --- compile (no GPU needed) ------------------------------------------------------
def _normalize_window(causal: bool, window) -> tuple[int, int]:
    left, right = (int(window[0]), int(window[1]))
    left = -1 if left < 0 else left
    right = -1 if right < 0 else right
    if causal:
        right = 0
    return left, right


def compile_attention(
    dtype: str = "bfloat16",
    head_dim: int = 128,
    causal: bool = False,
    window=(-1, -1),
    sink: bool = False,
    arch: str = "sm_90a",
    exp2_on_fma=None,
    exp2_impl: str | None = None,
    options: str = "",
    path: str = "auto",
    out_format: str = "bf16",
    group: int | None = None,
    wide_keys: bool = False,
    config=None,
    knobs=None,
):
    """The compiled FMHA forward for one configuration; works without a GPU for any arch.

    `window` values only matter by their sign here (the sizes are runtime arguments), so
    configurations that differ in the window's size share one compile. `exp2_on_fma`: the
    share of the score exp2s computed by the polynomial on the FMA units (default
    EXP2_FMA_FRACTION; 0 = all MUFU), `exp2_impl` "natural" or "magic" (default
    EXP2_FMA_IMPL). `options`: extra cute.compile options (e.g. "--keep-cubin").
    `path`: "auto", "mma_sync", "wgmma", "decode" or "decode_wgmma" (see the module
    docstring; `resolve_path`); "decode_wgmma" also needs `group` = Hq / Hkv (its tiles pack
    that many q heads, a compile-time constant).
    `out_format`: "nvfp4" builds the NVFP4 epilogue (mma_sync, wgmma); anything else the plain store.
    `config`: the wgmma build's `fmha_sm90_config.Config`, computed once by the caller (None:
    `fmha_sm90.config_for` of `knobs`). `knobs`: the wgmma paths' `fmha_sm90_knobs.Knobs` (None:
    `DEFAULT_KNOBS`; a test's or a sweep's variant otherwise).
    """
    knobs = DEFAULT_KNOBS if knobs is None else knobs
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}, not {head_dim!r}")
    impl = EXP2_FMA_IMPL if exp2_impl is None else exp2_impl
    if impl not in EXP2_FMA_IMPLS:
        raise ValueError(f"exp2_impl must be one of {EXP2_FMA_IMPLS}, not {impl!r}")
    cols = _fma_cols(EXP2_FMA_FRACTION if exp2_on_fma is None else exp2_on_fma)
    left, right = _normalize_window(causal, window)
    nvfp4_out = out_format == "nvfp4"
    resolved = resolve_path(path, arch, cols)
    if resolved == "decode":
        if nvfp4_out:
            raise ValueError("the decode path has no NVFP4 output; path='auto' takes another path for it")
        return fmha_decode.compile_decode(dtype, head_dim, left >= 0, right >= 0, bool(sink), arch, options)
    if resolved == "decode_wgmma":
        if nvfp4_out:
            raise ValueError("the decode_wgmma path has no NVFP4 output; path='auto' takes another path for it")
        if group is None:
            raise ValueError("path='decode_wgmma' needs group= (Hq / Hkv)")
        return fmha_sm90.compile_packed_split(dtype, head_dim, group, left >= 0, right >= 0, bool(sink), arch, options, knobs=knobs)
    if resolved == "wgmma":
        return fmha_sm90.compile_kernel(dtype, head_dim, left >= 0, right >= 0, bool(sink), arch, options, nvfp4_out, wide_keys, config, knobs)
    return fmha_sm80._compile(dtype, head_dim, left >= 0, right >= 0, bool(sink), arch, cols, impl if cols else "magic", options, nvfp4_out)


def resolve_path(path: str, arch: str, fma_cols: int = 0) -> str:
    """"mma_sync", "wgmma", "decode" or "decode_wgmma" for a requested path on an arch.

    auto: wgmma on sm_90a, unless the FMA exp2 is asked for (the shape-dependent choice of
    decode is made per call, in `cute_lowering.kernels.ops`, before this).
    """
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, not {path!r}")
    if path == "auto":
        return "wgmma" if arch in fmha_sm90.ARCHS and not fma_cols else "mma_sync"
    if path == "decode":
        if arch not in fmha_decode.ARCHS:
            raise ValueError(f"the decode path needs one of {fmha_decode.ARCHS}, not {arch!r}")
        if fma_cols:
            raise ValueError("exp2_on_fma exists on the mma_sync path only")
    if path in ("wgmma", "decode_wgmma"):
        if arch not in fmha_sm90.ARCHS:
            raise ValueError(f"the {path} path needs {fmha_sm90.ARCHS}, not {arch!r}")
        if fma_cols:
            raise ValueError("exp2_on_fma exists on the mma_sync path only")
    return path
