"""FMHA forward for Hopper (sm_90a): warpgroup MMA (wgmma), TMA loads, a producer warp.

Same API, semantics and masks as `kernels.fmha` (read its docstring: bottom-right aligned
causal/window limits, per-head sink logit, GQA, LSE, rows that see nothing give out = 0
and LSE = -inf); `kernels.fmha.attention` picks this path on sm_90a.

The kernel: CTAs of a producer and two or three consumer warpgroups, each taking a
(64 x consumers query tile, q head, batch) in turn from a linear order (query tile fastest,
last-first: with a causal mask the longest rows start first and the short ones fill the tail;
CTAs that run together share a head's K/V in L2). One CTA per tile, or, where PERSISTENT says
so, one per SM walking the tiles (ORDER: statically, every other round backwards, or drawing
the next tile from a global counter as FA3's causal scheduler does, by L2 sections of kv heads
whose longest tiles go first: SECTION_BYTES), its producer loading the next tile while the
consumers finish the current one (Config).

- Warpgroup 0 is the producer: one warp issues TMA loads (Q once, then K and V tiles of
  BLOCK_N keys from the last visited block to the first) into a ring of STAGES shared
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
  S runs while the P V wgmma does (INTRA_WG_OVERLAP); with two consumers, one's softmax
  also overlaps the other's MMAs (in strict turns with PINGPONG).
- Key blocks outside the query tile's causal/window limits are never loaded nor computed
  (the loop bounds are those of `kernels.fmha`). Rows past the keys' end come in as zeros
  from TMA (out of bounds), so no NaN * 0 reaches O.
- Epilogue per consumer: normalize O (sink in the denominator), LSE, O to bf16/fp16
  through the warpgroup's own rows of a shared-memory O buffer (apart from Q's, so the
  next tile's Q can load meanwhile), then 16-byte stores or one TMA store (TMA_STORE). The
  NVFP4 output is quantized from those rows by the consumers, or (NVFP4_OFFLOAD) by two
  idle warps of the producer warpgroup to which the consumers hand the rows over.

The same kernel, packed (`_PackedSplitSm90`, `compile_packed_split`; fmha's path
"decode_wgmma" for short queries over long keys): a tile's rows are the GQA-packed rows of
one kv head's q heads, its key blocks one of several shares (split-KV), its O and LSE f32
partials that `kernels.fmha_decode`'s combine kernel merges (`choose_splits` says when).

Compiles for sm_90a only (wgmma, setmaxnreg), inside `lowering.prelowering()`, with no GPU
(fake pointers and sizes).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90
from cutlass.cute.nvgpu import cpasync, warpgroup

import lowering
from kernels import fmha_decode
from kernels.attention_parts import LN2, bshd_tensors, fake_arguments, finish_row, fmax, nvfp4_outputs, quad_allreduce, row_copy, store_nvfp4
from kernels.cutedsl_compat import LayoutEnum, SmemAllocator
from kernels.exp2 import exp2_row

# --- tuning knobs ---------------------------------------------------------------
# (query rows per CTA, keys per K/V tile) by head dim and whether a diagonal (causal/window)
# is crossed; 64 query rows per consumer warpgroup. FA3 (hopper/tile_size.h) and FA4's sm90
# path take 192 x 128 for D=64 (three consumers) and FA3 128 x 176 for D=128 without a mask.
# 192 x 128 at D=64 fits 160 registers a consumer when persistent (ptxas: 8 bytes of spills
# outside the key loop; 84 with a causal mask; one CTA per tile 240 / 644 bytes) and, with
# PINGPONG, measured 419-446 against 411-421 TFLOP/s for 128 x 128 at 4x16x4096x64
# (bench/h200/fmha_prefill/run1-4); with a causal mask it did not pay then, spilling (354 against
# 358 at 4x16x4096, 297 against 320 at 16x8x2048, both persistent, snake order: run2). D=128: 128 x
# 160 (no spills) and 128 x 176 (40 bytes) lost to 128 x 128 (run2 of this and of fmha_peers),
# both built then with a warpgroup.arrive before every P V wgmma (ptxas C7519: P's conversion,
# now in pairs, see store_p); 128 x 176 does not fit shared memory beside O's own buffer
# (config_for refuses it), 128 x 160 compiles clean now and is the fmha_peers variant d128_160:
# it loses 1-6% (bench/h200/fmha_sched/s8, c3: 688 / 696, 706 / 715, 530-533 / 565-568). D=64
# causal takes FA3's 192 x 128 since MASK_RELATIVE lets it compile with two key loops and P in
# registers without spills (s8, c2, two passes, against 128 x 128: 4x16x4096 causal 413-415 /
# 395, 16x8x2048 causal 352-353 / 344-345; with STMATRIX 417-422 and 355, c4).
TILES = {
    (64, False): (192, 128),
    (64, True): (192, 128),
    (128, False): (128, 128),
    (128, True): (128, 128),
}
TILE_OVERRIDE = None  # (BLOCK_M, BLOCK_N) for every configuration: the knob sweep's
# the tile of calls with at least WIDE_KEYS_MIN keys and no mask, where it differs from TILES:
# {head_dim: (BLOCK_M, BLOCK_N)}. A wider key block spreads a block's fixed softmax work (the
# row maxima and sums, O's rescale, the wgmma waits) over more keys, and wastes little of the
# last block once the keys are many (Sk = 8192 in blocks of 192: 0.8%; 4096: 3%). Beside two
# 48 KB K/V stages only one Q buffer and no O buffer fit: it takes O_DIRECT, whatever that says.
# Alone, {128: (128, 192)} and (128, 176) tie with TILES' 128 x 128 (H200, s15/b, two passes:
# 2x16x8192x128 713.7-719.6 and 716.9-721.9 against 722.5-723.1, 1x32x16384x128 684.8-692.1 and
# 676.8-677.0 against 685.5-694.3; s16/v: 192 720.6 / 717-719 at 8192, 684.5 / 681-682 at 16384),
# although 192's loop issues 11% fewer instructions a key than 128's; with the scheduler barrier
# (WIDE_KEY_PINGPONG, below) 192 is ahead at 8192 keys (s18/r, the peers' run with it on:
# 2x16x8192x128 731.2 against FA3's 740.6, 0.987 where 128 x 128 is 0.974; 1x32x16384 0.998);
# from 4096 keys it loses (s18/c: 4x16x4096x128 701.5, 700.3 against 709.9, 708.1; 176 687-688).
# The NVFP4 output keeps 128 x 128 (its epilogue needs O's buffer, which does not fit beside
# 192's K/V stages); where the bf16 call takes the wide tile, ops gives the NVFP4 output as
# quantize() of that call's output (two kernels, the promised bits: s18/r found the fused build
# differing at 2x16x8192x128 before ops did so), which s18/r also timed faster than the fused
# 128 x 128 build there (1.538 against 1.576 ms). On since session 19: s19/a, one process, two
# passes, TFLOP/s, against 128 x 128 (no_wide): 2x16x8192x128 728.0, 724.9 / 709.0, 714.2;
# 1x32x16384x128 697.0, 697.2 / 675.0, 682.2; the peers' rows of that run 0.979 and 0.981 (FA3).
# With a diagonal it loses (s19/d, O_DIRECT, with and without the barrier: 4x16x4096x128 causal
# 617-623 / 658-661, 2x16x8192 causal 673-677 / 698-703, the sink 673-679 / 690-697).
WIDE_KEY_TILES = {128: (128, 192)}
WIDE_KEYS_MIN = 8192
# the wide-key build's scheduler barrier (PINGPONG's, for that build alone; None: PINGPONG's
# value). ncu (s18/n, 2x16x8192x128): the 192-wide build issues 9% fewer instructions than the
# 128-wide one but waits longer for each (6.27 cycles an issue against 5.80), most of it at the
# S wgmma's wait, behind the other consumer's wgmmas; taking turns (FA3 does at 128 x 176) gives
# 192 what its instructions save (s18/b, two passes, against now's 128 x 128: 2x16x8192x128
# 727.6, 725.4 / 715.7, 714.6; 1x32x16384 710.8, 697.1 / 689.0, 689.1; again in s18/c: 736.4,
# 736.2 / 725.8, 723.5 and 690.8, 690.4 / 695.4, 689.3; the Sq=128 decode row with 32768 keys and
# Sq=64 with 8192 even) while the 128-wide build loses with it (712.5, 677.0), as O_DIRECT's
# 128-wide build does (682.1, 642.9 against 687.2, 651.5 without)
WIDE_KEY_PINGPONG = True
# the NVFP4 output's tile where it differs from TILES: its epilogue quantizes from O's own
# buffer (no TMA_STORE, so no O_IN_V), beside which a tile needing O_IN_V does not fit
NVFP4_TILES = {}
# K/V shared-memory ring depth (D=128: Q 32 KB + O 32 KB + 2 x (K 32 KB + V 32 KB)); an int or a
# dict like TILES. D=64 has room for 3: within +-1% of 2 (bench/h200/fmha_sched/run9)
STAGES = 2
# Q's shared-memory buffers: 1, a persistent CTA's next Q loads once every S wgmma of the current
# tile is complete, and the consumers may wait for it at the next tile's start; 2, it loads as
# soon as the producer has the next tile (D=128: 225 KB of shared memory with O's buffer and two
# K/V stages; config_for keeps one where two do not fit). An int or a dict like TILES. H200 (bench/h200/fmha_sched/s9/q2, two passes, TFLOP/s,
# 2 against 1): 8x32x1024x128 588-590 / 563-566, 16x8x2048x64 causal 392-393 / 381, 4x16x4096
# D=64 531 / 523, causal 465 / 457, D=128 702 / 695-696, causal 649-651 / 640, 2x16x8192 causal
# 689-692 / 684, window 519-521 / 508-510, sink 689-692 / 685-687; 1x32x16384 within the noise.
Q_STAGES = 2
PRODUCER_REGS = 24  # setmaxnreg: the producer only issues TMA
REGISTER_FILE = 65536  # 32-bit registers of an SM, one CTA an SM
# setmaxnreg moves registers between a CTA's warpgroups within what the CTA was launched with:
# (REGISTER_FILE / threads, rounded down to 8) a thread, so the warpgroups' counts add up to at
# most that times their number (3 warpgroups: 3 x 168 = 504; 4: 4 x 128 = 512); a consumer's
# setmaxnreg.inc that asks for more waits forever
QUANTIZER_REGS = 32  # NVFP4_OFFLOAD: at least this many for the producer warpgroup (it quantizes)
# FA3's intra-warpgroup overlap: S(n) = Q K(n)^T and O += P(n+1) V(n+1) are issued together
# and the softmax of S(n) runs while the P V wgmma does; False: the softmax waits for both
INTRA_WG_OVERLAP = True
# FA3's scheduler barrier between the consumers: named barriers let one warpgroup issue its
# wgmmas while the others run their softmax, in a fixed rotation (two or three consumers);
# a bool, or a dict {(head_dim, crosses a diagonal): bool} like TILES. With three consumers
# (D=64, 192 x 128) it measured 446 against 433 without (run1; 419-441 with it in run2-3:
# within the noise, kept as FA3 does); with two (128 x 128) within +-2% in an earlier run
# (RESULTS.md), and at D=128 causal with SECTION_BYTES even again (s9/sec2: 638 / 639, 683 /
# 684). D=64 causal (192 x 128) with SECTION_BYTES: 457-459 against 452-453, 16x8x2048 378 / 372-373.
# At D=128 without a mask (s12/h, against off): 4x16x4096 686-691 / 689-691, 2x16x8192 693-695 /
# 698, 1x32x16384 649-656 / 652-662, 8x32x1024 599 / 593-595, Sq=128 decode 624 / 617-619: off.
# FA3's whole order at D=128 (the barrier, V_WAIT_LATE and LATE_RESCALE together, as its mainloop
# has them) loses too (s19/d, two passes, against three): 4x16x4096x128 687.3-688.0 / 702.7-703.8,
# 8x32x1024 596.8-598.5 / 604.1-607.8; with a diagonal (the barrier and V_WAIT_LATE; LATE_RESCALE is
# on there) 4x16x4096 causal 649.4-649.9 / 656.1-656.4, 2x16x8192 causal 687.7-688.0 / 695.3-695.7
# (s19/c), the barrier alone 650.0 / 687.2.
PINGPONG = {(64, False): True, (64, True): True, (128, False): False, (128, True): False}
EPILOGUE_BARRIER = 1  # named barriers 1.. : one per consumer warpgroup (its O rows in shared memory)
V_FREE_BARRIER = 4  # O_IN_V: every consumer warpgroup's last P V of the tile is complete (V's ring may take O)
TURN_BARRIER = 5  # named barriers 5, 6 (, 7): PINGPONG's turns, one per consumer
# ORDER "dynamic": named barriers 8 + 2 wg (the next tile's index is in shared memory: producer
# -> consumer warpgroup wg) and 9 + 2 wg (wg has read it: wg -> producer), one pair per consumer
# so that the consumers do not wait for each other at tile boundaries
TILE_FULL_BARRIER = 8
TILE_EMPTY_BARRIER = 9
HANDOVER_THREADS = 32 + 128  # the producer warp and one consumer warpgroup
# NVFP4_OFFLOAD: the producer warpgroup's warps 1 and 2 quantize O (warp 0 issues the loads)
QUANTIZER_WARPS = (1, 2)
QUANTIZER_THREADS = 32 * len(QUANTIZER_WARPS)  # one row of a warpgroup's 64 a thread
# one CTA per SM walks the tiles (FA3's persistent scheduling, static order): the producer
# loads the next tile's K/V (and Q, which has a buffer apart from O's) while the consumers
# finish the current tile. The S fill before a tile's first S wgmma keeps ptxas from
# serializing the wgmmas in the loop (C7512, 0.72x at D=128 before it). Measured on the H200
# against one CTA per tile (bench/h200/fmha_prefill/run1-4, TFLOP/s): D=128 without a mask
# 632-692 against 558-659 (4x16x4096, 2x16x8192), 518-573 against 466-502 (8x32x1024); with
# a diagonal, in the snake ORDER: D=64 16x8x2048 causal 315-321 against 300-304, 4x16x4096
# causal 351-354 against 358-360; D=128 loses: run4 (one run, against one CTA per tile)
# 4x16x4096 causal 517 / 529, 2x16x8192 causal 548 / 566, 1x32x16384 causal 604 / 618, sink
# 545 / 591, window 448 / 440 (run2: 486 / 442), so D=128 with a diagonal kept one CTA per
# tile until the dynamic ORDER: with it (bench/h200/fmha_sched/run1, two passes, TFLOP/s,
# against one CTA per tile) 4x16x4096 causal 600-602 / 576, 2x16x8192 causal 651 / 634-637,
# window 469-471 / 433-434, sink 648-649 / 638-640, 1x32x16384 causal 657-666 / 655-658; D=64
# causal (against snake) 397-400 / 379-380 and 347-349 / 338-340. Without a diagonal the
# dynamic order loses 1-2% at D=128 (684 / 699), so those keep the snake. True: always;
# False: one CTA per tile; or a dict {(head_dim, crosses a diagonal): bool} like TILES.
PERSISTENT = {(64, False): True, (64, True): True, (128, False): True, (128, True): True}
# P through shared memory (FA3's choice at D=64 without a mask, with 192 x 192 tiles): the
# softmax writes P (bf16/fp16) to a shared-memory tile and P V takes both operands from shared
# memory, which frees P's registers (BLOCK_N / 2 a thread) for a wider S. A bool or a dict
# like TILES. Compiled (ptxas 13.0, no wgmma serialized): D=64 without a mask 192 x 128,
# 192 x 160, 192 x 176 spill nothing, 192 x 192 112 bytes; D=64 causal 192 x 128 with two key
# loops nothing (with P in registers: 592 bytes and every wgmma serialized). Not yet timed on
# a GPU (the fmha_peers variants p_smem_*), so off.
P_SMEM = False
# with INTRA_WG_OVERLAP, when O takes the softmax's correction factor: False, just before the
# P V wgmma that adds the block (between the S and the P V issue, inside PINGPONG's turn); True,
# as FA3 and FA4 do, right after the softmax that computed it, once the previous P V is complete
# (the multiplies then run beside the softmax's exp2s, and a turn only issues wgmmas). O is
# zero after a tile's first block, so that block's factor is never applied. A bool or a dict
# like TILES. H200 (bench/h200/fmha_sched/run14-15, TFLOP/s, two passes, against False): D=128
# causal 4x16x4096 606-607 / 601, 2x16x8192 653-655 / 647-648, 1x32x16384 671-678 / 657-666,
# window 492-494 / 483-486, sink 658-659 / 649; D=64 465-467 / 460-463, causal even; D=128
# without a mask -2% (674-675 / 690 in run14: False there; ptxas: with a causal mask False
# spilled 76 bytes, True none). The packed split-KV kernel (compile_packed_split) keeps False.
LATE_RESCALE = {(64, False): True, (64, True): True, (128, False): False, (128, True): True}
# with INTRA_WG_OVERLAP and P in registers, where a key block's P (the softmax's f32 scores)
# becomes the bf16/fp16 operand of its P V: False, at the end of its own block, after waiting
# for the previous P V (whose operand the conversion overwrites); True, at the start of the
# next block, before its S wgmma issue. ptxas schedules each basic block by itself: with the
# wait in the softmax's block it may move the wait up (the default D=128 build, whose runtime
# mask test splits that block, runs 32 of its 66 MUFU before the wait; D=128 causal's unmasked
# loop 7); across the back edge it cannot, and the whole softmax runs beside the P V. Measured
# (H200, bench/h200/fmha_sched/s13/b, two passes, bit-identical): slower everywhere, 4x16x4096x128
# 635 against 695-697 TFLOP/s, causal 626 / 660-662, 1x32x16384 606-607 / 665-673, the Sq=128
# decode row 518-520 / 624: the V stage is released only at the next block's start, a softmax
# later, and with two K/V stages the producer waits for it (ncu, s13/ncu: its empty-slot waits
# spin 4.8x as often, the S waits of the consumers grow by half). A bool or a dict like TILES.
P_CONVERT_NEXT = False
# the softmax's exp2s in column order across the thread's rows (FA4's schedule in SASS), four
# partial maxima and two partial sums a row; False: one row after the other. A bool or a dict
# like TILES. ptxas 13.0: no spills at D=64 (192 x 128: 8 bytes, against 12) and D=128 causal;
# D=128 without a mask 60 bytes. H200 (bench/h200/fmha_sched/run17, TFLOP/s, two passes, against
# False): 4x16x4096x64 491-493 / 471 (+4.5%), causal 395 / 394-395, 16x8x2048x64 causal 343 /
# 341 (at 128 x 128); D=128 with a diagonal -0.5..2% (causal 610 / 615, window 493-494 / 498, sink
# 656-657 / 662). D=64 causal at 192 x 128 was timed without it (s8 c2/c4), so it stays off there.
SOFTMAX_INTERLEAVED = {(64, False): True, (64, True): False, (128, False): False, (128, True): False}
# O's rescale skipped while the row maxima stay (FA4's conditional rescale): a row keeps its old
# maximum as the exponent's reference while the block's maximum exceeds it by at most this much
# (log2 units, scores times softmax_scale * log2(e)), and a consumer warp whose 16 rows all keep
# theirs (`vote.any` over the correction factors) skips O's multiplies. P is then at most
# 2^RESCALE_THRESHOLD before its normalization by the row sum, which uses the same reference.
# None: every block rescales (no vote); 0.0 skips only where no row's maximum grew (not quite
# None's bits: there an unchanged maximum's factor is exp2 of an FFMA's rounding residual, here
# exactly 1); FA4 takes 8.0 for 16-bit inputs. A value or a dict like TILES. H200
# (bench/h200/fmha_sched/s12, TFLOP/s, passes of several calls, against None): 8.0 at D=64 without
# a mask 535-540 / 525-530, with D=128's scheduler barrier 4x16x4096x128 692-695 / 688-692,
# 2x16x8192 703-706 / 697-699, 1x32x16384 670-677 / 652-677, causal even; 0.0 loses 1-3% (the vote, and a
# warp skips only when none of its 16 maxima grew). But 8.0 is less accurate: against float64
# (s12/g, 2048 keys, D=128, four seeds) max error 7.6e-4..1.7e-3 against 5.9e-4..1.0e-3 (FA3's
# and FA4's are None's), mean +4%: with a stale reference a row's largest P is no longer exactly 1
# and rounds in bf16 like the others. So off: the issue's bound is the peers' error.
RESCALE_THRESHOLD = None
# the row maximum's -inf guard (a row with nothing yet subtracts 0, not -inf) in the softmax of
# a block that no mask touches; False: there the maximum is taken as finite, as FA3's unmasked
# steps do (Check_inf only with a mask). The same bits for finite inputs: every score of such a
# block is a finite product, so its row maximum is finite; with infinite inputs the output is
# NaN either way. A bool or a dict like TILES. Off, ptxas places fewer exp2s before the P V wait
# (128 x 128: 7 of 66 instead of 17; causal's hot loop 4 instead of 7) and it is slower
# everywhere (H200, s20/g, three passes, TFLOP/s, off against on): 4x16x4096x128 700.0-703.0 /
# 706.7-709.1, 8x32x1024 618.1-623.4 / 627.8-629.9, causal 4096 661.5-663.5 / 664.0-666.0,
# causal 8192 701.2-702.7 / 704.6-705.7, sink 701.3-703.0 / 704.8-705.5, 2x16x8192 (the wide
# build) 705.3-709.3 / 725.7-728.4; bit-identical (test_gpu_unmasked_inf_guard_keeps_the_bits).
UNMASKED_INF_GUARD = True
# the element mask: False, each value's column index against the row's limits (a column index
# per value, which LLVM hoists out of the key loop: registers held across it); True, the row's
# limits relative to its first column against each value's offset from it, a constant while
# tracing (`score_columns`; one compare and select per value). ptxas 13.0 with True: D=64 causal
# 2728 SASS instructions against 2920, D=64 192 x 128 causal with two key loops and D=128 causal
# with two key loops compile without spills or serialized wgmmas (False: 880 bytes and C7512;
# C7512). H200 (bench/h200/fmha_sched/s8, c1, two passes, TFLOP/s, against False): D=128 causal
# 612-614 / 608-611, 2x16x8192 causal 662 / 660, window 496-497 / 494-495, sink 664-665 / 661,
# D=64 causal even; and it is what lets D=64 causal take 192 x 128. A bool or a dict like TILES.
# Only where a diagonal is crossed: at D=128 without one (where just the key tail is masked) it
# made ptxas spill 60 bytes (none with False) and lost 3% (677 / 697, s8 f1 against c3).
MASK_RELATIVE = {(64, False): False, (64, True): True, (128, False): False, (128, True): True}
# registers -> shared memory for O in the epilogue (and P with P_SMEM) by `stmatrix` (FA3's and
# CUTLASS's epilogue store; 8 instructions a thread for a 64 x 128 O tile instead of 32 stores).
# A bool or a dict like TILES. H200 (bench/h200/fmha_sched/s8, c3-c4, two passes, TFLOP/s, against
# False): 4x16x4096x64 508-511 / 491-493, D=64 causal (192 x 128) 417-422 / 410-413 and 355 / 351;
# D=128 loses 0.5-2% (689-690 / 695-697, 706-712 / 714, 556-562 / 565-568, causal 610 / 612-614,
# window 485-489 / 493-499).
STMATRIX = {(64, False): True, (64, True): True, (128, False): False, (128, True): True}  # ((128, True): s19, with TMA_STORE)
# O from shared memory to global by one TMA store a warpgroup (FA3's epilogue), issued by one
# thread, the next tile's epilogue waiting only for the store's reads of shared memory, instead
# of every thread loading 16 bytes at a time from shared memory and storing them; O's buffer is
# then one 64-row stage a warpgroup. Not with the NVFP4 output (it quantizes from shared memory).
# A bool or a dict like TILES. H200 (s8, c3-c4, two passes, TFLOP/s): with STMATRIX at D=64
# 512-516 against 508-511 without, D=64 causal even (417-419 / 417-422, 355 / 355); D=128 loses
# 1-2% except 8x32x1024 (572-575 / 565-568). With two Q buffers (s9/r2, r3, against off): D=128
# without a mask 706 / 703, 717-718 / 716, 8x32x1024 608-619 / 596-606, 1x32x16384 even, the
# Sq=128 decode row 630 / 628-631; with a diagonal still -1% (causal 650-651 / 657-658): on
# without one. (The scheduler barrier beside it at D=128 without a mask: 8x32x1024 +0.7%,
# 1x32x16384 -1%; not kept, tma128_pp in r3.) With a diagonal again in session 19, with STMATRIX
# (s19/e, f, g, three machines, against now on each): 4x16x4096 causal 651.5-656.4 / 651.8-655.1,
# 669.0-671.8 / 668.1-670.4; 2x16x8192 causal 690.5-693.9 / 690.2-692.3, 714.7-715.7 / 712.9-714.3;
# the sink 690.1-695.4 / 683.4-687.8, 714.6-714.7 / 706.2-706.6; the window 527.3-530.8 /
# 523.5-524.8 (g): +1% on the window and the sink, even on causal (TMA_STORE alone: -0.5%, e). On
# (with STMATRIX) since session 19.
TMA_STORE = {(64, False): True, (64, True): True, (128, False): True, (128, True): True}
# O's shared-memory buffer laid over the V ring (FA3's layout: its epilogue storage in a union
# with the mainloop's, smem_o at the start of smem_v), with TMA_STORE and the bf16/fp16 output:
# the consumer warpgroups meet (V_FREE_BARRIER) once all of them have completed the tile's last
# P V, write O there, and each warpgroup's storing thread, once its TMA store has read its rows,
# arrives at the tile's mbarrier (two, by tile parity: _FmhaSm90.wait_o_stored) that the producer
# waits on before the next tile's first V load (its K and Q load meanwhile). It frees O's 32 KB
# at D=128: room for FA3's 128 x 176 tiles (two K/V stages of 44 KB and one Q buffer: 208 KB).
# False, True, or "last_v" (below); or a dict like TILES. H200
# (bench/h200/fmha_sched/s11, w2-w4, TFLOP/s, against O's own buffer at 128 x 128): at 128 x 128
# 694-696 / 698-702 (4x16x4096), 588-590 / 602-609 (8x32x1024): the next tile's V waits for O's
# store; at 128 x 176 (one Q buffer) 681 / 698-702, 710-714 / 711-716 (2x16x8192), 665-672 /
# 658-677 (1x32x16384), 542-547 / 602-609; 128 x 160 (two Q) 696, 714-719, 675-689, 541. Off.
# "last_v" (two stages, O within one): O in the stage of the tile's last V instead of the ring's
# start, so the next tile's first V (the other stage) loads at once and only its second waits for
# O's store. Slower too (s12/b, two passes): at 128 x 128 678-679 / 690-692 (4x16x4096), 683-691 /
# 697-699 (2x16x8192), 572 / 594-598 (8x32x1024), the Sq=128 decode row 536-537 / 618-619; at
# 128 x 160 681-684, 696-697, 673-674 / 659-677 (1x32x16384), 528-530, 609.
O_IN_V = False
# O from the consumers' registers straight to global memory (each quad's words transposed
# among its lanes so that a thread stores 16 contiguous bytes of a row: direct_epilogue; rows
# past Sq skipped), without a shared-memory stage: no O buffer (32 KB at D=128), so FA3's
# 128 x 176 key tiles fit beside one Q buffer and 128 x 160 beside two, with V's ring left alone
# (O_IN_V's cost), and no epilogue barrier. The bf16/fp16 output only (not NVFP4, not the packed
# split's partials, which already go out so); it replaces TMA_STORE and O_IN_V. A bool or a dict
# like TILES. Off: slower at 128 x 128 without a mask (H200, TFLOP/s against the TMA store: the
# 32-bit first build 3-8%, s14/b; this 16-byte build 5-7%, s15/b: 4x16x4096x128 661 against 709,
# 2x16x8192 675 / 723, 1x32x16384 646-648 / 686-694, Sq=128 decode 533 / 624); even with a
# diagonal, where the default stores through shared memory without TMA (causal 4096: 665 / 665).
# Not the stores: ncu (s15/n, 4x16x4096x128) puts 0.7% of the samples in the epilogue; its key
# loop is 30 instructions longer, 62 f32 -> bf16 pack conversions a block against 32: with
# this epilogue after the loop, LLVM's code for the loop-carried P converts it twice (PTX: a
# copy at the loop's head for the last P V after the loop, another for the P V in the loop),
# where the default build converts once. (Converting P through opaque inline PTX instead, so
# that LLVM cannot move it, was slower still everywhere: s15/p, 680 / 707 at 4096.) Session 16:
# the second copy came from the in-loop S wgmma naming S (= P's f32 values) as its input; with
# S zeroed first (key_block) O_DIRECT's loop is the default's (772 SASS instructions, 32 F2FP;
# bench/fmha_sass.py, no GPU). Still slower (s16/v): 4096 670 / 703-704, 8192 683 / 717-719,
# 16384 641 / 681-682; so the cost is outside the loop. s16/diag.py (not run yet) times it with
# the global stores skipped at run time.
O_DIRECT = False
# O through the tile's own Q buffer (with TMA_STORE, the bf16/fp16 output): Q's shared memory
# laid out as one 64-row stage a consumer warpgroup (O's TMA-store stage layout), each stage
# loaded by a TMA load of its own and waited for by its warpgroup alone; once a warpgroup's S
# wgmmas of the tile are complete its Q rows are dead, so its O goes into them, leaves by its
# TMA store, and the warpgroup's storing thread releases the stage once that store has read
# it. No O buffer and no cross-warpgroup meeting (O_IN_V's cost with the scheduler barrier), at
# the price of a single Q buffer that the next tile's Q waits for. For the wide tiles
# (WIDE_KEY_TILES: 128 x 192 fits with it, 224 KB) instead of O_DIRECT, whose 128 x 128 build is
# 5-7% slower than the TMA store for reasons not found (RESULTS.md, sessions 14-18). A bool or a
# dict like TILES, for the builds of TILES; the wide build's is WIDE_KEY_O_IN_Q. Bit-identical to
# O's own buffer (H200, test_gpu_o_in_q) and slower: the next tile's Q waits for O's store and
# its own load (s19/a, TFLOP/s, two passes): the wide build 711.1, 706.8 against O_DIRECT's 728.0,
# 724.9 at 2x16x8192x128, 672.6, 659.1 / 697.0, 697.2 at 1x32x16384 (without the barrier 709.6,
# 672.1); at 128 x 128 (one Q buffer instead of two) 669.7 against 670.1 / 689.3 at 4x16x4096.
O_IN_Q = False
# the wide build (WIDE_KEY_TILES) with O_IN_Q instead of O_DIRECT (off: above)
WIDE_KEY_O_IN_Q = False
# the producer's load order: False, a tile's Q, then K and V of each key block in turn; True,
# FA3's order with its intra-warpgroup overlap (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp): the
# tile's first K, then Q, then K of each block before the V of the block before it, the order in
# which the consumers need them (S(n) comes before P(n + 1) V(n + 1)), so a K load never waits
# behind a V slot that frees only when a P V wgmma completes. A bool or a dict like TILES. H200
# (bench/h200/fmha_sched/s9/ka2, two passes, TFLOP/s, against False): 8x32x1024x128 570 / 560-565,
# window 505-507 / 502-503, the other rows even (4x16x4096x128 686-687 / 688-689).
K_AHEAD = True
# with INTRA_WG_OVERLAP, where a consumer waits for the V of the block visited before: False,
# with its K, before the S wgmma; True, between the S and the P V wgmma issues (FA3, whose
# producer loads that V after the K: K_AHEAD). A bool or a dict like TILES. H200 (s9/ka2, against
# False, with K_AHEAD): 4x16x4096x64 527-528 / 518-519; D=128 without a mask loses 9-12% (624-626
# / 686-687; 8x32x1024 544-546 / 570), D=128 causal +1% but sink -1% (s9/ka, ka2): D=64 unmasked only.
V_WAIT_LATE = {(64, False): True, (64, True): False, (128, False): False, (128, True): False}
# L2 eviction priorities on the producer's TMA loads, as FA3 gives them (CUTLASS's
# CacheHintSm90): K and V evict-last (every query tile of a head reads them), Q evict-first
# (read once). A bool or a dict like TILES. H200 (s9/ch, two passes, TFLOP/s, against False):
# 4x16x4096x128 690 / 697, the other prefill rows and the decode rows within the noise: off.
CACHE_HINTS = False
# K and V shared by a cluster of CLUSTER CTAs (FA3's ClusterM = 2, taken for head dims
# >= 128 without a causal/window mask: hopper/flash_fwd_launch_template.h): the CTAs of a
# cluster take adjacent query tiles of one head, each loads 1/CLUSTER of every K and V tile and
# the TMA multicasts it into every CTA of the cluster, so each K/V tile crosses from L2 once per
# cluster and a stage is reused once every cluster CTA's consumers have released it. 1 or 2,
# or a dict like TILES; only where no diagonal is crossed (the cluster's tiles must visit the
# same key blocks: with a diagonal it stays 1). A launch whose query tiles a head do not divide
# by it takes the one-CTA build, compiled into the same host function (_FmhaSm90.__call__).
# H200 (bench/h200/fmha_sched/s10/c1, two passes, TFLOP/s, 2 against 1): 4x16x4096x128 682-685 /
# 700-702, 2x16x8192x128 691-694 / 711-712, 8x32x1024x128 599-600 / 604-609, 1x32x16384x128
# 678-686 / 678-698, 4x16x4096x64 530-535 / 535-537: the pair's CTAs wait for each other's
# consumers before a stage is reloaded, and the loads were not the limit (ncu at D=128 causal,
# fmha_sched/ncu1: L2 at 39% of its peak). Off.
CLUSTER = 1
# the last partial round of a persistent launch split along the keys (stream-K for the tail):
# with n_tiles = k * ctas + R (0 < R), the R tiles after the k full rounds are each cut into
# `tail_splits` pieces (contiguous shares of the key blocks, one unit of the persistent order
# each), which write f32 partials (O normalized by their own sum, LSE) into the caller's
# scratch, and a combine kernel launched after them merges them into O and LSE. The pieces run
# in a launch of their own (the same kernel built with the piece code, one piece a CTA) after
# the main kernel, which takes only the k full rounds and is the plain build: with the pieces
# in the persistent kernel itself (session 12's design) every tile ran 6-14% slower at D=128 before
# any piece was cut (bench/h200/fmha_sched/s13/a, c: 4x16x4096x128 657-661 against 707-712
# TFLOP/s, no piece planned there). The other tiles are computed as before (the same bits).
# Without it the R tiles take a whole tile time while ctas - R SMs idle. The split count is
# the host's (`tail_splits`, from the shape); 1 keeps the plain schedule (the main kernel
# alone). Only the static orders without a diagonal, a sink, a cluster, O_IN_V or the NVFP4
# output (config_for). A bool or a dict like TILES. H200 (s13/e, two passes, TFLOP/s, on
# against off): 1x32x16384x128 (4 tiles left on 132 SMs, 32 pieces) 688.0-688.3 / 668.8-669.7
# (+2.8%); 2x16x8192x128 and 4x16x4096x128 (the plan: one piece) even; with the plan's fixed
# cost at 0, 8192 in 4 pieces 727-729 / 721-726 (even).
TAIL_SPLIT = True
TAIL_SPLIT_MAX = 64  # pieces a tail tile at most
TAIL_PIECE_COST = 1.0  # a piece's fixed cost (Q load, first S, epilogue) in key blocks, for tail_splits
# a piece's f32 partial O written and read again (64 KB at D=128: 2 x 64 KB at ~3 TB/s) in key
# blocks of one SM (~1.6 us at D=128), for tail_splits; the whole GPU's bandwidth is shared, so
# the launch pays it once per piece, not per round
TAIL_TRAFFIC_COST = 0.027
TAIL_COMBINE_WARPS = 4  # the tail combine: a warp a row, 4 rows a CTA
# the pieces' launch and the combine as programmatic dependent launches (False: plain launches):
# the main kernel allows the pieces where TAIL_PIECES_TRIGGER says, each pieces CTA's producer
# allows the combine after its last load (fmha_decode's "last_load" trigger); the pieces read
# only Q, K and V, and wait for the main grid only before they exit; the combine waits for the
# pieces' grid before it reads their partials
TAIL_COMBINE_PDL = True
# where the main kernel allows the pieces' launch: "start" (every CTA at its start: the pieces'
# CTAs then take each SM the moment a main CTA leaves it) or "last_load" (once every main CTA's
# producer has issued its last load: the pieces wait for the slowest CTA's last tile)
TAIL_PIECES_TRIGGER = "start"
# the tail split's fixed cost in block-times (the pieces' launch, the combine, the SMs idle until
# the pieces start), for tail_splits. H200: with the "last_load" trigger (s13/d) 1x32x16384x128's
# 32 pieces saved 1.2-1.6% where the model without it says 2.9% (a tail of ~70 block-times, not
# 7.5), 2x16x8192x128's 4 pieces lost 0.8%: ~60; with "start" (s13/e) 16384 saved 2.8% (~4) and
# 8192's 4 pieces were even (the model: 8.7 of 64 saved). 8: 16384 splits, 8192 (60.3 + 8
# against 64) and 4096 do not
TAIL_LAUNCH_COST = 8.0
# the NVFP4 output (nvfp4_out) quantized by two idle warps of the producer warpgroup instead of
# the consumers: each consumer warpgroup puts its normalized O rows (bf16/fp16) in its rows of
# O's buffer, hands them over (an mbarrier pair a consumer warpgroup, the tile's coordinates
# beside them in shared memory) and goes on to its next tile, while the two warps quantize them
# (one row a thread, `store_nvfp4`) and give the rows back. The quantization is ~1000
# instructions a consumer thread a tile at D=128 that nothing overlapped (the epilogue issues
# about one instruction a cycle: RESULTS.md, "Where the fused epilogue's time went"); in the
# producer's warps it runs in the cycles the consumers leave idle. The producer warpgroup then
# keeps at least QUANTIZER_REGS (D=128: 40, the consumers 232 instead of 240; D=64: 32, the
# consumers keep 160; ptxas 13.0: the consumers spill nothing, the quantizing warps 56-80 bytes).
# A bool or a dict like TILES. H200 (bench/h200/fmha_sched/s10/c3, two passes, fused / bf16, on
# against off): 2x16x8192x128 1.028, 1.025 / 1.046, 1.045; with a diagonal it loses, the short
# tiles of the causal tail outrunning two warps' quantizing (4x16x4096x128 causal 1.107 / 1.078,
# 8x16x2048x64 causal 1.149-1.153 / 1.056-1.059): on without a diagonal at D=128 only.
NVFP4_OFFLOAD = {(64, False): False, (64, True): False, (128, False): True, (128, True): False}
# with NVFP4_OFFLOAD and two Q buffers: a consumer warpgroup whose last rows handed over are not
# back yet quantizes its new rows itself instead of waiting (as without the offload), through
# the tile's own Q buffer, which it then releases after the epilogue rather than before it (the
# next Q to load there is the one after next). For the tails of short tiles where two warps'
# quantizing falls behind (causal). A bool or a dict like TILES ("always": the consumers keep
# every tile's rows, a test of that path). H200 (bench/h200/fmha_sched/s11/p1, fused / bf16, two
# passes, against the offload without it): correct, but slower everywhere, where it is rarely
# taken too (Q held through the epilogue loads the next tile's later): 4x16x4096x128 causal
# 1.143-1.145 / 1.080-1.086, 2x16x8192x128 1.043-1.047 / 1.024-1.029, 8x16x2048x64 causal
# 1.140-1.147 / 1.050-1.056 (consumers quantizing there). Off.
NVFP4_OFFLOAD_FALLBACK = False
_EVICT_FIRST = 0x12F0000000000000  # the 64-bit L2 cache policies CUTLASS's TMA::CacheHintSm90 names
_EVICT_LAST = 0x14F0000000000000
SCORE_COLUMNS_CHECK_ALL = False  # score_columns checks every consumer thread (seconds a build; the tests)
# a diagnostic build: each CTA prints (device printf) its SM and %globaltimer when it starts, when
# its producer issued its last load (kept in shared memory: the producer, down to 24 registers,
# cannot call vprintf) and when all its warps are done, for bench/h200/fmha_sched/cta_times.py
# (start skew, the tail); never timed with it on
TRACE_CTA_TIMES = False
# with a right limit and no left one (causal), the key loop as two loops: the blocks that cross
# the diagonal or the key tail (the first visited), the element mask compiled in, then the
# rest without it (FA3 splits its loop too); False: one loop that decides per block at run
# time, both softmax variants in its body. A bool or a dict {(head_dim, crosses a diagonal):
# bool} like TILES. H200 (bench/h200/fmha_split/run3, two passes each, TFLOP/s, two loops
# against one): D=64 causal 4x16x4096 380 / 359, 16x8x2048 335 / 317 (+6%); D=128 causal
# 4x16x4096 563 / 567, 2x16x8192 617 / 628, 1x32x16384 660-678 / 666-686 (-1..2%), with a
# sink 648 / 631 (+3%). Not for windows: with a third, masked loop for the left edge (or one
# deciding at run time) D=128 spilled 192 bytes (ptxas 13.0); without a diagonal only a
# tile's first block, outside the loop, crosses the key tail, and a single unmasked loop
# spilled 176 bytes at D=64 192 x 128 against 12. Session 9, with L2 sections, K_AHEAD and two
# Q buffers (s9/r4, two passes, against one loop): D=128 causal 4x16x4096 668 / 656, 2x16x8192
# 706-709 / 697, 1x32x16384 727-730 / 715-716, sink 703 / 696-697 (with the scheduler barrier
# too: +0.5-1%, sink -1%, not kept). Without a diagonal (session 19): only a tile's first block,
# handled before the loop, may cross the key tail, so the loop is compiled without the element
# mask (the runtime test had left a 309-instruction masked branch in the 128 x 128 loop, whose hot
# path goes 465 -> 458 SASS instructions). H200 (s19/e, s19/f, two passes each, against now's
# five): 4x16x4096x128 700.6-706.2 / 695.0-699.6, 8x32x1024 610.9-612.1 / 599.4-601.8, Sq=128
# decode 618.0-619.0 / 616.6-618.2. Not in the wide build (WIDE_KEY_TILES: there it spills 33
# words and lost 6%, 679-686 / 726 at 2x16x8192) nor in the packed split-KV kernel (not timed).
MASK_LOOPS = {(64, True): True, (128, True): True, (128, False): True}
# the order in which persistent CTAs take tiles: "stride" (CTA c: c, c + ctas, ...), "snake"
# (every other round backwards: balances causal tiles; _FmhaSm90.scheduled) or "dynamic" (the
# producer takes the next tile from a global counter when it has issued the current one's
# loads and hands it to the consumers through shared memory, as FA3's causal scheduler does:
# _FmhaSm90.fetch_tile); a string or a dict {(head_dim, crosses a diagonal): str} like TILES
ORDER = {(64, False): "snake", (64, True): "dynamic", (128, False): "snake", (128, True): "dynamic"}
# ORDER "dynamic" hands out the tiles of SECTION_BYTES of K/V at a time (a section: as many kv
# heads' K and V as fit, all their q heads), the longest query tiles of every head of the
# section first, heads fastest: the shortest tiles of the whole launch come last, so no CTA
# starts a long tile when the others are nearly done (with one head at a time, the last
# head's longest tile starts ~1/H of its head's work before the end). FA3 sizes its sections
# for 32 MiB of L2 (hopper/tile_scheduler.hpp). 0: the linear order (query tile fastest, then
# head, then batch). ncu, 4x16x4096x128 causal (bench/h200/fmha_sched/s9/ncu_sched): the same SM
# active cycles (695-698 k) in 758 k elapsed with 0, 710 k with 32 MiB (FA3: 636 k in 652 k);
# timed (s9/sec, sec2, TFLOP/s, against 0): D=128 causal 4x16x4096 638-639 / 610, 2x16x8192
# 684-685 / 659-660, D=64 causal 451-453 / 420, 16x8x2048x64 372-373 / 349-351, window 503-507 /
# 492-495, sink 683-685 / 662-663, 1x32x16384 causal 679-712 / 685-705 (noise). Session 6 had
# measured +0.4-1.3% (run4-5), with a slower key loop; 16 MiB is within 1% of 32.
SECTION_BYTES = 32 << 20
# FA4's relief for MUFU: the share of each row's scores whose exp2 is a polynomial on the FMA
# units (kernels.fmha's exp2_fma_magic), by (head dim, crosses a diagonal); absent = 0. At D=64
# one 64 x 128 block's 8192 exp2 take MUFU (16 a clock per SM) as long as its two wgmmas take
# the tensor cores at their peak.
EXP2_FMA = {}
HEAD_DIMS = (64, 128)
SHARED_MEMORY_BYTES = 227 * 1024  # sm_90a: the most dynamic shared memory one CTA may take
DTYPES = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}
ARCHS = ("sm_90a",)

F32 = cutlass.Float32
I32 = cutlass.Int32


# --- register-view helpers (trace-time layout algebra) --------------------------------
def _mn_view(acc: cute.Tensor) -> cute.Tensor:
    """A wgmma accumulator ((2 cols, 2 rows, N/8), MMA_M, MMA_N) seen as (rows, cols)."""
    lay = cute.make_layout(acc.layout.shape)  # the same shape, compact column-major
    rows = (lay.shape[0][1], lay.shape[1])
    cols = (lay.shape[0][0], lay.shape[0][2], lay.shape[2])
    mn = cute.make_layout(
        (rows, cols),
        stride=((lay.stride[0][1], lay.stride[1]), (lay.stride[0][0], lay.stride[0][2], lay.stride[2])),
    )
    return cute.make_tensor(acc.iterator, cute.composition(acc.layout, mn))


def _as_operand_a(p: cute.Tensor) -> cute.Tensor:
    """P as the register A operand of P V: ((2, 2, N/8), M, 1) -> ((2, 2, 2), M, N/16).

    For 16-bit types one k16 step of wgmma's A fragment holds, per thread, the same
    (row, column) pairs as 16 columns of the m64nN accumulator, in the same order.
    """
    d = cute.logical_divide(p.layout, ((None, None, 2), None, None))
    lay = cute.make_layout(
        ((d.shape[0][0], d.shape[0][1], d.shape[0][2][0]), d.shape[1], (d.shape[0][2][1], d.shape[2])),
        stride=((d.stride[0][0], d.stride[0][1], d.stride[0][2][0]), d.stride[1], (d.stride[0][2][1], d.stride[2])),
    )
    return cute.make_tensor(p.iterator, lay)


def _smem_layout(dt, rows: int, d: int, stages: int | None = None):
    """Rows of D elements, D contiguous, in the 128-byte-swizzled atom wgmma and TMA share."""
    atom = warpgroup.make_smem_layout_atom(sm90.get_smem_layout_atom(LayoutEnum.ROW_MAJOR, dt, d), dt)
    if stages is None:
        return cute.tile_to_shape(atom, (rows, d), (0, 1))
    return cute.tile_to_shape(atom, (rows, d, stages), (0, 1, 2))


@cute.jit
def _wgmma_issue(tiled_mma: cute.TiledMma, acc: cute.Tensor, a: cute.Tensor, b: cute.Tensor, zero_init: cutlass.Constexpr):
    """Issue acc (+)= A B over the k slices as one wgmma group (wait for it with wait_group)."""
    warpgroup.fence()  # registers written by ordinary code (P, rescaled O) before wgmma reads them
    atom = cute.make_mma_atom(tiled_mma.op)
    atom.set(warpgroup.Field.ACCUMULATE, not zero_init)
    for k in cutlass.range_constexpr(cute.size(a.shape[2])):
        cute.gemm(atom, acc, a[None, None, k], b[None, None, k], acc)
        atom.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()


@cute.jit
def _rescale(acc_O: cute.Tensor, corr: cute.Tensor, conditional: cutlass.Constexpr = False):
    """O's rows times the online softmax's correction factors; `conditional` (RESCALE_THRESHOLD):
    not in a warp where every row's factor is 1 (the warp's lanes take the branch together)."""
    O = _mn_view(acc_O)
    if cutlass.const_expr(conditional):
        grew = corr[0] != F32(1.0)
        for r in cutlass.range_constexpr(1, cute.size(corr)):
            grew = grew | (corr[r] != F32(1.0))
        if cute.arch.vote_any_sync(grew):
            for r in cutlass.range_constexpr(cute.size(corr)):
                O[r, None] = O[r, None].load() * corr[r]
    else:
        for r in cutlass.range_constexpr(cute.size(corr)):
            O[r, None] = O[r, None].load() * corr[r]


def _row_reference(m_old: F32, m_blk: F32, scale_log2: F32, threshold: cutlass.Constexpr, inf_guard: cutlass.Constexpr = True):
    """The online softmax's new reference for one row: (the maximum to keep, it times scale_log2
    for the exponents to subtract, whether the old one is kept). threshold None: the running
    maximum (a row with nothing yet subtracts 0); a number: the old reference while the block's
    maximum exceeds it by at most `threshold` log2 units (RESCALE_THRESHOLD). inf_guard False:
    the caller knows the maximum is finite (a block none of whose scores is masked, finite
    inputs), so no select for a row with nothing yet (UNMASKED_INF_GUARD)."""
    m_new = cute.arch.fmax(m_old, m_blk)
    if cutlass.const_expr(inf_guard):
        m_safe = cutlass.select_(m_new == -F32.inf, F32(0.0), m_new) * scale_log2  # a row with nothing yet
    else:
        m_safe = m_new * scale_log2
    keep = None
    if cutlass.const_expr(threshold is not None):
        # (NaN when both are -inf, a row with nothing yet: not kept, as above)
        keep = (m_new - m_old) * scale_log2 <= F32(threshold)
        m_new = cutlass.select_(keep, m_old, m_new)
        m_safe = cutlass.select_(keep, m_old * scale_log2, m_safe)
    return m_new, m_safe, keep


def _correction(m_old: F32, m_safe: F32, scale_log2: F32, keep) -> F32:
    """O's (and the row sum's) factor for a new reference: exactly 1 where the old one is kept."""
    corr = cute.math.exp2(m_old * scale_log2 - m_safe, fastmath=True)
    if cutlass.const_expr(keep is not None):
        corr = cutlass.select_(keep, F32(1.0), corr)
    return corr


def _r2s_tiled_copy(dtype, mma: cute.TiledMma, stmatrix: bool) -> cute.TiledCopy:
    """Registers -> shared memory for an accumulator-shaped fragment (O, or P with P_SMEM):
    element-wise stores (two 16-bit values a store), or with STMATRIX the warp's `stmatrix`
    (four 8 x 8 matrices an instruction), as FA3 and CUTLASS's epilogues do."""
    if not stmatrix:
        return cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype), mma)
    atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), dtype)
    return cute.make_tiled_copy_S(atom, cute.make_tiled_copy_C_atom(atom, mma))


class _FmhaSm90:
    """One compiled configuration: dtype, head dim and which masks exist (compile-time)."""

    def __init__(
        self, dtype, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, nvfp4_out: bool, config: Config, group: int = 0,
        tail_pieces: bool = False,
    ):
        self.nvfp4_out = nvfp4_out  # the epilogue writes O as NVFP4 (codes + E4M3 scales) instead
        # > 0: packed split-KV (_PackedSplitSm90): a tile's rows are packed rows of one kv head's
        # `group` q heads, its key blocks one of num_splits shares, its O and LSE partials
        self.group = group
        self.pdl = False  # packed split-KV: its combine kernel is a programmatic dependent launch (fmha_decode.PDL_TRIGGER: when)
        (
            self.block_m, self.block_n, self.stages, self.overlap, self.pingpong, self.max_ctas, self.fma_cols, self.order,
            self.mask_loops, self.section_bytes, self.p_smem, self.late_rescale, self.interleaved, self.mask_relative,
            self.stmatrix, tma_store, self.k_ahead, self.v_wait_late, self.cache_hints, self.q_stages, self.cluster,
            nvfp4_offload, nvfp4_fallback, o_in_v, self.rescale_threshold, self.trace, tail_split,
            self.p_convert_next, o_direct, o_in_q, self.inf_guard_unmasked,
        ) = config  # fmt: skip
        self.conditional_rescale = self.rescale_threshold is not None  # RESCALE_THRESHOLD: O's rescale under a warp vote
        # NVFP4_OFFLOAD: O's quantization by QUANTIZER_THREADS of the producer warpgroup (nvfp4_out only)
        self.offload = nvfp4_offload and nvfp4_out and not group
        self.fallback = self.offload and bool(nvfp4_fallback)  # NVFP4_OFFLOAD_FALLBACK
        self.fallback_always = self.fallback and nvfp4_fallback == "always"
        # a hand-over's fields in shared memory: batch, head, first row, the giver's phase (and,
        # with the fallback, whether this tile's rows were handed over)
        self.handoff_fields = 5 if self.fallback else 4
        self.o_direct = o_direct and not nvfp4_out and not group  # O_DIRECT: O from registers to global memory
        self.tma_store = tma_store and not nvfp4_out and not group and not self.o_direct  # (TMA_STORE: the bf16/fp16 output only)
        self.o_in_v = bool(o_in_v) and self.tma_store  # O_IN_V: O's buffer over V's ring
        # O_IN_Q: O through each consumer warpgroup's stage of the (single) Q buffer; Q's pipeline
        # then has a stage a warpgroup (its rows), each released by that warpgroup's storing thread
        self.o_in_q = bool(o_in_q) and self.tma_store and not self.o_in_v
        self.q_pipe_stages = self.block_m // 64 if self.o_in_q else self.q_stages
        self.o_last_v = self.o_in_v and o_in_v == "last_v"  # (in the stage of the tile's last V)
        self.persistent = self.max_ctas < 2**31 - 1
        # TAIL_SPLIT: the last partial round's tiles in pieces along the keys (a launch of their
        # own, `tail_kernel`: this build with the piece code, one piece a CTA), then a combine.
        # self.tail_pieces: this object's kernel is that pieces' kernel
        self.tail_pieces = tail_pieces
        self.trace = self.trace and not tail_pieces  # (TRACE_CTA_TIMES: the main kernel's CTAs only, as cta_times.py reads them)
        self.tail_kernel = None
        if bool(tail_split) and self.persistent and not group and not has_sink and not nvfp4_out and not tail_pieces:
            self.tail_kernel = _FmhaSm90(dtype, head_dim, has_left, has_right, has_sink, nvfp4_out, config, group, tail_pieces=True)
        pdl_tail = tail_split in ("start", "last_load")  # (Config.tail_split: how the pieces and the combine launch)
        if pdl_tail and self.tail_kernel is not None:
            self.pdl = tail_split  # (the kernel's trigger for the pieces' launch: TAIL_PIECES_TRIGGER)
        elif pdl_tail and self.tail_pieces:
            self.pdl = "last_load"  # (the pieces' producer's trigger: the combine may launch, and waits for the pieces' grid)
        self.dynamic = self.persistent and self.order == "dynamic"  # tiles drawn from a counter (fetch_tile)
        self.consumer_wgs = self.block_m // 64
        self.threads = 128 * (1 + self.consumer_wgs)  # producer warpgroup + consumers
        # what the producer gives away, split evenly (setmaxnreg takes multiples of 8)
        pool = REGISTER_FILE // self.threads // 8 * 8 * (1 + self.consumer_wgs)  # a thread of each warpgroup, together
        producer_least = QUANTIZER_REGS if self.offload else PRODUCER_REGS
        self.consumer_regs = min(240, (pool - producer_least) // self.consumer_wgs // 8 * 8)
        # the producer warpgroup's registers a thread: PRODUCER_REGS, or with the quantizing warps
        # of NVFP4_OFFLOAD all the consumers leave
        self.producer_regs = pool - self.consumer_wgs * self.consumer_regs if self.offload else PRODUCER_REGS
        if self.producer_regs + self.consumer_wgs * self.consumer_regs > pool:  # (setmaxnreg.inc would wait forever)
            raise AssertionError(f"registers: {self.producer_regs} + {self.consumer_wgs} x {self.consumer_regs} > {pool} a thread")
        self.dtype = dtype
        self.d = head_dim
        self.has_left = has_left
        self.has_right = has_right
        self.has_sink = has_sink

    # --- host side: layouts, TMA descriptors, launch -----------------------------------
    @cute.jit
    def __call__(
        self,
        q_ptr: cute.Pointer,
        k_ptr: cute.Pointer,
        v_ptr: cute.Pointer,
        o_ptr: cute.Pointer,
        lse_ptr: cute.Pointer,
        sink_ptr: cute.Pointer,
        codes_ptr: cute.Pointer,
        scales_ptr: cute.Pointer,
        global_scale_ptr: cute.Pointer,
        counters_ptr: cute.Pointer,
        tail_o_ptr: cute.Pointer,
        tail_lse_ptr: cute.Pointer,
        tail_splits: I32,
        b: I32,
        sq: I32,
        sk: I32,
        hq: I32,
        hkv: I32,
        scale_log2: F32,
        left: I32,
        right: I32,
        stream: cuda.CUstream,
    ):
        d = self.d
        dt = self.dtype
        # [B, S, H, D] row-major, seen as (S, D, H, B): TMA tiles the first two modes.
        # Every stride but D's is a multiple of D (16-byte aligned rows, as TMA requires).
        q_row = cute.assume(hq * d, divby=d)
        kv_row = cute.assume(hkv * d, divby=d)
        q_lay = cute.make_layout((sq, d, hq, b), stride=(q_row, 1, d, cute.assume(sq * q_row, divby=d)))
        kv_lay = cute.make_layout((sk, d, hkv, b), stride=(kv_row, 1, d, cute.assume(sk * kv_row, divby=d)))
        mQ = cute.make_tensor(q_ptr, q_lay)
        mO = cute.make_tensor(o_ptr, q_lay)
        mK = cute.make_tensor(k_ptr, kv_lay)
        mV = cute.make_tensor(v_ptr, kv_lay)
        mLSE = cute.make_tensor(lse_ptr, cute.make_layout((b, hq, sq), stride=(hq * sq, sq, 1)))
        mSink = cute.make_tensor(sink_ptr, cute.make_layout((hq,), stride=(1,)))
        # NVFP4 output, read only with nvfp4_out
        mCodes, mScales, mGlobal = nvfp4_outputs(codes_ptr, scales_ptr, global_scale_ptr, b, sq, hq, d)
        # ORDER "dynamic": (tiles handed out, CTAs done), zero on entry, left zero
        mCounters = cute.make_tensor(counters_ptr, cute.make_layout((2,)))

        sQ_layout, sKV_layout, (tma_q, tQ), (tma_k, tK), (tma_v, tV), mma_qk, mma_pv = self.loads_and_mmas(mQ, mK, mV)
        if cutlass.const_expr(self.mask_relative):
            self.col_offsets = self.score_columns(mma_qk)
            if cutlass.const_expr(self.tail_kernel is not None):
                self.tail_kernel.col_offsets = self.col_offsets  # (the pieces' kernel is traced from this host function too)
        stages = self.stages
        q_stages = self.q_stages
        handoffs = self.consumer_wgs if self.offload else 0  # NVFP4_OFFLOAD: one O hand-over a consumer warpgroup
        fields = self.handoff_fields
        o_free = 2 if self.o_in_v else 0  # O_IN_V: the mbarriers O's readers arrive at, by tile parity
        o_elems = 0 if self.o_in_v or self.o_direct or self.o_in_q else cute.cosize(sQ_layout)  # (O_IN_V: O lives in V's ring; O_IN_Q in Q's; O_DIRECT: nowhere)
        trace_words = 1 if self.trace else 0

        @cute.struct
        class Smem:
            bar_q: cute.struct.MemRange[cutlass.Int64, 2 * self.q_pipe_stages]
            bar_k: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            bar_v: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            next_tile: cute.struct.MemRange[I32, 2]  # ORDER "dynamic": the producer's hand-over
            bar_o: cute.struct.MemRange[cutlass.Int64, 2 * handoffs]  # NVFP4_OFFLOAD: (O rows given, taken back) a warpgroup
            o_tiles: cute.struct.MemRange[I32, fields * handoffs]  # and the hand-overs' fields
            bar_o_free: cute.struct.MemRange[cutlass.Int64, o_free]  # O_IN_V: O's TMA stores have read it
            trace_t: cute.struct.MemRange[cutlass.Int64, trace_words]  # TRACE_CTA_TIMES: the producer's last-load time
            q: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout) * q_stages], 1024]
            o: cute.struct.Align[cute.struct.MemRange[dt, o_elems], 1024]  # O on its way out
            k: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
            v: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]

        if cutlass.const_expr(self.p_smem):

            @cute.struct
            class Smem:  # noqa: F811 (the same, and P's tile)
                bar_q: cute.struct.MemRange[cutlass.Int64, 2 * self.q_pipe_stages]
                bar_k: cute.struct.MemRange[cutlass.Int64, 2 * stages]
                bar_v: cute.struct.MemRange[cutlass.Int64, 2 * stages]
                next_tile: cute.struct.MemRange[I32, 2]
                bar_o: cute.struct.MemRange[cutlass.Int64, 2 * handoffs]
                o_tiles: cute.struct.MemRange[I32, fields * handoffs]
                bar_o_free: cute.struct.MemRange[cutlass.Int64, o_free]
                trace_t: cute.struct.MemRange[cutlass.Int64, trace_words]
                q: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout) * q_stages], 1024]
                o: cute.struct.Align[cute.struct.MemRange[dt, o_elems], 1024]
                k: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
                v: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
                p: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(_smem_layout(dt, self.block_m, self.block_n))], 1024]

        # shared -> global for O: 16-byte copies, 8 elements a thread, one warpgroup; or (TMA_STORE)
        # one TMA store of a warpgroup's 64 x D stage, through O's TMA view
        s2g = row_copy(cute.nvgpu.CopyUniversalOp(), dt, 128)
        o_out = mO
        if cutlass.const_expr(self.tma_store):
            o_stage = cute.select(self.o_stages(), mode=[0, 1])
            s2g, o_out = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mO, o_stage, (64, d))
        # one CTA per SM walking the tiles (PERSISTENT), or one CTA per tile
        m_tiles = cute.ceil_div(sq, self.block_m)
        n_tiles = m_tiles * hq * b
        ctas = cutlass.min(n_tiles, self.max_ctas)  # (max_ctas is a multiple of CLUSTER)
        # TAIL_SPLIT: the partials of the last partial round's tiles, tail_splits pieces each (a
        # power of two, as tail_splits gives: the kernel shifts by its log2; the caller's scratch:
        # tail_splits * (n_tiles % ctas) * BLOCK_M * (D + 1) f32; 1: none). The main kernel then
        # takes the full rounds only
        pieces = tail_splits if cutlass.const_expr(self.tail_kernel is not None) else I32(1)
        tail_tiles = n_tiles % ctas
        split = (pieces > 1) & (tail_tiles > 0)
        main_tiles = cutlass.select_(split, n_tiles - tail_tiles, n_tiles)
        mTailO = cute.make_tensor(
            tail_o_ptr, cute.make_layout((pieces, tail_tiles, self.block_m, d), stride=(tail_tiles * self.block_m * d, self.block_m * d, d, 1))
        )  # fmt: skip
        mTailLSE = cute.make_tensor(
            tail_lse_ptr, cute.make_layout((pieces, tail_tiles, self.block_m), stride=(tail_tiles * self.block_m, self.block_m, 1))
        )  # fmt: skip
        # the kernel's arguments after the TMA ones: those before its tile count, the count, the rest
        before = (o_out, mLSE, mSink, mCodes, mScales, mGlobal, mCounters, mTailO, mTailLSE, scale_log2, left, right, m_tiles)
        after = (pieces, sQ_layout, sKV_layout, mma_qk, mma_pv, s2g, Smem)
        rest = (*before, main_tiles, *after)
        if cutlass.const_expr(self.cluster > 1):
            # CLUSTER: adjacent query tiles of a head share K/V where a head's tiles pair up (then
            # n_tiles and ctas are multiples of the cluster too); otherwise the one-CTA build
            (tma_kc, tKc), (tma_vc, tVc) = self.kv_loads(mK, mV, sKV_layout, self.cluster)
            if m_tiles % self.cluster == 0:
                self.kernel(tQ, tKc, tVc, tma_q, tma_kc, tma_vc, *rest, self.cluster).launch(
                    grid=(ctas, 1, 1), block=[self.threads, 1, 1], cluster=(self.cluster, 1, 1), stream=stream, min_blocks_per_mp=1
                )  # fmt: skip
            else:
                self.kernel(tQ, tK, tV, tma_q, tma_k, tma_v, *rest, 1).launch(
                    grid=(ctas, 1, 1), block=[self.threads, 1, 1], stream=stream, min_blocks_per_mp=1
                )
        else:
            self.kernel(tQ, tK, tV, tma_q, tma_k, tma_v, *rest, 1).launch(
                grid=(ctas, 1, 1), block=[self.threads, 1, 1], stream=stream, min_blocks_per_mp=1
            )
        if cutlass.const_expr(self.tail_kernel is not None):
            if split:
                # the pieces: units n_tiles - tail_tiles on of the pieces' kernel, one a CTA
                self.tail_kernel.kernel(tQ, tK, tV, tma_q, tma_k, tma_v, *before, n_tiles, *after, 1).launch(
                    grid=(tail_tiles * pieces, 1, 1), block=[self.threads, 1, 1], stream=stream, min_blocks_per_mp=1,
                    use_pdl=bool(self.tail_kernel.pdl),
                )  # fmt: skip
                # the tail tiles' rows from their pieces (a warp a row), into O [B, S, H, D] and LSE
                mO_rows = cute.make_tensor(o_ptr, cute.make_layout((b, sq, hq, d), stride=(sq * hq * d, hq * d, d, 1)))
                rows = tail_tiles * self.block_m
                self.tail_kernel.tail_combine_kernel(mTailO, mTailLSE, mO_rows, mLSE, m_tiles, n_tiles - tail_tiles).launch(
                    grid=(cute.ceil_div(rows, TAIL_COMBINE_WARPS), 1, 1), block=[TAIL_COMBINE_WARPS * 32, 1, 1], stream=stream,
                    use_pdl=bool(self.tail_kernel.pdl),
                )

    @cute.kernel
    def tail_combine_kernel(self, mTailO: cute.Tensor, mTailLSE: cute.Tensor, mO: cute.Tensor, mLSE: cute.Tensor, m_tiles: I32, full: I32):
        """TAIL_SPLIT: row r of tail tile t (tile `full` + t of the linear order, whose coordinates
        tile_coords gives) from its pieces' partials, by fmha_decode's combine of one row; rows
        past the queries are skipped, and with one piece (no tail split) nothing is done."""
        if cutlass.const_expr(self.pdl):
            cute.arch.griddepcontrol_wait()  # the pieces' kernel is done, its partials visible
        tidx, _, _ = cute.arch.thread_idx()
        block, _, _ = cute.arch.block_idx()
        row = block * TAIL_COMBINE_WARPS + tidx // 32
        t = row // self.block_m
        r = row - t * self.block_m
        pieces = mTailO.shape[0]
        if (pieces > 1) & (t < mTailO.shape[1]):
            sq, hq = mO.shape[1], mO.shape[2]
            tile = full + t
            m0 = (m_tiles - 1 - tile % m_tiles) * self.block_m
            head = (tile // m_tiles) % hq
            batch = tile // (m_tiles * hq)
            if m0 + r < sq:
                # the tile's partials seen at the row's query index (query q at row q - m0)
                d = self.d
                shift = (t * self.block_m - m0) * d
                part_o = cute.make_tensor(
                    mTailO.iterator + shift, cute.make_layout((pieces, 1, sq, d), stride=(mTailO.layout.stride[0], 0, d, 1))
                )  # fmt: skip
                part_lse = cute.make_tensor(
                    mTailLSE.iterator + (t * self.block_m - m0), cute.make_layout((pieces, 1, sq), stride=(mTailLSE.layout.stride[0], 0, 1))
                )  # fmt: skip
                combine = fmha_decode._SplitKV(self.dtype, d, False, False, False)
                combine.combine_row(part_o, part_lse, mO, mLSE, None, I32(0), m0 + r, tidx % 32, I32(1), batch, head)

    def o_stages(self):
        """TMA_STORE: O's shared-memory buffer as one (64, D) stage a consumer warpgroup."""
        return _smem_layout(self.dtype, 64, self.d, self.consumer_wgs)

    def loads_and_mmas(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor):
        """Shared-memory layouts of Q and the K/V ring, their TMA atoms, and the two tiled MMAs.

        S = Q K^T: both K-major in shared memory. O = P V: P from registers, V^T is MN-major.
        """
        d, dt = self.d, self.dtype
        sQ_layout = _smem_layout(dt, self.block_m, d)
        sKV_layout = _smem_layout(dt, self.block_n, d, self.stages)
        if cutlass.const_expr(self.o_in_q):
            # a load a consumer warpgroup: its 64 rows into its own stage (O_IN_Q's layout of Q)
            q_load = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mQ, cute.select(self.o_stages(), mode=[0, 1]), (64, d))
        else:
            q_load = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mQ, sQ_layout, (self.block_m, d))
        k_load, v_load = self.kv_loads(mK, mV, sKV_layout, 1)
        mma_qk = sm90.make_trivial_tiled_mma(
            dt, dt, cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.K, F32, (self.consumer_wgs, 1, 1), (64, self.block_n)
        )
        return sQ_layout, sKV_layout, q_load, k_load, v_load, mma_qk, self.pv_mma(self.consumer_wgs)

    def kv_loads(self, mK: cute.Tensor, mV: cute.Tensor, sKV_layout, cluster: int):
        """The TMA atoms of one K and one V stage: plain, or (cluster > 1, CLUSTER) each CTA's
        1/cluster share of the stage, multicast into the same stage of every CTA of the cluster."""
        one_stage = cute.select(sKV_layout, mode=[0, 1])
        tile = (self.block_n, self.d)
        if cluster == 1:
            op = cpasync.CopyBulkTensorTileG2SOp()
            return cpasync.make_tiled_tma_atom(op, mK, one_stage, tile), cpasync.make_tiled_tma_atom(op, mV, one_stage, tile)
        op = cpasync.CopyBulkTensorTileG2SMulticastOp()
        return (
            cpasync.make_tiled_tma_atom(op, mK, one_stage, tile, num_multicast=cluster),
            cpasync.make_tiled_tma_atom(op, mV, one_stage, tile, num_multicast=cluster),
        )

    def pv_mma(self, warpgroups: int) -> cute.TiledMma:
        """O = P V over `warpgroups` consumer warpgroups (64 rows each): P from registers (or from
        shared memory with P_SMEM), V^T MN-major in shared memory."""
        return sm90.make_trivial_tiled_mma(
            self.dtype, self.dtype, cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.MN, F32, (warpgroups, 1, 1),
            (64, self.d), a_source=warpgroup.OperandSource.SMEM if self.p_smem else warpgroup.OperandSource.RMEM,
        )  # fmt: skip

    # --- device side ------------------------------------------------------------------
    @cute.kernel
    def kernel(
        self,
        mQ: cute.Tensor,
        mK: cute.Tensor,
        mV: cute.Tensor,
        tma_q: cute.CopyAtom,
        tma_k: cute.CopyAtom,
        tma_v: cute.CopyAtom,
        mO: cute.Tensor,
        mLSE: cute.Tensor,
        mSink: cute.Tensor,
        mCodes: cute.Tensor,
        mScales: cute.Tensor,
        mGlobal: cute.Tensor,
        mCounters: cute.Tensor,
        mTailO: cute.Tensor,  # TAIL_SPLIT: the tail pieces' partial O (pieces a tile, tail tiles, BLOCK_M, D), f32
        mTailLSE: cute.Tensor,  # and their LSE (log2), (pieces a tile, tail tiles, BLOCK_M)
        scale_log2: F32,
        left: I32,
        right: I32,
        m_tiles: I32,
        n_tiles: I32,
        num_splits: I32,  # packed split-KV: the key ranges a tile; TAIL_SPLIT: the pieces a tail tile (1: none)
        sQ_layout: cute.ComposedLayout,
        sKV_layout: cute.ComposedLayout,
        mma_qk: cute.TiledMma,
        mma_pv: cute.TiledMma,
        s2g: cute.CopyAtom,  # (a TiledCopy; with TMA_STORE the TMA store atom)
        Smem: cutlass.Constexpr,
        cluster: cutlass.Constexpr = 1,  # CTAs a cluster (CLUSTER), sharing K/V; 1 in the one-CTA build
    ):
        d = self.d
        if cutlass.const_expr(self.pdl == "start"):
            cute.arch.griddepcontrol_launch_dependents()  # (packed split-KV, its combine a PDL, fmha_decode.PDL_TRIGGER "start": it may be scheduled)
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        first_tile, _, _ = cute.arch.block_idx()
        ctas = cute.arch.grid_dim()[0]
        if cutlass.const_expr(self.trace):
            if tidx == 0:
                cute.printf("fmha_trace start cta {} sm {} t {}", first_tile, cute.arch.smid(), cute.arch.globaltimer())
        # persistent CTAs walk units of the linear tile order: one tile, or with a cluster its
        # `cluster` adjacent tiles (the same head: m_tiles divides by it), of which CTA `rank`
        # takes the rank-th
        rank = I32(0)
        first_unit, units, unit_stride = first_tile, n_tiles, ctas
        tail = None  # TAIL_SPLIT: (the first tail tile, log2 of the pieces a tail tile: a power of two)
        if cutlass.const_expr(self.tail_pieces):
            # the pieces' kernel: unit full + c for CTA c, one each (the tail tiles, num_splits units each)
            tail = (n_tiles - mTailO.shape[1], I32(31) - I32(cute.arch.clz(num_splits)))
            first_unit = tail[0] + first_tile
            units = n_tiles + mTailO.shape[1] * (num_splits - 1)
        if cutlass.const_expr(cluster > 1):
            rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
            first_unit, units, unit_stride = first_tile // cluster, n_tiles // cluster, ctas // cluster

        # --- shared memory and the load pipelines ---------------------------------------
        smem = SmemAllocator()
        storage = smem.allocate(Smem)
        sQ_ring = _smem_layout(self.dtype, self.block_m, d, self.q_stages)  # (M, D, Q_STAGES)
        sQ = storage.q.get_tensor(sQ_ring.outer, swizzle=sQ_ring.inner)
        sO = sQ  # (packed split: no O buffer, the partials go out from registers)
        sQ_loads = sQ  # what the producer's Q loads fill: (M, D, Q_STAGES), or with O_IN_Q (64, D, warpgroup)
        if cutlass.const_expr(self.o_in_q):
            # one buffer as a 64-row stage a consumer warpgroup, O's TMA-store layout; the MMAs see it
            # as (M, D, 1), M = (64, warpgroup): warpgroup w's rows are stage w
            staged = self.o_stages()
            sQ_loads = storage.q.get_tensor(staged.outer, swizzle=staged.inner)
            shape, stride = staged.outer.shape, staged.outer.stride
            m_view = cute.make_layout(((shape[0], shape[2]), shape[1], 1), stride=((stride[0], stride[2]), stride[1], 0))
            sQ = storage.q.get_tensor(m_view, swizzle=staged.inner)
            sO = sQ_loads
        o_free = None  # O_IN_V: the mbarriers of O's stores having read it, tile k's at o_free + k % 2 (the producer waits on them)
        if cutlass.const_expr(self.o_in_v):
            sO = storage.v.get_tensor(self.o_stages().outer, swizzle=self.o_stages().inner)  # (64, D, warpgroup) over V's ring
            if cutlass.const_expr(self.o_last_v):
                # (64, D, warpgroup, V stage): O over any stage of V's ring (a stage holds O: config_for)
                per_stage = cute.append(self.o_stages().outer, cute.make_layout(self.stages, stride=self.block_n * d))
                sO = storage.v.get_tensor(per_stage, swizzle=self.o_stages().inner)
            o_free = storage.bar_o_free.data_ptr()
            if tidx == 0:
                for parity in cutlass.range_constexpr(2):
                    cute.arch.mbarrier_init(o_free + parity, self.consumer_wgs)  # each consumer warpgroup's storing thread
                cute.arch.mbarrier_init_fence()  # (the pipelines' creation below synchronizes the CTA)
        elif cutlass.const_expr(self.o_in_q):
            pass  # (sO: Q's stages, above)
        elif cutlass.const_expr(self.tma_store):
            sO = storage.o.get_tensor(self.o_stages().outer, swizzle=self.o_stages().inner)  # (64, D, warpgroup)
        elif cutlass.const_expr(not self.group and not self.o_direct):
            sO = storage.o.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
        sK = storage.k.get_tensor(sKV_layout.outer, swizzle=sKV_layout.inner)
        sV = storage.v.get_tensor(sKV_layout.outer, swizzle=sKV_layout.inner)
        sTrace = None  # TRACE_CTA_TIMES: the producer's last-load time
        if cutlass.const_expr(self.trace):
            sTrace = storage.trace_t.get_tensor(cute.make_layout((1,)))
        sNext = None  # ORDER "dynamic": the next tile's index, from the producer to the consumers
        if cutlass.const_expr(self.dynamic):
            sNext = storage.next_tile.get_tensor(cute.make_layout((2,)))
        sVt = cute.composition(sV, cute.make_ordered_layout((d, self.block_n, self.stages), order=(1, 0, 2)))  # (D, N, stage)
        handoff = None  # NVFP4_OFFLOAD: (the rows' coordinates, (field, warpgroup); the mbarriers; the Q ring, for the fallback)
        if cutlass.const_expr(self.offload):
            handoff = (storage.o_tiles.get_tensor(cute.make_layout((self.handoff_fields, self.consumer_wgs))), storage.bar_o.data_ptr(), sQ)
            if tidx == 0:
                sTiles, bar_o = handoff[0], handoff[1]
                for w in cutlass.range_constexpr(self.consumer_wgs):
                    cute.arch.mbarrier_init(bar_o + 2 * w, 1)  # rows given: the warpgroup's first thread, once they are in
                    cute.arch.mbarrier_init(bar_o + 2 * w + 1, QUANTIZER_THREADS)  # taken back: every quantizing thread
                    sTiles[3, w] = I32(1)  # the giver's phase: its first wait for the rows' return passes at once
                cute.arch.mbarrier_init_fence()  # (the pipelines' creation below synchronizes the CTA)

        producer = pipeline.CooperativeGroup(pipeline.Agent.Thread, 1)  # one elected thread arms each barrier
        consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, self.consumer_wgs * 4)  # one arrive per warp
        # a K/V stage is free once the consumer warps of every CTA it was multicast to have
        # released it (with a cluster, lane r of each consumer warp arrives at CTA r's barrier)
        kv_consumers, kv_ctas = consumers, None
        if cutlass.const_expr(cluster > 1):
            kv_consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, self.consumer_wgs * 4 * cluster)
            kv_ctas = cute.make_layout((1, cluster, 1, 1))
        tile_bytes = cute.size_in_bytes(self.dtype, cute.select(sKV_layout, mode=[0, 1]))
        # (O_IN_Q: a stage a consumer warpgroup, released by its storing thread once its O has left)
        pipe_q = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bar_q.data_ptr(), num_stages=self.q_pipe_stages, producer_group=producer,
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1) if self.o_in_q else consumers,
            tx_count=cute.size_in_bytes(self.dtype, sQ_layout) // (self.consumer_wgs if self.o_in_q else 1),
        )  # fmt: skip
        pipe_k = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bar_k.data_ptr(), num_stages=self.stages, producer_group=producer,
            consumer_group=kv_consumers, tx_count=tile_bytes, cta_layout_vmnk=kv_ctas,
        )  # fmt: skip
        pipe_v = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bar_v.data_ptr(), num_stages=self.stages, producer_group=producer,
            consumer_group=kv_consumers, tx_count=tile_bytes, cta_layout_vmnk=kv_ctas,
        )  # fmt: skip

        if warp < 4:
            # --- producer: one warp issues the TMA loads -----------------------------------
            cute.arch.setmaxregister_decrease(self.producer_regs)
            if warp == 0:
                q_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.q_pipe_stages)
                state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
                load = functools.partial(
                    self.load_tile, m_tiles, num_splits, mQ, mK, mV, tma_q, tma_k, tma_v, sQ_loads, sK, sV, pipe_q, pipe_k, pipe_v,
                    left, right, rank, cluster, o_free, tail,
                )  # fmt: skip
                if cutlass.const_expr(self.dynamic):
                    tile = first_tile
                    while tile < n_tiles:
                        q_state, state = load(tile, q_state, state)
                        tile = self.fetch_tile(mCounters, sNext, ctas, n_tiles)
                elif cutlass.const_expr(self.persistent):
                    for unit in cutlass.range(first_unit, units, unit_stride, unroll=1):
                        q_state, state = load(self.unit_tile(unit, first_unit, unit_stride, units, rank, cluster), q_state, state)
                else:
                    q_state, state = load(first_tile, q_state, state)
                if cutlass.const_expr(self.pdl == "last_load"):
                    cute.arch.griddepcontrol_launch_dependents()  # (fmha_decode.PDL_TRIGGER: the CTA's loads are all issued)
                if cutlass.const_expr(self.trace):
                    # (no printf here: after setmaxnreg.dec the producer has 24 registers, and a
                    # vprintf call there stopped the launch with "illegal instruction" on the H200)
                    if tidx == 0:
                        sTrace[0] = cute.arch.globaltimer()
                if cutlass.const_expr(cluster > 1):
                    # the other CTAs' consumers release this CTA's stages remotely: their last
                    # arrives must land before this CTA (its shared memory) may exit
                    pipe_k.producer_tail(state.clone())
                    pipe_v.producer_tail(state.clone())
            if cutlass.const_expr(self.offload):
                if warp >= QUANTIZER_WARPS[0]:
                    if warp <= QUANTIZER_WARPS[-1]:
                        self.quantize_handed_over(sO, handoff, (mCodes, mScales, mGlobal), self.queries(mQ), tidx - 32 * QUANTIZER_WARPS[0])
        else:
            # --- consumers: 64 query rows per warpgroup -----------------------------------
            cute.arch.setmaxregister_increase(self.consumer_regs)
            ct = tidx - 128
            wg = cute.arch.make_warp_uniform(ct // 128)
            wg_qk = mma_qk.get_slice(wg * 128)  # smem operands are partitioned per warpgroup
            wg_pv = mma_pv.get_slice(wg * 128)
            tSrQ = wg_qk.make_fragment_A(wg_qk.partition_A(sQ))
            tSrK = wg_qk.make_fragment_B(wg_qk.partition_B(sK))
            tOrVt = wg_pv.make_fragment_B(wg_pv.partition_B(sVt))
            acc_O = cute.make_rmem_tensor(wg_pv.partition_shape_C((self.block_m, d)), F32)
            tScS = _mn_view(mma_qk.get_slice(ct).partition_C(cute.make_identity_tensor((self.block_m, self.block_n))))
            n_rows = cute.size(tScS.shape[0])
            row_max = cute.make_rmem_tensor((n_rows,), F32)
            row_sum = cute.make_rmem_tensor((n_rows,), F32)
            acc_S = cute.make_rmem_tensor(wg_qk.partition_shape_C((self.block_m, self.block_n)), F32)
            rP = cute.make_fragment_like(acc_S, self.dtype)  # P of the block whose P V is next
            if cutlass.const_expr(self.p_smem):
                # P's shared-memory tile: the A operand of P V, written from rP (store_p)
                sP_layout = _smem_layout(self.dtype, self.block_m, self.block_n)
                sP = storage.p.get_tensor(sP_layout.outer, swizzle=sP_layout.inner)
                p_copy = _r2s_tiled_copy(self.dtype, mma_qk, self.stmatrix)
                rP = (rP, wg_pv.make_fragment_A(wg_pv.partition_A(sP)), p_copy, p_copy.get_slice(ct), p_copy.get_slice(ct).partition_D(sP))
            corr = cute.make_rmem_tensor((n_rows,), F32)
            q_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.q_stages)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            if cutlass.const_expr(self.pingpong):
                if wg == 0:
                    cute.arch.barrier_arrive(barrier_id=TURN_BARRIER, number_of_threads=256)  # the first turn is the first consumer's
            compute = functools.partial(
                self.compute_tile, m_tiles, num_splits, mQ, mK, mO, mLSE, mSink, mCodes, mScales, mGlobal, mTailO, mTailLSE, scale_log2,
                left, right,
                pipe_q, pipe_k, pipe_v, mma_qk, mma_pv, s2g, sO, handoff, o_free, sNext, n_tiles, tSrQ, tSrK, tOrVt, acc_O, acc_S,
                rP, corr, row_max, row_sum, tScS, ct, wg, tail,
            )  # fmt: skip
            if cutlass.const_expr(self.dynamic):
                cute.arch.barrier_arrive(barrier_id=TILE_EMPTY_BARRIER + 2 * wg, number_of_threads=HANDOVER_THREADS)  # the slot starts empty
                tile = first_tile
                while tile < n_tiles:
                    q_state, state, tile = compute(tile, q_state, state)  # (the next tile: take_tile)
            elif cutlass.const_expr(self.persistent):
                for unit in cutlass.range(first_unit, units, unit_stride, unroll=1):
                    q_state, state, _ = compute(self.unit_tile(unit, first_unit, unit_stride, units, rank, cluster), q_state, state)
            else:
                # one tile: no loop around the body (with one, ptxas keeps more registers live
                # and, at D=128, serializes the wgmmas: C7512, measured 30% slower)
                compute(first_tile, q_state, state)
            if cutlass.const_expr(self.tma_store):
                if ct % 128 == 0:
                    cute.arch.cp_async_bulk_wait_group(0, read=True)  # shared memory outlives the last store's reads
            if cutlass.const_expr(self.offload):
                self.hand_over_end(handoff, ct, wg)
        if cutlass.const_expr(self.trace):
            # every warp done (the producer's time in shared memory), printed by a consumer thread
            cute.arch.barrier()
            if tidx == 128:
                cute.printf("fmha_trace loads cta {} t {}", first_tile, sTrace[0])
                cute.printf("fmha_trace end cta {} t {}", first_tile, cute.arch.globaltimer())
        if cutlass.const_expr(self.tail_pieces and bool(self.pdl)):
            # the pieces read only Q, K and V, yet their grid must not complete before the main
            # kernel's: the combine waits for this grid only, and what follows the call in the
            # stream for the combine, so each PDL launch of the chain waits for the one before it
            # (CUTLASS's rule for kernels launched with PDL); one thread keeps the CTA alive
            if tidx == 0:
                cute.arch.griddepcontrol_wait()

    @cute.jit
    def load_tile(
        self,
        m_tiles: I32,
        num_splits: I32,
        mQ: cute.Tensor,
        mK: cute.Tensor,
        mV: cute.Tensor,
        tma_q: cute.CopyAtom,
        tma_k: cute.CopyAtom,
        tma_v: cute.CopyAtom,
        sQ: cute.Tensor,
        sK: cute.Tensor,
        sV: cute.Tensor,
        pipe_q,
        pipe_k,
        pipe_v,
        left: I32,
        right: I32,
        rank: I32,
        cluster: cutlass.Constexpr,
        o_free,
        tail,  # TAIL_SPLIT: (first tail tile, log2 of its pieces), or None
        tile: I32,
        q_state,
        state,
    ):
        """The producer's loads for one tile: Q once (when the consumers are done with the last
        one), then K and V, last key block first. The K/V ring runs on across tiles, so a
        persistent CTA's next tile starts loading while its consumers finish this one (with
        O_IN_V its V only once the last tile's O, in V's ring, has been stored)."""
        d = self.d
        tiles_before = q_state.count  # (O_IN_V: this CTA's tiles loaded before this one)
        m_block, head, batch, kv_head, n_block_max, n_blocks, _ = self.tile_coords(tile, m_tiles, num_splits, mQ, mK, left, right, tail)
        if cutlass.const_expr(self.o_in_q):
            gQ = cute.local_tile(mQ[None, None, head, batch], (64, d), (None, 0))  # (64, D, 64-row tiles): a load a warpgroup
        else:
            gQ = cute.local_tile(mQ[None, None, head, batch], (self.block_m, d), (m_block, 0))
        gK = cute.local_tile(mK[None, None, kv_head, batch], (self.block_n, d), (None, 0))
        gV = cute.local_tile(mV[None, None, kv_head, batch], (self.block_n, d), (None, 0))
        one = cute.make_layout(1)
        tQs, tQg = cpasync.tma_partition(tma_q, 0, one, cute.group_modes(sQ, 0, 2), cute.group_modes(gQ, 0, 2))  # tQs: (TMA, Q buffer)
        # K and V: the whole stage, or with a cluster this CTA's share of it, multicast to all
        kv_rank, kv_ctas = (rank, cute.make_layout(cluster)) if cutlass.const_expr(cluster > 1) else (0, one)
        tKs, tKg = cpasync.tma_partition(tma_k, kv_rank, kv_ctas, cute.group_modes(sK, 0, 2), cute.group_modes(gK, 0, 2))
        tVs, tVg = cpasync.tma_partition(tma_v, kv_rank, kv_ctas, cute.group_modes(sV, 0, 2), cute.group_modes(gV, 0, 2))
        q_hint = {"cache_policy": cutlass.Int64(_EVICT_FIRST)} if cutlass.const_expr(self.cache_hints) else {}
        kv_hint = {"cache_policy": cutlass.Int64(_EVICT_LAST)} if cutlass.const_expr(self.cache_hints) else {}
        load_q = functools.partial(self.load_q, tma_q, tQg, tQs, pipe_q, m_block, q_hint)
        if cutlass.const_expr(cluster > 1):
            kv_hint["mcast_mask"] = cutlass.Int16((1 << cluster) - 1)
        if cutlass.const_expr(not self.k_ahead):
            q_state = load_q(q_state)
            if cutlass.const_expr(not self.o_last_v):
                self.wait_o_stored(o_free, tiles_before)
            for it in cutlass.range(n_blocks, unroll=1):
                n_block = n_block_max - 1 - it
                pipe_k.producer_acquire(state)
                cute.copy(tma_k, tKg[None, n_block], tKs[None, state.index], tma_bar_ptr=pipe_k.producer_get_barrier(state), **kv_hint)
                if cutlass.const_expr(self.o_last_v):
                    if it == 1:
                        self.wait_o_stored(o_free, tiles_before)  # (V(1) goes to the stage of the last tile's O)
                pipe_v.producer_acquire(state)
                cute.copy(tma_v, tVg[None, n_block], tVs[None, state.index], tma_bar_ptr=pipe_v.producer_get_barrier(state), **kv_hint)
                state.advance()
            if cutlass.const_expr(self.o_last_v):
                if n_blocks < 2:
                    self.wait_o_stored(o_free, tiles_before)  # (every tile waits once, before the next tile's loads)
        else:
            # K_AHEAD, in the order the consumers need them: the first K (its slot is free as soon
            # as the previous tile's last S is complete) before Q (free only when every S of it
            # is), then K(n) before V(n + 1), the V of the block visited before, whose slot frees
            # only when that block's P V wgmma completes
            if n_blocks > 0:
                pipe_k.producer_acquire(state)
                cute.copy(tma_k, tKg[None, n_block_max - 1], tKs[None, state.index], tma_bar_ptr=pipe_k.producer_get_barrier(state), **kv_hint)
            q_state = load_q(q_state)
            if cutlass.const_expr(not self.o_last_v):
                self.wait_o_stored(o_free, tiles_before)
            for it in cutlass.range(1, n_blocks, unroll=1):
                v_state = state.clone()
                state.advance()
                pipe_k.producer_acquire(state)
                cute.copy(tma_k, tKg[None, n_block_max - 1 - it], tKs[None, state.index], tma_bar_ptr=pipe_k.producer_get_barrier(state), **kv_hint)
                if cutlass.const_expr(self.o_last_v):
                    if it == 2:
                        self.wait_o_stored(o_free, tiles_before)  # (V(1) goes to the stage of the last tile's O)
                pipe_v.producer_acquire(v_state)
                cute.copy(tma_v, tVg[None, n_block_max - it], tVs[None, v_state.index], tma_bar_ptr=pipe_v.producer_get_barrier(v_state), **kv_hint)
            if n_blocks > 0:
                if cutlass.const_expr(self.o_last_v):
                    if n_blocks == 2:
                        self.wait_o_stored(o_free, tiles_before)  # (this V is V(1))
                pipe_v.producer_acquire(state)
                cute.copy(tma_v, tVg[None, n_block_max - n_blocks], tVs[None, state.index], tma_bar_ptr=pipe_v.producer_get_barrier(state), **kv_hint)
                state.advance()
            if cutlass.const_expr(self.o_last_v):
                if n_blocks < 2:
                    self.wait_o_stored(o_free, tiles_before)  # (every tile waits once, before the next tile's loads)
        return q_state, state

    @cute.jit
    def load_q(self, tma_q: cute.CopyAtom, tQg: cute.Tensor, tQs: cute.Tensor, pipe_q, m_block: I32, q_hint: dict, q_state):
        """A tile's Q into its buffer once the consumers are done with the last one in it; with
        O_IN_Q a load a consumer warpgroup, its 64 rows into its stage once that warpgroup's last
        O has left it (Q's pipeline has a stage a warpgroup then: a tile takes each once)."""
        if cutlass.const_expr(self.o_in_q):
            for w in cutlass.range_constexpr(self.consumer_wgs):
                pipe_q.producer_acquire(q_state)
                cute.copy(tma_q, tQg[None, m_block * self.consumer_wgs + w], tQs[None, w], tma_bar_ptr=pipe_q.producer_get_barrier(q_state), **q_hint)
                q_state.advance()
        else:
            pipe_q.producer_acquire(q_state)
            cute.copy(tma_q, tQg, tQs[None, q_state.index], tma_bar_ptr=pipe_q.producer_get_barrier(q_state), **q_hint)
            q_state.advance()
        return q_state

    @cute.jit
    def wait_o_stored(self, o_free, tiles_before: I32):
        """O_IN_V: before a tile's first V load (with "last_v": before its second, V(1), which
        goes to the stage of the last tile's O, or after its loads when it has fewer than two
        blocks), wait until the last tile's O (in V's ring) has been read by its TMA stores.
        Tile k's stores arrive at o_free + k % 2, so this waits for completion k // 2 of that
        barrier, k = tiles_before - 1. Two barriers: a tile without key
        blocks loads no V, and its consumers may finish it before this wait has seen the last
        tile's completion; on one barrier they would then be two completions ahead, and the
        parity wait would take the later for the earlier and wait forever. With two, their next
        completion of the same barrier needs the next tile's Q, loaded after this wait."""
        if cutlass.const_expr(self.o_in_v):
            if tiles_before > 0:
                k = tiles_before - 1
                cute.arch.mbarrier_wait(o_free + k % 2, (k // 2) % 2)

    @cute.jit
    def compute_tile(
        self,
        m_tiles: I32,
        num_splits: I32,
        mQ: cute.Tensor,
        mK: cute.Tensor,
        mO: cute.Tensor,
        mLSE: cute.Tensor,
        mSink: cute.Tensor,
        mCodes: cute.Tensor,
        mScales: cute.Tensor,
        mGlobal: cute.Tensor,
        mTailO: cute.Tensor,
        mTailLSE: cute.Tensor,
        scale_log2: F32,
        left: I32,
        right: I32,
        pipe_q,
        pipe_k,
        pipe_v,
        mma_qk: cute.TiledMma,
        mma_pv: cute.TiledMma,
        s2g: cute.CopyAtom,  # (a TiledCopy; with TMA_STORE the TMA store atom)
        sO: cute.Tensor,
        handoff,
        o_free,
        sNext,
        n_tiles: I32,
        tSrQ: cute.Tensor,
        tSrK: cute.Tensor,
        tOrVt: cute.Tensor,
        acc_O: cute.Tensor,
        acc_S: cute.Tensor,
        rP,
        corr: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        tScS: cute.Tensor,
        ct: I32,
        wg: I32,
        tail,  # TAIL_SPLIT: (first tail tile, log2 of its pieces), or None
        tile: I32,
        q_state,
        state,
    ):
        """One consumer warpgroup's 64 rows of one tile: the key blocks, then the epilogue.

        Returns the pipeline states and, with ORDER "dynamic", the warpgroup's next tile (taken
        from the producer while the tile's last P V wgmma runs)."""
        m_block, head, batch, kv_head, n_block_max, n_blocks, split = self.tile_coords(tile, m_tiles, num_splits, mQ, mK, left, right, tail)
        m0 = m_block * self.block_m
        sk = mK.shape[0]
        offset = sk - self.queries(mQ)  # bottom-right alignment of the masks
        tOrP = rP[1] if cutlass.const_expr(self.p_smem) else _as_operand_a(rP)
        acc_O.fill(0.0)
        row_max.fill(-F32.inf)
        row_sum.fill(0.0)
        softmax = functools.partial(self.softmax, acc_S, corr, row_max, row_sum, scale_log2, tScS, m0, sk, offset, left, right)
        o_free_tile = None  # O_IN_V: the mbarrier this tile's O stores arrive at (wait_o_stored)
        if cutlass.const_expr(self.o_in_v):
            o_free_tile = o_free + q_state.count % 2  # (q_state.count: this warpgroup's tiles before this one)
        tSrQ = tSrQ[None, None, None, q_state.index]  # this tile's Q buffer
        pipe_q.consumer_wait(self.q_stage(q_state, wg))  # (O_IN_Q: this warpgroup's rows)
        next_tile = tile  # (static orders: the caller's loop knows)
        if n_blocks > 0:
            # the first (last-in-sequence) block: S and softmax; its P V goes with the next S
            pipe_k.consumer_wait(state)
            if cutlass.const_expr(self.persistent):
                # a zero-initializing wgmma still names S as an input: without this, the last
                # tile's S stays live across the loop and ptxas gives this S registers of its
                # own (D=128: 64 more than fit, every wgmma serialized, C7512)
                acc_S.fill(0.0)
            self.mma_turn_wait(wg)
            _wgmma_issue(mma_qk, acc_S, tSrQ, tSrK[None, None, None, state.index], True)
            self.mma_turn_done(wg)
            warpgroup.wait_group(0)
            pipe_k.consumer_release(state)
            softmax(n_block_max - 1)  # O is still zero: its first rescale (by 0) changes nothing
            if cutlass.const_expr(not self.p_convert_next):  # (P_CONVERT_NEXT: the next block converts it)
                self.store_p(rP, acc_S, wg)
            step = functools.partial(
                self.key_block, pipe_k, pipe_v, mma_qk, mma_pv, tSrQ, tSrK, tOrVt, acc_O, acc_S, rP, tOrP, corr, softmax, wg, n_block_max
            )  # fmt: skip
            if cutlass.const_expr(self.mask_loops and self.has_right and not self.has_left):
                # two loops, the element mask compiled into the first only: the blocks that
                # cross the diagonal or the key tail (the first visited), then the rest
                right_end = self.masked_iterations(m0, n_block_max, n_blocks, sk, offset, right)
                for it in cutlass.range(1, right_end, unroll=1):
                    state = step(it, state, True)
                for it in cutlass.range(right_end, n_blocks, unroll=1):
                    state = step(it, state, False)
            elif cutlass.const_expr(self.tail_pieces):
                # no diagonal: only a tile's first block (the key tail's) is ever masked, so the
                # loop's are not. The loop runs a whole tile's count, a piece's past its own
                # blocks idle: with the piece's count as the bound ptxas spills (64 bytes at
                # D=128 in session 12's persistent build, 1080 at D=64 bf16 in this kernel)
                whole = cute.ceil_div(sk, self.block_n)
                for it in cutlass.range(1, whole, unroll=1):
                    if it < n_blocks:
                        state = step(it, state, False)
            elif cutlass.const_expr(self.mask_loops and not self.has_left and not self.has_right):
                # MASK_LOOPS without a diagonal: only a tile's first block (the key tail's, above)
                # may cross a limit, so the loop is compiled without the element mask
                for it in cutlass.range(1, n_blocks, unroll=1):
                    state = step(it, state, False)
            else:
                for it in cutlass.range(1, n_blocks, unroll=1):
                    state = step(it, state, None)
            if cutlass.const_expr(self.p_convert_next):
                self.convert_p(pipe_v, acc_O, acc_S, rP, corr, wg, n_blocks > 1, state)  # the last block's P
            pipe_v.consumer_wait(state)
            self.mma_turn_wait(wg)
            if cutlass.const_expr(not self.late_rescale):
                _rescale(acc_O, corr, self.conditional_rescale)  # (LATE_RESCALE: done after the last softmax; O is zero after the first)
            _wgmma_issue(mma_pv, acc_O, tOrP, tOrVt[None, None, None, state.index], False)
            self.mma_turn_done(wg)
            if cutlass.const_expr(self.dynamic):
                next_tile = self.take_tile(sNext, n_tiles, wg)
            warpgroup.wait_group(0)
            pipe_v.consumer_release(state)
            state.advance()
        else:
            if cutlass.const_expr(self.dynamic):
                next_tile = self.take_tile(sNext, n_tiles, wg)
        if cutlass.const_expr(self.o_last_v):
            # O_IN_V "last_v": O goes to the stage before the next one to load (the one of this
            # tile's last V, or of the last tile's O when this tile has no key block)
            o_free_tile = (o_free_tile, (state.index + self.stages - 1) % self.stages)
        # every S wgmma of this tile is complete: Q's buffer may take the next tile's (with
        # NVFP4_OFFLOAD_FALLBACK once the epilogue, which may stage O's rows there, is done)
        sQ_tile = None
        if cutlass.const_expr(self.fallback):
            sQ_tile = handoff[2][None, None, q_state.index]
        elif cutlass.const_expr(not self.o_in_q):
            pipe_q.consumer_release(q_state)
            q_state.advance()
        if cutlass.const_expr(self.group):
            self.partials_epilogue(acc_O, row_max, row_sum, scale_log2, tScS, mO, mLSE, mma_pv, ct, m0, batch * mK.shape[2] + kv_head, split)
        elif cutlass.const_expr(self.tail_pieces):
            # a tail piece: its partials, row r of the tile at row r
            self.partials_epilogue(
                acc_O, row_max, row_sum, scale_log2, tScS, mTailO, mTailLSE, mma_pv, ct, I32(0), split >> tail[1], split & (num_splits - 1)
            )  # fmt: skip
        else:
            self.epilogue(
                acc_O, row_max, row_sum, scale_log2, tScS, mO, mLSE, mSink, mCodes, mScales, mGlobal, sO, handoff, mma_pv, s2g, ct, wg, m0,
                head, batch, sQ_tile, o_free_tile,
            )  # fmt: skip
        if cutlass.const_expr(self.fallback):
            cute.arch.fence_proxy("async.shared", space="cta")  # this thread's uses of the buffer, before TMA writes it again
            cute.arch.sync_warp()  # (every lane's, before its warp's arrive)
            pipe_q.consumer_release(q_state)
            q_state.advance()
        if cutlass.const_expr(self.o_in_q):
            # O_IN_Q: this warpgroup's O left through its Q rows; the storing thread (the one that
            # issued the TMA store) frees them for the next Q once the store has read them
            if ct % 128 == 0:
                if cutlass.const_expr(not self.tail_pieces):  # (a piece's partials go out from registers)
                    cute.arch.cp_async_bulk_wait_group(0, read=True)
                pipe_q.consumer_release(self.q_stage(q_state, wg))
            q_state.advance()
        return q_state, state, next_tile

    def q_stage(self, q_state, wg: I32):
        """The Q pipeline's state for this consumer warpgroup's tile: q_state itself, or with
        O_IN_Q (a stage a warpgroup, each taken once a tile) its own stage at the tile's phase."""
        if not self.o_in_q:
            return q_state
        return pipeline.PipelineState(self.q_pipe_stages, q_state.count, wg, q_state.phase)

    @cute.jit
    def scheduled(self, tile: I32, first_tile: I32, ctas: I32, n_tiles: I32) -> I32:
        """The tile a persistent CTA takes in the round where the plain stride gives it `tile`.

        "stride": that tile (CTA c takes c, c + ctas, ...). "snake": every other full round
        is walked backwards, so a CTA that took one of the longest tiles of a round takes one
        of the shortest of the next (a round is `ctas` consecutive tiles of the linear order,
        longest rows first within a head). With a causal mask the stride order can give one
        CTA the same query tile in every round: with 22 tiles a head (192 x 128 at S=4096)
        and 132 CTAs, 1.82x the mean work per SM (simulated); snake 1.10, hardware order 1.10.
        The last round, when partial, is walked forwards, so the tiles taken are the same.
        """
        if cutlass.const_expr(self.order == "snake"):
            start = tile - first_tile  # k * ctas, k = the round
            reverse = ((start // ctas) % 2 == 1) & (start + ctas <= n_tiles)
            tile = cutlass.select_(reverse, start + ctas - 1 - first_tile, tile)
        return tile

    @cute.jit
    def unit_tile(self, unit: I32, first_unit: I32, unit_stride: I32, units: I32, rank: I32, cluster: cutlass.Constexpr) -> I32:
        """A persistent CTA's tile in the round where the plain stride gives it `unit`: the unit
        `scheduled` picks (a unit is one tile, or a cluster's adjacent tiles), its rank-th tile.
        The tail pieces' kernel: the unit itself (tail_piece maps it to its tile and piece)."""
        if cutlass.const_expr(not self.tail_pieces):
            unit = self.scheduled(unit, first_unit, unit_stride, units)
            if cutlass.const_expr(cluster > 1):
                unit = unit * cluster + rank
        return unit

    @cute.jit
    def fetch_tile(self, mCounters: cute.Tensor, sNext: cute.Tensor, ctas: I32, n_tiles: I32) -> I32:
        """ORDER "dynamic", the producer warp: the next tile of this CTA, also handed to its consumers.

        Tiles 0 .. ctas - 1 are the CTAs' first; the rest are handed out in the linear order
        by an atomic counter, each to the first CTA whose producer asks, i.e. whose loads of
        its current tile are all issued (its consumers are on that tile's last blocks): a CTA
        that drew short tiles takes more of them. The index goes to the consumers through
        shared memory once each has read the previous one (TILE_EMPTY/FULL_BARRIER, one pair
        per consumer warpgroup; they take it with take_tile). The last CTA to draw an index
        past the end (each draws exactly one) puts both counters back to zero for the next
        launch: its acq_rel add orders every CTA's draws before its stores.
        """
        lane = cute.arch.lane_idx()
        drawn = I32(0)
        if lane == 0:
            drawn = cute.arch.atomic_add(mCounters.iterator.llvm_ptr, I32(1), sem="relaxed", scope="gpu")
        tile = cute.arch.shuffle_sync(drawn, 0) + ctas
        for w in cutlass.range_constexpr(self.consumer_wgs):
            cute.arch.barrier(barrier_id=TILE_EMPTY_BARRIER + 2 * w, number_of_threads=HANDOVER_THREADS)
        if lane == 0:
            sNext[0] = tile
        for w in cutlass.range_constexpr(self.consumer_wgs):
            cute.arch.barrier_arrive(barrier_id=TILE_FULL_BARRIER + 2 * w, number_of_threads=HANDOVER_THREADS)
        if tile >= n_tiles:
            if lane == 0:
                done = cute.arch.atomic_add((mCounters.iterator + 1).llvm_ptr, I32(1), sem="acq_rel", scope="gpu")
                if done == ctas - 1:
                    mCounters[0] = I32(0)
                    mCounters[1] = I32(0)
        return tile

    @cute.jit
    def take_tile(self, sNext: cute.Tensor, n_tiles: I32, wg: I32) -> I32:
        """ORDER "dynamic", a consumer warpgroup: its next tile, from the producer (fetch_tile).

        Called while the current tile's last P V wgmma runs: the producer wrote the index
        blocks ago (once its loads of this tile were issued), so the barrier rarely waits."""
        cute.arch.barrier(barrier_id=TILE_FULL_BARRIER + 2 * wg, number_of_threads=HANDOVER_THREADS)
        tile = sNext[0]
        if tile < n_tiles:  # (the producer writes no further index after the last)
            cute.arch.barrier_arrive(barrier_id=TILE_EMPTY_BARRIER + 2 * wg, number_of_threads=HANDOVER_THREADS)
        return tile

    @cute.jit
    def key_block(
        self,
        pipe_k,
        pipe_v,
        mma_qk: cute.TiledMma,
        mma_pv: cute.TiledMma,
        tSrQ: cute.Tensor,
        tSrK: cute.Tensor,
        tOrVt: cute.Tensor,
        acc_O: cute.Tensor,
        acc_S: cute.Tensor,
        rP,
        tOrP: cute.Tensor,
        corr: cute.Tensor,
        softmax,
        wg: I32,
        n_block_max: I32,
        it: I32,
        state,
        masked: cutlass.Constexpr,
    ):
        """Key block `it` (after the first) of a consumer's tile: S of this block and P V of the
        previous one; returns the pipeline state advanced to this block."""
        v_state = state.clone()  # V of the previous block
        state.advance()
        pipe_k.consumer_wait(state)
        if cutlass.const_expr(not (self.overlap and self.v_wait_late)):
            pipe_v.consumer_wait(v_state)
        if cutlass.const_expr(self.p_convert_next):
            # the previous block's P, once the P V before it (of block it - 2, if any) is complete
            self.convert_p(pipe_v, acc_O, acc_S, rP, corr, wg, it > 1, v_state)
        if cutlass.const_expr(self.overlap):
            # S(n) and O += P(n+1) V(n+1) in flight together; softmax(n) once S(n) is in.
            # O takes the correction of P(n+1)'s softmax while the S wgmma runs, or with
            # LATE_RESCALE that of P(n)'s once the P V is complete
            self.mma_turn_wait(wg)
            if cutlass.const_expr(self.o_direct):
                # the zero-initializing S wgmma still names S as an input, and S holds the last
                # softmax's P (f32): with O_DIRECT's epilogue after the loop, LLVM then converts P
                # a second time, after this issue, for the P V below (62 F2FP a block against 32,
                # bench/fmha_sass.py). Zeros as its input leave P's f32 values no use past the
                # one conversion. (Not in the other builds: D=64's loop grows 862 -> 885.)
                acc_S.fill(0.0)
            _wgmma_issue(mma_qk, acc_S, tSrQ, tSrK[None, None, None, state.index], True)
            if cutlass.const_expr(not self.late_rescale):
                _rescale(acc_O, corr, self.conditional_rescale)
            if cutlass.const_expr(self.v_wait_late):
                pipe_v.consumer_wait(v_state)
            _wgmma_issue(mma_pv, acc_O, tOrP, tOrVt[None, None, None, v_state.index], False)
            self.mma_turn_done(wg)
            warpgroup.wait_group(1)
            pipe_k.consumer_release(state)
            softmax(n_block_max - 1 - it, masked)
            if cutlass.const_expr(not self.p_convert_next):  # (P_CONVERT_NEXT: at the next block's start)
                warpgroup.wait_group(0)
                pipe_v.consumer_release(v_state)
                if cutlass.const_expr(self.late_rescale):
                    _rescale(acc_O, corr, self.conditional_rescale)
        else:
            self.mma_turn_wait(wg)
            _rescale(acc_O, corr, self.conditional_rescale)
            _wgmma_issue(mma_pv, acc_O, tOrP, tOrVt[None, None, None, v_state.index], False)
            _wgmma_issue(mma_qk, acc_S, tSrQ, tSrK[None, None, None, state.index], True)
            self.mma_turn_done(wg)
            warpgroup.wait_group(1)
            pipe_v.consumer_release(v_state)
            warpgroup.wait_group(0)
            pipe_k.consumer_release(state)
            softmax(n_block_max - 1 - it, masked)
        if cutlass.const_expr(not self.p_convert_next):
            self.store_p(rP, acc_S, wg)
        return state

    @cute.jit
    def convert_p(self, pipe_v, acc_O: cute.Tensor, acc_S: cute.Tensor, rP, corr: cute.Tensor, wg: I32, pending, v_state):
        """P_CONVERT_NEXT: the last softmax's P (acc_S, f32) into the P V operand rP, which the P V
        in flight (when `pending`: of the block before v_state's) still reads, so after it is
        complete; then its V stage is released and, with LATE_RESCALE, O takes the factor."""
        warpgroup.wait_group(0)
        if pending:
            stage = (v_state.index + self.stages - 1) % self.stages
            pipe_v.consumer_release(pipeline.PipelineState(self.stages, v_state.count, stage, v_state.phase))
        if cutlass.const_expr(self.late_rescale):
            _rescale(acc_O, corr, self.conditional_rescale)
        self.store_p(rP, acc_S, wg)

    @cute.jit
    def copy_r2s(self, tiled_copy: cute.TiledCopy, thr_copy, regs: cute.Tensor, dst: cute.Tensor):
        """An accumulator-shaped register fragment into its shared-memory partition `dst` (_r2s_tiled_copy's
        copy). With STMATRIX the values go through a fragment shaped like `dst`, in the order the
        copy's retiling of the accumulator gives them (CUTLASS's epilogue does the same)."""
        if cutlass.const_expr(not self.stmatrix):
            cute.copy(tiled_copy, thr_copy.retile(regs), dst)
        else:
            staged = cute.make_rmem_tensor(cute.shape(dst), self.dtype)
            retiled = thr_copy.retile(regs)
            n = cute.size(staged)
            flat = cute.make_tensor(retiled.iterator, cute.composition(retiled.layout, cute.make_layout(n)))
            cute.make_tensor(staged.iterator, cute.make_layout(n)).store(flat.load())
            cute.copy(tiled_copy, staged, dst)

    @cute.jit
    def store_p(self, rP, acc_S: cute.Tensor, wg: I32):
        """P (acc_S after the softmax) as the A operand of the next P V: in registers, or with
        P_SMEM through this warpgroup's rows of P's shared-memory tile, visible to wgmma (the
        async proxy) and complete for all four warps before anyone issues it."""
        if cutlass.const_expr(self.p_smem):
            regs, _, p_copy_tiled, thr_copy, dst = rP
            regs.store(acc_S.load().to(self.dtype))
            self.copy_r2s(p_copy_tiled, thr_copy, regs, dst)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        elif cutlass.const_expr(cute.size(acc_S) & (cute.size(acc_S) - 1) == 0):
            rP.store(acc_S.load().to(self.dtype))
        else:
            # 8 values at a time: a whole-fragment conversion of BLOCK_N / 2 values that is not a
            # power of two (BLOCK_N 160, 176) comes out partly as scalar converts and 16-bit moves,
            # which ptxas answers with a warpgroup.arrive before each P V wgmma (C7519)
            for i in cutlass.range_constexpr(cute.size(acc_S) // 8):
                src = cute.make_tensor(acc_S.iterator + i * 8, cute.make_layout(8))
                dst = cute.make_tensor(rP.iterator + i * 8, cute.make_layout(8))
                dst.store(src.load().to(self.dtype))

    @cute.jit
    def masked_iterations(self, m0: I32, n_block_max: I32, n_blocks: I32, sk: I32, offset: I32, right: I32) -> I32:
        """right_end: with a right limit (causal) and no left one, iterations [1, right_end) of a
        tile's key loop need the element mask, the rest do not (iteration `it` is block
        n_block_max - 1 - it; iteration 0, the first block, decides for itself)."""
        q_first, _ = self.query_span(m0)
        # blocks below `unmasked_top` end at or before the key tail and the diagonal
        unmasked_top = cutlass.min(sk // self.block_n, cutlass.max(q_first + offset + right + 1, 0) // self.block_n)
        return cutlass.min(cutlass.max(n_block_max - unmasked_top, 1), n_blocks)

    def queries(self, mQ: cute.Tensor):
        """Sq (packed: mQ's rows are (group, Sq))."""
        if cutlass.const_expr(self.group):
            return mQ.shape[0][1]
        return mQ.shape[0]

    def query_span(self, m0: I32):
        """(first, last) query of the tile at row m0: a bound, the element masks are exact."""
        if cutlass.const_expr(self.group):
            return m0 // self.group, (m0 + self.block_m - 1) // self.group
        return m0, m0 + self.block_m - 1

    @cute.jit
    def tile_coords(self, tile: I32, m_tiles: I32, num_splits: I32, mQ: cute.Tensor, mK: cute.Tensor, left: I32, right: I32, tail=None):
        """(m_block, head, batch, kv_head, n_block_max, n_blocks, split) of a linear tile index.

        The query tile is the fastest index, last tile first (with a causal mask the longest
        rows start first and the short ones fill the tail), then head, then batch: the CTAs
        that run together share a head's K and V in L2. ORDER "dynamic" (SECTION_BYTES > 0):
        by sections of whole kv heads, query tile slowest inside one (longest first), then
        (batch, q head). Packed split-KV: head is the kv head
        (mQ's packed rows are indexed by it), then comes the split, then batch * Hkv; the
        split takes the split-th of num_splits equal contiguous shares of the tile's key
        blocks (possibly none).
        """
        hkv = mK.shape[2]
        split = I32(0)
        if cutlass.const_expr(self.tail_pieces):
            tile, split = self.tail_piece(tile, tail)
        m_block = m_tiles - 1 - tile % m_tiles
        if cutlass.const_expr(self.group):
            rest = tile // m_tiles
            split = rest % num_splits
            bh = rest // num_splits
            batch = bh // hkv
            kv_head = bh - batch * hkv
            head = kv_head
        elif cutlass.const_expr(self.dynamic and self.section_bytes > 0):
            # sections of `heads` (batch, q head) pairs (whole kv heads' worth, SECTION_BYTES of
            # K and V, at least one); inside one, the query tile slowest, longest first
            hq = mQ.shape[2]
            pairs = hq * mQ.shape[3]
            keys_in_section = self.section_bytes // (4 * self.d)  # 2-byte K and V rows
            heads = cutlass.min(cutlass.max(keys_in_section // cutlass.max(mK.shape[0], 1), 1) * (hq // hkv), pairs)
            section = tile // (heads * m_tiles)
            first = section * heads
            here = cutlass.min(heads, pairs - first)  # (the last section may be smaller)
            within = tile - first * m_tiles
            m_block = m_tiles - 1 - within // here
            pair = first + within % here
            head = pair % hq
            batch = pair // hq
            kv_head = head // (hq // hkv)
        else:
            hq = mQ.shape[2]
            head = (tile // m_tiles) % hq
            batch = tile // (m_tiles * hq)
            kv_head = head // (hq // hkv)
        sk = mK.shape[0]
        offset = sk - self.queries(mQ)
        q_first, q_last = self.query_span(m_block * self.block_m)
        # which key blocks this query tile needs (as in kernels.fmha)
        hi = sk
        if cutlass.const_expr(self.has_right):
            hi = cutlass.min(sk, q_last + 1 + offset + right)  # last row's last visible column + 1
        hi = cutlass.max(hi, 0)
        n_block_max = (hi + self.block_n - 1) // self.block_n
        n_block_min = I32(0)
        if cutlass.const_expr(self.has_left):
            n_block_min = cutlass.max(q_first + offset - left, 0) // self.block_n
        if cutlass.const_expr(self.group):
            per_split = (cutlass.max(n_block_max - n_block_min, 0) + num_splits - 1) // num_splits
            n_block_min = n_block_min + split * per_split
            n_block_max = cutlass.min(n_block_min + per_split, n_block_max)
        if cutlass.const_expr(self.tail_pieces):
            # share j of num_splits balanced ones (none empty while num_splits <= the blocks: tail_splits)
            blocks = cutlass.max(n_block_max - n_block_min, 0)
            share = split & (num_splits - 1)
            n_block_max = n_block_min + (((share + 1) * blocks) >> tail[1])
            n_block_min = n_block_min + ((share * blocks) >> tail[1])
        return m_block, head, batch, kv_head, n_block_max, cutlass.max(n_block_max - n_block_min, 0), split

    def tail_piece(self, unit: I32, tail):
        """The tail pieces' kernel: (tile, piece) of its unit. The units past the full rounds are
        the pieces, num_splits (a power of two) consecutive ones a tail tile: piece = tail tile *
        num_splits + its share of the key blocks. Shifts and masks, no division: ptxas keeps the
        results on the uniform datapath (with divisions by num_splits the consumers spilled 64
        bytes at D=128)."""
        full, shift = tail
        return full + ((unit - full) >> shift), unit - full

    @cute.jit
    def mma_turn_wait(self, wg: I32):
        """PINGPONG: wait until the previous consumer has issued its wgmmas (named barrier TURN_BARRIER + wg)."""
        if cutlass.const_expr(self.pingpong):
            cute.arch.barrier(barrier_id=TURN_BARRIER + wg, number_of_threads=256)

    @cute.jit
    def mma_turn_done(self, wg: I32):
        """PINGPONG: hand the turn to the next consumer."""
        if cutlass.const_expr(self.pingpong):
            cute.arch.barrier_arrive(barrier_id=TURN_BARRIER + (wg + 1) % self.consumer_wgs, number_of_threads=256)

    @cute.jit
    def softmax(
        self,
        acc_S: cute.Tensor,
        corr: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        scale_log2: F32,
        tScS: cute.Tensor,
        m0: I32,
        sk: I32,
        offset: I32,
        left: I32,
        right: I32,
        n_block: I32,
        masked: cutlass.Constexpr = None,
    ):
        """Online softmax of one score block: acc_S becomes P (unnormalized), corr the factor for O.

        Only blocks that cross a causal/window limit or the key tail pay for the element mask:
        `masked` True/False when the caller knows (MASK_LOOPS), None to decide here.
        """
        n0 = n_block * self.block_n
        if cutlass.const_expr(masked is not None):
            self.online_softmax(acc_S, corr, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, masked)
            return
        q_first, q_last = self.query_span(m0)
        need_mask = n0 + self.block_n > sk
        if cutlass.const_expr(self.has_right):
            need_mask = need_mask | (n0 + self.block_n - 1 > q_first + offset + right)
        if cutlass.const_expr(self.has_left):
            need_mask = need_mask | (n0 < q_last + offset - left)
        if need_mask:
            self.online_softmax(acc_S, corr, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, True)
        else:
            self.online_softmax(acc_S, corr, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, False)

    @cute.jit
    def online_softmax(
        self,
        acc_S: cute.Tensor,
        corr: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        scale_log2: F32,
        tScS: cute.Tensor,
        m0: I32,
        n0: I32,
        sk: I32,
        offset: I32,
        left: I32,
        right: I32,
        masked: cutlass.Constexpr,
    ):
        S = _mn_view(acc_S)
        if cutlass.const_expr(self.interleaved and self.fma_cols == 0):
            self.online_softmax_interleaved(S, corr, row_max, row_sum, scale_log2, tScS, m0, n0, sk, offset, left, right, masked)
            return
        for r in cutlass.range_constexpr(cute.size(row_max)):
            if cutlass.const_expr(masked):
                self.mask_row(S, r, tScS, m0, n0, sk, offset, left, right)
            s_row = S[r, None].load()
            m_blk = quad_allreduce(s_row.reduce(cute.ReductionOp.MAX, -F32.inf, 0), fmax)
            m_old = row_max[r]
            m_new, m_safe, keep = _row_reference(m_old, m_blk, scale_log2, self.rescale_threshold, masked or self.inf_guard_unmasked)
            # EXP2_FMA: some columns' exp2 by polynomial on the FMA units, the rest on MUFU
            p = exp2_row(S, r, s_row * scale_log2 - m_safe, self.fma_cols)
            corr[r] = _correction(m_old, m_safe, scale_log2, keep)
            row_sum[r] = row_sum[r] * corr[r] + p.reduce(cute.ReductionOp.ADD, F32(0.0), 0)
            row_max[r] = m_new
            S[r, None] = p

    def score_columns(self, mma_qk: cute.TiledMma) -> list:
        """The columns of a consumer thread's scores relative to its first one, known while
        tracing (mask_row compares against them). The wgmma accumulator gives every thread the
        same pattern from its own first column ((lane % 4) * 2 + 8 k + j, PTX ISA's m64nNk16
        D fragment); checked here on the four lanes of a row group and a few more threads, or on
        every one with SCORE_COLUMNS_CHECK_ALL (seconds a build; the tests do)."""
        identity = cute.make_identity_tensor((self.block_m, self.block_n))
        offsets = None
        threads = range(128 * self.consumer_wgs) if SCORE_COLUMNS_CHECK_ALL else (0, 1, 2, 3, 4, 7, 31, 32, 77, 127, 128 * self.consumer_wgs - 1)
        for t in threads:
            cols = _mn_view(mma_qk.get_slice(t).partition_C(identity))
            mine = [cols[0, c][1] - cols[0, 0][1] for c in range(cute.size(cols.shape[1]))]
            if offsets is None:
                offsets = mine
            elif mine != offsets:
                raise RuntimeError(f"internal: MASK_RELATIVE needs every thread's score columns to be thread 0's shifted; thread {t} has {mine}, thread 0 {offsets}")
        return offsets

    @cute.jit
    def mask_row(self, S: cute.Tensor, r: cutlass.Constexpr, tScS: cute.Tensor, m0: I32, n0: I32, sk: I32, offset: I32, left: I32, right: I32):
        """Row r of the thread's score block S (columns from n0): -inf where the key is past the
        end or outside the row's causal/window limits."""
        row = m0 + tScS[r, 0][0]
        if cutlass.const_expr(self.group):
            row = row // self.group  # the packed row's query
        hi = sk
        if cutlass.const_expr(self.has_right):
            hi = cutlass.min(hi, row + offset + right + 1)
        if cutlass.const_expr(not self.mask_relative):
            lo = I32(0)
            if cutlass.const_expr(self.has_left):
                lo = row + offset - left
            for c in cutlass.range_constexpr(cute.size(S.shape[1])):
                col = n0 + tScS[0, c][1]
                if col >= hi or col < lo:
                    S[r, c] = -F32.inf
            return
        # MASK_RELATIVE: column c is first + col_offsets[c] (known while tracing); the row's limits
        # relative to its first column are compared with those constants
        first = n0 + tScS[0, 0][1]
        hi_rel = hi - first
        lo_rel = None
        if cutlass.const_expr(self.has_left):
            lo_rel = row + offset - left - first
        for c in cutlass.range_constexpr(cute.size(S.shape[1])):
            outside = self.col_offsets[c] >= hi_rel
            if cutlass.const_expr(self.has_left):
                outside = outside | (self.col_offsets[c] < lo_rel)
            S[r, c] = cutlass.select_(outside, -F32.inf, S[r, c])  # (a select: no branch per value)

    @cute.jit
    def online_softmax_interleaved(
        self,
        S: cute.Tensor,
        corr: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        scale_log2: F32,
        tScS: cute.Tensor,
        m0: I32,
        n0: I32,
        sk: I32,
        offset: I32,
        left: I32,
        right: I32,
        masked: cutlass.Constexpr,
    ):
        """online_softmax with the thread's rows interleaved column by column: every row's max
        first (four partial maxima a row), then each column's exp2 for all rows in turn, summed
        into two partial sums a row, so the exp2s of different rows follow each other."""
        rows = cute.size(row_max)
        cols = cute.size(S.shape[1])
        if cutlass.const_expr(masked):
            for r in cutlass.range_constexpr(rows):
                self.mask_row(S, r, tScS, m0, n0, sk, offset, left, right)
        m_scaled = []
        for r in cutlass.range_constexpr(rows):
            part = [S[r, 0], S[r, 1], S[r, 2], S[r, 3]]
            for c in cutlass.range_constexpr(4, cols):
                part[c % 4] = cute.arch.fmax(part[c % 4], S[r, c])
            m_blk = quad_allreduce(cute.arch.fmax(cute.arch.fmax(part[0], part[1]), cute.arch.fmax(part[2], part[3])), fmax)
            m_old = row_max[r]
            m_new, m_safe, keep = _row_reference(m_old, m_blk, scale_log2, self.rescale_threshold, masked or self.inf_guard_unmasked)
            corr[r] = _correction(m_old, m_safe, scale_log2, keep)
            row_max[r] = m_new
            m_scaled.append(m_safe)
        sums = [[F32(0.0), F32(0.0)], [F32(0.0), F32(0.0)]][:rows]
        for c in cutlass.range_constexpr(cols):
            for r in cutlass.range_constexpr(rows):
                e = cute.math.exp2(S[r, c] * scale_log2 - m_scaled[r], fastmath=True)
                S[r, c] = e
                sums[r][c % 2] = sums[r][c % 2] + e
        for r in cutlass.range_constexpr(rows):
            row_sum[r] = row_sum[r] * corr[r] + (sums[r][0] + sums[r][1])

    @cute.jit
    def epilogue(
        self,
        acc_O: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        scale_log2: F32,
        tScS: cute.Tensor,
        mO: cute.Tensor,
        mLSE: cute.Tensor,
        mSink: cute.Tensor,
        mCodes: cute.Tensor,
        mScales: cute.Tensor,
        mGlobal: cute.Tensor,
        sO: cute.Tensor,
        handoff,
        mma_pv: cute.TiledMma,
        s2g: cute.CopyAtom,  # (a TiledCopy; with TMA_STORE the TMA store atom)
        ct: I32,
        wg: I32,
        m0: I32,
        head: I32,
        batch: I32,
        sQ_tile=None,  # NVFP4_OFFLOAD_FALLBACK: this tile's Q buffer, free for O's rows
        o_free=None,  # O_IN_V: this tile's mbarrier, which the producer waits on before loading V again
    ):
        """Normalize O, write the LSE, and O through this warpgroup's rows of sO (or O as NVFP4,
        quantized here or, with NVFP4_OFFLOAD, handed over to the quantizing warps; with the
        fallback, quantized here through the tile's Q buffer while the last rows are not back)."""
        d = self.d
        sq = mO.shape[0]
        acc_O_mn = _mn_view(acc_O)
        sink_logit = None  # the head's sink joins each row's denominator
        if cutlass.const_expr(self.has_sink):
            sink_logit = mSink[head]
        for r in cutlass.range_constexpr(cute.size(row_max)):
            scale, lse2 = finish_row(row_sum[r], row_max[r], scale_log2, sink_logit)
            acc_O_mn[r, None] = acc_O_mn[r, None].load() * scale
            row = m0 + tScS[r, 0][0]
            if ct % 4 == 0:
                if row < sq:
                    mLSE[batch, head, row] = lse2 * F32(LN2)

        rO = cute.make_fragment_like(acc_O, self.dtype)
        rO.store(acc_O.load().to(self.dtype))
        if cutlass.const_expr(self.o_direct):
            self.direct_epilogue(rO, tScS, mO, mma_pv, ct, m0, head, batch)
            return
        if cutlass.const_expr(self.tma_store):
            self.tma_store_epilogue(rO, mO, sO, s2g, ct, wg, m0, head, batch, o_free)
            return
        r2s = _r2s_tiled_copy(self.dtype, mma_pv, self.stmatrix)
        thr_r2s = r2s.get_slice(ct)
        if cutlass.const_expr(self.fallback):
            self.hand_over_or_quantize(r2s, thr_r2s, rO, sO, sQ_tile, handoff, (mCodes, mScales, mGlobal), sq, ct, wg, m0, head, batch)
            return
        # the warpgroup's rows of sO: every thread is done reading the previous tile's
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        if cutlass.const_expr(self.offload):
            sTiles, bar_o = handoff[0], handoff[1]
            cute.arch.mbarrier_wait(bar_o + 2 * wg + 1, sTiles[3, wg])  # and the quantizing warps with the last rows handed over
        self.copy_r2s(r2s, thr_r2s, rO, thr_r2s.partition_D(sO))
        if cutlass.const_expr(self.offload):
            if ct % 128 == 0:
                sTiles[0, wg] = batch
                sTiles[1, wg] = head
                sTiles[2, wg] = m0 + wg * 64  # (Sq or more: no rows to write)
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        if cutlass.const_expr(self.offload):
            if ct % 128 == 0:
                sTiles[3, wg] = sTiles[3, wg] ^ 1  # (read by the warpgroup before the barrier above)
                cute.arch.mbarrier_arrive(bar_o + 2 * wg)
            return
        sO = cute.local_tile(sO, (64, d), (wg, 0))
        if cutlass.const_expr(self.nvfp4_out):
            # O as NVFP4, quantized from this warpgroup's tile as it would have been stored
            first = m0 + wg * 64
            if first < sq:
                store_nvfp4(sO, (mCodes, mScales, mGlobal), batch, head, m0 // 64 + wg, sq - first, ct % 128, 128)
        else:
            gO = cute.local_tile(mO[None, None, head, batch], (64, d), (m0 // 64 + wg, 0))
            thr_s2g = s2g.get_slice(ct % 128)
            tOs = thr_s2g.partition_S(sO)
            tOg = thr_s2g.partition_D(gO)
            tOc = thr_s2g.partition_S(cute.make_identity_tensor((64, d)))
            tOr = cute.make_fragment_like(tOs, self.dtype)
            cute.copy(s2g, tOs, tOr)
            for m in cutlass.range_constexpr(cute.size(tOg.shape[1])):
                if m0 + wg * 64 + tOc[0, m, 0][0] < sq:
                    cute.copy(s2g, tOr[None, m, None], tOg[None, m, None])


    @cute.jit
    def direct_epilogue(self, rO: cute.Tensor, tScS: cute.Tensor, mO: cute.Tensor, mma_pv: cute.TiledMma, ct: I32, m0: I32, head: I32, batch: I32):
        """O_DIRECT: this thread's O (rO, bf16/fp16, the P V accumulator's layout) straight into
        the tile's rows of mO, 16 bytes a store, rows past Sq skipped.

        In the accumulator, lane t of a quad holds, of each of its two rows, one 32-bit word (a
        pair of adjacent columns, 8 j + 2 t and the next) of every 8-column group j. Stored as
        they are, a warp's store writes 16 bytes in each of 8 rows: half sectors, eight 128-byte
        lines an instruction, 8 x the requests of O's 16-byte stores from shared memory (and 4%
        slower at D=128, s14/b). So the quad first transposes each run of 4 groups among its
        lanes (a 4 x 4 transpose of words: two butterfly exchanges, across lane bit 0 then 1),
        after which lane t holds group 4 k + t whole, 16 contiguous bytes."""
        gO = mO[None, None, head, batch]  # (Sq, D)
        t = ct % 4  # (the lane's place in its quad: the quads' four lanes share their rows)
        odd, upper = (t & 1) == 1, (t & 2) == 2
        words_mn = _mn_view(cute.recast_tensor(rO, I32))  # (rows, D / 8): row r's word of group j
        for r in cutlass.range_constexpr(cute.size(words_mn.shape[0])):
            row = m0 + tScS[r, 0][0]
            for k in cutlass.range_constexpr(self.d // 32):
                m = [words_mn[r, 4 * k + i] for i in range(4)]  # (lane t, group 4 k + i)
                for j in (0, 2):  # the 2 x 2 blocks' corners, across lane bit 0
                    got = cute.arch.shuffle_sync_bfly(cutlass.select_(odd, m[j], m[j + 1]), offset=1)
                    m[j], m[j + 1] = cutlass.select_(odd, got, m[j]), cutlass.select_(odd, m[j + 1], got)
                for j in (0, 1):  # the 2 x 2 blocks themselves, across lane bit 1
                    got = cute.arch.shuffle_sync_bfly(cutlass.select_(upper, m[j], m[j + 2]), offset=2)
                    m[j], m[j + 2] = cutlass.select_(upper, got, m[j]), cutlass.select_(upper, m[j + 2], got)
                # m[i]: lane i's word of group 4 k + t, i.e. columns 8 (4 k + t) + 2 i and the next
                if row < mO.shape[0]:
                    vals = cute.make_rmem_tensor((4,), I32)
                    for i in cutlass.range_constexpr(4):
                        vals[i] = m[i]
                    dst = cute.recast_tensor(cute.local_tile(gO, (1, 8), (row, 4 * k + t)), I32)
                    cute.autovec_copy(vals, cute.make_tensor(dst.iterator, cute.make_layout(4)))

    @cute.jit
    def tma_store_epilogue(
        self, rO: cute.Tensor, mO: cute.Tensor, sO: cute.Tensor, tma_o: cute.CopyAtom, ct: I32, wg: I32, m0: I32, head: I32, batch: I32,
        o_free=None,
    ):  # fmt: skip
        """TMA_STORE: this warpgroup's O (rO, bf16/fp16) into its own 64 x D stage of sO, then one
        thread stores the stage with TMA (rows past Sq are not written: TMA clips them) and the
        next tile's epilogue waits only until that store has read the stage. O_IN_V: sO lies over
        V's ring, written once every consumer warpgroup is done with V, and the storing thread
        waits for its store's reads at once, then tells the producer (o_free)."""
        d = self.d
        # the accumulator fragment of one warpgroup's 64 x D tile, whichever warpgroup it is
        r2s = _r2s_tiled_copy(self.dtype, self.pv_mma(1), self.stmatrix)
        thr_r2s = r2s.get_slice(ct % 128)
        if cutlass.const_expr(self.o_last_v):
            o_free, o_stage = o_free  # (the tile's mbarrier, and the V stage its O takes)
            stage = sO[None, None, wg, o_stage]
        else:
            stage = sO[None, None, wg]
        if cutlass.const_expr(self.o_in_v):
            # every warpgroup's last P V wgmma is complete (each waited for its own): V's ring is
            # free (the producer loads no V until o_free; the last tile's stores have read O)
            cute.arch.barrier(barrier_id=V_FREE_BARRIER, number_of_threads=128 * self.consumer_wgs)
        else:
            if ct % 128 == 0:
                cute.arch.cp_async_bulk_wait_group(0, read=True)  # the previous tile's store has read the stage
            cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        self.copy_r2s(r2s, thr_r2s, rO, thr_r2s.partition_D(stage))
        cute.arch.fence_proxy("async.shared", space="cta")  # the stage, visible to the TMA unit
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        if ct % 128 == 0:
            if m0 + wg * 64 < mO.shape[0]:
                gO = cute.local_tile(mO[None, None, head, batch], (64, d), (m0 // 64 + wg, 0))
                tOs, tOg = cpasync.tma_partition(tma_o, 0, cute.make_layout(1), cute.group_modes(stage, 0, 2), cute.group_modes(gO, 0, 2))
                cute.copy(tma_o, tOs, tOg)
                cute.arch.cp_async_bulk_commit_group()
            if cutlass.const_expr(self.o_in_v):
                cute.arch.cp_async_bulk_wait_group(0, read=True)  # the store has read the stage: V may load over it
                cute.arch.mbarrier_arrive(o_free)

    @cute.jit
    def hand_over_or_quantize(self, r2s, thr_r2s, rO: cute.Tensor, sO: cute.Tensor, sQ_tile: cute.Tensor, handoff, outputs, sq: I32, ct: I32, wg: I32, m0: I32, head: I32, batch: I32):
        """NVFP4_OFFLOAD_FALLBACK, a consumer warpgroup's NVFP4 epilogue: its rows handed over
        if the quantizing warps have given back the last ones (one thread tests, the warpgroup
        follows its answer), else quantized here from this tile's Q buffer."""
        sTiles, bar_o = handoff[0], handoff[1]
        if ct % 128 == 0:
            if cutlass.const_expr(self.fallback_always):
                sTiles[4, wg] = I32(0)  # ("always": a test of the kept rows' path)
            else:
                sTiles[4, wg] = cutlass.select_(cute.arch.mbarrier_test_wait(bar_o + 2 * wg + 1, sTiles[3, wg]), I32(1), I32(0))
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        handing = sTiles[4, wg] != 0  # (one value for the warpgroup: read after the barrier)
        first = m0 + wg * 64
        if handing:
            self.copy_r2s(r2s, thr_r2s, rO, thr_r2s.partition_D(sO))
            if ct % 128 == 0:
                sTiles[0, wg] = batch
                sTiles[1, wg] = head
                sTiles[2, wg] = first
        else:
            self.copy_r2s(r2s, thr_r2s, rO, thr_r2s.partition_D(sQ_tile))
        cute.arch.barrier(barrier_id=EPILOGUE_BARRIER + wg, number_of_threads=128)
        if handing:
            if ct % 128 == 0:
                sTiles[3, wg] = sTiles[3, wg] ^ 1
                cute.arch.mbarrier_arrive(bar_o + 2 * wg)
        else:
            if first < sq:
                store_nvfp4(cute.local_tile(sQ_tile, (64, self.d), (wg, 0)), outputs, batch, head, first // 64, sq - first, ct % 128, 128)

    @cute.jit
    def quantize_handed_over(self, sO: cute.Tensor, handoff, outputs, sq: I32, qt: I32):
        """NVFP4_OFFLOAD, the quantizing warps of the producer warpgroup (this thread is `qt` of
        QUANTIZER_THREADS): each consumer warpgroup's rows of sO as it hands them over, as
        NVFP4, in rounds of one hand-over a warpgroup (its k-th in round k), until a hand-over
        without rows (first row -1, hand_over_end). Without NVFP4_OFFLOAD_FALLBACK every
        warpgroup hands over every tile, so they end in the same round; with it a warpgroup
        keeps some tiles' rows, its k-th hand-over need not be of the others' tile, and one
        that has ended is not waited for again."""
        phase = I32(0)
        if cutlass.const_expr(not self.fallback):
            more = cutlass.Boolean(True)
            while more:
                for w in cutlass.range_constexpr(self.consumer_wgs):
                    more = self.quantize_rows(sO, handoff, outputs, sq, qt, w, phase) >= 0
                phase = phase ^ 1
        else:
            everyone = (1 << self.consumer_wgs) - 1
            ended = I32(0)  # the warpgroups past their last hand-over, a bit each
            while ended != everyone:
                for w in cutlass.range_constexpr(self.consumer_wgs):
                    if (ended >> w) & 1 == 0:
                        if self.quantize_rows(sO, handoff, outputs, sq, qt, w, phase) < 0:
                            ended = ended | (1 << w)
                phase = phase ^ 1

    @cute.jit
    def quantize_rows(self, sO: cute.Tensor, handoff, outputs, sq: I32, qt: I32, w: cutlass.Constexpr, phase: I32) -> I32:
        """NVFP4_OFFLOAD: the next rows warpgroup `w` hands over (phase `phase`), as NVFP4 (a row a
        thread, `store_nvfp4`), given back; returns their first row (-1: no rows, the last)."""
        sTiles, bar_o = handoff[0], handoff[1]
        cute.arch.mbarrier_wait(bar_o + 2 * w, phase)
        first = sTiles[2, w]
        if first >= 0:
            if first < sq:
                rows = cute.local_tile(sO, (64, self.d), (w, 0))
                store_nvfp4(rows, outputs, sTiles[0, w], sTiles[1, w], first // 64, sq - first, qt, QUANTIZER_THREADS, False)
        cute.arch.mbarrier_arrive(bar_o + 2 * w + 1)
        return first

    @cute.jit
    def hand_over_end(self, handoff, ct: I32, wg: I32):
        """NVFP4_OFFLOAD: a consumer warpgroup past its last tile tells the quantizing warps (a
        hand-over without rows), once they have given back its last rows."""
        sTiles, bar_o = handoff[0], handoff[1]
        if ct % 128 == 0:
            cute.arch.mbarrier_wait(bar_o + 2 * wg + 1, sTiles[3, wg])
            sTiles[2, wg] = I32(-1)
            cute.arch.mbarrier_arrive(bar_o + 2 * wg)

    @cute.jit
    def partials_epilogue(
        self,
        acc_O: cute.Tensor,
        row_max: cute.Tensor,
        row_sum: cute.Tensor,
        scale_log2: F32,
        tScS: cute.Tensor,
        mPartO: cute.Tensor,
        mPartLSE: cute.Tensor,
        mma_pv: cute.TiledMma,
        ct: I32,
        m0: I32,
        bh: I32,
        split: I32,
    ):
        """Packed split-KV: this split's O (normalized by its own sum) and LSE (log2 units) of the
        tile's valid packed rows, f32, from registers; the sink joins in the combine."""
        rows = mPartO.shape[2]
        acc_O_mn = _mn_view(acc_O)
        tOgO = _mn_view(
            mma_pv.get_slice(ct).partition_C(cute.local_tile(mPartO[split, bh, None, None], (self.block_m, self.d), (m0 // self.block_m, 0)))
        )  # fmt: skip
        for r in cutlass.range_constexpr(cute.size(row_max)):
            scale, lse2 = finish_row(row_sum[r], row_max[r], scale_log2, None)
            row = m0 + tScS[r, 0][0]
            if row < rows:
                for c in cutlass.range_constexpr(cute.size(acc_O_mn.shape[1])):
                    tOgO[r, c] = acc_O_mn[r, c] * scale
                if ct % 4 == 0:
                    mPartLSE[split, bh, row] = lse2


class _PackedSplitSm90(_FmhaSm90):
    """Short queries over long keys on wgmma: GQA packing and split-KV, then fmha_decode's combine.

    The rows of a tile are packed rows of one (batch, kv head): row r is query r // G of q
    head kv_head * G + r % G (G = Hq / Hkv, a compile-time divisor of BLOCK_M), so the G q
    heads that share K/V read it once, and Sq = 16 with G = 8 fills a 128-row tile. TMA
    loads them as one box: Q seen as ((G, Sq), D, Hkv, B). The tile's key blocks are cut
    into num_splits shares, one CTA each; a CTA writes its rows' O normalized by its own sum
    and its LSE (log2) as f32 partials [splits, B * Hkv, G * Sq, D] and [splits, B * Hkv,
    G * Sq], and `fmha_decode`'s combine kernel (launched by the same host function) merges
    them into O and LSE, adding the sink. Same call as `fmha_decode.compile_decode`'s (the
    counters are not read), so kernels/ops.py launches either the same way.
    """

    @cute.jit
    def __call__(
        self,
        q_ptr: cute.Pointer,
        k_ptr: cute.Pointer,
        v_ptr: cute.Pointer,
        o_ptr: cute.Pointer,
        lse_ptr: cute.Pointer,
        sink_ptr: cute.Pointer,
        part_o_ptr: cute.Pointer,
        part_lse_ptr: cute.Pointer,
        counters_ptr: cute.Pointer,
        b: I32,
        sq: I32,
        sk: I32,
        hq: I32,
        hkv: I32,
        num_splits: I32,
        scale_log2: F32,
        left: I32,
        right: I32,
        stream: cuda.CUstream,
    ):
        d = self.d
        dt = self.dtype
        g = self.group
        q_row = cute.assume(hq * d, divby=d)
        kv_row = cute.assume(hkv * d, divby=d)
        # Q packed: ((G, Sq), D, Hkv, B); K/V (Sk, D, Hkv, B) as in _FmhaSm90
        mQ = cute.make_tensor(
            q_ptr, cute.make_layout(((g, sq), d, hkv, b), stride=((d, q_row), 1, g * d, cute.assume(sq * q_row, divby=d)))
        )
        kv_lay = cute.make_layout((sk, d, hkv, b), stride=(kv_row, 1, d, cute.assume(sk * kv_row, divby=d)))
        mK = cute.make_tensor(k_ptr, kv_lay)
        mV = cute.make_tensor(v_ptr, kv_lay)
        mO, mLSE, mSink = bshd_tensors(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sink_ptr, b, sq, sk, hq, hkv, d)[3:]
        rows = g * sq
        bh = b * hkv
        row_d = cute.assume(rows * d, divby=d)
        mPartO = cute.make_tensor(
            part_o_ptr, cute.make_layout((num_splits, bh, rows, d), stride=(cute.assume(bh * row_d, divby=d), row_d, d, 1))
        )
        mPartLSE = cute.make_tensor(part_lse_ptr, cute.make_layout((num_splits, bh, rows), stride=(bh * rows, rows, 1)))

        sQ_layout, sKV_layout, (tma_q, tQ), (tma_k, tK), (tma_v, tV), mma_qk, mma_pv = self.loads_and_mmas(mQ, mK, mV)
        if cutlass.const_expr(self.mask_relative):
            self.col_offsets = self.score_columns(mma_qk)
        stages = self.stages

        @cute.struct
        class Smem:
            bar_q: cute.struct.MemRange[cutlass.Int64, 2]
            bar_k: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            bar_v: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            q: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
            k: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
            v: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]

        s2g = row_copy(cute.nvgpu.CopyUniversalOp(), dt, 128)  # (not used: no O buffer)
        m_tiles = cute.ceil_div(rows, self.block_m)
        n_tiles = m_tiles * num_splits * bh
        # the kernel's O and LSE are the partials here (partials_epilogue); the NVFP4 outputs and
        # the scheduler's counters (one CTA per tile) are never read
        self.kernel(
            tQ, tK, tV, tma_q, tma_k, tma_v, mPartO, mPartLSE, mSink, mPartO, mPartLSE, mPartO, mPartLSE, mPartO, mPartLSE, scale_log2,
            left, right, m_tiles, n_tiles, num_splits, sQ_layout, sKV_layout, mma_qk, mma_pv, s2g, Smem,
        ).launch(grid=(n_tiles, 1, 1), block=[self.threads, 1, 1], stream=stream, min_blocks_per_mp=1)  # fmt: skip
        combine = fmha_decode._SplitKV(dt, d, self.has_left, self.has_right, self.has_sink, pdl=bool(self.pdl))
        combine.combine_kernel(mPartO, mPartLSE, mO, mLSE, mSink).launch(
            grid=(cute.ceil_div(rows, fmha_decode.COMBINE_WARPS) * bh, 1, 1), block=[fmha_decode.COMBINE_WARPS * 32, 1, 1], stream=stream,
            use_pdl=bool(self.pdl),
        )


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


def _per_config(knob, head_dim: int, masked: bool):
    """A knob that is one value, or a dict {(head dim, crosses a diagonal): value} like TILES."""
    return knob[(head_dim, masked)] if isinstance(knob, dict) else knob


def wide_keys(head_dim: int, sk: int) -> bool:
    """Whether a call with `sk` keys takes WIDE_KEY_TILES' tile (where it has one for the head dim)."""
    return sk >= WIDE_KEYS_MIN and head_dim in WIDE_KEY_TILES


def config_for(head_dim: int, has_left: bool, has_right: bool, nvfp4_out: bool = False, wide_keys: bool = False) -> Config:
    """The knobs' current values for one configuration (TILES, NVFP4_TILES for the NVFP4
    output, WIDE_KEY_TILES for a call with many keys: `wide_keys`, or TILE_OVERRIDE when set)."""
    masked = has_left or has_right
    wide = WIDE_KEY_TILES.get(head_dim) if wide_keys and not masked and not nvfp4_out else None
    block_m, block_n = TILE_OVERRIDE or wide or (nvfp4_out and NVFP4_TILES.get((head_dim, masked))) or TILES[(head_dim, masked)]
    if block_m % 64 or not 64 <= block_m <= 192 or block_n % 16 or not 16 <= block_n <= 256:
        raise ValueError(f"tile ({block_m}, {block_n}): BLOCK_M must be 64, 128 or 192, BLOCK_N a multiple of 16 up to 256")
    pingpong = _per_config(PINGPONG, head_dim, masked)
    if wide is not None and WIDE_KEY_PINGPONG is not None:
        pingpong = bool(WIDE_KEY_PINGPONG)
    if pingpong and block_m < 128:
        raise ValueError("PINGPONG takes turns between two or three consumer warpgroups (BLOCK_M = 128 or 192)")
    if isinstance(PERSISTENT, dict):
        persistent = PERSISTENT[(head_dim, masked)]
    elif PERSISTENT in (True, False, "auto"):
        persistent = PERSISTENT is True or (PERSISTENT == "auto" and head_dim == 64 and not masked)
    else:
        raise ValueError(f"PERSISTENT must be True, False, 'auto' or a dict like TILES, not {PERSISTENT!r}")
    fma_cols = round(EXP2_FMA.get((head_dim, masked), 0.0) * block_n / 4)
    order = _per_config(ORDER, head_dim, masked)
    if order not in ("stride", "snake", "dynamic"):
        raise ValueError(f"ORDER must be 'stride', 'snake', 'dynamic' or a dict of them like TILES, not {ORDER!r}")
    stages = ring_stages(head_dim, masked)
    q_stages = _per_config(Q_STAGES, head_dim, masked)
    if q_stages not in (1, 2):
        raise ValueError(f"Q_STAGES must be 1 or 2 (or a dict of them like TILES), not {Q_STAGES!r}")
    p_smem = bool(_per_config(P_SMEM, head_dim, masked))

    o_in_q = bool(WIDE_KEY_O_IN_Q if wide is not None else _per_config(O_IN_Q, head_dim, masked)) and not nvfp4_out
    o_direct = (bool(_per_config(O_DIRECT, head_dim, masked)) or (wide is not None and not o_in_q)) and not nvfp4_out
    tma_store = bool(_per_config(TMA_STORE, head_dim, masked)) and not o_direct
    if o_in_q and not tma_store:
        raise ValueError("O_IN_Q stores O by TMA from Q's buffer: it takes TMA_STORE (and not O_DIRECT) for the configuration")
    o_in_v = _per_config(O_IN_V, head_dim, masked)
    if o_in_v not in (False, True, "last_v"):
        raise ValueError(f"O_IN_V must be False, True or 'last_v' (or a dict of them like TILES), not {O_IN_V!r}")
    o_in_v = o_in_v if tma_store and not nvfp4_out else False  # (as _FmhaSm90 takes it)
    if o_in_v and block_m > stages * block_n:
        raise ValueError(f"O_IN_V: O's {block_m} x {head_dim} tile does not fit the V ring's {stages} x {block_n} rows")
    if o_in_v == "last_v" and (stages != 2 or block_m > block_n):
        raise ValueError(f"O_IN_V 'last_v' takes two K/V stages and O ({block_m} rows) within one ({block_n} rows)")

    def smem_bytes(q_buffers: int) -> int:
        """Barriers (the first kilobyte), Q's buffers, O (unless O_IN_V or O_DIRECT), the K and V rings, P's tile (P_SMEM)."""
        o_buffers = 0 if o_in_v or o_direct or o_in_q else 1
        return (
            1024 + (q_buffers + o_buffers) * block_m * head_dim * 2 + 2 * stages * block_n * head_dim * 2
            + (block_m * block_n * 2 if p_smem else 0)
        )  # fmt: skip

    rescale_threshold = _per_config(RESCALE_THRESHOLD, head_dim, masked)
    if rescale_threshold is not None and not (isinstance(rescale_threshold, (int, float)) and 0 <= rescale_threshold <= 16):
        raise ValueError(f"RESCALE_THRESHOLD must be None or a number of log2 units in [0, 16] (or a dict like TILES), not {RESCALE_THRESHOLD!r}")
    rescale_threshold = None if rescale_threshold is None else float(rescale_threshold)
    cluster = _per_config(CLUSTER, head_dim, masked)
    if cluster not in (1, 2):
        raise ValueError(f"CLUSTER must be 1 or 2 (or a dict of them like TILES), not {CLUSTER!r}")
    cluster = 1 if masked else cluster  # (a diagonal: the cluster's tiles would visit different key blocks)
    offload = bool(_per_config(NVFP4_OFFLOAD, head_dim, masked))
    fallback = _per_config(NVFP4_OFFLOAD_FALLBACK, head_dim, masked)
    if fallback not in (False, True, "always"):
        raise ValueError(f"NVFP4_OFFLOAD_FALLBACK must be False, True or 'always' (or a dict of them like TILES), not {NVFP4_OFFLOAD_FALLBACK!r}")
    if cluster > 1 and o_in_v:
        raise ValueError("O_IN_V takes CLUSTER = 1: the other CTA's multicast V loads would land on O before this CTA has stored it")
    if o_in_q and (o_in_v or cluster > 1):
        raise ValueError("O_IN_Q takes O_IN_V = False and CLUSTER = 1")
    if cluster > 1 and persistent and order == "dynamic":
        raise ValueError("CLUSTER > 1 takes a static ORDER ('stride' or 'snake'): the dynamic order draws a tile per CTA, not per cluster")
    tail_split = bool(_per_config(TAIL_SPLIT, head_dim, masked)) and not masked and persistent and order != "dynamic"
    tail_split = tail_split and cluster == 1 and not o_in_v and not nvfp4_out  # (and no sink: _FmhaSm90)
    if TAIL_PIECES_TRIGGER not in ("start", "last_load"):
        raise ValueError(f"TAIL_PIECES_TRIGGER must be 'start' or 'last_load', not {TAIL_PIECES_TRIGGER!r}")
    tail_split = (TAIL_PIECES_TRIGGER if TAIL_COMBINE_PDL else "plain") if tail_split else False  # (how the pieces and the combine launch)
    if q_stages == 2 and (o_in_q or smem_bytes(2) > SHARED_MEMORY_BYTES):
        q_stages = 1  # a second Q buffer only where it fits (not beside the wider tiles: 128 x 160 at D=128), never with O in it
    smem = smem_bytes(q_stages)
    if smem > SHARED_MEMORY_BYTES:
        raise ValueError(
            f"tile ({block_m}, {block_n}) at D={head_dim} with {stages} K/V stages needs {smem} bytes of shared memory a CTA "
            f"(one Q buffer); sm_90a gives at most {SHARED_MEMORY_BYTES}"
        )
    return Config(
        block_m, block_n, stages, INTRA_WG_OVERLAP, pingpong, sm_count() // cluster * cluster if persistent else 2**31 - 1, fma_cols, order,
        mask_loops(head_dim, masked, wide is not None), SECTION_BYTES if order == "dynamic" else 0,
        p_smem,
        INTRA_WG_OVERLAP and bool(_per_config(LATE_RESCALE, head_dim, masked)),
        bool(_per_config(SOFTMAX_INTERLEAVED, head_dim, masked)),
        bool(_per_config(MASK_RELATIVE, head_dim, masked)),
        bool(_per_config(STMATRIX, head_dim, masked)),
        tma_store,
        bool(_per_config(K_AHEAD, head_dim, masked)),
        INTRA_WG_OVERLAP and bool(_per_config(V_WAIT_LATE, head_dim, masked)),
        bool(_per_config(CACHE_HINTS, head_dim, masked)),
        q_stages,
        cluster,
        offload,
        fallback if offload and q_stages == 2 else False,
        o_in_v,
        rescale_threshold,
        bool(TRACE_CTA_TIMES),
        tail_split,
        INTRA_WG_OVERLAP and not p_smem and bool(_per_config(P_CONVERT_NEXT, head_dim, masked)),
        o_direct,
        o_in_q,
        bool(_per_config(UNMASKED_INF_GUARD, head_dim, masked)),
    )  # fmt: skip


@functools.lru_cache(maxsize=4096)  # (called on every launch: the search below is ~30 us of Python)
def tail_splits(config: Config, b: int, sq: int, sk: int, hq: int, has_sink: bool) -> int:
    """TAIL_SPLIT: the pieces each tile of a launch's last partial round is cut into (1: none).

    The round's R tiles of `blocks` key blocks take `blocks` block-times while ctas - R SMs idle;
    cut into s pieces they take ceil(R s / ctas) rounds of blocks / s + TAIL_PIECE_COST, plus
    TAIL_TRAFFIC_COST a piece for its partials and TAIL_LAUNCH_COST once. The smallest power of two s (at most
    TAIL_SPLIT_MAX and `blocks`) of the fewest block-times, if that is at least 5% fewer than
    the plain round's: a long tile and a short last round pay (1x32x16384x128: 4 tiles left on
    132 SMs), a half-full round of short tiles does not (the partials cost what the split saves).
    The kernel's own tile count; with TAIL_SPLIT off, 1 at once."""
    if not config.tail_split or has_sink:
        return 1
    ctas, tail = _tail_tiles(config, b, sq, hq)
    blocks = -(-sk // config.block_n)
    if tail == 0 or blocks < 2:
        return 1
    cost = lambda s: -(-tail * s // ctas) * (blocks / s + TAIL_PIECE_COST) + (TAIL_TRAFFIC_COST * tail * s + TAIL_LAUNCH_COST if s > 1 else 0.0)  # noqa: E731
    powers = [1 << k for k in range(TAIL_SPLIT_MAX.bit_length()) if 1 << k <= min(TAIL_SPLIT_MAX, blocks)]  # (the kernel shifts)
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


def ring_stages(head_dim: int, masked: bool) -> int:
    """STAGES for one configuration (an int, or a dict by (head dim, crosses a diagonal))."""
    return _per_config(STAGES, head_dim, masked)


def mask_loops(head_dim: int, masked: bool, wide: bool = False, packed: bool = False) -> bool:
    """MASK_LOOPS for one configuration (a bool, or a dict by (head dim, crosses a diagonal); absent = False).
    Without a diagonal never for the wide build (`wide`: WIDE_KEY_TILES' tile, 6% slower with it);
    the packed split-KV kernel (`packed`) there follows SPLIT_MASK_LOOPS."""
    if not masked and wide:
        return False
    if not masked and packed:
        return bool(SPLIT_MASK_LOOPS)
    return MASK_LOOPS.get((head_dim, masked), False) if isinstance(MASK_LOOPS, dict) else bool(MASK_LOOPS)


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
    wide_keys: bool = False,
):  # fmt: skip
    """The compiled kernel for one configuration and the knobs' current values (no GPU needed;
    `wide_keys`: the build for calls with many keys, `wide_keys()`)."""
    if arch not in ARCHS:
        raise ValueError(f"the wgmma path targets {ARCHS}, not {arch!r}")
    config = config_for(head_dim, has_left, has_right, nvfp4_out, wide_keys)
    return _compile(dtype, head_dim, has_left, has_right, has_sink, arch, options, nvfp4_out, config)


@functools.cache
def _compile(dtype: str, head_dim: int, has_left: bool, has_right: bool, has_sink: bool, arch: str, options: str, nvfp4_out: bool, config: Config):
    dt = DTYPES[dtype]
    kernel = _FmhaSm90(dt, head_dim, has_left, has_right, has_sink, nvfp4_out, config)
    with lowering.prelowering(lowering.auto_pipeline(arch)):
        return cute.compile(kernel, *fake_arguments(dt), options=f"--gpu-arch {arch} {options}".strip())


# packed split-KV: (query rows per CTA, keys per K/V tile) by head dim; one CTA per tile
SPLIT_TILES = {64: (128, 128), 128: (128, 128)}
# choose_splits: taken for more than 16 packed rows (G * Sq; fewer: fmha_decode's one-launch
# kernel is faster) and at least SPLIT_MIN_KEYS visible keys, where it splits (the plain
# wgmma grid would not fill the SMs) or where the plain kernel's 128-row query tiles would be
# at least SPLIT_MIN_WASTE empty (Sq = 16: 7/8, Sq = 64: 1/2). The splits fill one wave of
# SPLIT_CTAS_PER_SM CTAs an SM, each keeping at least SPLIT_MIN_BLOCKS key blocks. H200,
# bench/fmha_decode_sweep.py (bench/h200/fmha_split/run1): 1.2-1.7x the plain wgmma kernel
# where it splits or packs Sq <= 64 (e.g. 2x32x128x32768 GQA 8:1: 0.209 against 0.361 ms);
# one split at Sq = 128 (8x32x128x4096) is slower than the plain kernel (0.127 against 0.108 ms:
# the partials and the combine cost more than the K/V reads that packing saves).
SPLIT_MIN_KEYS = 1024
SPLIT_STAGES = 2  # its K/V ring (no O buffer: D=128 has room for 3, 224 KB; 3 was within the noise, run9)
SPLIT_MIN_WASTE = 0.25
SPLIT_CTAS_PER_SM = 1
SPLIT_MIN_BLOCKS = 4
SPLIT_MAX = 128
# the combine as a programmatic dependent launch (allowed at fmha_decode.PDL_TRIGGER) for at most
# this many splits, a plain launch above (fmha_decode.COMBINE_PDL: always PDL); 0: by COMBINE_PDL
# alone. H200 (s11, see fmha_decode.PDL_TRIGGER): +1-2% at 2 splits, even at 4, -1.5% at 16.
SPLIT_COMBINE_PDL_MAX = 2
# RESCALE_THRESHOLD for the packed split-KV kernel (a split visits 4 or more key blocks); None:
# every block rescales. 8.0 (s12/f, three passes, TFLOP/s, against None): Sq=16 Sk=4096 242-243 /
# 248-249, Sq=16 Sk=32768 330-331 / 324-325, Sq=64 538-539 / 550; and RESCALE_THRESHOLD's error. Off.
SPLIT_RESCALE_THRESHOLD = None
# FA3's scheduler barrier (PINGPONG) in the packed split-KV kernel: its two consumer warpgroups
# take turns issuing their wgmmas. The unpacked kernel's 128 x 192 build gains from it where its
# 128 x 128 build loses (WIDE_KEY_PINGPONG); the split's partials go out from registers, so a
# 128 x 192 SPLIT_TILES fits beside Q and two K/V stages (224 KB) as it is. H200 (s19/b, TFLOP/s,
# against off at 128 x 128; Sq=16 Sk=4096 / Sq=16 Sk=32768 / Sq=64 Sk=8192 / Sq=128 Sk=32768, GQA
# 8:1): 128 x 128 241.2 / 330.6 / 487.4 / 573.3 against 239.9-241.0 / 329.8-330.0 / 552.3-552.6 /
# 669.2-669.3; 128 x 192 235.7 / 318.1-318.2 / 552.2-552.6 / 669.0-669.8; 128 x 176 236.3 / 319.0 /
# 545.6 / 660.9. Off.
SPLIT_PINGPONG = False
# the packed split-KV kernel's key loop without a diagonal compiled without the element mask
# (MASK_LOOPS' (128, False) choice for the main kernel, s19: +0.8..1.9%; its loop 781 -> 462 SASS
# instructions); False: the loop decides per block at run time. Slower or even on the H200
# (s20/c, three passes, TFLOP/s, on against off): Sq=16 Sk=32768 310.8-318.6 / 319.9-324.4,
# Sq=128 Sk=32768 664.4-666.6 / 668.9-670.3, Sq=64 Sk=8192 552.9-556.6 / 546.4-558.7, Sq=16
# Sk=4096 even; bit-identical (test_gpu_split_mask_loops_keeps_the_bits). Off.
SPLIT_MASK_LOOPS = False


def choose_splits(
    b: int, sq: int, sk: int, hq: int, hkv: int, left: int, right: int, sms: int, forced: bool = False, head_dim: int = 128
) -> int:
    """Key ranges per tile for the packed split-KV kernel (>= 1), or 0 where it should not be taken.

    Plain integer arithmetic (called once per call shape). `forced`: asked for by name, so
    any shape whose G packs gets a split count. `head_dim` picks the tile (SPLIT_TILES).
    """
    group = hq // hkv
    if not packed_groups(group):
        return 0
    rows = group * sq
    keys = sk if left < 0 else min(sk, left + sq + (right if right > 0 else 0))
    block_m, block_n = SPLIT_TILES[head_dim]
    tiles = -(-rows // block_m) * b * hkv
    splits = max(1, min(sms * SPLIT_CTAS_PER_SM // tiles, -(-keys // block_n) // SPLIT_MIN_BLOCKS, SPLIT_MAX))
    if forced:
        return splits
    waste = 1 - sq / (-(-sq // block_m) * block_m)  # of the plain kernel's query tiles
    if rows <= 16 or keys < SPLIT_MIN_KEYS or (splits < 2 and waste < SPLIT_MIN_WASTE):
        return 0
    return splits


def packed_groups(group: int) -> bool:
    """Whether G = Hq / Hkv can be packed: a divisor of BLOCK_M (the TMA box of Q is (G, BLOCK_M / G))."""
    return group > 1 and 128 % group == 0


def split_combine_pdl(splits: int) -> bool:
    """Whether a packed split-KV call of `splits` splits launches its combine as a PDL."""
    return bool(fmha_decode.COMBINE_PDL) or 0 < splits <= SPLIT_COMBINE_PDL_MAX


def compile_packed_split(
    dtype: str, head_dim: int, group: int, has_left: bool, has_right: bool, has_sink: bool, arch: str = "sm_90a", options: str = "",
    combine_pdl: bool | None = None,
):  # fmt: skip
    """The compiled packed split-KV host function (_PackedSplitSm90) for one configuration (no GPU
    needed). combine_pdl: the combine as a programmatic dependent launch (None: fmha_decode.COMBINE_PDL;
    only on fmha_decode.PDL_ARCHS)."""
    if arch not in ARCHS:
        raise ValueError(f"the wgmma path targets {ARCHS}, not {arch!r}")
    if not packed_groups(group):
        raise ValueError(f"packed split-KV takes Hq / Hkv in 2, 4, ..., 128, not {group}")
    block_m, block_n = SPLIT_TILES[head_dim]
    masked = has_left or has_right
    config = Config(
        block_m, block_n, SPLIT_STAGES, INTRA_WG_OVERLAP, bool(SPLIT_PINGPONG), 2**31 - 1, 0, "stride", mask_loops(head_dim, masked, packed=True),
        k_ahead=bool(_per_config(K_AHEAD, head_dim, masked)), cache_hints=bool(_per_config(CACHE_HINTS, head_dim, masked)),
        rescale_threshold=SPLIT_RESCALE_THRESHOLD,
    )  # fmt: skip
    if fmha_decode.PDL_TRIGGER not in fmha_decode.PDL_TRIGGERS:
        raise ValueError(f"fmha_decode.PDL_TRIGGER must be one of {fmha_decode.PDL_TRIGGERS}, not {fmha_decode.PDL_TRIGGER!r}")
    # False (a plain launch of the combine), or where its CTAs allow it (PDL_TRIGGER)
    combine_pdl = fmha_decode.COMBINE_PDL if combine_pdl is None else combine_pdl
    pdl = fmha_decode.PDL_TRIGGER if combine_pdl and arch in fmha_decode.PDL_ARCHS else False
    return _compile_packed_split(dtype, head_dim, group, has_left, has_right, has_sink, arch, options, config, pdl)


@functools.cache
def _compile_packed_split(
    dtype: str, head_dim: int, group: int, has_left: bool, has_right: bool, has_sink: bool, arch: str, options: str, config: Config,
    pdl: bool | str,
):  # fmt: skip
    dt = DTYPES[dtype]
    kernel = _PackedSplitSm90(dt, head_dim, has_left, has_right, has_sink, False, config, group)
    kernel.pdl = pdl
    with lowering.prelowering(lowering.auto_pipeline(arch)):
        return cute.compile(kernel, *fmha_decode.fake_arguments(dt), options=f"--gpu-arch {arch} {options}".strip())
