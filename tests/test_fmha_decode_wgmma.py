"""The decode_wgmma path: fmha_sm90's packed split-KV kernel (wgmma, GQA-packed rows) + fmha_decode's combine."""

from __future__ import annotations

import dataclasses
import os
import sys

import pytest

from cute_lowering.kernels.fmha_sm90_knobs import DEFAULT_KNOBS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _sm90():
    pytest.importorskip("cutlass")
    from cute_lowering.kernels import fmha_sm90

    return fmha_sm90


# --- CPU: what it compiles to, what it refuses, its split counts --------------------------------------
FEATURES = [  # (head dim, causal, window, sink, G)
    (128, False, (-1, -1), False, 8),
    (128, True, (-1, -1), True, 4),
    (64, False, (100, 37), False, 2),
    (64, True, (70, -1), True, 16),
]


@pytest.mark.parametrize("i", range(len(FEATURES)))
def test_compiles_packed_split(i, tmp_path):
    """sm_90a: a split kernel of wgmmas whose Q arrives by one 5-D TMA box ((G, Sq), D, Hkv, B), and the combine kernel."""
    _sm90()
    from cute_lowering.kernels import fmha

    d, causal, window, sink, group = FEATURES[i]
    fn = fmha.compile_attention("bfloat16", d, causal, window, sink, "sm_90a", path="decode_wgmma", group=group, options=f"--keep-ptx --dump-dir {tmp_path}")
    ptx = fn.__ptx__
    entries = [line for line in ptx.splitlines() if line.startswith(".visible .entry")]
    assert len(entries) == 2 and "PackedSplitSm90" in entries[0] and "combine_kernel" in entries[1], entries
    assert "wgmma.mma_async" in ptx
    assert "cp.async.bulk.tensor.5d" in ptx, "Q is not loaded as one packed TMA box"
    assert "griddepcontrol" not in ptx  # the combine: a plain launch (fmha_decode.COMBINE_PDL off)
    assert "st.local" not in ptx and "ld.local" not in ptx


def test_packed_split_mask_loops_without_a_diagonal(tmp_path):
    """split_mask_loops: without a diagonal the packed split kernel's key loop is compiled without
    the element mask (a new build: fewer instructions, no local memory); with one, mask_loops decides."""
    sm90 = _sm90()
    options = f"--keep-ptx --dump-dir {tmp_path}"
    per_block = sm90.compile_packed_split(
        "bfloat16", 128, 8, False, False, False, "sm_90a", options, knobs=dataclasses.replace(DEFAULT_KNOBS, split_mask_loops=False)
    ).__ptx__  # fmt: skip
    on = dataclasses.replace(DEFAULT_KNOBS, split_mask_loops=True)
    unmasked = sm90.compile_packed_split("bfloat16", 128, 8, False, False, False, "sm_90a", options, knobs=on).__ptx__
    assert "st.local" not in unmasked and "ld.local" not in unmasked
    # the runtime mask test's second softmax is gone: a third fewer exp2s in the PTX
    assert unmasked.count("ex2.approx") < per_block.count("ex2.approx")
    assert sm90.mask_loops(128, False, packed=True, knobs=on) and not sm90.mask_loops(128, False, wide=True, knobs=on)
    assert sm90.mask_loops(128, True, packed=True, knobs=on) == sm90.mask_loops(128, True, knobs=on)


def test_compiles_packed_split_combine_pdl(tmp_path, monkeypatch):
    """fmha_decode.COMBINE_PDL on: the packed split kernel lets the combine be scheduled early and
    the combine waits for its partials (a new build, not the cached plain-launch one)."""
    sm90 = _sm90()
    from cute_lowering.kernels import fmha_decode

    options = f"--keep-ptx --dump-dir {tmp_path}"
    plain = sm90.compile_packed_split("bfloat16", 128, 8, False, False, False, "sm_90a", options).__ptx__
    monkeypatch.setattr(fmha_decode, "COMBINE_PDL", True)
    monkeypatch.setattr(fmha_decode, "PDL_TRIGGER", "start")
    ptx = sm90.compile_packed_split("bfloat16", 128, 8, False, False, False, "sm_90a", options).__ptx__
    assert "griddepcontrol" not in plain
    assert ptx.count("griddepcontrol.launch_dependents") == 1 and ptx.count("griddepcontrol.wait") == 1
    # PDL_TRIGGER "last_load": allowed once the CTA's producer has issued its last K/V load
    split_entry = lambda p: p.split(".entry ")[1]  # (the split kernel's entry comes first)
    start = split_entry(ptx)
    assert start.index("griddepcontrol.launch_dependents") < start.index("cp.async.bulk.tensor")
    monkeypatch.setattr(fmha_decode, "PDL_TRIGGER", "last_load")
    late = split_entry(sm90.compile_packed_split("bfloat16", 128, 8, False, False, False, "sm_90a", options).__ptx__)
    assert late.count("griddepcontrol.launch_dependents") == 1
    assert late.index("griddepcontrol.launch_dependents") > late.rindex("cp.async.bulk.tensor")
    # asked for by the caller (ops, by the split count: SPLIT_COMBINE_PDL_MAX) without COMBINE_PDL
    monkeypatch.setattr(fmha_decode, "COMBINE_PDL", False)
    asked = sm90.compile_packed_split("bfloat16", 128, 8, False, False, False, "sm_90a", options, True).__ptx__
    assert split_entry(asked) == late
    assert [sm90.split_combine_pdl(n) for n in (1, 2, 3, 16)] == [n <= DEFAULT_KNOBS.split_combine_pdl_max for n in (1, 2, 3, 16)]
    never = dataclasses.replace(DEFAULT_KNOBS, split_combine_pdl_max=0)
    assert not any(sm90.split_combine_pdl(n, never) for n in (1, 2, 16))
    monkeypatch.setattr(fmha_decode, "COMBINE_PDL", True)  # (fmha_decode's knob: its module's still)
    assert all(sm90.split_combine_pdl(n, never) for n in (1, 2, 16))
    monkeypatch.setattr(fmha_decode, "PDL_TRIGGER", "end")
    with pytest.raises(ValueError, match="PDL_TRIGGER must be one of"):
        sm90.compile_packed_split("bfloat16", 128, 8, False, False, False, "sm_90a", options)


def test_refusals():
    _sm90()
    from cute_lowering.kernels import fmha

    for arch in ("sm_100a", "sm_80", "sm_90"):
        with pytest.raises(ValueError, match="decode_wgmma path needs"):
            fmha.compile_attention(arch=arch, path="decode_wgmma", group=8)
    with pytest.raises(ValueError, match="needs group="):
        fmha.compile_attention(arch="sm_90a", path="decode_wgmma")
    for group in (1, 3, 6, 256):
        with pytest.raises(ValueError, match="Hq / Hkv in 2, 4"):
            fmha.compile_attention(arch="sm_90a", path="decode_wgmma", group=group)
    with pytest.raises(ValueError, match="no NVFP4 output"):
        fmha.compile_attention(arch="sm_90a", path="decode_wgmma", group=8, out_format="nvfp4")


def test_choose_splits_rules():
    m = _sm90()
    sms = 132
    # <= 16 packed rows: the decode path's one-launch kernel, not this one
    assert m.choose_splits(8, 1, 4096, 32, 4, -1, -1, sms) == 0
    assert m.choose_splits(8, 1, 4096, 32, 4, -1, -1, sms, forced=True) >= 1
    # G that does not divide a tile, or no GQA: never
    assert m.choose_splits(2, 64, 8192, 24, 4, -1, -1, sms, forced=True) == 0
    assert m.choose_splits(2, 64, 8192, 32, 32, -1, -1, sms, forced=True) == 0
    # too few keys (a window counts only what a query can see)
    assert m.choose_splits(2, 64, 512, 32, 4, -1, -1, sms) == 0
    assert m.choose_splits(2, 64, 65536, 32, 4, 300, 0, sms) == 0
    # one split and full 128-row query tiles: the plain kernel; half-empty tiles: packed
    assert m.choose_splits(8, 128, 4096, 32, 4, -1, -1, sms) == 0
    assert m.choose_splits(1, 4096, 4096, 32, 4, -1, -1, sms) == 0
    assert m.choose_splits(16, 64, 8192, 32, 4, -1, -1, sms) == 1
    # a long query that the plain grid leaves short of a wave: 16 tiles x 4 -> 2 splits
    assert m.choose_splits(1, 256, 16384, 32, 4, -1, -1, sms) == 2
    # splits fill one wave: 2 x 4 (batch, kv head) x 1 tile of 128 rows -> 132 // 8 = 16
    assert m.choose_splits(2, 16, 32768, 32, 4, -1, -1, sms) == 16
    # 1024 rows -> 8 tiles x 8 = 64 tiles: 2 splits; 4 x 4 x 4 = 64 tiles: 2
    assert m.choose_splits(2, 128, 32768, 32, 4, -1, -1, sms) == 2
    assert m.choose_splits(4, 64, 8192, 32, 4, -1, -1, sms) == 2
    # each split keeps SPLIT_MIN_BLOCKS key blocks: 1024 keys = 8 blocks -> at most 2 splits
    assert m.choose_splits(1, 16, 1024, 32, 4, -1, -1, sms) == 2
    # more tiles than SMs: one split (forced) or the plain kernel
    assert m.choose_splits(16, 128, 4096, 32, 4, -1, -1, sms, forced=True) == 1
    assert m.choose_splits(16, 128, 4096, 32, 4, -1, -1, sms) == 0


# --- GPU: against the float64 reference ----------------------------------------------------------------
def _gpu():
    from test_fmha import _cuda

    return _cuda()


def _check(torch, *args, **kw):
    from test_fmha import _check as check

    return check(torch, *args, **kw)


SHAPES = [
    # (B, Sq, Sk, Hq, Hkv): packed rows 17..1024, ragged Sq and Sk, G = 2 .. 16
    (2, 16, 4096 + 5, 32, 4),
    (1, 64, 8192 - 3, 32, 4),
    (2, 128, 4096, 32, 4),
    (1, 3, 5000, 32, 2),
    (1, 100, 3000, 16, 8),
    (2, 37, 2048, 16, 1),
]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_decode_wgmma_shapes(shape, causal):
    torch = _gpu()
    b, sq, sk, hq, hkv = shape
    _check(torch, torch.bfloat16, b, sq, sk, hq, hkv, 128, causal, (-1, -1), False, path="decode_wgmma")
    _check(torch, torch.float16, b, sq, sk, hq, hkv, 64, causal, (300, -1) if causal else (-1, 40), True, scale=0.3, path="decode_wgmma")


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_decode_wgmma_edges(d):
    torch = _gpu()
    # Sq > Sk, causal: the first rows see nothing (0, LSE -inf; with a sink LSE = sink)
    _check(torch, torch.bfloat16, 1, 16, 8, 16, 2, d, True, (-1, -1), False, path="decode_wgmma")
    _check(torch, torch.bfloat16, 1, 16, 8, 16, 2, d, True, (-1, -1), True, path="decode_wgmma")
    # no keys at all
    _check(torch, torch.bfloat16, 2, 3, 0, 8, 2, d, False, (-1, -1), True, path="decode_wgmma")
    # a narrow window far from the end: most splits of a tile are empty
    _check(torch, torch.bfloat16, 1, 16, 8192, 32, 4, d, False, (100, -600), False, path="decode_wgmma")
    # large logits
    _check(torch, torch.float16, 1, 4, 4096, 8, 1, d, False, (-1, -1), True, scale=2.0, path="decode_wgmma")
    # one query (8 packed rows: the rest of the tile is past Sq)
    _check(torch, torch.bfloat16, 2, 1, 4096, 32, 4, d, True, (-1, -1), False, path="decode_wgmma")


@pytest.mark.gpu
@pytest.mark.parametrize("splits", [1, 3, 7, 200])
def test_gpu_decode_wgmma_split_counts(splits, monkeypatch):
    """Any split count gives the same function: 1, uneven, more splits than key blocks."""
    torch = _gpu()
    from cute_lowering.kernels import fmha_sm90, ops

    monkeypatch.setattr(fmha_sm90, "choose_splits", lambda *a, **kw: splits)
    monkeypatch.setattr(ops, "_DECODE_PLANS", {})  # (a split count is looked up once per call shape)
    _check(torch, torch.bfloat16, 2, 3, 1000, 16, 2, 128, True, (-1, -1), True, path="decode_wgmma")
    _check(torch, torch.float16, 1, 32, 6000, 8, 4, 64, False, (2000, -1), False, path="decode_wgmma")


@pytest.mark.gpu
@pytest.mark.parametrize("trigger", ["start", "last_load"])
def test_gpu_decode_wgmma_combine_pdl(trigger, monkeypatch):
    """fmha_decode.COMBINE_PDL on, the combine allowed at the split CTAs' start or once their last
    loads are issued (PDL_TRIGGER): the same bits as the plain launch (the combine waits for the
    partials either way), at 4, 16 and 2 splits, called repeatedly; and by default (the PDL
    combine at up to SPLIT_COMBINE_PDL_MAX splits only) the same bits again."""
    torch = _gpu()
    from cute_lowering.kernels import fmha, fmha_decode, fmha_sm90, ops

    for b, sq, sk, hq, hkv, causal in [(8, 16, 4096, 32, 4, False), (2, 16, 32768, 32, 4, False), (4, 64, 8192 - 3, 32, 4, True)]:
        g = torch.Generator(device="cuda").manual_seed(sk)
        q = torch.randn(b, sq, hq, 128, device="cuda", generator=g).to(torch.bfloat16)
        k, v = (torch.randn(b, sk, hkv, 128, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
        monkeypatch.setattr(fmha_decode, "COMBINE_PDL", False)  # (fmha_decode's knob: its module's still)
        ops.clear_launch_cache()
        plain = dataclasses.replace(DEFAULT_KNOBS, split_combine_pdl_max=0)  # (every split count a plain launch)
        want = fmha.attention_with_knobs(q, k, v, causal=causal, return_lse=True, path="decode_wgmma", knobs=plain)
        monkeypatch.undo()
        ops.clear_launch_cache()
        by_default = fmha.attention(q, k, v, causal=causal, return_lse=True)
        assert torch.equal(by_default[0], want[0]) and torch.equal(by_default[1], want[1])
        monkeypatch.setattr(fmha_decode, "COMBINE_PDL", True)
        monkeypatch.setattr(fmha_decode, "PDL_TRIGGER", trigger)
        ops.clear_launch_cache()
        for out, lse in [fmha.attention(q, k, v, causal=causal, return_lse=True, path="decode_wgmma") for _ in range(3)]:
            assert torch.equal(out, want[0]) and torch.equal(lse, want[1]), f"PDL ({trigger}) differs at {(b, sq, sk, hq, hkv, causal)}"
    ops.clear_launch_cache()


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_split_mask_loops_keeps_the_bits(d, monkeypatch):
    """SPLIT_MASK_LOOPS: the loop without the element mask gives the bits of the loop that tests
    each block (only a split's first block can hold the key tail, and it is masked before the
    loop): ragged keys, several split counts, GQA 8:1 and 4:1, Sq 16 and 128; with a diagonal the
    build is the same one."""
    torch = _gpu()
    from cute_lowering.kernels import fmha, fmha_sm90, ops

    g = torch.Generator(device="cuda").manual_seed(d)
    for b, sq, sk, hq, hkv in [(2, 16, 8192 + 77, 32, 4), (1, 128, 5000, 16, 4), (3, 16, 1100, 8, 1)]:
        q = torch.randn(b, sq, hq, d, device="cuda", generator=g).to(torch.bfloat16)
        k, v = (torch.randn(b, sk, hkv, d, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
        for splits in (1, 3, 16):
            monkeypatch.setattr(fmha_sm90, "choose_splits", lambda *a, splits=splits, **kw: splits)
            got = {}
            ops.clear_launch_cache()  # (choose_splits stubbed: its plans are stale)
            for flag in (False, True):
                knobs = dataclasses.replace(DEFAULT_KNOBS, split_mask_loops=flag)
                got[flag] = fmha.attention_with_knobs(q, k, v, return_lse=True, path="decode_wgmma", knobs=knobs)
            assert torch.equal(got[False][0], got[True][0]) and torch.equal(got[False][1], got[True][1]), (b, sq, sk, hq, hkv, splits)
    ops.clear_launch_cache()
    _check(torch, torch.bfloat16, 2, 16, 4096 + 5, 32, 4, d, False, (-1, -1), False, path="decode_wgmma")


@pytest.mark.gpu
def test_gpu_auto_takes_decode_wgmma_and_repeats():
    """path="auto" takes the packed split-KV kernel for a short-query GQA shape on sm_90a, deterministically."""
    torch = _gpu()
    from cute_lowering.kernels import fmha, ops
    from cute_lowering.kernels.torch_device import arch_of

    if arch_of(torch.device("cuda")) != "sm_90a":
        pytest.skip("the decode_wgmma path is sm_90a's")
    ops.clear_launch_cache()
    err = _check(torch, torch.bfloat16, 2, 64, 8192, 32, 4, 128, True)
    assert any(key[0] == "attention_decode" and key[7] == "wgmma" for key in ops._LAUNCHERS), "auto did not take decode_wgmma"
    assert err <= 1e-2
    g = torch.Generator(device="cuda").manual_seed(3)
    q = torch.randn(2, 128, 32, 128, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(2, 20000, 4, 128, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    first = fmha.attention(q, k, v, causal=True)
    assert torch.equal(first, fmha.attention(q, k, v, causal=True)), "a moving result is a race"
    with pytest.raises(ValueError, match="Hq / Hkv in 2, 4"):
        fmha.attention(q[:, :, :24].contiguous(), k, v, path="decode_wgmma")
