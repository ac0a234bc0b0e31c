"""Custom ops torchvision defines (loaded by importing torchvision, which aten2onnx never does), base opset:
roi_pool, as MaxRoiPool where that computes as torchvision's CPU kernel, and its argmax from standard ops.

torchvision's kernel (Caffe's): a roi's corners are its coordinates times spatial_scale, rounded half away
from zero; its size is at least 1x1; bin p spans [floor(p * size / pooled), ceil((p + 1) * size / pooled))
from the corner, clipped to the image; a bin's value is the first maximum in row-major order that beats
-FLT_MAX (NaN never does), its argmax that element's flat h * W + w, an empty bin 0 and -1. Everything is
computed in the input's dtype: for float16, half steps, each rounded."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, dim_size, half_step, opmath, reshape
from aten2onnx.symbolic.opset9_data import arange_of

register = functools.partial(registry.register, opset=9, library="torchvision")

I64 = torch.int64
FLT_MAX = float(torch.finfo(torch.float32).max)


def rounded_away(g: GraphBuilder, x: Value) -> Value:
    """C's round(): half away from zero, exactly (|x| - floor(|x|) is exact; floor(|x| + 0.5) is not)."""
    magnitude = g.op("Abs", x)
    whole = g.op("Floor", magnitude)
    up = g.op("Not", g.op("Less", g.op("Sub", magnitude, whole), g.const(0.5, like=x)))
    return g.op("Mul", g.op("Add", whole, cast(g, up, x.dtype)), g.op("Sign", x))


def bin_edges(g: GraphBuilder, rois: Value, spatial_scale: float, pooled: int, column: int, size,
              dtype: torch.dtype) -> tuple[Value, Value]:
    """Each roi's bins along one axis (column 1 for x, 2 for y of rois [K, 5]; size: the input's extent
    there): ([K, pooled] first, [K, pooled] end) int64, clipped to [0, size], as the kernel computes them
    in `dtype`, held in its opmath with each step rounded to it."""
    math_dtype = opmath(dtype)

    def constant(values) -> Value:
        return g.const(torch.tensor(values, dtype=torch.float64).to(dtype).to(math_dtype))

    def step(x: Value) -> Value:
        return half_step(g, x, dtype)

    corners = g.op("Gather", cast(g, rois, math_dtype), g.const([column, column + 2], dtype=I64), axis=1)
    corners = cast(g, rounded_away(g, step(g.op("Mul", corners, constant(spatial_scale)))), I64)  # [K, 2]
    start, end = g.split(corners, [1, 1], axis=1)
    extent = g.max(g.op("Add", g.op("Sub", end, start), g.const(1, dtype=I64)), g.const(1, dtype=I64))
    bin_size = step(g.op("Div", step(cast(g, extent, math_dtype)), constant(float(pooled))))  # [K, 1]
    low = g.op("Floor", step(g.op("Mul", constant([float(p) for p in range(pooled)]), bin_size)))
    high = g.op("Ceil", step(g.op("Mul", constant([float(p + 1) for p in range(pooled)]), bin_size)))
    limit = g.int_list([size])

    def placed(edge: Value) -> Value:
        return g.min(g.max(g.op("Add", cast(g, edge, I64), start), g.const(0, dtype=I64)), limit)

    return placed(low), placed(high)


def inside(g: GraphBuilder, first: Value, end: Value, size) -> Value:
    """[K, P, size] bool: position i of the axis lies in bin p, first <= i < end."""
    positions = reshape(g, arange_of(g, size, has_range=False), [1, 1, -1])
    return g.op("And", g.op("Not", g.op("Less", positions, g.unsqueeze(first, [2]))),
                g.op("Less", positions, g.unsqueeze(end, [2])))


def roi_max(g: GraphBuilder, input: Value, rois: Value, spatial_scale: float, pooled_height: int,
            pooled_width: int) -> tuple[Value, Value]:
    """roi_pool's (pooled, argmax int32), exactly, from standard ops: each roi's image gathered, the max over
    each bin's columns for every row ([K, C, H, PW, W] compared: costly, built only for what is used),
    then over its rows; the first maximum is the lowest flat index among the rows and columns holding it."""
    dtype = input.dtype
    height, width = dim_size(g, input, 2), dim_size(g, input, 3)
    h_first, h_end = bin_edges(g, rois, spatial_scale, pooled_height, 2, height, dtype)
    w_first, w_end = bin_edges(g, rois, spatial_scale, pooled_width, 1, width, dtype)
    rows = reshape(g, inside(g, h_first, h_end, height), [-1, 1, pooled_height, height, 1])  # [K, 1, PH, H, 1]
    columns = reshape(g, inside(g, w_first, w_end, width), [-1, 1, 1, pooled_width, width])  # [K, 1, 1, PW, W]
    batch = cast(g, g.op("Gather", rois, g.const(0, dtype=I64), axis=1), I64)  # truncated, as C's (int)
    images = g.unsqueeze(g.op("Gather", input, batch, axis=0), [3])  # [K, C, H, 1, W]
    none = g.const(-float("inf"), like=input)
    big = g.const(2**62, dtype=I64)

    # per row h and column bin pw: the max over the bin's columns, and the first column holding it
    taken = g.op("And", columns, g.op("Not", g.op("IsNaN", images)))  # [K, C, H, PW, W]
    values = g.op("Where", taken, images, none)
    row_max = g.reduce("ReduceMax", values, [4], keepdims=True)  # [K, C, H, PW, 1]
    at = g.op("Where", g.op("And", taken, g.equal(values, row_max)),
              reshape(g, arange_of(g, width, has_range=False), [1, 1, 1, 1, -1]), big)
    flat = g.op("Add", g.reduce("ReduceMin", at, [4], keepdims=False),
                g.op("Mul", reshape(g, arange_of(g, height, has_range=False), [1, 1, -1, 1]), g.int_list([width])))

    # then over the bin's rows: [K, C, PH, H, PW]
    row_max = g.unsqueeze(g.squeeze(row_max, [4]), [2])
    values = g.op("Where", rows, row_max, none)
    best = g.reduce("ReduceMax", values, [3], keepdims=True)  # [K, C, PH, 1, PW]
    at = g.op("Where", g.op("And", rows, g.equal(values, best)), g.unsqueeze(flat, [2]), big)
    argmax = g.reduce("ReduceMin", at, [3], keepdims=False)  # [K, C, PH, PW]
    best = g.squeeze(best, [3])

    # the kernel starts each bin at -FLT_MAX (in the input's dtype: -inf for float16), or 0 if it is empty
    floor = g.const(torch.tensor(-FLT_MAX).to(dtype), like=input)
    found = g.op("Greater", best, floor)
    empty = g.op("Or", g.op("Not", g.op("Less", g.unsqueeze(h_first, [2]), g.unsqueeze(h_end, [2]))),
                 g.op("Not", g.op("Less", g.unsqueeze(w_first, [1]), g.unsqueeze(w_end, [1]))))  # [K, PH, PW]
    start = g.op("Where", g.unsqueeze(empty, [1]), g.const(0, like=input), floor)
    pooled = g.op("Where", found, best, start)
    argmax = cast(g, g.op("Where", found, argmax, g.const(-1, dtype=I64)), torch.int32)
    return pooled, argmax


@register("torchvision::roi_pool.default")
def torchvision_roi_pool(g, input, rois, spatial_scale, pooled_height, pooled_width):
    """roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) -> (Tensor, Tensor)"""
    if not (isinstance(pooled_height, int) and isinstance(pooled_width, int)):
        raise NotImplementedError("torchvision::roi_pool is exported for static pooled sizes")
    pooled, argmax = roi_max(g, input, rois, spatial_scale, pooled_height, pooled_width)
    if input.dtype != torch.float32:
        # MaxRoiPool takes its scale as a float32 and onnxruntime runs it in float32 only, while the kernel
        # computes the bins in the input's dtype: rounding there may move a bin edge
        return pooled, argmax
    return g.op("MaxRoiPool", input, rois, pooled_shape=[pooled_height, pooled_width],
                spatial_scale=spatial_scale), argmax
