"""One implementation of one FMHA case, called 3 times (ncu profiles the last call).

    ncu --section ... -k regex:NAME -s 2 -c 1 python bench/h200/fmha_split/ncu_pair.py ours|fa3 [case index]

The case is fmha_peers.ISSUE_CASES[index] (default 1: 4x16x4096x128 causal); see ncu.sh.
FMHA_VARIANT=NAME sets ours' knobs to fmha_peers.VARIANTS[NAME] first (not "before").
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import torch  # noqa: E402

import os  # noqa: E402

from fmha_peers import ISSUE_CASES, VARIANTS, implementations, make_inputs  # noqa: E402
from kernels import fmha_sm90  # noqa: E402

for knob, value in (VARIANTS[os.environ["FMHA_VARIANT"]] if os.environ.get("FMHA_VARIANT") else {}).items():
    setattr(fmha_sm90, knob, value)

impl = sys.argv[1]
case = ISSUE_CASES[int(sys.argv[2]) if len(sys.argv) > 2 else 1]
q, k, v, sinks = make_inputs(torch, case)
fn = implementations(torch, case, q, k, v, sinks, False)[impl]
for _ in range(3):
    fn()
torch.cuda.synchronize()
