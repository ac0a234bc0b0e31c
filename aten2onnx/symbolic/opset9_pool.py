"""Opset-9 base, pooling: MaxPool where one ONNX op matches (g.pool: ceil_mode and dilations from
opset 10), and the pooling no single ONNX op matches: average pooling with ceil_mode, divisor_override
or integers, adaptive max pooling over uneven bins, fractional max pooling, integer max pooling; these
read the same at every opset."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import _fractional_pool, registry  # noqa: F401  (defines aten2onnx::fractional_max_pool)
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import SymInt, as_value, cast, dim_size, reshape, sym_prod
from aten2onnx.symbolic._spatial import batched, expand, flat_positions, static_spatial, window_coordinates
from aten2onnx.symbolic.opset9_data import arange_of, int_max, int_min, int_mod, where

register = functools.partial(registry.register, opset=9)


# -- average pooling ---------------------------------------------------------------------------------------------


def _avg_windows(size: int, k: int, s: int, p: int, ceil_mode: bool) -> tuple[int, list[int], list[int]]:
    """Along one axis, as ATen's pooling: the end padding that makes every window whole without
    ceil_mode, and per window the count of input elements and the count ATen divides by with
    count_include_pad (the window clipped to the padded input)."""
    out = (size + 2 * p - k + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside input or left padding
        out -= 1
    pad_end = p + max(0, (out - 1) * s + k - (size + 2 * p))
    starts = [o * s - p for o in range(out)]
    inside = [min(b + k, size) - max(b, 0) for b in starts]
    padded = [min(b + k, size + p) - b for b in starts]
    return pad_end, inside, padded


def avg_pool(g: GraphBuilder, x: Value, kernel_size, stride, padding, ceil_mode: bool, count_include_pad: bool,
             divisor_override, spatial: int) -> Value:
    """ATen's average pooling. onnxruntime's AveragePool computes float32 only: half types pool in
    float32; float64 and integers sum their windows by gathers instead and divide as ATen does
    (integers truncating). AveragePool's own ceil_mode (from opset 10) counts windows and
    divisors as ATen does; without it, or with divisor_override, the windows are made whole by end
    padding, AveragePool averages the input elements in each, and a constant per output position
    turns that into ATen's window sum over its divisor."""
    kernel, strides, pads = pool_args(kernel_size, stride, expand(padding, spatial), spatial)
    begin = pads[:spatial]
    pooled = x.dtype in (torch.float32, torch.float16, torch.bfloat16)
    if pooled and divisor_override is None:
        try:
            return batched(g, x, spatial, lambda b: cast(g, g.pool(
                "AveragePool", cast(g, b, torch.float32), kernel_shape=kernel, strides=strides, pads=pads,
                count_include_pad=int(count_include_pad), ceil_mode=ceil_mode), x.dtype))
        except NotImplementedError:
            pass  # AveragePool has no ceil_mode at this opset (g.pool): the windows are made whole below
    if x.shape is None or x.rank < spatial or not all(isinstance(n, int) for n in x.shape[-spatial:]):
        return _avg_pool_dynamic(g, x, kernel, strides, begin, ceil_mode, count_include_pad, divisor_override)
    sizes = static_spatial(x, spatial, "this average pooling")
    axes = [_avg_windows(n, k, s, p, ceil_mode) for n, k, s, p in zip(sizes, kernel, strides, begin)]
    inside = _outer([a[1] for a in axes])
    if divisor_override is not None:
        divisor = torch.full_like(inside, float(divisor_override))
    else:
        divisor = _outer([a[2] for a in axes]) if count_include_pad else inside
    if pooled:
        ends = [a[0] for a in axes]
        ratio = inside / divisor

        def pool(b: Value) -> Value:
            mean = g.op("AveragePool", cast(g, b, torch.float32), kernel_shape=kernel, strides=strides,
                        pads=begin + ends, count_include_pad=0)
            if not bool((ratio == 1).all()):
                mean = g.op("Mul", mean, g.const(ratio, dtype=torch.float32))
            return cast(g, mean, x.dtype)

        return batched(g, x, spatial, pool)
    wide = torch.float64 if x.dtype.is_floating_point else torch.int64
    total = window_sum(g, cast(g, x, wide), kernel, strides, begin, [len(a[1]) for a in axes])
    return cast(g, g.op("Div", total, g.const(divisor, dtype=wide)), x.dtype)


def _avg_pool_dynamic(g: GraphBuilder, x: Value, kernel: list[int], strides: list[int], begin: list[int],
                      ceil_mode: bool, count_include_pad: bool, divisor_override) -> Value:
    """avg_pool's window sums and divisors where a spatial size is known only at run time: per axis,
    _avg_windows computed in the graph (the window count, each window's positions and counts), the
    windows gathered along a new axis, the positions in padding zeroed (so inf stays inf) and summed;
    the sums are taken in float64 (int64 for integers, which divide truncating as ATen's do)."""
    i64 = torch.int64
    wide = torch.float64 if x.dtype.is_floating_point else i64
    total = cast(g, x, wide)
    rank, spatial = x.rank, len(kernel)
    counts = []
    for d, (k, s, p) in enumerate(zip(kernel, strides, begin)):
        axis = rank - spatial + d
        n = as_value(g, dim_size(g, total, axis), i64)
        out = g.op("Add", g.op("Div", g.op("Add", n, g.const(2 * p - k + (s - 1 if ceil_mode else 0), dtype=i64)),
                               g.const(s, dtype=i64)), g.const(1, dtype=i64))
        if ceil_mode:  # the last window must start inside the input or the left padding
            late = g.greater_or_equal(g.op("Mul", g.op("Sub", out, g.const(1, dtype=i64)), g.const(s, dtype=i64)),
                                      g.op("Add", n, g.const(p, dtype=i64)))
            out = g.op("Sub", out, cast(g, late, i64))
        starts = g.op("Sub", g.op("Mul", arange_of(g, out, has_range=False), g.const(s, dtype=i64)),
                      g.const(p, dtype=i64))
        positions = g.op("Add", g.unsqueeze(starts, [1]), g.const(torch.arange(k).unsqueeze(0)))  # [out, k]
        inside = g.op("And", g.op("Not", g.op("Less", positions, g.const(0, dtype=i64))), g.op("Less", positions, n))
        windows = g.op("Gather", total, where(g, inside, positions, g.const(0, dtype=i64)), axis=axis)
        mask = g.unsqueeze(inside, list(range(2, 2 + rank - axis - 1))) if axis < rank - 1 else inside
        windows = where(g, mask, windows, g.const(0, dtype=wide))
        total = g.reduce("ReduceSum", windows, [axis + 1], False)
        ends = g.op("Add", starts, g.const(k, dtype=i64))
        if count_include_pad:  # the window clipped to the padded input
            count = g.op("Sub", int_min(g, ends, g.op("Add", n, g.const(p, dtype=i64))), starts)
        else:
            count = g.op("Sub", int_min(g, ends, n), int_max(g, starts, g.const(0, dtype=i64)))
        counts.append(g.unsqueeze(count, list(range(1, spatial - d))) if d < spatial - 1 else count)
    if divisor_override is not None:
        divisor = g.const(divisor_override, dtype=wide)
    else:
        divisor = cast(g, functools.reduce(lambda a, b: g.op("Mul", a, b), counts), wide)
    return cast(g, g.op("Div", total, divisor), x.dtype)


def window_sum(g: GraphBuilder, x: Value, kernel: list[int], strides: list[int], begin: list[int],
               outs: list[int]) -> Value:
    """Sums over pooling windows of the trailing len(kernel) axes (static), one axis at a time: a
    Gather by a static table lays each window along a new axis, the positions in padding are zeroed
    (not multiplied, so inf stays inf), and a MatMul with ones adds them up. MatMul and Gather
    take every dtype onnxruntime pools lack."""
    rank, spatial = x.rank, len(kernel)
    shape = list(x.shape)
    for d, (k, s, p, out) in enumerate(zip(kernel, strides, begin, outs)):
        axis = rank - spatial + d
        size = shape[axis]
        positions = (torch.arange(out) * s - p).unsqueeze(1) + torch.arange(k)
        inside = (positions >= 0) & (positions < size)
        windows = g.op("Gather", x, g.const(positions.clamp(0, size - 1)), axis=axis)
        if not bool(inside.all()):
            mask = g.const(inside.reshape([out, k] + [1] * (rank - axis - 1)))
            windows = g.op("Where", mask, windows, g.const(0, dtype=x.dtype))
        rest = math.prod(shape[axis + 1:])
        windows = g.op("Reshape", windows, g.const([0] * axis + [out, k, rest], dtype=torch.int64))
        summed = g.op("MatMul", g.const(torch.ones(1, k, dtype=x.dtype)), windows)
        shape[axis] = out
        x = g.op("Reshape", summed, g.const([0] * axis + shape[axis:], dtype=torch.int64))
    return x


def _outer(factors: list[list[int]]) -> torch.Tensor:
    """The outer product of per-axis counts, float64 of shape [len(f) for f in factors]."""
    out = torch.ones([], dtype=torch.float64)
    for f in factors:
        out = out.unsqueeze(-1) * torch.tensor(f, dtype=torch.float64)
    return out


@register("aten::avg_pool1d.default")
def aten_avg_pool1d(g, self, kernel_size, stride=[], padding=[0], ceil_mode=False, count_include_pad=True):
    """avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor"""
    return avg_pool(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


@register("aten::avg_pool2d.default")
def aten_avg_pool2d(g, self, kernel_size, stride=[], padding=[0, 0], ceil_mode=False, count_include_pad=True,
                    divisor_override=None):
    """avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"""
    return avg_pool(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


@register("aten::avg_pool3d.default")
def aten_avg_pool3d(g, self, kernel_size, stride=[], padding=[0, 0, 0], ceil_mode=False, count_include_pad=True,
                    divisor_override=None):
    """avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"""
    return avg_pool(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


# -- adaptive max pooling ----------------------------------------------------------------------------------------


def adaptive_bins(size: int, out: int) -> list[list[int]]:
    """ATen's adaptive bins along one axis, each padded to the widest by repeating its last index
    (a repeat changes neither the maximum nor which element is first or last to hold it)."""
    bins = [list(range(i * size // out, -(-(i + 1) * size // out))) for i in range(out)]
    width = max(len(b) for b in bins)
    return [b + [b[-1]] * (width - len(b)) for b in bins]


def adaptive_window_table(g: GraphBuilder, size: SymInt, out: int) -> tuple[Value, SymInt]:
    """ATen's adaptive bins along one axis as a [out, width] index table (see adaptive_bins) and its
    width. A symbolic size has its bins computed in the graph: start = floor(i * size / out), end =
    ceil((i + 1) * size / out), each padded to the widest by repeating its last index."""
    if isinstance(size, int):
        table = adaptive_bins(size, out)
        return g.const(table, dtype=torch.int64), len(table[0])
    size = reshape(g, cast(g, size, torch.int64), [])
    i, o = g.const(list(range(out)), dtype=torch.int64), g.const(out, dtype=torch.int64)
    starts = g.op("Div", g.op("Mul", i, size), o)
    ends = g.op("Div", g.op("Add", g.op("Mul", g.op("Add", i, g.const(1, dtype=torch.int64)), size),
                            g.const(out - 1, dtype=torch.int64)), o)
    lengths = g.op("Sub", ends, starts)
    width = g.reduce("ReduceMax", lengths, [0], False)
    k = reshape(g, g.op("NonZero", g.op("ConstantOfShape", reshape(g, width, [1]),
                                          value=torch.ones(1, dtype=torch.int64))), [1, -1])
    last = g.unsqueeze(g.op("Sub", lengths, g.const(1, dtype=torch.int64)), [1])
    return g.op("Add", g.unsqueeze(starts, [1]), g.min(k, last)), width


def adaptive_max(g: GraphBuilder, x: Value, output_size) -> tuple[Value, Value]:
    """Adaptive max pooling with ATen's indices (flat within each plane): each output's window is
    gathered by an index table (a constant, or computed in the graph for a symbolic pooled dim), and the
    winner is the first maximum, or the last NaN if the window holds one (ATen's scan keeps a NaN it
    meets, and a later NaN replaces it). With any symbolic dim the winners are read by GatherElements."""
    spatial = len(output_size)
    if x.shape is None or x.rank not in (spatial + 1, spatial + 2):
        raise NotImplementedError("adaptive max pooling is exported for (batched) channel-first inputs")
    lead = [dim_size(g, x, d) for d in range(x.rank - spatial)]
    sizes = [dim_size(g, x, d) for d in range(x.rank - spatial, x.rank)]
    tables = [adaptive_window_table(g, n, o) for n, o in zip(sizes, output_size)]
    windows = x
    for d, (table, _) in enumerate(tables):  # lead + [O1, K1, ..., Od, Kd, size(d+1), ...]
        windows = g.op("Gather", windows, table, axis=len(lead) + 2 * d)
    first = len(lead)
    perm = list(range(first)) + [first + 2 * d for d in range(spatial)] + [first + 2 * d + 1 for d in range(spatial)]
    widths = [w for _, w in tables]
    width = math.prod(widths) if all(isinstance(w, int) for w in widths) else -1
    windows = reshape(g, g.op("Transpose", windows, perm=perm), lead + list(output_size) + [width])

    key = windows if windows.dtype in (torch.float32, torch.float64) else cast(g, windows, torch.float32)
    nan = g.op("IsNaN", key)
    last = len(lead) + spatial
    first_max = g.op("ArgMax", g.op("Where", nan, g.const(float("-inf"), like=key), key), axis=last, keepdims=0)
    if width == -1:
        width = reshape(g, g.op("Gather", g.op("Shape", windows), g.const([last], dtype=torch.int64), axis=0), [])
        # the last NaN: the largest slot number among the NaN slots (0 where there is none)
        slots = cast(g, reshape(g, g.op("NonZero", g.op("ConstantOfShape", reshape(g, width, [1]),
                                                         value=torch.ones(1, dtype=torch.int64))), [-1]), torch.float32)
        last_nan = g.op("ArgMax", g.op("Mul", cast(g, nan, torch.float32), slots), axis=last, keepdims=0)
    else:
        reversed_nan = g.op("Gather", cast(g, nan, torch.float32), g.const(list(range(width - 1, -1, -1)),
                                                                          dtype=torch.int64), axis=last)
        last_nan = g.op("Sub", g.const(width - 1, dtype=torch.int64),
                        g.op("ArgMax", reversed_nan, axis=last, keepdims=0))
    if not x.is_static:
        def pick(table: Value, slot: Value) -> Value:
            return g.squeeze(g.op("GatherElements", table, g.unsqueeze(slot, [last]), axis=last), [last])

        winner = g.op("Where", pick(nan, last_nan), last_nan, first_max)
        values = pick(windows, winner)
    else:
        rows = torch.arange(math.prod(lead + list(output_size)), dtype=torch.int64).reshape(lead + list(output_size))
        row_start = g.const(rows * width)
        flat_nan = reshape(g, nan, [-1])
        has_nan = g.op("Gather", flat_nan, g.op("Add", row_start, last_nan), axis=0)
        winner = g.op("Where", has_nan, last_nan, first_max)
        values = g.op("Gather", reshape(g, windows, [-1]), g.op("Add", row_start, winner), axis=0)

    # the plane index of each window slot, per output position: sum over axes of bin index * stride
    plane = None
    for d, (table, _) in enumerate(tables):
        shape = [1] * (2 * spatial)
        shape[d], shape[spatial + d] = output_size[d], -1
        after = sizes[d + 1:]
        stride = g.const(math.prod(after), dtype=torch.int64) if all(isinstance(n, int) for n in after) else \
            g.reduce("ReduceProd", g.slice(g.op("Shape", x), [x.rank - len(after)], [x.rank], [0]), [0], False)
        term = reshape(g, table, shape)
        term = g.op("Mul", term, stride)
        plane = term if plane is None else g.op("Add", plane, term)
    positions = g.const(torch.arange(math.prod(output_size), dtype=torch.int64).reshape(list(output_size)))
    positions = g.op("Mul", positions, width if isinstance(width, Value) else g.const(width, dtype=torch.int64))
    indices = g.op("Gather", reshape(g, plane, [-1]), g.op("Add", positions, winner), axis=0)
    return values, indices


@register("aten::adaptive_max_pool1d.default")
def aten_adaptive_max_pool1d(g, self, output_size):
    """adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)"""
    return adaptive_max(g, self, output_size)


@register("aten::adaptive_max_pool2d.default")
def aten_adaptive_max_pool2d(g, self, output_size):
    """adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)"""
    return adaptive_max(g, self, output_size)


@register("aten::adaptive_max_pool3d.default")
def aten_adaptive_max_pool3d(g, self, output_size):
    """adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)"""
    return adaptive_max(g, self, output_size)


# -- fractional max pooling --------------------------------------------------------------------------------------


def fractional_starts(g: GraphBuilder, sample: Value, size: SymInt, out: SymInt, pool: int) -> Value:
    """ATen's generate_intervals for one spatial dim: each output's window start, [N, C, out] int64, from each
    plane's sample u [N, C, 1]: int((i + u) * alpha) - int(u * alpha), alpha = (size - pool) / (out - 1),
    computed in the sample's dtype as ATen computes it in the input's, and the last window ends at the end."""
    positions = arange_of(g, out, has_range=False)
    if isinstance(size, int) and isinstance(out, int):
        span, steps = torch.tensor(size - pool, dtype=sample.dtype), torch.tensor(max(out - 1, 1), dtype=sample.dtype)
        alpha = g.const(span / steps)
    else:
        span = g.op("Sub", as_value(g, size, torch.int64), g.const(pool, dtype=torch.int64))
        steps = int_max(g, g.op("Sub", as_value(g, out, torch.int64), g.const(1, dtype=torch.int64)),
                        g.const(1, dtype=torch.int64))
        alpha = g.op("Div", cast(g, span, sample.dtype), cast(g, steps, sample.dtype))
    scaled = g.op("Mul", g.op("Add", cast(g, positions, sample.dtype), sample), alpha)
    starts = g.op("Sub", cast(g, scaled, torch.int64), cast(g, g.op("Mul", sample, alpha), torch.int64))
    last = g.op("Sub", as_value(g, out, torch.int64), g.const(1, dtype=torch.int64))
    end = g.op("Sub", as_value(g, size, torch.int64), g.const(pool, dtype=torch.int64))
    return g.op("Where", g.op("Equal", positions, last), end, starts)


def fractional_max(g: GraphBuilder, x: Value, kernel_size, output_size, random_samples: Value,
                   sample_of: list[int]) -> tuple[Value, Value]:
    """Fractional max pooling of a batched input [N, C, spatial...] with ATen's values and indices (flat within
    each plane): every plane's windows start where its random sample puts them (fractional_starts), so the
    windows are gathered from the flattened input by an index computed per plane; the winner is the first
    maximum, or the last NaN if the window holds one (ATen's scan keeps a NaN it meets). sample_of: which
    entry of a plane's samples places each spatial dim (2-D pooling reads them width first)."""
    spatial = len(output_size)
    n, c = dim_size(g, x, 0), dim_size(g, x, 1)
    sizes = [dim_size(g, x, 2 + d) for d in range(spatial)]
    samples = random_samples if random_samples.dtype in (torch.float32, torch.float64) else \
        cast(g, random_samples, torch.float32)
    # a plane reads its batch's row of the samples: those past the batch are not read
    samples = g.op("Gather", samples, arange_of(g, n, has_range=False), axis=0)
    local = None
    for d in range(spatial):
        sample = g.op("Gather", samples, g.const([sample_of[d]], dtype=torch.int64), axis=2)  # [N, C, 1]
        starts = fractional_starts(g, sample, sizes[d], output_size[d], kernel_size[d])
        window = g.op("Add", g.unsqueeze(starts, [3]), g.const(torch.arange(kernel_size[d])))  # [N, C, out, pool]
        others = [e for e in range(spatial) if e != d]
        window = g.unsqueeze(window, sorted([2 + e for e in others] + [2 + spatial + e for e in others]))
        term = g.op("Mul", window, as_value(g, sym_prod(g, sizes[d + 1:]), torch.int64))
        local = term if local is None else g.op("Add", local, term)
    plane = as_value(g, sym_prod(g, sizes), torch.int64)
    base = reshape(g, g.op("Mul", arange_of(g, sym_prod(g, [n, c]), has_range=False), plane),
                   [n, c] + [1] * 2 * spatial)
    width = math.prod(kernel_size)
    shape = [n, c] + list(output_size) + [width]
    local = reshape(g, local, shape)
    windows = reshape(g, g.op("Gather", reshape(g, x, [-1]), g.op("Add", reshape(g, base, [n, c] + [1] * (spatial + 1)),
                                                                   local), axis=0), shape)
    key = windows if windows.dtype in (torch.float32, torch.float64) else cast(g, windows, torch.float32)
    nan = g.op("IsNaN", key)
    last = 2 + spatial
    first_max = g.op("ArgMax", g.op("Where", nan, g.const(float("-inf"), like=key), key), axis=last, keepdims=1)
    flipped = g.op("Gather", cast(g, nan, torch.float32), g.const(list(range(width - 1, -1, -1)), dtype=torch.int64),
                   axis=last)
    last_nan = g.op("Sub", g.const(width - 1, dtype=torch.int64), g.op("ArgMax", flipped, axis=last, keepdims=1))
    has_nan = g.op("Greater", g.reduce("ReduceMax", cast(g, nan, torch.float32), [last], True),
                   g.const(0.5, dtype=torch.float32))
    winner = g.op("Equal", g.op("Where", has_nan, last_nan, first_max), g.const(torch.arange(width)))
    values = g.reduce("ReduceSum", g.op("Where", winner, key, g.const(0.0, like=key)), [last], False)
    indices = g.reduce("ReduceSum", g.op("Where", winner, local, g.const(0, dtype=torch.int64)), [last], False)
    return cast(g, values, x.dtype), indices


@register("aten::fractional_max_pool2d.default")
def aten_fractional_max_pool2d(g, self, kernel_size, output_size, random_samples):
    """fractional_max_pool2d(Tensor self, int[2] kernel_size, int[2] output_size, Tensor random_samples)
    -> (Tensor, Tensor)"""
    return batched(g, self, 2, lambda x: fractional_max(g, x, expand(kernel_size, 2), expand(output_size, 2),
                                                         random_samples, [1, 0]))


@register("aten::fractional_max_pool3d.default")
def aten_fractional_max_pool3d(g, self, kernel_size, output_size, random_samples):
    """fractional_max_pool3d(Tensor self, int[3] kernel_size, int[3] output_size, Tensor random_samples)
    -> (Tensor, Tensor)"""
    return batched(g, self, 3, lambda x: fractional_max(g, x, expand(kernel_size, 3), expand(output_size, 3),
                                                         random_samples, [0, 1, 2]))


@register("aten2onnx::fractional_max_pool.default")
def aten2onnx_fractional_max_pool(g, input, kernel_size, output_size, random_samples):
    """fractional_max_pool(Tensor input, SymInt[] kernel_size, SymInt[] output_size, Tensor random_samples)
    -> (Tensor, Tensor)"""
    spatial = len(kernel_size)
    return batched(g, input, spatial, lambda x: fractional_max(g, x, list(kernel_size), list(output_size),
                                                               random_samples, [1, 0] if spatial == 2 else [0, 1, 2]))


# -- max pooling, where one ONNX op matches -----------------------------------------------------------------


def pool_args(kernel_size, stride, padding, spatial: int) -> tuple[list[int], list[int], list[int]]:
    expand = (lambda v: list(v) * spatial if len(v) == 1 else list(v))
    kernel = expand(kernel_size)
    strides = expand(stride) if stride else kernel
    pads = expand(padding if isinstance(padding, (list, tuple)) else [padding])
    return kernel, strides, pads + pads


def max_pool(g: GraphBuilder, x: Value, kernel_size, stride, padding, dilation, ceil_mode, spatial: int, *,
             indices: bool):
    """MaxPool; with indices, ONNX's (which count over the whole tensor) made torch's (per plane)."""
    kernel, strides, pads = pool_args(kernel_size, stride, expand(padding, spatial), spatial)
    dilations = expand(dilation, spatial)

    def pool(b: Value):
        if not b.dtype.is_floating_point:
            return integer_max_pool(g, b, kernel, strides, pads, dilations, ceil_mode, indices=indices)
        if not indices:
            return g.pool("MaxPool", b, kernel_shape=kernel, strides=strides, pads=pads, dilations=dilations,
                          ceil_mode=ceil_mode)
        y, idx = g.pool("MaxPool", b, outputs=2, kernel_shape=kernel, strides=strides, pads=pads,
                        dilations=dilations, ceil_mode=ceil_mode)
        if not b.is_static:  # an index into the whole tensor is its plane's times plane, plus torch's
            plane = functools.reduce(lambda a, c: g.op("Mul", a, c),
                                     [as_value(g, dim_size(g, b, d), torch.int64) for d in range(2, b.rank)])
            return y, int_mod(g, idx, plane)
        n, c = b.shape[:2]
        plane = math.prod(b.shape[2:])
        offsets = (torch.arange(n * c, dtype=torch.int64) * plane).reshape([n, c] + [1] * spatial)
        return y, g.op("Sub", idx, g.const(offsets))

    return batched(g, x, spatial, pool)


def integer_max_pool(g: GraphBuilder, x: Value, kernel: list[int], strides: list[int], pads: list[int],
                     dilations: list[int], ceil_mode: bool, *, indices: bool):
    """Max pooling of integers (MaxPool takes no int64, and int8/uint8 only from 12): every window gathered
    from the input padded with the dtype's lowest value (static sizes), its ReduceMax, and for indices
    its first largest entry's position in the input plane, as eager's (a window whose entries are all the
    lowest value points at its first entry inside the input, as eager's)."""
    spatial = len(kernel)
    if x.shape is None or not all(isinstance(n, int) for n in x.shape[1:]):
        raise NotImplementedError("integer max pooling is exported for static channel and spatial sizes only")
    channels, sizes = x.shape[1], list(x.shape[2:])
    begin = pads[:spatial]
    out_sizes = []
    for n, k, s, d, p in zip(sizes, kernel, strides, dilations, begin):  # torch's pooling_output_shape
        span = n + 2 * p - d * (k - 1) - 1
        out = (span + (s - 1 if ceil_mode else 0)) // s + 1
        out_sizes.append(out - 1 if ceil_mode and (out - 1) * s >= n + p else out)
    padded = [max(n + 2 * p, (o - 1) * s + d * (k - 1) + 1)
              for n, p, o, s, d, k in zip(sizes, begin, out_sizes, strides, dilations, kernel)]
    coords = window_coordinates(out_sizes, kernel, strides, dilations)  # [spatial, P, K]
    lowest = torch.iinfo(x.dtype).min if x.dtype != torch.bool else False
    x = g.pad(x, [0, 0, *begin, 0, 0, *(q - n - p for q, n, p in zip(padded, sizes, begin))], value=lowest)
    windows = g.op("Gather", reshape(g, x, [0, channels, -1]), g.const(flat_positions(coords, padded)), axis=2)
    values = reshape(g, g.reduce("ReduceMax", windows, [3], keepdims=False), [0, channels, *out_sizes])
    if not indices:
        return values
    inside = torch.stack([(c - p >= 0) & (c - p < n) for c, p, n in zip(coords, begin, sizes)]).all(0)
    plane = torch.where(inside, flat_positions(coords - torch.tensor(begin).reshape(-1, 1, 1), sizes), -1)
    first_inside = plane.gather(1, inside.int().argmax(1, keepdim=True)).squeeze(1)  # [P]
    window = plane.shape[1]
    picked = g.op("ArgMax", windows, axis=3, keepdims=0)  # [N, C, P], the first largest
    at = g.op("Add", picked, g.const(torch.arange(plane.shape[0]) * window))
    found = g.op("Gather", g.const(plane.reshape(-1)), at, axis=0)
    found = g.op("Where", g.op("Less", found, g.const(0, dtype=torch.int64)), g.const(first_inside), found)
    return values, reshape(g, found, [0, channels, *out_sizes])


@register("aten::max_pool1d.default")
def aten_max_pool1d(g, self, kernel_size, stride=[], padding=[0], dilation=[1], ceil_mode=False):
    """max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> Tensor"""
    return max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 1, indices=False)


@register("aten::max_pool2d.default")
def aten_max_pool2d(g, self, kernel_size, stride=[], padding=[0, 0], dilation=[1, 1], ceil_mode=False):
    """max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor"""
    return max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 2, indices=False)


@register("aten::max_pool3d.default")
def aten_max_pool3d(g, self, kernel_size, stride=[], padding=[0, 0, 0], dilation=[1, 1, 1], ceil_mode=False):
    """max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> Tensor"""
    return max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 3, indices=False)


@register("aten::max_pool1d_with_indices.default")
def aten_max_pool1d_with_indices(g, self, kernel_size, stride=[], padding=[0], dilation=[1], ceil_mode=False):
    """max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> (Tensor, Tensor)"""
    return max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 1, indices=True)


@register("aten::max_pool2d_with_indices.default")
def aten_max_pool2d_with_indices(g, self, kernel_size, stride=[], padding=[0, 0], dilation=[1, 1], ceil_mode=False):
    """max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"""
    return max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 2, indices=True)


@register("aten::max_pool3d_with_indices.default")
def aten_max_pool3d_with_indices(g, self, kernel_size, stride=[], padding=[0, 0, 0], dilation=[1, 1, 1],
                                 ceil_mode=False):
    """max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"""
    return max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 3, indices=True)
