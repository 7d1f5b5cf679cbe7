"""Reproducers (`reproducers/`, `lowering-repro`): recorded statuses still hold, output formats, reducer.

No GPU: CuTeDSL compiles for any target. Every compile runs in a worker subprocess.
"""

from __future__ import annotations

import json
import os

import pytest

from cute_lowering.repro import cli
from cute_lowering.repro.cases import REPRODUCERS, STATUSES, WORKAROUNDS, load_cases
from cute_lowering.repro.constructs import kernel_ir
from host_cpu import has_avx512_bf16
from libnvvm_wording import BARE, HIDES_THE_LOG
from cute_lowering.repro.runner import cutedsl_version, run_cases

PINNED = cutedsl_version()
CASES = load_cases()

# On a release that hides libNVVM's log (tests/libnvvm_wording.py) the libNVVM cases fail
# with the bare 'NVVM backend compilation failed', not their own error: `run` reports them
# `changed` (as recorded for that release), and `report` and `reduce`, which need the case's
# own error, refuse them (README, "Supported CuTeDSL releases").
needs_the_libnvvm_log = pytest.mark.skipif(
    HIDES_THE_LOG, reason=f"CuTeDSL {PINNED} hides libNVVM's log: the libNVVM cases cannot reproduce their own error there")


# The host case's abort needs an x86-64 CPU with AVX512-BF16 (this machine's has it; the CI
# machine's of 2026-12-02 did not).
HOST_CASES_APPLY = has_avx512_bf16()
HEADLINE = {  # the four 4.8.1 failures of the facts sheet
    "fp4-truncf-sm90a": ["sm_90a"],
    "fp4-extf-sm90a": ["sm_90a"],
    "e8m0-truncf-sm90a": ["sm_90a"],
    "inline-ptx-f32-constant": ["sm_90a", "sm_100a"],
}


def test_every_reproducer_folder_is_complete():
    assert len(CASES) >= 9
    for case in CASES.values():
        assert (case.folder / "repro.py").exists() and (case.folder / "repro.mlir").exists(), case.name
        assert len(case.ir.splitlines()) <= 40, case.name
        assert case.error and case.archs and case.summary, case.name


def test_recorded_statuses_hold_for_the_installed_cutedsl():
    """A CuTeDSL bump that fixes (or changes) a bug lands here: re-run the matrix, update the record."""
    unrecorded = [c.name for c in CASES.values() if PINNED not in c.recorded]
    assert not unrecorded, (
        f"no status recorded for CuTeDSL {PINNED} in {unrecorded}: run "
        f"`lowering-repro matrix --versions {PINNED} --write` and commit what it merged into reproducers/"
    )
    archs = sorted({a for c in CASES.values() for a in c.recorded[PINNED] if a != "host"})
    cases = [c for c in CASES.values() if HOST_CASES_APPLY or not c.host]
    records = run_cases(cases, archs)
    mismatches = []
    for r in records:
        expected = CASES[r["name"]].recorded_cell(PINNED, r["arch"])
        if expected and (r["status"], r["workaround"]) != (expected["status"], expected["workaround"]):
            mismatches.append(f"{r['name']} {r['arch']}: recorded {expected['status']} / {expected['workaround']}, "
                              f"now {r['status']} / {r['workaround']}")
    assert not mismatches, (
        f"CuTeDSL {PINNED} no longer behaves as recorded; if a bug was fixed, update the record "
        "(`lowering-repro matrix --versions X --write`: reproducers/*/case.json, MATRIX.md, MATRIX.json) and the facts sheet:\n  "
        + "\n  ".join(mismatches)
    )


def test_run_json_reports_the_headline_failures(capsys):
    names = list(HEADLINE)
    assert cli.main(["run", *names, "--arch", "sm_90a,sm_100a", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert isinstance(records, list) and len(records) == 2 * len(names)
    for r in records:
        assert {"name", "arch", "status", "workaround"} <= r.keys()
        assert r["status"] in STATUSES and r["workaround"] in WORKAROUNDS
    seen = {(r["name"], r["arch"]): r for r in records}
    status = "changed" if HIDES_THE_LOG else "reproduces"
    for name, archs in HEADLINE.items():
        for arch in archs:
            r = seen[(name, arch)]
            assert (r["status"], r["workaround"]) == (status, "ok"), (name, arch, r)
            if HIDES_THE_LOG:
                assert BARE in r["error"], (name, arch, r)


def test_bad_arch_and_bad_name_are_errors_not_tracebacks(capsys):
    assert cli.main(["run", "fp4-truncf-sm90a", "--arch", "hopper"]) == 1
    assert cli.main(["run", "nope"]) == 1
    err = capsys.readouterr().err
    assert "<command-line>:1:1: error: unknown target 'hopper'" in err
    assert "no reproducer named 'nope'" in err and "Traceback" not in err


@needs_the_libnvvm_log
def test_report_is_self_contained(tmp_path):
    out = tmp_path / "report.md"
    assert cli.main(["report", "fp4-truncf-sm90a", "-o", str(out)]) == 0
    text = out.read_text()
    for needle in ("nvidia-cutlass-dsl", "Python", "sm_90a", "python repro.py sm_90a", "arith.truncf",
                   "Instruction 'cvt with .e2m1x2' not supported on .target 'sm_90a'"):
        assert needle in text, needle


@needs_the_libnvvm_log
def test_reducer_shrinks_a_small_input_and_keeps_the_error():
    from cute_lowering.repro.reduce import reduce_file

    body = """
        %a = arith.mulf %x, %x : vector<8xf32>
        %b = arith.addf %a, %x : vector<8xf32>
        %t = arith.truncf %x : vector<8xf32> to vector<8xf4E2M1FN>
        %u = arith.truncf %b : vector<8xf32> to vector<8xf4E2M1FN>
        %s = arith.constant 0.0 : f32
        %unused = arith.addf %s, %s : f32
        %y = arith.select %c, %t, %u : vector<8xf4E2M1FN>
    """
    text = kernel_ir("%c = arith.constant true\n" + body, "vector<8xf32>", "vector<8xf4E2M1FN>")
    error = "Instruction 'cvt with .e2m1x2' not supported"
    reduced = reduce_file(text, error, "sm_90a", log=open(os.devnull, "w"))
    assert len(reduced.splitlines()) < len(text.splitlines())
    assert "%unused" not in reduced and "arith.addf %s" not in reduced and "arith.truncf" in reduced
    from cute_lowering.repro.runner import run_jobs

    result = run_jobs([{"ir": reduced, "arch": "sm_90a"}])[0]
    assert not result["ok"] and error in result["error"]


def test_captured_pipeline_is_the_one_lowering_cutedsl_uses():
    from cute_lowering.cutedsl import pipeline_string
    from cute_lowering.repro.runner import WORKER, worker_env
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(WORKER), "--pipeline", "sm_90a"],
                         capture_output=True, text=True, env=worker_env(), check=True).stdout.strip()
    norm = lambda s: " ".join(s.replace("'", "").split()).replace("cubin-chip=sm_90a cubin-chip=sm_90a", "cubin-chip=sm_90a")
    assert norm(out) == norm(pipeline_string("sm_90a"))


def test_every_failing_cell_records_its_error():
    """A `changed` or `not parsed` cell (and a failing workaround) says what it failed with,
    in case.json and in MATRIX.md."""
    matrix = (REPRODUCERS / "MATRIX.md").read_text()
    flat_matrix = " ".join(matrix.split())
    missing = []
    for case in CASES.values():
        for version, cells in case.recorded.items():
            for arch in cells:
                cell = case.recorded_cell(version, arch)
                texts = []
                if cell["status"] in ("changed", "not parsed"):
                    texts.append(cell["error"])
                if cell["workaround"] == "fails":
                    texts.append(cell["workaround_error"])
                for text in texts:
                    if not text.strip() or " ".join(text.split()) not in flat_matrix:
                        missing.append(f"{case.name} {version} {arch}: {cell}")
    assert not missing, "\n".join(missing[:10])


def test_report_refuses_where_the_case_does_not_reproduce(tmp_path, capsys):
    out = tmp_path / "report.md"
    assert cli.main(["report", "fp4-truncf-sm90a", "--arch", "sm_100a", "-o", str(out)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"'fp4-truncf-sm90a' does not reproduce on sm_100a with nvidia-cutlass-dsl {PINNED}: it compiles" in err
    assert "No report written" in err and "sm_90a with" in err and not out.exists()


@needs_the_libnvvm_log
def test_report_statuses_and_errors_are_the_recorded_ones(tmp_path):
    """Every release in the report with the status MATRIX.md has, the error of every cell
    that fails otherwise, and an expected-behaviour section; the error it leads with is the
    case's own, the same as in its full error."""
    case = CASES["fp4-truncf-sm90a"]
    out = tmp_path / "report.md"
    assert cli.main(["report", case.name, "--arch", "sm_90a", "-o", str(out)]) == 0
    text = out.read_text()
    flat = " ".join(text.split())
    assert "## Expected behaviour" in text and "sm_90a has no FP4 convert" in text
    assert "does not reproduce" not in text
    for version in case.recorded:
        row = next(line for line in text.splitlines() if line.startswith(f"| {version} |"))
        for arch in ("sm_90a", "sm_80"):
            cell = case.recorded_cell(version, arch)
            assert cell["status"] in row, (version, arch, row)
            if cell["status"] in ("changed", "not parsed"):
                assert " ".join(cell["error"].split()) in flat, (version, arch, cell["error"])
    error_line = next(line for line in text.splitlines() if line.startswith("**Error**"))
    assert case.error_for("sm_90a") in error_line
    full = text.split("## Full error", 1)[1].split("```")[1]
    assert case.error_for("sm_90a") in full


def test_run_table_shows_errors_whole(monkeypatch, capsys):
    long_error = ("error: \"-\":7:12: 'llvm.fptrunc' op result #0 must be floating point LLVM type or LLVM "
                  "dialect-compatible vector of floating point LLVM type, but got 'vector<8xi4>' and then some "
                  "more words to go past any one line")
    record = {"name": "fp4-truncf-sm90a", "arch": "sm_90a", "status": "changed", "workaround": "ok",
              "error": "Failure while executing pass pipeline:\n" + long_error}
    monkeypatch.setattr(cli, "run_cases", lambda *a, **k: [record])
    assert cli.main(["run", "fp4-truncf-sm90a", "--arch", "sm_90a"]) == 0
    out = capsys.readouterr().out
    shown = out.split("now fails with:", 1)[1]
    assert " ".join(shown.split()) == " ".join(long_error[len("error: "):].split())  # every word, none cut
    assert all(len(line) <= 100 for line in out.splitlines())


@pytest.mark.skipif(not HOST_CASES_APPLY, reason="the host LLVM abort needs an AVX512-BF16 CPU")
def test_host_case_aborts_in_the_worker_not_here():
    """The host-stage reproducer kills its worker process (LLVM ERROR) at -O2/-O3 and compiles
    at -O0; lowering-repro reports both, and survives."""
    case = CASES["host-bf16-add-compare-avx512bf16"]
    aborting, compiling = run_cases([case], None, opt_level=3) + run_cases([case], None, opt_level=0)
    assert aborting["arch"] == "host" and aborting["status"] == "reproduces", aborting
    assert "LLVM ERROR:  Error: unsupported operation" in aborting["error"]
    assert compiling["status"] == "fixed", compiling
