python3 bench/fmha_peers.py --out $OUT/r --results $OUT/r/results.json   # then: OUT=$OUT/s bash bench/h200/gpu_suite.sh -> 8 parts, all passed, status 0 (149 s)
