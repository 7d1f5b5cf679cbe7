"""The Hopper FMHA's tuning knobs as one value: `Knobs`, frozen and built by keyword.

Owns every knob of the wgmma path (`cute_lowering.kernels.fmha_sm90`: the plain kernel, its tail split and
the packed split-KV kernel) with its default and why it is what it is; `DEFAULT_KNOBS` is the
shipped value. `fmha_sm90.config_for` turns a `Knobs` into one `Config` per shape class; the
launch path (`cute_lowering.kernels.ops`) keys its plans on the `Knobs` value it was given, so a test or a
sweep passes another value (`dataclasses.replace(DEFAULT_KNOBS, pingpong=True)`, or
`Knobs(...)`) down the call instead of editing a module. Imports nothing of this package.

A knob value becomes a default only after the builds it makes pass the sanitizer sweep
(`python bench/sanitizer_sweep.py --out DIR` on the H200: memcheck, racecheck, synccheck and
initcheck, 0 kernel errors) and the GPU suite; so does every variant bench/fmha_peers.py
times before it may replace a default. Issue 34: a hand-over that passed every bit-exact test
but that racecheck reported went in that way.

A knob typed `ByShape[T]` is one value, or a mapping {(head_dim, crosses a diagonal): value}
(like `tiles`); the measurements behind each choice are in bench/RESULTS.md (the FMHA
sections, by session); what a choice is for is said beside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TypeVar, Union

T = TypeVar("T")
# a knob's value for every configuration, or one per (head dim, crosses a diagonal)
ByShape = Union[T, Mapping]


class FrozenDict(Mapping):
    """A read-only, hashable dict: a knob's values by key (a `Knobs` must hash: it keys the plans).
    `{**frozen, key: value}` makes the plain dict of a changed value, which `Knobs` freezes again."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items=()):
        self._items = dict(items)
        self._hash = hash(frozenset(self._items.items()))

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and self._items == dict(other.items())

    def __repr__(self) -> str:
        return f"FrozenDict({self._items!r})"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Knobs:
    """The wgmma FMHA's knobs (see the module docstring). Any dict given is frozen (FrozenDict);
    the hash is computed once, since the launch path hashes the value on every call."""

    # and with a diagonal only because mask_relative and two key loops keep P in registers without
    # spills. D=128 keeps 128 x 128: 128 x 160 loses a little, and FA3's 128 x 176 does not fit shared
    # memory beside O's own buffer (config_for refuses it); calls with many keys take wide_key_tiles.
    tiles: FrozenDict = FrozenDict({(64, False): (192, 128), (64, True): (192, 128), (128, False): (128, 128), (128, True): (128, 128)})
    tile_override: tuple[int, int] | None = None  # (BLOCK_M, BLOCK_N) for every configuration: the knob sweep's
    # the tile of calls with at least wide_keys_min keys and no mask, where it differs from tiles:
    # {head_dim: (BLOCK_M, BLOCK_N)}. A wider key block spreads a block's fixed softmax work (the
    # row maxima and sums, O's rescale, the wgmma waits) over more keys and wastes little of the last
    # block once the keys are many (Sk = 8192 in blocks of 192: 0.8%; 4096: 3%, and there it loses).
    # Beside two 48 KB K/V stages only one Q buffer and no O buffer fit, so the build stores O from
    # registers (Config.o_direct). It pays only with the scheduler barrier (wide_key_pingpong), about
    # 2-3% at 8192 and 16384 keys; with a diagonal it loses. The NVFP4 output keeps 128 x 128 (its
    # epilogue needs O's buffer): where the bf16 call takes the wide tile, ops gives the NVFP4 output
    # as quantize() of that call's output, the promised bits (and faster than the fused 128 x 128).
    wide_key_tiles: FrozenDict = FrozenDict({128: (128, 192)})
    wide_keys_min: int = 8192
    # the wide-key build's scheduler barrier (pingpong's, for that build alone; None: pingpong's
    # value). The 192-wide build issues fewer instructions a key than the 128-wide one but waits
    # longer at each S wgmma, behind the other consumer's wgmmas; taking turns (as FA3 does at
    # 128 x 176) gives it what its instructions save, where the 128-wide build loses with it.
    wide_key_pingpong: bool | None = True
    # the NVFP4 output's tile where it differs from tiles: its epilogue quantizes from O's own buffer
    nvfp4_tiles: FrozenDict = FrozenDict({})
    # K/V shared-memory ring depth (D=128: Q 32 KB + O 32 KB + 2 x (K 32 KB + V 32 KB)). Two stages
    # hide the loads; D=64 has room for 3 and it measured within the noise of 2.
    stages: ByShape[int] = 2
    # Q's shared-memory buffers: 1, a persistent CTA's next Q loads once every S wgmma of the current
    # tile is complete, and the consumers may wait for it at the next tile's start; 2, it loads as
    # soon as the producer has the next tile (D=128: 225 KB with O's buffer and two K/V stages;
    # config_for keeps one where two do not fit). 2 is 1-4% faster on most rows, never slower.
    q_stages: ByShape[int] = 2
    # FA3's intra-warpgroup overlap: S(n) = Q K(n)^T and O += P(n+1) V(n+1) are issued together
    # and the softmax of S(n) runs while the P V wgmma does; False: the softmax waits for both
    intra_wg_overlap: bool = True
    # FA3's scheduler barrier between the consumers: named barriers let one warpgroup issue its
    # wgmmas while the others run their softmax, in a fixed rotation. It pays with three consumers
    # (D=64, 192 x 128) as FA3 has it; with two (D=128, 128 x 128) it is even or slower, also as part
    # of FA3's whole order (with v_wait_late and late_rescale), so D=128 runs without it.
    pingpong: ByShape[bool] = FrozenDict({(64, False): True, (64, True): True, (128, False): False, (128, True): False})
    # the NVFP4 output's scheduler barrier where it differs from pingpong: {(head dim, crosses a
    # diagonal): bool}. The fused epilogue quantizes O in the consumers after their last P V (unless
    # nvfp4_offload), so one warpgroup's epilogue can overlap the other's wgmmas only if they take
    # turns; what the bf16 build measured for pingpong does not decide it for this build. On at
    # D=128 with a diagonal: fused / bf16 1.061-1.064 against 1.069-1.072 and two kernels / fused
    # 0.999 against 0.991 on the H200 (session 24), even and 1.024 against 1.013 on an H100
    # (session 25); without a diagonal (the producer's warps quantize) it changes nothing. Passed
    # the sanitizer sweep and the GPU suite (bench/RESULTS.md).
    nvfp4_pingpong: FrozenDict = FrozenDict({(128, True): True})
    # one CTA per SM walks the tiles (FA3's persistent scheduling): the producer loads the next
    # tile's K/V (and Q, which has a buffer apart from O's) while the consumers finish the current
    # tile, and the grid has no tail of CTA launches. The S fill before a tile's first S wgmma keeps
    # ptxas from serializing the wgmmas in the loop (C7512). With a diagonal it pays only with the
    # dynamic order, which balances the causal tiles. True: always; False: one CTA per tile.
    persistent: ByShape[bool | str] = FrozenDict({(64, False): True, (64, True): True, (128, False): True, (128, True): True})
    # with intra_wg_overlap, when O takes the softmax's correction factor: False, just before the
    # P V wgmma that adds the block (between the S and the P V issue, inside pingpong's turn); True,
    # as FA3 and FA4 do, right after the softmax that computed it, once the previous P V is complete
    # (the multiplies then run beside the softmax's exp2s, and a turn only issues wgmmas). O is zero
    # after a tile's first block, so that block's factor is never applied. True pays at D=64 and with
    # a diagonal (where False also spills); D=128 without a mask is 2% faster with False. The packed
    # split-KV kernel (compile_packed_split) keeps False.
    late_rescale: ByShape[bool] = FrozenDict({(64, False): True, (64, True): True, (128, False): False, (128, True): True})
    # the softmax's exp2s in column order across the thread's rows (FA4's schedule in SASS), four
    # partial maxima and two partial sums a row; False: one row after the other. It pays at D=64
    # without a mask (+4.5%); at D=128 it spills or loses a little, and D=64 causal at 192 x 128 was
    # tuned without it.
    softmax_interleaved: ByShape[bool] = FrozenDict({(64, False): True, (64, True): False, (128, False): False, (128, True): False})
    # O's rescale skipped while the row maxima stay (FA4's conditional rescale): a row keeps its old
    # maximum as the exponent's reference while the block's maximum exceeds it by at most this much
    # (log2 units, scores times softmax_scale * log2(e)), and a consumer warp whose 16 rows all keep
    # theirs (`vote.any` over the correction factors) skips O's multiplies. P is then at most
    # 2^rescale_threshold before its normalization by the row sum, which uses the same reference.
    # None: every block rescales (no vote); 0.0 skips only where no row's maximum grew (not quite
    # None's bits: there an unchanged maximum's factor is exp2 of an FFMA's rounding residual, here
    # exactly 1); FA4 takes 8.0 for 16-bit inputs. 8.0 is 0.5-1.5% faster but less accurate: with a
    # stale reference a row's largest P is no longer exactly 1 and rounds in bf16 like the others,
    # and the error against float64 then exceeds FA3's and FA4's (the bound this kernel keeps). Off.
    rescale_threshold: ByShape[float | None] = None
    # the row maximum's -inf guard (a row with nothing yet subtracts 0, not -inf) in the softmax of
    # a block that no mask touches; False: there the maximum is taken as finite, as FA3's unmasked
    # steps do (Check_inf only with a mask). The same bits for finite inputs: every score of such a
    # block is a finite product, so its row maximum is finite; with infinite inputs the output is
    # NaN either way. Without it ptxas places fewer exp2s before the P V wait, and it is slower.
    unmasked_inf_guard: ByShape[bool] = True
    # the element mask: False, each value's column index against the row's limits (a column index
    # per value, which LLVM hoists out of the key loop: registers held across it); True, the row's
    # limits relative to its first column against each value's offset from it, a constant while
    # tracing (`score_columns`; one compare and select per value). With a diagonal True is what lets
    # D=64 causal (192 x 128) and D=128 causal (two key loops) compile without spills or serialized
    # wgmmas (C7512). Without one (only the key tail is masked) it made ptxas spill and lost 3%.
    mask_relative: ByShape[bool] = FrozenDict({(64, False): False, (64, True): True, (128, False): False, (128, True): True})
    # registers -> shared memory for O in the epilogue by `stmatrix` (FA3's and CUTLASS's epilogue
    # store; 8 instructions a thread for a 64 x 128 O tile instead of 32 stores). It pays at D=64
    # and, with tma_store, at D=128 with a diagonal; at D=128 without one it loses 0.5-2%.
    stmatrix: ByShape[bool] = FrozenDict({(64, False): True, (64, True): True, (128, False): False, (128, True): True})
    # O from shared memory to global by one TMA store a warpgroup (FA3's epilogue), issued by one
    # thread, the next tile's epilogue waiting only for the store's reads of shared memory, instead
    # of every thread loading 16 bytes at a time from shared memory and storing them; O's buffer is
    # then one 64-row stage a warpgroup. Not with the NVFP4 output (it quantizes from shared memory).
    # With two Q buffers it pays everywhere (with stmatrix where a diagonal is crossed).
    tma_store: ByShape[bool] = FrozenDict({(64, False): True, (64, True): True, (128, False): True, (128, True): True})
    # the producer's load order: False, a tile's Q, then K and V of each key block in turn; True,
    # FA3's order with its intra-warpgroup overlap (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp): the
    # tile's first K, then Q, then K of each block before the V of the block before it, the order in
    # which the consumers need them (S(n) comes before P(n + 1) V(n + 1)), so a K load never waits
    # behind a V slot that frees only when a P V wgmma completes. Even or faster (short tiles +2%).
    k_ahead: ByShape[bool] = True
    # with intra_wg_overlap, where a consumer waits for the V of the block visited before: False,
    # with its K, before the S wgmma; True, between the S and the P V wgmma issues (FA3, whose
    # producer loads that V after the K: k_ahead). It pays at D=64 without a mask; at D=128 without
    # one it loses 9-12% (the P V issue waits inside the turn), with a diagonal it is even.
    v_wait_late: ByShape[bool] = FrozenDict({(64, False): True, (64, True): False, (128, False): False, (128, True): False})
    # K and V shared by a cluster of cluster CTAs (FA3's ClusterM = 2, taken for head dims
    # >= 128 without a causal/window mask: hopper/flash_fwd_launch_template.h): the CTAs of a
    # cluster take adjacent query tiles of one head, each loads 1/cluster of every K and V tile and
    # the TMA multicasts it into every CTA of the cluster, so each K/V tile crosses from L2 once per
    # cluster and a stage is reused once every cluster CTA's consumers have released it. 1 or 2;
    # only where no diagonal is crossed (the cluster's tiles must visit the same key blocks). A
    # launch whose query tiles a head do not divide by it takes the one-CTA build, compiled into
    # the same host function (_FmhaSm90.__call__). Off: 1-2.5% slower, the pair's CTAs wait for each
    # other's consumers before a stage is reloaded, and the loads were not the limit (L2 at 39%).
    cluster: ByShape[int] = 1
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
    tail_split: ByShape[bool] = True
    tail_split_max: int = 64  # pieces a tail tile at most
    tail_piece_cost: float = 1.0  # a piece's fixed cost (Q load, first S, epilogue) in key blocks, for tail_splits
    # a piece's f32 partial O written and read again (64 KB at D=128: 2 x 64 KB at ~3 TB/s) in key
    # blocks of one SM (~1.6 us at D=128), for tail_splits; the whole GPU's bandwidth is shared, so
    # the launch pays it once per piece, not per round
    tail_traffic_cost: float = 0.027
    # the pieces' launch and the combine as programmatic dependent launches (False: plain launches):
    # the main kernel allows the pieces where tail_pieces_trigger says, each pieces CTA's producer
    # allows the combine after its last load (fmha_decode's "last_load" trigger); the pieces read
    # only Q, K and V, and wait for the main grid only before they exit; the combine waits for the
    # pieces' grid before it reads their partials
    tail_combine_pdl: bool = True
    # where the main kernel allows the pieces' launch: "start" (every CTA at its start: the pieces'
    # CTAs then take each SM the moment a main CTA leaves it) or "last_load" (once every main CTA's
    # producer has issued its last load: the pieces wait for the slowest CTA's last tile)
    tail_pieces_trigger: str = "start"
    # the tail split's fixed cost in block-times (the pieces' launch, the combine, the SMs idle until
    # the pieces start), for tail_splits: fitted to the measured gains with the "start" trigger (a
    # 32-piece split of 128 blocks pays, a 4-piece split of 64 blocks does not)
    tail_launch_cost: float = 8.0
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
    nvfp4_offload: ByShape[bool] = FrozenDict({(64, False): False, (64, True): False, (128, False): True, (128, True): False})
    # where the consumers quantize (the builds without nvfp4_offload): False, in the tile's epilogue,
    # after O's rows are in its buffer; True, deferred to the warpgroup's next tile, right after
    # that tile's first S wgmma is issued (or after its last tile), so the quantization's ~1000
    # instructions a thread run while the tensor cores compute the next S instead of beside idle
    # tensor cores (both warpgroups reach the epilogue together). O's buffer keeps the rows until
    # then: the next epilogue's barrier waits for every thread's reads. The same bytes. On at D=128
    # with a diagonal: fused / bf16 1.052 (three times) against 1.061-1.066 in one process, two
    # kernels / fused 1.026-1.030 against 1.016-1.021 (H100, session 26). At D=64 with a diagonal
    # (three consumer warpgroups taking turns) it lost: 1.079-1.089 against 1.058. Without a
    # diagonal the producer's warps quantize (nvfp4_offload). Passed the sanitizer sweep and the
    # GPU suite (bench/RESULTS.md).
    nvfp4_defer: ByShape[bool] = FrozenDict({(64, False): False, (64, True): False, (128, False): False, (128, True): True})
    # the key loop as two loops: the blocks that may need the element mask (crossing the diagonal or
    # the key tail, the first visited), the mask compiled in, then the rest without it (FA3 splits
    # its loop too); False: one loop that decides per block at run time, both softmax variants in its
    # body. With a causal diagonal this pays at D=64 (+6%) and, with L2 sections and two Q buffers,
    # at D=128; not for windows (a third loop for the left edge spilled). Without a diagonal only a
    # tile's first block, handled before the loop, may cross the key tail, so the loop is compiled
    # without the mask (its runtime test had left a large masked branch in the loop). Not in the wide
    # build (there it spills and lost 6%) nor in the packed split-KV kernel (split_mask_loops).
    mask_loops: ByShape[bool] = FrozenDict({(64, True): True, (128, True): True, (128, False): True})
    # the order in which persistent CTAs take tiles: "stride" (CTA c: c, c + ctas, ...), "snake"
    # (every other round backwards: balances causal tiles; _FmhaSm90.scheduled) or "dynamic" (the
    # producer takes the next tile from a global counter when it has issued the current one's
    # loads and hands it to the consumers through shared memory, as FA3's causal scheduler does:
    # _FmhaSm90.fetch_tile). Dynamic pays where a diagonal makes tiles unequal; without one the
    # static snake is 1-2% faster.
    order: ByShape[str] = FrozenDict({(64, False): "snake", (64, True): "dynamic", (128, False): "snake", (128, True): "dynamic"})
    # order "dynamic" hands out the tiles of section_bytes of K/V at a time (a section: as many kv
    # heads' K and V as fit, all their q heads), the longest query tiles of every head of the
    # section first, heads fastest: the shortest tiles of the whole launch come last, so no CTA
    # starts a long tile when the others are nearly done (with one head at a time, the last
    # head's longest tile starts ~1/H of its head's work before the end), and a section's K/V stays
    # in L2. FA3 sizes its sections for 32 MiB of L2 (hopper/tile_scheduler.hpp); 16 MiB is within
    # 1% of it. 0: the linear order (query tile fastest, then head, then batch).
    section_bytes: int = 32 << 20
    # FA4's relief for MUFU: the share of each row's scores whose exp2 is a polynomial on the FMA
    # units (cute_lowering.kernels.exp2.exp2_fma_magic), by (head dim, crosses a diagonal); absent = 0. At D=64
    # one 64 x 128 block's 8192 exp2 take MUFU (16 a clock per SM) as long as its two wgmmas take
    # the tensor cores at their peak.
    exp2_fma: FrozenDict = FrozenDict({})
    # --- the packed split-KV kernel (compile_packed_split, choose_splits) ---
    # packed split-KV: (query rows per CTA, keys per K/V tile) by head dim; one CTA per tile
    split_tiles: FrozenDict = FrozenDict({64: (128, 128), 128: (128, 128)})
    # choose_splits: taken for more than 16 packed rows (G * Sq; fewer: fmha_decode's one-launch
    # kernel is faster) and at least split_min_keys visible keys, where it splits (the plain
    # wgmma grid would not fill the SMs) or where the plain kernel's 128-row query tiles would be
    # at least split_min_waste empty (Sq = 16: 7/8, Sq = 64: 1/2). The splits fill one wave of
    # split_ctas_per_sm CTAs an SM, each keeping at least split_min_blocks key blocks. There it is
    # 1.2-1.7x the plain wgmma kernel (`bench/fmha_decode_sweep.py`); a single split of full 128-row
    # tiles is slower than the plain kernel (the partials and the combine cost more than the K/V
    # reads that packing saves), hence the waste rule.
    split_min_keys: int = 1024
    split_stages: int = 2  # its K/V ring (no O buffer: D=128 has room for 3, which measured within the noise)
    split_min_waste: float = 0.25
    split_ctas_per_sm: int = 1
    split_min_blocks: int = 4
    split_max: int = 128
    # the combine as a programmatic dependent launch (allowed at fmha_decode.PDL_TRIGGER) for at most
    # this many splits, a plain launch above (fmha_decode.COMBINE_PDL: always PDL); 0: by COMBINE_PDL
    # alone. The early launch pays where the combine is short (2 splits), and costs where many split
    # CTAs are still running when it occupies its slots (16 splits).
    split_combine_pdl_max: int = 2
    # rescale_threshold for the packed split-KV kernel (a split visits 4 or more key blocks); None:
    # every block rescales. 8.0 is even or slower here, and has rescale_threshold's error. Off.
    split_rescale_threshold: float | None = None
    # FA3's scheduler barrier (pingpong) in the packed split-KV kernel: its two consumer warpgroups
    # take turns issuing their wgmmas. The unpacked kernel's 128 x 192 build gains from it where its
    # 128 x 128 build loses (wide_key_pingpong); the split's partials go out from registers, so a
    # 128 x 192 split_tiles fits beside Q and two K/V stages (224 KB) as it is. Here it loses at
    # every tile tried (128 x 128, 176, 192), most at Sq=64 and 128. Off.
    split_pingpong: bool = False
    # the packed split-KV kernel's key loop without a diagonal compiled without the element mask
    # (mask_loops' (128, False) choice for the main kernel; its loop 781 -> 462 SASS instructions);
    # False: the loop decides per block at run time. Bit-identical, and slower or even here. Off.
    split_mask_loops: bool = False

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, dict):
                object.__setattr__(self, field.name, FrozenDict(value))
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, field.name) for field in dataclasses.fields(self))))

    def __hash__(self) -> int:
        return self._hash

    def at(self, name: str, head_dim: int, masked: bool):
        """Knob `name` for one configuration: its value, or its value for (head_dim, masked) where
        it is a mapping by (head dim, crosses a diagonal)."""
        value = getattr(self, name)
        return value[(head_dim, masked)] if isinstance(value, Mapping) else value


DEFAULT_KNOBS = Knobs()  # the shipped values
