"""The house's floors, read from the sources' own imports (no import executed).

- `kernels/`: no import cycle, counting imports inside functions too; torch imported only by
  the torch layer (`ops.py`; `torch_device.py` imports it on first use for the others); a
  function-level import of this package only where it reaches the optional torch layer
  (`cute_lowering.kernels.ops`, from the public API modules), never to dodge a cycle.
- `lowering/`: no cycle among module-level imports.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# folder -> the name it is imported as (pyproject's package-dir)
PACKAGE = {"kernels": "cute_lowering.kernels", "lowering": "cute_lowering"}

# the floors of kernels/, top first: a module imports only from floors below its own
KERNEL_FLOORS = [
    {"fmha"},  # the public API (attention; its NVFP4 output calls nvfp4.compute_global_scale)
    {"nvfp4"},  # the public API (quantize, dequantize, compute_global_scale)
    {"ops"},  # the torch ops and their launch path
    {"inputs"},  # the input rules of both
    {"fmha_paths"},  # the compile function over the FMHA paths
    {"fmha_sm90"},  # the Hopper FMHA's configuration, planning and compile functions
    {"fmha_sm90_split"},  # the packed split-KV kernel
    {"fmha_sm90_kernel"},  # the producer/consumer kernel
    {"fmha_sm90_schedule", "fmha_sm90_softmax", "fmha_sm90_epilogue"},  # its mixins
    {"fmha_sm90_parts", "fmha_sm90_config", "fmha_sm90_knobs"},  # their shared pieces, the configuration value, the knobs
    {"fmha_decode"},
    {"fmha_sm80", "nvfp4_kernels"},
    {"attention_parts", "exp2"},
    {"nvfp4_block", "cutedsl_compat", "torch_device", "reference"},
]
OPTIONAL_TORCH = {("fmha", "cute_lowering.kernels.ops"), ("nvfp4", "cute_lowering.kernels.ops")}  # (module, what it imports inside a function)


def _imports(path: pathlib.Path, package: str):
    """[(imported module, at module level?)] of one file, for imports of `package` (the folder's
    import name) and of torch."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            if name == package or name.startswith(package + ".") or name.split(".")[0] == "torch":
                found.append((name, id(node) in top))
    return found


def _graph(package: str, module_level_only: bool):
    files = {p.stem: p for p in (ROOT / package).glob("*.py")} if package == "kernels" else {
        ".".join((PACKAGE[package],) + p.relative_to(ROOT / package).with_suffix("").parts): p
        for p in (ROOT / package).rglob("*.py")}
    graph = {}
    for name, path in files.items():
        key = name if package == "kernels" else name.removesuffix(".__init__")
        edges = set()
        for imported, at_top in _imports(path, PACKAGE[package]):
            if module_level_only and not at_top:
                continue
            target = imported.removeprefix(PACKAGE["kernels"] + ".") if package == "kernels" else imported
            if package == "kernels":
                target = target.split(".")[0]
                if target in files and target != key:
                    edges.add(target)
            else:
                while target and target not in {k.removesuffix(".__init__") for k in files}:
                    target = target.rpartition(".")[0]
                if target and target != key and not key.startswith(target + "."):
                    edges.add(target)
        graph[key] = edges
    return graph


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_kernels_have_no_import_cycle():
    graph = _graph("kernels", module_level_only=False)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_kernels_import_down_the_floors():
    floor = {name: i for i, names in enumerate(KERNEL_FLOORS) for name in names}
    modules = {p.stem for p in (ROOT / "kernels").glob("*.py")} - {"__init__"}
    assert modules <= set(floor), f"modules without a floor in KERNEL_FLOORS: {sorted(modules - set(floor))}"
    for name, targets in _graph("kernels", module_level_only=False).items():
        if name == "__init__":
            continue
        for target in targets:
            if (name, f"{PACKAGE['kernels']}.{target}") in OPTIONAL_TORCH:
                continue
            assert floor[target] > floor[name], f"kernels/{name}.py (floor {floor[name]}) imports kernels/{target}.py (floor {floor[target]})"


def test_only_the_torch_layer_imports_torch():
    for path in (ROOT / "kernels").glob("*.py"):
        for imported, at_top in _imports(path, PACKAGE["kernels"]):
            if imported.split(".")[0] != "torch":
                continue
            if path.stem == "ops" or (path.stem == "torch_device" and not at_top):
                continue
            pytest.fail(f"kernels/{path.name} imports {imported}")


def test_function_level_imports_only_reach_the_optional_torch_layer():
    for path in (ROOT / "kernels").glob("*.py"):
        for imported, at_top in _imports(path, PACKAGE["kernels"]):
            if at_top or not imported.startswith(PACKAGE["kernels"] + "."):
                continue
            assert (path.stem, imported) in OPTIONAL_TORCH, f"kernels/{path.name}: {imported} imported inside a function"


def test_lowering_has_no_module_level_import_cycle():
    graph = _graph("lowering", module_level_only=True)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))
