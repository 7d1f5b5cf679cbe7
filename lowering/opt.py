"""`lowering-opt`: an mlir-opt for CuTeDSL IR with our passes registered.

    lowering-opt kernel.mlir --pass-pipeline='builtin.module(fptosi-to-ptx{rounding=auto})'

Reads a file or `-`, runs the pipeline, prints the IR. The input is either stage's module: a
traced one (`CUTE_DSL_KEEP=ir-debug`, or `CUTE_LOWERING_DUMP`'s `*.before.mlir`) for pre-stage
passes, or a lowered one (`CUTE_LOWERING_DUMP`'s `*.post.mlir`) for post-stage passes
(`--list-passes` says which is which; lowering/stages.py). Errors (input that is not
UTF-8 text, malformed IR, unknown pass or option, a failing verifier) print as
`file:line:col: error: ...` and exit 1; remarks from passes go to stderr and do not
change the exit code. `-o FILE` is written only when the whole run succeeds, and then
replaced in one step (`lowering/files.py`): a failed run leaves it as it was, even
when it is the input file.
"""

from __future__ import annotations

import argparse
import re
import sys

from cute_lowering.closed_pipe import quiet_on_closed_stdout, stdout_closed
from cute_lowering.diagnostics import Diagnostic, LoweringError, SourceBuffer, SourceLocation, from_mlir_error
from cute_lowering.files import STDIO, FileWriteError, read_text, write_text
from cute_lowering.pipeline import PIPELINE_BUFFER, Pipeline, PipelineResult

SPLIT_MARKER = re.compile(r"^// -----", re.MULTILINE)


def split_input(text: str, name: str, split: bool) -> list[SourceBuffer]:
    """The chunks between `// -----` lines, each knowing its first line in the file."""
    if not split:
        return [SourceBuffer(name, text)]
    chunks, start, line = [], 0, 1
    for marker in SPLIT_MARKER.finditer(text):
        chunks.append(SourceBuffer(name, text[start : marker.start()], line))
        line += text.count("\n", start, marker.start())
        end = text.find("\n", marker.end())
        start = len(text) if end < 0 else end + 1
        line += 1
    chunks.append(SourceBuffer(name, text[start:], line))
    return chunks


def print_statistics(results: list[PipelineResult], out) -> None:
    """Per-pass counts summed over all chunks, in mlir-opt's report layout."""
    rule = "===" + "-" * 73 + "==="
    print(rule, file=out)
    print("                         ... Pass statistics report ...", file=out)
    print(rule, file=out)
    order: list[str] = []
    totals: dict[str, dict[str, int]] = {}
    descriptions: dict[str, dict[str, str]] = {}
    for result in results:
        for report in result.passes:
            if report.name not in totals:
                order.append(report.name)
                totals[report.name] = {}
                descriptions[report.name] = report.descriptions
            for key, n in report.counts.items():
                totals[report.name][key] = totals[report.name].get(key, 0) + n
    for name in order:
        print(f"'{name}'", file=out)
        for key, description in descriptions[name].items():
            print(f"  (S) {totals[name].get(key, 0)} {key} - {description}", file=out)


STAGE_HEADINGS = {
    "pre": "Pre-stage passes (on the traced module, before CuTeDSL's pipeline):",
    "post": "Post-stage passes (on the LLVM/NVVM module CuTeDSL's cute-to-nvvm{llvm-only=true} leaves, before PTX):",
}


def list_passes(out) -> None:
    from cute_lowering.registry import STAGES, list_passes as registered

    for stage in STAGES:
        print(STAGE_HEADINGS[stage], file=out)
        for info in (p for p in registered() if p.stage == stage):
            print(f"{info.name}: {info.summary}", file=out)
            for option in info.options:
                print(f"    {option.describe()}", file=out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lowering-opt", description=__doc__.split("\n\n")[0])
    p.add_argument("input", nargs="?", default="-", help="input IR file, or - for standard input")
    p.add_argument("-p", "--pass-pipeline", default="", help="textual pipeline, e.g. builtin.module(fptosi-to-ptx)")
    p.add_argument("-o", dest="output", default="-", help="output file (default: standard output)")
    p.add_argument("--split-input-file", action="store_true", help="process each '// -----' chunk on its own")
    p.add_argument("--list-passes", action="store_true", help="list our passes by stage, with their options, then exit")
    p.add_argument("--statistics", action="store_true", help="print per-pass statistics to stderr")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after each pass to stderr")
    return p


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001  (last resort: a bug of ours, said plainly, no traceback)
        if stdout_closed(e):  # our reader went away (`| head -1`): quiet, as POSIX tools are
            raise
        print(f"lowering-opt: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.list_passes:
        list_passes(sys.stdout)
        return 0

    pipeline_source = SourceBuffer(PIPELINE_BUFFER, args.pass_pipeline)
    try:
        pipeline = Pipeline(args.pass_pipeline) if args.pass_pipeline.strip() else None
    except LoweringError as e:
        _report(e.diagnostics, pipeline_source)
        return 1

    try:
        name, text = read_text(args.input)
    except LoweringError as e:
        _report(e.diagnostics, None)
        return 1

    from cute_lowering.mlir import NestingTooDeep, ir, new_context, parse_module

    outputs, results, failed = [], [], False
    for chunk in split_input(text, name, args.split_input_file):
        with new_context() as context:
            try:
                module = parse_module(chunk.text, context)
            except ir.MLIRError as e:
                _report(from_mlir_error(e, chunk).diagnostics, chunk)
                failed = True
                continue
            except NestingTooDeep as e:
                where = SourceLocation(chunk.name, chunk.first_line + e.line - 1, e.col)
                _report([Diagnostic("error", str(e), where)], None)
                failed = True
                continue
            if pipeline is not None:
                try:
                    result = pipeline.run(module, chunk, print_ir_after_all=args.print_ir_after_all)
                except LoweringError as e:
                    _report(e.diagnostics, chunk)
                    failed = True
                    continue
                _report(result.diagnostics, chunk)
                results.append(result)
            outputs.append(str(module).rstrip("\n") + "\n")

    rendered = "// -----\n".join(outputs)
    # Standard output gets the chunks that succeeded, as mlir-opt prints them; a file
    # is only replaced by a complete result, never by part of one.
    if args.output == STDIO or not failed:
        try:
            write_text(args.output, rendered)
        except FileWriteError as e:
            _report([Diagnostic("error", str(e))], None)
            return 1
    if args.statistics:
        print_statistics(results, sys.stderr)
    return 1 if failed else 0


def _report(diagnostics: list[Diagnostic], source: SourceBuffer | None) -> None:
    for d in diagnostics:
        print(d.format(source), file=sys.stderr)
    sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
