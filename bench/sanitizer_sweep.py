"""Every shipped kernel family under compute-sanitizer's four tools; fails on any kernel error.

    python bench/sanitizer_sweep.py --out DIR [--tools memcheck,racecheck,synccheck,initcheck]
        [--jobs 8] [--cases NAME,...] [--lineinfo] [--results bench/results.json]

The cases (CASES below) call the public API (`cute_lowering.kernels.fmha.attention`, `cute_lowering.kernels.nvfp4`) as
a user does, on small shapes chosen to reach every build that ships: FMHA wgmma and
mma_sync, decode and decode_wgmma (fmha_decode's split and key-warps kernels, fmha_sm90's
packed split-KV, the combine), at D=64 and D=128; causal, window, sink, GQA, Sq > Sk,
Sq = 1, tails not divisible by the tile, many keys (the wide-key tile), bf16 and NVFP4
outputs; NVFP4 quantize with a given scale and with a computed one (one launch, and the
amax + quantize pair), dequantize, the global scale.

How it runs: a warm-up pass without the sanitizer first (each case once, sharded over
`--jobs` processes: CuTeDSL's file cache then holds every build, and a case that fails
outright is reported as such before any tool runs); then, for each tool and shard, one
`compute-sanitizer --tool T python bench/sanitizer_sweep.py --worker --cases ...`, all of
them at once. The worker prints `CASE name` before and `DONE name` after each case (it
synchronizes in between), so every report lands under the case that caused it. A warm-up
worker that stops before its first case started (an import that fails: no `cute_lowering`, no CuTeDSL
on PYTHONPATH) ends the sweep there with its output's tail and exit status 1: nothing was
learned about the kernels. Under a tool, compute-sanitizer's "Target application terminated
before first instrumented API call" is such a setup failure too (the shard is unfinished),
not a kernel error.

What counts: every report compute-sanitizer makes about a kernel (memory access, race
hazard, barrier/sync error, uninitialized read) is a kernel error. Host API notices
("Program hit ... on CUDA API call to X") are not kernel errors: those from
`cuGetProcAddress` are the driver probing for entry points and are ignored by kind; any
other API error fails the sweep too, listed apart. Each tool's `ERROR SUMMARY` must equal
the reports parsed, or the sweep fails (a format it cannot read is not a clean run).

Writes DIR/sanitizer_TOOL_SHARD.log, DIR/sanitizer.json and prints a table. With
`--results FILE`, sets `sanitizer_TOOL` in that JSON for each tool whose shards all finished,
errors or not (kernel_errors, builds: distinct
kernel builds that ran under the tool, cases, date, gpu, the command). Exit status: 0 when
every tool saw 0 kernel errors and every worker finished, 1 otherwise, 2 when there is no
GPU or no compute-sanitizer (nothing run).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# per tool: what the tool is asked for beyond --tool (racecheck: every hazard, not the
# analysis summary alone, so the log has the accesses' offsets)
TOOL_FLAGS = {"racecheck": ["--racecheck-report", "all"], "initcheck": [], "memcheck": [], "synccheck": []}


def _attention(b, sq, sk, hq, hkv, d, *, causal=False, window=(-1, -1), sink=False, out="bf16", path="auto"):
    return {"kind": "attention", "shape": (b, sq, sk, hq, hkv, d), "causal": causal, "window": window, "sink": sink, "out": out, "path": path}


def _nvfp4(kind, m, k, dtype="bfloat16", scale="given"):
    return {"kind": kind, "shape": (m, k), "dtype": dtype, "scale": scale}


# name -> case. Shapes are small (racecheck tracks every shared-memory access) but keep
# tails (200, 257, 130, 300 are not multiples of any tile) and each build's trigger.
CASES = {}
for _d in (64, 128):
    for _path in ("wgmma", "mma_sync"):
        CASES.update({
            f"{_path}_d{_d}_tails": _attention(1, 200, 200, 2, 2, _d, path=_path),
            f"{_path}_d{_d}_causal_gqa": _attention(1, 200, 200, 2, 1, _d, causal=True, path=_path),
            f"{_path}_d{_d}_window_sink": _attention(1, 130, 257, 2, 1, _d, window=(64, 16), sink=True, path=_path),
            f"{_path}_d{_d}_sq_gt_sk_causal": _attention(1, 300, 130, 2, 2, _d, causal=True, path=_path),
            f"{_path}_d{_d}_sq1_causal_sink": _attention(1, 1, 300, 4, 1, _d, causal=True, sink=True, path=_path),
            f"{_path}_d{_d}_nvfp4": _attention(1, 200, 200, 2, 2, _d, out="nvfp4", path=_path),
            f"{_path}_d{_d}_causal_nvfp4": _attention(1, 200, 200, 2, 1, _d, causal=True, out="nvfp4", path=_path),
            f"{_path}_d{_d}_window_sink_nvfp4": _attention(1, 130, 257, 2, 1, _d, window=(64, 16), sink=True, out="nvfp4", path=_path),
        })
    CASES.update({
        # fmha_decode: key-warps kernel (<= 16 packed rows) and the split kernel, both with the combine
        f"decode_d{_d}_key_warps_sink": _attention(1, 1, 300, 8, 1, _d, causal=True, sink=True, path="decode"),
        f"decode_d{_d}_split_window": _attention(1, 4, 700, 16, 2, _d, window=(256, 0), path="decode"),
        f"decode_d{_d}_split_sq_gt": _attention(2, 40, 33, 8, 2, _d, causal=True, path="decode"),
        # fmha_sm90's packed split-KV kernel and its combine
        f"decode_wgmma_d{_d}_sq1": _attention(1, 1, 1000, 8, 1, _d, path="decode_wgmma"),
        f"decode_wgmma_d{_d}_causal_sink": _attention(1, 16, 2000, 8, 2, _d, causal=True, sink=True, path="decode_wgmma"),
        f"decode_wgmma_d{_d}_window": _attention(2, 5, 777, 4, 1, _d, window=(300, 0), path="decode_wgmma"),
        # path auto as users call it: the plans ops picks by shape
        f"auto_d{_d}_decode_shape": _attention(1, 16, 4100, 32, 4, _d, causal=True),
    })
CASES.update({
    # the wide-key tile (WIDE_KEYS_MIN keys and more, D=128, no mask) and the tail split of
    # the persistent kernel (a last wave that leaves SMs idle)
    "wgmma_d128_wide_keys": _attention(1, 130, 8200, 2, 1, 128, path="wgmma"),
    "wgmma_d128_wide_keys_sink": _attention(1, 64, 8192, 1, 1, 128, sink=True, path="wgmma"),
    "wgmma_d128_tail_split": _attention(1, 384, 4096, 1, 1, 128, path="wgmma"),
    "wgmma_d64_tail_split": _attention(1, 384, 4096, 1, 1, 64, path="wgmma"),
    # persistent CTAs that take several tiles: the dynamic scheduler's hand-over and the NVFP4
    # epilogue's hand-over to the quantizing warps, each repeated
    "wgmma_d128_causal_many_tiles": _attention(1, 1024, 1024, 40, 8, 128, causal=True, path="wgmma"),
    "wgmma_d64_causal_many_tiles": _attention(1, 1024, 1024, 40, 8, 64, causal=True, path="wgmma"),
    "wgmma_d128_nvfp4_many_tiles": _attention(1, 1024, 1024, 40, 8, 128, out="nvfp4", path="wgmma"),
    "wgmma_d128_fp16_causal": dict(_attention(1, 200, 200, 2, 1, 128, causal=True, path="wgmma"), dtype="float16"),
    # NVFP4 quantize (given scale; computed scale in one launch and as amax + quantize), dequantize, global scale
    "quantize_given_bf16": _nvfp4("quantize", 100, 256),
    "quantize_given_fp16": _nvfp4("quantize", 64, 1040, "float16"),
    "quantize_given_fp32": _nvfp4("quantize", 33, 512, "float32"),
    "quantize_computed_one_launch": _nvfp4("quantize", 96, 512, scale="computed"),
    "quantize_computed_two_launches": _nvfp4("quantize", 1000, 2048, scale="computed"),
    "dequantize_bf16": _nvfp4("dequantize", 100, 256),
    "dequantize_fp16": _nvfp4("dequantize", 64, 1040, "float16"),
    "dequantize_fp32": _nvfp4("dequantize", 33, 512, "float32"),
    "global_scale": _nvfp4("global_scale", 1000, 2048),
})


# --- the worker: runs cases in this process ---------------------------------------------
def run_case(torch, case: dict) -> None:
    from cute_lowering.kernels import fmha, nvfp4

    gen = torch.Generator(device="cuda").manual_seed(0)
    if case["kind"] == "attention":
        b, sq, sk, hq, hkv, d = case["shape"]
        dtype = getattr(torch, case.get("dtype", "bfloat16"))
        q = torch.randn(b, sq, hq, d, device="cuda", dtype=dtype, generator=gen)
        k = torch.randn(b, sk, hkv, d, device="cuda", dtype=dtype, generator=gen)
        v = torch.randn(b, sk, hkv, d, device="cuda", dtype=dtype, generator=gen)
        sink = torch.randn(hq, device="cuda", dtype=torch.float32, generator=gen) if case["sink"] else None
        out = fmha.attention(
            q, k, v, causal=case["causal"], window=case["window"], sink=sink, out_format=case["out"], path=case["path"], return_lse=True
        )
        torch.cuda.synchronize()
        return out
    m, kk = case["shape"]
    x = torch.randn(m, kk, device="cuda", dtype=getattr(torch, case["dtype"]), generator=gen) * 3
    if case["kind"] == "global_scale":
        out = nvfp4.compute_global_scale(x)
    elif case["kind"] == "quantize":
        gs = nvfp4.compute_global_scale(x) if case["scale"] == "given" else None
        torch.cuda.synchronize()
        out = nvfp4.quantize(x, gs)
    else:
        packed, scales, gs = nvfp4.quantize(x.to(torch.bfloat16), nvfp4.compute_global_scale(x))
        torch.cuda.synchronize()
        out = nvfp4.dequantize(packed, scales, gs, getattr(torch, case["dtype"]))
    torch.cuda.synchronize()
    return out


def worker(names: list[str]) -> int:
    import torch

    from cute_lowering.kernels import ops

    failed = 0
    for name in names:
        print(f"CASE {name}", flush=True)
        try:
            run_case(torch, CASES[name])
        except Exception as e:  # noqa: BLE001 (a case that fails is reported, the others still run)
            failed += 1
            print(f"FAILED {name}: {type(e).__name__}: {e}", flush=True)
            continue
        print(f"DONE {name}", flush=True)
    # the distinct kernel builds this process launched (ops' launch cache: one entry a build)
    print("BUILDS " + json.dumps(sorted(repr(k) for k in ops._LAUNCHERS)), flush=True)
    return 1 if failed else 0


# --- parsing compute-sanitizer's output ---------------------------------------------------
_HEADER = re.compile(r"^=+ (\S.*)$")  # a report's first line (its details are indented further)
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
# racecheck's own: "RACECHECK SUMMARY: 17 hazards displayed (17 errors, 0 warnings)"; with
# --print-limit reached it displays fewer than it counts
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_META = ("ERROR SUMMARY", "RACECHECK SUMMARY", "COMPUTE-SANITIZER", "LEAK SUMMARY", "Target application returned")
_NEVER_STARTED = "Error: Target application terminated before first instrumented API call"


def parse_log(text: str) -> dict:
    """Reports in one worker's output, by case: kernel errors, API notices (ignored) and other API errors."""
    case = None
    per_case: dict[str, dict] = {}
    kernel, api_ignored, api_other, summary, done, failed, builds = [], [], [], None, [], [], []
    race = None  # (displayed, errors + warnings) from racecheck's summary
    setup_failed, started = False, []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("CASE "):
            case = line[5:].strip()
            started.append(case)
            continue
        if line.startswith("DONE "):
            done.append(line[5:].strip())
            continue
        if line.startswith("FAILED "):
            failed.append(line[7:].strip())
            continue
        if line.startswith("BUILDS "):
            builds = json.loads(line[7:])
            continue
        m = _HEADER.match(line)
        if not m:
            continue
        head = m.group(1)
        s = _SUMMARY.search(head)
        if s:
            summary = int(s.group(1))
            continue
        r = _RACE_SUMMARY.search(head)
        if r:
            race = (int(r.group(1)), int(r.group(2)) + int(r.group(3)))
            continue
        if head.startswith(_META):
            continue
        if head.startswith(_NEVER_STARTED):  # the worker died before CUDA: its setup's failure, no kernel ran
            setup_failed = True
            continue
        detail = " | ".join(l.strip("= ").strip() for l in lines[i + 1 : i + 4] if l.startswith("=") and not _HEADER.match(l))
        report = {"case": case, "report": head, "detail": detail}
        if head.startswith("Program hit"):
            (api_ignored if "cuGetProcAddress" in head else api_other).append(report)
        else:
            kernel.append(report)
            per_case.setdefault(case or "?", {"kernel_errors": 0})["kernel_errors"] += 1
    return {
        "kernel_errors": kernel, "api_ignored": len(api_ignored), "api_other": api_other, "summary": summary, "race": race,
        "done": done, "failed": failed, "builds": builds, "per_case": per_case, "setup_failed": setup_failed,
        "started": started,
    }  # fmt: skip


def _env(lineinfo: bool) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if lineinfo:
        env["CUTE_DSL_LINEINFO"] = "1"
    return env


def run_shard(tool: str | None, names: list[str], log: str, lineinfo: bool, timeout: int) -> tuple[int, str]:
    command = [sys.executable, os.path.abspath(__file__), "--worker", "--cases", ",".join(names)]
    if tool:
        command = ["compute-sanitizer", "--tool", tool, *TOOL_FLAGS[tool], "--print-limit", "10000", *command]
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(lineinfo), timeout=timeout)
        text, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as e:
        text, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), 124
        text += f"\nTIMEOUT after {timeout} s\n"
    with open(log, "w") as f:
        f.write(" ".join(command) + "\n" + text)
    return rc, text


def shards(names: list[str], jobs: int) -> list[list[str]]:
    return [s for s in (names[i::jobs] for i in range(jobs)) if s]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", help="folder for the logs and sanitizer.json")
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--cases", help="comma-separated case names (default: all)")
    p.add_argument("--jobs", type=int, default=8, help="shards a tool's cases run in, all at once")
    p.add_argument("--lineinfo", action="store_true", help="build with line info (CUTE_DSL_LINEINFO=1): reports name source lines")
    p.add_argument("--timeout", type=int, default=540, help="seconds a shard may run")
    p.add_argument("--results", help="JSON file whose sanitizer_TOOL entries are set from this run")
    p.add_argument("--list", action="store_true", help="print the case names and exit")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    names = args.cases.split(",") if args.cases else list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        p.error(f"unknown case(s): {', '.join(unknown)} (--list shows them)")
    if args.list:
        print("\n".join(names))
        return 0
    if args.worker:
        return worker(names)
    tools = args.tools.split(",")
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        p.error(f"unknown tool(s): {', '.join(bad)}; the tools are {', '.join(TOOLS)}")
    if not args.out:
        p.error("--out DIR is required")
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if shutil.which("compute-sanitizer") is None or shutil.which("nvidia-smi") is None:
        print("no GPU here (compute-sanitizer/nvidia-smi not found): nothing run", file=sys.stderr)
        return 2
    from installed_checkout import refuse_stale

    stale = refuse_stale("sanitizer_sweep")  # (a sweep of another tree's kernels under this tree's name)
    if stale:
        print(stale, file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    parts = shards(names, args.jobs)
    # warm-up: every build compiled once into CuTeDSL's file cache, outside the sanitizer
    with concurrent.futures.ThreadPoolExecutor(len(parts)) as pool:
        warm = list(pool.map(lambda ip: run_shard(None, ip[1], os.path.join(args.out, f"warmup_{ip[0]}.log"), args.lineinfo, args.timeout), enumerate(parts)))
    warm_logs = [parse_log(text) for _, text in warm]
    warm_failed = [f for got in warm_logs for f in got["failed"]]
    # a shard that never started its first case could not even import the kernels: the tools would
    # only repeat that (one that stopped inside a case goes on: the tools then say what that case did)
    stopped = [(i, rc, text) for i, ((rc, text), got) in enumerate(zip(warm, warm_logs)) if not got["started"]]
    if stopped:
        for i, rc, text in stopped:
            tail = "\n      ".join(text.strip().splitlines()[-6:]) or "(no output)"
            print(f"warm-up: shard {i} stopped before its cases ran (exit status {rc}); the sweep's setup failed, "
                  f"not a kernel (is cute_lowering importable with this PYTHONPATH?). Its output's tail:\n      {tail}", file=sys.stderr)  # fmt: skip
        print(f"nothing run under the sanitizer; logs in {args.out}/warmup_*.log", file=sys.stderr)
        return 1
    print(f"warm-up: {len(names)} cases in {time.time() - t0:.0f} s" + (f"; FAILED: {warm_failed}" if warm_failed else ""), flush=True)
    jobs = [(tool, i, part) for tool in tools for i, part in enumerate(parts)]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        outs = list(pool.map(lambda j: run_shard(j[0], j[2], os.path.join(args.out, f"sanitizer_{j[0]}_{j[1]}.log"), args.lineinfo, args.timeout), jobs))
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip().splitlines()[0]
    date = datetime.date.today().isoformat()
    status = 1 if warm_failed else 0
    report = {}
    for tool in tools:
        r = {"kernel_errors": 0, "api_notices_ignored": 0, "api_errors": [], "builds": set(), "cases": 0, "errors": [], "unfinished": []}
        for (t, i, part), (rc, text) in zip(jobs, outs):
            if t != tool:
                continue
            got = parse_log(text)
            parsed = len(got["kernel_errors"])
            r["errors"] += got["kernel_errors"]
            r["api_notices_ignored"] += got["api_ignored"]
            r["api_errors"] += got["api_other"]
            r["builds"].update(got["builds"])
            r["cases"] += len(got["done"])
            r["unfinished"] += [n for n in part if n not in got["done"]]
            if got["setup_failed"]:
                r["unfinished"].append(f"shard {i}: the worker ended before its first CUDA call under {tool} (rc {rc}): a setup failure, not a kernel's")
                continue
            if tool == "racecheck":
                # racecheck counts its hazards in its own summary (and may display fewer)
                displayed, counted = got["race"] if got["race"] else (None, None)
                r["kernel_errors"] += counted or parsed
                if got["race"] is None or displayed != parsed + got["api_ignored"] + len(got["api_other"]):
                    r["unfinished"].append(f"shard {i}: RACECHECK SUMMARY {got['race']} against {parsed} reports parsed (rc {rc})")
            else:
                r["kernel_errors"] += parsed
                counted = parsed + got["api_ignored"] + len(got["api_other"])
                if got["summary"] is None or got["summary"] != counted:
                    r["unfinished"].append(f"shard {i}: ERROR SUMMARY {got['summary']} against {counted} reports parsed (rc {rc})")
        r["builds"] = len(r["builds"])
        ok = r["kernel_errors"] == 0 and not r["api_errors"] and not r["unfinished"]
        status = status if ok else 1
        print(f"{tool:10s} kernel errors {r['kernel_errors']:4d}  builds {r['builds']:3d}  cases {r['cases']:3d}/{len(names)}"
              f"  api notices ignored {r['api_notices_ignored']}  other api errors {len(r['api_errors'])}  {'ok' if ok else 'FAIL'}")  # fmt: skip
        for e in r["errors"][:20]:
            print(f"    {e['case']}: {e['report']}  [{e['detail']}]")
        for u in r["unfinished"]:
            print(f"    unfinished: {u}")
        report[tool] = r
    with open(os.path.join(args.out, "sanitizer.json"), "w") as f:
        json.dump({"date": date, "gpu": gpu, "cases": names, "tools": report}, f, indent=1)
    if args.results:
        with open(args.results) as f:
            results = json.load(f)
        for tool, r in report.items():
            if r["unfinished"]:  # (a run that did not finish says nothing about the kernels)
                print(f"{tool}: not recorded in {args.results} (unfinished shards)")
                continue
            results[f"sanitizer_{tool}"] = {
                "kernel_errors": r["kernel_errors"], "builds": r["builds"], "cases": r["cases"], "date": date, "gpu": gpu,
                "command": f"python bench/sanitizer_sweep.py --out DIR --tools {tool}",
            }  # fmt: skip
        with open(args.results, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
    print(f"total {time.time() - t0:.0f} s, status {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
