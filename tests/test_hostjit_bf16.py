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


def test_modules_without_bf16_keep_their_opt_level():
    from lowering.hostjit import host_conversion

    assert host_conversion("f32", "f8E4M3FN", "builtin.module(truncf-to-select)").opt_level == 3
