#!/bin/bash
# Session 10's plan for the next GPU session (staged machine: .dev/p1 first.sh, then .dev/p2
# install.sh; FA3 from .dev/fa3 for PART=3). Every step has a short timeout: a hand-over that
# hangs must not take the call's whole 10 minutes (session 10's c2 did).
#   PART=1  NVFP4_OFFLOAD_FALLBACK's GPU tests (prepared in session 10, never run), then the
#           NVFP4 rows: now (offload at D=128 without a mask) against the fallback variants
#   PART=2  ncu per instruction on the unmasked D=128 rows, ours against FA3 (cases 0 and 2; FA3 installed)
#   PART=3  the whole peers run into results.json (after any default changes), then the suite
# usage: OUT=DIR PART=N bash bench/h200/fmha_sched/next_run.sh
: "${OUT:?set OUT}"; mkdir -p "$OUT"
case "${PART:-1}" in
1)
  timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha_nvfp4_epilogue.py -k "many_tiles and (True-True or always)" > "$OUT/fallback_tests.log" 2>&1
  tail -3 "$OUT/fallback_tests.log"
  timeout 300 python3 bench/fmha_peers.py --out "$OUT/v" --skip-peers \
    --variants now,nvfp4_fallback128,nvfp4_fallback,now#2,nvfp4_fallback128#2,nvfp4_fallback#2 --variant-cases n0,n1,n2 > "$OUT/v.log" 2>&1
  tail -12 "$OUT/v/fmha_peers.md" ;;
2)
  OUT="$OUT/c0" timeout 280 bash bench/h200/fmha_sched/ncu_stalls.sh 0
  OUT="$OUT/c2" timeout 280 bash bench/h200/fmha_sched/ncu_stalls.sh 2 ;;
3)
  mkdir -p "$OUT/r" && cp bench/results.json "$OUT/r/results.json"  # (fmha_peers merges its fmha_* entries into it)
  timeout 420 python3 bench/fmha_peers.py --out "$OUT/r" --results "$OUT/r/results.json" > "$OUT/r/peers.log" 2>&1
  OUT="$OUT/suite" TEST_TIMEOUT=280 bash bench/h200/gpu_suite.sh ;;
esac
