"""`lowering-repro matrix` never destroys what it recorded (issue 38, items 1 and 2).

Seen: `lowering-repro matrix --versions 4.8.1` in a venv without numpy rewrote
MATRIX.md, MATRIX.json and all 13 case.json (18,120 lines deleted: every other release's
history gone, 4.8.1's workaround column `ok` -> `not measured`); `--versions abc` was an
internal error that left a broken venv behind for later runs.

Here the compiles are replaced by the recorded data (a run of `matrix` takes minutes per
release): `venv_python`, `measure` and `survey` are stubbed, the record is a copy of
reproducers/ in a temporary folder; what is tested is what the command writes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cute_lowering.repro import cli, matrix, venvs
from cute_lowering.repro.cases import REPRODUCERS

REAL = REPRODUCERS
CHANGED_CASE, CHANGED_ARCH = "fp4-truncf-sm90a", "sm_90a"


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def record(tmp_path, monkeypatch):
    """A copy of reproducers/ that `matrix` takes for the real one, and stubs that 'measure'
    4.8.1 as recorded except one cell (CHANGED_CASE on CHANGED_ARCH now `changed`)."""
    root = tmp_path / "reproducers"
    shutil.copytree(REAL, root)
    monkeypatch.setattr(matrix, "REPRODUCERS", root)
    recorded = json.loads((root / "MATRIX.json").read_text(encoding="utf-8"))
    measured = copy.deepcopy(recorded["4.8.1"])
    for r in measured["records"]:
        if (r["name"], r["arch"]) == (CHANGED_CASE, CHANGED_ARCH):
            r.update(status="changed", error="a new error of this release")
    monkeypatch.setattr(matrix, "venv_python", lambda version, cache_dir, log: f"/venvs/{version}/bin/python")
    monkeypatch.setattr(matrix, "measure", lambda version, python, deps, log, root: (
        measured["records"], None if measured["package_ran"] else measured["package_error"]))
    monkeypatch.setattr(matrix, "survey", lambda python: measured["survey"])
    return root


def _matrix(root: Path, *args: str) -> int:
    return cli.main(["matrix", "--versions", "4.8.1", "-o", str(root / "MATRIX.md"), *args])


def test_without_write_nothing_is_written(record, capsys):
    before, real_before = _snapshot(record), _snapshot(REAL)
    assert _matrix(record) == 0
    out, err = capsys.readouterr()
    assert _snapshot(record) == before and _snapshot(REAL) == real_before
    assert f"{CHANGED_CASE} {CHANGED_ARCH}: changed / ok (recorded: reproduces / ok)" in out, out
    assert "nothing written (--write merges" in err, err


def test_write_merges_the_measured_cells_and_keeps_every_other(record):
    json_before = json.loads((record / "MATRIX.json").read_text(encoding="utf-8"))
    cases_before = {p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in record.glob("*/case.json")}
    assert _matrix(record, "--write") == 0

    json_after = json.loads((record / "MATRIX.json").read_text(encoding="utf-8"))
    assert list(json_after) == list(json_before)  # every release still there, in order
    for version in json_before:
        if version != "4.8.1":
            assert json_after[version] == json_before[version]
    cells = {(r["name"], r["arch"]): r for r in json_after["4.8.1"]["records"]}
    assert cells[(CHANGED_CASE, CHANGED_ARCH)]["status"] == "changed"
    assert len(cells) == len(json_before["4.8.1"]["records"])

    for name, before in cases_before.items():
        after = json.loads((record / name / "case.json").read_text(encoding="utf-8"))
        expected = copy.deepcopy(before)
        if name == CHANGED_CASE:
            expected["recorded"]["4.8.1"][CHANGED_ARCH].update(status="changed", error="a new error of this release")
        assert after == expected, name

    text = (record / "MATRIX.md").read_text(encoding="utf-8")
    assert "--versions 4.2.1,4.3.5,4.4.2,4.5.3,4.6.2,4.6.3,4.7.0,4.7.1,4.8.0,4.8.1" in text
    assert "| 4.2.1 | changed [1] / not measured |" in text  # older history still rendered
    assert "a new error of this release" in text


def test_merging_or_rendering_what_was_recorded_changes_nothing(record):
    """The record merged with itself is the record, and rendered again it is the same files
    byte for byte: a --write that measured what was recorded changes nothing."""
    data = json.loads((record / "MATRIX.json").read_text(encoding="utf-8"))
    assert matrix.merge(data, {"4.8.1": data["4.8.1"]}) == data
    before = _snapshot(record)
    matrix.render_from_json(str(record / "MATRIX.md"))
    assert _snapshot(record) == before


def test_a_broken_environment_records_nothing(record, monkeypatch, capsys):
    def broken(version, python, deps, log, root):
        raise matrix.NotMeasured("our package does not import there (ModuleNotFoundError: No module named 'numpy')")

    monkeypatch.setattr(matrix, "measure", broken)
    before = _snapshot(record)
    assert _matrix(record, "--write") == 1
    err = capsys.readouterr().err
    assert _snapshot(record) == before
    assert "4.8.1: not recorded: our package does not import there (ModuleNotFoundError: No module named 'numpy')" in err


def test_measure_refuses_a_venv_where_our_package_does_not_import(tmp_path):
    """The probe itself, with this interpreter made to lack numpy (as the 4.8 venvs did)."""
    python = tmp_path / "python-without-numpy"
    python.write_text(f"#!{sys.executable}\n"
                      "import sys\n"
                      "sys.modules['numpy'] = None  # import numpy fails, as where it is not installed\n"
                      "assert sys.argv[1] == '-c'\n"
                      "code, sys.argv = sys.argv[2], ['-c', *sys.argv[3:]]\n"
                      "exec(compile(code, '<string>', 'exec'), {'__name__': '__main__'})\n")
    python.chmod(0o755)
    with pytest.raises(matrix.NotMeasured, match="does not import there.*numpy"):
        matrix.measure("4.8.1", str(python))


def test_not_a_release_is_a_located_usage_error(tmp_path, capsys):
    assert cli.main(["matrix", "--versions", "4.8.1,abc", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "<command-line>:1:7: error: 'abc' is not a release number of nvidia-cutlass-dsl (like 4.8.1)" in err
    assert "internal error" not in err and list(tmp_path.iterdir()) == []  # refused before any venv


class FakePip:
    """subprocess.run for venvs.py: `venv` makes the folder, pip answers `returncode`/`stderr`."""

    def __init__(self, returncode: int, stderr: str = "", fails_for: str = ""):
        self.returncode, self.stderr, self.fails_for, self.calls = returncode, stderr, fails_for, []

    def __call__(self, argv, **kwargs):
        self.calls.append(argv)
        if argv[1:3] == ["-m", "venv"]:
            (Path(argv[3]) / "bin").mkdir(parents=True)
            (Path(argv[3]) / "bin" / "python").write_text("")
            return subprocess.CompletedProcess(argv, 0, "", "")
        if self.fails_for and self.fails_for not in argv:
            return subprocess.CompletedProcess(argv, 0, "", "")
        return subprocess.CompletedProcess(argv, self.returncode, "", self.stderr)


def test_an_unpublished_release_is_a_usage_error_and_its_venv_is_removed(tmp_path, monkeypatch, capsys):
    pip = FakePip(1, "ERROR: Could not find a version that satisfies the requirement nvidia-cutlass-dsl==9.9.9 "
                     "(from versions: 4.8.1)\nERROR: No matching distribution found for nvidia-cutlass-dsl==9.9.9\n",
                  fails_for="nvidia-cutlass-dsl==9.9.9")
    monkeypatch.setattr(venvs.subprocess, "run", pip)
    assert cli.main(["matrix", "--versions", "4.8.1,9.9.9", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "<command-line>:1:7: error: no release 9.9.9 of nvidia-cutlass-dsl can be installed here" in err, err
    assert not (tmp_path / "9.9.9").exists()  # nothing half made is left for a later run
    assert (tmp_path / "4.8.1" / ".ok").exists()  # a complete venv stays (and nothing was measured yet)
    assert len(pip.calls) == 5  # two venvs, two installs, our package into the good one: no compile before every release is known good


def test_a_failed_install_is_the_environments_error_and_removed(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(venvs.subprocess, "run", FakePip(1, "ERROR: Could not install packages due to an OSError: "
                                                            "[Errno 101] Network is unreachable\n"))
    assert cli.main(["matrix", "--versions", "4.8.1", "--cache-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "pip could not install nvidia-cutlass-dsl==4.8.1 numpy>=1.26 into" in err and "Network is unreachable" in err
    assert not (tmp_path / "4.8.1").exists()


def test_a_fresh_venv_gets_our_declared_dependencies(tmp_path, monkeypatch):
    pip = FakePip(0)
    monkeypatch.setattr(venvs.subprocess, "run", pip)
    python = venvs.venv_python("4.8.1", tmp_path)
    install, ours = pip.calls[-2:]
    assert install[:4] == [python, "-m", "pip", "install"]
    assert "nvidia-cutlass-dsl==4.8.1" in install and "numpy>=1.26" in install
    assert venvs.declared_dependencies() == ["numpy>=1.26"]
    # then our package, from this checkout, editable, its own dependencies (CuTeDSL's range) left alone
    assert ours == [python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(venvs.package_source())]
    assert (venvs.package_source() / "lowering" / "__init__.py").exists()


def test_an_old_venv_without_them_is_completed_not_measured_as_broken(tmp_path, monkeypatch):
    """A venv made before numpy was declared (its .ok marker names nothing) gets it installed."""
    root = tmp_path / "4.8.1"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").write_text("")
    (root / ".ok").write_text("")
    pip = FakePip(0)
    monkeypatch.setattr(venvs.subprocess, "run", pip)
    venvs.venv_python("4.8.1", tmp_path)
    # no new venv: the dependencies installed, then our package (it came from PYTHONPATH then)
    assert len(pip.calls) == 2 and "numpy>=1.26" in pip.calls[0] and "-e" in pip.calls[1]
    assert (root / ".ok").read_text().split("\n") == ["nvidia-cutlass-dsl==4.8.1", "numpy>=1.26",
                                                       f"-e {venvs.package_source()}"]
    venvs.venv_python("4.8.1", tmp_path)
    assert len(pip.calls) == 2  # complete now: used as it is
