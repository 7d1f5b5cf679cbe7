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

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import lowering
from kernels import fmha_decode
from kernels.attention_parts import fake_arguments
from kernels.fmha_sm90_config import Config
from kernels.fmha_sm90_kernel import _FmhaSm90
from kernels.fmha_sm90_parts import F32, I32, TAIL_COMBINE_WARPS  # noqa: F401 (by their names here as before)
from kernels.fmha_sm90_softmax import SCORE_COLUMNS_CHECK_ALL  # noqa: F401
from kernels.fmha_sm90_split import _PackedSplitSm90

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
    # the wide build: O from registers straight to global memory (no room for an O buffer beside its K/V stages)
    o_direct = wide is not None and not nvfp4_out
    tma_store = bool(_per_config(TMA_STORE, head_dim, masked)) and not o_direct

    def smem_bytes(q_buffers: int) -> int:
        """Barriers (the first kilobyte), Q's buffers, O's (unless O_DIRECT), the K and V rings."""
        o_buffers = 0 if o_direct else 1
        return 1024 + (q_buffers + o_buffers) * block_m * head_dim * 2 + 2 * stages * block_n * head_dim * 2

    rescale_threshold = _per_config(RESCALE_THRESHOLD, head_dim, masked)
    if rescale_threshold is not None and not (isinstance(rescale_threshold, (int, float)) and 0 <= rescale_threshold <= 16):
        raise ValueError(f"RESCALE_THRESHOLD must be None or a number of log2 units in [0, 16] (or a dict like TILES), not {RESCALE_THRESHOLD!r}")
    rescale_threshold = None if rescale_threshold is None else float(rescale_threshold)
    cluster = _per_config(CLUSTER, head_dim, masked)
    if cluster not in (1, 2):
        raise ValueError(f"CLUSTER must be 1 or 2 (or a dict of them like TILES), not {CLUSTER!r}")
    cluster = 1 if masked else cluster  # (a diagonal: the cluster's tiles would visit different key blocks)
    offload = bool(_per_config(NVFP4_OFFLOAD, head_dim, masked))
    if cluster > 1 and persistent and order == "dynamic":
        raise ValueError("CLUSTER > 1 takes a static ORDER ('stride' or 'snake'): the dynamic order draws a tile per CTA, not per cluster")
    tail_split = bool(_per_config(TAIL_SPLIT, head_dim, masked)) and not masked and persistent and order != "dynamic"
    tail_split = tail_split and cluster == 1 and not nvfp4_out  # (and no sink: _FmhaSm90)
    if TAIL_PIECES_TRIGGER not in ("start", "last_load"):
        raise ValueError(f"TAIL_PIECES_TRIGGER must be 'start' or 'last_load', not {TAIL_PIECES_TRIGGER!r}")
    tail_split = (TAIL_PIECES_TRIGGER if TAIL_COMBINE_PDL else "plain") if tail_split else False  # (how the pieces and the combine launch)
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
        overlap=INTRA_WG_OVERLAP,
        pingpong=pingpong,
        max_ctas=sm_count() // cluster * cluster if persistent else 2**31 - 1,
        fma_cols=fma_cols,
        order=order,
        mask_loops=mask_loops(head_dim, masked, wide is not None),
        section_bytes=SECTION_BYTES if order == "dynamic" else 0,
        late_rescale=INTRA_WG_OVERLAP and bool(_per_config(LATE_RESCALE, head_dim, masked)),
        interleaved=bool(_per_config(SOFTMAX_INTERLEAVED, head_dim, masked)),
        mask_relative=bool(_per_config(MASK_RELATIVE, head_dim, masked)),
        stmatrix=bool(_per_config(STMATRIX, head_dim, masked)),
        tma_store=tma_store,
        k_ahead=bool(_per_config(K_AHEAD, head_dim, masked)),
        v_wait_late=INTRA_WG_OVERLAP and bool(_per_config(V_WAIT_LATE, head_dim, masked)),
        q_stages=q_stages,
        cluster=cluster,
        nvfp4_offload=offload,
        rescale_threshold=rescale_threshold,
        tail_split=tail_split,
        o_direct=o_direct,
        inf_guard_unmasked=bool(_per_config(UNMASKED_INF_GUARD, head_dim, masked)),
    )


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
    wide_keys: bool = False, config: Config | None = None,
):  # fmt: skip
    """The compiled kernel for one configuration (no GPU needed). `config`: the build's Config,
    as the caller's plan computed it once for the shape class (`kernels.ops`), or another value
    for a sweep; None: `config_for` with the knobs' current values (`wide_keys`: the build for
    calls with many keys, `wide_keys()`)."""
    if arch not in ARCHS:
        raise ValueError(f"the wgmma path targets {ARCHS}, not {arch!r}")
    if config is None:
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
        block_m=block_m,
        block_n=block_n,
        stages=SPLIT_STAGES,
        overlap=INTRA_WG_OVERLAP,
        pingpong=bool(SPLIT_PINGPONG),
        mask_loops=mask_loops(head_dim, masked, packed=True),
        k_ahead=bool(_per_config(K_AHEAD, head_dim, masked)),
        rescale_threshold=SPLIT_RESCALE_THRESHOLD,
    )  # (one CTA a tile, stride order: the split count fills the SMs)
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
