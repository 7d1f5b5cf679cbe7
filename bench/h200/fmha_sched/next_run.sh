#!/bin/bash
# The first things for the next GPU session (issue 14). Session 7 ended with its device time
# spent and these compiled but never run on a GPU:
#   - the whole GPU suite on the final defaults (SOFTMAX_INTERLEAVED at D=64 ran test_fmha's
#     wgmma tests only), test_gpu_wgmma_softmax_orders, test_gpu_wgmma_mask_relative and
#     test_gpu_wgmma_key_tile_160, test_gpu_wgmma_stmatrix, test_gpu_wgmma_tma_store;
#   - MASK_RELATIVE (off) against the default on every prefill case, and what it lets compile
#     without spills: FA3's D=64 causal tile 192 x 128 with two key loops (d64c_192, with the
#     scheduler barrier d64c_192_pp), two key loops at D=128 causal (d128c_2loops, _pp);
#   - 128 x 160 tiles at D=128 without a mask (d128_160; P converted in pairs: no C7519 now);
#   - STMATRIX: O's epilogue store by stmatrix (stmatrix), and FA3's D=64 tile 192 x 192 with P
#     through shared memory stored by stmatrix (stm_p_smem_d64_192, _176: no spills now);
#   - TMA_STORE: O out by one TMA store a warpgroup (tma_store, with stmatrix tma_store_stm);
#   - is b2 Sq=16 Sk=32768 at 0.927 (run16) the PDL combine or the spread (no_combine_pdl).
# Usage, on the staged machine (PYTHONPATH set as .dev/p2/env.sh does):
#   PART=1 OUT=DIR bash bench/h200/fmha_sched/next_run.sh    # suite + the two new tests (~4 min)
#   PART=2 OUT=DIR bash bench/h200/fmha_sched/next_run.sh    # variants (~4 min)
: "${OUT:?set OUT}"; mkdir -p "$OUT"
if [ "${PART:-1}" = 1 ]; then
  OUT="$OUT/suite" bash bench/h200/gpu_suite.sh | tail -4
else
  python3 bench/fmha_peers.py --out "$OUT/tiles" --skip-peers \
    --variants now,mask_relative,d64c_192,d64c_192_pp,d128c_2loops,d128c_2loops_pp,d128_160,now#2,mask_relative#2,d64c_192#2,d64c_192_pp#2,d128c_2loops#2,d128c_2loops_pp#2,d128_160#2 \
    --variant-cases 0,1,2,3,4,5,7,8,9,10,11 > "$OUT/tiles.log" 2>&1
  tail -14 "$OUT/tiles/fmha_peers.md"
  python3 bench/fmha_peers.py --out "$OUT/stm" --skip-peers \
    --variants now,stmatrix,tma_store,tma_store_stm,stm_p_smem_d64_192,stm_p_smem_d64_176,now#2,stmatrix#2,tma_store#2,tma_store_stm#2,stm_p_smem_d64_192#2,stm_p_smem_d64_176#2 \
    --variant-cases 0,1,2,4,5,8,9 > "$OUT/stm.log" 2>&1
  tail -10 "$OUT/stm/fmha_peers.md"
  python3 bench/fmha_peers.py --out "$OUT/decode" --skip-peers --variants now,no_combine_pdl,now#2,no_combine_pdl#2 \
    --variant-cases d2,d3 > "$OUT/decode.log" 2>&1
  tail -6 "$OUT/decode/fmha_peers.md"
  grep -hE '^variant .*(failed|errors)' "$OUT"/*.log | head
fi
