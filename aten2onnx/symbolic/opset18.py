"""Opset 18: all Reduce* ops take axes as an input; Bitwise* ops arrive (BitwiseXor too)."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.symbolic import opset9_reduce as reduction
from aten2onnx.symbolic import opset9_special as special
from aten2onnx.symbolic import opset11_sort as sort11
from aten2onnx.symbolic._helpers import AXES18
from aten2onnx.symbolic._helpers import cast, norm_dim, norm_dims, promote, reduce

register = functools.partial(registry.register, opset=18)


@register("aten::mean.dim")
def aten_mean_dim(g, self, dim, keepdim=False, *, dtype=None):
    """mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    x = self if dtype is None else cast(g, self, dtype)
    return reduce(g, "ReduceMean", x, norm_dims(dim or [], self.rank), keepdim, axes_as_input=True)


@register("aten::mean.default")
def aten_mean(g, self, *, dtype=None):
    """mean(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return aten_mean_dim(g, self, None, False, dtype=dtype)


@register("aten::amax.default")
def aten_amax(g, self, dim=[], keepdim=False):
    """amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"""
    return reduce(g, "ReduceMax", self, norm_dims(dim, self.rank), keepdim, axes_as_input=True)


@register("aten::amin.default")
def aten_amin(g, self, dim=[], keepdim=False):
    """amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"""
    return reduce(g, "ReduceMin", self, norm_dims(dim, self.rank), keepdim, axes_as_input=True)


@register("aten::max.dim")
def aten_max_dim(g, self, dim, keepdim=False):
    """max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    dim = norm_dim(dim, self.rank)
    values = reduce(g, "ReduceMax", self, [dim], keepdim, axes_as_input=True)
    return values, g.op("ArgMax", self, axis=dim, keepdims=int(keepdim))


def bitwise(g, bool_op: str, int_op: str, self, other):
    self, other = promote(g, self, other)
    return g.op(bool_op if self.dtype == torch.bool else int_op, self, other)


@register("aten::__and__.Tensor", "aten::__and__.Scalar", "aten::bitwise_and.Tensor", "aten::bitwise_and.Scalar",
          "aten::bitwise_and.Scalar_Tensor")
def aten_bitwise_and(g, self, other):
    """bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "And", "BitwiseAnd", self, other)


@register("aten::__or__.Tensor", "aten::__or__.Scalar", "aten::bitwise_or.Tensor", "aten::bitwise_or.Scalar",
          "aten::bitwise_or.Scalar_Tensor")
def aten_bitwise_or(g, self, other):
    """bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Or", "BitwiseOr", self, other)


@register("aten::bitwise_not.default")
def aten_bitwise_not(g, self):
    """bitwise_not(Tensor self) -> Tensor"""
    return g.op("Not" if self.dtype == torch.bool else "BitwiseNot", self)


# -- reductions of opset9_reduce, with axes as inputs --------------------------------------------------


@register("aten::var.correction")
def aten_var_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return reduction.var(g, self, dim, correction, keepdim, mode=AXES18)


@register("aten::var.dim")
def aten_var_dim(g, self, dim, unbiased=True, keepdim=False):
    """var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return reduction.var(g, self, dim, int(unbiased), keepdim, mode=AXES18)


@register("aten::var.default")
def aten_var(g, self, unbiased=True):
    """var(Tensor self, bool unbiased=True) -> Tensor"""
    return reduction.var(g, self, None, int(unbiased), False, mode=AXES18)


@register("aten::std.correction")
def aten_std_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return reduction.std(g, self, dim, correction, keepdim, mode=AXES18)


@register("aten::std.dim")
def aten_std_dim(g, self, dim, unbiased=True, keepdim=False):
    """std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return reduction.std(g, self, dim, int(unbiased), keepdim, mode=AXES18)


@register("aten::std.default")
def aten_std(g, self, unbiased=True):
    """std(Tensor self, bool unbiased=True) -> Tensor"""
    return reduction.std(g, self, None, int(unbiased), False, mode=AXES18)


@register("aten::var_mean.correction")
def aten_var_mean_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    return reduction.var_mean(g, self, dim, correction, keepdim, mode=AXES18)


@register("aten::var_mean.dim")
def aten_var_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    return reduction.var_mean(g, self, dim, int(unbiased), keepdim, mode=AXES18)


@register("aten::var_mean.default")
def aten_var_mean(g, self, unbiased=True):
    """var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    return reduction.var_mean(g, self, None, int(unbiased), False, mode=AXES18)


@register("aten::std_mean.correction")
def aten_std_mean_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    return reduction.std_mean(g, self, dim, correction, keepdim, mode=AXES18)


@register("aten::std_mean.dim")
def aten_std_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    return reduction.std_mean(g, self, dim, int(unbiased), keepdim, mode=AXES18)


@register("aten::std_mean.default")
def aten_std_mean(g, self, unbiased=True):
    """std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    return reduction.std_mean(g, self, None, int(unbiased), False, mode=AXES18)


@register("aten::prod.default")
def aten_prod(g, self, *, dtype=None):
    """prod(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return reduction.prod(g, self, None, False, dtype, mode=AXES18)


@register("aten::prod.dim_int")
def aten_prod_dim(g, self, dim, keepdim=False, *, dtype=None):
    """prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return reduction.prod(g, self, dim, keepdim, dtype, mode=AXES18)


@register("aten::any.default")
def aten_any(g, self):
    """any(Tensor self) -> Tensor"""
    return reduction.any_all(g, self, None, False, all_=False, mode=AXES18)


@register("aten::any.dim")
def aten_any_dim(g, self, dim, keepdim=False):
    """any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"""
    return reduction.any_all(g, self, dim, keepdim, all_=False, mode=AXES18)


@register("aten::any.dims")
def aten_any_dims(g, self, dim=None, keepdim=False):
    """any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"""
    return reduction.any_all(g, self, dim, keepdim, all_=False, mode=AXES18)


@register("aten::all.default")
def aten_all(g, self):
    """all(Tensor self) -> Tensor"""
    return reduction.any_all(g, self, None, False, all_=True, mode=AXES18)


@register("aten::all.dim")
def aten_all_dim(g, self, dim, keepdim=False):
    """all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"""
    return reduction.any_all(g, self, dim, keepdim, all_=True, mode=AXES18)


@register("aten::all.dims")
def aten_all_dims(g, self, dim=None, keepdim=False):
    """all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"""
    return reduction.any_all(g, self, dim, keepdim, all_=True, mode=AXES18)


@register("aten::max.default")
def aten_max(g, self):
    """max(Tensor self) -> Tensor"""
    return reduction.extreme(g, self, "ReduceMax", mode=AXES18)


@register("aten::min.default")
def aten_min(g, self):
    """min(Tensor self) -> Tensor"""
    return reduction.extreme(g, self, "ReduceMin", mode=AXES18)


@register("aten::min.dim")
def aten_min_dim(g, self, dim, keepdim=False):
    """min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    return reduction.min_max_dim(g, self, dim, keepdim, "ReduceMin", "ArgMin", mode=AXES18)


@register("aten::aminmax.default")
def aten_aminmax(g, self, *, dim=None, keepdim=False):
    """aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)"""
    return reduction.aminmax(g, self, dim, keepdim, mode=AXES18)


@register("aten::logsumexp.default")
def aten_logsumexp(g, self, dim, keepdim=False):
    """logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor"""
    return reduction.logsumexp(g, self, dim, keepdim, mode=AXES18)


@register("aten::linalg_vector_norm.default")
def aten_linalg_vector_norm(g, self, ord=2, dim=None, keepdim=False, *, dtype=None):
    """linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return reduction.vector_norm(g, self, ord, dim, keepdim, dtype, mode=AXES18)


@register("aten::nansum.default")
def aten_nansum(g, self, dim=None, keepdim=False, *, dtype=None):
    """nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return reduction.nansum(g, self, dim, keepdim, dtype, mode=AXES18)


@register("aten::nanmean.default")
def aten_nanmean(g, self, dim=None, keepdim=False, *, dtype=None):
    """nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return reduction.nanmean(g, self, dim, keepdim, dtype, mode=AXES18)


@register("aten::count_nonzero.default")
def aten_count_nonzero(g, self, dim=None):
    """count_nonzero(Tensor self, int? dim=None) -> Tensor"""
    return reduction.count_nonzero(g, self, dim, mode=AXES18)


@register("aten::count_nonzero.dim_IntList")
def aten_count_nonzero_dims(g, self, dim):
    """count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor"""
    return reduction.count_nonzero(g, self, list(dim), mode=AXES18)


@register("aten::__xor__.Tensor", "aten::__xor__.Scalar", "aten::bitwise_xor.Tensor", "aten::bitwise_xor.Scalar",
          "aten::bitwise_xor.Scalar_Tensor")
def aten_bitwise_xor(g, self, other):
    """__xor__.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Xor", "BitwiseXor", self, other)


@register("aten::cumprod.default")
def aten_cumprod(g, self, dim, *, dtype=None):
    """cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    return sort11.cumprod(g, self, dim, dtype, axes_as_input=True)


@register("aten::dist.default")
def aten_dist(g, self, other, p=2):
    """dist(Tensor self, Tensor other, Scalar p=2) -> Tensor"""
    return special.dist(g, self, other, p, mode=AXES18)


@register("aten::cdist.default")
def aten_cdist(g, x1, x2, p=2.0, compute_mode=None):
    """cdist(Tensor x1, Tensor x2, float p=2., int? compute_mode=None) -> Tensor"""
    return special.cdist(g, x1, x2, p, mode=AXES18)


@register("aten::_cdist_forward.default")
def aten__cdist_forward(g, x1, x2, p, compute_mode):
    """_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor"""
    return special.cdist(g, x1, x2, p, mode=AXES18)


@register("aten::pdist.default", "aten::_pdist_forward.default")
def aten_pdist(g, self, p=2.0):
    """pdist(Tensor self, float p=2.) -> Tensor"""
    return special.pdist(g, self, p, mode=AXES18)
