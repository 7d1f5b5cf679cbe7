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
import re

import pytest

ACCESS = re.compile(r"\b((?:ld|st)\.(?:shared|global)(?:\.v\d)?\.[busf]\d+)\b")


def _accesses(ptx: str) -> collections.Counter:
    return collections.Counter(ACCESS.findall(ptx))


@pytest.mark.parametrize("path, rows, threads", [("wgmma", 64, 128), ("mma_sync", 128, 128)])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_epilogue_accesses_are_vectorized(tmp_path, path, rows, threads, head_dim):
    from kernels import fmha

    fn = fmha.compile_attention("bfloat16", head_dim, True, (-1, -1), False, "sm_90a", path=path, options=f"--keep-ptx --dump-dir {tmp_path}", out_format="nvfp4")
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
def test_gpu_epilogue_bytes_at_tails_extreme_scales_and_nan(path, dtype, d, causal, shape):
    torch = _cuda()
    from kernels import fmha, fmha_sm90, nvfp4
    from kernels.torch_device import arch_of

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
        out = fmha.attention(q, k, values, causal=causal, path=path)
        # 448*6/amax, then scales that make every E4M3 block scale 448 (saturated) or 0, and ones
        # whose reciprocal leaves the normal range
        for g in (nvfp4.compute_global_scale(out), 1e-30, 1e30, 3e38, 0.37):
            codes, scales, g_used = fmha.attention(q, k, values, causal=causal, path=path, out_format="nvfp4", global_scale=g)
            want_codes, want_scales, _ = nvfp4.quantize(out.reshape(-1, d), g_used)
            assert torch.equal(codes.reshape(-1, d // 2), want_codes), (values is v_nan, g)
            assert torch.equal(scales.view(torch.uint8).reshape(-1, d // 16), want_scales.view(torch.uint8)), (values is v_nan, g)
