"""Sorting and order statistics by TopK (g.topk: ties lower index first, as torch's stable sort; smallest
first from opset 11), cumulative max/min/logsumexp/prod by a triangular mask, searchsorted and bucketize
by counting."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import SymInt, cast, dim_size, norm_dim, opmath, reshape
from aten2onnx.symbolic.opset9_data import arange_of
from aten2onnx.symbolic.opset9_norm import axis_sum, static_shape
from aten2onnx.symbolic.opset9_reduce import sum_dtype

register = functools.partial(registry.register, opset=9)


def topk(g: GraphBuilder, x: Value, k, dim: int, largest: bool) -> tuple[Value, Value]:
    return g.topk(x, k, norm_dim(dim, x.rank), largest)


def sort(g: GraphBuilder, self: Value, dim: int, descending: bool) -> tuple[Value, Value]:
    if self.rank == 0:
        return self, g.const(0, dtype=torch.int64)
    return topk(g, self, dim_size(g, self, norm_dim(dim, self.rank)), dim, descending)


@register("aten::sort.default")
def aten_sort(g, self, dim=-1, descending=False):
    """sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)"""
    return sort(g, self, dim, descending)


@register("aten::sort.stable")
def aten_sort_stable(g, self, *, stable, dim=-1, descending=False):
    """sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)"""
    return sort(g, self, dim, descending)


@register("aten::argsort.default")
def aten_argsort(g, self, dim=-1, descending=False):
    """argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor"""
    return sort(g, self, dim, descending)[1]


@register("aten::argsort.stable")
def aten_argsort_stable(g, self, *, stable, dim=-1, descending=False):
    """argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor"""
    return sort(g, self, dim, descending)[1]


@register("aten::msort.default")
def aten_msort(g, self):
    """msort(Tensor self) -> Tensor"""
    return sort(g, self, 0, False)[0]


@register("aten::topk.default")
def aten_topk(g, self, k, dim=-1, largest=True, sorted=True):
    """topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)"""
    if self.rank == 0:
        return self, g.const(0, dtype=torch.int64)
    return topk(g, self, k, dim, largest)


def kth(g: GraphBuilder, self: Value, k: int, dim: int, keepdim: bool) -> tuple[Value, Value]:
    """The k-th smallest (1-based) along dim, and its index."""
    if self.rank == 0:
        return self, g.const(0, dtype=torch.int64)
    dim = norm_dim(dim, self.rank)
    values, indices = topk(g, self, k, dim, False)
    pick = g.const([k - 1] if keepdim else k - 1, dtype=torch.int64)
    return g.op("Gather", values, pick, axis=dim), g.op("Gather", indices, pick, axis=dim)


@register("aten::kthvalue.default")
def aten_kthvalue(g, self, k, dim=-1, keepdim=False):
    """kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    return kth(g, self, k, dim, keepdim)


def with_nan(g: GraphBuilder, x: Value, dim: int, keepdim: bool, values: Value,
             indices: Value | None) -> tuple[Value, Value | None]:
    """median's NaN rule: a row holding a NaN gives NaN, at the index of its first NaN (eager's median,
    unlike kthvalue, does not rank NaN as the largest). Values of other dtypes are as they are."""
    if not x.dtype.is_floating_point:
        return values, indices
    nans = cast(g, g.op("IsNaN", x), torch.float32)
    any_nan = g.op("Greater", g.reduce("ReduceMax", nans, [dim], keepdim), g.const(0.0, dtype=torch.float32))
    values = g.op("Where", any_nan, g.const(math.nan, like=values), values)
    if indices is not None:
        indices = g.op("Where", any_nan, g.op("ArgMax", nans, axis=dim, keepdims=int(keepdim)), indices)
    return values, indices


@register("aten::median.dim")
def aten_median_dim(g, self, dim, keepdim=False):
    """median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    if self.rank == 0:
        return self, g.const(0, dtype=torch.int64)
    dim = norm_dim(dim, self.rank)
    n = static_shape(self, "median")[dim]
    values, indices = kth(g, self, (n - 1) // 2 + 1, dim, keepdim)
    return with_nan(g, self, dim, keepdim, values, indices)


@register("aten::median.default")
def aten_median(g, self):
    """median(Tensor self) -> Tensor"""
    n = len(static_shape(self, "median")) and int(torch.tensor(self.shape).prod())
    flat = reshape(g, self, [-1])
    return with_nan(g, flat, 0, False, kth(g, flat, (max(n, 1) - 1) // 2 + 1, 0, False)[0], None)[0]


# -- cumulative ops: x laid along a [n, n] lower-triangular mask, reduced over the last axis -------------------------


def triangular(g: GraphBuilder, x: Value, dim: int, filler) -> tuple[Value, list[int], SymInt, Value]:
    """x with dim moved last and widened to [..., n(i), n(j)], entries j > i replaced by filler; with the
    permutation used, n (an int, or a 0-d int64 value for a symbolic dim) and the positions [n, n]: j where
    j <= i, else -1."""
    if x.rank is None:
        raise NotImplementedError("cumulative op needs its input's rank")
    rank = x.rank
    dim = norm_dim(dim, rank)
    perm = [d for d in range(rank) if d != dim] + [dim]
    moved = g.op("Transpose", x, perm=perm) if dim != rank - 1 else x
    n = dim_size(g, x, dim)
    if x.is_static:
        rows = reshape(g, moved, [x.shape[d] for d in perm[:-1]] + [1, n])
        mask = g.const(torch.ones(n, n, dtype=torch.bool).tril())
        j = g.const(torch.arange(n).expand(n, n).tril(0) - torch.ones(n, n, dtype=torch.int64).triu(1))
    else:  # j <= i of two aranges read from the graph
        rows = g.unsqueeze(moved, [rank - 1])
        j = reshape(g, arange_of(g, n, has_range=False), [1, -1])
        mask = g.op("Not", g.op("Greater", j, reshape(g, j, [-1, 1])))
        j = g.op("Where", mask, j, g.const(-1, dtype=torch.int64))
    out = g.op("Where", mask, rows, g.const(filler, like=x))
    out.shape = tuple(x.shape[d] for d in perm[:-1]) + (x.shape[dim], x.shape[dim]) if x.shape else None
    return out, perm, n, j


def row_extreme(g: GraphBuilder, masked: Value, largest: bool, filler) -> Value:
    """The extreme of each row of triangular's [..., n, n] (TopK, which ranks NaN the largest), kept as
    [..., n, 1]. Where n is known only when run, a column of the filler goes first: a row of none (an empty
    dim: a masked selection that selected nothing) has no first entry for TopK to take."""
    last = masked.rank - 1
    if masked.shape is None or not isinstance(masked.shape[last], int):
        shape = g.op("Shape", masked)
        column = g.op("Concat", g.slice(shape, [0], [last], [0]), g.const([1], dtype=torch.int64), axis=0)
        masked = g.op("Concat", g.op("Expand", g.const(filler, like=masked), column), masked, axis=last)
    return topk(g, masked, 1, last, largest)[0]


def restore(g: GraphBuilder, y: Value, x: Value, perm: list[int]) -> Value:
    """[..., n, 1] in moved order -> x's layout."""
    if x.is_static:
        y = reshape(g, y, [x.shape[d] for d in perm])
    else:
        y = g.squeeze(y, [len(perm)])
    if perm[-1] != len(perm) - 1:
        y = g.op("Transpose", y, perm=[perm.index(d) for d in range(len(perm))])
    return y


def extreme_fill(dtype: torch.dtype, largest: bool):
    if dtype.is_floating_point:
        return float("-inf") if largest else float("inf")
    if dtype == torch.bool:
        return not largest
    info = torch.iinfo(dtype)
    return info.min if largest else info.max


def cum_extreme(g: GraphBuilder, self: Value, dim: int, *, largest: bool) -> tuple[Value, Value]:
    """cummax/cummin: the running extreme and the last index where it occurs (as torch does)."""
    if self.rank == 0:
        return self, g.const(0, dtype=torch.int64)
    x = cast(g, self, torch.int32) if self.dtype == torch.bool else self
    masked, perm, n, j = triangular(g, x, dim, extreme_fill(x.dtype, largest))
    last = self.rank  # the j axis of the widened [..., n, n]
    values = row_extreme(g, masked, largest, extreme_fill(x.dtype, largest))
    # the index: the last j <= i holding the extreme (NaN matching NaN); the filler past i may equal it
    # (a uint8 0, an int's minimum), so those positions count as -1
    hit = g.equal(masked, values)
    if x.dtype.is_floating_point:
        hit = g.op("Or", hit, g.op("And", g.op("IsNaN", masked), g.op("IsNaN", values)))
    candidates = g.op("Where", hit, j, g.const(-1, dtype=torch.int64))
    idx = g.reduce("ReduceMax", candidates, [last], keepdims=True)
    return cast(g, restore(g, values, self, perm), self.dtype), restore(g, idx, self, perm)


@register("aten::cummax.default")
def aten_cummax(g, self, dim):
    """cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)"""
    return cum_extreme(g, self, dim, largest=True)


@register("aten::cummin.default")
def aten_cummin(g, self, dim):
    """cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)"""
    return cum_extreme(g, self, dim, largest=False)


@register("aten::logcumsumexp.default")
def aten_logcumsumexp(g, self, dim):
    """logcumsumexp(Tensor self, int dim) -> Tensor"""
    if self.rank == 0:
        return self
    x = cast(g, self, opmath(self.dtype))  # ATen computes half types in float32 and rounds each result once
    masked, perm, n, _ = triangular(g, x, dim, float("-inf"))
    m = row_extreme(g, masked, True, float("-inf"))
    finite = g.op("Less", g.op("Abs", m), g.const(float("inf"), like=m))
    m = g.op("Where", finite, m, g.const(0.0, like=m))
    shifted = g.op("Exp", g.op("Sub", masked, m))
    shifted.shape = masked.shape
    out = g.op("Add", g.op("Log", axis_sum(g, shifted, -1, keepdim=True)), m)
    return cast(g, restore(g, out, x, perm), self.dtype)


def cumprod(g: GraphBuilder, self: Value, dim: int, dtype) -> Value:
    x = cast(g, self, sum_dtype(self, dtype))
    if x.rank == 0:
        return x
    masked, perm, _, _ = triangular(g, x, dim, 1)
    axis = masked.rank - 1
    prod = g.reduce("ReduceProd", masked, [axis], True)
    return restore(g, prod, self, perm)


@register("aten::cumprod.default")
def aten_cumprod(g, self, dim, *, dtype=None):
    """cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    return cumprod(g, self, dim, dtype)


# -- searching ---------------------------------------------------------------------------------------------------


def count_below(g: GraphBuilder, seq: Value, values: Value, right: bool, out_int32: bool) -> Value:
    """For each value, how many entries of the sorted seq lie below it (right: at or below)."""
    if seq.dtype != values.dtype:
        common = torch.promote_types(seq.dtype, values.dtype)
        seq, values = cast(g, seq, common), cast(g, values, common)
    if not (values.is_static and seq.is_static):
        return count_below_symbolic(g, seq, values, right, out_int32)
    v_shape = static_shape(values, "searchsorted")
    n = static_shape(seq, "searchsorted")[-1]
    if seq.rank == 1:
        v = reshape(g, values, v_shape + [1])
        s = seq
        shape = tuple(v_shape) + (n,)
    else:
        v = reshape(g, values, v_shape + [1])
        s = reshape(g, seq, list(seq.shape[:-1]) + [1, n])
        shape = tuple(v_shape) + (n,)
    below = g.op("Not", g.op("Less", v, s)) if right else g.op("Greater", v, s)
    counts = cast(g, below, torch.float32 if n < 2**24 else torch.float64)
    counts.shape = shape
    out = axis_sum(g, counts, -1, keepdim=False)
    return cast(g, out, torch.int32 if out_int32 else torch.int64)


def count_below_symbolic(g: GraphBuilder, seq: Value, values: Value, right: bool, out_int32: bool) -> Value:
    """count_below for symbolic sizes: values [..., m, 1] against seq [n] or [..., 1, n], the comparisons
    counted in int64 by a ReduceSum over the last axis (of a length read from the graph)."""
    if values.rank is None or seq.rank is None:
        raise NotImplementedError("searchsorted needs its inputs' ranks")
    v = g.unsqueeze(values, [values.rank])
    s = seq if seq.rank == 1 else g.unsqueeze(seq, [seq.rank - 1])
    below = g.op("Not", g.op("Less", v, s)) if right else g.op("Greater", v, s)
    counts = g.reduce("ReduceSum", cast(g, below, torch.int64), [values.rank], False)
    return cast(g, counts, torch.int32 if out_int32 else torch.int64)


@register("aten::searchsorted.Tensor")
def aten_searchsorted(g, sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
    """searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor"""
    if sorter is not None:
        sorted_sequence = g.gather_elements(sorted_sequence, sorter, axis=sorted_sequence.rank - 1)
        sorted_sequence.shape = sorter.shape
    return count_below(g, sorted_sequence, self, right or side == "right", out_int32)


@register("aten::bucketize.Tensor")
def aten_bucketize(g, self, boundaries, *, out_int32=False, right=False):
    """bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor"""
    return count_below(g, boundaries, self, right, out_int32)
