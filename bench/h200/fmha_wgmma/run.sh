# wgmma FMHA on the H200: knob sweep, GPU tests, FA4 comparison, SDPA bench, then the rest of the GPU tests
R=/tmp/res; mkdir -p $R
source .dev/p2/install.sh || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,utilization.gpu,memory.used --format=csv > $R/gpu.txt 2>&1
t0=$(date +%s); step() { echo "== $1 at $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
step knobs
timeout 150 python bench/fmha_sm90_knobs.py --out $R --iters 20 > $R/knobs.log 2>&1; echo "rc=$?" >> $R/knobs.log
grep -E "correct=|failed" $R/knobs.log; cat $R/fmha_sm90_knobs.md 2>/dev/null
step pytest_wgmma
timeout 200 python -m pytest -q -x -p no:cacheprovider tests/test_fmha.py -k "gpu and wgmma" > $R/pytest_wgmma.log 2>&1; echo "rc=$?" >> $R/pytest_wgmma.log
tail -4 $R/pytest_wgmma.log
step fa4
timeout 200 python bench/fa4_compare.py bench --out $R/fa4_bench.json > $R/fa4.log 2>&1; echo "rc=$?" >> $R/fa4.log
grep "^{" $R/fa4.log | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l); print(f\"{r['name']:52s} ours {r['ours']:6.1f} mma_sync {r['ours_mma_sync']:6.1f} fa4 {r['peer']:6.1f} ratio {r['ratio']:.3f}\")"
step sdpa
timeout 60 python bench/fmha_bench.py --out $R/fmha --iters 10 > $R/fmha_bench.log 2>&1; echo "rc=$?" >> $R/fmha_bench.log
tail -9 $R/fmha_bench.log
step pytest_rest
timeout 100 python -m pytest -q -p no:cacheprovider tests/test_fmha.py -k "gpu and not wgmma" > $R/pytest_rest.log 2>&1; echo "rc=$?" >> $R/pytest_rest.log
tail -3 $R/pytest_rest.log
step done
tar czf $OUT/res.tgz -C $R .
