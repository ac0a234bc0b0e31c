"""Load-time checks of a model's structure, the ones onnxruntime makes before it runs anything: versions,
single assignment of every name, element types, nesting depth, and aten2onnx's own metadata."""

from __future__ import annotations

import json
from typing import Sequence

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from aten2onnx._aten_node import DOMAIN as ATEN_DOMAIN
from aten2onnx._onnx_graphs import bodies
from aten2onnx.errors import InvalidModelError
from aten2onnx.runtime.functions import Inlined, inline_functions
from aten2onnx.runtime.optimize import DOMAIN as FUSED_DOMAIN

# Nested subgraphs (If in Loop in If ...) deeper than this are refused: planning recurses per level.
MAX_NESTING = 32
MIN_IR_VERSION = 3  # the first with opset imports
# Model metadata listing the outputs that are new values of inputs or buffers (written by aten2onnx).
STATE_KEY = "aten2onnx.state_updates"
# input dim_params the exported graph assumes are not 1 (a squeeze meets them; exporter/dynamic.py writes it)
NOT_ONE_KEY = "aten2onnx.dims_not_one"


def dims_not_one(model: onnx.ModelProto) -> frozenset[str]:
    """The dim_params an input must not have size 1 at (metadata NOT_ONE_KEY; a malformed entry is ignored,
    as it only adds a check)."""
    raw = next((p.value for p in model.metadata_props if p.key == NOT_ONE_KEY), None)
    try:
        names = json.loads(raw) if raw is not None else []
    except ValueError:
        return frozenset()
    return frozenset(n for n in names if isinstance(n, str)) if isinstance(names, list) else frozenset()
_ELEMENT_TYPES = frozenset(onnx.TensorProto.DataType.values())


def validate_model(model: onnx.ModelProto, max_opset: int) -> Inlined:
    """Raise InvalidModelError for a model onnxruntime would refuse to load. Returns the main graph with
    the model's local functions inlined (runtime/functions.py), checked as the graph that runs."""
    _check_text(model)
    if not MIN_IR_VERSION <= model.ir_version <= onnx.IR_VERSION:
        raise InvalidModelError(f"the model's IR version {model.ir_version} is unknown; this runtime reads "
                                f"{MIN_IR_VERSION} to {onnx.IR_VERSION}")
    seen: set[str] = set()
    for entry in model.opset_import:
        domain = "" if entry.domain == "ai.onnx" else entry.domain
        if domain in seen:
            raise InvalidModelError(f"the model imports domain {entry.domain or 'ai.onnx'!r} twice")
        seen.add(domain)
        _check_version(entry.domain, entry.version, max_opset, "the model")
    inlined = inline_functions(model)
    for domain, version in inlined.opsets.items():
        _check_version(domain, version, max_opset, "a function of the model")
    check_graph(model.graph, frozenset(), 0, nodes=inlined.nodes)
    return inlined


def _check_version(domain: str, version: int, max_opset: int, who: str) -> None:
    top = {"": max_opset, "ai.onnx": max_opset, ATEN_DOMAIN: 1}.get(domain)
    if version < 1 or (top is not None and version > top):
        raise InvalidModelError(f"{who} imports {domain or 'ai.onnx'} version {version}; this runtime runs "
                                f"versions 1 to {top if top is not None else 'any'}")


def check_graph(graph: onnx.GraphProto, outer: frozenset[str], depth: int,
                nodes: Sequence[onnx.NodeProto] | None = None) -> None:
    """One graph and its subgraphs: every name defined once (graph inputs, initializers and node
    outputs, none shadowing an enclosing graph's), outputs produced, types that exist. nodes: the
    graph's nodes as they run (its functions inlined), in place of graph.node."""
    nodes = graph.node if nodes is None else nodes
    where = "the main graph" if depth == 0 else f"subgraph {graph.name!r}"
    if depth > MAX_NESTING:
        raise InvalidModelError(f"{where} is nested {depth} deep; this runtime refuses more than {MAX_NESTING} levels")
    inputs = [i.name for i in graph.input]
    initializers = [t.name for t in graph.initializer]
    for kind, names in (("graph input", inputs), ("initializer", initializers), ("graph output", [o.name for o in graph.output])):
        _unique(names, f"{where}: {kind}")
        if "" in names:
            raise InvalidModelError(f"{where}: a {kind} has no name")
    for info in list(graph.input) + list(graph.output) + list(graph.value_info):
        _check_type(info.type, f"{where}: value {info.name!r}", 0)
    for tensor in graph.initializer:
        _check_tensor(tensor, f"{where}: initializer {tensor.name!r}")
    defined = set(inputs) | set(initializers)
    produced: set[str] = set()
    for node in nodes:
        label = f"{where}: node {node.name!r} ({node.op_type})"
        if node.domain == FUSED_DOMAIN:
            raise InvalidModelError(f"{label} is in the runtime's internal domain {FUSED_DOMAIN!r}, which no model "
                                    "may use")
        _unique([a.name for a in node.attribute], f"{label}: attribute")
        for name in node.output:
            if not name:
                continue
            if name in produced or name in defined or name in outer:
                raise InvalidModelError(f"{label} defines {name!r}, which is already defined (a value is assigned "
                                        "once: by one node, graph input or initializer, in one scope)")
            produced.add(name)
    missing = [o.name for o in graph.output if o.name not in defined | produced]
    if missing:
        raise InvalidModelError(f"{where}: graph outputs {missing} are produced by no node, input or initializer")
    scope = outer | defined | produced
    for node in nodes:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                _check_tensor(attr.t, f"{where}: node {node.name!r} attribute {attr.name!r}")
        for body in bodies(node):
            check_graph(body, scope, depth + 1)


def _check_text(model: onnx.ModelProto) -> None:
    """Every string field (names, op types, domains, metadata) is text: protobuf hands a field that is
    not valid UTF-8 back as bytes, which no name may be. Walked with a stack: nesting is unbounded."""
    stack: list[Message] = [model]
    while stack:
        message = stack.pop()
        for field, value in message.ListFields():
            values = value if _repeated(field) else [value]
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                stack.extend(values)
            elif field.type == FieldDescriptor.TYPE_STRING:
                bad = next((v for v in values if not isinstance(v, str)), None)
                if bad is not None:
                    raise InvalidModelError(f"{type(message).__name__}.{field.name} {bad!r} is not valid UTF-8 text")


def _repeated(field: FieldDescriptor) -> bool:
    flag = getattr(field, "is_repeated", None)  # protobuf 7; earlier ones have only `label`
    return flag if flag is not None else field.label == FieldDescriptor.LABEL_REPEATED


def _unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidModelError(f"{what} {name!r} appears twice")
        seen.add(name)


def _check_type(tp: onnx.TypeProto, where: str, depth: int) -> None:
    kind = tp.WhichOneof("value")
    if depth > MAX_NESTING:
        raise InvalidModelError(f"{where}: its type is nested more than {MAX_NESTING} deep")
    if kind in ("tensor_type", "sparse_tensor_type"):
        elem = getattr(tp, kind).elem_type
        if elem not in _ELEMENT_TYPES:
            raise InvalidModelError(f"{where}: element type {elem} does not exist")
    elif kind in ("sequence_type", "optional_type"):
        _check_type(getattr(tp, kind).elem_type, where, depth + 1)
    elif kind == "map_type":
        _check_type(tp.map_type.value_type, where, depth + 1)


def _check_tensor(tensor: onnx.TensorProto, where: str) -> None:
    if tensor.data_type not in _ELEMENT_TYPES or tensor.data_type == onnx.TensorProto.UNDEFINED:
        raise InvalidModelError(f"{where}: element type {tensor.data_type} does not exist")
    if any(d < 0 for d in tensor.dims):
        raise InvalidModelError(f"{where}: negative dimension in {list(tensor.dims)}")


def state_updates(model: onnx.ModelProto) -> list[tuple[str, str, str]]:
    """(output, kind, input) for each state update aten2onnx recorded in the model's metadata, checked
    against the graph: each names a real output and input once, of one element type and rank, and
    a "buffer" is an input with an initializer (its default) while an "input" has none."""
    raw = [p.value for p in model.metadata_props if p.key == STATE_KEY]
    if not raw:
        return []
    try:
        if len(raw) > 1:
            raise ValueError("the key appears more than once")
        updates = [(u["output"], u["kind"], u["input"]) for u in json.loads(raw[0])]
        if not all(isinstance(v, str) for update in updates for v in update):
            raise TypeError("names and kinds must be strings")
    except (ValueError, KeyError, TypeError) as e:
        raise InvalidModelError(f"metadata {STATE_KEY} is malformed: {e}") from e
    graph = model.graph
    inputs = {i.name: i.type for i in graph.input}
    outputs = {o.name: o.type for o in graph.output}
    initializers = {t.name for t in graph.initializer}
    _unique([u[0] for u in updates], f"metadata {STATE_KEY}: output")
    _unique([u[2] for u in updates], f"metadata {STATE_KEY}: input")
    for output, kind, name in updates:
        problem = _state_problem(outputs.get(output), kind, inputs.get(name), name in initializers)
        if problem:
            raise InvalidModelError(f"metadata {STATE_KEY}: output {output!r} as the new value of {kind} {name!r}: "
                                    f"{problem}")
    return updates


def _state_problem(out: onnx.TypeProto | None, kind: str, inp: onnx.TypeProto | None, has_default: bool) -> str | None:
    if out is None or inp is None:
        return "the graph has no such output or input"
    if kind not in ("buffer", "input"):
        return "the kind must be 'buffer' or 'input'"
    if (kind == "buffer") != has_default:
        return "a buffer is an input with an initializer, a written input one without"
    if out.WhichOneof("value") != "tensor_type" or inp.WhichOneof("value") != "tensor_type":
        return "both must be tensors"
    a, b = out.tensor_type, inp.tensor_type
    if a.elem_type != b.elem_type:
        return "their element types differ"
    if a.HasField("shape") and b.HasField("shape") and len(a.shape.dim) != len(b.shape.dim):
        return "their ranks differ"
    return None
