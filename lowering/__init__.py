"""cute-lowering: MLIR passes that rewrite float conversions before CuTeDSL's pipeline.

    from lowering import run_pipeline
    result = run_pipeline(module, "builtin.module(fptosi-to-ptx,bitcast-to-ptx)")
    result.counts("fptosi-to-ptx")  # {'rewritten': 3, 'left': 0, 'folded': 1}

    with lowering.prelowering():            # inside CuTeDSL builds (see lowering/hook.py)
        cute.compile(kernel, *args)

The names below are imported on first use (PEP 562), not when the package is: `python -m
lowering.targets` (or any other module run as `__main__`) imports this package first, and
a package that had already imported that module would have runpy warn that it "may
result in unpredictable behaviour" and run a second copy of it.
"""

from __future__ import annotations

import importlib

# public name -> the module that defines it
_EXPORTS = {
    "Diagnostic": "lowering.diagnostics",
    "LoweringError": "lowering.diagnostics",
    "SourceBuffer": "lowering.diagnostics",
    "PreloweringError": "lowering.hook",
    "PreloweringReport": "lowering.hook",
    "auto_pipeline": "lowering.hook",
    "install": "lowering.hook",
    "install_from_env": "lowering.hook",
    "last_report": "lowering.hook",
    "prelowering": "lowering.hook",
    "reports": "lowering.hook",
    "uninstall": "lowering.hook",
    "check_collectives": "lowering.passes.check_collectives",
    "Pipeline": "lowering.pipeline",
    "PipelineResult": "lowering.pipeline",
    "run_pipeline": "lowering.pipeline",
    "get_pass": "lowering.registry",
    "list_passes": "lowering.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        # `import lowering; lowering.hook.x`: a submodule, as an eager import made it reachable
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    if module == "lowering.registry":
        importlib.import_module("lowering.pipeline")  # fills the registry (each pass registers on import)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
