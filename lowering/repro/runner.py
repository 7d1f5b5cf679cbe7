"""Run compile jobs in subprocesses (`worker.py`), surviving compilers that abort.

An `LLVM ERROR` ends the process that meets it, so no compile runs in the caller's
process. One worker takes a batch; when it dies, the job it had started is recorded as
failed with what it wrote to stderr (the `LLVM ERROR: ...` line), and a fresh worker
takes the rest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

WORKER = Path(__file__).with_name("worker.py")
REPO_ROOT = Path(__file__).resolve().parents[2]


def worker_env(extra_path: bool = True) -> dict[str, str]:
    env = dict(os.environ)
    if extra_path:  # so that a venv without our package installed can still import it
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
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
