"""What `truncf-to-select` and `extf-to-select` share: the arch-aware choice, lane checks."""

from __future__ import annotations

from lowering.formats import NarrowFloat
from lowering.mlir import ir
from lowering.registry import flag, text
from lowering.rewriting import Leave, RewritePass
from lowering.targets import lowers_natively, sm_version
from lowering.vectors import is_lane_vector

ARCH_OPTIONS = (
    text(
        "arch",
        "",
        "target (e.g. sm_90a); where CuTeDSL lowers the conversion natively it is left to it",
        check=sm_version,
    ),
    flag("prefer-hardware", True, "leave conversions the target has an instruction for to CuTeDSL"),
)


class NarrowConversionPass(RewritePass):
    """A rewrite of `arith.truncf`/`arith.extf` ("truncf"/"extf" in `kind`) to or from a narrow float."""

    kind = "?"
    statistics = {
        **RewritePass.statistics,
        "native": "ops left for CuTeDSL's native lowering on the given arch",
    }

    def check_lanes(self, t: ir.Type) -> None:
        if ir.VectorType.isinstance(t) and not is_lane_vector(t):
            raise Leave(f"only scalars and 1-D fixed-length vectors are converted, not {t}")

    def leave_if_native(self, fmt: NarrowFloat) -> None:
        """Leave the op to CuTeDSL when the given arch converts it in hardware (and we may)."""
        arch = self.options["arch"]
        if arch and self.options["prefer-hardware"] and lowers_natively(self.kind, fmt.mlir_name, arch):
            direction = "to" if self.kind == "truncf" else "from"
            raise Leave(f"{arch} converts {direction} {fmt.mlir_name} in hardware: left to CuTeDSL's lowering", "native")
