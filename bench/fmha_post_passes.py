"""Our FMHA with and without post-stage passes (H200): the same kernel, the same timer.

    python bench/fmha_post_passes.py --out DIR [--post 'builtin.module(wgmma-desc-hoist)'] [--rounds 2]
                                     [--cases 4,16,4096,128,0 ...]

Each build is timed in its own process (the launch and compile caches know nothing of post
passes, so one process could hand the second variant the first one's kernel): plain, with
the post pipeline, plain, ... `--rounds` times, alternating, each process timing every case
with `bench/cuda_timing.gpu_ms` (the peers' timer). The post build's outputs are compared
with the plain build's bit for bit (saved per case). Writes DIR/fmha_post_passes.json and
prints, per case, the median of each variant over its rounds and post / plain.
A case is B,Hq,S,D,causal (Sq = Sk = S, Hkv = Hq). Without a GPU: exit 2, nothing run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CASES = ["4,16,4096,128,0", "4,16,4096,128,1", "8,32,1024,128,0", "2,16,8192,128,0"]


def _case(text: str) -> tuple[int, int, int, int, bool]:
    try:
        b, h, s, d, causal = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a case is B,Hq,S,D,causal (five integers), not {text!r}") from None
    if min(b, h, s) < 1 or d not in (64, 128) or causal not in (0, 1):
        raise argparse.ArgumentTypeError(f"{text!r}: B, Hq, S positive, D 64 or 128, causal 0 or 1")
    return b, h, s, d, bool(causal)


def worker(post: str, cases: list[str], outputs: str) -> None:
    sys.path[:0] = [HERE]
    import contextlib

    import torch

    import cute_lowering
    from cuda_timing import gpu_ms
    from cute_lowering.kernels import fmha

    for text in cases:
        b, h, s, d, causal = _case(text)
        gen = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
        ctx = cute_lowering.prelowering(post=post) if post else contextlib.nullcontext()
        with ctx:  # the first call builds (inside: with the post passes)
            out = fmha.attention(q, k, v, causal=causal)
        torch.cuda.synchronize()
        ms = gpu_ms(lambda: fmha.attention(q, k, v, causal=causal))
        path = os.path.join(outputs, text.replace(",", "_") + ("_post" if post else "_plain") + ".pt")
        same = None
        if os.path.exists(path):
            same = bool(torch.equal(torch.load(path).view(torch.int16), out.cpu().view(torch.int16)))
        else:
            torch.save(out.cpu(), path)
        other = path.replace("_post.pt", "_plain.pt") if post else None
        if other and os.path.exists(other):
            same = bool(torch.equal(torch.load(other).view(torch.int16), out.cpu().view(torch.int16)))
        tflops = 4 * b * h * d * s * s * (0.5 if causal else 1.0) / (ms * 1e-3) / 1e12
        print("ROW " + json.dumps({"case": text, "post": post, "ms": ms, "tflops": round(tflops, 1), "bit_identical_to_plain": same}), flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out")
    p.add_argument("--post", default="builtin.module(wgmma-desc-hoist)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--cases", nargs="+", default=DEFAULT_CASES)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--outputs", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for c in args.cases:
        try:
            _case(c)
        except argparse.ArgumentTypeError as e:
            p.error(str(e))
    if args.worker is not None:
        worker(args.worker, args.cases, args.outputs)
        return 0
    if not args.out:
        p.error("--out DIR is required")
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    import shutil

    if shutil.which("nvidia-smi") is None:
        print("no GPU here (nvidia-smi not found): nothing run", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    outputs = os.path.join(args.out, "outputs")
    os.makedirs(outputs, exist_ok=True)
    rows = []
    for _ in range(args.rounds):
        for post in ("", args.post):
            got = subprocess.run([sys.executable, __file__, "--worker", post, "--outputs", outputs, "--cases", *args.cases],
                                 capture_output=True, text=True)  # fmt: skip
            if got.returncode:
                print(got.stdout[-2000:] + got.stderr[-4000:], file=sys.stderr)
                return 1
            rows += [json.loads(line[4:]) for line in got.stdout.splitlines() if line.startswith("ROW ")]
    summary = []
    for case in args.cases:
        plain = statistics.median(r["ms"] for r in rows if r["case"] == case and not r["post"])
        post = statistics.median(r["ms"] for r in rows if r["case"] == case and r["post"])
        identical = all(r["bit_identical_to_plain"] is not False for r in rows if r["case"] == case)
        summary.append({"case": case, "plain_ms": round(plain, 4), "post_ms": round(post, 4), "plain_over_post": round(plain / post, 3), "bit_identical": identical})
        print(f"{case:18s} plain {plain:.4f} ms  post {post:.4f} ms  plain/post {plain / post:.3f}  identical {identical}")
    with open(os.path.join(args.out, "fmha_post_passes.json"), "w") as f:
        json.dump({"post": args.post, "rows": rows, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
