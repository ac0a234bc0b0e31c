"""Kernel base class and the kernel table: (domain, op_type) -> kernels by since_version.

A kernel is built once per node when a session is created (attributes decoded then, into the
keyword arguments of `setup`), and its `run` is called with torch tensors on every run; it
returns a tuple of tensors, one per node output.

    class Relu(Kernel):
        op_type, since_version = "Relu", 6
        def run(self, x):
            return (torch.relu(x),)
"""

from __future__ import annotations

import bisect
import warnings
from typing import Any, ClassVar, Iterable

import onnx
import torch
from onnx import AttributeProto, numpy_helper

from aten2onnx import _dtypes


class SessionContext:
    """What a kernel may need beyond its attributes: the device, and subgraph compilation."""

    def __init__(self, device: torch.device, opsets: dict[str, int], allowed_aten_namespaces: tuple[str, ...],
                 compile_graph=None) -> None:
        self.device = device
        self.opsets = opsets
        self.allowed_aten_namespaces = allowed_aten_namespaces
        self.compile_graph = compile_graph  # (GraphProto, outer names) -> runner; set by the session


class Kernel:
    domain: ClassVar[str] = ""
    op_type: ClassVar[str]
    since_version: ClassVar[int]

    def __init__(self, ctx: SessionContext, node: onnx.NodeProto | None = None, **attrs: Any) -> None:
        self.ctx = ctx
        self.node = node
        self.setup(**attrs)

    def setup(self) -> None:
        """Override with the op's attributes as keyword arguments, defaults as in the ONNX spec."""

    def run(self, *inputs: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        raise NotImplementedError


_TABLE: dict[tuple[str, str], list[type[Kernel]]] = {}


def register_kernels(kernels: Iterable[type[Kernel]]) -> None:
    for cls in kernels:
        versions = _TABLE.setdefault((cls.domain, cls.op_type), [])
        if any(k.since_version == cls.since_version for k in versions):
            raise ValueError(f"kernel {cls.domain or 'ai.onnx'}::{cls.op_type} v{cls.since_version} registered twice")
        bisect.insort(versions, cls, key=lambda k: k.since_version)


def find_kernel(domain: str, op_type: str, opset: int) -> type[Kernel] | None:
    """The kernel for op_type at a model's opset of its domain: the newest since_version <= opset."""
    versions = _TABLE.get((domain, op_type))
    if not versions:
        return None
    best = None
    for cls in versions:
        if cls.since_version <= opset:
            best = cls
    return best


def kernel_versions(domain: str, op_type: str) -> list[int]:
    return [k.since_version for k in _TABLE.get((domain, op_type), [])]


def all_kernels() -> dict[tuple[str, str], list[int]]:
    return {key: [k.since_version for k in v] for key, v in sorted(_TABLE.items())}


def decode_attribute(attr: AttributeProto) -> Any:
    """An AttributeProto as the Python value kernels take (strings as str, tensors as torch)."""
    kind = attr.type
    if kind == AttributeProto.INT:
        return attr.i
    if kind == AttributeProto.FLOAT:
        return attr.f
    if kind == AttributeProto.STRING:
        return attr.s.decode("utf-8")
    if kind == AttributeProto.INTS:
        return list(attr.ints)
    if kind == AttributeProto.FLOATS:
        return list(attr.floats)
    if kind == AttributeProto.STRINGS:
        return [s.decode("utf-8") for s in attr.strings]
    if kind == AttributeProto.TENSOR:
        return tensor_from_proto(attr.t)
    if kind == AttributeProto.GRAPH:
        return attr.g
    if kind == AttributeProto.GRAPHS:
        return list(attr.graphs)
    if kind == AttributeProto.TYPE_PROTO:
        return attr.tp
    raise ValueError(f"attribute {attr.name!r} has unsupported type {AttributeProto.AttributeType.Name(kind)}")


def tensor_from_proto(proto: onnx.TensorProto, base_dir: str | None = None) -> torch.Tensor:
    """A torch tensor over a TensorProto's bytes, sharing them where the proto holds raw data."""
    dtype = _dtypes.to_torch(proto.data_type)
    shape = tuple(proto.dims)
    if proto.data_location != onnx.TensorProto.EXTERNAL and proto.raw_data:
        raw = proto.raw_data
        if len(raw) == 0:
            return torch.empty(shape, dtype=dtype)
        storage_dtype = {torch.bfloat16: torch.int16}.get(dtype, dtype)
        if dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz):
            storage_dtype = torch.uint8
        # torch warns that bytes are read-only; kernels never write to their inputs, so sharing is safe.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            flat = torch.frombuffer(raw, dtype=storage_dtype)
        return flat.view(dtype).reshape(shape)
    array = numpy_helper.to_array(proto, base_dir or "")
    if dtype == torch.bfloat16:
        return torch.from_numpy(array.astype("float32")).to(torch.bfloat16).reshape(shape)
    return torch.from_numpy(array.copy()).reshape(shape)
