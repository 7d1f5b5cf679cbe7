"""Located diagnostics: what passes, the pipeline parser and the tools report.

MLIR reports locations as `loc("-":line:col)` for IR parsed from a string; a
`SourceBuffer` maps those back to the real file name and, for `--split-input-file`
chunks, to the line in the whole file, the way `mlir-opt` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cute_lowering.mlir import ir

_PARSED_BUFFER_NAME = "-"  # the buffer name MLIR gives IR parsed from a Python string


@dataclass(frozen=True)
class SourceLocation:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    severity: str  # "error", "warning", "remark" or "note"
    message: str
    location: SourceLocation | None = None
    notes: tuple["Diagnostic", ...] = ()

    def format(self, source: "SourceBuffer | None" = None) -> str:
        where = f"{self.location}: " if self.location else ""
        lines = [f"{where}{self.severity}: {self.message}"]
        snippet = source.caret(self.location) if source else None
        if snippet:
            lines.append(snippet)
        for note in self.notes:
            lines.append(note.format(source))
        return "\n".join(lines)


class LoweringError(Exception):
    """A failure carrying located diagnostics; tools print them, never a traceback."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.format() for d in self.diagnostics))


class CheckFailed(LoweringError):
    """A check pass (check-collectives) found bugs in the IR it checked: the input's
    author's to fix, not a failure of the toolkit."""


@dataclass
class SourceBuffer:
    """Text handed to the parser, with where it came from in the user's file."""

    name: str  # file name to show ("<stdin>" for standard input)
    text: str
    first_line: int = 1  # line of the whole file on which this buffer starts

    def locate(self, loc: ir.Location | None) -> SourceLocation | None:
        """The most useful file:line:col inside an MLIR location, mapped to the user's file."""
        found = _file_location(loc)
        if found is None:
            return None
        file, line, col = found
        if file == _PARSED_BUFFER_NAME:
            return SourceLocation(self.name, line + self.first_line - 1, col)
        return SourceLocation(file, line, col)

    def caret(self, location: SourceLocation | None) -> str | None:
        """The source line and a caret under the column, for locations in this buffer."""
        if location is None or location.file != self.name:
            return None
        index = location.line - self.first_line
        lines = self.text.splitlines()
        if not 0 <= index < len(lines):
            return None
        return f"{lines[index]}\n{' ' * max(location.col - 1, 0)}^"


def nearest_location(op) -> ir.Location | None:
    """The op's location, or its nearest enclosing op's when its own says nothing.

    CuTeDSL gives source locations to kernels and functions but traces most ops
    inside them as `loc(unknown)`: the kernel is then the best place to point at.
    """
    current = op
    while current is not None:
        loc = current.location
        if _file_location(loc) is not None:
            return loc
        current = current.parent
    return op.location


def _file_location(loc: ir.Location | None) -> tuple[str, int, int] | None:
    """Depth-first search for a file location: name -> child, callsite -> callee, fused -> first."""
    if loc is None:
        return None
    if loc.is_a_file():
        return loc.filename, loc.start_line, loc.start_col
    if loc.is_a_name():
        return _file_location(loc.child_loc)
    if loc.is_a_callsite():
        return _file_location(loc.callee) or _file_location(loc.caller)
    if loc.is_a_fused():
        for inner in loc.locations:
            found = _file_location(inner)
            if found:
                return found
    return None


_SEVERITY = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.REMARK: "remark",
    ir.DiagnosticSeverity.NOTE: "note",
}


def from_mlir(info, source: SourceBuffer) -> Diagnostic:
    """Convert an MLIR `DiagnosticInfo` (from an `MLIRError`) into ours."""
    return Diagnostic(
        severity=_SEVERITY.get(info.severity, "error"),
        message=info.message,
        location=source.locate(info.location),
        notes=tuple(from_mlir(n, source) for n in info.notes),
    )


def from_mlir_error(error: ir.MLIRError, source: SourceBuffer, context: str = "") -> LoweringError:
    diagnostics = [from_mlir(d, source) for d in error.error_diagnostics]
    if not diagnostics:
        diagnostics = [Diagnostic("error", f"{context}{error}".strip())]
    return LoweringError(diagnostics)


@dataclass
class DiagnosticSink:
    """Collects what passes report while they run (remarks for ops left alone)."""

    source: SourceBuffer
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def emit(self, severity: str, message: str, loc: ir.Location | None = None) -> None:
        self.diagnostics.append(Diagnostic(severity, message, self.source.locate(loc)))

    def remark(self, message: str, loc: ir.Location | None = None) -> None:
        self.emit("remark", message, loc)

    def error(self, message: str, loc: ir.Location | None = None) -> None:
        self.emit("error", message, loc)
