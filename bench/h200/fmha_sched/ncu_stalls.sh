#!/bin/bash
# Where our wgmma kernel's warps wait, against FA3's (and FA4's with WHO="ours fa3 fa4"), on one
# prefill case (default ISSUE_CASES[1], 4x16x4096x128 causal): ncu's stall sampling per reason
# (raw metrics) and per SASS instruction (source page), the third call of each.
# Usage (staged machine, FA3 installed, PYTHONPATH set): OUT=DIR bash bench/h200/fmha_sched/ncu_stalls.sh [case index]
: "${OUT:?set OUT}"; mkdir -p "$OUT"
here=bench/h200/fmha_split
sections="--clock-control none --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats"
declare -A kernel=([ours]=regex:FmhaSm90 [fa3]=regex:device_kernel [fa4]=regex:Sm90)
for who in ${WHO:-ours fa3}; do
  ncu $sections -k "${kernel[$who]}" -s 2 -c 1 -o "$OUT/$who" python3 $here/ncu_pair.py $who ${1:-1} > "$OUT/ncu_$who.log" 2>&1
  ncu -i "$OUT/$who.ncu-rep" --page raw --csv > "$OUT/${who}_raw.csv" 2>&1
  ncu -i "$OUT/$who.ncu-rep" --page details > "$OUT/${who}_details.txt" 2>&1
  ncu -i "$OUT/$who.ncu-rep" --page source --csv --print-source sass > "$OUT/${who}_source.csv" 2>&1 || true
  python3 bench/h200/fmha_sched/stall_regions.py "$OUT/${who}_source.csv" > "$OUT/${who}_regions.txt" 2>&1
  gzip -f "$OUT/${who}_source.csv"
done
rm -f "$OUT"/*.ncu-rep
# (a device call returns at most 8 files: each implementation's raw pages go back as one archive)
for who in ${WHO:-ours fa3}; do
  tar czf "$OUT/${who}_pages.tgz" -C "$OUT" "ncu_$who.log" "${who}_raw.csv" "${who}_details.txt" "${who}_source.csv.gz" && \
    rm -f "$OUT/ncu_$who.log" "$OUT/${who}_raw.csv" "$OUT/${who}_source.csv.gz"
done
ls -la "$OUT"; head -20 "$OUT/ours_regions.txt"
