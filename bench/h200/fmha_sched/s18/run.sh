#!/bin/bash
# Session 18's GPU calls (staged machine: .dev/p1 first.sh, then .dev/p2 install.sh)
# usage: OUT=DIR STEP=a bash bench/h200/fmha_sched/s18/run.sh
#   STEP=a  where O_DIRECT's 5% goes: session 16's diag.py (its global stores skipped at run time),
#           then O_DIRECT with a third K/V stage in the 32 KB it frees (one Q buffer) and O_DIRECT
#           with one Q buffer alone, against now, two passes
#   STEP=b  FA3's scheduler barrier (PINGPONG) at D=128 without a mask, with O_DIRECT and the
#           wide-key tiles (ncu.sh, s18/n: O_DIRECT's extra time is mostly its S wgmma's wait)
#   STEP=c  WIDE_KEY_PINGPONG's GPU tests; the wide tiles with it from 8192 and from 4096 keys
#   STEP=suite  every GPU test (gpu_suite.sh) with WIDE_KEY_TILES and WIDE_KEY_PINGPONG on
#   STEP=nvfp4  is the NVFP4 output bit-identical where the bf16 call takes another build
#   STEP=d  after ops' fix (the NVFP4 output through the bf16 call where that call computes otherwise)
#   STEP=peers  the whole peers run into a copy of results.json (FA3 installed)
: "${OUT:?set OUT}"; mkdir -p "$OUT"
case "$STEP" in
a)
  timeout 200 python3 bench/h200/fmha_sched/s16/diag.py > "$OUT/diag.log" 2>&1; cat "$OUT/diag.log"
  mkdir -p "$OUT/a"
  timeout 330 python3 bench/fmha_peers.py --out "$OUT/a" --skip-peers \
    --variants now,o_direct,o_direct_s3,o_direct_q1,now#2,o_direct_s3#2 --variant-cases 2,0,6,d6 > "$OUT/a.log" 2>&1
  grep -h '"variant"\|failed\|errors' "$OUT/a.log" | cut -c1-200 ;;
b)
  mkdir -p "$OUT/b"
  timeout 420 python3 bench/fmha_peers.py --out "$OUT/b" --skip-peers \
    --variants now,pp128,o_direct,o_direct_pp,wide192,wide192_pp,wide176_pp,now#2,o_direct_pp#2,wide192_pp#2 \
    --variant-cases 2,6,0,d6 > "$OUT/b.log" 2>&1
  grep -h '"variant"\|failed\|errors' "$OUT/b.log" | cut -c1-200 ;;
c)
  timeout 240 python3 -m pytest -q -m gpu tests/test_fmha.py -k "o_direct or wide_key" > "$OUT/c_tests.log" 2>&1; tail -3 "$OUT/c_tests.log"
  mkdir -p "$OUT/c"
  timeout 330 python3 bench/fmha_peers.py --out "$OUT/c" --skip-peers \
    --variants now,wide192_pp,wide192_pp_4096,wide176_pp_4096,now#2,wide192_pp#2,wide192_pp_4096#2,wide176_pp_4096#2 \
    --variant-cases 0,2,6,d4,d5,d6 > "$OUT/c.log" 2>&1
  grep -h '"variant"\|failed\|errors' "$OUT/c.log" | cut -c1-150 ;;
suite)
  OUT="$OUT/suite" TEST_TIMEOUT=400 bash bench/h200/gpu_suite.sh ;;
nvfp4)
  timeout 200 python3 bench/h200/fmha_sched/s18/nvfp4_identity.py > "$OUT/nvfp4_identity.log" 2>&1; cat "$OUT/nvfp4_identity.log" ;;
d)
  timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k "nvfp4_out" > "$OUT/d_tests.log" 2>&1; tail -5 "$OUT/d_tests.log"
  timeout 200 python3 bench/h200/fmha_sched/s18/nvfp4_identity.py > "$OUT/nvfp4_identity_d.log" 2>&1; cat "$OUT/nvfp4_identity_d.log" ;;
peers)
  # FA3 first: carry .dev/fa3, then pip install --no-deps --target /tmp/site .dev/fa3/*.whl
  mkdir -p "$OUT/r" && cp bench/results.json "$OUT/r/results.json"  # (fmha_peers merges its fmha_* entries into it)
  timeout 500 python3 bench/fmha_peers.py --out "$OUT/r" --results "$OUT/r/results.json" > "$OUT/r/peers.log" 2>&1
  grep "^| " "$OUT/r/fmha_peers.md" | head -40 ;;
esac
