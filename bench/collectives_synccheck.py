"""The planted sm_90a collective bugs of tests/collective_kernels.py (and the round-2 corpus,
tests/collective_kernels_round2.py), run on the GPU under synccheck.

    python bench/collectives_synccheck.py --out DIR [--timeout 20] [--jobs 4] [--controls N]
        [--round 1|2|all] [--plain] [CASE ...]

`--plain` runs the cases without the sanitizer (DIR/plain.json, plain.md): synccheck stops a
kernel at its first barrier error, so only a plain run says whether the GPU completes it
("clean") or hangs. The question it is for (issue 37, 2026-12-06): `named_barrier_two_sites_full`
and `named_barrier_tmem_alloc_shape`, two `bar.sync` sites of one id reached by whole warps,
which check-collectives reports only with pedantic=true: `--round 2 --plain
named_barrier_two_sites_full named_barrier_tmem_alloc_shape named_barrier_two_sites_split_in_warp`.

`--round 2 --controls 1000` runs every sm_90a case of issue 37's corpus, planted and
correct: the PTX ISA rules the check follows (exit semantics above all: `bar.sync` and
`vote.sync` after some threads exited are clean, `shfl.sync` and `ldmatrix` are not) are
confirmed there or refuted.

What compute-sanitizer's synccheck sees at run time, per case, next to what
check-collectives reports at compile time (bench/RESULTS.md has the table). Each case
runs in its own process, `timeout -k 5 <timeout> compute-sanitizer --tool synccheck
python bench/collectives_synccheck.py --run CASE`, so a hung kernel is killed with its
process and leaves nothing behind. Writes DIR/synccheck.json and DIR/synccheck.md.

Without a GPU (or without compute-sanitizer) it says so and exits 2, running nothing.
`--controls N` also runs the first N correct sm_90a kernels (should be clean).

The worker (`--run CASE`) compiles the case for sm_90a (no check: the bug must reach the
GPU), launches it once on a 4096-float tensor with the `n` below, synchronizes, and
prints `RAN <case>` (a cluster case first prints the cluster ranks its CTAs wrote:
`CLUSTER RANKS [0, 1]` is a launch that formed 2-CTA clusters).

Issue 37's second round: `cluster_arrive_by_leader_cta` ran clean on the H200 because the
CTA that skipped the arrive went on through its own cluster_wait and exited, and exit
releases a cluster barrier its threads hold up (PTX ISA, exit); the kernel now keeps that
CTA alive until the leader passes its wait (as a real kernel's CTAs stay alive), and
`cluster_arrive_by_every_cta_leader_flag` is the same kernel with every CTA arriving (it
must run clean: the flag alone does not hang).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TESTS = os.path.join(ROOT, "tests")

# `n` (the kernel argument) for the launch: chosen so the planted condition really splits
# its group at run time (a bounds test with n = 100 leaves threads 100..127 of CTA 0 out).
RUNTIME_N = {
    "mma_sync_under_lane_condition": 3, "mma_fp8_under_lane_guard": 3,
    # round 2: the value of n at which each planted condition splits its group
    "shfl_in_min_lane_loop": 8, "shfl_in_lane_while_to_n": 16, "shfl_in_tidx_loop_to_even_n": 8,
    "shfl_under_row_lt_multiple_of_16": 1, "shfl_in_tidx_loop_to_multiple_of_32": 5,
    "shfl_in_tidx_while_to_multiple_of_32": 5, "shfl_in_min_warp_loop": 2, "mma_fp8_under_warp_guard": 2,
}  # fmt: skip
DEFAULT_N = 100

_ERROR_LINE = re.compile(r"^=+\s+((?:Barrier error|Warp error|Invalid|[^\n]*detected)[^\n]*)", re.I | re.M)
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error", re.I)


def run_case(name: str) -> int:
    """Worker: compile the case for sm_90a and run it once."""
    sys.path[:0] = [TESTS]
    import torch
    from cutlass import Int32
    from cutlass.cute.runtime import from_dlpack

    import collective_kernels as ck
    import collective_kernels_round2  # noqa: F401  (registers the round-2 cases)

    case = ck.CASES[name]
    compiled = ck.compile_case(case)
    dst = torch.zeros(ck.DST_ELEMENTS, dtype=torch.float32, device="cuda")
    print(f"LAUNCH {name}", flush=True)
    compiled(from_dlpack(dst), Int32(RUNTIME_N.get(name, DEFAULT_N)))
    torch.cuda.synchronize()
    if case.cluster > 1:
        # each cluster case writes its CTA's rank in the cluster to dst[bidx * block + tidx]:
        # ranks 0..cluster-1 say the launch formed clusters (all 0: it did not)
        ranks = sorted({int(v) for v in dst[: case.grid * case.block].tolist()})
        print(f"CLUSTER RANKS {ranks} (cluster of {case.cluster}, grid {case.grid})", flush=True)
    print(f"RAN {name}", flush=True)
    return 0


def classify(returncode: int, output: str, timed_out: bool, plain: bool = False) -> dict:
    errors = _SUMMARY.search(output)
    count = int(errors.group(1)) if errors else None
    first = _ERROR_LINE.search(output)
    if timed_out and "LAUNCH " in output:
        verdict = "hang (launched, killed at the timeout)"
    elif timed_out:
        verdict = "timed out before the launch"
    elif count:
        verdict = f"{count} synccheck error(s)"
    elif "RAN " in output and (count == 0 or (plain and count is None)):  # (a plain run prints no summary)
        verdict = "clean"
    else:
        verdict = f"failed (exit {returncode})"
    return {"verdict": verdict, "errors": count, "first": first.group(1).strip() if first else None}


def sanitize(name: str, timeout: int, out: str, plain: bool = False) -> dict:
    """One case in its own process under synccheck; `plain`: without the sanitizer (synccheck
    stops a kernel at the first barrier error, so only a plain run says whether the GPU
    completes it: verdict "clean" there means it ran to the end, "hang" that it did not)."""
    sanitizer = [] if plain else ["compute-sanitizer", "--tool", "synccheck"]
    command = ["timeout", "-k", "5", str(timeout), *sanitizer,
               sys.executable, os.path.abspath(__file__), "--run", name]  # fmt: skip
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    output = run.stdout + run.stderr
    with open(os.path.join(out, f"{name}.log"), "w", encoding="utf-8") as f:
        f.write(output)
    timed_out = run.returncode in (124, 137)
    record = {"case": name, "returncode": run.returncode, "seconds": round(seconds, 1)}
    record.update(classify(run.returncode, output, timed_out, plain))
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--out", default="synccheck_out")
    parser.add_argument("--timeout", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--controls", type=int, default=0)
    parser.add_argument("--round", choices=("1", "2", "all"), default="all", help="which corpus (issue 37 added round 2)")
    parser.add_argument("--plain", action="store_true", help="run each case without the sanitizer: does the GPU complete it?")
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        return run_case(args.run)
    if (shutil.which("compute-sanitizer") is None and not args.plain) or shutil.which("nvidia-smi") is None:
        print("no GPU here (compute-sanitizer/nvidia-smi not found): nothing run", file=sys.stderr)
        return 2
    sys.path[:0] = [TESTS]
    import collective_kernels as ck
    import collective_kernels_round2  # noqa: F401  (registers the round-2 cases)

    def in_round(case) -> bool:
        second = case.file.endswith("collective_kernels_round2.py")
        return args.round == "all" or (args.round == "2") == second

    sm90 = [c for c in ck.CASES.values() if c.runs_on_sm90 and in_round(c)]
    names = args.cases or [c.name for c in sm90 if c.expect != "ok"] + [c.name for c in sm90 if c.expect == "ok"][: args.controls]
    os.makedirs(args.out, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        records = list(pool.map(lambda n: sanitize(n, args.timeout, args.out, args.plain), names))
    for r in records:
        r["expect"] = ck.CASES[r["case"]].expect
    with open(os.path.join(args.out, "plain.json" if args.plain else "synccheck.json"), "w", encoding="utf-8") as f:
        json.dump(records, f, indent=1)
    tool = "plain run (no sanitizer)" if args.plain else "synccheck at run time"
    lines = [f"| case | expected | {tool} | first report | s |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['case']} | {r['expect']} | {r['verdict']} | {r['first'] or ''} | {r['seconds']} |" for r in records]
    with open(os.path.join(args.out, "plain.md" if args.plain else "synccheck.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
