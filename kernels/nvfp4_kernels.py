"""NVFP4 quantize / dequantize / amax / global scale: the CuTeDSL kernels and their compile functions.

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
`cute_lowering.prelowering()` ("auto"): on sm_90a our select passes rewrite the FP4
conversions (there is no FP4 cvt before sm_100a), on sm_100a CuTeDSL's hardware path
stays. `variant="fptosi"` builds a comparison kernel whose E2M1 code comes from
`Int32(roundeven(clamp(...)))` and runs the bounded `fptosi-to-select` pass too.

Layout of the work: a row-major [M, K] tensor with K % 16 == 0 is a flat array of
N = M*K elements whose 16-element blocks never cross a row, so the kernel sees 1-D
tensors: x [N], packed bytes [N/2], scale bytes [N/16]. Thread t of CTA c handles
blocks (c * BLOCKS_PER_THREAD + i) * THREADS + t, i < BLOCKS_PER_THREAD: a warp's
loads of one step cover 1 KiB of consecutive bf16. Each block is 32 B (bf16) in, two
16-byte loads; 8 B of codes out (one 8-byte store) and 1 B of scale.

Owns the kernels, their knobs and compile functions (`compile_quantize`, `compile_amax`,
`compile_global_scale`, `compile_dequantize`) and their argument builders; the block code
they share with the FMHA epilogues is `cute_lowering.kernels.nvfp4_block`, the torch API `cute_lowering.kernels.nvfp4`.
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

import cute_lowering
from cute_lowering.kernels.cutedsl_compat import SmemAllocator
from cute_lowering.kernels.nvfp4_block import (  # noqa: F401 (GLOBAL_SCALE_NUMERATOR, output_pointers, ...: the module's names as before)
    ALIGN_CODES,
    ALIGN_SCALES,
    ALIGN_VALUES,
    BLOCK,
    F32,
    FP4,
    FP8,
    GLOBAL_SCALE_NUMERATOR,
    _f32_pointer,
    _quantize_block,
    e2m1_fptosi,
    e2m1_plain,
    fptosi_pipeline,
    output_pointers,
    quantize_tile_rows,
)
from cute_lowering.targets import check_target, sm_version

# --- tuning knobs ---------------------------------------------------------------
THREADS = 256  # threads per CTA
BLOCKS_PER_THREAD = 4  # 16-element blocks each thread quantizes (loads issued together)
DEQ_BLOCKS_PER_THREAD = 2  # the same for dequantize
AMAX_BLOCKS_PER_THREAD = 8  # the same for the global amax
AMAX_CTAS = THREADS  # the amax grid's cap (CTAs loop over tiles): its partial maxima fit one per quantize thread

INPUT_TYPES = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16, "float32": cutlass.Float32}
OUTPUT_TYPES = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16, "float32": cutlass.Float32}
VARIANTS = ("plain", "fptosi")


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


_TRACE_ADDRESS = 256  # compiling needs pointer values, not memory: any suitably aligned address


def _values_pointer(value_type, address: int):
    return make_ptr(value_type, address, cute.AddressSpace.gmem, assumed_align=ALIGN_VALUES)


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
    with cute_lowering.prelowering(pipeline):
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
      caller keeps to that (`cute_lowering.kernels.ops` takes the "partials" build beyond it).
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


# --- arguments of the direct (non-TVM-FFI) builds, from torch tensors (no torch import) ---


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


