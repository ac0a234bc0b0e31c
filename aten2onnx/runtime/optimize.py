"""Re-fuse what the exporter decomposed: the nodes one ATen op became run again as that ATen op.

aten2onnx stamps every node with the ATen overload it came from (`aten_op` in metadata_props) and
names it `<fx node>/<op type>`. Where ONNX has no single op for an ATen op at the target opset
(gelu before opset 20, silu, attention before 23), its nodes form a group; the runtime replaces a group
by one node in the internal domain `aten2onnx.fused`, whose kernel is the ATen op itself: fewer
kernels, and bitwise eager's result. Metadata is only a hint (a file can say anything): a group is fused
only when its nodes, wiring, attributes and constants are exactly what the exporter writes, and the
fused node keeps the group, which its kernel runs instead whenever the inputs are not of the dtypes
and ranks the fused op assumes.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import math
from typing import Any, Callable, Union

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

DOMAIN = "aten2onnx.fused"
_FLOATS = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
                     onnx.TensorProto.BFLOAT16})


@dataclasses.dataclass(frozen=True)
class Const:
    """A 0-d float initializer holding `value` (compared after rounding it to the initializer's own
    dtype); value None takes any finite number and binds it under `bind`."""

    value: float | None
    bind: str = ""


@dataclasses.dataclass(frozen=True)
class Node:
    """One node of a group: its op type, its inputs in order (patterns), and the attributes it may
    carry (bound by name; any other attribute refuses the match)."""

    op_type: str
    inputs: tuple["Pattern", ...]
    attributes: tuple[str, ...] = ()
    bind: str = ""  # names the value this node makes, for Same to match it again


@dataclasses.dataclass(frozen=True)
class Same:
    """The value a Node bound under `bind` earlier in the match (a value the group reads twice)."""

    bind: str


# A variable (str) is a value from outside the group, the same name at each of its occurrences.
Pattern = Union[Node, Const, Same, str]


def _n(op_type: str, *inputs: Pattern, attributes: tuple[str, ...] = (), bind: str = "") -> Node:
    return Node(op_type, inputs, attributes, bind)


# The groups the exporter writes (symbolic/opset9*.py), rooted at the group's one escaping value.
_GELU = _n("Mul", _n("Mul", "x", Const(0.5)), _n("Add", _n("Erf", _n("Div", "x", Const(math.sqrt(2)))), Const(1.0)))
# (files written before the erf argument became a Div)
_GELU_BY_MUL = _n("Mul", _n("Mul", "x", Const(0.5)), _n("Add", _n("Erf", _n("Mul", "x", Const(math.sqrt(0.5)))), Const(1.0)))
_GELU_TANH = _n("Mul", _n("Mul", "x", Const(0.5)), _n("Add", _n("Tanh", _n(
    "Mul", _n("Add", "x", _n("Mul", _n("Pow", "x", Const(3.0)), Const(0.044715))),
    Const(math.sqrt(2 / math.pi)))), Const(1.0)))
_GELU_TANH_BY_MUL = _n("Mul", _n("Mul", "x", Const(0.5)), _n("Add", _n("Tanh", _n(
    "Mul", _n("Add", "x", _n("Mul", _n("Mul", _n("Mul", "x", "x"), "x"), Const(0.044715))),
    Const(math.sqrt(2 / math.pi)))), Const(1.0)))
_SILU = _n("Mul", "x", _n("Sigmoid", "x"))
_PRODUCTS = _n("MatMul", "q", _n("Transpose", "k", attributes=("perm",)))
_SCORES = {True: _n("Mul", _PRODUCTS, Const(None, "scale")), False: _PRODUCTS}  # (a scale of 1 is not written)


def _masked(mask_kind: str, scores: Node) -> Node:
    return {
        "none": scores,
        "where": _n("Where", "mask", scores, Const(-math.inf)),
        "add": _n("Add", scores, "mask"),
        # a bool mask added as a bias of 0 and -inf
        "bias": _n("Add", scores, _n("Where", "mask", Const(0.0), Const(-math.inf))),
    }[mask_kind]


_MASK_KINDS = ("none", "where", "add", "bias")


def _attention(mask_kind: str, axes_input: bool | None = None, guard_after: bool = True, scaled: bool = True) -> Node:
    """axes_input None: softmax of the scores; else (a mask, which may mask every key of a row) rows whose
    scores are all -inf give 0, as ATen's safe softmax: the ReduceMax's axes an input (opset 18) or not;
    the row's result replaced (guard_after), or its weights (files written before). scaled: q k^T times a
    scale (not written where the scale is 1)."""
    if axes_input is None:
        return _n("MatMul", _n("Softmax", _masked(mask_kind, _SCORES[scaled]), attributes=("axis",)), "v")
    scores = dataclasses.replace(_masked(mask_kind, _SCORES[scaled]), bind="scores")
    peak = _n("ReduceMax", scores, "axes", attributes=("keepdims",)) if axes_input else \
        _n("ReduceMax", scores, attributes=("axes", "keepdims"))
    empty = _n("Less", peak, Const(None, "lowest"))  # the dtype's lowest finite value: only -inf is below
    if guard_after:
        return _n("Where", empty, Const(0.0), _n("MatMul", _n("Softmax", Same("scores"), attributes=("axis",)), "v"))
    return _n("MatMul", _n("Where", empty, Const(0.0), _n("Softmax", Same("scores"), attributes=("axis",))), "v")


Match = dict  # bindings: variable -> value name, Const.bind -> float, attribute -> value, "dtype" -> elem type
Recogniser = Callable[["_Group"], tuple[str, list[str], dict] | None]


@dataclasses.dataclass
class _Group:
    nodes: list[onnx.NodeProto]
    root: str  # the one value the group gives to the rest of the graph
    constants: dict[str, onnx.TensorProto]

    def match(self, pattern: Node) -> Match | None:
        """Bindings when the whole group is exactly `pattern`, else None."""
        producers = {out: node for node in self.nodes for out in node.output}
        used: list[onnx.NodeProto] = []
        bound: Match = {}
        if not _match(pattern, self.root, producers, self.constants, used, bound):
            return None
        return bound if len(used) == len(self.nodes) else None


def _match(pattern: Pattern, name: str, producers: dict, constants: dict, used: list, bound: Match) -> bool:
    if isinstance(pattern, str):
        if not name or name in producers:
            return False
        return bound.setdefault(pattern, name) == name
    if isinstance(pattern, Const):
        return name not in producers and _constant(constants.get(name), pattern, bound)
    if isinstance(pattern, Same):
        return bool(name) and bound.get(pattern.bind) == name
    node = producers.get(name)
    if node is None or any(node is u for u in used) or node.op_type != pattern.op_type or node.domain \
            or len(node.output) != 1 or len(node.input) != len(pattern.inputs):
        return False
    used.append(node)
    if pattern.bind:
        bound[pattern.bind] = name
    for attr in node.attribute:
        if attr.name not in pattern.attributes:
            return False
        bound[attr.name] = onnx.helper.get_attribute_value(attr)
    return all(_match(p, n, producers, constants, used, bound) for p, n in zip(pattern.inputs, node.input))


def _constant(proto: onnx.TensorProto | None, pattern: Const, bound: Match) -> bool:
    """Whether proto is a 0-d float constant of the pattern's value, all of the group's constants of
    one dtype (recorded under "dtype": the dtype the fused op must see)."""
    if proto is None or proto.data_type not in _FLOATS or list(proto.dims) \
            or bound.setdefault("dtype", proto.data_type) != proto.data_type:
        return False
    try:
        value = numpy_helper.to_array(proto)
    except Exception:  # a malformed constant is simply not the exporter's
        return False
    if value.size != 1:
        return False
    if pattern.value is None:
        number = float(value.astype(np.float64))
        bound[pattern.bind] = number
        return math.isfinite(number)
    return bool(np.asarray(pattern.value).astype(value.dtype) == value)


def _gelu(group: _Group) -> tuple[str, list[str], dict] | None:
    for pattern, approximate in ((_GELU, "none"), (_GELU_BY_MUL, "none"), (_GELU_TANH, "tanh"),
                                 (_GELU_TANH_BY_MUL, "tanh")):
        found = group.match(pattern)
        if found is not None:
            return "Gelu", [found["x"]], {"approximate": approximate, "dtype": found["dtype"]}
    return None


def _silu(group: _Group) -> tuple[str, list[str], dict] | None:
    found = group.match(_SILU)
    return None if found is None else ("Silu", [found["x"]], {})


def _sdpa(group: _Group) -> tuple[str, list[str], dict] | None:
    """softmax(q k^T * scale [masked]) v over the last axis, as the exporter decomposes
    scaled_dot_product_attention: q, k, v of one rank, k transposed in its last two axes."""
    shapes = [(kind, None, True) for kind in _MASK_KINDS] + [
        (kind, axes, after) for kind in _MASK_KINDS for axes in (True, False) for after in (True, False)]
    for (kind, axes_input, after), scaled in itertools.product(shapes, (True, False)):
        found = group.match(_attention(kind, axes_input, after, scaled))
        if found is None or "dtype" not in found:  # (no constant to tell the dtype the fused op must see)
            continue
        perm = list(found.get("perm", []))
        rank = len(perm)
        if rank < 2 or perm != list(range(rank - 2)) + [rank - 1, rank - 2] or found.get("axis") not in (-1, rank - 1):
            return None
        if axes_input is not None and (found.get("keepdims") != 1 or "axes" not in found  # (no axes: every one)
                                       or _axes(found["axes"], group) not in ([-1], [rank - 1])
                                       or found["lowest"] != _lowest(found["dtype"])):
            return None
        inputs = [found["q"], found["k"], found["v"], found.get("mask", "")]
        # the scale as a float64 tensor: a FLOAT attribute would round it to float32 (1e-8 off in float64)
        scale = numpy_helper.from_array(np.array(found.get("scale", 1.0), dtype=np.float64))
        mask = "where" if kind == "bias" else kind  # (a bool mask either way)
        return "Attention", inputs, {"scale": scale, "mask": mask, "rank": rank, "dtype": found["dtype"]}
    return None


def _lowest(elem_type: int) -> float:
    """The lowest finite value of an ONNX float type, as a float."""
    return float(np.finfo(helper.tensor_dtype_to_np_dtype(elem_type)).min) if elem_type != onnx.TensorProto.BFLOAT16 \
        else float(torch.finfo(torch.bfloat16).min)


def _axes(axes: Any, group: _Group) -> list[int] | None:
    """A ReduceMax's axes: its attribute's list, or the int64 constant its axes input names."""
    if isinstance(axes, str):
        proto = group.constants.get(axes)
        if proto is None or proto.data_type != onnx.TensorProto.INT64:
            return None
        try:
            return [int(a) for a in numpy_helper.to_array(proto).reshape(-1)]
        except Exception:  # a malformed constant is simply not the exporter's
            return None
    return list(axes) if isinstance(axes, (list, tuple)) else None


PATTERNS: dict[str, Recogniser] = {
    "aten::gelu.default": _gelu,
    "aten::silu.default": _silu,
    "aten::scaled_dot_product_attention.default": _sdpa,
}


def meta(node: onnx.NodeProto, key: str) -> str | None:
    """A node's metadata value for key (None when it has none)."""
    return next((p.value for p in node.metadata_props if p.key == key), None)


def fuse_exported_ops(nodes: list[onnx.NodeProto], graph_outputs: set[str], constants: dict[str, onnx.TensorProto],
                      allowed: Callable[[str], bool] = lambda key: True) -> list[onnx.NodeProto]:
    """nodes with each recognised group replaced by one fused node (at the group's last node).
    constants: initializers no feed can override. allowed: whether the session lets a model run an
    ATen overload (the fused kernel runs it)."""
    groups: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    for i, node in enumerate(nodes):
        op = meta(node, "aten_op")
        if op in PATTERNS and "/" in node.name and not node.domain:
            groups[(node.name.split("/", 1)[0], op)].append(i)
    groups = {key: members for key, members in groups.items() if allowed(key[1])}
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
    escaping = [out for out in produced if out in graph_outputs or any(c not in inside for c in consumers.get(out, []))]
    if len(escaping) != 1:
        return None
    found = PATTERNS[op](_Group(group, escaping[0], constants))
    if found is None:
        return None
    op_type, inputs, attrs = found
    outside = list(dict.fromkeys(n for n in inputs if n))
    node = onnx.helper.make_node(op_type, inputs, escaping, name=f"{scope}/{op_type}", domain=DOMAIN,
                                 group=_as_graph(group, outside, escaping[0], constants), **attrs)
    node.metadata_props.extend(group[-1].metadata_props)
    return node


def _as_graph(group: list[onnx.NodeProto], inputs: list[str], output: str,
              constants: dict[str, onnx.TensorProto]) -> onnx.GraphProto:
    """The group as a graph of its own (without metadata, so it is never fused again): what the fused
    kernel runs when its inputs are not what the fused op assumes."""
    nodes = []
    for node in group:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        del copy.metadata_props[:]
        nodes.append(copy)
    used = [constants[n] for node in group for n in node.input if n in constants and n not in inputs]
    unique = list({t.name: t for t in used}.values())
    return onnx.helper.make_graph(nodes, "group", [onnx.helper.make_empty_tensor_value_info(n) for n in inputs],
                                  [onnx.helper.make_empty_tensor_value_info(output)], unique)
