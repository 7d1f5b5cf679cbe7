#!/bin/bash
# Session 16's GPU calls (staged machine: .dev/p1 first.sh, then .dev/p2 install.sh)
# usage: OUT=DIR STEP=v bash bench/h200/fmha_sched/s16/run.sh
#   STEP=v     O_DIRECT with its key loop fixed (S zeroed before the in-loop S wgmma), the wide-key
#              tiles against now (done: v.log, v/)
#   STEP=diag  where O_DIRECT's remaining 5% goes: diag.py (O_DIRECT with its global stores skipped
#              at run time; prepared, compiled on the CPU, not run: no device time was left)
: "${OUT:?set OUT}"; mkdir -p "$OUT"
case "$STEP" in
v)
  mkdir -p "$OUT/v"
  timeout 270 python3 bench/fmha_peers.py --out "$OUT/v" --skip-peers \
    --variants now,o_direct,wide160,wide192,now#2,wide160#2 --variant-cases 2,6,d6,0 > "$OUT/v.log" 2>&1 ;;
diag)
  timeout 200 python3 bench/h200/fmha_sched/s16/diag.py > "$OUT/diag.log" 2>&1; cat "$OUT/diag.log" ;;
esac
