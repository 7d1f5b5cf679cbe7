"""Reproducers (`reproducers/`, `lowering-repro`): recorded statuses still hold, output formats, reducer.

No GPU: CuTeDSL compiles for any target. Every compile runs in a worker subprocess.
"""

from __future__ import annotations

import json
import os

import pytest

from lowering.repro import cli
from lowering.repro.cases import STATUSES, WORKAROUNDS, load_cases
from lowering.repro.constructs import kernel_ir

PINNED = cli.cutedsl_version()
CASES = load_cases()
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
        f"`lowering-repro matrix --versions ...,{PINNED}` and commit reproducers/*/case.json"
    )
    archs = sorted({a for c in CASES.values() for a in c.recorded[PINNED]})
    records = cli.run_cases(list(CASES.values()), archs)
    mismatches = []
    for r in records:
        expected = CASES[r["name"]].recorded[PINNED].get(r["arch"])
        if expected and [r["status"], r["workaround"]] != expected:
            mismatches.append(f"{r['name']} {r['arch']}: recorded {expected}, now {[r['status'], r['workaround']]}")
    assert not mismatches, (
        f"CuTeDSL {PINNED} no longer behaves as recorded; if a bug was fixed, update the record "
        "(`lowering-repro matrix`, reproducers/*/case.json, MATRIX.md) and the facts sheet:\n  "
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
    seen = {(r["name"], r["arch"]): (r["status"], r["workaround"]) for r in records}
    for name, archs in HEADLINE.items():
        for arch in archs:
            assert seen[(name, arch)] == ("reproduces", "ok"), (name, arch, seen[(name, arch)])


def test_bad_arch_and_bad_name_are_errors_not_tracebacks(capsys):
    assert cli.main(["run", "fp4-truncf-sm90a", "--arch", "hopper"]) == 1
    assert cli.main(["run", "nope"]) == 1
    err = capsys.readouterr().err
    assert "<command-line>:1:1: error: not a CUDA target architecture: 'hopper'" in err
    assert "no reproducer named 'nope'" in err and "Traceback" not in err


def test_report_is_self_contained(tmp_path):
    out = tmp_path / "report.md"
    assert cli.main(["report", "fp4-truncf-sm90a", "-o", str(out)]) == 0
    text = out.read_text()
    for needle in ("nvidia-cutlass-dsl", "Python", "sm_90a", "python repro.py sm_90a", "arith.truncf",
                   "Instruction 'cvt with .e2m1x2' not supported on .target 'sm_90a'"):
        assert needle in text, needle


def test_reducer_shrinks_a_small_input_and_keeps_the_error():
    from lowering.repro.reduce import reduce_file

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
    from lowering.repro.runner import run_jobs

    result = run_jobs([{"ir": reduced, "arch": "sm_90a"}])[0]
    assert not result["ok"] and error in result["error"]


def test_captured_pipeline_is_the_one_lowering_cutedsl_uses():
    from lowering.cutedsl import pipeline_string
    from lowering.repro.runner import REPO_ROOT, worker_env
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(REPO_ROOT / "lowering/repro/worker.py"), "--pipeline", "sm_90a"],
                         capture_output=True, text=True, env=worker_env(), check=True).stdout.strip()
    norm = lambda s: " ".join(s.replace("'", "").split()).replace("cubin-chip=sm_90a cubin-chip=sm_90a", "cubin-chip=sm_90a")
    assert norm(out) == norm(pipeline_string("sm_90a"))
