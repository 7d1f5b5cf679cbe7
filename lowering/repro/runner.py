"""Run compile jobs in subprocesses (`worker.py`), surviving compilers that abort.

An `LLVM ERROR` ends the process that meets it, so no compile runs in the caller's
process. One worker takes a batch; when it dies, the job it had started is recorded as
failed with what it wrote to stderr (the `LLVM ERROR: ...` line), and a fresh worker
takes the rest.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cute_lowering.repro.cases import Case

WORKER = Path(__file__).with_name("worker.py")
RELEASE_VENVS = Path(os.path.expanduser("~/.cache/cute-lowering/venvs"))


def cutedsl_version(python: str | None = None) -> str:
    """The nvidia-cutlass-dsl release installed here, or in the interpreter `python`."""
    # not realpath: a venv's python is a link to the same interpreter, with other packages
    if python is None or os.path.abspath(python) == os.path.abspath(sys.executable):
        try:
            return importlib.metadata.version("nvidia-cutlass-dsl")
        except importlib.metadata.PackageNotFoundError:
            return "unknown"
    out = subprocess.run([python, str(WORKER), "--version"], capture_output=True, text=True, env=worker_env())
    return out.stdout.strip() or "unknown"


def release_python(version: str, cache_dir: str | os.PathLike | None = None) -> str | None:
    """The interpreter of the venv holding nvidia-cutlass-dsl==`version` alone, if it is there."""
    root = Path(cache_dir) if cache_dir else RELEASE_VENVS
    python = root / version / "bin" / "python"
    return str(python) if (root / version / ".ok").exists() and python.exists() else None


def error_summary(text: str) -> str:
    """The line of a compiler error that says what went wrong, whole (never cut)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if "LLVM ERROR" in line:
            return line
    errors = [line for line in lines if "error" in line.lower() and "failure while executing pass pipeline"
              not in line.lower() and not line.lower().startswith("note:")]
    # A line ending in ':' introduces the error ("parse error: Unable to parse module assembly:"):
    # the next error line says what it is.
    said = next((line for line in errors if not line.endswith(":")), errors[0] if errors else None)
    if said is None:
        return lines[0] if lines else ""
    return said[len("error: "):] if said.startswith("error: ") else said


def run_cases(cases: list["Case"], archs: list[str] | None, opt_level: int = 3, python: str | None = None,
              workaround: bool = True) -> list[dict]:
    """One record per (case, arch): status, error text and workaround, as `run --json` prints them."""
    from cute_lowering.repro.cases import NOT_HERE

    plan, jobs, records = [], [], []
    for case in cases:
        lacking = case.missing_here()
        for arch in case.targets(archs):
            if lacking:  # the failure cannot show on this machine: say why, compile nothing
                records.append({"name": case.name, "arch": arch, "opt_level": opt_level, "status": NOT_HERE,
                                "workaround": "not measured" if case.workaround else "none",
                                "workaround_pipeline": case.workaround_for(arch),
                                "expected_error": case.error_for(arch), "error": lacking, "workaround_error": ""})
                continue
            plan.append((case, arch))
            jobs.append(case.job(arch, opt_level))
            if workaround and case.workaround:
                jobs.append(case.job(arch, opt_level, workaround=True))
    results = iter(run_jobs(jobs, python=python) if jobs else [])
    for case, arch in plan:
        plain = next(results)
        with_workaround = next(results) if workaround and case.workaround else None
        if not case.workaround:
            wa = "none"
        elif with_workaround is None:
            wa = "not measured"
        else:
            wa = "ok" if with_workaround["ok"] else "fails"
        records.append({
            "name": case.name,
            "arch": arch,
            "opt_level": opt_level,
            "status": case.classify(arch, plain["ok"], plain["error"]),
            "workaround": wa,
            "workaround_pipeline": case.workaround_for(arch),
            "expected_error": case.error_for(arch),
            "error": plain["error"],
            "workaround_error": with_workaround["error"] if with_workaround else "",
        })
    return records


def worker_env() -> dict[str, str]:
    """The environment of a worker: ours, without a target forced on every compile. Our package
    comes from the worker's interpreter (installed there: `venvs.py` installs it into the
    release venvs), never from PYTHONPATH."""
    env = dict(os.environ)
    env.pop("CUTE_DSL_ARCH", None)
    return env


def _crash_text(stderr: str, returncode: int) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if "LLVM ERROR" in line or "error" in line.lower()]
    text = "\n".join(fatal[-5:] or lines[-5:])
    return f"{text}\n(compiler process exited with status {returncode})".strip()


def run_jobs(jobs: list[dict], python: str | None = None, timeout: float = 600) -> list[dict]:
    """[{"ir", "arch", "opt_level"?, "workaround"?}] -> [{"ok": bool, "error": str}], in order."""
    python = python or sys.executable
    results: list[dict | None] = [None] * len(jobs)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "jobs.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(jobs, f)
        start = 0
        while start < len(jobs):
            proc = subprocess.run(
                [python, str(WORKER), path, str(start)],
                capture_output=True,
                text=True,
                env=worker_env(),
                timeout=timeout,
                cwd=tmp,
            )
            in_flight = None
            for line in proc.stdout.splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(record, dict) or "index" not in record:
                    continue
                if record.get("started"):
                    in_flight = record["index"]
                else:
                    results[record["index"]] = {"ok": record["ok"], "error": record["error"]}
                    in_flight = None
            if in_flight is None:
                missing = [i for i in range(start, len(jobs)) if results[i] is None]
                if missing:  # died before starting any job: nothing will ever run
                    text = _crash_text(proc.stderr, proc.returncode)
                    for i in missing:
                        results[i] = {"ok": False, "error": f"worker failed before compiling: {text}"}
                break
            results[in_flight] = {"ok": False, "error": _crash_text(proc.stderr, proc.returncode)}
            start = in_flight + 1
    return [r or {"ok": False, "error": "no result"} for r in results]


class Worker:
    """One long-lived worker answering jobs one at a time; restarted after an abort."""

    def __init__(self, python: str | None = None):
        self.python = python or sys.executable
        self.proc: subprocess.Popen | None = None
        self.stderr = None

    def _start(self) -> None:
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [self.python, str(WORKER), "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, text=True, env=worker_env(), cwd=tempfile.gettempdir(),
        )

    def compile(self, job: dict) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if line:
            return json.loads(line)
        code = self.proc.wait()
        self.stderr.seek(0)
        text = _crash_text(self.stderr.read(), code)
        self.proc = None
        return {"ok": False, "error": text}

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.proc = None

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
