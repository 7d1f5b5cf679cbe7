"""lowering-repro: reproducers of CuTeDSL compile failures, per version and target.

    lowering-repro list
    lowering-repro run [NAME...] [--arch sm_90a,sm_100a] [--opt-level N] [--json]
    lowering-repro matrix --versions 4.2.1,4.3.5,... [--write] [--cache-dir DIR] [-o reproducers/MATRIX.md]
    lowering-repro report NAME [--arch sm_90a] [--release 4.5.3] [-o FILE]
    lowering-repro reduce INPUT.mlir --error TEXT [--arch sm_90a] [-o OUTPUT.mlir]

Thin: compiles go through CuTeDSL's own pipeline string in a subprocess
(`lowering/repro/worker.py`, since an `LLVM ERROR` aborts the process), and the
workaround is one `cute_lowering.run_pipeline` call before it. No rewriting logic here.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from cute_lowering.closed_pipe import quiet_on_closed_stdout, stdout_closed
from cute_lowering.diagnostics import Diagnostic, LoweringError, SourceLocation
from cute_lowering.files import FileWriteError, check_writable, read_text, write_text
from cute_lowering.repro.cases import NOT_HERE, Case, load_cases
from cute_lowering.repro.runner import cutedsl_version, error_summary, release_python, run_cases

PROG = "lowering-repro"
ARGV_BUFFER = "<command-line>"


class UsageError(Exception):
    """The user's mistake: exit `status` (1; 2 for a release that is not one, as argparse's usage
    errors), located in the option's text (`option`, `text`, `column`) where one is given."""

    def __init__(self, message: str, column: int | None = None, text: str | None = None, option: str = "--arch",
                 status: int = 1):
        super().__init__(message)
        self.column, self.text, self.option, self.status = column, text, option, status


def parse_versions(text: str | None) -> list[str]:
    """'4.6.3,4.8.1' -> list; an entry that is not a release number is an error located in the text."""
    from cute_lowering.repro.venvs import ReleaseError, check_release

    versions, column = [], 1
    for part in (text or "").split(","):
        if part.strip():
            try:
                versions.append(check_release(part.strip()))
            except ReleaseError as e:
                raise UsageError(str(e), column + len(part) - len(part.lstrip()), text, "--versions", 2) from None
        column += len(part) + 1
    if not versions:
        raise UsageError("--versions needs at least one version, e.g. 4.8.1", status=2)
    return versions


def release_error(e, text: str) -> UsageError:
    """A `venvs.ReleaseError` as the user's (a release that does not exist, located in --versions)
    or, where the environment failed, said as such (exit 1)."""
    if not e.usage:
        return UsageError(str(e))
    entries = text.split(",")
    column = 1
    for part in entries:
        if part.strip() == e.release:
            return UsageError(str(e), column + len(part) - len(part.lstrip()), text, "--versions", 2)
        column += len(part) + 1
    return UsageError(str(e), status=2)


def parse_archs(text: str | None) -> list[str] | None:
    """'sm_90a,sm_100a' -> list; a bad entry is an error located in the option's text."""
    if text is None:
        return None
    from cute_lowering.targets import sm_version

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


def cmd_list(args) -> int:
    for case in load_cases().values():
        print(f"{case.name:36} {','.join(case.archs):22} {case.summary}")
    return 0


def cmd_run(args) -> int:
    cases = select(args.names)
    archs = parse_archs(args.arch)
    records = run_cases(cases, archs, args.opt_level)  # a host case runs on its own target, 'host'
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
        if r["status"] in ("changed", "not parsed", NOT_HERE):  # the whole error line, wrapped at word boundaries
            said = {"changed": "now fails with: ", "not parsed": "cannot parse the IR: ", NOT_HERE: ""}[r["status"]]
            print(textwrap.fill(said + error_summary(r["error"]), width=100, initial_indent="    ",
                                subsequent_indent="      ", break_long_words=False, break_on_hyphens=False))
    return 0


def cmd_matrix(args) -> int:
    from cute_lowering.repro.matrix import render_from_json, run_matrix

    if args.render_only:
        try:
            render_from_json(args.output, update_cases=not args.no_update)
        except OSError as e:
            raise UsageError(f"cannot read the measured data beside '{args.output}': {e.strerror}") from None
        print(f"wrote {args.output}")
        return 0
    from cute_lowering.repro.venvs import ReleaseError

    versions = parse_versions(args.versions)  # every entry checked before any venv is made
    try:
        return run_matrix(versions, args.cache_dir, args.output, write=args.write, update_cases=not args.no_update,
                          deps=args.deps, log=sys.stderr)
    except ReleaseError as e:
        raise release_error(e, args.versions) from None


def cmd_report(args) -> int:
    from cute_lowering.repro.report import NotReproducing, write_report

    case = select([args.name])[0]
    archs = case.targets(parse_archs(args.arch))
    python = None
    if args.release:
        python = release_python(args.release, args.cache_dir)
        if python is None:
            raise UsageError(f"no venv with nvidia-cutlass-dsl=={args.release} (run '{PROG} matrix --versions "
                             f"{args.release}' to create it)")
    try:
        check_writable(args.output)  # before compiling the case, not after
    except FileWriteError as e:
        raise UsageError(str(e)) from None
    try:
        text = write_report(case, archs[0], args.opt_level, python=python)
    except NotReproducing as e:
        raise UsageError(str(e)) from None
    try:
        write_text(args.output, text)  # a failed write leaves an existing file as it was
    except FileWriteError as e:
        raise UsageError(str(e)) from None
    if args.output != "-":
        print(f"wrote {args.output}")
    return 0


def cmd_reduce(args) -> int:
    from cute_lowering.repro.reduce import reduce_file

    archs = parse_archs(args.arch) or ["sm_90a"]
    name, text = read_text(args.input)  # LoweringError: unreadable, or not UTF-8 text
    try:
        check_writable(args.output)  # before minutes of reducing, not after
    except FileWriteError as e:
        raise UsageError(str(e)) from None
    from cute_lowering.repro.reduce import ReduceError

    try:
        result = reduce_file(text, args.error, archs[0], args.opt_level, log=sys.stderr, name=name)
    except ReduceError as e:
        raise UsageError(str(e)) from None
    try:
        write_text(args.output, result)
    except FileWriteError as e:
        raise UsageError(str(e)) from None
    if args.output != "-":
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
    m = sub.add_parser("matrix", help="run in a venv per CuTeDSL version; compare with, or merge into, the record")
    m.add_argument("--versions", help="comma-separated nvidia-cutlass-dsl releases, e.g. 4.6.3,4.8.1")
    m.add_argument("--write", action="store_true",
                   help="merge the measured cells into <output>.json, <output> and the cases' case.json (every "
                        "other recorded cell stays); without it nothing is written")
    m.add_argument("--render-only", action="store_true",
                   help="rewrite MATRIX.md and the cases from the recorded data (<output>.json), measuring nothing")
    m.add_argument("--cache-dir", default=None, help="venvs go here (default ~/.cache/cute-lowering/venvs)")
    m.add_argument("-o", dest="output", default="reproducers/MATRIX.md")
    m.add_argument("--no-update", action="store_true", help="with --write: leave the cases' case.json alone")
    m.add_argument("--deps", help="a folder put on PYTHONPATH in each release's venv with our package's own "
                                  "dependencies (numpy), where the venv has nvidia-cutlass-dsl alone")
    rep = sub.add_parser("report", help="a self-contained bug report (markdown)")
    rep.add_argument("name", metavar="NAME")
    rep.add_argument("--arch")
    rep.add_argument("--opt-level", type=int, default=3, choices=range(4))
    rep.add_argument("--release", help="run it with this nvidia-cutlass-dsl release's venv (see matrix)")
    rep.add_argument("--cache-dir", default=None, help="where the release venvs are (as for matrix)")
    rep.add_argument("-o", dest="output", default="-")
    red = sub.add_parser("reduce", help="shrink an IR file that fails with a given error text")
    red.add_argument("input", metavar="INPUT.mlir")
    red.add_argument("--error", required=True, help="text the compile error must keep containing")
    red.add_argument("--arch")
    red.add_argument("--opt-level", type=int, default=3, choices=range(4))
    red.add_argument("-o", dest="output", default="-")
    return p


COMMANDS = {"list": cmd_list, "run": cmd_run, "matrix": cmd_matrix, "report": cmd_report, "reduce": cmd_reduce}


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        return 130
    except LoweringError as e:  # located diagnostics about an input file
        for d in e.diagnostics:
            print(d.format() if d.location else f"{PROG}: {d.format()}", file=sys.stderr)
        return 1
    except UsageError as e:
        if e.text is not None:
            where = SourceLocation(ARGV_BUFFER, 1, e.column or 1)
            print(Diagnostic("error", f"{e} (in '{e.option} {e.text}')", where).format(), file=sys.stderr)
        else:
            print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.status
    except Exception as e:  # noqa: BLE001  (a bug of ours, said plainly, no traceback)
        if stdout_closed(e):  # our reader went away (`| head -1`): quiet, as POSIX tools are
            raise
        print(f"{PROG}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
