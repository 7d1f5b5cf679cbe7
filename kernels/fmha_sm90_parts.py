"""The Hopper FMHA's shared pieces: what its kernel, scheduling, softmax and epilogues all use.

Owns the named-barrier ids and thread counts of the warpgroup layout (producer, consumers,
the NVFP4 quantizer warps), the register budget of setmaxnreg, the TMA cache-hint policies,
the wgmma register views (`_mn_view`, `_as_operand_a`), the shared-memory layouts, the wgmma
issue and the register-to-shared copy. Imports nothing of the Hopper FMHA's other files.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90
from cutlass.cute.nvgpu import warpgroup

from cute_lowering.kernels.cutedsl_compat import LayoutEnum

F32 = cutlass.Float32
I32 = cutlass.Int32

PRODUCER_REGS = 24  # setmaxnreg: the producer only issues TMA
REGISTER_FILE = 65536  # 32-bit registers of an SM, one CTA an SM
# setmaxnreg moves registers between a CTA's warpgroups within what the CTA was launched with:
# (REGISTER_FILE / threads, rounded down to 8) a thread, so the warpgroups' counts add up to at
# most that times their number (3 warpgroups: 3 x 168 = 504; 4: 4 x 128 = 512); a consumer's
# setmaxnreg.inc that asks for more waits forever
QUANTIZER_REGS = 32  # NVFP4_OFFLOAD: at least this many for the producer warpgroup (it quantizes)
EPILOGUE_BARRIER = 1  # named barriers 1.. : one per consumer warpgroup (its O rows in shared memory)
TURN_BARRIER = 5  # named barriers 5, 6 (, 7): PINGPONG's turns, one per consumer
# (ORDER "dynamic" hands the next tile's index over through two mbarriers: fetch_tile)
# NVFP4_OFFLOAD: the producer warpgroup's warps 1 and 2 quantize O (warp 0 issues the loads)
QUANTIZER_WARPS = (1, 2)
QUANTIZER_THREADS = 32 * len(QUANTIZER_WARPS)  # one row of a warpgroup's 64 a thread
TAIL_COMBINE_WARPS = 4  # the tail combine: a warp a row, 4 rows a CTA
_EVICT_FIRST = 0x12F0000000000000  # the 64-bit L2 cache policies CUTLASS's TMA::CacheHintSm90 names
_EVICT_LAST = 0x14F0000000000000




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


def _r2s_tiled_copy(dtype, mma: cute.TiledMma, stmatrix: bool) -> cute.TiledCopy:
    """Registers -> shared memory for an accumulator-shaped fragment (O):
    element-wise stores (two 16-bit values a store), or with STMATRIX the warp's `stmatrix`
    (four 8 x 8 matrices an instruction), as FA3 and CUTLASS's epilogues do."""
    if not stmatrix:
        return cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype), mma)
    atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), dtype)
    return cute.make_tiled_copy_S(atom, cute.make_tiled_copy_C_atom(atom, mma))
