"""Where a kernel's warps spend ncu's stall samples, by region of its SASS.

    python bench/h200/fmha_sched/stall_regions.py ncu1/ours_source.csv.gz [--min-share 0.3]

Reads ncu's source page (`ncu -i REPORT --page source --csv --print-source sass`, what
ncu_stalls.sh writes as ours_source.csv; gzip or plain) and prints runs of consecutive
instructions executed the same number of times (a loop body, a once-per-tile prologue or
epilogue, the producer's loop: the counts tell them apart) with their share of all samples
and their three largest stall reasons, then the instructions with the most samples.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import pathlib


def read_rows(path: pathlib.Path) -> tuple[list[str], list[list[str]]]:
    raw = path.read_bytes()
    text = gzip.decompress(raw).decode() if raw[:2] == b"\x1f\x8b" else raw.decode()
    rows = list(csv.reader(io.StringIO(text)))
    header_at = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    return rows[header_at], rows[header_at + 1 :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source_csv", type=pathlib.Path)
    parser.add_argument("--min-share", type=float, default=0.3, help="hide regions under this %% of samples")
    parser.add_argument("--top", type=int, default=12, help="instructions listed at the end")
    args = parser.parse_args()
    header, rows = read_rows(args.source_csv)
    col = {name: i for i, name in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]

    def number(row, name) -> float:
        try:
            return float(row[col[name]])
        except (KeyError, ValueError, IndexError):
            return 0.0

    total = sum(number(r, "# Samples") for r in rows) or 1.0
    regions: list[list] = []  # [first, last, executions, samples, {reason: samples}]
    for i, row in enumerate(rows):
        executed = number(row, "Instructions Executed")
        if not regions or regions[-1][2] != executed:
            regions.append([i, i, executed, 0.0, dict.fromkeys(reasons, 0.0)])
        region = regions[-1]
        region[1] = i
        region[3] += number(row, "# Samples")
        for reason in reasons:
            region[4][reason] += number(row, reason)
    print(f"{len(rows)} instructions, {total:.0f} samples")
    print(f"{'instructions':>13} {'executed':>10} {'share':>6}  largest stall reasons; first instruction")
    for first, last, executed, samples, by_reason in regions:
        if samples / total * 100 < args.min_share:
            continue
        top = sorted(by_reason.items(), key=lambda kv: -kv[1])[:3]
        top_text = ", ".join(f"{k[6:]} {v / samples * 100:.0f}%" for k, v in top if v)
        print(f"{first:6d}-{last:<6d} {executed:10.0f} {samples / total * 100:5.1f}%  {top_text}; {rows[first][col['Source']].strip()[:48]}")
    print("\ninstructions with the most samples:")
    for row in sorted(rows, key=lambda r: -number(r, "# Samples"))[: args.top]:
        top = max(reasons, key=lambda k: number(row, k))
        print(f"  {number(row, '# Samples'):6.0f}  {top[6:]:14s} x{number(row, 'Instructions Executed'):<8.0f} {row[col['Source']].strip()[:60]}")


if __name__ == "__main__":
    main()
