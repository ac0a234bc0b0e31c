"""Model-local functions (ModelProto.functions), run by inlining: each call node is replaced by the
function's body, its values renamed apart, at session creation; the graph then runs as any other.

A file is untrusted: functions are checked before anything is inlined (each defined once, names
that exist, a body that reads only its inputs and its own values, no function that calls itself
through any chain, nesting and expanded size within limits), each refusal an InvalidModelError.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

import onnx

from aten2onnx import _aten_node
from aten2onnx._onnx_graphs import bodies
from aten2onnx.errors import InvalidModelError

# Function calls nested deeper than this (a function calling a function ...) are refused.
MAX_CALL_DEPTH = 32
# Bodies (If branches, Loop bodies) nested deeper than this inside calls and functions are refused.
MAX_NESTING = 32
# Nodes the inlined model may have: a few functions each calling the next several times would
# otherwise expand exponentially.
MAX_INLINED_NODES = 4_000_000

FunctionId = tuple[str, str, str]  # (domain, name, overload)


def _domain(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


def _id(node: onnx.NodeProto | onnx.FunctionProto) -> FunctionId:
    name = node.op_type if isinstance(node, onnx.NodeProto) else node.name
    return _domain(node.domain), name, node.overload


@dataclasses.dataclass
class Inlined:
    """The main graph's nodes with every call inlined (nodes without calls are the model's own
    objects), and the opsets the functions import that the model does not. constants: the Constant
    nodes among them that came from function bodies, each as the initializer it can be (the runtime's
    fusion reads constants from initializers, as the flat export has them)."""

    nodes: list[onnx.NodeProto]
    opsets: dict[str, int]
    constants: dict[int, onnx.TensorProto] = dataclasses.field(default_factory=dict)

    def hoisted(self) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
        """The nodes without the function bodies' Constant nodes, and those constants as initializers."""
        if not self.constants:
            return self.nodes, []
        return [n for n in self.nodes if id(n) not in self.constants], list(self.constants.values())


def inline_functions(model: onnx.ModelProto) -> Inlined:
    """The main graph's nodes with the model's local functions inlined (InvalidModelError on a
    malformed or recursive function)."""
    if not model.functions:
        return Inlined(list(model.graph.node), {})
    functions = _check_functions(model)
    opsets = _opsets(model)
    _check_size(model.graph, functions)
    inliner = _Inliner(functions, _names(model))
    nodes = inliner.nodes(model.graph.node, 0)
    constants = {}
    for node in nodes:
        if id(node) in inliner.inlined and node.op_type == "Constant" and _domain(node.domain) == "" \
                and len(node.output) == 1 and len(node.attribute) == 1 and node.attribute[0].name == "value" \
                and node.attribute[0].type == onnx.AttributeProto.TENSOR:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(node.attribute[0].t)
            tensor.name = node.output[0]
            constants[id(node)] = tensor
    return Inlined(nodes, opsets, constants)


def _check_functions(model: onnx.ModelProto) -> dict[FunctionId, onnx.FunctionProto]:
    functions: dict[FunctionId, onnx.FunctionProto] = {}
    for function in model.functions:
        where = f"function {function.domain}:{function.name}"
        if not function.name:
            raise InvalidModelError("a local function has no name")
        if _id(function) in functions:
            raise InvalidModelError(f"{where} is defined twice")
        functions[_id(function)] = function
        formal = list(function.input) + list(function.output)
        if "" in formal:
            raise InvalidModelError(f"{where}: an input or output has no name")
        for kind, names in (("input", function.input), ("output", function.output),
                            ("attribute", list(function.attribute) + [a.name for a in function.attribute_proto])):
            if len(set(names)) != len(names):
                raise InvalidModelError(f"{where}: an {kind} name appears twice")
        _check_body(function, where)
    return functions


def _check_body(function: onnx.FunctionProto, where: str) -> None:
    """A body reads only its inputs and values it defines before (a function has no outer scope), each
    defined once, and defines its outputs."""
    defined = set(function.input)
    made: set[str] = set()
    for node in function.node:
        for name in _reads(node):
            if name not in defined:
                raise InvalidModelError(f"{where}: node {node.name!r} ({node.op_type}) reads {name!r}, which is no "
                                        "input of the function and no value its body defines before")
        for name in node.output:
            if not name:
                continue
            if name in defined:
                raise InvalidModelError(f"{where}: node {node.name!r} ({node.op_type}) defines {name!r}, which is "
                                        "already defined")
            defined.add(name)
            made.add(name)
    missing = [name for name in function.output if name not in made]
    if missing:
        raise InvalidModelError(f"{where}: outputs {missing} are made by no node of its body")


def _reads(node: onnx.NodeProto) -> list[str]:
    """Names a node reads from its scope, its bodies' outer references included."""
    names = [n for n in node.input if n]
    stack = list(bodies(node))
    while stack:
        graph = stack.pop()
        local = {i.name for i in graph.input} | {t.name for t in graph.initializer}
        local |= {o for n in graph.node for o in n.output}
        for inner in graph.node:
            names.extend(n for n in inner.input if n and n not in local)
            stack.extend(bodies(inner))
        names.extend(o.name for o in graph.output if o.name not in local)
    return names


def _calls(nodes: Iterable[onnx.NodeProto]) -> Iterable[onnx.NodeProto]:
    """Every node of nodes and of their bodies, at any depth (a call may sit in an If branch)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        for body in bodies(node):
            stack.extend(body.node)


def _callees(function: onnx.FunctionProto, functions: dict[FunctionId, onnx.FunctionProto]) -> list[FunctionId]:
    return [_id(node) for node in _calls(function.node) if _id(node) in functions]


def _callees_first(functions: dict[FunctionId, onnx.FunctionProto]) -> list[FunctionId]:
    """The functions ordered so that each comes after every function it calls; InvalidModelError when
    one reaches itself through calls. Iterative: a chain of calls may be long."""
    state: dict[FunctionId, int] = {}  # 1: on the current path, 2: done
    order: list[FunctionId] = []
    for root in functions:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, _callees(functions[root], functions))]
        while stack:
            current, pending = stack[-1]
            if not pending:
                state[current] = 2
                order.append(current)
                stack.pop()
                continue
            callee = pending.pop()
            if state.get(callee) == 1:
                chain = " -> ".join(f[1] for f, _ in stack) + f" -> {callee[1]}"
                raise InvalidModelError(f"function {callee[0]}:{callee[1]} calls itself ({chain}); a local "
                                        "function may not recurse")
            if callee not in state:
                state[callee] = 1
                stack.append((callee, _callees(functions[callee], functions)))
    return order


def _check_size(graph: onnx.GraphProto, functions: dict[FunctionId, onnx.FunctionProto]) -> None:
    """The inlined model's node count within MAX_INLINED_NODES, and calls nested within MAX_CALL_DEPTH,
    counted per function without expanding anything."""
    size: dict[FunctionId, int] = {}
    depth: dict[FunctionId, int] = {}
    for fid in _callees_first(functions):
        nodes, deepest = 0, 0
        for node in _calls(functions[fid].node):
            callee = _id(node)
            nodes = min(nodes + size.get(callee, 1), MAX_INLINED_NODES + 1)
            deepest = max(deepest, depth.get(callee, 0))
        size[fid], depth[fid] = nodes, deepest + 1
        if depth[fid] > MAX_CALL_DEPTH:
            raise InvalidModelError(f"function {fid[1]} nests calls {depth[fid]} deep; this runtime refuses more "
                                    f"than {MAX_CALL_DEPTH}")
    total = sum(size.get(_id(node), 1) for node in _calls(graph.node))
    if total > MAX_INLINED_NODES:
        raise InvalidModelError(f"the model's functions expand to more than {MAX_INLINED_NODES:,} nodes when "
                                "inlined; this runtime refuses such a model")


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    """The domains the functions import beyond the model's; one a function imports at another version
    than the model is refused (an inlined body runs at the model's versions)."""
    model_opsets = {_domain(o.domain): o.version for o in model.opset_import}
    extra: dict[str, int] = {}
    for function in model.functions:
        for entry in function.opset_import:
            domain = _domain(entry.domain)
            have = model_opsets.get(domain, extra.get(domain))
            if have is None:
                extra[domain] = entry.version
            elif have != entry.version:
                raise InvalidModelError(f"function {function.name} imports {entry.domain or 'ai.onnx'} version "
                                        f"{entry.version} but the model {have}; this runtime runs function bodies "
                                        "inlined, at the model's versions")
    return extra


def _names(model: onnx.ModelProto) -> set[str]:
    """Every name the main graph uses, so inlined values get names of their own."""
    names = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer}
    names |= {o.name for o in model.graph.output}
    for node in _calls(model.graph.node):
        names.update(node.input)
        names.update(node.output)
    return names


class _Inliner:
    def __init__(self, functions: dict[FunctionId, onnx.FunctionProto], taken: set[str]) -> None:
        self.functions = functions
        self.taken = taken
        self.count = 0
        self.inlined: set[int] = set()  # the nodes that came from function bodies, by id

    def fresh(self, base: str) -> str:
        name = base
        while name in self.taken:
            self.count += 1
            name = f"{base}.{self.count}"
        self.taken.add(name)
        return name

    def nodes(self, nodes: Iterable[onnx.NodeProto], depth: int) -> list[onnx.NodeProto]:
        """nodes with calls replaced by bodies; a node whose bodies hold calls is copied, others kept.
        depth: calls and bodies entered so far."""
        if depth > MAX_CALL_DEPTH + MAX_NESTING:
            raise InvalidModelError(f"calls and bodies nest more than {MAX_CALL_DEPTH + MAX_NESTING} deep; this "
                                    "runtime refuses such a model")
        out: list[onnx.NodeProto] = []
        for node in nodes:
            function = self.functions.get(_id(node))
            if function is not None:
                out.extend(self.call(node, function, depth))
            elif any(_id(n) in self.functions for body in bodies(node) for n in _calls(body.node)):
                copy = onnx.NodeProto()
                copy.CopyFrom(node)
                for body in bodies(copy):
                    inlined = self.nodes(list(body.node), depth + 1)
                    del body.node[:]
                    body.node.extend(inlined)
                out.append(copy)
            else:
                out.append(node)
        return out

    def call(self, call: onnx.NodeProto, function: onnx.FunctionProto, depth: int) -> list[onnx.NodeProto]:
        where = f"node {call.name!r} (a call of function {function.name})"
        if len(call.input) > len(function.input) or len(call.output) > len(function.output):
            raise InvalidModelError(f"{where} has {len(call.input)} inputs and {len(call.output)} outputs; the "
                                    f"function takes {len(function.input)} and makes {len(function.output)}")
        declared = set(function.attribute) | {a.name for a in function.attribute_proto}
        given = {a.name: a for a in call.attribute}
        unknown = sorted(set(given) - declared)
        if unknown:
            raise InvalidModelError(f"{where} passes attributes {unknown}, which the function does not declare")
        attributes = {a.name: a for a in function.attribute_proto} | given
        prefix = (call.name or function.name).replace("/", ".") + "."
        rename: dict[str, str] = {formal: actual for formal, actual in zip(function.input, call.input)}
        rename |= {formal: "" for formal in list(function.input)[len(call.input):]}  # omitted optional inputs
        results = {formal: actual or self.fresh(prefix + formal)
                   for formal, actual in zip(function.output, list(call.output) + [""] * len(function.output))}
        body = []
        for node in function.node:
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            self._rename(copy, rename, prefix, attributes, 0, results)
            copy.name = self.fresh(prefix + (node.name or node.op_type))
            body.append(copy)
        body = self.nodes(body, depth + 1)
        self.inlined.update(id(n) for n in body)
        return body

    def _rename(self, node: onnx.NodeProto, rename: dict[str, str], prefix: str,
                attributes: dict[str, onnx.AttributeProto], depth: int, results: dict[str, str] | None = None) -> None:
        """One body node's names made the call's (outputs it defines get fresh names, or the call's own
        where they are the function's `results`), attribute references resolved, its bodies likewise
        (depth: bodies entered)."""
        if depth > MAX_NESTING:
            raise InvalidModelError(f"node {node.name!r} ({node.op_type}) of a function body nests bodies more than "
                                    f"{MAX_NESTING} deep; this runtime refuses such a model")
        for k, name in enumerate(node.input):
            if name:
                if name not in rename:
                    raise InvalidModelError(f"node {node.name!r} ({node.op_type}) of a function body reads {name!r} "
                                            "before anything defines it")
                node.input[k] = rename[name]
        for k, name in enumerate(node.output):
            if name:
                actual = results.get(name) if results else None
                rename[name] = node.output[k] = actual if actual is not None else self.fresh(prefix + name)
        resolved = []
        for attr in node.attribute:
            if attr.ref_attr_name:
                value = attributes.get(attr.ref_attr_name)
                if value is None:
                    continue  # not given and no default: the attribute is left out
                copy = onnx.AttributeProto()
                copy.CopyFrom(value)
                copy.name = attr.name
                attr = copy
            resolved.append(attr)
        if any(a.ref_attr_name for a in node.attribute):
            kept = [onnx.AttributeProto() for _ in resolved]
            for new, old in zip(kept, resolved):
                new.CopyFrom(old)
            del node.attribute[:]
            node.attribute.extend(kept)
        for attr in node.attribute:
            for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                inner = dict(rename)
                for info in list(graph.input) + list(graph.initializer):
                    inner[info.name] = info.name = self.fresh(prefix + info.name)
                for body_node in graph.node:
                    self._rename(body_node, inner, prefix, attributes, depth + 1)
                for info in list(graph.output) + list(graph.value_info):
                    info.name = inner.get(info.name, info.name)
        for entry in node.metadata_props:
            if entry.key == _aten_node.EXACT_CALL:
                try:
                    exact = _aten_node.decode_call(entry.value)
                except ValueError:
                    continue  # the exact-mode runtime reports it
                exact.input[:] = [rename.get(n, n) if n else n for n in exact.input]
                exact.output[:] = [rename.get(n, n) if n else n for n in exact.output]
                entry.value = _aten_node.encode_call(exact)
