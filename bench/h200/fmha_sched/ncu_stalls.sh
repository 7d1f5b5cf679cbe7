#!/bin/bash
# Where our wgmma kernel's warps wait, against FA3's, on one prefill case (default ISSUE_CASES[1],
# 4x16x4096x128 causal): ncu's stall sampling per reason (raw metrics) for both, and per SASS
# instruction for ours (source page), the third call of each.
# Usage (staged machine, FA3 installed, PYTHONPATH set): OUT=DIR bash bench/h200/fmha_sched/ncu_stalls.sh [case index]
: "${OUT:?set OUT}"; mkdir -p "$OUT"
here=bench/h200/fmha_split
sections="--section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats"
ncu $sections -k regex:FmhaSm90 -s 2 -c 1 -o "$OUT/ours" python3 $here/ncu_pair.py ours ${1:-1} > "$OUT/ncu_ours.log" 2>&1
ncu $sections -k regex:device_kernel -s 2 -c 1 -o "$OUT/fa3" python3 $here/ncu_pair.py fa3 ${1:-1} > "$OUT/ncu_fa3.log" 2>&1
for who in ours fa3; do
  ncu -i "$OUT/$who.ncu-rep" --page raw --csv > "$OUT/${who}_raw.csv" 2>&1
  ncu -i "$OUT/$who.ncu-rep" --page details > "$OUT/${who}_details.txt" 2>&1
done
ncu -i "$OUT/ours.ncu-rep" --page source --csv --print-source sass > "$OUT/ours_source.csv" 2>&1 || true
rm -f "$OUT"/*.ncu-rep
python3 bench/h200/fmha_sched/stall_regions.py "$OUT/ours_source.csv" > "$OUT/ours_regions.txt" 2>&1
ls -la "$OUT"; tail -c 400 "$OUT/ncu_ours.log"; head -20 "$OUT/ours_regions.txt"
