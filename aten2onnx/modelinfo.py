"""What `aten2onnx info` reports about an ONNX file, read without its external data: types and shapes,
node counts (bodies and functions included), ATen fallback ops, weights, and the metadata we write."""

from __future__ import annotations

import collections
import json
import os
from typing import Iterator

import onnx

from aten2onnx._aten_node import DOMAIN as ATEN_DOMAIN, EXACT_CALL, EXACT_MODEL, EXACT_REQUIRES_GRAD, is_exact, overload_keys
from aten2onnx._onnx_graphs import graphs
from aten2onnx.exporter.model import COMPLEX_KEY, STATE_KEY

# The node metadata every exported node carries (exporter/translate.py, Translator._enter).
PROVENANCE_KEYS = ("aten_op", "source", "module")


def nodes(model: onnx.ModelProto) -> Iterator[onnx.NodeProto]:
    """Every node: the main graph's, its bodies', and the model's functions'."""
    for graph in graphs(model.graph):
        yield from graph.node
    for function in model.functions:
        yield from function.node


def node_counts(model: onnx.ModelProto) -> dict[str, int]:
    """Nodes by op type (`domain:op` outside the default domain), most frequent first."""
    counts = collections.Counter(f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
                                 for n in nodes(model))
    return dict(counts.most_common())


def type_text(info: onnx.ValueInfoProto) -> str:
    """`float32[batch, 4]`, as a value's declared type and shape."""
    tensor = info.type.tensor_type
    if not info.type.HasField("tensor_type"):
        return info.type.WhichOneof("value") or "untyped"
    elem = onnx.TensorProto.DataType.Name(tensor.elem_type).lower()
    elem = {"float": "float32", "double": "float64"}.get(elem, elem)
    if not tensor.HasField("shape"):
        return f"{elem}[?]"
    dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim]
    return f"{elem}[{', '.join(dims)}]"


def initializer_bytes(tensor: onnx.TensorProto) -> tuple[int, str | None]:
    """A weight's size in bytes, and the file holding it when it is external data."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        entries = {e.key: e.value for e in tensor.external_data}
        return int(entries.get("length", 0) or 0), entries.get("location")
    if tensor.raw_data:
        return len(tensor.raw_data), None
    return tensor.ByteSize(), None


def _metadata(model: onnx.ModelProto, key: str) -> object | None:
    for entry in model.metadata_props:
        if entry.key == key:
            try:
                return json.loads(entry.value)
            except ValueError:
                return entry.value
    return None


def describe(path: str) -> list[str]:
    """The report's lines for the model at path."""
    model = onnx.load(path, load_external_data=False)
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    lines = [f"{path}: {os.path.getsize(path):,} bytes",
             f"  IR version {model.ir_version}; producer {model.producer_name or '?'} {model.producer_version}".rstrip(),
             "  opset imports: " + ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)]
    lines.append("  inputs:")
    lines += [f"    {i.name}: {type_text(i)}" + (" (default: initializer)" if i.name in initializers else "")
              for i in graph.input]
    lines.append("  outputs:")
    lines += [f"    {o.name}: {type_text(o)}" for o in graph.output]
    counts = node_counts(model)
    lines.append(f"  nodes: {sum(counts.values())} ({len(model.functions)} functions, "
                 f"{sum(1 for _ in graphs(graph)) - 1} bodies)")
    lines += [f"    {op}: {n}" for op, n in counts.items()]
    fallback = sorted(overload_keys(graph) | {key for f in model.functions for key in overload_keys(f)})
    lines.append(f"  ATen fallback ops ({ATEN_DOMAIN}): " + (", ".join(fallback) if fallback else "none"))
    sizes = [initializer_bytes(t) for t in graph.initializer]
    external: dict[str, int] = collections.defaultdict(int)
    for size, location in sizes:
        if location is not None:
            external[location] += size
    lines.append(f"  initializers: {len(sizes)}, {sum(s for s, _ in sizes):,} bytes")
    lines += [f"    external data: {location}, {size:,} bytes" for location, size in sorted(external.items())]
    lines += _our_metadata(model)
    return lines


def _our_metadata(model: onnx.ModelProto) -> list[str]:
    """Provenance (how many nodes say where they came from), state updates and complex carriers."""
    every = list(nodes(model))
    props = [{p.key: p.value for p in n.metadata_props} for n in every]
    lines = ["  provenance: " + ", ".join(f"{sum(key in p for p in props)} of {len(every)} nodes with {key}"
                                          for key in PROVENANCE_KEYS)]
    files = collections.Counter(p["source"].rsplit(":", 1)[0] for p in props if p.get("source"))
    lines += [f"    {file}: {n} nodes" for file, n in files.most_common(5)]
    updates = _metadata(model, STATE_KEY)
    lines.append(f"  state updates ({STATE_KEY}): " + (", ".join(
        f"{u.get('output')} -> {u.get('kind')} {u.get('input')}" for u in updates if isinstance(u, dict))
        if isinstance(updates, list) and updates else "none"))
    carried = _metadata(model, COMPLEX_KEY)
    lines.append(f"  complex carriers ({COMPLEX_KEY}): " + (
        f"inputs {carried.get('inputs', [])}, outputs {carried.get('outputs', [])}" if isinstance(carried, dict)
        else "none"))
    exact = is_exact(model)
    calls = sum(any(p.key == EXACT_CALL for p in n.metadata_props) for n in every)
    lines.append(f"  exact mode ({EXACT_MODEL}): " + (f"yes, {calls} ATen calls (aten2onnx.runtime runs them bit "
                                                       "for bit like eager)" if exact else "no"))
    others = [p.key for p in model.metadata_props if p.key not in (STATE_KEY, COMPLEX_KEY, EXACT_MODEL, EXACT_REQUIRES_GRAD)]
    if others:
        lines.append(f"  other metadata: {', '.join(others)}")
    return lines
