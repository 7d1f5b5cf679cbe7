"""The hook on the paths that need a GPU: a direct call of a `@cute.jit` function, and
CuTeDSL's ahead-of-time export (it needs the CUDA runtime). Skipped without CUDA."""

from __future__ import annotations

import os

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass.cute.runtime import from_dlpack

import cute_lowering
import references

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

N = 1024
PER_THREAD = 8


def _launcher():
    @cute.kernel
    def to_e2m1(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        tile = cute.local_tile(src, (PER_THREAD,), (tidx,))
        cute.local_tile(dst, (PER_THREAD,), (tidx,)).store(tile.load().to(cutlass.Float4E2M1FN))

    @cute.jit
    def launch(src: cute.Tensor, raw: cute.Tensor):
        to_e2m1(src, cute.recast_tensor(raw, cutlass.Float4E2M1FN)).launch(grid=(1, 1, 1), block=(N // PER_THREAD, 1, 1))

    return launch


def _inputs():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(N) * 4).astype(np.float32)
    x[:8] = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.0]  # every E2M1 tie, and -0
    x[8:12] = [np.inf, -np.inf, np.nan, 1e30]
    return x


def _codes(raw: "torch.Tensor") -> np.ndarray:
    packed = raw.cpu().numpy()
    return np.stack((packed & 0xF, packed >> 4), axis=1).reshape(-1)


def test_direct_call_of_a_jit_function_runs_with_the_hook():
    if torch.cuda.get_device_capability() >= (10, 0):
        pytest.skip("this target converts to E2M1 in hardware: nothing for the hook to do")
    launch = _launcher()
    x = _inputs()
    src = torch.from_numpy(x).cuda()
    raw = torch.zeros(N // 2, dtype=torch.uint8, device="cuda")
    args = (from_dlpack(src, assumed_align=16), from_dlpack(raw, assumed_align=16))
    for _ in range(2):  # without, with, without, with: neither cache may serve the other variant
        with pytest.raises(Exception, match="e2m1x2"):
            launch(*args)
        with cute_lowering.prelowering():
            launch(*args)
        torch.cuda.synchronize()
        assert cute_lowering.last_report().rewritten == 1
        np.testing.assert_array_equal(_codes(raw), references.encode(x, "f4E2M1FN"))
        raw.zero_()


def test_ahead_of_time_export_carries_the_rewrite(tmp_path):
    src = torch.zeros(N, dtype=torch.float32, device="cuda")
    raw = torch.zeros(N // 2, dtype=torch.uint8, device="cuda")
    with cute_lowering.prelowering():
        compiled = cute.compile(_launcher(), from_dlpack(src, assumed_align=16), from_dlpack(raw, assumed_align=16))
    compiled.export_to_c(str(tmp_path), "e2m1_convert")
    written = sorted(os.listdir(tmp_path))
    assert any(name.endswith(".h") for name in written) and any(name.endswith(".o") for name in written), written
