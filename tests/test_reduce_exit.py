"""`lowering-repro reduce` exits cleanly (issue 12, item 3).

The crash: reading operands of CuTe-typed values let CuTeDSL's value casters wrap
them in `_Tensor`/`_Pointer`, whose constructors build detached ops that use values
of the reducer's module; CuTeDSL's `lru_cache_ir` keeps the wrappers alive, so at
interpreter exit a wrapper's op was destroyed after its module and unlinked itself
from freed memory ("corrupted double-linked list", SIGABRT/SIGSEGV while
"Garbage-collecting"). The whole command crashed in about 1 run in 8 (2 of 24 here);
the step that does it, one pass of the candidate generator over
`reproducers/fp4-truncf-sm90a/reduced-from-kernel.mlir` followed by a normal
interpreter exit, crashed in 20 of 20 runs before the fix (`lowering/mlir.py`,
`plain_values(module)`). Each run here is a forked child of one driver that imported
CuTeDSL once, so 50 runs cost a few seconds of CPU instead of 50 CuTeDSL imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KERNEL_IR = REPO / "reproducers" / "fp4-truncf-sm90a" / "reduced-from-kernel.mlir"
RUNS = 50

DRIVER = r"""
import os, sys
from cute_lowering.repro.reduce import _candidates

text = open(sys.argv[1], encoding="utf-8").read()
failed = []
for _ in range(int(sys.argv[2])):
    pid = os.fork()
    if pid == 0:
        for _candidate in _candidates(text):
            pass
        sys.exit(0)  # the ordinary interpreter exit, where the corruption showed
    _, status = os.waitpid(pid, 0)
    if status != 0:
        failed.append(status)
print("failed:", len(failed), failed[:5])
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_reducer_candidates_exit_cleanly_50_times():
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(KERNEL_IR), str(RUNS)],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "failed: 0 []" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
    assert "corrupted" not in proc.stderr


def test_plain_values_builds_no_cute_wrappers_and_puts_the_casters_back():
    """With the module given, operands of `!cute.memref` type come back as plain values;
    after the block CuTeDSL's own caster is registered again (the hook needs it)."""
    from cute_lowering.mlir import _registered_caster, ir, new_context, parse_module, plain_values

    with new_context() as ctx, ir.Location.unknown():
        module = parse_module(KERNEL_IR.read_text(encoding="utf-8"), ctx)
        kernel = module.body.operations[0].regions[0].blocks[0].operations[0]
        body = kernel.regions[0].blocks[0]
        get_layout = next(op for op in body.operations if op.operation.name == "cute.get_layout")
        with plain_values(module):
            value = get_layout.operation.operands[0]
            inside = type(value)
            typeid = value.type.typeid
            del value
        # Asked, not wrapped: building a wrapper here is the bug this file is about.
        restored = _registered_caster(typeid)
    assert inside.__module__.startswith("cutlass._mlir._mlir_libs"), inside
    assert restored is not None and restored.__name__ == "_Tensor", restored
