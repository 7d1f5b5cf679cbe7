#!/bin/bash
# LATE_RESCALE (kernels/fmha_sm90.py) against the default on every prefill case and the
# packed split-KV decode rows (alternating, two passes), then the wgmma GPU tests with it on.
# As run (staged machine, PYTHONPATH set): OUT=DIR bash late_rescale_run.sh
# A record: its sed flips the knob's default of that day, which main no longer has.
: "${OUT:?set OUT}"; mkdir -p "$OUT"
python3 bench/fmha_peers.py --out "$OUT" --skip-peers --variants now,late_rescale,now#2,late_rescale#2 \
  --variant-cases 0,1,2,3,4,5,6,7,8,9,10,11,d4,d5,d6 > "$OUT/peers.log" 2>&1
grep -E '^variant .*(failed|errors)' "$OUT/peers.log" | head -4; tail -6 "$OUT/fmha_peers.md"
sed -i 's/^LATE_RESCALE = False/LATE_RESCALE = True/' kernels/fmha_sm90.py
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fmha.py tests/test_fmha_decode_wgmma.py tests/test_fmha_nvfp4_epilogue.py > "$OUT/tests.log" 2>&1
sed -i 's/^LATE_RESCALE = True/LATE_RESCALE = False/' kernels/fmha_sm90.py
tail -3 "$OUT/tests.log"
