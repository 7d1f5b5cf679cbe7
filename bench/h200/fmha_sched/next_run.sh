#!/bin/bash
# Session 13's plan for the next GPU session (staged machine: .dev/p1 first.sh, then .dev/p2
# install.sh; FA3 from .dev/fa3 for PART=2). Every step has a short timeout.
#   PART=1  what changed after session 13's last GPU call, TAIL_SPLIT being on: the PDL chain's
#           wait in the pieces' kernel (test_gpu_tail_split) and MASK_RELATIVE's columns in the
#           pieces' kernel (test_gpu_wgmma_mask_relative, the 4 cases that failed in s13/suite);
#           then the CTA trace (fixed after s13: no printf in the producer) on 4096 and 16384
#   PART=2  the whole peers run into a copy of results.json (the first with TAIL_SPLIT on:
#           1x32x16384x128 should gain ~2.8%), FA3 installed
#   PART=3  every GPU test (gpu_suite.sh)
# usage: OUT=DIR PART=N bash bench/h200/fmha_sched/next_run.sh
: "${OUT:?set OUT}"; mkdir -p "$OUT"
case "${PART:-1}" in
1)
  timeout 400 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k "tail_split or mask_relative" > "$OUT/tests.log" 2>&1
  tail -3 "$OUT/tests.log"
  timeout 150 python3 bench/h200/fmha_sched/cta_times.py 0 6 > "$OUT/cta_times.log" 2>&1
  cat "$OUT/cta_times.log" ;;
2)
  mkdir -p "$OUT/r" && cp bench/results.json "$OUT/r/results.json"  # (fmha_peers merges its fmha_* entries into it)
  timeout 480 python3 bench/fmha_peers.py --out "$OUT/r" --results "$OUT/r/results.json" > "$OUT/r/peers.log" 2>&1
  grep "^| " "$OUT/r/fmha_peers.md" | head -30 ;;
3)
  OUT="$OUT/suite" TEST_TIMEOUT=400 bash bench/h200/gpu_suite.sh ;;
esac
