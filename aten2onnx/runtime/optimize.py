"""Re-fuse what the exporter decomposed: the nodes one ATen op became run again as that ATen op.

aten2onnx stamps every node with the ATen overload it came from (`aten_op` in metadata_props) and
names it `<fx node>/<op type>`. Where ONNX has no single op for an ATen op at the target opset
(gelu before opset 20, silu), its nodes form a group; the runtime replaces a group it recognises
by one node in the internal domain `aten2onnx.fused`, whose kernel is the ATen op itself: fewer
kernels, and bitwise eager's result. Only groups that exactly match the expected shape are fused,
so a hand-written decomposition in user code (other metadata) is left alone.
"""

from __future__ import annotations

import collections
from typing import Callable

import onnx

DOMAIN = "aten2onnx.fused"


def _gelu(ops: collections.Counter) -> dict | None:
    if ops == collections.Counter({"Mul": 3, "Erf": 1, "Add": 1}):
        return {"approximate": "none"}
    if ops == collections.Counter({"Mul": 6, "Add": 2, "Tanh": 1}):
        return {"approximate": "tanh"}
    return None


def _silu(ops: collections.Counter) -> dict | None:
    return {} if ops == collections.Counter({"Sigmoid": 1, "Mul": 1}) else None


# aten overload -> (fused op type, recogniser of the group's op counts returning the attributes)
PATTERNS: dict[str, tuple[str, Callable[[collections.Counter], dict | None]]] = {
    "aten::gelu.default": ("Gelu", _gelu),
    "aten::silu.default": ("Silu", _silu),
}


def _meta(node: onnx.NodeProto, key: str) -> str | None:
    return next((p.value for p in node.metadata_props if p.key == key), None)


def fuse_exported_ops(nodes: list[onnx.NodeProto], graph_outputs: set[str], constants: set[str]) -> list[onnx.NodeProto]:
    """nodes with each recognised group replaced by one fused node (at the group's last node)."""
    groups: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    for i, node in enumerate(nodes):
        op = _meta(node, "aten_op")
        if op in PATTERNS and "/" in node.name and not node.domain:
            groups[(node.name.split("/", 1)[0], op)].append(i)
    if not groups:
        return nodes
    consumers: dict[str, list[int]] = collections.defaultdict(list)
    for i, node in enumerate(nodes):
        for name in node.input:
            consumers[name].append(i)
    replace: dict[int, onnx.NodeProto | None] = {}
    for (scope, op), members in groups.items():
        fused = _fuse(nodes, members, scope, op, consumers, graph_outputs, constants)
        if fused is not None:
            for i in members:
                replace[i] = None
            replace[members[-1]] = fused
    return [replace.get(i, node) for i, node in enumerate(nodes) if replace.get(i, node) is not None]


def _fuse(nodes, members, scope, op, consumers, graph_outputs, constants) -> onnx.NodeProto | None:
    inside = set(members)
    produced = {out for i in members for out in nodes[i].output}
    external = {name for i in members for name in nodes[i].input if name and name not in produced and name not in constants}
    escaping = [out for out in produced if out in graph_outputs or any(c not in inside for c in consumers.get(out, []))]
    if len(external) != 1 or len(escaping) != 1:
        return None
    op_type, recognise = PATTERNS[op]
    attrs = recognise(collections.Counter(nodes[i].op_type for i in members))
    if attrs is None:
        return None
    node = onnx.helper.make_node(op_type, [external.pop()], escaping, name=f"{scope}/{op_type}", domain=DOMAIN, **attrs)
    node.metadata_props.extend(nodes[members[-1]].metadata_props)
    return node
