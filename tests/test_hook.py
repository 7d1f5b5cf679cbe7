"""The pre-lowering hook inside real `cute.compile` calls (no GPU: compiles only)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import cutlass.cute as cute
import pytest

import cute_lowering
from cute_kernels import CASES as PTX_CASES
from libnvvm_wording import libnvvm_error
from cute_lowering.cutedsl import CompileFailure, compile_ir, trace_ir
from narrow_float_kernels import CASES as NARROW_CASES

TESTS = os.path.dirname(__file__)

# ptxas words it differently in CuTeDSL's CUDA 12 and CUDA 13 library wheels
E2M1_PTXAS_ERROR = r"(Instruction 'cvt with .e2m1x2'|Feature 'cvt.e2m1x2.f32') not supported"

# The four CuTeDSL 4.8.1 failures of the facts sheet: (kernel, archs it fails on, error text)
FAILURES = {
    "f32_to_f4E2M1FN": (NARROW_CASES, ("sm_90a",), E2M1_PTXAS_ERROR),
    "f4E2M1FN_to_f32": (NARROW_CASES, ("sm_90a",), "unsupported operation"),
    "f32_to_f8E8M0FNU": (NARROW_CASES, ("sm_90a",), "unsupported operation"),
    "inline_ptx_constant": (PTX_CASES, ("sm_90a", "sm_100a"), "constraint 'n' expects an integer constant"),
}


def compile_case(cases, name, arch):
    entry = cases[name]
    launcher, arguments = (entry[2], entry[3]) if cases is NARROW_CASES else entry
    return cute.compile(launcher, *arguments(), options=f"--gpu-arch {arch}")


@pytest.fixture(autouse=True)
def no_process_wide_hook():
    cute_lowering.uninstall()
    yield
    cute_lowering.uninstall()


@pytest.mark.parametrize(
    "name, arch", [(name, arch) for name, (_, archs, _) in FAILURES.items() for arch in archs]
)
def test_recorded_failures_compile_with_the_hook(name, arch):
    cases, _, error = FAILURES[name]
    with pytest.raises(Exception, match=libnvvm_error(error)):
        compile_case(cases, name, arch)
    with cute_lowering.prelowering():
        compile_case(cases, name, arch)
    report = cute_lowering.last_report()
    assert report.arch == arch and report.rewritten == 1, report.summary()


def test_toggling_the_hook_recompiles_both_ways():
    # If either cache served the other variant, one of these would not fail/succeed.
    for _ in range(2):
        with pytest.raises(Exception, match=libnvvm_error(E2M1_PTXAS_ERROR)):
            compile_case(NARROW_CASES, "f32_to_f4E2M1FN", "sm_90a")
        with cute_lowering.prelowering():
            compile_case(NARROW_CASES, "f32_to_f4E2M1FN", "sm_90a")


def test_the_compiled_ir_is_the_rewritten_one(monkeypatch):
    from cutlass.base_dsl.compiler import Compiler

    compiled = []
    original = Compiler.compile

    def spy(self, module, pipeline, *args, **kwargs):
        compiled.append(str(module))
        return original(self, module, pipeline, *args, **kwargs)

    monkeypatch.setattr(Compiler, "compile", spy)
    floor_case = "floor_to_int32"
    with cute_lowering.prelowering("builtin.module(fptosi-to-ptx)"):
        compile_case(PTX_CASES, floor_case, "sm_90a")
    compile_case(PTX_CASES, floor_case, "sm_90a")
    with cute_lowering.prelowering("builtin.module(fptosi-to-ptx)"):
        compile_case(PTX_CASES, floor_case, "sm_90a")
    # cute.compile compiles each time; each compile gets the IR of its own hook state
    assert len(compiled) == 3
    for text, hooked in zip(compiled, (True, False, True)):
        assert ("cvt.rmi.s32.f32" in text) == hooked
        assert ("math.floor" in text) == (not hooked)


def test_disk_cache_never_serves_the_other_variant(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        import cutlass.cute as cute
        import cute_lowering
        from narrow_float_kernels import CASES
        _, _, launcher, arguments = CASES["f32_to_f4E2M1FN"]
        if sys.argv[1] == "hook":
            cute_lowering.install()
        try:
            cute.compile(launcher, *arguments(), options="--gpu-arch sm_90a")
            print("compiled")
        except Exception as e:
            print("failed", type(e).__name__)
        """
    )
    path = tmp_path / "compile.py"
    path.write_text(script)
    env = dict(os.environ, CUTE_DSL_CACHE_DIR=str(tmp_path / "cache"))

    def run(mode):
        out = subprocess.run([sys.executable, str(path), mode], env=env, capture_output=True, text=True, timeout=300)
        return out.stdout.strip().splitlines()[-1]

    assert run("hook") == "compiled"
    assert run("plain").startswith("failed")
    assert run("hook") == "compiled"


def test_auto_pipeline_follows_the_arch():
    with cute_lowering.prelowering():
        compile_case(NARROW_CASES, "f32_to_f4E2M1FN", "sm_100a")
    report = cute_lowering.last_report()
    assert report.pipeline == cute_lowering.auto_pipeline("sm_100a")
    counts = {p.name: p.counts for p in report.passes}
    assert counts["truncf-to-select"]["native"] == 1 and report.rewritten == 0


def test_install_uninstall_and_decorator():
    cute_lowering.install()
    compile_case(NARROW_CASES, "f32_to_f4E2M1FN", "sm_90a")
    cute_lowering.uninstall()
    with pytest.raises(Exception):
        compile_case(NARROW_CASES, "f32_to_f4E2M1FN", "sm_90a")

    @cute_lowering.prelowering()
    def build():
        return compile_case(NARROW_CASES, "f32_to_f4E2M1FN", "sm_90a")

    build()


def test_innermost_pipeline_wins():
    with cute_lowering.prelowering("builtin.module(fptosi-to-ptx)"):
        with cute_lowering.prelowering("builtin.module(bitcast-to-ptx)"):
            compile_case(PTX_CASES, "to_int32", "sm_90a")
        assert cute_lowering.last_report().pipeline == "builtin.module(bitcast-to-ptx)"
        compile_case(PTX_CASES, "to_int32", "sm_90a")
        assert cute_lowering.last_report().pipeline == "builtin.module(fptosi-to-ptx)"


def test_recorded_reports_sees_every_compile_after_256_are_kept(monkeypatch):
    """A process that compiled 256 kernels keeps 256 reports: counting reports() before and after
    then sees nothing new (the GPU suite's direct-call test failed so); recorded_reports does not."""
    from cute_lowering import hook

    full = [hook.PreloweringReport(function=f"old{i}", arch="sm_90a", pipeline="builtin.module()") for i in range(256)]
    monkeypatch.setattr(hook, "_reports", full)
    before = len(cute_lowering.reports())
    with cute_lowering.recorded_reports() as outer:
        with cute_lowering.recorded_reports() as inner:
            with cute_lowering.prelowering("builtin.module(fptosi-to-ptx)"):
                compile_case(PTX_CASES, "to_int32", "sm_90a")
        with cute_lowering.prelowering("builtin.module(bitcast-to-ptx)"):
            compile_case(PTX_CASES, "to_int32", "sm_90a")
    assert len(cute_lowering.reports()) == before == 256  # the kept list did not grow
    assert [r.pipeline for r in inner] == ["builtin.module(fptosi-to-ptx)"]
    assert [r.pipeline for r in outer] == ["builtin.module(fptosi-to-ptx)", "builtin.module(bitcast-to-ptx)"]
    assert outer[-1] is cute_lowering.last_report()


def test_a_bad_pipeline_is_rejected_before_compiling():
    with pytest.raises(cute_lowering.LoweringError, match="no-such-pass"):
        cute_lowering.prelowering("builtin.module(no-such-pass)")
    with pytest.raises(cute_lowering.LoweringError, match="no-such-pass"):
        cute_lowering.install("builtin.module(no-such-pass)")


def test_a_failing_pass_names_itself_and_cutedsl_recovers():
    from cute_lowering.registry import get_pass, register_pass
    from cute_lowering.rewriting import RewritePass

    if get_pass("test-hook-raises") is None:

        @register_pass("test-hook-raises")
        class _Raises(RewritePass):
            """Test only: fails on every fptosi."""

            roots = ("arith.fptosi",)

            def match(self, op):
                raise RuntimeError("deliberate")

    with cute_lowering.prelowering("builtin.module(test-hook-raises)"):
        with pytest.raises(Exception) as failure:
            compile_case(PTX_CASES, "to_int32", "sm_90a")
    chain, cause = [], failure.value
    while cause is not None:
        chain.append(str(cause))
        cause = cause.__cause__
    text = "\n".join(chain)
    assert "internal error in pass 'test-hook-raises': RuntimeError: deliberate" in text
    assert "cute_kernels.py" in text  # the op's Python source location
    compile_case(PTX_CASES, "to_int32", "sm_90a")  # the next compile is unaffected


def test_dump_writes_ir_before_and_after(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTE_LOWERING_DUMP", str(tmp_path))
    with cute_lowering.prelowering():
        compile_case(NARROW_CASES, "f32_to_f4E2M1FN", "sm_90a")
    before = [p for p in tmp_path.iterdir() if p.name.endswith(".sm_90a.before.mlir")]
    after = [p for p in tmp_path.iterdir() if p.name.endswith(".sm_90a.after.mlir")]
    assert len(before) == 1 and len(after) == 1
    assert "arith.truncf" in before[0].read_text() and "f4E2M1FN" in before[0].read_text()
    assert "arith.truncf" not in after[0].read_text()


def test_run_wrapper_hooks_an_unmodified_script(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {TESTS!r})
            import cutlass.cute as cute
            import cute_lowering
            from narrow_float_kernels import CASES
            _, _, launcher, arguments = CASES["f32_to_f4E2M1FN"]
            cute.compile(launcher, *arguments(), options="--gpu-arch sm_90a")
            print("compiled;", cute_lowering.last_report().pipeline)
            """
        )
    )
    env = dict(os.environ)
    env.pop("CUTE_LOWERING_PIPELINE", None)
    out = subprocess.run([sys.executable, "-m", "cute_lowering.run", str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "compiled; " + cute_lowering.auto_pipeline("sm_90a") in out.stdout
    env["CUTE_LOWERING_PIPELINE"] = "builtin.module(fptosi-to-ptx{emit=sass})"
    bad = subprocess.run([sys.executable, "-m", "cute_lowering.run", str(script)], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid value 'sass'" in bad.stderr and "Traceback" not in bad.stderr


def test_without_the_hook_compile_ir_still_fails():
    # The reproducer the hook works around, through the pipeline string alone.
    with pytest.raises(CompileFailure, match=libnvvm_error("unsupported operation")):
        _, _, launcher, arguments = NARROW_CASES["f4E2M1FN_to_f32"]
        compile_ir(trace_ir(launcher, *arguments()), "sm_90a")
