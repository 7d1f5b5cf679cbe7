"""`lowering-repro reduce`: shrink IR that fails to compile, keeping the error text (like llvm-reduce).

Greedy delta debugging on the parsed module; each candidate is verified here, then
compiled in a long-lived worker subprocess (`runner.Worker`), and kept only if the
compile still fails with an error containing the given text. Reductions, in order:

- erase ops whose results are unused (whole functions first, then op by op, batched
  when many go at once);
- replace an operand defined inside a function by a new argument of that function's
  entry block (cuts the chain that computed it; the chain is then dead);
- drop function arguments nobody uses, and attributes of function-like ops.

Unused type aliases disappear on their own: the printer only prints aliases in use.
"""

from __future__ import annotations

import gc
import os
import re
import sys
from typing import Callable, Iterator

from cute_lowering.diagnostics import Diagnostic, LoweringError, SourceBuffer, SourceLocation, from_mlir_error
from cute_lowering.mlir import NestingTooDeep, ir, new_context, parse_module, plain_values
from cute_lowering.repro.runner import Worker


class ReduceError(Exception):
    pass


def _ops(module: ir.Module) -> list[ir.Operation]:
    found = []

    def visit(op):
        found.append(op)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner.operation)

    for op in module.body.operations:
        visit(op.operation)
    return found


def _plain(value) -> ir.Value:
    """The `ir.Value` of a DSL wrapper, should a caster `plain_values` could not swap hand one out."""
    while not isinstance(value, ir.Value):
        value = value.ir_value() if hasattr(value, "ir_value") else value.value
    return value


def _results(op: ir.Operation) -> list[ir.Value]:
    return [_plain(r) for r in op.results]


def _unused(op: ir.Operation) -> bool:
    return all(not list(r.uses) for r in _results(op))


def _attr_names(op) -> list[str]:
    return [a if isinstance(a, str) else a.name for a in op.attributes]


def _op(op) -> ir.Operation:
    return op.operation if op is not None and not isinstance(op, ir.Operation) else op


def _is_terminator(op: ir.Operation) -> bool:
    last = list(op.block.operations)[-1].operation
    return last == op and not op.regions and not _results(op)


def _function_of(op: ir.Operation):
    parent = _op(op.parent)
    while parent is not None:
        if "function_type" in _attr_names(parent) and parent.regions and parent.regions[0].blocks:
            return parent
        parent = _op(parent.parent)
    return None


def _set_inputs(func, inputs: list[ir.Type]) -> None:
    old = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, list(old.results)))


Mutation = Callable[[ir.Module], bool]  # changes the module in place; False if not applicable


def _candidates(text: str) -> Iterator[tuple[str, Mutation, int]]:
    """(kind, mutation, index) for the module `text`; applied to a fresh parse each time."""
    with new_context() as ctx, ir.Location.unknown():
        module = parse_module(text, ctx)
        with plain_values(module):  # no CuTeDSL wrapper (and its detached ops) may outlive `module`
            ops = _ops(module)
            top = [i for i, op in enumerate(ops) if op.name != "gpu.module" and op.parent is not None
                   and _op(op.parent).name in ("builtin.module", "gpu.module") and not _referenced(op, module)]
            dead = [i for i, op in enumerate(ops) if _results(op) and _unused(op)]
            effect = [i for i, op in enumerate(ops) if not op.results and not _is_terminator(op)
                      and op.name not in ("gpu.module",) and i not in top]
            operands = [(i, j) for i, op in enumerate(ops) if _function_of(op) is not None
                        for j, v in enumerate(map(_plain, op.operands)) if not isinstance(v.owner, ir.Block)
                        and _function_of(_op(v.owner)) is not None]
            funcs = [i for i, op in enumerate(ops) if "function_type" in _attr_names(op)]
    for i in top:
        yield "erase function", _erase([i]), i
    if dead:
        yield "erase all dead ops", _erase_dead_fixpoint(), -1
    for chunk in (8, 4, 2, 1):
        for k in range(0, len(dead), chunk):
            yield "erase dead ops", _erase(dead[k:k + chunk]), dead[k]
    for i in reversed(effect):
        yield "erase op", _erase([i]), i
    for i, j in reversed(operands):
        yield "operand to argument", _to_argument(i, j), i
    for i in funcs:
        yield "drop unused arguments", _drop_unused_arguments(i), i
        yield "drop attributes", _drop_attributes(i), i


def _referenced(op: ir.Operation, module: ir.Module) -> bool:
    try:
        name = ir.StringAttr(op.attributes["sym_name"]).value
    except (KeyError, ValueError):
        return False
    return len(re.findall(rf"@{re.escape(name)}\b", str(module))) > 1  # more than its own definition


def _erase(indices: list[int]) -> Mutation:
    def apply(module):
        ops = _ops(module)
        chosen = [ops[i] for i in indices]
        del ops  # no Python handle may outlive the ops an erase frees
        gc.collect()
        if any(not _unused(op) for op in chosen):
            return False
        for op in reversed(chosen):
            op.erase()
        return True

    return apply


def _erase_dead_fixpoint() -> Mutation:
    def apply(module):
        changed = False
        while True:
            dead = [op for op in _ops(module) if _results(op) and _unused(op) and not _op(op).regions]
            gc.collect()
            if not dead:
                return changed
            for op in reversed(dead):
                if _unused(op):
                    op.erase()
            changed = True

    return apply


def _to_argument(i: int, j: int) -> Mutation:
    def apply(module):
        op = _ops(module)[i]
        func = _function_of(op)
        value = _plain(op.operands[j])
        entry = func.regions[0].blocks[0]
        argument = entry.add_argument(value.type, func.location)
        _set_inputs(func, [_plain(a).type for a in entry.arguments])
        op.operands[j] = argument
        return True

    return apply


def _drop_unused_arguments(i: int) -> Mutation:
    def apply(module):
        func = _ops(module)[i]
        entry = func.regions[0].blocks[0]
        unused = [k for k, a in enumerate(entry.arguments) if not list(_plain(a).uses)]
        if not unused:
            return False
        for k in reversed(unused):
            entry.erase_argument(k)
        _set_inputs(func, [_plain(a).type for a in entry.arguments])
        for name in ("arg_attrs",):
            if name in _attr_names(func):
                del func.attributes[name]
        return True

    return apply


KEEP_ATTRIBUTES = {"function_type", "sym_name", "gpu.kernel", "kernel", "cute.kernel", "sym_visibility"}


def _drop_attributes(i: int) -> Mutation:
    def apply(module):
        func = _ops(module)[i]
        names = [a for a in _attr_names(func) if a not in KEEP_ATTRIBUTES]
        if not names:
            return False
        for name in names:
            del func.attributes[name]
        return True

    return apply


def _apply(text: str, mutation: Mutation) -> str | None:
    """The mutated text, or None. In a forked child: the bindings can crash on some edits
    (handles to erased ops), and a crash must only lose that candidate."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_end)
        code = 1
        try:
            result = _apply_here(text, mutation)
            if result is not None:
                with os.fdopen(write_end, "w", encoding="utf-8") as out:
                    out.write(result)
                code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "r", encoding="utf-8") as inp:
        result = inp.read()
    _, status = os.waitpid(pid, 0)
    return result if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and result else None


def _apply_here(text: str, mutation: Mutation) -> str | None:
    with new_context() as ctx, ir.Location.unknown():
        module = parse_module(text, ctx)
        try:
            with plain_values(module):
                if not mutation(module):
                    return None
        except Exception:  # noqa: BLE001  (a candidate the bindings refuse is just not a candidate)
            return None
        if not module.operation.verify():
            return None
        result = str(module)
        try:
            parse_module(result, ctx)
        except ir.MLIRError:
            return None
        return result


def reduce_text(text: str, still_fails: Callable[[str], bool], log=sys.stderr, max_rounds: int = 500) -> str:
    """Greedy fixpoint over the reductions; `still_fails(candidate)` decides."""
    current = text
    for _ in range(max_rounds):
        progress = False
        for kind, mutation, _index in _candidates(current):
            candidate = _apply(current, mutation)
            if candidate is None or len(candidate) >= len(current):
                continue
            if still_fails(candidate):
                print(f"reduce: {kind}: {len(current.splitlines())} -> {len(candidate.splitlines())} lines", file=log)
                current = candidate
                progress = True
                break
        if not progress:
            return current
    return current


def reduce_file(text: str, error: str, arch: str, opt_level: int = 3, log=sys.stderr, python: str | None = None,
                name: str = "<input>") -> str:
    """Reduce `text`; raises `LoweringError` (located in `name`) when it does not parse."""
    with new_context() as ctx:
        try:
            text = str(parse_module(text, ctx))
        except ir.MLIRError as e:
            raise from_mlir_error(e, SourceBuffer(name, text)) from None
        except NestingTooDeep as e:
            raise LoweringError(Diagnostic("error", str(e), SourceLocation(name, e.line, e.col))) from None
    with Worker(python) as worker:
        def still_fails(candidate: str) -> bool:
            result = worker.compile({"ir": candidate, "arch": arch, "opt_level": opt_level})
            return not result["ok"] and error in result["error"]

        if not still_fails(text):
            first = worker.compile({"ir": text, "arch": arch, "opt_level": opt_level})
            said = "it compiles" if first["ok"] else "its error does not contain the text"
            raise ReduceError(f"the input does not fail with '{error}' for {arch}: {said}")
        return reduce_text(text, still_fails, log)
