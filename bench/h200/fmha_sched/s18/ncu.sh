#!/bin/bash
# ncu's warp states and stall samples per SASS region, per variant, on one ISSUE_CASES row
# (session 15's ncu_o_direct.sh, with the case and the variants as parameters).
# Usage (staged machine, PYTHONPATH set): OUT=DIR CASE=2 VARIANTS="now o_direct" bash bench/h200/fmha_sched/s18/ncu.sh
: "${OUT:?set OUT}"; mkdir -p "$OUT"
CASE=${CASE:-2}; VARIANTS=${VARIANTS:-now o_direct}
sections="--clock-control none --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats"
for variant in $VARIANTS; do
  FMHA_VARIANT=$([ "$variant" = now ] || echo "$variant") timeout 200 ncu $sections -k regex:FmhaSm90 -s 2 -c 1 -o "$OUT/$variant" \
    python3 bench/h200/fmha_split/ncu_pair.py ours "$CASE" > "$OUT/ncu_$variant.log" 2>&1
  ncu -i "$OUT/$variant.ncu-rep" --page details > "$OUT/${variant}_details.txt" 2>&1
  ncu -i "$OUT/$variant.ncu-rep" --page source --csv --print-source sass > "$OUT/${variant}_source.csv" 2>&1 || true
  python3 bench/h200/fmha_sched/stall_regions.py "$OUT/${variant}_source.csv" --top 40 > "$OUT/${variant}_regions.txt" 2>&1
  gzip -f "$OUT/${variant}_source.csv"; rm -f "$OUT/$variant.ncu-rep"
done
head -12 "$OUT"/*_regions.txt; grep -h "Duration\|Elapsed Cycles\|Warp Cycles Per Issued\|Issued Warp\|Executed Instructions  " "$OUT"/*_details.txt
