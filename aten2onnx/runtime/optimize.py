"""Re-fuse what the exporter decomposed: the nodes one ATen op became run again as that ATen op.

aten2onnx stamps every node with the ATen overload it came from (`aten_op` in metadata_props) and
names it `<fx node>/<op type>`. Where ONNX has no single op for an ATen op at the target opset
(gelu before opset 20, silu, attention before 23), its nodes form a group; the runtime replaces a group it recognises
by one node in the internal domain `aten2onnx.fused`, whose kernel is the ATen op itself: fewer
kernels, and bitwise eager's result. Only groups that exactly match the expected shape are fused,
so a hand-written decomposition in user code (other metadata) is left alone.
"""

from __future__ import annotations

import collections
from typing import Callable

import onnx
from onnx import numpy_helper

DOMAIN = "aten2onnx.fused"


Group = list[onnx.NodeProto]
# A recogniser gets a group (in graph order), the names it reads from outside, and the model's
# constants; it returns the fused node's (op_type, inputs, attributes), or None to leave it alone.
Recogniser = Callable[[Group, list[str], dict[str, onnx.TensorProto]], tuple[str, list[str], dict] | None]


def _counts(group: Group) -> collections.Counter:
    return collections.Counter(n.op_type for n in group)


def _gelu(group: Group, external: list[str], constants: dict) -> tuple[str, list[str], dict] | None:
    if len(external) != 1:
        return None
    if _counts(group) == collections.Counter({"Mul": 3, "Erf": 1, "Add": 1}):
        return "Gelu", external, {"approximate": "none"}
    if _counts(group) == collections.Counter({"Mul": 6, "Add": 2, "Tanh": 1}):
        return "Gelu", external, {"approximate": "tanh"}
    return None


def _silu(group: Group, external: list[str], constants: dict) -> tuple[str, list[str], dict] | None:
    ok = len(external) == 1 and _counts(group) == collections.Counter({"Sigmoid": 1, "Mul": 1})
    return ("Silu", external, {}) if ok else None


def _scalar(name: str, constants: dict) -> float | None:
    proto = constants.get(name)
    if proto is None:
        return None
    value = numpy_helper.to_array(proto)
    return float(value) if value.size == 1 else None


def _attention(group: Group, external: list[str], constants: dict) -> tuple[str, list[str], dict] | None:
    """softmax(q k^T * scale [masked]) v, as the exporter decomposes scaled_dot_product_attention."""
    counts = _counts(group)
    base = collections.Counter({"Transpose": 1, "MatMul": 2, "Mul": 1, "Softmax": 1})
    masks = (collections.Counter(), collections.Counter({"Where": 1}), collections.Counter({"Add": 1}))
    if base - counts or counts - base not in masks:
        return None
    by_type = {n.op_type: n for n in group}
    first, second = [n for n in group if n.op_type == "MatMul"]
    transpose, mul, softmax = by_type["Transpose"], by_type["Mul"], by_type["Softmax"]
    perm = list(next((a.ints for a in transpose.attribute if a.name == "perm"), []))
    rank = len(perm)
    if rank < 2 or perm != list(range(rank - 2)) + [rank - 1, rank - 2] or first.input[1] != transpose.output[0]:
        return None
    if mul.input[0] != first.output[0] or (scale := _scalar(mul.input[1], constants)) is None:
        return None
    scores, mask = mul.output[0], ""
    if "Where" in by_type:
        where = by_type["Where"]
        if where.input[1] != scores or _scalar(where.input[2], constants) != float("-inf"):
            return None
        mask, scores = where.input[0], where.output[0]
    elif "Add" in by_type:
        add = by_type["Add"]
        if add.input[0] != scores:
            return None
        mask, scores = add.input[1], add.output[0]
    axis = next((a.i for a in softmax.attribute if a.name == "axis"), -1)
    if softmax.input[0] != scores or axis not in (-1, rank - 1) or second.input[0] != softmax.output[0]:
        return None
    return "Attention", [first.input[0], transpose.input[0], second.input[1], mask], {"scale": scale}


PATTERNS: dict[str, Recogniser] = {
    "aten::gelu.default": _gelu,
    "aten::silu.default": _silu,
    "aten::scaled_dot_product_attention.default": _attention,
}


def _meta(node: onnx.NodeProto, key: str) -> str | None:
    return next((p.value for p in node.metadata_props if p.key == key), None)


def fuse_exported_ops(nodes: list[onnx.NodeProto], graph_outputs: set[str],
                      constants: dict[str, onnx.TensorProto]) -> list[onnx.NodeProto]:
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
    group = [nodes[i] for i in members]
    produced = {out for node in group for out in node.output}
    external = list(dict.fromkeys(name for node in group for name in node.input
                                  if name and name not in produced and name not in constants))
    escaping = [out for out in produced if out in graph_outputs or any(c not in inside for c in consumers.get(out, []))]
    if len(escaping) != 1:
        return None
    found = PATTERNS[op](group, external, constants)
    if found is None:
        return None
    op_type, inputs, attrs = found
    node = onnx.helper.make_node(op_type, inputs, escaping, name=f"{scope}/{op_type}", domain=DOMAIN, **attrs)
    node.metadata_props.extend(group[-1].metadata_props)
    return node
