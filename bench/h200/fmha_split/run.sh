#!/bin/bash
# The packed split-KV path (decode_wgmma) and the kept split-KV scratch on the H200, one device
# call: GPU tests (three pytest processes), the split-KV sweep, host cost. Usage (repository
# root, staged machine, PYTHONPATH set): OUT=DIR bash bench/h200/fmha_split/run.sh [tests,sweep,host]
set -o pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the output folder}"; mkdir -p "$OUT"
what=${1:-tests,sweep,host}
has() { [[ ",$what," == *",$1,"* ]]; }
t0=$(date +%s)
if has tests; then
  timeout 280 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha_decode_wgmma.py > "$OUT/tests_wgmma.log" 2>&1 &
  timeout 280 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha_decode.py > "$OUT/tests_decode.log" 2>&1 &
  timeout 280 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_ops.py tests/test_gpu_conversions.py > "$OUT/tests_ops.log" 2>&1 &
  wait
  for f in "$OUT"/tests_*.log; do echo "== $f"; grep -E "^(FAILED|ERROR)" "$f" | head; tail -1 "$f"; done
  echo "tests done at $(( $(date +%s) - t0 ))s"
fi
if has sweep; then
  timeout 240 python3 bench/fmha_decode_sweep.py --out "$OUT" > "$OUT/sweep.log" 2>&1; tail -22 "$OUT/sweep.log"
  echo "sweep done at $(( $(date +%s) - t0 ))s"
fi
if has host; then
  timeout 60 python3 bench/host_cost.py --out "$OUT/host" > "$OUT/host.log" 2>&1; grep -E "attention|sdpa|quantize" "$OUT/host.log" | head -20
fi
echo "total $(( $(date +%s) - t0 ))s"
