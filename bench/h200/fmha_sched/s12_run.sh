#!/bin/bash
# Session 12's GPU calls (staged machine: .dev/p1 first.sh, then .dev/p2 install.sh / env.sh).
#   PART=1  RESCALE_THRESHOLD's GPU tests and session 11's unrun O_IN_V cases, then the
#           conditional rescale timed at 0 and 8 log2 units on both head dims, causal and not
#   PART=2  O_IN_V "last_v" at 128 / 160 and with the conditional rescale (D=128 unmasked rows)
# usage: OUT=DIR PART=N bash bench/h200/fmha_sched/s12_run.sh
: "${OUT:?set OUT}"; mkdir -p "$OUT"
case "${PART:-1}" in
1)
  timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k "rescale_threshold or o_in_v" > "$OUT/tests.log" 2>&1
  tail -3 "$OUT/tests.log"
  timeout 280 python3 bench/fmha_peers.py --out "$OUT/rt" --skip-peers \
    --variants now,rescale8,rescale0,now#2,rescale8#2,rescale0#2 --variant-cases 0,1,2,4,5,8,9,d5 > "$OUT/rt.log" 2>&1
  grep "^| " "$OUT/rt/fmha_peers.md" | tail -8 ;;
2)
  timeout 500 python3 bench/fmha_peers.py --out "$OUT/lv" --skip-peers \
    --variants now,rescale8,o_last_v,o_last_v160,rescale8_lv160,now#2,rescale8#2,o_last_v#2,o_last_v160#2,rescale8_lv160#2 \
    --variant-cases 0,2,6,8,d5 > "$OUT/lv.log" 2>&1
  grep "^| " "$OUT/lv/fmha_peers.md" | tail -11 ;;
esac
