"""Cut a `*.post.mlir` dump down to the kernels a lit test needs (real IR, smaller file).

    python tests/trim_post_dump.py DUMP.post.mlir OUT.mlir [--kernel SUBSTRING ...] [--gzip]

Keeps the module (its attributes), each `gpu.module` with only the `llvm.func` kernels whose
name contains one of the SUBSTRINGs (default: the one with the most wgmmas) and the
declarations they call, and drops the host functions (which launch the dropped kernels).
The result parses and verifies (checked before writing); `--gzip` writes OUT.mlir.gz, for
lit inputs of real kernels (`gunzip -c %S/Inputs/x.mlir.gz | lowering-opt - ...`).
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys


def trim(text: str, wanted: list[str]) -> str:
    import cutlass  # noqa: F401  (registers CuTeDSL's dialects)

    from cute_lowering.mlir import new_context, parse_module

    with new_context() as context:
        module = parse_module(text, context)
        body = module.body
        for op in list(body.operations):
            if op.operation.name != "gpu.module":
                if op.operation.name == "llvm.func" and op.operation.regions[0].blocks:
                    op.operation.erase()  # host code: it launches kernels we drop
                continue
            functions = [f for f in op.regions[0].blocks[0].operations if f.operation.name == "llvm.func"]
            kernels = [f for f in functions if "gpu.kernel" in f.operation.attributes]
            if not wanted:
                best = max(kernels, key=lambda f: str(f).count("wgmma.mma_async"))
                names = [_name(best)]
            else:
                names = [_name(f) for f in kernels if any(w in _name(f) for w in wanted)]
            for f in kernels:
                if _name(f) not in names:
                    f.operation.erase()
        kept = str(module)
        called = set(re.findall(r"llvm\.call @([\w$.]+)", kept))
        for op in module.body.operations:
            if op.operation.name == "gpu.module":
                for f in list(op.regions[0].blocks[0].operations):
                    if f.operation.name == "llvm.func" and not f.operation.regions[0].blocks and _name(f) not in called:
                        f.operation.erase()
        for op in list(module.body.operations):
            if op.operation.name == "llvm.func" and not op.operation.regions[0].blocks and _name(op) not in called:
                op.operation.erase()
        module.operation.verify()
        return str(module)


def _name(op) -> str:
    return str(op.operation.attributes["sym_name"]).strip('"')


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dump")
    p.add_argument("output")
    p.add_argument("--kernel", action="append", default=[])
    p.add_argument("--gzip", action="store_true")
    args = p.parse_args(argv)
    with open(args.dump, encoding="utf-8") as f:
        text = trim(f.read(), args.kernel)
    if args.gzip:
        with gzip.open(args.output + ".gz", "wt", encoding="utf-8", compresslevel=9) as f:
            f.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
