"""lowering/analysis/dominance.py on small CFGs: a diamond inside a loop, and an unreachable block."""

from __future__ import annotations

import cutlass  # noqa: F401  (registers the dialects)

from cute_lowering.analysis.dominance import Dominance
from cute_lowering.mlir import new_context, parse_module

CFG = """
llvm.func @f(%c: i1, %n: i32) {
  llvm.br ^head
^head:
  llvm.cond_br %c, ^left, ^right
^left:
  llvm.br ^join
^right:
  llvm.br ^join
^join:
  llvm.cond_br %c, ^head, ^exit
^exit:
  llvm.return
^dead:
  llvm.br ^exit
}
"""


def test_dominators_of_a_diamond_in_a_loop():
    with new_context() as context:
        module = parse_module(CFG, context)
        function = next(iter(module.body.operations))
        region = function.regions[0]
        entry, head, left, right, join, exit_, dead = list(region.blocks)
        dom = Dominance(region)
        assert all(dom.dominates(entry, b) for b in (head, left, right, join, exit_))
        assert dom.dominates(head, join) and dom.dominates(join, exit_) and dom.dominates(head, exit_)
        assert not dom.dominates(left, join) and not dom.dominates(right, join)
        assert not dom.dominates(join, head)  # the back edge does not make the latch dominate the header
        assert not dom.reachable(dead) and not dom.dominates(entry, dead) and not dom.dominates(dead, exit_)
        assert dom.point_dominates((head, 0), (head, 0)) and dom.point_dominates((head, -1), (head, 0))
        assert not dom.point_dominates((head, 1), (head, 0))
        assert dom.point_dominates((head, 5), (exit_, 0))
