#!/bin/bash
# Session 20's GPU calls, in this order on one staged machine (.dev/p1 first.sh; then
# `source .dev/p2/install.sh` with STEP=t; then the FA3 wheel, carried in .dev/fa3, installed
# into /tmp/site with STEP=a; later calls set PYTHONPATH as .dev/p2/env.sh does).
# Ours is the default kernel of this tree: session 19's defaults (WIDE_KEY_TILES, MASK_LOOPS at
# (128, False), TMA_STORE + STMATRIX with a diagonal), which its peers' run predated in part.
# usage: OUT=DIR STEP=t bash bench/h200/fmha_sched/s20/run.sh
#   STEP=t  the decode kernel's GPU tests (the new KEY_WARPS_STAGES bit-identity test among them)
#   STEP=a  the peers' issue and decode rows (results into DIR/a/results.json), then variants on the
#           two Sq=1 rows: the <= 16-row decode kernel with a 4, 5 and 6 stage K/V ring
#   STEP=b  the peers' NVFP4, accuracy and decode-accuracy steps (results into DIR/b/results.json)
#   STEP=c  (a second machine) the packed split-KV kernel's GPU tests (SPLIT_MASK_LOOPS' bit identity
#           among them); variants: split_mask_loops on the decode rows Sq >= 16, the exp2s in column
#           order at D=128 (sm_inter128 on 4096 and 1024 keys, sm_inter128_causal with a diagonal)
#   STEP=n  (a third machine, FA3 installed) ncu's stall sampling, ours against FA3, on 4x16x4096x128
#           causal (n1) and without a mask (n0): ncu_stalls.sh
#   STEP=e  (a fourth machine) the dynamic order without a diagonal (dyn128), three passes against now
#   STEP=f  (a fifth machine, FA3 installed) a launch's fixed cost, ours against FA3 and FA4:
#           bench/fmha_fixed_cost.py (one and two 128-row tiles a CTA, 512-4096 keys, a line fit)
#   STEP=g  (a sixth machine) UNMASKED_INF_GUARD off: its bit-identity GPU test, then no_inf_guard
#           against now (three passes) on 4096, 1024, causal 4096 / 8192, the sink and 8192 (wide)
#   STEP=suite  every GPU test (gpu_suite.sh)
: "${OUT:?set OUT}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
case "$STEP" in
t)
  timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha_decode.py > "$OUT/t_tests.log" 2>&1
  tail -5 "$OUT/t_tests.log" ;;
a)
  mkdir -p "$OUT/a" && cp bench/results.json "$OUT/a/results.json"
  timeout 560 python3 bench/fmha_peers.py --out "$OUT/a" --results "$OUT/a/results.json" --steps issue,decode \
    --variants now,kw_stages4,kw_stages6,kw_stages5,now#2,kw_stages6#2,kw_stages4#2,now#3 --variant-cases d0,d1 > "$OUT/a/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/a/fmha_peers.md" "$OUT/a/peers.log" | cut -c1-160 | head -60 ;;
b)
  mkdir -p "$OUT/b" && cp bench/results.json "$OUT/b/results.json"
  timeout 500 python3 bench/fmha_peers.py --out "$OUT/b" --results "$OUT/b/results.json" --steps nvfp4,accuracy,decode_accuracy > "$OUT/b/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/b/fmha_peers.md" "$OUT/b/peers.log" | cut -c1-160 | head -50 ;;
c)
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha_decode_wgmma.py > "$OUT/c_tests.log" 2>&1
  tail -3 "$OUT/c_tests.log"
  mkdir -p "$OUT/c"
  timeout 330 python3 bench/fmha_peers.py --out "$OUT/c" --skip-peers \
    --variants now,split_mask_loops,sm_inter128,sm_inter128_causal,now#2,split_mask_loops#2,sm_inter128#2,sm_inter128_causal#2,now#3,split_mask_loops#3 \
    --variant-cases d2,d3,d4,d5,d6,0,8,1,3 > "$OUT/c/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/c/fmha_peers.md" "$OUT/c/peers.log" | cut -c1-160 | head -30 ;;
n)
  for c in 1 0; do OUT="$OUT/n$c" timeout 280 bash bench/h200/fmha_sched/ncu_stalls.sh $c > /dev/null 2>&1; head -30 "$OUT/n$c/ours_regions.txt"; head -30 "$OUT/n$c/fa3_regions.txt"; done ;;
e)
  mkdir -p "$OUT/e"
  timeout 400 python3 bench/fmha_peers.py --out "$OUT/e" --skip-peers \
    --variants now,dyn128,now#2,dyn128#2,now#3,dyn128#3 --variant-cases 0,8,2,6 > "$OUT/e/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/e/fmha_peers.md" "$OUT/e/peers.log" | cut -c1-160 | head -20 ;;
f)
  timeout 400 python3 bench/fmha_fixed_cost.py --out "$OUT/f" > "$OUT/f.log" 2>&1
  tail -30 "$OUT/f.log" ;;
g)
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k "unmasked_inf_guard" > "$OUT/g_tests.log" 2>&1
  tail -3 "$OUT/g_tests.log"
  mkdir -p "$OUT/g"
  timeout 330 python3 bench/fmha_peers.py --out "$OUT/g" --skip-peers \
    --variants now,no_inf_guard,now#2,no_inf_guard#2,now#3,no_inf_guard#3 --variant-cases 0,8,1,3,11,2 > "$OUT/g/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/g/fmha_peers.md" "$OUT/g/peers.log" | cut -c1-160 | head -20 ;;
suite)
  OUT="$OUT/suite" TEST_TIMEOUT=420 bash bench/h200/gpu_suite.sh ;;
esac
