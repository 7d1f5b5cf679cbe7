"""The Hopper FMHA's scheduling: which tile a CTA takes, and in what order its warpgroups issue.

Owns `Sm90Scheduling` (a mixin of `fmha_sm90_kernel._FmhaSm90`): the persistent tile orders
(ORDER "stride", "snake", and "dynamic": a global counter drawn by the producer and handed to
the consumers through shared memory, by L2 sections), a tile's coordinates (query tile, head,
batch, its key range; the packed split-KV kernel's split; the tail split's pieces), the query
span of a tile, Q's stages, and PINGPONG's turns between consumer warpgroups.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from cute_lowering.kernels.fmha_sm90_parts import I32, TURN_BARRIER


class Sm90Scheduling:
    """The scheduling methods of `_FmhaSm90` (they read its compile-time fields)."""

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
    def fetch_tile(self, mCounters: cute.Tensor, sNext, ctas: I32, n_tiles: I32, fetched: I32) -> I32:
        """ORDER "dynamic", the producer warp: the next tile of this CTA, also handed to its consumers.

        Tiles 0 .. ctas - 1 are the CTAs' first; the rest are handed out in the linear order
        by an atomic counter, each to the first CTA whose producer asks, i.e. whose loads of
        its current tile are all issued (its consumers are on that tile's last blocks): a CTA
        that drew short tiles takes more of them. The last CTA to draw an index past the end
        (each draws exactly one) puts both counters back to zero for the next launch: its
        acq_rel add orders every CTA's draws before its stores.

        The index goes to the consumers through one shared-memory slot (sNext: the slot and two
        mbarriers): the producer waits until every consumer thread has read the previous index
        ("read", 128 arrivals a consumer warpgroup; its first wait, `fetched` = 0, passes at
        once: the previous phase of a fresh mbarrier counts as complete), writes, and its first
        lane arrives on "written", which take_tile waits on. Each access is ordered by an
        arrive of the thread that made it and a wait of the thread that follows. (It was a pair
        of named barriers a consumer warpgroup, bar.sync against bar.arrive each way: just as
        correct by the PTX memory model, but compute-sanitizer's racecheck does not follow that
        pattern and reported every hand-over as a race.)
        """
        slot, bars = sNext
        lane = cute.arch.lane_idx()
        drawn = I32(0)
        if lane == 0:
            drawn = cute.arch.atomic_add(mCounters.iterator.llvm_ptr, I32(1), sem="relaxed", scope="gpu")
        tile = cute.arch.shuffle_sync(drawn, 0) + ctas
        cute.arch.mbarrier_wait(bars + 1, (fetched & 1) ^ 1)  # every consumer has read the last index
        if lane == 0:
            slot[0] = tile
            cute.arch.mbarrier_arrive(bars)
        if tile >= n_tiles:
            if lane == 0:
                done = cute.arch.atomic_add((mCounters.iterator + 1).llvm_ptr, I32(1), sem="acq_rel", scope="gpu")
                if done == ctas - 1:
                    mCounters[0] = I32(0)
                    mCounters[1] = I32(0)
        return tile

    @cute.jit
    def take_tile(self, sNext, n_tiles: I32, taken: I32) -> I32:
        """ORDER "dynamic", a consumer thread: its next tile, from the producer (fetch_tile);
        `taken`: the tiles this warpgroup took before (the hand-over's phase).

        Called while the current tile's last P V wgmma runs: the producer wrote the index
        blocks ago (once its loads of this tile were issued), so the wait rarely waits."""
        slot, bars = sNext
        cute.arch.mbarrier_wait(bars, taken & 1)
        tile = slot[0]
        if tile < n_tiles:  # (the producer writes no further index after the last)
            cute.arch.mbarrier_arrive(bars + 1)
        return tile

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
        # which key blocks this query tile needs (as in cute_lowering.kernels.fmha)
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
