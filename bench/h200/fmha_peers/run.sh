# FMHA against FA3/FA4/cuDNN on the H200, then the wgmma GPU tests. Runs from the repository
# root of the GPU machine, staged (.dev/p1 first.sh, .dev/p2 install.sh, the fa3 wheel in
# /tmp/site); the tree it measures is .dev/h7root (HEAD + this work: see RESULTS.md).
# usage: bash bench/h200/fmha_peers/run.sh VARIANTS [PYTEST_K]
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -c 'import cutlass, fa3_fwd_interface' || { echo NOT_STAGED; exit 3; }
set -o pipefail
cd .dev/h7root && export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,utilization.gpu,memory.used --format=csv > $OUT/gpu.txt 2>&1
t0=$(date +%s)
timeout ${BENCH_TIMEOUT:-400} python3 bench/fmha_peers.py --out $OUT --variants "$1" ${BENCH_ARGS:-} 2>&1 | tee $OUT/peers.log | grep -v '^{' | tail -80
echo "bench: rc=$? $(( $(date +%s) - t0 ))s"
if [ -n "$2" ]; then
  timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -x -p no:cacheprovider tests/test_fmha.py -k "$2" > $OUT/pytest.log 2>&1
  echo "pytest: rc=$? $(( $(date +%s) - t0 ))s"; tail -3 $OUT/pytest.log
fi
