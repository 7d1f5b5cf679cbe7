"""Exact per-target rules: `auto` compiles FP4/FP8/E8M0 on every target CuTeDSL accepts; unknown targets are errors.

- One real CuTeDSL kernel doing every narrow conversion a kernel author writes
  (`TensorSSA.to`: f32 and bf16 to E2M1, f32 to E4M3/E5M2, f16 to E4M3, f32 to E8M0
  (CuTeDSL's `upward`), and each back to f32) is compiled with `cute_lowering.prelowering()`
  for every target of the installed release's `Arch` enum: each must compile, and the
  hook must rewrite exactly the conversions the table says that (release, target) lacks.
  A target the table marks unusable (listed by the enum, but the release's ptxas rejects
  it: sm_107* in 4.8) must fail to compile even so, or the mark is stale.
- The table is re-measured for a few targets (the exact-suffix ones that used to be
  wrong: sm_100 vs sm_100a, sm_120 vs sm_120a; and sm_89) with the measuring script's
  own kernels, in a worker subprocess: a CuTeDSL that changes what it lowers fails here.
- Unknown targets are rejected by the pass option, `lowering-opt`, `lowering-repro
  --arch`, `auto_pipeline` and the kernels' compile functions, with a located error or
  a clear exception, never a traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import cutlass
import cutlass.cute as cute
import pytest
from cutlass.cute.runtime import make_fake_compact_tensor

import cute_lowering
from cute_lowering.targets import (
    CONVERSIONS,
    UnknownTarget,
    check_target,
    cutedsl_release,
    known_targets,
    lowers_natively,
    native_conversions,
    table_release,
    unusable,
)

ROOT = Path(__file__).resolve().parents[1]
TARGETS = sorted(known_targets())


def all_conversions_kernel():
    """A launcher whose kernel does each narrow conversion of CONVERTED once (8 lanes a thread)."""
    f32 = cutlass.Float32

    @cute.kernel
    def every_conversion(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        x = cute.local_tile(src, (8,), (tidx,)).load()
        xb = x.to(cutlass.BFloat16)
        xh = x.to(cutlass.Float16)
        y = x.to(cutlass.Float4E2M1FN).to(f32)
        y = y + xb.to(cutlass.Float4E2M1FN).to(f32)
        y = y + x.to(cutlass.Float8E4M3FN).to(f32)
        y = y + xh.to(cutlass.Float8E4M3FN).to(f32)
        y = y + x.to(cutlass.Float8E5M2).to(f32)
        y = y + x.to(cutlass.Float8E8M0FNU).to(f32)
        cute.local_tile(dst, (8,), (tidx,)).store(y)

    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor):
        every_conversion(src, dst).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return launch, (make_fake_compact_tensor(f32, (1024,)), make_fake_compact_tensor(f32, (1024,)))


# the kernel's narrow conversion ops, as table keys, one per op (CuTeDSL traces E8M0 truncf `upward`)
CONVERTED = (
    "truncf:f32:f4E2M1FN:vector", "truncf:bf16:f4E2M1FN:vector", "truncf:f32:f8E4M3FN:vector",
    "truncf:f16:f8E4M3FN:vector", "truncf:f32:f8E5M2:vector", "truncf:f32:f8E8M0FNU:vector:upward",
    "extf:f32:f4E2M1FN:vector", "extf:f32:f4E2M1FN:vector", "extf:f32:f8E4M3FN:vector",
    "extf:f32:f8E4M3FN:vector", "extf:f32:f8E5M2:vector", "extf:f32:f8E8M0FNU:vector",
)


def test_the_table_covers_the_installed_release():
    assert table_release() == cutedsl_release(), "this CuTeDSL release was not measured: run python -m cute_lowering.measure_targets"
    assert {"sm_80", "sm_89", "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_120", "sm_120a"} <= set(TARGETS)
    assert set(CONVERTED) <= set(CONVERSIONS)


@pytest.mark.parametrize("arch", TARGETS)
def test_auto_compiles_every_narrow_conversion(arch):
    launch, args = all_conversions_kernel()
    if unusable(arch):  # in the enum, but the release's own ptxas/libNVVM lacks it (sm_107a in 4.8)
        with pytest.raises(Exception, match=r"Unsupported GPU architecture|not defined for option 'gpu-name'|NVVM"):
            with cute_lowering.prelowering():
                cute.compile(launch, *args, options=f"--gpu-arch {arch}")
        return
    with cute_lowering.prelowering():
        cute.compile(launch, *args, options=f"--gpu-arch {arch}")
    report = cute_lowering.last_report()
    native = native_conversions(arch)
    expected = {"rewritten": sum(c not in native for c in CONVERTED if c.startswith("truncf:")),
                "native": sum(c in native for c in CONVERTED if c.startswith("truncf:"))}
    counts = {p.name: p.counts for p in report.passes}
    assert {k: counts["truncf-to-select"][k] for k in expected} == expected, (arch, counts)
    expected = {"rewritten": sum(c not in native for c in CONVERTED if c.startswith("extf:")),
                "native": sum(c in native for c in CONVERTED if c.startswith("extf:"))}
    assert {k: counts["extf-to-select"][k] for k in expected} == expected, (arch, counts)


def test_the_suffix_matters():
    # FP4 and E8M0 converts are arch-specific (`a`) or family (`f`) features; sm_100 lacks them
    for plain, specific in (("sm_100", "sm_100a"), ("sm_120", "sm_120a")):
        assert lowers_natively("truncf", "f4E2M1FN", specific)
        assert not lowers_natively("truncf", "f4E2M1FN", plain)
        assert not lowers_natively("extf", "f8E8M0FNU", plain)
    assert lowers_natively("truncf", "f4E2M1FN", "sm_100f")


REMEASURED = ("sm_89", "sm_100", "sm_100a", "sm_120", "sm_120a")


@pytest.mark.parametrize("arch", REMEASURED)
def test_the_table_matches_a_fresh_measurement(arch):
    from cute_lowering.measure_targets import module

    from cute_lowering.repro.runner import run_jobs

    results = run_jobs([{"ir": module([c]), "arch": arch, "opt_level": 3} for c in CONVERSIONS])
    measured = {c for c, r in zip(CONVERSIONS, results) if r["ok"]}
    assert measured == set(native_conversions(arch))


# --- rejection --------------------------------------------------------------------
def test_check_target_names_what_is_accepted():
    assert check_target("sm_100") == "sm_100"
    for bad in ("sm_999", "sm_99", "sm_100x", "SM_90A", "sm_90a ", "compute_90a", ""):
        with pytest.raises(UnknownTarget, match=r"unknown target .*accepts sm_80, sm_86"):
            check_target(bad)
    with pytest.raises(UnknownTarget):
        cute_lowering.auto_pipeline("sm_999")


def run(*argv: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], input=stdin, capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_lowering_opt_rejects_an_unknown_arch_option():
    ir = "func.func @f(%x: f32) -> f4E2M1FN {\n  %y = arith.truncf %x : f32 to f4E2M1FN\n  return %y : f4E2M1FN\n}\n"
    done = run("cute_lowering.opt", "-", "-p", "builtin.module(truncf-to-select{arch=sm_999})", stdin=ir)
    assert done.returncode == 1, done
    assert "unknown target 'sm_999'" in done.stderr and "Traceback" not in done.stderr
    assert ":1:" in done.stderr  # located in the pipeline text


def test_lowering_repro_rejects_an_unknown_arch():
    done = run("cute_lowering.repro.cli", "run", "fp4-truncf-sm90a", "--arch", "sm_90a,sm_99", "--json")
    assert done.returncode == 1, done
    assert "unknown target 'sm_99'" in done.stderr and "Traceback" not in done.stderr + done.stdout
    assert ":1:8:" in done.stderr  # the column of 'sm_99' in the option's text


def test_kernels_reject_an_unknown_arch_and_take_every_known_one():
    from cute_lowering.kernels import fmha, nvfp4

    with pytest.raises(UnknownTarget, match="unknown target 'sm_999'"):
        nvfp4.compile_quantize("bfloat16", "sm_999")  # was CuTeDSL's bare KeyError: 'sm_999'
    with pytest.raises(UnknownTarget, match="unknown target 'sm_999'"):
        fmha.compile_attention("bfloat16", 64, arch="sm_999")
    nvfp4.compile_quantize("bfloat16", "sm_100")  # issue 12: failed in ptxas (cvt .e2m1x2 on sm_100)
