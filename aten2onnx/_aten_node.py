"""The encoding of an ATen fallback node, shared by the exporter (writes it) and the runtime
(reads it). See README "ATen fallback nodes".

    op_type "ATen", domain "org.pytorch.aten"
    operator       STRING  operator name without namespace ("add")
    overload_name  STRING  overload ("Tensor"; "" for default)
    namespace      STRING  only when not "aten" ("mylib")
    input_args     STRINGS for each ONNX input, the schema argument it feeds; a list argument
                           (Tensor[], Tensor?[]) repeats its name once per element, "" inputs for None
    <argument>     one attribute per non-tensor argument, named as in the schema, typed by its value:
                   int/bool/SymInt -> INT, float -> FLOAT (a 0-d float64 TENSOR where float32 would
                   round it; float[] likewise 1-D), Scalar -> INT or FLOAT, int[] -> INTS,
                   float[] -> FLOATS, str -> STRING, ScalarType -> STRING ("float32"),
                   Layout/Device/MemoryFormat -> STRING ("strided", "cpu", "contiguous_format").
                   An argument that is None is left out.
    A non-tensor argument known only at run time (a SymInt) is an input named in input_args instead:
    a 0-d tensor for a scalar, a 1-D int64 tensor for an int list.
    complex_inputs INTS    positions of inputs that are complex tensors carried as real pairs (a
                           trailing axis of 2: real, imaginary); the op gets them as complex
    complex_outputs INTS   positions of outputs that are complex: the node returns them as real pairs
    complex_scalars STRINGS the arguments given as a complex number: FLOATS [real, imaginary]
    bool_scalars   STRINGS the Scalar arguments given as a Python bool (INT 0 or 1): the op gets the bool,
                           which promotes as one (bool & True is bool, bool & 1 would be int64)

Exact mode (`export(..., exact=True)`) writes the same encoding into node metadata: the node that makes
an FX node's result carries, under EXACT_CALL, that node's ATen call as a serialized ATen NodeProto
(base64) whose inputs are the values the call reads and whose outputs are the FX node's results; the
model says EXACT_MODEL = "1". aten2onnx.runtime then runs the call in place of the nodes made for it.
"""

from __future__ import annotations

import base64

import torch

from aten2onnx._onnx_graphs import graphs

DOMAIN = "org.pytorch.aten"
RESERVED = frozenset({"operator", "overload_name", "namespace", "input_args", "complex_inputs", "complex_outputs",
                      "complex_scalars", "bool_scalars"})

MEMORY_FORMATS = {
    "contiguous_format": torch.contiguous_format,
    "preserve_format": torch.preserve_format,
    "channels_last": torch.channels_last,
    "channels_last_3d": torch.channels_last_3d,
}
LAYOUTS = {"strided": torch.strided, "sparse_coo": torch.sparse_coo}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"{name!r} is not a torch dtype")
    return dtype


def memory_format_name(fmt: torch.memory_format) -> str:
    for name, value in MEMORY_FORMATS.items():
        if value == fmt:
            return name
    raise ValueError(f"unknown memory format {fmt}")


def layout_name(layout: torch.layout) -> str:
    for name, value in LAYOUTS.items():
        if value == layout:
            return name
    raise ValueError(f"unsupported layout {layout}")


def schema_kind(arg: torch._C.Argument) -> tuple[str, bool, bool]:
    """(kind, is_list, is_optional) of a schema argument: kind is the element type's name as the
    schema writes it ("Tensor", "int", "SymInt", "float", "bool", "str", "number" for Scalar,
    "ScalarType", "Layout", "Device", "MemoryFormat", ...)."""
    text = str(arg.real_type)
    optional = text.startswith("Optional[")
    if optional:
        text = text[len("Optional["):-1]
    is_list = text.startswith("List[")
    if is_list:
        text = text[len("List["):-1].removeprefix("Optional[").removesuffix("]")
    return text, is_list, optional


def overload_keys(graph) -> set[str]:
    """The ATen overloads (`aten::op.overload`) of the fallback nodes in an ONNX graph (or function),
    bodies included; a node that names no operator in text names none."""
    import onnx

    keys: set[str] = set()
    for body in graphs(graph):
        for node in body.node:
            if node.op_type != "ATen" or node.domain != DOMAIN:
                continue
            text = {a.name: a.s.decode(errors="replace") for a in node.attribute
                    if a.type == onnx.AttributeProto.STRING and a.name in ("operator", "overload_name", "namespace")}
            if "operator" in text:
                keys.add(f"{text.get('namespace', 'aten')}::{text['operator']}.{text.get('overload_name') or 'default'}")
    return keys


EXACT_CALL = "exact_call"
EXACT_MODEL = "aten2onnx.exact"
EXACT_REQUIRES_GRAD = "aten2onnx.exact.requires_grad"  # JSON list of the initializers that require grad in eager


def is_exact(model) -> bool:
    """Whether a ModelProto says it is an exact export."""
    return any(p.key == EXACT_MODEL and p.value == "1" for p in model.metadata_props)


def encode_call(proto) -> str:
    """An ATen NodeProto as the text of an EXACT_CALL metadata entry."""
    return base64.b64encode(proto.SerializeToString()).decode("ascii")


def decode_call(text: str):
    """The ATen NodeProto of an EXACT_CALL metadata entry (ValueError when it is not one)."""
    import onnx

    proto = onnx.NodeProto()
    try:
        proto.ParseFromString(base64.b64decode(text.encode("ascii"), validate=True))
    except Exception as e:  # binascii.Error, UnicodeEncodeError, protobuf's DecodeError
        raise ValueError(f"not a serialized node: {type(e).__name__}: {e}") from None
    if proto.op_type != "ATen" or proto.domain != DOMAIN:
        raise ValueError(f"an exact call must be an ATen node of domain {DOMAIN!r}, not {proto.domain!r}:{proto.op_type!r}")
    return proto
