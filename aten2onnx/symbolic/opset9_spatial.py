"""Opset-9 base, convolution and pooling: Conv (string padding included) and MaxPool where one ONNX op matches
(g.pool: ceil_mode and dilations from opset 10), and spatial sampling and pooling
that no single ONNX op matches: average pooling with ceil_mode, divisor_override or integers, adaptive
max pooling over uneven bins, grid sampling as gathers, antialiased bilinear upsampling as constant
matrices, transposed convolution (ConvTranspose has output_padding from opset 1); these read the same
at every opset."""

from __future__ import annotations

import functools
import itertools
import math

import torch

from aten2onnx import _fractional_pool, registry  # noqa: F401  (defines aten2onnx::fractional_max_pool)
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (INT64_MAX, SymInt, as_value, cast, dim_size, half_step, opmath, reshape,
                                         sym_prod, unsqueeze_static)
from aten2onnx.symbolic.opset9_data import arange_of, int_max, int_min, int_mod, where

register = functools.partial(registry.register, opset=9)


# -- batching: pooling ops want (N, C, spatial...); torch also takes (C, spatial...) ------------------------------


def batched(g: GraphBuilder, x: Value, spatial: int, fn):
    """fn on x with a batch dim: an unbatched input gets one, and the outputs lose it again."""
    if x.rank == spatial + 2:
        return fn(x)
    if x.rank != spatial + 1:
        raise NotImplementedError("pooling needs a (batched) channel-first input of known rank")
    one = unsqueeze_static(g, x, 0)
    one.shape = (1,) + tuple(x.shape)
    outs = fn(one)
    if isinstance(outs, tuple):
        return tuple(_unbatch(g, o, x.rank) for o in outs)
    return _unbatch(g, outs, x.rank)


def _unbatch(g: GraphBuilder, x: Value, rank: int) -> Value:
    if x.shape is None:
        x.shape = (1,) + (None,) * rank
    return squeeze_first(g, x)


def expand(v, spatial: int) -> list[int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * spatial if len(v) == 1 else v


def static_spatial(x: Value, spatial: int, what: str) -> list[int]:
    sizes = list(x.shape[-spatial:]) if x.shape is not None and x.rank >= spatial else []
    if len(sizes) != spatial or not all(isinstance(s, int) for s in sizes):
        raise NotImplementedError(f"{what} is exported for static spatial sizes only")
    return sizes


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


# -- transposed convolution ---------------------------------------------------------------------------------


def conv_transpose(g: GraphBuilder, input: Value, weight: Value, bias, stride, padding, output_padding, groups,
                   dilation) -> Value:
    spatial = weight.rank - 2
    strides, pads, dilations = expand(stride, spatial), expand(padding, spatial), expand(dilation, spatial)
    output_padding = expand(output_padding, spatial)

    def run(b: Value) -> Value:
        if not b.dtype.is_floating_point:
            return integer_conv_transpose(g, b, weight, bias, strides, pads, output_padding, int(groups), dilations)
        if weight.is_static and eager_adds_taps_in(b.dtype, output_padding, strides):
            return half_conv_transpose(g, b, weight, bias, strides, pads, output_padding, int(groups), dilations)
        if all(o < s for o, s in zip(output_padding, strides)):
            return g.op("ConvTranspose", b, weight, bias, strides=strides, pads=pads + pads, dilations=dilations,
                        group=int(groups), output_padding=output_padding)
        # torch takes an output padding below the dilation too, onnxruntime only one below the stride:
        # the output padding uncovers the rows the end padding would crop, and past those, rows no tap
        # reaches (the bias alone)
        # (half types in float32, rounded once with the bias, as the one ConvTranspose)
        acc = opmath(b.dtype)
        ends = [p - o for p, o in zip(pads, output_padding)]
        out = g.op("ConvTranspose", cast(g, b, acc), cast(g, weight, acc), strides=strides,
                   pads=pads + [max(e, 0) for e in ends], dilations=dilations, group=int(groups))
        if any(e < 0 for e in ends):
            out = g.pad(out, [0] * (spatial + 2) + [0, 0, *(max(-e, 0) for e in ends)])
        if bias is not None:
            out = g.op("Add", out, reshape(g, cast(g, bias, acc), [-1] + [1] * spatial))
        return cast(g, out, b.dtype)

    return batched(g, input, spatial, run)


def integer_conv_transpose(g: GraphBuilder, x: Value, weight: Value, bias: Value | None, strides: list[int],
                           pads: list[int], output_padding: list[int], groups: int, dilations: list[int]) -> Value:
    """An integer transposed convolution (ConvTranspose takes floats only): the stride's zeros put between
    the input's entries, then integer_conv at stride 1 with the weight flipped and its channels swapped,
    padded by dilation * (kernel - 1) - padding on each side (plus output_padding at the end)."""
    spatial = weight.rank - 2
    if x.shape is None or weight.shape is None or not all(isinstance(n, int) for n in [*x.shape[1:], *weight.shape]):
        raise NotImplementedError("an integer transposed convolution is exported for static sizes only")
    batch, channels, sizes, kernel = x.shape[0], x.shape[1], list(x.shape[2:]), list(weight.shape[2:])
    out_per_group = weight.shape[1]
    if any(s > 1 for s in strides):
        # each position of the spread plane reads its entry of x, or the zero appended after x's entries
        up = [(n - 1) * s + 1 for n, s in zip(sizes, strides)]
        grid = torch.stack(torch.meshgrid(*(torch.arange(u) for u in up), indexing="ij")).reshape(spatial, -1)
        strides_t = torch.tensor(strides).reshape(spatial, 1)
        on_entry = (grid % strides_t == 0).all(0)
        index = torch.where(on_entry, flat_positions(grid // strides_t, sizes), math.prod(sizes))
        flat = reshape(g, x, [0, channels, -1])
        zero = g.op("Mul", g.slice(flat, [0], [1], [2]), g.const(0, like=flat))
        x = reshape(g, g.op("Gather", g.op("Concat", flat, zero, axis=2), g.const(index), axis=2), [0, channels, *up])
        sizes = up
        x.shape = (batch, channels, *sizes)
    begin = [d * (k - 1) - p for d, k, p in zip(dilations, kernel, pads)]
    end = [b + o for b, o in zip(begin, output_padding)]
    if any(b < 0 for b in begin + end):  # more padding than the kernel reaches: those rows are cropped
        x = g.slice(x, [max(-b, 0) for b in begin], [n - max(-e, 0) for n, e in zip(sizes, end)],
                    list(range(2, 2 + spatial)))
        x.shape = (batch, channels, *(n - max(-b, 0) - max(-e, 0) for n, b, e in zip(sizes, begin, end)))
    # weight [C_in, O/groups, *k] -> [O, C_in/groups, *k], each kernel flipped
    w = reshape(g, weight, [groups, channels // groups, out_per_group, *kernel])
    w = reshape(g, g.op("Transpose", w, perm=[0, 2, 1, *range(3, 3 + spatial)]),
                [groups * out_per_group, channels // groups, *kernel])
    for axis, k in enumerate(kernel, start=2):
        w = g.op("Gather", w, g.const(list(range(k - 1, -1, -1)), dtype=torch.int64), axis=axis)
    w.shape = (groups * out_per_group, channels // groups, *kernel)
    return integer_conv(g, x, w, bias, [1] * spatial, [max(b, 0) for b in begin] + [max(e, 0) for e in end],
                        dilations, groups)


def eager_adds_taps_in(dtype: torch.dtype, output_padding: list[int], strides: list[int]) -> bool:
    """Whether eager's CPU transposed convolution of a half dtype is its slow kernel, which adds the
    kernel taps in the dtype: oneDNN's (one rounding, as one ConvTranspose) takes it where the host's
    oneDNN computes the dtype and no output padding reaches the stride."""
    if opmath(dtype) == dtype:
        return False
    supported = {torch.float16: torch.ops.mkldnn._is_mkldnn_fp16_supported,
                 torch.bfloat16: torch.ops.mkldnn._is_mkldnn_bf16_supported}[dtype]
    onednn = torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled and supported()
    return not onednn or any(o >= s for o, s in zip(output_padding, strides))


def half_conv_transpose(g: GraphBuilder, x: Value, weight: Value, bias: Value | None, strides: list[int],
                        pads: list[int], output_padding: list[int], groups: int, dilations: list[int]) -> Value:
    """A half transposed convolution rounded as ATen's slow CPU kernel rounds it: for each kernel
    position, the products summed over the input channels in float32 and rounded once (its gemm), then
    the positions added into the output one at a time in the half dtype, in row-major order of the
    kernel (its col2im), then the bias. (One ConvTranspose over half inputs rounds once, and in
    onnxruntime runs in float32.)"""
    dtype, acc = x.dtype, opmath(x.dtype)
    spatial = weight.rank - 2
    xf, wf = cast(g, x, acc), cast(g, weight, acc)
    kernel = list(weight.shape[2:])
    axes = list(range(2, 2 + spatial))
    total = None
    for position in itertools.product(*(range(k) for k in kernel)):
        tap = g.slice(wf, list(position), [p + 1 for p in position], axes)
        part = half_step(g, g.op("ConvTranspose", xf, tap, strides=strides, group=groups), dtype)
        # where this tap lands in the uncropped output, then the crop of `pads`
        before = [p * d for p, d in zip(position, dilations)]
        after = [(k - 1 - p) * d + o for k, p, d, o in zip(kernel, position, dilations, output_padding)]
        part = g.pad(part, [0, 0, *before, 0, 0, *after])
        if any(pads):
            part = g.slice(part, pads, [-p if p else INT64_MAX for p in pads], axes)
        total = part if total is None else half_step(g, g.op("Add", total, part), dtype)
    if bias is not None:
        b = reshape(g, cast(g, bias, acc), [-1] + [1] * spatial)
        total = half_step(g, g.op("Add", total, b), dtype)
    return cast(g, total, dtype)


@register("aten::conv_transpose1d.default")
def aten_conv_transpose1d(g, input, weight, bias=None, stride=[1], padding=[0], output_padding=[0], groups=1,
                          dilation=[1]):
    """conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor"""
    return conv_transpose(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


@register("aten::conv_transpose2d.input")
def aten_conv_transpose2d(g, input, weight, bias=None, stride=[1, 1], padding=[0, 0], output_padding=[0, 0], groups=1,
                          dilation=[1, 1]):
    """conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor"""
    return conv_transpose(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


@register("aten::conv_transpose3d.input")
def aten_conv_transpose3d(g, input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0],
                          output_padding=[0, 0, 0], groups=1, dilation=[1, 1, 1]):
    """conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor"""
    return conv_transpose(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


# -- convolution and max pooling, where one ONNX op matches --------------------------------------------------


def conv(g: GraphBuilder, input: Value, weight: Value, bias, stride, padding, dilation, groups: int) -> Value:
    spatial = weight.rank - 2
    if input.rank == spatial + 1:  # an unbatched input: add the batch dim and drop it after
        out = conv(g, unsqueeze_static(g, input, 0), weight, bias, stride, padding, dilation, groups)
        out.shape = (1,) + (None,) * (spatial + 1)
        return squeeze_first(g, out)
    expand = (lambda v: list(v) * spatial if len(v) == 1 else list(v))
    if isinstance(padding, str):
        pads = same_pads(weight, expand(dilation)) if padding == "same" else [0] * spatial * 2
    else:
        pads = expand(padding) * 2
    if not input.dtype.is_floating_point:
        return integer_conv(g, input, weight, bias, expand(stride), pads, expand(dilation), int(groups))
    return g.op("Conv", input, weight, bias, strides=expand(stride), pads=pads, dilations=expand(dilation),
                group=int(groups), kernel_shape=[d for d in weight.shape[2:]] if weight.is_static else None)


def window_coordinates(out_sizes: list[int], kernel: list[int], strides: list[int],
                       dilations: list[int]) -> torch.Tensor:
    """[spatial, P, K]: the coordinates (in the padded input) each output position's kernel taps read."""
    spatial = len(kernel)
    starts = torch.stack(torch.meshgrid(*(torch.arange(o) * s for o, s in zip(out_sizes, strides)), indexing="ij"))
    taps = torch.stack(torch.meshgrid(*(torch.arange(k) * d for k, d in zip(kernel, dilations)), indexing="ij"))
    return starts.reshape(spatial, -1, 1) + taps.reshape(spatial, 1, -1)


def flat_positions(coords: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """Row-major flat positions of coordinates [spatial, ...] in a plane of sizes."""
    place = torch.tensor([math.prod(sizes[i + 1:]) for i in range(len(sizes))])
    return (coords * place.reshape([-1] + [1] * (coords.dim() - 1))).sum(0)


def integer_conv(g: GraphBuilder, x: Value, weight: Value, bias: Value | None, strides: list[int], pads: list[int],
                 dilations: list[int], groups: int) -> Value:
    """An integer convolution, which ONNX's Conv (floats only) cannot say: every output position's window
    gathered from the padded input (im2col, for static channel and spatial sizes), times the weight by
    MatMul per group. Integer products and sums wrap as eager's do, in any order."""
    spatial = weight.rank - 2
    sizes, kernel = x.shape[2:] if x.shape is not None else None, weight.shape[2:] if weight.shape is not None else None
    channels, out_channels = (x.shape[1] if x.shape is not None else None), (weight.shape[0] if weight.shape else None)
    if not all(isinstance(n, int) for n in [*(sizes or [None]), *(kernel or [None]), channels, out_channels]):
        raise NotImplementedError("an integer convolution is exported for static channel and spatial sizes only")
    padded = [n + pads[i] + pads[i + spatial] for i, n in enumerate(sizes)]
    out_sizes = [(p - d * (k - 1) - 1) // s + 1 for p, k, s, d in zip(padded, kernel, strides, dilations)]
    index = flat_positions(window_coordinates(out_sizes, kernel, strides, dilations), padded)
    positions, window = index.shape
    if any(pads):
        x = g.pad(x, [0, 0, *pads[:spatial], 0, 0, *pads[spatial:]])
    per_group = channels // groups
    cols = g.op("Gather", reshape(g, x, [0, channels, -1]), g.const(index), axis=2)  # [N, C, P, K]
    cols = reshape(g, cols, [0, groups, per_group, positions, window])
    cols = reshape(g, g.op("Transpose", cols, perm=[0, 1, 3, 2, 4]), [0, groups, positions, per_group * window])
    w = g.op("Transpose", reshape(g, weight, [groups, out_channels // groups, per_group * window]), perm=[0, 2, 1])
    out = g.op("Transpose", g.op("MatMul", cols, w), perm=[0, 1, 3, 2])  # [N, groups, O / groups, P]
    out = reshape(g, out, [0, out_channels, *out_sizes])
    return out if bias is None else g.op("Add", out, reshape(g, bias, [out_channels] + [1] * spatial))


def same_pads(weight: Value, dilation: list[int]) -> list[int]:
    """Pads for padding='same' at stride 1: the extra pad goes at the end, as ATen does."""
    total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
    return [t // 2 for t in total] + [t - t // 2 for t in total]


def squeeze_first(g: GraphBuilder, x: Value) -> Value:
    """Drop a leading dim of size 1 by Reshape (the same at every opset)."""
    if x.is_static:
        return reshape(g, x, list(x.shape[1:]))
    shape = g.op("Shape", x)
    rest = g.op("Gather", shape, g.const(list(range(1, x.rank)), dtype=torch.int64), axis=0)
    return g.op("Reshape", x, rest)


@register("aten::conv1d.default")
def aten_conv1d(g, input, weight, bias=None, stride=[1], padding=[0], dilation=[1], groups=1):
    """conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::conv2d.default")
def aten_conv2d(g, input, weight, bias=None, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1):
    """conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::conv3d.default")
def aten_conv3d(g, input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1], groups=1):
    """conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::convolution.default")
def aten_convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor"""
    if not transposed:
        return conv(g, input, weight, bias, stride, padding, dilation, groups)
    return conv_transpose(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


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


# -- convolutions: string padding -------------------------------------------------------------------


@register("aten::conv1d.padding")
def aten_conv1d_padding(g, input, weight, bias=None, stride=[1], padding="valid", dilation=[1], groups=1):
    """conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], str padding="valid", SymInt[1] dilation=[1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::conv2d.padding")
def aten_conv2d_padding(g, input, weight, bias=None, stride=[1, 1], padding="valid", dilation=[1, 1], groups=1):
    """conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], str padding="valid", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::conv3d.padding")
def aten_conv3d_padding(g, input, weight, bias=None, stride=[1, 1, 1], padding="valid", dilation=[1, 1, 1], groups=1):
    """conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], str padding="valid", SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)
