"""The uniformity analysis computes, for check-collectives, only the facts the check can read
(`Uniformity(func, watch_names=..., watch_filter=...)`, as check-collectives asks: the backward slice of the watched ops' integer
operands and of the conditions they run under). These tests hold it to the full analysis
(`watch=` a predicate: every op evaluated, every region walked) on the same IR: the same
watched ops reached, under the same conditions (text, level, the threads that pass), and
the same constants read off the watched ops' integer operands.

The IR: every kernel of tests/collective_kernels.py as CuTeDSL traces it (shared with
test_check_collectives.py's cache), and every module of testcases/check-collectives.mlir.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from collective_kernels import CASES
from cute_lowering.analysis.uniformity import Uniformity, gpu_functions
from cute_lowering.mlir import inert_values, ir, new_context, parse_module
from cute_lowering.passes.check_collectives import WATCHED, _is_checked
from test_check_collectives import traced_ir

LIT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testcases", "check-collectives.mlir")


def _lit_modules() -> list[str]:
    with open(LIT, encoding="utf-8") as f:
        return f.read().split("// -----")


def _condition(c) -> tuple:
    masks = None if c.masks is None else tuple(np.asarray(m).tobytes() for m in c.masks)
    return (c.op.name, c.text, c.level, c.data, c.split, masks)


def _what_the_check_reads(analysis: Uniformity) -> list:
    reads = []
    for r in analysis.reached:
        integers = [v for v in r.op.operands if ir.IntegerType.isinstance(v.type) or ir.IndexType.isinstance(v.type)]
        reads.append((r.op.name, str(r.op.location), tuple(_condition(c) for c in r.conditions),
                      tuple(analysis.known_int(v) for v in integers)))  # fmt: skip
    return reads


def _assert_slice_matches_full(text: str) -> int:
    with new_context() as context, inert_values():
        module = parse_module(text, context)
        functions = list(gpu_functions(module.operation))
        for func in functions:
            full = Uniformity(func, watch=lambda op: op.name in WATCHED and _is_checked(op))
            sliced = Uniformity(func, watch_names=WATCHED, watch_filter=_is_checked)
            assert sliced._needed is not None, "the sliced analysis evaluated every op"
            assert _what_the_check_reads(sliced) == _what_the_check_reads(full)
        return len(functions)


@pytest.mark.parametrize("name", sorted(CASES))
def test_slice_reads_what_the_full_analysis_reads_on_the_corpus(name):
    assert _assert_slice_matches_full(traced_ir(name)) >= 1


@pytest.mark.parametrize("index", range(len(_lit_modules())))
def test_slice_reads_what_the_full_analysis_reads_on_the_lit_cases(index):
    assert _assert_slice_matches_full(_lit_modules()[index]) >= 1


# A loop carrying a lane value that never changes (`l`), and an unrelated chain `a <- tid, b <- a,
# ... e <- d` that needs more fixpoint rounds than the analysis allows. The full analysis gives
# up on the whole loop (every carried value per-thread, so `l < 16` only "may diverge"); the
# sliced one never evaluates the chain (no check reads it) and keeps `l` exact: the shuffle
# under `l < 16` is reached by lanes 0-15 of every warp, the planted bug it is.
UNSETTLED_CHAIN = """
gpu.module @kernels {
  gpu.func @k(%n: index) kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c32 = arith.constant 32 : i32
    %lane = arith.remui %tid, %c32 : i32
    %c0 = arith.constant 0 : i32
    %c16 = arith.constant 16 : i32
    %m = arith.constant -1 : i32
    %f = arith.constant 1.0 : f32
    %i0 = arith.constant 0 : index
    %i1 = arith.constant 1 : index
    %r:6 = scf.for %i = %i0 to %n step %i1 iter_args(%l = %lane, %a = %c0, %b = %c0, %c = %c0, %d = %c0, %e = %c0)
        -> (i32, i32, i32, i32, i32, i32) {
      %lt = arith.cmpi slt, %l, %c16 : i32
      scf.if %lt {
        %s = nvvm.shfl.sync bfly %m, %f, %c16, %c32 : f32 -> f32
      }
      scf.yield %l, %tid, %a, %b, %c, %d : i32, i32, i32, i32, i32, i32
    }
    gpu.return
  }
}
"""


def test_an_unread_carried_value_that_does_not_settle_leaves_the_read_ones_exact():
    from cute_lowering.passes.check_collectives import check_collectives

    with new_context() as context:
        diagnostics = check_collectives(parse_module(UNSETTLED_CHAIN, context))
    errors = [d for d in diagnostics if d.severity == "error"]
    assert len(errors) == 1 and "nvvm.shfl.sync" in errors[0].message, [d.format() for d in diagnostics]
    assert "lanes 0-15 of every warp" in errors[0].message
    assert errors[0].location.line == UNSETTLED_CHAIN.splitlines().index(
        next(line for line in UNSETTLED_CHAIN.splitlines() if "nvvm.shfl.sync" in line)) + 1
