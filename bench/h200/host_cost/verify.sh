# Issue 13 on the GPU machine: the GPU tests of the computed global scale (one launch, a
# cluster exchanging its CTAs' maxima, or two: partial maxima reduced by the quantize kernel)
# and of the torch ops, then the benches: one against two launches by size, host cost, the
# decode step. Run from the repository root of the staged machine, PYTHONPATH set; everything
# goes under $OUT (logs, nvfp4_scale_launches.json, host_cost.json, profile.txt, decode_step.json).
# usage: OUT=DIR bash bench/h200/host_cost/verify.sh   (at most 300 s: the steps' timeouts add up to it;
#        *_TIMEOUT variables override them; then, here: python bench/host_cost.py --merge DIR/host_cost.json)
# Exit status: 0 all passed, 3 no GPU / not staged, else the first failing step's status.
set -o pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the output folder}"
mkdir -p "$OUT" || exit 3
python3 -c 'import torch, cutlass; assert torch.cuda.is_available(), "torch sees no CUDA device"' > "$OUT/preflight.log" 2>&1 || {
  echo "NO_GPU_OR_NOT_STAGED: $(tail -1 "$OUT/preflight.log")"; exit 3; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,memory.used --format=csv > "$OUT/gpu.txt" 2>&1
t0=$(date +%s)
status=0
step() {  # step NAME TIMEOUT_S COMMAND...: run it, log to $OUT/NAME.log, print the last lines and the time
  local name=$1 limit=$2; shift 2
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc at $(( $(date +%s) - t0 ))s"; tail -4 "$OUT/$name.log"
  [ $rc -ne 0 ] && [ $status -eq 0 ] && status=$rc
  return 0
}
# bf16 and f32 (f16 shares the code path): the computed scale against torch's formula (specials,
# tail, a looping amax grid), compute_global_scale (the one-call build), and (bf16) the computed
# scale against the numpy reference over every tail shape
step pytest_nvfp4 "${NVFP4_TIMEOUT:-120}" python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_nvfp4.py \
  -k "(computed_scale_matches_torch or global_scale_kernel_matches_torch or (random_every_tail_shape and plain and bfloat16)) and not (float16 and not bfloat16)"
step scale_launches "${LAUNCHES_TIMEOUT:-30}" python3 bench/nvfp4_scale_launches.py --out "$OUT"
step host_cost "${HOST_TIMEOUT:-30}" python3 bench/host_cost.py --out "$OUT"
step pytest_ops "${OPS_TIMEOUT:-60}" python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_ops.py
step decode_step "${DECODE_TIMEOUT:-40}" python3 bench/decode_step.py --out "$OUT"
echo "total $(( $(date +%s) - t0 ))s, status $status"
exit $status
