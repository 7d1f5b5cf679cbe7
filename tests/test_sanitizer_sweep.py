"""bench/sanitizer_sweep.py: how it reads compute-sanitizer's output (CPU), its refusals, and
on a GPU a short racecheck run of the builds that once raced (issue 34).

The log excerpts below are compute-sanitizer 2025.x output as the H200 printed it for this
repository's kernels (kernel names shortened): the driver's cuGetProcAddress notice under
memcheck, and the racecheck report of the dynamic scheduler's old named-barrier hand-over.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import sanitizer_sweep  # noqa: E402

MEMCHECK_NOTICE = """\
========= COMPUTE-SANITIZER
CASE wgmma_d64_tails
========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to cuGetProcAddress_v2.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame:  [0xd4a2] in cydriver.cpython-312-x86_64-linux-gnu.so
=========
DONE wgmma_d64_tails
BUILDS ["('attention', 64)"]
========= ERROR SUMMARY: 1 error
"""

RACECHECK_RACE = """\
========= COMPUTE-SANITIZER
CASE wgmma_d128_causal_gqa
========= Error: Potential RAW hazard detected at __shared__ 0x460 in block (0,0,0) :
=========     Write Thread (0,0,0) at kernel_fmha+0x1db0 in fmha_sm90.py:1507
=========     Read Thread (352,0,0) at kernel_fmha+0xa620 in fmha_sm90.py:1525
=========     Current Value : 6
=========
========= Error: Potential RAW hazard detected at __shared__ 0x461 in block (0,0,0) :
=========     Write Thread (0,0,0) at kernel_fmha+0x1db0 in fmha_sm90.py:1507
=========     Read Thread (352,0,0) at kernel_fmha+0xa620 in fmha_sm90.py:1525
=========     Current Value : 0
=========
========= Error: Race reported between Write access at kernel_fmha+0x1db0 in fmha_sm90.py:1507
=========     and Read access at kernel_fmha+0xa620 in fmha_sm90.py:1525 [2 hazards]
=========
DONE wgmma_d128_causal_gqa
CASE mma_sync_d128_causal_gqa
DONE mma_sync_d128_causal_gqa
BUILDS ["('attention', 128, 'wgmma')", "('attention', 128, 'mma_sync')"]
========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)
"""


def test_driver_notices_are_not_kernel_errors():
    got = sanitizer_sweep.parse_log(MEMCHECK_NOTICE)
    assert got["kernel_errors"] == []
    assert got["api_ignored"] == 1 and got["api_other"] == []
    assert got["summary"] == 1 and got["done"] == ["wgmma_d64_tails"]


def test_another_api_error_is_kept_apart():
    text = MEMCHECK_NOTICE.replace("cuGetProcAddress_v2", "cuLaunchKernel")
    got = sanitizer_sweep.parse_log(text)
    assert got["api_ignored"] == 0 and len(got["api_other"]) == 1 and got["kernel_errors"] == []


def test_race_reports_land_under_their_case():
    got = sanitizer_sweep.parse_log(RACECHECK_RACE)
    assert len(got["kernel_errors"]) == 3
    assert {e["case"] for e in got["kernel_errors"]} == {"wgmma_d128_causal_gqa"}
    assert got["per_case"] == {"wgmma_d128_causal_gqa": {"kernel_errors": 3}}
    assert got["race"] == (3, 3)
    assert "fmha_sm90.py:1507" in got["kernel_errors"][0]["detail"]
    assert got["done"] == ["wgmma_d128_causal_gqa", "mma_sync_d128_causal_gqa"] and len(got["builds"]) == 2


# a worker whose imports failed, as compute-sanitizer prints it (H200, 2026-12-06: the sweep run
# from a shell without the staged PYTHONPATH)
NEVER_STARTED = """========= COMPUTE-SANITIZER
Traceback (most recent call last):
  File "bench/sanitizer_sweep.py", line 60, in <module>
ModuleNotFoundError: No module named 'cute_lowering'
========= Error: Target application terminated before first instrumented API call
"""


def test_a_worker_that_never_reached_cuda_is_no_kernel_error():
    got = sanitizer_sweep.parse_log(NEVER_STARTED)
    assert got["kernel_errors"] == [] and got["per_case"] == {}
    assert got["setup_failed"] and got["done"] == [] and got["started"] == []
    assert not sanitizer_sweep.parse_log(MEMCHECK_NOTICE)["setup_failed"]


def test_a_warm_up_that_cannot_start_stops_the_sweep_before_any_tool(tmp_path, monkeypatch, capsys):
    calls = []

    def shard(tool, names, log, lineinfo, timeout):
        calls.append(tool)
        return 1, NEVER_STARTED.replace("========= ", "").replace("COMPUTE-SANITIZER\n", "")

    monkeypatch.setattr(sanitizer_sweep, "run_shard", shard)
    monkeypatch.setattr(sanitizer_sweep.shutil, "which", lambda name: f"/usr/bin/{name}")
    status = sanitizer_sweep.main(["--out", str(tmp_path / "out"), "--cases", "global_scale,dequantize_bf16", "--jobs", "2"])
    err = capsys.readouterr().err
    assert status == 1 and calls == [None, None]  # the two warm-up shards, no tool after them
    assert "stopped before its cases ran (exit status 1)" in err and "No module named 'cute_lowering'" in err
    assert "not a kernel" in err and not (tmp_path / "out" / "sanitizer.json").exists()


def test_a_warm_up_that_stopped_inside_a_case_goes_on_to_the_tools(tmp_path, monkeypatch, capsys):
    calls = []

    def shard(tool, names, log, lineinfo, timeout):
        calls.append(tool)
        if tool is None:  # the case started, then its process ended (a crash or a hang killed)
            return 124, f"CASE {names[0]}\nTIMEOUT after 1 s\n"
        return 0, "".join(f"CASE {n}\nDONE {n}\n" for n in names) + "========= ERROR SUMMARY: 0 errors\n"

    monkeypatch.setattr(sanitizer_sweep, "run_shard", shard)
    monkeypatch.setattr(sanitizer_sweep.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(sanitizer_sweep.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "NVIDIA H200\n", ""))
    sanitizer_sweep.main(["--out", str(tmp_path / "out"), "--cases", "global_scale", "--jobs", "1", "--tools", "memcheck"])
    assert calls == [None, "memcheck"] and "stopped before" not in capsys.readouterr().err


def test_every_case_names_a_known_kind_and_the_shards_cover_them_once():
    kinds = {case["kind"] for case in sanitizer_sweep.CASES.values()}
    assert kinds == {"attention", "quantize", "dequantize", "global_scale"}
    names = list(sanitizer_sweep.CASES)
    parts = sanitizer_sweep.shards(names, 7)
    assert sorted(n for p in parts for n in p) == sorted(names)
    # the families issue 34 names, each at both head dims where it has them
    for path in ("wgmma", "mma_sync", "decode", "decode_wgmma"):
        for d in (64, 128):
            assert any(n.startswith(f"{path}_d{d}_") for n in names), (path, d)


def _sweep(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "bench", "sanitizer_sweep.py"), *args], capture_output=True, text=True)


def test_unknown_case_or_tool_is_a_usage_error():
    for args in (["--out", "x", "--cases", "nope"], ["--out", "x", "--tools", "memcheck,leakcheck"]):
        got = _sweep(*args)
        assert got.returncode == 2 and "unknown" in got.stderr and "Traceback" not in got.stderr


def test_without_the_sanitizer_nothing_runs(tmp_path, monkeypatch):
    if shutil.which("compute-sanitizer"):
        pytest.skip("compute-sanitizer is installed here")
    got = _sweep("--out", str(tmp_path / "out"), "--cases", "global_scale")
    assert got.returncode == 2 and "nothing run" in got.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.gpu
def test_gpu_racecheck_of_the_builds_that_raced(tmp_path):
    """The D=128 wgmma builds whose hand-overs racecheck reported (the dynamic scheduler's tile
    index; the NVFP4 epilogue's rows to the quantizing warps), and D=64 with several tiles a
    CTA: 0 kernel errors under racecheck."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not installed")
    cases = "wgmma_d128_causal_gqa,wgmma_d128_nvfp4_many_tiles,wgmma_d64_causal_many_tiles"
    got = _sweep("--out", str(tmp_path), "--tools", "racecheck", "--cases", cases, "--jobs", "3")
    assert got.returncode == 0, got.stdout[-4000:] + got.stderr[-2000:]
    assert "racecheck  kernel errors    0" in got.stdout
