"""aten2onnx::batched_nms (torchvision's batched_nms as captured, see aten2onnx/_batched_nms.py), from opset 11,
where Unique numbers the classes for NonMaxSuppression.

torchvision's function takes one of two computations by the number of boxes (a size only the data knows),
so the translation is an If over both: above PER_CLASS_ABOVE coordinates one nms per class, the kept
boxes in descending score order (equal scores lower index first; torchvision orders them by an unstable
sort, in no defined order); otherwise torchvision's nms over the boxes moved apart by class, the same
float32 sums the eager function computes."""

from __future__ import annotations

import functools

import torch

from aten2onnx import _batched_nms, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import branch, cast, dim_size, fill, reshape
from aten2onnx.symbolic.opset9_data import arange_of
from aten2onnx.symbolic.opset10_torchvision import float32_at_most, greedy_nms, nms, upright

register = functools.partial(registry.register, opset=11)

I64 = torch.int64


def moved_apart(g: GraphBuilder, boxes: Value, idxs: Value) -> Value:
    """boxes + idxs * (largest coordinate + 1), per box, as _batched_nms.offsets_apart computes it."""
    flat = g.op("Concat", reshape(g, boxes, [-1]), fill(g, [1], float("-inf"), boxes.dtype), axis=0)
    top = g.reduce("ReduceMax", flat, [0], keepdims=True)
    offsets = g.op("Mul", cast(g, idxs, boxes.dtype), g.op("Add", top, g.const(1, like=boxes)))
    return g.op("Add", boxes, g.unsqueeze(offsets, [1]))


def per_class(g: GraphBuilder, boxes: Value, scores: Value, idxs: Value, iou_threshold: float) -> Value:
    """One nms per class, the kept boxes in descending score order. NonMaxSuppression takes each box's rank
    (n for the best, down to 1; ties lower index first, as torch's stable sort orders them) as its score
    in its own class and 0 elsewhere, with a score threshold of 0: within a class it visits boxes in the
    order torchvision's nms sorts them, and a box never competes outside its class."""
    if boxes.dtype != torch.float32 or not iou_threshold >= 0:
        return greedy_nms(g, boxes, scores, iou_threshold, classes=idxs)
    n = dim_size(g, boxes, 0)
    count = reshape(g, n if not isinstance(n, int) else g.const(n, dtype=I64), [1])
    order = g.topk(scores, n, axis=0)[1]
    positions = arange_of(g, n, has_range=True)
    rank = g.op("ScatterElements", fill(g, count, 0, I64), order, positions, axis=0)  # position of each box
    key = cast(g, g.op("Sub", count, rank), torch.float32)  # n for the best box: exact below 2**24 boxes
    labels, _, klass, _ = g.op("Unique", idxs, outputs=4, sorted=1)
    classes = g.op("Shape", labels)
    members = g.op("Equal", g.unsqueeze(arange_of(g, reshape(g, classes, []), has_range=True), [1]),
                   g.unsqueeze(klass, [0]))  # [classes, n]
    keyed = g.unsqueeze(g.op("Where", members, g.unsqueeze(key, [0]), fill(g, [], 0, torch.float32)), [0])
    threshold = g.const([float32_at_most(min(iou_threshold, 1.0))], dtype=torch.float32)
    selected = g.op("NonMaxSuppression", g.unsqueeze(upright(g, boxes), [0]), keyed, count, threshold,
                    g.const([0.0], dtype=torch.float32))
    kept = g.op("Gather", selected, g.const(2, dtype=I64), axis=1)
    by_rank = g.topk(g.op("Gather", rank, kept, axis=0), dim_size(g, kept, 0), axis=0, largest=False)[1]
    return g.op("Gather", kept, by_rank, axis=0)


@register("aten2onnx::batched_nms.default")
def aten2onnx_batched_nms(g, boxes, scores, idxs, iou_threshold):
    """batched_nms(Tensor boxes, Tensor scores, Tensor idxs, float iou_threshold) -> Tensor"""
    n = dim_size(g, boxes, 0)
    if isinstance(n, int):  # a static count: torchvision's choice is known now
        if 4 * n > _batched_nms.PER_CLASS_ABOVE:
            return per_class(g, boxes, scores, idxs, iou_threshold)
        return nms(g, moved_apart(g, boxes, idxs), scores, iou_threshold)
    many = g.op("Greater", reshape(g, n, []), g.const(_batched_nms.PER_CLASS_ABOVE // 4, dtype=I64))
    out = g.op("If", many,
               then_branch=branch(g, lambda b: per_class(b, boxes, scores, idxs, iou_threshold), "nms_per_class"),
               else_branch=branch(g, lambda b: nms(b, moved_apart(b, boxes, idxs), scores, iou_threshold),
                                  "nms_moved_apart"))
    out.dtype, out.shape = I64, (None,)
    return out
