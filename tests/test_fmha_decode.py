"""The decode path (kernels/fmha_decode.py): split choice, compiles (no GPU), GPU accuracy against float64."""

from __future__ import annotations

import math
import re

import pytest



def _decode():
    from cute_lowering.kernels import fmha_decode

    return fmha_decode


# --- the split choice (plain integers) ------------------------------------------------------------
def test_choose_splits_rules():
    d = _decode()
    # short queries over long keys: taken, and the splits fill one wave of CTAs without passing it
    n = d.choose_splits(8, 1, 4096, 32, 4, -1, -1, 132)
    tiles = 8 * 4  # 8 packed rows: one 16-row tile per (batch, kv head)
    assert 1 < n <= d.MAX_SPLITS and tiles * n <= 132 * d.CTAS_PER_SM_KEY_WARPS < tiles * (n + 1)
    assert 4096 // d.BLOCK_N // n >= d.MIN_BLOCKS_PER_SPLIT  # no split shorter than the minimum
    n = d.choose_splits(2, 16, 32768, 32, 4, -1, -1, 132)  # 128 packed rows: two 64-row tiles per (batch, kv head)
    assert 2 * 2 * 4 * n <= 132 * d.CTAS_PER_SM < 2 * 2 * 4 * (n + 1)
    # few keys, or too many packed rows: not taken unless forced, and forced gives >= 1
    assert d.choose_splits(8, 1, 512, 32, 4, -1, -1, 132) == 0
    assert d.choose_splits(2, 64, 32768, 32, 4, -1, -1, 132) == 0  # 512 packed rows
    assert d.choose_splits(2, 64, 32768, 32, 4, -1, -1, 132, forced=True) >= 1
    assert d.choose_splits(1, 1, 0, 8, 8, -1, -1, 132, forced=True) == 1  # no keys at all
    # a window bounds the keys that count: a narrow one is not worth splitting
    assert d.choose_splits(1, 1, 32768, 8, 1, 100, 0, 132) == 0
    assert d.choose_splits(1, 1, 32768, 8, 1, 100, 0, 132, forced=True) == 1
    # plenty of tiles already: one split
    assert d.choose_splits(512, 1, 4096, 32, 4, -1, -1, 132) == 1


# --- compiles, no GPU -------------------------------------------------------------------------------
FEATURES = [
    # (causal, window, sink)
    (False, (-1, -1), False),
    (True, (-1, -1), True),
    (False, (64, 32), False),
    (True, (128, -1), True),
]
LAYOUTS = [("bfloat16", 128), ("float16", 64)]


def test_compiles_decode_sm80_without_pdl(tmp_path):
    """sm_80 has no griddepcontrol: the combine there is a plain launch after the split kernel."""
    from cute_lowering.kernels import fmha

    ptx = fmha.compile_attention("bfloat16", 128, True, (-1, -1), False, "sm_80", path="decode", options=f"--keep-ptx --dump-dir {tmp_path}").__ptx__
    assert ptx.count(".entry") == 2 and "griddepcontrol" not in ptx


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_compiles_decode_combine_pdl(arch, tmp_path, monkeypatch):
    """COMBINE_PDL on: the split kernel lets the combine be scheduled (launch_dependents), the
    combine waits for the split kernel's partials (wait); a build after the knob changed is a
    new build (the compile cache is keyed by it), and the key-warps kernel has no second kernel."""
    decode = _decode()
    options = f"--keep-ptx --dump-dir {tmp_path}"
    plain = decode.compile_decode("bfloat16", 128, False, True, False, arch, options).__ptx__
    monkeypatch.setattr(decode, "COMBINE_PDL", True)
    ptx = decode.compile_decode("bfloat16", 128, False, True, False, arch, options).__ptx__
    assert "griddepcontrol" not in plain
    assert ptx.count("griddepcontrol.launch_dependents") == 1 and ptx.count("griddepcontrol.wait") == 1
    assert "griddepcontrol" not in decode.compile_decode("bfloat16", 128, False, True, False, arch, options, key_warps=True).__ptx__


def test_key_warps_ring_depth_is_a_build_of_its_own(tmp_path, monkeypatch):
    """KEY_WARPS_STAGES sizes the <= 16-row kernel's K/V ring alone (the 64-row kernel keeps
    STAGES): a new depth is a new build (the compile cache is keyed by it), with that many
    cp.async groups in flight; a ring that does not fit a CTA's shared memory is refused by name."""
    decode = _decode()
    options = f"--keep-ptx --dump-dir {tmp_path}"
    three = decode.compile_decode("bfloat16", 128, False, False, False, "sm_90a", options, key_warps=True).__ptx__
    monkeypatch.setattr(decode, "KEY_WARPS_STAGES", 6)
    six = decode.compile_decode("bfloat16", 128, False, False, False, "sm_90a", options, key_warps=True).__ptx__
    def in_flight(ptx):  # the ring's wait: all but stages - 2 commit groups complete (0: the drain)
        return {int(n) for n in re.findall(r"cp\.async\.wait_group\s+(\d+);", ptx)} - {0}

    wide = decode.compile_decode("bfloat16", 128, False, False, False, "sm_90a", options).__ptx__  # 64-row tiles
    assert in_flight(three) == {1} and in_flight(six) == {4} and in_flight(wide) == {1}
    monkeypatch.setattr(decode, "KEY_WARPS_STAGES", 7)  # 224 KB of K/V + Q's 4 KB > 227 KB
    with pytest.raises(ValueError, match="KEY_WARPS_STAGES = 7"):
        decode.compile_decode("bfloat16", 128, False, False, False, "sm_90a", options, key_warps=True)
    decode.compile_decode("bfloat16", 64, False, False, False, "sm_90a", options, key_warps=True)  # D=64: 112 KB, fits
    monkeypatch.setattr(decode, "STAGES", 1)
    with pytest.raises(ValueError, match="STAGES = 1"):
        decode.compile_decode("bfloat16", 128, False, False, False, "sm_90a", options)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("i", range(len(FEATURES)))
def test_compiles_decode(arch, i, tmp_path):
    import cute_lowering
    from cute_lowering.kernels import fmha

    causal, window, sink = FEATURES[i]
    dtype, head_dim = LAYOUTS[(i + (arch == "sm_100a")) % len(LAYOUTS)]
    # 64-row tiles (what path="decode" compiles here): the split kernel and the combine kernel
    fn = fmha.compile_attention(dtype, head_dim, causal, window, sink, arch, path="decode", options=f"--keep-ptx --dump-dir {tmp_path}")
    report = cute_lowering.last_report()
    assert report is not None and report.arch == arch
    ptx = fn.__ptx__
    assert ptx.count(".entry") == 2
    assert "cp.async.cg.shared.global" in ptx and "mma.sync.aligned.m16n8k16" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx
    if head_dim == 128:  # the combine's partial O loads: 16 bytes a lane
        assert "ld.global.v4.b32" in ptx or "ld.global.v2.b64" in ptx  # (sm_100a spells them the second way)
    assert ".minnctapersm 2" in ptx
    # the combine is a plain launch after the split kernel (COMBINE_PDL off, the default) ...
    assert "griddepcontrol" not in ptx
    # <= 16 packed rows: one kernel, whose last CTA per tile combines (an acq_rel arrival count)
    fn = _decode().compile_decode(dtype, head_dim, window[0] >= 0, causal or window[1] >= 0, sink, arch, f"--keep-ptx --dump-dir {tmp_path}", key_warps=True)
    ptx = fn.__ptx__
    assert ptx.count(".entry") == 1 and "key_warps" in ptx
    assert "atom.global.acq_rel.add" in ptx and "fence.acq_rel.gpu" in ptx
    assert "griddepcontrol" not in ptx  # (no second kernel to launch early)
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_decode_path_choice():
    from cute_lowering.kernels import fmha

    assert fmha.resolve_path("decode", "sm_90a") == "decode"
    assert fmha.resolve_path("decode", "sm_80") == "decode"
    with pytest.raises(ValueError, match="decode path needs"):
        fmha.resolve_path("decode", "sm_120a")
    with pytest.raises(ValueError, match="mma_sync path only"):
        fmha.compile_attention(arch="sm_90a", path="decode", exp2_on_fma=0.5)
    with pytest.raises(ValueError, match="no NVFP4 output"):
        fmha.compile_attention(arch="sm_90a", path="decode", out_format="nvfp4")


# --- GPU: against the float64 reference ---------------------------------------------------------------
def _gpu():
    from test_fmha import _cuda

    return _cuda()


def _check(torch, *args, **kw):
    from test_fmha import _check as check

    return check(torch, *args, **kw)


DECODE_SHAPES = [
    # (B, Sq, Sk, Hq, Hkv): Sq in {1, 16, 64, 128}, GQA 8:1 and 1:1, ragged Sk
    (2, 1, 4096, 32, 4),
    (1, 1, 32768 + 37, 32, 4),
    (2, 16, 4096 + 5, 32, 4),
    (1, 16, 32768, 32, 4),
    (1, 64, 8192 - 3, 32, 4),
    (1, 128, 4096, 8, 1),
    (2, 1, 5000, 8, 8),
    (1, 128, 4100, 4, 4),
]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", DECODE_SHAPES, ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_decode_shapes(shape, causal):
    torch = _gpu()
    b, sq, sk, hq, hkv = shape
    _check(torch, torch.bfloat16, b, sq, sk, hq, hkv, 128, causal, (-1, -1), False, path="decode")
    _check(torch, torch.float16, b, sq, sk, hq, hkv, 64, causal, (300, -1) if causal else (-1, 40), True, scale=0.3, path="decode")


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_decode_edges(d):
    torch = _gpu()
    # Sq > Sk, causal: the first rows see nothing (0, LSE -inf; with a sink LSE = sink)
    _check(torch, torch.bfloat16, 1, 16, 8, 16, 2, d, True, (-1, -1), False, path="decode")
    _check(torch, torch.bfloat16, 1, 16, 8, 16, 2, d, True, (-1, -1), True, path="decode")
    # no keys at all
    _check(torch, torch.bfloat16, 2, 3, 0, 8, 2, d, False, (-1, -1), True, path="decode")
    # a narrow window far from the end: most splits of a tile are empty
    _check(torch, torch.bfloat16, 1, 16, 8192, 32, 4, d, False, (100, -600), False, path="decode")
    # large logits
    _check(torch, torch.float16, 1, 1, 4096, 8, 1, d, False, (-1, -1), True, scale=2.0, path="decode")


@pytest.mark.gpu
@pytest.mark.parametrize("splits", [1, 3, 7, 200])
def test_gpu_decode_split_counts(splits, monkeypatch):
    """Any split count gives the same function: 1 (combine only rescales), uneven, more splits than blocks."""
    torch = _gpu()
    from cute_lowering.kernels import fmha_decode

    monkeypatch.setattr(fmha_decode, "choose_splits", lambda *a, **kw: splits)
    _check(torch, torch.bfloat16, 2, 3, 1000, 16, 2, 128, True, (-1, -1), True, path="decode")
    _check(torch, torch.float16, 1, 1, 6000, 8, 8, 64, False, (2000, -1), False, path="decode")


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [4, 6])
def test_gpu_key_warps_ring_depth_keeps_the_bits(stages, monkeypatch):
    """The <= 16-row kernel's ring depth changes when K/V arrive, not the arithmetic: the same bits
    as the default ring (Sq = 1, GQA 8:1, ragged keys, with and without a window and a sink)."""
    torch = _gpu()
    from cute_lowering.kernels import fmha, fmha_decode, ops

    g = torch.Generator(device="cuda").manual_seed(11)
    q = torch.randn(3, 1, 32, 128, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(3, 9000 + 37, 4, 128, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    sink = torch.randn(32, device="cuda", generator=g)
    calls = [dict(), dict(window=(3000, -1), sink=sink), dict(causal=True)]
    ops.clear_launch_cache()
    want = [fmha.attention(q, k, v, path="decode", **kw) for kw in calls]
    monkeypatch.setattr(fmha_decode, "KEY_WARPS_STAGES", stages)
    ops.clear_launch_cache()
    try:
        got = [fmha.attention(q, k, v, path="decode", **kw) for kw in calls]
    finally:
        ops.clear_launch_cache()
    for kw, a, b in zip(calls, want, got):
        assert torch.equal(a, b), f"ring depth {stages} changed the output ({sorted(kw)})"
    _check(torch, torch.bfloat16, 2, 1, 5000 + 3, 32, 4, 128, True, (-1, -1), True, path="decode")


@pytest.mark.gpu
def test_gpu_auto_takes_decode_and_repeats():
    """path="auto" takes the decode path for a decode shape (its launcher is built), and is deterministic."""
    torch = _gpu()
    from cute_lowering.kernels import fmha, ops

    ops.clear_launch_cache()
    err = _check(torch, torch.bfloat16, 4, 1, 8192, 32, 4, 128, False)
    assert any(key[0] == "attention_decode" for key in ops._LAUNCHERS), "auto did not take the decode path"
    assert err <= 1e-2
    g = torch.Generator(device="cuda").manual_seed(5)
    q = torch.randn(2, 16, 32, 128, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(2, 20000, 4, 128, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    first = fmha.attention(q, k, v, causal=True)
    assert torch.equal(first, fmha.attention(q, k, v, causal=True)), "a moving result is a race"
    # NVFP4 output is not on the decode path: auto falls back, bit-identical to quantizing the bf16 output
    from cute_lowering.kernels import nvfp4

    gs = nvfp4.compute_global_scale(v)
    codes, scales, _ = fmha.attention(q, k, v, causal=True, out_format="nvfp4", global_scale=gs)
    assert codes.shape == (2, 16, 32, 64) and scales.shape == (2, 16, 32, 8)
    # path="decode" has no NVFP4 kernel (compile_attention refuses one): since session 18 the NVFP4
    # output of such a call is quantize() of that path's bf16 output (ops: two kernels), the same bits
    out = fmha.attention(q, k, v, path="decode")
    codes, scales, _ = fmha.attention(q, k, v, out_format="nvfp4", global_scale=gs, path="decode")
    want_codes, want_scales, _ = nvfp4.quantize(out.reshape(-1, 128), gs)
    assert torch.equal(codes.reshape(-1, 64), want_codes)
    assert torch.equal(scales.view(torch.uint8).reshape(-1, 8), want_scales.view(torch.uint8))
    with pytest.raises(ValueError, match="no NVFP4 output"):
        fmha.compile_attention("bfloat16", 128, False, (-1, -1), False, "sm_90a", path="decode", out_format="nvfp4")
    assert math.isfinite(float(gs))


@pytest.mark.gpu
def test_gpu_decode_scratch_kept_per_stream(monkeypatch):
    """ops keeps one decode scratch (counters + split partials) per (device, stream): a call that
    grows it, calls of other shapes after it and a call on a second stream give the same bits as
    calls that each take a fresh buffer, and every call leaves the counters zero."""
    torch = _gpu()
    from cute_lowering.kernels import fmha, ops

    g = torch.Generator(device="cuda").manual_seed(11)

    def inputs(b, sq, sk, hq, hkv):
        q = torch.randn(b, sq, hq, 128, device="cuda", generator=g).to(torch.bfloat16)
        k, v = (torch.randn(b, sk, hkv, 128, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
        return q, k, v

    one_launch = inputs(1, 1, 4096, 32, 4)  # 8 packed rows: the kernel with counters
    split_combine = inputs(2, 16, 20000, 32, 4)  # 128 packed rows: split + combine kernels, more partials
    cases = [one_launch, split_combine, one_launch]
    monkeypatch.setattr(ops, "_SCRATCH_MAX_WORDS", -1)  # every call a fresh buffer
    fresh = [fmha.attention(*c, causal=True, path="decode") for c in cases]
    monkeypatch.setattr(ops, "_SCRATCH_MAX_WORDS", 16 << 20)
    ops._SCRATCH.clear()
    kept = [fmha.attention(*c, causal=True, path="decode") for c in cases]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        kept.append(fmha.attention(*one_launch, causal=True, path="decode"))
    torch.cuda.synchronize()
    assert len(ops._SCRATCH) == 2, "one scratch per stream"
    for i, (want, got) in enumerate(zip(fresh + fresh[:1], kept)):
        assert torch.equal(want, got), f"call {i}: the kept scratch changed the result"
    for address, words, _, buffer in ops._SCRATCH.values():
        assert buffer.data_ptr() == address and not buffer[:words].any(), "counters not left zero"
