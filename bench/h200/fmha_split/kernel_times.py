"""Where one FMHA call's GPU time goes, kernel by kernel: ours against FA3 (and FA4).

    python bench/h200/fmha_split/kernel_times.py [--calls N] [--variant NAME] CASE...    (CASE: N, an ISSUE_CASES index, or dN, DECODE_CASES)

Each call runs as `cuda_timing.gpu_ms` runs it (L2 flushed, the GPU spun ~0.5 ms so the host's
launches are queued ahead), under torch.profiler; per implementation it prints each kernel's
median duration, the median span from the first kernel's start to the last one's end, and the
idle time inside that span (a split-KV call's gap between its kernels), in microseconds.
"""

import argparse
import json
import pathlib
import statistics
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import torch  # noqa: E402

from cuda_timing import FLUSH_BYTES, SPIN_CYCLES  # noqa: E402
from fmha_peers import DECODE_CASES, ISSUE_CASES, VARIANTS, case_name, implementations, make_inputs  # noqa: E402


def call_kernels(fn, calls: int) -> list[list[dict]]:
    """The kernels of each of `calls` calls of fn (trace events: name, ts, dur in us), in order."""
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush.zero_()
            torch.cuda._sleep(SPIN_CYCLES)
            fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        events = json.load(open(f.name))["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    # a call's kernels: those after its spin and before the next call's flush (the kernel just
    # before the next spin), or, for the last call, to the end
    spins = [i for i, e in enumerate(kernels) if "sleep" in e["name"].lower() or "spin" in e["name"].lower()]
    per_call = [kernels[s + 1 : (spins[j + 1] - 1 if j + 1 < len(spins) else len(kernels))] for j, s in enumerate(spins)]
    return [c for c in per_call if c]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--impls", default="ours,fa3")
    parser.add_argument("--variant", default="", help="ours with fmha_peers.VARIANTS[NAME]'s knobs (fmha_sm90's, or fmha_decode.X)")
    args = parser.parse_args()
    if args.variant:
        from kernels import fmha_decode, fmha_sm90

        for knob, value in VARIANTS[args.variant].items():
            module, _, attribute = knob.rpartition(".")
            setattr(fmha_decode if module == "fmha_decode" else fmha_sm90, attribute, value)
    for spec in args.cases:
        split = spec.startswith("d")
        case = DECODE_CASES[int(spec[1:])] if split else ISSUE_CASES[int(spec)]
        q, k, v, sinks = make_inputs(torch, case)
        impls = implementations(torch, case, q, k, v, sinks, split)
        print(f"## {case_name(case)}")
        for name in args.impls.split(","):
            if name not in impls:
                print(f"{name}: not available")
                continue
            calls = call_kernels(impls[name], args.calls)
            span = statistics.median(c[-1]["ts"] + c[-1]["dur"] - c[0]["ts"] for c in calls)
            busy = statistics.median(sum(e["dur"] for e in c) for c in calls)
            print(f"{name}: {len(calls[0])} kernels a call, span {span:.1f} us, kernels busy {busy:.1f} us, idle inside {span - busy:.1f} us")
            for i, e in enumerate(calls[0]):
                durs = [c[i]["dur"] for c in calls if len(c) > i]
                gap = statistics.median(c[i]["ts"] - (c[i - 1]["ts"] + c[i - 1]["dur"]) for c in calls if i and len(c) > i) if i else 0.0
                print(f"   {statistics.median(durs):8.1f} us (after a {gap:5.1f} us gap)  {e['name'][:110]}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
