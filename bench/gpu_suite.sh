# Every GPU test of the repository (pytest -m gpu over tests/), split over PARTS pytest
# processes (compiles are CPU-bound; the H200 machine has 16 cores), each under a time
# limit. Node ids are passed one per line (they contain spaces). Run from the repository
# root of the staged GPU machine, with our package installed (`import cute_lowering`: the wheel
# installed with --target into a folder on PYTHONPATH; the checkout's folders are not a package).
# usage: OUT=DIR bash bench/gpu_suite.sh      (PARTS=8, TEST_TIMEOUT=300 by default)
# Output: DIR/gpu_suite.log (each part's tail), the FAILED/ERROR lines and counts on stdout.
# Exit status: 0 when every part passed, 1 otherwise, 3 when nothing was collected, 4 when the
# installed package is not this checkout's (bench/installed_checkout.py: a stale --target install).
set -u
: "${OUT:?set OUT to the output folder}"
mkdir -p "$OUT"  # (the status loop below writes there: without it every part read as passed)
parts=${PARTS:-8}
t0=$(date +%s)
python3 "$(dirname "$0")/installed_checkout.py" || exit 4
python3 -m pytest -q -p no:cacheprovider --collect-only -m gpu tests 2>/dev/null | grep '::' > /tmp/gpu_ids
n=$(wc -l < /tmp/gpu_ids)
echo "collected $n GPU tests"
[ "$n" -gt 0 ] || exit 3
rm -f /tmp/gpu_part.*
split -n r/$parts /tmp/gpu_ids /tmp/gpu_part.
for p in /tmp/gpu_part.??; do
  xargs -d '\n' timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q -p no:cacheprovider -m gpu < $p > $p.log 2>&1 &
done
wait
status=0
for p in /tmp/gpu_part.??; do
  echo "== $p ($(wc -l < $p) tests)"; tail -25 $p.log
  tail -1 $p.log | grep -qE '^=*.* passed' && ! tail -1 $p.log | grep -qE 'failed|error' || status=1
done > $OUT/gpu_suite.log
grep -hE '^(FAILED|ERROR)' /tmp/gpu_part.??.log
for p in /tmp/gpu_part.??; do printf '%s\n' "$(tail -1 $p.log)"; done  # (a part killed mid-run ends without a newline)
echo "total $(( $(date +%s) - t0 ))s, status $status"
exit $status
