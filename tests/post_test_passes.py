"""Post-stage passes for the tests only: they change the binary visibly (or fail), so that the
stage's plumbing (split, cache keys, reports, errors) can be checked on any kernel.
Importing this module registers them (in this process only)."""

from __future__ import annotations

from collections import Counter

from cute_lowering.mlir import create_op, ir
from cute_lowering.registry import get_pass, register_pass

MARK = "membar.cta;"  # in the SASS: MEMBAR; harmless, never emitted by the kernels tested


class _Base:
    statistics = {"rewritten": "kernels changed"}

    def __init__(self, options, sink):
        self.options, self.sink = options, sink
        self.counts = Counter({"rewritten": 0})


def _kernels(root):
    """The `llvm.func`s of the module's `gpu.module`s that are kernels (`gpu.kernel`)."""
    found = []

    def walk(op):
        if op.name == "llvm.func" and "gpu.kernel" in op.attributes:
            found.append(op)
            return
        for region in op.regions:
            for block in region:
                for inner in block:
                    walk(inner.operation)

    walk(root)
    return found


if get_pass("test-post-membar") is None:

    @register_pass("test-post-membar", stage="post")
    class TestPostMembar(_Base):
        """Put a `membar.cta;` at the entry of every kernel (tests only)."""

        def run(self, root):
            for kernel in _kernels(root):
                entry = kernel.regions[0].blocks[0]
                with ir.InsertionPoint.at_block_begin(entry), kernel.location:
                    attributes = {
                        "asm_string": ir.StringAttr.get(MARK),
                        "constraints": ir.StringAttr.get(""),
                        "has_side_effects": ir.UnitAttr.get(),
                    }
                    create_op("llvm.inline_asm", [], [], attributes)
                self.counts["rewritten"] += 1

    @register_pass("test-post-fail", stage="post")
    class TestPostFail(_Base):
        """Fail with a Python error (tests only): how a bug in a post pass is reported."""

        def run(self, root):
            raise RuntimeError("this pass always fails")
