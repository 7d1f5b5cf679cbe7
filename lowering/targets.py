"""What CuTeDSL lowers natively on each target: measured facts, not hopes.

`auto` choices are derived from this table. Each entry was measured with CuTeDSL
4.8.1 by compiling a kernel doing `TensorSSA.to(...)` through `cute.compile`'s own
pipeline for sm_80, sm_90a and sm_100a (`tests/test_targets.py` re-measures them):

| conversion            | sm_80 | sm_90a | sm_100a |
| f32 -> f4E2M1FN       | fail (ptxas: cvt .e2m1x2 unsupported) | fail | ok |
| f4E2M1FN -> f32       | fail (libNVVM: unsupported operation)  | fail | ok |
| f32 -> f8E4M3FN/E5M2  | fail (libNVVM)                          | ok   | ok |
| f8E4M3FN/E5M2 -> f32  | fail (libNVVM)                          | ok   | ok |
| f32 -> f8E8M0FNU      | fail (libNVVM)                          | fail | ok |
| f8E8M0FNU -> f32      | fail (libNVVM)                          | fail | ok |

The FP8 E4M3/E5M2 converts need sm_89 (PTX ISA: `cvt...e4m3x2` requires sm_89);
sm_89 itself was not measured here.
"""

from __future__ import annotations

import re

# (op, narrow type) -> smallest SM version whose native lowering works
NATIVE_SINCE = {
    ("truncf", "f4E2M1FN"): 100,
    ("extf", "f4E2M1FN"): 100,
    ("truncf", "f8E4M3FN"): 89,
    ("extf", "f8E4M3FN"): 89,
    ("truncf", "f8E5M2"): 89,
    ("extf", "f8E5M2"): 89,
    ("truncf", "f8E8M0FNU"): 100,
    ("extf", "f8E8M0FNU"): 100,
}

_ARCH = re.compile(r"^sm_(\d+)[af]?$")


def sm_version(arch: str) -> int:
    """`sm_90a` -> 90. Raises ValueError for anything else."""
    m = _ARCH.match(arch.strip())
    if not m:
        raise ValueError(f"not a CUDA target architecture: '{arch}' (expected e.g. sm_90a, sm_100a)")
    return int(m.group(1))


def lowers_natively(op: str, narrow_type: str, arch: str) -> bool:
    """Whether CuTeDSL's own pipeline compiles `op` to/from `narrow_type` for `arch`."""
    since = NATIVE_SINCE.get((op, narrow_type))
    return since is not None and sm_version(arch) >= since
