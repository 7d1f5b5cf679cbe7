"""`lowering-repro matrix`: the reproducers (and a survey of constructs) per CuTeDSL version.

One venv per version (`lowering/repro/venvs.py`: that nvidia-cutlass-dsl and our declared
dependencies, and our package installed editable from this checkout). In each, `lowering-repro
run --json` runs with that version's bindings; where the bindings cannot host our passes (before 4.6:
`PassManager.add` takes no Python-defined pass), the plain compiles run through the
standalone worker and the workaround is recorded as `not measured`.

Recorded results are data: `reproducers/MATRIX.json` (what was measured, errors included),
`reproducers/MATRIX.md` (rendered from it) and, per case, `recorded` in its `case.json`
(version -> target -> {status, workaround, error, workaround_error}). So:

- without `--write` nothing is written: the run prints what it measured against the
  record, cell by cell;
- with `--write` the measured cells are merged in: a cell (version, case, target; for
  the survey, version, construct, target, opt-level) that was measured replaces the
  recorded one, every other cell stays as it was;
- a version whose environment is broken (our package does not import in its venv, or
  `run --json` fails there) is not measured at all, records nothing, and the run says
  why and exits 1. `--render-only` redoes MATRIX.md and the cases from MATRIX.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cute_lowering.files import write_text
from cute_lowering.repro.cases import NOT_HERE, REPRODUCERS, load_cases
from cute_lowering.repro.constructs import CONSTRUCTS, construct_ir
from cute_lowering.repro.releases import LEGEND, Notes, code_span, release_table, sorted_versions
from cute_lowering.repro.runner import error_summary, run_cases, run_jobs, worker_env
from cute_lowering.repro.venvs import venv_python

SURVEY_ARCHS = ("sm_80", "sm_90a", "sm_100a")
SURVEY_OPT_LEVELS = (0, 1, 2, 3)
CELL_FIELDS = ("status", "workaround", "error", "workaround_error")


class NotMeasured(Exception):
    """The release's environment is broken for us: nothing measured there may be recorded."""


# Our package runs with a release when it imports there and the bindings take Python-defined
# passes (PassManager.add(callable, ...): 4.6 on; before, add() takes a pipeline string only).
# Exit 3: it does not import (the venv is broken for us); any other failure: the bindings.
PACKAGE_PROBE = """
import sys
try:
    import cute_lowering.repro.cli, cute_lowering.pipeline, cute_lowering.passes
except Exception as e:
    print(f"{type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(3)
from cute_lowering.mlir import ir, passmanager
with ir.Context():
    passmanager.PassManager("builtin.module").add(lambda op, p: None, name="Probe", argument="probe")
"""
DOES_NOT_IMPORT = 3


def package_runs(python: str, env: dict) -> str | None:
    """None if our package runs with `python`'s CuTeDSL, else why not (the line of the error that says it).

    Raises NotMeasured where it does not even import: a venv without our dependencies
    (numpy) says nothing about the release.
    """
    proc = subprocess.run([python, "-c", PACKAGE_PROBE], capture_output=True, text=True, env=env)
    if proc.returncode == 0:
        return None
    why = error_summary(proc.stderr) or f"exit status {proc.returncode}"
    if proc.returncode == DOES_NOT_IMPORT:
        raise NotMeasured(f"our package does not import there ({why})")
    return why


def measure(version: str, python: str, deps: str | None = None, log=sys.stderr,
            root: Path | None = None) -> tuple[list[dict], str | None]:
    """`run --json` records for every case on every survey arch, and why our passes did not run (None: they ran).

    `deps`: a folder put on PYTHONPATH in the venv, holding our package's own dependencies
    (numpy) for release venvs that have nvidia-cutlass-dsl alone. Raises NotMeasured where
    the environment is broken.
    """
    env = worker_env()
    if deps:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), deps]))
    archs = ",".join(SURVEY_ARCHS)
    why_not = package_runs(python, env)
    if why_not is None:
        proc = subprocess.run([python, "-m", "cute_lowering.repro.cli", "run", "--json", "--arch", archs],
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise NotMeasured(f"`lowering-repro run --json` failed there: {error_summary(proc.stderr)}")
        return json.loads(proc.stdout), None
    print(f"matrix: {version}: our passes cannot run there ({why_not}); plain compiles only", file=log)
    cases = list(load_cases(root or REPRODUCERS).values())
    return run_cases(cases, list(SURVEY_ARCHS), python=python, workaround=False), why_not


def survey(python: str) -> list[dict]:
    jobs, keys = [], []
    for name in CONSTRUCTS:
        for arch in SURVEY_ARCHS:
            for opt in SURVEY_OPT_LEVELS:
                jobs.append({"ir": construct_ir(name), "arch": arch, "opt_level": opt})
                keys.append((name, arch, opt))
    return [{"name": n, "arch": a, "opt_level": o, "ok": r["ok"], "error": error_summary(r["error"])}
            for (n, a, o), r in zip(keys, run_jobs(jobs, python=python))]


def _summarized(record: dict) -> dict:
    return {
        "name": record["name"],
        "arch": record["arch"],
        "status": record["status"],
        "workaround": record["workaround"],
        "error": error_summary(record.get("error", "")),
        "workaround_error": error_summary(record.get("workaround_error", "")),
    }


def run_matrix(versions: list[str], cache_dir: str | None, output: str, write: bool = False,
               update_cases: bool = True, deps: str | None = None, log=sys.stderr, out=None,
               root: Path | None = None) -> int:
    """Measure `versions`, print them against the record, and with `write` merge them in.

    Every venv is made first (a release that does not exist fails before minutes of
    compiling); exit status 1 when a version's environment was broken (nothing recorded
    for it), else 0.
    """
    root, out = root or REPRODUCERS, out or sys.stdout
    pythons = {version: venv_python(version, cache_dir, log) for version in versions}
    measured, broken = {}, {}
    for version, python in pythons.items():
        try:
            records, why_not = measure(version, python, deps, log, root)
        except NotMeasured as e:
            broken[version] = str(e)
            print(f"matrix: {version}: not measured, nothing recorded: {e}", file=log)
            continue
        for r in records:
            if r["status"] == NOT_HERE:  # not measured: the recorded cell stays
                print(f"matrix: {version}: {r['name']} {r['arch']} not measured: {r['error']}", file=log)
        measured[version] = {"package_ran": why_not is None, "package_error": why_not, "deps": deps,
                             "records": [_summarized(r) for r in records if r["status"] != NOT_HERE],
                             "survey": survey(python)}
        print(f"matrix: {version} done", file=log)
    data_path = Path(output).with_suffix(".json")
    recorded = json.loads(data_path.read_text(encoding="utf-8")) if data_path.exists() else {}
    print_comparison(measured, recorded, out)
    if not measured:
        print("matrix: nothing measured, nothing written", file=log)
    elif write:
        merged = merge(recorded, measured)
        data_path.parent.mkdir(parents=True, exist_ok=True)
        write_text(str(data_path), json.dumps(merged, indent=1) + "\n")
        render(merged, output, update_cases, root, only=list(measured))
        print(f"matrix: merged {', '.join(measured)} into {data_path}, {output}"
              + (" and the cases' case.json" if update_cases else ""), file=log)
    else:
        print(f"matrix: nothing written (--write merges the measured cells into {data_path}, {output}"
              " and the cases' case.json, keeping every other cell)", file=log)
    for version, why in broken.items():
        print(f"matrix: {version}: not recorded: {why}", file=log)
    return 1 if broken else 0


def merge(recorded: dict, measured: dict) -> dict:
    """MATRIX.json's data with `measured` merged in: a measured cell replaces its recorded one
    (records by case and target, the survey by construct, target and opt-level), every other
    cell and every other version stays; versions in release order."""
    merged = {v: dict(data) for v, data in recorded.items()}
    for version, new in measured.items():
        old = merged.get(version, {})
        records = {(r["name"], r["arch"]): r for r in old.get("records", [])}
        records.update({(r["name"], r["arch"]): r for r in new["records"]})
        survey_cells = {(r["name"], r["arch"], r["opt_level"]): r for r in old.get("survey", [])}
        survey_cells.update({(r["name"], r["arch"], r["opt_level"]): r for r in new["survey"]})
        merged[version] = {**old, **{k: v for k, v in new.items() if k not in ("records", "survey")},
                           "records": list(records.values()), "survey": list(survey_cells.values())}
    return {v: merged[v] for v in sorted_versions(merged)}


def print_comparison(measured: dict, recorded: dict, out) -> None:
    """Each measured version: its cells, those that differ from the record shown beside it."""
    def shown(r: dict | None) -> str:
        return f"{r['status']} / {r['workaround']}" if r else "not recorded"

    for version, data in measured.items():
        before = {(r["name"], r["arch"]): r for r in recorded.get(version, {}).get("records", [])}
        differ = [r for r in data["records"] if shown(r) != shown(before.get((r["name"], r["arch"])))]
        print(f"{version}: {len(data['records'])} cells measured, {len(data['records']) - len(differ)} as recorded"
              + (", these differ:" if differ else ""), file=out)
        for r in differ:
            print(f"  {r['name']} {r['arch']}: {shown(r)} (recorded: {shown(before.get((r['name'], r['arch'])))})"
                  + (f": {r['error']}" if r["status"] in ("changed", "not parsed") else ""), file=out)
        survey_before = {(r["name"], r["arch"], r["opt_level"]): r["ok"]
                         for r in recorded.get(version, {}).get("survey", [])}
        moved = [r for r in data["survey"] if survey_before.get((r["name"], r["arch"], r["opt_level"])) != r["ok"]]
        if moved:
            print(f"  constructs: {len(moved)} of {len(data['survey'])} compiles differ from the record", file=out)


def render_from_json(output: str, update_cases: bool = True, root: Path | None = None) -> None:
    data_path = Path(output).with_suffix(".json")
    render(json.loads(data_path.read_text(encoding="utf-8")), output, update_cases, root)


def render(measured: dict, output: str, update_cases: bool = True, root: Path | None = None,
           only: list[str] | None = None) -> None:
    """MATRIX.md from MATRIX.json's data, and the cases' `recorded` updated from it: the cells of
    the versions in `only` (default: every version in `measured`) replace theirs, every other
    recorded cell stays."""
    versions = list(measured)
    root = root or REPRODUCERS
    cases = load_cases(root)
    if update_cases:
        for case in cases.values():
            recorded = {v: dict(cells) for v, cells in case.recorded.items()}
            for v in only if only is not None else versions:
                cells = {r["arch"]: {k: r[k] for k in CELL_FIELDS}
                         for r in measured[v]["records"] if r["name"] == case.name}
                if cells:
                    recorded.setdefault(v, {}).update(cells)
            meta = {k: val for k, val in case.meta.items() if k not in ("versions_failing", "versions_fixed")}
            meta["recorded"] = {v: recorded[v] for v in sorted_versions(recorded)}
            write_text(str(case.folder / "case.json"), json.dumps(meta, indent=2) + "\n")
        cases = load_cases(root)

    lines = [
        "# Reproducers across CuTeDSL releases",
        "",
        f"Measured by `lowering-repro matrix --versions {','.join(versions)}` (a venv per release with"
        " nvidia-cutlass-dsl alone, no GPU: CuTeDSL compiles to cubin for any target). Each cell: the"
        " status of the case's `repro.mlir` through that release's own `cute.compile` pipeline string"
        " (opt-level 3), or for a host case its host JIT, / the case's workaround. " + LEGEND,
        "",
        "The errors behind `changed`, `not parsed` and a failing workaround are the numbered notes"
        " under each table; the full data, errors included, is `MATRIX.json`, and per case"
        " `recorded` in its `case.json`.",
        "",
    ]
    for case in cases.values():
        notes = Notes()
        archs = case.targets(list(SURVEY_ARCHS))
        lines += [f"## {case.name}", "", f"{case.summary}. Recorded error: `{case.error}`.", ""]
        lines += release_table(case, versions, archs, notes)
        if notes.texts:
            lines += [""] + notes.lines()
        lines.append("")
    ran = [v for v in versions if measured[v]["package_ran"]]
    why = {}
    for v in versions:
        if v not in ran:
            why.setdefault(measured[v].get("package_error") or "unknown", []).append(v)
    lines += ["Our passes (the `cute_lowering` package, hence the workaround column) ran on: "
              + (", ".join(ran) or "none") + "; not on: "
              + ("; ".join(f"{', '.join(vs)} ({code_span(reason)})" for reason, vs in why.items()) or "none") + "."]
    if any("add(): incompatible function arguments" in reason for reason in why):
        lines.append("(Before 4.6 the bindings' `PassManager.add` takes a pipeline string only, not a"
                     " Python-defined pass, so our passes cannot run there: the workaround is not measured.)")
    deps = {measured[v].get("deps") for v in ran} - {None}
    if deps:
        lines.append("Our package's own dependencies (numpy) came from a folder on PYTHONPATH (`--deps`),"
                     " for the release venvs that hold nvidia-cutlass-dsl alone.")
    lines.append("")

    lines += ["## Constructs checked", "",
              f"Each construct of `lowering/repro/constructs.py`, compiled alone for {', '.join(SURVEY_ARCHS)}"
              f" at opt-levels {', '.join(map(str, SURVEY_OPT_LEVELS))} ({len(SURVEY_ARCHS) * len(SURVEY_OPT_LEVELS)}"
              " compiles per release). `ok` = all compiled; otherwise the failing targets, with the note"
              " of their error.", "",
              "| construct | " + " | ".join(versions) + " |", "| --- | " + " | ".join("---" for _ in versions) + " |"]
    notes = Notes()
    never_failed = []
    for name in CONSTRUCTS:
        cells, failed_any = [], False
        for v in versions:
            failing = [r for r in measured[v]["survey"] if r["name"] == name and not r["ok"]]
            failed_any |= bool(failing)
            if not failing:
                cells.append("ok")
                continue
            archs = ",".join(sorted({r["arch"] for r in failing}))
            refs = " ".join(sorted({notes.ref(r["error"]) for r in failing}))
            parse = all(r["error"].startswith("parse error") for r in failing)
            cells.append(("not parsed " if parse else f"fails {archs} ") + refs)
        if not failed_any:
            never_failed.append(name)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [""] + notes.lines()
    aborted = sorted({r["name"] for v in versions for r in measured[v]["survey"] if "LLVM ERROR" in r["error"]})
    lines += ["", "Never failed, any release, target or opt-level: " + (", ".join(never_failed) or "none") + ".",
              "`LLVM ERROR` (a process abort) seen for: " + (", ".join(aborted) or "no construct") + ".", ""]
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    write_text(str(output), "\n".join(lines))
