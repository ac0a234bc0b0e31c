"""Order statistics by sorting smallest first with TopK (g.topk: from opset 11) and picking with GatherElements
(from 11): quantile and nanquantile with every interpolation mode, nanmedian with the index torch returns."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx._torch_compat import quantile_rank_dtype
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, norm_dim, reshape
from aten2onnx.symbolic.opset9_norm import axis_sum, static_shape
from aten2onnx.symbolic.opset9_numeric import shaped, to_last
from aten2onnx.symbolic.opset9_sort import kth, topk

register = functools.partial(registry.register, opset=9)

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def rows_along(g: GraphBuilder, self: Value, dim) -> tuple[Value, list[int]]:
    """self as [*batch, n] with the reduced dim last (all of self flattened when dim is None), and the
    shape keepdim gives."""
    shape = static_shape(self, "quantile")
    if dim is None or self.rank == 0:
        return reshape(g, self, [math.prod(shape)]), [1] * len(shape)
    dim = norm_dim(dim, len(shape))
    moved, _ = to_last(g, self, dim)
    return moved, [1 if d == dim else s for d, s in enumerate(shape)]


def ascending(g: GraphBuilder, x: Value, nan: Value) -> Value:
    """x sorted along its last axis with NaNs (as +inf) last: the values, for quantiles."""
    keys = g.op("Where", nan, g.const(math.inf, like=x), x)
    return shaped(topk(g, keys, static_shape(x, "sort")[-1], x.rank - 1, False)[0], x.shape)


def lerp(g: GraphBuilder, low: Value, high: Value, weight: Value) -> Value:
    """torch's lerp: from the nearer end, so weight 0 and 1 give the ends exactly."""
    diff = g.op("Sub", high, low)
    one = g.const(1.0, like=weight)
    return g.op("Where", g.op("Less", weight, g.const(0.5, like=weight)), g.op("Add", low, g.op("Mul", weight, diff)),
                g.op("Sub", high, g.op("Mul", diff, g.op("Sub", one, weight))))


def quantile(g: GraphBuilder, self: Value, q, dim, keepdim: bool, interpolation: str, *, ignore_nan: bool) -> Value:
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"quantile of {self.dtype} is not supported")
    if interpolation not in INTERPOLATIONS:
        raise NotImplementedError(f"quantile interpolation {interpolation!r} is not supported")
    x, kept = rows_along(g, self, dim)
    shape = static_shape(x, "quantile")
    batch, n = shape[:-1], shape[-1]
    if n == 0:
        raise NotImplementedError("quantile of an empty tensor is an error")
    out_shape = kept if keepdim else ([] if dim is None else batch)
    one_q = not isinstance(q, Value) or q.rank == 0
    # q in the input's dtype, then the ranks and weights in the dtype the running torch computes them in
    rank_dtype = quantile_rank_dtype(x.dtype)
    qs = g.const([q], dtype=x.dtype) if not isinstance(q, Value) else reshape(g, cast(g, q, x.dtype), [-1])
    qs = cast(g, qs, rank_dtype)
    nan = shaped(g.op("IsNaN", x), shape)
    ordered = ascending(g, x, nan)
    zero = g.const(0.0, like=qs)
    if ignore_nan:
        # ranks over the non-NaN values; none at all gives NaN
        count = axis_sum(g, shaped(cast(g, g.op("Not", nan), rank_dtype), shape), -1, keepdim=True)
        ranks = g.op("Mul", qs, g.op("Sub", count, g.const(1.0, like=qs)))
        ranks = g.op("Where", g.op("Less", ranks, zero), zero, ranks)
        undefined = g.op("Less", count, g.const(0.5, like=qs))
    else:
        # any NaN makes the quantile NaN
        nans = axis_sum(g, shaped(cast(g, nan, rank_dtype), shape), -1, keepdim=True)
        undefined = g.op("Greater", nans, zero)
        ranks = g.op("Add", g.op("Mul", qs, g.const(float(n - 1), like=qs)), g.op("Mul", nans, zero))
    if interpolation in ("lower", "higher", "nearest"):
        ranks = g.round(ranks) if interpolation == "nearest" else g.op({"lower": "Floor", "higher": "Ceil"}[interpolation], ranks)
    below = cast(g, ranks, torch.int64)
    out = g.gather_elements(ordered, below, axis=len(shape) - 1)
    if interpolation in ("linear", "midpoint"):
        weight = g.op("Sub", ranks, cast(g, below, rank_dtype)) if interpolation == "linear" else \
            g.op("Add", g.op("Mul", ranks, zero), g.const(0.5, like=qs))
        weight = cast(g, weight, x.dtype)
        above = g.gather_elements(ordered, cast(g, g.op("Ceil", ranks), torch.int64), axis=len(shape) - 1)
        out = lerp(g, out, above, weight)
    out = g.op("Where", undefined, g.const(math.nan, like=x), out)  # [*batch, Q]
    if one_q:
        return reshape(g, out, out_shape)
    count_q = static_shape(q, "quantile")[0]
    if batch:
        out = g.op("Transpose", reshape(g, out, batch + [count_q]), perm=[len(batch)] + list(range(len(batch))))
    return reshape(g, out, [count_q] + out_shape)


@register("aten::quantile.default")
def aten_quantile(g, self, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor"""
    return quantile(g, self, q, dim, keepdim, interpolation, ignore_nan=False)


@register("aten::quantile.scalar")
def aten_quantile_scalar(g, self, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor"""
    return quantile(g, self, q, dim, keepdim, interpolation, ignore_nan=False)


@register("aten::nanquantile.default")
def aten_nanquantile(g, self, q, dim=None, keepdim=False, *, interpolation="linear"):
    """nanquantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor"""
    return quantile(g, self, q, dim, keepdim, interpolation, ignore_nan=True)


@register("aten::nanquantile.scalar")
def aten_nanquantile_scalar(g, self, q, dim=None, keepdim=False, *, interpolation="linear"):
    """nanquantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor"""
    return quantile(g, self, q, dim, keepdim, interpolation, ignore_nan=True)


# -- nanmedian: the lower median of the non-NaN values ----------------------------------------------------------


def nan_median(g: GraphBuilder, x: Value) -> tuple[Value, Value]:
    """Over the last axis of a float [*batch, n]: the ((k - 1) // 2)-th smallest of the k non-NaN values and
    its index, kept as [*batch, 1]. As torch orders them: ties by index, NaNs after +inf; in an all-NaN row
    the index eager's selection leaves, which depends on n only (and is found by running eager on NaNs)."""
    shape = static_shape(x, "nanmedian")
    n, last = shape[-1], len(shape) - 1
    nan = shaped(g.op("IsNaN", x), shape)
    keys = cast(g, g.op("Where", nan, g.const(math.inf, like=x), x), torch.float64 if x.dtype == torch.float64
                else torch.float32)
    # a second stable sort by NaN-ness puts NaNs after the +inf they were sorted as
    _, order = topk(g, keys, n, last, False)
    flags = g.gather_elements(cast(g, nan, torch.float32), shaped(order, shape), axis=last)
    _, regroup = topk(g, flags, n, last, False)
    order = g.gather_elements(order, shaped(regroup, shape), axis=last)
    count = axis_sum(g, shaped(cast(g, g.op("Not", nan), torch.float32), shape), -1, keepdim=True)
    middle = g.op("Floor", g.op("Div", g.op("Max", g.op("Sub", count, g.const(1.0, dtype=torch.float32)),
                                            g.const(0.0, dtype=torch.float32)), g.const(2.0, dtype=torch.float32)))
    index = g.gather_elements(order, shaped(cast(g, middle, torch.int64), [*shape[:-1], 1]), axis=last)
    all_nan = int(torch.nanmedian(torch.full((n,), math.nan), 0).indices)
    index = g.op("Where", g.op("Less", count, g.const(0.5, dtype=torch.float32)), g.const(all_nan, dtype=torch.int64),
                 index)
    return g.gather_elements(x, index, axis=last), index


@register("aten::nanmedian.dim")
def aten_nanmedian_dim(g, self, dim, keepdim=False):
    """nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    if self.rank == 0:
        return self, g.const(0, dtype=torch.int64)
    shape = static_shape(self, "nanmedian")
    dim = norm_dim(dim, len(shape))
    if not self.dtype.is_floating_point:  # no NaNs: the median
        return kth(g, self, (shape[dim] - 1) // 2 + 1, dim, keepdim)
    value, index = nan_median(g, to_last(g, self, dim)[0])
    out = [1 if d == dim else s for d, s in enumerate(shape)] if keepdim else shape[:dim] + shape[dim + 1:]
    return reshape(g, value, out), reshape(g, index, out)


@register("aten::nanmedian.default")
def aten_nanmedian(g, self):
    """nanmedian(Tensor self) -> Tensor"""
    n = math.prod(static_shape(self, "nanmedian"))
    if n == 0:
        if not self.dtype.is_floating_point:
            raise NotImplementedError("the median of an empty integer tensor is an error")
        return g.const(math.nan, dtype=self.dtype)
    flat = reshape(g, self, [n])
    if not self.dtype.is_floating_point:
        return kth(g, flat, (n - 1) // 2 + 1, 0, False)[0]
    return reshape(g, nan_median(g, flat)[0], [])
