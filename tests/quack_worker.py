"""Worker of tests/test_quack_with_hook.py: quack's kernels for one arch, without and with our hook.

    python tests/quack_worker.py sm_90a OUT_DIR [KERNEL ...]

For each kernel of `quack_kernels.KERNELS`: a compile without the hook, then one inside
`cute_lowering.prelowering()` (pipeline "auto"); writes OUT_DIR/<kernel>.{plain,hooked}.ptx
(CuTeDSL's own PTX dump, also written when ptxas then fails) and OUT_DIR/results.json
(ok/error, seconds, and the hook's reports). A process per arch: CuTeDSL reads
CUTE_DSL_ARCH/KEEP/DUMP_DIR when it is imported, and quack patches CuTe process-wide.
"""

from __future__ import annotations

import glob
import json
import shutil
from collections import Counter
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _take_ptx(dump: str) -> str | None:
    texts = []
    for path in sorted(glob.glob(os.path.join(dump, "*.ptx"))):
        with open(path, encoding="utf-8") as f:
            texts.append(f.read())
        os.remove(path)
    return "\n".join(texts) if texts else None


def op_census(path: str) -> dict[str, int]:
    """How many ops of each name the dumped module holds."""
    from cute_lowering.mlir import new_context, parse_module

    counts: Counter = Counter()

    def walk(op):
        counts[op.name] += 1
        for region in op.regions:
            for block in region:
                for inner in block:
                    walk(inner.operation)

    with open(path, encoding="utf-8") as f, new_context() as context:
        walk(parse_module(f.read(), context).operation)
    return dict(counts)


def _compile(build, arch: str, dump: str, hooked: bool) -> tuple[dict, str | None]:
    import cute_lowering

    ir_dump = os.path.join(dump, "ir")
    start = time.perf_counter()
    entry: dict = {"ok": True, "error": None}
    with cute_lowering.recorded_reports() as got:  # every report of this build, however many
        try:
            if hooked:
                os.environ["CUTE_LOWERING_DUMP"] = ir_dump  # our IR before and after the passes
                try:
                    with cute_lowering.prelowering():
                        build(arch)
                finally:
                    del os.environ["CUTE_LOWERING_DUMP"]
            else:
                build(arch)
        except Exception as e:  # keep the compiler's own text for the test to match
            chain, cause = [], e
            while cause is not None:
                chain.append(f"{type(cause).__name__}: {cause}")
                cause = cause.__cause__
            entry.update(ok=False, error=_ANSI.sub("", "\n".join(chain))[-8000:])
    entry["seconds"] = time.perf_counter() - start
    if hooked:
        entry["reports"] = [
            {
                "function": r.function,
                "arch": r.arch,
                "pipeline": r.pipeline,
                "summary": r.summary(),
                "rewritten": r.rewritten,
                "seconds": r.seconds,
                "passes": {p.name: p.counts for p in r.passes},
                "remarks": [d.format() for d in r.remarks],
            }
            for r in got
        ]
        if any(r["rewritten"] for r in entry["reports"]):  # what changed, op by op
            entry["census"] = {
                stage: sum((Counter(op_census(p)) for p in sorted(glob.glob(os.path.join(ir_dump, f"*.{stage}.mlir")))), Counter())
                for stage in ("before", "after")
            }
        shutil.rmtree(ir_dump, ignore_errors=True)
    return entry, _take_ptx(dump)


def main(argv: list[str]) -> int:
    arch, out = argv[0], os.path.abspath(argv[1])
    dump = os.path.join(out, "dump")
    os.makedirs(dump, exist_ok=True)
    # Before CuTeDSL is imported: the target, and PTX kept (which also turns its caches off).
    os.environ.update(CUTE_DSL_ARCH=arch, CUTE_DSL_KEEP="ptx", CUTE_DSL_DUMP_DIR=dump, QUACK_CACHE_ENABLED="0")
    sys.path[:0] = [HERE]  # quack_kernels (our package comes installed)
    start = time.perf_counter()
    import quack_kernels

    quack_kernels.import_quack()
    kernels = quack_kernels.builders()
    names = argv[2:] or list(quack_kernels.KERNELS)
    results = {"arch": arch, "import_seconds": time.perf_counter() - start, "kernels": {}}
    for name in names:
        record = {}
        for variant, hooked in (("plain", False), ("hooked", True)):
            entry, ptx = _compile(kernels[name], arch, dump, hooked)
            if ptx is not None:
                entry["ptx"] = f"{name}.{variant}.ptx"
                with open(os.path.join(out, entry["ptx"]), "w", encoding="utf-8") as f:
                    f.write(ptx)
            record[variant] = entry
        results["kernels"][name] = record
        state = {True: "ok", False: "FAILED"}
        print(f"{arch} {name}: plain {state[record['plain']['ok']]}, hooked {state[record['hooked']['ok']]}", flush=True)
    results["seconds"] = time.perf_counter() - start
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
