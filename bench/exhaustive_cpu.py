"""Every f32 bit pattern through a select rewrite, on the CPU, against the references.

    python bench/exhaustive_cpu.py                       # f32 -> E2M1 and f32 -> E4M3
    python bench/exhaustive_cpu.py e5m2 e8m0-up e8m0-rne # other cases (or: all)
    python bench/exhaustive_cpu.py e2m1 --exact          # also the integer reference

For each case the conversion `arith.truncf %x : f32 to <fmt>` is rewritten by
`truncf-to-select` (+ canonicalize), JIT-compiled for the host
(lowering/hostjit.py) and run on all 2^32 inputs in chunks of 2^22, two threads
overlapping the kernel with the numpy checks. Reported per case:
  * mismatches against the reference (tests/references.py `encode`/`encode_e8m0`),
    with the first few as (input bits, expected, got);
  * with --exact, mismatches of the ml_dtypes-based reference against the
    integer-arithmetic one (`encode_exact`), i.e. a check of the reference itself;
  * disagreements of the rewrite's output with plain `x.astype(ml_dtypes.<fmt>)`,
    per explained class (see the references' docstring); "unexplained" should be 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import references as ref  # noqa: E402

from cute_lowering.hostjit import all_bit_patterns, host_conversion, run_chunks  # noqa: E402

CASES = {
    "e2m1": ("f4E2M1FN", None, None),
    "e4m3": ("f8E4M3FN", None, None),
    "e5m2": ("f8E5M2", None, None),
    "e8m0-up": ("f8E8M0FNU", "upward", "upward"),
    "e8m0-rne": ("f8E8M0FNU", None, "nearest"),
}


def run_case(name: str, pipeline: str, chunk_bits: int, threads: int, exact: bool, limit: int | None) -> dict:
    dst, rounding, ref_rounding = CASES[name]
    start = time.perf_counter()
    kernel = host_conversion("f32", dst, pipeline, rounding=rounding)
    compile_s = time.perf_counter() - start

    def check(inputs, outputs):
        expected = ref.encode_any(inputs, dst, ref_rounding)
        bad = np.flatnonzero(expected != outputs)
        examples = [(int(inputs[i]), int(expected[i]), int(outputs[i])) for i in bad[:8]]
        exact_bad = int((ref.encode_exact(inputs, dst) != expected).sum()) if exact and dst != "f8E8M0FNU" else 0
        classes = ref.ml_dtypes_disagreements(inputs, dst, ref_rounding, against=outputs)
        return bad.size, examples, exact_bad, classes, inputs.size

    chunks = all_bit_patterns(32, chunk_bits)
    if limit:
        chunks = (c for i, c in enumerate(chunks) if i < limit)
    total = Counter()
    mismatches, exact_mismatches, n, examples = 0, 0, 0, []
    start = time.perf_counter()
    for bad, first, exact_bad, classes, size in run_chunks(kernel, chunks, check, threads=threads):
        mismatches += bad
        exact_mismatches += exact_bad
        examples += first
        total.update(classes)
        n += size
    seconds = time.perf_counter() - start

    # the kernel alone, for throughput
    probe = np.arange(1 << chunk_bits, dtype=np.uint32)
    t = time.perf_counter()
    kernel(probe)
    kernel_rate = probe.size / (time.perf_counter() - t)
    return dict(case=name, dst=dst, rounding=rounding, inputs=n, compile_s=compile_s, seconds=seconds,
                mismatches=mismatches, examples=examples[:8], exact_mismatches=exact_mismatches if exact else None,
                ml_dtypes=dict(total), kernel_rate=kernel_rate)  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", default=["e2m1", "e4m3"], help=f"of {', '.join(CASES)}, or all")
    parser.add_argument("--pipeline", default="builtin.module(truncf-to-select,canonicalize)")
    parser.add_argument("--chunk-bits", type=int, default=22)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--exact", action="store_true", help="also check the reference against encode_exact (slower)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N chunks (a quick look)")
    args = parser.parse_args(argv)
    names = list(CASES) if args.cases == ["all"] else args.cases
    failed = False
    for name in names:
        r = run_case(name, args.pipeline, args.chunk_bits, args.threads, args.exact, args.limit)
        print(f"== f32 -> {r['dst']}{' ' + r['rounding'] if r['rounding'] else ''} ({name}): {r['inputs']:,} inputs")
        print(f"   compile {r['compile_s']:.2f} s, all inputs with checks {r['seconds']:.1f} s, "
              f"kernel alone {r['kernel_rate'] / 1e9:.2f} G elements/s")  # fmt: skip
        print(f"   mismatches vs reference: {r['mismatches']}")
        for i, e, g in r["examples"]:
            print(f"     in 0x{i:08x} ({np.uint32(i).view(np.float32)!r}): expected 0x{e:02x} got 0x{g:02x}")
        if r["exact_mismatches"] is not None:
            print(f"   reference (ml_dtypes-based) vs integer reference: {r['exact_mismatches']} mismatches")
        ml = r["ml_dtypes"]
        print(f"   vs plain ml_dtypes: {ml.pop('total', 0):,} differ")
        for cls, count in ml.items():
            print(f"     {count:>13,}  {cls}")
        failed |= r["mismatches"] > 0 or ml.get("unexplained", 0) > 0 or bool(r["exact_mismatches"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
