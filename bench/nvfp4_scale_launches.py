"""Quantize with the global scale computed: one launch ("every_cta") against two ("partials"), by size (GPU).

    python bench/nvfp4_scale_launches.py --out OUT_DIR      # OUT_DIR/nvfp4_scale_launches.json

What sets `nvfp4.ONE_LAUNCH_MAX_ELEMENTS`. For each size, both builds are called through
their TVM-FFI launchers with preallocated outputs; 50 back-to-back calls are captured in a
CUDA graph and the graph replayed, so the time per call is the GPU's (launch gaps
included, host cost excluded: that is bench/host_cost.py's). CUDA events, median of 20
replays. Both builds must write the same bytes (packed, scales, global scale).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

ROWS = (1, 4, 16, 32, 64, 128, 512)  # x [rows, 7168] bf16 (a DeepSeek-sized hidden dim), plus 32 x 4096 = the limit
CALLS, REPLAYS = 50, 20


def gpu_us_per_call(torch, fn) -> float:
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(CALLS):
            fn()
    samples = []
    for _ in range(REPLAYS):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        stop.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(stop) * 1e3 / CALLS)
    return round(statistics.median(samples), 2)


def main(out: pathlib.Path):
    import torch

    from kernels import nvfp4, ops

    out.mkdir(parents=True, exist_ok=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    shapes = [(r, 7168) for r in ROWS] + [(32, 4096)]
    rows = []
    for m, k in sorted(shapes, key=lambda s: s[0] * s[1]):
        n = m * k
        x = (torch.randn(m, k, generator=g, device="cuda") * 3).to(torch.bfloat16)
        results = {}
        for build in ("every_cta", "partials"):
            launch = ops._quantize_launch(x, "plain", build)
            packed = torch.empty(m, k // 2, dtype=torch.uint8, device="cuda")
            scales = torch.empty(m, k // 16, dtype=torch.uint8, device="cuda")
            buf = torch.empty(1 + nvfp4.amax_ctas(n), dtype=torch.float32, device="cuda")
            p = buf.data_ptr()
            stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731 (the capture stream)
            if build == "every_cta":
                fn = lambda: launch(x.data_ptr(), packed.data_ptr(), scales.data_ptr(), p, n, stream())  # noqa: E731
            else:
                fn = lambda: launch(x.data_ptr(), packed.data_ptr(), scales.data_ptr(), p + 4, p, n, stream())  # noqa: E731
            us = gpu_us_per_call(torch, fn)
            torch.cuda.synchronize()
            results[build] = (us, packed.clone(), scales.clone(), buf[0].item())
        same = (
            torch.equal(results["every_cta"][1], results["partials"][1])
            and torch.equal(results["every_cta"][2], results["partials"][2])
            and results["every_cta"][3] == results["partials"][3]
        )
        row = {"shape": [m, k], "elements": n, "one_launch_us": results["every_cta"][0], "two_launches_us": results["partials"][0], "same_bytes": same}
        row["one_over_two"] = round(row["one_launch_us"] / row["two_launches_us"], 3)
        rows.append(row)
        print(f"{m:4d} x {k}  {n:8d} elements: one launch {row['one_launch_us']:7.2f} us, two {row['two_launches_us']:7.2f} us, ratio {row['one_over_two']:.3f}, same bytes {same}", flush=True)
    report = {"rows": rows, "limit_now": nvfp4.ONE_LAUNCH_MAX_ELEMENTS, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    (out / "nvfp4_scale_launches.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    main(parser.parse_args().out)
