"""Quantize with the global scale computed: one launch (the "cluster" build) against two ("partials"), by size (GPU).

    python bench/nvfp4_scale_launches.py --out OUT_DIR      # OUT_DIR/nvfp4_scale_launches.json

The GPU-time side of `nvfp4.ONE_LAUNCH_MAX_ELEMENTS` (the host side is bench/host_cost.py).
For each size up to that limit, both builds are called through their TVM-FFI launchers
with preallocated outputs, timed by `cuda_timing.graph_ms` (back-to-back calls captured in a
CUDA graph and replayed: the time per call is the GPU's, launch gaps included, host cost
excluded; the benches' one timer). Both builds must write the same bytes (packed, scales,
global scale). The table in bench/RESULTS.md was measured by this script's first version,
which replayed graphs of 50 calls with its own CUDA-event loop (same method, its own timer).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench")]

from cuda_timing import graph_ms  # noqa: E402

SHAPES = [(1, 7168), (2, 7168), (4, 7168), (8, 7168), (16, 7168), (32, 4096)]  # up to ONE_LAUNCH_MAX_ELEMENTS


def launch_fn(torch, ops, nvfp4, x, build):
    """A closure calling one build's launcher on preallocated outputs; and those outputs."""
    m, k = x.shape
    n = m * k
    launch = ops._quantize_launch(x, "plain", build)
    packed = torch.empty(m, k // 2, dtype=torch.uint8, device="cuda")
    scales = torch.empty(m, k // 16, dtype=torch.uint8, device="cuda")
    buf = torch.empty(1 + nvfp4.amax_ctas(n), dtype=torch.float32, device="cuda")  # [global scale, partial maxima]
    p = buf.data_ptr()

    def stream():
        return torch.cuda.current_stream().cuda_stream  # the capture stream

    if build == "cluster":
        fn = lambda: launch(x.data_ptr(), packed.data_ptr(), scales.data_ptr(), p, n, stream())  # noqa: E731
    else:
        fn = lambda: launch(x.data_ptr(), packed.data_ptr(), scales.data_ptr(), p + 4, p, n, stream())  # noqa: E731
    return fn, (packed, scales, buf)


def main(out: pathlib.Path):
    import torch

    from cute_lowering.kernels import nvfp4, ops

    out.mkdir(parents=True, exist_ok=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for m, k in SHAPES:
        x = (torch.randn(m, k, generator=g, device="cuda") * 3).to(torch.bfloat16)
        got = {}
        for build in ("cluster", "partials"):
            fn, outs = launch_fn(torch, ops, nvfp4, x, build)
            ms = graph_ms(fn)
            if ms is None:
                sys.exit(f"{build} at {m}x{k}: CUDA graph capture failed (the reason is printed above)")
            us = round(ms * 1e3, 2)
            torch.cuda.synchronize()
            got[build] = (us, outs[0].clone(), outs[1].clone(), outs[2][0].item())
        same = torch.equal(got["cluster"][1], got["partials"][1]) and torch.equal(got["cluster"][2], got["partials"][2])
        same = same and got["cluster"][3] == got["partials"][3]
        row = {"shape": [m, k], "elements": m * k, "one_launch_us": got["cluster"][0], "two_launches_us": got["partials"][0], "same_bytes": same}
        row["one_over_two"] = round(row["one_launch_us"] / row["two_launches_us"], 3)
        rows.append(row)
        print(f"{m:3d} x {k}  {m * k:7d} elements: one launch {row['one_launch_us']:6.2f} us, two {row['two_launches_us']:6.2f} us, "
              f"one/two {row['one_over_two']:.3f}, same bytes {same}", flush=True)  # fmt: skip
    report = {"rows": rows, "limit": nvfp4.ONE_LAUNCH_MAX_ELEMENTS, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    (out / "nvfp4_scale_launches.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    main(parser.parse_args().out)
