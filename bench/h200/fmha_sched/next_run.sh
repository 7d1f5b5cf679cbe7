#!/bin/bash
# The first things for the next GPU session (issue 14). Session 7 ended with device time spent
# and these compiled but never run on a GPU:
#   - mask_row against per-thread constants (every masked build's PTX changed; fewer SASS
#     instructions, fewer registers): the whole GPU suite, then "before" (main at the REV in
#     .dev/before, staged as FMHA_BEFORE_FILE) against it on every prefill case;
#   - test_gpu_wgmma_softmax_orders (LATE_RESCALE x SOFTMAX_INTERLEAVED);
#   - what the mask change let compile without spills: FA3's D=64 causal tile 192 x 128 with two
#     key loops (d64c_192, with the scheduler barrier d64c_192_pp) and two key loops at D=128
#     causal (d128c_2loops, d128c_2loops_pp);
#   - is b2 Sq=16 Sk=32768 at 0.927 (run16) the PDL combine or the spread (no_combine_pdl).
# Usage, on the staged machine (calls: .dev/p1 first.sh; .dev/p2 install.sh; then one call with
# carry [".dev/fa3", ".dev/before"] that installs FA3 if wanted and runs):
#   PART=1 OUT=DIR bash bench/h200/fmha_sched/next_run.sh    # suite + new test (~3 min)
#   PART=2 OUT=DIR bash bench/h200/fmha_sched/next_run.sh    # variants (~4 min)
: "${OUT:?set OUT}"; mkdir -p "$OUT"
if [ "${PART:-1}" = 1 ]; then
  OUT="$OUT/suite" bash bench/h200/gpu_suite.sh | tail -4
  python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k softmax_orders > "$OUT/tests.log" 2>&1
  tail -2 "$OUT/tests.log"
else
  export FMHA_BEFORE_FILE=${FMHA_BEFORE_FILE:-.dev/before/fmha_sm90.py}
  python3 bench/fmha_peers.py --out "$OUT/mask" --skip-peers --variants now,before,now#2,before#2 \
    --variant-cases 0,1,2,3,4,5,6,7,8,9,10,11,d4,d5,d6 > "$OUT/mask.log" 2>&1
  tail -6 "$OUT/mask/fmha_peers.md"
  python3 bench/fmha_peers.py --out "$OUT/tiles" --skip-peers \
    --variants now,d64c_192,d64c_192_pp,d128c_2loops,d128c_2loops_pp,now#2,d64c_192#2,d64c_192_pp#2,d128c_2loops#2,d128c_2loops_pp#2 \
    --variant-cases 1,3,5,7,9,10,11 > "$OUT/tiles.log" 2>&1
  tail -12 "$OUT/tiles/fmha_peers.md"
  python3 bench/fmha_peers.py --out "$OUT/decode" --skip-peers --variants now,no_combine_pdl,now#2,no_combine_pdl#2 \
    --variant-cases d2,d3 > "$OUT/decode.log" 2>&1
  tail -6 "$OUT/decode/fmha_peers.md"
fi
grep -hE '^variant .*(failed|errors)' "$OUT"/*.log 2>/dev/null | head
