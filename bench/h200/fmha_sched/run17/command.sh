#!/bin/bash
# SOFTMAX_INTERLEAVED (kernels/fmha_sm90.py) against the default on every prefill case
# (alternating, two passes), then the wgmma GPU tests of test_fmha.py with it on where it compiles
# without spills (D=64, D=128 with a diagonal).
# As run (staged machine, PYTHONPATH set): OUT=DIR bash interleave_run.sh
# A record: its sed flips the knob's default of that day, which main no longer has.
: "${OUT:?set OUT}"; mkdir -p "$OUT"
python3 bench/fmha_peers.py --out "$OUT" --skip-peers --variants now,sm_inter_diag,now#2,sm_inter_diag#2 \
  --variant-cases 0,1,2,3,4,5,6,7,8,9,10,11 > "$OUT/peers.log" 2>&1
grep -E '^variant .*(failed|errors)' "$OUT/peers.log" | head -4; tail -6 "$OUT/fmha_peers.md"
sed -i 's/^SOFTMAX_INTERLEAVED = False/SOFTMAX_INTERLEAVED = {(64, False): True, (64, True): True, (128, False): False, (128, True): True}/' kernels/fmha_sm90.py
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k "wgmma" > "$OUT/tests.log" 2>&1
sed -i 's/^SOFTMAX_INTERLEAVED = {.*/SOFTMAX_INTERLEAVED = False/' kernels/fmha_sm90.py
tail -3 "$OUT/tests.log"
