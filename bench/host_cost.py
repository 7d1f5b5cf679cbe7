"""Per-call host cost of the torch ops' launch path against torch SDPA's, in one run (GPU).

    python bench/host_cost.py --out OUT_DIR         # on a GPU machine: OUT_DIR/host_cost.json, profile.txt
    python bench/host_cost.py --merge OUT_DIR/host_cost.json   # its host_us_* entries into bench/results.json

Host cost = the wall-clock time until a call returns, for `CALLS` back-to-back calls
(few enough that the launch queue never fills, so the GPU's own time does not show),
median over `ROUNDS` rounds, garbage collection off during a round. The cases:
- ours: `nvfp4.quantize(x 16x7168 bf16, global_scale)`, `nvfp4.quantize(x)` (the global
  scale computed on the device: one launch at this size), the same for x 64x7168 (two
  launches: reported, no entry), `nvfp4.compute_global_scale(x)` (reported, no entry),
  `fmha.attention` decode (q 1x1x32x128, k/v 1x4096x8x128);
- peer: torch SDPA on the same decode shapes (`enable_gqa`), and `x.abs().amax()`;
- the calling convention alone, same kernel and preallocated outputs: CuTeDSL's
  direct call (`make_ptr` pointers, `Int32`, `CUstream` built per call, as the API did
  before) against the TVM-FFI function called with ints;
- the same public calls through the dispatcher (`torch.ops.cute_lowering.*`), the path
  torch.compile takes.
The results.json ratios come from ours and SDPA timed in alternating rounds (`paired_us`):
timed one after the other, a host whose load drifts between the two moved the ratio from
1.05 to 0.64 on the same code (4161db4:bench/h200/fmha_split run1 and run4).
Then cProfile of 2000 calls of each of ours (profile.txt): where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import pathlib
import pstats
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench")]

CALLS, ROUNDS = 100, 40
RESULTS = ROOT / "bench" / "results.json"
KEY_PREFIX = "host_us_"


def round_us(fn, calls: int) -> float:
    """Host us per call of `calls` back-to-back calls (GC off), then the GPU drained."""
    import torch

    gc.disable()
    start = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    stop = time.perf_counter_ns()
    gc.enable()
    torch.cuda.synchronize()
    return (stop - start) / calls / 1e3


def warm(*fns) -> None:
    import torch

    for _ in range(20):
        for fn in fns:
            fn()
    torch.cuda.synchronize()


def host_us(fn, calls: int = CALLS, rounds: int = ROUNDS) -> float:
    """Median over `rounds` of round_us."""
    warm(fn)
    return round(statistics.median(round_us(fn, calls) for _ in range(rounds)), 2)


def paired_us(ours, peer, calls: int = CALLS, rounds: int = ROUNDS) -> tuple[float, float, float]:
    """(ours us, peer us, median of the per-round ratios peer / ours): rounds of `calls` calls
    of each, alternating, so that both see the same host (a busy or drifting host moves both)."""
    warm(ours, peer)
    rounds_us = [(round_us(peer, calls), round_us(ours, calls)) for _ in range(rounds)]
    ratio = statistics.median(p / o for p, o in rounds_us)
    return round(statistics.median(o for _, o in rounds_us), 2), round(statistics.median(p for p, _ in rounds_us), 2), round(ratio, 3)


def profile_text(name, fn, calls: int = 2000) -> str:
    import torch

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    torch.cuda.synchronize()
    buf = io.StringIO()
    pstats.Stats(profiler, stream=buf).sort_stats("tottime").print_stats(14)
    return f"===== {name}: {calls} calls =====\n{buf.getvalue()}"


def main_gpu(out: pathlib.Path):
    import torch
    import torch.nn.functional as F

    from cute_lowering.kernels import fmha, fmha_sm80, nvfp4, nvfp4_kernels, ops
    from cute_lowering.kernels.torch_device import arch_of

    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    arch = arch_of(dev)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(16, 7168, generator=g, device="cuda").to(torch.bfloat16)
    x_large = torch.randn(64, 7168, generator=g, device="cuda").to(torch.bfloat16)  # past ONE_LAUNCH_MAX_ELEMENTS: two launches
    q = torch.randn(1, 1, 32, 128, generator=g, device="cuda").to(torch.bfloat16)
    k = torch.randn(1, 4096, 8, 128, generator=g, device="cuda").to(torch.bfloat16)
    v = torch.randn(1, 4096, 8, 128, generator=g, device="cuda").to(torch.bfloat16)
    gs = nvfp4.compute_global_scale(x)
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))  # SDPA's [B, H, S, D] views, made once
    scale = 1 / math.sqrt(128)

    # the calling convention alone: one kernel, preallocated outputs
    packed = torch.empty(16, 3584, dtype=torch.uint8, device="cuda")
    scales = torch.empty(16, 448, dtype=torch.uint8, device="cuda")
    direct_q = nvfp4.compile_quantize("bfloat16", arch, "plain")
    ffi_q = ops._quantize_launch(x, "plain", "given")
    o = torch.empty_like(q)
    lse = torch.empty(1, 32, 1, dtype=torch.float32, device="cuda")
    direct_a = fmha.compile_attention("bfloat16", 128, False, (-1, -1), False, arch)
    ffi_a = ops._attention_launch(q, k.shape[1], False, -1, -1, "auto", None, None, False)[0]
    counters = torch.zeros(4, dtype=torch.int32, device="cuda")  # (the wgmma kernel's scheduler, if dynamic)
    gmem = nvfp4_kernels.cute.AddressSpace.gmem
    make_ptr, dt, F32, I32 = nvfp4_kernels.make_ptr, fmha.DTYPES["bfloat16"], fmha_sm80.F32, fmha_sm80.I32

    def direct_quantize():
        direct_q(*nvfp4.quantize_arguments(x, packed, scales, gs), nvfp4._stream(torch, x.device))

    def ffi_quantize():
        ffi_q(x.data_ptr(), packed.data_ptr(), scales.data_ptr(), gs.data_ptr(), x.numel(), ops._stream(0))

    def direct_attention():
        direct_a(
            make_ptr(dt, q.data_ptr(), gmem, assumed_align=16), make_ptr(dt, k.data_ptr(), gmem, assumed_align=16),
            make_ptr(dt, v.data_ptr(), gmem, assumed_align=16), make_ptr(dt, o.data_ptr(), gmem, assumed_align=16),
            make_ptr(F32, lse.data_ptr(), gmem, assumed_align=4), make_ptr(F32, lse.data_ptr(), gmem, assumed_align=4),
            *nvfp4.output_pointers(lse.data_ptr(), lse.data_ptr(), lse.data_ptr()),
            make_ptr(I32, counters.data_ptr(), gmem, assumed_align=4),
            make_ptr(F32, lse.data_ptr(), gmem, assumed_align=16), make_ptr(F32, lse.data_ptr(), gmem, assumed_align=4), I32(1),
            I32(1), I32(1), I32(4096), I32(32), I32(8), F32(scale * fmha.LOG2E), I32(-1), I32(-1),
            nvfp4.cuda.CUstream(torch.cuda.current_stream().cuda_stream),
        )  # fmt: skip

    def ffi_attention():
        p = lse.data_ptr()
        ffi_a(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), p, p, p, p, p, counters.data_ptr(), p, p, 1, 1, 1, 4096, 32, 8, scale * fmha.LOG2E, -1, -1, ops._stream(0))

    cases = {
        "sdpa_decode": lambda: F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True),
        "amax_expr": lambda: x.abs().amax(),
        "quantize_given_scale": lambda: nvfp4.quantize(x, gs),
        "quantize_computed_scale": lambda: nvfp4.quantize(x),
        "quantize_computed_scale_64x7168": lambda: nvfp4.quantize(x_large),
        "compute_global_scale": lambda: nvfp4.compute_global_scale(x),
        "attention_decode": lambda: fmha.attention(q, k, v),
        "op_quantize_given_scale": lambda: torch.ops.cute_lowering.nvfp4_quantize(x, gs),
        "op_quantize_computed_scale": lambda: torch.ops.cute_lowering.nvfp4_quantize_computing_scale(x),
        "op_attention_decode": lambda: torch.ops.cute_lowering.attention(q, k, v, None, scale, -1, -1),
        "call_direct_quantize": direct_quantize,
        "call_tvm_ffi_quantize": ffi_quantize,
        "call_direct_attention": direct_attention,
        "call_tvm_ffi_attention": ffi_attention,
    }
    # correctness of the convention comparison: both calls write the same bytes
    direct_quantize()
    a = packed.clone()
    packed.zero_()
    ffi_quantize()
    torch.cuda.synchronize()
    same_call = bool(torch.equal(a, packed))
    direct_attention()
    b = o.clone()
    o.zero_()
    ffi_attention()
    torch.cuda.synchronize()
    same_call = same_call and bool(torch.equal(b, o))

    us = {name: host_us(fn) for name, fn in cases.items()}
    us_again = {name: host_us(fn) for name, fn in cases.items()}  # a second pass: the spread
    for name in us:
        print(f"{name:30s} {us[name]:8.2f} us   (second pass {us_again[name]:.2f})", flush=True)
    # the entries' ratios: ours and SDPA in alternating rounds, twice
    paired = {name: [paired_us(cases[name], cases["sdpa_decode"]) for _ in range(2)] for name in PAIRED}
    for name, runs in paired.items():
        print(f"{name:30s} paired with sdpa_decode (ours us, sdpa us, ratio): {runs}", flush=True)
    prof = "".join(profile_text(n, cases[n]) for n in ("quantize_given_scale", "quantize_computed_scale", "attention_decode", "sdpa_decode"))
    (out / "profile.txt").write_text(prof)

    entries = host_entries(us, us_again, paired, torch.cuda.get_device_name(), time.strftime("%Y-%m-%d"))
    entries[KEY_PREFIX + "calling_convention"]["same_bytes"] = same_call  # both conventions wrote the same output
    report = {
        "entries": entries, "us": us, "us_second_pass": us_again, "paired": paired, "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(),
    }  # fmt: skip
    (out / "host_cost.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(entries, indent=1))


PAIRED = ("quantize_given_scale", "quantize_computed_scale", "attention_decode")


def host_entries(us: dict, us_again: dict, paired: dict, gpu: str, date: str) -> dict:
    """The results.json entries: of the two paired measurements (ours and SDPA in alternating
    rounds), the one less favourable to ours (ratio = peer / ours); the separate passes ride along."""
    entries = {}
    for name in PAIRED:
        ours, peer, ratio = min(paired[name], key=lambda run: run[2])
        entries[KEY_PREFIX + name] = {
            "ours": ours, "peer": peer, "ratio": ratio,
            "unit": "us of host time per call (back-to-back; 40 rounds of 100 calls of ours and of the peer, alternating; "
                    "medians, ratio = median of the per-round ratios; the less favourable of two such measurements); "
                    "peer = torch SDPA decode (q 1x1x32x128, k/v 1x4096x8x128), same run",
            "gpu": gpu, "date": date, "paired": paired[name], "passes_ours": [us[name], us_again[name]],
            "passes_peer": [us["sdpa_decode"], us_again["sdpa_decode"]],
            "through_dispatcher": [us["op_" + name], us_again["op_" + name]],
        }  # fmt: skip
    tvm, direct = max(us["call_tvm_ffi_attention"], us_again["call_tvm_ffi_attention"]), min(us["call_direct_attention"], us_again["call_direct_attention"])
    entries[KEY_PREFIX + "calling_convention"] = {
        "ours": tvm, "peer": direct, "ratio": round(direct / tvm, 3),
        "unit": "us per call of the compiled decode attention, preallocated outputs: TVM-FFI function called with ints (ours) "
                "vs CuTeDSL's direct call with make_ptr/Int32/CUstream built per call (peer); the less favourable of two passes",
        "quantize_tvm_ffi": [us["call_tvm_ffi_quantize"], us_again["call_tvm_ffi_quantize"]],
        "quantize_direct": [us["call_direct_quantize"], us_again["call_direct_quantize"]],
        "gpu": gpu, "date": date,
    }  # fmt: skip
    return entries


def merge(path: pathlib.Path):
    """Read-modify-write of bench/results.json: only the host_us_* keys change."""
    raw = json.loads(path.read_text())
    convention = raw["entries"][KEY_PREFIX + "calling_convention"]
    entries = host_entries(raw["us"], raw["us_second_pass"], raw["paired"], convention["gpu"], convention["date"])
    entries[KEY_PREFIX + "calling_convention"]["same_bytes"] = convention["same_bytes"]
    results = json.loads(RESULTS.read_text())
    results.update({k: v for k, v in entries.items() if k.startswith(KEY_PREFIX)})
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"{RESULTS}: {sorted(entries)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--merge", type=pathlib.Path)
    args = parser.parse_args()
    if args.merge:
        merge(args.merge)
    elif args.out:
        main_gpu(args.out)
    else:
        parser.error("--out (on a GPU) or --merge")
