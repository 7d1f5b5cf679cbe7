"""wgmma-desc-hoist only moves ops: on a real lowered FMHA module the same ops (by name, operands'
definitions and attributes) come out, in another order, and the module verifies (dominance
included). Its SASS effect is in bench/RESULTS.md ("A post-lowering stage")."""

from __future__ import annotations

import gzip
import os
from collections import Counter

import cutlass  # noqa: F401  (registers the dialects)

from cute_lowering import run_pipeline
from cute_lowering.mlir import new_context, parse_module

INPUT = os.path.join(os.path.dirname(__file__), "..", "testcases", "Inputs", "fmha128-sm90a.post.mlir.gz")


def _ops(module) -> tuple[Counter, dict]:
    """Each op's (name, attributes, its operands' defining ops' names), counted; and each op's block."""
    found, blocks = Counter(), {}

    def walk(op):
        for region in op.regions:
            for block in region:
                for inner in block:
                    o = inner.operation
                    operands = tuple(
                        v.owner.name if hasattr(v.owner, "name") else "block-argument" for v in o.operands
                    )
                    attributes = "" if o.name == "llvm.func" else str(sorted(_attributes(o)))
                    found[(o.name, attributes, operands)] += 1
                    blocks[o] = block
                    walk(o)

    walk(module.operation)
    return found, blocks


def _attributes(op) -> list[tuple[str, str]]:
    found = []
    for i in range(len(op.attributes)):
        named = op.attributes[i]  # a NamedAttribute by position (iteration yields names on some releases)
        found.append((named.name, str(named.attr)))
    return found


def test_the_pass_moves_ops_and_changes_nothing_else():
    with open(INPUT, "rb") as f:
        text = gzip.decompress(f.read()).decode()
    with new_context() as context:
        before, _ = _ops(parse_module(text, context))
        module = parse_module(text, context)
        result = run_pipeline(module, "builtin.module(wgmma-desc-hoist)")
        assert module.operation.verify()
        after, _ = _ops(module)
        counts = result.counts("wgmma-desc-hoist")
        assert counts["moved"] > 0 and counts["descriptors"] == 48
        assert after == before  # the same ops with the same inputs: only their places changed
        assert str(module) != text
