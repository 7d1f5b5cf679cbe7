"""RESCALE_THRESHOLD's accuracy on the peers' accuracy inputs (fmha_peers.make_inputs): max and
mean absolute error against float64, by threshold and seed, beside FA3 and FA4 (session 12).
usage: python bench/h200/fmha_sched/rescale_accuracy.py [CASE_INDEX ...]  (into fmha_peers.ACCURACY_CASES)"""
import sys

sys.path.insert(0, ".")
sys.path.insert(0, "bench")
import torch  # noqa: E402

import fmha_peers  # noqa: E402
from kernels import fmha, fmha_sm90  # noqa: E402

for index in [int(a) for a in sys.argv[1:]] or [0]:
    case = fmha_peers.ACCURACY_CASES[index]
    for seed in (7, 1, 2, 3):
        q, k, v, sinks = fmha_peers.make_inputs(torch, case, seed=seed)
        ref, _ = fmha.reference_attention(q, k, v, case[6], case[7], sinks)
        cells = []
        for threshold in (None, 0.0, 8.0):
            fmha_sm90.RESCALE_THRESHOLD = threshold
            out = fmha.attention(q, k, v, causal=case[6], window=case[7], sink=sinks, path="wgmma").double()
            err = (out - ref).abs()
            cells.append(f"{threshold}: {err.max().item():.2e} / {err.mean().item():.3e}")
        for name, fn in fmha_peers.implementations(torch, case, q, k, v, sinks, False).items():
            if name in ("fa3", "fa4"):
                err = (fn().double() - ref).abs()
                cells.append(f"{name}: {err.max().item():.2e} / {err.mean().item():.3e}")
        print(fmha_peers.case_name(case), "seed", seed, " | ".join(cells), flush=True)
