"""Norms: the sum a LayerNormalization alone reads as Sum (bitwise); an RMS norm of a residual sum as
onnxruntime's SkipSimplifiedLayerNormalization (onnxruntime-only); an RMS norm as ONNX's RMSNormalization from
opset 23 (rounding)."""

from __future__ import annotations

from typing import Callable

import torch

from aten2onnx.exporter.rewrites.core import (CONTRIB_DOMAIN, Context, Rewrite, _constant, _in_place_of,
                                              _one_value, _plain_add, _scalar, _Uses)
from aten2onnx.ir import op_types
from aten2onnx.ir.builder import GraphBuilder, Node, Value, axes_of, live_nodes


# -- the sum a layer norm alone reads, as Sum -----------------------------------------------------------------


def _layer_norm_sums(nodes: list[Node], outputs: list[Value], same_call: Callable[[Node, Node], bool]
                     ) -> list[Node]:
    """An Add of float32 tensors whose one reader is a LayerNormalization, as Sum; an Add before it that only it
    reads (a linear layer's bias, an embedding's first sum) joins the Sum. onnxruntime fuses Add and
    LayerNormalization into its SkipLayerNormalization, which its CPU provider (1.32) runs 4 to 5 times
    slower than the two ops it replaces (50 us against 12 us on [1, 64, 128]; BERT's five cost it about a
    fifth of its latency), and does not fuse Sum. Sum adds its inputs in order, so the result is the
    Adds' own. Only Adds the norm's module call made (same_call): the sum of the last of repeated blocks,
    which a final norm alone reads, stays the same function body as the others'."""
    uses = _Uses(nodes, outputs)
    for node in nodes:
        if not _plain_add(node) or node.outputs[0].dtype != torch.float32:
            continue
        norm = _reader(node.outputs[0], uses, "LayerNormalization")
        if norm is None or norm.inputs[0] is not node.outputs[0] or not same_call(node, norm):
            continue
        terms = list(node.inputs)
        for i, term in enumerate(node.inputs):
            if _plain_add(term.producer) and uses.only_reader(term) is node and same_call(term.producer, node):
                # (a + b) + c, or c + (a + b), which is the same float: Sum(a, b, c)
                terms = [*term.producer.inputs, node.inputs[1 - i]]
                break
        node.op_type, node.inputs = "Sum", terms
    return nodes


# -- RMS norms: ONNX's RMSNormalization; onnxruntime's SkipSimplifiedLayerNormalization of a residual sum -----


def _reader(value: Value, uses: _Uses, op_type: str) -> Node | None:
    node = uses.only_reader(value)
    return node if node is not None and node.op_type == op_type and not node.domain and node.call is None else None


def _last_axis(node: Node, rank: int) -> bool:
    """Whether a ReduceMean reduces the last axis alone, keeping it."""
    axes = axes_of(node)
    return node.attrs.get("keepdims", 1) == 1 and axes is not None and [a % rank for a in axes] == [rank - 1]


def _rms_norm_of(total: Value, uses: _Uses) -> tuple[Node, float, Value] | None:
    """The RMS norm total * (1 / sqrt(mean(total^2, last axis) + eps)) * w (w a 1-D weight) when every step is
    read by the next alone, as the exporter writes LLaMA's and T5's norms: (its last node, eps, w)."""
    readers = {id(n): n for n, _ in uses.readers.get(id(total), [])}.values()
    squares = [n for n in readers if n.op_type == "Mul" and not n.domain and n.inputs[0] is total
               and n.inputs[1] is total]
    if len(squares) != 1:
        return None
    mean = _reader(squares[0].outputs[0], uses, "ReduceMean")
    if mean is None or not _last_axis(mean, total.rank):
        return None
    shifted = _reader(mean.outputs[0], uses, "Add")
    if shifted is None or shifted.inputs[0] is not mean.outputs[0] or not _scalar(shifted.inputs[1]):
        return None
    epsilon = _one_value(shifted.inputs[1])
    root = _reader(shifted.outputs[0], uses, "Sqrt")
    inverse = _reader(root.outputs[0], uses, "Reciprocal") if root is not None else None
    scaled = _reader(inverse.outputs[0], uses, "Mul") if inverse is not None else None
    if epsilon is None or scaled is None or scaled.inputs[0] is not total:
        return None
    last = _reader(scaled.outputs[0], uses, "Mul")
    if last is None:
        return None
    weight = last.inputs[0] if last.inputs[1] is scaled.outputs[0] else last.inputs[1]
    if not _constant(weight) or weight is None or weight.const.dim() != 1 or weight.const.shape[0] != total.shape[-1] \
            or weight.const.dtype != torch.float32:
        return None
    return last, float(epsilon), weight


def _rms_normalizations(g: GraphBuilder, nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """An RMS norm of x (_rms_norm_of: float32, over the last axis, a 1-D weight) as ONNX's RMSNormalization
    (opset 23), which computes in float32 as the nodes did; written where the norm's last node was."""
    uses = _Uses(nodes, outputs)
    norms, seen = {}, set()
    for node in nodes:
        for x in node.inputs:  # (graph inputs included)
            if x is not None and id(x) not in seen and x.dtype == torch.float32 and x.shape is not None and x.rank:
                seen.add(id(x))
                found = _rms_norm_of(x, uses)
                if found is not None:
                    norms[id(found[0])] = (x, *found[1:])
    result: list[Node] = []
    for node in nodes:
        if id(node) not in norms:
            result.append(node)
            continue
        x, epsilon, weight = norms[id(node)]
        result.append(_in_place_of(node, "RMSNormalization", [x, weight],
                                   {"axis": -1, "epsilon": epsilon, "stash_type": 1}))
    return result


def _skip_rms_norms(g: GraphBuilder, nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """An RMS norm of a + b (a residual sum, both of its shape) as onnxruntime's
    SkipSimplifiedLayerNormalization(a, b, w), whose fourth result is the sum for its other readers; written
    where the sum was made."""
    uses = _Uses(nodes, outputs)
    result: list[Node] = []
    for node in nodes:
        total = node.outputs[0] if node.op_type == "Add" and not node.domain and node.call is None else None
        found = None
        if total is not None and total.dtype == torch.float32 and total.rank == 3 and total.is_static \
                and all(v is not None and v.shape == total.shape and v.dtype == total.dtype for v in node.inputs):
            found = _rms_norm_of(total, uses)
        if found is None:
            result.append(node)
            continue
        last, epsilon, weight = found
        out = last.outputs[0]
        last.outputs = [Value(g.fresh_name(f"{out.name}.unfused"), out.dtype, out.shape)]  # (dead now)
        last.outputs[0].producer = last
        stats = [Value(g.fresh_name(f"{out.name}.{kind}"), torch.float32, (*total.shape[:-1], 1))
                 for kind in ("mean", "inv_std_var")]
        g.domains.setdefault(CONTRIB_DOMAIN, 1)
        result.append(_in_place_of(node, "SkipSimplifiedLayerNormalization", [node.inputs[0], node.inputs[1], weight],
                                   {"epsilon": epsilon}, CONTRIB_DOMAIN, outputs=[out, *stats, total]))
    return result


def _sums(nodes: list[Node], ctx: Context) -> list[Node]:
    return _layer_norm_sums(live_nodes(nodes, ctx.outputs), ctx.outputs, ctx.same_call or (lambda a, b: True))


def _skips(nodes: list[Node], ctx: Context) -> list[Node]:
    return _skip_rms_norms(ctx.g, live_nodes(nodes, ctx.outputs), ctx.outputs)


def _rms(nodes: list[Node], ctx: Context) -> list[Node]:
    return _rms_normalizations(ctx.g, live_nodes(nodes, ctx.outputs), ctx.outputs)


LAYER_NORM_SUMS = Rewrite("layer-norm sums", "bitwise", _sums)
SKIP_RMS_NORMS = Rewrite("skip RMS norms", "onnxruntime-only", _skips, when=lambda ctx: ctx.onnxruntime)
RMS_NORMALIZATIONS = Rewrite("RMSNormalization", "rounding", _rms,
                             when=lambda ctx: op_types.signature("RMSNormalization", ctx.g.opset) is not None)
