"""Reproducer folders: `reproducers/<name>/{repro.mlir, repro.py, case.json}`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from lowering.repro.runner import REPO_ROOT

REPRODUCERS = REPO_ROOT / "reproducers"
STATUSES = ("reproduces", "fixed", "changed")
WORKAROUNDS = ("ok", "fails", "none")


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
    recorded: dict = field(default_factory=dict)  # version -> arch -> [status, workaround]
    error_also: list[str] = field(default_factory=list)  # the same failure worded by another toolkit
    meta: dict = field(default_factory=dict)

    @property
    def ir(self) -> str:
        return (self.folder / "repro.mlir").read_text(encoding="utf-8")

    def error_for(self, arch: str) -> str:
        return self.error.replace("{arch}", arch)

    def workaround_for(self, arch: str) -> str | None:
        return self.workaround.replace("{arch}", arch) if self.workaround else None

    def classify(self, arch: str, ok: bool, error: str) -> str:
        if ok:
            return "fixed"
        texts = [self.error, *self.error_also]
        return "reproduces" if any(t.replace("{arch}", arch) in error for t in texts) else "changed"


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
            meta=meta,
        )
    return cases
