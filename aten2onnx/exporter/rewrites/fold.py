"""Folds: weight-only subgraphs computed once (rounding: aten2onnx.runtime's kernels compute them, whose
transcendentals onnxruntime's round otherwise, and a matmul reading a stored weight rather than a computed one
sums in another order in either runtime); a batch norm after a Conv folded into its weight and bias (rounding:
computed in float64, stored in the weight's dtype); a constant Pad before a Conv or a pool folded into its own
pads (bitwise)."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import torch

from aten2onnx.exporter.rewrites.core import _KEEP, Context, Rewrite, _constant, _Uses
from aten2onnx.ir import lazy
from aten2onnx.ir.builder import GraphBuilder, Node, Subgraph, Value, static_ints

_FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


# -- weight-only subgraphs ----------------------------------------------------------------------------------


# a folded result may be larger than its inputs up to this many bytes (a rotary table computed from its
# inverse frequencies at static positions: a few KiB for the nodes it saves on every run)
_SMALL_RESULT = 64 * 1024


def _fold_weights(g: GraphBuilder, nodes: list[Node], outputs: list[Value], sources: list[torch.Tensor]) -> list[Node]:
    """Nodes of weights and constants computed once, where the result is no larger than the largest
    input or than _SMALL_RESULT; the result is a weight named after the first weight it came from."""
    evaluate: Callable[..., Any] | None = g._evaluator
    if evaluate is None:
        return nodes
    uses = _Uses(nodes, outputs)
    kept = []
    for node in nodes:
        if (node.domain or node.op_type in _KEEP or node.call is not None or not node.inputs
                or any(isinstance(a, Subgraph) for a in node.attrs.values())
                or not all(_constant(v) for v in node.inputs)
                or any(id(o) in uses.pinned for o in node.outputs)):
            kept.append(node)
            continue
        largest = max((v.const.numel() * v.const.element_size() for v in node.inputs if v is not None), default=0)
        op_type, opset, attrs, count = node.op_type, g.opset, dict(node.attrs), len(node.outputs)
        try:  # (lazy: a weight without data is folded when the model is written)
            results = lazy.apply(lambda *xs: evaluate(op_type, opset, list(xs), attrs, count),
                                 *[None if v is None else v.const for v in node.inputs])
        except Exception:  # a kernel that refuses these constants: the node stays, the runtime will say why
            results = None
        # (a small result may be larger than its inputs, not wider: an integer weight stays stored as such)
        narrowest = min((v.const.element_size() for v in node.inputs if v is not None), default=8)
        if results is None or any(r.numel() * r.element_size() > (
                max(largest, _SMALL_RESULT) if r.element_size() <= narrowest else max(largest, 8)) for r in results):
            kept.append(node)
            continue
        source = next((v for v in node.inputs if v is not None and v.kind == "initializer"), None)
        if any(out.dtype is not None and r.dtype != out.dtype for out, r in zip(node.outputs, results)):
            kept.append(node)  # (a kernel's result in another dtype than the graph declares: left to run)
            continue
        for out, result in zip(node.outputs, results):
            result = lazy.apply(torch.Tensor.contiguous, result)
            folded = (g._const_tensor(result) if source is None
                      else g.initializer(f"{source.name}.{node.op_type.lower()}", result))
            uses.replace(out, folded)
        sources.extend(v.const for v in node.inputs if v is not None and v.kind == "initializer")
    return kept


# -- batch norm and pad folded into Conv --------------------------------------------------------------------


def _fold_batch_norms(g: GraphBuilder, nodes: list[Node], outputs: list[Value], sources: list[torch.Tensor]) -> list[Node]:
    uses = _Uses(nodes, outputs)
    dropped: set[int] = set()
    for bn in nodes:
        if bn.op_type != "BatchNormalization" or bn.domain or len(bn.outputs) != 1 or bn.attrs.get("training_mode"):
            continue
        x = bn.inputs[0]
        conv = x.producer if x is not None else None
        if (conv is None or conv.op_type not in ("Conv", "ConvTranspose") or conv.domain or conv.call is not None
                or uses.only_reader(x) is not bn or not all(_constant(v) for v in conv.inputs[1:])
                or not all(_constant(v) and v is not None for v in bn.inputs[1:5])
                or conv.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET")):
            continue
        weight = conv.inputs[1]
        if weight.dtype not in _FLOATS or any(v.dtype != weight.dtype for v in bn.inputs[1:5]):
            continue
        bias = conv.inputs[2].const if len(conv.inputs) > 2 and conv.inputs[2] is not None else None
        fold = functools.partial(_batch_norm_folded, float(bn.attrs.get("epsilon", 1e-5)),
                                 None if conv.op_type == "Conv" else int(conv.attrs.get("group", 1)))
        w, b = lazy.apply(fold, weight.const, bias, *(v.const for v in bn.inputs[1:5]))
        sources.extend(v.const for v in [*conv.inputs[1:], *bn.inputs[1:5]] if v is not None and v.kind == "initializer")
        conv.inputs = [conv.inputs[0], g.initializer(f"{weight.name}.bn_folded", w),
                       g.initializer(f"{bn.inputs[2].name}.bn_folded", b)]
        conv.outputs = list(bn.outputs)
        for out in conv.outputs:
            out.producer = conv
        dropped.add(id(bn))
    return [n for n in nodes if id(n) not in dropped]


def _batch_norm_folded(epsilon: float, groups: int | None, weight: torch.Tensor, bias: torch.Tensor | None,
                       scale: torch.Tensor, shift: torch.Tensor, mean: torch.Tensor, var: torch.Tensor
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """(weight, bias) of a Conv (groups None) or ConvTranspose with the batch norm after it applied, computed
    in float64 and stored in the weight's dtype."""
    scale, shift, mean, var = (t.to(torch.float64) for t in (scale, shift, mean, var))
    factor = scale / torch.sqrt(var + epsilon)
    w = weight.to(torch.float64)
    if groups is None:
        w = w * factor.reshape(-1, *[1] * (w.dim() - 1))
    else:  # ConvTranspose: [C_in, C_out / groups, k...], the output channel is (group, column)
        per = w.shape[1]
        w = (w.reshape(groups, w.shape[0] // groups, per, *w.shape[2:])
             * factor.reshape(groups, 1, per, *[1] * (w.dim() - 2))).reshape(w.shape)
    b = ((bias.to(torch.float64) if bias is not None else 0.0) - mean) * factor + shift
    return w.to(weight.dtype), b.to(weight.dtype)


def _pad_widths(pad: Node) -> tuple[list[int], float] | None:
    """A constant Pad's widths (begins, then ends, every axis) and value, where both are known."""
    if pad.attrs.get("mode", "constant") not in ("constant", b"constant"):
        return None
    if "pads" in pad.attrs:  # before opset 11: attributes
        return list(pad.attrs["pads"]), float(pad.attrs.get("value", 0.0))
    widths = static_ints(pad.inputs[1]) if len(pad.inputs) > 1 else None
    value = 0.0
    if len(pad.inputs) > 2 and pad.inputs[2] is not None:
        given = pad.inputs[2].const
        if given is None or given.numel() != 1 or lazy.is_lazy(given):
            return None
        value = float(given.reshape(()))
    if len(pad.inputs) > 3 and pad.inputs[3] is not None:  # axes (18): only all of them, in order
        return None
    return None if widths is None else (widths, value)


def _pads_taken(reader: Node, value: float, uses: _Uses) -> dict[str, Any] | None:
    """The attributes that make reader's own pads do what a constant Pad of value before it did, or None where
    they cannot: a Conv's pads are zeros; an AveragePool's too when it counts them (count_include_pad=1, which
    a pool with pads of its own must have had); a MaxPool's are -inf, and it gives no indices (they would
    count in the padded tensor). Pools in ceil mode keep their Pad: a last window that starts in padding is
    dropped where the padding is the pool's own, kept where it was data."""
    if reader.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET"):
        return None
    if reader.op_type == "Conv":
        return {} if value == 0.0 else None
    if reader.attrs.get("ceil_mode", 0):
        return None
    own = list(reader.attrs.get("pads", []))
    if reader.op_type == "AveragePool":
        if value != 0.0 or (any(own) and not reader.attrs.get("count_include_pad", 0)):
            return None
        return {"count_include_pad": 1}
    indices = reader.outputs[1:2]
    if value != -math.inf or any(v is not None and (uses.readers.get(id(v)) or id(v) in uses.pinned) for v in indices):
        return None
    return {}


_TAKE_PADS = ("Conv", "AveragePool", "MaxPool")


def _fold_pads(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """A constant Pad on the spatial axes only, read only by a Conv or a pool whose own pads can do what it
    does (_pads_taken): those pads."""
    uses = _Uses(nodes, outputs)
    dropped: set[int] = set()
    for pad in nodes:
        if pad.op_type != "Pad" or pad.domain or pad.call is not None:
            continue
        reader = uses.only_reader(pad.outputs[0])
        if reader is None or reader.op_type not in _TAKE_PADS or reader.domain or reader.inputs[0] is not pad.outputs[0]:
            continue
        known = _pad_widths(pad)
        x = pad.inputs[0]
        if known is None or x.rank is None or len(known[0]) != 2 * x.rank or min(known[0]) < 0:
            continue
        widths, value = known
        rank = x.rank
        begins, ends = widths[:rank], widths[rank:]
        if begins[:2] != [0, 0] or ends[:2] != [0, 0]:
            continue
        taken = _pads_taken(reader, value, uses)
        if taken is None:
            continue
        spatial = rank - 2
        old = list(reader.attrs.get("pads") or [0] * (2 * spatial))
        pads = [old[i] + begins[2 + i] for i in range(spatial)] + [old[spatial + i] + ends[2 + i] for i in range(spatial)]
        kernel = list(reader.attrs.get("kernel_shape", []))
        if reader.op_type != "Conv" and (len(kernel) != spatial or any(p >= kernel[i % spatial] for i, p in enumerate(pads))):
            continue  # (a pool's pads must be narrower than its window)
        reader.attrs = dict(reader.attrs, **taken, pads=pads)
        reader.inputs = [x] + reader.inputs[1:]
        dropped.add(id(pad))
    return [n for n in nodes if id(n) not in dropped]


def _weights(nodes: list[Node], ctx: Context) -> list[Node]:
    return _fold_weights(ctx.g, nodes, ctx.outputs, ctx.sources)


def _batch_norms(nodes: list[Node], ctx: Context) -> list[Node]:
    return _fold_batch_norms(ctx.g, nodes, ctx.outputs, ctx.sources)


def _pads(nodes: list[Node], ctx: Context) -> list[Node]:
    return _fold_pads(nodes, ctx.outputs)


WEIGHTS = Rewrite("weights", "rounding", _weights)
BATCH_NORMS = Rewrite("batch norms", "rounding", _batch_norms)
PADS = Rewrite("pads", "bitwise", _pads)
