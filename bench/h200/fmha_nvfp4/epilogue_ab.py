"""The NVFP4 epilogue of the wgmma FMHA, before and after, in one process (H200).

    python bench/h200/fmha_nvfp4/epilogue_ab.py --out DIR [--rounds 5] [--ncu] [--results bench/results.json]

Variants of `fmha.attention` on fmha_peers.py's NVFP4_CASES (same inputs, same global scale):
  bf16     the bf16-output call
  before   out_format="nvfp4" with the epilogue as it was (`nvfp4.quantize_tile_rows`: 16
           element-wise shared-memory loads and two 4-byte code stores per 16-value block)
  now      out_format="nvfp4" with `attention_parts.store_nvfp4` as it is in the tree
  two      the bf16-output call, then `nvfp4.quantize` of its output
The codes and scales of `before` and `now` must equal those of `two`, byte for byte. Timing:
triton's do_bench (median, L2 flushed), the four variants interleaved over `--rounds` rounds
(the card's clock drifts between back-to-back measurements of a 0.5-2 ms kernel: fmha_peers
run1-run3 gave fused/bf16 1.063, 1.04, 1.147 for one case); per variant the median over
rounds and the spread. `--pingpong`: also bf16 and now with
`fmha_sm90.PINGPONG = True` (does an offset between the consumer warpgroups hide the
epilogue?). `--ncu`: instead, one call of bf16, before and now per case, for
Nsight Compute (run the script under `ncu --kernel-name regex:FmhaSm90`).

Writes DIR/epilogue_ab.json and, with --results, read-modify-writes only the
`fmha_nvfp4_epilogue_*` keys (fused = now).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import fmha_peers  # noqa: E402  (NVFP4_CASES, make_inputs, case_name, time_ms)


def store_before(tile, outputs, batch, head, tile_index, rows_valid, tidx, threads: int):
    """The epilogue's quantization as committed before this change (attention_parts.store_nvfp4 at 8249e87)."""
    import cutlass
    import cutlass.cute as cute

    from kernels import nvfp4

    codes, scales, global_scale = outputs
    rows, d = cute.size(tile, mode=[0]), cute.size(tile, mode=[1])
    gs = global_scale[0]
    codes_tile = cute.local_tile(codes[batch, None, head, None], (rows, d // 8), (tile_index, 0))
    scales_tile = cute.local_tile(scales[batch, None, head, None], (rows, d // 16), (tile_index, 0))
    nvfp4.quantize_tile_rows(tile, codes_tile, scales_tile, rows_valid, gs, cutlass.Float32(1.0) / gs, tidx, threads)


def launchers(torch, q, k, v, causal, g):
    """{variant: ops launcher entry} for before/now: the epilogue swapped in, compiled, kept."""
    from kernels import fmha, fmha_sm90, ops

    kept = {}
    real = fmha_sm90.store_nvfp4
    for name, fn in (("before", store_before), ("now", real)):
        fmha_sm90.store_nvfp4 = fn
        fmha_sm90._compile.cache_clear()
        seen = set(ops._LAUNCHERS)
        fmha.attention(q, k, v, causal=causal, out_format="nvfp4", global_scale=g)
        torch.cuda.synchronize()
        (key,) = [key for key in ops._LAUNCHERS if key not in seen]
        kept[name] = (key, ops._LAUNCHERS.pop(key))
    fmha_sm90.store_nvfp4 = real
    return kept


TREE = os.environ.get("TREE_STATE", "")  # the git revision and dirty files of the tree measured (run.sh sets it)


def interleaved(fns, rounds):
    """{variant: [ms per round]}: every variant once per round, in turn."""
    times = {variant: [] for variant in fns}
    for _ in range(rounds):
        for variant, fn in fns.items():
            times[variant].append(fmha_peers.time_ms(fn))
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ncu", action="store_true")
    ap.add_argument("--results", type=pathlib.Path)
    ap.add_argument("--pingpong", action="store_true")
    ap.add_argument("--cases", default="", help="indices into NVFP4_CASES, comma-separated (default: all)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    from kernels import fmha, nvfp4, ops

    rows = []
    picked = [int(i) for i in args.cases.split(",") if i] or range(len(fmha_peers.NVFP4_CASES))
    for b, h, s, d, causal in [fmha_peers.NVFP4_CASES[i] for i in picked]:
        case = (b, h, h, s, s, d, causal, (-1, -1), False)
        name = fmha_peers.case_name(case)
        q, k, v, _ = fmha_peers.make_inputs(torch, case)
        g = nvfp4.compute_global_scale(v)
        kept = launchers(torch, q, k, v, causal, g)

        def fused(variant):
            key, entry = kept[variant]
            ops._LAUNCHERS[key] = entry
            return fmha.attention(q, k, v, causal=causal, out_format="nvfp4", global_scale=g)

        fns = {
            "bf16": lambda: fmha.attention(q, k, v, causal=causal),
            "before": lambda: fused("before"),
            "now": lambda: fused("now"),
            "two": lambda: nvfp4.quantize(fmha.attention(q, k, v, causal=causal).reshape(-1, d), g),
        }
        if args.ncu:
            for variant in ("bf16", "before", "now"):
                fns[variant]()
            torch.cuda.synchronize()
            continue
        want_codes, want_scales, _ = fns["two"]()
        identical = {}
        for variant in ("before", "now"):
            codes, scales, _ = fns[variant]()
            identical[variant] = bool(
                torch.equal(codes.reshape(-1, d // 2), want_codes)
                and torch.equal(scales.view(torch.uint8).reshape(-1, d // 16), want_scales.view(torch.uint8))
            )
        times = interleaved(fns, args.rounds)
        if args.pingpong:
            from kernels import fmha_sm90

            knob = fmha_sm90.PINGPONG  # a bool or a dict by (head dim, diagonal)
            fmha_sm90.PINGPONG = True
            fmha_sm90._compile.cache_clear()
            try:
                pp = {"bf16_pingpong": fns["bf16"], "now_pingpong": lambda: fmha.attention(q, k, v, causal=causal, out_format="nvfp4", global_scale=g)}
                for fn in pp.values():
                    fn()
                codes, scales, _ = pp["now_pingpong"]()
                identical["now_pingpong"] = bool(
                    torch.equal(codes.reshape(-1, d // 2), want_codes)
                    and torch.equal(scales.view(torch.uint8).reshape(-1, d // 16), want_scales.view(torch.uint8))
                )
                times.update(interleaved(pp, args.rounds))
            finally:
                fmha_sm90.PINGPONG = knob
                fmha_sm90._compile.cache_clear()
        med = {variant: statistics.median(ts) for variant, ts in times.items()}
        row = {
            "case": name,
            "tree": TREE,
            "ms": {variant: round(t, 4) for variant, t in med.items()},
            "spread": {variant: round((max(ts) - min(ts)) / med[variant], 3) for variant, ts in times.items()},
            "before_over_bf16": round(med["before"] / med["bf16"], 3),
            "now_over_bf16": round(med["now"] / med["bf16"], 3),
            "two_over_now": round(med["two"] / med["now"], 3),
            "two_over_before": round(med["two"] / med["before"], 3),
            "bit_identical": identical,
            "times": times,
        }
        if "now_pingpong" in med:
            row["pingpong_now_over_bf16"] = round(med["now_pingpong"] / med["bf16_pingpong"], 3)
            row["pingpong_bf16_over_bf16"] = round(med["bf16_pingpong"] / med["bf16"], 3)
        print(json.dumps({key: val for key, val in row.items() if key != "times"}), flush=True)
        rows.append(row)
        del q, k, v
    if args.ncu:
        return
    (args.out / "epilogue_ab.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("| case | bf16 ms | before / bf16 | now / bf16 | two / before | two / now | identical (before, now) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        ident = r["bit_identical"]
        print(
            f"| {r['case']} | {r['ms']['bf16']:.4f} | {r['before_over_bf16']} | {r['now_over_bf16']} | "
            f"{r['two_over_before']} | {r['two_over_now']} | {ident['before']}, {ident['now']} |"
        )
    if args.results:
        gpu, date = torch.cuda.get_device_name(), datetime.date.today().isoformat()
        existing = json.loads(args.results.read_text()) if args.results.exists() else {}
        for r in rows:
            existing[f"fmha_nvfp4_epilogue_{r['case']}"] = {
                "fused_over_bf16": r["now_over_bf16"],
                "two_kernels_over_fused": r["two_over_now"],
                "bit_identical": r["bit_identical"]["now"],
                "bf16_ms": r["ms"]["bf16"],
                "fused_ms": r["ms"]["now"],
                "two_kernels_ms": r["ms"]["two"],
                "before_fused_over_bf16": r["before_over_bf16"],
                "goal": "fused_over_bf16 <= 1.02 and two_kernels_over_fused >= 1.05",
                "gpu": gpu,
                "date": date,
                "source": f"bench/h200/fmha_nvfp4 (python bench/h200/fmha_nvfp4/epilogue_ab.py --rounds {args.rounds}: medians over interleaved rounds)",
            }
        args.results.write_text(json.dumps(existing, indent=1) + "\n")


if __name__ == "__main__":
    main()
