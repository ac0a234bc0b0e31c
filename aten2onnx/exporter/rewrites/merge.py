"""Common subexpressions (bitwise): nodes that compute the same thing from the same inputs merged into one."""

from __future__ import annotations

import math
from typing import Any

import torch

from aten2onnx.exporter.rewrites.core import _KEEP, Context, Rewrite, _Groups, _Uses
from aten2onnx.ir import lazy
from aten2onnx.ir.builder import Node, Subgraph, Value


def _bytes(t: torch.Tensor) -> bytes:
    """A tensor's elements as bytes, whatever its dtype (numpy has no bfloat16)."""
    flat = torch.empty(t.numel(), dtype=t.dtype).copy_(t.detach().reshape(-1))  # (fresh strides: no 0 stride)
    return flat.view(torch.uint8).numpy().tobytes()


def _attr_key(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), _bytes(value) if value.numel() <= 4096 else id(value))
    if isinstance(value, (list, tuple)):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return value


def _const_key(value: Value) -> Any:
    """Small constants with equal values are one input (the exporter makes a 0-d 1.0 many times)."""
    if value.kind == "const" and value.const is not None and value.const.numel() <= 64 and not lazy.is_lazy(value.const):
        t = value.const
        return ("const", str(t.dtype), tuple(t.shape), _bytes(t), value.complex)
    return id(value)


def _merge_duplicates(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    uses = _Uses(nodes, outputs)
    groups = _Groups(nodes)
    seen: dict[Any, Node] = {}
    kept = []
    for node in nodes:
        if (node.op_type in _KEEP or node.call is not None
                or any(isinstance(a, Subgraph) for a in node.attrs.values())):
            kept.append(node)
            continue
        key = (node.domain, node.op_type, tuple(None if v is None else _const_key(v) for v in node.inputs),
               tuple(sorted((k, _attr_key(v)) for k, v in node.attrs.items())), len(node.outputs))
        first = seen.get(key)
        if (first is not None and all(a.dtype == b.dtype for a, b in zip(first.outputs, node.outputs))
                and groups.may_join(node, first)):
            if all(id(o) not in uses.pinned for o in node.outputs):
                for mine, theirs in zip(node.outputs, first.outputs):
                    uses.replace(mine, theirs)
                continue
        seen.setdefault(key, node)
        kept.append(node)
    return kept


def _run(nodes: list[Node], ctx: Context) -> list[Node]:
    return _merge_duplicates(nodes, ctx.outputs)


DUPLICATES = Rewrite("duplicates", "bitwise", _run, when=lambda ctx: ctx.same_call is None)
