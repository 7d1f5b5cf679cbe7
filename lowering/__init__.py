"""cute-lowering: MLIR passes that rewrite float conversions before CuTeDSL's pipeline.

    from lowering import run_pipeline
    result = run_pipeline(module, "builtin.module(fptosi-to-ptx,bitcast-to-ptx)")
    result.counts("fptosi-to-ptx")  # {'rewritten': 3, 'left': 0, 'folded': 1}

    with lowering.prelowering():            # inside CuTeDSL builds (see lowering/hook.py)
        cute.compile(kernel, *args)
"""

from lowering.diagnostics import Diagnostic, LoweringError, SourceBuffer
from lowering.hook import (
    PreloweringError,
    PreloweringReport,
    auto_pipeline,
    install,
    install_from_env,
    last_report,
    prelowering,
    reports,
    uninstall,
)
from lowering.passes.check_collectives import check_collectives
from lowering.pipeline import Pipeline, PipelineResult, run_pipeline
from lowering.registry import get_pass, list_passes

__all__ = [
    "PreloweringError",
    "PreloweringReport",
    "auto_pipeline",
    "check_collectives",
    "install",
    "install_from_env",
    "last_report",
    "prelowering",
    "reports",
    "uninstall",
    "Diagnostic",
    "LoweringError",
    "Pipeline",
    "PipelineResult",
    "SourceBuffer",
    "get_pass",
    "list_passes",
    "run_pipeline",
]
