"""`lowering-repro report NAME`: a self-contained bug report (markdown) for NVIDIA's tracker.

The report is written only for what it reports: the case is compiled first (with the
installed CuTeDSL, or a release's venv with `--release`), and unless it fails with the
case's recorded error on the requested target, `NotReproducing` says so and what the
record knows instead (the command line exits 1). The report then holds the error seen,
what the compiler should do instead, the environment, a one-command reproducer, the IR,
the full error, and every recorded release with the actual error of each cell that
fails otherwise (`lowering/repro/releases.py`).
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys

from cute_lowering.repro.cases import Case
from cute_lowering.repro.releases import LEGEND, Notes, release_table, sorted_versions, where_it_reproduces
from cute_lowering.repro.runner import WORKER, cutedsl_version, error_summary, run_jobs, worker_env


class NotReproducing(Exception):
    """The case does not fail with its recorded error here: no report to write."""


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


def _cpu() -> str:
    """The CPU model and whether it has AVX512-BF16 (what host-stage failures depend on)."""
    model, flags = platform.processor() or "unknown", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name") and model in ("unknown", "x86_64", ""):
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = line
                    break
    except OSError:
        pass
    bf16 = "avx512_bf16" in flags.split()
    return f"{model}; AVX512-BF16: {'yes' if bf16 else 'no'}"


def _refusal(case: Case, arch: str, version: str, status: str, error: str) -> str:
    seen = {
        "fixed": "it compiles",
        "changed": f"it fails with another error than the recorded one: {error_summary(error)}",
        "not parsed": f"this release cannot parse the IR: {error_summary(error)}",
    }[status]
    return (
        f"'{case.name}' does not reproduce on {arch} with nvidia-cutlass-dsl {version}: {seen}. "
        f"No report written. Recorded to reproduce on: {where_it_reproduces(case)} "
        f"(pick one with --arch and --release)."
    )


def _pipeline(case: Case, arch: str, opt_level: int, python: str | None) -> str:
    if case.host:
        from cute_lowering.repro.worker import HOST_LOWERING

        return f"{HOST_LOWERING}, then ExecutionEngine(module, opt_level={opt_level}) and a lookup of the entry"
    return subprocess.run([python or sys.executable, str(WORKER), "--pipeline", arch, str(opt_level)],
                          capture_output=True, text=True, env=worker_env()).stdout.strip()


def write_report(case: Case, arch: str, opt_level: int = 3, python: str | None = None) -> str:
    lacking = case.missing_here()
    if lacking:  # as `run` says it: the failure cannot show here, whatever the release does
        raise NotReproducing(f"'{case.name}' cannot be checked on this machine: {lacking}. No report written. "
                             f"Recorded to reproduce on: {where_it_reproduces(case)} (on a machine that has it).")
    version = cutedsl_version(python)
    result = run_jobs([case.job(arch, opt_level)], python=python)[0]
    status = case.classify(arch, result["ok"], result["error"])
    if status != "reproduces":
        raise NotReproducing(_refusal(case, arch, version, status, result["error"]))
    pipeline = _pipeline(case, arch, opt_level, python)
    repro_py = (case.folder / "repro.py").read_text(encoding="utf-8")
    where = "the host CPU (no GPU)" if case.host else f"`{arch}` by `cute.compile`"
    run_line = f"python repro.py {opt_level}" if case.host else f"python repro.py {arch}"
    lines = [
        f"# CuTeDSL: {case.summary} ({arch})",
        "",
        f"**What fails**: `{case.construct}`, compiled for {where}.",
        f"**Stage**: {case.stage}.",
        f"**Error** (nvidia-cutlass-dsl {version}, {arch}, opt-level {opt_level}): `{error_summary(result['error'])}`",
        "",
        "## Expected behaviour",
        "",
        case.expected_for(arch) or "(the case records none)",
        "",
        "## Environment",
        "",
        f"- nvidia-cutlass-dsl: {version}",
        f"- Python: {platform.python_version()} ({platform.platform()})",
    ]
    if case.host:
        lines += [f"- CPU: {_cpu()}", "- Target: the host CPU, through the bindings' MLIR ExecutionEngine"]
    else:
        lines += [f"- Driver: {_driver()}", f"- CUDA toolkit: {_toolkit()}",
                  f"- Target: {arch} (set through `CUTE_DSL_ARCH`; no GPU needed)"]
    lines += [
        "",
        "## Reproduce",
        "",
        f"One command, after `pip install nvidia-cutlass-dsl=={version}`, with `repro.mlir` (below) beside it:",
        "",
        "```sh",
        run_line,
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
        "`repro.mlir`:",
        "",
        "```mlir",
        case.ir.rstrip(),
        "```",
        "",
    ]
    if not case.host:
        lines += [
            "The same failure from the IR alone, through `cute.compile`'s own pipeline string:",
            "",
            "```python",
            "import cutlass  # registers the dialects",
            "from cutlass._mlir import ir, passmanager",
            "with ir.Context():",
            "    module = ir.Module.parse(open('repro.mlir').read())",
            "    passmanager.PassManager.parse(PIPELINE).run(module.operation)",
            "```",
            "",
        ]
    lines += [
        f"with `PIPELINE` = `{pipeline}`" if not case.host else f"Pipeline: `{pipeline}`",
        "",
        "## Full error",
        "",
        "```",
        result["error"].rstrip(),
        "```",
        "",
    ]
    if case.recorded:
        notes = Notes()
        archs = [arch]  # the requested target first, then every other one recorded
        for cells in case.recorded.values():
            archs += [a for a in cells if a not in archs]
        lines += ["## Releases", "",
                  "Recorded by `lowering-repro matrix` (a venv per release, the same IR, opt-level 3). " + LEGEND, ""]
        lines += release_table(case, sorted_versions(case.recorded), archs, notes)
        if notes.texts:
            lines += ["", "Errors of the cells above:", ""] + notes.lines()
        lines.append("")
    if case.workaround:
        lines += ["## Workaround", "",
                  f"Rewriting the IR before CuTeDSL's pipeline with `{case.workaround_for(arch)}`"
                  " (project cute-lowering) makes it compile.", ""]
    elif case.meta.get("workaround_note"):
        lines += ["## Workaround", "", case.meta["workaround_note"], ""]
    return "\n".join(lines)
