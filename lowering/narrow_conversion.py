"""What `truncf-to-select` and `extf-to-select` share: the arch-aware choice, lane checks."""

from __future__ import annotations

from cute_lowering.formats import NarrowFloat
from cute_lowering.mlir import element_type, ir
from cute_lowering.registry import flag, text
from cute_lowering.rewriting import Leave, RewritePass
from cute_lowering.vectors import is_lane_vector

# cute_lowering.targets is imported where it is used, not here: this module is imported with the
# package (lowering/__init__ -> pipeline -> passes), and `python -m cute_lowering.targets` runs
# that module as __main__ after the package's own import; had the package imported it,
# runpy would warn ("found in sys.modules ... unpredictable behaviour") and run a second copy.


def _check_target(arch: str) -> str:
    from cute_lowering.targets import check_target

    return check_target(arch)


ARCH_OPTIONS = (
    text(
        "arch",
        "",
        "target (e.g. sm_90a), one the installed CuTeDSL accepts; where it lowers the conversion natively it is left to it",
        check=_check_target,
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

    def leave_if_native(self, fmt: NarrowFloat, op: ir.OpView, rounding: str | None = None) -> None:
        """Leave `op` to CuTeDSL when the installed release converts exactly this (wide type,
        shape, rounding: default to nearest even) natively for the given arch
        (`lowering/targets.py`), and we may."""
        from cute_lowering.targets import NEAREST_EVEN, lowers_natively

        rounding = rounding or NEAREST_EVEN
        arch = self.options["arch"]
        if not (arch and self.options["prefer-hardware"]):
            return
        wide_type = op.results[0].type if self.kind == "extf" else op.operands[0].type
        wide = str(element_type(wide_type))
        if lowers_natively(self.kind, fmt.mlir_name, arch, wide, ir.VectorType.isinstance(wide_type), rounding):
            direction = "to" if self.kind == "truncf" else "from"
            raise Leave(f"{arch} converts {direction} {fmt.mlir_name} in hardware: left to CuTeDSL's lowering", "native")
