python3 bench/fmha_peers.py --out $OUT/r --results $OUT/r/results.json --steps issue,nvfp4,accuracy
