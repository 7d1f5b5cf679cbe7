"""Our FMHA forward against FlashAttention-3, FlashAttention-4 and cuDNN, in one run, one timer (H200).

    python bench/fmha_peers.py --out DIR [--results bench/results.json] [--variants NAME,...] [--skip-peers]
                               [--steps issue,decode,nvfp4,accuracy,decode_accuracy]

The timer is `bench/cuda_timing.gpu_ms` (median CUDA-event time per call, the L2 flushed
before every call and the host's launch cost hidden behind a GPU spin, so a peer with a slow
Python wrapper is not timed waiting for its own launch; host cost is bench/host_cost.py's),
the same for every implementation, on the same inputs, in the same process:
  ours   `cute_lowering.kernels.fmha.attention` (path "auto": the wgmma kernel on the H200)
  fa3    FlashAttention-3's Hopper forward (the `fa3-fwd` wheel: `fa3_fwd_interface.flash_attn_func`)
  fa4    FlashAttention-4 4.0.0b36 (`flash_attn.cute.flash_attn_func`, its sm90 path)
  cudnn  torch SDPA restricted to the cuDNN backend ([B, H, S, D] views, GQA by enable_gqa)
A peer that cannot run a case (cuDNN: windows, sinks; FA3: sinks) is left out of that row.

Cases: the issue's table (ISSUE_CASES), decode / short-query shapes (DECODE_CASES: GQA 8:1;
FA3 with its split-KV heuristic, num_splits=0; FA4 has no split-KV on sm_90; ours is path "auto",
which takes `cute_lowering.kernels.fmha_decode` (split-KV) where its `choose_splits` says so, and these rows
also time our wgmma, decode and decode_wgmma paths as `ours_wgmma`, `ours_decode`,
`ours_decode_wgmma`, not peers), and the
NVFP4 epilogue (NVFP4_CASES: the fused `out_format="nvfp4"` call against the bf16-output
call and against bf16 attention + `nvfp4.quantize`, with one global scale; the codes and
scales must be bit-identical). Accuracy (ACCURACY_CASES; DECODE_ACCURACY_CASES with FA3's split-KV
on): max |out - ref| against the float64 reference for ours, FA3 and FA4 on the same inputs;
ours must not exceed the larger of theirs.

TFLOP/s = 4 * B * Hq * D * (unmasked (query, key) pairs). `--variants` also times our kernel
with other knob settings (VARIANTS: `cute_lowering.kernels.fmha_sm90_knobs.Knobs` values, passed down by
`fmha.attention_with_knobs`) on VARIANT_CASES. (An older kernel is
timed from a checkout of its commit: the variant that swapped a kernel file from git history
into the launch path left with it, 2026-12-04.)

Writes DIR/fmha_peers.json (every row), DIR/fmha_peers.md (the tables) and, with --results,
read-modify-writes only the `fmha_*` keys of that results file (entries `fmha_<case>` with
ours, peer = the fastest peer in this run, ratio = peer time / our time, and
`fmha_nvfp4_epilogue_<case>`); `--steps` runs only some of the peer steps, and
--results then replaces only the entries of the rows measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import math
import pathlib
import sys
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

# (B, Hq, Hkv, Sq, Sk, D, causal, window, sink)
ISSUE_CASES = [
    (4, 16, 16, 4096, 4096, 128, False, (-1, -1), False),
    (4, 16, 16, 4096, 4096, 128, True, (-1, -1), False),
    (2, 16, 16, 8192, 8192, 128, False, (-1, -1), False),
    (2, 16, 16, 8192, 8192, 128, True, (-1, -1), False),
    (4, 16, 16, 4096, 4096, 64, False, (-1, -1), False),
    (4, 16, 16, 4096, 4096, 64, True, (-1, -1), False),
    (1, 32, 32, 16384, 16384, 128, False, (-1, -1), False),
    (1, 32, 32, 16384, 16384, 128, True, (-1, -1), False),
    (8, 32, 32, 1024, 1024, 128, False, (-1, -1), False),
    (16, 8, 8, 2048, 2048, 64, True, (-1, -1), False),
    (2, 16, 16, 8192, 8192, 128, True, (1024, 0), False),
    (2, 16, 16, 8192, 8192, 128, True, (-1, -1), True),
]
DECODE_CASES = [
    (b, 32, 4, sq, sk, 128, False, (-1, -1), False)
    for sq, sk, b in [(1, 4096, 8), (1, 32768, 2), (16, 4096, 8), (16, 32768, 2), (64, 8192, 4), (128, 4096, 8), (128, 32768, 2)]
]
# (B, Hq, S, D, causal): the issue's NVFP4 shapes
NVFP4_CASES = [(4, 16, 4096, 128, True), (2, 16, 8192, 128, False), (8, 16, 2048, 64, True)]
ACCURACY_CASES = [
    (1, 8, 8, 2048, 2048, 128, False, (-1, -1), False),
    (1, 8, 2, 2048, 2048, 128, True, (-1, -1), False),
    (1, 8, 8, 2048, 2048, 64, True, (-1, -1), False),
    (1, 8, 8, 1000, 3000, 64, False, (-1, -1), False),
]
# decode shapes (path "auto" takes the decode kernel): ragged Sk, GQA 8:1 and 1:1, masks, sink
DECODE_ACCURACY_CASES = [
    (2, 32, 4, 1, 4100, 128, False, (-1, -1), False),
    (1, 32, 4, 16, 8191, 128, True, (-1, -1), False),
    (1, 32, 4, 16, 8191, 64, True, (1000, -1), False),
    (2, 8, 8, 1, 16384, 128, False, (-1, -1), True),
    (2, 32, 4, 128, 8191, 128, True, (-1, -1), False),
    (2, 32, 4, 64, 8192, 64, False, (-1, -1), False),
]
VARIANT_CASES = [ISSUE_CASES[i] for i in (0, 1, 4, 5, 8, 9)]
_T128 = {(64, False): (128, 128), (64, True): (128, 128), (128, False): (128, 128), (128, True): (128, 128)}


def _cand(d64c=(128, 128), **knobs):
    """Every configuration persistent; D=64 192 x 128 (causal: d64c) with PINGPONG."""
    pp = {(64, False): True, (64, True): d64c[0] == 192, (128, False): False, (128, True): False}
    return {"tiles": {**_T128, (64, False): (192, 128), (64, True): d64c}, "persistent": True, "pingpong": pp, **knobs}


# name: {knob: value}: fields of cute_lowering.kernels.fmha_sm90_knobs.Knobs, or "fmha_decode.NAME" for a knob of that module
# (a name may carry a suffix "#2" to time the same variant again later in the run)
_D64_ONLY = {(64, False): True, (64, True): True, (128, False): False, (128, True): False}
_D64_UNMASKED = {(64, False): True, (64, True): False, (128, False): False, (128, True): False}
_D128_UNMASKED = {(64, False): False, (64, True): False, (128, False): True, (128, True): False}
_PP128 = {(64, False): True, (64, True): True, (128, False): True, (128, True): False}  # PINGPONG at D=128 unmasked too
_T_NOW = {(64, False): (192, 128), (64, True): (192, 128), (128, False): (128, 128), (128, True): (128, 128)}  # TILES since session 8
_DYN_DIAG = {(64, False): "snake", (64, True): "dynamic", (128, False): "snake", (128, True): "dynamic"}
_D64C_192 = {"mask_relative": True, "tiles": {**_T128, (64, False): (192, 128), (64, True): (192, 128)},
             "softmax_interleaved": {(64, False): True, (64, True): False, (128, False): False, (128, True): False}}
VARIANTS = {
    "now": {},
    "head_774a43d": {"tiles": _T128, "persistent": "auto", "pingpong": False, "order": "stride"},  # the knobs' values at 774a43d
    "one_cta_per_tile": {"persistent": False},
    "persistent_all": {"persistent": True},
    "d64_192x128": {"tiles": {(64, False): (192, 128), (64, True): (192, 128), (128, False): (128, 128), (128, True): (128, 128)}},
    "d64_192x96": {"tiles": {(64, False): (192, 96), (64, True): (192, 96), (128, False): (128, 128), (128, True): (128, 128)}},
    "d128_128x176": {"tiles": {(64, False): (128, 128), (64, True): (128, 128), (128, False): (128, 176), (128, True): (128, 128)}},
    "d128_128x144": {"tiles": {(64, False): (128, 128), (64, True): (128, 128), (128, False): (128, 144), (128, True): (128, 128)}},
    "pingpong": {"pingpong": True},
    "one_key_loop": {"mask_loops": False},  # the causal key loop not split by mask (before session 5)
    "two_key_loops": {"mask_loops": True},  # split for every head dim
    # the scheduler barrier for the causal configurations (no spills, ptxas 13.0)
    "d64c_pp": {"pingpong": {(64, False): True, (64, True): True, (128, False): False, (128, True): False}},
    "d128c_pp": {"pingpong": {(64, False): True, (64, True): False, (128, False): False, (128, True): True}},
    # issue 14, prefill (h12): 192 x 128 at D=64 now fits 160 registers when persistent (ptxas:
    # 8 bytes of spills, 84 causal; one CTA per tile 240 / 644), so it is timed persistent
    "d64_192": {"tiles": {**_T128, (64, False): (192, 128), (64, True): (192, 128)},
                "persistent": {(64, False): True, (64, True): True, (128, False): False, (128, True): False}},
    "d64_192_pp": {"tiles": {**_T128, (64, False): (192, 128), (64, True): (192, 128)}, "pingpong": True,
                   "persistent": {(64, False): True, (64, True): True, (128, False): False, (128, True): False}},
    "d64_192_fma25": {"tiles": {**_T128, (64, False): (192, 128), (64, True): (192, 128)},
                      "persistent": {(64, False): True, (64, True): True, (128, False): False, (128, True): False},
                      "exp2_fma": {(64, False): 0.25, (64, True): 0.25}},
    # persistent D=128 (+10% on D=128 without a mask in run1), D=64 192 x 128 with the scheduler
    # barrier; ORDER "snake" to balance causal tiles among persistent CTAs
    "cand_snake": _cand(order="snake"),
    "cand_stride": _cand(order="stride"),
    "cand_snake_d64c192": _cand(order="snake", d64c=(192, 128)),
    "cand_snake_pp128": _cand(order="snake", pingpong=True),
    "cand_snake_fma": _cand(order="snake", exp2_fma={(64, False): 0.25, (64, True): 0.25}),
    # run3: what to do where a diagonal is crossed (D=128 and D=64 causal/window)
    "diag_one_cta": _cand(order="snake", persistent={(64, False): True, (64, True): False, (128, False): True, (128, True): False}),
    "diag_snake_pp": _cand(order="snake", pingpong={(64, False): True, (64, True): False, (128, False): False, (128, True): True}),
    # session 6: the persistent kernel with FA3's dynamic tile scheduler (an atomic counter)
    "dynamic_all": {"persistent": True, "order": "dynamic"},
    # session 20: no -inf guard on the row maximum where no mask touches the block (FA3's
    # Check_inf = false on its unmasked steps)
    "no_inf_guard": {"unmasked_inf_guard": False},
    # session 20: the dynamic order without a diagonal too (ncu, s20/n0: at 4x16x4096x128 our SMs
    # idle 6.7% of the main kernel's cycles against FA3's 4.3%, with the same 68-CTA last round)
    "dyn128": {"order": {(64, False): "snake", (64, True): "dynamic", (128, False): "dynamic", (128, True): "dynamic"}},
    "dynamic_diag": {"persistent": True, "order": _DYN_DIAG},
    "dyn_linear": {"section_bytes": 0},  # the dynamic order without L2 sections (query tile fastest, then head; the default before session 9)
    "dyn_sections_16m": {"section_bytes": 16 << 20},
    "dyn_sections_32m": {"section_bytes": 32 << 20},  # FA3's section size (hopper/tile_scheduler.hpp)
    # session 9: with sections (+4-8% on the causal rows, s9 sec), the loop knobs that were even before
    "sec_d128c_pp": {"section_bytes": 32 << 20, "pingpong": {(64, False): True, (64, True): False, (128, False): False, (128, True): True}},
    "sec_d64c_pp": {"section_bytes": 32 << 20, "pingpong": {(64, False): True, (64, True): True, (128, False): False, (128, True): False}},
    "sec_d128c_2loops": {"section_bytes": 32 << 20, "mask_loops": {(64, True): True, (128, True): True}},
    # FA3's load order (K(n) before V(n + 1), a tile's first K before its Q)
    "k_ahead": {"k_ahead": True},
    "v_wait_late": {"v_wait_late": True},
    "k_ahead_v_late": {"k_ahead": True, "v_wait_late": True},
    "no_k_ahead": {"k_ahead": False},
    "q2": {"q_stages": 2},  # Q double-buffered: the next tile's Q loads while this one runs
    # session 9, with two Q buffers: D=128 without a mask, the TMA store of O and/or the scheduler barrier (s9/r2)
    "d128c_2loops_pp9": {"mask_loops": {(64, True): True, (128, True): True},
                         "pingpong": {(64, False): True, (64, True): True, (128, False): False, (128, True): True}},
    "tma128": {"tma_store": {(64, False): True, (64, True): True, (128, False): True, (128, True): False}},
    "pp128u": {"pingpong": {(64, False): True, (64, True): True, (128, False): True, (128, True): False}},
    "tma128_pp": {"tma_store": {(64, False): True, (64, True): True, (128, False): True, (128, True): False},
                  "pingpong": {(64, False): True, (64, True): True, (128, False): True, (128, True): False}},
    # D=64 causal on 192 x 128 tiles, one key loop (two spill 592 bytes)
    "dyn_d64c_192": {"tiles": {**_T128, (64, False): (192, 128), (64, True): (192, 128)}, "mask_loops": False},
    # a third K/V buffer where shared memory has room (D=64: 96 KB -> 128 KB at 128 x 128, 144 KB at 192 x 128)
    "d64_stages3": {"stages": {(64, False): 3, (64, True): 3, (128, False): 2, (128, True): 2}},
    "split_stages3": {"split_stages": 3},  # the packed split-KV kernel (decode) with a third K/V buffer
    "split_mask_loops": {"split_mask_loops": True},  # the packed split-KV kernel's loop without the element mask (no diagonal)
    "no_combine_pdl": {"fmha_decode.COMBINE_PDL": False},  # COMBINE_PDL off (the default since session 8)
    "plain_combine": {"fmha_decode.COMBINE_PDL": False, "split_combine_pdl_max": 0},  # every combine a plain launch (before session 11)
    "combine_pdl": {"fmha_decode.COMBINE_PDL": True},  # session 6-7's default
    # session 7: O rescaled after the softmax (FA3/FA4's place), outside PINGPONG's turn
    "late_rescale": {"late_rescale": True},
    "late_rescale_d64": {"late_rescale": _D64_ONLY},
    "lr_cand": {"late_rescale": {(64, False): True, (64, True): True, (128, False): False, (128, True): True}},
    "lr_pp_all": {"late_rescale": True, "pingpong": True},  # FA3's scheduler barrier at D=128 too
    # the softmax's exp2s column by column across rows (FA4's SASS order), partial max/sum
    "sm_inter_d64": {"softmax_interleaved": _D64_ONLY},
    "sm_inter_diag": {"softmax_interleaved": {(64, False): True, (64, True): True, (128, False): False, (128, True): True}},
    # session 20: the exp2s in column order at D=128 again, now that MASK_LOOPS leaves the unmasked
    # 128 x 128 loop without its masked branch (run17 measured them with it: 60 bytes of spills)
    "sm_inter128": {"softmax_interleaved": {(64, False): True, (64, True): False, (128, False): True, (128, True): False}},
    "sm_inter128_causal": {"softmax_interleaved": {(64, False): True, (64, True): False, (128, False): False, (128, True): True}},
    "mask_relative": {"mask_relative": True},
    # O into shared memory by stmatrix (session 7)
    "stmatrix": {"stmatrix": True},
    # O out by one TMA store a warpgroup (FA3's epilogue; session 7, compiled only)
    "tma_store": {"tma_store": True},
    "tma_store_stm": {"tma_store": True, "stmatrix": True},
    # 128 x 160 at D=128 without a mask, P converted in pairs (no C7519 since session 7; FA3's
    # 128 x 176 does not fit our shared memory with O's own buffer)
    "d128_160": {"tiles": {**_T128, (64, False): (192, 128), (128, False): (128, 160)}},
    # the element mask against per-thread constants (session 7, after run18) lets FA3's D=64
    # causal tile compile: 192 x 128 with two key loops, P in registers, no spills (ptxas 13.0)
    "d64c_192": _D64C_192,
    "d64c_192_pp": {**_D64C_192, "pingpong": _D64_ONLY},
    # and two key loops at D=128 causal (before: C7512, every wgmma serialized)
    "d128c_2loops": {"mask_relative": True, "mask_loops": {(64, True): True, (128, True): True}},
    "d128c_2loops_pp": {"mask_relative": True, "mask_loops": {(64, True): True, (128, True): True},
                        "pingpong": {(64, False): True, (64, True): False, (128, False): False, (128, True): True}},
    # session 8: d64c_192 (+2-4.5%, s8 c2) with the epilogue's stmatrix (+3.7% at D=64, c3) and TMA store
    "d64c_192_stm": {**_D64C_192, "stmatrix": True},
    "d64c_192_tma_stm": {**_D64C_192, "stmatrix": True, "tma_store": True},
    # session 8, against its defaults (D=64 causal 192 x 128, MASK_RELATIVE with a diagonal):
    # two key loops at D=128 causal too (SOFTMAX_INTERLEAVED at D=64 causal's 192 x 128 is not a
    # variant: ptxas spills 880 bytes)
    "s8_d128c_2loops": {"mask_loops": {(64, True): True, (128, True): True}},
    "dyn_two_loops": {"persistent": True, "order": _DYN_DIAG, "mask_loops": True},
    "dyn_pp": {"persistent": True, "order": _DYN_DIAG, "pingpong": True},
    "dyn_d128c_pp": {"persistent": True, "order": _DYN_DIAG, "pingpong": {(64, False): True, (64, True): False, (128, False): False, (128, True): True}},
    # session 10: K/V shared by clusters of two CTAs by multicast TMA (FA3's ClusterM = 2 at D=128
    # without a mask); "cluster" takes it at D=64 without a mask too
    "cluster": {"cluster": 2, "tiles": _T_NOW},
    "cluster128": {"cluster": {(64, False): 1, (64, True): 1, (128, False): 2, (128, True): 1}, "tiles": _T_NOW},
    # the NVFP4 output quantized by two warps of the producer warpgroup (time with --variant-cases n0,n1,n2)
    "nvfp4_offload": {"nvfp4_offload": True},
    "no_nvfp4_offload": {"nvfp4_offload": False},  # the consumers quantize (before session 10)
    # the NVFP4 output without its own scheduler barrier at D=128 causal (the default before
    # session 25: the NVFP4 builds take pingpong's values)
    "no_nvfp4_pp128c": {"nvfp4_pingpong": {}},
    # the NVFP4 output quantized in the tile's epilogue, not at the next tile's first S (the
    # default before session 26: nvfp4_defer off at D=128 with a diagonal too)
    "no_nvfp4_defer": {"nvfp4_defer": False},
    # FA3's loop order at D=128 without a mask (its SASS, s11/p2/c0): O rescaled after the P V
    # completes, and the V wait between the S and the P V issues
    "late_rescale128": {"late_rescale": True},
    "fa3_loop128": {"late_rescale": True, "v_wait_late": {(64, False): True, (64, True): False, (128, False): True, (128, True): False}},
    # the packed split-KV (decode) kernel at FA3's 128 x 176 (it has no O buffer: 208 KB fits)
    "split176": {"split_tiles": {64: (128, 128), 128: (128, 176)}},
    # session 19: the split's wider tiles with the scheduler barrier (the unpacked 128 x 192 gains with it)
    "split192_pp": {"split_tiles": {64: (128, 128), 128: (128, 192)}, "split_pingpong": True},
    "split176_pp": {"split_tiles": {64: (128, 128), 128: (128, 176)}, "split_pingpong": True},
    "split_pp": {"split_pingpong": True},
    # the split-KV combine as a programmatic dependent launch, allowed at the split CTAs' start
    # (session 6's) or once each CTA's producer has issued its last load
    "pdl_start": {"fmha_decode.COMBINE_PDL": True, "fmha_decode.PDL_TRIGGER": "start"},
    "pdl_last_load": {"fmha_decode.COMBINE_PDL": True, "fmha_decode.PDL_TRIGGER": "last_load"},
    # the <= 16-row decode kernel (Sq = 1, GQA 8:1) with a deeper K/V ring: one CTA an SM, so
    # 3 -> 4 / 5 / 6 stages of 32 KB put 64 -> 96 / 128 / 160 KB of K/V in flight an SM
    "kw_stages4": {"fmha_decode.KEY_WARPS_STAGES": 4},
    "kw_stages5": {"fmha_decode.KEY_WARPS_STAGES": 5},
    "kw_stages6": {"fmha_decode.KEY_WARPS_STAGES": 6},
    # session 12: O's rescale skipped in a warp whose rows keep their maxima (FA4's conditional
    # rescale): 0.0 only where no maximum grew (bit-identical), 8.0 FA4's stale-maximum threshold;
    # with 128 x 160 / 176 (fewer blocks a tile, so fewer rescales to skip)
    "rescale0": {"rescale_threshold": 0.0},
    "rescale8": {"rescale_threshold": 8.0},
    "rescale8_d128": {"rescale_threshold": {(64, False): None, (64, True): None, (128, False): 8.0, (128, True): 8.0}},
    "rescale8_d64": {"rescale_threshold": {(64, False): 8.0, (64, True): None, (128, False): None, (128, True): None}},
    "rescale8_unmasked": {"rescale_threshold": {(64, False): 8.0, (64, True): None, (128, False): 8.0, (128, True): None}},
    # with the skip, FA3's places for O's rescale at D=128 without a mask: after the P V completes
    # (LATE_RESCALE lost 3% there in session 11), and the scheduler barrier between the consumers
    "rescale8_late128": {"rescale_threshold": 8.0, "late_rescale": True},
    "rescale8_pp128": {"rescale_threshold": 8.0, "pingpong": {(64, False): True, (64, True): True, (128, False): True, (128, True): False}},
    "rescale8_late_pp128": {"rescale_threshold": 8.0, "late_rescale": True,
                            "pingpong": {(64, False): True, (64, True): True, (128, False): True, (128, True): False}},
    # (against session 12's defaults: the skip and, at D=128, the scheduler barrier without a mask)
    "rescale8_c128": {"rescale_threshold": {(64, False): 8.0, (64, True): None, (128, False): 8.0, (128, True): 8.0}},
    "rescale8_pp_c128": {"rescale_threshold": {(64, False): 8.0, (64, True): None, (128, False): 8.0, (128, True): 8.0},
                         "pingpong": True},
    "rescale8_c64": {"rescale_threshold": {(64, False): 8.0, (64, True): 8.0, (128, False): 8.0, (128, True): None}},
    "s11_defaults": {"rescale_threshold": None, "pingpong": {(64, False): True, (64, True): True, (128, False): False, (128, True): False}},
    "rescale_none_pp128": {"rescale_threshold": None, "pingpong": {(64, False): True, (64, True): True, (128, False): True, (128, True): False}},
    "rescale0_pp128": {"rescale_threshold": {(64, False): 0.0, (64, True): None, (128, False): 0.0, (128, True): None},
                       "pingpong": {(64, False): True, (64, True): True, (128, False): True, (128, True): False}},
    "rescale0_d128_pp128": {"rescale_threshold": {(64, False): None, (64, True): None, (128, False): 0.0, (128, True): None},
                            "pingpong": {(64, False): True, (64, True): True, (128, False): True, (128, True): False}},
    # the last partial round's tiles split along the keys, then a combine (stream-K for the tail;
    # on by default since session 13, so "tail_split" is "now", and "no_tail_split" the plain schedule)
    "tail_split": {"tail_split": True},
    "no_tail_split": {"tail_split": False},
    # its plan without the partials' cost (more pieces: 4x16x4096x128 gets 8), to test that cost's estimate
    "tail_split_free": {"tail_split": True, "tail_traffic_cost": 0.0, "tail_launch_cost": 0.0},
    "tail_split_plain": {"tail_split": True, "tail_combine_pdl": False},  # the pieces and the combine as plain launches
    # session 13: the pieces in a launch of their own; with the model's fixed cost at 0 (8192 gets 4
    # pieces), and the pieces allowed only once every main CTA has issued its last load
    "tail_split_model0": {"tail_split": True, "tail_launch_cost": 0.0},
    "tail_split_last_load": {"tail_split": True, "tail_pieces_trigger": "last_load"},
    "split_rescale8": {"split_rescale_threshold": 8.0},  # the packed split-KV (decode) kernel with the skip
    "d128_160_persistent": {"tiles": {**_T128, (128, False): (128, 160)},
                            "persistent": {(64, False): True, (64, True): False, (128, False): True, (128, True): False}},
    # FA3's scheduler barrier at D=128 unmasked: the two consumer warpgroups take turns issuing
    "pp128": {"pingpong": _PP128},
    "wide192_pp": {"wide_key_tiles": {128: (128, 192)}, "wide_key_pingpong": True},
    "wide176_pp": {"wide_key_tiles": {128: (128, 176)}, "wide_key_pingpong": True},
    # the same from 4096 keys (4096 in blocks of 192: 3% of the last block wasted; FA3's 176 wastes 3% too)
    "wide192_pp_4096": {"wide_key_tiles": {128: (128, 192)}, "wide_key_pingpong": True, "wide_keys_min": 4096},
    "wide176_pp_4096": {"wide_key_tiles": {128: (128, 176)}, "wide_key_pingpong": True, "wide_keys_min": 4096},
    # the wider tile only for calls with at least WIDE_KEYS_MIN (8192) keys (O from registers: config_for)
    **{f"wide{n}": {"wide_key_tiles": {128: (128, n)}, "wide_key_pingpong": None} for n in (160, 176, 192)},
    "no_wide": {"wide_key_tiles": {}},  # (128 x 128 whatever the keys: the default)
    # session 19: FA3's whole order at D=128 (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp with
    # IntraWGOverlap, hdim 128: the scheduler barrier around the S and P V issues, V waited for
    # inside the turn, O rescaled after the P V is complete), never timed together: each alone
    # lost (pp128 s18, LATE_RESCALE and V_WAIT_LATE s11/w7, s9/ka2)
    "fa3_order128": {"pingpong": _PP128, "late_rescale": {(64, False): True, (64, True): True, (128, False): True, (128, True): True},
                     "v_wait_late": {(64, False): True, (64, True): False, (128, False): True, (128, True): False}},
    "fa3_order_causal": {"pingpong": {(64, False): True, (64, True): True, (128, False): False, (128, True): True},
                         "v_wait_late": {(64, False): True, (64, True): False, (128, False): False, (128, True): True}},
    # session 19: TMA_STORE with a diagonal again (session 9's -1% predates the two key loops at D=128
    # causal, which ptxas keeps apart only with it: 609 + 465 SASS instructions, one merged loop of 851 without)
    "tma_causal": {"tma_store": {(64, False): True, (64, True): True, (128, False): True, (128, True): True}},
    "tma_stm_causal": {"tma_store": {(64, False): True, (64, True): True, (128, False): True, (128, True): True},
                       "stmatrix": {(64, False): True, (64, True): True, (128, False): False, (128, True): True}},
    # MASK_LOOPS without a diagonal: the key loop compiled without the element mask (its blocks are full)
    "unmasked_loop128": {"mask_loops": {(64, True): True, (128, True): True, (128, False): True}},
    # the causal unmasked key loop keeps none of its exp2s before the P V wait (bench/fmha_sass.py;
    # FA3's 13 of 66): O's rescale before the P V issue instead (LATE_RESCALE off with a diagonal)
    "early_rescale_causal": {"late_rescale": {(64, False): True, (64, True): True, (128, False): False, (128, True): False}},
    "pp_causal": {"pingpong": {(64, False): True, (64, True): True, (128, False): False, (128, True): True}},
    "wide192_fa3": {"wide_key_tiles": {128: (128, 192)}, "wide_key_pingpong": True,
                    "late_rescale": {(64, False): True, (64, True): True, (128, False): True, (128, True): True},
                    "v_wait_late": {(64, False): True, (64, True): False, (128, False): True, (128, True): False}},
    "wide192_pp_late": {"wide_key_tiles": {128: (128, 192)}, "wide_key_pingpong": True,
                        "late_rescale": {(64, False): True, (64, True): True, (128, False): True, (128, True): True}},
}


def case_name(case) -> str:
    b, h, hkv, sq, sk, d, causal, window, sink = case
    s = f"s{sq}" if sq == sk else f"sq{sq}_sk{sk}"
    name = f"b{b}_h{h}" + (f"_hkv{hkv}" if hkv != h else "") + f"_{s}_d{d}"
    return name + ("_causal" if causal else "") + (f"_window{window[0]}" if window[0] >= 0 else "") + ("_sink" if sink else "")


def score_pairs(sq: int, sk: int, causal: bool, window) -> int:
    """Unmasked (query, key) pairs, bottom-right aligned as every implementation here does."""
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    total = 0
    for i in range(sq):
        lo = 0 if left < 0 else max(0, i + sk - sq - left)
        hi = sk - 1 if right < 0 else min(sk - 1, i + sk - sq + right)
        total += max(0, hi - lo + 1)
    return total


def make_inputs(torch, case, seed=0):
    b, h, hkv, sq, sk, d, causal, window, sink = case
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, sq, h, d, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(b, sk, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(b, sk, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
    sinks = torch.randn(h, device="cuda", generator=g).float() if sink else None
    return q, k, v, sinks


def implementations(torch, case, q, k, v, sinks, split: bool):
    """name -> a callable returning out [B, Sq, H, D], for every implementation that takes this case."""
    b, h, hkv, sq, sk, d, causal, window, sink = case
    from cute_lowering.kernels import fmha

    impls = {"ours": lambda: fmha.attention(q, k, v, causal=causal, window=window, sink=sinks)}
    if split:  # the decode rows: our wgmma path too, what the decode path is worth (not a peer)
        impls["ours_wgmma"] = lambda: fmha.attention(q, k, v, causal=causal, window=window, sink=sinks, path="wgmma")
        impls["ours_decode"] = lambda: fmha.attention(q, k, v, causal=causal, window=window, sink=sinks, path="decode")
        from cute_lowering.kernels import fmha_sm90

        if fmha_sm90.packed_groups(h // hkv):
            impls["ours_decode_wgmma"] = lambda: fmha.attention(q, k, v, causal=causal, window=window, sink=sinks, path="decode_wgmma")
    left, right = window
    try:
        from fa3_fwd_interface import flash_attn_func as fa3_func

        if not sink:
            impls["fa3"] = lambda: fa3_func(q, k, v, causal=causal, window_size=(left, right), num_splits=0 if split else 1)
    except ImportError as e:
        print(f"FA3 not importable: {e}", flush=True)
    try:
        from flash_attn.cute import flash_attn_func as fa4_func

        ws = (None if left < 0 else left, None if right < 0 else right)
        # FA4 4.0.0b36 has no split-KV on sm_90 ("SplitKV not supported on SM 9.0"): one split
        impls["fa4"] = lambda: _first(fa4_func(q, k, v, causal=causal, window_size=ws, learnable_sink=sinks, num_splits=1))
    except ImportError as e:
        print(f"FA4 not importable: {e}", flush=True)
    # cuDNN's is_causal is top-left aligned: same as ours only for Sq == Sk; no windows, no sinks
    if window == (-1, -1) and not sink and (not causal or sq == sk):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

        def cudnn():
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=hkv != h).transpose(1, 2)

        impls["cudnn"] = cudnn
    return impls


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def time_ms(fn) -> float:
    """Median GPU ms per call, cold L2, the host's cost hidden (bench/cuda_timing.gpu_ms)."""
    from cuda_timing import gpu_ms

    return gpu_ms(fn)


def peers_table(torch, cases, split: bool, rows: list, kind: str):
    for case in cases:
        b, h, hkv, sq, sk, d, causal, window, sink = case
        flops = 4 * b * h * d * score_pairs(sq, sk, causal, window)
        q, k, v, sinks = make_inputs(torch, case)
        row = {"kind": kind, "case": case_name(case), "flops": flops}
        for name, fn in implementations(torch, case, q, k, v, sinks, split).items():
            try:
                row[name + "_ms"] = time_ms(fn)
                row[name] = round(flops / row[name + "_ms"] / 1e9, 1)
            except Exception as e:  # a peer that rejects the case is reported, not fatal
                print(f"{row['case']} {name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        peers = [p for p in ("fa3", "fa4", "cudnn") if p in row]
        if "ours" in row and peers:
            best = max(peers, key=lambda p: row[p])
            row["best_peer"], row["ratio"] = best, round(row[best + "_ms"] / row["ours_ms"], 3)
        print(json.dumps(row), flush=True)
        rows.append(row)
        del q, k, v, sinks
    torch.cuda.empty_cache()


def accuracy(torch, rows: list, cases=ACCURACY_CASES, split: bool = False):
    from cute_lowering.kernels import fmha

    for case in cases:
        q, k, v, sinks = make_inputs(torch, case, seed=7)
        ref, _ = fmha.reference_attention(q, k, v, case[6], case[7], sinks)
        row = {"kind": "accuracy", "case": case_name(case)}
        for name, fn in implementations(torch, case, q, k, v, sinks, split).items():
            try:
                out = fn().double()
                row[name + "_max_abs"] = float((out - ref).abs().max())
                row[name + "_rel"] = float((out - ref).norm() / ref.norm())
            except Exception as e:
                print(f"accuracy {row['case']} {name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        bound = max(row.get("fa3_max_abs", 0.0), row.get("fa4_max_abs", 0.0))
        row["ours_within_peers"] = row.get("ours_max_abs", math.inf) <= bound
        print(json.dumps(row), flush=True)
        rows.append(row)


def nvfp4_row(torch, nvfp4_case, attention=None) -> dict:
    """One NVFP4_CASES row: the bf16 call, the fused call and bf16 + `nvfp4.quantize`, timed; the bytes compared.
    `attention`: `fmha.attention` or a variant's (`fmha.attention_with_knobs` with its knobs)."""
    from cute_lowering.kernels import fmha, nvfp4

    attention = fmha.attention if attention is None else attention
    b, h, s, d, causal = nvfp4_case
    case = (b, h, h, s, s, d, causal, (-1, -1), False)
    q, k, v, _ = make_inputs(torch, case)
    g = nvfp4.compute_global_scale(v)
    bf16 = lambda: attention(q, k, v, causal=causal)  # noqa: E731
    fused = lambda: attention(q, k, v, causal=causal, out_format="nvfp4", global_scale=g)  # noqa: E731
    two = lambda: nvfp4.quantize(attention(q, k, v, causal=causal).reshape(-1, d), g)  # noqa: E731
    codes, scales, _ = fused()
    want_codes, want_scales, _ = two()
    identical = torch.equal(codes.reshape(-1, d // 2), want_codes) and torch.equal(
        scales.view(torch.uint8).reshape(-1, d // 16), want_scales.view(torch.uint8)
    )
    t_bf16, t_fused, t_two = time_ms(bf16), time_ms(fused), time_ms(two)
    return {"kind": "nvfp4", "case": case_name(case), "bf16_ms": t_bf16, "fused_ms": t_fused, "two_kernels_ms": t_two,
            "fused_over_bf16": round(t_fused / t_bf16, 3), "two_kernels_over_fused": round(t_two / t_fused, 3),
            "bit_identical": bool(identical)}  # fmt: skip


def nvfp4_epilogue(torch, rows: list):
    for nvfp4_case in NVFP4_CASES:
        row = nvfp4_row(torch, nvfp4_case)
        print(json.dumps(row), flush=True)
        rows.append(row)


def variant_knobs(name: str):
    """(the wgmma paths' `Knobs`, {fmha_decode knob: value}) of VARIANTS[name] (a "#2" suffix ignored)."""
    from cute_lowering.kernels.fmha_sm90_knobs import DEFAULT_KNOBS

    variant = VARIANTS[name.split("#")[0]]
    decode = {knob.removeprefix("fmha_decode."): value for knob, value in variant.items() if knob.startswith("fmha_decode.")}
    knobs = dataclasses.replace(DEFAULT_KNOBS, **{knob: value for knob, value in variant.items() if not knob.startswith("fmha_decode.")})
    return knobs, decode


def variants(torch, names, rows: list, cases=VARIANT_CASES):
    """Each variant's accuracy, then its times: the wgmma paths' knobs passed down the call
    (`fmha.attention_with_knobs`); fmha_decode's, which are still that module's, set for the
    variant and restored after it."""
    from cute_lowering.kernels import fmha, fmha_decode, ops

    decode_saved = {k: getattr(fmha_decode, k) for k in ("COMBINE_PDL", "PDL_TRIGGER", "KEY_WARPS_STAGES")}  # the fmha_decode knobs a variant may name
    for name in names:
        knobs, decode_knobs = variant_knobs(name)
        attention = functools.partial(fmha.attention_with_knobs, knobs=knobs)
        try:
            for knob, value in {**decode_saved, **decode_knobs}.items():
                setattr(fmha_decode, knob, value)
            if decode_knobs:
                ops.clear_launch_cache()  # (fmha_decode's knobs are read when a plan is made)
            errs = [check_variant(torch, fmha, c, attention) for c in ACCURACY_CASES]
            print(f"variant {name}: relative errors {[round(e, 5) for e in errs]}", flush=True)
            for case in cases:
                if case[0] == "nvfp4":  # an NVFP4_CASES row: the epilogue's three timings
                    row = {**nvfp4_row(torch, case[1], attention), "kind": "variant_nvfp4", "variant": name}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
                    continue
                b, h, hkv, sq, sk, d, causal, window, sink = case
                q, k, v, sinks = make_inputs(torch, case)
                ms = time_ms(lambda: attention(q, k, v, causal=causal, window=window, sink=sinks))
                flops = 4 * b * h * d * score_pairs(sq, sk, causal, window)
                row = {"kind": "variant", "variant": name, "case": case_name(case), "ours_ms": ms,
                       "ours": round(flops / ms / 1e9, 1), "max_rel_err": max(errs)}  # fmt: skip
                print(json.dumps(row), flush=True)
                rows.append(row)
        except Exception as e:
            print(f"variant {name} failed: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc()
        finally:
            for knob, value in decode_saved.items():
                setattr(fmha_decode, knob, value)
            if decode_knobs:
                ops.clear_launch_cache()


def check_variant(torch, fmha, case, attention) -> float:
    q, k, v, sinks = make_inputs(torch, case, seed=3)
    out = attention(q, k, v, causal=case[6], window=case[7], sink=sinks)
    ref, _ = fmha.reference_attention(q, k, v, case[6], case[7], sinks)
    err = float((out.double() - ref).norm() / ref.norm())
    if not err <= 1e-2:
        raise AssertionError(f"relative error {err} on {case_name(case)}")
    return err


def markdown(rows) -> str:
    md = ["| case | ours | FA3 | FA4 | cuDNN | ours / best peer |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["kind"] in ("issue", "decode"):
            cells = [str(r.get(k, "-")) for k in ("ours", "fa3", "fa4", "cudnn")]
            md.append(f"| {r['case']} | " + " | ".join(cells) + f" | {r.get('ratio', '-')} |")
    md += ["", "| NVFP4 case | bf16 ms | fused ms | bf16 + quantize ms | fused / bf16 | two / fused | identical |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["kind"] == "nvfp4":
            md.append(f"| {r['case']} | {r['bf16_ms']:.3f} | {r['fused_ms']:.3f} | {r['two_kernels_ms']:.3f} | {r['fused_over_bf16']} | {r['two_kernels_over_fused']} | {r['bit_identical']} |")
    md += ["", "| accuracy case | ours max abs | FA3 | FA4 | ours within |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["kind"] == "accuracy":
            cells = [f"{r[k]:.2e}" if k in r else "-" for k in ("ours_max_abs", "fa3_max_abs", "fa4_max_abs")]
            md.append(f"| {r['case']} | " + " | ".join(cells) + f" | {r['ours_within_peers']} |")
    var = [r for r in rows if r["kind"] == "variant"]
    if var:
        cases = list(dict.fromkeys(r["case"] for r in var))
        md += ["", "| variant | " + " | ".join(cases) + " |", "| --- |" + " --- |" * len(cases)]
        for name in dict.fromkeys(r["variant"] for r in var):
            got = {r["case"]: r["ours"] for r in var if r["variant"] == name}
            md.append(f"| {name} | " + " | ".join(str(got.get(c, "-")) for c in cases) + " |")
    var = [r for r in rows if r["kind"] == "variant_nvfp4"]
    if var:
        md += ["", "| variant | NVFP4 case | bf16 ms | fused ms | bf16 + quantize ms | fused / bf16 | two / fused | identical |", "| --- |" + " --- |" * 7]
        for r in var:
            md.append(f"| {r['variant']} | {r['case']} | {r['bf16_ms']:.3f} | {r['fused_ms']:.3f} | {r['two_kernels_ms']:.3f} | {r['fused_over_bf16']} | {r['two_kernels_over_fused']} | {r['bit_identical']} |")
    return "\n".join(md) + "\n"


def results_entries(rows, gpu: str, date: str) -> dict:
    entries = {}
    for r in rows:
        if r["kind"] in ("issue", "decode") and "ratio" in r:
            best = r["best_peer"]
            entries[f"fmha_{r['case']}"] = {
                "ours": r["ours"], "peer": r[best], "ratio": r["ratio"], "peer_name": best,
                "fa3": r.get("fa3"), "fa4": r.get("fa4"), "cudnn": r.get("cudnn"),
                "unit": "TFLOP/s over the unmasked area; peer = fastest of FA3, FA4, cuDNN in the same run; ratio = peer ms / ours ms",
                "timer": "cuda_timing.gpu_ms: median per-call CUDA-event time, L2 flushed, host cost hidden behind a GPU spin", "gpu": gpu, "date": date,
                "ours_ms": round(r["ours_ms"], 4), "peer_ms": round(r[best + "_ms"], 4),
            }  # fmt: skip
        elif r["kind"] == "nvfp4":
            entries[f"fmha_nvfp4_epilogue_{r['case']}"] = {
                "fused_over_bf16": r["fused_over_bf16"], "two_kernels_over_fused": r["two_kernels_over_fused"],
                "bit_identical": r["bit_identical"], "bf16_ms": round(r["bf16_ms"], 4), "fused_ms": round(r["fused_ms"], 4),
                "two_kernels_ms": round(r["two_kernels_ms"], 4),
                "goal": "fused_over_bf16 <= 1.03 and two_kernels_over_fused >= 1.0 (issue 35)", "gpu": gpu, "date": date,
            }  # fmt: skip
    return entries


def merge_results(path: pathlib.Path, entries: dict):
    """Replace the keys of the rows this run measured; every other key is kept (a run of some
    steps only leaves the other steps' fmha_* entries as they were)."""
    existing = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**existing, **entries}, indent=1) + "\n")  # the file's own indent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--results", type=pathlib.Path)
    parser.add_argument("--variants", default="", help=f"comma-separated, of {sorted(VARIANTS)}")
    parser.add_argument("--skip-peers", action="store_true", help="only the variants")
    parser.add_argument("--variant-cases", default="", help="indices into ISSUE_CASES, dN into DECODE_CASES or nN into NVFP4_CASES (default: VARIANT_CASES)")
    parser.add_argument("--steps", default="issue,decode,nvfp4,accuracy,decode_accuracy", help="which peer steps, comma-separated")
    args = parser.parse_args()
    names = [n for n in args.variants.split(",") if n]
    for n in names:
        if n.split("#")[0] not in VARIANTS:
            parser.error(f"unknown variant {n!r}; known: {sorted(VARIANTS)}")
        try:
            variant_knobs(n)
        except TypeError as e:  # a name that is no field of Knobs
            parser.error(f"variant {n!r}: {e}")
    chosen = [s for s in args.steps.split(",") if s]
    for s in chosen:
        if s not in ("issue", "decode", "nvfp4", "accuracy", "decode_accuracy"):
            parser.error(f"unknown step {s!r}; known: issue, decode, nvfp4, accuracy, decode_accuracy")
    from installed_checkout import refuse_stale

    stale = refuse_stale("fmha_peers")  # (timing another tree's code under this tree's name)
    if stale:
        print(stale, file=sys.stderr)
        return 2
    import torch

    args.out.mkdir(parents=True, exist_ok=True)
    gpu, date = torch.cuda.get_device_name(), datetime.date.today().isoformat()
    rows: list = []

    def save():
        (args.out / "fmha_peers.json").write_text(json.dumps(rows, indent=1) + "\n")
        (args.out / "fmha_peers.md").write_text(markdown(rows))

    all_steps = {
        "issue": lambda: peers_table(torch, ISSUE_CASES, False, rows, "issue"),
        "decode": lambda: peers_table(torch, DECODE_CASES, True, rows, "decode"),
        "nvfp4": lambda: nvfp4_epilogue(torch, rows),
        "accuracy": lambda: accuracy(torch, rows),
        "decode_accuracy": lambda: accuracy(torch, rows, DECODE_ACCURACY_CASES, split=True),
    }  # fmt: skip
    steps = [] if args.skip_peers else [all_steps[s] for s in chosen]
    if names:
        # indices into ISSUE_CASES, or into DECODE_CASES with a "d" in front, NVFP4_CASES with an "n"
        pick = {"d": lambda i: DECODE_CASES[i], "n": lambda i: ("nvfp4", NVFP4_CASES[i])}
        vcases = [pick[i[0]](int(i[1:])) if i[0] in pick else ISSUE_CASES[int(i)] for i in args.variant_cases.split(",")] if args.variant_cases else VARIANT_CASES
        steps.append(lambda: variants(torch, names, rows, vcases))
    for step in steps:
        try:
            step()
        except Exception as e:  # keep what was measured
            print(f"step failed: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc()
        save()
    print(markdown(rows))
    if args.results and not args.skip_peers:
        merge_results(args.results, results_entries(rows, gpu, date))


if __name__ == "__main__":
    sys.exit(main())
