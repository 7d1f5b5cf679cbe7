"""What a post pipeline does to the HGMMA loops of real kernels, in SASS, without a GPU.

    python bench/post_stage_sass.py [--post 'builtin.module(wgmma-desc-hoist)'] [--out DIR] SPEC...

SPEC as tests/post_stage_worker.py takes them (`ours:fmha128`, `quack:gemm_bf16`,
`cutlass:cutlass_hopper_dense_gemm` with CUTLASS_EXAMPLES_DIR set). Each kernel is built for
sm_90a plainly and with the post pipeline (the worker, in its own process), and for every
innermost loop that issues HGMMAs (bench/sass.py) this prints its size, its HGMMAs, how many
consecutive HGMMA pairs have nothing between them ("back to back") and the instructions
between consecutive HGMMAs (their sum). Counts, not time: a GPU run decides.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

from sass import disassemble, instructions, innermost, loops  # noqa: E402


def functions(text: str) -> list[tuple[str, str]]:
    parts = re.split(r"^\s*\.text\.(\S+):\s*$", text, flags=re.M)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


def hgmma_loops(cubin: bytes) -> list[dict]:
    """Per kernel, per innermost HGMMA loop: size, HGMMAs, back-to-back pairs, gaps."""
    found = []
    for name, body in functions(disassemble(cubin)):
        _, code = instructions(body)
        for loop in innermost(loops(body), "HGMMA"):
            at = [i for i in range(loop.first, loop.last + 1) if code[i][0].startswith("HGMMA")]
            gaps = [sum(1 for j in range(a + 1, b) if not code[j][0].startswith("NOP")) for a, b in zip(at, at[1:])]
            found.append({"kernel": name, "loop": loop.label, "size": loop.size, "hgmma": len(at),
                          "back_to_back": sum(g == 0 for g in gaps), "gaps": gaps, "between": sum(gaps)})  # fmt: skip
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("specs", nargs="+")
    p.add_argument("--post", default="builtin.module(wgmma-desc-hoist)")
    p.add_argument("--out", default="")
    args = p.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="post_stage_sass_")
    cubins = os.path.join(out, "cubins")
    os.makedirs(cubins, exist_ok=True)
    env = dict(os.environ, POST_PIPELINE=args.post, KEEP_CUBINS=cubins)
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "post_stage_worker.py"), out, *args.specs], env=env)
    if run.returncode:
        return run.returncode
    results = json.loads(pathlib.Path(out, "results.json").read_text())
    table = {}
    for spec in args.specs:
        for variant in ("plain", "post"):
            entry = results[spec][variant]
            if not entry["ok"]:
                print(f"{spec} {variant}: FAILED: {entry['error'][:300]}")
                continue
            found = []
            for path in sorted(glob.glob(os.path.join(cubins, f"{spec.replace(':', '_')}.{variant}.*.cubin"))):
                found += hgmma_loops(pathlib.Path(path).read_bytes())
            table[f"{spec} {variant}"] = found
            for lp in found:
                print(f"{spec:40s} {variant:5s} {lp['kernel'][-24:]:>24s} {lp['loop']:>9s} size {lp['size']:4d} "
                      f"HGMMA {lp['hgmma']:3d} back-to-back {lp['back_to_back']:3d} between {lp['between']:4d}  {lp['gaps']}")  # fmt: skip
    pathlib.Path(out, "sass.json").write_text(json.dumps(table, indent=1))
    print(f"(results: {out}/results.json, {out}/sass.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
