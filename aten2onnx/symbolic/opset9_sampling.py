"""Opset-9 base, spatial sampling no single ONNX op matches: grid sampling as gathers (every
interpolation and padding mode), antialiased bilinear upsampling as constant matrices; these read the
same at every opset."""

from __future__ import annotations

import functools
import itertools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import as_value, cast, dim_size
from aten2onnx.symbolic._spatial import static_spatial
from aten2onnx.symbolic.opset9_data import arange_of

register = functools.partial(registry.register, opset=9)


# -- grid sampling -----------------------------------------------------------------------------------------------

CUBIC_A = -0.75  # ATen's bicubic convolution coefficient


def _where_zero(g: GraphBuilder, like: Value) -> Value:
    """0 everywhere like has a value, NaN and inf included."""
    return g.op("Where", g.op("Less", like, g.const(0.0, like=like)), g.const(0.0, like=like), g.const(0.0, like=like))


def _num(g: GraphBuilder, v: int | float | Value, like: Value, plus: float = 0.0) -> Value:
    """v + plus in like's dtype: a constant for a number, computed for a size known only at run time."""
    if not isinstance(v, Value):
        return g.const(float(v) + plus, like=like)
    v = cast(g, v, like.dtype)
    return g.op("Add", v, g.const(plus, like=like)) if plus else v


def _reflect(g: GraphBuilder, x: Value, twice_low: int, twice_high: int | Value) -> Value:
    """x reflected off low and high until it lies between them (ATen's reflect_coordinates); a high
    bound computed in the graph may equal the low one (a size of one), which maps x to 0 as well."""
    if twice_low == twice_high:
        return _where_zero(g, x)
    low = twice_low / 2
    period = _num(g, twice_high, x, -float(twice_low))
    dist = g.op("Abs", g.op("Sub", x, g.const(low, like=x)))
    turns = g.op("Floor", g.op("Div", dist, period))
    extra = g.op("Sub", dist, g.op("Mul", turns, period))
    out = g.op("Add", g.op("Min", extra, g.op("Sub", period, extra)), g.const(low, like=x))
    if isinstance(twice_high, Value):
        out = g.op("Where", g.op("Equal", twice_high, g.const(twice_low, dtype=torch.int64)), _where_zero(g, x), out)
    return out


def _clip(g: GraphBuilder, x: Value, size: int | Value, nan_to: float | Value) -> Value:
    x = g.op("Where", g.op("IsNaN", x), _num(g, nan_to, x), x)
    return g.op("Min", g.op("Max", x, g.const(0.0, like=x)), _num(g, size, x, -1.0))


def _twice(g: GraphBuilder, size: int | Value, minus: int) -> int | Value:
    """2 * size - minus, an int where size is one."""
    if isinstance(size, int):
        return 2 * size - minus
    return g.op("Sub", g.op("Mul", size, g.const(2, dtype=torch.int64)), g.const(minus, dtype=torch.int64))


def _pad_coordinate(g: GraphBuilder, x: Value, size: int | Value, padding_mode: int, align_corners: bool,
                    nan_to: float | Value) -> Value:
    """ATen's compute_coordinates: border clips, reflection reflects then clips, zeros leaves x. The
    clip sends NaN to nan_to: ATen's 2-D (vectorized) kernel clips it to 0, its 3-D one to size - 1."""
    if padding_mode == 1:
        return _clip(g, x, size, nan_to)
    if padding_mode == 2:
        bounds = (0, _twice(g, size, 2)) if align_corners else (-1, _twice(g, size, 1))
        return _clip(g, _reflect(g, x, *bounds), size, nan_to)
    return x


def _round_half_even(g: GraphBuilder, x: Value) -> Value:
    """nearbyint, from Floor and comparisons (Round is opset 11); x - floor(x) is exact."""
    low = g.op("Floor", x)
    frac = g.op("Sub", x, low)
    half = g.const(0.5, like=x)
    tie = g.op("And", g.op("Not", g.op("Less", frac, half)), g.op("Not", g.op("Greater", frac, half)))
    odd = g.op("Greater", g.op("Sub", low, g.op("Mul", g.op("Floor", g.op("Mul", low, half)), g.const(2.0, like=x))),
               half)
    up = g.op("Or", g.op("Greater", frac, half), g.op("And", tie, odd))
    return g.op("Add", low, cast(g, up, x.dtype))


def _cubic_weights(g: GraphBuilder, t: Value) -> list[Value]:
    """ATen's cubic convolution weights for the taps at -1, 0, 1, 2 around a fraction t."""
    def c(v):
        return g.const(v, like=t)

    def near(x):  # |x| <= 1
        return g.op("Add", g.op("Mul", g.op("Mul", g.op("Sub", g.op("Mul", c(CUBIC_A + 2), x), c(CUBIC_A + 3)), x), x), c(1.0))

    def far(x):  # 1 < |x| < 2
        inner = g.op("Add", g.op("Mul", g.op("Sub", g.op("Mul", c(CUBIC_A), x), c(5 * CUBIC_A)), x), c(8 * CUBIC_A))
        return g.op("Sub", g.op("Mul", inner, x), c(4 * CUBIC_A))

    return [far(g.op("Add", t, c(1.0))), near(t), near(g.op("Sub", c(1.0), t)), far(g.op("Sub", c(2.0), t))]


def _tap(g: GraphBuilder, coord: Value, size: int | Value) -> tuple[Value, Value]:
    """An integral coordinate as (in-bounds mask, int64 index clamped to 0 where outside)."""
    inside = g.op("And", g.op("Greater", coord, g.const(-1.0, like=coord)),
                  g.op("Less", coord, _num(g, size, coord)))
    index = cast(g, g.op("Where", inside, coord, g.const(0.0, like=coord)), torch.int64)
    return inside, index


def _axis_taps(g: GraphBuilder, coord: Value, size: int | Value, interpolation_mode: int, padding_mode: int,
               align_corners: bool, nan_to: float | Value) -> list[tuple[Value, Value, Value | None]]:
    """The (mask, index, weight) taps along one axis for grid coordinates in [-1, 1]."""
    c = lambda v: g.const(v, like=coord)
    if align_corners:
        x = g.op("Mul", g.op("Div", g.op("Add", coord, c(1.0)), c(2.0)), _num(g, size, coord, -1.0))
    else:
        x = g.op("Div", g.op("Sub", g.op("Mul", g.op("Add", coord, c(1.0)), _num(g, size, coord)), c(1.0)), c(2.0))
    if interpolation_mode == 2:  # bicubic pads each tap, not the sample point
        low = g.op("Floor", x)
        weights = _cubic_weights(g, g.op("Sub", x, low))
        taps = [g.op("Add", low, c(float(k - 1))) for k in range(4)]
        return [(*_tap(g, _pad_coordinate(g, t, size, padding_mode, align_corners, nan_to), size), w)
                for t, w in zip(taps, weights)]
    x = _pad_coordinate(g, x, size, padding_mode, align_corners, nan_to)
    if interpolation_mode == 1:
        return [(*_tap(g, _round_half_even(g, x), size), None)]
    low = g.op("Floor", x)
    high = g.op("Add", low, c(1.0))
    return [(*_tap(g, low, size), g.op("Sub", high, x)), (*_tap(g, high, size), g.op("Sub", x, low))]


class HalfSteps:
    """A stand-in builder that computes in float32 and rounds each arithmetic result to a half
    type, as ATen's half kernels do step by step (onnxruntime would run a float16 graph in
    float32 throughout, rounding only at the end)."""

    ROUNDED = ("Add", "Sub", "Mul", "Div")

    def __init__(self, g: GraphBuilder, half: torch.dtype) -> None:
        self.g, self.half = g, half

    def op(self, op_type: str, *inputs, **attributes):
        out = self.g.op(op_type, *inputs, **attributes)
        if op_type in self.ROUNDED and out.dtype == torch.float32:
            out = cast(self.g, cast(self.g, out, self.half), torch.float32)
        return out

    def const(self, *args, **kwargs) -> Value:
        return self.g.const(*args, **kwargs)


def grid_sample(g: GraphBuilder, input: Value, grid: Value, interpolation_mode: int, padding_mode: int,
                align_corners: bool) -> Value:
    """ATen's grid sampler as gathers: the input laid out as a [C, N * plane] table, each tap of
    each output point a flat column index (zeroed where it falls outside), the taps summed with
    their interpolation weights in ATen's order. Half types round each step, as ATen's do.
    GridSample (opset 16, N-D from 20) is not used at any opset: onnxruntime's computes half types
    in float32 and departs from ATen for NaN, infinite or far-out grid coordinates. Sizes known only
    at run time enter as graph values (the coordinates' scales, bounds and the table's offsets)."""
    spatial = input.rank - 2 if input.rank is not None else 0
    if spatial not in (2, 3) or grid.rank != spatial + 2:
        raise NotImplementedError("grid sampling is exported for 4-D or 5-D inputs")
    if interpolation_mode == 2 and spatial == 3:
        raise NotImplementedError("bicubic grid sampling is defined for 4-D inputs only")
    result, builder = input.dtype, g  # builder: the GraphBuilder's own emitters, for integer shape work
    if result in (torch.float16, torch.bfloat16):
        g = HalfSteps(g, result)
    dtype = torch.float32 if result in (torch.float16, torch.bfloat16) else result
    static = input.is_static
    n, channels, *sizes = input.shape if static else [dim_size(g, input, d) for d in range(spatial + 2)]
    product = (lambda v: math.prod(v)) if static else (
        lambda v: functools.reduce(lambda a, b: g.op("Mul", as_value(g, a, torch.int64), as_value(g, b, torch.int64)),
                                   v, 1))
    plane = product(sizes)
    moved = g.op("Transpose", cast(g, input, dtype), perm=[1, 0] + list(range(2, spatial + 2)))
    table = g.op("Reshape", moved, g.const([channels, n * plane], dtype=torch.int64) if static
                 else builder.int_list([channels, g.op("Mul", as_value(g, n, torch.int64), plane)]))
    grid = cast(g, grid, dtype)
    per_axis = []
    for d, size in enumerate(sizes):  # grid's last dim holds (x, y[, z]): the innermost axis first
        coord = g.op("Gather", grid, g.const(spatial - 1 - d, dtype=torch.int64), axis=spatial + 1)
        nan_to = 0.0 if spatial == 2 else (float(size - 1) if static else g.op("Sub", size, g.const(1, dtype=torch.int64)))
        per_axis.append(_axis_taps(g, coord, size, interpolation_mode, padding_mode, align_corners, nan_to))
    if static:
        batch = g.const((torch.arange(n, dtype=torch.int64) * plane).reshape([n] + [1] * spatial))
    else:
        batch = builder.unsqueeze(builder.op("Mul", arange_of(builder, n, has_range=False), plane),
                                  list(range(1, spatial + 1)))
    strides = [product(sizes[d + 1:]) for d in range(spatial)]

    def sample(taps, weight: Value | None = None) -> Value:
        """[C, N, out...]: the input at one tap per axis times weight; zero outside the input, where
        ATen's 3-D kernel skips the term (a NaN weight too) and its 2-D one multiplies a zero."""
        index, inside = batch, None
        for (mask, idx, _), stride in zip(taps, strides):
            index = g.op("Add", index, idx if isinstance(stride, int) and stride == 1
                         else g.op("Mul", idx, as_value(g, stride, torch.int64)))
            inside = mask if inside is None else g.op("And", inside, mask)
        zero = g.const(0.0, dtype=dtype)
        value = g.op("Gather", table, index, axis=1)
        if spatial == 3 and weight is not None:
            return g.op("Where", inside, g.op("Mul", value, weight), zero)
        value = g.op("Where", inside, value, zero)
        return value if weight is None else g.op("Mul", value, weight)

    def add(total: Value | None, term: Value) -> Value:
        return term if total is None else g.op("Add", total, term)

    out = None
    if interpolation_mode == 2:  # as ATen: along x within each row, then the rows along y
        for row_tap in per_axis[0]:
            row = None
            for col_tap in per_axis[1]:
                row = add(row, sample((row_tap, col_tap), col_tap[2]))
            out = add(out, g.op("Mul", row, row_tap[2]))
    else:  # each corner's weight is the product of its per-axis weights, x's first
        for taps in itertools.product(*per_axis):
            weights = [w for _, _, w in reversed(taps) if w is not None]
            weight = functools.reduce(lambda a, b: g.op("Mul", a, b), weights) if weights else None
            out = add(out, sample(taps, weight))
    return cast(g, g.op("Transpose", out, perm=[1, 0] + list(range(2, spatial + 2))), result)


@register("aten::grid_sampler_2d.default")
def aten_grid_sampler_2d(g, input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor"""
    return grid_sample(g, input, grid, interpolation_mode, padding_mode, align_corners)


@register("aten::grid_sampler_3d.default")
def aten_grid_sampler_3d(g, input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor"""
    return grid_sample(g, input, grid, interpolation_mode, padding_mode, align_corners)


@register("aten::grid_sampler.default")
def aten_grid_sampler(g, input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor"""
    return grid_sample(g, input, grid, interpolation_mode, padding_mode, align_corners)


# -- antialiased upsampling --------------------------------------------------------------------------------------


def _aa_matrix(op, n: int, axis: int, other: int, args) -> torch.Tensor:
    """The [n, n_out] matrix of one pass of op along axis (0: height, 1: width), made by op itself on
    an identity basis whose other axis has `other` elements."""
    shape = [n, 1, other, other]
    shape[2 + axis] = n
    basis = torch.eye(n, dtype=torch.float64).reshape([n, 1] + [n if j == axis else 1 for j in range(2)]).expand(shape)
    result = op(basis.contiguous(), *args)
    return result[:, 0, :, 0] if axis == 0 else result[:, 0, 0, :]


def antialias_bilinear(g: GraphBuilder, input: Value, op, args) -> Value:
    """Antialiased bilinear resampling as two constant matrices made by ATen's own kernel on an
    identity basis: op(basis, *args(axis, other)) resizes along axis only, the other axis of
    size `other`. ATen resizes the width first, then the height at the new width, and its height
    pass over a single column weighs every output like the first: the height matrix is made at
    the new width (2 stands for any width above 1) to match. uint8 rounds through fixed-point
    weights, which a float matrix does not reproduce."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError("antialiased upsampling of integers rounds through fixed-point weights")
    if input.rank != 4:
        raise NotImplementedError("antialiased upsampling needs a 4-D input")
    height, width = static_spatial(input, 2, "antialiased upsampling")
    across = _aa_matrix(op, width, 1, min(height, 2), args(1, min(height, 2)))
    down = _aa_matrix(op, height, 0, min(across.shape[1], 2), args(0, min(across.shape[1], 2)))
    out = g.op("MatMul", input, g.const(across, dtype=input.dtype))
    return g.op("MatMul", g.const(down.T, dtype=input.dtype), out)


@register("aten::_upsample_bilinear2d_aa.vec")
def aten_upsample_bilinear2d_aa(g, input, output_size, align_corners, scale_factors):
    """_upsample_bilinear2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    def args(axis, other):
        size = None if output_size is None else [s if j == axis else other for j, s in enumerate(output_size)]
        scales = None if scale_factors is None else [s if j == axis else 1.0 for j, s in enumerate(scale_factors)]
        return size, align_corners, scales

    return antialias_bilinear(g, input, torch.ops.aten._upsample_bilinear2d_aa.vec, args)


@register("aten::_upsample_bilinear2d_aa.default")
def aten_upsample_bilinear2d_aa_sizes(g, self, output_size, align_corners, scales_h=None, scales_w=None):
    """_upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"""
    def args(axis, other):
        size = [s if j == axis else other for j, s in enumerate(output_size)]
        return (size, align_corners) + ((scales_h, None) if axis == 0 else (None, scales_w))

    return antialias_bilinear(g, self, torch.ops.aten._upsample_bilinear2d_aa.default, args)
