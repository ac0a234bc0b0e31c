"""Opset-9 base, counting: bincount, histc, histogram and histogramdd, their values added into bins by
opset9_data's count_1d (a one-hot sum, or ScatterElements' add from opset 16: see opset16_data)."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast
from aten2onnx.symbolic.opset9_data import (
    I64,
    column,
    count_1d,
    flat,
    int_clamp,
    int_max,
    ints,
    static,
    to_shape,
    where,
)

register = functools.partial(registry.register, opset=9)


# -- counting: bincount, histc, histogram, histogramdd ----------------------------------------------------------


def bincount(g: GraphBuilder, self: Value, weights: Value | None, minlength: int, *, scatter_add: bool) -> Value:
    x = cast(g, flat(g, self), I64)
    if self.is_static and math.prod(self.shape) == 0:
        size = minlength
    else:
        top = g.op("ReduceMax", g.op("Concat", x, ints(g, [-1]), axis=0), keepdims=0)
        size = int_max(g, g.op("Add", top, g.const(1, dtype=I64)), g.const(minlength, dtype=I64))
    if weights is None:
        return count_1d(g, size, x, None, I64, scatter_add=scatter_add)
    dtype = torch.float32 if weights.dtype == torch.float32 else torch.float64  # eager sums other weights in double
    return count_1d(g, size, x, flat(g, weights), dtype, scatter_add=scatter_add)


@register("aten::bincount.default")
def aten_bincount(g, self, weights=None, minlength=0):
    """bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor"""
    return bincount(g, self, weights, minlength, scatter_add=False)


def in_range(g: GraphBuilder, x: Value, lo: Value, hi: Value) -> Value:
    """lo <= x <= hi, false for NaN."""
    outside = g.op("Or", g.op("Or", g.op("Less", x, lo), g.op("Greater", x, hi)), g.op("IsNaN", x))
    return g.op("Not", outside)


def linear_bin(g: GraphBuilder, x: Value, lo: Value, hi: Value, bins: int) -> Value:
    """The bin eager's linear interpolation picks, in x's dtype: int((x - lo) * bins / (hi - lo))."""
    scaled = g.op("Div", g.op("Mul", g.op("Sub", x, lo), g.const(float(bins), dtype=x.dtype)), g.op("Sub", hi, lo))
    return cast(g, scaled, I64)


def searched_bin(g: GraphBuilder, x: Value, edges: Value) -> Value:
    """upper_bound(edges, x) - 1: how many edges are <= x, less one (x a column [N, 1])."""
    at_most = g.op("Not", g.op("Greater", g.op("Reshape", edges, ints(g, [1, -1])), x))  # [N, E]
    count = g.op("MatMul", cast(g, at_most, torch.float64), g.const(torch.ones(edges.shape[0], 1, dtype=torch.float64)))
    return g.op("Sub", cast(g, count, I64), g.const(1, dtype=I64))


def local_search(g: GraphBuilder, x: Value, pos: Value, edges: Value, bins: int) -> Value:
    """Eager's check of the bins left and right of the interpolated `pos`: upper_bound over
    edges[pos-1 : pos+2] (clamped to the edges), less one."""
    first = int_clamp(g, g.op("Sub", pos, g.const(1, dtype=I64)), 0, bins)
    last = int_clamp(g, g.op("Add", pos, g.const(2, dtype=I64)), 0, bins + 1)  # exclusive
    count = None
    for offset in range(3):
        k = g.op("Add", first, g.const(offset, dtype=I64))
        inside = g.op("Less", k, last)
        edge = g.op("Gather", edges, int_clamp(g, k, 0, bins), axis=0)
        hit = cast(g, g.op("And", inside, g.op("Not", g.op("Greater", edge, x))), I64)
        count = hit if count is None else g.op("Add", count, hit)
    return g.op("Sub", g.op("Add", first, count), g.const(1, dtype=I64))


def linspace_edges(g: GraphBuilder, lo: Value, hi: Value, bins: int) -> Value:
    """torch.linspace(lo, hi, bins + 1) for graph values lo and hi, as eager's CPU kernel computes it:
    step = (hi - lo) / bins in the dtype, then lo + step * i for the first half and hi - step * (bins - i)
    for the rest, each a fused multiply-add (one rounding), which float64 reproduces for float32."""
    steps = bins + 1
    dtype = lo.dtype
    step = g.op("Div", g.op("Sub", hi, lo), g.const(float(bins), dtype=dtype))
    wide = torch.float64 if dtype == torch.float32 else dtype
    lo, hi, step = (cast(g, v, wide) for v in (lo, hi, step))
    i = torch.arange(steps)
    up = g.op("Add", lo, g.op("Mul", step, g.const(i.to(wide))))
    down = g.op("Sub", hi, g.op("Mul", step, g.const((bins - i).to(wide))))
    out = cast(g, where(g, g.const(i < steps // 2), up, down), dtype)
    out.shape = (steps,)
    return out


def outer_edges(g: GraphBuilder, col: Value, expand: float) -> tuple[Value, Value]:
    """The data's min and max, widened by `expand` on each side when equal (0.5 for histogram, 1 for histc)."""
    dtype = col.dtype
    lo = g.op("ReduceMin", col, keepdims=0)
    hi = g.op("ReduceMax", col, keepdims=0)
    same = g.equal(lo, hi)
    lo = where(g, same, g.op("Sub", lo, g.const(expand, dtype=dtype)), lo)
    hi = where(g, same, g.op("Add", hi, g.const(expand, dtype=dtype)), hi)
    return lo, hi


def const_edges(g: GraphBuilder, bins: int, bounds: tuple[float, float], dtype: torch.dtype) -> Value:
    """Edges over a range known at export time: eager's own linspace (an empty range widened by 0.5)."""
    lo, hi = bounds
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return g.const(torch.linspace(lo, hi, bins + 1, dtype=dtype))


def bin_count(spec: int | Value) -> int:
    return spec if isinstance(spec, int) else static(spec, "histogram bins")[0] - 1


def dim_bins(g: GraphBuilder, col: Value, spec: int | Value, bound: tuple[float, float] | None):
    """One dim's edges, its outer edges, and each value's bin (garbage where out of range)."""
    if isinstance(spec, Value):  # given edges: binary search
        edges = cast(g, spec, col.dtype)
        bins = bin_count(spec)
        lo = g.op("Gather", edges, g.const(0, dtype=I64), axis=0)
        hi = g.op("Gather", edges, g.const(bins, dtype=I64), axis=0)
        pos = g.op("Reshape", searched_bin(g, g.op("Reshape", col, ints(g, [-1, 1])), edges), ints(g, [-1]))
        return edges, lo, hi, pos
    bins = spec
    if bound is not None or col.shape[0] == 0:
        edges = const_edges(g, bins, bound or (0.0, 1.0), col.dtype)  # eager's range for no data
        lo = g.op("Gather", edges, g.const(0, dtype=I64), axis=0)
        hi = g.op("Gather", edges, g.const(bins, dtype=I64), axis=0)
    else:
        lo, hi = outer_edges(g, col, 0.5)
        edges = linspace_edges(g, lo, hi, bins)
    guess = where(g, in_range(g, col, lo, hi), linear_bin(g, col, lo, hi, bins), g.const(0, dtype=I64))
    return edges, lo, hi, local_search(g, col, int_clamp(g, guess, 0, bins), edges, bins)


def histogramdd(g: GraphBuilder, self: Value, bins: list[int | Value], bounds: list | None, weight: Value | None,
                density: bool, *, scatter_add: bool) -> tuple[Value, list[Value]]:
    """The D-dimensional histogram of self's rows ([..., D]): int bins by linear interpolation with eager's
    local search over linspace edges, tensor bins by binary search; the last bin holds its right edge."""
    shape = static(self, "histogramdd")
    dims = shape[-1]
    x2 = to_shape(g, self, [math.prod(shape[:-1]), dims])
    counts = [bin_count(b) for b in bins]
    valid, index, edges = None, None, []
    for d in range(dims):
        col = column(g, x2, d)
        bound = None if bounds is None else (float(bounds[2 * d]), float(bounds[2 * d + 1]))
        e, lo, hi, pos = dim_bins(g, col, bins[d], bound)
        ok = in_range(g, col, lo, hi)
        pos = int_clamp(g, pos, 0, counts[d] - 1)
        stride = math.prod(counts[d + 1:])
        term = g.op("Mul", pos, g.const(stride, dtype=I64)) if stride != 1 else pos
        index = term if index is None else g.op("Add", index, term)
        valid = ok if valid is None else g.op("And", valid, ok)
        edges.append(e)
    zero = g.const(0, dtype=self.dtype)
    amounts = cast(g, valid, self.dtype) if weight is None else where(g, valid, cast(g, flat(g, weight), self.dtype), zero)
    index = where(g, valid, index, g.const(0, dtype=I64))
    hist = to_shape(g, count_1d(g, math.prod(counts), index, amounts, self.dtype, scatter_add=scatter_add), counts)
    if density:
        hist = g.op("Div", hist, g.op("ReduceSum", hist, keepdims=0))
        for d, (e, nb) in enumerate(zip(edges, counts)):
            widths = g.op("Sub", g.op("Gather", e, g.const(torch.arange(1, nb + 1)), axis=0),
                          g.op("Gather", e, g.const(torch.arange(nb)), axis=0))
            hist = g.op("Div", hist, to_shape(g, widths, [nb if k == d else 1 for k in range(dims)]))
    return hist, edges


def histc(g: GraphBuilder, self: Value, bins: int, min, max, *, scatter_add: bool) -> Value:
    """histc: bins by linear interpolation alone (no local search), over [min, max] or the data's range."""
    x = flat(g, self)
    lo, hi = float(min), float(max)
    if lo == hi and x.shape[0] != 0:
        lo, hi = outer_edges(g, x, 1.0)
    else:
        lo, hi = (lo - 1, hi + 1) if lo == hi else (lo, hi)
        lo, hi = g.const(lo, dtype=self.dtype), g.const(hi, dtype=self.dtype)
    ok = in_range(g, x, lo, hi)
    pos = int_clamp(g, where(g, ok, linear_bin(g, x, lo, hi, bins), g.const(0, dtype=I64)), 0, bins - 1)
    return count_1d(g, bins, pos, cast(g, ok, self.dtype), self.dtype, scatter_add=scatter_add)


@register("aten::histc.default")
def aten_histc(g, self, bins=100, min=0, max=0):
    """histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor"""
    return histc(g, self, bins, min, max, scatter_add=False)


def histogram(g: GraphBuilder, self: Value, bins: int | Value, bounds, weight, density: bool, *, scatter_add: bool):
    x = to_shape(g, self, [math.prod(static(self, "histogram")), 1])
    hist, (edges,) = histogramdd(g, x, [bins], bounds, weight, density, scatter_add=scatter_add)
    return hist, edges


@register("aten::histogram.bin_ct")
def aten_histogram_bin_ct(g, self, bins=100, *, range=None, weight=None, density=False):
    """histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)"""
    return histogram(g, self, bins, range, weight, density, scatter_add=False)


@register("aten::histogram.bins_tensor")
def aten_histogram_bins_tensor(g, self, bins, *, weight=None, density=False):
    """histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)"""
    return histogram(g, self, bins, None, weight, density, scatter_add=False)


@register("aten::histogramdd.default")
def aten_histogramdd(g, self, bins, range=None, weight=None, density=False):
    """histogramdd(Tensor self, int[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)"""
    return histogramdd(g, self, list(bins), range, weight, density, scatter_add=False)


@register("aten::histogramdd.int_bins")
def aten_histogramdd_int_bins(g, self, bins, range=None, weight=None, density=False):
    """histogramdd.int_bins(Tensor self, int bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)"""
    return histogramdd(g, self, [bins] * static(self, "histogramdd")[-1], range, weight, density, scatter_add=False)


@register("aten::histogramdd.TensorList_bins")
def aten_histogramdd_tensorlist_bins(g, self, bins, range=None, weight=None, density=False):
    """histogramdd.TensorList_bins(Tensor self, Tensor[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)"""
    return histogramdd(g, self, list(bins), range, weight, density, scatter_add=False)
