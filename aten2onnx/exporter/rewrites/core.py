"""What the ONNX-level rewrites share: the record that declares a rewrite (its name, what it preserves, its
pass), who reads each value (_Uses), the groups of nodes rewrites keep whole, and how new nodes take a node's place."""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import Any, Callable, Literal

import torch

from aten2onnx.ir import lazy
from aten2onnx.ir.builder import GraphBuilder, Node, Subgraph, Value

CONTRIB_DOMAIN = "com.microsoft"

# What a rewrite leaves of what the graph computes, in onnxruntime and in aten2onnx.runtime. bitwise: every
# result, bit for bit (NaN where NaN), as each runtime's kernels compute the graph as written (onnxruntime's own
# fusions of the graph before the rewrite may round otherwise: tests/test_rewrites.py lists where); rounding: the
# same arithmetic rounded otherwise (a batch norm folded into a weight, a sum on integers rather than on floats, a
# weight computed once by other kernels); onnxruntime-only: onnxruntime's contrib ops, which onnxruntime and
# aten2onnx.runtime alone run, each rounding as its kernel does.
Preserves = Literal["bitwise", "rounding", "onnxruntime-only"]


@dataclasses.dataclass
class Context:
    """What a rewrite reads besides the node list: the builder that makes new nodes and weights, the graph's
    outputs (which keep their Values), the module tensors folded weights are computed from (rewrites append to
    it), and optimize()'s same_call and onnxruntime."""

    g: GraphBuilder
    outputs: list[Value]
    sources: list[torch.Tensor]
    same_call: Callable[[Node, Node], bool] | None
    onnxruntime: bool


def _always(ctx: Context) -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """One step of the optimizer's ordered list: where when(ctx), the node list becomes run(nodes, ctx)."""

    name: str
    preserves: Preserves
    run: Callable[[list[Node], Context], list[Node]]
    when: Callable[[Context], bool] = _always


# ops never folded or merged: random (two draws differ), quantization (a weight's DequantizeLinear is what
# the runtime's integer kernels look for), and those with side outputs that a fold would lose
_KEEP = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                   "Bernoulli", "Dropout", "DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear",
                   "If", "Loop", "Scan"})


class _Uses:
    """Who reads each value: (node, input index) pairs, and the values that must keep their producer
    (graph outputs, values control-flow bodies or exact calls read)."""

    def __init__(self, nodes: list[Node], outputs: list[Value]) -> None:
        self.readers: dict[int, list[tuple[Node, int]]] = {}
        for node in nodes:
            for i, v in enumerate(node.inputs):
                if v is not None:
                    self.readers.setdefault(id(v), []).append((node, i))
        self.pinned = {id(v) for v in outputs}
        for node in nodes:
            if node.call is not None:
                self.pinned.update(id(v) for v in node.call.inputs if v is not None)
                self.pinned.update(id(v) for v in node.call.outputs if v is not None)
            for attr in node.attrs.values():
                if isinstance(attr, Subgraph):
                    self.pinned.update(id(v) for v in attr.outer_refs())

    def only_reader(self, value: Value) -> Node | None:
        readers = self.readers.get(id(value), [])
        if id(value) in self.pinned or len({id(n) for n, _ in readers}) != 1:
            return None
        return readers[0][0]

    def replace(self, old: Value, new: Value) -> bool:
        """Every reader of old reads new instead; False (nothing done) where old is pinned."""
        if id(old) in self.pinned:
            return False
        for node, i in self.readers.pop(id(old), []):
            node.inputs[i] = new
            self.readers.setdefault(id(new), []).append((node, i))
        return True


def _scope(node: Node) -> str:
    """The FX node a node was translated from (nodes are named `<fx node>/<op type>`)."""
    return node.name.split("/", 1)[0]


class _Groups:
    """How many nodes each FX node became. A rewrite that removes or rewires a node of a group of several
    (an ATen op spelled by several nodes) would break the group, which aten2onnx.runtime re-fuses into
    the ATen op's own kernel (gelu, attention: runtime/optimize.py): rewrites touch a node of such a group
    only together with another node of the same group."""

    def __init__(self, nodes: list[Node]) -> None:
        self.sizes = collections.Counter(_scope(n) for n in nodes)
        # a group holding one of onnxruntime's contrib ops is no pattern the runtime re-fuses: its
        # layout nodes may cancel against their neighbours'
        self.free = {_scope(n) for n in nodes if n.domain == CONTRIB_DOMAIN}

    def alone(self, node: Node) -> bool:
        return self.sizes[_scope(node)] == 1 or _scope(node) in self.free

    def may_join(self, node: Node, other: Node) -> bool:
        """Whether node may be rewired to read past other (other stays, whole, for its other readers)."""
        return (_scope(node) == _scope(other) or (self.alone(node) and self.alone(other))
                or _scope(node) in self.free)


def _constant(value: Value | None) -> bool:
    return value is None or (value.kind in ("const", "initializer") and value.const is not None)


def _scalar(value: Value | None) -> bool:
    """Whether value has one element (DynamicQuantizeLinear's scale and zero point always do)."""
    if value is None:
        return False
    producer = value.producer
    if producer is not None and producer.op_type == "DynamicQuantizeLinear" and value is not producer.outputs[0]:
        return True
    return value.shape is not None and all(isinstance(d, int) for d in value.shape) and math.prod(value.shape) == 1


def _one_value(value: Value | None) -> torch.Tensor | None:
    """A constant whose elements are all equal, as a 0-d tensor (None: no zero point, 0-d zero)."""
    if value is None or value.const is None or value.const.numel() == 0 or lazy.is_lazy(value.const):
        return None
    flat = value.const.reshape(-1)
    return flat[0].clone() if bool((flat == flat[0]).all()) else None


def _plain_add(node: Node | None) -> bool:
    return (node is not None and node.op_type == "Add" and not node.domain and node.call is None
            and len(node.inputs) == 2 and None not in node.inputs)


def _in_place_of(node: Node, op_type: str, inputs: list[Value | None], attrs: dict[str, Any], domain: str = "",
                 outputs: list[Value] | None = None) -> Node:
    """A node op_type(inputs) making node's outputs (or the given ones) in its place, under its name and
    provenance."""
    made = Node(op_type, list(inputs), list(node.outputs if outputs is None else outputs), attrs, domain, node.name,
                dict(node.meta))
    for value in made.outputs:
        value.producer = made
    return made


def _made_since(g: GraphBuilder, first: int, node: Node, y: Value) -> list[Node] | None:
    """The nodes the builder made from index `first` on, taken out of it, the last (y's producer) making
    node's outputs in y's place: node's replacement. None where y is not the last node's (a fold)."""
    made = g.nodes[first:]
    del g.nodes[first:]
    last = y.producer
    if last is None or not made or last is not made[-1]:
        return None
    last.outputs = list(node.outputs)
    for out in last.outputs:
        out.producer = last
    return made


def _rewrite_each(g: GraphBuilder, nodes: list[Node], outputs: list[Value],
                  rewrite: Callable[[GraphBuilder, Node, _Uses], list[Node] | None]) -> list[Node]:
    """nodes with each node that rewrite(g, node, uses) replaces by new nodes replaced by them."""
    uses = _Uses(nodes, outputs)
    result: list[Node] = []
    for node in nodes:
        made = rewrite(g, node, uses)
        result.extend([node] if made is None else made)
    return result
