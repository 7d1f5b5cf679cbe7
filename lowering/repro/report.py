"""`lowering-repro report NAME`: a self-contained bug report (markdown) for NVIDIA's tracker."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys

from lowering.repro.cases import Case
from lowering.repro.runner import run_jobs, WORKER, worker_env


def _driver() -> str:
    if shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,name", "--format=csv,noheader"],
                             capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    return "no GPU/driver on the reporting machine (not needed: the failure is at compile time)"


def _toolkit() -> str:
    if shutil.which("ptxas"):
        out = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout.strip().splitlines()
        return out[-1] if out else "unknown"
    return "none installed; CuTeDSL's bundled libNVVM/ptxas do the compile"


def write_report(case: Case, arch: str, opt_level: int = 3) -> str:
    from lowering.repro.cli import cutedsl_version

    result = run_jobs([{"ir": case.ir, "arch": arch, "opt_level": opt_level}])[0]
    pipeline = subprocess.run([sys.executable, str(WORKER), "--pipeline", arch, str(opt_level)],
                              capture_output=True, text=True, env=worker_env()).stdout.strip()
    status = case.classify(arch, result["ok"], result["error"])
    repro_py = (case.folder / "repro.py").read_text(encoding="utf-8")
    lines = [
        f"# CuTeDSL: {case.summary} ({arch})",
        "",
        f"**What fails**: `{case.construct}` in a kernel compiled for `{arch}` by `cute.compile`.",
        f"**Stage**: {case.stage}. **Expected error text**: `{case.error_for(arch)}`.",
        f"**Status on this machine**: {status}.",
        "",
        "## Environment",
        "",
        f"- nvidia-cutlass-dsl: {cutedsl_version()}",
        f"- Python: {platform.python_version()} ({platform.platform()})",
        f"- Driver: {_driver()}",
        f"- CUDA toolkit: {_toolkit()}",
        f"- Target: {arch} (set through `CUTE_DSL_ARCH`; no GPU needed)",
        "",
        "## Reproduce",
        "",
        f"One command, after `pip install nvidia-cutlass-dsl=={cutedsl_version()}`:",
        "",
        "```sh",
        f"python repro.py {arch}",
        "```",
        "",
        "`repro.py`:",
        "",
        "```python",
        repro_py.rstrip(),
        "```",
        "",
        "## The IR",
        "",
        "The same failure from IR alone, through `cute.compile`'s own pipeline string:",
        "",
        "```mlir",
        case.ir.rstrip(),
        "```",
        "",
        "```python",
        "import cutlass  # registers the dialects",
        "from cutlass._mlir import ir, passmanager",
        "with ir.Context():",
        "    module = ir.Module.parse(open('repro.mlir').read())",
        f"    passmanager.PassManager.parse(PIPELINE).run(module.operation)",
        "```",
        "",
        f"with `PIPELINE` = `{pipeline}`",
        "",
        "## Full error",
        "",
        "```",
        (result["error"] or "(compiled: no error with this version)").rstrip(),
        "```",
        "",
    ]
    if case.meta.get("versions_failing") or case.meta.get("versions_fixed"):
        lines += ["## Releases", "",
                  f"- fails: {', '.join(case.meta.get('versions_failing', [])) or 'none measured'}",
                  f"- does not reproduce: {', '.join(case.meta.get('versions_fixed', [])) or 'none measured'}", ""]
    if case.workaround:
        lines += ["## Workaround", "",
                  f"Rewriting the IR before CuTeDSL's pipeline with `{case.workaround_for(arch)}`"
                  " (project cute-lowering) makes it compile.", ""]
    return "\n".join(lines)
