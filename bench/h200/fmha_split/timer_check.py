"""Why fmha_peers' timer hides the host: each implementation of three decode rows timed by
triton's do_bench (L2 flush only) and by cuda_timing.gpu_ms (L2 flush + GPU spin), twice each,
interleaved, in one process. Usage (staged GPU machine, FA3 installed):
    python bench/h200/fmha_split/timer_check.py > DIR/timer_check.log
"""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import torch  # noqa: E402
import triton.testing  # noqa: E402

from cuda_timing import gpu_ms  # noqa: E402
from fmha_peers import DECODE_CASES, case_name, implementations, make_inputs  # noqa: E402

for case in DECODE_CASES[:5]:
    q, k, v, sinks = make_inputs(torch, case)
    for name, fn in implementations(torch, case, q, k, v, sinks, True).items():
        row = {"case": case_name(case), "impl": name}
        for rnd in (1, 2):
            row[f"do_bench_{rnd}"] = round(float(triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median")), 4)
            row[f"gpu_ms_{rnd}"] = round(gpu_ms(fn), 4)
        print(json.dumps(row), flush=True)
