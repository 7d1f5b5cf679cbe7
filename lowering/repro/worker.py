"""Compile IR through the installed CuTeDSL's own pipeline, one job per line: the subprocess side.

Standalone on purpose: it imports nothing from `lowering` unless a job names a
workaround pipeline, so it also runs in a venv of an older CuTeDSL where our
package cannot import. Run as a script:

    python worker.py JOBS.json          # JOBS: [{"ir": TEXT, "arch": "sm_90a", "opt_level": 3,
                                        #          "workaround": PIPELINE or null,
                                        #          "stage": "gpu" (default) or "host"}, ...]
    python worker.py --pipeline sm_90a  # print the pipeline string cute.compile uses

A `host` job JIT-compiles `ir` (host IR with an `llvm.emit_c_interface` function) for
this machine's CPU, as MLIR's ExecutionEngine in the bundled bindings does, at the
job's opt level; it compiles, it does not run.

Each finished job prints one JSON line `{"index": i, "ok": bool, "error": TEXT}` and is
flushed at once: an `LLVM ERROR` aborts this process, and the parent then records the
job in flight as failed with what the process wrote to stderr, and restarts the rest.
"""

import importlib.metadata
import json
import os
import re
import sys
import tempfile

_PIPELINES: dict[tuple[str, int], str] = {}


class _Captured(Exception):
    def __init__(self, pipeline: str):
        self.pipeline = pipeline


def cutedsl_version() -> str:
    try:
        return importlib.metadata.version("nvidia-cutlass-dsl")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def captured_pipeline(arch: str, opt_level: int = 3) -> str:
    """The pipeline string `cute.compile` hands its Compiler, for `arch`/`opt_level`.

    Captured from a trivial kernel's compile (spying `Compiler.compile`), so it is the
    installed CuTeDSL's own string, whatever its version builds.
    """
    key = (arch, opt_level)
    if key in _PIPELINES:
        return _PIPELINES[key]
    os.environ["CUTE_DSL_ARCH"] = arch
    import cutlass
    import cutlass.cute as cute
    from cutlass.base_dsl.compiler import Compiler

    original = Compiler.compile

    def spy(self, module, pipeline, *args, **kwargs):
        raise _Captured(pipeline)

    @cute.kernel
    def _probe_kernel(x: cutlass.Int32):
        pass

    @cute.jit
    def _probe(x: cutlass.Int32):
        _probe_kernel(x).launch(grid=(1, 1, 1), block=(1, 1, 1))

    Compiler.compile = spy
    pipeline = None
    try:
        for options in (f"--opt-level {opt_level} --gpu-arch {arch}", None):
            try:
                if options:
                    cute.compile(_probe, cutlass.Int32(1), options=options)
                else:
                    cute.compile(_probe, cutlass.Int32(1))
            except Exception as e:  # noqa: BLE001  (CuTeDSL may wrap what the spy raises)
                cause = e
                while cause is not None and not isinstance(cause, _Captured):
                    cause = cause.__cause__ or cause.__context__
                if cause is not None:
                    pipeline = cause.pipeline
                    break
                if options is None:
                    raise
    finally:
        Compiler.compile = original
    if pipeline is None:
        raise RuntimeError("cute.compile never reached its Compiler")
    # Older releases ignore --opt-level/--gpu-arch in `options`: set them in the string.
    pipeline = re.sub(r"opt-level=\d+", f"opt-level={opt_level}", pipeline)
    pipeline = re.sub(r"(cubin-chip|chip|sm-arch|gpu-arch)=sm_\w+", rf"\1={arch}", pipeline)
    pipeline = re.sub(r"\s*dump-ptx-path=\S+", "", pipeline)
    pipeline = re.sub(r"\s+", " ", pipeline)
    _PIPELINES[key] = pipeline
    return pipeline


HOST_LOWERING = "builtin.module(convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts)"


def jit_host_text(text: str, opt_level: int = 3) -> str | None:
    """None if `text` JIT-compiles for the host CPU, else the error text (an abort ends the process)."""
    import cutlass  # noqa: F401  (registers the dialects)
    from cutlass._mlir import ir, passmanager
    from cutlass._mlir.execution_engine import ExecutionEngine

    with ir.Context():
        try:
            module = ir.Module.parse(text)
        except Exception as e:  # noqa: BLE001
            return f"parse error: {e}"
        entries = [op.sym_name.value for op in module.body.operations
                   if "llvm.emit_c_interface" in op.attributes and "sym_name" in op.attributes]
        try:
            passmanager.PassManager.parse(HOST_LOWERING).run(module.operation)
            engine = ExecutionEngine(module, opt_level=opt_level)
            for name in entries:  # the JIT compiles lazily: at the first lookup
                engine.lookup(name)
        except Exception as e:  # noqa: BLE001
            return str(e)
    return None


def compile_job(job: dict) -> str | None:
    """None if the job's IR compiles (for its target or, for a host job, this CPU), else the error."""
    if job.get("stage", "gpu") == "host":
        return jit_host_text(job["ir"], job.get("opt_level", 3))
    return compile_text(job["ir"], job["arch"], job.get("opt_level", 3), job.get("workaround"))


def compile_text(text: str, arch: str, opt_level: int = 3, workaround: str | None = None) -> str | None:
    """None if `text` compiles for `arch`, else the compiler's error text."""
    pipeline = captured_pipeline(arch, opt_level)
    from cutlass._mlir import ir, passmanager

    with ir.Context():
        try:
            module = ir.Module.parse(text)
        except Exception as e:  # noqa: BLE001
            return f"parse error: {e}"
        if workaround:
            # not `from cute_lowering... import`: older CuTeDSL's AST preprocessor imports every
            # module named in this file when it traces the probe kernel
            pipeline_module = importlib.import_module("cute_lowering.pipeline")
            diagnostics = importlib.import_module("cute_lowering.diagnostics")
            try:
                pipeline_module.run_pipeline(module, workaround)
            except diagnostics.LoweringError as e:
                return "workaround pipeline failed: " + "; ".join(d.format() for d in e.diagnostics)
            except Exception as e:  # noqa: BLE001  (e.g. bindings too old for our passes: say so, keep going)
                return f"workaround pipeline failed: {type(e).__name__}: {' '.join(str(e).split())}"
        with tempfile.TemporaryDirectory():
            try:
                passmanager.PassManager.parse(pipeline).run(module.operation)
            except Exception as e:  # noqa: BLE001  (MLIRError, RuntimeError: the text is what counts)
                return str(e)
    return None


def main(argv: list[str]) -> int:
    if argv[:1] == ["--pipeline"]:
        print(captured_pipeline(argv[1], int(argv[2]) if len(argv) > 2 else 3))
        return 0
    if argv[:1] == ["--version"]:
        print(cutedsl_version())
        return 0
    if argv[:1] == ["--serve"]:  # one JSON job per stdin line, one answer per stdout line
        for line in sys.stdin:
            job = json.loads(line)
            error = compile_job(job)
            print(json.dumps({"ok": error is None, "error": error or ""}), flush=True)
        return 0
    jobs = json.load(open(argv[0], encoding="utf-8"))
    start = int(argv[1]) if len(argv) > 1 else 0
    for index in range(start, len(jobs)):
        job = jobs[index]
        print(json.dumps({"index": index, "started": True}), flush=True)
        error = compile_job(job)
        print(json.dumps({"index": index, "ok": error is None, "error": error or ""}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
