"""The Hopper FMHA's producer/consumer kernel (sm_90a): `_FmhaSm90`, one compiled configuration.

Owns the host function (`__call__`: tensors, TMA atoms, the grid, the launch of the main
kernel and of the tail split's pieces and combine), the kernel itself (shared memory, the
pipelines, the producer warp's loads, the consumer warpgroups' tile loop) and a key block's
wgmmas (S = Q K^T, P's conversion, O += P V). Its scheduling, softmax/masking and epilogues
are mixins in `fmha_sm90_schedule`, `fmha_sm90_softmax`, `fmha_sm90_epilogue`; its
configuration (`Config`, the knobs) comes from `cute_lowering.kernels.fmha_sm90`, which builds it.
The design (warpgroups, the ring, the overlap): `kernels/fmha_sm90.py`'s docstring.
"""

from __future__ import annotations

import functools

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90
from cutlass.cute.nvgpu import cpasync, warpgroup

from cute_lowering.kernels.attention_parts import nvfp4_outputs, row_copy
from cute_lowering.kernels.cutedsl_compat import SmemAllocator
from cute_lowering.kernels.fmha_sm90_config import Config
from cute_lowering.kernels.fmha_sm90_epilogue import Sm90Epilogues
from cute_lowering.kernels.fmha_sm90_schedule import Sm90Scheduling
from cute_lowering.kernels.fmha_sm90_parts import F32, I32, PRODUCER_REGS, QUANTIZER_REGS, QUANTIZER_THREADS, QUANTIZER_WARPS, REGISTER_FILE, TAIL_COMBINE_WARPS, TURN_BARRIER, _as_operand_a, _mn_view, _smem_layout, _wgmma_issue
from cute_lowering.kernels.fmha_sm90_softmax import Sm90Softmax, _rescale


class _FmhaSm90(Sm90Scheduling, Sm90Softmax, Sm90Epilogues):
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
        self.block_m, self.block_n, self.stages, self.q_stages = config.block_m, config.block_n, config.stages, config.q_stages
        self.overlap, self.pingpong, self.max_ctas, self.order = config.overlap, config.pingpong, config.max_ctas, config.order
        self.fma_cols, self.mask_loops, self.section_bytes = config.fma_cols, config.mask_loops, config.section_bytes
        self.late_rescale, self.interleaved, self.mask_relative = config.late_rescale, config.interleaved, config.mask_relative
        self.stmatrix, self.k_ahead, self.v_wait_late, self.cluster = config.stmatrix, config.k_ahead, config.v_wait_late, config.cluster
        self.rescale_threshold, self.inf_guard_unmasked = config.rescale_threshold, config.inf_guard_unmasked
        tma_store, nvfp4_offload, tail_split, o_direct = config.tma_store, config.nvfp4_offload, config.tail_split, config.o_direct
        self.conditional_rescale = self.rescale_threshold is not None  # RESCALE_THRESHOLD: O's rescale under a warp vote
        # NVFP4_OFFLOAD: O's quantization by QUANTIZER_THREADS of the producer warpgroup (nvfp4_out only)
        self.offload = nvfp4_offload and nvfp4_out and not group
        # NVFP4_DEFER: the consumers quantize a tile's rows during their next tile's first S wgmma
        self.defer = config.nvfp4_defer and nvfp4_out and not group and not self.offload
        # a hand-over's fields in shared memory: batch, head, first row, the giver's phase
        self.handoff_fields = 4
        self.o_direct = o_direct and not nvfp4_out and not group  # O from registers to global memory (the wide build)
        self.tma_store = tma_store and not nvfp4_out and not group and not self.o_direct  # (TMA_STORE: the bf16/fp16 output only)
        self.persistent = self.max_ctas < 2**31 - 1
        # TAIL_SPLIT: the last partial round's tiles in pieces along the keys (a launch of their
        # own, `tail_kernel`: this build with the piece code, one piece a CTA), then a combine.
        # self.tail_pieces: this object's kernel is that pieces' kernel
        self.tail_pieces = tail_pieces
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
        o_elems = 0 if self.o_direct else cute.cosize(sQ_layout)  # (o_direct: O lives in no buffer)

        @cute.struct
        class Smem:
            bar_q: cute.struct.MemRange[cutlass.Int64, 2 * self.q_stages]
            bar_k: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            bar_v: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            next_tile: cute.struct.MemRange[I32, 2]  # ORDER "dynamic": the producer's hand-over
            bar_next: cute.struct.MemRange[cutlass.Int64, 2]  # and its mbarriers (index written, index read)
            bar_o: cute.struct.MemRange[cutlass.Int64, 2 * handoffs]  # NVFP4_OFFLOAD: (O rows given, taken back) a warpgroup
            o_tiles: cute.struct.MemRange[I32, fields * handoffs]  # and the hand-overs' fields
            q: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout) * q_stages], 1024]
            o: cute.struct.Align[cute.struct.MemRange[dt, o_elems], 1024]  # O on its way out
            k: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]
            v: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sKV_layout)], 1024]

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
        """O = P V over `warpgroups` consumer warpgroups (64 rows each): P from registers, V^T
        MN-major in shared memory."""
        return sm90.make_trivial_tiled_mma(
            self.dtype, self.dtype, cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.MN, F32, (warpgroups, 1, 1),
            (64, self.d), a_source=warpgroup.OperandSource.RMEM,
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
        sQ_loads = sQ  # what the producer's Q loads fill: (M, D, Q_STAGES)
        if cutlass.const_expr(self.tma_store):
            sO = storage.o.get_tensor(self.o_stages().outer, swizzle=self.o_stages().inner)  # (64, D, warpgroup)
        elif cutlass.const_expr(not self.group and not self.o_direct):
            sO = storage.o.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
        sK = storage.k.get_tensor(sKV_layout.outer, swizzle=sKV_layout.inner)
        sV = storage.v.get_tensor(sKV_layout.outer, swizzle=sKV_layout.inner)
        sNext = None  # ORDER "dynamic": (the next tile's index, from the producer to the consumers; its mbarriers)
        if cutlass.const_expr(self.dynamic):
            sNext = (storage.next_tile.get_tensor(cute.make_layout((2,))), storage.bar_next.data_ptr())
            if tidx == 0:
                cute.arch.mbarrier_init(sNext[1], 1)  # written: the producer's first lane
                cute.arch.mbarrier_init(sNext[1] + 1, 128 * self.consumer_wgs)  # read: every consumer thread
                cute.arch.mbarrier_init_fence()  # (the pipelines' creation below synchronizes the CTA)
        sVt = cute.composition(sV, cute.make_ordered_layout((d, self.block_n, self.stages), order=(1, 0, 2)))  # (D, N, stage)
        handoff = None  # NVFP4_OFFLOAD: (the rows' coordinates, (field, warpgroup); the mbarriers)
        if cutlass.const_expr(self.offload):
            handoff = (storage.o_tiles.get_tensor(cute.make_layout((self.handoff_fields, self.consumer_wgs))), storage.bar_o.data_ptr())
            if tidx == 0:
                sTiles, bar_o = handoff[0], handoff[1]
                for w in cutlass.range_constexpr(self.consumer_wgs):
                    # rows given: every thread of the warpgroup, once its rows are in (each arrives
                    # after its own stores; one arrive after the warpgroup's barrier would order them
                    # as well, by the PTX memory model, but racecheck does not follow a named barrier
                    # into an mbarrier arrive and reports every row as a race)
                    cute.arch.mbarrier_init(bar_o + 2 * w, 128)
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
        pipe_q = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bar_q.data_ptr(), num_stages=self.q_stages, producer_group=producer,
            consumer_group=consumers,
            tx_count=cute.size_in_bytes(self.dtype, sQ_layout),
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
                q_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.q_stages)
                state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
                load = functools.partial(
                    self.load_tile, m_tiles, num_splits, mQ, mK, mV, tma_q, tma_k, tma_v, sQ_loads, sK, sV, pipe_q, pipe_k, pipe_v,
                    left, right, rank, cluster, tail,
                )  # fmt: skip
                if cutlass.const_expr(self.dynamic):
                    tile = first_tile
                    fetched = I32(0)  # (the hand-over's phase)
                    while tile < n_tiles:
                        q_state, state = load(tile, q_state, state)
                        tile = self.fetch_tile(mCounters, sNext, ctas, n_tiles, fetched)
                        fetched = fetched + 1
                elif cutlass.const_expr(self.persistent):
                    for unit in cutlass.range(first_unit, units, unit_stride, unroll=1):
                        q_state, state = load(self.unit_tile(unit, first_unit, unit_stride, units, rank, cluster), q_state, state)
                else:
                    q_state, state = load(first_tile, q_state, state)
                if cutlass.const_expr(self.pdl == "last_load"):
                    cute.arch.griddepcontrol_launch_dependents()  # (fmha_decode.PDL_TRIGGER: the CTA's loads are all issued)
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
            corr = cute.make_rmem_tensor((n_rows,), F32)
            q_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.q_stages)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            if cutlass.const_expr(self.pingpong):
                if wg == 0:
                    cute.arch.barrier_arrive(barrier_id=TURN_BARRIER, number_of_threads=256)  # the first turn is the first consumer's
            quantize_pending = None  # NVFP4_DEFER: a tile's rows left in O's buffer, as NVFP4 (by its index; -1: none)
            if cutlass.const_expr(self.defer):
                quantize_pending = functools.partial(
                    self.quantize_pending, m_tiles, num_splits, mQ, mK, mO, (mCodes, mScales, mGlobal), sO, left, right, ct, wg, tail
                )  # fmt: skip
            compute = functools.partial(
                self.compute_tile, m_tiles, num_splits, mQ, mK, mO, mLSE, mSink, mCodes, mScales, mGlobal, mTailO, mTailLSE, scale_log2,
                left, right,
                pipe_q, pipe_k, pipe_v, mma_qk, mma_pv, s2g, sO, handoff, sNext, n_tiles, tSrQ, tSrK, tOrVt, acc_O, acc_S,
                rP, corr, row_max, row_sum, tScS, ct, wg, tail, quantize_pending,
            )  # fmt: skip
            pending = I32(-1)  # NVFP4_DEFER: the tile whose rows wait in O's buffer to be quantized (-1: none)
            if cutlass.const_expr(self.dynamic):
                tile = first_tile
                while tile < n_tiles:
                    q_state, state, tile, pending = compute(tile, q_state, state, pending)  # (the next tile: take_tile)
            elif cutlass.const_expr(self.persistent):
                for unit in cutlass.range(first_unit, units, unit_stride, unroll=1):
                    q_state, state, _, pending = compute(self.unit_tile(unit, first_unit, unit_stride, units, rank, cluster), q_state, state, pending)
            else:
                # one tile: no loop around the body (with one, ptxas keeps more registers live
                # and, at D=128, serializes the wgmmas: C7512, measured 30% slower)
                _, _, _, pending = compute(first_tile, q_state, state, pending)
            if cutlass.const_expr(self.defer):
                quantize_pending(pending)
            if cutlass.const_expr(self.tma_store):
                if ct % 128 == 0:
                    cute.arch.cp_async_bulk_wait_group(0, read=True)  # shared memory outlives the last store's reads
            if cutlass.const_expr(self.offload):
                self.hand_over_end(handoff, ct, wg)
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
        tail,  # TAIL_SPLIT: (first tail tile, log2 of its pieces), or None
        tile: I32,
        q_state,
        state,
    ):
        """The producer's loads for one tile: Q once (when the consumers are done with the last
        one), then K and V, last key block first. The K/V ring runs on across tiles, so a
        persistent CTA's next tile starts loading while its consumers finish this one."""
        d = self.d
        m_block, head, batch, kv_head, n_block_max, n_blocks, _ = self.tile_coords(tile, m_tiles, num_splits, mQ, mK, left, right, tail)
        gQ = cute.local_tile(mQ[None, None, head, batch], (self.block_m, d), (m_block, 0))
        gK = cute.local_tile(mK[None, None, kv_head, batch], (self.block_n, d), (None, 0))
        gV = cute.local_tile(mV[None, None, kv_head, batch], (self.block_n, d), (None, 0))
        one = cute.make_layout(1)
        tQs, tQg = cpasync.tma_partition(tma_q, 0, one, cute.group_modes(sQ, 0, 2), cute.group_modes(gQ, 0, 2))  # tQs: (TMA, Q buffer)
        # K and V: the whole stage, or with a cluster this CTA's share of it, multicast to all
        kv_rank, kv_ctas = (rank, cute.make_layout(cluster)) if cutlass.const_expr(cluster > 1) else (0, one)
        tKs, tKg = cpasync.tma_partition(tma_k, kv_rank, kv_ctas, cute.group_modes(sK, 0, 2), cute.group_modes(gK, 0, 2))
        tVs, tVg = cpasync.tma_partition(tma_v, kv_rank, kv_ctas, cute.group_modes(sV, 0, 2), cute.group_modes(gV, 0, 2))
        kv_hint = {}  # (with a cluster: the multicast mask)
        load_q = functools.partial(self.load_q, tma_q, tQg, tQs, pipe_q, m_block)
        if cutlass.const_expr(cluster > 1):
            kv_hint["mcast_mask"] = cutlass.Int16((1 << cluster) - 1)
        if cutlass.const_expr(not self.k_ahead):
            q_state = load_q(q_state)
            for it in cutlass.range(n_blocks, unroll=1):
                n_block = n_block_max - 1 - it
                pipe_k.producer_acquire(state)
                cute.copy(tma_k, tKg[None, n_block], tKs[None, state.index], tma_bar_ptr=pipe_k.producer_get_barrier(state), **kv_hint)
                pipe_v.producer_acquire(state)
                cute.copy(tma_v, tVg[None, n_block], tVs[None, state.index], tma_bar_ptr=pipe_v.producer_get_barrier(state), **kv_hint)
                state.advance()
        else:
            # K_AHEAD, in the order the consumers need them: the first K (its slot is free as soon
            # as the previous tile's last S is complete) before Q (free only when every S of it
            # is), then K(n) before V(n + 1), the V of the block visited before, whose slot frees
            # only when that block's P V wgmma completes
            if n_blocks > 0:
                pipe_k.producer_acquire(state)
                cute.copy(tma_k, tKg[None, n_block_max - 1], tKs[None, state.index], tma_bar_ptr=pipe_k.producer_get_barrier(state), **kv_hint)
            q_state = load_q(q_state)
            for it in cutlass.range(1, n_blocks, unroll=1):
                v_state = state.clone()
                state.advance()
                pipe_k.producer_acquire(state)
                cute.copy(tma_k, tKg[None, n_block_max - 1 - it], tKs[None, state.index], tma_bar_ptr=pipe_k.producer_get_barrier(state), **kv_hint)
                pipe_v.producer_acquire(v_state)
                cute.copy(tma_v, tVg[None, n_block_max - it], tVs[None, v_state.index], tma_bar_ptr=pipe_v.producer_get_barrier(v_state), **kv_hint)
            if n_blocks > 0:
                pipe_v.producer_acquire(state)
                cute.copy(tma_v, tVg[None, n_block_max - n_blocks], tVs[None, state.index], tma_bar_ptr=pipe_v.producer_get_barrier(state), **kv_hint)
                state.advance()
        return q_state, state

    @cute.jit
    def load_q(self, tma_q: cute.CopyAtom, tQg: cute.Tensor, tQs: cute.Tensor, pipe_q, m_block: I32, q_state):
        """A tile's Q into its buffer once the consumers are done with the last one in it."""
        pipe_q.producer_acquire(q_state)
        cute.copy(tma_q, tQg, tQs[None, q_state.index], tma_bar_ptr=pipe_q.producer_get_barrier(q_state))
        q_state.advance()
        return q_state

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
        quantize_pending,  # NVFP4_DEFER: Sm90Epilogues.quantize_pending with all but the tile bound; else None
        tile: I32,
        q_state,
        state,
        pending: I32,
    ):
        """One consumer warpgroup's 64 rows of one tile: the key blocks, then the epilogue.

        Returns the pipeline states, with ORDER "dynamic" the warpgroup's next tile (taken from
        the producer while the tile's last P V wgmma runs), and with NVFP4_DEFER the tile whose
        rows O's buffer holds unquantized (this one; `pending`, the one before, is quantized
        here, once this tile's first S wgmma is issued)."""
        m_block, head, batch, kv_head, n_block_max, n_blocks, split = self.tile_coords(tile, m_tiles, num_splits, mQ, mK, left, right, tail)
        m0 = m_block * self.block_m
        sk = mK.shape[0]
        offset = sk - self.queries(mQ)  # bottom-right alignment of the masks
        tOrP = _as_operand_a(rP)
        acc_O.fill(0.0)
        row_max.fill(-F32.inf)
        row_sum.fill(0.0)
        softmax = functools.partial(self.softmax, acc_S, corr, row_max, row_sum, scale_log2, tScS, m0, sk, offset, left, right)
        tSrQ = tSrQ[None, None, None, q_state.index]  # this tile's Q buffer
        pipe_q.consumer_wait(q_state)
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
            if cutlass.const_expr(self.defer):
                # the last tile's rows, while the tensor cores compute this S (only S is live here)
                quantize_pending(pending)
            warpgroup.wait_group(0)
            pipe_k.consumer_release(state)
            softmax(n_block_max - 1)  # O is still zero: its first rescale (by 0) changes nothing
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
                # D=128 in an earlier persistent build, 1080 at D=64 bf16 in this kernel)
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
            pipe_v.consumer_wait(state)
            self.mma_turn_wait(wg)
            if cutlass.const_expr(not self.late_rescale):
                _rescale(acc_O, corr, self.conditional_rescale)  # (LATE_RESCALE: done after the last softmax; O is zero after the first)
            _wgmma_issue(mma_pv, acc_O, tOrP, tOrVt[None, None, None, state.index], False)
            self.mma_turn_done(wg)
            if cutlass.const_expr(self.dynamic):
                next_tile = self.take_tile(sNext, n_tiles, q_state.count)
            warpgroup.wait_group(0)
            pipe_v.consumer_release(state)
            state.advance()
        else:
            if cutlass.const_expr(self.dynamic):
                next_tile = self.take_tile(sNext, n_tiles, q_state.count)
            if cutlass.const_expr(self.defer):
                quantize_pending(pending)
        # every S wgmma of this tile is complete: Q's buffer may take the next tile's
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
                head, batch,
            )  # fmt: skip
        if cutlass.const_expr(self.defer):
            pending = tile  # (its rows are in O's buffer: the next tile's start, or the end, quantizes them)
        return q_state, state, next_tile, pending

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
        if cutlass.const_expr(self.overlap):
            # S(n) and O += P(n+1) V(n+1) in flight together; softmax(n) once S(n) is in.
            # O takes the correction of P(n+1)'s softmax while the S wgmma runs, or with
            # LATE_RESCALE that of P(n)'s once the P V is complete
            self.mma_turn_wait(wg)
            if cutlass.const_expr(self.o_direct):
                # the zero-initializing S wgmma still names S as an input, and S holds the last
                # softmax's P (f32): with the direct epilogue after the loop, LLVM then converts P
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
        self.store_p(rP, acc_S, wg)
        return state

    @cute.jit
    def store_p(self, rP, acc_S: cute.Tensor, wg: I32):
        """P (acc_S after the softmax) as the A operand of the next P V, in registers."""
        if cutlass.const_expr(cute.size(acc_S) & (cute.size(acc_S) - 1) == 0):
            rP.store(acc_S.load().to(self.dtype))
        else:
            # 8 values at a time: a whole-fragment conversion of BLOCK_N / 2 values that is not a
            # power of two (BLOCK_N 160, 176) comes out partly as scalar converts and 16-bit moves,
            # which ptxas answers with a warpgroup.arrive before each P V wgmma (C7519)
            for i in cutlass.range_constexpr(cute.size(acc_S) // 8):
                src = cute.make_tensor(acc_S.iterator + i * 8, cute.make_layout(8))
                dst = cute.make_tensor(rP.iterator + i * 8, cute.make_layout(8))
                dst.store(src.load().to(self.dtype))
