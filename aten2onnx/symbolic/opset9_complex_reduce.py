"""Opset-9 complex reductions on carriers (see opset9_complex.py): sum, mean, prod, cumsum, var/std,
vector norms and distances."""

from __future__ import annotations

import functools

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._carrier import (
    _shaped,
    convert,
    dtype_of,
    join,
    on_carrier,
    rank_of,
    real_symbolic,
    split,
    tagged,
)
from aten2onnx.symbolic._complex_math import complex_abs, hypot, log_abs
from aten2onnx.symbolic._helpers import cast, scalar_type
from aten2onnx.symbolic.opset9_complex_math import aten_add, aten_sub
from aten2onnx.symbolic.opset9_math import atan2

register = functools.partial(registry.register, opset=9, complex=True)


# -- reductions --------------------------------------------------------------------------------------------


def _axes(dim, rank: int) -> list[int]:
    """Reduction dims of a complex tensor as carrier axes; None or [] is every dim."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return list(range(rank))
    return cx.dims([dim] if isinstance(dim, int) else dim, rank)


def _reduce(g: GraphBuilder, key: str, self: Value, dim, keepdim: bool, dtype) -> Value:
    """A linear reduction (sum, mean) of the carrier over the complex tensor's dims."""
    x = convert(g, self, dtype)
    rank = rank_of(self)
    if rank == 0:
        return x
    return on_carrier(g, key, x, _axes(dim, rank), keepdim)


@register("aten::sum.dim_IntList")
def aten_sum_dim(g, self, dim, keepdim=False, *, dtype=None):
    """sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(g, "aten::sum.dim_IntList", self, dim, keepdim, dtype)


@register("aten::sum.default")
def aten_sum(g, self, *, dtype=None):
    """sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(g, "aten::sum.dim_IntList", self, None, False, dtype)


@register("aten::mean.dim")
def aten_mean_dim(g, self, dim, keepdim=False, *, dtype=None):
    """mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(g, "aten::mean.dim", self, dim, keepdim, dtype)


@register("aten::mean.default")
def aten_mean(g, self, *, dtype=None):
    """mean(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(g, "aten::mean.dim", self, None, False, dtype)


def _prod(g: GraphBuilder, self: Value, dim, keepdim: bool, dtype) -> Value:
    """The product as exp(sum log|z|) at angle sum(arg z), in float64 (a zero factor gives 0)."""
    dtype = scalar_type(dtype) or dtype_of(self)
    rank = rank_of(self)
    if rank == 0:
        return convert(g, self, dtype)
    re, im = split(g, self, torch.float64)
    shape = cx.logical_shape(self)
    log_r = _shaped(log_abs(g, re, im), shape)
    theta = _shaped(atan2(g, im, re), shape)
    total = real_symbolic(g, "aten::sum.dim_IntList")
    axes = _axes(dim, rank)
    r = g.op("Exp", total(g, log_r, axes, keepdim))
    theta = total(g, theta, axes, keepdim)
    real = _dtypes.real_part(dtype)
    return join(g, cast(g, g.op("Mul", r, g.op("Cos", theta)), real), cast(g, g.op("Mul", r, g.op("Sin", theta)), real))


@register("aten::prod.default")
def aten_prod(g, self, *, dtype=None):
    """prod(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return _prod(g, self, None, False, dtype)


@register("aten::prod.dim_int")
def aten_prod_dim(g, self, dim, keepdim=False, *, dtype=None):
    """prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return _prod(g, self, dim, keepdim, dtype)


@register("aten::cumsum.default")
def aten_cumsum(g, self, dim, *, dtype=None):
    """cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    x = convert(g, self, dtype)
    rank = rank_of(self)
    return x if rank == 0 else on_carrier(g, "aten::cumsum.default", x, cx.dim(dim, rank))


def _var_mean(g: GraphBuilder, self: Value, dim, correction, keepdim: bool) -> tuple[Value, Value]:
    """(variance, mean): the real var of each part over the complex dims, summed (E|z - mean|^2)."""
    rank = rank_of(self)
    x = self
    if rank == 0:  # one element: reduce over a dim of 1
        x = _shaped(g.op("Reshape", self, g.const([1, 2], dtype=torch.int64)), (1, 2))
        rank, dim, keepdim = 1, None, False
    var, mean = on_carrier(g, "aten::var_mean.correction", x, _axes(dim, rank), correction=correction,
                           keepdim=keepdim)
    return g.op("Add", cx.component(g, var, 0), cx.component(g, var, 1)), mean


@register("aten::var.correction")
def aten_var(g, self, dim=None, *, correction=None, keepdim=False):
    """var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return _var_mean(g, self, dim, correction, keepdim)[0]


@register("aten::std.correction")
def aten_std(g, self, dim=None, *, correction=None, keepdim=False):
    """std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return g.op("Sqrt", _var_mean(g, self, dim, correction, keepdim)[0])


@register("aten::var_mean.correction")
def aten_var_mean(g, self, dim=None, *, correction=None, keepdim=False):
    """var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    return _var_mean(g, self, dim, correction, keepdim)


@register("aten::std_mean.correction")
def aten_std_mean(g, self, dim=None, *, correction=None, keepdim=False):
    """std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    var, mean = _var_mean(g, self, dim, correction, keepdim)
    return g.op("Sqrt", var), mean


@register("aten::var.dim")
def aten_var_dim(g, self, dim, unbiased=True, keepdim=False):
    """var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return _var_mean(g, self, dim, int(unbiased), keepdim)[0]


@register("aten::std.dim")
def aten_std_dim(g, self, dim, unbiased=True, keepdim=False):
    """std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return g.op("Sqrt", _var_mean(g, self, dim, int(unbiased), keepdim)[0])


@register("aten::var_mean.dim")
def aten_var_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    return _var_mean(g, self, dim, int(unbiased), keepdim)


@register("aten::std_mean.dim")
def aten_std_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    var, mean = _var_mean(g, self, dim, int(unbiased), keepdim)
    return g.op("Sqrt", var), mean


@register("aten::linalg_vector_norm.default")
def aten_linalg_vector_norm(g, self, ord=2, dim=None, keepdim=False, *, dtype=None):
    """linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    dtype = scalar_type(dtype)
    magnitude = complex_abs(g, self, None if dtype is None else _dtypes.real_part(dtype))
    return on_carrier(g, "aten::linalg_vector_norm.default", magnitude, ord, dim, keepdim)


# -- distances, and var/std over all elements --------------------------------------------------------------


def _distance(g: GraphBuilder, a, b, eps: float = 0.0) -> Value:
    """|a - b + eps| as a real tensor of the broadcast shape."""
    diff = tagged(g, aten_sub(g, a, b))
    if eps:
        diff = tagged(g, aten_add(g, diff, eps))
    shape = None
    if a.is_static and b.is_static:
        shape = tuple(torch.broadcast_shapes(cx.logical_shape(a), cx.logical_shape(b)))
    return _shaped(hypot(g, cx.component(g, diff, 0), cx.component(g, diff, 1)), shape)


@register("aten::dist.default")
def aten_dist(g, self, other, p=2):
    """dist(Tensor self, Tensor other, Scalar p=2) -> Tensor"""
    d = _distance(g, self, other)
    rank = max(rank_of(self), rank_of(other))
    return on_carrier(g, "aten::linalg_vector_norm.default", d, p, list(range(rank)) or None, False)


@register("aten::l1_loss.default")
def aten_l1_loss(g, self, target, reduction=1):
    """l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor"""
    d = _distance(g, self, target)
    if reduction == 0:
        return d
    return on_carrier(g, "aten::mean.default" if reduction == 1 else "aten::sum.default", d)


@register("aten::pairwise_distance.default")
def aten_pairwise_distance(g, x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """pairwise_distance(Tensor x1, Tensor x2, float p=2., float eps=9.9999999999999995e-07, bool keepdim=False) -> Tensor"""
    d = _distance(g, x1, x2, eps)
    rank = max(rank_of(x1), rank_of(x2))
    return on_carrier(g, "aten::linalg_vector_norm.default", d, p, [rank - 1], keepdim)


@register("aten::var.default")
def aten_var_default(g, self, unbiased=True):
    """var(Tensor self, bool unbiased=True) -> Tensor"""
    return _var_mean(g, self, None, int(unbiased), False)[0]


@register("aten::std.default")
def aten_std_default(g, self, unbiased=True):
    """std(Tensor self, bool unbiased=True) -> Tensor"""
    return g.op("Sqrt", _var_mean(g, self, None, int(unbiased), False)[0])


@register("aten::var_mean.default")
def aten_var_mean_default(g, self, unbiased=True):
    """var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    return _var_mean(g, self, None, int(unbiased), False)


@register("aten::std_mean.default")
def aten_std_mean_default(g, self, unbiased=True):
    """std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    var, mean = _var_mean(g, self, None, int(unbiased), False)
    return g.op("Sqrt", var), mean
