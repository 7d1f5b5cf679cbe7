"""Uniformity: which values are the same across a CTA, a warpgroup, a warp, or may differ per thread.

An abstract interpretation of one GPU function, as CuTeDSL hands it to the hook
(`cuda.kernel`, `gpu.func`, or a `func.func` in a `gpu.module`). Every SSA value gets a
`Fact`:

- `level`: the widest `Scope` over which every thread holds the same value: CTA
  (block ids, kernel arguments, constants), WARPGROUP (`tid / 128`), WARP
  (`tid / 32`, `make_warp_uniform`, a `shfl` broadcast, a vote), or THREAD.
- `values`: when the value is a function of the thread index and constants alone, its
  exact value in every thread of the CTA (a numpy array over the linear thread id,
  from the launch's block shape, `nvvm.reqntid`). This is what lets `tidx < 64`
  be known to split warpgroup 0 of a 128-thread CTA but no warp, and `lane < 16`
  to split every warp.
- `data`: the variation comes through memory (a value loaded through a per-thread
  address, an atomic's result): it cannot be decided at compile time ("may diverge").

Every op is also reached under a stack of `Condition`s: the `scf.if` branch, the
`scf.for` trip count (bounds and step), the `scf.while` condition, the `cf.cond_br`
edge it is control-dependent on, and "has not exited" after a thread-dependent
`nvvm.exit`. A condition whose deciding value has known per-thread values carries
the set of threads that pass it (`masks`, one per loop iteration that differs), so a
check can compute exactly which threads reach an op. A branch on a CTA-uniform value
is kept (level CTA): it narrows no collective but decides paths.

Beyond per-thread values (issue 37): an unknown uniform term carries its divisibility
(`bidx * 128 + tidx < n * 32` is decided alike by the 32 lanes of a warp; `lattice.py`,
`arith_facts.py`); a loop-carried value that grows by a constant each iteration is its
start plus an unknown multiple of the step (affine induction); `min(lane, n)` splits a warp
for some n; the result of an `if` on a uniform condition is one of its sides (exact
alternatives); a loop of a small constant trip count with known carried values runs
iteration by iteration; the dead branch of a constant condition is not walked; a value
merged at an `if` keeps its branch's fact where the same condition holds again (`guards`,
followed through arithmetic and loop-carried values); a value that depends on the lane id
alone is the same in every warp (`symmetric`: its broadcast is CTA-uniform); register
fragments are as divergent as what was written into them (`fragments.py`); CTA-uniform
values that differ between the CTAs of a cluster are marked (`cluster`).

The idea is the one of LLVM's UniformityAnalysis (sources of divergence propagate
through data and through control dependence, with sync-dependence at joins), made
concrete per thread where the IR allows, in the spirit of GPUVerify's barrier
invariance: a collective is fine when every thread of its group reaches it together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Callable

import numpy as np

from cute_lowering.analysis.arith_facts import _FRAGMENT_LOADS, ArithFacts, _kind_of  # noqa: F401
from cute_lowering.analysis.fragments import FragmentFacts, _is_rmem, reset_type_cache
from cute_lowering.analysis.lattice import (  # noqa: F401  (re-exported: the analysis' public names)
    _MAX_FIXPOINT_ROUNDS, _MAX_LOOP_ALTERNATIVES, MAX_THREADS, UNIFORM, WARP_SIZE, WARPGROUP_SIZE,
    Condition, Fact, Reached, Scope, Threads, alternatives, condition_location, threads_reaching,
)
from cute_lowering.analysis.launch import _operation, _walk, block_shape, gpu_functions, is_kernel  # noqa: F401
from cute_lowering.mlir import ir

# the terminators whose operands the walk reads: yields (scf.if/for/while/index_switch
# results, loop-carried values) and branches (block arguments, branch conditions)
_MAX_UNROLL = 16  # a constant-count loop with known carried values runs iteration by iteration up to this

_READ_TERMINATORS = frozenset({"scf.yield", "scf.condition", "cf.br", "cf.cond_br"})

class Uniformity(ArithFacts, FragmentFacts):
    """The facts of one GPU function. `watch(op)` selects the ops whose conditions are kept in `reached`.

    With `watch_names` and no `watch` (what check-collectives asks), only the facts a check
    of the watched ops can read are computed (see `_what_matters`); `fact()` of any other
    value says "a value this analysis did not reach". `watch_filter` then narrows the ops
    so named to those it accepts (an `llvm.inline_asm` that is a collective, not every one)."""

    def __init__(self, func_op, watch: Callable[[ir.Operation], bool] | None = None, watch_names: frozenset = frozenset(),
                 watch_filter: Callable[[ir.Operation], bool] | None = None, reads: Callable[[ir.Operation], list] | None = None):
        self.func = func_op
        self.reads = reads  # with `watch_names`: the non-integer operands of a watched op whose facts are read
        self.kernel = is_kernel(func_op)
        self.threads = Threads(block_shape(func_op))
        self.watch = watch
        self.watch_names = watch_names  # ops kept by name alone, without calling `watch`
        self.watch_filter = watch_filter
        self._watched: set | None = None  # with `_what_matters`: the watched ops
        self._kept: set = set()
        self._needed: set | None = None  # None: evaluate every op (see `_what_matters`)
        self._needed_values: set = set()
        self._visited_ops: dict | None = None  # per block, the ops `_block` visits (None: all)
        self.facts: dict[ir.Value, Fact] = {}
        self.reached: list[Reached] = []
        self._recording = True
        self.exits: list[tuple[ir.Operation, tuple[Condition, ...]]] = []
        self._assumed: dict = {}  # condition value -> the way it went, on the path walked now
        reset_type_cache()
        body = func_op.regions[0]
        if len(body.blocks):
            for arg in body.blocks[0].arguments:
                # Kernel arguments are the same in every thread of the grid. A device
                # function's arguments are whatever its callers pass: assumed uniform,
                # since CuTeDSL inlines its @cute.jit helpers into the kernel.
                self.facts[arg] = UNIFORM
            self._what_matters(func_op)
            self._region(body, ())

    # -- queries ---------------------------------------------------------------------
    def fact(self, value: ir.Value) -> Fact:
        f = self.facts.get(value)
        if f is None:
            return Fact(Scope.THREAD, None, "a value this analysis did not reach")
        if f.guards and self._assumed:
            for cond, holds, g in f.guards:
                if self._assumed.get(cond) == holds:
                    return g
        return f

    @contextlib.contextmanager
    def _assuming(self, cond, holds: bool):
        """Walk a branch knowing which way `cond` went (path-sensitive facts: a value set under
        `if c:` and read under `if c:` again is the branch's own, not the merge of both)."""
        before = self._assumed.get(cond)
        self._assumed[cond] = holds
        try:
            yield
        finally:
            if before is None:
                del self._assumed[cond]
            else:
                self._assumed[cond] = before

    def known_int(self, value: ir.Value) -> int | None:
        """The value when it is one constant in every thread."""
        f = self.facts.get(value)
        if f is None or not f.known:
            return None
        # (not np.unique: its first call imports numpy.ma, ~25 ms inside the first compile checked)
        first = f.values.flat[0]
        return int(first) if (f.values == first).all() else None

    # -- facts -----------------------------------------------------------------------
    def _region(self, region, conds: tuple[Condition, ...]):
        """Walks the region; returns the terminator of its block when it has one block."""
        blocks = list(region.blocks)
        if len(blocks) == 1:
            return self._block(blocks[0], conds)
        if blocks:
            self._cfg(blocks, conds)
        return None

    def _block(self, block, conds: tuple[Condition, ...]):
        """Walks the block's ops in order; returns its last op (the terminator)."""
        exits = self.exits
        op = None
        for op in self._ops(block):
            exits_before = len(exits)
            self._op(op, conds)
            if len(exits) > exits_before:
                conds = conds + (self._not_exited(exits[exits_before:], len(conds)),)
        return _operation(op) if op is not None else None

    def _what_matters(self, func_op) -> None:
        """Decide, once, which ops the walk may leave out when only `watch_names` are watched
        (off when `watch` is a predicate: then every value's fact is kept).

        `_kept`: the ops that hold a watched op or an exit (the walk must enter them).
        `_needed`: the ops whose results some fact the check reads depends on: the
        backward slice, through operands, block arguments and yields, of the watched ops'
        integer operands and of what decides a kept op's paths (an `if` condition, a `for`
        loop's bounds; a `while` loop and unstructured control flow wholly). Evaluating any
        other op changes no fact that is read; in an NVFP4 or FMHA kernel most ops (layouts,
        addresses, math, the data a shuffle moves) are such ops, and interpreting them was
        most of this analysis' time (FA4's forward: ~0.6 s before, ~0.08 s after).
        `_visited_ops`: per block, the kept, needed and watched ops and the terminators read,
        in order: `_block` walks only those (listing every op through the bindings costs
        more than interpreting the few that matter)."""
        if self.watch is not None or not self.watch_names:
            return
        kept: set = set()
        watched: list = []
        terminators: dict = {}  # region-carrying op -> the terminators the walk reads in its regions
        in_order: list = []  # every op, each block's in the block's order
        markers = set(self.watch_names) | {"nvvm.exit"}
        func_op = _operation(func_op)

        def visit(op):
            in_order.append(op)
            name = op.name
            if name in _READ_TERMINATORS:
                terminators.setdefault(_operation(op.parent), []).append(op)
            elif name in markers and (name == "nvvm.exit" or self.watch_filter is None or self.watch_filter(op)):
                watched.append(op)
                parent = _operation(op.parent)
                while parent not in kept and parent != func_op:
                    kept.add(parent)
                    parent = _operation(parent.parent)
            return ir.WalkResult.ADVANCE

        func_op.walk(visit)
        # the values whose facts are read: the watched ops' integer operands (a member mask, a
        # thread count, a barrier id, a column count: `known_int`; not the data a shuffle moves
        # or the tensors a copy reads), what decides a kept op's paths (an `if` condition, a
        # loop's bounds), the branches of unstructured control flow
        pending = [v for op in watched for v in op.operands if _is_integer(v.type)]
        if self.reads is not None:
            pending.extend(v for op in watched if op.name != "nvvm.exit" for v in self.reads(op))
        for op in list(kept) + [func_op]:
            pending.extend(_deciding_values(op, terminators.get(op, ())))
        needed_ops: set = set()
        needed: set = set()
        while pending:
            value = pending.pop()
            if value in needed:
                continue
            needed.add(value)
            pending.extend(self._inputs(value, func_op, terminators, needed_ops))
        self._kept, self._needed, self._needed_values = kept, needed_ops, needed
        self._watched = {op for op in watched if op.name != "nvvm.exit"}
        # per block, the ops the walk must visit (in order): the others would only be looked at
        # and passed over (not watched, not needed, holding nothing watched)
        visited = kept | needed_ops | set(watched) | {t for ts in terminators.values() for t in ts}
        self._visited_ops = {}
        for op in in_order:
            if op in visited:
                self._visited_ops.setdefault(op.block, []).append(op)

    def _inputs(self, value, func_op, terminators: dict, needed_ops: set) -> list:
        """The values whose facts `value`'s fact is computed from (adds its defining op to `needed_ops`)."""
        owner = value.owner
        if isinstance(owner, ir.Block):
            op = _operation(owner.owner)
            if op == func_op and owner == func_op.regions[0].blocks[0]:
                return []  # a kernel argument
            if op.name == "scf.for":  # the induction variable, or a carried value
                index = value.arg_number
                operands = list(op.operands)
                if index == 0:
                    return [operands[0], operands[2]]
                return [operands[2 + index]] + [list(t.operands)[index - 1] for t in terminators.get(op, ())]
            # scf.while, a block of unstructured control flow, a region we do not model: all of it
            return list(op.operands) + [v for t in terminators.get(op, ()) for v in t.operands]
        op = _operation(owner)
        needed_ops.add(op)
        name = op.name
        if name in ("scf.for", "scf.if", "scf.index_switch"):
            index = value.result_number
            operands = list(op.operands)
            decided_by = operands[:3] + operands[3 + index : 4 + index] if name == "scf.for" else operands[:1]
            return decided_by + [list(t.operands)[index] for t in terminators.get(op, ())]
        if name == "scf.while":
            return list(op.operands) + [v for t in terminators.get(op, ()) for v in t.operands]
        if name in _FRAGMENT_LOADS and _is_rmem(op.operands[0]):
            # a register fragment: what every write into it stored (fragments.py)
            writes = self.load_inputs(op) or []
            return list(op.operands) + [v for w in writes for v in w.inputs]
        return list(op.operands)  # an op evaluated from its operands (a region we do not model too)

    def _terminator(self, block):
        """The block's terminator; a yield or branch is the last op `_ops` lists, when it lists
        them (found without listing a long block's every op)."""
        if self._visited_ops is not None:
            visited = self._visited_ops.get(block)
            if visited and visited[-1].name in _READ_TERMINATORS:
                return visited[-1]
        return _terminator(block)

    def _is_watched(self, op, name: str) -> bool:
        if self._watched is not None:
            return op in self._watched
        if name in self.watch_names and (self.watch_filter is None or self.watch_filter(op)):
            return True
        return self.watch is not None and self.watch(op)

    def _ops(self, block):
        """The ops of `block` the walk visits: all, or (with `_what_matters`) those that matter."""
        if self._visited_ops is None:
            return block.operations
        return self._visited_ops.get(block, ())

    def _matters(self, value) -> bool:
        """Whether some fact the check reads depends on `value`'s (always, without `_what_matters`)."""
        return self._needed is None or value in self._needed_values

    def _skippable(self, op) -> bool:
        """A region-carrying op that holds no watched op and no exit, and whose results no read
        fact depends on: nothing in it can matter to a watched op, so it is not walked."""
        return self._needed is not None and op not in self._kept and op not in self._needed

    def _op(self, op, conds: tuple[Condition, ...]) -> None:
        op = _operation(op)
        name = op.name
        if self._recording and self._is_watched(op, name):
            self.reached.append(Reached(op, conds))
        if op.regions and self._skippable(op):
            return
        if name == "scf.if":
            self._if(op, conds)
        elif name == "scf.for":
            self._for(op, conds)
        elif name == "scf.while":
            self._while(op, conds)
        elif name == "scf.index_switch":
            self._switch(op, conds)
        elif name in ("nvvm.exit",):
            self.exits.append((op, conds))
        elif op.regions:
            self._evaluate(op)
            for region in op.regions:
                # region-carrying ops we do not model (execute_region, cute scopes):
                # their block arguments are taken as uniform as the op's operands
                operand_fact = self._default(op, [self.fact(v) for v in op.operands])
                for block in region.blocks:
                    for arg in block.arguments:
                        self._set(arg, operand_fact)
                self._region(region, conds)
        else:
            self._evaluate(op)

    def _condition(self, op, value: ir.Value, text: str, negate: bool = False) -> Condition | None:
        f = self.fact(value)
        n = self.threads.count
        if f.known:
            mask = (f.values == 0) if negate else (f.values != 0)
            mask = np.broadcast_to(mask, (n,))
            return Condition(op, value, text, self.threads.level_of(mask), (mask,))
        if f.choices is not None:
            # one of several per-thread outcomes, a uniform input deciding which: each is an alternative
            masks = tuple(np.broadcast_to((c == 0) if negate else (c != 0), (n,)) for c in f.choices)
            return Condition(op, value, text + (f" ({f.why})" if f.why else ""), max(self.threads.level_of(m) for m in masks),
                             masks[:_MAX_LOOP_ALTERNATIVES])
        # CTA-uniform conditions are kept too: they narrow no collective, but decide
        # paths (an `alloc` whose `dealloc` sits under `if n > 0`)
        return Condition(op, value, text + (f" ({f.why})" if f.why else ""), f.level, None, f.data, f.split,
                         cluster=f.cluster and f.level == Scope.CTA)

    def constant(self, value) -> bool | None:
        """The truth of a condition that is the same in every thread and known (`scf.if %true`,
        a Python `if` on a closure constant that CuTeDSL staged as a constant); else None."""
        f = self.fact(value)
        if not f.known:
            return None
        first = f.values.flat[0]
        return bool(first != 0) if (f.values == first).all() else None

    def _if(self, op, conds) -> None:
        cond_value = op.operands[0]
        then_r, else_r = op.regions[0], op.regions[1]
        fixed = self.constant(cond_value)
        if fixed is not None:
            # dead code is not checked, and the live branch is as reached as the `if` itself
            live = then_r if fixed else else_r
            term = self._region(live, conds) if len(live.blocks) else None
            ys = list(term.operands) if term is not None else _terminator_operands(live)
            for r, y in zip(op.results, ys):
                self._set(r, self.fact(y))
            return
        then_c = self._condition(op, cond_value, "the `if` condition")
        else_c = self._condition(op, cond_value, "the `if` condition (else branch)", negate=True)
        with self._assuming(cond_value, True):
            then_term = self._region(then_r, conds + ((then_c,) if then_c else ()))
        else_term = None
        if len(else_r.blocks):
            with self._assuming(cond_value, False):
                else_term = self._region(else_r, conds + ((else_c,) if else_c else ()))
        results = list(op.results)
        if not results:
            return
        c = self.fact(cond_value)
        then_y = list(then_term.operands) if then_term is not None else _terminator_operands(then_r)
        else_y = list(else_term.operands) if else_term is not None else _terminator_operands(else_r)
        for i, r in enumerate(results):
            if i < len(then_y) and i < len(else_y) and then_y[i] == else_y[i]:
                self._set(r, self.fact(then_y[i]))  # the same value either way: the branch does not matter
                continue
            a = self.fact(then_y[i]) if i < len(then_y) else UNIFORM
            b = self.fact(else_y[i]) if i < len(else_y) else UNIFORM
            if c.known and a.known and b.known:
                self._set(r, self._known(np.where(c.values != 0, a.values, b.values), a.why or b.why or c.why))
            elif c.level == Scope.CTA and all(f.known or f.choices for f in (a, b)):
                # a uniform branch: the value is exactly one of the two sides' (in every thread)
                sides = [self._known(x) for f in (a, b) for x in (f.choices or (f.values,))]
                self._set(r, self.choose(sides, a.why or b.why))
            elif c.level == Scope.CTA and not c.data and {a.level, b.level} & {Scope.CTA} and any(
                (f.known or f.choices) and f.level > Scope.CTA for f in (a, b)
            ):
                # a uniform branch between a uniform value and a per-thread one (`n if n > 0 else
                # lane`): for some inputs it is the per-thread one
                side = a if a.level > Scope.CTA else b
                joined = Fact(side.level, None, side.why, split=True, symmetric=self.symmetric(side),
                              guards=((cond_value, True, a), (cond_value, False, b)))
                self._set(r, joined)
            else:
                joined = self._join([c, a, b])
                if joined.level > Scope.CTA and min(a.level, b.level) < joined.level:
                    # where the same condition holds again, the value is the branch's own
                    joined = dataclasses.replace(joined, guards=((cond_value, True, a), (cond_value, False, b)))
                self._set(r, joined)

    def _switch(self, op, conds) -> None:
        """scf.index_switch: case k runs where the value equals k, the default where it equals none."""
        value = op.operands[0]
        f = self.fact(value)
        cases = [int(c) for c in op.attributes["cases"]] if "cases" in op.attributes else []
        regions = list(op.regions)  # the default region, then one per case
        yields = []
        for i, region in enumerate(regions):
            if f.known:
                v = np.broadcast_to(f.values, (self.threads.count,))
                mask = ~np.isin(v, cases) if i == 0 else (v == cases[i - 1])
                cond = Condition(op, value, "the `switch` value", self.threads.level_of(mask), (mask,))
            else:
                cond = Condition(op, value, "the `switch` value" + (f" ({f.why})" if f.why else ""), f.level, None, f.data, f.split)
            term = self._region(region, conds + (cond,))
            yields.append(list(term.operands) if term is not None else [])
        for j, r in enumerate(op.results):
            self._set(r, self._join([f] + [self.fact(y[j]) for y in yields if j < len(y)]))

    def _carried_guards(self, block_args, merged: list[Fact], before: list[Fact], after: list[Fact], init_operands, yields) -> list[Fact]:
        """Guards of carried values follow the carried conditions: a value guarded by the value
        carried in position k (on entry: the init operand k; after an iteration: the yielded
        operand k) is guarded by the block argument k."""
        where = {v: k for k, v in enumerate(init_operands or ())}
        where.update({v: k for k, v in enumerate(yields or ())})
        args = list(block_args)
        own = set(args)

        def remapped(f: Fact) -> dict:
            found = {}
            for cond, holds, g in f.guards:
                key = cond if cond in own else (args[where[cond]] if cond in where and where[cond] < len(args) else None)
                if key is not None:
                    found[(key, holds)] = g
            return found

        out = []
        for m, a, b in zip(merged, before, after):
            ga, gb = remapped(a), remapped(b)
            keys = set(ga) | set(gb)
            if m.level == Scope.CTA or not keys or not (ga and gb):
                out.append(m)
                continue
            guards = []
            for key in keys:
                g = _merge(ga.get(key, a), gb.get(key, b), self)
                if g.level < m.level:
                    guards.append((key[0], key[1], g))
            out.append(dataclasses.replace(m, guards=tuple(guards)) if guards else m)
        return out

    def _loop_body(self, block_args, inits: list[Fact], run: Callable[[], list[Fact]], record: bool = False,
                   init_operands=None, yields: Callable[[], list] | None = None) -> tuple[list[Fact], bool]:
        """Iterate a loop body to a fixpoint of its carried values' facts; returns the carried
        facts and whether the ops watched in the body were recorded (`record`: by the round
        that found the fixpoint, which ran on exactly those facts; the other rounds' records
        are dropped). A loop whose facts do not change is thus walked once."""
        current = list(inits)
        recording = self._recording
        self._recording = recording and record
        recorded = False
        try:
            for _ in range(_MAX_FIXPOINT_ROUNDS):
                mark = len(self.reached)
                for arg, f in zip(block_args, current):
                    self._set(arg, f)
                yielded = run()
                merged = [_merge(a, b, self) for a, b in zip(current, yielded)]
                if any(f.guards for f in current + yielded):
                    merged = self._carried_guards(block_args, merged, current, yielded, init_operands,
                                                  yields() if yields is not None else None)
                # only the carried values some read fact depends on must settle: the others
                # are not evaluated (see `_what_matters`). Where one of those would not have
                # settled in _MAX_FIXPOINT_ROUNDS, the full analysis coarsened every carried
                # value of the loop to per-thread; this keeps the settled facts instead.
                if all(_same(a, b) for arg, a, b in zip(block_args, current, merged) if self._matters(arg)):
                    recorded = self._recording
                    break
                del self.reached[mark:]
                current = merged
            else:
                current = [Fact(Scope.THREAD, None, f.why or "a value carried around a loop", f.data, symmetric=self.symmetric(f))
                           if f.level > Scope.CTA else f for f in current]
        finally:
            self._recording = recording
        for arg, f in zip(block_args, current):
            self._set(arg, f)
        return current, recorded

    def _for(self, op, conds) -> None:
        lb, ub, step = (self.fact(v) for v in list(op.operands)[:3])
        inits = [self.fact(v) for v in list(op.operands)[3:]]
        body = op.regions[0].blocks[0]
        iv, carried = body.arguments[0], list(body.arguments)[1:]
        term = self._terminator(body)
        trip = _constant_trip(lb, ub, step)
        if trip == 0:  # dead code: not checked; the results are the initial values
            for r, f in zip(op.results, inits):
                self._set(r, f)
            return
        if trip is not None and trip <= _MAX_UNROLL and term is not None and any(
            f.values is not None and self._matters(a) for a, f in zip(carried, inits)
        ):
            return self._unrolled(op, trip, lb, step, inits, conds)
        cond = self._trip_condition(op, lb, ub, step)
        inner = conds + ((cond,) if cond else ())
        iv_fact = self._join([lb, step], "the loop's induction variable")
        start = _parts(lb)
        if start is not None and step.known and step.values.ndim == 0 and int(step.values) > 0:
            # lb + step * k: the start plus an unknown multiple of the step
            iv_fact = self._shift(start[0], math.gcd(start[1], int(step.values)), "the loop's induction variable", False)
        elif iv_fact.level > Scope.CTA:
            iv_fact = Fact(iv_fact.level, None, iv_fact.why or "the loop's induction variable", iv_fact.data,
                           symmetric=self.symmetric(lb) and self.symmetric(step))

        def run():
            self._set(iv, iv_fact)
            self._block(body, inner)
            return [self.fact(v) for v in term.operands] if term is not None else []

        final, recorded = self._loop_body(carried, inits, run, record=True, init_operands=list(op.operands)[3:],
                                          yields=lambda: list(term.operands) if term is not None else [])
        self._set(iv, iv_fact)
        if self._recording and not recorded:
            self._block(body, inner)
        yielded = list(term.operands) if term is not None else []
        for i, (r, f) in enumerate(zip(op.results, final)):
            if i < len(yielded) and yielded[i] == carried[i]:
                self._set(r, inits[i])  # carried through unchanged: the trip count does not matter
                continue
            # the value after the loop depends on how many iterations ran: on the bounds
            self._set(r, self._join([f, lb, ub, step]) if cond else f)

    def _unrolled(self, op, trip: int, lb: Fact, step: Fact, inits: list[Fact], conds) -> None:
        """A loop with a constant, small trip count whose carried values are known on entry: run
        iteration by iteration (`acc = 0; for i in range(3): acc += lane` is `3 * lane` after it,
        not "a value carried around a loop")."""
        body = op.regions[0].blocks[0]
        iv, carried = body.arguments[0], list(body.arguments)[1:]
        term = self._terminator(body)
        current = list(inits)
        first, stride = int(lb.values), int(step.values)
        for k in range(trip):
            for a, f in zip(carried, current):
                self._set(a, f)
            self._set(iv, Fact(Scope.CTA, np.array(first + k * stride, dtype=np.int64)))
            self._block(body, conds)  # every thread runs every iteration: no trip condition
            current = [self.fact(v) for v in term.operands]
        for r, f in zip(op.results, current):
            self._set(r, f)

    def _trip_condition(self, op, lb: Fact, ub: Fact, step: Fact) -> Condition | None:
        text = "the trip count of this `for` loop (its bounds and step)"
        bounds = list(op.operands)[:3]
        varying = [v for v, f in zip(bounds, (lb, ub, step)) if f.level > Scope.CTA]
        value = varying[0] if varying else None  # what locates the condition: a bound that varies
        if lb.known and ub.known and step.known and (np.asarray(step.values) > 0).all():
            n = self.threads.count
            counts = np.broadcast_to(np.maximum(0, -np.floor_divide(-(ub.values - lb.values), step.values)), (n,))
            if self.threads.level_of(counts) == Scope.CTA:
                return None
            masks, seen = [], set()
            for k in sorted(set(counts.tolist()))[:-1]:
                mask = counts > k
                key = mask.tobytes()
                if key not in seen:
                    seen.add(key)
                    masks.append(mask)
            # iteration 0 is reached by the threads with at least one iteration
            first = counts > 0
            if first.tobytes() not in seen:
                masks.insert(0, first)
            masks = masks[:_MAX_LOOP_ALTERNATIVES]
            level = max(self.threads.level_of(m) for m in masks)
            return Condition(op, value, text, level, tuple(masks))
        worst = self._join([lb, ub, step])
        if worst.level == Scope.CTA:
            return None
        why = f" ({worst.why})" if worst.why else ""
        exact = [f for f in (lb, ub, step) if f.known or f.shifted or (f.level == Scope.CTA and not f.data)]
        if len(exact) == 3 and step.known and step.values.ndim == 0 and int(step.values) > 0:
            # ub - lb is a known part `v` plus an unknown multiple of g: a thread runs more than k
            # iterations where v - k*step + g*m > 0, i.e. where ceil((v - k*step) / g) > -m; the
            # threads of a group run alike for every m when that key is the same in the group for
            # every residue of k*step modulo g (`range(tidx, n * 32, 128)`: per warp)
            (vu, du), (vl, dl) = (_parts(f) or (_ZERO, 1) for f in (ub, lb))
            g, stride = math.gcd(du, dl) or 1, int(step.values)
            spread = np.broadcast_to(vu - vl, (self.threads.count,))
            residues = sorted({(k * stride) % g for k in range(min(g // math.gcd(stride, g), 64))})
            level = max(self.threads.level_of(-np.floor_divide(-(spread - r), g)) for r in residues)
            if level == Scope.CTA:
                return None
            return Condition(op, value, text + why, level, None, False, True)
        if not worst.data and all(f.level == Scope.CTA or f.split for f in (lb, ub, step)):
            # a bound that splits its groups for some uniform inputs (`range(min(lane, n))`)
            return Condition(op, value, text + why, worst.level, None, False, True)
        return Condition(op, value, text + why, worst.level, None, worst.data)

    def _while(self, op, conds) -> None:
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        inits = [self.fact(v) for v in op.operands]
        term = self._terminator(before)
        after_term = self._terminator(after)
        flag, args = term.operands[0], list(term.operands)[1:]
        # when the carried values are known per thread, the threads looping at each iteration
        simulated = self._simulate_while(op, before, after, inits, conds)
        state: dict = {}

        def run():
            self._block(before, conds)
            cond = simulated or self._condition(term, flag, "the `while` condition")
            state["cond"] = cond
            with self._assuming(flag, True):  # the body runs where the condition held
                for a, v in zip(after.arguments, args):
                    self._set(a, self.fact(v))
                self._block(after, conds + ((cond,) if cond else ()))
            return [self.fact(v) for v in after_term.operands] if after_term is not None else []

        _, recorded = self._loop_body(before.arguments, inits, run, record=True, init_operands=list(op.operands),
                                      yields=lambda: list(after_term.operands) if after_term is not None else [])
        if self._recording and not recorded:
            run()
        cond = state.get("cond")
        for r, v in zip(op.results, args):
            f = self.fact(v)
            # the value after the loop depends on when the condition stopped it
            self._set(r, self._join([f, self.fact(flag), Fact(cond.level, None, cond.text, cond.data,
                                                             symmetric=self.symmetric(self.fact(flag)))]) if cond else f)

    def _simulate_while(self, op, before, after, inits: list[Fact], conds) -> Condition | None:
        """Run a `while` whose carried values are known per thread, iteration by iteration:
        the threads still looping at each iteration (`k = lane; while k < 40: k += 32`)."""
        if not any(f.known and f.level > Scope.CTA for f in inits):
            return None  # nothing per-thread to follow: the fixpoint decides
        n = self.threads.count
        # per carried value: its per-thread values while they stay known, else its fact
        values: list = [np.broadcast_to(f.values, (n,)).copy() if f.known else f for f in inits]
        active = np.ones(n, dtype=bool)
        masks, seen = [], set()
        recording, self._recording = self._recording, False
        term = self._terminator(before)

        def as_fact(v):
            return self._known(v) if isinstance(v, np.ndarray) else v

        try:
            for _ in range(64):
                for a, v in zip(before.arguments, values):
                    self._set(a, as_fact(v))
                self._block(before, conds)
                flag = self.fact(term.operands[0])
                if not flag.known:
                    return None
                carried = [self.fact(v) for v in list(term.operands)[1:]]
                active = active & np.broadcast_to(flag.values != 0, (n,))
                if not active.any():
                    break
                if active.tobytes() not in seen:
                    seen.add(active.tobytes())
                    masks.append(active.copy())
                for a, f in zip(after.arguments, carried):
                    self._set(a, f)
                self._block(after, conds)
                yielded = [self.fact(v) for v in _terminator_operands_block(after)]
                values = [
                    np.where(active, np.broadcast_to(f.values, (n,)), old)
                    if f.known and isinstance(old, np.ndarray)
                    else _merge(as_fact(old), f, self)
                    for f, old in zip(yielded, values)
                ]
            else:
                return None
        finally:
            self._recording = recording
        if not masks:
            return None
        level = max(self.threads.level_of(m) for m in masks)
        return Condition(term, term.operands[0], "the `while` condition", level, tuple(masks[:_MAX_LOOP_ALTERNATIVES]))

    def _not_exited(self, exits, depth: int) -> Condition:
        """The condition 'this thread has not exited' after ops that exit some threads."""
        op = exits[0][0]
        exited = np.zeros(self.threads.count, dtype=bool)
        known, level, data = True, Scope.CTA, False
        for _, conds in exits:
            local = conds[depth:]
            level = max([level] + [c.level for c in local])
            data = data or any(c.data for c in local)
            if not local or not all(c.known for c in local):
                known = False
                continue
            path = np.ones(self.threads.count, dtype=bool)
            for c in local:
                path &= np.logical_or.reduce(c.masks)
            exited |= path
        text = "a thread-dependent exit (`nvvm.exit`) before this point"
        # located at what decided the exit (the `if` around it), not the `exit` op CuTeDSL
        # builds without a line of its own
        decided = next((conds[-1] for _, conds in exits if len(conds) > depth), None)
        if decided is not None:
            op, value = decided.op, decided.value
            text += f", under {decided.text}"
        else:
            value = None
        if known:
            alive = ~exited
            return Condition(op, value, text, self.threads.level_of(alive), (alive,), exit=True)
        return Condition(op, value, text, level, None, data, exit=True)

    def _cfg(self, blocks, conds) -> None:
        """Unstructured control flow (cf.br / cf.cond_br): control dependence from post-dominators."""
        index = {b: i for i, b in enumerate(blocks)}
        succs: list[list[int]] = []
        for b in blocks:
            term = _terminator(b)
            succs.append([index[s] for s in term.successors] if term is not None and hasattr(term, "successors") else [])
        n = len(blocks)
        exits = [i for i in range(n) if not succs[i]]
        # post-dominator sets by iteration (regions here are small)
        full = set(range(n))
        pdom = [({i} if i in exits else set(full)) for i in range(n)]
        changed = True
        while changed:
            changed = False
            for i in range(n):
                if i in exits:
                    continue
                new = {i} | set.intersection(*(pdom[s] for s in succs[i])) if succs[i] else {i}
                if new != pdom[i]:
                    pdom[i], changed = new, True
        block_conds: list[list[Condition]] = [[] for _ in range(n)]
        recording = self._recording
        for rounds in range(2):  # block arguments carried around back edges settle in two rounds
            self._recording = recording and rounds == 1
            for i, b in enumerate(blocks):
                self._block(b, conds + tuple(block_conds[i]))
                term = _terminator(b)
                if term is None:
                    continue
                if term.name == "cf.cond_br":
                    flag = term.operands[0]
                    for side, s in enumerate(succs[i][:2]):
                        c = self._condition(term, flag, "the branch condition (`cf.cond_br`)", negate=bool(side))
                        if c is None:
                            continue
                        # blocks control-dependent on this edge: those post-dominating the
                        # successor but not strictly post-dominating the branch block
                        for j in range(n):
                            if j in pdom[s] and not (j in pdom[i] and j != i) and j != i:
                                if all(x.op != term for x in block_conds[j]):
                                    block_conds[j].append(c)
                self._block_args(term, blocks, index)
        self._recording = recording

    def _block_args(self, term, blocks, index) -> None:
        if not hasattr(term, "successors"):
            return
        operands = list(term.operands)
        segment = {"cf.br": 0, "cf.cond_br": 1}.get(term.name)
        if segment is None:
            return
        if term.name == "cf.br":
            dest = term.successors[0]
            for a, v in zip(dest.arguments, operands):
                self._set(a, self._join([self.facts.get(a, UNIFORM), self.fact(v)]))
        else:
            flag = self.fact(operands[0])
            sizes = _segment_sizes(term)
            rest = operands[1:]
            true_ops, false_ops = rest[: sizes[1]], rest[sizes[1] : sizes[1] + sizes[2]]
            for dest, vals in zip(term.successors, (true_ops, false_ops)):
                for a, v in zip(dest.arguments, vals):
                    self._set(a, self._join([self.facts.get(a, UNIFORM), self.fact(v), flag]))


def _is_integer(t) -> bool:
    return ir.IntegerType.isinstance(t) or ir.IndexType.isinstance(t)


def _deciding_values(op, terminators) -> list:
    """What the walk of a kept op reads to decide which paths its regions run (the facts of
    its results and carried values matter only when something needs them)."""
    name = op.name
    operands = list(op.operands)
    if name == "scf.for":
        return operands[:3]
    if name in ("scf.if", "scf.index_switch"):
        return operands[:1]
    # scf.while (its condition is computed in its regions), unstructured control flow, a
    # region we do not model (its block arguments take its operands' facts): all of it
    return operands + [v for t in terminators for v in t.operands]


def _segment_sizes(op) -> list[int]:
    try:
        return [int(x) for x in op.attributes["operandSegmentSizes"]]
    except (KeyError, ValueError, TypeError):
        n = len(list(op.operands)) - 1
        return [1, n, 0]


def _terminator(block):
    ops = list(block.operations)
    return ops[-1].operation if ops else None


def _terminator_operands_block(block) -> list:
    term = _terminator(block)
    return list(term.operands) if term is not None else []


def _terminator_operands(region) -> list:
    blocks = list(region.blocks)
    return _terminator_operands_block(blocks[0]) if blocks else []


def _same(a: Fact, b: Fact) -> bool:
    if [(c, h, g.level) for c, h, g in a.guards] != [(c, h, g.level) for c, h, g in b.guards]:
        return False
    if a.level != b.level or a.data != b.data or a.known != b.known or a.shifted != b.shifted or a.split != b.split:
        return False
    if a.shifted and a.divisor != b.divisor:
        return False
    if (a.values is None) != (b.values is None):
        return False
    return a.values is None or np.array_equal(a.values, b.values)


_ZERO = np.array(0, dtype=np.int64)


def _constant_trip(lb: Fact, ub: Fact, step: Fact) -> int | None:
    """The trip count of a `for` loop whose bounds and step are one known constant each."""
    if not (lb.known and ub.known and step.known) or lb.values.ndim or ub.values.ndim or step.values.ndim:
        return None
    s = int(step.values)
    if s <= 0:
        return None
    return max(0, -(-(int(ub.values) - int(lb.values)) // s))


def _parts(f: Fact):
    """(known part, divisor of the unknown uniform part; 0: none) of an integer fact, or None."""
    if f.data or f.split:
        return None
    if f.known:
        return f.values, 0
    if f.shifted:
        return f.values, f.divisor
    return None


def _merge(a: Fact, b: Fact, analysis: Uniformity) -> Fact:
    """A loop-carried value: its value on entry or after some iterations. When every iteration
    adds the same uniform constant (`k = lane; while ...: k += 32`), the value is its entry
    value plus an unknown multiple of that step (`lane + 32 * j`): affine induction."""
    if a.known and b.known and np.array_equal(np.broadcast_to(a.values, np.shape(b.values)), b.values):
        return a
    pa, pb = _parts(a), _parts(b)
    if pa is not None and pb is not None:
        step = np.broadcast_to(pb[0] - pa[0], (analysis.threads.count,))
        if (step == step[0]).all():
            divisor = math.gcd(math.gcd(pa[1], pb[1]), abs(int(step[0])))
            if divisor == 0:
                return a
            level = analysis.threads.level_of(np.broadcast_to(pa[0], (analysis.threads.count,)))
            why = a.why or b.why or ("a value carried around a loop" if level > Scope.CTA else "")
            if level == Scope.CTA and divisor == 1:
                return UNIFORM
            return Fact(level, pa[0], why, shifted=True, divisor=divisor)
    level = max(a.level, b.level)
    return Fact(level, None, a.why or b.why or ("a value carried around a loop" if level > Scope.CTA else ""), a.data or b.data,
                symmetric=analysis.symmetric(a) and analysis.symmetric(b))


__all__ = [
    "Condition", "Fact", "Reached", "Scope", "Threads", "Uniformity", "UNIFORM", "WARP_SIZE", "WARPGROUP_SIZE",
    "alternatives", "block_shape", "condition_location", "gpu_functions", "is_kernel", "threads_reaching",
]  # fmt: skip
