"""A venv per CuTeDSL release for `lowering-repro matrix` (and `report --release`).

`~/.cache/cute-lowering/venvs/<release>` (or `--cache-dir`) holds `nvidia-cutlass-dsl==<release>`,
every other dependency our package declares (pyproject's `dependencies`: numpy), and our
package itself, installed editable from the source checkout this one runs from
(`pip install --no-deps -e <checkout>`: `--no-deps`, since the venv's CuTeDSL may be older
than our package's own range; editable, so that the venv runs the checkout's code as it is
now). pip builds the editable install in its own isolated environment, fetching setuptools
from the same index the release came from, so the venv itself needs no setuptools (Python
3.12's venvs have none). A venv is used only once its `.ok` marker names exactly what it was
made with, the checkout's path included: a venv made before a dependency was declared (the
4.8 venvs that lacked numpy, issue 38), or before our package was installed into it (when
it came from PYTHONPATH), or for another checkout, gets what it lacks installed before it
is used, instead of being measured as if the release failed.

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

from cute_lowering.repro.runner import RELEASE_VENVS

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


def package_source() -> Path | None:
    """The source checkout our running package comes from (editable install, or a checkout's
    folders), or None when it is installed from a wheel."""
    import cute_lowering

    root = Path(cute_lowering.__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "lowering" / "__init__.py").is_file():
        return root
    return None


def declared_dependencies(pyproject: Path | None = None) -> list[str]:
    """Our package's own dependencies other than CuTeDSL, as pyproject declares them (from a
    wheel: as its metadata says)."""
    source = package_source()
    if pyproject is None and source is None:
        import importlib.metadata

        dependencies = [r for r in importlib.metadata.requires("cute-lowering") or [] if "extra ==" not in r]
        return [d.split(";")[0].strip() for d in dependencies
                if not re.match(rf"{re.escape(CUTEDSL)}\b", d.strip(), re.IGNORECASE)]
    with open(pyproject or source / "pyproject.toml", "rb") as f:
        dependencies = tomllib.load(f)["project"].get("dependencies", [])
    return [d for d in dependencies if not re.match(rf"{re.escape(CUTEDSL)}\b", d.strip(), re.IGNORECASE)]


def requirements(release: str) -> list[str]:
    """What a release's venv gets: that CuTeDSL and our declared dependencies."""
    return [f"{CUTEDSL}=={release}", *declared_dependencies()]


def package_line(source: Path) -> str:
    """The `.ok` marker's line for our package, installed editable from `source`."""
    return f"-e {source}"


def venv_root(release: str, cache_dir: str | os.PathLike | None = None) -> Path:
    return (Path(cache_dir) if cache_dir else RELEASE_VENVS) / release


def _pip_error(stderr: str) -> str:
    errors = [line.strip() for line in stderr.splitlines() if line.strip().startswith("ERROR:")]
    return errors[-1] if errors else (stderr.strip().splitlines() or ["(pip said nothing)"])[-1]


def install_package(python: str, source: Path, release: str) -> None:
    """Our package into `python`'s venv, editable from `source`, its dependencies left alone."""
    proc = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(source)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ReleaseError(f"pip could not install our package (-e {source}) with {python}: "
                           f"{_pip_error(proc.stderr + proc.stdout)}", release, usage=False)


def ensure_package(python: str, release: str, log=sys.stderr) -> None:
    """Our package in a venv made by other hands (`measure_targets --venvs`): installed from
    this checkout unless it imports there from it already."""
    source = package_source()
    probe = subprocess.run([python, "-c", "import cute_lowering; print(cute_lowering.__file__)"],
                           capture_output=True, text=True)
    if source is None or (probe.returncode == 0 and Path(probe.stdout.strip()).resolve().parents[1] == source):
        return
    print(f"{python}: installing our package (pip install --no-deps -e {source})", file=log)
    install_package(python, source, release)


def venv_python(release: str, cache_dir: str | os.PathLike | None = None, log=sys.stderr) -> str:
    """The interpreter of `release`'s venv, made (or completed) here if needed; `ReleaseError` if it cannot be."""
    check_release(release)
    root = venv_root(release, cache_dir)
    python = root / "bin" / "python"
    wanted = requirements(release)
    source = package_source()
    if source is None:
        raise ReleaseError("the release venvs get our package installed from a source checkout, and this "
                           "cute_lowering is installed from a wheel: run it from a checkout "
                           "(pip install -e <checkout>)", release, usage=False)
    marker = root / OK_MARKER
    if marker.exists() and python.exists():
        if marker.read_text(encoding="utf-8").split("\n") == [*wanted, package_line(source)]:
            return str(python)
        print(f"matrix: {root}: installing what it lacks ({' '.join(wanted[1:])}, our package from {source})",
              file=log)
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
        install_package(str(python), source, release)
        marker.write_text("\n".join([*wanted, package_line(source)]), encoding="utf-8")
    except BaseException:  # KeyboardInterrupt too: no half-made venv is left for a later run to use
        shutil.rmtree(root, ignore_errors=True)
        raise
    return str(python)
