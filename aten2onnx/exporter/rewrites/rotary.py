"""Rotary embeddings, x * cos + rotate_half(x) * sin, as one RotaryEmbedding: onnxruntime's (onnxruntime-only),
or ONNX's own from opset 23 (rounding); the Reshapes and Transposes left around them are tidied again."""

from __future__ import annotations

import functools

import torch

from aten2onnx.exporter.rewrites.core import (CONTRIB_DOMAIN, Context, Rewrite, _constant, _made_since,
                                              _plain_add, _rewrite_each, _scalar, _Uses)
from aten2onnx.exporter.rewrites.tidy import _tidy
from aten2onnx.ir import lazy, op_types
from aten2onnx.ir.builder import GraphBuilder, Node, Value, axes_of, static_ints


def _slice_bounds(node: Node) -> tuple[int, int, int] | None:
    """A Slice's (start, end, axis) along one axis with step 1, from its constant inputs (or attributes, opset
    9); None where it is not that."""
    if node.op_type != "Slice" or node.domain or node.call is not None:
        return None
    if len(node.inputs) == 1:
        starts, ends, axes, steps = node.attrs.get("starts"), node.attrs.get("ends"), node.attrs.get("axes"), [1]
    else:
        starts, ends = static_ints(node.inputs[1]), static_ints(node.inputs[2])
        axes = static_ints(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else None
        steps = static_ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else [1]
    if starts is None or ends is None or axes is None or steps is None \
            or not len(starts) == len(ends) == len(axes) == len(steps) == 1 or steps[0] != 1:
        return None
    return int(starts[0]), int(ends[0]), int(axes[0])


def _rotated_half(value: Value, x: Value, uses: _Uses) -> bool:
    """Whether value is cat(-x[..., H/2:], x[..., :H/2]) along the last axis (rotate_half), each step read by
    the next alone."""
    cat = value.producer
    rank, head = x.rank, x.shape[-1]
    if cat is None or cat.op_type != "Concat" or cat.domain or len(cat.inputs) != 2 \
            or cat.attrs.get("axis") not in (-1, rank - 1) or uses.only_reader(value) is None:
        return False
    neg, first = cat.inputs[0].producer, cat.inputs[1].producer
    if neg is None or neg.op_type != "Neg" or neg.domain or uses.only_reader(cat.inputs[0]) is None \
            or first is None or uses.only_reader(cat.inputs[1]) is None:
        return False
    second = neg.inputs[0].producer
    if second is None or uses.only_reader(neg.inputs[0]) is None or first.inputs[0] is not x \
            or second.inputs[0] is not x:
        return False
    half = head // 2
    lower, upper = _slice_bounds(first), _slice_bounds(second)
    return (lower is not None and upper is not None and lower[2] % rank == upper[2] % rank == rank - 1
            and lower[:2] == (0, half) and upper[0] == half and upper[1] >= head)


def _rotary_table(value: Value | None, x: Value, op_type: str) -> torch.Tensor | tuple | None:
    """A cos (op_type "Cos") or sin table for x [B, N, S, H], [..., S, H] with leading dims 1 and two equal
    halves (the frequencies concatenated twice, as rotary embeddings build it): the [S, H / 2] cache, as a
    tensor where the table is constant (positions known at export), else as (f, factor) where the table is
    op_type(cat(f, f)) [* factor] of f [1, S, H / 2] (computed in the graph), unsqueezed at 1."""
    seq, head = x.shape[2], x.shape[3]
    if value is not None and _constant(value):
        if lazy.is_lazy(value.const):
            return None
        table = value.const
        if table.dtype != torch.float32 or table.dim() < 2 or tuple(table.shape[-2:]) != (seq, head) \
                or any(d != 1 for d in table.shape[:-2]):
            return None
        table = table.reshape(seq, head)
        first, second = table[:, :head // 2], table[:, head // 2:]
        return first.contiguous() if torch.equal(first, second) else None
    unsqueezed = value.producer if value is not None else None
    if unsqueezed is None or unsqueezed.op_type != "Unsqueeze" or unsqueezed.domain or value.rank != 4 \
            or axes_of(unsqueezed) != [1]:
        return None
    table, factor = unsqueezed.inputs[0], None
    scaled = table.producer
    if scaled is not None and scaled.op_type == "Mul" and not scaled.domain and _scalar(scaled.inputs[1]):
        table, factor = scaled.inputs[0], scaled.inputs[1]
    wave = table.producer
    if wave is None or wave.op_type != op_type or wave.domain:
        return None
    cat = wave.inputs[0].producer
    if cat is None or cat.op_type != "Concat" or cat.domain or len(cat.inputs) != 2 \
            or cat.inputs[0] is not cat.inputs[1] or cat.attrs.get("axis") not in (-1, 2):
        return None
    f = cat.inputs[0]
    if f.dtype != torch.float32 or f.shape is None or tuple(f.shape) != (1, seq, head // 2):
        return None
    return f, factor


def _rotary_of(node: Node, uses: _Uses) -> tuple[Value, tuple] | None:
    """(x, its cos and sin caches as _rotary_table gives them) where node makes x * cos + rotate_half(x) *
    sin, x [B, N, S, H] float32 (N and H static) and cos, sin tables a RotaryEmbedding can read as its
    caches: constant (positions known at export) or computed from the frequencies at each position."""
    if not _plain_add(node) or node.outputs[0].dtype != torch.float32:
        return None
    products = [v.producer for v in node.inputs]
    if any(p is None or p.op_type != "Mul" or p.domain or p.call is not None for p in products) \
            or any(uses.only_reader(v) is None for v in node.inputs):
        return None
    for straight, turned in (products, products[::-1]):
        for x, cos in (straight.inputs, straight.inputs[::-1]):
            if x.rank != 4 or x.dtype != torch.float32 or None in x.shape \
                    or not isinstance(x.shape[1], int) or not isinstance(x.shape[3], int) or x.shape[3] % 2:
                continue
            for half, sin in (turned.inputs, turned.inputs[::-1]):
                if not _rotated_half(half, x, uses):
                    continue
                caches = _rotary_table(cos, x, "Cos"), _rotary_table(sin, x, "Sin")
                if caches[0] is not None and caches[1] is not None:
                    return x, caches
    return None


def _rotary_embedding(g: GraphBuilder, node: Node, uses: _Uses, *, contrib: bool) -> list[Node] | None:
    """A rotary embedding (_rotary_of) as one RotaryEmbedding (halves, not interleaved): onnxruntime's
    (contrib), whose [S, H / 2] caches are read from a position offset of 0, or ONNX's (opset 23), whose
    caches are [B, S, H / 2]. For onnxruntime's, where x is the model's Transpose of [B, S, N, H] (it
    usually is), the op reads that as [B, S, N * H] and its result is put back in the model's layout: the
    Reshapes and Transposes around it then cancel against those around MultiHeadAttention, which reads
    [B, S, N * H] too (ONNX's Attention reads x's own [B, N, S, H])."""
    found = _rotary_of(node, uses)
    if found is None:
        return None
    x, tables = found
    b, n, s, h = x.shape
    first = len(g.nodes)
    caches = []
    for kind, table in zip(("Cos", "Sin"), tables):
        if isinstance(table, torch.Tensor):
            cache = g.initializer(g.fresh_name(f"{node.outputs[0].name}.{kind.lower()}_cache"),
                                  table if contrib else table[None])
        else:
            f, factor = table
            cache = g.op(kind, f)
            if factor is not None:
                cache = g.op("Mul", cache, factor)
            if contrib:
                cache = g.op("Reshape", cache, g.const([-1, h // 2], dtype=torch.int64))
        if not contrib and b != 1:  # (ONNX's op takes a cache row for each sequence: the table's, repeated)
            rows = g.const([b], dtype=torch.int64) if isinstance(b, int) else \
                g.op("Gather", g.op("Shape", x), g.const([0], dtype=torch.int64), axis=0)
            cache = g.op("Expand", cache, g.op("Concat", rows, g.const([1, 1], dtype=torch.int64), axis=0))
        caches.append(cache)
    position = [g.const([0], dtype=torch.int64)] if contrib else []
    rotate = functools.partial(g.op, "RotaryEmbedding", interleaved=0,
                               **({"domain": CONTRIB_DOMAIN} if contrib else {}))
    moved = x.producer
    if contrib and moved is not None and moved.op_type == "Transpose" and not moved.domain \
            and list(moved.attrs.get("perm", [])) == [0, 2, 1, 3]:
        flat = g.op("Reshape", moved.inputs[0], g.const([0, 0, n * h], dtype=torch.int64))
        rotated = rotate(flat, *position, *caches, num_heads=n)
        rotated.shape, rotated.dtype = (b, s, n * h), x.dtype
        heads = g.op("Reshape", rotated, g.const([0, 0, n, h], dtype=torch.int64))
        heads.shape = (b, s, n, h)
        out = g.op("Transpose", heads, perm=[0, 2, 1, 3])
    else:
        out = rotate(x, *position, *caches)
        out.shape, out.dtype = x.shape, x.dtype
    return _made_since(g, first, node, out)


def _run(nodes: list[Node], ctx: Context) -> list[Node]:
    rotary = functools.partial(_rotary_embedding, contrib=ctx.onnxruntime)
    return _tidy(_rewrite_each(ctx.g, nodes, ctx.outputs, rotary), ctx.outputs)


CONTRIB_ROTARY = Rewrite("RotaryEmbedding (onnxruntime's)", "onnxruntime-only", _run, when=lambda ctx: ctx.onnxruntime)
ONNX_ROTARY = Rewrite("RotaryEmbedding (ONNX's)", "rounding", _run, when=lambda ctx: not ctx.onnxruntime
                      and op_types.signature("RotaryEmbedding", ctx.g.opset) is not None)
