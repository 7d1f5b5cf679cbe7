#!/bin/bash
# The first GPU run of P_SMEM (kernels/fmha_sm90.py; compiled and checked here, never run on a
# GPU when written): its GPU reference tests, then its D=64 tiles timed against the defaults.
# Usage (staged machine, PYTHONPATH set as .dev/p2/env.sh does): OUT=DIR bash bench/h200/fmha_sched/p_smem_first_run.sh
: "${OUT:?set OUT}"; mkdir -p "$OUT"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k "p_smem or persistent" > "$OUT/tests.log" 2>&1
tail -3 "$OUT/tests.log"
if tail -1 "$OUT/tests.log" | grep -qE 'failed|error'; then echo "P_SMEM tests failed: not timed"; exit 1; fi
python3 bench/fmha_peers.py --out "$OUT" --skip-peers \
  --variants now,p_smem_d64_176,p_smem_d64_160,p_smem_d64_192,p_smem_d64_128,p_smem_d64c_192,now#2,p_smem_d64_176#2,p_smem_d64c_192#2 \
  --variant-cases 4,5,9 > "$OUT/peers.log" 2>&1
grep -v '^{' "$OUT/peers.log" | grep -E '^variant .*(failed|errors)' ; tail -12 "$OUT/fmha_peers.md"
