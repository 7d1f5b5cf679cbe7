"""Measure what each CuTeDSL release lowers natively on each target: writes lowering/native_conversions.json.

A maintenance tool of the package data beside it (`lowering/targets.py` reads the table).

    python -m cute_lowering.measure_targets                      # every release venv found (see VENVS)
    python -m cute_lowering.measure_targets --releases 4.8.1,4.6.2 --venvs ~/.cache/cute-lowering/venvs

For each release (a venv holding that `nvidia-cutlass-dsl`; our package is installed there from
this checkout where it does not import from it), the targets are that
release's own `Arch` enum (aliases resolved to the target they compile for). Each
conversion of `cute_lowering.targets.CONVERSIONS` is a small `gpu.func` (load, convert,
store; the narrow side carried as integers through `arith.bitcast`), compiled through
the release's own `cute.compile` pipeline string to cubin (`lowering/repro/worker.py`,
in a subprocess of that venv: an `LLVM ERROR` aborts only the worker). To keep it
affordable, all conversions are compiled in one module first, then per (op, narrow
type) group, and one by one only inside a group that failed. Then, with the new table
in place, the module of all conversions is compiled again with `auto`
(`cute_lowering.hook.auto_pipeline`) in front, for every target: that must compile.

Old entries for releases not measured in this run are kept.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from cute_lowering.hook import auto_pipeline
from cute_lowering.repro.runner import Worker, worker_env
from cute_lowering.targets import CONVERSIONS, TABLE_PATH

VENVS = Path.home() / ".cache" / "cute-lowering" / "venvs"
LANES = 8
ENUM_PROBE = """
import importlib, json
for name in ("cutlass.base_dsl.enums", "cutlass.base_dsl.arch"):
    try:
        arch = importlib.import_module(name).Arch
        break
    except (ImportError, AttributeError):
        arch = None
print(json.dumps({n: m.to_string() for n, m in arch.__members__.items()} if arch else {}))
"""
INT_OF = {"f4E2M1FN": "i4", "f8E4M3FN": "i8", "f8E5M2": "i8", "f8E8M0FNU": "i8"}


def kernel(conversion: str) -> str:
    """One `gpu.func` doing `conversion` (a key of CONVERSIONS) between global memory pointers."""
    op, wide, narrow, shape, *rounding = conversion.split(":")
    rounding = f" {rounding[0]}" if rounding else ""
    vec = (lambda t: f"vector<{LANES}x{t}>") if shape == "vector" else (lambda t: t)
    w, n, i = vec(wide), vec(narrow), vec(INT_OF[narrow])
    name = conversion.replace(":", "_")
    if op == "truncf":
        body = (
            f"      %x = llvm.load %src : !llvm.ptr<1> -> {w}\n"
            f"      %y = arith.truncf %x{rounding} : {w} to {n}\n"
            f"      %b = arith.bitcast %y : {n} to {i}\n"
            f"      llvm.store %b, %dst : {i}, !llvm.ptr<1>\n"
        )
    else:
        body = (
            f"      %b = llvm.load %src : !llvm.ptr<1> -> {i}\n"
            f"      %x = arith.bitcast %b : {i} to {n}\n"
            f"      %y = arith.extf %x : {n} to {w}\n"
            f"      llvm.store %y, %dst : {w}, !llvm.ptr<1>\n"
        )
    return f"    gpu.func @{name}(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {{\n{body}      gpu.return\n    }}\n"


def module(conversions: list[str]) -> str:
    kernels = "".join(kernel(c) for c in conversions)
    return f"module attributes {{gpu.container_module}} {{\n  gpu.module @kernels {{\n{kernels}  }}\n}}\n"


def enum_targets(python: str) -> dict[str, str]:
    out = subprocess.run([python, "-c", ENUM_PROBE], capture_output=True, text=True, env=worker_env(),
                         cwd="/tmp", timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def first_line(error: str) -> str:
    """The compiler's first error line, without what varies between compiles (locations, PTX lines)."""
    lines = [line.strip() for line in error.splitlines() if line.strip() and "Failure while executing" not in line]
    line = lines[0] if lines else error.strip()
    line = re.sub(r'"-":\d+:\d+: ', "", line)
    line = re.sub(r"^error: (unknown: )?", "", line)
    line = re.sub(r"(ptxas application ptx input, )?line \d+; ", "", line)
    return line[:300]


TRIVIAL = (  # a kernel with no conversion at all: whether the target compiles anything
    "module attributes {gpu.container_module} {\n  gpu.module @kernels {\n"
    "    gpu.func @copy(%src: !llvm.ptr<1>, %dst: !llvm.ptr<1>) kernel {\n"
    "      %x = llvm.load %src : !llvm.ptr<1> -> f32\n      llvm.store %x, %dst : f32, !llvm.ptr<1>\n"
    "      gpu.return\n    }\n  }\n}\n"
)


def unusable(worker: Worker, arch: str) -> str | None:
    """None if a kernel without conversions compiles for `arch`, else why not (e.g. ptxas lacks it)."""
    result = worker.compile({"ir": TRIVIAL, "arch": arch, "opt_level": 3})
    return None if result["ok"] else first_line(result["error"])


def measure_target(worker: Worker, arch: str, log) -> tuple[list[str], dict[str, str]]:
    """(native conversions, first error line per failing conversion) for one target."""
    compiles = 0

    def compiles_ok(conversions: list[str]) -> tuple[bool, str]:
        nonlocal compiles
        compiles += 1
        result = worker.compile({"ir": module(conversions), "arch": arch, "opt_level": 3})
        return result["ok"], result["error"]

    native, errors = [], {}
    ok, _ = compiles_ok(list(CONVERSIONS))
    if ok:
        native = list(CONVERSIONS)
    else:
        groups: dict[tuple, list[str]] = {}  # (op, narrow, rounding) -> its wide types and shapes
        for conversion in CONVERSIONS:
            op, _, narrow, _, *rounding = conversion.split(":")
            groups.setdefault((op, narrow, *rounding), []).append(conversion)
        for group in groups.values():
            ok, _ = compiles_ok(group)
            if ok:
                native += group
                continue
            for conversion in group:
                ok, error = compiles_ok([conversion])
                if ok:
                    native.append(conversion)
                else:
                    errors[conversion] = first_line(error)
    log(f"  {arch}: {len(native)}/{len(CONVERSIONS)} native ({compiles} compiles)")
    return [c for c in CONVERSIONS if c in native], errors


def measure_release(release: str, python: str, log) -> dict:
    targets = enum_targets(python)
    entry = {"targets": targets, "native": {}, "errors": {}, "unusable": {}}
    with Worker(python) as worker:
        for arch in sorted(set(targets.values()), key=lambda a: list(targets.values()).index(a)):
            why = unusable(worker, arch)
            if why is not None:
                entry["unusable"][arch] = why
                log(f"  {arch}: nothing compiles: {why}")
            native, errors = measure_target(worker, arch, log)
            entry["native"][arch] = native
            # one line per distinct error, naming the conversions that gave it
            by_error: dict[str, list[str]] = {}
            for conversion, error in errors.items():
                by_error.setdefault(error, []).append(conversion)
            entry["errors"][arch] = {e: cs for e, cs in by_error.items()}
    return entry


def verify_auto(release: str, python: str, entry: dict, log) -> dict[str, str]:
    """target -> "ok" or the error, compiling every conversion with `auto` in front."""
    results = {}
    with Worker(python) as worker:
        for arch in sorted(set(entry["targets"].values())):
            if arch in entry.get("unusable", {}):
                results[arch] = "unusable"
                continue
            r = worker.compile({"ir": module(list(CONVERSIONS)), "arch": arch, "opt_level": 3,
                                "workaround": auto_pipeline(arch)})
            results[arch] = "ok" if r["ok"] else first_line(r["error"])
            if not r["ok"]:
                log(f"  auto fails on {release} {arch}: {results[arch]}")
    return results


def dump(table: dict) -> str:
    """JSON with each list of strings on one line (the table stays a few hundred KB, diffable)."""
    text = json.dumps(table, indent=1)
    return re.sub(r"\[\s*((?:\"[^\"]*\",\s*)*\"[^\"]*\")\s*\]",
                  lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--venvs", default=str(VENVS), help="folder of venvs named by release")
    parser.add_argument("--releases", help="comma-separated (default: every venv with .ok in --venvs)")
    parser.add_argument("--skip-auto", action="store_true", help="measure only, do not verify auto")
    parser.add_argument("--auto-only", action="store_true", help="only verify auto against the table as it is")
    parser.add_argument("--table", default=str(TABLE_PATH), help="the JSON file to update (default: %(default)s)")
    args = parser.parse_args(argv)
    table_path = Path(args.table)
    venvs = Path(args.venvs).expanduser()
    releases = args.releases.split(",") if args.releases else sorted(
        (p.name for p in venvs.iterdir() if (p / ".ok").exists()), key=lambda r: tuple(map(int, r.split("."))))

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    from cute_lowering.repro.venvs import ensure_package

    for release in releases:  # the workers import our package there (the auto pipeline)
        ensure_package(str(venvs / release / "bin" / "python"), release)

    table = json.loads(table_path.read_text()) if table_path.exists() else {}
    table.setdefault("releases", {})
    if not args.auto_only:
        table["command"] = "python -m cute_lowering.measure_targets --releases " + ",".join(releases)
    table["conversions"] = list(CONVERSIONS)
    for release in [] if args.auto_only else releases:
        python = str(venvs / release / "bin" / "python")
        start = time.time()
        log(f"CuTeDSL {release}")
        table["releases"][release] = measure_release(release, python, log)
        table["releases"][release]["measured_seconds"] = round(time.time() - start)
    table["releases"] = dict(sorted(table["releases"].items(), key=lambda kv: tuple(map(int, kv[0].split(".")))))
    table_path.write_text(dump(table))
    if not args.skip_auto:
        for release in releases:
            python = str(venvs / release / "bin" / "python")
            table["releases"][release]["auto"] = verify_auto(release, python, table["releases"][release], log)
        table_path.write_text(dump(table))
    log(f"wrote {table_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
