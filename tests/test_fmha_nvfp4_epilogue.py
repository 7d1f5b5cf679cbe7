"""The FMHA's NVFP4 epilogue (`attention_parts.store_nvfp4`): its memory accesses and its bytes.

The epilogue reads the O tile from shared memory 16 bytes at a time and writes each pair of
16-value blocks as one 16-byte store of codes and one 2-byte store of scales (it used to read
element by element: 16 scalar shared loads per block, and two 4-byte stores). The compile
tests count those accesses in the PTX of both FMHA paths (no GPU); the GPU test checks the
bytes against `nvfp4.quantize` of the bf16/fp16 output where the tile is cut by the end of
the sequence, at global scales that saturate or zero every block scale, and with NaN in O.
"""

from __future__ import annotations

import collections
import dataclasses
import re

import pytest

from cute_lowering.kernels.fmha_sm90_knobs import DEFAULT_KNOBS

ACCESS = re.compile(r"\b((?:ld|st)\.(?:shared|global)(?:\.v\d)?\.[busf]\d+)\b")


def _accesses(ptx: str) -> collections.Counter:
    return collections.Counter(ACCESS.findall(ptx))


@pytest.mark.parametrize("path, rows, threads", [("wgmma", 64, 128), ("mma_sync", 128, 128)])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_epilogue_accesses_are_vectorized(tmp_path, path, rows, threads, head_dim):
    from cute_lowering.kernels import fmha

    # the consumers' epilogue, quantizing in place (test_offloaded_epilogue_accesses and
    # test_deferred_quantization_leaves_the_epilogue: the others)
    knobs = dataclasses.replace(DEFAULT_KNOBS, nvfp4_offload=False, nvfp4_defer=False)
    fn = fmha.compile_attention(
        "bfloat16", head_dim, True, (-1, -1), False, "sm_90a", path=path, options=f"--keep-ptx --dump-dir {tmp_path}", out_format="nvfp4",
        knobs=knobs,
    )  # fmt: skip
    fused = _accesses(fn.__ptx__)
    # no element-wise shared-memory reads of the 16-bit O tile
    assert not [a for a in fused if a.startswith("ld.shared.") and a.endswith(("16", "b8", "u8"))], fused
    # the quantizing thread's part of its tile, 16 bytes per load (the main loops read shared
    # memory through wgmma descriptors / ldmatrix only: these are the epilogue's)
    assert fused["ld.shared.v4.b32"] == rows * head_dim * 2 // 16 // threads, fused
    # one 16-byte code store and one 2-byte scale store per pair of blocks, nothing narrower for codes
    pairs = head_dim // 32 // (threads // rows)
    assert fused["st.global.v4.b32"] == pairs, fused
    assert fused["st.global.v2.b8"] == pairs, fused


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return torch


@pytest.mark.gpu
@pytest.mark.parametrize(
    "path, dtype, d, causal, shape",
    [
        # B, Sq, Sk, Hq, Hkv: Sq = 200 leaves the wgmma path's second warpgroup 8 valid rows of
        # its 64, the mma_sync path's second tile 72 of 128 (one thread a row: at D=128 its
        # registers hold the row's pairs out of column order)
        ("wgmma", "bfloat16", 128, True, (1, 200, 260, 3, 1)),
        ("wgmma", "float16", 64, False, (2, 200, 90, 2, 2)),
        ("mma_sync", "float16", 128, False, (2, 200, 90, 2, 2)),
        ("mma_sync", "bfloat16", 64, True, (1, 200, 260, 3, 1)),
    ],
)
@pytest.mark.parametrize("offload", [False, True])
def test_gpu_epilogue_bytes_at_tails_extreme_scales_and_nan(path, dtype, d, causal, shape, offload):
    torch = _cuda()
    from cute_lowering.kernels import fmha, fmha_sm90, nvfp4
    from cute_lowering.kernels.torch_device import arch_of

    if offload and path != "wgmma":
        pytest.skip("NVFP4_OFFLOAD is the wgmma kernel's")
    knobs = dataclasses.replace(DEFAULT_KNOBS, nvfp4_offload=offload)

    if path == "wgmma" and arch_of(torch.device("cuda")) not in fmha_sm90.ARCHS:
        pytest.skip("the wgmma path needs sm_90a")
    b, sq, sk, hq, hkv = shape
    gen = torch.Generator(device="cuda").manual_seed(sq * d + sk)
    dt = getattr(torch, dtype)
    q = torch.randn(b, sq, hq, d, generator=gen, device="cuda").to(dt)
    k = torch.randn(b, sk, hkv, d, generator=gen, device="cuda").to(dt)
    v = (torch.randn(b, sk, hkv, d, generator=gen, device="cuda") * 3).to(dt)
    v_nan = v.clone()
    v_nan[0, sk // 2, 0, 5] = float("nan")  # O's column 5 of head 0 is NaN wherever key sk/2 is seen
    for values in (v, v_nan):
        out = fmha.attention_with_knobs(q, k, values, causal=causal, path=path, knobs=knobs)
        # 448*6/amax, then scales that make every E4M3 block scale 448 (saturated) or 0, and ones
        # whose reciprocal leaves the normal range
        for g in (nvfp4.compute_global_scale(out), 1e-30, 1e30, 3e38, 0.37):
            codes, scales, g_used = fmha.attention_with_knobs(q, k, values, causal=causal, path=path, out_format="nvfp4", global_scale=g, knobs=knobs)
            want_codes, want_scales, _ = nvfp4.quantize(out.reshape(-1, d), g_used)
            assert torch.equal(codes.reshape(-1, d // 2), want_codes), (values is v_nan, g)
            assert torch.equal(scales.view(torch.uint8).reshape(-1, d // 16), want_scales.view(torch.uint8)), (values is v_nan, g)


@pytest.mark.parametrize("head_dim", [64, 128])
def test_offloaded_epilogue_accesses(tmp_path, head_dim):
    """NVFP4_OFFLOAD: the quantizing warps of the producer warpgroup read one row of 64 a thread,
    a block (two 16-byte loads) at a time, and store each pair of blocks as before (that code
    once for each consumer warpgroup's rows); nothing else in the kernel stores codes or scales,
    and that warpgroup keeps at least 32 registers a thread (setmaxnreg), within what the
    CTA is launched with (more, and the consumers' setmaxnreg.inc would wait forever)."""
    from cute_lowering.kernels import fmha, fmha_sm90

    knobs = dataclasses.replace(DEFAULT_KNOBS, nvfp4_offload=True)
    fn = fmha.compile_attention(
        "bfloat16", head_dim, True, (-1, -1), False, "sm_90a", path="wgmma", options=f"--keep-ptx --dump-dir {tmp_path}", out_format="nvfp4",
        knobs=knobs,
    )  # fmt: skip
    fused = _accesses(fn.__ptx__)
    wgs = fmha_sm90.config_for(head_dim, False, True, knobs=knobs).block_m // 64  # the quantizing code, once for each consumer warpgroup's rows
    assert fused["ld.shared.v4.b32"] == wgs * head_dim * 2 // 16, fused
    assert fused["st.global.v4.b32"] == wgs * head_dim // 32 and fused["st.global.v2.b8"] == wgs * head_dim // 32, fused
    (producer,) = map(int, re.findall(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+(\d+);", fn.__ptx__))
    (consumer,) = map(int, re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+(\d+);", fn.__ptx__))
    launched = 65536 // (128 * (1 + wgs)) // 8 * 8  # registers a thread at launch: the SM's 64 K over the CTA's threads
    assert producer >= 32 and producer + wgs * consumer <= launched * (1 + wgs), (producer, consumer, launched)


def test_nvfp4_pingpong_is_the_nvfp4_builds_own():
    """nvfp4_pingpong sets the scheduler barrier of the NVFP4 output's build only, per (head dim,
    crosses a diagonal); the bf16 build of the same shape keeps pingpong's value, and a shape the
    mapping does not name keeps pingpong's too."""
    from cute_lowering.kernels import fmha_sm90

    knobs = dataclasses.replace(DEFAULT_KNOBS, pingpong={(64, False): True, (64, True): True, (128, False): False, (128, True): False},
                                nvfp4_pingpong={(128, True): True, (64, True): False})  # fmt: skip
    def pingpong(d, causal, nvfp4_out):
        return fmha_sm90.config_for(d, False, causal, nvfp4_out, knobs=knobs).pingpong

    assert pingpong(128, True, True) and not pingpong(128, True, False)
    assert not pingpong(64, True, True) and pingpong(64, True, False)
    assert not pingpong(128, False, True) and pingpong(64, False, True)  # (not named: pingpong's)
    plain = dataclasses.replace(knobs, nvfp4_pingpong={})  # empty: the NVFP4 builds take pingpong's values
    shapes = [(d, c) for d in (64, 128) for c in (False, True)]
    assert [fmha_sm90.config_for(d, False, c, True, knobs=plain).pingpong for d, c in shapes] == [True, True, False, False]
    assert [pingpong(d, c, True) for d, c in shapes] == [True, False, False, True]


@pytest.mark.gpu
@pytest.mark.parametrize("d, causal, window, sink", [(128, False, (-1, -1), False), (128, True, (-1, -1), False), (64, True, (-1, -1), False), (64, False, (300, 40), True)])
@pytest.mark.parametrize("persistent", [True, False])
def test_gpu_offloaded_epilogue_many_tiles(d, causal, window, sink, persistent):
    """NVFP4_OFFLOAD over many tiles a CTA (the hand-over's phases turning tile after tile, in the
    static and the dynamic orders), with GQA, Sq = 900 (the last tile's second warpgroup has no
    valid row at 128-row tiles, some at 192), a window with a sink, one CTA per tile: the bytes
    of `nvfp4.quantize` of the plain output, twice in a row."""
    torch = _cuda()
    from cute_lowering.kernels import fmha, fmha_sm90, nvfp4
    from cute_lowering.kernels.torch_device import arch_of

    if arch_of(torch.device("cuda")) not in fmha_sm90.ARCHS:
        pytest.skip("the wgmma path needs sm_90a")
    knobs = dataclasses.replace(DEFAULT_KNOBS, nvfp4_offload=True, persistent=persistent)
    gen = torch.Generator(device="cuda").manual_seed(d)
    q = torch.randn(3, 900, 16, d, generator=gen, device="cuda").to(torch.bfloat16)
    k, v = (torch.randn(3, 1300, 4, d, generator=gen, device="cuda").to(torch.bfloat16) for _ in range(2))
    s = torch.randn(16, generator=gen, device="cuda") if sink else None
    out = fmha.attention_with_knobs(q, k, v, causal=causal, window=window, sink=s, path="wgmma", knobs=knobs)
    g = nvfp4.compute_global_scale(out)
    want_codes, want_scales, _ = nvfp4.quantize(out.reshape(-1, d), g)
    for _ in range(2):
        codes, scales, _ = fmha.attention_with_knobs(q, k, v, causal=causal, window=window, sink=s, path="wgmma", out_format="nvfp4", global_scale=g, knobs=knobs)
        assert torch.equal(codes.reshape(-1, d // 2), want_codes)
        assert torch.equal(scales.view(torch.uint8).reshape(-1, d // 16), want_scales.view(torch.uint8))


def test_nvfp4_defer_is_the_consumers_quantization_only():
    """nvfp4_defer reaches the NVFP4 builds whose consumers quantize: not the bf16 builds, not
    the builds whose producer's warps do (nvfp4_offload)."""
    from cute_lowering.kernels import fmha_sm90

    knobs = dataclasses.replace(DEFAULT_KNOBS, nvfp4_defer=True, nvfp4_offload={(64, False): False, (64, True): False, (128, False): True, (128, True): False})
    assert fmha_sm90.config_for(128, False, True, True, knobs=knobs).nvfp4_defer
    assert fmha_sm90.config_for(64, False, True, True, knobs=knobs).nvfp4_defer
    assert not fmha_sm90.config_for(128, False, True, False, knobs=knobs).nvfp4_defer  # bf16 output
    assert not fmha_sm90.config_for(128, False, False, True, knobs=knobs).nvfp4_defer  # offloaded
    # the shipped values: on at D=128 with a diagonal only (at D=64 it lost)
    assert fmha_sm90.config_for(128, False, True, True).nvfp4_defer and not fmha_sm90.config_for(64, False, True, True).nvfp4_defer


@pytest.mark.parametrize("head_dim", [64, 128])
def test_deferred_quantization_leaves_the_epilogue(tmp_path, head_dim):
    """NVFP4_DEFER: the quantizing code is where a tile's first S wgmma has been issued, in a tile
    without key blocks and after the last tile, so three times; the loads and stores of each are
    the epilogue's (test_epilogue_accesses_are_vectorized), and the epilogue itself has none."""
    from cute_lowering.kernels import fmha

    knobs = dataclasses.replace(DEFAULT_KNOBS, nvfp4_offload=False, nvfp4_defer=True)
    fn = fmha.compile_attention(
        "bfloat16", head_dim, True, (-1, -1), False, "sm_90a", path="wgmma", options=f"--keep-ptx --dump-dir {tmp_path}", out_format="nvfp4",
        knobs=knobs,
    )  # fmt: skip
    fused = _accesses(fn.__ptx__)
    pairs = head_dim // 32 // 2  # (64 rows, 128 threads: two a row)
    assert fused["ld.shared.v4.b32"] == 3 * 64 * head_dim * 2 // 16 // 128, fused
    assert fused["st.global.v4.b32"] == 3 * pairs and fused["st.global.v2.b8"] == 3 * pairs, fused


@pytest.mark.gpu
@pytest.mark.parametrize(
    "d, causal, window, sink, sq, sk",
    [
        (128, True, (-1, -1), False, 900, 1300),
        # causal with Sq > Sk: the first tiles of every head see no key (a tile without key blocks
        # quantizes the one before it itself)
        (128, True, (-1, -1), False, 1000, 300),
        (64, True, (-1, -1), False, 900, 1300),
        (64, False, (300, 40), True, 900, 1300),
        (128, False, (-1, -1), False, 700, 333),
    ],
)
@pytest.mark.parametrize("persistent", [True, False])
def test_gpu_deferred_quantization_many_tiles(d, causal, window, sink, sq, sk, persistent):
    """NVFP4_DEFER over many tiles a CTA (the dynamic order with a diagonal, the static one
    without), with GQA, Sq = 900 (the last tile's second warpgroup has no valid row at 128-row
    tiles), tiles without key blocks, a window with a sink, one CTA per tile, and a NaN in V:
    the bytes of `nvfp4.quantize` of the plain output, twice in a row."""
    torch = _cuda()
    from cute_lowering.kernels import fmha, fmha_sm90, nvfp4
    from cute_lowering.kernels.torch_device import arch_of

    if arch_of(torch.device("cuda")) not in fmha_sm90.ARCHS:
        pytest.skip("the wgmma path needs sm_90a")
    knobs = dataclasses.replace(DEFAULT_KNOBS, nvfp4_offload=False, nvfp4_defer=True, persistent=persistent)
    assert fmha_sm90.config_for(d, window[0] >= 0, causal or window[1] >= 0, True, knobs=knobs).nvfp4_defer
    gen = torch.Generator(device="cuda").manual_seed(d + sq)
    q = torch.randn(3, sq, 16, d, generator=gen, device="cuda").to(torch.bfloat16)
    k, v = (torch.randn(3, sk, 4, d, generator=gen, device="cuda").to(torch.bfloat16) for _ in range(2))
    v[1, sk // 3, 2, 7] = float("nan")
    s = torch.randn(16, generator=gen, device="cuda") if sink else None
    out = fmha.attention_with_knobs(q, k, v, causal=causal, window=window, sink=s, path="wgmma", knobs=knobs)
    g = nvfp4.compute_global_scale(torch.nan_to_num(out))  # (the NaN's blocks: quantize's NaN policy)
    want_codes, want_scales, _ = nvfp4.quantize(out.reshape(-1, d), g)
    for _ in range(2):
        codes, scales, _ = fmha.attention_with_knobs(q, k, v, causal=causal, window=window, sink=s, path="wgmma", out_format="nvfp4", global_scale=g, knobs=knobs)
        assert torch.equal(codes.reshape(-1, d // 2), want_codes)
        assert torch.equal(scales.view(torch.uint8).reshape(-1, d // 16), want_scales.view(torch.uint8))
