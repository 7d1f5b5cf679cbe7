"""Where the FMHA's time goes by SASS region, from Nsight Compute's source page (run1).

    ncu -i prof.ncu-rep --page source --csv --print-source sass | gzip > source.csv.gz
    python bench/h200/fmha_nvfp4/ncu_epilogue_share.py source.csv.gz

The profile holds, per case, the launches of epilogue_ab.py --ncu in order (before, now,
bf16, before, now; NAMES). The epilogue is taken to start at the first bf16 pack (F2FP.BF16)
after the last HGMMA. Per kernel: the share of warp-stall samples and of executed warp
instructions in the epilogue, shared-memory wavefronts beyond the ideal (bank conflicts)
there, and the epilogue's six largest stall reasons.
"""

import csv, gzip, io, sys, collections
txt = gzip.open(sys.argv[1], 'rt').read()
parts = txt.split('"Kernel Name",')[1:]
NAMES = ['d128 before', 'd128 now', 'd128 bf16', 'd128 before#2', 'd128 now#2', 'd64 before', 'd64 now', 'd64 bf16', 'd64 before#2', 'd64 now#2']
for name, part in zip(NAMES, parts):
    lines = part.split('\n', 1)[1]
    rows = list(csv.DictReader(io.StringIO(lines)))
    src = [r['Source'].strip() for r in rows]
    last_hgmma = max(i for i, s in enumerate(src) if 'HGMMA' in s)
    start = next(i for i in range(last_hgmma, len(src)) if 'F2FP.BF16' in src[i])
    end = next((i for i, s in enumerate(src) if 'rcp_rn_f32_slowpath' in s and s.startswith('.')), len(src))
    def tot(a, b, key):
        return sum(float(r[key] or 0) for r in rows[a:b])
    T = tot(0, len(rows), 'Warp Stall Sampling (All Samples)')
    E = tot(start, len(rows), 'Warp Stall Sampling (All Samples)')
    IT = tot(0, len(rows), 'Instructions Executed'); IE = tot(start, len(rows), 'Instructions Executed')
    stalls = collections.Counter()
    for r in rows[start:]:
        for k, v in r.items():
            if k.startswith('stall_') and '(Not Issued)' not in k and v not in ('', '0'):
                stalls[k] += float(v)
    excess = tot(start, len(rows), 'L1 Wavefronts Shared Excessive'); ideal = tot(start, len(rows), 'L1 Wavefronts Shared Ideal')
    print(f"{name:14s} samples {T:9.0f} epilogue {E/T*100:5.1f}%  instr {IT/1e6:6.1f}M epilogue {IE/1e6:5.1f}M  smem wavefronts excess/ideal {excess:.0f}/{ideal:.0f}")
    print('   epilogue stalls:', ', '.join(f"{k[6:]} {v/E*100:.0f}%" for k, v in stalls.most_common(6)))
