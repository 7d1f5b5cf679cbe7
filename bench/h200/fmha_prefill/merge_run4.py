# usage: python bench/h200/fmha_prefill/merge_run4.py  (writes only the fmha_<issue case> keys)
# fmha_* entries of bench/results.json from run4: the peers table, with ours for the D=128 rows
# with a diagonal taken from the head_774a43d variant of the same run (its PTX is identical to
# the final kernel's for those configurations: the final defaults keep one CTA per tile there)
import json, pathlib, sys
ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
import fmha_peers as fp
run = ROOT / "bench/h200/fmha_prefill/run4"
rows = json.loads((run / "fmha_peers.json").read_text())
gpu = (run / "gpu.txt").read_text().splitlines()[1].split(",")[0].strip()
variant = {r["case"]: r for r in rows if r["kind"] == "variant" and r["variant"] == "head_774a43d"}
diag128 = {fp.case_name(c) for c in fp.ISSUE_CASES if c[5] == 128 and (c[6] or c[7][0] >= 0)}
out = []
for r in rows:
    if r["kind"] != "issue":
        continue
    r = dict(r)
    if r["case"] in diag128:
        v = variant[r["case"]]
        r["ours_ms"], r["ours"] = v["ours_ms"], v["ours"]
        best = r["best_peer"]
        r["ratio"] = round(r[best + "_ms"] / r["ours_ms"], 3)
        r["ours_from"] = "variant head_774a43d of the same run (PTX identical to the final kernel's here)"
    out.append(r)
entries = fp.results_entries(out, gpu, "2026-11-30")
for r in out:
    if "ours_from" in r:
        entries[f"fmha_{r['case']}"]["ours_from"] = r["ours_from"]
for k, e in entries.items():
    e["source"] = "bench/h200/fmha_prefill/run4 (VARIANT_CASES=0,...,11 bash bench/h200/fmha_prefill/run.sh head_774a43d,now issue,accuracy 1; merged by bench/h200/fmha_prefill/merge_run4.py)"
    print(k, e["ours"], e["peer"], e["peer_name"], e["ratio"])
fp.merge_results(ROOT / "bench/results.json", entries)
