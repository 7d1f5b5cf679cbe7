"""lowering-repro: reproducers of CuTeDSL compile failures, per version and target.

    lowering-repro list
    lowering-repro run [NAME...] [--arch sm_90a,sm_100a] [--opt-level N] [--json]
    lowering-repro matrix --versions 4.2.1,4.3.5,... [--cache-dir DIR] [-o reproducers/MATRIX.md]
    lowering-repro report NAME [--arch sm_90a] [-o FILE]
    lowering-repro reduce INPUT.mlir --error TEXT [--arch sm_90a] [-o OUTPUT.mlir]

Thin: compiles go through CuTeDSL's own pipeline string in a subprocess
(`lowering/repro/worker.py`, since an `LLVM ERROR` aborts the process), and the
workaround is one `lowering.run_pipeline` call before it. No rewriting logic here.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys

from lowering.diagnostics import Diagnostic, SourceLocation
from lowering.repro.cases import Case, load_cases

PROG = "lowering-repro"
ARGV_BUFFER = "<command-line>"


class UsageError(Exception):
    def __init__(self, message: str, column: int | None = None, text: str | None = None):
        super().__init__(message)
        self.column, self.text = column, text


def cutedsl_version() -> str:
    try:
        return importlib.metadata.version("nvidia-cutlass-dsl")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def parse_archs(text: str | None) -> list[str] | None:
    """'sm_90a,sm_100a' -> list; a bad entry is an error located in the option's text."""
    if text is None:
        return None
    from lowering.targets import sm_version

    archs, column = [], 1
    for part in text.split(","):
        try:
            sm_version(part)
        except ValueError as e:
            raise UsageError(str(e), column, text) from None
        archs.append(part.strip())
        column += len(part) + 1
    return archs


def select(names: list[str]) -> list[Case]:
    cases = load_cases()
    unknown = [n for n in names if n not in cases]
    if unknown:
        raise UsageError(f"no reproducer named '{unknown[0]}' (see '{PROG} list')")
    return [cases[n] for n in names] if names else list(cases.values())


def run_cases(cases: list[Case], archs: list[str] | None, opt_level: int = 3, python: str | None = None,
              workaround: bool = True) -> list[dict]:
    """One record per (case, arch): status and workaround, as `run --json` prints them."""
    from lowering.repro.runner import run_jobs

    plan, jobs = [], []
    for case in cases:
        for arch in archs or case.archs:
            plan.append((case, arch))
            jobs.append({"ir": case.ir, "arch": arch, "opt_level": opt_level})
            if workaround and case.workaround:
                jobs.append({"ir": case.ir, "arch": arch, "opt_level": opt_level, "workaround": case.workaround_for(arch)})
    results = iter(run_jobs(jobs, python=python))
    records = []
    for case, arch in plan:
        plain = next(results)
        if not case.workaround:
            wa = "none"
        elif not workaround:
            wa = "not measured"
        else:
            wa = "ok" if next(results)["ok"] else "fails"
        records.append({
            "name": case.name,
            "arch": arch,
            "opt_level": opt_level,
            "status": case.classify(arch, plain["ok"], plain["error"]),
            "workaround": wa,
            "workaround_pipeline": case.workaround_for(arch),
            "expected_error": case.error_for(arch),
            "error": plain["error"],
        })
    return records


def _first_error_line(text: str) -> str:
    for line in text.splitlines():
        if "error" in line.lower() and "Failure while executing" not in line:
            return line.strip()[:160]
    return text.strip().splitlines()[0][:160] if text.strip() else ""


def cmd_list(args) -> int:
    for case in load_cases().values():
        print(f"{case.name:36} {','.join(case.archs):22} {case.summary}")
    return 0


def cmd_run(args) -> int:
    cases = select(args.names)
    archs = parse_archs(args.arch)
    records = run_cases(cases, archs, args.opt_level)
    version = cutedsl_version()
    if args.json:
        for r in records:
            r["cutedsl"] = version
        print(json.dumps(records, indent=1))
        return 0
    print(f"CuTeDSL {version}, opt-level {args.opt_level}")
    print(f"{'case':36} {'arch':8} {'status':11} workaround")
    for r in records:
        print(f"{r['name']:36} {r['arch']:8} {r['status']:11} {r['workaround']}")
        if r["status"] == "changed":
            print(f"    now fails with: {_first_error_line(r['error'])}")
    return 0


def cmd_matrix(args) -> int:
    from lowering.repro.matrix import run_matrix

    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    if not versions:
        raise UsageError("--versions needs at least one version, e.g. 4.8.1")
    run_matrix(versions, args.cache_dir, args.output, update_cases=not args.no_update, log=sys.stderr)
    print(f"wrote {args.output}")
    return 0


def cmd_report(args) -> int:
    from lowering.repro.report import write_report

    case = select([args.name])[0]
    archs = parse_archs(args.arch) or case.archs[:1]
    text = write_report(case, archs[0], args.opt_level)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.output}")
    return 0


def cmd_reduce(args) -> int:
    from lowering.repro.reduce import reduce_file

    archs = parse_archs(args.arch) or ["sm_90a"]
    try:
        text = open(args.input, encoding="utf-8").read()
    except OSError as e:
        raise UsageError(f"cannot read '{args.input}': {e.strerror}") from None
    from lowering.repro.reduce import ReduceError

    try:
        result = reduce_file(text, args.error, archs[0], args.opt_level, log=sys.stderr)
    except ReduceError as e:
        raise UsageError(str(e)) from None
    if args.output == "-":
        sys.stdout.write(result)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(result)
        print(f"wrote {args.output} ({len(result.splitlines())} lines)", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the reproducers")
    r = sub.add_parser("run", help="status of each reproducer with the installed CuTeDSL")
    r.add_argument("names", nargs="*", metavar="NAME")
    r.add_argument("--arch", help="comma-separated targets (default: each case's own)")
    r.add_argument("--opt-level", type=int, default=3, choices=range(4))
    r.add_argument("--json", action="store_true", help="a JSON list of {name, arch, status, workaround, ...}")
    m = sub.add_parser("matrix", help="run in a venv per CuTeDSL version, write a markdown table")
    m.add_argument("--versions", required=True)
    m.add_argument("--cache-dir", default=None, help="venvs go here (default ~/.cache/cute-lowering/venvs)")
    m.add_argument("-o", dest="output", default="reproducers/MATRIX.md")
    m.add_argument("--no-update", action="store_true", help="leave the cases' recorded statuses alone")
    rep = sub.add_parser("report", help="a self-contained bug report (markdown)")
    rep.add_argument("name", metavar="NAME")
    rep.add_argument("--arch")
    rep.add_argument("--opt-level", type=int, default=3, choices=range(4))
    rep.add_argument("-o", dest="output", default="-")
    red = sub.add_parser("reduce", help="shrink an IR file that fails with a given error text")
    red.add_argument("input", metavar="INPUT.mlir")
    red.add_argument("--error", required=True, help="text the compile error must keep containing")
    red.add_argument("--arch")
    red.add_argument("--opt-level", type=int, default=3, choices=range(4))
    red.add_argument("-o", dest="output", default="-")
    return p


COMMANDS = {"list": cmd_list, "run": cmd_run, "matrix": cmd_matrix, "report": cmd_report, "reduce": cmd_reduce}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        return 130
    except UsageError as e:
        if e.text is not None:
            where = SourceLocation(ARGV_BUFFER, 1, e.column or 1)
            print(Diagnostic("error", f"{e} (in '--arch {e.text}')", where).format(), file=sys.stderr)
        else:
            print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001  (a bug of ours, said plainly, no traceback)
        print(f"{PROG}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
