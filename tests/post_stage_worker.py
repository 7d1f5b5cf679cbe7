"""Worker of tests/test_post_stage.py: kernels built with and without the post-stage split.

    python tests/post_stage_worker.py OUT_DIR KIND:NAME [KIND:NAME ...]     (sm_90a, no GPU)

KIND is `ours` (tests/cute_kernels.py cases; `fmha128`, `fmha64`, `fmha128c`: our wgmma FMHA, bf16,
D=128 or 64, `c` causal), `quack` (tests/quack_kernels.py), `cutlass` (CUTLASS's Hopper examples,
from CUTLASS_EXAMPLES_DIR, bench/cutlass_examples_sweep.py) or `fa4` (FlashAttention-4's sm_90
forward under torch's FakeTensorMode, bench/check_collectives_sweep.py's `fa4` names, e.g.
`fa4_fwd_d128`; flash-attn-4 must be importable). Each kernel is compiled three times:

- `plain`: no hook at all;
- `split`: inside `prelowering("builtin.module()")` with CUTE_LOWERING_DUMP set, so CuTeDSL's
  compile is cut at `cute-to-nvvm{llvm-only=true}` and resumed (lowering/post_stage.py) with
  no post pass in between, and the lowered module is dumped (`*.post.mlir`);
- `post` (with POST_PIPELINE set, post-stage passes only): inside `prelowering(post=POST_PIPELINE)`.

and CuTeDSL's own PTX and cubin of each are kept (CUTE_DSL_KEEP=ptx,cubin; with KEEP_CUBINS=DIR
the cubins are copied there, DIR/<kind>_<name>.<variant>.<n>.cubin). OUT_DIR/results.json
says, per kernel, whether each build succeeded, the SHA-256 of its PTX and cubin, and the post
dumps written. A process of its own: CuTeDSL reads CUTE_DSL_ARCH/KEEP/DUMP_DIR at import.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ARCH = "sm_90a"


def _take(dump: str, keep_cubin: str | None = None) -> dict:
    """sha256 of the PTX and cubin files CuTeDSL kept since the last call (then removed);
    `keep_cubin`: a path prefix to copy each cubin to (<prefix>.<n>.cubin), for SASS."""
    found: dict = {}
    for n, path in enumerate(sorted(glob.glob(os.path.join(dump, "*")))):
        kind = path.rsplit(".", 1)[-1]
        if kind in ("ptx", "cubin") and os.path.isfile(path):
            with open(path, "rb") as f:
                data = f.read()
            found.setdefault(kind, hashlib.sha256())
            found[kind].update(data)
            if kind == "cubin" and keep_cubin:
                with open(f"{keep_cubin}.{n}.cubin", "wb") as f:
                    f.write(data)
        if os.path.isfile(path):
            os.remove(path)
    return {kind: h.hexdigest() for kind, h in found.items()}


def _builders(kind: str, name: str):
    if kind == "ours":
        if name.startswith("fmha"):  # fmha128, fmha64, fmha128c (causal): the wgmma path, bf16, uncached
            from cute_lowering.kernels import fmha_sm90  # (compile_attention keeps what it built), as bench/fmha_sass.py

            head_dim, causal = int(name[4:].rstrip("c")), name.endswith("c")
            config = fmha_sm90.config_for(head_dim, False, causal, False, False)
            return lambda: fmha_sm90._compile.__wrapped__("bfloat16", head_dim, False, causal, False, ARCH, "", False, config)
        import cutlass.cute as cute
        from cute_kernels import CASES

        launcher, arguments = CASES[name]
        return lambda: cute.compile(launcher, *arguments(), options=f"--gpu-arch {ARCH}")
    if kind == "quack":
        import quack_kernels

        quack_kernels.import_quack()
        build = quack_kernels.builders()[name]
        return lambda: build(ARCH)
    if kind == "cutlass":
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
        import cutlass_examples_sweep

        return dict(cutlass_examples_sweep.hopper(os.environ["CUTLASS_EXAMPLES_DIR"]))[name]
    if kind == "fa4":
        # FA4 picks its kernel from FLASH_ATTENTION_ARCH and asks the GPU for the SM count
        os.environ.update(FLASH_ATTENTION_ARCH=ARCH.rstrip("a"), FLASH_ATTENTION_NUM_SMS="132")
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
        import check_collectives_sweep

        forward = dict(check_collectives_sweep.fa4(ARCH))[name]
        from flash_attn.cute import interface

        def build():
            interface._flash_attn_fwd.compile_cache.clear()  # FA4's in-memory cache: every build a real one
            forward()

        return build
    raise SystemExit(f"unknown kind {kind!r}: ours, quack, cutlass or fa4")


def _build(build, dump: str, variant: str, post_dump: str, keep_cubin: str | None = None) -> dict:
    import cute_lowering

    entry: dict = {"ok": True, "error": None}
    start = time.perf_counter()
    try:
        if variant == "plain":
            build()
        else:
            # post=: composed with a kernel's own inner prelowering(pipeline) (our kernels set one)
            scope = cute_lowering.prelowering("builtin.module()") if variant == "split" else cute_lowering.prelowering(
                None, post=os.environ["POST_PIPELINE"]
            )
            os.environ["CUTE_LOWERING_DUMP"] = post_dump
            try:
                with scope:
                    build()
            finally:
                del os.environ["CUTE_LOWERING_DUMP"]
            entry["post_dumps"] = sorted(os.path.basename(p) for p in glob.glob(os.path.join(post_dump, "*.post*.mlir")))
            entry["reports"] = [r.summary() for r in cute_lowering.reports()[-4:]]
    except Exception as e:  # noqa: BLE001  (recorded for the test to show)
        chain, cause = [], e
        while cause is not None:
            chain.append(f"{type(cause).__name__}: {cause}")
            cause = cause.__cause__
        entry.update(ok=False, error="\n".join(chain)[-4000:])
    entry["seconds"] = round(time.perf_counter() - start, 2)
    entry.update(_take(dump, keep_cubin))
    return entry


def main(argv: list[str]) -> int:
    out = os.path.abspath(argv[0])
    dump = os.path.join(out, "keep")
    os.makedirs(dump, exist_ok=True)
    os.environ.update(CUTE_DSL_ARCH=ARCH, CUTE_DSL_KEEP="ptx,cubin", CUTE_DSL_DUMP_DIR=dump, QUACK_CACHE_ENABLED="0")
    sys.path[:0] = [HERE]
    import post_test_passes  # noqa: F401  (POST_PIPELINE may name the tests' post passes)
    variants = ("plain", "split") + (("post",) if os.environ.get("POST_PIPELINE") else ())
    results: dict = {}
    for spec in argv[1:]:
        kind, name = spec.split(":", 1)
        build = _builders(kind, name)
        record = {}
        for variant in variants:
            post_dump = os.path.join(out, "post", spec.replace(":", "_"), variant)
            cubins = os.environ.get("KEEP_CUBINS")  # a folder: each build's cubins, for SASS
            keep = os.path.join(cubins, f"{spec.replace(':', '_')}.{variant}") if cubins else None
            record[variant] = _build(build, dump, variant, post_dump, keep)
        # (a build that kept no files was served from a cache: not a comparison)
        record["identical"] = all(record[v].get("cubin") for v in ("plain", "split")) and all(
            record[v]["ok"] and record[v].get("cubin") == record["plain"].get("cubin") and record[v].get("ptx") == record["plain"].get("ptx")
            for v in ("plain", "split")
        )
        results[spec] = record
        print(f"{spec}: " + ", ".join(f"{v} {'ok' if record[v]['ok'] else 'FAILED'}" for v in variants)
              + f"; plain and split identical {record['identical']}", flush=True)  # fmt: skip
        shutil.rmtree(os.path.join(out, "post", spec.replace(":", "_"), "plain"), ignore_errors=True)
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
