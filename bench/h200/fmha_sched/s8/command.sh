# Session 8's GPU calls in order (H200; staged with .dev/p1 first.sh, then .dev/p2 install.sh,
# cold machines restaged the same way; `s8_run.sh` is bench/h200/fmha_sched/s8_run.sh):
# c1  GROUP=tests (stdout only: 21 passed, the five session-7 knob tests) ; GROUP=masks
# c2  GROUP=d64c ; GROUP=d128c
# c3  GROUP=d128 ; GROUP=d64 ; GROUP=decode
# c4  GROUP=d64c2 ; GROUP=d128m ; GROUP=decode_all      (after adding the d64c_192_* variants)
# --- new defaults (commit "fmha: session 8 defaults ..." before its MASK_RELATIVE fix) ---
# f1        OUT=f1 bash bench/h200/gpu_suite.sh                       -> 406 passed, status 0
# f1_peers  python3 bench/fmha_peers.py --out r --results r/results.json (FA3 from .dev/fa3)
#           -> D=128 unmasked and Sq=64/128 decode lost 3-13%: MASK_RELATIVE spilled 60 bytes there
# --- MASK_RELATIVE only where a diagonal is crossed (the committed defaults) ---
# g   python3 bench/fmha_peers.py --out g/v --skip-peers --variants now,s8_d128c_2loops,now#2,s8_d128c_2loops#2 --variant-cases 1,3,7,10,11
# r   python3 bench/fmha_peers.py --out r --results r/results.json   (bench/results.json's fmha_* entries)
# s   OUT=s bash bench/h200/gpu_suite.sh                              -> 406 passed, status 0 (145 s)
