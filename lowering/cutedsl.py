"""Trace CuTeDSL functions to IR and compile IR through CuTeDSL's own pipeline string.

`trace_ir` stops a `cute.compile` right after tracing (through CuTeDSL's official
trace-finalize hook) and returns the module's text, so a kernel can be examined or
rewritten without the compile that would fail. `compile_ir` then runs the same
pipeline string `cute.compile` uses, down to PTX and cubin, for any target, with no
GPU needed; ptxas and libNVVM errors come back as `CompileFailure` with their text.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from cute_lowering.diagnostics import SourceBuffer, from_mlir_error
from cute_lowering.mlir import ir, new_context, parse_module, passmanager


def pipeline_string(arch: str, opt_level: int = 3, ptx_prefix: str | None = None) -> str:
    """The installed CuTeDSL's `cute.compile` pipeline (cutlass_dsl/cutlass.py `_get_pipeline`
    plus `preprocess_pipeline`), with an optional PTX dump. The releases of the supported
    range differ in two options (as `lowering-repro`'s captured strings show): 4.7 added
    `enable-pyir=false`, 4.8 `check-inline-asm=false`; cute-to-nvvm rejects an unknown one."""
    from cute_lowering.targets import cutedsl_release

    release = tuple(int(p) for p in cutedsl_release().split(".")[:2] if p.isdigit())
    dump = f" dump-ptx-path={ptx_prefix}" if ptx_prefix else ""
    check_asm = "check-inline-asm=false " if release >= (4, 8) else ""
    pyir = "enable-pyir=false " if release >= (4, 7) else ""
    return (
        f"builtin.module(cute-to-nvvm{{{check_asm}cubin-format=bin "
        f"opt-level={opt_level} {pyir}rdc=false enable-assertions=false "
        f"preserve-line-info=false cubin-chip={arch}{dump} "
        "enable-cuda-dialect=true cuda-dialect-external-module=true})"
    )


def dsl_singletons() -> list:
    """Every CuTeDSL DSL object (CuTeDSL and its experimental sibling both trace)."""
    import cutlass.cute  # noqa: F401  (creates the singletons)
    from cutlass.base_dsl.dsl import DSLSingletonMeta
    from cutlass.cutlass_dsl import CuTeDSL

    found = [d for d in getattr(DSLSingletonMeta, "_instances", {}).values() if hasattr(d, "register_trace_finalize_hook")]
    return found or [CuTeDSL._get_dsl()]


class CompileFailure(Exception):
    """CuTeDSL's pipeline rejected the IR; `str()` is the compiler's own text."""


class _Traced(Exception):
    def __init__(self, text: str):
        self.text = text


def trace_ir(jit_function: Any, *args: Any, **kwargs: Any) -> str:
    """The IR CuTeDSL traces for `jit_function(*args)`, before any of its passes."""
    import cutlass.cute as cute

    def capture(_owner, module, _name):
        raise _Traced(str(module))

    try:
        cute.compile(jit_function, *args, trace_finalize_hooks=capture, **kwargs)
    except _Traced as traced:
        return traced.text
    except Exception as e:  # CuTeDSL may wrap what a hook raises
        cause = e
        while cause is not None:
            if isinstance(cause, _Traced):
                return cause.text
            cause = cause.__cause__ or cause.__context__
        raise
    raise RuntimeError("CuTeDSL finished compiling without calling the trace-finalize hook")


def compile_ir(text: str, arch: str, opt_level: int = 3) -> str:
    """Compile IR text for `arch` through CuTeDSL's pipeline; returns the PTX."""
    with tempfile.TemporaryDirectory() as tmp, new_context() as context:
        source = SourceBuffer("<compiled>", text)
        try:
            module = parse_module(text, context)
        except ir.MLIRError as e:
            raise CompileFailure(str(from_mlir_error(e, source))) from None
        prefix = os.path.join(tmp, "kernel")
        pm = passmanager.PassManager.parse(pipeline_string(arch, opt_level, prefix))
        try:
            pm.run(module.operation)
        except ir.MLIRError as e:
            raise CompileFailure(str(e)) from None
        ptx_files = [f for f in os.listdir(tmp) if f.endswith(".ptx")]
        if not ptx_files:
            raise CompileFailure("the pipeline wrote no PTX")
        with open(os.path.join(tmp, ptx_files[0]), encoding="utf-8") as f:
            return f.read()


def compile_post_ir(text: str, arch: str = "sm_90a", opt_level: int = 3) -> tuple[str, bytes]:
    """(PTX, cubin) of a lowered module's text (a `*.post.mlir` dump, after post passes or not),
    through what CuTeDSL's pipeline runs after `cute-to-nvvm{llvm-only=true}`. The target is the
    one recorded in the module's `gpu.module` (`arch` only picks the pipeline's options)."""
    from cute_lowering.post_stage import split

    with tempfile.TemporaryDirectory() as tmp, new_context() as context:
        source = SourceBuffer("<compiled>", text)
        try:
            module = parse_module(text, context)
        except ir.MLIRError as e:
            raise CompileFailure(str(from_mlir_error(e, source))) from None
        prefix = os.path.join(tmp, "kernel")
        full = pipeline_string(arch, opt_level, prefix).replace("})", f" dump-cubin-path={prefix}}})")
        pm = passmanager.PassManager.parse(split(full).rest)
        try:
            pm.run(module.operation)
        except ir.MLIRError as e:
            raise CompileFailure(str(e)) from None
        found = {name.rsplit(".", 1)[-1]: os.path.join(tmp, name) for name in os.listdir(tmp)}
        if "ptx" not in found or "cubin" not in found:
            raise CompileFailure(f"the pipeline wrote no PTX or cubin ({sorted(found)})")
        with open(found["ptx"], encoding="utf-8") as f, open(found["cubin"], "rb") as g:
            return f.read(), g.read()
