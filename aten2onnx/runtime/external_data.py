"""Reading a model's external data (weights kept in files beside it) so that a model file can name no
file outside the folder it was given: onnx's own rules, then the resolved path checked against it."""

from __future__ import annotations

import os
import stat
from typing import Iterator

import onnx

from aten2onnx._onnx_graphs import bodies
from aten2onnx.errors import InvalidModelError

# The keys onnx's external-data format defines; any other is refused rather than ignored.
_KEYS = frozenset({"location", "offset", "length", "checksum", "basepath"})


def external_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every tensor of the model that keeps its data in a file: initializers and attribute tensors,
    in subgraphs and local functions too."""
    stack: list = [model.graph, *model.functions]
    while stack:
        graph = stack.pop()
        sparse = list(getattr(graph, "sparse_initializer", ()))  # a FunctionProto has no initializers
        tensors = list(getattr(graph, "initializer", ())) + [s.values for s in sparse] + [s.indices for s in sparse]
        stack += [body for node in graph.node for body in bodies(node)]
        for node in graph.node:
            for attr in node.attribute:
                tensors += [attr.t] if attr.HasField("t") else []
                tensors += list(attr.tensors)
        yield from (t for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL)


def load_external_data(model: onnx.ModelProto, roots: list[str]) -> None:
    """Read every external tensor's bytes into the model (in place). `roots` are the folders its files
    may lie in, after symlinks are resolved (the first is where relative locations start)."""
    real_roots = [os.path.realpath(root) for root in roots]
    for tensor in external_tensors(model):
        tensor.raw_data = _read(tensor, roots[0], real_roots)
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]


def _read(tensor: onnx.TensorProto, base_dir: str, real_roots: list[str]) -> bytes:
    where = f"initializer {tensor.name!r}" if tensor.name else "a tensor attribute"
    info = {}
    for entry in tensor.external_data:
        if entry.key not in _KEYS or entry.key in info:
            raise InvalidModelError(f"{where}: external data key {entry.key!r} is unknown or repeated")
        info[entry.key] = entry.value
    path = resolve_location(info.get("location", ""), base_dir, real_roots, where)
    offset, length = _bound(info, "offset", where), _bound(info, "length", where)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        raise InvalidModelError(f"{where}: cannot open its external data file: {e}") from e
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise InvalidModelError(f"{where}: its external data location is not a regular file")
    start = offset or 0
    if length is None:
        length = max(status.st_size - start, 0)
    if start + length > status.st_size:
        os.close(fd)
        raise InvalidModelError(f"{where}: external data bytes {start}..{start + length} lie beyond the end of its "
                                f"file ({status.st_size} bytes)")
    with os.fdopen(fd, "rb") as f:
        f.seek(start)
        return f.read(length)


def resolve_location(location: str, base_dir: str, real_roots: list[str], where: str) -> str:
    """The resolved path of an external data location, or InvalidModelError when the location is not
    a plain relative path (onnx's rule) or resolves outside every root (through symlinks, say)."""
    parts = location.replace("\\", "/").split("/")
    if not location or "\0" in location or os.path.isabs(location) or location.startswith(("/", "\\")) \
            or ":" in parts[0] or ".." in parts:
        raise InvalidModelError(f"{where}: external data location {location!r} must be a relative path inside "
                                "the model's folder, without '..'")
    path = os.path.realpath(os.path.join(base_dir, *parts))
    if not any(os.path.commonpath([path, root]) == root for root in real_roots):
        raise InvalidModelError(f"{where}: external data location {location!r} resolves to {path}, outside the "
                                f"model's folder {real_roots[0]}")
    return path


def _bound(info: dict[str, str], key: str, where: str) -> int | None:
    if key not in info:
        return None
    try:
        value = int(info[key])
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidModelError(f"{where}: external data {key} {info[key]!r} is not a non-negative integer")
    return value
