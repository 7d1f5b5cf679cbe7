#!/bin/bash
# Session 11's plan for the next GPU session (staged machine: .dev/p1 first.sh, then .dev/p2
# install.sh; FA3 from .dev/fa3 for PART=3). Every step has a short timeout.
#   PART=1  the O_IN_V GPU test with its new cases (tiles without key blocks; the "last_v" mode:
#           written after session 11's last GPU call, never run), then "last_v" timed at 128,
#           160 and 176 keys a block, then the decode rows again (noise check of the PDL
#           combine at <= 2 splits against a plain launch)
#   PART=2  ncu per instruction on D=128 causal, ours against FA3 (case 1; FA3 installed)
#   PART=3  the whole peers run into a copy of results.json (after any default changes), then the suite
# usage: OUT=DIR PART=N bash bench/h200/fmha_sched/next_run.sh
: "${OUT:?set OUT}"; mkdir -p "$OUT"
case "${PART:-1}" in
1)
  timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k "o_in_v" > "$OUT/o_in_v_tests.log" 2>&1
  tail -3 "$OUT/o_in_v_tests.log"
  timeout 300 python3 bench/fmha_peers.py --out "$OUT/lv" --skip-peers \
    --variants now,o_last_v,o_last_v160,o_last_v176,now#2,o_last_v#2,o_last_v160#2,o_last_v176#2 --variant-cases 0,2,6,8,d5 > "$OUT/lv.log" 2>&1
  grep "^| " "$OUT/lv/fmha_peers.md" | tail -10
  timeout 300 python3 bench/fmha_peers.py --out "$OUT/v" --skip-peers \
    --variants now,plain_combine,now#2,plain_combine#2 --variant-cases d2,d3,d4,d6 > "$OUT/v.log" 2>&1
  grep "^| " "$OUT/v/fmha_peers.md" | tail -6 ;;
2)
  OUT="$OUT/c1" timeout 280 bash bench/h200/fmha_sched/ncu_stalls.sh 1 ;;
3)
  mkdir -p "$OUT/r" && cp bench/results.json "$OUT/r/results.json"  # (fmha_peers merges its fmha_* entries into it)
  timeout 420 python3 bench/fmha_peers.py --out "$OUT/r" --results "$OUT/r/results.json" > "$OUT/r/peers.log" 2>&1
  OUT="$OUT/suite" TEST_TIMEOUT=280 bash bench/h200/gpu_suite.sh ;;
esac
