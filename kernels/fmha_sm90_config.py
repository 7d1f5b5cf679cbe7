"""The Hopper FMHA's configuration as one value: `Config`, what a build of `_FmhaSm90` is made of.

Owns the fields (tile, ring depth, scheduling, the variants each knob of
`cute_lowering.kernels.fmha_sm90_knobs.Knobs` selects, named after it in the comments); `cute_lowering.kernels.fmha_sm90.config_for`
computes one per shape class from a `Knobs` value, and the kernel reads nothing else. Imports nothing of this package.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
    """One build of the Hopper FMHA kernel: tile, ring depth, scheduling and the variants the
    knobs (`cute_lowering.kernels.fmha_sm90_knobs.Knobs`) select for a shape class (`config_for`; the packed split-KV
    kernel's in `compile_packed_split`). Built by keyword; the defaults are the plain kernel
    (one CTA a tile, stride order, every variant off). Hashable: it keys the compile caches
    and the launchers; a sweep builds another value (`dataclasses.replace`) and passes it down."""

    block_m: int  # query rows per CTA, 64 per consumer warpgroup (64, 128 or 192)
    block_n: int  # keys per K/V tile: wider tiles amortize the softmax, cost shared memory
    stages: int = 2  # K/V tile pairs in flight in the ring: 2 hide the loads; 3 did not pay
    overlap: bool = True  # intra_wg_overlap: a block's S and the last block's P V issued together (FA3)
    pingpong: bool = False  # pingpong: consumer warpgroups take turns issuing wgmmas (FA3's scheduler barrier)
    max_ctas: int = 2**31 - 1  # CTAs at most: the SM count when persistent, else unbounded (one a tile)
    fma_cols: int = 0  # exp2_fma: a thread's score columns a row whose exp2 runs on the FMA units
    order: str = "stride"  # order: which tile a persistent CTA takes each round ("stride", "snake", "dynamic")
    mask_loops: bool = False  # mask_loops: the key loop compiled twice, the element mask only where a block may need it
    section_bytes: int = 0  # section_bytes: the dynamic order's L2 section (K/V bytes of the kv heads drawn together)
    late_rescale: bool = False  # late_rescale: O's rescale after the P V wgmma completes, not beside the S wgmma
    interleaved: bool = False  # softmax_interleaved: the softmax's row steps interleaved (ILP for short tiles)
    mask_relative: bool = False  # mask_relative: mask limits as offsets from the block, fewer live registers
    stmatrix: bool = False  # stmatrix: O to shared memory by stmatrix (the 16-byte r2s copy otherwise)
    tma_store: bool = False  # tma_store: O from shared memory to global memory by one TMA store a warpgroup
    k_ahead: bool = False  # k_ahead: the producer loads a tile's first K before its Q, then K(n) before V(n + 1)
    v_wait_late: bool = False  # v_wait_late: the P V's wait for V after the S wgmma's issue
    q_stages: int = 1  # q_stages: Q buffers, 2 let the next tile's Q load while this one computes
    cluster: int = 1  # cluster: CTAs that share each K/V tile by TMA multicast
    nvfp4_offload: bool = False  # nvfp4_offload: two idle producer warps quantize the NVFP4 output
    nvfp4_defer: bool = False  # nvfp4_defer: the consumers quantize a tile's NVFP4 output during the next tile's first S
    rescale_threshold: float | None = None  # rescale_threshold: FA4's conditional rescale (log2 units); None: every block
    tail_split: bool | str = False  # tail_split: False, or how the pieces and the combine launch ("plain", "start", "last_load")
    o_direct: bool = False  # O from registers to global memory, no O buffer (the wide-key build: no room for one)
    inf_guard_unmasked: bool = True  # unmasked_inf_guard: the -inf row-max guard also in unmasked blocks

    @property
    def tile(self) -> tuple[int, int]:
        """(BLOCK_M, BLOCK_N): the query rows and keys of a tile."""
        return self.block_m, self.block_n
