"""What a reproducer needs of the machine that runs it, and whether this machine has it.

A case's `case.json` may say `"requires": {"cpu": ["avx512_bf16"], "gpu": ["sm_90"]}`:
CPU features by their /proc/cpuinfo flag (a host-stage failure that only an AVX512-BF16
CPU shows), GPUs by target (one of the machine's GPUs must be that compute capability).
Where the machine lacks one, the case cannot show its failure here whatever the release
does: `run` says `not here` and names what is missing, `report` refuses with the same
words, and `matrix` keeps the recorded cell instead of measuring it (runner.run_cases).
"""

from __future__ import annotations

import shutil
import subprocess

# /proc/cpuinfo flag -> the name vendors and LLVM's users write
CPU_FEATURES = {"avx512_bf16": "AVX512-BF16", "avx512f": "AVX-512", "amx_bf16": "AMX-BF16"}


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str]:
    """The flags of this machine's first CPU (empty where /proc/cpuinfo cannot be read)."""
    try:
        with open(cpuinfo, encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def gpu_targets() -> set[str]:
    """`sm_XY` of each GPU nvidia-smi lists (empty without a GPU or a driver)."""
    if shutil.which("nvidia-smi") is None:
        return set()
    out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return set()
    return {"sm_" + line.strip().replace(".", "") for line in out.stdout.splitlines() if line.strip()}


def describe_cpu(flag: str) -> str:
    name = CPU_FEATURES.get(flag)
    return f"the CPU feature {name} ({flag} in /proc/cpuinfo)" if name else f"the CPU feature {flag}"


def missing(requires: dict) -> list[str]:
    """What this machine lacks of `requires`, each said by name; empty: it has everything."""
    lacking = []
    cpu = requires.get("cpu", [])
    if cpu:
        flags = cpu_flags()
        lacking += [describe_cpu(flag) for flag in cpu if flag not in flags]
    gpu = requires.get("gpu", [])
    if gpu:
        targets = gpu_targets()
        lacking += [f"a GPU {target}" for target in gpu if target not in targets]
    return lacking
