"""A reproducer that needs a host or GPU feature says so by name where the machine lacks it,
and `run` and `report` say the same (issue 38, item 4).

Seen on a CPU without AVX512-BF16: `run` said `changed / now fails with: Unknown function
kernel`, `report` said both "does not reproduce on host with 4.8.1" and "recorded to
reproduce on host with 4.6.2, ..., 4.8.1"; neither said the CPU lacks the feature. The
machine's features are stubbed here, so this runs the same on any CPU.
"""

from __future__ import annotations

import json

import pytest

from cute_lowering.repro import cli, features, matrix
from cute_lowering.repro.cases import NOT_HERE, load_cases

HOST_CASE = "host-bf16-add-compare-avx512bf16"
SAID = "this case needs the CPU feature AVX512-BF16 (avx512_bf16 in /proc/cpuinfo), which this machine lacks"


@pytest.fixture
def no_avx512_bf16(monkeypatch):
    monkeypatch.setattr(features, "cpu_flags", lambda cpuinfo="/proc/cpuinfo": {"fpu", "sse2", "avx2"})


def test_the_host_case_declares_what_it_needs():
    assert load_cases()[HOST_CASE].requires == {"cpu": ["avx512_bf16"]}


def test_run_and_report_name_the_missing_feature_alike(no_avx512_bf16, capsys, tmp_path):
    assert cli.main(["run", HOST_CASE]) == 0
    run_out = " ".join(capsys.readouterr().out.split())
    assert f"{HOST_CASE} host {NOT_HERE} none" in run_out and SAID in run_out, run_out
    assert "changed" not in run_out and "Unknown function" not in run_out

    out = tmp_path / "report.md"
    assert cli.main(["report", HOST_CASE, "-o", str(out)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"'{HOST_CASE}' cannot be checked on this machine: {SAID}" in err, err
    assert "does not reproduce" not in err and "No report written" in err and not out.exists()


def test_run_json_says_not_here_without_compiling(no_avx512_bf16, capsys, monkeypatch):
    from cute_lowering.repro import runner

    monkeypatch.setattr(runner, "run_jobs", lambda jobs, python=None: pytest.fail(f"compiled {len(jobs)} jobs"))
    assert cli.main(["run", HOST_CASE, "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["status"] == NOT_HERE and SAID in record["error"]


def test_missing_names_cpu_and_gpu_features(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16\n")
    assert features.cpu_flags(str(cpuinfo)) == {"fpu", "avx512f", "avx512_bf16"}
    monkeypatch.setattr(features, "cpu_flags", lambda cpuinfo="/proc/cpuinfo": {"avx512f"})
    monkeypatch.setattr(features, "gpu_targets", lambda: {"sm_90"})
    assert features.missing({"cpu": ["avx512f"], "gpu": ["sm_90"]}) == []
    assert features.missing({"cpu": ["avx512_bf16"], "gpu": ["sm_100"]}) == [
        "the CPU feature AVX512-BF16 (avx512_bf16 in /proc/cpuinfo)", "a GPU sm_100"]


def test_matrix_keeps_the_recorded_cell_of_a_case_not_measured_here(tmp_path, monkeypatch, no_avx512_bf16):
    """A matrix run on a machine without the feature does not overwrite the host case's record."""
    import shutil

    from cute_lowering.repro.cases import REPRODUCERS

    root = tmp_path / "reproducers"
    shutil.copytree(REPRODUCERS, root)
    monkeypatch.setattr(matrix, "REPRODUCERS", root)
    recorded = json.loads((root / "MATRIX.json").read_text(encoding="utf-8"))["4.8.1"]
    host_before = (root / HOST_CASE / "case.json").read_text(encoding="utf-8")
    records = [dict(r, status=NOT_HERE, error=SAID) if r["name"] == HOST_CASE else r for r in recorded["records"]]
    monkeypatch.setattr(matrix, "venv_python", lambda version, cache_dir, log: "python")
    monkeypatch.setattr(matrix, "measure", lambda version, python, deps, log, root: (records, None))
    monkeypatch.setattr(matrix, "survey", lambda python: recorded["survey"])
    assert cli.main(["matrix", "--versions", "4.8.1", "--write", "-o", str(root / "MATRIX.md")]) == 0
    assert (root / HOST_CASE / "case.json").read_text(encoding="utf-8") == host_before
    after = json.loads((root / "MATRIX.json").read_text(encoding="utf-8"))["4.8.1"]["records"]
    assert [r for r in after if r["name"] == HOST_CASE] == [r for r in recorded["records"] if r["name"] == HOST_CASE]
