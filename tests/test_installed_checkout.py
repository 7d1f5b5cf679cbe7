"""bench/installed_checkout.py: the GPU runs refuse a `cute_lowering` that is not this checkout's code.

The installed layout is built here by copying the checkout's modules where pyproject's packages
and package-dir put them (what a wheel holds), so the check runs without pip; then one module
is changed or removed, as a second `pip install --target` without `--upgrade` leaves it.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "installed_checkout.py"
sys.path.insert(0, str(ROOT / "bench"))

import installed_checkout  # noqa: E402


def test_source_dirs_follow_package_dir():
    dirs = installed_checkout.source_dirs()
    assert dirs["cute_lowering"] == ROOT / "lowering"
    assert dirs["cute_lowering.passes"] == ROOT / "lowering" / "passes"
    assert dirs["cute_lowering.kernels"] == ROOT / "kernels"
    assert dirs["cute_lowering.reproducers"] == ROOT / "reproducers"


def _installed_copy(site: pathlib.Path) -> pathlib.Path:
    """The checkout's modules laid out as the wheel installs them under site/cute_lowering."""
    for package, folder in installed_checkout.source_dirs().items():
        target = site.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in folder.glob("*.py"):
            shutil.copyfile(source, target / source.name)
    return site / "cute_lowering"


def _check(site: pathlib.Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    # -S: no site-packages, so no editable install of the checkout is found before site
    return subprocess.run([sys.executable, "-S", str(SCRIPT)], capture_output=True, text=True, env=env, cwd=site)


def test_the_same_files_pass(tmp_path):
    installed = _installed_copy(tmp_path)
    run = _check(tmp_path)
    assert run.returncode == 0, run.stderr
    assert str(installed) in run.stdout


def test_a_changed_and_a_missing_module_are_named(tmp_path):
    installed = _installed_copy(tmp_path)
    (installed / "kernels" / "fmha_sm90_knobs.py").write_text("# an older tree's knobs\n")
    (installed / "passes" / "check_collectives.py").unlink()
    run = _check(tmp_path)
    assert run.returncode == 1
    assert "2 file(s) differ" in run.stderr, run.stderr
    assert "kernels/fmha_sm90_knobs.py" in run.stderr and "lowering/passes/check_collectives.py" in run.stderr
    assert "--upgrade" in run.stderr  # (how to reinstall: pip keeps the old copy without it)


def test_no_package_is_reported_not_raised(tmp_path):
    run = _check(tmp_path)
    assert run.returncode == 1 and "no cute_lowering is importable" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
