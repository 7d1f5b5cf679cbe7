# Session 12's GPU calls in order (H200; .dev/p1 first.sh, then .dev/p2 install.sh; later env.sh)
# a   OUT=a PART=1 bash bench/h200/fmha_sched/s12_run.sh   (pytest -m gpu -k "rescale_threshold or o_in_v": o_in_v passed,
#     rescale_threshold's first version failed on its wrong bit-identity claim; then
#     fmha_peers.py --skip-peers --variants now,rescale8,rescale0,now#2,rescale8#2,rescale0#2 --variant-cases 0,1,2,4,5,8,9,d5)
# b   OUT=b PART=2 bash bench/h200/fmha_sched/s12_run.sh   (now,rescale8,o_last_v,o_last_v160,rescale8_lv160 x2 on 0,2,6,8,d5)
# c   pytest -m gpu tests/test_fmha.py -k rescale_threshold   (the corrected test: 2 passed)
# d   fmha_peers.py --skip-peers --variants now,rescale8,rescale8_late128,rescale8_pp128,rescale8_late_pp128 (x2) --variant-cases 0,2,6,8,4,d5
# --- defaults set to RESCALE_THRESHOLD 8.0 (unmasked) and PINGPONG at D=128 unmasked for e, f, r_threshold8 ---
# e   fmha_peers.py --skip-peers --variants now,rescale8_c128,rescale8_pp_c128,rescale8_c64,s11_defaults (x2) --variant-cases 1,3,5,7,9,10,11,0
# f   fmha_peers.py --skip-peers --variants now,split_rescale8 (x3) --variant-cases d2,d3,d4
#     (the fa3-fwd wheel installed from .dev/fa3)
# r_threshold8  fmha_peers.py --out r --results r/results.json  (all steps; accuracy: 1x8x2048x128 "within False")
# g   python bench/h200/fmha_sched/rescale_accuracy.py 0 3
# h   fmha_peers.py --skip-peers --variants s11_defaults,pp128,rescale0_pp128,now (x2) --variant-cases 0,2,6,8,4,d5
# --- defaults back to session 11's (RESCALE_THRESHOLD None, PINGPONG off at D=128) ---
# r   fmha_peers.py --out r --results r/results.json (-> bench/results.json), then OUT=suite TEST_TIMEOUT=270 bash bench/h200/gpu_suite.sh
#     (7 parts passed, part ab killed at 270 s; the script's own log was lost: $OUT not created, fixed)
# suite_part_ab  part ab's 57 tests rerun alone: 57 passed
