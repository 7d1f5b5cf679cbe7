"""FMHA forward for Hopper (sm_90a): warpgroup MMA (wgmma), TMA loads, a producer warp.

Same API, semantics and masks as `cute_lowering.kernels.fmha` (read its docstring: bottom-right aligned
causal/window limits, per-head sink logit, GQA, LSE, rows that see nothing give out = 0
and LSE = -inf); `cute_lowering.kernels.fmha.attention` picks this path on sm_90a.

This file owns the planning: `config_for` (a `Knobs` value, `fmha_sm90_knobs`, -> one `Config`
per shape class), the host-side plans (`plan_launch`: a call shape's `LaunchPlan` of tail
splits and scratch; `choose_splits`, `split_combine_pdl` for the packed split-KV kernel) and
the compile functions (`compile_kernel`, `compile_packed_split`). Each takes `knobs=`
(default `DEFAULT_KNOBS`); nothing here reads a knob from module state. The kernel is `fmha_sm90_kernel._FmhaSm90`
with its scheduling, softmax/masking and epilogues in `fmha_sm90_schedule`, `fmha_sm90_softmax`
and `fmha_sm90_epilogue`; the packed split-KV kernel is `fmha_sm90_split`; what they share,
`fmha_sm90_parts`; the configuration value, `fmha_sm90_config`.

The kernel: CTAs of a producer and two or three consumer warpgroups, each taking a
(64 x consumers query tile, q head, batch) in turn from a linear order (query tile fastest,
last-first: with a causal mask the longest rows start first and the short ones fill the tail;
CTAs that run together share a head's K/V in L2). One CTA per tile, or, where persistent says
so, one per SM walking the tiles (order: statically, every other round backwards, or drawing
the next tile from a global counter as FA3's causal scheduler does, by L2 sections of kv heads
whose longest tiles go first: section_bytes), its producer loading the next tile while the
consumers finish the current one (Config).

- Warpgroup 0 is the producer: one warp issues TMA loads (Q once, then K and V tiles of
  BLOCK_N keys from the last visited block to the first) into a ring of stages shared
  memory buffers, each completing on an mbarrier; a buffer is reused once both consumer
  warpgroups have released it. It gives most of its registers away (setmaxnreg).
- Warpgroups 1.. are consumers, 64 query rows each. Per key block:
  S = Q K^T by wgmma with both operands in shared memory (fp32 accumulators in registers),
  the K buffer released as soon as S is complete; the element mask only on blocks that
  cross a causal/window limit or the key tail; online softmax in registers (running row
  max and sum, O rescaled by exp2((m_old - m_new) * c), c = softmax_scale * log2(e)
  folded into one FFMA per score); P converted to bf16/fp16 in registers is the A operand
  of O += P V (wgmma "RS": the S accumulator layout of 16 columns is exactly the A
  fragment of one k16 step), V read transposed from shared memory by the descriptor.
  The P V of one block and the S of the next are issued together, and the softmax of that
  S runs while the P V wgmma does (intra_wg_overlap); with two consumers, one's softmax
  also overlaps the other's MMAs (in strict turns with pingpong).
- Key blocks outside the query tile's causal/window limits are never loaded nor computed
  (the loop bounds are those of `cute_lowering.kernels.fmha`). Rows past the keys' end come in as zeros
  from TMA (out of bounds), so no NaN * 0 reaches O.
- Epilogue per consumer: normalize O (sink in the denominator), LSE, O to bf16/fp16
  through the warpgroup's own rows of a shared-memory O buffer (apart from Q's, so the
  next tile's Q can load meanwhile), then 16-byte stores or one TMA store (tma_store). The
  NVFP4 output is quantized from those rows by the consumers (in the epilogue, or with
  nvfp4_defer once their next tile's first S wgmma is issued), or (nvfp4_offload) by two
  idle warps of the producer warpgroup to which the consumers hand the rows over.

The same kernel, packed (`_PackedSplitSm90`, `compile_packed_split`; fmha's path
"decode_wgmma" for short queries over long keys): a tile's rows are the GQA-packed rows of
one kv head's q heads, its key blocks one of several shares (split-KV), its O and LSE f32
partials that `cute_lowering.kernels.fmha_decode`'s combine kernel merges (`choose_splits` says when).

Compiles for sm_90a only (wgmma, setmaxnreg), inside `cute_lowering.prelowering()`, with no GPU
(fake pointers and sizes).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import NamedTuple

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_lowering
from cute_lowering.kernels import fmha_decode
from cute_lowering.kernels.attention_parts import fake_arguments
from cute_lowering.kernels.fmha_sm90_config import Config
from cute_lowering.kernels.fmha_sm90_kernel import _FmhaSm90
from cute_lowering.kernels.fmha_sm90_knobs import DEFAULT_KNOBS, Knobs
from cute_lowering.kernels.fmha_sm90_parts import F32, I32, TAIL_COMBINE_WARPS  # noqa: F401 (by their names here as before)
from cute_lowering.kernels.fmha_sm90_softmax import SCORE_COLUMNS_CHECK_ALL  # noqa: F401
from cute_lowering.kernels.fmha_sm90_split import _PackedSplitSm90

HEAD_DIMS = (64, 128)
SHARED_MEMORY_BYTES = 227 * 1024  # sm_90a: the most dynamic shared memory one CTA may take
DTYPES = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}
ARCHS = ("sm_90a",)


def wide_keys(head_dim: int, sk: int, knobs: Knobs = DEFAULT_KNOBS) -> bool:
    """Whether a call with `sk` keys takes `knobs.wide_key_tiles`' tile (where it has one for the head dim)."""
    return sk >= knobs.wide_keys_min and head_dim in knobs.wide_key_tiles


def config_for(
    head_dim: int, has_left: bool, has_right: bool, nvfp4_out: bool = False, wide_keys: bool = False, knobs: Knobs = DEFAULT_KNOBS
) -> Config:
    """The build of one shape class from `knobs` (`tiles`, `nvfp4_tiles` and `nvfp4_pingpong` for the NVFP4 output,
    `wide_key_tiles` for a call with many keys: `wide_keys`, or `tile_override` when set); a
    sweep's variant is another `Knobs` value (`bench/fmha_sass.py`). Refuses values that do not
    build (a knob out of range, a tile that does not fit shared memory)."""
    k = knobs
    masked = has_left or has_right
    wide = k.wide_key_tiles.get(head_dim) if wide_keys and not masked and not nvfp4_out else None
    block_m, block_n = k.tile_override or wide or (nvfp4_out and k.nvfp4_tiles.get((head_dim, masked))) or k.tiles[(head_dim, masked)]
    if block_m % 64 or not 64 <= block_m <= 192 or block_n % 16 or not 16 <= block_n <= 256:
        raise ValueError(f"tile ({block_m}, {block_n}): BLOCK_M must be 64, 128 or 192, BLOCK_N a multiple of 16 up to 256")
    pingpong = k.at("pingpong", head_dim, masked)
    if wide is not None and k.wide_key_pingpong is not None:
        pingpong = bool(k.wide_key_pingpong)
    if nvfp4_out and (head_dim, masked) in k.nvfp4_pingpong:
        pingpong = bool(k.nvfp4_pingpong[(head_dim, masked)])
    if pingpong and block_m < 128:
        raise ValueError("pingpong takes turns between two or three consumer warpgroups (BLOCK_M = 128 or 192)")
    persistent = k.at("persistent", head_dim, masked)
    if persistent not in (True, False, "auto"):
        raise ValueError(f"persistent must be True, False, 'auto' or a mapping of them like tiles, not {k.persistent!r}")
    persistent = persistent is True or (persistent == "auto" and head_dim == 64 and not masked)
    fma_cols = round(k.exp2_fma.get((head_dim, masked), 0.0) * block_n / 4)
    order = k.at("order", head_dim, masked)
    if order not in ("stride", "snake", "dynamic"):
        raise ValueError(f"order must be 'stride', 'snake', 'dynamic' or a mapping of them like tiles, not {k.order!r}")
    stages = ring_stages(head_dim, masked, k)
    q_stages = k.at("q_stages", head_dim, masked)
    if q_stages not in (1, 2):
        raise ValueError(f"q_stages must be 1 or 2 (or a mapping of them like tiles), not {k.q_stages!r}")
    # the wide build: O from registers straight to global memory (no room for an O buffer beside its K/V stages)
    o_direct = wide is not None and not nvfp4_out
    tma_store = bool(k.at("tma_store", head_dim, masked)) and not o_direct

    def smem_bytes(q_buffers: int) -> int:
        """Barriers (the first kilobyte), Q's buffers, O's (unless o_direct), the K and V rings."""
        o_buffers = 0 if o_direct else 1
        return 1024 + (q_buffers + o_buffers) * block_m * head_dim * 2 + 2 * stages * block_n * head_dim * 2

    rescale_threshold = k.at("rescale_threshold", head_dim, masked)
    if rescale_threshold is not None and not (isinstance(rescale_threshold, (int, float)) and 0 <= rescale_threshold <= 16):
        raise ValueError(f"rescale_threshold must be None or a number of log2 units in [0, 16] (or a mapping like tiles), not {k.rescale_threshold!r}")
    rescale_threshold = None if rescale_threshold is None else float(rescale_threshold)
    cluster = k.at("cluster", head_dim, masked)
    if cluster not in (1, 2):
        raise ValueError(f"cluster must be 1 or 2 (or a mapping of them like tiles), not {k.cluster!r}")
    cluster = 1 if masked else cluster  # (a diagonal: the cluster's tiles would visit different key blocks)
    offload = bool(k.at("nvfp4_offload", head_dim, masked))
    if cluster > 1 and persistent and order == "dynamic":
        raise ValueError("cluster > 1 takes a static order ('stride' or 'snake'): the dynamic order draws a tile per CTA, not per cluster")
    tail_split = bool(k.at("tail_split", head_dim, masked)) and not masked and persistent and order != "dynamic"
    tail_split = tail_split and cluster == 1 and not nvfp4_out  # (and no sink: _FmhaSm90)
    if k.tail_pieces_trigger not in ("start", "last_load"):
        raise ValueError(f"tail_pieces_trigger must be 'start' or 'last_load', not {k.tail_pieces_trigger!r}")
    tail_split = (k.tail_pieces_trigger if k.tail_combine_pdl else "plain") if tail_split else False  # (how the pieces and the combine launch)
    if q_stages == 2 and smem_bytes(2) > SHARED_MEMORY_BYTES:
        q_stages = 1  # a second Q buffer only where it fits (not beside the wider tiles: 128 x 160 at D=128)
    smem = smem_bytes(q_stages)
    if smem > SHARED_MEMORY_BYTES:
        raise ValueError(
            f"tile ({block_m}, {block_n}) at D={head_dim} with {stages} K/V stages needs {smem} bytes of shared memory a CTA "
            f"(one Q buffer); sm_90a gives at most {SHARED_MEMORY_BYTES}"
        )
    return Config(
        block_m=block_m,
        block_n=block_n,
        stages=stages,
        overlap=k.intra_wg_overlap,
        pingpong=pingpong,
        max_ctas=sm_count() // cluster * cluster if persistent else 2**31 - 1,
        fma_cols=fma_cols,
        order=order,
        mask_loops=mask_loops(head_dim, masked, wide is not None, knobs=k),
        section_bytes=k.section_bytes if order == "dynamic" else 0,
        late_rescale=k.intra_wg_overlap and bool(k.at("late_rescale", head_dim, masked)),
        interleaved=bool(k.at("softmax_interleaved", head_dim, masked)),
        mask_relative=bool(k.at("mask_relative", head_dim, masked)),
        stmatrix=bool(k.at("stmatrix", head_dim, masked)),
        tma_store=tma_store,
        k_ahead=bool(k.at("k_ahead", head_dim, masked)),
        v_wait_late=k.intra_wg_overlap and bool(k.at("v_wait_late", head_dim, masked)),
        q_stages=q_stages,
        cluster=cluster,
        nvfp4_offload=offload,
        nvfp4_defer=bool(nvfp4_out and not offload and k.at("nvfp4_defer", head_dim, masked)),
        rescale_threshold=rescale_threshold,
        tail_split=tail_split,
        o_direct=o_direct,
        inf_guard_unmasked=bool(k.at("unmasked_inf_guard", head_dim, masked)),
    )


class LaunchPlan(NamedTuple):
    """One call shape's launch of the wgmma kernel, computed once (`plan_launch`) and handed to
    the launch (`cute_lowering.kernels.ops` keeps one a call shape): the build, the tail split's pieces and
    the scratch that they and the dynamic scheduler need."""

    config: Config  # the build (config_for of the shape class)
    splits: int  # the tail split's pieces a tail tile (`tail_splits`; 1: the main kernel alone)
    counter_words: int  # zeroed int32 counters: the dynamic scheduler's two, else none
    o_words: int  # f32 words of the tail pieces' partial O (`tail_scratch_words`)
    lse_words: int  # f32 words of their LSE


def plan_launch(config: Config, b: int, sq: int, sk: int, hq: int, head_dim: int, has_sink: bool, knobs: Knobs = DEFAULT_KNOBS) -> LaunchPlan:
    """The LaunchPlan of `config` (from the same `knobs`) for one call shape."""
    splits = tail_splits(config, b, sq, sk, hq, has_sink, knobs) if config.tail_split else 1
    counters = 2 if config.order == "dynamic" and config.max_ctas < 2**31 - 1 else 0
    return LaunchPlan(config, splits, counters, *tail_scratch_words(config, b, sq, hq, head_dim, splits))


def tail_splits(config: Config, b: int, sq: int, sk: int, hq: int, has_sink: bool, knobs: Knobs = DEFAULT_KNOBS) -> int:
    """tail_split: the pieces each tile of a launch's last partial round is cut into (1: none).

    The round's R tiles of `blocks` key blocks take `blocks` block-times while ctas - R SMs idle;
    cut into s pieces they take ceil(R s / ctas) rounds of blocks / s + tail_piece_cost, plus
    tail_traffic_cost a piece for its partials and tail_launch_cost once. The smallest power of two s (at most
    tail_split_max and `blocks`) of the fewest block-times, if that is at least 5% fewer than
    the plain round's: a long tile and a short last round pay (1x32x16384x128: 4 tiles left on
    132 SMs), a half-full round of short tiles does not (the partials cost what the split saves).
    The kernel's own tile count; with tail_split off, 1 at once. (~30 us of Python: `cute_lowering.kernels.ops`
    asks once per call shape.)"""
    if not config.tail_split or has_sink:
        return 1
    ctas, tail = _tail_tiles(config, b, sq, hq)
    blocks = -(-sk // config.block_n)
    if tail == 0 or blocks < 2:
        return 1
    k = knobs
    cost = lambda s: -(-tail * s // ctas) * (blocks / s + k.tail_piece_cost) + (k.tail_traffic_cost * tail * s + k.tail_launch_cost if s > 1 else 0.0)  # noqa: E731
    powers = [1 << n for n in range(k.tail_split_max.bit_length()) if 1 << n <= min(k.tail_split_max, blocks)]  # (the kernel shifts)
    best = min(powers, key=lambda s: (cost(s), s))
    return best if cost(best) <= 0.95 * cost(1) else 1


def tail_scratch_words(config: Config, b: int, sq: int, hq: int, head_dim: int, splits: int) -> tuple[int, int]:
    """(f32 words of the tail pieces' partial O, of their LSE) for `splits` pieces a tail tile."""
    if splits <= 1:
        return 0, 0
    rows = splits * _tail_tiles(config, b, sq, hq)[1] * config.block_m
    return rows * head_dim, rows


def _tail_tiles(config: Config, b: int, sq: int, hq: int) -> tuple[int, int]:
    """(CTAs, tiles of the last partial round) of a persistent launch, as _FmhaSm90.__call__ counts them."""
    n_tiles = -(-sq // config.block_m) * hq * b
    ctas = min(n_tiles, config.max_ctas)
    return ctas, n_tiles % ctas if ctas else 0


def ring_stages(head_dim: int, masked: bool, knobs: Knobs = DEFAULT_KNOBS) -> int:
    """`knobs.stages` for one configuration."""
    return knobs.at("stages", head_dim, masked)


def mask_loops(head_dim: int, masked: bool, wide: bool = False, packed: bool = False, knobs: Knobs = DEFAULT_KNOBS) -> bool:
    """`knobs.mask_loops` for one configuration (a bool, or a mapping by (head dim, crosses a
    diagonal); absent = False). Without a diagonal never for the wide build (`wide`:
    wide_key_tiles' tile, 6% slower with it); the packed split-KV kernel (`packed`) there
    follows split_mask_loops."""
    if not masked and wide:
        return False
    if not masked and packed:
        return bool(knobs.split_mask_loops)
    value = knobs.mask_loops
    return bool(value.get((head_dim, masked), False)) if isinstance(value, Mapping) else bool(value)


@functools.cache
def sm_count() -> int:
    """Multiprocessors of CUDA device 0 (132 on an H100/H200 SXM when there is no GPU to ask)."""
    try:
        (err,) = cuda.cuInit(0)
        if err == cuda.CUresult.CUDA_SUCCESS:
            err, dev = cuda.cuDeviceGet(0)
            if err == cuda.CUresult.CUDA_SUCCESS:
                err, n = cuda.cuDeviceGetAttribute(cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
                if err == cuda.CUresult.CUDA_SUCCESS and n > 0:
                    return int(n)
    except Exception:  # no driver here: compile-only
        pass
    return 132


def compile_kernel(
    dtype: str, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, arch: str = "sm_90a", options: str = "", nvfp4_out: bool = False,
    wide_keys: bool = False, config: Config | None = None, knobs: Knobs = DEFAULT_KNOBS,
):  # fmt: skip
    """The compiled kernel for one configuration (no GPU needed). `config`: the build's Config,
    as the caller's plan computed it once for the shape class (`cute_lowering.kernels.ops`), or another value
    for a sweep; None: `config_for` of `knobs` (`wide_keys`: the build for calls with many keys,
    `wide_keys()`)."""
    if arch not in ARCHS:
        raise ValueError(f"the wgmma path targets {ARCHS}, not {arch!r}")
    if config is None:
        config = config_for(head_dim, has_left, has_right, nvfp4_out, wide_keys, knobs)
    return _compile(dtype, head_dim, has_left, has_right, has_sink, arch, options, nvfp4_out, config)


@functools.cache
def _compile(dtype: str, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, arch: str, options: str, nvfp4_out: bool, config: Config):
    dt = DTYPES[dtype]
    kernel = _FmhaSm90(dt, head_dim, has_left, has_right, has_sink, nvfp4_out, config)
    with cute_lowering.prelowering(cute_lowering.auto_pipeline(arch)):
        return cute.compile(kernel, *fake_arguments(dt), options=f"--gpu-arch {arch} {options}".strip())


def choose_splits(
    b: int, sq: int, sk: int, hq: int, hkv: int, left: int, right: int, sms: int, forced: bool = False, head_dim: int = 128,
    knobs: Knobs = DEFAULT_KNOBS,
) -> int:  # fmt: skip
    """Key ranges per tile for the packed split-KV kernel (>= 1), or 0 where it should not be taken.

    Plain integer arithmetic (called once per call shape). `forced`: asked for by name, so
    any shape whose G packs gets a split count. `head_dim` picks the tile (`knobs.split_tiles`);
    the thresholds are the split_* knobs.
    """
    k = knobs
    group = hq // hkv
    if not packed_groups(group):
        return 0
    rows = group * sq
    keys = sk if left < 0 else min(sk, left + sq + (right if right > 0 else 0))
    block_m, block_n = k.split_tiles[head_dim]
    tiles = -(-rows // block_m) * b * hkv
    splits = max(1, min(sms * k.split_ctas_per_sm // tiles, -(-keys // block_n) // k.split_min_blocks, k.split_max))
    if forced:
        return splits
    waste = 1 - sq / (-(-sq // block_m) * block_m)  # of the plain kernel's query tiles
    if rows <= 16 or keys < k.split_min_keys or (splits < 2 and waste < k.split_min_waste):
        return 0
    return splits


def packed_groups(group: int) -> bool:
    """Whether G = Hq / Hkv can be packed: a divisor of BLOCK_M (the TMA box of Q is (G, BLOCK_M / G))."""
    return group > 1 and 128 % group == 0


def split_combine_pdl(splits: int, knobs: Knobs = DEFAULT_KNOBS) -> bool:
    """Whether a packed split-KV call of `splits` splits launches its combine as a PDL."""
    return bool(fmha_decode.COMBINE_PDL) or 0 < splits <= knobs.split_combine_pdl_max


def compile_packed_split(
    dtype: str, head_dim: int, group: int, has_left: bool, has_right: bool, has_sink: bool, arch: str = "sm_90a", options: str = "",
    combine_pdl: bool | None = None, knobs: Knobs = DEFAULT_KNOBS,
):  # fmt: skip
    """The compiled packed split-KV host function (_PackedSplitSm90) for one configuration (no GPU
    needed), its build from `knobs` (`packed_split_config`). combine_pdl: the combine as a
    programmatic dependent launch (None: fmha_decode.COMBINE_PDL; only on fmha_decode.PDL_ARCHS)."""
    if arch not in ARCHS:
        raise ValueError(f"the wgmma path targets {ARCHS}, not {arch!r}")
    if not packed_groups(group):
        raise ValueError(f"packed split-KV takes Hq / Hkv in 2, 4, ..., 128, not {group}")
    config = packed_split_config(head_dim, has_left or has_right, knobs)
    if fmha_decode.PDL_TRIGGER not in fmha_decode.PDL_TRIGGERS:
        raise ValueError(f"fmha_decode.PDL_TRIGGER must be one of {fmha_decode.PDL_TRIGGERS}, not {fmha_decode.PDL_TRIGGER!r}")
    # False (a plain launch of the combine), or where its CTAs allow it (PDL_TRIGGER)
    combine_pdl = fmha_decode.COMBINE_PDL if combine_pdl is None else combine_pdl
    pdl = fmha_decode.PDL_TRIGGER if combine_pdl and arch in fmha_decode.PDL_ARCHS else False
    return _compile_packed_split(dtype, head_dim, group, has_left, has_right, has_sink, arch, options, config, pdl)


def packed_split_config(head_dim: int, masked: bool, knobs: Knobs = DEFAULT_KNOBS) -> Config:
    """The packed split-KV kernel's build from `knobs` (split_tiles, split_stages, split_pingpong,
    split_rescale_threshold; the overlap, K_AHEAD and the mask loops as the main kernel's knobs
    say). One CTA a tile, stride order: the split count fills the SMs."""
    block_m, block_n = knobs.split_tiles[head_dim]
    return Config(
        block_m=block_m,
        block_n=block_n,
        stages=knobs.split_stages,
        overlap=knobs.intra_wg_overlap,
        pingpong=bool(knobs.split_pingpong),
        mask_loops=mask_loops(head_dim, masked, packed=True, knobs=knobs),
        k_ahead=bool(knobs.at("k_ahead", head_dim, masked)),
        rescale_threshold=knobs.split_rescale_threshold,
    )


@functools.cache
def _compile_packed_split(
    dtype: str, head_dim: int, group: int, has_left: bool, has_right: bool, has_sink: bool, arch: str, options: str, config: Config,
    pdl: bool | str,
):  # fmt: skip
    dt = DTYPES[dtype]
    kernel = _PackedSplitSm90(dt, head_dim, has_left, has_right, has_sink, False, config, group)
    kernel.pdl = pdl
    with cute_lowering.prelowering(cute_lowering.auto_pipeline(arch)):
        return cute.compile(kernel, *fmha_decode.fake_arguments(dt), options=f"--gpu-arch {arch} {options}".strip())
