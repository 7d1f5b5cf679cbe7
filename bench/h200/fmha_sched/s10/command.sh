# Session 10's GPU calls in order (H200; .dev/p1 first.sh, then .dev/p2 install.sh):
# c1  pytest -m gpu tests/test_fmha.py -k cluster  (2 passed: CLUSTER = 2 bit-equal to 1, NVFP4 too)
#     python3 bench/fmha_peers.py --out c1/v --skip-peers --variants now,cluster,now#2,cluster#2 --variant-cases 0,2,4,6,8
# c2  pytest -m gpu tests/test_fmha_nvfp4_epilogue.py (timeout 300: hung at the first NVFP4_OFFLOAD test)
#     fmha_peers.py --variants now,nvfp4_offload,now#2,nvfp4_offload#2 --variant-cases n0,n1,n2 (timeout 280:
#     "now" timed, nvfp4_offload hung). Cause: the offload build gave the producer warpgroup 32 registers
#     beside two consumer warpgroups of 240, 512 a thread, but a 384-thread CTA launches with 168 a
#     thread (504): the consumers' setmaxnreg.inc waited forever. Fixed in fdec8ba (40 + 2 x 232).
# c3  (after a refused start) .dev/c3.sh: pytest -m gpu tests/test_fmha_nvfp4_epilogue.py -k bytes / -k offloaded,
#     tests/test_fmha.py -k nvfp4 (three processes: 6 + 8 + 8 passed), then
#     fmha_peers.py --out c3/v --skip-peers --variants now,nvfp4_offload,now#2,nvfp4_offload#2 --variant-cases n0,n1,n2
# --- NVFP4_OFFLOAD on at D=128 without a mask ---
# c4  fmha_peers.py --out c4 --steps nvfp4 --results c4/results.json  (bench/results.json's fmha_nvfp4_epilogue_*)
# suite  OUT=suite TEST_TIMEOUT=280 bash bench/h200/gpu_suite.sh  -> 438 passed, 2 skipped (the offload x mma_sync
#        pairs), status 0, 208 s
