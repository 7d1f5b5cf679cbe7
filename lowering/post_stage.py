"""The post stage inside `cute.compile`: CuTeDSL's pipeline cut at the LLVM/NVVM module.

CuTeDSL compiles a traced module with one pipeline, `builtin.module(cute-to-nvvm{<options>})`
(a registered pipeline that expands to 45 passes on 4.8.1, 43 on 4.6.2). For a module the hook
stamped with a post pipeline (lowering/hook.py), this module turns that one call into three:

    compile(module, "builtin.module(cute-to-nvvm{<options> llvm-only=true})")   CuTeDSL's conversion, ends
                                                                                at the LLVM/NVVM dialects
    <the stamped post pipeline>                                                 ours (lowering/pipeline.py)
    compile(module, "builtin.module(cuda-to-binary{...},cuda-to-llvm{cuda-abi=lp64},
                                    reconcile-unrealized-casts,cuda-error-handling)")  the rest, with the
                                                                                compile's own options

The rest is computed, not written down: the expansion of the full pipeline minus that of the
`llvm-only=true` one (`str(PassManager.parse(...))`), so it carries the compile's own options
(opt-level, ptxas options, the PTX/cubin dump paths). Nothing is split for a module without a
stamp: those compiles go to CuTeDSL's own `compile` with the same arguments.

This is the one place that touches a private CuTeDSL entry: `dsl.compiler_provider.compile`,
replaced on the instance (so that `compile_and_jit`, which calls `self.compile`, goes through it
too). Per release, measured (bench/RESULTS.md, "A post-lowering stage"):

- its signature: 4.6.2 `compile(module, pipeline, arch="", remark_filter="", ..., enable_verifier=False)`
  returns None; 4.8.1 `compile(module, pipeline, arch="", enable_debug_info=False,
  enable_verifier=False, *, remark_filter="", ...)` returns the module. Both take the module and
  the pipeline first: the wrapper replaces the pipeline, passes every other argument through
  unchanged, and returns what CuTeDSL's last call returns.
- the expansion: 4.8.1 45 passes, `llvm-only=true` 41 (its first 41); 4.6.2 43 and 39. The rest
  is the same four passes on both. A release whose expansion is not of that shape (the head not
  a prefix of the full pipeline, the rest not starting at `cuda-to-binary`, or not parsing back)
  is refused with `PostStageUnsupported`, naming the release and what differs.
- `_post_compile_hook` (one slot; TVM-FFI attaches its ABI function there): it expects the
  finished module, so it is kept out of the first call and runs after the last one.

Cache keys: the stamp (`cute_lowering.post_pipeline`, a string attribute on the traced module)
is set in the trace-finalize hook, before CuTeDSL hashes the module for its in-memory and
on-disk caches, so a build with post passes and one without never share an entry. The wrapper
removes the stamp before compiling.

Dumps: with `CUTE_LOWERING_DUMP=<dir>` the hook also stamps `cute_lowering.post_dump` (the
path prefix) and the wrapper writes `<dir>/<function>.<arch>.post.mlir`, the module our post
passes receive (what `lowering-opt` reads: `lowering-opt f.post.mlir -p 'builtin.module(...)'`),
and, when post passes ran, `<...>.post-after.mlir`.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass

STAMP = "cute_lowering.post_pipeline"
DUMP_STAMP = "cute_lowering.post_dump"
HEAD_OPTION = "llvm-only=true"
REST_STARTS_AT = "cuda-to-binary"  # where PTX is generated: the post stage must come before it
_WRAPPED = "_cute_lowering_post_stage"


class PostStageUnsupported(ValueError):
    """The installed CuTeDSL's pipeline cannot be cut where the post stage needs it."""


@dataclass(frozen=True)
class Split:
    head: str  # CuTeDSL's pipeline with `llvm-only=true`
    rest: str  # what the full pipeline runs after it


def _release() -> str:
    from cute_lowering.targets import cutedsl_release

    return cutedsl_release()


def _expanded(text: str) -> list[str]:
    """The top-level passes MLIR runs for `text` (registered pipelines expanded)."""
    from cute_lowering.mlir import ir, passmanager
    from cute_lowering.pipeline import parse_pipeline

    with ir.Context():
        printed = str(passmanager.PassManager.parse(text))
    return [e.text for e in parse_pipeline(printed)]


def _normal(text: str) -> str:
    # MLIR prints a string option with spaces as `{ -v -O3}` and parses it back as `{-v -O3}`
    return re.sub(r"\{\s+", "{", text)


@functools.lru_cache(maxsize=32)
def split(pipeline: str) -> Split:
    """Cut CuTeDSL's compile pipeline for the post stage, or raise `PostStageUnsupported`."""
    from cute_lowering.diagnostics import LoweringError
    from cute_lowering.pipeline import parse_pipeline

    release = _release()

    def refuse(why: str) -> PostStageUnsupported:
        return PostStageUnsupported(
            f"post-stage passes are not supported with CuTeDSL {release}: {why} "
            f"(measured on 4.6.2 and 4.8.1: lowering/post_stage.py). Run without post passes "
            f"or with a CuTeDSL release where the split works."
        )

    try:
        elements = parse_pipeline(pipeline)
    except LoweringError as e:
        raise refuse(f"its compile pipeline does not parse ({e}): {pipeline}") from None
    if not elements or elements[-1].name != "cute-to-nvvm" or elements[-1].children is not None:
        raise refuse(f"its compile pipeline does not end in cute-to-nvvm{{...}}: {pipeline}")
    if any(e.name == "cute-to-nvvm" for e in elements[:-1]):
        raise refuse(f"its compile pipeline runs cute-to-nvvm twice: {pipeline}")
    last = elements[-1]
    if "llvm-only" in (last.options or ""):
        raise refuse(f"its compile pipeline already sets llvm-only: {pipeline}")
    options = f"{last.options} {HEAD_OPTION}" if last.options else HEAD_OPTION
    head = "builtin.module(" + ",".join([e.text for e in elements[:-1]] + [f"cute-to-nvvm{{{options}}}"]) + ")"
    try:
        full, cut = _expanded(pipeline), _expanded(head)
    except Exception as e:  # noqa: BLE001  (an unknown option on this release: MLIR says which)
        raise refuse(f"cute-to-nvvm{{{HEAD_OPTION}}} does not parse: {str(e).strip()}") from None
    if full[: len(cut)] != cut:
        raise refuse(f"the llvm-only expansion ({len(cut)} passes) is not the start of the full one ({len(full)})")
    tail = full[len(cut) :]
    if not tail or not tail[0].startswith(REST_STARTS_AT):
        raise refuse(f"the passes after llvm-only do not start with {REST_STARTS_AT}: {tail}")
    rest = "builtin.module(" + ",".join(tail) + ")"
    try:
        if _normal(",".join(_expanded(rest))) != _normal(",".join(tail)):
            raise refuse(f"the passes after llvm-only do not print back as they parse: {rest}")
    except PostStageUnsupported:
        raise
    except Exception as e:  # noqa: BLE001
        raise refuse(f"the passes after llvm-only do not parse back ({str(e).strip()}): {rest}") from None
    return Split(head, rest)


def check_supported() -> None:
    """Raise `PostStageUnsupported` if this CuTeDSL's default compile pipeline cannot be cut."""
    from cute_lowering.cutedsl import pipeline_string

    split(pipeline_string("sm_90a"))


# --- in a compile ---------------------------------------------------------------------
def stamp(module, post_pipeline: str | None, dump_prefix: str | None) -> None:
    """Record on the traced module what its compile must do in the post stage (hashed by CuTeDSL)."""
    from cute_lowering.mlir import ir

    with module.context:
        if post_pipeline is not None:
            module.operation.attributes[STAMP] = ir.StringAttr.get(post_pipeline)
        if dump_prefix is not None:
            module.operation.attributes[DUMP_STAMP] = ir.StringAttr.get(dump_prefix)


def _take_stamps(module) -> tuple[str | None, str | None]:
    attributes = module.operation.attributes
    found = []
    for name in (STAMP, DUMP_STAMP):
        if name in attributes:
            found.append(str(attributes[name].value))
            del attributes[name]
        else:
            found.append(None)
    return found[0], found[1]


def ensure_wrapped(compiler) -> None:
    """Route `compiler.compile` (a CuTeDSL `Compiler`) through the split, once."""
    if getattr(compiler, _WRAPPED, False):
        return
    own = compiler.__dict__.get("compile")  # an instance-level compile someone set before us

    def original(*args, **kwargs):
        # looked up at each call, so a later patch of the class (a test's spy) is seen too
        return own(*args, **kwargs) if own is not None else type(compiler).compile(compiler, *args, **kwargs)

    @functools.wraps(type(compiler).compile)
    def compile(module, pipeline, *args, **kwargs):
        post, dump = _take_stamps(module)
        if post is None and dump is None:
            return original(module, pipeline, *args, **kwargs)
        if "cute-to-nvvm" not in pipeline:
            # CuTeDSL's own side compiles (KEEP=ir runs canonicalize,cse on a clone): not the build
            return original(module, pipeline, *args, **kwargs)
        return _compile_split(compiler, original, module, pipeline, post, dump, args, kwargs)

    compiler.compile = compile
    setattr(compiler, _WRAPPED, True)


def _compile_split(compiler, original, module, pipeline, post, dump, args, kwargs):
    from cute_lowering import hook

    try:
        parts = split(pipeline)
    except PostStageUnsupported as e:
        raise hook.PreloweringError([hook.Diagnostic("error", str(e))]) from None
    finishing = compiler._post_compile_hook  # TVM-FFI's: for the finished module only
    compiler._post_compile_hook = None
    try:
        original(module, parts.head, *args, **kwargs)
    finally:
        compiler._post_compile_hook = finishing
    report = hook.take_awaiting_post()
    if dump is not None:
        hook.write_dump(f"{dump}.post.mlir", module)
    if post is not None:
        start = time.perf_counter()
        hook.run_post(post, module, report)
        if dump is not None:
            hook.write_dump(f"{dump}.post-after.mlir", module)
        if report is not None:
            report.seconds += time.perf_counter() - start
    return original(module, parts.rest, *args, **kwargs)
