"""When each persistent CTA of our wgmma kernel starts, issues its last load and ends (session 12).

    python bench/h200/fmha_sched/cta_times.py [--calls N] [--variant NAME] CASE...   (CASE: an ISSUE_CASES index, or dN)

Why: under ncu (4x16x4096x128, session 11) our kernel's longest-active SM was active 1.290 M of
its 1.323 M elapsed cycles (2.5% of the launch with that SM idle), FA3's 1.257 M of 1.269 M (1%),
and both had their least-active SM at 93% of the most active one (the last partial wave of tiles).
This build (`fmha_sm90.TRACE_CTA_TIMES`: each CTA prints its SM and %globaltimer) shows whether
CTAs start late, and how long the tail is. The trace build is never timed: its printf changes the
code around the loops. Each call runs after an L2 flush; per call this prints, in microseconds
from the first CTA's start: the spread of the starts, of the producers' last loads, of the ends,
the span, and the CTA durations (min / median / max). The device printf lines go to this
process's stdout (C level), so the measuring runs in a child process whose output is parsed.
"""

import argparse
import pathlib
import re
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

LINE = re.compile(r"fmha_trace (start|loads|end) cta (\d+)(?: sm (\d+))? t (\d+)")


def child(case_id: str, calls: int, variant: str | None) -> None:
    import torch

    from fmha_peers import DECODE_CASES, ISSUE_CASES, VARIANTS, make_inputs
    from kernels import fmha, fmha_sm90, ops

    for knob, value in (VARIANTS[variant] if variant else {}).items():
        setattr(fmha_sm90, knob, value)
    fmha_sm90.TRACE_CTA_TIMES = True
    ops.clear_launch_cache()
    case = DECODE_CASES[int(case_id[1:])] if case_id.startswith("d") else ISSUE_CASES[int(case_id)]
    b, h, hkv, sq, sk, d, causal, window, sink = case
    q, k, v, sinks = make_inputs(torch, case)
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(calls):
        flush.zero_()
        torch.cuda.synchronize()
        fmha.attention(q, k, v, causal=causal, window=window, sink=sinks, path="wgmma")
        torch.cuda.synchronize()


def calls_of(text: str) -> list[list[tuple]]:
    """The trace events (kind, cta, sm, t_ns) grouped by call: the device's printf buffer is
    written out at each call's synchronize, so a call's lines come together; a CTA's second
    "start" begins the next call."""
    calls, seen = [], None
    for m in LINE.finditer(text):
        event = (m[1], int(m[2]), m[3], int(m[4]))
        if seen is None or (event[0] == "start" and event[1] in seen):
            calls.append([])
            seen = set()
        if event[0] == "start":
            seen.add(event[1])
        calls[-1].append(event)
    return calls


def summary(events: list[tuple]) -> dict:
    t0 = min(e[3] for e in events)
    by_kind = {k: {e[1]: (e[3] - t0) / 1e3 for e in events if e[0] == k} for k in ("start", "loads", "end")}
    starts, loads, ends = by_kind["start"], by_kind["loads"], by_kind["end"]
    durations = sorted(ends[c] - starts[c] for c in ends if c in starts)
    spread = lambda xs: (round(min(xs), 1), round(max(xs), 1)) if xs else None  # noqa: E731
    return {
        "ctas": len(starts),
        "sms": len({e[2] for e in events if e[0] == "start"}),
        "start_us": spread(list(starts.values())),
        "last_load_us": spread(list(loads.values())),
        "end_us": spread(list(ends.values())),
        "duration_us": (round(durations[0], 1), round(statistics.median(durations), 1), round(durations[-1], 1)) if durations else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--variant", default=None, help="an fmha_peers VARIANTS name whose knobs to set")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.cases[0], args.calls, args.variant)
        return
    for case_id in args.cases:
        command = [sys.executable, __file__, "--child", "--calls", str(args.calls), case_id] + (["--variant", args.variant] if args.variant else [])
        run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        calls = calls_of(run.stdout)
        if run.returncode or not calls:
            print(f"{case_id}: child failed (rc {run.returncode}): {run.stderr[-2000:]}", flush=True)
            continue
        for i, events in enumerate(calls):
            print(f"{case_id} call {i}: {summary(events)}", flush=True)


if __name__ == "__main__":
    main()
