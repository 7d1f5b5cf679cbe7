# Session 13's GPU calls (H200; each after .dev/p1/first.sh and .dev/p2/install.sh on a fresh machine)
# a: the tail split's GPU test, then timed (knobs of fmha_peers.VARIANTS), then the CTA trace (failed: see RESULTS.md)
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k tail_split
python3 bench/fmha_peers.py --out a/ts --skip-peers --variants now,tail_split,tail_split_free,now#2,tail_split#2,tail_split_free#2 --variant-cases 0,2,4,6,8,d5
python3 bench/h200/fmha_sched/cta_times.py 0 6
# b: P_CONVERT_NEXT's GPU test (bit-identical to the default), then timed
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k p_convert_next
python3 bench/fmha_peers.py --out b/pn --skip-peers --variants now,p_next,now#2,p_next#2 --variant-cases 0,1,2,3,6,7,8,d5
# ncu: where the warps wait, 4x16x4096x128 (case 0), the default build, P_CONVERT_NEXT, the tail-split build
# (this call's ncu_stalls.sh did not yet pass --clock-control none: ncu locked the clocks, 1.34 GHz)
for v in now p_next tail_split; do OUT=ncu/ncu_$v FMHA_VARIANT=$v WHO=ours bash bench/h200/fmha_sched/ncu_stalls.sh 0; done
# c: the tail-split build with the plain loop's runtime mask test (step(it, state, None)) in its key loop
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k tail_split
python3 bench/fmha_peers.py --out c/ts --skip-peers --variants now,tail_split,tail_split_free,now#2,tail_split#2,tail_split_free#2 --variant-cases 0,2,6,8,d5
# d: TAIL_SPLIT with the pieces in a launch of their own (commit "TAIL_SPLIT: the pieces in a launch of their own"; trigger "last_load")
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k tail_split
python3 bench/fmha_peers.py --out d/ts --skip-peers --variants now,tail_split,tail_split_free,tail_split_plain,now#2,tail_split#2,tail_split_free#2 --variant-cases 0,2,6,8,4
# e: the pieces allowed at the main kernel's start (TAIL_PIECES_TRIGGER "start"), TAIL_LAUNCH_COST 60 then
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k tail_split
python3 bench/fmha_peers.py --out e/ts --skip-peers --variants now,tail_split,tail_split_model0,tail_split_last_load,now#2,tail_split#2,tail_split_model0#2 --variant-cases 2,6,0
# suite: every GPU test with TAIL_SPLIT on (TAIL_LAUNCH_COST 8): 455 passed, 4 failed (MASK_RELATIVE's
# columns missing in the pieces' kernel, a trace-time AttributeError; fixed after, CPU-tested, not rerun on the GPU)
OUT=suite TEST_TIMEOUT=330 PARTS=8 bash bench/h200/gpu_suite.sh
