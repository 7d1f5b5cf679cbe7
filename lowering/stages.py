"""Split one pipeline text into the part for each stage of a `cute.compile`.

    traced module ── pre ── cute-to-nvvm{llvm-only=true} ── post ── cuda-to-binary, ... ── cubin

A user writes one pipeline (`CUTE_LOWERING_PIPELINE`, `install()`, `prelowering()`), our
passes in the order they run; each of our passes declares its stage (lowering/registry.py).
MLIR's own passes (`canonicalize`, `cse`, nested op pipelines) have none: they run in the
stage of the pass of ours before them (the pre stage at the start).

    builtin.module(auto,canonicalize,some-post-pass,cse)
      pre:  builtin.module(auto,canonicalize)
      post: builtin.module(some-post-pass,cse)

A pre pass after a post pass cannot be honoured (the module it needs is gone by then):
that is an error located at the pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from cute_lowering.diagnostics import Diagnostic, LoweringError, SourceLocation


@dataclass(frozen=True)
class StagedPipeline:
    pre: str | None  # a `builtin.module(...)` text, or None: nothing in that stage
    post: str | None


def split_stages(text: str) -> StagedPipeline:
    """The pre and post parts of `text` (a pipeline in MLIR's textual syntax)."""
    from cute_lowering.pipeline import PIPELINE_BUFFER, parse_pipeline
    from cute_lowering.registry import get_pass

    parts: dict[str, list[str]] = {"pre": [], "post": []}
    stage, first_post = "pre", None
    for element in parse_pipeline(text):
        info = get_pass(element.name)
        if info is not None and info.stage != stage:
            if info.stage == "pre":
                raise LoweringError(
                    Diagnostic(
                        "error",
                        f"pass '{element.name}' runs before CuTeDSL's lowering (stage pre), so it cannot "
                        f"follow '{first_post}' (stage post): put the pre passes first",
                        SourceLocation(PIPELINE_BUFFER, 1, element.column),
                    )
                )
            stage, first_post = info.stage, element.name
        parts[stage].append(element.text)
    # An empty text (`builtin.module()`) is a pre stage that does nothing: the hook still runs
    # (dumps, reports), as before stages existed.
    pre = "builtin.module(" + ",".join(parts["pre"]) + ")" if parts["pre"] or not parts["post"] else None
    post = "builtin.module(" + ",".join(parts["post"]) + ")" if parts["post"] else None
    return StagedPipeline(pre, post)
