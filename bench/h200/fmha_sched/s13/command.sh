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
