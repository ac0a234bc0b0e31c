"""onnxruntime's packed attention (onnxruntime-only): a MultiHeadAttention or GroupQueryAttention whose query,
key and value are projections of one input, with the three weights packed into one."""

from __future__ import annotations

import math
from typing import Any

import torch

from aten2onnx.exporter.rewrites.core import (CONTRIB_DOMAIN, Context, Rewrite, _constant, _in_place_of,
                                              _one_value, _rewrite_each, _scalar, _Uses)
from aten2onnx.ir import lazy
from aten2onnx.ir.builder import GraphBuilder, Node, Value, static_ints


def _projection(value: Value | None, uses: _Uses) -> tuple[Value, Any, Any, list[Node]] | None:
    """value = x @ w (+ b) with w [K, N] and b [N] weights, read only by its reader: (x, w, b or None, the
    nodes). Spelled MatMul(x, w) [+ Add(., b)], or as a 2-D Gemm between Reshapes that flatten x's leading
    dims and restore them."""
    node = value.producer if value is not None else None
    if node is None or node.domain or uses.only_reader(value) is None:
        return None
    bias, chain = None, [node]
    if node.op_type == "Add" and _constant(node.inputs[1]) and node.inputs[1] is not None \
            and node.inputs[1].const.dim() == 1:
        bias, value = node.inputs[1].const, node.inputs[0]
        node = value.producer
        if node is None or node.domain or uses.only_reader(value) is None:
            return None
        chain.append(node)
    if node.op_type == "MatMul" and _constant(node.inputs[1]) and node.inputs[1].const.dim() == 2:
        return node.inputs[0], node.inputs[1].const, bias, chain
    if bias is not None or node.op_type != "Reshape":
        return None
    gemm = node.inputs[0].producer
    if (gemm is None or gemm.op_type != "Gemm" or gemm.domain or uses.only_reader(node.inputs[0]) is None
            or gemm.attrs.get("transA", 0) or float(gemm.attrs.get("alpha", 1.0)) != 1.0
            or float(gemm.attrs.get("beta", 1.0)) != 1.0 or not all(_constant(v) for v in gemm.inputs[1:])):
        return None
    flat = gemm.inputs[0].producer
    if flat is None or flat.op_type != "Reshape" or flat.domain or uses.only_reader(gemm.inputs[0]) is None:
        return None
    x = flat.inputs[0]
    if x.shape is None or value.shape is None or tuple(x.shape[:-1]) != tuple(value.shape[:-1]) \
            or None in x.shape or not isinstance(x.shape[-1], int):
        return None  # (the restored leading dims are the input's, symbolic ones included)
    w = gemm.inputs[1].const
    weight = lazy.apply(torch.Tensor.t, w) if gemm.attrs.get("transB", 0) else w
    c = gemm.inputs[2].const if len(gemm.inputs) > 2 and gemm.inputs[2] is not None else None
    if c is not None and c.dim() != 1:
        return None
    return x, weight, c, [node, gemm, flat]


def _split_projection(values: list[Value | None], uses: _Uses, widths: list[int] | None = None
                      ) -> tuple[Value, Any, Any, list[Node]] | None:
    """query, key and value as the three parts, in order, of one projection's last dim (Split): equal, or
    of the given widths."""
    split = values[0].producer if values[0] is not None else None
    if (split is None or split.op_type != "Split" or split.domain or len(split.outputs) != 3
            or [v for v in values] != split.outputs or split.inputs[0].rank is None
            or split.attrs.get("axis", 0) not in (-1, split.inputs[0].rank - 1)
            or any(uses.only_reader(v) is None for v in values)):
        return None
    sizes = static_ints(split.inputs[1]) if len(split.inputs) > 1 else None
    if sizes is None or (len(set(sizes)) != 1 if widths is None else sizes != widths):
        return None
    found = _projection(split.inputs[0], uses)
    return None if found is None else (*found[:3], [split, *found[3]])


def _packed_attention(g: GraphBuilder, node: Node, uses: _Uses, sources: list[torch.Tensor]) -> list[Node] | None:
    """MultiHeadAttention(x Wq + bq, x Wk + bk, x Wv + bv, attention_bias) as onnxruntime's Attention(x,
    [Wq Wk Wv], [bq bk bv], attention_bias): one projection, inside the op; GroupQueryAttention of such
    projections (fewer key and value heads) as GroupQueryAttention(x [Wq Wk Wv] + [bq bk bv]), the query
    input packing all three."""
    grouped = node.domain == CONTRIB_DOMAIN and node.op_type == "GroupQueryAttention"
    if grouped:
        if len(node.inputs) < 7 or any(v is not None for i, v in enumerate(node.inputs) if i in (3, 4) or i > 6):
            return None
    elif node.domain != CONTRIB_DOMAIN or node.op_type != "MultiHeadAttention" or len(node.inputs) < 3 \
            or any(v is not None for i, v in enumerate(node.inputs) if i in (3, 4) or i > 5):
        return None
    qkv = list(node.inputs[:3])
    attrs = dict(node.attrs)
    if any(v is None or v.shape is None or not isinstance(v.shape[-1], int) for v in qkv):
        return None
    widths = [v.shape[-1] for v in qkv]
    scaled = qkv[0].producer
    if (scaled is not None and scaled.op_type == "Mul" and not scaled.domain and _scalar(scaled.inputs[1])
            and uses.only_reader(qkv[0]) is not None and "scale" in attrs):
        # a query scaled by a constant (Whisper's q_proj(x) * scaling): the factor joins the op's scale
        factor = _one_value(scaled.inputs[1])
        if factor is None or not math.isfinite(float(factor)) or float(factor) == 0:
            return None
        qkv[0], attrs["scale"] = scaled.inputs[0], float(attrs["scale"]) * float(factor)
    found = _split_projection(qkv, uses, widths if grouped else None)
    if found is not None:
        x, weight, bias, chain = found
    else:
        parts = [_projection(v, uses) for v in qkv]
        if any(p is None for p in parts) or len({id(p[0]) for p in parts}) != 1 \
                or len({p[1].shape[0] for p in parts}) != 1 or [p[1].shape[1] for p in parts] != widths \
                or (not grouped and len(set(widths)) != 1):
            return None
        x = parts[0][0]
        weight = lazy.apply(lambda *ws: torch.cat(ws, 1), *[p[1] for p in parts])
        biases = [p[2] if p[2] is not None else torch.zeros(p[1].shape[1], dtype=p[1].dtype) for p in parts]
        bias = None if all(p[2] is None for p in parts) else lazy.apply(lambda *bs: torch.cat(bs), *biases)
        chain = [n for p in parts for n in p[3]]
    if x.rank != 3 or x.dtype != torch.float32 or weight.dtype != torch.float32 \
            or (bias is not None and bias.dtype != torch.float32):
        return None
    if weight.shape[1] != sum(widths) or weight.shape[0] != x.shape[-1]:
        return None
    if bias is None and not grouped:
        bias = torch.zeros(sum(widths))
    sources.extend(v.const for n in chain for v in n.inputs if v is not None and v.kind == "initializer")
    w = g.initializer(f"{node.outputs[0].name}.qkv_weight", lazy.apply(torch.Tensor.contiguous, weight))
    b = None if bias is None else g.initializer(f"{node.outputs[0].name}.qkv_bias",
                                                lazy.apply(torch.Tensor.contiguous, bias))
    if grouped:
        first = len(g.nodes)
        packed = g.op("MatMul", x, w)
        if b is not None:
            packed = g.op("Add", packed, b)
        packed.shape, packed.dtype = (*x.shape[:-1], sum(widths)), x.dtype
        made = g.nodes[first:]
        del g.nodes[first:]
        attention = _in_place_of(node, "GroupQueryAttention", [packed, None, None, *node.inputs[3:7]], attrs,
                                 CONTRIB_DOMAIN)
    else:
        made = []
        attention_bias = node.inputs[5] if len(node.inputs) > 5 else None
        attention = _in_place_of(node, "Attention", [x, w, b, None, None, attention_bias], attrs, CONTRIB_DOMAIN)
    return [*made, attention]  # (the projections, read by this attention only, are dead now)


def _run(nodes: list[Node], ctx: Context) -> list[Node]:
    return _rewrite_each(ctx.g, nodes, ctx.outputs, lambda g, node, uses: _packed_attention(g, node, uses, ctx.sources))


PACKED_ATTENTION = Rewrite("packed attention", "onnxruntime-only", _run, when=lambda ctx: ctx.onnxruntime)
