"""A decode step (NVFP4 quantize of 16x7168 + decode attention) eager, in torch.compile and in a CUDA graph (GPU).

    python bench/decode_step.py --out OUT_DIR     # OUT_DIR/decode_step.json

Ours: `nvfp4.quantize(x)` (global scale computed) and `fmha.attention(q, k, v)` with q
1x1x32x128, k/v 1x4096x8x128 bf16. The reference: the same step in torch (bench/nvfp4_bench's
`torch_quantize` + `torch_global_scale`, bit-exact NVFP4, and SDPA with `enable_gqa`)
under torch.compile (default mode, and mode="reduce-overhead", its CUDA graphs); ours the same
two ways, and captured by hand in a `torch.cuda.CUDAGraph`.
Reported: whether torch.compile(fullgraph=True) and a CUDA-graph replay of ours give
the eager bytes, and the step time (CUDA events around 50 back-to-back steps, median of
20: the host's cost and the GPU's, whichever is longer) of each.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench")]


def main(out: pathlib.Path):
    import torch
    import torch.nn.functional as F

    from cuda_timing import median_ms
    from cute_lowering.kernels import fmha, nvfp4
    from nvfp4_bench import torch_global_scale, torch_quantize

    out.mkdir(parents=True, exist_ok=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(16, 7168, generator=g, device="cuda").to(torch.bfloat16)
    q = torch.randn(1, 1, 32, 128, generator=g, device="cuda").to(torch.bfloat16)
    k = torch.randn(1, 4096, 8, 128, generator=g, device="cuda").to(torch.bfloat16)
    v = torch.randn(1, 4096, 8, 128, generator=g, device="cuda").to(torch.bfloat16)

    def ours(x, q, k, v):
        packed, scales, gs = nvfp4.quantize(x)
        return packed, scales.view(torch.uint8), gs, fmha.attention(q, k, v)

    def reference(x, q, k, v):
        gs = torch_global_scale(x)
        packed, scales = torch_quantize(x, gs)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), enable_gqa=True)
        return packed, scales, gs, o.transpose(1, 2)

    def same(a, b):
        return all(torch.equal(s.reshape(-1).view(torch.uint8), t.reshape(-1).view(torch.uint8)) for s, t in zip(a, b))

    eager = ours(x, q, k, v)
    torch._dynamo.reset()
    compiled = torch.compile(ours, fullgraph=True)
    got_compiled = compiled(x, q, k, v)
    # a CUDA graph of the eager step
    static = [t.clone() for t in (x, q, k, v)]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        ours(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = ours(*static)
    graph.replay()
    torch.cuda.synchronize()
    ours_graphs = torch.compile(ours, mode="reduce-overhead", fullgraph=True)
    for _ in range(3):
        got_graphs = [t.clone() for t in ours_graphs(x, q, k, v)]  # its outputs live in the graph's pool
    ref_compiled = torch.compile(reference)
    ref_graphs = torch.compile(reference, mode="reduce-overhead")
    ref = ref_compiled(x, q, k, v)
    for _ in range(3):
        ref_graphs(x, q, k, v)
    ref_eager = reference(x, q, k, v)

    times = {
        "ours_eager": median_ms(lambda: ours(x, q, k, v), iters=50),
        "ours_torch_compile": median_ms(lambda: compiled(x, q, k, v), iters=50),
        "ours_cuda_graph": median_ms(graph.replay, iters=50),
        "ours_torch_compile_cudagraphs": median_ms(lambda: ours_graphs(x, q, k, v), iters=50),
        "reference_torch_compile": median_ms(lambda: ref_compiled(x, q, k, v), iters=50),
        "reference_torch_compile_cudagraphs": median_ms(lambda: ref_graphs(x, q, k, v), iters=50),
        "reference_eager": median_ms(lambda: reference(x, q, k, v), iters=50),
    }
    us = {name: round(ms * 1e3, 2) for name, ms in times.items()}
    report = {
        "step_us": us,
        "compiled_equals_eager": same(got_compiled, eager),
        "cuda_graph_equals_eager": same(captured, eager),
        "compiled_cudagraphs_equals_eager": same(got_graphs, eager),
        "quantize_equals_reference": same(eager[:3], ref_eager[:3]),
        "attention_max_abs_diff_vs_sdpa": float((eager[3].float() - ref_eager[3].float()).abs().max()),
        "reference_compiled_equals_reference_eager": same(ref[:3], ref_eager[:3]),
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }
    (out / "decode_step.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    main(parser.parse_args().out)
