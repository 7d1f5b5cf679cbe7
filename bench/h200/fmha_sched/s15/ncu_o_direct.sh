#!/bin/bash
# Where O_DIRECT's 5-7% goes at D=128 without a mask (4x16x4096x128, ISSUE_CASES[0]): ncu's
# speed of light, warp states and stall samples per SASS region, the default build and o_direct.
# Usage (staged machine, PYTHONPATH set): OUT=DIR bash bench/h200/fmha_sched/s15/ncu_o_direct.sh
: "${OUT:?set OUT}"; mkdir -p "$OUT"
sections="--clock-control none --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats --section MemoryWorkloadAnalysis"
for variant in now o_direct; do
  FMHA_VARIANT=$([ $variant = now ] || echo $variant) timeout 240 ncu $sections -k regex:FmhaSm90 -s 2 -c 1 -o "$OUT/$variant" \
    python3 bench/h200/fmha_split/ncu_pair.py ours 0 > "$OUT/ncu_$variant.log" 2>&1
  ncu -i "$OUT/$variant.ncu-rep" --page details > "$OUT/${variant}_details.txt" 2>&1
  ncu -i "$OUT/$variant.ncu-rep" --page source --csv --print-source sass > "$OUT/${variant}_source.csv" 2>&1 || true
  python3 bench/h200/fmha_sched/stall_regions.py "$OUT/${variant}_source.csv" --top 25 > "$OUT/${variant}_regions.txt" 2>&1
  gzip -f "$OUT/${variant}_source.csv"
  tar czf "$OUT/${variant}_pages.tgz" -C "$OUT" "ncu_$variant.log" "${variant}_details.txt" "${variant}_source.csv.gz" && \
    rm -f "$OUT/ncu_$variant.log" "$OUT/${variant}_source.csv.gz" "$OUT/$variant.ncu-rep"
done
ls -la "$OUT"; head -30 "$OUT"/*_regions.txt; grep -h "Duration\|Elapsed Cycles\|Warp Cycles Per Issued\|Issued Warp" "$OUT"/*_details.txt
