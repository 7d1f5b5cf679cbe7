# Session 14's GPU calls (staged machine: .dev/p1 first.sh, then .dev/p2 install.sh; FA3 from .dev/fa3)
# a: every GPU test (TAIL_SPLIT on, the pieces' kernel as simplified in session 13's review), then the CTA trace
OUT=a PART=3 bash bench/h200/fmha_sched/next_run.sh
timeout 150 python3 bench/h200/fmha_sched/cta_times.py 0 6 > a/cta_times.log
# r: the peers (FA3 installed), into a copy of results.json (copied back to bench/results.json)
OUT=. PART=2 bash bench/h200/fmha_sched/next_run.sh
# b: O_DIRECT, first build (32-bit stores of the accumulator's column pairs); its now#2 ran with
# O_DIRECT left on (fmha_peers restored a fixed list of knobs, without the new one: fixed after)
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py -k o_direct
python3 bench/fmha_peers.py --out b/v --skip-peers --variants now,o_direct,o_direct160,o_direct176,o_direct192,now#2,o_direct#2,o_direct160#2,o_direct176#2,o_direct192#2 --variant-cases 0,1,2,6,8,d5
