"""Run our passes inside CuTeDSL builds: pre passes on the traced module, post passes on the lowered one.

    import cute_lowering

    with cute_lowering.prelowering():             # pipeline="auto": what each target needs
        compiled = cute.compile(kernel, *args)

    @cute_lowering.prelowering("builtin.module(fptosi-to-ptx,bitcast-to-ptx)")
    def build(): ...

    cute_lowering.install()                      # process-wide; cute_lowering.uninstall() undoes it

Built on CuTeDSL's official trace-finalize hook (`BaseDSL.register_trace_finalize_hook`):
it is called after tracing and *before* the module is hashed for CuTeDSL's in-memory
and on-disk caches, so the cache keys on the rewritten IR. A kernel whose IR our
passes change therefore never meets its unrewritten compile in either cache, and one
they leave unchanged is the same program either way. One dispatcher is registered
once per CuTeDSL DSL singleton; which pipeline it runs (innermost `prelowering`
first, then `install`) is our state, so scoping needs no private CuTeDSL API.

Post-stage passes (lowering/stages.py) cannot run here: the hook stamps them on the traced
module (so CuTeDSL's caches key on them too) and `lowering/post_stage.py` runs them inside
CuTeDSL's compile, between `cute-to-nvvm{llvm-only=true}` and PTX generation.

`auto` is derived per compile from the compile's own arch and `lowering/targets.py`.
Each compile leaves a `PreloweringReport` (`cute_lowering.last_report()`), logs a summary
on the `lowering` logger, and, with `CUTE_LOWERING_DUMP=<dir>`, writes the IR before
and after our passes (and `<function>.<arch>.post.mlir`, the lowered module the post stage
receives: lowering/post_stage.py).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import re
import time
from dataclasses import dataclass, field

from cute_lowering.diagnostics import CheckFailed, Diagnostic, LoweringError, SourceBuffer
from cute_lowering.pipeline import Pipeline, PipelineResult

log = logging.getLogger("cute_lowering")

ENV_PIPELINE = "CUTE_LOWERING_PIPELINE"
ENV_DUMP = "CUTE_LOWERING_DUMP"
AUTO = "auto"


def auto_pipeline(arch: str) -> str:
    """What `arch` needs with the installed CuTeDSL release; an unknown `arch` is an error.

    - `ptx-float-operands` everywhere: the `n`-constraint bug is in the lowering,
      whatever the target.
    - `truncf-to-select`/`extf-to-select` with the arch: FP4/FP8/E8M0 conversions that
      (release, target) cannot lower natively are rewritten (`lowering/targets.py`, measured
      per release); the others stay on the hardware path.
    The float-to-int and bitcast rewrites are not included: CuTeDSL compiles those itself
    on every target and release of the supported range (reproducers/MATRIX.md); ask for
    them explicitly.
    """
    from cute_lowering.targets import check_target

    check_target(arch)
    return (
        "builtin.module(ptx-float-operands,"
        f"truncf-to-select{{arch={arch}}},extf-to-select{{arch={arch}}})"
    )


class PreloweringError(LoweringError):
    """Our passes failed on a traced CuTeDSL module; the message says which pass, op and where."""


@dataclass
class PassTiming:
    name: str
    counts: dict[str, int]
    seconds: float
    stage: str = "pre"


@dataclass
class PreloweringReport:
    """What our pipeline did to one traced CuTeDSL function."""

    function: str
    arch: str
    pipeline: str
    passes: list[PassTiming] = field(default_factory=list)
    remarks: list[Diagnostic] = field(default_factory=list)
    seconds: float = 0.0  # everything in the hook: parse of the pipeline, passes, verifier, dumps
    post_pipeline: str | None = None  # the post stage's part of `pipeline`, run inside the compile
    # whether the compile after this trace ran `post_pipeline` (its passes are then in `passes`).
    # False after the call returns: CuTeDSL served the build from a cache (its in-memory one, or
    # the file cache under CUTE_DSL_CACHE_DIR, which lasts across processes); the binary it loaded
    # is still the one built with this post pipeline, since the pipeline is part of the cache key.
    post_ran: bool = False

    @property
    def rewritten(self) -> int:
        return sum(p.counts.get("rewritten", 0) for p in self.passes)

    def summary(self) -> str:
        per_pass = ", ".join(
            f"{p.name}{' [post]' if p.stage == 'post' else ''}: " + (" ".join(f"{k}={v}" for k, v in p.counts.items() if v) or "nothing to do")
            for p in self.passes
        )
        return f"{self.function} [{self.arch}] {self.seconds * 1e3:.1f} ms; {per_pass or 'no passes'}"


# --- which pipeline applies --------------------------------------------------------
_installed: str | None = None
_scoped: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("lowering_prelowering", default=())
# check passes asked for by enclosing `prelowering(check=...)`: they run in front of whatever
# pipeline applies, an inner `prelowering(pipeline)` (a library's own) included
_scoped_checks: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("lowering_checks", default=())
# post-stage pipelines asked for by enclosing `prelowering(post=...)`: appended to whatever
# pipeline applies, like the checks (a library's own inner `prelowering(pipeline)` included)
_scoped_posts: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("lowering_posts", default=())
_reports: list[PreloweringReport] = []
_MAX_REPORTS = 256
# the lists of enclosing `recorded_reports()` blocks: each gets every report finished inside it
_recorders: list[list[PreloweringReport]] = []


def active_pipeline() -> str | None:
    """The pipeline the next CuTeDSL compile in this context would run, or None."""
    scoped = _scoped.get()
    return scoped[-1] if scoped else _installed


def install(pipeline: str = AUTO) -> None:
    """Run `pipeline` in every CuTeDSL compile of this process, until `uninstall()`."""
    global _installed
    _check(pipeline)
    _ensure_registered()
    _installed = pipeline


def uninstall() -> None:
    global _installed
    _installed = None


def install_from_env() -> str | None:
    """`install(os.environ["CUTE_LOWERING_PIPELINE"])` if it is set; returns what was installed."""
    pipeline = os.environ.get(ENV_PIPELINE, "").strip()
    if not pipeline:
        return None
    install(pipeline)
    return pipeline


class prelowering(contextlib.ContextDecorator):
    """Context manager and decorator: CuTeDSL compiles inside run `pipeline` first.

    `check="collectives"` runs `check-collectives` before it (`"collectives-warn"`: its
    mode=warn; `"collectives-strict"`: a "may diverge" warning fails too), in every compile inside, also under an inner `prelowering(pipeline)`
    (kernels/fmha.py and nvfp4.py set their own): a compile whose kernel has a divergent
    collective raises `PreloweringError` with the located errors instead of producing a
    cubin. `pipeline=None` with a check: the check alone, the pipeline left to whatever
    applies. Per-op lines need CuTeDSL's line info (`CUTE_DSL_LINEINFO=1`). The pipeline
    form `"builtin.module(check-collectives,auto)"` works too (`auto` as an element).

    `post="builtin.module(<post-stage passes>)"` runs those passes on the lowered module of every
    compile inside (lowering/post_stage.py), after the post passes of whatever pipeline applies,
    so also under an inner `prelowering(pipeline)`; post passes may also be written in `pipeline`
    itself, after the pre ones (lowering/stages.py).
    """

    def __init__(self, pipeline: str | None = AUTO, check: str | None = None, post: str | None = None):
        if check is not None and check not in CHECKS:
            raise ValueError(f"check must be one of {', '.join(CHECKS)}, not {check!r}")
        if pipeline is not None:
            _check(pipeline)
        if post is not None:
            _check_post(post)
        self.pipeline = pipeline
        self.check = CHECKS[check] if check is not None else None
        self.post = post
        self._tokens: list[tuple] = []

    def __enter__(self) -> "prelowering":
        _ensure_registered()
        pipeline = _scoped.set(_scoped.get() + (self.pipeline,)) if self.pipeline is not None else None
        checks = _scoped_checks.set(_scoped_checks.get() + (self.check,)) if self.check is not None else None
        posts = _scoped_posts.set(_scoped_posts.get() + (self.post,)) if self.post is not None else None
        self._tokens.append((pipeline, checks, posts))
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        pipeline, checks, posts = self._tokens.pop()
        if posts is not None:
            _scoped_posts.reset(posts)
        if checks is not None:
            _scoped_checks.reset(checks)
        if pipeline is not None:
            _scoped.reset(pipeline)
        ours = _prelowering_error_in(exc)
        if ours is not None and ours is not exc:
            # CuTeDSL < 4.8 wraps what a trace-finalize hook raises in a DSLRuntimeError that
            # calls it "a bug in the DSL"; ours says whose the failure is, so it is what surfaces.
            raise ours from None


def _prelowering_error_in(exc: BaseException | None) -> "PreloweringError | None":
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, PreloweringError):
            return exc
        seen.add(id(exc))
        exc = getattr(exc, "cause", None) or exc.__cause__ or exc.__context__
    return None


def last_report() -> PreloweringReport | None:
    """The report of the most recent compile our pipeline ran in (this process)."""
    return _reports[-1] if _reports else None


def reports() -> list[PreloweringReport]:
    """Reports of the recent compiles (at most 256), oldest first."""
    return list(_reports)


@contextlib.contextmanager
def recorded_reports():
    """`with recorded_reports() as got:` -- `got` is the list of the reports of every compile
    finished inside the block, oldest first, however many. (Counting `reports()` before and
    after does not work once 256 are kept: the list stops growing.) A compile served from one of
    CuTeDSL's caches runs no pipeline and leaves no report."""
    got: list[PreloweringReport] = []
    _recorders.append(got)
    try:
        yield got
    finally:  # by identity: list.remove compares by value, and two recorders may hold the same reports
        del _recorders[next(i for i, r in enumerate(_recorders) if r is got)]


# --- the dispatcher CuTeDSL calls --------------------------------------------------
def _check(pipeline: str) -> None:
    """Reject a malformed pipeline now, not in the middle of a compile: a text that does not
    parse, pre passes after post ones, or post passes with a CuTeDSL whose pipeline cannot be cut."""
    if pipeline == AUTO:
        return
    text = resolve(pipeline, "sm_90a")  # any known arch: this checks the text
    _parsed(text)
    if _staged(text).post is not None:
        from cute_lowering.post_stage import PostStageUnsupported, check_supported

        try:
            check_supported()
        except PostStageUnsupported as e:
            raise LoweringError([Diagnostic("error", str(e))]) from None


def _check_post(post: str) -> None:
    """`prelowering(post=...)` takes post-stage passes only (MLIR's own may follow them)."""
    _check(post)
    if _staged(post).pre is not None:
        raise LoweringError(
            [Diagnostic("error", f"post={post!r}: starts with a pass that is not a post-stage pass "
                        "(lowering-opt --list-passes lists them by stage)")]
        )


def with_posts(pipeline: str | None, posts: tuple[str, ...]) -> str:
    """`pipeline` (expanded text, or None) with the elements of `posts` appended; a pass of ours
    already there (the same text) is not run twice, MLIR's own passes always are."""
    from cute_lowering.pipeline import parse_pipeline
    from cute_lowering.registry import get_pass

    elements = [e.text for e in parse_pipeline(pipeline)] if pipeline else []
    for post in posts:
        elements += [e.text for e in parse_pipeline(post) if not (get_pass(e.name) and e.text in elements)]
    return "builtin.module(" + ",".join(elements) + ")"


@functools.lru_cache(maxsize=64)
def _staged(text: str):
    from cute_lowering.stages import split_stages

    return split_stages(text)


CHECKS = {
    "collectives": "check-collectives",
    "collectives-warn": "check-collectives{mode=warn}",
    "collectives-strict": "check-collectives{strict=true}",  # a "may diverge" warning fails too (CI gates)
}


def with_checks(pipeline: str | None, checks: tuple[str, ...]) -> str:
    """The check passes in front of `pipeline` (an expanded pipeline text, or None: none)."""
    from cute_lowering.pipeline import parse_pipeline

    rest = [e.text for e in parse_pipeline(pipeline)] if pipeline else []
    found = [c for c in dict.fromkeys(checks) if c not in rest]
    return "builtin.module(" + ",".join(found + rest) + ")"


def resolve(pipeline: str, arch: str) -> str:
    """The pipeline to run for `arch`: `auto`, alone or as an element, is `auto_pipeline(arch)`."""
    if pipeline == AUTO:
        return auto_pipeline(arch)
    from cute_lowering.pipeline import parse_pipeline

    elements = parse_pipeline(pipeline)
    if not any(e.name == AUTO and e.options is None and e.children is None for e in elements):
        return pipeline
    inner = auto_pipeline(arch)[len("builtin.module(") : -1]
    texts = [inner if e.name == AUTO and e.options is None and e.children is None else e.text for e in elements]
    return "builtin.module(" + ",".join(texts) + ")"


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> Pipeline:
    return Pipeline(text)


@functools.cache
def _ensure_registered() -> None:
    from cute_lowering.cutedsl import dsl_singletons
    from cute_lowering.mlir import warm_value_casters

    warm_value_casters()  # not inside a trace: see its docstring

    for dsl in dsl_singletons():
        dsl.register_trace_finalize_hook(_run_in_trace)  # the same object: registered once


def _run_in_trace(owner, module, function_name: str) -> None:
    """CuTeDSL's trace-finalize hook: runs the active pipeline on the traced module."""
    requested = active_pipeline()
    checks = _scoped_checks.get()
    posts = _scoped_posts.get()
    if requested is None and not checks and not posts:
        return
    start = time.perf_counter()
    arch = _arch_of(owner)
    try:
        text = resolve(requested, arch) if requested is not None else None
        text = with_checks(text, checks) if checks else text
        text = with_posts(text, posts) if posts else text
    except ValueError as e:  # a target CuTeDSL took but our table does not know: say so, no traceback
        raise PreloweringError([Diagnostic("error", f"prelowering of '{function_name}': {e}")]) from None
    try:
        staged = _staged(text)
    except LoweringError as e:  # pre after post in a pipeline set without install()'s check
        raise PreloweringError(e.diagnostics) from None
    report = PreloweringReport(function_name, arch, text, post_pipeline=staged.post)
    dump = os.environ.get(ENV_DUMP, "").strip()
    if dump:
        _dump(dump, function_name, arch, "before", module)
    if not _verifies(module):
        # The user's kernel traced to invalid IR. CuTeDSL verifies the module right after
        # this hook and blames it in its own words, with the location; had our pipeline
        # verified it, CuTeDSL would wrap our error as a failed hook ("a bug in the DSL").
        # So the module goes back untouched: the same error as without the hook.
        report.remarks = [Diagnostic("remark", "input IR does not verify: left to CuTeDSL's verifier, no pass ran")]
        _finish(report, start)
        return
    try:
        result = _parsed(staged.pre).run(module, SourceBuffer(function_name, "")) if staged.pre else PipelineResult()
    except CheckFailed as e:  # the kernel's bugs, found by a check pass: located, its author's to fix
        raise PreloweringError(
            [Diagnostic("error", f"'{function_name}' ({arch}): a check found bugs in this kernel (below), so no cubin was built. "
                        "They are the kernel's, not CuTeDSL's nor cute-lowering's (whatever CuTeDSL's wrapper says)")]
            + e.diagnostics
        ) from None
    except LoweringError as e:
        # The input verified, so this failure is ours: say so, and what to send us.
        raise PreloweringError(
            [
                Diagnostic(
                    "error",
                    f"cute-lowering's pipeline failed on '{function_name}' for {arch}: a bug in "
                    f"cute-lowering (lowering/), not in your kernel nor in CuTeDSL. Please report it "
                    f"to cute-lowering with the error below, the pipeline {text}, and the IR before "
                    f"our passes (re-run with {ENV_DUMP}=<dir>: it writes <dir>/<function>.{arch}.before.mlir)",
                )
            ]
            + e.diagnostics
        ) from None
    _record(report, result)
    if dump:
        _dump(dump, function_name, arch, "after", module)
    if staged.post is not None or dump:
        _hand_to_post_stage(owner, module, report, staged.post, _dump_prefix(dump, function_name, arch) if dump else None)
    _finish(report, start)


# --- the post stage (lowering/post_stage.py runs it inside CuTeDSL's compile) -------------
_awaiting_post: contextvars.ContextVar["PreloweringReport | None"] = contextvars.ContextVar(
    "lowering_awaiting_post", default=None
)


def _hand_to_post_stage(owner, module, report, post: str | None, dump_prefix: str | None) -> None:
    from cute_lowering import post_stage

    if post is not None:
        try:
            post_stage.check_supported()
        except post_stage.PostStageUnsupported as e:
            raise PreloweringError([Diagnostic("error", str(e))]) from None
    post_stage.ensure_wrapped(owner.compiler_provider)
    post_stage.stamp(module, post, dump_prefix)
    _awaiting_post.set(report)  # the compile right after this trace adds its post passes to it


def take_awaiting_post() -> "PreloweringReport | None":
    """The report of the trace whose compile is running (None after a cache hit's trace)."""
    report = _awaiting_post.get()
    _awaiting_post.set(None)
    return report


def run_post(post: str, module, report: "PreloweringReport | None") -> None:
    """Run the post stage's pipeline on the lowered module (inside CuTeDSL's compile)."""
    name = report.function if report is not None else "<compiled module>"
    try:
        result = _parsed(post).run(module, SourceBuffer(name, ""))
    except LoweringError as e:
        raise PreloweringError(
            [
                Diagnostic(
                    "error",
                    f"cute-lowering's post-stage pipeline {post} failed on '{name}' (the module CuTeDSL "
                    f"lowered to LLVM/NVVM): a bug in cute-lowering, not in your kernel nor in CuTeDSL. "
                    f"Please report it with the error below and the module (re-run with {ENV_DUMP}=<dir>: "
                    "it writes <dir>/<function>.<arch>.post.mlir)",
                )
            ]
            + e.diagnostics
        ) from None
    if report is not None:
        report.post_ran = True
        report.passes += [PassTiming(p.name, dict(p.counts), p.seconds, "post") for p in result.passes]
        report.remarks += list(result.diagnostics)
        log.info("post stage %s", report.summary())


def write_dump(path: str, module) -> None:
    from cute_lowering.files import FileWriteError, write_text

    try:
        write_text(path, str(module))
    except (OSError, FileWriteError) as e:
        raise PreloweringError([Diagnostic("error", f"{ENV_DUMP}: {e}")]) from None


def _verifies(module) -> bool:
    try:
        return module.operation.verify()
    except Exception:  # noqa: BLE001  (the bindings raise MLIRError on failure; any failure means "no")
        return False


def _finish(report: PreloweringReport, start: float) -> None:
    report.seconds = time.perf_counter() - start
    _reports.append(report)
    del _reports[:-_MAX_REPORTS]
    for got in _recorders:
        got.append(report)
    log.info("prelowering %s", report.summary())
    for remark in report.remarks:
        (log.warning if remark.severity == "warning" else log.debug)("%s", remark.format())


def _record(report: PreloweringReport, result: PipelineResult) -> None:
    report.passes = [PassTiming(p.name, dict(p.counts), p.seconds) for p in result.passes]
    report.remarks = list(result.diagnostics)


def _arch_of(owner) -> str:
    """The compile's target, as CuTeDSL resolves it (`--gpu-arch` option, else CUTE_DSL_ARCH)."""
    arch = owner.get_arch_enum()
    return arch.to_string() if hasattr(arch, "to_string") else str(arch)


def _dump_prefix(directory: str, function_name: str, arch: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", function_name)[:150]
    return os.path.join(directory, f"{safe}.{arch}")


def _dump(directory: str, function_name: str, arch: str, stage: str, module) -> None:
    from cute_lowering.files import FileWriteError, write_text

    try:
        os.makedirs(directory, exist_ok=True)
        write_text(f"{_dump_prefix(directory, function_name, arch)}.{stage}.mlir", str(module))
    except (OSError, FileWriteError) as e:  # the user's setting, not a bug of the DSL or ours
        raise PreloweringError([Diagnostic("error", f"{ENV_DUMP}={directory}: {e}")]) from None
