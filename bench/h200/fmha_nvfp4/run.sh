# The NVFP4 epilogue of the wgmma FMHA on the H200: before/after timing, then the GPU tests of
# the NVFP4 output. Runs from the repository root of the staged GPU machine (.dev/p1 first.sh,
# .dev/p2 install.sh). What each run directory holds:
#   run1  ncu of before / now / bf16 (the "now" there still had a store-index bug: right work,
#         wrong addresses) and a first timing:
#         ncu --clock-control none --kernel-name regex:FmhaSm90 --section SpeedOfLight
#           --section WarpStateStats --section InstructionStats --section SchedulerStats
#           --section SourceCounters --section LaunchStats --section MemoryWorkloadAnalysis_Tables
#           -o prof python3 bench/h200/fmha_nvfp4/epilogue_ab.py --out /tmp/x --ncu --cases 0,2
#         details.txt = ncu -i prof.ncu-rep --page details; ncu_epilogue_share.txt from the
#         source page (ncu_epilogue_share.py)
#   run2  this script with ROUNDS=5 (all three cases, + PINGPONG on each)
#   run3  the final epilogue: pytest of the NVFP4 output (16 passed), then
#         epilogue_ab.py --rounds 3 --pingpong --cases 1,2
# usage: TREE_STATE="<rev + dirty files>" bash bench/h200/fmha_nvfp4/run.sh [ROUNDS]
export PYTHONPATH=$PWD:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -c 'import cutlass' || { echo NOT_STAGED; exit 3; }
set -o pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
t0=$(date +%s)
timeout 240 python3 bench/h200/fmha_nvfp4/epilogue_ab.py --out $OUT --rounds ${1:-5} --pingpong --results $OUT/results.json 2>&1 | tee $OUT/ab.log | tail -6
echo "ab: rc=$? $(( $(date +%s) - t0 ))s"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_fmha_nvfp4_epilogue.py tests/test_ops.py "tests/test_fmha.py::test_gpu_nvfp4_out_is_quantize_of_the_output" > $OUT/pytest.log 2>&1
echo "pytest: rc=$? $(( $(date +%s) - t0 ))s"; tail -3 $OUT/pytest.log
