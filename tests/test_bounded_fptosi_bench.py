"""bench/gpu_bounded_fptosi.py without a GPU: every kernel compiled for sm_90a as each form
must be, the reference against a plain-Python model, and the semantics/speed bookkeeping run
on the CPU with emulated kernels (so the GPU run's own code is exercised before it runs).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
try:
    import gpu_bounded_fptosi as bench
finally:
    sys.path.remove(str(ROOT / "bench"))

torch = pytest.importorskip("torch")
CUOBJDUMP = Path("/tmp/cudabin/cuobjdump")


def test_dry_run_compiles_every_kernel_as_each_form_must_be(tmp_path):
    argv = ["--dry-run", "--out", str(tmp_path)] + (["--cuobjdump", str(CUOBJDUMP)] if CUOBJDUMP.is_file() else [])
    assert bench.main(argv) == 0
    results = json.loads((tmp_path / "bounded_fptosi.json").read_text())
    assert results["problems"] == [] and results["errors"] == []
    assert "| -8..7 | rne | arch |" in (tmp_path / "summary.md").read_text()
    kernels = results["kernels"]
    assert len(kernels) == len(bench.RANGES) * (1 + len(bench.ROUNDINGS) * len(bench.CLAMPS) * len(bench.FORMS))
    for config in bench.configs():
        lo, hi = bench.RANGES[config.split("/")[0]]
        select, cvt = kernels[f"{config}/select"], kernels[f"{config}/cvt"]
        assert not any(line.startswith("cvt") for line in select["ptx_conversion"])
        assert sum(line.startswith("setp") for line in select["ptx_conversion"]) == (hi - lo) * bench.PER_THREAD
        assert sum(line.startswith("cvt.r") for line in cvt["ptx_conversion"]) == bench.PER_THREAD
        if "sass_mix" in select:  # cuobjdump found: one compare and one select per threshold, one F2I for cvt
            assert sum(n for op, n in select["sass_mix"].items() if op.startswith(("FSETP", "SEL"))) == 2 * (hi - lo)
            assert [n for op, n in cvt["sass_mix"].items() if op.startswith("F2I")] == [1.0]


def model(x: float, lo: int, hi: int, rounding: str) -> int:
    """The bounded conversion by hand: NaN-quiet min then max (NaN -> hi), round half to even or truncate."""
    if math.isnan(x):
        return hi
    y = max(min(x, hi), lo)
    return round(y) if rounding == "rne" else math.trunc(y)  # Python's round: half to even


@pytest.mark.parametrize("rounding", bench.ROUNDINGS)
@pytest.mark.parametrize("rname", list(bench.RANGES))
def test_reference_matches_the_model_on_the_boundary_patterns(rname, rounding):
    lo, hi = bench.RANGES[rname]
    bits = bench.boundary_bits(torch)
    x = bits.view(torch.float32)
    got = bench.reference(torch, x, lo, hi, rounding).tolist()
    want = [model(v, lo, hi, rounding) for v in x.tolist()]
    assert got == want
    # the patterns hold every tie and its neighbours: -0.5 (tie to 0) and 0.5 + 1 ulp (to 1)
    values = set(x.tolist())
    assert {-0.5, 0.5, lo - 0.5, hi + 0.5, math.inf, -math.inf} <= values and any(math.isnan(v) for v in values)


def test_chunks_cover_patterns_in_order_and_sampled():
    bits = torch.empty(1 << 16, dtype=torch.int32)
    chunks = bench.exhaustive_chunks(torch, bits)
    assert next(chunks) == 1 << 16 and torch.equal(bits, torch.arange(1 << 16, dtype=torch.int32))
    assert next(chunks) == 1 << 16 and int(bits[0]) == 1 << 16
    assert list(bench.sampled_chunk(torch, bits)) == [1 << 16]
    special = bench.boundary_bits(torch)
    assert torch.equal(bits[: special.numel()], special)
    assert int((bits < 0).sum()) > 1 << 14  # the sample reaches the negative half (sign bit set)


class Emulated:
    """A kernel stand-in on the CPU: clamp and round in float32 (exact), NaN -> `nan_code`."""

    def __init__(self, key, args, nan_code=None):
        self.key, self.args = key, args
        rname, rounding = key[0], key[1] if len(key) == 4 else "rne"
        self.lo, self.hi = bench.RANGES[rname]
        self.rounding = rounding
        self.nan_code = self.hi if nan_code is None else nan_code

    def __call__(self):
        src, dst = self.args[0], self.args[1]
        y = src.clamp(self.lo, self.hi)
        y = torch.round(y) if self.rounding == "rne" else torch.trunc(y)
        dst.copy_(torch.where(torch.isnan(y), float(self.nan_code), y).to(torch.int32))


def test_semantics_and_speed_bookkeeping_on_the_cpu():
    bits = torch.empty(1 << 16, dtype=torch.int32)
    dst = torch.empty_like(bits)
    src = bits.view(torch.float32)
    keys = [(r, rd, c, f) for r in bench.RANGES for rd in bench.ROUNDINGS for c in bench.CLAMPS for f in bench.FORMS]
    # native is made to send NaN to lo: every NaN pattern must then count as a mismatch on a NaN input
    launches = {k: Emulated(k, (src, dst), bench.RANGES[k[0]][0] if k[3] == "native" else None) for k in keys}
    sem = bench.semantics(torch, bits, dst, launches, bench.sampled_chunk(torch, bits), print)
    nans = int(torch.isnan(src).sum())
    assert sem["patterns"] == 1 << 16 and nans > 0
    for key, entry in sem["kernels"].items():
        if key.endswith("/native"):
            assert entry["mismatches"] == entry["on_nan"] == nans and len(entry["examples"]) == 4
            assert all(e["x"] == "nan" and e["want"] != e["got"] for e in entry["examples"])
        else:
            assert entry == {"mismatches": 0, "on_nan": 0, "examples": []}

    times = {"baseline": 1.0, "select": 3.0, "cvt": 2.0, "native": 2.0}
    sp = bench.speed(
        torch, "cpu", lambda kind, key, *args: Emulated(key, args), lambda fn, repeat: times[fn.key[-1]],
        elements=1 << 12, threads=1 << 10, iters=4, repeat=1, log=print,
    )  # fmt: skip
    ratio = sp["ratios"]["-8..7/rne/arch"]
    assert ratio["compute_bound"] == {"select_over_cvt": 1.5, "net_select_over_cvt": 2.0} and ratio["same_output"]
    assert sp["memory_bound"]["0..15/baseline"]["GBps"] == pytest.approx((1 << 12) * 8 / 1.0 / 1e6)

    results = {"mode": "test", "arch": "sm_90a", "errors": [], "problems": [], "semantics": sem, "speed": sp}
    sass = {"sass_per_conversion": 3.0, "sass_mix": {"F2I.NTZ": 1.0}}
    results["kernels"] = {f"{c}/{f}": sass for c in bench.configs() for f in bench.FORMS}
    md = bench.summary_md(results)
    row = f"| -2..1 | rz | math | 0 / 0 / {nans:,} ({nans:,} NaN) | 3.00 / 3.00 / 3.00 | 3.000 / 2.000 / 2.000 |"
    assert row + " 1.500 | 3.000 / 2.000 / 2.000 | 1.500 (2.000) | True |" in md
    assert not bench.failed(results)  # native is for information
    sem["kernels"]["-2..1/rz/math/select"]["mismatches"] = 1
    assert bench.failed(results)


def test_gpu_binder_converts_torch_tensors_and_ints():
    calls = []

    class Stub:
        compiled = staticmethod(lambda *args: calls.append(args))

    key = ("-8..7", "rne", "arch", "select")
    bind = bench.gpu_binder({key: Stub}, {key: Stub})
    bind("stream", key, torch.zeros(4096), torch.zeros(4096, dtype=torch.int32))()
    bind("heavy", key, torch.zeros(256), torch.zeros(256, dtype=torch.int32), 7)()
    assert [type(a).__name__ for a in calls[1]][-1] == "Int32" and len(calls[0]) == 2
    assert all(hasattr(a, "element_type") for a in calls[0])
