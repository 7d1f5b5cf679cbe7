"""check-collectives: warp/warpgroup/CTA collectives reached by only part of their group, and TMEM rules.

The bug it catches: an instruction that every thread of a group must execute together
(`tcgen05.ld` and `shfl.sync` per warp, `wgmma` per warpgroup, `bar.sync` per CTA, ...)
placed under control that splits the group. The kernel compiles, then hangs or
computes garbage on the GPU. Before (a TMEM epilogue guarded per thread):

    %19 = arith.cmpi eq, %tid, %c0_i32 : i32          loc("if tidx == 0:"(k.py:40:7))
    scf.if %19 {
      cute.copy(%tiled, %src, %frag) : (!copy_ldtm_32, ...)   loc("cute.copy(...)"(k.py:41:8))
    }

After (the IR is unchanged; the pass only reports):

    k.py:41:8: error: 'cute.copy' with a tmem_load atom (PTX tcgen05.ld.sync.aligned) is a
      warp collective reached by only part of a warp: lane 0 of warp 0
    k.py:40:7: note: the condition that diverges: the `if` condition: `if tidx == 0:`

Which ops are collective, and at what scope, is data (`lowering/analysis/collective_ops.py`);
which threads reach each op is `lowering/analysis/uniformity.py`. An op reached under a
condition the analysis proves splits its group is an error (`mode=warn`: a warning);
under a condition that may split it (data-dependent, or thread-dependent in a way the
analysis cannot evaluate) it is a warning, "may diverge", never an error, and its note
says where precision was lost (the condition, and what it depends on); `strict=true`
makes such a warning fail the run too (a CI gate). A member mask (shfl/vote/redux/match/
bar.warp, also as an inline-PTX operand or literal) naming exactly the lanes that reach
the op, and a named barrier whose thread count is the number of threads that reach it,
are legal. One finding per source-level collective: CuTeDSL expands one call into
several ops at one line (a warp reduction is five shuffles); the first is reported.

Across sites: a named barrier id's sites (bar.sync and bar.arrive) together must be
reachable by as many threads as the count they name (and name one count); every warp of
a warpgroup runs the same setmaxnreg (action and count) when any of its warps runs one;
`barrier.cluster.arrive` must be reached by every thread of the cluster: an arrive under a
condition that differs between the CTAs of a cluster (`cluster.ctarank == 0`,
`bidx % 2 == 0`) with a cluster of more than one CTA is an error. `pedantic=true` also
reports one phase of a barrier id at two `bar.sync` (or two `bar.arrive`) sites reached by
different warps: `.aligned` leaves it undefined and synccheck reports it, but CuTeDSL's own
TmemAllocator emits it in CUTLASS's and quack's Blackwell kernels (see `_aligned_sites`).

Exits (`nvvm.exit`, PTX `exit`): what an exited thread means depends on the collective
(the table's `exited`, from the PTX ISA): `bar.sync` for the whole CTA, `vote`/`redux`/
`match` and `barrier.cluster.arrive` wait only for the non-exited threads,
so an exit excuses whoever it removed; `.aligned` instructions, `shfl.sync` (a source
lane that exited gives an undefined value), `bar.warp.sync` and `elect.sync` (all threads
of the mask, the ISA says, not the non-exited ones) need every lane, so an exit before
them that splits a warp is an error; a counted barrier counts the warps that still arrive.

TMEM rules (sm_100a): `alloc_tmem` with a constant nCols not a power of two in
[32, 512]; `dealloc_tmem` given an address that is not the one `alloc_tmem` wrote
(e.g. the shared-memory slot itself rather than the TMEM address read from it); an
`alloc_tmem` with no `dealloc_tmem` on some path.

Locations: CuTeDSL gives ops inside a kernel Python locations only when line info is
on (`CUTE_DSL_LINEINFO=1`, or the `--generate-line-info` compile option); without it
the diagnostic points at the kernel and says so.
"""

from __future__ import annotations

import os
import re
from collections import Counter

import numpy as np

from cute_lowering.analysis.collective_ops import (
    TMEM_ALLOC,
    TMEM_COLUMNS,
    TMEM_DEALLOC,
    TMEM_RETRIEVE,
    Collective,
    collective_of,
    op_names,
)
from cute_lowering.analysis.launch import cluster_size
from cute_lowering.analysis.uniformity import (
    WARP_SIZE,
    WARPGROUP_SIZE,
    Condition,
    Reached,
    Scope,
    Uniformity,
    alternatives,
    condition_location,
    gpu_functions,
    threads_reaching,
)
from cute_lowering.diagnostics import CheckFailed, Diagnostic, DiagnosticSink, SourceBuffer, _file_location
from cute_lowering.mlir import inert_values, ir
from cute_lowering.registry import choice, flag, register_pass

MODES = ("error", "warn")
WATCHED = frozenset(op_names()) | {TMEM_ALLOC, TMEM_DEALLOC}
_UNLOCATED = " (CuTeDSL traced this op without a location: set CUTE_DSL_LINEINFO=1 for its line)"
_NEAR = " (CuTeDSL gave this op no line of its own: located at the next op that has one)"


def check_collectives(module, mode: str = "error", source: SourceBuffer | None = None, pedantic: bool = False) -> list[Diagnostic]:
    """The diagnostics of the check over every GPU function in `module` (an ir.Module or op); IR unchanged."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    checker = _Checker(mode, source or SourceBuffer("<module>", ""), pedantic)
    checker.check(module.operation if hasattr(module, "operation") else module)
    return checker.diagnostics


@register_pass(
    "check-collectives",
    options=(
        choice("mode", MODES, "error", "error: provable divergence fails the run; warn: it is reported as a warning"),
        flag("strict", False, "a 'may diverge' warning fails the run too (for CI gates)"),
        flag("pedantic", False, "also report what the PTX ISA leaves undefined but CuTeDSL itself emits: one phase of a named "
             "barrier at two bar.sync (or two bar.arrive) sites reached by different warps (synccheck's "
             "'Divergent thread(s) in block'; CuTeDSL's own TmemAllocator does it)"),
    ),
)
class CheckCollectives:
    """Report collectives (warp/warpgroup/CTA) reached by part of their group, and TMEM alloc/dealloc misuse; never rewrites."""

    pass_name = "check-collectives"
    statistics = {
        "collectives": "collective ops checked",
        "errors": "errors reported",
        "warnings": "warnings reported (may diverge)",
        "functions": "GPU functions looked at",
        "pedantic": "named barriers at two sites of one form, reported only with pedantic=true",
    }

    def __init__(self, options: dict, sink: DiagnosticSink):
        self.mode = options["mode"]
        self.strict = bool(options.get("strict", False))
        self.pedantic = bool(options.get("pedantic", False))
        self.sink = sink
        self.counts: Counter[str] = Counter({name: 0 for name in self.statistics})

    def run(self, root: ir.Operation) -> None:
        checker = _Checker(self.mode, self.sink.source, self.pedantic)
        checker.check(root)
        self.counts.update(checker.counts)
        errors = [d for d in checker.diagnostics if d.severity == "error" or (self.strict and d.severity == "warning")]
        if errors:
            raise CheckFailed(checker.diagnostics)  # the pipeline fails with them, located
        self.sink.diagnostics.extend(checker.diagnostics)


class _Checker:
    def __init__(self, mode: str, source: SourceBuffer, pedantic: bool = False):
        self.mode = mode
        self.pedantic = pedantic
        self.source = source
        self.diagnostics: list[Diagnostic] = []
        self.counts: Counter[str] = Counter()
        self._reported: dict = {}  # source location (or op) -> index of its finding

    def check(self, root) -> None:
        # inert_values: reading the kernel must not let CuTeDSL wrap (and build ops on) its values
        with inert_values():
            for func in gpu_functions(root):
                self.function(func)
        self.diagnostics = [d for d in self.diagnostics if d is not None]

    # -- reporting -------------------------------------------------------------------
    def _where(self, op, func) -> tuple:
        loc = op.location
        if _useful(loc):
            return self.source.locate(loc), ""
        near = _next_located(op)
        if near is not None:
            return self.source.locate(near), _NEAR
        return self.source.locate(func.location), _UNLOCATED

    def report(self, severity: str, op, func, message: str, cond: Condition | None = None) -> None:
        """One finding per source-level collective: CuTeDSL expands one call (`warp_reduction_max`,
        an unrolled loop) into several ops at one location; the first finding there is kept (an
        error replaces a warning)."""
        if severity == "error" and self.mode == "warn":
            severity = "warning"
        where, suffix = self._where(op, func)
        key = (where.file, where.line, where.col) if where is not None and suffix != _UNLOCATED else op
        if key in self._reported:
            index = self._reported[key]
            if index is None or severity != "error" or self.diagnostics[index].severity == "error":
                return
            self.diagnostics[index] = None  # the warning there gives way to the error
            self.counts["warnings"] -= 1
        self._reported[key] = len(self.diagnostics)
        notes = []
        if cond is not None:
            cop = _loop_line(cond.op) if cond.op.name == "scf.for" else condition_location(cond)
            cwhere = self.source.locate(cop.location) if cop is not None and _useful(cop.location) else None
            if cwhere is None and _useful(cond.op.location):
                cwhere = self.source.locate(cond.op.location)
            text = f"the condition that diverges: {cond.text}"
            snippet = _source_text(cop.location) if cop is not None else None
            if snippet:
                text += f": `{snippet}`"
            notes.append(Diagnostic("note", text, cwhere))
        self.diagnostics.append(Diagnostic(severity, message + suffix, where, tuple(notes)))
        self.counts["errors" if severity == "error" else "warnings"] += 1

    # -- per function ----------------------------------------------------------------
    def function(self, func) -> None:
        self.counts["functions"] += 1
        # with nothing watched, the analysis only walks the function's ops once (to find that out)
        analysis = Uniformity(func, watch_names=WATCHED, watch_filter=_is_checked, reads=_uniform_operands)
        allocs, deallocs = [], []
        arrivals: dict[str, list[Reached]] = {}
        counted: dict[int, list[Reached]] = {}  # named barrier id -> its sites (bar.sync/bar.arrive with a count)
        setmaxnreg: list[Reached] = []
        # sites per named-barrier id (an op reached on several paths, or once per unrolled
        # iteration, is one site); None counts the sites whose id is computed at run time
        named: Counter = Counter()
        seen_sites: set = set()
        for r in analysis.reached:
            if r.op in seen_sites:
                continue
            seen_sites.add(r.op)
            if r.op.name in ("nvvm.barrier", "nvvm.barrier.arrive", "nvvm.barrier0"):
                named[_barrier_id(analysis, r.op)] += 1
            elif r.op.name in ("llvm.inline_asm", "nvvm.inline_ptx") and collective_of(r.op) is not None:
                named[None] += 1  # a barrier in inline PTX: its id is not read
        for r in analysis.reached:
            entry = collective_of(r.op)
            if r.op.name == TMEM_ALLOC:
                allocs.append(r)
                self._columns(analysis, r, func)
            elif r.op.name == TMEM_DEALLOC:
                deallocs.append(r)
                self._dealloc_address(analysis, r, func, allocs)
            if entry is None:
                continue
            self.counts["collectives"] += 1
            if entry.arrive_anywhere:
                arrivals.setdefault(entry.op, []).append(r)
                continue
            if r.op.name == "nvvm.setmaxregister":
                setmaxnreg.append(r)
            if entry.count_operand and entry.count_operand in _operand_names(r.op):
                bid = _barrier_id(analysis, r.op)
                if bid is not None:
                    counted.setdefault(bid, []).append(r)
            self._collective(analysis, r, entry, func, named)
        for sites in arrivals.values():
            self._arrivals(analysis, sites, func)
        for bid, sites in counted.items():
            if named.get(None, 0) == 0:
                self._barrier_sites(analysis, bid, sites, func)
        self._setmaxnreg(analysis, setmaxnreg, func)
        self._alloc_paths(analysis, allocs, deallocs, func)

    def _arrivals(self, u: Uniformity, sites: list[Reached], func) -> None:
        """An arrive every thread must reach at one of its sites (barrier.cluster.arrive): the
        threads reaching no site, when every site's conditions are known; and, the group being
        the cluster, no arrive may sit under a condition that differs between the CTAs of a
        cluster (`if cluster.ctarank == 0`) unless another site takes the other CTAs."""
        threads = u.threads
        entry = collective_of(sites[0].op)
        kept = [(r, [c for c in r.conditions if not c.exit]) for r in sites]  # exited threads release it
        self._cluster_split(u, entry, kept, func)
        if not threads.known or any(not c.known for _, conds in kept for c in conds):
            return
        arrived = np.zeros(threads.count, dtype=bool)
        for _, conds in kept:
            for combo in alternatives(conds):
                arrived |= threads_reaching(conds, threads.count, combo)
        if not arrived.any():
            # No thread arrives anywhere: the cluster barrier is never used (CUTLASS's Hopper
            # examples guard arrive and wait with `if cute.size(cluster_shape) > 1:`, constant
            # false for a 1x1 cluster).
            return
        if not arrived.all():
            missing = threads.describe(~arrived)
            self.report("error", sites[0].op, func,
                        f"{entry.describes}: every thread of the cluster must arrive, and {missing} "
                        f"reach no '{entry.op}' of this kernel: the cluster barrier never completes",
                        next((c for c in kept[0][1]), None))

    def _cluster_split(self, u: Uniformity, entry, kept, func) -> None:
        size = cluster_size(u.func)
        if not entry.cluster or size == 1:
            return
        if any(not any(c.cluster for c in conds) for _, conds in kept):
            return  # a site every CTA reaches (as far as the cluster goes)
        keys = [{_condition_key(c) for c in conds if c.cluster} for _, conds in kept]
        ops = {}
        for ks in keys:
            for k in ks:
                ops.setdefault(k[:-1] if isinstance(k, tuple) else k, set()).add(k[-1] if isinstance(k, tuple) else None)
        if any(len(texts) >= 2 for texts in ops.values()):
            return  # arrives in both branches of one cluster-varying test
        r, conds = kept[0]
        cond = next(c for c in conds if c.cluster)
        where = f"a cluster of {size} CTAs" if size else "a cluster (its shape is not in the IR)"
        self.report("error" if size else "warning", r.op, func,
                    f"{entry.describes} is a cluster collective (every thread of every CTA of the cluster must "
                    f"arrive) reached under a condition that differs between the CTAs of {where}: the CTAs "
                    f"that skip it never arrive, and the cluster barrier never completes", cond)

    def _barrier_sites(self, u: Uniformity, bid: int, sites: list[Reached], func) -> None:
        """A named barrier used at several sites (bar.sync and bar.arrive, same id): the warps
        that can ever reach one of them must supply its count of threads (PTX: b threads, a warp
        arriving for its non-exited threads), or the barrier never completes; no more threads
        than a whole number of phases of that count (the last phase never fills); and the
        threads of one phase execute one instruction per form (`_aligned_sites`)."""
        threads = u.threads
        ops = list(dict.fromkeys(r.op for r in sites))  # distinct ops, in the order reached
        if len(ops) < 2 or not threads.known:
            return
        counts = {u.known_int(_named_operand(r.op, "number_of_threads")) for r in sites}
        if None in counts:
            return
        # per op: the threads that can reach it (exits ignored: an upper bound), and those
        # that can reach it alive (the known exits applied; None where an exit is not known)
        reach: dict = {op: np.zeros(threads.count, dtype=bool) for op in ops}
        alive: dict = {op: np.zeros(threads.count, dtype=bool) for op in ops}
        exits_known = True
        for r in sites:
            conds = [c for c in r.conditions if not c.exit]
            if any(not c.known and (c.level > Scope.CTA or c.data) for c in conds):
                return  # who reaches it is not known
            known = [c for c in conds if c.known]  # a uniform unknown test: taken as passed (the most threads)
            exits = [c for c in r.conditions if c.exit]
            exits_known = exits_known and all(c.known for c in exits)
            for combo in alternatives(known):
                mask = threads_reaching(known, threads.count, combo)
                reach[r.op] |= mask
                for c in exits:
                    if c.known:
                        mask = mask & c.masks[0]
                alive[r.op] |= mask
        arriving = np.zeros(threads.count, dtype=bool)
        for mask in reach.values():
            arriving |= mask
        warps = threads.groups(Scope.WARP, arriving).any(axis=1)
        supplied = int(warps.sum()) * WARP_SIZE
        count = max(counts)
        names = " and ".join(sorted({f"'{r.op.name}'" for r in sites}))
        what = f"{collective_of(sites[0].op).describes}: {names} are the {len(ops)} sites of named barrier {bid}"
        if len(counts) > 1:
            self.report("error", sites[0].op, func,
                        f"{what}, given different thread counts ({', '.join(map(str, sorted(counts)))}): every thread "
                        f"that arrives at one barrier names the same count")
            return
        if 0 < supplied < count:
            lanes = np.repeat(warps, WARP_SIZE)[: threads.count]
            self.report("error", sites[0].op, func,
                        f"{what}, which counts {count} threads, and at most {supplied} can ever arrive there "
                        f"({threads.describe(lanes)}): the barrier never completes",
                        next((c for c in sites[0].conditions if c.known), None))
            return
        if self._aligned_sites(u, bid, count, ops, reach, sites, func):
            return
        if exits_known:
            present = np.zeros(threads.count, dtype=bool)
            for mask in alive.values():
                present |= mask
            warps = threads.groups(Scope.WARP, present).any(axis=1)
            supplied = int(warps.sum()) * WARP_SIZE
            if supplied > count and supplied % count:
                lanes = np.repeat(warps, WARP_SIZE)[: threads.count]
                self.report("error", sites[0].op, func,
                            f"{what}, which counts {count} threads, and {supplied} arrive there "
                            f"({threads.describe(lanes)}): {_over_count(supplied, count)}",
                            next((c for c in sites[0].conditions if c.known and not c.exit), None))

    def _aligned_sites(self, u: Uniformity, bid: int, count: int, ops: list, reach: dict, sites: list[Reached], func) -> bool:
        """`bar.sync` is `barrier.sync.aligned` and `bar.arrive` `barrier.arrive.aligned` (as
        CuTeDSL emits `nvvm.barrier`/`nvvm.barrier.arrive`). PTX ISA, "Parallel Synchronization
        and Communication Instructions: bar, barrier": ".aligned ... indicates that all threads
        in CTA will execute the same barrier{.cta} instruction. In conditionally executed code,
        an aligned barrier{.cta} instruction should only be used if it is known that all threads
        in CTA evaluate the condition identically, otherwise behavior is undefined." and
        "Different warps may execute different forms of the barrier{.cta} instruction using the
        same barrier name and thread count. One example mixes barrier{.cta}.sync and
        barrier{.cta}.arrive to implement producer/consumer models."

        So the threads of one phase of a barrier id execute one instruction per form: sync at one
        site and arrive at another is the ISA's own example (legal); two sites of one form
        reached by different threads, who can meet in one phase, are undefined (synccheck on the
        H200 and the H100: "Divergent thread(s) in block", and it stops the kernel there).
        Reported only with `pedantic=true`: barriers count arrivals by warp (PTX: a warp arrives
        for its non-exited threads), and CuTeDSL's own `TmemAllocator.wait_for_alloc` (a
        `NamedBarrier.arrive_and_wait` in the MMA warp, another in the epilogue warps) does
        exactly this in CUTLASS's Blackwell GEMM and FMHA examples and quack's sm_100 GEMM,
        kernels their authors ship and run: a check that failed all of them would be switched
        off. By default the check reports what hangs or computes garbage and counts these
        (statistic `pedantic`); code that must be synccheck-clean asks for `pedantic=true`. A
        split inside a warp is an error either way (the per-site warp check; synccheck's
        "Divergent thread(s) in warp"). Unwatched, the H200 runs both to the end (no hang:
        `bench/collectives_synccheck.py --plain`, 2026-12-06); the split inside a warp stays an
        error because `.aligned` makes it undefined for the warp itself. If some GPU hangs on
        the whole-warp case, it becomes an error again.
        Two sites reached by the same threads (one after
        the other: each phase is complete at one site before any of them reaches the next; a
        body CuTeDSL traced twice, run in turn) are legal. The rule is per instruction, not per
        source line: one line CuTeDSL traced twice is two instructions. Returns whether it reported."""
        threads = u.threads
        by_form: dict[str, list] = {}
        for op in ops:
            if reach[op].any():
                by_form.setdefault(op.name, []).append(op)
        for form, group in by_form.items():
            for i, a in enumerate(group):
                other = next((b for b in group[i + 1 :] if not np.array_equal(reach[a], reach[b])), None)
                if other is None:
                    continue
                if not self.pedantic:
                    self.counts["pedantic"] += 1  # counted, not reported: see the docstring
                    return False
                entry = collective_of(a)
                here, suffix = self._where(a, func)
                there, _ = self._where(other, func)
                there_text = f"{os.path.basename(there.file)}:{there.line}" if there is not None and there.file else "another site"
                same_line = here is not None and there is not None and (here.file, here.line) == (there.file, there.line)
                traced = " (the same source line, traced twice by CuTeDSL: two instructions)" if same_line else ""
                word = "bar.sync" if form == "nvvm.barrier" else "bar.arrive"
                aligned = "barrier.sync.aligned" if form == "nvvm.barrier" else "barrier.arrive.aligned"
                self.report("error", a, func,
                            f"{entry.describes} of named barrier {bid} ({count} threads) is one of two {word} sites of "
                            f"that id, reached here by {threads.describe(reach[a])} and at {there_text} by "
                            f"{threads.describe(reach[other])}{traced}: those threads can meet in one phase, and "
                            f"{word} is {aligned}: every thread of a phase must execute the same instruction (PTX ISA "
                            f".aligned; a bar.arrive at one site and a bar.sync at another may share a phase)",
                            _separating(sites, a, other))
                return True
        return False

    def _setmaxnreg(self, u: Uniformity, sites: list[Reached], func) -> None:
        """setmaxnreg: every warp of a warpgroup executes the same one (PTX ISA). Per site the
        warp collective check runs; across sites, a warpgroup some of whose warps run a
        setmaxnreg with some action and count must have all its warps run one like it."""
        threads = u.threads
        if not sites or not threads.known:
            return
        by_kind: dict = {}
        for r in sites:
            if any(not c.known and c.level > Scope.CTA for c in r.conditions if not c.exit):
                return
            known = [c for c in r.conditions if c.known and not c.exit]
            reach = np.zeros(threads.count, dtype=bool)
            for combo in alternatives(known):
                reach |= threads_reaching(known, threads.count, combo)
            kind = tuple(_attr_word(r.op, a) for a in ("action", "regCount"))
            entry = by_kind.setdefault(kind, [np.zeros(threads.count, dtype=bool), r])
            entry[0] |= reach
        for kind, (reach, r) in by_kind.items():
            warps = threads.groups(Scope.WARP, reach).any(axis=1)
            per_group = -(-threads.count // WARPGROUP_SIZE)
            for g in range(per_group):
                mine = warps[g * 4 : g * 4 + 4]
                if mine.any() and not mine.all():
                    lanes = np.repeat(warps, WARP_SIZE)[: threads.count]
                    self.report("error", r.op, func,
                                f"'nvvm.setmaxregister' (PTX setmaxnreg.{'inc' if 'inc' in kind[0] else 'dec'} {kind[1]}) must be executed by "
                                f"every warp of a warpgroup (the same action and count): only {threads.describe(lanes)} "
                                f"run it, not all of warpgroup {g}",
                                next((c for c in r.conditions if c.known), None))
                    break

    # -- collectives -----------------------------------------------------------------
    def _collective(self, u: Uniformity, r: Reached, entry: Collective, func, named) -> None:
        op, scope, threads = r.op, entry.scope, u.threads
        conds, alive = _exits_excused(entry, r.conditions, threads.count)
        required = None  # per-lane: which lanes of a warp the op's member mask names
        what = f"{entry.describes} is a {scope.label} collective"
        if entry.mask_operand is not None or entry.mask_value is not None:
            operands = list(op.operands)
            if entry.mask_value is not None:
                mask = entry.mask_value
            else:
                mask = u.known_int(operands[entry.mask_operand]) if entry.mask_operand < len(operands) else None
            if mask is None:
                return  # a computed member mask (activemask, a ballot): its author names the lanes
            mask &= 0xFFFFFFFF
            required = np.array([(mask >> lane) & 1 for lane in range(WARP_SIZE)], dtype=bool)
            if mask != 0xFFFFFFFF:
                what += f" over the lanes of its member mask 0x{mask:08x}"
        if entry.uniform_operand is not None and entry.uniform_operand < len(list(op.operands)):
            f = u.fact(list(op.operands)[entry.uniform_operand])
            if f.level > scope:
                kind = "data-dependent: may diverge" if f.data else f"it differs per {f.level.label}"
                self.report("warning" if f.data else "error", op, func,
                            f"{what} given a TMEM address that is not the same in every lane of the warp ({kind}"
                            f"{': ' + f.why if f.why else ''}): tcgen05.ld/st take one address per warp")
                return
        count = None
        if entry.count_operand and entry.count_operand in _operand_names(op):
            count = u.known_int(_named_operand(op, entry.count_operand))
            if count is None:
                return  # a thread count computed at run time: not checked
            return self._named_barrier(u, r, entry, func, count, named)
        if scope == Scope.CTA and not threads.known:
            scope_uncertain = True
        else:
            scope_uncertain = False
        known = [c for c in conds if c.known]
        unknown = [c for c in conds if not c.known]
        for combo in alternatives(known):
            reach = threads_reaching(known, threads.count, combo)
            bad, reached = self._bad_groups(threads, scope, reach, required, alive)
            if not bad.any():
                continue
            blame = self._blame(threads, scope, known, combo, required, alive) or known[-1]
            definite = bool((bad == reached).all()) or not unknown
            who = threads.describe(reach)
            group = f"{'the CTA' if scope == Scope.CTA else 'a ' + scope.label}"
            message = f"{what} reached by only part of {group}: {who}"
            if required is not None and not required.all():
                message = f"{what}, reached by {who}: the lanes that reach it and the lanes its mask names differ"
            if blame.exit:  # an exit that does not excuse: say so (vote/redux/match would wait only for the living)
                message += f" (threads that exited still count: {entry.rule or 'the PTX ISA names every thread of the group'})"
            self.report("error" if definite and not scope_uncertain else "warning", op, func,
                        message if definite else message + " (may diverge: other conditions may exclude those threads)", blame)
            return
        self._unknown(op, func, what, scope, unknown, scope_uncertain)

    def _unknown(self, op, func, what: str, scope: Scope, unknown: list[Condition], uncertain: bool = False) -> None:
        """Conditions whose per-thread values are not known: a threshold on the thread index
        against a uniform value (`tidx < n`) splits the group for some n (an error); anything
        else (loaded data, values this analysis cannot evaluate) may diverge (a warning)."""
        finer = [c for c in unknown if c.level > scope]
        if not finer:
            return
        split = [c for c in finer if c.split]
        if split and not uncertain:
            cond = split[-1]
            self.report("error", op, func, f"{what} reached under a condition that splits a {scope.label} "
                        f"for some values of its uniform operands (it compares a per-{cond.level.label} value "
                        f"with a uniform one)", cond)
            return
        cond = finer[-1]
        kind = "data-dependent" if cond.data else f"uniform only per {cond.level.label}"
        self.report("warning", op, func, f"{what} reached under a condition that may diverge ({kind})", cond)

    def _bad_groups(self, threads, scope: Scope, reach: np.ndarray, required, alive=None) -> tuple[np.ndarray, np.ndarray]:
        """Per group: reached by some thread, but not by all it needs (its mask's lanes, or all;
        with `alive`, the threads that have not exited, when the op excuses exited ones)."""
        if alive is not None:
            reach = reach & alive
        rows = threads.groups(scope, reach)
        reached = rows.any(axis=1)
        if required is not None:
            need = np.broadcast_to(required, rows.shape)
        else:
            need = np.ones_like(rows)
            last = threads.count % threads.group_size(scope)
            if last:  # a last, partial group: only its existing threads are required
                need = need.copy()
                need[-1, last:] = rows[-1, last:]
        if alive is not None:
            need = need & threads.groups(scope, alive)
        bad = reached & (rows != need).any(axis=1)
        return bad, reached

    def _blame(self, threads, scope, known, combo, required, alive=None) -> Condition | None:
        mask = np.ones(threads.count, dtype=bool)
        for i, c in enumerate(known):
            mask &= c.masks[combo[i]]
            if self._bad_groups(threads, scope, mask, required, alive)[0].any():
                return c
        return None

    def _named_barrier(self, u, r: Reached, entry, func, count: int, named) -> None:
        """bar.sync id, count: every warp that reaches it reaches it whole; when it is the only
        site of its barrier id, the threads reaching it are `count`."""
        threads, op = u.threads, r.op
        conds, alive = _exits_excused(entry, r.conditions, threads.count)
        known = [c for c in conds if c.known]
        unknown = [c for c in conds if not c.known]
        what = f"{entry.describes} (named barrier, {count} threads)"
        for combo in alternatives(known):
            reach = threads_reaching(known, threads.count, combo)
            bad, reached = self._bad_groups(threads, Scope.WARP, reach, None, alive)
            if bad.any():
                blame = self._blame(threads, Scope.WARP, known, combo, None, alive) or known[-1]
                definite = bool((bad == reached).all()) or not unknown
                self.report("error" if definite else "warning", op, func,
                            f"{what} is reached by part of a warp: {threads.describe(reach)}", blame)
                return
            bid = _barrier_id(u, op)
            present = reach & alive if alive is not None else reach
            arriving = int(threads.groups(Scope.WARP, present).any(axis=1).sum()) * WARP_SIZE  # a warp arrives whole
            if threads.known and bid is not None and named.get(bid, 0) == 1 and not named.get(None) and not [c for c in unknown if c.level > Scope.CTA] \
                    and not any(c.level == Scope.CTA and not c.known for c in unknown) and arriving and arriving != count:
                exited = next((c for c in r.conditions if c.exit), None) if alive is not None and not alive.all() else None
                why = f": {_over_count(arriving, count)}" if arriving > count else ""
                self.report("error", op, func,
                            f"{what}: it is the only use of barrier {bid}, and {arriving} threads reach it "
                            f"({threads.describe(present)}), not {count}{why}", known[-1] if known else exited)
                return
        self._unknown(op, func, what, Scope.WARP, unknown)

    # -- TMEM ------------------------------------------------------------------------
    def _columns(self, u, r: Reached, func) -> None:
        columns = u.known_int(list(r.op.operands)[0])
        low, high = TMEM_COLUMNS
        if columns is not None and not (low <= columns <= high and columns & (columns - 1) == 0):
            self.report("error", r.op, func,
                        f"'{TMEM_ALLOC}' (PTX tcgen05.alloc) of {columns} columns: nCols must be a power of two in [{low}, {high}]")

    def _dealloc_address(self, u, r: Reached, func, allocs) -> None:
        address = list(r.op.operands)[0]
        root, path = _address_root(address)
        if root == "retrieve":
            slot = path
            slots = [list(a.op.operands)[1] for a in allocs]
            if slots and not any(_same_storage(slot, s) for s in slots):
                self.report("warning", r.op, func,
                            f"'{TMEM_DEALLOC}' frees a TMEM address read from a shared-memory slot no "
                            f"'{TMEM_ALLOC}' of this kernel wrote")
            return
        if root == "smem":
            self.report("error", r.op, func,
                        f"'{TMEM_DEALLOC}' (PTX tcgen05.dealloc) is given the address of the shared-memory slot "
                        f"that '{TMEM_ALLOC}' wrote into, not the TMEM address it wrote there "
                        f"(read it with cute.arch.retrieve_tmem_ptr)")
            return
        self.report("warning", r.op, func,
                    f"'{TMEM_DEALLOC}' frees an address this check cannot trace to '{TMEM_ALLOC}' "
                    f"(through cute.arch.retrieve_tmem_ptr)")

    def _alloc_paths(self, u, allocs: list[Reached], deallocs: list[Reached], func) -> None:
        for a in allocs:
            if not deallocs:
                self.report("error", a.op, func, f"'{TMEM_ALLOC}' (PTX tcgen05.alloc) has no '{TMEM_DEALLOC}' in this kernel: "
                            f"the columns stay allocated when the CTA exits")
                continue
            mine = {_condition_key(c) for c in a.conditions}
            extras = [[c for c in d.conditions if _condition_key(c) not in mine and not c.known] for d in deallocs]
            if any(not e for e in extras):
                continue
            # two deallocs in the two branches of one `if` cover it
            branches: dict[int, set[str]] = {}
            for e in extras:
                if len(e) == 1:
                    branches.setdefault(id_of(e[0].op), set()).add(e[0].text)
            if any(len(texts) == 2 for texts in branches.values()):
                continue
            cond = extras[0][0]
            if all(c.level == Scope.CTA and not c.data for e in extras for c in e):
                self.report("error", a.op, func,
                            f"'{TMEM_ALLOC}' (PTX tcgen05.alloc) has no '{TMEM_DEALLOC}' on some path: every dealloc "
                            f"sits under a condition this alloc does not", cond)
            else:
                self.report("warning", a.op, func,
                            f"'{TMEM_ALLOC}' may miss its '{TMEM_DEALLOC}' on some path (it sits under a condition "
                            f"this alloc does not)", cond)


def _over_count(arriving: int, count: int) -> str:
    """What happens when more threads than a barrier's count arrive in one round (PTX ISA: "When a
    barrier completes, the waiting threads are restarted without delay, and the barrier is
    reinitialized so that it can be immediately reused": the arrivals past the count open the
    next phase)."""
    phases, left = divmod(arriving, count)
    if left:
        return (f"the barrier completes at every {count} arrivals (PTX ISA: it is then reinitialized), so "
                f"{phases} phase{'s complete' if phases > 1 else ' completes'} and the last {left} threads to arrive "
                f"wait for a phase that never fills")
    return (f"the barrier completes at every {count} arrivals, so the threads of one phase are whichever "
            f"{count} arrive first, not a set the kernel chose")


def _separating(sites: list[Reached], a, b) -> Condition | None:
    """The condition under which `a` is reached and `b` is not (the first known one of a's
    conditions that b does not share), else a's first known condition."""
    keys_b = {_condition_key(c) for r in sites if r.op == b for c in r.conditions}
    conds_a = [c for r in sites if r.op == a for c in r.conditions if c.known and not c.exit]
    return next((c for c in conds_a if _condition_key(c) not in keys_b), conds_a[0] if conds_a else None)


def _attr_word(op, name: str) -> str:
    """An attribute's value in words: `#nvvm<action decrease>` -> `decrease`, `40 : i32` -> `40`."""
    if name not in op.attributes:
        return ""
    text = str(op.attributes[name])
    found = re.search(r"(\w+)>$", text) or re.match(r"(-?\w+)", text)
    return found.group(1) if found else text


def _exits_excused(entry: Collective, conditions, count: int) -> tuple[list, np.ndarray | None]:
    """The conditions to check an op under, and the threads that have not exited: for an op that
    waits only for non-exited threads (`exited="excused"`), the "has not exited" conditions
    narrow the threads it needs instead of splitting its group; for the others they stay."""
    conds = list(conditions)
    if entry.exited != "excused":
        return conds, None
    exits = [c for c in conds if c.exit]
    if not exits:
        return conds, None
    alive = None
    for c in exits:
        if c.known:
            alive = c.masks[0] if alive is None else alive & c.masks[0]
    return [c for c in conds if not c.exit], alive


def _uniform_operands(op) -> list:
    """The operands of a collective whose value must be the same in its whole group (a TMEM copy's
    TMEM address): the analysis computes their facts too."""
    entry = collective_of(op)
    if entry is None or entry.uniform_operand is None:
        return []
    operands = list(op.operands)
    return operands[entry.uniform_operand : entry.uniform_operand + 1]


def _is_checked(op) -> bool:
    """A collective, or a TMEM alloc/dealloc: the ops this check reads (of those named in WATCHED;
    an `llvm.inline_asm` is one only when its PTX is a collective)."""
    return op.name in (TMEM_ALLOC, TMEM_DEALLOC) or collective_of(op) is not None


def id_of(op) -> int:
    return hash(op)


def _condition_key(cond: Condition):
    """Conditions that decide alike: the same branch of a test of the same operands by the same
    op (`if warp_idx == owner` written twice is two arith.cmpi, one condition)."""
    value = cond.value
    if value is not None and not isinstance(value.owner, ir.Block):
        owner = value.owner.operation if hasattr(value.owner, "operation") else value.owner
        attrs = tuple(sorted((k, str(owner.attributes[k])) for k in owner.attributes)) if owner.name.startswith("arith.") else ()
        return (owner.name, attrs, tuple(owner.operands), cond.text)
    return (id_of(cond.op), cond.text)


def _useful(loc) -> bool:
    """Whether `loc` points at a line of user code: not unknown, and not the frame-name
    stand-in CuTeDSL gives ops built outside a user statement (`loc("<module>"(...))`,
    `loc("launcher"(...))`: a function's name where a statement's source text would be)."""
    if loc is None:
        return False
    if loc.is_a_name() and re.fullmatch(r"<?[A-Za-z_][A-Za-z0-9_]*>?", loc.name_str):
        return False
    return _file_location(loc) is not None


def _loop_line(loop):
    """The op that carries a `for` loop's line. The `scf.for` itself gets the launcher's
    location; CuTeDSL gives the `for` statement's line to the ops it builds for the loop
    (the first ops of the body, those right after it): the first whose source text is the
    `for` statement, else the last bound built before the loop that has a line."""
    body = [o.operation for o in loop.regions[0].blocks[0].operations]
    after, seen = [], False
    for other in loop.block.operations:
        other = other.operation
        if seen:
            after.append(other)
            if len(after) > 4:
                break
        seen = seen or other == loop
    for other in body[:8] + after:
        loc = other.location
        if _useful(loc) and loc.is_a_name() and loc.name_str.lstrip().startswith("for "):
            return other
    bounds = set(list(loop.operands)[:3])
    found = None
    for other in loop.block.operations:
        other = other.operation
        if other == loop:
            break
        if any(r in bounds for r in other.results) and _useful(other.location):
            found = other
    return found


def _source_text(loc) -> str | None:
    """The Python statement CuTeDSL recorded for an op (its NameLoc), when line info is on."""
    if loc is not None and loc.is_a_name() and _useful(loc):
        text = loc.name_str.split("  # ")[0].strip()
        return text if len(text) <= 120 else text[:117] + "..."
    return None


def _next_located(op):
    """The location of the first op after `op` (its users' regions first) that has a useful one."""
    candidates = []
    for result in op.results:
        for use in result.uses:
            owner = use.owner
            owner = owner.operation if hasattr(owner, "operation") else owner
            candidates.append(owner)
    block = op.block
    following, seen = [], False
    for other in block.operations:
        other = other.operation
        if seen:
            following.append(other)
        seen = seen or other == op
    for candidate in candidates + following[:8]:
        if _useful(candidate.location) and candidate.name not in ("arith.constant",):
            return candidate.location
        for region in candidate.regions:
            for inner_block in region.blocks:
                for inner in inner_block.operations:
                    if _useful(inner.location):
                        return inner.location
    return None


def _operand_names(op) -> tuple[str, ...]:
    return ("number_of_threads",) if op.name in ("nvvm.barrier", "nvvm.barrier.arrive") and len(list(op.operands)) >= 2 else ()


def _named_operand(op, name: str):
    operands = list(op.operands)
    return operands[1] if name == "number_of_threads" and len(operands) >= 2 else None


def _barrier_id(u: Uniformity, op) -> int | None:
    operands = list(op.operands)
    if not operands:
        return 0
    return u.known_int(operands[0])


def _address_root(value, depth: int = 12):
    """('retrieve', slot) for an address read by retrieve_tmem_ptr, ('smem', None) for one
    computed from a shared-memory address, (None, None) when neither can be told."""
    frontier = [value]
    seen = set()
    for _ in range(depth):
        following = []
        for v in frontier:
            if v in seen:
                continue
            seen.add(v)
            owner = v.owner
            if isinstance(owner, ir.Block):
                continue
            op = owner.operation if hasattr(owner, "operation") else owner
            if op.name == TMEM_RETRIEVE:
                return "retrieve", list(op.operands)[0]
            for o in op.operands:
                if "smem" in str(o.type):
                    return "smem", None
                following.append(o)
        frontier = following
        if not frontier:
            break
    return None, None


def _same_storage(a, b) -> bool:
    """Whether two smem pointers are the same slot: the same value, or equal views of one base."""
    if a == b:
        return True
    return _strip(a) == _strip(b)


def _strip(v):
    for _ in range(6):
        owner = v.owner
        if isinstance(owner, ir.Block):
            return v
        op = owner.operation if hasattr(owner, "operation") else owner
        if op.name in ("cute.recast_iter", "cute.get_iter") and len(list(op.operands)) == 1:
            v = list(op.operands)[0]
            continue
        return op.get_asm() if not op.regions else v
    return v
