"""NVFP4 quantize/dequantize: the reference (numpy), the API's checks (torch), compiles (no GPU), GPU bit-exactness."""

from __future__ import annotations

import os
import sys

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # `kernels` is not installed
from cute_lowering.kernels import reference as ref  # noqa: E402

F32 = np.float32
INV6 = F32(1) / F32(6)


# --- the reference, by hand (numpy only) ----------------------------------------------
def test_e2m1_ties_go_to_the_even_code():
    # midpoints of every neighbouring pair of E2M1 values, and one ulp either side
    mids = [(0.25, 0, 1), (0.75, 2, 1), (1.25, 2, 3), (1.75, 4, 3), (2.5, 4, 5), (3.5, 6, 5), (5.0, 6, 7)]
    for m, tie, _ in mids:
        below, above = np.nextafter(F32(m), F32(0)), np.nextafter(F32(m), F32(10))
        low_code, high_code = min(tie, _), max(tie, _)
        assert ref.e2m1_codes(np.array([m], F32))[0] == tie, m
        assert ref.e2m1_codes(np.array([below], F32))[0] == low_code, m
        assert ref.e2m1_codes(np.array([above], F32))[0] == high_code, m
        assert ref.e2m1_codes(np.array([-m], F32))[0] == tie | 8, -m


def test_e2m1_specials():
    v = np.array([0.0, -0.0, -1e-30, 6.0, 6.5, 1e30, np.inf, -np.inf, np.nan, -np.nan], F32)
    assert ref.e2m1_codes(v).tolist() == [0, 8, 8, 7, 7, 7, 7, 15, 7, 7]


def test_e4m3_rounding_and_saturation():
    v = np.array([17, 19, 448, 449, 464, 1000, np.inf, 2.0**-10, 3 * 2.0**-10, 0.0, np.nan], F32)
    # 17 ties to 16 (0x58), 19 to 20 (0x5A); >= 448 and inf saturate to 0x7E; 2^-10 ties to 0,
    # 3*2^-10 ties to 2^-8 (0x02); NaN -> 0x7F
    assert ref.e4m3_bits(v).tolist() == [0x58, 0x5A, 0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0x00, 0x02, 0x00, 0x7F]


def test_block_with_unit_scale_keeps_the_e2m1_ties():
    # global 1, block amax 6: SF = 6 * f32(1/6) = 1 exactly, scale 1, so x itself is rounded
    assert F32(6) * INV6 == F32(1)
    row = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5.0, -6.0], F32)
    packed, sf, gs = ref.quantize(row[None, :], 1.0)
    assert sf.tolist() == [[0x38]] and gs == 1  # E4M3 1.0
    assert ref.unpack(packed)[0].tolist() == [0, 2, 2, 4, 4, 6, 6, 7, 8, 10, 10, 12, 12, 14, 14, 15]


def test_zero_block_and_saturating_scale():
    x = np.zeros((2, 32), F32)
    x[1, 16:] = 6.0
    x[1, 17] = -3.0
    packed, sf, _ = ref.quantize(x, 1000.0)  # SF = 1000 saturates to 448
    assert sf.tolist() == [[0, 0], [0, 0x7E]]
    codes = ref.unpack(packed)
    assert codes[0].tolist() == [0] * 32 and codes[1, :16].tolist() == [0] * 16
    # scale = 1/(448/1000) = 2.23: 6 -> 13.4 saturates to 6, -3 -> -6.7 saturates to -6
    assert codes[1, 16] == 7 and codes[1, 17] == 15


def test_nan_and_inf_policy():
    x = np.ones((1, 16), F32)
    x[0, 0], x[0, 1], x[0, 2] = np.nan, np.inf, -np.inf
    packed, sf, _ = ref.quantize(x, 1.0)
    codes = ref.unpack(packed)[0]
    assert sf[0, 0] == 0x7E  # amax inf (NaN ignored) -> SF saturates to 448
    assert codes[:3].tolist() == [7, 7, 15] and codes[3:].tolist() == [0] * 13  # 1/448 rounds to 0
    all_nan = np.full((1, 16), np.nan, F32)
    packed, sf, _ = ref.quantize(all_nan, 1.0)
    assert sf[0, 0] == 0 and ref.unpack(packed)[0].tolist() == [7] * 16


def test_global_scale():
    x = np.array([[1.0, -3.0, np.inf, np.nan] + [0.0] * 12], F32)
    assert ref.global_scale_of(x) == F32(2688) / F32(3)
    assert ref.global_scale_of(np.zeros((1, 16), F32)) == 1
    _, _, gs = ref.quantize(x)
    assert gs == F32(896)


def test_round_trip_error_is_small():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(F32)
    y = ref.dequantize(*ref.quantize(x))
    assert np.sqrt(np.mean((y - x) ** 2)) / np.sqrt(np.mean(x**2)) < 0.12


def test_pack_low_nibble_first():
    codes = np.arange(16, dtype=np.uint8)[None, :]
    assert ref.pack(codes)[0].tolist() == [0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE]
    assert (ref.unpack(ref.pack(codes)) == codes).all()


# --- the API's input checks (need torch, not a GPU) -------------------------------------------
def test_api_checks_inputs():
    torch = pytest.importorskip("torch")
    from cute_lowering.kernels import nvfp4

    x = torch.zeros(4, 32, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        nvfp4.quantize(np.zeros((4, 32), F32))
    with pytest.raises(TypeError, match="bfloat16, float16 or float32"):
        nvfp4.quantize(torch.zeros(4, 32, dtype=torch.int32))
    with pytest.raises(ValueError, match="2-D"):
        nvfp4.quantize(torch.zeros(2, 4, 32, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="multiple of 16"):
        nvfp4.quantize(torch.zeros(4, 24, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="contiguous"):
        nvfp4.quantize(torch.zeros(32, 64, dtype=torch.bfloat16).t())
    with pytest.raises(ValueError, match="CUDA device"):
        nvfp4.quantize(x)
    with pytest.raises(TypeError, match="dtype must be"):
        nvfp4.dequantize(x, x, torch.ones(()), dtype=torch.int8)
    with pytest.raises(TypeError, match="packed must be uint8"):
        nvfp4.dequantize(torch.zeros(4, 16, dtype=torch.int8), torch.zeros(4, 2, dtype=torch.uint8), torch.ones(()))
    with pytest.raises(ValueError, match="shapes do not match"):
        nvfp4.dequantize(torch.zeros(4, 16, dtype=torch.uint8), torch.zeros(4, 3, dtype=torch.uint8), torch.ones(()))


def test_import_needs_no_torch():
    import subprocess
    import sys

    code = "import sys; sys.modules['torch'] = None; import cute_lowering.kernels.nvfp4; print('ok')"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


# --- compiles, no GPU ------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("scale", ["given", "partials", "cluster"])
def test_quantize_compiles(arch, dtype, scale):
    import cute_lowering
    from cute_lowering.kernels import nvfp4

    nvfp4.compile_quantize.cache_clear()
    nvfp4.compile_quantize(dtype, arch, scale=scale)
    counts = {p.name: p.counts for p in cute_lowering.last_report().passes}
    truncf = counts["truncf-to-select"]
    if arch == "sm_90a":
        assert truncf["rewritten"] == 2 * nvfp4.BLOCKS_PER_THREAD  # FP4 rewritten; E4M3 native
    else:
        assert truncf.get("rewritten", 0) == 0  # the hardware path


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_fptosi_variant_compiles(arch):
    import cute_lowering
    from cute_lowering.kernels import nvfp4

    nvfp4.compile_quantize("bfloat16", arch, "fptosi")
    counts = {p.name: p.counts for p in cute_lowering.last_report().passes}
    assert counts["fptosi-to-select"]["rewritten"] == 3 * 2 * nvfp4.BLOCKS_PER_THREAD
    assert counts["fptosi-to-select"].get("left", 0) == 0


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_dequantize_compiles(arch, dtype):
    from cute_lowering.kernels import nvfp4

    nvfp4.compile_dequantize(dtype, arch)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_amax_compiles(arch, dtype):
    from cute_lowering.kernels import nvfp4

    nvfp4.compile_amax(dtype, arch)
    nvfp4.compile_amax(dtype, arch, partials=True)
    nvfp4.compile_global_scale(dtype, arch)


def test_amax_grid_is_capped_and_covers_every_block():
    from cute_lowering.kernels import nvfp4

    tile = nvfp4.THREADS * nvfp4.AMAX_BLOCKS_PER_THREAD * nvfp4.BLOCK  # elements per CTA per loop round
    assert nvfp4.AMAX_CTAS <= nvfp4.THREADS  # the quantize kernel reduces one partial per thread
    for n in (16, tile - 16, tile, tile + 16, 16 * 7168, nvfp4.AMAX_CTAS * tile, nvfp4.AMAX_CTAS * tile + 16, 2**31 - 16):
        ctas = nvfp4.amax_ctas(n)
        assert 1 <= ctas <= nvfp4.AMAX_CTAS, n
        assert ctas == min(-(-n // tile), nvfp4.AMAX_CTAS), n  # one tile per CTA until the cap, then loops


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_scale_from_partials_ptx(arch, tmp_path):
    """The global scale (the quantize build that computes it, and the global-scale build) is
    2688 / amax with IEEE division (div.rn.f32, not an approximate reciprocal), the partial
    maxima are reduced without atomics, and the partial amax kernel stores them with plain
    stores."""
    import cutlass
    import cutlass.cute as cute

    import cute_lowering
    from cute_lowering.kernels import nvfp4
    from cute_lowering.kernels import nvfp4_kernels

    f32 = nvfp4_kernels._f32_pointer(256)

    def ptx(fn, pointers):  # the builds of compile_quantize/compile_amax/compile_global_scale, with the PTX kept
        options = f"--gpu-arch {arch} --keep-ptx --dump-dir {tmp_path}"  # (the PTX files go to tmp_path, not the working directory)
        with cute_lowering.prelowering("auto"):
            return cute.compile(fn, *pointers, cutlass.Int32(16), nvfp4_kernels._stream_arg(), options=options).__ptx__

    values = nvfp4_kernels._values_pointer(nvfp4.INPUT_TYPES["bfloat16"], 256)
    quantize_pointers = nvfp4_kernels._pointer_args(nvfp4.INPUT_TYPES["bfloat16"], *[256] * 4)
    quantize = ptx(nvfp4_kernels._make_quantize("plain", nvfp4.BLOCKS_PER_THREAD, "partials"), quantize_pointers + (f32,))
    one_launch = ptx(nvfp4_kernels._make_quantize("plain", nvfp4.BLOCKS_PER_THREAD, "cluster"), quantize_pointers)
    amax = ptx(nvfp4_kernels._make_amax(partials=True), (values, f32))
    scale = ptx(nvfp4_kernels._make_global_scale(), (values, f32, f32))
    for module in (quantize, one_launch, scale):
        assert "0f45280000" in module  # 2688.0
        assert len([line for line in module.splitlines() if "div.rn.f32" in line]) == 1
        assert "div.approx" not in module and "div.full" not in module
    for kernel in (quantize, one_launch, amax, scale):
        assert not [line for line in kernel.splitlines() if line.strip().startswith(("atom.", "red."))]
    assert "%nctaid.x" in amax  # the loop over tiles strides by the grid
    assert one_launch.count(".entry") == 1 and quantize.count(".entry") == 2  # one launch against two
    # the one-launch build: each CTA's maximum stored into every peer's shared memory, between
    # a relaxed arrive/wait (all CTAs started) and a release arrive/acquire wait (all stored)
    cluster = [line.strip().split()[0] for line in one_launch.splitlines() if "cluster" in line and not line.strip().startswith("//")]
    assert cluster == [
        "barrier.cluster.arrive.relaxed;", "barrier.cluster.wait;", "mapa.shared::cluster.u32",
        "st.shared::cluster.b32", "barrier.cluster.arrive;", "barrier.cluster.wait;",
    ], cluster  # fmt: skip


@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (128, 4), (130, 5), (256, 8), (300, 448)])
def test_swizzled_scales_match_the_layout_definition(shape):
    torch = pytest.importorskip("torch")
    from cute_lowering.kernels import nvfp4

    rng = np.random.default_rng(sum(shape))
    bits = rng.integers(1, 256, size=shape, dtype=np.uint8)  # nonzero: padding shows
    got = nvfp4.swizzle_scales(torch.from_numpy(bits).view(torch.float8_e4m3fn))
    assert got.dtype == torch.float8_e4m3fn
    np.testing.assert_array_equal(got.view(torch.uint8).numpy(), ref.swizzle_scales(bits))


# --- GPU: bit-exact against the reference ---------------------------------------------------------
def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return torch


SHAPES = [(1, 16), (1, 48), (3, 16), (5, 80), (7, 272), (1, 4096 * 16), (129, 1008), (1000, 160), (333, 7168), (1024, 1024)]


def _np(t):
    return t.detach().float().cpu().numpy()


def _compare(torch, x, gs=None, variant="plain", label=""):
    """Run the kernel and the reference on x; return (elements, code mismatches, scale mismatches)."""
    from cute_lowering.kernels import nvfp4

    packed, scales, g = nvfp4.quantize(x, None if gs is None else torch.tensor(gs, dtype=torch.float32, device=x.device), variant=variant)
    rp, rs, rg = ref.quantize(_np(x), gs)
    assert g.item() == rg or (np.isnan(rg) and np.isnan(g.item())), (label, g.item(), rg)
    bad_q = int((ref.unpack(packed.cpu().numpy()) != ref.unpack(rp)).sum())
    bad_s = int((scales.view(torch.uint8).cpu().numpy() != rs).sum())
    print(f"EXACT {label} {variant} {tuple(x.shape)} {x.dtype}: {x.numel()} elements, {bad_q} code and {bad_s} scale mismatches")
    return x.numel(), bad_q, bad_s


def _adversarial(torch, m, k, kind, dtype, gen):
    x = torch.randn(m, k, generator=gen, device="cuda").to(dtype)
    blocks = x.view(m, k // 16, 16)
    if kind == "zero_blocks":
        blocks[:, ::2] = 0
        blocks[:, 1::4] = -0.0
    elif kind == "one_huge":
        blocks[..., 3] = 3e4 if dtype == torch.float16 else 1e30
    elif kind == "e2m1_ties":
        # amax 6 with global 1 gives scale 1: every element sits on an E2M1 midpoint (or a value)
        ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 0.0, 6.0], device="cuda")
        sign = torch.where(torch.rand(m, k // 16, 16, generator=gen, device="cuda") < 0.5, -1.0, 1.0)
        blocks.copy_((ties * sign).to(dtype))
    elif kind == "e4m3_ties":
        # block amax chosen so that amax * f32(1/6) is exactly an E4M3 midpoint (global 1)
        mids = _e4m3_tie_amaxes()
        idx = torch.randint(0, len(mids), (m, k // 16), generator=gen, device="cuda")
        amax = torch.tensor(mids, device="cuda")[idx]
        blocks.copy_((torch.rand(m, k // 16, 16, generator=gen, device="cuda") * amax[..., None]).to(dtype))
        blocks[..., 5] = amax.to(dtype)
    elif kind == "denormal":
        blocks.mul_(1e-38 if dtype == torch.float32 else 1e-6)
    elif kind == "saturate":
        pass  # global scale chosen huge by the caller
    elif kind == "inf_nan":
        blocks[::3, ::5, 2] = float("inf")
        blocks[1::3, ::7, 9] = float("-inf")
        blocks[::2, 1::3, 0] = float("nan")
        blocks[1::5, 2::11, :] = float("nan")
    return x


def _e4m3_tie_amaxes():
    """amax values (exact in bf16) with amax * f32(1/6) exactly the midpoint of two E4M3 values."""
    values = np.arange(0, 127, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)  # every finite code
    out = []
    for lo, hi in zip(values, values[1:]):
        mid = F32((lo + hi) / 2)
        a = F32(mid * 6)
        for _ in range(64):
            if a * INV6 == mid and F32(ml_dtypes.bfloat16(a)) == a:
                out.append(float(a))
                break
            a = np.nextafter(a, F32(np.inf)) if a * INV6 < mid else np.nextafter(a, F32(0))
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["plain", "fptosi"])
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16", "float32"])
def test_gpu_random_every_tail_shape(variant, dtype_name):
    torch = _cuda()
    dtype = getattr(torch, dtype_name)
    gen = torch.Generator(device="cuda").manual_seed(1)
    for m, k in SHAPES:
        x = (torch.randn(m, k, generator=gen, device="cuda") * torch.rand(m, 1, generator=gen, device="cuda") * 10).to(dtype)
        for gs in (None, 1.0, 3.7):
            _, bad_q, bad_s = _compare(torch, x, gs, variant, f"random gs={gs}")
            assert bad_q == 0 and bad_s == 0


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["plain", "fptosi"])
@pytest.mark.parametrize("kind", ["zero_blocks", "one_huge", "e2m1_ties", "e4m3_ties", "denormal", "saturate", "inf_nan"])
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16", "float32"])
def test_gpu_adversarial(kind, variant, dtype_name):
    torch = _cuda()
    dtype = getattr(torch, dtype_name)
    gen = torch.Generator(device="cuda").manual_seed(2)
    scales = {"e2m1_ties": [1.0], "e4m3_ties": [1.0], "saturate": [1e6, 3e38], "denormal": [None, 1e30, 1.0], "inf_nan": [None, 1.0]}
    for m, k in [(1, 16), (37, 528), (512, 2048)]:
        x = _adversarial(torch, m, k, kind, dtype, gen)
        for gs in scales.get(kind, [None, 1.0]):
            _, bad_q, bad_s = _compare(torch, x, gs, variant, f"{kind} gs={gs}")
            assert bad_q == 0 and bad_s == 0


@pytest.mark.gpu
@pytest.mark.parametrize("out_name", ["bfloat16", "float16", "float32"])
def test_gpu_dequantize_and_round_trip(out_name):
    torch = _cuda()
    from cute_lowering.kernels import nvfp4

    out_dtype = getattr(torch, out_name)
    np_out = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float32": np.float32}[out_name]
    gen = torch.Generator(device="cuda").manual_seed(3)
    for m, k in SHAPES:
        x = torch.randn(m, k, generator=gen, device="cuda").to(torch.bfloat16)
        packed, scales, g = nvfp4.quantize(x)
        y = nvfp4.dequantize(packed, scales, g, dtype=out_dtype)
        r = ref.dequantize(packed.cpu().numpy(), scales.view(torch.uint8).cpu().numpy(), g.item(), np_out)
        bad = int((_np(y).view(np.uint32) != r.astype(np.float32).view(np.uint32)).sum())
        xs = _np(x)
        err = float(np.sqrt(np.mean((_np(y) - xs) ** 2)) / np.sqrt(np.mean(xs**2)))
        ref_err = float(np.sqrt(np.mean((r.astype(np.float32) - xs) ** 2)) / np.sqrt(np.mean(xs**2)))
        print(f"ROUNDTRIP {(m, k)} -> {out_name}: {y.numel()} elements, {bad} mismatches, rel rms err {err:.5f} (reference {ref_err:.5f})")
        assert bad == 0 and err == ref_err and err < 0.12


@pytest.mark.gpu
def test_gpu_swizzle_option():
    torch = _cuda()
    from cute_lowering.kernels import nvfp4

    x = torch.randn(300, 7168, device="cuda", dtype=torch.bfloat16)
    _, plain, _ = nvfp4.quantize(x)
    _, swizzled, _ = nvfp4.quantize(x, swizzle=True)
    expected = ref.swizzle_scales(plain.view(torch.uint8).cpu().numpy())
    np.testing.assert_array_equal(swizzled.view(torch.uint8).cpu().numpy(), expected)


@pytest.mark.gpu
def test_misaligned_views_are_refused_not_misread():
    # the kernels read 16 bytes at a time from raw pointers: a view starting mid-vector must be refused
    torch = _cuda()
    from cute_lowering.kernels import nvfp4

    base = torch.randn(1 + 4 * 32, device="cuda").to(torch.bfloat16)
    shifted = base[1:].view(4, 32)  # contiguous, 2 bytes past an aligned address
    assert shifted.is_contiguous()
    with pytest.raises(ValueError, match="16-byte aligned"):
        nvfp4.quantize(shifted, 1.0)
    packed, scales, g = nvfp4.quantize(base[:-1].view(4, 32).clone(), 1.0)
    raw = torch.empty(packed.numel() + 1, dtype=torch.uint8, device="cuda")
    with pytest.raises(ValueError, match="16-byte aligned"):
        nvfp4.dequantize(raw[1:].view(packed.shape), scales, g)


# --- the tile epilogue other kernels call (FMHA's NVFP4 output) -----------------------------------
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("dtype, d, swizzled", [("bfloat16", 128, True), ("float16", 64, False)])
def test_tile_epilogue_compiles(arch, dtype, d, swizzled):
    import nvfp4_tile_kernel

    nvfp4_tile_kernel.compile_tile_quantizer(dtype, d, arch, swizzled)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, d, swizzled", [("bfloat16", 128, True), ("bfloat16", 128, False), ("float16", 64, True), ("float32", 64, False)])
@pytest.mark.parametrize("m", [1, 100, 128, 300])
def test_tile_epilogue_matches_quantize(dtype, d, swizzled, m):
    # the epilogue quantizes what the tile holds: bit-identical to quantize() of the tensor
    torch = _cuda()
    import cutlass
    import nvfp4_tile_kernel
    from cute_lowering.kernels import nvfp4
    from cute_lowering.kernels.torch_device import arch_of

    gen = torch.Generator(device="cuda").manual_seed(m + d)
    x = (torch.randn(m, d, generator=gen, device="cuda") * 3).to(getattr(torch, dtype))
    x[0, :16] = 0  # a zero block
    gs = nvfp4.compute_global_scale(x).reshape(1).contiguous()
    want_q, want_s, _ = nvfp4.quantize(x, gs)
    got_q = torch.full_like(want_q, 0xAB)  # poisoned: unwritten bytes show
    got_s = torch.full((m, d // 16), 0xAB, dtype=torch.uint8, device="cuda")
    fn = nvfp4_tile_kernel.compile_tile_quantizer(dtype, d, arch_of(x.device), swizzled)
    pointers = nvfp4.quantize_arguments(x, got_q, got_s, gs)[:4]
    fn(*pointers, cutlass.Int32(m), nvfp4._stream(torch, x.device))  # this launcher takes rows, not elements
    torch.cuda.synchronize()
    assert torch.equal(got_q, want_q)
    assert torch.equal(got_s, want_s.view(torch.uint8))


# --- quantize with the global scale computed: partial maxima reduced by the quantize kernel ----------
def _amax_case(torch, dtype: str, case: str, seed: int, device: str):
    """An input for the global-scale tests: random x5, with the case's specials planted."""
    gen = torch.Generator(device=device).manual_seed(seed)
    # looping_grid: 4097 x 4096 = 512 whole amax tiles + a partial one over AMAX_CTAS = 256 CTAs: each CTA
    # reduces two, CTA 0 also the partial tile (where the planted maximum is)
    # decode: 16 x 7168 (one launch, 7 quantize CTAs each reducing all of x); at_limit: ONE_LAUNCH_MAX_ELEMENTS
    shape = {
        "tail": (3, 48),
        "last_block": (64, 4096),
        "one_huge": (64, 4096),
        "looping_grid": (4097, 4096),
        "decode": (16, 7168),
        "at_limit": (32, 4096),
    }.get(case, (1000, 1024))
    if case.endswith("_decode"):  # the same specials in a 16 x 7168 input: the one-launch build
        case, shape = case.removesuffix("_decode"), (16, 7168)
    x = (torch.randn(shape, generator=gen, device=device) * 5).to(getattr(torch, dtype))
    if case == "specials":  # NaN and inf are skipped; the largest finite value wins
        x.view(-1)[::97] = float("nan")
        x.view(-1)[5::101] = float("inf")
        x.view(-1)[7::103] = -float("inf")
        x.view(-1)[123] = -300.0
    elif case == "zeros":
        x.zero_()
    elif case in ("last_block", "one_huge", "looping_grid", "decode", "at_limit"):
        x.view(-1)[-1] = -1000.0  # the last block of the last tile (for looping_grid the partial tile, CTA 0's third)
    elif case == "all_nonfinite":
        x.view(-1)[::2] = float("nan")
        x.view(-1)[1::2] = float("inf")
    elif case == "strided":
        x = x[:, ::2]  # not contiguous: the torch path
    return x


def _torch_global_scale(torch, x):
    """448*6/amax(|x|) over the finite values (1 when that is 0), by torch ops: IEEE division."""
    a = x.float().abs()
    amax = torch.where(torch.isfinite(a), a, torch.zeros((), device=x.device)).amax()
    return torch.where(amax > 0, torch.full_like(amax, 2688.0) / amax, torch.ones_like(amax))


def test_one_launch_limit_is_the_at_limit_case():
    from cute_lowering.kernels import nvfp4

    assert 32 * 4096 == nvfp4.ONE_LAUNCH_MAX_ELEMENTS  # the GPU case "at_limit" takes the one-launch build at its largest
    assert 16 * 7168 <= nvfp4.ONE_LAUNCH_MAX_ELEMENTS < 64 * 4096  # "decode" one launch, "last_block" two
    # every element is in some CTA's quantize tile: one tile a CTA, the grid one cluster
    assert nvfp4.ONE_LAUNCH_MAX_ELEMENTS == nvfp4.ONE_LAUNCH_CLUSTER * nvfp4.THREADS * nvfp4.BLOCKS_PER_THREAD * nvfp4.BLOCK
    assert nvfp4.ONE_LAUNCH_CLUSTER <= 8  # the portable cluster size


def test_cluster_build_refuses_another_tile_size():
    from cute_lowering.kernels import nvfp4

    with pytest.raises(ValueError, match=f"takes per_thread={nvfp4.BLOCKS_PER_THREAD}"):
        nvfp4.compile_quantize("bfloat16", "sm_90a", per_thread=nvfp4.BLOCKS_PER_THREAD // 2, scale="cluster")


@pytest.mark.parametrize("arch", ["sm_80", "sm_89"])
def test_cluster_build_refused_without_clusters(arch):
    from cute_lowering.kernels import nvfp4

    assert not nvfp4.one_launch_arch(arch)
    with pytest.raises(ValueError, match="needs thread-block clusters"):
        nvfp4.compile_quantize("bfloat16", arch, scale="cluster")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize(
    "case",
    ["random", "specials", "zeros", "tail", "last_block", "looping_grid", "all_nonfinite", "decode", "at_limit"]
    + ["specials_decode", "zeros_decode", "all_nonfinite_decode"],
)
@pytest.mark.parametrize("build", ["by_size", "partials"])
def test_quantize_computed_scale_matches_torch(dtype, case, build, monkeypatch):
    """The global scale is the torch formula bit for bit, and packed/scales equal quantize with it given.

    build: the one the size picks (one launch, the cluster build, up to ONE_LAUNCH_MAX_ELEMENTS:
    tail, decode, at_limit, *_decode), or the two-launch build forced for every size."""
    torch = _cuda()
    from cute_lowering.kernels import nvfp4
    from cute_lowering.kernels import nvfp4_kernels

    if build == "partials":
        monkeypatch.setattr(nvfp4_kernels, "ONE_LAUNCH_MAX_ELEMENTS", 0)
    x = _amax_case(torch, dtype, case, seed=11, device="cuda")
    packed, scales, gs = nvfp4.quantize(x)
    want = _torch_global_scale(torch, x)
    assert gs.shape == () and gs.dtype == torch.float32
    assert gs.item() == want.item(), (case, gs.item(), want.item())
    want_packed, want_scales, _ = nvfp4.quantize(x, want)
    assert torch.equal(packed, want_packed)
    assert torch.equal(scales.view(torch.uint8), want_scales.view(torch.uint8))


# --- the global scale: one amax kernel, against torch's ops ----------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("case", ["random", "specials", "zeros", "tail", "one_huge", "looping_grid", "strided"])
def test_global_scale_kernel_matches_torch(dtype, case):
    torch = _cuda()
    from cute_lowering.kernels import nvfp4

    x = _amax_case(torch, dtype, case, seed=7, device="cuda")
    got = nvfp4.compute_global_scale(x)
    want = _torch_global_scale(torch, x)
    assert got.shape == () and got.dtype == torch.float32
    assert got.item() == want.item(), (case, got.item(), want.item())
