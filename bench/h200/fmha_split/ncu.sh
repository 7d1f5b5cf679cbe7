#!/bin/bash
# ncu side by side: our wgmma kernel and FA3's on one prefill case (default ISSUE_CASES[1],
# 4x16x4096x128 causal), the third call of each; sections as text under $OUT.
# Usage (staged machine, FA3 installed, PYTHONPATH set): OUT=DIR bash bench/h200/fmha_split/ncu.sh [case index]
: "${OUT:?set OUT}"; mkdir -p "$OUT"
sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy --section SchedulerStats --section MemoryWorkloadAnalysis"
ncu $sections -k regex:FmhaSm90 -s 2 -c 1 python3 bench/h200/fmha_split/ncu_pair.py ours ${1:-1} > "$OUT/ncu_ours.txt" 2>&1
ncu $sections -k regex:device_kernel -s 2 -c 1 python3 bench/h200/fmha_split/ncu_pair.py fa3 ${1:-1} > "$OUT/ncu_fa3.txt" 2>&1
tail -c 300 "$OUT/ncu_ours.txt"; tail -c 300 "$OUT/ncu_fa3.txt"
