"""Block dominance in one CFG region (an `llvm.func` body of a lowered module).

MLIR's Python bindings do not expose `DominanceInfo`; this is Cooper, Harvey and Kennedy's
iterative algorithm ("A Simple, Fast Dominance Algorithm") over `Block.successors`.

    dom = Dominance(func.regions[0])
    dom.dominates(block_a, block_b)        # every path from the entry to b passes through a
    dom.point_dominates(a, b)              # for two definition points (block, index in block)
"""

from __future__ import annotations


class Dominance:
    def __init__(self, region):
        self.blocks = list(region.blocks)
        self.index = {block: i for i, block in enumerate(self.blocks)}
        self._idom = self._compute()

    def _postorder(self) -> list[int]:
        seen, order = set(), []
        stack = [(0, iter(self._successors(0)))]
        seen.add(0)
        while stack:
            node, successors = stack[-1]
            advanced = False
            for succ in successors:
                if succ not in seen:
                    seen.add(succ)
                    stack.append((succ, iter(self._successors(succ))))
                    advanced = True
                    break
            if not advanced:
                order.append(node)
                stack.pop()
        return order

    def _successors(self, i: int) -> list[int]:
        return [self.index[s] for s in self.blocks[i].successors]

    def _compute(self) -> dict[int, int]:
        postorder = self._postorder()
        rank = {node: n for n, node in enumerate(postorder)}
        predecessors: dict[int, list[int]] = {node: [] for node in postorder}
        for node in postorder:
            for succ in self._successors(node):
                if succ in predecessors:
                    predecessors[succ].append(node)
        idom = {0: 0}

        def intersect(a: int, b: int) -> int:
            while a != b:
                while rank[a] < rank[b]:
                    a = idom[a]
                while rank[b] < rank[a]:
                    b = idom[b]
            return a

        changed = True
        while changed:
            changed = False
            for node in reversed(postorder):
                if node == 0:
                    continue
                done = [p for p in predecessors[node] if p in idom]
                if not done:
                    continue
                new = done[0]
                for p in done[1:]:
                    new = intersect(p, new)
                if idom.get(node) != new:
                    idom[node] = new
                    changed = True
        return idom

    def reachable(self, block) -> bool:
        return self.index[block] in self._idom

    def dominates(self, a, b) -> bool:
        """Block `a` dominates block `b` (a block dominates itself); unreachable blocks: False."""
        i, j = self.index[a], self.index[b]
        if j not in self._idom or i not in self._idom:
            return False
        while True:
            if i == j:
                return True
            if j == 0:
                return False
            j = self._idom[j]

    def point_dominates(self, a: tuple, b: tuple) -> bool:
        """Point `a` = (block, position) comes before point `b` on every path to `b`."""
        if a[0] == b[0]:
            return a[1] <= b[1]
        return self.dominates(a[0], b[0])
