"""The wheel installs one import name of our own, `cute_lowering` (issue 36, item 6).

`lowering/` is installed as `cute_lowering`, `kernels/` as `cute_lowering.kernels` and
`reproducers/` as the data package `cute_lowering.reproducers` (pyproject's package-dir):
a top-level `kernels` would be Hugging Face's, which transformers imports. Built here from a
copy of the checkout (about 2 s), installed with `pip install --target` beside a stand-in
top-level `kernels` package, and run from outside the checkout: both import, and
`lowering-repro` finds its cases in the installed copy.

(rename.py: leave this file. It imports the other, top-level `kernels` on purpose.)
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"lowering": "cute_lowering", "kernels": "cute_lowering/kernels", "reproducers": "cute_lowering/reproducers"}


def _setuptools_here() -> bool:
    try:
        return int(importlib.metadata.version("setuptools").split(".")[0]) >= 68
    except importlib.metadata.PackageNotFoundError:
        return False


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of the checkout as it is (its files copied: the build writes build/ and egg-info)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path_factory.mktemp("dist")
    # setuptools from this venv where it is recent enough (no index needed), else pip's isolated build
    isolation = ["--no-build-isolation"] if _setuptools_here() else []
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(out), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (found,) = out.glob("cute_lowering-*.whl")
    return found


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def test_the_only_top_level_name_is_cute_lowering(wheel):
    tops = {name.split("/")[0] for name in _names(wheel) if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"cute_lowering"}
    with zipfile.ZipFile(wheel) as z:
        top_level = next(n for n in z.namelist() if n.endswith(".dist-info/top_level.txt"))
        assert z.read(top_level).decode().split() == ["cute_lowering"]


def test_every_module_and_reproducer_is_in_the_wheel(wheel):
    """pyproject lists the packages one by one: a new subpackage left out of it fails here."""
    names = set(_names(wheel))
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *FOLDERS],
                             cwd=REPO, capture_output=True, text=True).stdout.split()
    if not tracked:  # not a git checkout: the files as they are
        tracked = [str(p.relative_to(REPO)) for f in FOLDERS for p in (REPO / f).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts]
    wanted = {FOLDERS[path.split("/")[0]] + path[len(path.split("/")[0]):] for path in tracked}
    assert wanted - names == set(), f"not in the wheel: {sorted(wanted - names)}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_console_scripts_resolve(wheel):
    with open(REPO / "pyproject.toml", "rb") as f:
        declared = tomllib.load(f)["project"]["scripts"]
    assert set(declared) >= {"lowering-opt", "lowering-repro"}
    with zipfile.ZipFile(wheel) as z:
        entry_points = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))).decode()
    for name, target in declared.items():
        assert f"{name} = {target}" in entry_points
        module, _, attr = target.partition(":")
        assert module.split(".")[0] == "cute_lowering", target
        assert callable(getattr(importlib.import_module(module), attr)), target


def test_installed_beside_huggingface_kernels(wheel, tmp_path):
    """`pip install --target` of the wheel next to a top-level `kernels` (a stand-in for Hugging
    Face's): each imports as itself, and the installed lowering-repro lists its cases from the
    installed copy, run outside the checkout."""
    site = tmp_path / "site"
    stub = site / "kernels"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("HUGGING_FACE = True\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                           str(site), str(wheel)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (stub / "__init__.py").read_text() == "HUGGING_FACE = True\n"
    code = ("import kernels, cute_lowering.kernels, cute_lowering.repro.cases as c\n"
            "assert kernels.HUGGING_FACE and kernels.__file__.startswith(sys.argv[1]), kernels.__file__\n"
            "assert cute_lowering.kernels.__file__.startswith(sys.argv[1]), cute_lowering.kernels.__file__\n"
            "assert str(c.REPRODUCERS).startswith(sys.argv[1]), c.REPRODUCERS\n"
            "print(len(c.load_cases()))\n")
    # the installed copy before this checkout's editable install (PYTHONPATH precedes site-packages)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    work = tmp_path / "elsewhere"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-c", "import sys\n" + code, str(site)], capture_output=True, text=True,
                          env=env, cwd=work, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout) == len(list((REPO / "reproducers").glob("*/case.json"))) > 0
    listed = subprocess.run([sys.executable, "-m", "cute_lowering.repro.cli", "list"], capture_output=True, text=True,
                            env=env, cwd=work, timeout=300)
    assert listed.returncode == 0 and "fp4-truncf-sm90a" in listed.stdout, listed.stderr[-3000:]
