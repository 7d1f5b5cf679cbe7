"""Names that moved between CuTeDSL releases, imported from where the installed release has them.

The supported range (pyproject, README "Supported CuTeDSL releases") spans releases whose
Python API differs in where a few names live; kernels and test kernels import those names
from here instead of each carrying its own try/except:

- `SmemAllocator`: `cutlass.memory.SmemAllocator` from 4.8 on; before 4.8 only
  `cutlass.utils.SmemAllocator` (4.8 keeps that name as a separate legacy class, so the
  4.8 one is preferred where it exists).
- `LayoutEnum`: `cutlass.tensor_utils.LayoutEnum` from 4.8 on; before 4.8 in
  `cutlass.utils` only.
"""

try:
    from cutlass.memory import SmemAllocator
except ImportError:  # CuTeDSL < 4.8: no cutlass.memory
    from cutlass.utils import SmemAllocator

try:
    from cutlass.tensor_utils import LayoutEnum
except ImportError:  # CuTeDSL < 4.8 has it in cutlass.utils only
    from cutlass.utils import LayoutEnum

__all__ = ["SmemAllocator", "LayoutEnum"]
