"""Other people's CuTeDSL kernels with our post-stage passes on (H200): the same results, bit for
bit, and what the passes do to their speed (issue 35: "with the post passes on, they give
bit-identical results on the GPU; report what the passes do to their speed").

    python bench/post_passes_others.py --out DIR [--post 'builtin.module(wgmma-desc-hoist)']
                                       [--rounds 2] [--kernels fa4_d128,quack_gemm,...]
                                       [--cutlass examples/python/CuTeDSL]

Kernels (sm_90a; each is called through its own public entry point on real CUDA tensors):
- fa4_d128, fa4_d128_causal: FlashAttention-4's forward (`flash_attn.cute.flash_attn_func`),
  B=4, S=4096, H=16, D=128, bf16;
- quack_gemm: quack's `gemm` (untuned default config), 8192 x 8192 x 8192 bf16;
- cutlass_dense_gemm: CUTLASS's Hopper example `HopperWgmmaGemmKernel` (f16 in, f32 acc,
  tile 128x256, cluster 1x1), 8192 x 8192 x 8192, K-major A/B, N-major C; needs `--cutlass`
  (a checkout's examples/python/CuTeDSL, read as files).

Every variant runs in its own process (plain, post, plain, post, ... `--rounds` times): the
peers' in-memory compile caches know nothing of our post pipeline, and FlashAttention-4's and
quack's disk caches are turned off. In the post process the first call compiles inside
`cute_lowering.prelowering(post=...)`; the reports of that compile say what each post pass
did (counts), so a kernel the passes left alone is told apart from one they changed. Outputs
are saved per kernel and compared bit for bit with the plain build's; times are
`bench/cuda_timing.gpu_ms` (the peer comparison's timer). Writes DIR/post_passes_others.json.
Without a GPU: exit 2, nothing run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = ("fa4_d128", "fa4_d128_causal", "quack_gemm", "cutlass_dense_gemm")


# --- inside a worker: each kernel as (run, flops) on fixed inputs ----------------------------
def _fa4(causal: bool):
    import torch
    from flash_attn.cute.interface import flash_attn_func

    b, s, h, d = 4, 4096, 16, 128
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))

    def run():
        out = flash_attn_func(q, k, v, causal=causal)
        return out[0] if isinstance(out, tuple) else out

    return run, 4 * b * h * d * s * s * (0.5 if causal else 1.0)


def _quack_gemm():
    import torch
    from quack.gemm_interface import gemm

    m = n = k = 8192
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    return (lambda: gemm(a, b, tuned=False)), 2 * m * n * k


def _cutlass_dense_gemm(examples: str):
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack

    sys.path.insert(0, HERE)
    import cutlass_examples_sweep

    example = cutlass_examples_sweep._load(examples, "cute/hopper/kernel/dense_gemm/dense_gemm.py")
    m = n = k = 8192
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, 1, device="cuda", generator=gen).to(torch.float16)  # (m, k, l), k-major
    b = torch.randn(n, k, 1, device="cuda", generator=gen).to(torch.float16)
    c = torch.empty(m, n, 1, device="cuda", dtype=torch.float16)

    def cute_tensor(t):
        return from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=1)

    ma, mb, mc = cute_tensor(a), cute_tensor(b), cute_tensor(c)
    gemm = example.HopperWgmmaGemmKernel(cutlass.Float32, (128, 256), (1, 1))
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    compiled = []

    def run():
        if not compiled:
            compiled.append(cute.compile(gemm, ma, mb, mc, stream))
        compiled[0](ma, mb, mc, stream)
        return c

    return run, 2 * m * n * k


def _kernel(name: str, examples: str | None):
    if name.startswith("fa4_"):
        return _fa4(name.endswith("_causal"))
    if name == "quack_gemm":
        return _quack_gemm()
    if name == "cutlass_dense_gemm":
        return _cutlass_dense_gemm(examples)
    raise ValueError(name)


def worker(post: str, kernels: list[str], outputs: str, examples: str | None) -> None:
    sys.path[:0] = [ROOT, HERE]
    import contextlib

    import torch

    import cute_lowering
    from cuda_timing import gpu_ms

    for name in kernels:
        run, flops = _kernel(name, examples)
        with cute_lowering.recorded_reports() as got:
            with cute_lowering.prelowering(post=post) if post else contextlib.nullcontext():
                out = run()  # the first call compiles: inside the post pipeline when there is one
            torch.cuda.synchronize()
        did = {}
        for report in got:
            for p in report.passes:
                if p.stage == "post":
                    for key, count in p.counts.items():
                        did[f"{p.name}.{key}"] = did.get(f"{p.name}.{key}", 0) + count
        ms = gpu_ms(run)
        mine = os.path.join(outputs, f"{name}_{'post' if post else 'plain'}.pt")
        plain = os.path.join(outputs, f"{name}_plain.pt")
        bits = out.detach().cpu().contiguous().view(torch.uint8)
        if not os.path.exists(mine):
            torch.save(bits, mine)
        same = bool(torch.equal(torch.load(plain), bits)) if os.path.exists(plain) else None
        # (a build CuTeDSL loaded from its file cache ran no post stage here: no counts to report,
        # though its binary is the post build's; the workers get an empty cache dir, so not expected)
        ran = all(r.post_ran for r in got if r.post_pipeline) if post else None
        row = {"kernel": name, "post": post, "ms": ms, "tflops": round(flops / (ms * 1e-3) / 1e12, 1),
               "bit_identical_to_plain": same, "post_pass_counts": did if post else None, "post_stage_ran": ran}  # fmt: skip
        print("ROW " + json.dumps(row), flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out")
    p.add_argument("--post", default="builtin.module(wgmma-desc-hoist)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument("--cutlass", help="CUTLASS's examples/python/CuTeDSL (for cutlass_dense_gemm)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--outputs", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    kernels = [k for k in args.kernels.split(",") if k]
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown or not kernels:
        p.error(f"--kernels: unknown {unknown or 'none given'}; known: {', '.join(KERNELS)}")
    if "cutlass_dense_gemm" in kernels and not (args.cutlass and os.path.isdir(args.cutlass)):
        p.error("cutlass_dense_gemm needs --cutlass DIR (NVIDIA/cutlass examples/python/CuTeDSL)")
    if args.worker is not None:
        worker(args.worker, kernels, args.outputs, args.cutlass and os.path.abspath(args.cutlass))
        return 0
    if not args.out:
        p.error("--out DIR is required")
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    if shutil.which("nvidia-smi") is None:
        print("no GPU here (nvidia-smi not found): nothing run", file=sys.stderr)
        return 2
    outputs = os.path.join(args.out, "outputs")
    os.makedirs(outputs, exist_ok=True)
    env = dict(os.environ, QUACK_CACHE_ENABLED="0", FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED="0")
    # CuTeDSL's file cache of this run only: round 1's workers compile (and report the post passes'
    # counts), later rounds load their builds; a cache an earlier run filled would hide the counts
    cache = tempfile.mkdtemp(prefix="post_passes_others_cutedsl_")
    env["CUTE_DSL_CACHE_DIR"] = cache
    rows = []
    for _ in range(args.rounds):
        for post in ("", args.post):
            command = [sys.executable, __file__, "--worker", post, "--outputs", outputs, "--kernels", ",".join(kernels)]
            if args.cutlass:
                command += ["--cutlass", args.cutlass]
            got = subprocess.run(command, capture_output=True, text=True, env=env)
            if got.returncode:
                print(got.stdout[-2000:] + got.stderr[-4000:], file=sys.stderr)
                shutil.rmtree(cache, ignore_errors=True)
                return 1
            rows += [json.loads(line[4:]) for line in got.stdout.splitlines() if line.startswith("ROW ")]
    shutil.rmtree(cache, ignore_errors=True)
    summary = []
    for name in kernels:
        plain = statistics.median(r["ms"] for r in rows if r["kernel"] == name and not r["post"])
        post = statistics.median(r["ms"] for r in rows if r["kernel"] == name and r["post"])
        identical = all(r["bit_identical_to_plain"] is not False for r in rows if r["kernel"] == name)
        counts = next(r["post_pass_counts"] for r in rows if r["kernel"] == name and r["post"])
        summary.append({"kernel": name, "plain_ms": round(plain, 4), "post_ms": round(post, 4),
                        "plain_over_post": round(plain / post, 3), "bit_identical": identical,
                        "post_pass_counts": counts})  # fmt: skip
        print(f"{name:20s} plain {plain:.4f} ms  post {post:.4f} ms  plain/post {plain / post:.3f}  "
              f"identical {identical}  post passes {counts}")  # fmt: skip
    with open(os.path.join(args.out, "post_passes_others.json"), "w") as f:
        json.dump({"post": args.post, "rows": rows, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
