#!/bin/bash
# The decode path on the H200, one device call: GPU tests, the split/path sweep, the peers'
# decode rows and decode accuracy, host cost. Usage (repository root, staged machine):
#   bash bench/h200/fmha_decode/run.sh [tests,sweep,peers,host,oldtests]
# Writes under $OUT; prints the tables last.
set -o pipefail
export PYTHONPATH=$PWD:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -c 'import cutlass' || { echo NOT_STAGED; exit 3; }
python3 -c 'import fa3_fwd_interface' 2>/dev/null && echo "FA3 importable" || echo "FA3 NOT importable"
what=${1:-tests,sweep,peers,host}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
has() { [[ ",$what," == *",$1,"* ]]; }
if has tests; then
  timeout 240 python3 -m pytest -q --maxfail=3 -m gpu tests/test_fmha_decode.py 2>&1 | tail -25 | tee "$OUT/tests.log"
fi
if has oldtests; then
  timeout 100 python3 -m pytest -q -m gpu tests/test_ops.py 2>&1 | tail -8 | tee "$OUT/oldtests.log"
  timeout 90 python3 -m pytest -q -m gpu tests/test_fmha.py -k "mma_sync and (shapes or window or long)" 2>&1 | tail -8 | tee -a "$OUT/oldtests.log"
fi
if has sweep; then
  timeout 200 python3 bench/fmha_decode_sweep.py --out "$OUT" 2>&1 | tail -40 | tee "$OUT/sweep.log"
fi
if has peers; then
  timeout 200 python3 bench/fmha_peers.py --out "$OUT" --steps decode,decode_accuracy --results bench/results.json 2>&1 | tail -30 | tee "$OUT/peers.log"
  cp bench/results.json "$OUT/results.json"
fi
if has host; then
  timeout 120 python3 bench/host_cost.py --out "$OUT/host" 2>&1 | grep -E "attention|sdpa" | tee "$OUT/host.log"
fi
