"""Reproducer folders: `reproducers/<name>/{repro.mlir, repro.py, case.json}`.

`reproducers/` is installed with the package as `cute_lowering.reproducers` (data only,
pyproject's package-dir): from a source checkout (editable install) it is the checkout's own
folder, from a wheel the copy beside the package's modules.

A case's `stage` says where the failure is: a GPU compile stage (`ptxas`, `libNVVM`,
`llvm-translation`, ...: `repro.mlir` goes through `cute.compile`'s own pipeline for a
target) or `host` (`repro.mlir` is host IR JIT-compiled for this machine's CPU by the
LLVM bundled with CuTeDSL, through its `ExecutionEngine`; the target is `host`).
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass, field
from pathlib import Path

# a folder on disk in both installs (the package is never zipped)
REPRODUCERS = Path(str(importlib.resources.files("cute_lowering.reproducers")))
# reproduces: fails with the recorded error; fixed: compiles; changed: fails with another
# error; not parsed: the release cannot parse the IR (written for a newer release); not here:
# this machine lacks a feature the case needs (`requires`), so it was not compiled.
NOT_HERE = "not here"
STATUSES = ("reproduces", "fixed", "changed", "not parsed", NOT_HERE)
WORKAROUNDS = ("ok", "fails", "none", "not measured")
HOST = "host"  # the target of host-stage cases
PARSE_ERROR = "parse error: "  # how worker.py starts the error of IR that does not parse


@dataclass
class Case:
    name: str
    folder: Path
    summary: str
    construct: str
    stage: str
    error: str  # may hold '{arch}'
    archs: list[str]
    compiles_on: list[str]
    workaround: str | None
    recorded: dict = field(default_factory=dict)  # version -> arch -> {status, workaround, error}
    error_also: list[str] = field(default_factory=list)  # the same failure worded by another toolkit
    expected: str = ""  # what the compiler should do instead (the report's "Expected behaviour")
    meta: dict = field(default_factory=dict)

    @property
    def host(self) -> bool:
        return self.stage == HOST

    def targets(self, requested: list[str] | None) -> list[str]:
        """The targets to run on: the requested ones, or the case's own; a host case has one."""
        if self.host:
            return [HOST]
        return requested or self.archs

    def job(self, arch: str, opt_level: int = 3, workaround: bool = False) -> dict:
        """A job for runner.run_jobs / worker.py."""
        job = {"ir": self.ir, "arch": arch, "opt_level": opt_level, "stage": HOST if self.host else "gpu"}
        if workaround and self.workaround:
            job["workaround"] = self.workaround_for(arch)
        return job

    @property
    def requires(self) -> dict:
        """What the machine must have for the case to show its failure (lowering/repro/features.py)."""
        return self.meta.get("requires", {})

    def missing_here(self) -> str | None:
        """None where this machine has what the case needs, else the sentence that names what it lacks."""
        from cute_lowering.repro.features import missing

        lacking = missing(self.requires)
        if not lacking:
            return None
        return f"this case needs {' and '.join(lacking)}, which this machine lacks: not compiled here"

    @property
    def ir(self) -> str:
        return (self.folder / "repro.mlir").read_text(encoding="utf-8")

    def error_for(self, arch: str) -> str:
        return self.error.replace("{arch}", arch)

    def expected_for(self, arch: str) -> str:
        return self.expected.replace("{arch}", arch)

    def workaround_for(self, arch: str) -> str | None:
        return self.workaround.replace("{arch}", arch) if self.workaround else None

    def classify(self, arch: str, ok: bool, error: str) -> str:
        if ok:
            return "fixed"
        texts = [self.error, *self.error_also]
        if any(t.replace("{arch}", arch) in error for t in texts):
            return "reproduces"
        return "not parsed" if error.startswith(PARSE_ERROR) else "changed"

    def recorded_cell(self, version: str, arch: str) -> dict | None:
        """{status, workaround, error} recorded for `version` on `arch`, or None."""
        cell = self.recorded.get(version, {}).get(arch)
        if cell is None or isinstance(cell, dict):
            return cell
        return {"status": cell[0], "workaround": cell[1], "error": ""}  # the older [status, workaround] form


def load_cases(root: Path = REPRODUCERS) -> dict[str, Case]:
    cases = {}
    for meta_path in sorted(root.glob("*/case.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        cases[meta["name"]] = Case(
            name=meta["name"],
            folder=meta_path.parent,
            summary=meta["summary"],
            construct=meta["construct"],
            stage=meta["stage"],
            error=meta["error"],
            error_also=list(meta.get("error_also", [])),
            archs=list(meta["archs"]),
            compiles_on=list(meta.get("compiles_on", [])),
            workaround=meta.get("workaround") or None,
            recorded=meta.get("recorded", {}),
            expected=meta.get("expected", ""),
            meta=meta,
        )
    return cases
