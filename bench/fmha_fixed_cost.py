"""A launch's fixed cost, ours against the peers: one tile a CTA, the keys growing (H200).

    python bench/fmha_fixed_cost.py --out DIR [--sq 128,256] [--sk 512,1024,2048,3072,4096]

Why (session 20): under ncu at 4x16x4096x128 every SM of our main kernel was inactive for at
least 26.7 k of its 1.328 M elapsed cycles (the busiest SM active 1.301 M), FA3's for 10.6 k of
1.273 M, which looked like about 10 us a launch that no tile's work explains. (It was not: the
H200 run, 4161db4:bench/h200/fmha_sched/s20/f, found the intercepts even, 13.7 / 13.8 us, and the gap in
the slope at two tiles a CTA.) Here B = 1 and H = 132 heads of D = 128, so Sq = 128 is one 128-row tile per SM (both kernels are persistent with 132 CTAs) and Sq =
256 two; the time against the key count is a line whose intercept is what a launch costs
beyond its key blocks (launch, prologue, the first loads, the epilogue, the drain) and whose
slope is a key block's cost. Ours is `path="wgmma"` (the main kernel, 128 x 128 below
WIDE_KEYS_MIN keys; `auto` would take the decode path for these shapes), FA3 and FA4 as in
fmha_peers. Same timer as fmha_peers (cold L2, median GPU time). Writes DIR/fmha_fixed_cost.json
and .md.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

HEADS = 132  # one 128-row tile a head at Sq = 128: one a CTA of a persistent launch on 132 SMs
HEAD_DIM = 128


def line_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through the points."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def counts(text: str) -> list[int]:
    """A comma-separated list of positive lengths (argparse type: a bad one is a usage error)."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"lengths must be positive: {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sq", type=counts, default="128,256", help="query lengths (comma-separated)")
    ap.add_argument("--sk", type=counts, default="512,1024,2048,3072,4096", help="key lengths (comma-separated)")
    args = ap.parse_args(argv)
    sqs, sks = args.sq, args.sk
    if len(set(sks)) < 2:
        ap.error("--sk needs at least two key counts, different ones, for a line")

    import torch

    from fmha_peers import implementations, make_inputs, time_ms
    from cute_lowering.kernels import fmha

    rows = []
    for sq in sqs:
        for sk in sks:
            case = (1, HEADS, HEADS, sq, sk, HEAD_DIM, False, (-1, -1), False)
            q, k, v, sinks = make_inputs(torch, case)
            impls = implementations(torch, case, q, k, v, sinks, False)
            impls["ours"] = lambda: fmha.attention(q, k, v, path="wgmma")
            impls.pop("cudnn", None)  # (not persistent: another question)
            row = {"sq": sq, "sk": sk}
            for name, fn in impls.items():
                try:
                    row[name] = round(time_ms(fn) * 1000, 2)  # us
                except Exception as e:  # a peer that rejects the case is reported, not fatal
                    print(f"sq {sq} sk {sk} {name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
            print(json.dumps(row), flush=True)
            rows.append(row)

    names = [n for n in ("ours", "fa3", "fa4") if any(n in r for r in rows)]
    lines = ["| Sq | Sk | " + " | ".join(f"{n} us" for n in names) + " |", "| --- | --- | " + " | ".join("---" for _ in names) + " |"]
    for r in rows:
        lines.append(f"| {r['sq']} | {r['sk']} | " + " | ".join(str(r.get(n, "-")) for n in names) + " |")
    lines += ["", "| Sq | implementation | intercept us | us per 1024 keys |", "| --- | --- | --- | --- |"]
    fits = {}
    for sq in sqs:
        for n in names:
            pts = [(r["sk"], r[n]) for r in rows if r["sq"] == sq and n in r]
            if len(pts) >= 2:
                a, b = line_fit([p[0] for p in pts], [p[1] for p in pts])
                fits[f"{n}_sq{sq}"] = {"intercept_us": round(a, 2), "us_per_1024_keys": round(b * 1024, 2)}
                lines.append(f"| {sq} | {n} | {a:.2f} | {b * 1024:.2f} |")
    report = "\n".join(lines)
    print(report)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fmha_fixed_cost.json").write_text(json.dumps({"rows": rows, "fits": fits}, indent=1) + "\n")
    (out / "fmha_fixed_cost.md").write_text(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
