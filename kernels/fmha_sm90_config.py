"""The Hopper FMHA's configuration as one value: `Config`, what a build of `_FmhaSm90` is made of.

Owns the fields (tile, ring depth, scheduling, the variants each knob of `kernels.fmha_sm90`
selects); `kernels.fmha_sm90.config_for` computes one per shape class from the knobs, and the
kernel reads nothing else. Imports nothing of this package.
"""

from __future__ import annotations

from typing import NamedTuple


# --- compile (no GPU needed) ------------------------------------------------------


class Config(NamedTuple):
    """The compile-time shape of the kernel: tile, ring depth, scheduling."""

    block_m: int  # query rows per CTA, 64 per consumer warpgroup
    block_n: int  # keys per K/V tile
    stages: int
    overlap: bool  # INTRA_WG_OVERLAP
    pingpong: bool  # PINGPONG
    max_ctas: int  # CTAs launched at most: the SM count with PERSISTENT, else unbounded (one per tile)
    fma_cols: int = 0  # EXP2_FMA: of a thread's BLOCK_N / 4 score columns per row, on the FMA units
    order: str = "stride"  # ORDER: which tile a persistent CTA takes in each round
    mask_loops: bool = False  # MASK_LOOPS
    section_bytes: int = 0  # SECTION_BYTES, with ORDER "dynamic"
    p_smem: bool = False  # P_SMEM
    late_rescale: bool = False  # LATE_RESCALE (with INTRA_WG_OVERLAP)
    interleaved: bool = False  # SOFTMAX_INTERLEAVED
    mask_relative: bool = False  # MASK_RELATIVE
    stmatrix: bool = False  # STMATRIX
    tma_store: bool = False  # TMA_STORE
    k_ahead: bool = False  # K_AHEAD
    v_wait_late: bool = False  # V_WAIT_LATE (with INTRA_WG_OVERLAP)
    cache_hints: bool = False  # CACHE_HINTS
    q_stages: int = 1  # Q_STAGES
    cluster: int = 1  # CLUSTER: CTAs that share each K/V tile by multicast
    nvfp4_offload: bool = False  # NVFP4_OFFLOAD (read only with the NVFP4 output)
    nvfp4_fallback: bool | str = False  # NVFP4_OFFLOAD_FALLBACK (with NVFP4_OFFLOAD and two Q buffers; or "always")
    o_in_v: bool | str = False  # O_IN_V (with TMA_STORE, the bf16/fp16 output only; or "last_v")
    rescale_threshold: float | None = None  # RESCALE_THRESHOLD
    trace: bool = False  # TRACE_CTA_TIMES
    tail_split: bool | str = False  # TAIL_SPLIT: False, or how the pieces and the combine launch ("plain"; PDL: TAIL_PIECES_TRIGGER's "start" or "last_load")
    p_convert_next: bool = False  # P_CONVERT_NEXT (with INTRA_WG_OVERLAP, P in registers)
    o_direct: bool = False  # O_DIRECT (the bf16/fp16 output only)
    o_in_q: bool = False  # O_IN_Q (with TMA_STORE, the bf16/fp16 output only; one Q buffer, a stage a consumer warpgroup)
    inf_guard_unmasked: bool = True  # UNMASKED_INF_GUARD
