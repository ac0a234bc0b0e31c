"""Resampling weights computed in the graph, for a spatial size known only at run time, as ATen's CPU
kernels compute them, built from positions (Range by NonZero) and sizes: per axis, linear and cubic
interpolation as taps (for each output, the input position each tap reads, int64 [n_out], and its
float64 weight [n_out]), which opset9_nn's separable resampling gathers, so that a NaN or an infinity
reaches only the outputs that read it as in eager; adaptive averaging as the [n_in, n_out] float64 matrix
it multiplies by."""

from __future__ import annotations

import torch

from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import as_value, cast
from aten2onnx.symbolic.opset9_data import arange_of, int_clamp, int_min, where

I64, F64 = torch.int64, torch.float64
CUBIC_A = -0.75  # ATen's bicubic convolution coefficient


def output_size(g: GraphBuilder, n_in: int | Value, size, scale) -> int | Value:
    """An axis's output size: the one given, else floor(n_in * scale) (ATen's compute_output_size)."""
    if size is not None:
        return size
    if isinstance(n_in, int):
        return int(n_in * scale)
    return cast(g, g.op("Floor", g.op("Mul", cast(g, n_in, F64), g.const(float(scale), dtype=F64))), I64)


def _source_index(g: GraphBuilder, n_in: Value, n_out: Value, align_corners: bool, scale, *,
                  cubic: bool) -> Value:
    """ATen's area_pixel_compute_source_index for every output position, float64 [n_out]."""
    i = cast(g, arange_of(g, n_out, has_range=False), F64)
    n, m = cast(g, n_in, F64), cast(g, n_out, F64)
    one = g.const(1.0, dtype=F64)
    if align_corners:  # (n - 1) / (m - 1), 0 for one output
        several = g.op("Greater", m, one)
        ratio = g.op("Where", several, g.op("Div", g.op("Sub", n, one), g.op("Sub", g.op("Max", m, g.const(2.0, dtype=F64)), one)),
                     g.const(0.0, dtype=F64))
        return g.op("Mul", ratio, i)
    ratio = g.const(1.0 / scale, dtype=F64) if scale is not None and scale > 0 else g.op("Div", n, m)
    src = g.op("Sub", g.op("Mul", ratio, g.op("Add", i, g.const(0.5, dtype=F64))), g.const(0.5, dtype=F64))
    if not cubic:
        src = g.op("Max", src, g.const(0.0, dtype=F64))
    return src


def _guard(g: GraphBuilder, src: Value, n_in: Value) -> tuple[Value, Value]:
    """ATen's guard_index_and_lambda: floor(src) capped at n_in - 1, and src minus it clamped to [0, 1]."""
    index = int_min(g, cast(g, g.op("Floor", src), I64), g.op("Sub", n_in, g.const(1, dtype=I64)))
    t = g.op("Sub", src, cast(g, index, F64))
    t = g.op("Min", g.op("Max", t, g.const(0.0, dtype=F64)), g.const(1.0, dtype=F64))
    return index, t


def linear(g: GraphBuilder, n_in: int | Value, n_out: int | Value, align_corners: bool,
           scale) -> list[tuple[Value, Value]]:
    """Linear interpolation along one axis (upsample_linear1d, bilinear2d, trilinear3d) as its two taps."""
    n_in, n_out = as_value(g, n_in, I64), as_value(g, n_out, I64)
    index, t = _guard(g, _source_index(g, n_in, n_out, align_corners, scale, cubic=False), n_in)
    inner = g.op("Less", index, g.op("Sub", n_in, g.const(1, dtype=I64)))
    after = g.op("Add", index, cast(g, inner, I64))
    return [(index, g.op("Sub", g.const(1.0, dtype=F64), t)), (after, t)]


def cubic_weights(g: GraphBuilder, t: Value) -> list[Value]:
    """ATen's get_cubic_upsample_coefficients at t in [0, 1], for the taps at -1, 0, 1 and 2."""
    a = CUBIC_A

    def near(x: Value) -> Value:  # ((a + 2) x - (a + 3)) x^2 + 1
        inner = g.op("Sub", g.op("Mul", g.const(a + 2, dtype=F64), x), g.const(a + 3, dtype=F64))
        return g.op("Add", g.op("Mul", g.op("Mul", inner, x), x), g.const(1.0, dtype=F64))

    def far(x: Value) -> Value:  # ((a x - 5a) x + 8a) x - 4a
        inner = g.op("Sub", g.op("Mul", g.const(a, dtype=F64), x), g.const(5 * a, dtype=F64))
        inner = g.op("Add", g.op("Mul", inner, x), g.const(8 * a, dtype=F64))
        return g.op("Sub", g.op("Mul", inner, x), g.const(4 * a, dtype=F64))

    rest = g.op("Sub", g.const(1.0, dtype=F64), t)
    one = g.const(1.0, dtype=F64)
    return [far(g.op("Add", t, one)), near(t), near(rest), far(g.op("Add", rest, one))]


def cubic(g: GraphBuilder, n_in: int | Value, n_out: int | Value, align_corners: bool,
          scale) -> list[tuple[Value, Value]]:
    """Bicubic interpolation along one axis as its four taps, their positions clamped to the input."""
    n_in, n_out = as_value(g, n_in, I64), as_value(g, n_out, I64)
    index, t = _guard(g, _source_index(g, n_in, n_out, align_corners, scale, cubic=True), n_in)
    last = g.op("Sub", n_in, g.const(1, dtype=I64))
    return [(int_clamp(g, g.op("Add", index, g.const(j - 1, dtype=I64)), 0, last), w)
            for j, w in enumerate(cubic_weights(g, t))]


def area(g: GraphBuilder, n_in: int | Value, n_out: int | Value) -> Value:
    """Adaptive average pooling weights along one axis: output i averages the inputs from
    floor(i * n_in / n_out) up to ceil((i + 1) * n_in / n_out)."""
    n_in, n_out = as_value(g, n_in, I64), as_value(g, n_out, I64)
    i = arange_of(g, n_out, has_range=False)
    start = g.op("Div", g.op("Mul", i, n_in), n_out)
    end = g.op("Div", g.op("Add", g.op("Mul", g.op("Add", i, g.const(1, dtype=I64)), n_in),
                           g.op("Sub", n_out, g.const(1, dtype=I64))), n_out)
    rows = g.unsqueeze(arange_of(g, n_in, has_range=False), [1])
    start, end = g.unsqueeze(start, [0]), g.unsqueeze(end, [0])
    inside = g.op("And", g.op("Not", g.op("Less", rows, start)), g.op("Less", rows, end))
    width = cast(g, g.op("Sub", end, start), F64)
    return where(g, inside, g.op("Div", g.const(1.0, dtype=F64), width), g.const(0.0, dtype=F64))
