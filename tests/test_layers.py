"""The package's layers import in one direction, with no cycles, lazy imports included: read from the
source with `ast`, so an import inside a function counts as much as one at the top of a file."""

from __future__ import annotations

import ast
import pathlib

import pytest

import aten2onnx

PACKAGE = pathlib.Path(aten2onnx.__file__).resolve().parent

# What each layer may import of aten2onnx (besides itself). Modules at the top of the package not
# listed here (the public API, the CLI, verification, coverage, the backend wiring) may import anything.
BASE = {"errors", "_dtypes", "_onnx_graphs", "_torch_compat"}
ALLOWED = {
    "errors": set(),
    "_torch_compat": set(),
    "_dtypes": set(),
    "_onnx_graphs": set(),
    "_aten_node": BASE,
    "_packed_rnn": set(),
    "_fractional_pool": set(),
    "_detection_ops": set(),
    "registry": BASE,
    "ir": BASE | {"_aten_node"},
    "symbolic": BASE | {"registry", "ir", "_packed_rnn", "_fractional_pool", "_detection_ops"},
    "_contrib_math": set(),
    "exporter": BASE | {"_aten_node", "_packed_rnn", "_fractional_pool", "_detection_ops", "_contrib_math", "registry",
                        "ir", "symbolic"},
    # (_packed_rnn, _fractional_pool and _detection_ops define the aten2onnx:: ops capture makes; _contrib_math the
    # arithmetic of onnxruntime's contrib ops, which the exporter's capture ops and the runtime's kernels share)
    "runtime": BASE | {"_aten_node", "_packed_rnn", "_fractional_pool", "_detection_ops", "_contrib_math"},
}


def modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("aten2onnx",) + path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(name: str, path: pathlib.Path, known: dict[str, pathlib.Path]) -> set[str]:
    """The aten2onnx modules a module imports."""
    return imported(path.read_text(), name, path.name == "__init__.py", known)


def imported(source: str, name: str, is_package: bool, known: dict[str, pathlib.Path]) -> set[str]:
    """The aten2onnx modules the source of module `name` imports, each also bringing in the packages above
    it below the root (importing aten2onnx.runtime.session runs aten2onnx/runtime/__init__.py first), but
    for the importer's own packages, which are already being imported when it runs."""
    package = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()
    tree = ast.parse(source)
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and _type_checking(block.test)
                   for statement in block.body for n in ast.walk(statement)}
    for node in ast.walk(tree):
        if id(node) in typing_only:  # `if TYPE_CHECKING:` imports run for type checkers only
            continue
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in known else base)
    found = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
        # and each package above it that is not the importer's own (whose __init__ already runs)
        parent = target.rpartition(".")[0]
        while parent.count(".") >= 1 and not (name == parent or name.startswith(parent + ".")):
            found.add(parent)
            parent = parent.rpartition(".")[0]
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def layer(name: str) -> str:
    return name.split(".")[1] if "." in name else ""


def test_the_reader_resolves_relative_imports_inside_functions():
    source = ("def f():\n    from aten2onnx.runtime import session\n    import aten2onnx.exporter.capture\n"
              "    from .kernel import Kernel\n    from ..symbolic import opset9\n")
    assert imported(source, "aten2onnx.runtime.fold", False, modules()) == {
        "aten2onnx.runtime.session", "aten2onnx.runtime.kernel", "aten2onnx.exporter", "aten2onnx.exporter.capture",
        "aten2onnx.symbolic", "aten2onnx.symbolic.opset9"}


def test_the_reader_sees_lazy_imports_and_packages():
    edges = graph()
    assert "aten2onnx.exporter" in edges["aten2onnx._backend"]  # a top-level import
    assert "aten2onnx.runtime.fold" in edges["aten2onnx._backend"]  # inside a function
    assert "aten2onnx.ir" in edges["aten2onnx.symbolic.opset9"]  # from aten2onnx.ir import GraphBuilder
    assert "aten2onnx.ir" in edges["aten2onnx.exporter.model"]  # from aten2onnx.ir.builder import ... runs ir first
    assert "aten2onnx.exporter" not in edges["aten2onnx.exporter.model"]


@pytest.mark.parametrize("lower", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(lower):
    wrong = sorted(f"{name} imports {target}" for name, targets in graph().items() if layer(name) == lower
                   for target in targets if layer(target) != lower and layer(target) not in ALLOWED[lower])
    assert wrong == []


def test_no_import_cycles():
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert cycles == []
