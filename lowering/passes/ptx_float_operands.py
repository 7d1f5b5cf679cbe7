"""Move float constants feeding nvvm.inline_ptx into registers (CuTeDSL 4.8.1 workaround).

Before:

    %c = arith.constant 1.500000e+00 : f32
    %y = nvvm.inline_ptx "add.f32 {$w0}, {$r0}, {$r1};" ro(%x, %c : f32, f32) -> f32

After:

    %c = arith.constant 1.500000e+00 : f32
    %m = llvm.inline_asm "mov.b32 $0, $1;", "=f,f" %c : (f32) -> f32
    %y = nvvm.inline_ptx "add.f32 {$w0}, {$r0}, {$r1};" ro(%x, %m : f32, f32) -> f32

Why: CuTeDSL 4.8.1 lowers `nvvm.inline_ptx` giving every operand defined by a
constant the immediate constraint `n`, whatever its type; libNVVM then fails with
`constraint 'n' expects an integer constant expression` (NVIDIA/cutlass#3594,
#3640). The copy is a pure `llvm.inline_asm` (an `nvvm.inline_ptx` copy would meet
the same bug); LLVM materializes the constant in a register for it, and ptxas
folds the extra mov away. The value and its bits are unchanged. f16/bf16 use
`mov.b16`, f64 `mov.b64`. Integer constants are fine as immediates and stay.
Statistics count operands moved: `rewritten` counts `nvvm.inline_ptx` ops changed.
"""

from __future__ import annotations

from cute_lowering.mlir import ir
from cute_lowering.ptx import in_register, is_float_constant
from cute_lowering.registry import register_pass
from cute_lowering.rewriting import Leave, RewritePass


@register_pass("ptx-float-operands")
class PtxFloatOperands(RewritePass):
    """Copy float-constant operands of nvvm.inline_ptx into registers (CuTeDSL 4.8.1 'n' constraint bug)."""

    roots = ("nvvm.inline_ptx",)
    statistics = {
        "rewritten": "nvvm.inline_ptx ops whose operands were moved",
        "left": "ops left as they were (each has a remark)",
        "operands": "float-constant operands moved into registers",
    }

    def relevant(self, op: ir.OpView) -> bool:
        return any(is_float_constant(v) for v in op.operands)

    def match(self, op: ir.OpView) -> list[int]:
        indices = [i for i, v in enumerate(op.operands) if is_float_constant(v)]
        if not indices:
            raise Leave("no float-constant operands")
        return indices

    def rewrite(self, op: ir.OpView, indices: list[int]) -> None:
        for i in indices:
            op.operands[i] = in_register(op.operands[i])
        self.counts["operands"] += len(indices)
        return None
