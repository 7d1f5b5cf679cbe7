"""`lowering-repro matrix`: the reproducers (and a survey of constructs) per CuTeDSL version.

One venv per version under a cache dir (default ~/.cache/cute-lowering/venvs/<ver>,
`pip install nvidia-cutlass-dsl==<ver>`). In each, `lowering-repro run --json` runs
with that version's bindings (our package on PYTHONPATH); where our package cannot
import, the plain compiles run through the standalone worker and the workaround is
recorded as `not measured`. Writes `reproducers/MATRIX.md` and, per case, the
statuses seen into its `case.json` (`recorded`, `versions_failing`, `versions_fixed`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lowering.repro.cases import load_cases
from lowering.repro.constructs import CONSTRUCTS, construct_ir
from lowering.repro.runner import run_jobs, worker_env

SURVEY_ARCHS = ("sm_80", "sm_90a", "sm_100a")
SURVEY_OPT_LEVELS = (0, 1, 2, 3)


def venv_python(version: str, cache_dir: str | None, log=sys.stderr) -> str:
    root = Path(cache_dir or os.path.expanduser("~/.cache/cute-lowering/venvs")) / version
    python = root / "bin" / "python"
    if not (root / ".ok").exists():
        print(f"matrix: creating {root} (pip install nvidia-cutlass-dsl=={version})", file=log)
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"nvidia-cutlass-dsl=={version}"], check=True)
        (root / ".ok").touch()
    return str(python)


def package_imports(python: str) -> bool:
    probe = "import lowering.repro.cli, lowering.pipeline, lowering.passes"
    return subprocess.run([python, "-c", probe], capture_output=True, env=worker_env()).returncode == 0


def measure(version: str, python: str, log=sys.stderr) -> tuple[list[dict], bool]:
    """`run --json` records for every case on every survey arch, and whether our package ran there."""
    archs = ",".join(SURVEY_ARCHS)
    if package_imports(python):
        proc = subprocess.run([python, "-m", "lowering.repro.cli", "run", "--json", "--arch", archs],
                              capture_output=True, text=True, env=worker_env())
        if proc.returncode == 0:
            return json.loads(proc.stdout), True
        print(f"matrix: {version}: run --json failed ({proc.stderr.strip()[-300:]}); plain compiles only", file=log)
    from lowering.repro.cli import run_cases

    return run_cases(list(load_cases().values()), list(SURVEY_ARCHS), python=python, workaround=False), False


def survey(python: str) -> list[dict]:
    jobs, keys = [], []
    for name in CONSTRUCTS:
        for arch in SURVEY_ARCHS:
            for opt in SURVEY_OPT_LEVELS:
                jobs.append({"ir": construct_ir(name), "arch": arch, "opt_level": opt})
                keys.append((name, arch, opt))
    return [{"name": n, "arch": a, "opt_level": o, "ok": r["ok"], "error": r["error"]}
            for (n, a, o), r in zip(keys, run_jobs(jobs, python=python))]


def _cell(record: dict | None) -> str:
    if record is None:
        return "-"
    return f"{record['status']} / {record['workaround']}"


def run_matrix(versions: list[str], cache_dir: str | None, output: str, update_cases: bool = True, log=sys.stderr) -> None:
    cases = load_cases()
    results: dict[str, dict[tuple[str, str], dict]] = {}
    surveys: dict[str, list[dict]] = {}
    package_ran: dict[str, bool] = {}
    for version in versions:
        python = venv_python(version, cache_dir, log)
        records, package_ran[version] = measure(version, python, log)
        results[version] = {(r["name"], r["arch"]): r for r in records}
        surveys[version] = survey(python)
        print(f"matrix: {version} done", file=log)

    lines = [
        "# Reproducers across CuTeDSL releases",
        "",
        f"Measured by `lowering-repro matrix --versions {','.join(versions)}` (a venv per release, no GPU:"
        " CuTeDSL compiles to cubin for any target). Each cell: status of `repro.mlir` through that"
        " release's own `cute.compile` pipeline string (opt-level 3) / whether the case's workaround"
        " pass makes it compile.",
        "",
        "status: `reproduces` (fails with the recorded error text), `fixed` (compiles),"
        " `changed` (fails with another error). workaround: `ok`, `fails`, `none`, `not measured`.",
        "",
        "| case | arch | " + " | ".join(versions) + " |",
        "| --- | --- | " + " | ".join("---" for _ in versions) + " |",
    ]
    for case in cases.values():
        for arch in SURVEY_ARCHS:
            cells = [_cell(results[v].get((case.name, arch))) for v in versions]
            lines.append(f"| {case.name} | {arch} | " + " | ".join(cells) + " |")
    lines += ["", "Our passes (the `lowering` package, hence the workaround column) ran on: "
              + ", ".join(v for v in versions if package_ran[v]) + "; not on: "
              + (", ".join(v for v in versions if not package_ran[v]) or "none") + ".", ""]

    lines += ["## Constructs checked", "",
              f"Each construct of `lowering/repro/constructs.py`, compiled alone for {', '.join(SURVEY_ARCHS)}"
              f" at opt-levels {', '.join(map(str, SURVEY_OPT_LEVELS))} ({len(SURVEY_ARCHS) * len(SURVEY_OPT_LEVELS)}"
              " compiles per release). `ok` = all compiled; otherwise the failing targets.", "",
              "| construct | " + " | ".join(versions) + " |", "| --- | " + " | ".join("---" for _ in versions) + " |"]
    never_failed = []
    for name in CONSTRUCTS:
        cells, failed_any = [], False
        for v in versions:
            bad = sorted({r["arch"] for r in surveys[v] if r["name"] == name and not r["ok"]})
            parse = any("parse error" in r["error"] for r in surveys[v] if r["name"] == name and not r["ok"])
            failed_any |= bool(bad)
            cells.append("ok" if not bad else ("not parsed (op unknown)" if parse else "fails " + ",".join(bad)))
        if not failed_any:
            never_failed.append(name)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    aborted = sorted({r["name"] for v in versions for r in surveys[v] if "LLVM ERROR" in r["error"]})
    lines += ["", "Never failed, any release, target or opt-level: " + (", ".join(never_failed) or "none") + ".",
              "`LLVM ERROR: unsupported operation` (a process abort) seen for: " + (", ".join(aborted) or "no construct") + ".", ""]
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).write_text("\n".join(lines), encoding="utf-8")

    if update_cases:
        for case in cases.values():
            meta = dict(case.meta)
            recorded = dict(meta.get("recorded", {}))
            for v in versions:
                recorded[v] = {arch: [r["status"], r["workaround"]] for (n, arch), r in results[v].items() if n == case.name}
            meta["recorded"] = dict(sorted(recorded.items(), key=lambda kv: [int(x) for x in kv[0].split(".")]))
            fails = lambda v: any(s[0] == "reproduces" for a, s in meta["recorded"][v].items() if a in case.archs)
            meta["versions_failing"] = [v for v in meta["recorded"] if fails(v)]
            meta["versions_fixed"] = [v for v in meta["recorded"] if not fails(v)]
            (case.folder / "case.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
