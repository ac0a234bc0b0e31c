"""Emit an ATen fallback node for an overload with no symbolic; the encoding is in _aten_node."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import torch

from aten2onnx import _aten_node, _dtypes
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.registry._schema import python_name


def emit_aten_node(g: GraphBuilder, op: torch._ops.OpOverload, bound: dict[str, Any], outputs: int,
                   complex_outputs: list[int] | None = None) -> Any:
    """One ATen node computing `op` on the bound arguments; returns its output Value(s).
    complex_outputs: the positions of results that are complex (the node returns them as real pairs)."""
    inputs, attrs = aten_call(g, op, bound, complex_outputs)
    return g.op("ATen", *inputs, outputs=outputs, domain=_aten_node.DOMAIN, **attrs)


def aten_call(g: GraphBuilder, op: torch._ops.OpOverload, bound: dict[str, Any],
              complex_outputs: list[int] | None = None) -> tuple[list[Value | None], dict[str, Any]]:
    """The inputs and attributes of an ATen node calling `op` on the bound arguments (constants and
    int lists it needs are made in g)."""
    schema = op._schema
    namespace, name = schema.name.split("::", 1)
    inputs: list[Value | None] = []
    input_args: list[str] = []
    attrs: dict[str, Any] = {"operator": name, "overload_name": schema.overload_name}
    if namespace != "aten":
        attrs["namespace"] = namespace
    for arg in schema.arguments:
        if arg.name in _aten_node.RESERVED:
            raise ValueError(f"{schema.name}: argument {arg.name!r} collides with an ATen node attribute")
        value = bound[python_name(arg.name)]
        kind, is_list, _ = _aten_node.schema_kind(arg)
        if value is None:
            continue
        if kind in _ENUMS and type(value) is int:
            # a default torch's schema binding gives as the enum's int (randint's dtype=4 is int64)
            value = _dtypes.from_scalar_type(value) if kind == "ScalarType" else _ENUMS[kind][value]

        if kind == "Tensor" and not is_list and isinstance(value, (int, float)) and not isinstance(value, bool):
            # FX passes a Python number where the schema takes a tensor (x + 2.25): an attribute, so the
            # op gets the number, which promotes as a number (a 0-d float32 tensor would make a 0-d
            # bfloat16 one float32)
            attrs[arg.name] = _exact_floats(value)
        elif kind == "Tensor":
            items = list(value) if is_list else [value]
            # a bool, or a number inside a list: a constant input
            inputs.extend(v if isinstance(v, Value) or v is None else g.const(v) for v in items)
            input_args.extend([arg.name] * len(items))
        elif isinstance(value, Value) or (is_list and any(isinstance(v, Value) for v in value)):
            inputs.append(g.int_list(value) if is_list else value)
            input_args.append(arg.name)
        elif isinstance(value, complex):
            attrs[arg.name] = _exact_floats([value.real, value.imag])
            attrs.setdefault("complex_scalars", []).append(arg.name)
        elif kind == "number" and isinstance(value, bool):
            attrs[arg.name] = int(value)
            attrs.setdefault("bool_scalars", []).append(arg.name)
        else:
            attrs[arg.name] = _exact_floats(_encode_constant(kind, value, is_list, schema.name, arg.name))
    attrs["input_args"] = input_args
    complex_inputs = [i for i, v in enumerate(inputs) if v is not None and v.complex]
    if complex_inputs:
        attrs["complex_inputs"] = complex_inputs
    if complex_outputs:
        attrs["complex_outputs"] = list(complex_outputs)
    return inputs, attrs


# Enum arguments whose schema defaults torch reports as ints, by their c10 enum order.
_ENUMS = {
    "ScalarType": None,  # (_dtypes.from_scalar_type: the running torch's own table)
    "MemoryFormat": (torch.contiguous_format, torch.preserve_format, torch.channels_last, torch.channels_last_3d),
    "Layout": (torch.strided, torch.sparse_coo),
}


def _exact_floats(value: Any) -> Any:
    """A float (or list of floats) an ONNX FLOAT(S) attribute would round, as a float64 TENSOR attribute
    (0-d, or 1-D for a list): eps=1e-5 of a float64 layer_norm must reach the op as 1e-5."""
    items = value if isinstance(value, list) else [value]
    if not any(isinstance(v, float) for v in items):
        return value
    if all(math.isnan(v) or float(np.float32(v)) == v for v in items):
        return value
    return torch.tensor(value, dtype=torch.float64)


def _encode_constant(kind: str, value: Any, is_list: bool, op: str, arg: str) -> Any:
    if isinstance(value, torch.dtype):
        return _aten_node.dtype_name(value)
    if isinstance(value, torch.memory_format):
        return _aten_node.memory_format_name(value)
    if isinstance(value, torch.layout):
        return _aten_node.layout_name(value)
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, (bool, int, float, str)):
        return int(value) if isinstance(value, bool) else value
    if is_list and all(isinstance(v, (bool, int, float)) for v in value):
        if any(isinstance(v, float) for v in value):
            return [float(v) for v in value]
        return [int(v) for v in value]
    raise TypeError(f"{op}: argument {arg!r} of type {kind} ({type(value).__name__}) cannot be encoded in an ATen node")
