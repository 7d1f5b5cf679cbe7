# The session's last GPU call (H200, 2026-11-30): the issue-13 checks and benches
# (bench/h200/host_cost/verify.sh, run alone first so that no compile disturbs their timings),
# then every GPU test of the kernels, the ops, the README and the hook, split over 8 pytest
# processes (compiles are CPU-bound; the machine has 16 cores), each under a time limit.
# Run from the repository root of the staged GPU machine (PYTHONPATH set by .dev/p2).
set -u
t0=$(date +%s)
OUT=/tmp/hc timeout ${BENCH_TIMEOUT:-150} bash bench/h200/host_cost/verify.sh
echo "host_cost verify: rc=$? at $(( $(date +%s) - t0 ))s"
tar czf $OUT/host_cost.tgz -C /tmp hc
python3 -m pytest -q -p no:cacheprovider --collect-only -m gpu tests/test_fmha.py tests/test_nvfp4.py \
  tests/test_ops.py tests/test_readme.py tests/test_hook_gpu.py 2>/dev/null | grep '::' > /tmp/gpu_ids
echo "collected $(wc -l < /tmp/gpu_ids) GPU tests"
split -n r/8 /tmp/gpu_ids /tmp/gpu_part.
for p in /tmp/gpu_part.??; do
  timeout ${TEST_TIMEOUT:-200} python3 -m pytest -q -p no:cacheprovider -m gpu $(cat $p) > $p.log 2>&1 &
done
wait
for p in /tmp/gpu_part.??; do echo "== $p ($(wc -l < $p) tests)"; cat $p.log; done > $OUT/pytest.log
grep -hE '^(FAILED|ERROR)|passed|failed' /tmp/gpu_part.??.log
echo "total $(( $(date +%s) - t0 ))s"
