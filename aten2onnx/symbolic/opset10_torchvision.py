"""Custom ops torchvision defines, from opset 10 (NonMaxSuppression and RoiAlign arrive): nms and roi_align,
as torchvision's CPU kernels compute them.

nms keeps boxes greedily in descending score order (ties: lower index first, as both torch's sort and
onnxruntime's NonMaxSuppression take them), dropping every later box whose IoU with a kept one, computed in
the boxes' dtype as (inter / (area_kept + area_other - inter)), exceeds the threshold. NonMaxSuppression
computes that same float32 arithmetic; what it cannot say (other dtypes, a negative threshold) is a Loop
over the sorted boxes."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, dim_size, fill, loop, reshape
from aten2onnx.symbolic.opset9_data import arange_of

register = functools.partial(registry.register, opset=10, library="torchvision")

I64 = torch.int64


def float32_at_most(x: float) -> float:
    """The largest float32 <= x: `iou > x` for a float32 iou is `iou > float32_at_most(x)`, whereas x
    rounded to nearest may round up, past an iou that exceeds x."""
    nearest = torch.tensor(x, dtype=torch.float32)
    if nearest.item() > x:
        nearest = torch.nextafter(nearest, torch.tensor(-float("inf")))
    return nearest.item()


def upright(g: GraphBuilder, dets: Value) -> Value:
    """dets with every inverted box (x2 < x1 or y2 < y1) made a point. torchvision's IoU of such a box with
    any other is 0 (its intersection's width or height is clamped to 0): it suppresses none and none
    suppresses it. NonMaxSuppression would read its corners in either order, so it gets a point (area 0),
    which NonMaxSuppression never suppresses either."""
    x1, y1, x2, y2 = g.split(dets, [1, 1, 1, 1], axis=1)
    inverted = g.op("Or", g.op("Less", x2, x1), g.op("Less", y2, y1))
    return g.op("Where", inverted, g.op("Concat", x1, y1, x1, y1, axis=1), dets)


def greedy_nms(g: GraphBuilder, dets: Value, scores: Value, iou_threshold: float,
               classes: Value | None = None) -> Value:
    """torchvision's nms as its kernel runs it, in dets' dtype: the boxes sorted by score (TopK: ties lower
    index first), then a Loop over them, each one not yet suppressed suppressing the later ones it
    overlaps by more than the threshold (compared in float64, as the kernel compares with a double).
    Given classes (one per box), a box suppresses only boxes of its own class: one nms per class, the kept
    boxes in descending score order."""
    n = dim_size(g, dets, 0)
    order = g.topk(scores, n, axis=0)[1]
    boxes = g.op("Gather", dets, order, axis=0)
    ranked = None if classes is None else g.op("Gather", classes, order, axis=0)
    x1, y1, x2, y2 = (reshape(g, side, [-1]) for side in g.split(boxes, [1, 1, 1, 1], axis=1))
    areas = g.op("Mul", g.op("Sub", x2, x1), g.op("Sub", y2, y1))
    positions = arange_of(g, n, has_range=False)
    threshold = g.const(iou_threshold, dtype=torch.float64)

    def step(body: GraphBuilder, i: Value, carried: list[Value]) -> list[Value]:
        (suppressed,) = carried

        def of_i(v: Value) -> Value:
            return body.op("Gather", v, i, axis=0)

        zero = body.const(0, like=x1)
        w = body.max(body.op("Sub", body.min(of_i(x2), x2), body.max(of_i(x1), x1)), zero)
        h = body.max(body.op("Sub", body.min(of_i(y2), y2), body.max(of_i(y1), y1)), zero)
        inter = body.op("Mul", w, h)
        iou = body.op("Div", inter, body.op("Sub", body.op("Add", of_i(areas), areas), inter))
        overlapped = body.op("Greater", cast(body, iou, torch.float64), threshold)
        if ranked is not None:
            overlapped = body.op("And", overlapped, body.op("Equal", ranked, of_i(ranked)))
        later = body.op("Less", i, positions)
        kept = body.op("Not", of_i(suppressed))
        return [body.op("Or", suppressed, body.op("And", body.op("And", overlapped, later), kept))]

    (suppressed,) = loop(g, n, [fill(g, [n], False, torch.bool)], step, name="nms")
    kept = reshape(g, g.op("NonZero", g.op("Not", suppressed)), [-1])
    return g.op("Gather", order, kept, axis=0)


def nms(g: GraphBuilder, dets: Value, scores: Value, iou_threshold: float) -> Value:
    """torchvision's nms: NonMaxSuppression where it computes the same, else greedy_nms."""
    if dets.dtype != torch.float32 or not iou_threshold >= 0:
        # NonMaxSuppression takes float32 boxes, and a threshold in [0, 1]
        return greedy_nms(g, dets, scores, iou_threshold)
    # an IoU never exceeds 1, so a threshold above it suppresses nothing, as 1 does
    threshold = g.const([float32_at_most(min(iou_threshold, 1.0))], dtype=torch.float32)
    boxes = g.unsqueeze(upright(g, dets), [0])  # [1, N, 4]: (x1, y1, x2, y2) read as (y1, x1, y2, x2)
    selected = g.op("NonMaxSuppression", boxes, reshape(g, scores, [1, 1, -1]),
                    g.int_list([dim_size(g, dets, 0)]), threshold)
    return g.op("Gather", selected, g.const(2, dtype=I64), axis=1)


@register("torchvision::nms.default")
def torchvision_nms(g, dets, scores, iou_threshold):
    """nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"""
    return nms(g, dets, scores, iou_threshold)


def roi_align(g: GraphBuilder, input: Value, rois: Value, spatial_scale: float, pooled_height, pooled_width,
              sampling_ratio: int, coordinate_transformation_mode: str | None = None) -> Value:
    """RoiAlign of rois [K, 5] (batch index, x1, y1, x2, y2), averaged (coordinate_transformation_mode: the
    attribute, from opset 16). torchvision's sampling_ratio <= 0 is RoiAlign's 0 (ceil(roi size / pooled size)
    samples). RoiAlign's scale is a float32: where the kernel's is not (float64 inputs), the rois are scaled
    first."""
    if not (isinstance(pooled_height, int) and isinstance(pooled_width, int)):
        raise NotImplementedError("torchvision::roi_align is exported for static pooled sizes")
    if input.dtype not in (torch.float32, torch.float64):
        # the kernel computes float16 in half steps, accumulating each bin's samples in float16, which a
        # float32 RoiAlign does not reproduce (an output element can differ by more than 1)
        raise NotImplementedError(f"torchvision::roi_align is exported for float32 and float64, not {input.dtype}")
    boxes = g.op("Gather", rois, g.const([1, 2, 3, 4], dtype=I64), axis=1)
    if input.dtype == torch.float64 and torch.tensor(spatial_scale, dtype=torch.float32).item() != spatial_scale:
        boxes, spatial_scale = g.op("Mul", boxes, g.const(spatial_scale, like=boxes)), 1.0
    batch = cast(g, g.op("Gather", rois, g.const(0, dtype=I64), axis=1), I64)  # truncated, as C's (int)
    return g.op("RoiAlign", input, boxes, batch, mode="avg", output_height=pooled_height,
                output_width=pooled_width, sampling_ratio=max(sampling_ratio, 0), spatial_scale=spatial_scale,
                coordinate_transformation_mode=coordinate_transformation_mode)


@register("torchvision::roi_align.default")
def torchvision_roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    """roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor"""
    if aligned:
        # aligned shifts the rois by half a pixel and lets them be smaller than 1x1, which RoiAlign's
        # coordinate_transformation_mode="half_pixel" says from opset 16; before, rois are at least 1x1
        raise NotImplementedError("torchvision::roi_align with aligned=True is exported from opset 16")
    return roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio)
