"""The launch a GPU function runs under, as the IR states it: which ops are kernels, the CTA's
thread shape and the cluster's CTA shape (`nvvm.reqntid`, `cutlass_launch_facts`, ...)."""

from __future__ import annotations

from typing import Iterable

from cute_lowering.mlir import ir

def _int_attr(op, name: str) -> int | None:
    try:
        attr = op.attributes[name]
    except (KeyError, IndexError):
        return None
    return int(attr.value) if isinstance(attr, (ir.IntegerAttr, ir.BoolAttr)) else None


def block_shape(func_op) -> tuple[int, int, int] | None:
    """The CTA's thread shape when the IR fixes it (`nvvm.reqntid`, CuTeDSL's launch facts, `gpu.known_block_size`)."""
    attrs = func_op.attributes
    found = None
    for name in ("nvvm.reqntid", "gpu.known_block_size"):
        if name in attrs:
            found = attrs[name]
            break
    else:
        facts = attrs["cutlass_launch_facts"] if "cutlass_launch_facts" in attrs else None
        if isinstance(facts, ir.DictAttr) and "exact_block_dim" in facts:
            found = facts["exact_block_dim"]
    if not isinstance(found, (ir.DenseI32ArrayAttr, ir.DenseI64ArrayAttr)):
        return None
    dims = [int(x) for x in found] + [1, 1, 1]
    return (dims[0], dims[1], dims[2])


def is_kernel(op) -> bool:
    attrs = op.attributes
    return op.name == "cuda.kernel" or "gpu.kernel" in attrs or "nvvm.kernel" in attrs or "cute.kernel" in attrs


def gpu_functions(module_op) -> Iterable:
    """Kernels and device functions: function-like ops inside a `gpu.module` (at the top
    level of the module, or the module itself)."""
    root = _operation(module_op)
    modules = [root] if root.name == "gpu.module" else [
        op.operation for region in root.regions for block in region.blocks for op in block.operations
        if op.operation.name == "gpu.module"
    ]
    for gpu_module in modules:
        for inner in gpu_module.regions[0].blocks[0].operations:
            inner = inner.operation
            if inner.name in ("cuda.kernel", "gpu.func", "func.func", "llvm.func") and len(inner.regions[0].blocks):
                yield inner


def _operation(op) -> ir.Operation:
    """The generic `Operation` (an OpView's `.name` may be its symbol name, e.g. func.func)."""
    return op.operation if hasattr(op, "operation") else op


def _walk(op):
    yield op
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield from _walk(inner.operation)


# the terminators whose operands the walk reads: yields (scf.if/for/while/index_switch


def cluster_size(func_op) -> int | None:
    """The number of CTAs in the launch's cluster when the IR fixes it (CuTeDSL's launch facts:
    `exact_cluster_dim`; `nvvm.cluster_dim`); 1 for a launch CuTeDSL records as not a cluster
    launch; None when not known."""
    attrs = func_op.attributes
    found = attrs["nvvm.cluster_dim"] if "nvvm.cluster_dim" in attrs else None
    facts = attrs["cutlass_launch_facts"] if "cutlass_launch_facts" in attrs else None
    if found is None and isinstance(facts, ir.DictAttr):
        if "exact_cluster_dim" in facts:
            found = facts["exact_cluster_dim"]
        elif "cluster_launch" in facts and isinstance(facts["cluster_launch"], ir.BoolAttr) and not facts["cluster_launch"].value:
            return 1
    if not isinstance(found, (ir.DenseI32ArrayAttr, ir.DenseI64ArrayAttr)):
        return _launched_cluster_size(func_op)
    size = 1
    for x in found:
        size *= int(x)
    return size


def _launched_cluster_size(func_op) -> int | None:
    """The cluster size the host code launches the kernel with, when every launch of it in the
    module says the same constant one (CuTeDSL before 4.8 records no launch facts on the kernel:
    `cuda.launch_cfg.cluster_dim(%cfg, %x, %y, %z)` on the config `cuda.launch_ex` takes)."""
    try:
        name = func_op.attributes["sym_name"].value
        top = func_op.parent.parent  # kernel -> gpu.module -> module
    except (AttributeError, KeyError, IndexError):
        return None
    sizes: set = set()

    def visit(op):
        if op.name == "cuda.launch_ex" and "callee" in op.attributes and str(op.attributes["callee"]).endswith(f"@{name}"):
            config = list(op.operands)[0] if len(list(op.operands)) else None
            dims = [use.owner for use in config.uses if use.owner.name == "cuda.launch_cfg.cluster_dim"] if config is not None else []
            if not dims:
                sizes.add(1)
            for dim in dims:
                size = 1
                for v in list(dim.operands)[1:]:
                    owner = v.owner
                    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
                        sizes.add(None)
                        break
                    size *= int(owner.attributes["value"].value)
                else:
                    sizes.add(size)
        return ir.WalkResult.ADVANCE

    for region in top.regions:
        for block in region.blocks:
            for op in block.operations:
                if op.operation.name == "func.func":
                    op.operation.walk(visit)
    return sizes.pop() if len(sizes) == 1 else None
