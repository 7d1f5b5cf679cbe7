"""Report how the wgmmas of a lowered module get their shared-memory descriptors (post stage).

A report pass: it never changes the IR. It runs on the LLVM/NVVM module CuTeDSL's
`cute-to-nvvm{llvm-only=true}` leaves (a `*.post.mlir` dump, or inside `cute.compile` in the
post stage), where a wgmma is an `llvm.inline_asm "...wgmma.mma_async..."` whose descriptors
are its `l` (64-bit) operands, and a group is what lies between `nvvm.wgmma.fence.aligned` and
`nvvm.wgmma.commit.group.sync.aligned`. For each descriptor operand it says how it is formed,
which is what ptxas is given to schedule the HGMMAs with:

- `add64`: `llvm.add %desc, C : i64` of a constant (PTX `add.s64`, SASS `UIADD3.64`), as
  CuTeDSL 4.8.1 steps along K;
- `low32`: `bitcast(insertelement(bitcast %desc : vector<2xi32>, %lo + x, 0))`, an offset
  added to the low word only (CuTeDSL's stage offset; C++ CUTLASS's `DescriptorIterator`);
- `other`: anything else (the base descriptor: `or`s of the address and the layout fields).

Input (a real dump, trimmed):

    nvvm.wgmma.fence.aligned
    %d = llvm.inline_asm has_side_effects "...wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 ...",
         "=f,...,l,l,r,n,n,n,n" %acc..., %a, %b, ...
    %a1 = llvm.add %a, %c2 : i64
    %b1 = llvm.add %b, %c2 : i64
    %e = llvm.inline_asm ... %acc..., %a1, %b1, ...
    nvvm.wgmma.commit.group.sync.aligned

Output: the same IR, and on stderr (located at the group's first wgmma, or its kernel):

    remark: wgmma-report: group of 2 wgmma m64n128k16 (A and B from shared memory):
            descriptors add64 2, low32 0, other 2
"""

from __future__ import annotations

import re
from collections import Counter

from cute_lowering.diagnostics import nearest_location
from cute_lowering.mlir import defining_op, ir
from cute_lowering.registry import register_pass

_SHAPE = re.compile(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)")
FENCE = "nvvm.wgmma.fence.aligned"
COMMIT = "nvvm.wgmma.commit.group.sync.aligned"
FORMS = ("add64", "low32", "other")


def wgmma_shape(op) -> str | None:
    """`m64n128k16` for a wgmma `llvm.inline_asm`, else None."""
    if op.name != "llvm.inline_asm" or "asm_string" not in op.attributes:
        return None
    found = _SHAPE.search(ir.StringAttr(op.attributes["asm_string"]).value)
    return found.group(1) if found else None


def descriptor_operands(op) -> list[ir.Value]:
    """The 64-bit (`l`) operands of a wgmma asm: its shared-memory descriptors."""
    constraints = ir.StringAttr(op.attributes["constraints"]).value.split(",")
    inputs = [c for c in constraints if not c.startswith("=")]
    return [v for v, c in zip(op.operands, inputs) if c == "l"]


def _constant(value: ir.Value) -> bool:
    op = defining_op(value)
    return op is not None and op.name == "llvm.mlir.constant"


def descriptor_form(value: ir.Value) -> str:
    op = defining_op(value)
    if op is None:
        return "other"
    if op.name == "llvm.add" and str(value.type) == "i64" and _constant(op.operands[1]):
        return "add64"
    if op.name == "llvm.bitcast" and str(value.type) == "i64":
        inserted = defining_op(op.operands[0])
        if inserted is not None and inserted.name == "llvm.insertelement":
            added = defining_op(inserted.operands[1])
            if added is not None and added.name == "llvm.add":
                return "low32"
    return "other"


@register_pass("wgmma-report", stage="post")
class WgmmaReport:
    """Report how each wgmma's shared-memory descriptors are formed (post stage; changes nothing)."""

    statistics = {
        "wgmma": "wgmma.mma_async ops",
        "groups": "wgmma groups (fence ... commit_group)",
        "add64": "descriptors stepped by a 64-bit add of a constant (add.s64)",
        "low32": "descriptors with an offset added to the low word only",
        "other": "descriptors formed otherwise (the base)",
    }

    def __init__(self, options, sink):
        self.options, self.sink = options, sink
        self.counts = Counter({name: 0 for name in self.statistics})

    def run(self, root) -> None:
        self._walk(root)

    def _walk(self, op) -> None:
        for region in op.regions:
            for block in region:
                self._block(block)

    def _block(self, block) -> None:
        group: list = []
        for inner in block:
            op = inner.operation
            if op.name == FENCE:
                self._report(group)
                group = []
            elif wgmma_shape(op) is not None:
                group.append(op)
            elif op.name == COMMIT:
                self._report(group)
                group = []
            if op.regions:
                self._walk(op)
        self._report(group)

    def _report(self, group: list) -> None:
        if not group:
            return
        forms: Counter = Counter({form: 0 for form in FORMS})
        shapes = Counter(wgmma_shape(op) for op in group)
        from_smem = {len(descriptor_operands(op)) for op in group}
        for op in group:
            for value in descriptor_operands(op):
                forms[descriptor_form(value)] += 1
        self.counts["groups"] += 1
        self.counts["wgmma"] += len(group)
        for form in FORMS:
            self.counts[form] += forms[form]
        operands = "A and B from shared memory" if from_smem == {2} else "A from registers" if from_smem == {1} else "mixed"
        shape = " ".join(f"{s}" for s in shapes)
        self.sink.remark(
            f"wgmma-report: group of {len(group)} wgmma {shape} ({operands}): descriptors "
            + ", ".join(f"{form} {forms[form]}" for form in FORMS),
            nearest_location(group[0]),
        )
