"""NVFP4 quantize / dequantize: CuTeDSL kernels and a torch API.

NVFP4 (TensorRT-LLM's recipe, `cvt_warp_fp16_to_fp4` in
tensorrt_llm/kernels/quantization.cuh, https://github.com/NVIDIA/TensorRT-LLM): E2M1
values packed two per byte (element 2i in the low nibble), one E4M3 scale per 16
consecutive elements of a row, one f32 global scale per tensor.

    SF      = global * (block_amax * (1/6 as f32))
    SF_fp8  = E4M3(SF)                                 `.to(cutlass.Float8E4M3FN)`: RNE, satfinite
    scale   = SF_fp8 != 0 ? 1 / (SF_fp8 * (1/global)) : 0     IEEE-rounded reciprocals
    q       = E2M1(x * scale)                          `.to(cutlass.Float4E2M1FN)`: RNE, satfinite

NaN/inf policy: see `kernels/reference.py` (block amax ignores NaN; NaN -> +6, ±inf -> ±6).

The kernels use CuTeDSL's plain conversions and are compiled inside
`lowering.prelowering()` ("auto"): on sm_90a our select passes rewrite the FP4
conversions (there is no FP4 cvt before sm_100a), on sm_100a CuTeDSL's hardware path
stays. `variant="fptosi"` builds a comparison kernel whose E2M1 code comes from
`Int32(roundeven(clamp(...)))` and runs the bounded `fptosi-to-select` pass too.

Layout of the work: a row-major [M, K] tensor with K % 16 == 0 is a flat array of
N = M*K elements whose 16-element blocks never cross a row, so the kernel sees 1-D
tensors: x [N], packed bytes [N/2], scale bytes [N/16]. Thread t of CTA c handles
blocks (c * BLOCKS_PER_THREAD + i) * THREADS + t, i < BLOCKS_PER_THREAD: a warp's
loads of one step cover 1 KiB of consecutive bf16. Each block is 32 B (bf16) in, two
16-byte loads; 8 B of codes out (one 8-byte store) and 1 B of scale.

Importing this module needs neither torch nor a GPU; the compile functions work
without a GPU (fake tensors) for any target.
"""

from __future__ import annotations

import functools

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import llvm, nvvm
from cutlass.cute.runtime import make_ptr
from cutlass.cutlass_dsl import dsl_user_op

import lowering
from kernels.cutedsl_compat import SmemAllocator
from kernels.torch_device import arch_of, torch_module
from lowering.targets import check_target, sm_version

# --- tuning knobs ---------------------------------------------------------------
THREADS = 256  # threads per CTA
BLOCKS_PER_THREAD = 4  # 16-element blocks each thread quantizes (loads issued together)
DEQ_BLOCKS_PER_THREAD = 2  # the same for dequantize
AMAX_BLOCKS_PER_THREAD = 8  # the same for the global amax
AMAX_CTAS = THREADS  # the amax grid's cap (CTAs loop over tiles): its partial maxima fit one per quantize thread
BLOCK = 16  # elements per E4M3 scale (NVFP4)

F32 = cutlass.Float32
FP4 = cutlass.Float4E2M1FN
FP8 = cutlass.Float8E4M3FN
INPUT_TYPES = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16, "float32": cutlass.Float32}
OUTPUT_TYPES = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16, "float32": cutlass.Float32}
VARIANTS = ("plain", "fptosi")


def fptosi_pipeline(arch: str) -> str:
    """`auto` plus the bounded float-to-int rewrite, for the comparison build."""
    return (
        "builtin.module(ptx-float-operands,fptosi-to-select,"
        f"truncf-to-select{{arch={arch}}},extf-to-select{{arch={arch}}})"
    )


# --- the E2M1 conversion, two ways ------------------------------------------------
def e2m1_plain(y: cute.TensorSSA) -> cute.TensorSSA:
    """16 f32 -> 16 E2M1 codes packed in 2 x u32: CuTeDSL's own conversion."""
    return y.to(FP4).bitcast(cutlass.Uint32)


def e2m1_fptosi(y: cute.TensorSSA) -> cute.TensorSSA:
    """The same codes from three clamped integer roundings (bit-exact, see below).

    On a = 2|y| the E2M1 magnitudes are 0,1,2,3,4,6,8,12 (codes 0..7). RNE to that
    grid with ties to the even code is, piecewise, RNE to the integers on [0, 4], to
    even integers on [4, 8], to multiples of 4 on [8, 12]:
        code = re(clamp(a, 0, 4)) + re(clamp(a/2, 2, 4)) + re(clamp(a/4, 2, 3)) - 4
    (each tie of the E2M1 grid lands on a .5 of exactly one term, which rounds to the
    even code). Saturation is the clamps; NaN clamps to each upper bound (NaN-quiet
    min/max), code 7 = +6, and the sign bit is dropped for NaN (the +6 policy).
    """
    a = abs(y) * 2.0
    lo = cute.math.roundeven(cute.math.clamp(a, cute.full_like(a, 0.0), cute.full_like(a, 4.0)))
    mid = cute.math.roundeven(cute.math.clamp(a * 0.5, cute.full_like(a, 2.0), cute.full_like(a, 4.0)))
    hi = cute.math.roundeven(cute.math.clamp(a * 0.25, cute.full_like(a, 2.0), cute.full_like(a, 3.0)))
    code = lo.to(cutlass.Int32) + mid.to(cutlass.Int32) + hi.to(cutlass.Int32) - 4
    bits = cute.TensorSSA(y.bitcast(cutlass.Int32), y.shape, cutlass.Int32)  # bitcast flattens the shape
    negative = bits < 0  # the sign bit: -0 and tiny negatives give -0
    code = code + cute.where(negative, cute.full_like(code, 8), cute.full_like(code, 0))
    code = cute.where(y == y, code, cute.full_like(code, 7))  # NaN -> +6
    return code.to(cutlass.Int4).bitcast(cutlass.Uint32)


# --- the algorithm on one block ----------------------------------------------------
def _quantize_block(x16, gs, inv_gs, to_e2m1):
    """16 input values -> (2 x u32 of E2M1 codes, E4M3 scale)."""
    v = x16.to(F32)
    amax = F32(0.0)  # fmax ignores NaN; starting at 0 keeps amax a number
    for i in range(BLOCK):  # unrolled at trace time: a tree of FMNMX with |.|
        amax = cute.arch.fmax(amax, abs(v[i]))
    sf = cutlass.Float8E4M3FN(gs * (amax * F32(1.0 / 6.0)))  # 1/6 rounded to f32 once, here
    sf_f = F32(sf)
    scale = cutlass.select_(sf_f != F32(0.0), F32(1.0) / (sf_f * inv_gs), F32(0.0))
    return to_e2m1(v * scale), sf


def quantize_tile_rows(tile, codes, scales, rows_valid, gs, inv_gs, tidx, threads: int):
    """An epilogue for other kernels: a [rows, cols] tile (shared memory) -> NVFP4 in global memory.

    Call it while tracing a kernel. `codes` is the [rows, cols/8] u32 view of the packed
    output and `scales` the [rows, cols/16] E4M3 (or u8) scales, both tiles at the
    tile's rows; rows >= `rows_valid` (>= 1) are not written. Each of `threads` threads
    (this one is `tidx`) takes whole 16-element blocks, consecutive threads neighbouring
    blocks of a row (coalesced stores). The values are the tile's (already rounded to
    its dtype), so the result is bit-identical to `quantize()` of the tensor the tile
    would have been stored to.
    """
    rows, cols = cute.size(tile, mode=[0]), cute.size(tile, mode=[1])
    per_row = cols // BLOCK
    if rows * per_row % threads:
        raise ValueError(f"{rows}x{cols} tile: {rows * per_row} blocks do not split over {threads} threads")
    scale_bytes = scales if scales.element_type == FP8 else cute.recast_tensor(scales, FP8)
    for i in range(rows * per_row // threads):  # unrolled while tracing
        block = tidx + i * threads
        # a thread past the valid rows redoes the last valid row's block (same values, same
        # bytes): no branch, and no write outside the valid rows
        row = cutlass.select_(block // per_row < rows_valid, block // per_row, rows_valid - 1)
        col = block % per_row
        # element by element through the tiles' own layouts (a swizzled tile included):
        # 16 shared-memory loads and two 4-byte stores, a small cost for an epilogue
        values = cute.make_rmem_tensor((BLOCK,), tile.element_type)
        for j in range(BLOCK):
            values[j] = tile[row, col * BLOCK + j]
        packed, sf = _quantize_block(values.load(), gs, inv_gs, e2m1_plain)
        codes[row, 2 * col] = packed[0]
        codes[row, 2 * col + 1] = packed[1]
        scale_bytes[row, col] = sf


GLOBAL_SCALE_NUMERATOR = 448.0 * 6.0  # E4M3 max * E2M1 max: the global scale is this / amax


# Where the quantize kernel gets the global scale from (`compile_quantize`'s `scale`):
#   "given":    g[0], the caller's;
#   "partials": 448*6 / max of the amax kernel's per-CTA maxima, launched just before it
#               (two launches, one host call): any size, any arch;
#   "cluster":  one launch whose grid is one thread-block cluster (sm_90 and later): each
#               CTA reduces its share of x, the CTA maxima meet in every CTA's shared memory
#               (distributed shared memory, a cluster barrier), then each quantizes its tile.
#               Covers ONE_LAUNCH_MAX_ELEMENTS at most.
SCALE_SOURCES = ("given", "partials", "cluster")
ONE_LAUNCH_CLUSTER = 8  # CTAs: the largest portable cluster size
ONE_LAUNCH_MAX_ELEMENTS = ONE_LAUNCH_CLUSTER * THREADS * BLOCKS_PER_THREAD * BLOCK  # one quantize tile a CTA: 128 K


def one_launch_arch(arch: str) -> bool:
    """Whether `arch` has thread-block clusters (sm_90 and later), which the "cluster" build needs."""
    return sm_version(arch) >= 90


def _make_quantize(variant: str, per_thread: int, scale: str = "given"):
    """The quantize kernel; `scale` (SCALE_SOURCES): where the global scale comes from.

    "partials": `g` holds the amax kernel's partial maxima (`amax_ctas(n)` of them, one
    per thread: every CTA needs the global scale, and max is exact in any order);
    "cluster": the CTAs of the one cluster exchange their maxima. Both compute 448*6/amax
    (1 when amax is 0; IEEE division, as the torch formula in `compute_global_scale`) and
    CTA 0's thread 0 writes it to `g_out`: no fill, no atomics, no torch ops in between.
    """
    to_e2m1 = e2m1_fptosi if variant == "fptosi" else e2m1_plain
    step = THREADS * per_thread

    @cute.kernel
    def quantize_kernel(x: cute.Tensor, q: cute.Tensor, s: cute.Tensor, g: cute.Tensor, g_out: cute.Tensor):
        # tile: x as [16, blocks]; codes as [2 x u32, blocks]; scales as [blocks] of E4M3
        xb = cute.zipped_divide(x, (BLOCK,))
        qb = cute.zipped_divide(q, (2,))
        sb = cute.recast_tensor(s, FP8)
        blocks = cute.size(xb, mode=[1])
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        first = bidx * step + tidx
        if cutlass.const_expr(scale != "given"):
            if cutlass.const_expr(scale == "partials"):
                gs = _scale_from_partials(g, tidx)
            else:
                gs = _scale_from_cluster(xb, tidx, bidx)
            if bidx == 0:
                if tidx == 0:
                    g_out[0] = gs
        else:
            gs = g[0]
        inv_gs = F32(1.0) / gs
        if bidx * step + step <= blocks:
            # whole tile in range: load every block first, then compute and store
            tiles = [xb[(None, first + i * THREADS)].load() for i in range(per_thread)]
            for i in cutlass.range_constexpr(per_thread):
                codes, sf = _quantize_block(tiles[i], gs, inv_gs, to_e2m1)
                qb[(None, first + i * THREADS)].store(codes)
                sb[first + i * THREADS] = sf
        else:
            # the tail: predicated per block (blocks never cross rows, so no partial block)
            for i in cutlass.range_constexpr(per_thread):
                b = first + i * THREADS
                if b < blocks:
                    codes, sf = _quantize_block(xb[(None, b)].load(), gs, inv_gs, to_e2m1)
                    qb[(None, b)].store(codes)
                    sb[b] = sf

    @cute.jit
    def quantize(x: cute.Pointer, q: cute.Pointer, s: cute.Pointer, g: cute.Pointer, n: cutlass.Int32, stream: cuda.CUstream):
        # g: the global scale, read ("given") or written ("cluster")
        blocks = n // BLOCK
        tensors = _flat_tensors((x, n), (q, n // 8), (s, blocks), (g, 1), (g, 1))
        if cutlass.const_expr(scale == "cluster"):
            # one cluster; CTAs past the data still take part in the amax exchange
            cta = (ONE_LAUNCH_CLUSTER, 1, 1)
            quantize_kernel(*tensors).launch(grid=cta, block=(THREADS, 1, 1), cluster=cta, stream=stream)
        else:
            grid = (blocks + step - 1) // step
            quantize_kernel(*tensors).launch(grid=(grid, 1, 1), block=(THREADS, 1, 1), stream=stream)

    amax_partials = _make_amax(partials=True) if scale == "partials" else None

    @cute.jit
    def quantize_scale_from_partials(
        x: cute.Pointer, q: cute.Pointer, s: cute.Pointer, partials: cute.Pointer, g_out: cute.Pointer, n: cutlass.Int32, stream: cuda.CUstream
    ):
        # both launches from one host call (one TVM-FFI call a quantize): the partial maxima, then quantize
        amax_partials(x, partials, n, stream)
        blocks = n // BLOCK
        grid = (blocks + step - 1) // step
        quantize_kernel(*_flat_tensors((x, n), (q, n // 8), (s, blocks), (partials, amax_ctas(n)), (g_out, 1))).launch(
            grid=(grid, 1, 1), block=(THREADS, 1, 1), stream=stream
        )

    return quantize_scale_from_partials if scale == "partials" else quantize


def _make_dequantize(out_type):
    step = THREADS * DEQ_BLOCKS_PER_THREAD

    @cute.kernel
    def dequantize_kernel(q: cute.Tensor, s: cute.Tensor, g: cute.Tensor, y: cute.Tensor):
        qb = cute.zipped_divide(q, (2,))
        sb = cute.recast_tensor(s, FP8)
        yb = cute.zipped_divide(y, (BLOCK,))
        blocks = cute.size(yb, mode=[1])
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        inv_gs = F32(1.0) / g[0]
        for i in cutlass.range_constexpr(DEQ_BLOCKS_PER_THREAD):
            b = bidx * step + i * THREADS + tidx
            if b < blocks:
                values = qb[(None, b)].load().bitcast(FP4).to(F32)  # exact
                sf = F32(sb[b])  # exact
                yb[(None, b)].store(((values * sf) * inv_gs).to(out_type))

    @cute.jit
    def dequantize(q: cute.Pointer, s: cute.Pointer, g: cute.Pointer, y: cute.Pointer, n: cutlass.Int32, stream: cuda.CUstream):
        blocks = n // BLOCK
        grid = (blocks + step - 1) // step
        dequantize_kernel(*_flat_tensors((q, n // 8), (s, blocks), (g, 1), (y, n))).launch(
            grid=(grid, 1, 1), block=(THREADS, 1, 1), stream=stream
        )

    return dequantize


def amax_ctas(n):
    """CTAs of the amax kernel for n elements (an int, or an Int32 while tracing): one per tile, at most AMAX_CTAS."""
    tiles = (n // BLOCK + THREADS * AMAX_BLOCKS_PER_THREAD - 1) // (THREADS * AMAX_BLOCKS_PER_THREAD)
    return min(tiles, AMAX_CTAS) if type(tiles) is int else cutlass.min(tiles, AMAX_CTAS)


@cute.jit  # traced inline where a kernel calls it (its branches staged)
def _cta_max(value: F32, tidx: cutlass.Int32) -> F32:
    """max of `value` over the CTA's THREADS threads, in every thread (shuffles, then shared memory)."""
    warps = THREADS // 32
    value = cute.arch.warp_reduction_max(value)
    per_warp = SmemAllocator().allocate_tensor(F32, cute.make_layout((warps,)), byte_alignment=16)
    if tidx % 32 == 0:
        per_warp[tidx // 32] = value
    cute.arch.barrier()
    best = per_warp[0]
    for w in cutlass.range_constexpr(1, warps):
        best = cute.arch.fmax(best, per_warp[w])
    return best


@cute.jit
def _thread_amax(xb: cute.Tensor, tidx: cutlass.Int32, first_tile: cutlass.Int32, tile_stride: cutlass.Int32, per_thread: cutlass.Constexpr) -> F32:
    """This thread's max |x| over the finite elements of tiles first_tile, first_tile + tile_stride, ...

    A tile is THREADS * per_thread 16-element blocks (xb: [16, blocks]); a whole tile's
    loads are issued before any is reduced (bytes in flight are what this loop is about),
    only the last, partial tile is predicated per block. first_tile < tile_stride.
    0 when the thread sees no finite element.
    """
    step = THREADS * per_thread
    blocks = cute.size(xb, mode=[1])
    whole = blocks // step
    best = F32(0.0)
    for tile in cutlass.range(first_tile, whole, tile_stride):
        values = [xb[(None, tile * step + i * THREADS + tidx)].load() for i in range(per_thread)]
        for i in cutlass.range_constexpr(per_thread):
            best = _finite_amax(best, values[i])
    if whole * step < blocks:
        if whole % tile_stride == first_tile:  # the partial tile is this CTA's turn
            for i in cutlass.range_constexpr(per_thread):
                b = whole * step + i * THREADS + tidx
                if b < blocks:
                    best = _finite_amax(best, xb[(None, b)].load())
    return best


@cute.jit
def _finite_amax(best: F32, block: cute.TensorSSA) -> F32:
    """max(best, |v|) over the finite values v of one 16-element block."""
    v = abs(block.to(F32))
    for j in cutlass.range_constexpr(BLOCK):
        # finite only: NaN and inf fail the compare
        best = cute.arch.fmax(best, cutlass.select_(v[j] < F32.inf, v[j], F32(0.0)))
    return best


@cute.jit
def _scale_from_amax(amax: F32) -> F32:
    """448*6 / amax, 1 when amax is 0 (IEEE division, as the torch formula in `compute_global_scale_eager`)."""
    return cutlass.select_(amax > F32(0.0), F32(GLOBAL_SCALE_NUMERATOR) / amax, F32(1.0))


@dsl_user_op
def _store_to_peer(smem_ptr: cute.Pointer, value: F32, peer_rank: cutlass.Int32, *, loc=None, ip=None) -> None:
    """st.shared::cluster of one f32 at `smem_ptr`'s address in cluster CTA `peer_rank` (mapa, then a plain store).

    CuTeDSL's tensors over distributed-shared-memory pointers refuse load/store, and its
    only peer store is the mbarrier-tracked st.async; this one is ordered by the cluster
    barrier that follows it (release/acquire)."""
    dsmem = llvm.PointerType.get(cute.AddressSpace.dsmem)
    peer = nvvm.mapa(dsmem, smem_ptr.to_llvm_ptr(loc=loc, ip=ip), cutlass.Int32(peer_rank).ir_value(loc=loc, ip=ip), loc=loc, ip=ip)
    llvm.store(F32(value).ir_value(loc=loc, ip=ip), peer, loc=loc, ip=ip)


@cute.jit
def _scale_from_cluster(xb: cute.Tensor, tidx: cutlass.Int32, rank: cutlass.Int32) -> F32:
    """448*6 / amax(|x|) over the finite values (1 when 0), in every thread of the cluster's CTAs.

    The grid is one cluster of ONE_LAUNCH_CLUSTER CTAs (rank = block index). CTA r reduces
    amax tiles r, r + ONE_LAUNCH_CLUSTER, ...; its thread t then stores the CTA's maximum
    into slot r of CTA t's `maxima` (distributed shared memory), and after a cluster
    barrier (arrive has release, wait acquire semantics) every CTA holds all the maxima.
    """
    # peers write into this CTA's shared memory only after every CTA has started: the
    # arrive here, its wait just before the stores (the reduction runs in between)
    cute.arch.cluster_arrive_relaxed()
    best = _cta_max(_thread_amax(xb, tidx, rank, ONE_LAUNCH_CLUSTER, AMAX_BLOCKS_PER_THREAD), tidx)
    maxima = SmemAllocator().allocate_tensor(F32, cute.make_layout((ONE_LAUNCH_CLUSTER,)), byte_alignment=16)
    cute.arch.cluster_wait()
    if tidx < ONE_LAUNCH_CLUSTER:
        _store_to_peer(maxima.iterator + rank, best, tidx)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    amax = maxima[0]
    for r in cutlass.range_constexpr(1, ONE_LAUNCH_CLUSTER):
        amax = cute.arch.fmax(amax, maxima[r])
    return _scale_from_amax(amax)


@cute.jit
def _scale_from_partials(partials: cute.Tensor, tidx: cutlass.Int32) -> F32:
    """448*6 / max(partials) (1 when 0; IEEE division, as the torch formula in
    `compute_global_scale_eager`), in every thread of a CTA: one partial per thread."""
    partial = F32(0.0)
    if tidx < cute.size(partials):
        partial = partials[tidx]
    return _scale_from_amax(_cta_max(partial, tidx))


def _make_global_scale():
    """The global scale alone: the partial-maxima amax kernel, then one CTA reducing them.

    One host function (one TVM-FFI call, two launches) into `amax_ctas(n)` + 1 uninitialised
    f32: no fill, no atomics, no torch ops (was: zeros, the atomic amax, five torch ops).
    """
    amax_partials = _make_amax(partials=True)

    @cute.kernel
    def scale_kernel(partials: cute.Tensor, g_out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        gs = _scale_from_partials(partials, tidx)
        if tidx == 0:
            g_out[0] = gs

    @cute.jit
    def global_scale(x: cute.Pointer, partials: cute.Pointer, g_out: cute.Pointer, n: cutlass.Int32, stream: cuda.CUstream):
        amax_partials(x, partials, n, stream)
        scale_kernel(*_flat_tensors((partials, amax_ctas(n)), (g_out, 1))).launch(grid=(1, 1, 1), block=(THREADS, 1, 1), stream=stream)

    return global_scale


def _make_amax(partials: bool = False):
    """max |x| over the finite elements (NaN and ±inf skipped): one read of x.

    A grid of `amax_ctas(n)` CTAs; CTA c reduces tiles c, c + grid, ... in registers, then
    across its threads. With `partials` CTA c stores its maximum (0 if none) to out[c], a
    buffer of `amax_ctas(n)` f32 that needs no initialisation (the scale-from-amax
    quantize build reduces it); otherwise it adds one `atomic_fmax` to out[0], which
    starts at 0.
    """

    @cute.kernel
    def amax_kernel(x: cute.Tensor, out: cute.Tensor):
        xb = cute.zipped_divide(x, (BLOCK,))
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        grid, _, _ = cute.arch.grid_dim()
        best = _cta_max(_thread_amax(xb, tidx, bidx, grid, AMAX_BLOCKS_PER_THREAD), tidx)
        if tidx == 0:
            if cutlass.const_expr(partials):
                out[bidx] = best
            else:
                cute.arch.atomic_fmax(out.iterator, best, sign_bit=False)

    @cute.jit
    def amax(x: cute.Pointer, out: cute.Pointer, n: cutlass.Int32, stream: cuda.CUstream):
        grid = amax_ctas(n)
        amax_kernel(*_flat_tensors((x, n), (out, grid if cutlass.const_expr(partials) else 1))).launch(
            grid=(grid, 1, 1), block=(THREADS, 1, 1), stream=stream
        )

    return amax


def _flat_tensors(*pointers_and_sizes):
    """1-D tensors over raw pointers (the host passes pointers and a size: cheap per call)."""
    return [cute.make_tensor(ptr, cute.make_layout((size,))) for ptr, size in pointers_and_sizes]


# --- compile (no GPU needed) ------------------------------------------------------
# Pointer alignments: the element tensors and the codes are read/written 16 bytes at a
# time; the API checks that the torch tensors honour them.
ALIGN_VALUES, ALIGN_CODES, ALIGN_SCALES = 16, 16, 4
_TRACE_ADDRESS = 256  # compiling needs pointer values, not memory: any suitably aligned address


def _values_pointer(value_type, address: int):
    return make_ptr(value_type, address, cute.AddressSpace.gmem, assumed_align=ALIGN_VALUES)


def _f32_pointer(address: int):
    return make_ptr(F32, address, cute.AddressSpace.gmem, assumed_align=4)


def output_pointers(codes: int, scales: int, global_scale: int) -> tuple:
    """Pointer arguments for NVFP4 output, ours or another kernel's: codes as u32, scale bytes, the f32 global scale."""
    gmem = cute.AddressSpace.gmem
    return (
        make_ptr(cutlass.Uint32, codes, gmem, assumed_align=ALIGN_CODES),
        make_ptr(cutlass.Uint8, scales, gmem, assumed_align=ALIGN_SCALES),
        _f32_pointer(global_scale),
    )


def _pointer_args(value_type, values: int, codes: int, scales: int, global_scale: int) -> tuple:
    """The quantize/dequantize kernels' pointer arguments from addresses, values first."""
    return (_values_pointer(value_type, values), *output_pointers(codes, scales, global_scale))


def _stream_arg():
    return cuda.CUstream(0)


# With `tvm_ffi=True` a build is called through CuTeDSL's TVM-FFI convention: addresses
# as Python ints, the element count as an int, the stream as an int handle (see
# kernels/ops.py, the torch ops' launch path); without it, through `cute.Pointer`s
# (`make_ptr`), `Int32` and a `CUstream` as below (`quantize_arguments`).
TVM_FFI_OPTION = "--enable-tvm-ffi"


def _build(fn, args, arch: str, pipeline: str, tvm_ffi: bool = False):
    opts = " ".join(([f"--gpu-arch {check_target(arch)}"] if arch else []) + ([TVM_FFI_OPTION] if tvm_ffi else []))
    with lowering.prelowering(pipeline):
        return cute.compile(fn, *args, cutlass.Int32(BLOCK), _stream_arg(), **({"options": opts} if opts else {}))


@functools.cache
def compile_quantize(
    in_dtype: str = "bfloat16",
    arch: str = "sm_90a",
    variant: str = "plain",
    per_thread: int = BLOCKS_PER_THREAD,
    *,
    tvm_ffi: bool = False,
    scale: str = "given",
):
    """The compiled quantize kernel for `in_dtype` ('bfloat16', 'float16', 'float32') and `arch`.

    `variant`: "plain" (`.to(Float4E2M1FN)`) or "fptosi" (the comparison build).
    `per_thread`: 16-element blocks per thread (the tuning knob, overridable for
    measurements). `scale` (SCALE_SOURCES):
    - "given": arguments x, q, s, global_scale, n, stream;
    - "partials": the build that computes the global scale too: it launches the
      partial-maxima amax kernel (`compile_amax(..., partials=True)`) into `partials`
      (`amax_ctas(n)` f32, uninitialised), then the quantize kernel that reduces them and
      writes the global scale it derives (arguments x, q, s, partials, global_scale_out,
      n, stream);
    - "cluster": one launch, the grid one cluster (sm_90 and later: `one_launch_arch`);
      arguments x, q, s, global_scale_out, n, stream. Each of its CTAs quantizes one tile,
      so it covers n <= ONE_LAUNCH_MAX_ELEMENTS only, with the default `per_thread`: the
      caller keeps to that (`kernels.ops` takes the "partials" build beyond it).
    `tvm_ffi`: the TVM-FFI calling convention (see TVM_FFI_OPTION). Works without a
    GPU for any arch.
    """
    if in_dtype not in INPUT_TYPES:
        raise ValueError(f"input dtype must be one of {sorted(INPUT_TYPES)}, not {in_dtype!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    if scale not in SCALE_SOURCES:
        raise ValueError(f"scale must be one of {SCALE_SOURCES}, not {scale!r}")
    if scale == "cluster" and not one_launch_arch(check_target(arch)):
        raise ValueError(f"scale='cluster' needs thread-block clusters (sm_90 and later), not {arch!r}")
    if scale == "cluster" and per_thread != BLOCKS_PER_THREAD:
        # ONE_LAUNCH_MAX_ELEMENTS (what callers check n against) assumes this tile size
        raise ValueError(f"scale='cluster' takes per_thread={BLOCKS_PER_THREAD} (its tiles cover ONE_LAUNCH_MAX_ELEMENTS), not {per_thread}")
    pipeline = fptosi_pipeline(arch) if variant == "fptosi" else "auto"
    x, q, s, g = _pointer_args(INPUT_TYPES[in_dtype], *[_TRACE_ADDRESS] * 4)
    pointers = (x, q, s, g, _f32_pointer(_TRACE_ADDRESS)) if scale == "partials" else (x, q, s, g)
    return _build(_make_quantize(variant, per_thread, scale), pointers, arch, pipeline, tvm_ffi)


@functools.cache
def compile_amax(in_dtype: str = "bfloat16", arch: str = "sm_90a", *, tvm_ffi: bool = False, partials: bool = False):
    """The compiled global-amax kernel (finite elements) for `in_dtype` and `arch`.

    Arguments x, out, n, stream. `partials`: out is `amax_ctas(n)` uninitialised f32 that
    get the per-CTA maxima (what `compile_quantize(..., scale="partials")` takes);
    otherwise out is one f32, zeroed by the caller, that gets the maximum.
    """
    if in_dtype not in INPUT_TYPES:
        raise ValueError(f"input dtype must be one of {sorted(INPUT_TYPES)}, not {in_dtype!r}")
    pointers = (_values_pointer(INPUT_TYPES[in_dtype], _TRACE_ADDRESS), _f32_pointer(_TRACE_ADDRESS))
    return _build(_make_amax(partials), pointers, arch, "auto", tvm_ffi)


@functools.cache
def compile_global_scale(in_dtype: str = "bfloat16", arch: str = "sm_90a", *, tvm_ffi: bool = False):
    """The compiled global scale (448*6/amax over the finite elements, 1 if 0) for `in_dtype` and `arch`.

    Arguments x, partials (`amax_ctas(n)` f32, uninitialised), global_scale_out (f32), n, stream.
    """
    if in_dtype not in INPUT_TYPES:
        raise ValueError(f"input dtype must be one of {sorted(INPUT_TYPES)}, not {in_dtype!r}")
    pointers = (_values_pointer(INPUT_TYPES[in_dtype], _TRACE_ADDRESS), _f32_pointer(_TRACE_ADDRESS), _f32_pointer(_TRACE_ADDRESS))
    return _build(_make_global_scale(), pointers, arch, "auto", tvm_ffi)


@functools.cache
def compile_dequantize(out_dtype: str = "bfloat16", arch: str = "sm_90a", *, tvm_ffi: bool = False):
    if out_dtype not in OUTPUT_TYPES:
        raise ValueError(f"output dtype must be one of {sorted(OUTPUT_TYPES)}, not {out_dtype!r}")
    y, q, s, g = _pointer_args(OUTPUT_TYPES[out_dtype], *[_TRACE_ADDRESS] * 4)
    return _build(_make_dequantize(OUTPUT_TYPES[out_dtype]), (q, s, g, y), arch, "auto", tvm_ffi)


# --- torch API ----------------------------------------------------------------------
# The public functions below call the torch ops of kernels/ops.py (their CUDA impls
# directly in eager mode); the checks here are the full ones, with messages, that the
# ops' launch path runs only when its one-expression check fails.


def quantize_arguments(x, packed, scales, global_scale) -> tuple:
    """The direct (non-TVM-FFI) build's arguments for torch tensors: pointers and the element count."""
    value_type = INPUT_TYPES[str(x.dtype).removeprefix("torch.")]
    pointers = _pointer_args(value_type, x.data_ptr(), packed.data_ptr(), scales.data_ptr(), global_scale.data_ptr())
    return (*pointers, cutlass.Int32(x.numel()))


def dequantize_arguments(packed, scales, global_scale, out) -> tuple:
    """The direct (non-TVM-FFI) build's arguments for torch tensors: pointers and the element count."""
    value_type = OUTPUT_TYPES[str(out.dtype).removeprefix("torch.")]
    y, q, s, g = _pointer_args(value_type, out.data_ptr(), packed.data_ptr(), scales.data_ptr(), global_scale.data_ptr())
    return (q, s, g, y, cutlass.Int32(out.numel()))


def _stream(torch, device):
    return cuda.CUstream(torch.cuda.current_stream(device).cuda_stream)


def _ops():
    from kernels import ops  # torch, imported on first use

    return ops


def _value_dtype_name(torch, dtype):
    return {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}.get(dtype)


def _check_aligned(name, t, align: int):
    if t.data_ptr() % align:
        raise ValueError(f"{name} must start at a {align}-byte aligned address (a fresh tensor does); got a view at offset {t.data_ptr() % align}")


def _check_2d(torch, name, t):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D [M, K], got shape {tuple(t.shape)}")


def _check_device(name, t):
    if t.device.type != "cuda":
        raise ValueError(f"{name} must be on a CUDA device, got {t.device}")


def _check_global_scale_shape(torch, global_scale):
    if not isinstance(global_scale, torch.Tensor):
        raise TypeError(f"global_scale must be a float32 torch.Tensor with one element, got {type(global_scale).__name__}")
    if global_scale.dtype != torch.float32 or global_scale.numel() != 1:
        raise ValueError(
            f"global_scale must be a float32 tensor with one element, got {global_scale.dtype} of shape {tuple(global_scale.shape)}"
        )


def _check_global_scale(torch, global_scale, device):
    """A float32 one-element tensor on `device` (a Python number is moved there)."""
    if isinstance(global_scale, (int, float)) and not isinstance(global_scale, bool):
        return torch.tensor(float(global_scale), dtype=torch.float32, device=device)
    _check_global_scale_shape(torch, global_scale)
    if global_scale.device != device:
        raise ValueError(f"global_scale must be on {device}, got {global_scale.device}")
    return global_scale


def check_quantize_shapes(x, global_scale, variant: str = "plain", scale_given: bool = False):
    """The rules on types, dtypes and shapes (fake tensors too): x [M, K], K % 16 == 0, contiguous."""
    torch = torch_module()
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if _value_dtype_name(torch, x.dtype) is None:
        raise TypeError(f"x must be bfloat16, float16 or float32, got {x.dtype}")
    _check_2d(torch, "x", x)
    m, k = x.shape
    if k % BLOCK:
        raise ValueError(f"K (x.shape[1] = {k}) must be a multiple of {BLOCK}")
    if not x.is_contiguous():
        raise ValueError("x must be contiguous (row-major); call .contiguous() first")
    if m * k >= 2**31:
        raise ValueError(f"x has {m * k} elements; at most 2^31 - 1 are supported (32-bit indexing)")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    if global_scale is not None or scale_given:
        _check_global_scale_shape(torch, global_scale)


def check_quantize_input(x, global_scale, variant: str = "plain", scale_given: bool = False):
    """Every rule of the quantize launch, with a message for the first one broken."""
    check_quantize_shapes(x, global_scale, variant, scale_given)
    _check_device("x", x)
    if global_scale is not None and global_scale.device != x.device:
        raise ValueError(f"global_scale must be on {x.device}, got {global_scale.device}")
    _check_aligned("x", x, ALIGN_VALUES)


def check_dequantize_shapes(packed, scales, global_scale, dtype):
    torch = torch_module()
    if _value_dtype_name(torch, dtype) is None:
        raise TypeError(f"dtype must be bfloat16, float16 or float32, got {dtype}")
    _check_2d(torch, "packed", packed)
    _check_2d(torch, "scales", scales)
    if packed.dtype != torch.uint8:
        raise TypeError(f"packed must be uint8, got {packed.dtype}")
    if scales.dtype not in (torch.float8_e4m3fn, torch.uint8):
        raise TypeError(f"scales must be float8_e4m3fn (or its uint8 bits), got {scales.dtype}")
    m, half = packed.shape
    if half % (BLOCK // 2) or tuple(scales.shape) != (m, half * 2 // BLOCK):
        raise ValueError(
            f"shapes do not match: packed {tuple(packed.shape)} needs scales ({m}, {half * 2 // BLOCK}) "
            f"and K = {half * 2} a multiple of {BLOCK}; got scales {tuple(scales.shape)}"
        )
    for name, t in (("packed", packed), ("scales", scales)):
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (row-major); call .contiguous() first")
    if 2 * packed.numel() >= 2**31:
        raise ValueError(f"the output would have {2 * packed.numel()} elements; at most 2^31 - 1 are supported")
    _check_global_scale_shape(torch, global_scale)


def check_dequantize_input(packed, scales, global_scale, dtype):
    """Every rule of the dequantize launch, with a message for the first one broken."""
    check_dequantize_shapes(packed, scales, global_scale, dtype)
    _check_device("packed", packed)
    if packed.device != scales.device:
        raise ValueError(f"packed and scales must be on one device, got {packed.device} and {scales.device}")
    if global_scale.device != packed.device:
        raise ValueError(f"global_scale must be on {packed.device}, got {global_scale.device}")
    _check_aligned("packed", packed, ALIGN_CODES)
    _check_aligned("scales", scales, ALIGN_SCALES)


def compute_global_scale(x):
    """448 * 6 / amax(|x|) over the finite elements (1 when that is 0), as a 0-d f32 tensor on x's device.

    The op `cute_lowering::nvfp4_global_scale` (see `compute_global_scale_eager`).
    """
    ops = _ops()
    return ops.nvfp4_global_scale_impl(x) if ops.direct(x) else ops.nvfp4_global_scale(x)


def compute_global_scale_eager(x):
    """compute_global_scale's work: on a CUDA tensor whose elements split into 16-element
    blocks one CuTeDSL build (`compile_global_scale`: x read once); otherwise torch ops."""
    torch = torch_module()
    if x.numel() == 0:
        return torch.ones((), dtype=torch.float32, device=x.device)
    name = _value_dtype_name(torch, x.dtype)
    fused = x.device.type == "cuda" and name is not None and x.is_contiguous() and x.numel() % BLOCK == 0 and x.numel() < 2**31
    if fused and x.data_ptr() % ALIGN_VALUES == 0:
        return _ops().global_scale_fused(x)
    a = x.detach().abs().float()
    amax = torch.where(torch.isfinite(a), a, torch.zeros((), device=a.device)).amax()
    # IEEE division (tensor / tensor; `2688.0 / amax` would be a reciprocal and a multiply),
    # and device-side constants: a Python scalar tensor would be a synchronous copy
    return torch.where(amax > 0, torch.full_like(amax, GLOBAL_SCALE_NUMERATOR) / amax, torch.ones_like(amax))


def quantize(x, global_scale=None, swizzle: bool = False, *, variant: str = "plain"):
    """[M, K] bf16/fp16/fp32 CUDA tensor -> (packed uint8 [M, K//2], scales float8_e4m3fn [M, K//16], global f32 0-d).

    `global_scale`: a float32 tensor of one element on x's device, or None to compute
    448*6/amax(|x|) on the device (no host sync; the quantize kernel derives it from the
    amax). `swizzle=True` returns the scales in the 128x4 tile layout Blackwell's
    block-scaled GEMMs read (`swizzle_scales`). `variant="fptosi"`: the comparison build.
    The ops `cute_lowering::nvfp4_quantize` / `nvfp4_quantize_computing_scale`.
    """
    ops = _ops()
    if global_scale is None:
        if ops.direct(x):
            packed, scales, global_scale = ops.quantize_computing_scale_impl(x, variant)
        else:
            packed, scales, global_scale = ops.nvfp4_quantize_computing_scale(x, variant)
    else:
        if isinstance(global_scale, (int, float)):
            check_quantize_shapes(x, None, variant)
            global_scale = _check_global_scale(ops.torch, global_scale, x.device)
        if ops.direct(x, global_scale):
            packed, scales = ops.quantize_impl(x, global_scale, variant)
        else:
            packed, scales = ops.nvfp4_quantize(x, global_scale, variant)
        if global_scale.dim():
            global_scale = global_scale.reshape(())
    scales = scales.view(ops.torch.float8_e4m3fn)  # the ops return the E4M3 bits as uint8
    return packed, (swizzle_scales(scales) if swizzle else scales), global_scale


SWIZZLE_ROWS, SWIZZLE_COLS = 128, 4  # one tile: 128 rows x 4 scales = 512 bytes


def swizzle_scales(scales):
    """[M, K/16] scales -> the 1-D 128x4-tile layout of Blackwell block-scaled GEMMs.

    Rows are padded to a multiple of 128 and scale columns to a multiple of 4 with
    zeros. Tiles follow each other row-major over (row tile, column tile); inside a
    tile, scale (r, c) sits at byte (r % 32) * 16 + (r // 32) * 4 + c: four 32-row
    slabs interleaved so that one 16-byte load holds row r's 4 scales of every slab.
    """
    torch = torch_module()
    rows, cols = scales.shape
    tiles_r = -(-rows // SWIZZLE_ROWS)
    tiles_c = -(-cols // SWIZZLE_COLS)
    raw = scales.view(torch.uint8) if scales.dtype != torch.uint8 else scales
    padded = torch.zeros((tiles_r * SWIZZLE_ROWS, tiles_c * SWIZZLE_COLS), dtype=torch.uint8, device=scales.device)
    padded[:rows, :cols] = raw
    # [tile_r, slab (r // 32), lane (r % 32), tile_c, c] -> [tile_r, tile_c, lane, slab, c]
    tiled = padded.view(tiles_r, 4, 32, tiles_c, SWIZZLE_COLS).permute(0, 3, 2, 1, 4)
    out = tiled.reshape(-1).contiguous()
    return out.view(scales.dtype) if scales.dtype != torch.uint8 else out


def dequantize(packed, scales, global_scale, dtype=None):
    """(packed uint8 [M, K//2], scales float8_e4m3fn [M, K//16], global f32) -> [M, K] of `dtype` (bf16 default).

    The op `cute_lowering::nvfp4_dequantize`; a Python number as `global_scale` is moved to the device.
    """
    ops = _ops()
    dtype = ops.torch.bfloat16 if dtype is None else dtype
    if isinstance(global_scale, (int, float)):
        check_dequantize_shapes(packed, scales, ops.torch.ones((), dtype=ops.torch.float32), dtype)
        _check_device("packed", packed)
        global_scale = _check_global_scale(ops.torch, global_scale, packed.device)
    if ops.direct(packed, scales, global_scale):
        return ops.dequantize_impl(packed, scales, global_scale, dtype)
    return ops.nvfp4_dequantize(packed, scales, global_scale, dtype)
