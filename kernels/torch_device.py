"""What the kernels' torch APIs share: torch imported only when called, and the device's arch."""

from __future__ import annotations


def torch_module():
    """torch, imported on first use: the kernels import without it (CI compiles them without torch)."""
    import torch

    return torch


def arch_of(device) -> str:
    """The CuTeDSL target of a CUDA device: sm_90a on Hopper, sm_100a on Blackwell, sm_80 on Ampere."""
    major, minor = torch_module().cuda.get_device_capability(device)
    return f"sm_{major}{minor}a" if major >= 9 else f"sm_{major}{minor}"
