"""`lowering-repro matrix`: the reproducers (and a survey of constructs) per CuTeDSL version.

One venv per version under a cache dir (default ~/.cache/cute-lowering/venvs/<ver>,
`pip install nvidia-cutlass-dsl==<ver>`, created when missing). In each, `lowering-repro
run --json` runs with that version's bindings (our package on PYTHONPATH); where our
package cannot import, the plain compiles run through the standalone worker and the
workaround is recorded as `not measured`.

Writes what was measured, errors included (`<output>.json`, e.g. reproducers/MATRIX.json),
then from it `reproducers/MATRIX.md` and, per case, `recorded` in its `case.json`:
version -> target -> {status, workaround, error, workaround_error}, each error the line
that says what failed (`runner.error_summary`). `--render-only` redoes the last two
from the JSON without compiling anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lowering.files import write_text
from lowering.repro.cases import load_cases
from lowering.repro.constructs import CONSTRUCTS, construct_ir
from lowering.repro.releases import LEGEND, Notes, code_span, release_table
from lowering.repro.runner import error_summary, release_python, run_cases, run_jobs, worker_env

SURVEY_ARCHS = ("sm_80", "sm_90a", "sm_100a")
SURVEY_OPT_LEVELS = (0, 1, 2, 3)


def venv_python(version: str, cache_dir: str | None, log=sys.stderr) -> str:
    python = release_python(version, cache_dir)
    if python is not None:
        return python
    root = Path(cache_dir or os.path.expanduser("~/.cache/cute-lowering/venvs")) / version
    print(f"matrix: creating {root} (pip install nvidia-cutlass-dsl=={version})", file=log)
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", f"nvidia-cutlass-dsl=={version}"],
                   check=True)
    (root / ".ok").touch()
    return str(root / "bin" / "python")


# Our package runs with a release when it imports there and the bindings take Python-defined
# passes (PassManager.add(callable, ...): 4.6 on; before, add() takes a pipeline string only).
PACKAGE_PROBE = """
import lowering.repro.cli, lowering.pipeline, lowering.passes
from lowering.mlir import ir, passmanager
with ir.Context():
    passmanager.PassManager("builtin.module").add(lambda op, p: None, name="Probe", argument="probe")
"""


def package_runs(python: str, env: dict) -> str | None:
    """None if our package runs with `python`'s CuTeDSL, else why not (the line of the error that says it)."""
    proc = subprocess.run([python, "-c", PACKAGE_PROBE], capture_output=True, text=True, env=env)
    if proc.returncode == 0:
        return None
    return error_summary(proc.stderr) or f"exit status {proc.returncode}"


def measure(version: str, python: str, deps: str | None = None, log=sys.stderr) -> tuple[list[dict], str | None]:
    """`run --json` records for every case on every survey arch, and why our package did not run (None: it ran).

    `deps`: a folder put on PYTHONPATH beside our package, holding its own dependencies
    (numpy) for release venvs that have nvidia-cutlass-dsl alone.
    """
    env = worker_env()
    if deps:
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], deps])
    archs = ",".join(SURVEY_ARCHS)
    why_not = package_runs(python, env)
    if why_not is None:
        proc = subprocess.run([python, "-m", "lowering.repro.cli", "run", "--json", "--arch", archs],
                              capture_output=True, text=True, env=env)
        if proc.returncode == 0:
            return json.loads(proc.stdout), None
        why_not = f"run --json failed: {error_summary(proc.stderr)}"
    print(f"matrix: {version}: our package does not run ({why_not}); plain compiles only", file=log)
    return run_cases(list(load_cases().values()), list(SURVEY_ARCHS), python=python, workaround=False), why_not


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


def run_matrix(versions: list[str], cache_dir: str | None, output: str, update_cases: bool = True,
               deps: str | None = None, log=sys.stderr) -> None:
    measured = {}
    for version in versions:
        python = venv_python(version, cache_dir, log)
        records, why_not = measure(version, python, deps, log)
        measured[version] = {"package_ran": why_not is None, "package_error": why_not, "deps": deps,
                             "records": [_summarized(r) for r in records], "survey": survey(python)}
        print(f"matrix: {version} done", file=log)
    data_path = Path(output).with_suffix(".json")
    data_path.parent.mkdir(parents=True, exist_ok=True)
    write_text(str(data_path), json.dumps(measured, indent=1) + "\n")
    render(measured, output, update_cases)


def render_from_json(output: str, update_cases: bool = True) -> None:
    data_path = Path(output).with_suffix(".json")
    render(json.loads(data_path.read_text(encoding="utf-8")), output, update_cases)


def render(measured: dict, output: str, update_cases: bool = True) -> None:
    """MATRIX.md and the cases' `recorded` from what `run_matrix` measured."""
    versions = list(measured)
    cases = load_cases()
    if update_cases:
        for case in cases.values():
            recorded = {}
            for v in versions:
                cells = {r["arch"]: {k: r[k] for k in ("status", "workaround", "error", "workaround_error")}
                         for r in measured[v]["records"] if r["name"] == case.name}
                if cells:
                    recorded[v] = cells
            meta = {k: val for k, val in case.meta.items() if k not in ("versions_failing", "versions_fixed")}
            meta["recorded"] = recorded
            write_text(str(case.folder / "case.json"), json.dumps(meta, indent=2) + "\n")
        cases = load_cases()

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
    lines += ["Our passes (the `lowering` package, hence the workaround column) ran on: "
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
