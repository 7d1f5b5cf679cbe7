"""The base of every pass here: match ops by name, rewrite them or leave them with a reason.

A pass subclasses `RewritePass`, names the ops it looks at in `roots`, and writes two
methods: `match(op)` decides, before any IR is built, whether the op can be rewritten
(raising `Leave("why")` if not), and `rewrite(op, match)` builds the replacement at
the op's position and returns the values that replace its results (or None when it
changed the op in place). CuTeDSL's C++ walk driver finds the ops, so Python runs
only for candidates. Counts go into `self.counts`; every op left gets a remark.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from cute_lowering.diagnostics import DiagnosticSink, nearest_location
from cute_lowering.mlir import ir, rewrite


class Leave(Exception):
    """Raised by `match` to leave an op untouched; the message says why.

    `statistic` names the counter it goes to: "left" (could not rewrite) by default,
    or another the pass declares (e.g. "native": left on purpose for CuTeDSL).
    """

    def __init__(self, reason: str, statistic: str = "left"):
        super().__init__(reason)
        self.statistic = statistic


class PassCrash(Exception):
    """A Python error raised while a pass handled the op at `location`."""

    def __init__(self, error: BaseException, location: ir.Location):
        super().__init__(f"{type(error).__name__}: {error}")
        self.location = location


class RewritePass:
    pass_name = "?"  # set by @register_pass
    roots: tuple[str, ...] = ()
    # statistic name -> what it counts; passes may add their own
    statistics: dict[str, str] = {
        "rewritten": "ops rewritten",
        "left": "ops left as they were (each has a remark)",
    }

    def __init__(self, options: dict[str, Any], sink: DiagnosticSink):
        self.options = options
        self.sink = sink
        self.counts: Counter[str] = Counter({name: 0 for name in self.statistics})
        self._maybe_dead: list[ir.OpView] = []
        self._decisions: dict = {}

    # -- to write in each pass -------------------------------------------------
    def relevant(self, op: ir.OpView) -> bool:
        """Whether `op` is a candidate at all; others are skipped without a remark
        (a pass on `arith.truncf` to FP4 has nothing to say about f32 -> bf16)."""
        return True

    def match(self, op: ir.OpView) -> Any:
        raise NotImplementedError

    def rewrite(self, op: ir.OpView, match: Any) -> list[ir.Value] | None:
        raise NotImplementedError

    def decide(self, key, compute):
        """`compute()` once per `key` (e.g. the op's types) for this run, Leave included.

        Kernels repeat the same conversion thousands of times; type checks need not.
        """
        found = self._decisions.get(key)
        if found is None:
            try:
                found = (True, compute())
            except Leave as why:
                found = (False, why)
            self._decisions[key] = found
        ok, value = found
        if not ok:
            raise value
        return value

    def erase_if_unused(self, op: ir.OpView) -> None:
        """Erase the pure `op` after the current rewrite if nothing uses it any more."""
        self._maybe_dead.append(op)

    # -- machinery ---------------------------------------------------------------
    def run(self, root: ir.Operation) -> None:
        patterns = rewrite.RewritePatternSet()
        for name in self.roots:
            patterns.add(name, self._guarded)
        self._error: BaseException | None = None
        rewrite.walk_and_apply_patterns(root, patterns.freeze())
        if self._error is not None:
            raise self._error

    def _guarded(self, op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        # A Python exception must not unwind through the C++ pattern driver (it aborts
        # the process): keep the first one, stop rewriting, re-raise after the walk.
        if self._error is not None:
            return True
        try:
            if not self.relevant(op):
                return True
            return self._apply(op, rewriter)
        except Exception as e:  # noqa: BLE001
            self._error = PassCrash(e, nearest_location(op))
            return True

    def _apply(self, op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        """Pattern callback: returns False when it rewrote `op` (MLIR's convention)."""
        try:
            found = self.match(op)
        except Leave as why:
            self.counts[why.statistic] += 1
            self.sink.remark(f"{self.pass_name}: left '{op.name}' as it is: {why}", nearest_location(op))
            return True
        with rewriter.ip, op.location:
            replacement = self.rewrite(op, found)
        if replacement is not None:
            rewriter.replace_op(op, replacement)
        while self._maybe_dead:
            candidate = self._maybe_dead.pop()
            if all(not list(result.uses) for result in candidate.results):
                rewriter.erase_op(candidate.operation)  # CuTeDSL < 4.8's bindings take an Operation, not an OpView
        self.counts["rewritten"] += 1
        return False
