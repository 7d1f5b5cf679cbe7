python3 bench/fmha_peers.py --out $OUT/v --skip-peers --variants now,lr_cand,lr_pp_all,now#2,lr_cand#2,lr_pp_all#2 --variant-cases 0,1,2,3,4,5,6,7,8,9,10,11
