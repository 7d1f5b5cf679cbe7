#!/bin/bash
# Session 19's GPU calls, in this order on one staged machine (.dev/p1 first.sh; then
# `source .dev/p2/install.sh` with STEP=t; then the FA3 wheel, carried in .dev/fa3, installed
# into /tmp/site with STEP=a; later calls set PYTHONPATH as .dev/p2/env.sh does).
# Ours is the default kernel: session 19 turned WIDE_KEY_TILES = {128: (128, 192)} on (with
# WIDE_KEY_PINGPONG, O_DIRECT); `no_wide` is the kernel before that.
# usage: OUT=DIR STEP=t bash bench/h200/fmha_sched/s19/run.sh
#   STEP=t  the new builds' GPU tests: O_IN_Q (O through Q's buffer) bit-identical to O's own
#           buffer and to the wide build's O_DIRECT; the wide tile and the NVFP4 output's promise
#   STEP=a  the peers' issue rows (results into DIR/a/results.json), then variants in the same
#           process on 8192, 16384 and 4096 keys, D=128 unmasked: the wide tile against no_wide,
#           with O_IN_Q instead of O_DIRECT (with and without the scheduler barrier), O_IN_Q at
#           128 x 128, FA3's whole order (scheduler barrier + V waited for in the turn + O
#           rescaled after the P V) at 128 x 128 and in the wide build
#   STEP=b  the peers' decode, NVFP4 and accuracy steps (results into DIR/b/results.json), then
#           variants on the decode rows: the packed split-KV kernel with the scheduler barrier
#           and 128 x 192 / 176 tiles
#   STEP=c  variants with a diagonal (D=128 causal, 4096 and 8192): FA3's order, the barrier alone
#   STEP=d  (a second machine) the decode NVFP4 test corrected after STEP=suite; the wide tile with
#           a diagonal (O_DIRECT, with and without the barrier); FA3's order at 128 x 128 again (STEP=a's
#           4096 row moved 670-689 for `now` alone): three passes of now
#   STEP=e  (a third machine) TMA_STORE with a diagonal (with and without STMATRIX), and MASK_LOOPS
#           without one (the 128 x 128 key loop compiled without the element mask), three passes of now
#   STEP=f  (the same machine, at once) unmasked_loop128 and tma_stm_causal again with the wide row, then
#           this machine's copy of kernels/fmha_sm90.py edited to MASK_LOOPS at (128, False) (the wide
#           build too), TMA_STORE and STMATRIX with a diagonal, and test_fmha's GPU tests of those builds
#   STEP=g  (a fourth machine, the last minutes) early_rescale_causal and tma_stm_causal on the causal,
#           window and sink rows
#   STEP=suite  every GPU test (gpu_suite.sh); OQ=1 first sets WIDE_KEY_O_IN_Q (the wide build
#           with O_IN_Q instead of O_DIRECT) in this machine's copy of kernels/fmha_sm90.py
: "${OUT:?set OUT}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
case "$STEP" in
t)
  timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py \
    -k "o_in_q or o_direct or nvfp4_out_is_quantize_where" > "$OUT/t_tests.log" 2>&1
  tail -15 "$OUT/t_tests.log" ;;
a)
  mkdir -p "$OUT/a" && cp bench/results.json "$OUT/a/results.json"
  timeout 560 python3 bench/fmha_peers.py --out "$OUT/a" --results "$OUT/a/results.json" --steps issue \
    --variants now,no_wide,wide192_oq,wide192_oq_nopp,oq128,fa3_order128,wide192_fa3,now#2,wide192_oq#2,no_wide#2 \
    --variant-cases 2,6,0 > "$OUT/a/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/a/fmha_peers.md" "$OUT/a/peers.log" | cut -c1-160 | head -40 ;;
b)
  mkdir -p "$OUT/b" && cp bench/results.json "$OUT/b/results.json"
  timeout 400 python3 bench/fmha_peers.py --out "$OUT/b" --results "$OUT/b/results.json" --steps decode,nvfp4,accuracy,decode_accuracy \
    --variants now,split_pp,split192_pp,split176_pp,now#2,split192_pp#2 --variant-cases d2,d3,d4,d6 > "$OUT/b/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/b/fmha_peers.md" "$OUT/b/peers.log" | cut -c1-160 | head -50 ;;
c)
  mkdir -p "$OUT/c"
  timeout 190 python3 bench/fmha_peers.py --out "$OUT/c" --skip-peers \
    --variants now,fa3_order_causal,pp_causal,now#2,fa3_order_causal#2 --variant-cases 1,3 > "$OUT/c/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/c/fmha_peers.md" "$OUT/c/peers.log" | cut -c1-160 | head -20 ;;
d)
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha_decode.py -k "auto_takes_decode_and_repeats" > "$OUT/d_tests.log" 2>&1
  tail -3 "$OUT/d_tests.log"
  mkdir -p "$OUT/d"
  timeout 380 python3 bench/fmha_peers.py --out "$OUT/d" --skip-peers \
    --variants now,wide_causal,wide_causal_nopp,fa3_order128,now#2,wide_causal#2,fa3_order128#2,now#3 --variant-cases 1,3,7,11,0,8 > "$OUT/d/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/d/fmha_peers.md" "$OUT/d/peers.log" | cut -c1-160 | head -20 ;;
e)
  mkdir -p "$OUT/e"
  timeout 400 python3 bench/fmha_peers.py --out "$OUT/e" --skip-peers \
    --variants now,unmasked_loop128,tma_causal,tma_stm_causal,now#2,unmasked_loop128#2,tma_causal#2,now#3 --variant-cases 0,8,d5,1,3,11 > "$OUT/e/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/e/fmha_peers.md" "$OUT/e/peers.log" | cut -c1-160 | head -20 ;;
f)
  mkdir -p "$OUT/f"
  timeout 150 python3 bench/fmha_peers.py --out "$OUT/f" --skip-peers \
    --variants now,unmasked_loop128,tma_stm_causal,now#2,unmasked_loop128#2,tma_stm_causal#2 --variant-cases 0,8,2,1,3,11 > "$OUT/f/peers.log" 2>&1
  grep "^| " "$OUT/f/fmha_peers.md" | tail -8
  sed -i 's/^MASK_LOOPS = {(64, True): True, (128, True): True}$/MASK_LOOPS = {(64, True): True, (128, True): True, (128, False): True}/; s/^TMA_STORE = {(64, False): True, (64, True): True, (128, False): True, (128, True): False}$/TMA_STORE = {(64, False): True, (64, True): True, (128, False): True, (128, True): True}/; s/^STMATRIX = {(64, False): True, (64, True): True, (128, False): False, (128, True): False}$/STMATRIX = {(64, False): True, (64, True): True, (128, False): False, (128, True): True}/' kernels/fmha_sm90.py
  grep -n "^MASK_LOOPS =\|^TMA_STORE =\|^STMATRIX =" kernels/fmha_sm90.py
  timeout 280 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/test_fmha.py -k "wgmma or o_in_q or o_direct or tail_split or nvfp4" > "$OUT/f_tests.log" 2>&1
  tail -4 "$OUT/f_tests.log" ;;
g)
  mkdir -p "$OUT/g"
  timeout 150 python3 bench/fmha_peers.py --out "$OUT/g" --skip-peers \
    --variants now,early_rescale_causal,tma_stm_causal,now#2,tma_stm_causal#2 --variant-cases 1,3,10,11 > "$OUT/g/peers.log" 2>&1
  grep -h "^| \|failed\|rror" "$OUT/g/fmha_peers.md" "$OUT/g/peers.log" | cut -c1-160 | tail -8 ;;
suite)
  if [ "${OQ:-0}" = 1 ]; then
    sed -i 's/^WIDE_KEY_O_IN_Q = False$/WIDE_KEY_O_IN_Q = True/' kernels/fmha_sm90.py
    grep -n "^WIDE_KEY_O_IN_Q = " kernels/fmha_sm90.py
  fi
  OUT="$OUT/suite" TEST_TIMEOUT=420 bash bench/h200/gpu_suite.sh ;;
esac
