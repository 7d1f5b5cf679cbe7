"""cute-lowering: MLIR passes that rewrite float conversions before CuTeDSL's pipeline.

    from cute_lowering import run_pipeline
    result = run_pipeline(module, "builtin.module(fptosi-to-ptx,bitcast-to-ptx)")
    result.counts("fptosi-to-ptx")  # {'rewritten': 3, 'left': 0, 'folded': 1}

    with cute_lowering.prelowering():            # inside CuTeDSL builds (see lowering/hook.py)
        cute.compile(kernel, *args)
"""

from cute_lowering.diagnostics import Diagnostic, LoweringError, SourceBuffer
from cute_lowering.hook import (
    PreloweringError,
    PreloweringReport,
    auto_pipeline,
    install,
    install_from_env,
    last_report,
    prelowering,
    recorded_reports,
    reports,
    uninstall,
)
from cute_lowering.passes.check_collectives import check_collectives
from cute_lowering.pipeline import Pipeline, PipelineResult, run_pipeline
from cute_lowering.registry import get_pass, list_passes

__all__ = [
    "PreloweringError",
    "PreloweringReport",
    "auto_pipeline",
    "check_collectives",
    "install",
    "install_from_env",
    "last_report",
    "prelowering",
    "recorded_reports",
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
