"""ONNX local functions from module classes (`export(..., functions=[GPT2Block])`): the nodes each call
of a listed class became are replaced by a call of one FunctionProto per class and body.

Works on the translated graph, before it is written: every top-level node knows the module calls its
FX node was made in (torch.export's nn_module_stack, Translation.module_stacks). Innermost calls are
extracted first, so listed classes nest. Bodies are compared as written, with value names made
canonical and provenance left out: calls whose bodies, input dtypes and ranks and escaping values
match share a function; another body (Python control flow baked other constants) gets a function of
its own. Weights and other inputs are the function's inputs, so each is stored once in the main graph;
small constants are Constant nodes in the body. A call whose nodes cannot be cut out without a cycle
(a node outside it both reads from it and feeds it) stays inline, and the export says so.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Sequence

import onnx
from onnx import helper

from aten2onnx import _aten_node
from aten2onnx.errors import ArgumentError
from aten2onnx.ir import op_types
from aten2onnx.ir.builder import GraphBuilder, Node, Value, node_inputs, tensor_proto

DOMAIN = "aten2onnx.functions"
# Constants of up to this many elements are Constant nodes in a body (compared with it, as a reshape's
# target shape must be); bigger ones are inputs, stored once in the main graph.
INLINE_CONSTANT = 64
# Node metadata that differs between calls of one body without changing what it computes.
_PROVENANCE = frozenset({"source", "module"})

Entry = tuple[str, str, str]  # (nn_module_stack key, module path, class qualified name)


@dataclasses.dataclass
class Extracted:
    nodes: list[Node]
    functions: list[onnx.FunctionProto]
    notes: list[str]


def selected_classes(spec: bool | Sequence[Any], stacks: Iterable[tuple[Entry, ...]]) -> tuple[set[str], list[str]]:
    """The qualified class names `functions=` selects among the module calls of the graph, and notes for
    listed classes no call has. True: every class called more than once."""
    calls: dict[str, set[str]] = {}
    for stack in stacks:
        for key, _, cls in stack:
            calls.setdefault(cls, set()).add(key)
    if spec is True:
        return {cls for cls, keys in calls.items() if len(keys) > 1}, []
    chosen: set[str] = set()
    notes = []
    for item in spec:
        if isinstance(item, type):
            wanted = f"{item.__module__}.{item.__qualname__}"
            found = {wanted} & set(calls)
        elif isinstance(item, str) and item:
            found = {cls for cls in calls if cls == item or cls.rsplit(".", 1)[-1] == item}
        else:
            raise ArgumentError(f"functions takes module classes (or their names), not {item!r}; e.g. "
                                "functions=[GPT2Block]")
        if not found:
            name = item.__qualname__ if isinstance(item, type) else item
            notes.append(f"functions: no module of class {name} runs in the exported graph, so none became a "
                         "function (a class of another import of the library, or one whose nodes were all folded?)")
        chosen |= found
    return chosen, notes


def same_call(stacks: dict[int, tuple[Entry, ...]], classes: set[str]) -> Callable[[Node, Node], bool]:
    """Whether two nodes will be in one function call: the innermost call of a class in `classes` each was
    made in is the same (or neither was made in one)."""
    def call(node: Node) -> str | None:
        return next((key for key, _, cls in reversed(stacks.get(id(node), ())) if cls in classes), None)
    return lambda a, b: call(a) == call(b)


def extract(g: GraphBuilder, nodes: list[Node], stacks: dict[int, tuple[Entry, ...]], classes: set[str],
            graph_outputs: Sequence[Value]) -> Extracted:
    """nodes with each call of a class in `classes` replaced by a call node of a local function."""
    instances: dict[str, tuple[int, str, str]] = {}
    for node in nodes:
        for depth, (key, path, cls) in enumerate(stacks.get(id(node), ())):
            if cls in classes:
                instances.setdefault(key, (depth, path, cls))
    if not instances:
        return Extracted(nodes, [], [])
    state = _State(g, nodes, stacks, graph_outputs)
    for key in sorted(instances, key=lambda k: -instances[k][0]):  # innermost first; stable otherwise
        state.extract(key, *instances[key])
    return Extracted(state.nodes, state.functions, state.notes)


class _State:
    """The graph as calls are cut out of it: its nodes, what each reads and who reads each value
    (kept up to date as bodies become call nodes), and the functions made so far by signature."""

    def __init__(self, g: GraphBuilder, nodes: list[Node], stacks: dict[int, tuple[Entry, ...]],
                 graph_outputs: Sequence[Value]) -> None:
        self.g = g
        self.nodes = list(nodes)
        self.stacks = dict(stacks)
        self.reads = {id(n): list(dict.fromkeys(node_inputs([n]))) for n in nodes}
        self.readers: dict[int, list[Node]] = {}
        for n in nodes:
            for v in self.reads[id(n)]:
                self.readers.setdefault(id(v), []).append(n)
        self.escaping = {id(v) for v in graph_outputs}
        self.signatures: dict[tuple, str] = {}
        self.names: set[str] = set()
        self.functions: list[onnx.FunctionProto] = []
        self.notes: list[str] = []

    def extract(self, key: str, depth: int, path: str, cls: str) -> None:
        """One module call (its nn_module_stack key, at `depth` in the stack) replaced by a call node."""
        where = _instance_name(key, path)
        short = cls.rsplit(".", 1)[-1]
        members = [i for i, n in enumerate(self.nodes)
                   if any(entry[0] == key for entry in self.stacks.get(id(n), ()))]
        if not members:
            return
        member_ids = {id(self.nodes[i]) for i in members}
        moved = self._after(members, member_ids)
        if moved is None:
            self.notes.append(f"functions: the call of {short} at {where} stays inline: a node outside it both "
                              "reads from it and feeds it, so its nodes cannot become one call")
            return
        body = [self.nodes[i] for i in members]
        made = {id(o) for n in body for o in n.outputs}
        formals: dict[int, Value] = {}
        for n in body:
            for v in self.reads[id(n)]:
                if id(v) not in made:
                    formals.setdefault(id(v), v)
        constants = [v for v in formals.values() if self._embedded(v)]
        inputs = [v for v in formals.values() if not self._embedded(v)]
        outputs = [o for n in body for o in n.outputs
                   if id(o) in self.escaping or any(id(r) not in member_ids for r in self.readers.get(id(o), ()))]
        if not outputs:
            return
        protos = [helper.make_node("Constant", [], [c.name], name=f"{c.name}/Constant", value=tensor_proto(c.const))
                  for c in constants] + self.g.node_protos(body)
        generic: dict[str, str] = {v.name: f"input_{k}" for k, v in enumerate(inputs)}
        canonical = _renamed(protos, lambda name: generic.setdefault(name, f"v{len(generic)}"), provenance=False)
        signature = (cls, b"".join(p.SerializeToString(deterministic=True) for p in canonical),
                     tuple((v.dtype, v.rank) for v in inputs), tuple(generic[o.name] for o in outputs))
        name = self.signatures.get(signature)
        if name is None:
            name = self._function(short, cls, path, inputs, outputs, protos)
            self.signatures[signature] = name
        call = Node(name, list(inputs), list(outputs), {}, DOMAIN, self.g.fresh_name(where),
                    {"module": f"{where} ({short})"})
        for o in outputs:
            o.producer = call
        self._splice(members, moved, member_ids, call, self.stacks[id(body[0])][:depth])

    def _embedded(self, value: Value) -> bool:
        if value.kind != "const" or value.const is None or value.const.numel() > INLINE_CONSTANT:
            return False
        constant = op_types.signature("Constant", self.g.opset)
        return constant is None or constant.takes(constant.output_type(0), value.const.dtype)

    def _after(self, members: list[int], member_ids: set[int]) -> list[int] | None:
        """The outside nodes between the members that read from them (directly or not), which must
        follow the call; None when one of them also feeds a member (no single call can replace them)."""
        produced: set[int] = set()
        tainted: set[int] = set()
        moved = []
        for i in range(members[0], members[-1] + 1):
            node = self.nodes[i]
            reads = self.reads[id(node)]
            if id(node) in member_ids:
                if any(id(v) in tainted for v in reads):
                    return None
                produced.update(id(o) for o in node.outputs)
            elif any(id(v) in produced or id(v) in tainted for v in reads):
                moved.append(i)
                tainted.update(id(o) for o in node.outputs)
        return moved

    def _function(self, short: str, cls: str, path: str, inputs: list[Value], outputs: list[Value],
                  protos: list[onnx.NodeProto]) -> str:
        """A new FunctionProto of the body (value names of its first call; weights named relative to
        that call's module)."""
        name, k = short, 0
        while name in self.names:
            k += 1
            name = f"{short}_{k}"
        self.names.add(name)
        internal = {o for p in protos for o in p.output}
        formal: dict[str, str] = {}
        for k, v in enumerate(inputs):
            pretty = v.name[len(path) + 1:] if path and v.kind != "node" and v.name.startswith(path + ".") else f"input_{k}"
            if pretty in internal or pretty in formal.values():
                pretty = v.name
            formal[v.name] = pretty
        function = onnx.FunctionProto()
        function.name, function.domain = name, DOMAIN
        function.doc_string = f"The module class {cls}"
        function.input.extend(formal[v.name] for v in inputs)
        function.output.extend(o.name for o in outputs)
        function.node.extend(_renamed(protos, lambda n: formal.get(n, n), provenance=True))
        self.functions.append(function)
        return name

    def _splice(self, members: list[int], moved: list[int], member_ids: set[int], call: Node,
                stack: tuple[Entry, ...]) -> None:
        lo, hi = members[0], members[-1]
        after = set(moved)
        middle = [self.nodes[i] for i in range(lo, hi + 1) if id(self.nodes[i]) not in member_ids and i not in after]
        self.nodes = (self.nodes[:lo] + middle + [call] + [self.nodes[i] for i in moved] + self.nodes[hi + 1:])
        self.stacks[id(call)] = stack
        self.reads[id(call)] = list(call.inputs)
        for v in call.inputs:
            self.readers[id(v)] = [r for r in self.readers.get(id(v), ()) if id(r) not in member_ids] + [call]


def _instance_name(key: str, path: str) -> str:
    """A module call's name: its path, and `@n` for the n-th repeated call of one module."""
    repeat = key.rsplit("@", 1)[1] if "@" in key else ""
    return (path or "<root>") + (f"@{repeat}" if repeat else "")


def _renamed(protos: list[onnx.NodeProto], rename: Callable[[str], str], *, provenance: bool) -> list[onnx.NodeProto]:
    """Copies of the nodes with every value name (bodies and exact calls included) through rename;
    provenance=False also drops node and graph names and provenance metadata, for comparing bodies."""
    out = []
    for proto in protos:
        copy = onnx.NodeProto()
        copy.CopyFrom(proto)
        _rename_node(copy, rename, provenance)
        out.append(copy)
    return out


def _rename_node(node: onnx.NodeProto, rename: Callable[[str], str], provenance: bool) -> None:
    for field in (node.input, node.output):
        for k, name in enumerate(field):
            if name:
                field[k] = rename(name)
    if not provenance:
        node.name = ""
    kept = []
    for entry in node.metadata_props:
        if entry.key == _aten_node.EXACT_CALL:
            call = _aten_node.decode_call(entry.value)
            _rename_node(call, rename, provenance=True)
            kept.append((entry.key, _aten_node.encode_call(call)))
        elif provenance or entry.key not in _PROVENANCE:
            kept.append((entry.key, entry.value))
    del node.metadata_props[:]
    for key, value in kept:
        item = node.metadata_props.add()
        item.key, item.value = key, value
    for attr in node.attribute:
        graphs = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
        for graph in graphs:
            if not provenance:
                graph.name = ""
            for info in list(graph.input) + list(graph.output) + list(graph.value_info):
                info.name = rename(info.name)
            for tensor in graph.initializer:
                tensor.name = rename(tensor.name)
            for inner in graph.node:
                _rename_node(inner, rename, provenance)
