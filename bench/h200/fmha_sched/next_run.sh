#!/bin/bash
# Session 12's plan for the next GPU session (staged machine: .dev/p1 first.sh, then .dev/p2
# install.sh; FA3 from .dev/fa3 for PART=2 and 3). Every step has a short timeout.
#   PART=1  TAIL_SPLIT (prepared in session 12, never run on a GPU): its GPU test first (a hang
#           or wrong bits shows here), then timed against the plain schedule on the unmasked
#           rows, then the CTA trace (cta_times.py: start skew and the tail) with and without it
#   PART=2  ncu per instruction on D=128 causal, ours against FA3 (case 1; FA3 installed)
#   PART=3  the whole peers run into a copy of results.json (after any default changes), then the suite
# usage: OUT=DIR PART=N bash bench/h200/fmha_sched/next_run.sh
: "${OUT:?set OUT}"; mkdir -p "$OUT"
case "${PART:-1}" in
1)
  timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k "tail_split" > "$OUT/tail_tests.log" 2>&1
  tail -3 "$OUT/tail_tests.log"
  grep -q " passed" "$OUT/tail_tests.log" && ! grep -q "failed\|error" "$OUT/tail_tests.log" || exit 1
  timeout 300 python3 bench/fmha_peers.py --out "$OUT/ts" --skip-peers \
    --variants now,tail_split,tail_split_free,now#2,tail_split#2,tail_split_free#2 --variant-cases 0,2,4,6,8,d5 > "$OUT/ts.log" 2>&1
  grep "^| " "$OUT/ts/fmha_peers.md" | tail -8
  timeout 120 python3 bench/h200/fmha_sched/cta_times.py 0 6 > "$OUT/cta_times.log" 2>&1
  timeout 120 python3 bench/h200/fmha_sched/cta_times.py --variant tail_split 0 6 >> "$OUT/cta_times.log" 2>&1
  cat "$OUT/cta_times.log" ;;
2)
  OUT="$OUT/c1" timeout 280 bash bench/h200/fmha_sched/ncu_stalls.sh 1 ;;
3)
  mkdir -p "$OUT/r" && cp bench/results.json "$OUT/r/results.json"  # (fmha_peers merges its fmha_* entries into it)
  timeout 420 python3 bench/fmha_peers.py --out "$OUT/r" --results "$OUT/r/results.json" > "$OUT/r/peers.log" 2>&1
  OUT="$OUT/suite" TEST_TIMEOUT=400 bash bench/h200/gpu_suite.sh ;;
esac
