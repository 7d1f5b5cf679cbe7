# Session 11's GPU calls in order (H200; .dev/p1 first.sh, the fa3-fwd wheel, then .dev/p2 install.sh)
# p1  OUT=p1 PART=1 bash bench/h200/fmha_sched/next_run.sh    (NVFP4_OFFLOAD_FALLBACK: its GPU tests, 8 passed, then
#     fmha_peers.py --skip-peers --variants now,nvfp4_fallback128,nvfp4_fallback,now#2,... --variant-cases n0,n1,n2)
# p2  OUT=p2/c0 bash bench/h200/fmha_sched/ncu_stalls.sh 0     (4x16x4096x128, ours and FA3; ours' files re-run with
#     WHO=ours, 8 files come back a call)
# w2  pytest -m gpu tests/test_fmha.py -k "o_in_v or key_tile_160"  (2 passed), then
#     fmha_peers.py --out w2/v --skip-peers --variants now,o_in_v176,o_in_v160,o_in_v176_pp,now#2,o_in_v176#2,o_in_v176_pp#2 --variant-cases 0,2,6,8,d5
# w3  fmha_peers.py --skip-peers --variants now,o_in_v,now#2,o_in_v#2 --variant-cases 0,2,8
# w4  fmha_peers.py --skip-peers --variants now,o_in_v160,now#2,o_in_v160#2,now#3,o_in_v160#3 --variant-cases 2,6,d6
#     (its first try found a fresh machine without CuTeDSL: staged again)
# w5  python bench/h200/fmha_split/kernel_times.py d2 d3 d4 d5   (ours and FA3, kernel by kernel), then
#     fmha_peers.py --skip-peers --variants now,split176,now#2,split176#2,now#3,split176#3 --variant-cases d2,d3,d4
# w6  pytest -m gpu tests/test_fmha_decode_wgmma.py -k pdl (2 passed); kernel_times.py --impls ours --variant pdl_last_load d2 d3 d4;
#     fmha_peers.py --skip-peers --variants now,pdl_last_load,pdl_start,now#2,pdl_last_load#2,pdl_start#2,now#3,pdl_last_load#3 --variant-cases d0,d1,d2,d3,d4,d6
# --- SPLIT_COMBINE_PDL_MAX = 2, PDL_TRIGGER = "last_load" (one start refused: ~3 minutes) ---
# r   pytest -m gpu tests/test_fmha_decode_wgmma.py, tests/test_ops.py, tests/test_fmha_decode.py (21 + 5 + 24 passed);
#     fmha_peers.py --out r --steps decode --results r/results.json   (bench/results.json's decode fmha_* entries)
# w7  fmha_peers.py --skip-peers --variants now,late_rescale128,fa3_loop128,now#2,late_rescale128#2,fa3_loop128#2 --variant-cases 0,2,8
