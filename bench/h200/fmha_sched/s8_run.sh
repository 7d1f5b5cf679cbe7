#!/bin/bash
# Session 8, first GPU cycle (issue 14): the knobs session 7 prepared and never ran, timed in
# groups against the defaults, each group only on the cases its knob changes (fmha_peers'
# variants recompile every configuration they touch, so a group is one call's worth), every
# variant timed twice (#2, later in the same run) for the spread. Each group under `timeout`
# so that the call returns what it has; the output folder is tarred by the caller.
# usage (staged machine, PYTHONPATH as .dev/p2/env.sh): GROUP=tests|masks|d64c|d128c|d128|d64|decode|d64c2|d128m|decode_all OUT=DIR bash $0
: "${OUT:?set OUT}"; : "${GROUP:?set GROUP}"; mkdir -p "$OUT"
v() {  # v NAME VARIANTS CASES: time VARIANTS, then each again as NAME#2
  local list="$2" again
  again=$(echo "$2" | sed 's/\([^,]*\)/\1#2/g')
  timeout ${GROUP_TIMEOUT:-540} python3 bench/fmha_peers.py --out "$OUT/$1" --skip-peers \
    --variants "$list,$again" --variant-cases "$3" > "$OUT/$1.log" 2>&1
  echo "== $1 (rc $?)"; grep -E '^variant .*(failed|errors)' "$OUT/$1.log"; tail -$(( 2 * $(echo "$2" | tr ',' '\n' | wc -l) + 2 )) "$OUT/$1/fmha_peers.md" 2>/dev/null
}
case "$GROUP" in
  tests) timeout 540 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k \
           "softmax_orders or mask_relative or key_tile_160 or stmatrix or tma_store" 2>&1 | tail -15 ;;
  masks) v masks now,mask_relative 1,3,5,7,9,10,11 ;;
  d64c) v d64c now,mask_relative,d64c_192,d64c_192_pp 5,9 ;;
  d128c) v d128c now,mask_relative,d128c_2loops,d128c_2loops_pp 1,3,7 ;;
  d128) v d128 now,d128_160,stmatrix,tma_store,tma_store_stm 0,2,8 ;;
  d64) v d64 now,stmatrix,tma_store,tma_store_stm,stm_p_smem_d64_192,stm_p_smem_d64_176 4 ;;
  decode) v decode now,no_combine_pdl d2,d3 ;;
  # second round, after the first: the D=64 causal winner with the epilogue knobs, the epilogue
  # knobs on D=128 with a diagonal, the combine's launch on every decode case
  d64c2) v d64c2 now,d64c_192,d64c_192_stm,d64c_192_tma_stm 5,9 ;;
  d128m) v d128m now,stmatrix,tma_store 1,10 ;;
  decode_all) v decode_all now,no_combine_pdl d0,d1,d2,d3,d4,d5,d6 ;;
esac
