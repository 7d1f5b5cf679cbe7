# Session 10's GPU calls in order (H200; .dev/p1 first.sh, then .dev/p2 install.sh):
# c1  pytest -m gpu tests/test_fmha.py -k cluster  (2 passed: CLUSTER = 2 bit-equal to 1, NVFP4 too)
#     python3 bench/fmha_peers.py --out c1/v --skip-peers --variants now,cluster,now#2,cluster#2 --variant-cases 0,2,4,6,8
