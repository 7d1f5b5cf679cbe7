"""What the host CPU can do, for tests whose behaviour the host LLVM ties to it."""

from __future__ import annotations


def has_avx512_bf16() -> bool:
    """Whether /proc/cpuinfo lists AVX512-BF16 (the host LLVM's bf16 lowering depends on it)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return any(line.startswith("flags") and "avx512_bf16" in line.split() for line in f)
    except OSError:
        return False
