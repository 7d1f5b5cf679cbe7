"""A case's status per CuTeDSL release and target, as a markdown table with its errors.

MATRIX.md and every bug report show the recorded statuses (`case.json` `recorded`, written
by `lowering-repro matrix` from real runs) the same way: a cell names the status, and
every cell that fails otherwise than recorded points to a numbered note holding the
error that release printed, so that "changed" always says what it changed to:

    | release | sm_80 | sm_90a |
    | --- | --- | --- |
    | 4.5.3 | changed [1] / fails [2] | ... |
    | 4.8.1 | reproduces / ok | ... |

    [1] `'llvm.fptrunc' op result #0 must be floating point LLVM type ...`
"""

from __future__ import annotations

from cute_lowering.repro.cases import Case

LEGEND = (
    "status: `reproduces` (fails with the case's recorded error), `changed [n]` (still fails, with "
    "the other error of note n), `not parsed [n]` (the release cannot parse the IR, written for a "
    "newer release: it says nothing of the bug), `fixed` (compiles). After the slash, whether the "
    "case's workaround pass makes it compile: `ok`, `fails [n]` (with the error of note n), `none` "
    "(the case has none), `not measured` (our package could not run with that release)."
)


class Notes:
    """Numbered error notes, one per distinct text."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def ref(self, text: str) -> str:
        text = " ".join(text.split()) or "(no error text recorded)"
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"

    def lines(self) -> list[str]:
        return [f"{i}. {code_span(text)}" for i, text in enumerate(self.texts, 1)]


def code_span(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(record: dict | None, notes: Notes) -> str:
    """One table cell from a recorded {status, workaround, error, workaround_error}."""
    if record is None:
        return "-"
    text = record["status"]
    if text in ("changed", "not parsed"):
        text += " " + notes.ref(record.get("error", ""))
    workaround = record.get("workaround", "none")
    if workaround == "fails" and record.get("workaround_error"):
        workaround += " " + notes.ref(record["workaround_error"])
    return f"{text} / {workaround}"


def release_table(case: Case, versions: list[str], archs: list[str], notes: Notes) -> list[str]:
    """Markdown rows: a release per row, a target per column, from `case.recorded`."""
    lines = ["| release | " + " | ".join(archs) + " |", "| --- | " + " | ".join("---" for _ in archs) + " |"]
    for version in versions:
        cells = [cell(case.recorded_cell(version, arch), notes) for arch in archs]
        lines.append(f"| {version} | " + " | ".join(cells) + " |")
    return lines


def sorted_versions(versions) -> list[str]:
    return sorted(versions, key=lambda v: [int(x) if x.isdigit() else x for x in v.split(".")])


def where_it_reproduces(case: Case) -> str:
    """'sm_90a with 4.6.3, 4.7.1; sm_80 with 4.6.3' from the record, or 'nowhere recorded'."""
    by_arch: dict[str, list[str]] = {}
    for version in sorted_versions(case.recorded):
        for arch in case.recorded[version]:
            if (case.recorded_cell(version, arch) or {}).get("status") == "reproduces":
                by_arch.setdefault(arch, []).append(version)
    if not by_arch:
        return "nowhere recorded"
    return "; ".join(f"{arch} with {', '.join(vs)}" for arch, vs in by_arch.items())
