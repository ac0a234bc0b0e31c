"""aten2onnx::batched_nms and heatmaps_to_keypoints (torchvision's functions as captured, see
aten2onnx/_detection_ops.py), from opset 11, where Unique numbers the classes for NonMaxSuppression.

heatmaps_to_keypoints is a Loop over the rois, each resizing its heatmaps bicubically (as
aten::upsample_bicubic2d to sizes computed in the graph) and taking each keypoint's first peak.

torchvision's function takes one of two computations by the number of boxes (a size only the data knows),
so the translation is an If over both: above PER_CLASS_ABOVE coordinates one nms per class, the kept
boxes in descending score order (equal scores lower index first; torchvision orders them by an unstable
sort, in no defined order); otherwise torchvision's nms over the boxes moved apart by class, the same
float32 sums the eager function computes."""

from __future__ import annotations

import functools

import torch

from aten2onnx import _detection_ops, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import opset9_nn
from aten2onnx.symbolic._helpers import branch, cast, dim_size, fill, loop, reshape
from aten2onnx.symbolic.opset9_data import arange_of
from aten2onnx.symbolic.opset10_torchvision import float32_at_most, greedy_nms, nms, upright

register = functools.partial(registry.register, opset=11)

I64 = torch.int64


def moved_apart(g: GraphBuilder, boxes: Value, idxs: Value) -> Value:
    """boxes + idxs * (largest coordinate + 1), per box, as _detection_ops.offsets_apart computes it."""
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
        if 4 * n > _detection_ops.PER_CLASS_ABOVE:
            return per_class(g, boxes, scores, idxs, iou_threshold)
        return nms(g, moved_apart(g, boxes, idxs), scores, iou_threshold)
    many = g.op("Greater", reshape(g, n, []), g.const(_detection_ops.PER_CLASS_ABOVE // 4, dtype=I64))
    out = g.op("If", many,
               then_branch=branch(g, lambda b: per_class(b, boxes, scores, idxs, iou_threshold), "nms_per_class"),
               else_branch=branch(g, lambda b: nms(b, moved_apart(b, boxes, idxs), scores, iou_threshold),
                                  "nms_moved_apart"))
    out.dtype, out.shape = I64, (None,)
    return out


@register("aten2onnx::heatmaps_to_keypoints.default")
def aten2onnx_heatmaps_to_keypoints(g, maps, rois):
    """heatmaps_to_keypoints(Tensor maps, Tensor rois) -> (Tensor, Tensor)"""
    if maps.shape is None or not isinstance(maps.shape[1], int) or maps.dtype != torch.float32:
        raise NotImplementedError("aten2onnx::heatmaps_to_keypoints is exported for float32 maps of a static keypoint count")
    keypoints = maps.shape[1]
    corner = g.op("Gather", rois, g.const([0, 1], dtype=I64), axis=1)  # [K, 2]: (x1, y1)
    extent = g.max(g.op("Sub", g.op("Gather", rois, g.const([2, 3], dtype=I64), axis=1), corner),
                   g.const(1.0, dtype=torch.float32))  # [K, 2]: (width, height), at least 1
    cells = g.op("Ceil", extent)

    def step(body, i, carried):
        size = cast(body, body.op("Gather", cells, i, axis=0), I64)  # [2]: (width, height) rounded up
        width, height = (reshape(body, body.op("Gather", size, body.const(k, dtype=I64), axis=0), []) for k in (0, 1))
        one = body.unsqueeze(body.op("Gather", maps, i, axis=0), [1])  # [N, 1, H, W]
        one.shape = (keypoints, 1, *maps.shape[2:])
        roi_map = opset9_nn.aten_upsample_bicubic2d(body, one, [height, width], False, None)
        flat = reshape(body, roi_map, [keypoints, -1])
        peak = body.op("ArgMax", flat, axis=1, keepdims=1)  # [N, 1], the first peak
        x_int = body.op("Mod", peak, width)
        y_int = body.op("Div", body.op("Sub", peak, x_int), width)
        correction = body.op("Div", body.op("Gather", extent, i, axis=0), cast(body, size, torch.float32))  # [2]
        half = body.const(0.5, dtype=torch.float32)
        at = body.op("Add", cast(body, body.op("Concat", x_int, y_int, axis=1), torch.float32), half)  # [N, 2]
        xy = body.op("Add", body.op("Mul", at, correction), body.op("Gather", corner, i, axis=0))
        xy = body.op("Concat", xy, fill(body, [keypoints, 1], 1.0, torch.float32), axis=1)
        xy.shape = (keypoints, 3)
        score = reshape(body, body.op("GatherElements", flat, peak, axis=1), [keypoints])
        score.shape = (keypoints,)
        return [xy, score]

    xy, scores = loop(g, dim_size(g, maps, 0), [], step, name="keypoints", scan_outputs=2, keep_going=g.const(True))
    return xy, scores
