"""check-collectives, round 2 (issue 37; issue 38 item 7): what the round-2 corpus and the
options add beyond tests/test_check_collectives.py (which runs every case of both corpora).

- the corpus is as large as the issue asks (24 planted bugs, 24 near misses, both targets);
- named barriers across sites: one phase at one bar.sync instruction (.aligned), more
  arrivals than a whole number of phases of the count (the messages say why);
- `strict=true` makes a "may diverge" warning fail the run (a CI gate), exit status 1;
- one finding per source-level collective (`warp_reduction_max` expands to five shuffles);
- a constant condition is the constant it is (dead code in `scf.if %false`).
"""

from __future__ import annotations

import subprocess
import sys

import collective_kernels_round2  # noqa: F401  (registers the round-2 cases)
from collective_kernels import CASES
from cute_lowering.mlir import new_context, parse_module
from cute_lowering.passes.check_collectives import check_collectives
from test_check_collectives import analyse, traced_ir

ROUND2 = [c for c in CASES.values() if c.file.endswith("collective_kernels_round2.py")]


def test_round2_corpus_is_what_the_issue_asks_for():
    planted = [c for c in ROUND2 if c.expect in ("error", "warning")]
    correct = [c for c in ROUND2 if c.expect == "ok"]
    assert len(planted) >= 24 and len(correct) >= 24
    assert {c.arch for c in planted} == {"sm_90a", "sm_100a"} and {c.arch for c in correct} == {"sm_90a", "sm_100a"}


def _opt(path, pipeline: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "cute_lowering.opt", str(path), "-p", pipeline, "-o", "/dev/null"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_strict_makes_a_may_diverge_warning_fail(tmp_path):
    path = tmp_path / "loaded.mlir"
    path.write_text(traced_ir("barrier_under_register_loaded_value"))
    lenient = _opt(path, "builtin.module(check-collectives)")
    assert lenient.returncode == 0, lenient.stderr
    assert "may diverge" in lenient.stderr
    strict = _opt(path, "builtin.module(check-collectives{strict=true})")
    assert strict.returncode == 1, strict.stderr
    assert "may diverge" in strict.stderr and "collective_kernels_round2.py:" in strict.stderr
    assert "Traceback" not in strict.stderr


def test_one_finding_per_source_level_collective():
    """`dst[i] = cute.arch.warp_reduction_max(...)`-like calls expand to several shuffles at one
    line: one error there, not one per instruction."""
    found = [d for d in analyse("warp_reduce_after_thread_exit") if d.severity == "error"]
    lines = [(d.location.file, d.location.line) for d in found]
    assert found and len(lines) == len(set(lines)), "\n".join(d.format() for d in found)


_CONSTANT = """
gpu.module @kernels {
  gpu.func @k() kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>} {
    %false = arith.constant false
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %full = arith.constant -1 : i32
    %c1 = arith.constant 1 : i32
    %c31 = arith.constant 31 : i32
    %c16 = arith.constant 16 : i32
    %low = arith.cmpi slt, %lane, %c16 : i32
    scf.if %false {
      scf.if %low {
        %x = nvvm.shfl.sync bfly %full, %lane, %c1, %c31 : i32 -> i32
      }
    }
    gpu.return
  }
}
"""


def test_no_finding_in_dead_code_under_a_constant_false():
    """Issue 38, item 7: CuTeDSL stages `if FLAG:` on a closure constant as `scf.if %false`."""
    with new_context() as context:
        assert check_collectives(parse_module(_CONSTANT, context)) == []
        live = _CONSTANT.replace("arith.constant false", "arith.constant true")
        found = check_collectives(parse_module(live, context))
        assert [d.severity for d in found] == ["error"] and "lanes 0-15" in found[0].message


def test_strict_check_through_the_hook_stops_the_compile():
    import cute_lowering
    from collective_kernels import compile_case
    from test_check_collectives import _prelowering_error  # noqa: F401  (the same unwrapping)

    try:
        with cute_lowering.prelowering(check="collectives-strict"):
            compile_case(CASES["barrier_under_register_loaded_value"])
    except Exception as e:
        cause = e
        while cause is not None and not isinstance(cause, cute_lowering.PreloweringError):
            cause = cause.__cause__ or cause.__context__
        assert cause is not None, e
        assert any("may diverge" in d.message for d in cause.diagnostics)
        return
    raise AssertionError("a 'may diverge' warning did not stop the strict compile")


def _pedantic(name: str) -> list:
    text = traced_ir(name)
    with new_context() as context:
        return check_collectives(parse_module(text, context), pedantic=True)


def test_two_sync_sites_of_one_id_only_pedantic_reports_and_says_why():
    """Issue 37: one phase of barrier 1 at two bar.sync sites, whole warps at each. synccheck calls
    it "Divergent thread(s) in block" (PTX .aligned: undefined), yet CuTeDSL's TmemAllocator does
    the same in CUTLASS's and quack's Blackwell kernels: a near miss by default (no finding, one `pedantic` count), an error under
    pedantic=true that names both sites, the threads at each, and the rule."""
    assert not analyse("named_barrier_tmem_alloc_shape")  # one warp / four warps, as TmemAllocator
    assert [d.severity for d in _pedantic("named_barrier_tmem_alloc_shape")] == ["error"]
    case = CASES["named_barrier_two_sites_full"]
    assert case.expect == "ok" and not analyse(case.name)
    (error,) = [d for d in _pedantic(case.name) if d.severity == "error"]
    assert error.location.line == case.collective_line
    assert f"collective_kernels_round2.py:{case.collective_line + 2}" in error.message
    for words in ("two bar.sync sites", "threads 0-63", "threads 64-127", "barrier.sync.aligned", "one phase"):
        assert words in error.message, error.format()
    assert error.notes and error.notes[0].location.line == case.condition_line


def test_legal_uses_of_one_id_at_several_sites():
    """arrive at one site + sync at another (the PTX ISA's producer/consumer example; clean
    under synccheck), and one id at several sites reached by the same threads in turn (two
    sites, a helper called twice: one line, two instructions; a loop and after it)."""
    for name in ("arrive_and_sync_per_warpgroup", "named_barrier_one_id_two_phases", "named_barrier_helper_twice_in_turn",
                 "named_barrier_in_loop_and_after", "arrive_and_sync_after_warp_exit_counted"):  # fmt: skip
        found = analyse(name)
        assert not found, "\n".join(d.format() for d in found)


def test_more_threads_than_the_count_says_what_happens():
    for name, words in (("named_barrier_over_count", "128 threads reach it"), ("arrive_and_sync_over_count", "128 arrive there")):
        (error,) = [d for d in analyse(name) if d.severity == "error"]
        assert words in error.message and "the last 32 threads to arrive wait for a phase that never fills" in error.message


def test_exits_before_bar_warp_sync_and_elect_are_not_excused():
    for name in ("warp_sync_after_lane_exit", "elect_after_lane_exit"):
        (error,) = [d for d in analyse(name) if d.severity == "error"]
        assert "threads that exited still count" in error.message, error.format()
    assert not analyse("warp_sync_masked_after_lane_exit")


def test_synccheck_runner_reads_plain_and_sanitized_runs():
    """bench/collectives_synccheck.py --plain (no sanitizer: does the GPU complete the kernel?)
    and under synccheck, from the worker's own lines and compute-sanitizer's summary."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "bench" / "collectives_synccheck.py"
    spec = importlib.util.spec_from_file_location("collectives_synccheck", path)
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    assert runner.classify(0, "LAUNCH k\nRAN k\n", False, plain=True)["verdict"] == "clean"  # plain: ran to the end
    assert runner.classify(0, "LAUNCH k\nRAN k\n", False)["verdict"] != "clean"  # under synccheck: no summary, no verdict
    assert runner.classify(124, "LAUNCH k\n", True)["verdict"].startswith("hang")
    stopped = "LAUNCH k\n========= Barrier error detected. Divergent thread(s) in block.\n========= ERROR SUMMARY: 128 errors\n"
    found = runner.classify(1, stopped, False)
    assert found["verdict"] == "128 synccheck error(s)" and found["first"].startswith("Barrier error detected")
    assert runner.classify(1, "Traceback ...\n", False)["verdict"] == "failed (exit 1)"
