#!/bin/bash
# The first things for the next GPU session (issue 14), in one call on the staged machine:
# 1. test_gpu_wgmma_softmax_orders (new in session 7, never run on a GPU): LATE_RESCALE x
#    SOFTMAX_INTERLEAVED at D=64 and D=128 against the reference;
# 2. is b2 Sq=16 Sk=32768 at 0.927 (run16) the PDL combine or the spread? (decode rows d2, d3,
#    alternating with the combine as a plain launch);
# 3. the scheduler barrier for D=64 causal on top of session 7's softmax (d64c_pp).
# Usage (PYTHONPATH set as .dev/p2/env.sh does): OUT=DIR bash bench/h200/fmha_sched/next_run.sh
: "${OUT:?set OUT}"; mkdir -p "$OUT"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k softmax_orders > "$OUT/tests.log" 2>&1
tail -2 "$OUT/tests.log"
python3 bench/fmha_peers.py --out "$OUT/decode" --skip-peers --variants now,no_combine_pdl,now#2,no_combine_pdl#2,now#3,no_combine_pdl#3 \
  --variant-cases d2,d3 > "$OUT/decode.log" 2>&1
tail -8 "$OUT/decode/fmha_peers.md"
python3 bench/fmha_peers.py --out "$OUT/d64c" --skip-peers --variants now,d64c_pp,now#2,d64c_pp#2 \
  --variant-cases 5,9 > "$OUT/d64c.log" 2>&1
tail -6 "$OUT/d64c/fmha_peers.md"
