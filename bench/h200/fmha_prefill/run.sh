# issue 14 prefill (h12) on the H200: our kernel's knob variants, then (with STEPS) the peers
# table and the GPU tests. Runs from the repository root of the GPU machine after staging
# (.dev/p1 first.sh, .dev/p2 install.sh; the fa3 wheel in /tmp/site for the peers).
# usage: bash bench/h200/fmha_prefill/run.sh VARIANTS [STEPS] [TESTS=1]
export PYTHONPATH=$PWD:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -c 'import cutlass' || { echo NOT_STAGED; exit 3; }
set -o pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,utilization.gpu,memory.used --format=csv > $OUT/gpu.txt 2>&1
t0=$(date +%s)
# (the results.json entries are merged on the home machine from $OUT/fmha_peers.json: see RESULTS.md)
if [ -n "$2" ]; then args="--steps $2"; else args="--skip-peers"; fi
timeout ${BENCH_TIMEOUT:-400} python3 bench/fmha_peers.py --out $OUT --variants "$1" $args ${VARIANT_CASES:+--variant-cases $VARIANT_CASES} 2>&1 | tee $OUT/peers.log | grep -v '^{' | tail -60
echo "bench: rc=$? $(( $(date +%s) - t0 ))s"
if [ -n "$3" ]; then
  # the wgmma path's GPU tests and the torch ops' GPU tests, in 8 processes
  python3 -m pytest -q --collect-only -p no:cacheprovider tests/test_fmha.py tests/test_ops.py -m gpu -k "wgmma or test_ops" 2>/dev/null | grep '::' > /tmp/ids
  split -n l/8 /tmp/ids /tmp/ids.
  for f in /tmp/ids.??; do xargs -d "\n" timeout ${TEST_TIMEOUT:-200} python3 -m pytest -q -p no:cacheprovider < $f > $f.log 2>&1 & done; wait  # (ids hold spaces)
  for f in /tmp/ids.??; do echo "== $f"; tail -2 $f.log; done > $OUT/pytest.log
  grep -h -E "passed|failed|error" $OUT/pytest.log; echo "pytest: $(( $(date +%s) - t0 ))s"
fi
