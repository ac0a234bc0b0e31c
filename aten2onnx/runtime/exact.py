"""Exact mode: run each op of an exact export as the ATen call eager PyTorch made.

An exact export (`aten2onnx.export(..., exact=True)`, model metadata `aten2onnx.exact` = "1") keeps its
standard ONNX nodes, and the node that makes an FX node's result carries that node's ATen call
(_aten_node.EXACT_CALL: an ATen node in the fallback encoding, whose outputs are values the nodes made
for that FX node compute). Here each call takes the place of those nodes: the values it makes are
computed by the call, and the nodes that computed them go, with whatever only they needed. The call
is an ATen node like any other, so the safety rule decides whether it may run (runtime/safety.py).
Metadata is a claim a file makes: a call may only make values its own group of nodes makes (named
`<fx node>/...` like the carrier), so it can never shadow an input, a weight or another op's value.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

import onnx

from aten2onnx import _aten_node
from aten2onnx._onnx_graphs import graphs
from aten2onnx.errors import InvalidModelError
from aten2onnx.runtime.optimize import meta


def _scope(node: onnx.NodeProto) -> str | None:
    return node.name.split("/", 1)[0] if "/" in node.name else None


def requires_grad(model: onnx.ModelProto) -> frozenset[str]:
    """The initializers an exact export says require grad in eager (InvalidModelError if it says so badly)."""
    text = next((p.value for p in model.metadata_props if p.key == _aten_node.EXACT_REQUIRES_GRAD), "[]")
    try:
        names = json.loads(text)
    except ValueError as e:
        raise InvalidModelError(f"metadata {_aten_node.EXACT_REQUIRES_GRAD!r} is not JSON: {e}") from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InvalidModelError(f"metadata {_aten_node.EXACT_REQUIRES_GRAD!r} must be a list of initializer names")
    return frozenset(names)


def exact_calls(nodes: list[onnx.NodeProto], graph_outputs: Iterable[str],
                reads: Callable[[onnx.NodeProto], Iterable[str]]) -> list[onnx.NodeProto]:
    """nodes with each exact call in place of the nodes it replaces (InvalidModelError on a call that
    does not replace values of its own group). reads(node): every name a node reads, bodies included."""
    calls: list[tuple[int, onnx.NodeProto]] = []
    for i, node in enumerate(nodes):
        text = meta(node, _aten_node.EXACT_CALL)
        if text is None:
            continue
        try:
            call = _aten_node.decode_call(text)
        except ValueError as e:
            raise InvalidModelError(f"node {node.name!r}: its {_aten_node.EXACT_CALL} metadata is not an ATen call: {e}")
        calls.append((i, call))
    if not calls:
        return nodes
    group_made: dict[str | None, set[str]] = {}
    last: dict[str | None, int] = {}
    for i, node in enumerate(nodes):
        group_made.setdefault(_scope(node), set()).update(o for o in node.output if o)
        last[_scope(node)] = i
    replaced: dict[str, str] = {}  # a value a call makes -> the call's carrier node name
    after: dict[int, list[onnx.NodeProto]] = {}
    for i, call in calls:
        carrier = nodes[i]
        scope = _scope(carrier)
        for name in (o for o in call.output if o):
            if scope is None or name not in group_made[scope]:
                raise InvalidModelError(f"node {carrier.name!r}: its exact call makes {name!r}, which no node of "
                                        f"its own group ({scope or 'none'}/...) makes")
            if name in replaced:
                raise InvalidModelError(f"node {carrier.name!r}: its exact call makes {name!r}, which the exact "
                                        f"call of {replaced[name]!r} makes too")
            replaced[name] = carrier.name
        call.name = f"{scope}/ExactCall"
        after.setdefault(last[scope], []).append(call)
    taken = {o for node in nodes for o in node.output} | {i for node in nodes for i in node.input}
    rewritten: list[onnx.NodeProto] = []
    for i, node in enumerate(nodes):
        if any(o in replaced for o in node.output):
            # what the call makes now: this node's result of that name is renamed out of the way (and
            # dropped below unless something else of the node is needed)
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            for k, name in enumerate(copy.output):
                if name in replaced:
                    copy.output[k] = _fresh(f"{name}.replaced", taken)
            node = copy
        rewritten.append(node)
        rewritten.extend(after.get(i, ()))
    return _live(rewritten, graph_outputs, reads)


def _fresh(base: str, taken: set[str]) -> str:
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}.{n}"
    taken.add(name)
    return name


def _live(nodes: list[onnx.NodeProto], graph_outputs: Iterable[str],
          reads: Callable[[onnx.NodeProto], Iterable[str]]) -> list[onnx.NodeProto]:
    """The nodes the graph outputs need, in order."""
    producer = {o: i for i, node in enumerate(nodes) for o in node.output if o}
    needed = set()
    stack = [producer[name] for name in graph_outputs if name in producer]
    while stack:
        i = stack.pop()
        if i in needed:
            continue
        needed.add(i)
        stack.extend(producer[name] for name in reads(nodes[i]) if name in producer)
    return [node for i, node in enumerate(nodes) if i in needed]


def call_keys(model: onnx.ModelProto) -> set[str]:
    """The ATen overloads an exact export's calls run (calls that do not decode name none)."""
    calls = onnx.GraphProto()
    for graph in [g for root in [model.graph, *model.functions] for g in graphs(root)]:
        for node in graph.node:
            text = meta(node, _aten_node.EXACT_CALL)
            if text is not None:
                try:
                    calls.node.append(_aten_node.decode_call(text))
                except ValueError:
                    pass
    return _aten_node.overload_keys(calls)
