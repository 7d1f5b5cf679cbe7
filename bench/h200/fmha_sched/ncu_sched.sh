#!/bin/bash
# Session 9: where the SMs sit idle. ncu's SpeedOfLight and memory sections (elapsed cycles, SM
# active cycles, DRAM and L2) for ours under fmha_peers variants (FMHA_VARIANT) and for FA3, on
# one prefill case (default 1: 4x16x4096x128 causal), the third call of each.
# Usage (staged machine, FA3 installed, PYTHONPATH set): OUT=DIR bash $0 CASE VARIANT...  ("fa3" for FA3)
: "${OUT:?set OUT}"; mkdir -p "$OUT"
case_index=${1:-1}; shift
sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats"
for v in "$@"; do
  if [ "$v" = fa3 ]; then who=fa3; k=regex:device_kernel; var=; else who=ours; k=regex:FmhaSm90; var=$v; fi
  FMHA_VARIANT=$var ncu $sections -k $k -s 2 -c 1 python3 bench/h200/fmha_split/ncu_pair.py $who $case_index > "$OUT/c${case_index}_$v.txt" 2>&1
  echo "== case $case_index $v"; grep -E "Duration|Elapsed Cycles|SM Active Cycles|DRAM Throughput|L2 Hit Rate|Grid Size|Mem Busy" "$OUT/c${case_index}_$v.txt" | head -12
done
