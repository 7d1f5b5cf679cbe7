"""A venv per CuTeDSL release for `lowering-repro matrix` (and `report --release`).

`~/.cache/cute-lowering/venvs/<release>` (or `--cache-dir`) holds `nvidia-cutlass-dsl==<release>`
and every other dependency our package declares (pyproject's `dependencies`: numpy), so
that our package imports there from PYTHONPATH; it is not installed into the venv, whose
CuTeDSL may be older than our package's own range. A venv is used only once its `.ok`
marker names exactly the requirements it was made with: a venv made before a dependency
was declared (the 4.8 venvs that lacked numpy, issue 38) gets the missing ones installed
before it is used, instead of being measured as if the release failed.

A release that is not a version number, or that pip cannot find, is the user's error
(`ReleaseError`, `usage=True`); any other failed install is the environment's (no network,
a broken pip), said with pip's own error line. Either way the venv it was creating is
removed, so that no later run reuses a half-made one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from lowering.repro.runner import REPO_ROOT, RELEASE_VENVS

CUTEDSL = "nvidia-cutlass-dsl"
OK_MARKER = ".ok"
# PEP 440 release numbers as nvidia-cutlass-dsl publishes them (4.8.1, 4.4.0.dev1, 4.5.0rc2)
RELEASE = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")
# what pip says when the version does not exist (pip 21 to 25)
NOT_PUBLISHED = ("No matching distribution found", "Could not find a version that satisfies")


class ReleaseError(Exception):
    """A venv for a release that could not be made; `usage`: the release itself is the mistake."""

    def __init__(self, message: str, release: str, usage: bool):
        super().__init__(message)
        self.release, self.usage = release, usage


def check_release(text: str) -> str:
    """`text` if it reads as a release number, else a `ReleaseError` (usage) saying what one looks like."""
    if not RELEASE.fullmatch(text):
        raise ReleaseError(f"'{text}' is not a release number of {CUTEDSL} (like 4.8.1)", text, usage=True)
    return text


def declared_dependencies(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """Our package's own dependencies other than CuTeDSL, as pyproject declares them."""
    with open(pyproject, "rb") as f:
        dependencies = tomllib.load(f)["project"].get("dependencies", [])
    return [d for d in dependencies if not re.match(rf"{re.escape(CUTEDSL)}\b", d.strip(), re.IGNORECASE)]


def requirements(release: str) -> list[str]:
    """What a release's venv gets: that CuTeDSL and our declared dependencies."""
    return [f"{CUTEDSL}=={release}", *declared_dependencies()]


def venv_root(release: str, cache_dir: str | os.PathLike | None = None) -> Path:
    return (Path(cache_dir) if cache_dir else RELEASE_VENVS) / release


def _pip_error(stderr: str) -> str:
    errors = [line.strip() for line in stderr.splitlines() if line.strip().startswith("ERROR:")]
    return errors[-1] if errors else (stderr.strip().splitlines() or ["(pip said nothing)"])[-1]


def venv_python(release: str, cache_dir: str | os.PathLike | None = None, log=sys.stderr) -> str:
    """The interpreter of `release`'s venv, made (or completed) here if needed; `ReleaseError` if it cannot be."""
    check_release(release)
    root = venv_root(release, cache_dir)
    python = root / "bin" / "python"
    wanted = requirements(release)
    marker = root / OK_MARKER
    if marker.exists() and python.exists():
        if marker.read_text(encoding="utf-8").split("\n") == wanted:
            return str(python)
        print(f"matrix: {root}: installing what it lacks ({' '.join(wanted[1:])})", file=log)
        created = False
    else:
        print(f"matrix: creating {root} (pip install {' '.join(wanted)})", file=log)
        shutil.rmtree(root, ignore_errors=True)  # a venv without its marker is half made: start over
        created = True
    try:
        if created:
            proc = subprocess.run([sys.executable, "-m", "venv", str(root)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise ReleaseError(f"cannot create a venv in {root}: {_pip_error(proc.stderr)}", release, usage=False)
        proc = subprocess.run([str(python), "-m", "pip", "install", "-q", *wanted], capture_output=True, text=True)
        if proc.returncode != 0:
            said = _pip_error(proc.stderr + proc.stdout)
            if any(s in proc.stderr + proc.stdout for s in NOT_PUBLISHED) and CUTEDSL in said:
                raise ReleaseError(f"no release {release} of {CUTEDSL} can be installed here (pip: {said})",
                                   release, usage=True)
            raise ReleaseError(f"pip could not install {' '.join(wanted)} into {root}: {said}", release, usage=False)
        marker.write_text("\n".join(wanted), encoding="utf-8")
    except BaseException:  # KeyboardInterrupt too: no half-made venv is left for a later run to use
        shutil.rmtree(root, ignore_errors=True)
        raise
    return str(python)
