"""Ops onnx defines as functions (SwiGLU, LinearAttention, CausalConvWithState, SequenceMap, FlexAttention ...) run
as their function body where the runtime has no kernel of its own: ONNX gives such an op's meaning as the body.

The body is the schema's function for the newest function version at or below the model's opset (a context-
dependent one is built for the node's attributes and input types, which the model must state), its attribute
references resolved from the node (or the schema's defaults), planned once as a subgraph of the session."""

from __future__ import annotations

from typing import Any

import onnx

from aten2onnx.errors import InvalidModelError
from aten2onnx.runtime.kernel import Kernel, op_schema


def function_schema(domain: str, op_type: str, opset: int) -> onnx.defs.OpSchema | None:
    """The op's schema at opset where it defines a function body (None: no such schema or no body)."""
    schema = op_schema(domain, op_type, opset)
    if schema is None or not (schema.has_function or schema.has_context_dependent_function):
        return None
    return schema


def function_body(schema: onnx.defs.OpSchema, node: onnx.NodeProto, opset: int,
                  input_types: list[onnx.TypeProto | None]) -> onnx.FunctionProto:
    """The schema's function body for the node at opset. InvalidModelError where a context-dependent body
    needs an input type the model does not give."""
    static = [v for v in schema.function_opset_versions if v <= opset]
    contextual = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    function = onnx.FunctionProto()
    if static and (not contextual or max(static) >= max(contextual)):
        function.ParseFromString(schema.get_function_with_opset_version(max(static)))
        return function
    if not contextual:
        raise InvalidModelError(f"{schema.name} has no function body at opset {opset}")
    given = [t for name, t in zip(node.input, input_types) if name]
    if any(t is None for t in given):
        raise InvalidModelError(f"{schema.name} runs as its function body, which depends on its inputs' types; the "
                                "model does not state them all (value_info)")
    built = schema.get_context_dependent_function_with_opset_version(
        max(contextual), node.SerializeToString(), [t.SerializeToString() for t in input_types if t is not None])
    function.ParseFromString(built)
    if not function.node:
        raise InvalidModelError(f"{schema.name}'s function body cannot be built for this node")
    return function


class FunctionBody(Kernel):
    """A node run as its op's function body (not registered: the session plans it for an op with no kernel)."""

    def setup(self, *, schema: onnx.defs.OpSchema, opset: int, types: list[onnx.TypeProto | None]) -> None:
        node = self.node
        function = function_body(schema, node, opset, types)
        versions = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in function.opset_import}
        for domain, version in versions.items():
            if self.ctx.opsets.get(domain) != version:
                have = self.ctx.opsets.get(domain)
                raise InvalidModelError(
                    f"{schema.name} runs as its function body, which imports {domain or 'ai.onnx'} version {version}; "
                    f"the model imports {'none' if have is None else f'version {have}'} (a body runs at the model's "
                    "versions)")
        if any(n.op_type == node.op_type and n.domain == node.domain for n in function.node):
            raise InvalidModelError(f"{schema.name}'s function body calls {schema.name}")
        attributes = {name: a.default_value for name, a in schema.attributes.items()
                      if a.default_value.type != onnx.AttributeProto.UNDEFINED}
        attributes |= {a.name: a for a in node.attribute}
        given = {formal: formal for formal, actual in zip(function.input, node.input) if actual}
        rename = {formal: given.get(formal, "") for formal in function.input}
        body = [_resolved(n, attributes, rename) for n in function.node]
        self.outputs = [i for i, name in enumerate(node.output) if name and i < len(function.output)]
        graph = onnx.helper.make_graph(
            body, f"{schema.name}.body",
            [_value_info(formal, t) for formal, actual, t in zip(function.input, node.input, types) if actual],
            [onnx.helper.make_empty_tensor_value_info(function.output[i]) for i in self.outputs])
        self.body = self.ctx.compile_graph(graph)
        self.n_outputs = len(node.output)

    def run(self, *inputs: Any) -> tuple[Any, ...]:
        values = self.body.run([x for name, x in zip(self.node.input, inputs) if name])
        results: list[Any] = [None] * self.n_outputs
        for i, value in zip(self.outputs, values):
            results[i] = value
        return tuple(results)


def _value_info(name: str, tp: onnx.TypeProto | None) -> onnx.ValueInfoProto:
    info = onnx.ValueInfoProto(name=name)
    if tp is not None:
        info.type.CopyFrom(tp)
    return info


def _resolved(node: onnx.NodeProto, attributes: dict[str, onnx.AttributeProto],
              rename: dict[str, str]) -> onnx.NodeProto:
    """A body node with its attribute references replaced by the call's attributes (left out where the call
    has none and the schema no default) and omitted optional inputs made empty, in its subgraphs too."""
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    copy.input[:] = [rename.get(name, name) for name in copy.input]
    kept = []
    for attr in copy.attribute:
        if attr.ref_attr_name:
            if attr.ref_attr_name not in attributes:
                continue
            value = onnx.AttributeProto()
            value.CopyFrom(attributes[attr.ref_attr_name])
            value.name = attr.name
            attr = value
        for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            inner = [_resolved(n, attributes, rename) for n in graph.node]
            del graph.node[:]
            graph.node.extend(inner)
        kept.append(attr)
    resolved = [onnx.AttributeProto() for _ in kept]
    for new, old in zip(resolved, kept):
        new.CopyFrom(old)
    del copy.attribute[:]
    copy.attribute.extend(resolved)
    return copy
