"""Our host JIT survives bf16 arithmetic feeding a bf16 compare (CuTeDSL 4.8.1's LLVM aborts).

The LLVM bundled with CuTeDSL 4.8.1, JIT-compiling for an x86-64 CPU with AVX512-BF16,
aborts the process (`LLVM ERROR:  Error: unsupported operation`) at -O1 and above on
this pattern (reproducers/host-bf16-add-compare-avx512bf16). lowering/hostjit.py
compiles any module holding bf16 at -O0. Each check runs in a subprocess: the abort
would kill pytest itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_RUN = textwrap.dedent(
    """
    import ml_dtypes, numpy as np
    from lowering.hostjit import compile_function

    TYPE = {ty!r}
    text = '''func.func @convert(%x: TYPE) -> OUT {{
      %m1 = arith.constant dense<-1.0> : TYPE
      %zero = arith.constant dense<0> : OUT
      %minus = arith.constant dense<-1> : OUT
      %a = arith.addf %x, %x : TYPE
      %c = arith.cmpf ogt, %a, %m1 : TYPE
      %r = arith.select %c, %zero, %minus : SELECT
      return %r : OUT
    }}'''
    out, cmp = ({out!r}, {cmp!r})
    select = f"{{cmp}}, {{out}}" if cmp else out
    text = text.replace("SELECT", select).replace("OUT", out).replace("TYPE", TYPE)
    if "vector" not in TYPE:
        text = text.replace("dense<-1.0>", "-1.0").replace("dense<0>", "0").replace("dense<-1>", "-1")
    kernel = compile_function(text, TYPE, out, forbid=None)  # asks for -O3
    bits = np.arange(1 << 16, dtype=np.uint16)
    got = kernel(bits).astype(np.uint16)
    x = bits.view(ml_dtypes.bfloat16).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        doubled = (x + x).astype(ml_dtypes.bfloat16).astype(np.float32)  # exact, or inf
        expected = np.where(doubled > -1.0, 0, 0xFFFF).astype(np.uint16)
    assert np.array_equal(got, expected), int((got != expected).sum())
    print("opt_level", kernel.opt_level)
    """
)


def _run(ty: str, out: str, cmp: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT)
    code = _RUN.format(ty=ty, out=out, cmp=cmp)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def test_bf16_add_feeding_compare_runs_and_is_exact():
    run = _run("bf16", "i16", "")
    assert run.returncode == 0, f"status {run.returncode}: {run.stderr[-2000:]}"
    assert "opt_level 0" in run.stdout


def test_bf16_vector_add_feeding_compare_runs_and_is_exact():
    run = _run("vector<8xbf16>", "vector<8xi16>", "vector<8xi1>")
    assert run.returncode == 0, f"status {run.returncode}: {run.stderr[-2000:]}"
    assert "opt_level 0" in run.stdout


_WIDENED = textwrap.dedent(
    """
    from lowering.hostjit import compile_function
    text = '''func.func @convert(%x: bf16) -> i16 {
      %m1 = arith.constant -1.0 : f32
      %zero = arith.constant 0 : i16
      %minus = arith.constant -1 : i16
      %w = arith.extf %x : bf16 to f32
      %s = arith.addf %w, %w : f32
      %a = arith.truncf %s : f32 to bf16
      %aw = arith.extf %a : bf16 to f32
      %c = arith.cmpf ogt, %aw, %m1 : f32
      %r = arith.select %c, %zero, %minus : i16
      return %r : i16
    }'''
    kernel = compile_function(text, "bf16", "i16", forbid=None)
    print("opt_level", kernel.opt_level)
    """
)


def test_bf16_widened_to_f32_by_hand_still_runs():
    """The same computation written in f32 between bf16 conversions: at -O2 LLVM's
    InstCombine narrows it back to bf16 and the abort returns, so it runs at -O0 too."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    run = subprocess.run([sys.executable, "-c", _WIDENED], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, f"status {run.returncode}: {run.stderr[-2000:]}"
    assert "opt_level 0" in run.stdout


def test_modules_without_bf16_arithmetic_keep_their_opt_level():
    from lowering.hostjit import host_conversion

    assert host_conversion("f32", "f8E4M3FN", "builtin.module(truncf-to-select)").opt_level == 3
    # Conversions to bf16 alone keep it: at -O0 the host f32 -> bf16 truncation flushes f32
    # denormals (2^-127 -> 0x0000), and -O1+ constant folding gets E8M0 code 0 -> 0x0040 right.
    assert host_conversion("f8E8M0FNU", "bf16", "builtin.module(extf-to-select)").opt_level == 3


_CUTEDSL_HOST_PATH = textwrap.dedent(
    """
    import os
    os.environ["CUTE_DSL_ARCH"] = "sm_90a"
    import cutlass, cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor

    @cute.kernel
    def _store(dst: cute.Tensor, v: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        dst[tidx] = v

    @cute.jit
    def host_loop(dst: cute.Tensor, n: cutlass.Int32, x: cutlass.BFloat16):
        acc = x
        flag = cutlass.Int32(0)
        for i in range(n):  # host code: bf16 add feeding a bf16 compare in a dynamic loop
            a = acc + acc
            if a > cutlass.BFloat16(-1.0):
                flag = flag + 1
            acc = a * cutlass.BFloat16(0.5)
        _store(dst, flag).launch(grid=(1, 1, 1), block=(32, 1, 1))

    compiled = cute.compile(host_loop, make_fake_compact_tensor(cutlass.Int32, (32,)), cutlass.Int32(4),
                            cutlass.BFloat16(1.0))
    compiled.engine.lookup(compiled.function_name)  # the host JIT (opt level 2) compiles here
    print("host entry compiled")
    """
)


def test_cutedsl_own_host_path_does_not_reach_the_abort(tmp_path):
    """What the reproducer's case.json says of CuTeDSL's paths: its @cute.jit host code with
    the same pattern is JIT-compiled at its opt level 2 without the abort. If a CuTeDSL
    release starts aborting here, host code of kernels is hit too: see the reproducer."""
    script = tmp_path / "host_loop.py"  # CuTeDSL reads the function's source from its file
    script.write_text(_CUTEDSL_HOST_PATH)
    env = dict(os.environ, PYTHONPATH=ROOT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0 and "host entry compiled" in run.stdout, f"status {run.returncode}: {run.stderr[-2000:]}"
