"""Parse and run pass pipelines written in MLIR's textual syntax.

    builtin.module(fptosi-to-ptx{rounding=auto emit=asm}, canonicalize, func.func(cse))

Our passes are Python-defined MLIR passes; everything else is handed to MLIR's own
registry, so the two mix in one `PassManager`, with the verifier after each pass.
Our passes run on the module and walk every op nested in it, so they belong at the
top level; a bare list (`fptosi-to-ptx,canonicalize`) means the same as
`builtin.module(...)`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from cute_lowering.diagnostics import (
    CheckFailed,
    Diagnostic,
    DiagnosticSink,
    LoweringError,
    SourceBuffer,
    SourceLocation,
    from_mlir_error,
)
from cute_lowering.mlir import ir, passmanager, plain_values
from cute_lowering.registry import OptionError, PassInfo, get_pass
from cute_lowering.rewriting import PassCrash
import cute_lowering.passes  # noqa: F401  (each pass registers itself in the registry on import)

PIPELINE_BUFFER = "<pass-pipeline>"

# Real pipelines nest a few op levels (builtin.module(gpu.module(func.func(...))));
# the parser and `Element.mentions` recurse once per level, so a limit far above any
# real use and far below Python's recursion limit turns absurd input into an error.
MAX_NESTING = 64


@dataclass
class Element:
    """`name{options}(children)` at `column` (1-based) of the pipeline text."""

    name: str
    options: str | None
    children: list["Element"] | None
    column: int
    text: str  # the element exactly as written

    def mentions(self) -> list["Element"]:
        """This element and everything nested in it."""
        found = [self]
        for child in self.children or []:
            found += child.mentions()
        return found


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.depth = 0  # '(' levels open at `pos`

    def fail(self, message: str, pos: int | None = None) -> LoweringError:
        col = (self.pos if pos is None else pos) + 1
        return LoweringError(Diagnostic("error", message, SourceLocation(PIPELINE_BUFFER, 1, col)))

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def elements(self, closing: str | None) -> list[Element]:
        items = []
        while True:
            self.skip_space()
            if closing and self.text.startswith(closing, self.pos) and not items:
                return items  # empty nested pipeline: anchor()
            items.append(self.element())
            self.skip_space()
            if self.pos < len(self.text) and self.text[self.pos] == ",":
                self.pos += 1
                continue
            return items

    def element(self) -> Element:
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "-_."):
            self.pos += 1
        name = self.text[start : self.pos]
        if not name:
            raise self.fail("expected a pass or op name")
        options = children = None
        if self.text.startswith("{", self.pos):
            open_at = self.pos
            self.pos = self.balanced(open_at, "{", "}")
            options = self.text[open_at + 1 : self.pos - 1]
        if self.text.startswith("(", self.pos):
            if self.depth == MAX_NESTING:
                raise self.fail(f"pipeline nested deeper than {MAX_NESTING} levels: not supported")
            self.depth += 1
            self.pos += 1
            children = self.elements(")")
            self.depth -= 1
            self.skip_space()
            if not self.text.startswith(")", self.pos):
                raise self.fail("expected ',' or ')'")
            self.pos += 1
        return Element(name, options, children, start + 1, self.text[start : self.pos])

    def balanced(self, open_at: int, opening: str, closing: str) -> int:
        depth, pos, quote = 0, open_at, False
        while pos < len(self.text):
            ch = self.text[pos]
            if ch == '"':
                quote = not quote
            elif not quote and ch == opening:
                depth += 1
            elif not quote and ch == closing:
                depth -= 1
                if depth == 0:
                    return pos + 1
            pos += 1
        raise self.fail(f"unbalanced '{opening}'", open_at)


def parse_pipeline(text: str) -> list[Element]:
    """The top-level elements of a pipeline, which runs on `builtin.module`."""
    parser = _Parser(text)
    items = parser.elements(None)
    parser.skip_space()
    if parser.pos != len(text):
        raise parser.fail(f"unexpected '{text[parser.pos]}'")
    if len(items) == 1 and items[0].name == "builtin.module" and items[0].children is not None:
        return items[0].children
    for item in items:
        if item.children is not None and item.name == "builtin.module":
            raise parser.fail("'builtin.module(...)' must be the whole pipeline", item.column - 1)
    return items


def split_options(text: str, where: Element) -> list[tuple[str, str]]:
    """`key=value key2="a b" flag` -> [(key, value), ...]; a key given twice is an error located
    at its second use (as MLIR's own options: "may only occur zero or one times")."""
    pairs, pos = [], 0
    # 1-based column of the options' first character: after `name{`
    first_column = where.column + len(where.name) + 1
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        start = pos
        while pos < len(text) and not text[pos].isspace() and text[pos] != "=":
            pos += 1
        key = text[start:pos]
        value = ""
        if pos < len(text) and text[pos] == "=":
            pos += 1
            if pos < len(text) and text[pos] in "\"{":
                closing = '"' if text[pos] == '"' else "}"
                end = text.find(closing, pos + 1)
                if end < 0:
                    raise _located(f"unterminated value for option '{key}'", where)
                value = text[pos + 1 : end]
                pos = end + 1
            else:
                vstart = pos
                while pos < len(text) and not text[pos].isspace():
                    pos += 1
                value = text[vstart:pos]
        earlier = next((v for k, v in pairs if k == key), None)
        if earlier is not None:
            raise LoweringError(Diagnostic(
                "error", f"option '{key}' of '{where.name}' given twice ({key}={earlier}, then {key}={value})",
                SourceLocation(PIPELINE_BUFFER, 1, first_column + start)))
        pairs.append((key, value))
    return pairs


def _located(message: str, element: Element) -> LoweringError:
    return LoweringError(Diagnostic("error", message, SourceLocation(PIPELINE_BUFFER, 1, element.column)))


@dataclass
class PassReport:
    """What one of our passes did in one run."""

    name: str
    counts: dict[str, int]
    descriptions: dict[str, str]
    seconds: float = 0.0
    found_bugs: bool = False  # a check pass that failed on the kernel it checked (CheckFailed)


@dataclass
class PipelineResult:
    passes: list[PassReport] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)  # remarks, warnings

    def counts(self, pass_name: str) -> dict[str, int]:
        """Counts summed over every run of `pass_name` in the pipeline."""
        total: dict[str, int] = {}
        for report in self.passes:
            if report.name == pass_name:
                for key, n in report.counts.items():
                    total[key] = total.get(key, 0) + n
        return total


@dataclass
class _Step:
    element: Element
    info: PassInfo | None  # None: an MLIR pass or a nested op pipeline
    options: dict[str, Any] | None = None


class Pipeline:
    """A parsed, checked pipeline; `run` applies it to a module."""

    def __init__(self, text: str):
        self.text = text
        self.steps: list[_Step] = []
        for element in parse_pipeline(text):
            info = get_pass(element.name)
            if info is None:
                for nested in element.mentions()[1:]:
                    if get_pass(nested.name):
                        raise _located(
                            f"pass '{nested.name}' walks the whole module itself: put it at the "
                            f"top level of the pipeline, not inside '{element.name}(...)'",
                            nested,
                        )
                self.steps.append(_Step(element, None))
                continue
            if element.children is not None:
                raise _located(f"'{element.name}' is a pass, not an op to nest a pipeline in", element)
            try:
                options = info.parse_options(split_options(element.options or "", element))
                # options that are wrong together (min above max): a pass may say so here,
                # before any IR is touched, as a usage error
                check = getattr(info.cls, "check_options", None)
                if check is not None:
                    check(options)
            except OptionError as e:
                raise _located(str(e), element) from None
            self.steps.append(_Step(element, info, options))
        self._check_mlir_passes()

    def _check_mlir_passes(self) -> None:
        """Let MLIR itself validate the elements it owns, before any IR is touched."""
        with ir.Context():
            for step in self.steps:
                if step.info is None:
                    self._add_mlir_element(passmanager.PassManager("builtin.module"), step.element)

    @staticmethod
    def _add_mlir_element(pm: passmanager.PassManager, element: Element) -> None:
        try:
            pm.add(element.text)
        except ValueError as e:
            message = str(e).strip().splitlines()
            # MLIR's parser repeats the pipeline text and a caret: keep its message line.
            detail = next((line.split("error: ", 1)[1] for line in message if "error: " in line), None)
            raise _located(detail or " ".join(line.strip() for line in message if line.strip()), element) from None

    def run(
        self,
        module: ir.Module,
        source: SourceBuffer | None = None,
        *,
        print_ir_after_all: bool = False,
    ) -> PipelineResult:
        """Run on `module` in place. Raises `LoweringError` (with located diagnostics) on failure."""
        source = source or SourceBuffer("<module>", "")
        result = PipelineResult()
        sink = DiagnosticSink(source, result.diagnostics)
        internal_errors: list[Diagnostic] = []
        with module.context:
            pm = passmanager.PassManager("builtin.module")
            pm.enable_verifier(True)
            for step in self.steps:
                self._add_step(pm, step, sink, result, internal_errors, source)
                if print_ir_after_all:
                    # The bundled bindings are built without MLIR's IR printer: print ourselves.
                    pm.add(_ir_printer(step.element.text), name="PrintIR", argument="print-ir")
            try:
                with plain_values():
                    pm.run(module.operation)
            except ir.MLIRError as e:
                error = from_mlir_error(e, source)
                # a pass that failed with its own diagnostics needs no generic "pass failed" line
                generic = not e.error_diagnostics and internal_errors
                diagnostics = internal_errors + ([] if generic else error.diagnostics)
                # only checks failed, on what they checked: the input's bugs, not ours
                checks_only = generic and any(p.found_bugs for p in result.passes) and not any(
                    d.message.startswith("internal error") for d in internal_errors
                )
                raise (CheckFailed if checks_only else LoweringError)(diagnostics) from None
        return result

    def _add_step(self, pm, step: _Step, sink, result, internal_errors, source) -> None:
        if step.info is None:
            self._add_mlir_element(pm, step.element)
            return
        try:
            instance = step.info.cls(step.options, sink)
        except Exception as e:  # noqa: BLE001  (a bug in a pass's setup: report, don't raise raw)
            raise _located(f"internal error setting up pass '{step.info.name}': {type(e).__name__}: {e}", step.element)
        report = PassReport(step.info.name, instance.counts, dict(instance.statistics))
        result.passes.append(report)
        pm.add(
            _as_mlir_pass(instance, report, internal_errors, source),
            name=step.info.cls.__name__,
            argument=step.info.name,
            description=step.info.summary,
        )


def _ir_printer(label: str):
    def print_ir(op, _pass):
        import sys

        print(f"// -----// IR Dump After {label} //----- //\n{op}", file=sys.stderr, flush=True)

    return print_ir


def _as_mlir_pass(instance, report: PassReport, internal_errors: list[Diagnostic], source: SourceBuffer):
    """The callable PassManager runs: our pass, timed, with Python errors turned into pass failures."""

    def run(op, pass_):
        start = time.perf_counter()
        try:
            instance.run(op)
        except LoweringError as e:  # a check that found errors: its located diagnostics fail the run
            internal_errors.extend(e.diagnostics)
            report.found_bugs = isinstance(e, CheckFailed)
            pass_.signal_pass_failure()
        except Exception as e:  # a bug in a pass: report it located, fail the pass, no traceback
            where = source.locate(e.location) if isinstance(e, PassCrash) else None
            text = str(e) if isinstance(e, PassCrash) else f"{type(e).__name__}: {e}"
            internal_errors.append(Diagnostic("error", f"internal error in pass '{report.name}': {text}", where))
            pass_.signal_pass_failure()
        finally:
            report.seconds += time.perf_counter() - start

    return run


def run_pipeline(module: ir.Module, pipeline: str, source: SourceBuffer | None = None, **kwargs) -> PipelineResult:
    """Parse `pipeline` and run it on `module` (in place)."""
    return Pipeline(pipeline).run(module, source, **kwargs)
