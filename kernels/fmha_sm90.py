"""FMHA forward for Hopper (sm_90a): warpgroup MMA (wgmma), TMA loads, a producer warp.

Same API, semantics and masks as `kernels.fmha` (read its docstring: bottom-right aligned
causal/window limits, per-head sink logit, GQA, LSE, rows that see nothing give out = 0
and LSE = -inf); `kernels.fmha.attention` picks this path on sm_90a.

This file owns the configuration and planning: the knobs (one value each, or one per (head dim,
crosses a diagonal)), `config_for` (the knobs -> one `Config` per shape class), the host-side
plans (`tail_splits`, `tail_scratch_words`, `choose_splits`, `split_combine_pdl`) and the compile
functions (`compile_kernel`, `compile_packed_split`). The kernel is `fmha_sm90_kernel._FmhaSm90`
with its scheduling, softmax/masking and epilogues in `fmha_sm90_schedule`, `fmha_sm90_softmax`
and `fmha_sm90_epilogue`; the packed split-KV kernel is `fmha_sm90_split`; what they share,
`fmha_sm90_parts`; the configuration value, `fmha_sm90_config`.

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
# A knob value becomes a default only after the builds it makes pass the sanitizer sweep
# (`python bench/sanitizer_sweep.py --out DIR` on the H200: memcheck, racecheck, synccheck and
# initcheck, 0 kernel errors) and the GPU suite; so does every variant bench/fmha_peers.py
# times before it may replace a default. Issue 34: a hand-over that passed every bit-exact test
# but that racecheck reported went in that way.
#
# Each knob is a value or a dict {(head_dim, crosses a diagonal): value} (like TILES); config_for
# turns them into one Config per shape class. The measurements behind each choice are in
# bench/RESULTS.md (the FMHA sections, by session); what a choice is for is said here.
#
# (query rows per CTA, keys per K/V tile), 64 query rows per consumer warpgroup. D=64 takes FA3's
# and FA4's 192 x 128 (three consumers: more MMA per K/V byte); it fits 160 registers a consumer,
# and with a diagonal only because MASK_RELATIVE and two key loops keep P in registers without
# spills. D=128 keeps 128 x 128: 128 x 160 loses a little, and FA3's 128 x 176 does not fit shared
# memory beside O's own buffer (config_for refuses it); calls with many keys take WIDE_KEY_TILES.
TILES = {
    (64, False): (192, 128),
    (64, True): (192, 128),
    (128, False): (128, 128),
    (128, True): (128, 128),
}
TILE_OVERRIDE = None  # (BLOCK_M, BLOCK_N) for every configuration: the knob sweep's
# the tile of calls with at least WIDE_KEYS_MIN keys and no mask, where it differs from TILES:
# {head_dim: (BLOCK_M, BLOCK_N)}. A wider key block spreads a block's fixed softmax work (the
# row maxima and sums, O's rescale, the wgmma waits) over more keys and wastes little of the last
# block once the keys are many (Sk = 8192 in blocks of 192: 0.8%; 4096: 3%, and there it loses).
# Beside two 48 KB K/V stages only one Q buffer and no O buffer fit, so the build stores O from
# registers (Config.o_direct). It pays only with the scheduler barrier (WIDE_KEY_PINGPONG), about
# 2-3% at 8192 and 16384 keys; with a diagonal it loses. The NVFP4 output keeps 128 x 128 (its
# epilogue needs O's buffer): where the bf16 call takes the wide tile, ops gives the NVFP4 output
# as quantize() of that call's output, the promised bits (and faster than the fused 128 x 128).
WIDE_KEY_TILES = {128: (128, 192)}
WIDE_KEYS_MIN = 8192
# the wide-key build's scheduler barrier (PINGPONG's, for that build alone; None: PINGPONG's
# value). The 192-wide build issues fewer instructions a key than the 128-wide one but waits
# longer at each S wgmma, behind the other consumer's wgmmas; taking turns (as FA3 does at
# 128 x 176) gives it what its instructions save, where the 128-wide build loses with it.
WIDE_KEY_PINGPONG = True
# the NVFP4 output's tile where it differs from TILES: its epilogue quantizes from O's own buffer
NVFP4_TILES = {}
# K/V shared-memory ring depth (D=128: Q 32 KB + O 32 KB + 2 x (K 32 KB + V 32 KB)). Two stages
# hide the loads; D=64 has room for 3 and it measured within the noise of 2.
STAGES = 2
# Q's shared-memory buffers: 1, a persistent CTA's next Q loads once every S wgmma of the current
# tile is complete, and the consumers may wait for it at the next tile's start; 2, it loads as
# soon as the producer has the next tile (D=128: 225 KB with O's buffer and two K/V stages;
# config_for keeps one where two do not fit). 2 is 1-4% faster on most rows, never slower.
Q_STAGES = 2
# FA3's intra-warpgroup overlap: S(n) = Q K(n)^T and O += P(n+1) V(n+1) are issued together
# and the softmax of S(n) runs while the P V wgmma does; False: the softmax waits for both
INTRA_WG_OVERLAP = True
# FA3's scheduler barrier between the consumers: named barriers let one warpgroup issue its
# wgmmas while the others run their softmax, in a fixed rotation. It pays with three consumers
# (D=64, 192 x 128) as FA3 has it; with two (D=128, 128 x 128) it is even or slower, also as part
# of FA3's whole order (with V_WAIT_LATE and LATE_RESCALE), so D=128 runs without it.
PINGPONG = {(64, False): True, (64, True): True, (128, False): False, (128, True): False}
# one CTA per SM walks the tiles (FA3's persistent scheduling): the producer loads the next
# tile's K/V (and Q, which has a buffer apart from O's) while the consumers finish the current
# tile, and the grid has no tail of CTA launches. The S fill before a tile's first S wgmma keeps
# ptxas from serializing the wgmmas in the loop (C7512). With a diagonal it pays only with the
# dynamic ORDER, which balances the causal tiles. True: always; False: one CTA per tile.
PERSISTENT = {(64, False): True, (64, True): True, (128, False): True, (128, True): True}
# with INTRA_WG_OVERLAP, when O takes the softmax's correction factor: False, just before the
# P V wgmma that adds the block (between the S and the P V issue, inside PINGPONG's turn); True,
# as FA3 and FA4 do, right after the softmax that computed it, once the previous P V is complete
# (the multiplies then run beside the softmax's exp2s, and a turn only issues wgmmas). O is zero
# after a tile's first block, so that block's factor is never applied. True pays at D=64 and with
# a diagonal (where False also spills); D=128 without a mask is 2% faster with False. The packed
# split-KV kernel (compile_packed_split) keeps False.
LATE_RESCALE = {(64, False): True, (64, True): True, (128, False): False, (128, True): True}
# the softmax's exp2s in column order across the thread's rows (FA4's schedule in SASS), four
# partial maxima and two partial sums a row; False: one row after the other. It pays at D=64
# without a mask (+4.5%); at D=128 it spills or loses a little, and D=64 causal at 192 x 128 was
# tuned without it.
SOFTMAX_INTERLEAVED = {(64, False): True, (64, True): False, (128, False): False, (128, True): False}
# O's rescale skipped while the row maxima stay (FA4's conditional rescale): a row keeps its old
# maximum as the exponent's reference while the block's maximum exceeds it by at most this much
# (log2 units, scores times softmax_scale * log2(e)), and a consumer warp whose 16 rows all keep
# theirs (`vote.any` over the correction factors) skips O's multiplies. P is then at most
# 2^RESCALE_THRESHOLD before its normalization by the row sum, which uses the same reference.
# None: every block rescales (no vote); 0.0 skips only where no row's maximum grew (not quite
# None's bits: there an unchanged maximum's factor is exp2 of an FFMA's rounding residual, here
# exactly 1); FA4 takes 8.0 for 16-bit inputs. 8.0 is 0.5-1.5% faster but less accurate: with a
# stale reference a row's largest P is no longer exactly 1 and rounds in bf16 like the others,
# and the error against float64 then exceeds FA3's and FA4's (the bound this kernel keeps). Off.
RESCALE_THRESHOLD = None
# the row maximum's -inf guard (a row with nothing yet subtracts 0, not -inf) in the softmax of
# a block that no mask touches; False: there the maximum is taken as finite, as FA3's unmasked
# steps do (Check_inf only with a mask). The same bits for finite inputs: every score of such a
# block is a finite product, so its row maximum is finite; with infinite inputs the output is
# NaN either way. Without it ptxas places fewer exp2s before the P V wait, and it is slower.
UNMASKED_INF_GUARD = True
# the element mask: False, each value's column index against the row's limits (a column index
# per value, which LLVM hoists out of the key loop: registers held across it); True, the row's
# limits relative to its first column against each value's offset from it, a constant while
# tracing (`score_columns`; one compare and select per value). With a diagonal True is what lets
# D=64 causal (192 x 128) and D=128 causal (two key loops) compile without spills or serialized
# wgmmas (C7512). Without one (only the key tail is masked) it made ptxas spill and lost 3%.
MASK_RELATIVE = {(64, False): False, (64, True): True, (128, False): False, (128, True): True}
# registers -> shared memory for O in the epilogue by `stmatrix` (FA3's and CUTLASS's epilogue
# store; 8 instructions a thread for a 64 x 128 O tile instead of 32 stores). It pays at D=64
# and, with TMA_STORE, at D=128 with a diagonal; at D=128 without one it loses 0.5-2%.
STMATRIX = {(64, False): True, (64, True): True, (128, False): False, (128, True): True}
# O from shared memory to global by one TMA store a warpgroup (FA3's epilogue), issued by one
# thread, the next tile's epilogue waiting only for the store's reads of shared memory, instead
# of every thread loading 16 bytes at a time from shared memory and storing them; O's buffer is
# then one 64-row stage a warpgroup. Not with the NVFP4 output (it quantizes from shared memory).
# With two Q buffers it pays everywhere (with STMATRIX where a diagonal is crossed).
TMA_STORE = {(64, False): True, (64, True): True, (128, False): True, (128, True): True}
# the producer's load order: False, a tile's Q, then K and V of each key block in turn; True,
# FA3's order with its intra-warpgroup overlap (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp): the
# tile's first K, then Q, then K of each block before the V of the block before it, the order in
# which the consumers need them (S(n) comes before P(n + 1) V(n + 1)), so a K load never waits
# behind a V slot that frees only when a P V wgmma completes. Even or faster (short tiles +2%).
K_AHEAD = True
# with INTRA_WG_OVERLAP, where a consumer waits for the V of the block visited before: False,
# with its K, before the S wgmma; True, between the S and the P V wgmma issues (FA3, whose
# producer loads that V after the K: K_AHEAD). It pays at D=64 without a mask; at D=128 without
# one it loses 9-12% (the P V issue waits inside the turn), with a diagonal it is even.
V_WAIT_LATE = {(64, False): True, (64, True): False, (128, False): False, (128, True): False}
# K and V shared by a cluster of CLUSTER CTAs (FA3's ClusterM = 2, taken for head dims
# >= 128 without a causal/window mask: hopper/flash_fwd_launch_template.h): the CTAs of a
# cluster take adjacent query tiles of one head, each loads 1/CLUSTER of every K and V tile and
# the TMA multicasts it into every CTA of the cluster, so each K/V tile crosses from L2 once per
# cluster and a stage is reused once every cluster CTA's consumers have released it. 1 or 2;
# only where no diagonal is crossed (the cluster's tiles must visit the same key blocks). A
# launch whose query tiles a head do not divide by it takes the one-CTA build, compiled into
# the same host function (_FmhaSm90.__call__). Off: 1-2.5% slower, the pair's CTAs wait for each
# other's consumers before a stage is reloaded, and the loads were not the limit (L2 at 39%).
CLUSTER = 1
# the last partial round of a persistent launch split along the keys (stream-K for the tail):
# with n_tiles = k * ctas + R (0 < R), the R tiles after the k full rounds are each cut into
# `tail_splits` pieces (contiguous shares of the key blocks, one unit of the persistent order
# each), which write f32 partials (O normalized by their own sum, LSE) into the caller's
# scratch, and a combine kernel launched after them merges them into O and LSE. The pieces run
# in a launch of their own (the same kernel built with the piece code, one piece a CTA) after
# the main kernel, which takes only the k full rounds and is the plain build: with the pieces
# in the persistent kernel itself every tile ran slower before any piece was cut. The other
# tiles are computed as before (the same bits). Without it the R tiles take a whole tile time
# while ctas - R SMs idle. The split count is the host's (`tail_splits`, from the shape); 1
# keeps the plain schedule (the main kernel alone). Only the static orders without a diagonal,
# a sink, a cluster or the NVFP4 output (config_for). It gains 2.8% where a long tile and a
# short last round meet (1x32x16384x128: 4 tiles left on 132 SMs), and leaves the rest as they were.
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
# the pieces start), for tail_splits: fitted to the measured gains with the "start" trigger (a
# 32-piece split of 128 blocks pays, a 4-piece split of 64 blocks does not)
TAIL_LAUNCH_COST = 8.0
# the NVFP4 output (nvfp4_out) quantized by two idle warps of the producer warpgroup instead of
# the consumers: each consumer warpgroup puts its normalized O rows (bf16/fp16) in its rows of
# O's buffer, hands them over (an mbarrier pair a consumer warpgroup, the tile's coordinates
# beside them in shared memory) and goes on to its next tile, while the two warps quantize them
# (one row a thread, `store_nvfp4`) and give the rows back. The quantization is ~1000
# instructions a consumer thread a tile at D=128 that nothing overlapped (the epilogue issues
# about one instruction a cycle); in the producer's warps it runs in the cycles the consumers
# leave idle. The producer warpgroup then keeps at least QUANTIZER_REGS (D=128: 40, the
# consumers 232 instead of 240; D=64: 32, the consumers keep 160). It pays without a diagonal at
# D=128; with a diagonal the short tiles of the causal tail outrun two warps' quantizing.
NVFP4_OFFLOAD = {(64, False): False, (64, True): False, (128, False): True, (128, True): False}
# the key loop as two loops: the blocks that may need the element mask (crossing the diagonal or
# the key tail, the first visited), the mask compiled in, then the rest without it (FA3 splits
# its loop too); False: one loop that decides per block at run time, both softmax variants in its
# body. With a causal diagonal this pays at D=64 (+6%) and, with L2 sections and two Q buffers,
# at D=128; not for windows (a third loop for the left edge spilled). Without a diagonal only a
# tile's first block, handled before the loop, may cross the key tail, so the loop is compiled
# without the mask (its runtime test had left a large masked branch in the loop). Not in the wide
# build (there it spills and lost 6%) nor in the packed split-KV kernel (SPLIT_MASK_LOOPS).
MASK_LOOPS = {(64, True): True, (128, True): True, (128, False): True}
# the order in which persistent CTAs take tiles: "stride" (CTA c: c, c + ctas, ...), "snake"
# (every other round backwards: balances causal tiles; _FmhaSm90.scheduled) or "dynamic" (the
# producer takes the next tile from a global counter when it has issued the current one's
# loads and hands it to the consumers through shared memory, as FA3's causal scheduler does:
# _FmhaSm90.fetch_tile). Dynamic pays where a diagonal makes tiles unequal; without one the
# static snake is 1-2% faster.
ORDER = {(64, False): "snake", (64, True): "dynamic", (128, False): "snake", (128, True): "dynamic"}
# ORDER "dynamic" hands out the tiles of SECTION_BYTES of K/V at a time (a section: as many kv
# heads' K and V as fit, all their q heads), the longest query tiles of every head of the
# section first, heads fastest: the shortest tiles of the whole launch come last, so no CTA
# starts a long tile when the others are nearly done (with one head at a time, the last
# head's longest tile starts ~1/H of its head's work before the end), and a section's K/V stays
# in L2. FA3 sizes its sections for 32 MiB of L2 (hopper/tile_scheduler.hpp); 16 MiB is within
# 1% of it. 0: the linear order (query tile fastest, then head, then batch).
SECTION_BYTES = 32 << 20
# FA4's relief for MUFU: the share of each row's scores whose exp2 is a polynomial on the FMA
# units (kernels.exp2.exp2_fma_magic), by (head dim, crosses a diagonal); absent = 0. At D=64
# one 64 x 128 block's 8192 exp2 take MUFU (16 a clock per SM) as long as its two wgmmas take
# the tensor cores at their peak.
EXP2_FMA = {}
HEAD_DIMS = (64, 128)
SHARED_MEMORY_BYTES = 227 * 1024  # sm_90a: the most dynamic shared memory one CTA may take
DTYPES = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}
ARCHS = ("sm_90a",)


class _Knobs:
    """The knobs as the planning reads them: a variant's values by knob name, else the module's."""

    def __init__(self, overrides=None):
        if isinstance(overrides, _Knobs):
            overrides = overrides.overrides
        self.overrides = dict(overrides or {})
        unknown = [name for name in self.overrides if not (name.isupper() and name in globals())]
        if unknown:
            raise ValueError(f"not knobs of kernels.fmha_sm90: {unknown}")

    def __getattr__(self, name: str):
        return self.overrides[name] if name in self.overrides else globals()[name]


def _per_config(knob, head_dim: int, masked: bool):
    """A knob that is one value, or a dict {(head dim, crosses a diagonal): value} like TILES."""
    return knob[(head_dim, masked)] if isinstance(knob, dict) else knob


def wide_keys(head_dim: int, sk: int) -> bool:
    """Whether a call with `sk` keys takes WIDE_KEY_TILES' tile (where it has one for the head dim)."""
    return sk >= WIDE_KEYS_MIN and head_dim in WIDE_KEY_TILES


def config_for(
    head_dim: int, has_left: bool, has_right: bool, nvfp4_out: bool = False, wide_keys: bool = False, knobs=None
) -> Config:
    """The knobs' current values for one configuration (TILES, NVFP4_TILES for the NVFP4
    output, WIDE_KEY_TILES for a call with many keys: `wide_keys`, or TILE_OVERRIDE when set).
    `knobs`: {knob name: value} read instead of the module's (a sweep's variant, without
    touching the module: `bench/fmha_sass.py`); None: the module's values."""
    k = _Knobs(knobs)
    masked = has_left or has_right
    wide = k.WIDE_KEY_TILES.get(head_dim) if wide_keys and not masked and not nvfp4_out else None
    block_m, block_n = k.TILE_OVERRIDE or wide or (nvfp4_out and k.NVFP4_TILES.get((head_dim, masked))) or k.TILES[(head_dim, masked)]
    if block_m % 64 or not 64 <= block_m <= 192 or block_n % 16 or not 16 <= block_n <= 256:
        raise ValueError(f"tile ({block_m}, {block_n}): BLOCK_M must be 64, 128 or 192, BLOCK_N a multiple of 16 up to 256")
    pingpong = _per_config(k.PINGPONG, head_dim, masked)
    if wide is not None and k.WIDE_KEY_PINGPONG is not None:
        pingpong = bool(k.WIDE_KEY_PINGPONG)
    if pingpong and block_m < 128:
        raise ValueError("PINGPONG takes turns between two or three consumer warpgroups (BLOCK_M = 128 or 192)")
    if isinstance(k.PERSISTENT, dict):
        persistent = k.PERSISTENT[(head_dim, masked)]
    elif k.PERSISTENT in (True, False, "auto"):
        persistent = k.PERSISTENT is True or (k.PERSISTENT == "auto" and head_dim == 64 and not masked)
    else:
        raise ValueError(f"PERSISTENT must be True, False, 'auto' or a dict like TILES, not {k.PERSISTENT!r}")
    fma_cols = round(k.EXP2_FMA.get((head_dim, masked), 0.0) * block_n / 4)
    order = _per_config(k.ORDER, head_dim, masked)
    if order not in ("stride", "snake", "dynamic"):
        raise ValueError(f"ORDER must be 'stride', 'snake', 'dynamic' or a dict of them like TILES, not {k.ORDER!r}")
    stages = ring_stages(head_dim, masked, k)
    q_stages = _per_config(k.Q_STAGES, head_dim, masked)
    if q_stages not in (1, 2):
        raise ValueError(f"Q_STAGES must be 1 or 2 (or a dict of them like TILES), not {k.Q_STAGES!r}")
    # the wide build: O from registers straight to global memory (no room for an O buffer beside its K/V stages)
    o_direct = wide is not None and not nvfp4_out
    tma_store = bool(_per_config(k.TMA_STORE, head_dim, masked)) and not o_direct

    def smem_bytes(q_buffers: int) -> int:
        """Barriers (the first kilobyte), Q's buffers, O's (unless o_direct), the K and V rings."""
        o_buffers = 0 if o_direct else 1
        return 1024 + (q_buffers + o_buffers) * block_m * head_dim * 2 + 2 * stages * block_n * head_dim * 2

    rescale_threshold = _per_config(k.RESCALE_THRESHOLD, head_dim, masked)
    if rescale_threshold is not None and not (isinstance(rescale_threshold, (int, float)) and 0 <= rescale_threshold <= 16):
        raise ValueError(f"RESCALE_THRESHOLD must be None or a number of log2 units in [0, 16] (or a dict like TILES), not {k.RESCALE_THRESHOLD!r}")
    rescale_threshold = None if rescale_threshold is None else float(rescale_threshold)
    cluster = _per_config(k.CLUSTER, head_dim, masked)
    if cluster not in (1, 2):
        raise ValueError(f"CLUSTER must be 1 or 2 (or a dict of them like TILES), not {k.CLUSTER!r}")
    cluster = 1 if masked else cluster  # (a diagonal: the cluster's tiles would visit different key blocks)
    offload = bool(_per_config(k.NVFP4_OFFLOAD, head_dim, masked))
    if cluster > 1 and persistent and order == "dynamic":
        raise ValueError("CLUSTER > 1 takes a static ORDER ('stride' or 'snake'): the dynamic order draws a tile per CTA, not per cluster")
    tail_split = bool(_per_config(k.TAIL_SPLIT, head_dim, masked)) and not masked and persistent and order != "dynamic"
    tail_split = tail_split and cluster == 1 and not nvfp4_out  # (and no sink: _FmhaSm90)
    if k.TAIL_PIECES_TRIGGER not in ("start", "last_load"):
        raise ValueError(f"TAIL_PIECES_TRIGGER must be 'start' or 'last_load', not {k.TAIL_PIECES_TRIGGER!r}")
    tail_split = (k.TAIL_PIECES_TRIGGER if k.TAIL_COMBINE_PDL else "plain") if tail_split else False  # (how the pieces and the combine launch)
    if q_stages == 2 and smem_bytes(2) > k.SHARED_MEMORY_BYTES:
        q_stages = 1  # a second Q buffer only where it fits (not beside the wider tiles: 128 x 160 at D=128)
    smem = smem_bytes(q_stages)
    if smem > k.SHARED_MEMORY_BYTES:
        raise ValueError(
            f"tile ({block_m}, {block_n}) at D={head_dim} with {stages} K/V stages needs {smem} bytes of shared memory a CTA "
            f"(one Q buffer); sm_90a gives at most {SHARED_MEMORY_BYTES}"
        )
    return Config(
        block_m=block_m,
        block_n=block_n,
        stages=stages,
        overlap=k.INTRA_WG_OVERLAP,
        pingpong=pingpong,
        max_ctas=sm_count() // cluster * cluster if persistent else 2**31 - 1,
        fma_cols=fma_cols,
        order=order,
        mask_loops=mask_loops(head_dim, masked, wide is not None, knobs=k),
        section_bytes=k.SECTION_BYTES if order == "dynamic" else 0,
        late_rescale=k.INTRA_WG_OVERLAP and bool(_per_config(k.LATE_RESCALE, head_dim, masked)),
        interleaved=bool(_per_config(k.SOFTMAX_INTERLEAVED, head_dim, masked)),
        mask_relative=bool(_per_config(k.MASK_RELATIVE, head_dim, masked)),
        stmatrix=bool(_per_config(k.STMATRIX, head_dim, masked)),
        tma_store=tma_store,
        k_ahead=bool(_per_config(k.K_AHEAD, head_dim, masked)),
        v_wait_late=k.INTRA_WG_OVERLAP and bool(_per_config(k.V_WAIT_LATE, head_dim, masked)),
        q_stages=q_stages,
        cluster=cluster,
        nvfp4_offload=offload,
        rescale_threshold=rescale_threshold,
        tail_split=tail_split,
        o_direct=o_direct,
        inf_guard_unmasked=bool(_per_config(k.UNMASKED_INF_GUARD, head_dim, masked)),
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


def ring_stages(head_dim: int, masked: bool, knobs=None) -> int:
    """STAGES for one configuration (an int, or a dict by (head dim, crosses a diagonal))."""
    return _per_config(_Knobs(knobs).STAGES, head_dim, masked)


def mask_loops(head_dim: int, masked: bool, wide: bool = False, packed: bool = False, knobs=None) -> bool:
    """MASK_LOOPS for one configuration (a bool, or a dict by (head dim, crosses a diagonal); absent = False).
    Without a diagonal never for the wide build (`wide`: WIDE_KEY_TILES' tile, 6% slower with it);
    the packed split-KV kernel (`packed`) there follows SPLIT_MASK_LOOPS."""
    k = _Knobs(knobs)
    if not masked and wide:
        return False
    if not masked and packed:
        return bool(k.SPLIT_MASK_LOOPS)
    return k.MASK_LOOPS.get((head_dim, masked), False) if isinstance(k.MASK_LOOPS, dict) else bool(k.MASK_LOOPS)


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
# SPLIT_CTAS_PER_SM CTAs an SM, each keeping at least SPLIT_MIN_BLOCKS key blocks. There it is
# 1.2-1.7x the plain wgmma kernel (`bench/fmha_decode_sweep.py`); a single split of full 128-row
# tiles is slower than the plain kernel (the partials and the combine cost more than the K/V
# reads that packing saves), hence the waste rule.
SPLIT_MIN_KEYS = 1024
SPLIT_STAGES = 2  # its K/V ring (no O buffer: D=128 has room for 3, which measured within the noise)
SPLIT_MIN_WASTE = 0.25
SPLIT_CTAS_PER_SM = 1
SPLIT_MIN_BLOCKS = 4
SPLIT_MAX = 128
# the combine as a programmatic dependent launch (allowed at fmha_decode.PDL_TRIGGER) for at most
# this many splits, a plain launch above (fmha_decode.COMBINE_PDL: always PDL); 0: by COMBINE_PDL
# alone. The early launch pays where the combine is short (2 splits), and costs where many split
# CTAs are still running when it occupies its slots (16 splits).
SPLIT_COMBINE_PDL_MAX = 2
# RESCALE_THRESHOLD for the packed split-KV kernel (a split visits 4 or more key blocks); None:
# every block rescales. 8.0 is even or slower here, and has RESCALE_THRESHOLD's error. Off.
SPLIT_RESCALE_THRESHOLD = None
# FA3's scheduler barrier (PINGPONG) in the packed split-KV kernel: its two consumer warpgroups
# take turns issuing their wgmmas. The unpacked kernel's 128 x 192 build gains from it where its
# 128 x 128 build loses (WIDE_KEY_PINGPONG); the split's partials go out from registers, so a
# 128 x 192 SPLIT_TILES fits beside Q and two K/V stages (224 KB) as it is. Here it loses at
# every tile tried (128 x 128, 176, 192), most at Sq=64 and 128. Off.
SPLIT_PINGPONG = False
# the packed split-KV kernel's key loop without a diagonal compiled without the element mask
# (MASK_LOOPS' (128, False) choice for the main kernel; its loop 781 -> 462 SASS instructions);
# False: the loop decides per block at run time. Bit-identical, and slower or even here. Off.
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
