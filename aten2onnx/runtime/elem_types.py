"""The ONNX element types of a graph's values known before it runs: those the model states and those that follow
from them through each node's schema. The runtime holds int4 as int8, float4e2m1 as float32 (kernel.SUB_BYTE), so
a kernel whose result depends on such a type (CastLike, QuantizeLinear) is planned with its inputs' types."""

from __future__ import annotations

from typing import Iterable

import onnx
from onnx import TensorProto


def stated_types(graph: onnx.GraphProto, extra: Iterable[onnx.TensorProto] = ()) -> dict[str, int]:
    """Element types the graph states: of its inputs, initializers (and `extra` constants), value_info and outputs."""
    types: dict[str, int] = {}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type:
            types[info.name] = info.type.tensor_type.elem_type
    for tensor in list(graph.initializer) + list(extra):
        types[tensor.name] = tensor.data_type
    return types


def output_types(node: onnx.NodeProto, schema: onnx.defs.OpSchema | None,
                 input_types: list[int | None]) -> list[int | None]:
    """Per node output, the element type that follows from its inputs' types and its attributes (None: unknown).
    The ops that choose a type (Cast, CastLike, QuantizeLinear, Constant) by their own rule; any other op by its
    schema: an output shares a type parameter with an input of known type, or its constraint allows one type."""
    attrs = {a.name: a for a in node.attribute}
    n = len(node.output)

    def known(i: int) -> int | None:
        return input_types[i] if i < len(input_types) and input_types[i] else None

    if schema is None:
        return [None] * n
    if node.op_type == "Cast" and "to" in attrs:
        return [attrs["to"].i] + [None] * (n - 1)
    if node.op_type == "CastLike":
        return [known(1)] + [None] * (n - 1)
    if node.op_type == "QuantizeLinear":
        chosen = attrs["output_dtype"].i if "output_dtype" in attrs and attrs["output_dtype"].i else None
        if chosen is None and (len(node.input) < 3 or not node.input[2]):
            chosen = TensorProto.UINT8
        return [chosen or known(2)] + [None] * (n - 1)
    if node.op_type == "Constant" and "value" in attrs:
        return [attrs["value"].t.data_type] + [None] * (n - 1)
    constraints = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
    formal_inputs = [p.type_str for p in schema.inputs]
    result: list[int | None] = []
    for i in range(n):
        formal = schema.outputs[min(i, len(schema.outputs) - 1)].type_str if schema.outputs else None
        result.append(_follows(formal, formal_inputs, constraints, known, len(node.input)))
    return result


def _follows(formal: str | None, formal_inputs: list[str], constraints: dict[str, list[str]], known,
             n_inputs: int) -> int | None:
    if formal is None:
        return None
    for i in range(n_inputs):
        # a variadic last formal input stands for every input from its position on
        if formal_inputs and formal_inputs[min(i, len(formal_inputs) - 1)] == formal and known(i):
            return known(i)
    allowed = constraints.get(formal, [formal])
    if len(allowed) == 1 and allowed[0].startswith("tensor(") and allowed[0] != "tensor(string)":
        name = allowed[0][len("tensor("):-1].upper()
        return TensorProto.DataType.Value(name) if name in TensorProto.DataType.keys() else None
    return None
