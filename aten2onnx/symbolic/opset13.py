"""Opset 13: Unsqueeze, Squeeze, Split and ReduceSum take axes (or sizes) as inputs (so every reduction
that sums is re-registered); Softmax and LogSoftmax work along any axis instead of flattening to 2-D."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.symbolic import opset9_reduce as reduction
from aten2onnx.symbolic import opset9_special as special
from aten2onnx.symbolic._helpers import AXES13
from aten2onnx.symbolic._helpers import cast, norm_dim, norm_dims, reduce, squeeze, unsqueeze
from aten2onnx.symbolic.opset9 import chunk_sizes, softmax, split_by_sizes, squeezable, static_dim, sum_dtype

register = functools.partial(registry.register, opset=13)


@register("aten::unsqueeze.default")
def aten_unsqueeze(g, self, dim):
    """unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"""
    return unsqueeze(g, self, [norm_dim(dim, self.rank + 1)], axes_as_input=True)


@register("aten::squeeze.dims")
def aten_squeeze_dims(g, self, dim):
    """squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)"""
    if self.rank == 0:
        return self
    axes = squeezable(self, norm_dims(dim, self.rank))
    return squeeze(g, self, axes, axes_as_input=True) if axes else self


@register("aten::squeeze.dim")
def aten_squeeze_dim(g, self, dim):
    """squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)"""
    return aten_squeeze_dims(g, self, [dim])


@register("aten::squeeze.default")
def aten_squeeze(g, self):
    """squeeze(Tensor(a) self) -> Tensor(a)"""
    return aten_squeeze_dims(g, self, list(range(self.rank)))


@register("aten::split.Tensor")
def aten_split(g, self, split_size, dim=0):
    """split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"""
    dim = norm_dim(dim, self.rank)
    return split_by_sizes(g, self, chunk_sizes(static_dim(self, dim, "split"), split_size), dim, sizes_as_input=True)


@register("aten::split_with_sizes.default")
def aten_split_with_sizes(g, self, split_sizes, dim=0):
    """split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]"""
    return split_by_sizes(g, self, list(split_sizes), norm_dim(dim, self.rank), sizes_as_input=True)


@register("aten::chunk.default")
def aten_chunk(g, self, chunks, dim=0):
    """chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"""
    dim = norm_dim(dim, self.rank)
    total = static_dim(self, dim, "chunk")
    return split_by_sizes(g, self, chunk_sizes(total, -(-total // chunks)), dim, sizes_as_input=True)


@register("aten::sum.dim_IntList")
def aten_sum_dim(g, self, dim, keepdim=False, *, dtype=None):
    """sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    x = cast(g, self, sum_dtype(self, dtype))
    return reduce(g, "ReduceSum", x, norm_dims(dim or [], self.rank), keepdim, axes_as_input=True)


@register("aten::sum.default")
def aten_sum(g, self, *, dtype=None):
    """sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return aten_sum_dim(g, self, None, False, dtype=dtype)


@register("aten::softmax.int")
def aten_softmax(g, self, dim, dtype=None):
    """softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self if dtype is None else cast(g, self, dtype)
    return softmax(g, "Softmax", x, dim, any_axis=True)


@register("aten::_softmax.default")
def aten__softmax(g, self, dim, half_to_float):
    """_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    x = cast(g, self, torch.float32) if half_to_float else self
    return softmax(g, "Softmax", x, dim, any_axis=True)


@register("aten::log_softmax.int")
def aten_log_softmax(g, self, dim, dtype=None):
    """log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self if dtype is None else cast(g, self, dtype)
    return softmax(g, "LogSoftmax", x, dim, any_axis=True)


@register("aten::_log_softmax.default")
def aten__log_softmax(g, self, dim, half_to_float):
    """_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    x = cast(g, self, torch.float32) if half_to_float else self
    return softmax(g, "LogSoftmax", x, dim, any_axis=True)


# -- reductions of opset9_reduce, with axes as inputs --------------------------------------------------


@register("aten::var.correction")
def aten_var_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return reduction.var(g, self, dim, correction, keepdim, mode=AXES13)


@register("aten::var.dim")
def aten_var_dim(g, self, dim, unbiased=True, keepdim=False):
    """var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return reduction.var(g, self, dim, int(unbiased), keepdim, mode=AXES13)


@register("aten::var.default")
def aten_var(g, self, unbiased=True):
    """var(Tensor self, bool unbiased=True) -> Tensor"""
    return reduction.var(g, self, None, int(unbiased), False, mode=AXES13)


@register("aten::std.correction")
def aten_std_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return reduction.std(g, self, dim, correction, keepdim, mode=AXES13)


@register("aten::std.dim")
def aten_std_dim(g, self, dim, unbiased=True, keepdim=False):
    """std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return reduction.std(g, self, dim, int(unbiased), keepdim, mode=AXES13)


@register("aten::std.default")
def aten_std(g, self, unbiased=True):
    """std(Tensor self, bool unbiased=True) -> Tensor"""
    return reduction.std(g, self, None, int(unbiased), False, mode=AXES13)


@register("aten::var_mean.correction")
def aten_var_mean_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    return reduction.var_mean(g, self, dim, correction, keepdim, mode=AXES13)


@register("aten::var_mean.dim")
def aten_var_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    return reduction.var_mean(g, self, dim, int(unbiased), keepdim, mode=AXES13)


@register("aten::var_mean.default")
def aten_var_mean(g, self, unbiased=True):
    """var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    return reduction.var_mean(g, self, None, int(unbiased), False, mode=AXES13)


@register("aten::std_mean.correction")
def aten_std_mean_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    return reduction.std_mean(g, self, dim, correction, keepdim, mode=AXES13)


@register("aten::std_mean.dim")
def aten_std_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    return reduction.std_mean(g, self, dim, int(unbiased), keepdim, mode=AXES13)


@register("aten::std_mean.default")
def aten_std_mean(g, self, unbiased=True):
    """std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    return reduction.std_mean(g, self, None, int(unbiased), False, mode=AXES13)


@register("aten::logsumexp.default")
def aten_logsumexp(g, self, dim, keepdim=False):
    """logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor"""
    return reduction.logsumexp(g, self, dim, keepdim, mode=AXES13)


@register("aten::linalg_vector_norm.default")
def aten_linalg_vector_norm(g, self, ord=2, dim=None, keepdim=False, *, dtype=None):
    """linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return reduction.vector_norm(g, self, ord, dim, keepdim, dtype, mode=AXES13)


@register("aten::nansum.default")
def aten_nansum(g, self, dim=None, keepdim=False, *, dtype=None):
    """nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return reduction.nansum(g, self, dim, keepdim, dtype, mode=AXES13)


@register("aten::nanmean.default")
def aten_nanmean(g, self, dim=None, keepdim=False, *, dtype=None):
    """nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return reduction.nanmean(g, self, dim, keepdim, dtype, mode=AXES13)


@register("aten::count_nonzero.default")
def aten_count_nonzero(g, self, dim=None):
    """count_nonzero(Tensor self, int? dim=None) -> Tensor"""
    return reduction.count_nonzero(g, self, dim, mode=AXES13)


@register("aten::count_nonzero.dim_IntList")
def aten_count_nonzero_dims(g, self, dim):
    """count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor"""
    return reduction.count_nonzero(g, self, list(dim), mode=AXES13)


@register("aten::isin.Tensor_Tensor")
def aten_isin(g, elements, test_elements, *, assume_unique=False, invert=False):
    """isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor"""
    return special.isin(g, elements, test_elements, invert, mode=AXES13)


@register("aten::sum_to_size.default")
def aten_sum_to_size(g, self, size):
    """sum_to_size(Tensor self, SymInt[] size) -> Tensor"""
    return special.sum_to_size(g, self, list(size), mode=AXES13)


@register("aten::_softmax_backward_data.default")
def aten__softmax_backward_data(g, grad_output, output, dim, input_dtype):
    """_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor"""
    return special.softmax_backward(g, grad_output, output, dim, input_dtype, mode=AXES13)


@register("aten::_safe_softmax.default")
def aten__safe_softmax(g, self, dim, dtype=None):
    """_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    return special.safe_softmax(g, self, dim, dtype, any_axis=True, mode=AXES13)


@register("aten::dist.default")
def aten_dist(g, self, other, p=2):
    """dist(Tensor self, Tensor other, Scalar p=2) -> Tensor"""
    return special.dist(g, self, other, p, mode=AXES13)


@register("aten::cdist.default")
def aten_cdist(g, x1, x2, p=2.0, compute_mode=None):
    """cdist(Tensor x1, Tensor x2, float p=2., int? compute_mode=None) -> Tensor"""
    return special.cdist(g, x1, x2, p, mode=AXES13)


@register("aten::_cdist_forward.default")
def aten__cdist_forward(g, x1, x2, p, compute_mode):
    """_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor"""
    return special.cdist(g, x1, x2, p, mode=AXES13)


@register("aten::pdist.default", "aten::_pdist_forward.default")
def aten_pdist(g, self, p=2.0):
    """pdist(Tensor self, float p=2.) -> Tensor"""
    return special.pdist(g, self, p, mode=AXES13)
