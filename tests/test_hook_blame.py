"""The hook must not change who is blamed for a failed compile.

A user's kernel that traces to invalid IR is CuTeDSL's to report ("IR verification
failed", with the source location); the hook used to verify it first, so CuTeDSL
wrapped our error as "Trace finalize hook failed ... a bug in the DSL, not a mistake
in your kernel". A failure of our own passes on valid IR must say it is ours.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import cute_lowering
from cute_lowering.registry import get_pass
from cute_lowering.targets import cutedsl_release


# A kernel a user could write: a binding-level arith.addf of an f32 and an f16, which
# the bindings build without complaint and MLIR's verifier rejects.
_COMPILE_BOTH_WAYS = textwrap.dedent(
    """
    import json, sys
    import cutlass, cutlass.cute as cute
    from cutlass._mlir.dialects import arith
    from cutlass.cute.runtime import make_fake_compact_tensor
    import cute_lowering

    @cute.kernel
    def _mixed_add(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        x = src[tidx]
        h = cutlass.Float16(x)
        dst[tidx] = cutlass.Float32(arith.addf(x.ir_value(), h.ir_value()))

    @cute.jit
    def mixed_add(src: cute.Tensor, dst: cute.Tensor):
        _mixed_add(src, dst).launch(grid=(1, 1, 1), block=(128, 1, 1))

    def error():
        args = [make_fake_compact_tensor(cutlass.Float32, (128,)) for _ in range(2)]
        try:
            cute.compile(mixed_add, *args, options="--gpu-arch sm_90a")
        except Exception as e:
            return type(e).__name__, " ".join(str(e).split())  # CuTeDSL wraps its lines
        return None

    without = error()
    with cute_lowering.prelowering():
        with_hook = error()
    report = cute_lowering.last_report()
    print(json.dumps({"without": without, "with": with_hook,
                      "remarks": [r.message for r in report.remarks] if report else None}))
    """
)


@pytest.mark.parametrize("lineinfo", ["0", "1"])
def test_invalid_user_ir_is_blamed_as_without_the_hook(lineinfo, tmp_path):
    script = tmp_path / "user_kernel.py"
    script.write_text(_COMPILE_BOTH_WAYS)
    env = dict(os.environ, CUTE_DSL_LINEINFO=lineinfo)
    env.pop("CUTE_LOWERING_PIPELINE", None)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    without, with_hook = seen["without"], seen["with"]
    # CuTeDSL's own wording: "IR verification failed" from 4.7; 4.6.2 says "ICE IR
    # Verification Failed" and blames itself ("a bug in the DSL") even without the hook.
    assert without is not None and "ir verification failed" in without[1].lower(), without
    assert "requires the same type for all operands" in without[1]
    # The same exception, word for word: same blame, same location (with line info on,
    # CuTeDSL points at the kernel's file and line).
    assert with_hook == without
    assert "Trace finalize hook failed" not in with_hook[1]
    if lineinfo == "1" and cutedsl_release().startswith("4.6."):  # 4.6.2: file and line only
        assert f'("{script}":' in with_hook[1], with_hook[1]
    elif lineinfo == "1":  # CuTeDSL's location: the user's file and kernel
        assert f"--> {script}:" in with_hook[1] and "_mixed_add" in with_hook[1], with_hook[1]
    assert seen["remarks"] == ["input IR does not verify: left to CuTeDSL's verifier, no pass ran"]


def test_a_failure_of_our_passes_says_it_is_ours(monkeypatch):
    import cutlass.cute as cute
    from narrow_float_kernels import CASES

    def broken(self, op):
        raise RuntimeError("simulated bug in a pass")

    monkeypatch.setattr(get_pass("truncf-to-select").cls, "run", broken)
    _, _, launcher, arguments = CASES["f32_to_f4E2M1FN"][:4]
    with cute_lowering.prelowering(), pytest.raises(Exception) as caught:
        cute.compile(launcher, *arguments(), options="--gpu-arch sm_90a")
    text = " ".join(str(caught.value).split())  # CuTeDSL wraps its lines
    assert "a bug in cute-lowering" in text and "not in your kernel nor in CuTeDSL" in text, text
    assert "internal error in pass 'truncf-to-select': RuntimeError: simulated bug in a pass" in text, text
    assert "CUTE_LOWERING_DUMP=<dir>" in text
