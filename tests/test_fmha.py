"""FMHA forward: the float64 reference (CPU), the API's checks, compiles (no GPU), GPU accuracy."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import sys

import pytest


from cute_lowering.kernels.fmha_sm90_knobs import DEFAULT_KNOBS  # noqa: E402 (imports nothing: no CuTeDSL needed)


def _knobs(**changes):
    """The wgmma paths' knobs with `changes` (a test's variant: passed down, no module edited)."""
    return dataclasses.replace(DEFAULT_KNOBS, **changes)


def _fmha():
    from cute_lowering.kernels import fmha

    return fmha


# --- the reference, against a per-row loop (CPU, torch) ----------------------------------------
def _loop_reference(q, k, v, causal, window, sink, scale):
    """Row by row, straight from the definition (float64, slow): the reference's reference."""
    import torch

    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    left, right = window
    if causal:
        right = 0
    out = torch.zeros(b, sq, hq, d, dtype=torch.float64)
    lse = torch.full((b, hq, sq), -math.inf, dtype=torch.float64)
    for bi in range(b):
        for h in range(hq):
            kh = h // (hq // hkv)
            for i in range(sq):
                cols = [j for j in range(sk) if (right < 0 or j <= i + sk - sq + right) and (left < 0 or j >= i + sk - sq - left)]
                logits = [float(q[bi, i, h].double() @ k[bi, j, kh].double()) * scale for j in cols]
                extra = [float(sink[h])] if sink is not None else []
                if not logits and not extra:
                    continue
                top = max(logits + extra)
                denom = sum(math.exp(x - top) for x in logits + extra)
                lse[bi, h, i] = top + math.log(denom)
                for x, j in zip(logits, cols):
                    out[bi, i, h] += math.exp(x - lse[bi, h, i]) * v[bi, j, kh].double()
    return out, lse


CPU_CASES = [
    # (B, Sq, Sk, Hq, Hkv, causal, window, sink)
    (1, 5, 7, 2, 2, False, (-1, -1), False),
    (1, 7, 5, 2, 1, True, (-1, -1), False),  # Sq > Sk: the first rows see nothing
    (2, 6, 9, 4, 2, False, (2, 1), True),
    (1, 9, 9, 3, 1, True, (3, -1), True),
    (1, 4, 6, 2, 2, False, (0, 0), False),
    (1, 5, 5, 2, 1, False, (-1, 2), True),
]


@pytest.mark.parametrize("case", CPU_CASES)
def test_reference_matches_the_definition(case):
    torch = pytest.importorskip("torch")
    b, sq, sk, hq, hkv, causal, window, with_sink = case
    g = torch.Generator().manual_seed(sum(case[:5]))
    q = torch.randn(b, sq, hq, 8, generator=g)
    k = torch.randn(b, sk, hkv, 8, generator=g)
    v = torch.randn(b, sk, hkv, 8, generator=g)
    sink = torch.randn(hq, generator=g) if with_sink else None
    out, lse = _fmha().reference_attention(q, k, v, causal, window, sink, 0.3)
    want_out, want_lse = _loop_reference(q, k, v, causal, window, sink, 0.3)
    assert not torch.isnan(out).any() and not torch.isnan(lse).any()
    torch.testing.assert_close(out, want_out, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(lse, want_lse, rtol=1e-12, atol=1e-12)


def test_reference_fully_masked_rows():
    torch = pytest.importorskip("torch")
    q, k, v = torch.randn(1, 6, 2, 8), torch.randn(1, 3, 2, 8), torch.randn(1, 3, 2, 8)
    out, lse = _fmha().reference_attention(q, k, v, causal=True)  # rows 0..2 see no key (offset -3)
    assert (out[:, :3] == 0).all() and torch.isneginf(lse[:, :, :3]).all()
    assert torch.isfinite(lse[:, :, 3:]).all()
    sink = torch.tensor([0.5, -2.0])
    out, lse = _fmha().reference_attention(q, k, v, causal=True, sink=sink)
    assert (out[:, :3] == 0).all()
    torch.testing.assert_close(lse[0, :, 0], sink.double())  # only the sink: LSE = sink


def test_reference_sink_lowers_the_weights():
    torch = pytest.importorskip("torch")
    q, k, v = torch.randn(1, 4, 1, 8), torch.randn(1, 4, 1, 8), torch.ones(1, 4, 1, 8)
    plain, lse0 = _fmha().reference_attention(q, k, v)
    sunk, lse1 = _fmha().reference_attention(q, k, v, sink=torch.tensor([1.0]))
    torch.testing.assert_close(plain, torch.ones_like(plain))  # weights sum to one
    weight = 1 - torch.exp(torch.tensor(1.0, dtype=torch.float64) - lse1)  # share left to the keys
    torch.testing.assert_close(sunk[0, :, 0, 0], weight[0, 0])
    assert (lse1 > lse0).all()


def test_reference_gqa_is_repeated_heads():
    torch = pytest.importorskip("torch")
    q, k, v = torch.randn(2, 5, 4, 8), torch.randn(2, 7, 2, 8), torch.randn(2, 7, 2, 8)
    out, lse = _fmha().reference_attention(q, k, v, causal=True)
    full, full_lse = _fmha().reference_attention(q, k.repeat_interleave(2, 2), v.repeat_interleave(2, 2), causal=True)
    torch.testing.assert_close(out, full)
    torch.testing.assert_close(lse, full_lse)


# --- the API's input checks (torch, no GPU) -----------------------------------------------------
def test_api_checks_inputs():
    torch = pytest.importorskip("torch")
    fmha = _fmha()
    bf = torch.bfloat16
    q, k = torch.zeros(1, 8, 4, 64, dtype=bf), torch.zeros(1, 8, 2, 64, dtype=bf)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        fmha.attention([1], k, k)
    with pytest.raises(TypeError, match="bfloat16 or float16"):
        fmha.attention(q.float(), k.float(), k.float())
    with pytest.raises(TypeError, match="one dtype"):
        fmha.attention(q, k.half(), k)
    with pytest.raises(ValueError, match="4-D"):
        fmha.attention(q[0], k, k)
    with pytest.raises(ValueError, match="head dim must be one of"):
        fmha.attention(torch.zeros(1, 8, 4, 32, dtype=bf), torch.zeros(1, 8, 2, 32, dtype=bf), torch.zeros(1, 8, 2, 32, dtype=bf))
    with pytest.raises(ValueError, match="multiple of k/v heads"):
        fmha.attention(torch.zeros(1, 8, 3, 64, dtype=bf), k, k)
    with pytest.raises(ValueError, match="one shape"):
        fmha.attention(q, k, torch.zeros(1, 9, 2, 64, dtype=bf))
    with pytest.raises(ValueError, match="batch and head dim"):
        fmha.attention(torch.zeros(2, 8, 4, 64, dtype=bf), k, k)
    with pytest.raises(ValueError, match="contiguous"):
        fmha.attention(torch.zeros(1, 4, 8, 64, dtype=bf).transpose(1, 2), k, k)
    with pytest.raises(ValueError, match="sink must be float32"):
        fmha.attention(q, k, k, sink=torch.zeros(3))
    with pytest.raises(ValueError, match="window must be a pair"):
        fmha.attention(q, k, k, window=5)
    with pytest.raises(ValueError, match="softmax_scale"):
        fmha.attention(q, k, k, softmax_scale=-1.0)
    with pytest.raises(ValueError, match="out_format"):
        fmha.attention(q, k, k, out_format="fp8")
    with pytest.raises(ValueError, match="global_scale is for out_format='nvfp4'"):
        fmha.attention(q, k, k, global_scale=1.0)
    with pytest.raises(ValueError, match="CUDA device"):
        fmha.attention(q, k, k)


def test_import_needs_no_torch():
    import subprocess

    code = "import sys; sys.modules['torch'] = None; import cute_lowering.kernels.fmha; print('ok')"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


# --- compiles, no GPU -------------------------------------------------------------------------------
# every mask/sink combination on both targets; dtype and head dim rotate through them
FEATURES = [
    # (causal, window, sink)
    (False, (-1, -1), False),
    (True, (-1, -1), False),
    (False, (64, 32), False),
    (True, (128, -1), True),
    (False, (-1, -1), True),
    (False, (-1, 16), True),
]
LAYOUTS = [("bfloat16", 128), ("float16", 64), ("bfloat16", 64), ("float16", 128)]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("i", range(len(FEATURES)))
def test_compiles(arch, i):
    import cute_lowering

    causal, window, sink = FEATURES[i]
    dtype, head_dim = LAYOUTS[(i + (arch == "sm_100a")) % len(LAYOUTS)]
    assert _fmha().compile_attention(dtype, head_dim, causal, window, sink, arch, path="mma_sync") is not None
    report = cute_lowering.last_report()
    assert report is not None and report.arch == arch


def _main_kernel(ptx: str) -> str:
    """The PTX of a compiled host function's first kernel, the attention kernel (TAIL_SPLIT's
    pieces kernel and combine follow it: launched, and so traced, after it)."""
    starts = [m.start() for m in re.finditer(r"^(?:\.visible )?\.entry ", ptx, re.M)]
    assert starts and "kernel_cutlass_kernel_" in ptx[starts[0] : starts[0] + 60], "no attention kernel first in the PTX"
    return ptx[starts[0] : starts[1] if len(starts) > 1 else len(ptx)]


# the wgmma path (sm_90a): every mask/sink combination with every dtype and head dim
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda l: f"{l[0]}-d{l[1]}")
@pytest.mark.parametrize("i", range(len(FEATURES)))
def test_compiles_wgmma(i, layout, tmp_path):
    import cute_lowering

    fmha = _fmha()
    causal, window, sink = FEATURES[i]
    dtype, head_dim = layout
    fn = fmha.compile_attention(dtype, head_dim, causal, window, sink, "sm_90a", path="wgmma", options=f"--keep-ptx --dump-dir {tmp_path}")
    report = cute_lowering.last_report()
    assert report is not None and report.arch == "sm_90a"
    full = fn.__ptx__
    ptx = _main_kernel(full)
    # S = Q K^T over D/16 k-steps, P V over BLOCK_N/16, m64nNk16 each, in the key loop and
    # once more outside it (the first block's S, the last block's P V); with a right limit
    # and no left one (causal) and MASK_LOOPS, the key loop is two (diagonal blocks, the
    # rest); TMA loads; setmaxnreg
    has_left, has_right = window[0] >= 0, causal or window[1] >= 0
    block_n = fmha.fmha_sm90.config_for(head_dim, has_left, has_right).block_n
    n_qk, n_pv = head_dim // 16, block_n // 16
    loops = 2 if fmha.fmha_sm90.mask_loops(head_dim, True) and has_right and not has_left else 1
    assert ptx.count("wgmma.mma_async") == (1 + loops) * (n_qk + n_pv)
    assert f"wgmma.mma_async.sync.aligned.m64n{block_n}k16.f32" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{head_dim}k16.f32" in ptx
    assert "cp.async.bulk.tensor" in ptx and "setmaxnreg" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx
    # the warpgroups' setmaxnreg counts add up to at most what the CTA is launched with (the
    # SM's 64 K registers over its threads, a multiple of 8 a thread): else the consumers'
    # setmaxnreg.inc waits forever
    wgs = fmha.fmha_sm90.config_for(head_dim, has_left, has_right).block_m // 64
    (producer,) = map(int, re.findall(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+(\d+);", ptx))
    (consumer,) = map(int, re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+(\d+);", ptx))
    assert producer + wgs * consumer <= 65536 // (128 * (1 + wgs)) // 8 * 8 * (1 + wgs), (producer, consumer)
    # the dynamic tile scheduler (ORDER "dynamic", persistent): one relaxed draw per tile, the
    # acq_rel count of CTAs done; absent from the other builds. Its hand-over of the tile index
    # goes through two mbarriers (issue 34: racecheck does not follow the named barriers of
    # 160 threads, producer warp + consumer warpgroup, that it used before): none is left
    config = fmha.fmha_sm90.config_for(head_dim, has_left, has_right)
    dynamic = config.order == "dynamic" and config.max_ctas < 2**31 - 1
    assert ("atom.global.add.u32" in ptx) == ("atom.global.acq_rel.add.u32" in ptx) == dynamic
    assert re.search(r"bar\.(sync|arrive)\s+\S+,\s*160;", ptx) is None
    # TAIL_SPLIT (without a diagonal or a sink): the pieces' kernel and the combine after it
    assert full.count(".entry ") == (3 if config.tail_split and not sink else 1)
    # "auto" takes this path on sm_90a (the same cached compile)
    assert fmha.compile_attention(dtype, head_dim, causal, window, sink, "sm_90a", options=f"--keep-ptx --dump-dir {tmp_path}") is fn


def test_path_choice():
    fmha = _fmha()
    assert fmha.resolve_path("auto", "sm_90a") == "wgmma"
    assert fmha.resolve_path("auto", "sm_100a") == "mma_sync"
    assert fmha.resolve_path("auto", "sm_80") == "mma_sync"
    assert fmha.resolve_path("auto", "sm_90a", 4) == "mma_sync"  # the FMA exp2 is an mma_sync feature
    assert fmha.resolve_path("mma_sync", "sm_90a") == "mma_sync"
    with pytest.raises(ValueError, match="wgmma path needs"):
        fmha.compile_attention(arch="sm_100a", path="wgmma")
    with pytest.raises(ValueError, match="mma_sync path only"):
        fmha.compile_attention(arch="sm_90a", path="wgmma", exp2_on_fma=0.5)
    with pytest.raises(ValueError, match="path must be one of"):
        fmha.compile_attention(path="tcgen05")


# --- GPU: against the float64 reference ---------------------------------------------------------------
def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return torch


GPU_PATHS = ["mma_sync", "wgmma"]


def _gpu_path(torch, path):
    """Skip the wgmma path where the GPU is not sm_90a."""
    from cute_lowering.kernels.torch_device import arch_of

    arch = arch_of(torch.device("cuda"))
    if path == "wgmma" and arch not in _fmha().fmha_sm90.ARCHS:
        pytest.skip(f"the wgmma path needs sm_90a, this GPU is {arch}")
    return path


def _check(torch, dtype, b, sq, sk, hq, hkv, d, causal=False, window=(-1, -1), with_sink=False, scale=None, seed=0, path="auto", knobs=None):
    fmha = _fmha()
    attention = fmha.attention if knobs is None else functools.partial(fmha.attention_with_knobs, knobs=knobs)
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, sq, hq, d, device="cuda", generator=g).to(dtype)
    k = torch.randn(b, sk, hkv, d, device="cuda", generator=g).to(dtype)
    v = torch.randn(b, sk, hkv, d, device="cuda", generator=g).to(dtype)
    sink = torch.randn(hq, device="cuda", generator=g) * 2 if with_sink else None
    # poison: the kernel's outputs start as NaN, so any element it fails to write shows
    # (the API allocates out with torch.empty_like and the LSE with torch.empty)
    real_empty, real_empty_like = torch.empty, torch.empty_like
    from cute_lowering.kernels import ops

    ops._SCRATCH.clear()  # the split-KV paths' partials then come from a fresh, poisoned buffer too
    try:
        torch.empty = lambda *a, **kw: real_empty(*a, **kw).fill_(math.nan)
        torch.empty_like = lambda *a, **kw: real_empty_like(*a, **kw).fill_(math.nan)
        out, lse = attention(q, k, v, causal=causal, window=window, sink=sink, softmax_scale=scale, return_lse=True, path=path)
    finally:
        torch.empty = real_empty
        torch.empty_like = real_empty_like
    torch.cuda.synchronize()
    ref, ref_lse = fmha.reference_attention(q, k, v, causal, window, sink, scale)
    assert not torch.isnan(out).any(), "NaN in out (unwritten or 0/0)"
    assert not torch.isnan(lse).any(), "NaN in LSE"
    tol = 1e-2 if dtype == torch.bfloat16 else 2e-3
    err = (out.double() - ref).norm() / ref.norm().clamp_min(1e-30)
    assert err <= tol, f"relative error {err:.2e} > {tol}"
    empty = torch.isneginf(ref_lse)
    assert torch.equal(torch.isneginf(lse), empty), "fully masked rows must give LSE = -inf, others finite"
    assert (out.permute(0, 2, 1, 3)[empty] == 0).all(), "fully masked rows must give zeros"
    lerr = (lse.double()[~empty] - ref_lse[~empty]).abs().max().item() if (~empty).any() else 0.0
    assert lerr <= 1e-3 * max(1.0, ref_lse[~empty].abs().max().item() if (~empty).any() else 1.0), f"LSE error {lerr:.2e}"
    return err


GPU_FEATURES = [
    (False, (-1, -1), False),
    (True, (-1, -1), False),
    (False, (-1, -1), True),
    (True, (-1, -1), True),
    (False, (100, 37), False),
    (False, (100, 37), True),
    (True, (70, -1), False),
    (True, (70, -1), True),
    (False, (-1, 50), False),
    (False, (200, -1), True),
]


@pytest.mark.gpu
@pytest.mark.parametrize("path", GPU_PATHS)
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("feature", GPU_FEATURES, ids=lambda f: f"c{int(f[0])}w{f[1][0]}_{f[1][1]}s{int(f[2])}")
def test_gpu_features(dtype, d, feature, path):
    torch = _cuda()
    causal, window, sink = feature
    _check(torch, getattr(torch, dtype), 2, 333, 397, 4, 2, d, causal, window, sink, path=_gpu_path(torch, path))


SHAPES = [
    # (B, Sq, Sk, Hq, Hkv): tails, Sq != Sk both ways, MHA/GQA/MQA, tiny and one-tile
    (1, 1, 1, 1, 1),
    (1, 1, 300, 2, 1),
    (2, 77, 77, 8, 8),
    (1, 128, 64, 4, 1),
    (1, 300, 100, 6, 2),
    (3, 129, 1000, 8, 2),
    (1, 1024, 1024, 2, 2),
    (1, 513, 2047, 16, 2),
]


@pytest.mark.gpu
@pytest.mark.parametrize("path", GPU_PATHS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_shapes(shape, causal, path):
    torch = _cuda()
    path = _gpu_path(torch, path)
    b, sq, sk, hq, hkv = shape
    _check(torch, torch.bfloat16, b, sq, sk, hq, hkv, 128, causal, (-1, -1), False, path=path)
    _check(torch, torch.float16, b, sq, sk, hq, hkv, 64, causal, (48, -1) if causal else (-1, -1), True, scale=0.3, path=path)


@pytest.mark.gpu
@pytest.mark.parametrize("path", GPU_PATHS)
def test_gpu_window_skips_and_large_logits(path):
    torch = _cuda()
    path = _gpu_path(torch, path)
    # narrow windows far from the diagonal: whole rows empty, tiles skipped at both ends
    _check(torch, torch.bfloat16, 1, 256, 1024, 2, 1, 128, False, (0, 0), False, path=path)
    _check(torch, torch.bfloat16, 1, 300, 200, 2, 1, 64, False, (5, -1), True, path=path)
    _check(torch, torch.float16, 1, 200, 600, 2, 2, 128, True, (3, -1), True, scale=2.0, path=path)  # large logits


@pytest.mark.gpu
@pytest.mark.parametrize("path", GPU_PATHS)
def test_gpu_long_and_repeated(path):
    """Many key blocks (the K/V ring wraps many times) and the same inputs twice: identical outputs."""
    torch = _cuda()
    path = _gpu_path(torch, path)
    _check(torch, torch.bfloat16, 1, 2048, 4096, 4, 1, 128, True, (-1, -1), False, path=path)
    _check(torch, torch.bfloat16, 1, 1000, 3000, 4, 2, 64, False, (700, 50), True, path=path)
    fmha = _fmha()
    g = torch.Generator(device="cuda").manual_seed(3)
    q, k, v = (torch.randn(2, 1500, 4, 128, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
    first = fmha.attention(q, k, v, causal=True, path=path)
    assert torch.equal(first, fmha.attention(q, k, v, causal=True, path=path)), "a moving result is a race"


@pytest.mark.gpu
@pytest.mark.parametrize(
    "shape, d, causal, window, sink",
    [
        ((3, 1100, 1100, 8, 2), 128, True, (-1, -1), False),  # 216 tiles of uneven length, GQA
        ((2, 700, 1500, 12, 12), 64, False, (300, 40), True),  # 144 tiles, window + sink, Sq != Sk
        ((1, 2048, 2048, 16, 16), 64, True, (-1, -1), False),  # 256 causal tiles, two loops (MASK_LOOPS)
        ((1, 300, 300, 8, 4), 128, False, (-1, -1), False),  # 24 tiles: fewer than SMs, every CTA's first draw ends it
    ],
)
@pytest.mark.parametrize("order, sections, q_stages", [("snake", False, 2), ("dynamic", False, 2), ("dynamic", True, 2), ("snake", False, 1), ("dynamic", True, 1)])
def test_gpu_wgmma_persistent_matches_one_cta_per_tile(shape, d, causal, window, sink, order, sections, q_stages):
    """More tiles than SMs: each CTA of the persistent launch walks several tiles (the K/V ring,
    Q's buffers and O's staging buffer carried from one tile to the next), in the static snake
    order or drawn from the dynamic scheduler's counter (in the linear order, or by L2 sections
    of 5 kv heads: several sections, the last one partial on the first three shapes), with one
    or two Q buffers, and must give the same bits as one CTA per tile, and the reference's
    values. The dynamic scheduler's counters are zero after every call (kept in ops' scratch,
    so a second call would otherwise skip tiles)."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    fmha = _fmha()
    from cute_lowering.kernels import ops

    b, sq, sk, hq, hkv = shape
    knobs = _knobs(persistent=True, order=order, section_bytes=5 * sk * 4 * d if sections else 0, q_stages=q_stages)
    _check(torch, torch.bfloat16, b, sq, sk, hq, hkv, d, causal, window, sink, path="wgmma", knobs=knobs)
    g = torch.Generator(device="cuda").manual_seed(11)
    q = torch.randn(b, sq, hq, d, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(b, sk, hkv, d, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    s = torch.randn(hq, device="cuda", generator=g) if sink else None
    kw = dict(causal=causal, window=window, sink=s, return_lse=True, path="wgmma")
    outs = [fmha.attention_with_knobs(q, k, v, **kw, knobs=knobs) for _ in range(3)]
    torch.cuda.synchronize()
    if order == "dynamic":
        counters = ops._SCRATCH[(torch.cuda.current_device(), torch.cuda.current_stream().cuda_stream)][3][:2]
        assert counters.view(torch.int32).tolist() == [0, 0], "the dynamic scheduler left its counters non-zero"
    ref_out, ref_lse = fmha.attention_with_knobs(q, k, v, **kw, knobs=dataclasses.replace(knobs, persistent=False))
    for out, lse in outs:
        assert torch.equal(out, ref_out) and torch.equal(lse, ref_lse), "persistent and one-CTA-per-tile launches differ"


def _check_knob_shapes(torch, d, knobs):
    """The reference's values for a wgmma knob under test (`knobs`): causal with GQA on ragged
    lengths (Sq != Sk), a window with a sink (fp16), and a key tail inside a block without a mask."""
    _check(torch, torch.bfloat16, 2, 1000, 1100, 8, 2, d, True, (-1, -1), False, path="wgmma", knobs=knobs)
    _check(torch, torch.float16, 1, 2048, 2048, 4, 4, d, False, (300, 40), True, path="wgmma", seed=3, knobs=knobs)
    _check(torch, torch.bfloat16, 1, 777, 3000, 4, 1, d, False, (-1, -1), False, path="wgmma", seed=5, knobs=knobs)


@pytest.mark.gpu
@pytest.mark.parametrize("late_rescale, interleaved", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_wgmma_softmax_orders(d, late_rescale, interleaved):
    """LATE_RESCALE and SOFTMAX_INTERLEAVED in every combination at both head dims (the defaults
    pick one per configuration): the reference's values, causal with GQA on ragged lengths and
    a window with a sink."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    _check_knob_shapes(torch, d, _knobs(late_rescale=late_rescale, softmax_interleaved=interleaved))


@pytest.mark.gpu
@pytest.mark.parametrize("k_ahead, v_wait_late", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_wgmma_load_orders(d, k_ahead, v_wait_late):
    """K_AHEAD (the producer's load order) and V_WAIT_LATE (where a consumer waits for V) in every
    combination at both head dims, the defaults picking one per configuration: the reference's
    values, and causal with Sq > Sk, whose first query tiles have no key block (Q loaded alone)
    and one key block (the first K and the last V are the same block's)."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    knobs = _knobs(k_ahead=k_ahead, v_wait_late=v_wait_late)
    _check_knob_shapes(torch, d, knobs)
    _check(torch, torch.bfloat16, 2, 1100, 300, 4, 2, d, True, (-1, -1), False, path="wgmma", seed=7, knobs=knobs)


@pytest.mark.gpu
@pytest.mark.parametrize("d, tile, mask_loops", [(64, (128, 128), True), (64, (192, 128), True), (128, (128, 128), False), (128, (128, 128), True)])
def test_gpu_wgmma_mask_relative(d, tile, mask_loops):
    """MASK_RELATIVE (off by default until timed), with the tiles and key loops it lets compile
    (FA3's D=64 causal 192 x 128 with two loops; D=128 causal with two loops): the reference's
    values, causal with GQA on ragged lengths, a window with a sink, the key tail."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    knobs = _knobs(
        mask_relative=True, tiles={**DEFAULT_KNOBS.tiles, (d, True): tile}, mask_loops={**DEFAULT_KNOBS.mask_loops, (d, True): mask_loops},
        softmax_interleaved=False,  # (192 x 128 with two loops spills with it)
    )  # fmt: skip
    _check_knob_shapes(torch, d, knobs)


def test_wgmma_mask_relative_compiles(tmp_path, monkeypatch):
    """MASK_RELATIVE builds (FA3's D=64 causal 192 x 128 with two key loops, D=128 causal with two
    loops, D=64 with a window and a sink): score_columns finds every consumer thread's score
    columns to be thread 0's shifted by its first (checked on all threads here, the assumption
    the compares rest on), and the PTX has no local memory; also beside TAIL_SPLIT's pieces kernel
    (which the host function traces too: it needs the columns as well)."""
    fmha = _fmha()
    sm90 = fmha.fmha_sm90
    from cute_lowering.kernels import fmha_sm90_softmax

    monkeypatch.setattr(fmha_sm90_softmax, "SCORE_COLUMNS_CHECK_ALL", True)  # (read by the softmax mixin: a check, not a knob)
    knobs = _knobs(
        mask_relative=True, softmax_interleaved=False, tiles={**DEFAULT_KNOBS.tiles, (64, True): (192, 128)},
        mask_loops={(64, True): True, (128, True): True}, tail_split=True,
    )  # fmt: skip
    # (D=128 without a mask: its key tail's mask in the main kernel and in the tail pieces' kernel,
    # both traced from one host function: three entries)
    for d, left, right, sink in [(64, False, True, False), (128, False, True, False), (64, True, True, True), (128, False, False, False)]:
        config = sm90.config_for(d, left, right, knobs=knobs)
        assert config.mask_relative
        ptx = sm90._compile.__wrapped__("bfloat16", d, left, right, sink, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, config).__ptx__
        assert "ld.local" not in ptx and "st.local" not in ptx
        assert "selp.f32" in ptx  # the mask: one select per value
        assert ptx.count(".entry ") == (3 if config.tail_split else 1)


def test_wgmma_tile_that_does_not_fit_shared_memory_is_refused():
    """A tile whose Q, O and K/V ring exceed sm_90a's 227 KB a CTA is a ValueError naming the bytes
    (128 x 176 at D=128: 246784 with one Q buffer), not a launch failure; 128 x 160 (230400) fits
    with one Q buffer (two would take 263168), 128 x 128 with two (230400)."""
    sm90 = _fmha().fmha_sm90

    def tile(block_n):
        return _knobs(q_stages=2, tiles={**DEFAULT_KNOBS.tiles, (128, False): (128, block_n)})

    with pytest.raises(ValueError, match=r"tile \(128, 176\) at D=128 with 2 K/V stages needs 246784 bytes"):
        sm90.config_for(128, False, False, knobs=tile(176))
    config = sm90.config_for(128, False, False, knobs=tile(160))
    assert config.tile == (128, 160) and config.q_stages == 1
    assert sm90.config_for(128, False, False, knobs=tile(128)).q_stages == 2


def test_wgmma_wider_key_tile_converts_p_in_pairs(tmp_path):
    """BLOCK_N = 160 (a thread's P row is not a power of two): P is converted 8 values at a time,
    all as bf16x2 pairs, so no 16-bit moves sit between the P V wgmmas (ptxas would inject a
    warpgroup.arrive before each: C7519)."""
    fmha = _fmha()
    sm90 = fmha.fmha_sm90
    config = sm90.config_for(128, False, False, knobs=_knobs(tiles={**DEFAULT_KNOBS.tiles, (128, False): (128, 160)}))
    ptx = _main_kernel(sm90._compile.__wrapped__("bfloat16", 128, False, False, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, config).__ptx__)
    assert "wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16" in ptx
    assert "cvt.rn.bf16.f32" not in ptx and ptx.count("cvt.rn.bf16x2.f32") >= 40
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_rescale_threshold_compiles(tmp_path):
    """RESCALE_THRESHOLD: O's rescale under a warp vote in each place it runs (D=128 without a
    mask: in the key loop and before the tile's last P V; with LATE_RESCALE after each key loop's
    softmax: D=128 causal's two loops, D=64's one), no local memory; None builds no vote; values
    outside [0, 16] are refused."""
    sm90 = _fmha().fmha_sm90
    for d, right, votes in ((128, False, 2), (128, True, 2), (64, False, 1)):
        base = sm90.config_for(d, False, right)
        plain = _main_kernel(sm90._compile.__wrapped__("bfloat16", d, False, right, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, dataclasses.replace(base, rescale_threshold=None)).__ptx__)
        ptx = _main_kernel(sm90._compile.__wrapped__("bfloat16", d, False, right, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, dataclasses.replace(base, rescale_threshold=8.0)).__ptx__)
        assert "vote.sync.any" not in plain
        assert len(re.findall(r"vote\.sync\.any\.pred", ptx)) == votes, (d, right)
        assert "ld.local" not in ptx and "st.local" not in ptx
    for bad in (-1.0, 17.0, "8"):
        with pytest.raises(ValueError, match="rescale_threshold must be None or a number"):
            sm90.config_for(128, False, False, knobs=_knobs(rescale_threshold=bad))
    knobs = _knobs(rescale_threshold={(64, False): None, (64, True): None, (128, False): 8, (128, True): None})
    assert sm90.config_for(128, False, False, knobs=knobs).rescale_threshold == 8.0 and sm90.config_for(128, False, True, knobs=knobs).rescale_threshold is None


def test_tail_split_plan(monkeypatch, tmp_path):
    """TAIL_SPLIT's host plan (`tail_splits`: the power of two that gives the fewest block-times
    for the last partial round, its pieces' partials counted, by hand below for 132 SMs) and its
    build: two more kernels (the pieces', the combine), none with the knob off, and none with a
    diagonal, a sink or the NVFP4 output; the main kernel is the plain build."""
    sm90 = _fmha().fmha_sm90
    monkeypatch.setattr(sm90, "sm_count", lambda: 132)
    shipped_cost = DEFAULT_KNOBS.tail_launch_cost
    knobs = _knobs(tail_split=True, tail_launch_cost=0.0)  # (the hand values below: the model without the launch's fixed cost)
    d128, d64 = sm90.config_for(128, False, False, knobs=knobs), sm90.config_for(64, False, False, knobs=knobs)
    assert d128.tail_split and d64.tail_split and d128.max_ctas == 132
    tail_splits = functools.partial(sm90.tail_splits, knobs=knobs)
    # 4x16x4096x128: 2048 tiles, 68 in the last round, 32 blocks: 4 pieces would take 27 + 7.3 (the
    # partials) block-times for 33, 8 25 + 14.7: none
    assert tail_splits(d128, 4, 4096, 4096, 16, False) == 1
    # 2x16x8192x128: 68 tiles of 64 blocks: 4 pieces, 51 + 7.3 for 65 (8: 45 + 14.7)
    assert tail_splits(d128, 2, 8192, 8192, 16, False) == 4
    # 1x32x16384x128: 4096 tiles, 4 left over, 128 blocks: 32 pieces, one round of 5 + 3.5
    assert tail_splits(d128, 1, 16384, 16384, 32, False) == 32
    # 8x32x1024x128 (68 tiles of 8 blocks) and 4x16x4096x64 (192-row tiles: 1408, 88 left, 32 blocks): none
    assert tail_splits(d128, 8, 1024, 1024, 32, False) == 1
    assert tail_splits(d64, 4, 4096, 4096, 16, False) == 1
    # 3 blocks, 12 tiles left: 2 pieces (of one and two blocks), 2.5 + 0.6 for 4
    assert tail_splits(d128, 1, 2048, 300, 9, False) == 2
    # no tail (the tiles fill whole rounds or one round at most), a near-full round, a sink, a single block
    assert tail_splits(d128, 1, 128 * 132, 4096, 1, False) == 1
    assert tail_splits(d128, 1, 4096, 4096, 4, False) == 1
    assert tail_splits(d128, 2, 2048, 2048, 16, False) == 1  # (512 tiles: 116 in the last round of 132)
    assert tail_splits(d128, 4, 4096, 4096, 16, True) == 1
    assert tail_splits(d128, 4, 4096, 100, 16, False) == 1
    assert sm90.tail_scratch_words(d128, 2, 8192, 16, 128, 4) == (4 * 68 * 128 * 128, 4 * 68 * 128)
    # with a fixed cost of 60 block-times: 8192's 4 pieces (51 + 7.3 + 60 for 65) do not pay, 16384's 32 (68.5 for 128) do
    tail_splits = functools.partial(sm90.tail_splits, knobs=_knobs(tail_split=True, tail_launch_cost=60.0))
    assert tail_splits(d128, 2, 8192, 8192, 16, False) == 1 and tail_splits(d128, 1, 16384, 16384, 32, False) == 32
    # the shipped cost (8): 8192's 4 pieces take 51 + 7.3 + 8 = 66.3 of 65, no; 16384's 32 take 5 + 3.5 + 8 of 129
    assert shipped_cost == 8.0
    tail_splits = functools.partial(sm90.tail_splits, knobs=_knobs(tail_split=True, tail_launch_cost=shipped_cost))
    assert tail_splits(d128, 2, 8192, 8192, 16, False) == 1 and tail_splits(d128, 1, 16384, 16384, 32, False) == 32
    assert tail_splits(d128, 4, 4096, 4096, 16, False) == 1
    assert not sm90.config_for(128, False, True, knobs=knobs).tail_split and not sm90.config_for(128, False, False, nvfp4_out=True, knobs=knobs).tail_split
    ptx = sm90._compile.__wrapped__("bfloat16", 128, False, False, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, d128).__ptx__
    # three kernels: the main one (the full rounds), the pieces', the combine
    assert ptx.count(".entry ") == 3 and "tail_combine_kernel" in ptx and d128.tail_split == "start"
    # the pieces and the combine as programmatic dependent launches: the main kernel allows the
    # pieces at its start (TAIL_PIECES_TRIGGER), the pieces' producer the combine after its last
    # load; the combine waits for the pieces' grid before it reads the partials, and the pieces
    # (which read only Q, K and V) for the main grid before they exit, so that the chain's last
    # grid completes after all of them
    assert ptx.count("griddepcontrol.launch_dependents") == 2 and ptx.count("griddepcontrol.wait") == 2
    assert "griddepcontrol.wait" not in _main_kernel(ptx)
    assert sm90.config_for(128, False, False, knobs=_knobs(tail_split=True, tail_pieces_trigger="last_load")).tail_split == "last_load"
    with pytest.raises(ValueError, match="tail_pieces_trigger"):
        sm90.config_for(128, False, False, knobs=_knobs(tail_split=True, tail_pieces_trigger="end"))
    plain_pdl = sm90.config_for(128, False, False, knobs=_knobs(tail_split=True, tail_pieces_trigger="start", tail_combine_pdl=False))
    assert plain_pdl.tail_split == "plain"
    plain_combine = sm90._compile.__wrapped__("bfloat16", 128, False, False, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, plain_pdl).__ptx__
    assert plain_combine.count(".entry ") == 3 and "griddepcontrol" not in plain_combine
    sink = sm90._compile.__wrapped__("bfloat16", 128, False, False, True, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, d128).__ptx__
    assert sink.count(".entry ") == 1  # (with a sink the build has no tail split)
    off = _knobs(tail_split=False)
    plain = sm90._compile.__wrapped__("bfloat16", 128, False, False, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, sm90.config_for(128, False, False, knobs=off)).__ptx__
    assert plain.count(".entry ") == 1 and sm90.tail_splits(sm90.config_for(128, False, False, knobs=off), 4, 4096, 4096, 16, False, off) == 1


def _ramp_inputs(torch, b, s, h, d, log2_per_block, block_n=128, seed=0):
    """Random q, k, v whose scores also rise by `log2_per_block[h]` (log2 units, softmax_scale
    included) every block_n keys in the order the kernel visits key blocks (the last first), so
    the row maxima grow block after block: by less, about as much and more than a threshold."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, s, h, d, device="cuda", generator=g)
    k = torch.randn(b, s, h, d, device="cuda", generator=g)
    v = torch.randn(b, s, h, d, device="cuda", generator=g)
    q[..., 0] = 1.0
    per_key = torch.tensor(log2_per_block, device="cuda") / (block_n * math.log2(math.e) / math.sqrt(d))
    k[..., 0] = (s - torch.arange(s, device="cuda", dtype=torch.float32))[:, None] * per_key[None, :]
    return q.bfloat16(), k.bfloat16(), v.bfloat16()


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_rescale_threshold(d):
    """RESCALE_THRESHOLD 0 and 8 (FA4's): the reference's values on causal/window/sink/GQA/tails
    and tiles without key blocks, and on scores whose row maxima grow by 0.5 to 100 log2 units a
    block (rows that keep a stale reference, P up to 2^8 before normalizing, and rows that must
    rescale), with an error no larger than every block rescaling gives. (0 is not bit-identical to
    None: without it the factor of an unchanged maximum is exp2 of an FFMA's residual, not 1.)"""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    fmha = _fmha()
    for threshold in (0.0, 8.0):
        _check_knob_shapes(torch, d, _knobs(rescale_threshold=threshold))
        _check(torch, torch.bfloat16, 2, 1100, 300, 4, 2, d, True, (-1, -1), False, path="wgmma", seed=7, knobs=_knobs(rescale_threshold=threshold))
    growth = [0.5, 4.0, 7.9, 8.1, 12.0, 20.0, 100.0, 0.0]
    for causal in (False, True):
        q, k, v = _ramp_inputs(torch, 2, 2048, len(growth), d, growth)
        ref, ref_lse = fmha.reference_attention(q, k, v, causal)
        errs = {}
        for threshold in (None, 0.0, 8.0):
            out, lse = fmha.attention_with_knobs(q, k, v, causal=causal, return_lse=True, path="wgmma", knobs=_knobs(rescale_threshold=threshold))
            assert torch.isfinite(out).all() and torch.isfinite(lse).all(), f"non-finite values, threshold {threshold}"
            errs[threshold] = ((out.double() - ref).norm(dim=-1) / ref.norm(dim=-1).clamp_min(1e-30)).amax(dim=(0, 1))  # (a head each)
            assert (lse.double() - ref_lse).abs().max().item() <= 1e-3 * ref_lse.abs().max().item(), f"LSE, threshold {threshold}"
        for threshold in (0.0, 8.0):
            assert (errs[threshold] <= 1e-2).all(), f"threshold {threshold}: row errors by head {errs[threshold].tolist()}"
            assert (errs[threshold] <= 1.5 * errs[None] + 1e-3).all(), f"threshold {threshold}: {errs[threshold].tolist()} against {errs[None].tolist()}"


def _tail_tile_rows(torch, sm90, config, b, sq, hq):
    """A [B, Sq, Hq] mask of the rows in the tiles of the last partial round (tile_coords' linear
    order: the query tile fastest, last tile first, then head, then batch)."""
    m_tiles = -(-sq // config.block_m)
    n_tiles = m_tiles * hq * b
    full = n_tiles - n_tiles % min(n_tiles, config.max_ctas)
    mask = torch.zeros(b, sq, hq, dtype=torch.bool, device="cuda")
    for tile in range(full, n_tiles):
        m0 = (m_tiles - 1 - tile % m_tiles) * config.block_m
        mask[tile // (m_tiles * hq), m0 : m0 + config.block_m, (tile // m_tiles) % hq] = True
    return mask


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_tail_split(d):
    """TAIL_SPLIT: the tiles before the last partial round give the same bits as without it, the
    tail's rows (the pieces' launch, then the combine) the reference's values: pieces of one and
    two key blocks, a key tail inside a block, a query tail (rows the combine skips), GQA, fp16,
    the pieces and the combine launched plainly and as PDLs (the pieces allowed at the main
    kernel's start or after its last loads); with a sink the plain schedule. The plan's fixed
    cost is set to 0 so that these small shapes are cut."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    fmha = _fmha()
    sm90 = fmha.fmha_sm90
    sms = sm90.sm_count()
    block_m = sm90.config_for(d, False, False).block_m
    m_tiles = -(-2048 // block_m)
    heads = -(-(sms + 1) // m_tiles)  # just past one round: a short last one
    cases = [
        (1, 2048, 2048, heads, heads, torch.bfloat16),  # (8 pieces of 2 blocks at D=128)
        (1, 2048 - 37, 1000, heads, 1, torch.float16),  # (a key tail; 4 pieces)
        (3, 2048, 4096, heads, heads, torch.bfloat16),  # (2 pieces at D=128, 4 at D=64)
        (1, 2048, 300, heads, heads, torch.bfloat16),  # (3 blocks: pieces of one and two)
    ]  # fmt: skip
    for (b, sq, sk, hq, hkv, dtype), pdl, trigger in [(c, True, "start") for c in cases] + [(cases[0], False, "start"), (cases[1], True, "last_load")]:
        # (the pieces and the combine programmatic dependent launches, or plain)
        knobs = _knobs(tail_launch_cost=0.0, tail_combine_pdl=pdl, tail_pieces_trigger=trigger, tail_split=True)
        g = torch.Generator(device="cuda").manual_seed(sk)
        q = torch.randn(b, sq, hq, d, device="cuda", generator=g).to(dtype)
        k, v = (torch.randn(b, sk, hkv, d, device="cuda", generator=g).to(dtype) for _ in range(2))
        want, want_lse = fmha.attention_with_knobs(q, k, v, return_lse=True, path="wgmma", knobs=dataclasses.replace(knobs, tail_split=False))
        config = sm90.config_for(d, False, False, knobs=knobs)
        splits = sm90.tail_splits(config, b, sq, sk, hq, False, knobs)
        assert splits > 1, (b, sq, sk, hq, splits)
        out, lse = fmha.attention_with_knobs(q, k, v, return_lse=True, path="wgmma", knobs=knobs)
        tail = _tail_tile_rows(torch, sm90, config, b, sq, hq)
        assert tail.any() and not tail.all()
        assert torch.equal(out[~tail], want[~tail]), "tiles before the last round differ"
        lse_rows = lse.permute(0, 2, 1)  # [B, Sq, Hq]
        assert torch.equal(lse_rows[~tail], want_lse.permute(0, 2, 1)[~tail])
        ref, ref_lse = fmha.reference_attention(q, k, v)
        err = (out.double() - ref)[tail].norm() / ref[tail].norm()
        assert err <= (1e-2 if dtype == torch.bfloat16 else 2e-3), f"tail rows' relative error {err:.2e} with {splits} pieces"
        assert (lse_rows.double() - ref_lse.permute(0, 2, 1))[tail].abs().max() <= 1e-3 * ref_lse.abs().max()
    # a sink: the plain schedule, the same bits
    q = torch.randn(1, 2048, heads, d, device="cuda").bfloat16()
    k, v = (torch.randn(1, 2048, heads, d, device="cuda").bfloat16() for _ in range(2))
    sink = torch.randn(heads, device="cuda")
    want = fmha.attention_with_knobs(q, k, v, sink=sink, path="wgmma", knobs=_knobs(tail_split=False))
    assert torch.equal(fmha.attention_with_knobs(q, k, v, sink=sink, path="wgmma", knobs=_knobs(tail_split=True)), want)


@pytest.mark.gpu
def test_gpu_wgmma_key_tile_160():
    """128 x 160 tiles at D=128 (FA3 takes 128 x 176; ours fits 160 in shared memory): the
    reference's values on ragged lengths (key tails inside a block) with GQA, bf16 and fp16."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    knobs = _knobs(tiles={**DEFAULT_KNOBS.tiles, (128, False): (128, 160)})
    _check(torch, torch.bfloat16, 2, 1000, 1100, 8, 2, 128, False, (-1, -1), False, path="wgmma", knobs=knobs)
    _check(torch, torch.float16, 1, 777, 4096, 4, 1, 128, False, (-1, -1), True, path="wgmma", seed=5, knobs=knobs)


def test_wgmma_stmatrix_compiles(tmp_path):
    """STMATRIX: O reaches shared memory by stmatrix, no element-wise shared stores left, no
    local memory."""
    sm90 = _fmha().fmha_sm90
    config = sm90.config_for(128, False, False, knobs=_knobs(stmatrix=True))
    ptx = _main_kernel(sm90._compile.__wrapped__("bfloat16", 128, False, False, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, config).__ptx__)
    assert ptx.count("stmatrix.sync.aligned") == 8 and "st.shared" not in ptx  # 64 x 128 O a warpgroup: 8 x4 stmatrix a thread
    assert "ld.local" not in ptx and "st.local" not in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_wgmma_stmatrix(d):
    """STMATRIX: the reference's values through the stmatrix epilogue; ragged lengths, GQA,
    masks, a sink."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    _check_knob_shapes(torch, d, _knobs(stmatrix=True))


def test_wgmma_tma_store_compiles(tmp_path):
    """TMA_STORE: O leaves by TMA stores of each warpgroup's 64 x D stage (two 64-column boxes at
    D=128 under the 128-byte swizzle), issued by one thread after a proxy fence, each epilogue
    first waiting for the previous store's reads and the kernel for the last one's; O's 16-byte
    global stores are gone. The NVFP4 output keeps its path."""
    import re

    sm90 = _fmha().fmha_sm90
    knobs = _knobs(tma_store=True)
    for d, boxes in [(128, 2), (64, 1)]:
        ptx = sm90._compile.__wrapped__("bfloat16", d, False, True, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, sm90.config_for(d, False, True, knobs=knobs)).__ptx__
        assert len(re.findall(r"cp\.async\.bulk\.tensor\.4d\.global\.shared::cta", ptx)) == boxes
        assert ptx.count("cp.async.bulk.commit_group") == 1 and ptx.count("cp.async.bulk.wait_group.read") == 2
        assert "fence.proxy.async.shared::cta" in ptx and "st.global.v4" not in ptx
    ptx = sm90._compile.__wrapped__("bfloat16", 128, False, True, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", True, sm90.config_for(128, False, True, knobs=knobs)).__ptx__
    assert "cp.async.bulk.wait_group" not in ptx  # nvfp4_out: no TMA store


@pytest.mark.gpu
@pytest.mark.parametrize("stmatrix", [False, True])
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_wgmma_tma_store(d, stmatrix):
    """TMA_STORE in every configuration (the defaults take it at D=64 and at D=128 without a
    mask): the reference's values with O stored by TMA,
    persistent CTAs reusing their O stages tile after tile, query tails clipped by TMA (Sq not a
    multiple of 64), GQA, causal, a window with a sink."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    knobs = _knobs(tma_store=True, stmatrix=stmatrix)
    _check_knob_shapes(torch, d, knobs)
    _check(torch, torch.bfloat16, 3, 777, 3000, 16, 4, d, False, (-1, -1), False, path="wgmma", seed=5, knobs=knobs)  # more tiles a CTA


def test_wgmma_o_direct_compiles(tmp_path):
    """O_DIRECT: O leaves from registers, each quad's words transposed by 4 butterfly shuffles a
    run of 4 column groups (32 more shfl.sync.bfly a thread at D=128 than the build that stores
    O through shared memory) and written by 16-byte stores (8 a thread: its 64 values), no
    shared-memory O buffer (FA3's 128 x 176 fits beside one Q buffer, 128 x 160 beside two), no
    TMA store, no epilogue barrier and no local memory: the wide-key build (128 x 192, which takes
    it), and as another Config value (`dataclasses.replace`) at 128 x 128 (unmasked, causal) and
    128 x 160. The NVFP4 output keeps its own epilogue."""
    import dataclasses
    import re

    sm90 = _fmha().fmha_sm90
    knobs = _knobs(tail_split=False)  # (one kernel's PTX)
    for block_n, masked in [(128, False), (128, True), (160, False), (192, False)]:
        if block_n == 192:
            config = sm90.config_for(128, False, False, False, True, knobs)  # (wide_key_tiles' build)
            assert config.tile == (128, 192) and config.o_direct and not config.tma_store and config.q_stages == 1
        else:
            tiled = dataclasses.replace(knobs, tiles={**knobs.tiles, (128, masked): (128, block_n)})
            config = dataclasses.replace(sm90.config_for(128, False, masked, knobs=tiled), o_direct=True, tma_store=False)
        ptx = sm90._compile.__wrapped__("bfloat16", 128, False, masked, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, config).__ptx__
        assert f"wgmma.mma_async.sync.aligned.m64n{block_n}k16.f32.bf16.bf16" in ptx
        assert len(re.findall(r"st\.global\.v4\.b32", ptx)) == 8
        if block_n == 128:
            through_smem = sm90._compile.__wrapped__(
                "bfloat16", 128, False, masked, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False,
                dataclasses.replace(config, o_direct=False, stmatrix=False),  # (O's rows by element-wise shared-memory stores)
            ).__ptx__  # fmt: skip
            assert ptx.count("shfl.sync.bfly") == through_smem.count("shfl.sync.bfly") + 32
            assert ptx.count("st.global.b32") == through_smem.count("st.global.b32")  # (the LSE's)
            assert ptx.count("st.shared") < through_smem.count("st.shared")  # (O's rows into shared memory: gone)
        assert "cp.async.bulk.wait_group" not in ptx
        assert not re.search(r"bar\.sync\s+[12], 128;", ptx)  # (the epilogue's barriers: none)
        assert "ld.local" not in ptx and "st.local" not in ptx
    assert not sm90.config_for(128, False, False, nvfp4_out=True, knobs=knobs).o_direct


def test_wide_key_tiles_config():
    """WIDE_KEY_TILES: the wider tile only for calls with at least WIDE_KEYS_MIN keys, only without a
    mask and not for the NVFP4 output; beside its 48 KB K/V stages it fits only with O from
    registers straight to global memory (Config.o_direct), which it alone takes; a tile that does
    not fit even so is refused with the bytes it needs."""
    sm90 = _fmha().fmha_sm90
    knobs = _knobs(wide_key_tiles={128: (128, 192)})
    config = functools.partial(sm90.config_for, knobs=knobs)
    wide_min = knobs.wide_keys_min
    assert sm90.wide_keys(128, wide_min, knobs) and not sm90.wide_keys(128, wide_min - 1, knobs) and not sm90.wide_keys(64, 1 << 20, knobs)
    wide = config(128, False, False, False, True)
    assert wide.tile == (128, 192) and wide.o_direct and wide.q_stages == 1
    assert config(128, False, False, False, False).tile == knobs.tiles[(128, False)]
    assert config(128, False, True, False, True).tile == knobs.tiles[(128, True)]
    assert config(128, False, False, True, True).tile != (128, 192)
    assert config(128, False, False, False, True).o_direct and not config(128, False, False, False, False).o_direct
    # wide_key_pingpong: the scheduler barrier in the wide build alone; None leaves pingpong's choice
    config = functools.partial(sm90.config_for, knobs=dataclasses.replace(knobs, pingpong=False, wide_key_pingpong=True))
    assert config(128, False, False, False, True).pingpong and not config(128, False, False, False, False).pingpong
    assert not config(128, False, True, False, True).pingpong  # (a mask: no wide build)
    config = functools.partial(sm90.config_for, knobs=dataclasses.replace(knobs, pingpong=False, wide_key_pingpong=None))
    assert not config(128, False, False, False, True).pingpong
    config = functools.partial(sm90.config_for, knobs=dataclasses.replace(knobs, pingpong=True, wide_key_pingpong=None))
    assert config(128, False, False, False, True).pingpong
    config = functools.partial(sm90.config_for, knobs=dataclasses.replace(knobs, pingpong=True, wide_key_pingpong=False))
    assert not config(128, False, False, False, True).pingpong and config(128, False, False, False, False).pingpong
    with pytest.raises(ValueError, match=r"tile \(128, 256\) at D=128 with 2 K/V stages needs 295936 bytes"):
        sm90.config_for(128, False, False, False, True, dataclasses.replace(knobs, wide_key_tiles={128: (128, 256)}))


def test_nvfp4_output_is_fused_only_where_the_bf16_build_is_its_tile(monkeypatch):
    """out_format="nvfp4" is fused only where the bf16 call does the same arithmetic: with the
    default knobs, for every head dim, mask and key count, either the NVFP4 build's tile is the
    bf16 build's, or ops sends the NVFP4 output through the bf16 call (session 18 turned
    WIDE_KEY_TILES on, whose 128 x 192 the NVFP4 build cannot take, and the GPU peers' run found
    2x16x8192x128 differing before ops did so). Without a GPU: sm_90a, 132 SMs, path "wgmma"."""
    import types

    torch = pytest.importorskip("torch")
    sm90 = _fmha().fmha_sm90
    from cute_lowering.kernels import ops

    monkeypatch.setattr(ops, "_arch", lambda device: "sm_90a")
    monkeypatch.setattr(sm90, "sm_count", lambda: 132)
    ops.clear_launch_cache()
    try:
        for d in (64, 128):
            for masked in (False, True):
                for sk in (1024, DEFAULT_KNOBS.wide_keys_min, 1 << 20):
                    wide = sm90.wide_keys(d, sk)
                    bf16 = sm90.config_for(d, masked, masked, False, wide)
                    fp4 = sm90.config_for(d, masked, masked, True, wide)
                    if bf16.tile == fp4.tile:
                        continue
                    q = types.SimpleNamespace(dtype=torch.bfloat16, shape=(1, sk, 8, d), get_device=lambda: 0)
                    limit = 0 if masked else -1  # (a window with both limits, as config_for was asked)
                    assert ops._bf16_call_differs(q, 1, sk, sk, 8, 8, False, limit, limit, "wgmma", None, None), (
                        f"D={d}, masked {masked}, Sk={sk}: bf16 {bf16.tile}, NVFP4 {fp4.tile}, and ops would fuse"
                    )
    finally:
        ops.clear_launch_cache()


def test_nvfp4_output_goes_through_the_bf16_call_where_that_call_computes_otherwise(monkeypatch):
    """ops' choice, without a GPU (sm_90a, 132 SMs, path "wgmma"): the shapes where the H200 showed
    the fused NVFP4 output differing from quantize() of the bf16 output (s18: 1x32x16384x128 with
    the tail split; 2x16x8192x128 with WIDE_KEY_TILES on) go through the bf16 call; 2x16x8192x128
    with the defaults (identical there), a mask (no tail split, no wide tile) and the mma_sync
    path (one build) stay fused."""
    import types

    torch = pytest.importorskip("torch")
    fmha = _fmha()
    from cute_lowering.kernels import ops

    sm90 = fmha.fmha_sm90
    monkeypatch.setattr(ops, "_arch", lambda device: "sm_90a")
    monkeypatch.setattr(sm90, "sm_count", lambda: 132)

    def differs(b, s, h, d=128, right=-1, path="wgmma", knobs=_knobs(wide_key_tiles={})):  # (the wide tile: below)
        q = types.SimpleNamespace(dtype=torch.bfloat16, shape=(b, s, h, d), get_device=lambda: 0)
        return ops._bf16_call_differs(q, b, s, s, h, h, False, -1, right, path, None, None, knobs)

    ops.clear_launch_cache()  # (plans made before sm_count was stubbed)
    try:
        assert differs(1, 16384, 32)  # (the tail split cuts its last round's tiles)
        assert not differs(2, 8192, 16) and not differs(4, 4096, 16, d=64)
        assert not differs(1, 16384, 32, right=0)  # (causal: no tail split)
        assert not differs(1, 16384, 32, path="mma_sync")
        assert not differs(1, 16384, 32, knobs=_knobs(wide_key_tiles={}, tail_split=False))
        wide = _knobs(wide_key_tiles={128: (128, 192)}, tail_split=False)
        assert differs(2, 8192, 16, knobs=wide) and not differs(2, 8191, 16, knobs=wide) and not differs(2, 8192, 16, right=0, knobs=wide)
    finally:
        ops.clear_launch_cache()


def _data_path_cases(torch) -> list:
    """(B, Sq, Sk, Hq, Hkv, dtype, causal, window, sink) for knobs that move data, not arithmetic:
    many tiles a CTA, GQA, key and query tails, fp16, causal, a window with a sink."""
    return [
        (4, 2048, 2048, 16, 16, torch.bfloat16, False, (-1, -1), False),
        (3, 1000, 3000, 16, 4, torch.float16, False, (-1, -1), False),
        (1, 777, 1100, 4, 1, torch.bfloat16, False, (-1, -1), False),
        (2, 1000, 1100, 8, 2, torch.bfloat16, True, (-1, -1), False),
        (1, 2048, 2048, 4, 4, torch.float16, False, (300, 40), True),
    ]


def _knob_keeps_the_bits(torch, knob: str, case, d: int, seed: int, repeats: int, what: str):
    """`repeats` wgmma calls with the knob `knob` True give the out and LSE of one call with it
    False (a knob that changes only how data moves, not the arithmetic)."""
    fmha = _fmha()
    b, sq, sk, hq, hkv, dtype, causal, window, with_sink = case
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, sq, hq, d, device="cuda", generator=g).to(dtype)
    k, v = (torch.randn(b, sk, hkv, d, device="cuda", generator=g).to(dtype) for _ in range(2))
    sink = torch.randn(hq, device="cuda", generator=g) if with_sink else None
    call = dict(causal=causal, window=window, sink=sink, return_lse=True, path="wgmma")
    want = fmha.attention_with_knobs(q, k, v, **call, knobs=_knobs(**{knob: False}))
    for out, lse in [fmha.attention_with_knobs(q, k, v, **call, knobs=_knobs(**{knob: True})) for _ in range(repeats)]:
        assert torch.equal(out, want[0]) and torch.equal(lse, want[1]), f"{knob} differs at {(b, sq, sk, hq, hkv, causal, window)}, {what}"


@pytest.mark.gpu
def test_gpu_o_direct():
    """O from registers straight to global memory (the wide-key build, Config.o_direct): the
    reference's values at 128 x 160, 176 and 192 (as WIDE_KEY_TILES), GQA, key and query tails,
    fp16, a sink, and through ops' choice by the call's keys."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    for block_n in (160, 176, 192):
        knobs = _knobs(persistent=True, wide_key_tiles={128: (128, block_n)})
        _check(torch, torch.bfloat16, 1, 1000, 8192, 16, 16, 128, path="wgmma", seed=3, knobs=knobs)
        _check(torch, torch.float16, 1, 777, 9000, 4, 1, 128, False, (-1, -1), True, path="wgmma", seed=5, knobs=knobs)
    # through ops' choice by the call's keys (wide_key_tiles): 8192 keys take 192, 8191 do not
    for wide_pingpong in (False, True):  # (wide_key_pingpong: the wide build with the scheduler barrier)
        knobs = _knobs(
            persistent=True, tiles={**DEFAULT_KNOBS.tiles, (128, False): (128, 128)}, wide_key_tiles={128: (128, 192)},
            wide_key_pingpong=wide_pingpong,
        )  # fmt: skip
        _check(torch, torch.bfloat16, 2, 1000, 8192, 8, 2, 128, path="wgmma", seed=6, knobs=knobs)
        _check(torch, torch.float16, 1, 4000, 9000, 4, 1, 128, False, (-1, -1), True, path="wgmma", seed=8, knobs=knobs)  # (GQA, sink, key tail)
        _check(torch, torch.bfloat16, 1, 300, 8191, 4, 4, 128, path="wgmma", seed=7, knobs=knobs)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_unmasked_inf_guard_keeps_the_bits(d):
    """UNMASKED_INF_GUARD off (no -inf guard on the row maximum of a block no mask touches) gives
    the bits of the guarded softmax for finite inputs: persistent tiles, GQA, key and query tails,
    fp16, causal (its unmasked loop), a window with a sink (the per-block decision), and the long
    sequences that take the wide tile at D=128 and the tail split's pieces."""
    torch = _cuda()
    cases = _data_path_cases(torch) + [(1, 8192, 8192, 4, 4, torch.bfloat16, False, (-1, -1), False)]
    if d == 128:
        cases.append((1, 16384 + 128, 16384 + 128, 2, 2, torch.bfloat16, False, (-1, -1), False))
    for case in cases:
        _knob_keeps_the_bits(torch, "unmasked_inf_guard", case, d, case[1] + d, 1, "guard")


def test_wgmma_cluster_compiles(tmp_path):
    """CLUSTER = 2 (K/V shared by two CTAs, FA3's ClusterM): the host function holds two kernels,
    the cluster build (K and V by multicast TMA, each CTA's consumers also releasing the other
    CTA's stages: remote mbarrier arrives) and the one-CTA build for launches whose query tiles
    a head are odd (no multicast, no remote arrive, the same body as CLUSTER = 1); with a
    diagonal the configuration keeps one CTA, and the dynamic order is refused."""
    sm90 = _fmha().fmha_sm90
    knobs = _knobs(cluster=2, tiles={**DEFAULT_KNOBS.tiles, (128, False): (128, 128)})
    for d in (64, 128):
        config = sm90.config_for(d, False, False, knobs=knobs)
        assert config.cluster == 2 and config.max_ctas % 2 == 0
        ptx = sm90._compile.__wrapped__("bfloat16", d, False, False, False, "sm_90a", f"--keep-ptx --dump-dir {tmp_path}", False, config).__ptx__
        kernels = re.split(r"\.visible \.entry ", ptx)[1:]
        assert len(kernels) == 2
        multicast = [len(re.findall(r"cp\.async\.bulk\.tensor\.\w+\.shared::cluster\.global\S*multicast::cluster", k)) for k in kernels]
        remote = [len(re.findall(r"mbarrier\.arrive\.shared::cluster", k)) for k in kernels]
        assert sorted(multicast)[0] == 0 and sorted(multicast)[1] > 0, multicast
        assert sorted(remote)[0] == 0 and sorted(remote)[1] > 0, remote
        assert multicast.index(0) == remote.index(0)  # the one-CTA build has neither
    assert sm90.config_for(128, False, True, knobs=knobs).cluster == 1 and sm90.config_for(64, True, False, knobs=knobs).cluster == 1
    with pytest.raises(ValueError, match="static order"):
        sm90.config_for(128, False, False, knobs=dataclasses.replace(knobs, order="dynamic"))
    for masked in (False, True):  # not a size it builds: refused, with a diagonal too
        with pytest.raises(ValueError, match="cluster must be 1 or 2"):
            sm90.config_for(128, False, masked, knobs=dataclasses.replace(knobs, order="dynamic", cluster=4))


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_wgmma_cluster(d):
    """CLUSTER = 2: the reference's values and the same bits as CLUSTER = 1 (the arithmetic is
    the same; only who loads K/V changes), on a grid of fewer tiles than SMs, on more tiles than
    SMs (persistent pairs walking several tile pairs, the K/V ring shared across tiles), with
    GQA, a key tail inside a block, fp16, one CTA per tile, and an odd number of query tiles
    (the one-CTA build)."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    fmha = _fmha()
    tiled = _knobs(tiles={**DEFAULT_KNOBS.tiles, (128, False): (128, 128)})
    shapes = [  # (b, sq, sk, hq, hkv, dtype): query tiles a head even, even, odd
        (2, 1024, 1024, 4, 2, torch.bfloat16),
        (3, 2048, 3000, 16, 4, torch.float16),
        (1, 777, 3000, 4, 1, torch.bfloat16),
    ]
    for persistent in (True, False):
        knobs = dataclasses.replace(tiled, persistent=persistent)
        for b, sq, sk, hq, hkv, dtype in shapes:
            g = torch.Generator(device="cuda").manual_seed(sq)
            q = torch.randn(b, sq, hq, d, device="cuda", generator=g).to(dtype)
            k, v = (torch.randn(b, sk, hkv, d, device="cuda", generator=g).to(dtype) for _ in range(2))
            want = fmha.attention_with_knobs(q, k, v, return_lse=True, path="wgmma", knobs=dataclasses.replace(knobs, cluster=1))
            outs = [fmha.attention_with_knobs(q, k, v, return_lse=True, path="wgmma", knobs=dataclasses.replace(knobs, cluster=2)) for _ in range(2)]
            for out, lse in outs:
                assert torch.equal(out, want[0]) and torch.equal(lse, want[1]), f"CLUSTER 2 differs from 1 at {(b, sq, sk, hq, hkv)}"
    knobs = dataclasses.replace(tiled, persistent=True, cluster=2)
    _check(torch, torch.bfloat16, 2, 1024, 1100, 8, 2, d, path="wgmma", seed=9, knobs=knobs)
    # the NVFP4 epilogue on the cluster build: the same codes and scales
    g = torch.Generator(device="cuda").manual_seed(4)
    q, k, v = (torch.randn(2, 2048, 4, d, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
    scale = torch.ones(1, device="cuda")
    fused = {}
    for cluster in (1, 2):
        fused[cluster] = fmha.attention_with_knobs(q, k, v, path="wgmma", out_format="nvfp4", global_scale=scale, knobs=dataclasses.replace(knobs, cluster=cluster))
    assert all(torch.equal(a, b) for a, b in zip(fused[1], fused[2])), "CLUSTER 2 changes the NVFP4 output"

# --- exp2 on the FMA units (FA4's MUFU relief): accuracy of the formula, compiles, GPU ----------------
def _emulated_exp2_fma(x, impl):
    """The kernel's two formulations in numpy float32 (fmax clamp, polynomial, bits)."""
    import numpy as np

    fmha = _fmha()
    x = np.maximum(np.asarray(x, np.float32), np.float32(fmha.EXP2_CLAMP))
    if impl == "natural":
        whole = np.floor(x)
        n = whole.astype(np.int32)
    else:  # x + 1.5*2^23 rounded down is exact floor(x) + magic; its low bits are floor(x)
        r = (np.floor(x.astype(np.float64)) + 12582912.0).astype(np.float32)
        whole = r - np.float32(12582912.0)
        n = r.view(np.int32)
    frac = x - whole
    p = np.full_like(frac, np.float32(fmha.EXP2_POLY[-1]))
    for c in reversed(fmha.EXP2_POLY[:-1]):
        p = (p.astype(np.float64) * frac + c).astype(np.float32)  # FMA: one rounding
    return (p.view(np.int32) + (n << 23)).view(np.float32)


@pytest.mark.parametrize("impl", ["natural", "magic"])
def test_exp2_fma_formula_accuracy(impl):
    np = pytest.importorskip("numpy")
    x = np.concatenate([np.linspace(-126, 0, 200_001, dtype=np.float32), -np.arange(0, 127, dtype=np.float32)])
    got = _emulated_exp2_fma(x, impl).astype(np.float64)
    rel = np.abs(got / np.exp2(x.astype(np.float64)) - 1).max()
    assert rel < 1e-4, rel  # < 0.2 ulp of fp16: well inside the bf16 1e-2 / fp16 2e-3 bounds
    assert (_emulated_exp2_fma(np.float32([0.0, -1.0, -10.0]), impl) == np.float32([1.0, 0.5, 2.0**-10])).all()
    # masked scores (-inf) and far-below-the-max ones clamp to -127: exactly 0, never garbage
    tiny = _emulated_exp2_fma(np.float32([-np.inf, -127.0, -500.0, -1e30]), impl)
    assert (tiny == 0).all(), tiny
    assert (_emulated_exp2_fma(np.float32([-126.5]), impl) < 2.0**-125).all()


def test_exp2_fma_columns_and_arguments():
    fmha = _fmha()
    from cute_lowering.kernels import exp2

    assert exp2._fma_columns(16, 0) == (False,) * 16
    assert sum(exp2._fma_columns(16, 4)) == 4 and sum(exp2._fma_columns(16, 8)) == 8
    assert exp2._fma_columns(16, 16) == (True,) * 16
    assert fmha._fma_cols(0.25) == 4 and fmha._fma_cols(0.5) == 8 and fmha._fma_cols(0) == 0
    with pytest.raises(ValueError, match="exp2_on_fma"):
        fmha.compile_attention(exp2_on_fma=1.5)
    with pytest.raises(ValueError, match="exp2_impl"):
        fmha.compile_attention(exp2_on_fma=0.5, exp2_impl="taylor")
    assert "fptosi-to-ptx,bitcast-to-ptx," in fmha.prelowering_pipeline("sm_90a", 4, "natural")
    assert fmha.prelowering_pipeline("sm_90a", 4, "magic") == fmha.prelowering_pipeline("sm_90a", 0) == __import__("cute_lowering").auto_pipeline("sm_90a")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("impl", ["natural", "magic"])
def test_compiles_exp2_on_fma(arch, impl, tmp_path):
    import cute_lowering

    fmha = _fmha()
    causal, sink = impl == "natural", arch == "sm_100a"
    fn = fmha.compile_attention("bfloat16", 64, causal, (-1, -1), sink, arch, exp2_on_fma=0.5, exp2_impl=impl, options=f"--keep-ptx --dump-dir {tmp_path}")
    ptx = fn.__ptx__
    n_poly = 4 * 8 * 2  # rows x half of the 16 columns a thread, masked and unmasked softmax
    counts = {p.name: p.counts for p in cute_lowering.last_report().passes}
    if impl == "natural":
        assert counts["fptosi-to-ptx"] == {"rewritten": n_poly, "left": 0, "folded": n_poly}
        assert counts["bitcast-to-ptx"]["rewritten"] == 2 * n_poly
        assert ptx.count("cvt.rmi.s32.f32") == n_poly and "add.rm" not in ptx
    else:
        assert "fptosi-to-ptx" not in counts
        assert "cvt.rmi" not in ptx and ptx.count("add.rm.ftz.f32") == n_poly
    base = fmha.compile_attention("bfloat16", 64, causal, (-1, -1), sink, arch, exp2_on_fma=0, options=f"--keep-ptx --dump-dir {tmp_path}", path="mma_sync").__ptx__
    assert base.count("ex2.approx") - ptx.count("ex2.approx") == n_poly


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["natural", "magic"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_exp2_on_fma(impl, dtype, causal):
    """Every score exp2 on the FMA units (the worst case for accuracy): same bounds as MUFU."""
    torch = _cuda()
    fmha = _fmha()
    real = fmha.attention
    fmha.attention = lambda *a, **kw: real(*a, exp2_on_fma=1.0, exp2_impl=impl, **kw)
    try:
        d = 128 if dtype == "bfloat16" else 64
        _check(torch, getattr(torch, dtype), 2, 333, 397, 4, 2, d, causal, (-1, -1), False)
        _check(torch, getattr(torch, dtype), 1, 200, 600, 2, 2, d, causal, (-1, -1), False, scale=2.0, seed=1)  # large logits
    finally:
        fmha.attention = real


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["natural", "magic"])
def test_gpu_exp2_on_fma_quarter_window_sink(impl):
    """A quarter of the columns on FMA, window + sink, rows that see nothing."""
    torch = _cuda()
    fmha = _fmha()
    real = fmha.attention
    fmha.attention = lambda *a, **kw: real(*a, exp2_on_fma=0.25, exp2_impl=impl, **kw)
    try:
        _check(torch, torch.bfloat16, 1, 256, 1024, 2, 1, 128, False, (0, 0), False)
        _check(torch, torch.bfloat16, 1, 300, 200, 2, 1, 128, False, (5, -1), True)
    finally:
        fmha.attention = real


# --- the NVFP4 epilogue (mma_sync path) --------------------------------------------------------------
@pytest.mark.parametrize("arch, path", [("sm_90a", "mma_sync"), ("sm_90a", "wgmma"), ("sm_100a", "mma_sync")])
@pytest.mark.parametrize("i", [0, 3, 5])
def test_compiles_nvfp4_out(arch, path, i):
    import cute_lowering

    causal, window, sink = FEATURES[i]
    dtype, head_dim = LAYOUTS[i % len(LAYOUTS)]
    assert _fmha().compile_attention(dtype, head_dim, causal, window, sink, arch, path=path, out_format="nvfp4") is not None
    counts = {p.name: p.counts for p in cute_lowering.last_report().passes}
    if arch == "sm_90a":  # no FP4 convert before sm_100a: the epilogue's E2M1 truncf is rewritten
        assert counts["truncf-to-select"]["rewritten"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize(
    "shape, wide",
    [
        ((1, 16384, 16384, 32, 32), False),  # the bf16 call's tail split cuts its last tiles into pieces
        ((2, 1, 32768, 32, 4), False),  # a split-KV plan (decode)
        ((2, 16, 8192, 32, 4), False),  # the packed split-KV kernel (Sq=16, GQA 8:1)
        ((1, 1000, 8192, 8, 8), True),  # WIDE_KEY_TILES' 128 x 192, which the NVFP4 build does not take
    ],
)
def test_gpu_nvfp4_out_is_quantize_where_the_bf16_call_computes_otherwise(shape, wide):
    """Where the bf16 call takes arithmetic the fused NVFP4 build has not (the tail split's
    pieces, a split-KV plan, another tile), the NVFP4 output is still quantize() of its bits
    (session 18: 583 codes differed at 1x32x16384x128 with the tail split)."""
    torch = _cuda()
    _gpu_path(torch, "wgmma")
    from cute_lowering.kernels import nvfp4

    fmha = _fmha()
    knobs = _knobs(wide_key_tiles={128: (128, 192)}) if wide else DEFAULT_KNOBS
    b, sq, sk, hq, hkv = shape
    gen = torch.Generator(device="cuda").manual_seed(sk + sq)
    q = torch.randn(b, sq, hq, 128, generator=gen, device="cuda").to(torch.bfloat16)
    k, v = (torch.randn(b, sk, hkv, 128, generator=gen, device="cuda").to(torch.bfloat16) for _ in range(2))
    out, lse = fmha.attention_with_knobs(q, k, v, return_lse=True, knobs=knobs)
    (codes, scales, g), lse4 = fmha.attention_with_knobs(q, k, v, out_format="nvfp4", return_lse=True, knobs=knobs)
    want_codes, want_scales, _ = nvfp4.quantize(out.reshape(-1, 128), g)
    assert torch.equal(codes.reshape(-1, 64), want_codes), int((codes.reshape(-1, 64) != want_codes).sum())
    assert torch.equal(scales.view(torch.uint8).reshape(-1, 8), want_scales.view(torch.uint8))
    assert torch.equal(lse4, lse)


@pytest.mark.gpu
@pytest.mark.parametrize("path", GPU_PATHS)
@pytest.mark.parametrize(
    "dtype, d, causal, window, sink, shape",
    [
        ("bfloat16", 128, False, (-1, -1), False, (2, 333, 397, 4, 2)),
        ("bfloat16", 64, True, (-1, -1), True, (1, 300, 100, 6, 2)),
        ("float16", 128, False, (100, 37), False, (1, 129, 1000, 8, 1)),
        ("float16", 64, True, (70, -1), True, (3, 77, 77, 2, 2)),
    ],
)
def test_gpu_nvfp4_out_is_quantize_of_the_output(dtype, d, causal, window, sink, shape, path):
    # the epilogue quantizes the O tile the plain store would have written: bit-identical to
    # nvfp4.quantize() of that output with the same global scale
    torch = _cuda()
    from cute_lowering.kernels import nvfp4

    fmha = _fmha()
    b, sq, sk, hq, hkv = shape
    gen = torch.Generator(device="cuda").manual_seed(sq + d)
    dt = getattr(torch, dtype)
    q = torch.randn(b, sq, hq, d, generator=gen, device="cuda").to(dt)
    k = torch.randn(b, sk, hkv, d, generator=gen, device="cuda").to(dt)
    v = (torch.randn(b, sk, hkv, d, generator=gen, device="cuda") * 4).to(dt)
    s = torch.randn(hq, generator=gen, device="cuda") if sink else None
    kw = dict(causal=causal, window=window, sink=s, path=_gpu_path(torch, path))
    out = fmha.attention(q, k, v, **kw)
    (codes, scales, g), lse = fmha.attention(q, k, v, out_format="nvfp4", return_lse=True, **kw)
    assert g.item() == nvfp4.compute_global_scale(v).item()  # the default: 448*6/amax(|v|)
    want_codes, want_scales, _ = nvfp4.quantize(out.reshape(-1, d), g)
    assert codes.shape == (b, sq, hq, d // 2) and scales.shape == (b, sq, hq, d // 16)
    assert scales.dtype == torch.float8_e4m3fn
    assert torch.equal(codes.reshape(-1, d // 2), want_codes)
    assert torch.equal(scales.view(torch.uint8).reshape(-1, d // 16), want_scales.view(torch.uint8))
    assert not torch.isnan(lse[lse == lse]).any()
    # a given global scale is used as is
    (codes2, _, g2) = fmha.attention(q, k, v, out_format="nvfp4", global_scale=2.0, **kw)
    assert g2.item() == 2.0
    assert torch.equal(codes2.reshape(-1, d // 2), nvfp4.quantize(out.reshape(-1, d), g2)[0])
