"""Opset 16, data family: ScatterElements adds (reduction="add"), so counts and accumulating writes scatter
their values instead of summing a one-hot mask (bincount, histograms, put, max-pool backward, masked
index_put), and masked index_put reaches any dims through ScatterND."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import cast
from aten2onnx.symbolic.opset9_data import accumulator, clamped_indices, max_pool_backward, put, static
from aten2onnx.symbolic.opset9_histogram import bincount, histc, histogram, histogramdd
from aten2onnx.symbolic.opset9_segments import embedding_renorm
from aten2onnx.symbolic.opset11_scatter import index_put

register = functools.partial(registry.register, opset=16)


@register("aten::bincount.default")
def aten_bincount(g, self, weights=None, minlength=0):
    """bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor"""
    return bincount(g, self, weights, minlength, scatter_add=True)


@register("aten::histc.default")
def aten_histc(g, self, bins=100, min=0, max=0):
    """histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor"""
    return histc(g, self, bins, min, max, scatter_add=True)


@register("aten::histogram.bin_ct")
def aten_histogram_bin_ct(g, self, bins=100, *, range=None, weight=None, density=False):
    """histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)"""
    return histogram(g, self, bins, range, weight, density, scatter_add=True)


@register("aten::histogram.bins_tensor")
def aten_histogram_bins_tensor(g, self, bins, *, weight=None, density=False):
    """histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)"""
    return histogram(g, self, bins, None, weight, density, scatter_add=True)


@register("aten::histogramdd.default")
def aten_histogramdd(g, self, bins, range=None, weight=None, density=False):
    """histogramdd(Tensor self, int[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)"""
    return histogramdd(g, self, list(bins), range, weight, density, scatter_add=True)


@register("aten::histogramdd.int_bins")
def aten_histogramdd_int_bins(g, self, bins, range=None, weight=None, density=False):
    """histogramdd.int_bins(Tensor self, int bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)"""
    return histogramdd(g, self, [bins] * static(self, "histogramdd")[-1], range, weight, density, scatter_add=True)


@register("aten::histogramdd.TensorList_bins")
def aten_histogramdd_tensorlist_bins(g, self, bins, range=None, weight=None, density=False):
    """histogramdd.TensorList_bins(Tensor self, Tensor[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)"""
    return histogramdd(g, self, list(bins), range, weight, density, scatter_add=True)


@register("aten::put.default")
def aten_put(g, self, index, source, accumulate=False):
    """put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor"""
    return put(g, self, index, source, accumulate, scatter_add=True)


@register("aten::max_pool2d_with_indices_backward.default")
def aten_max_pool2d_with_indices_backward(g, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                                          indices):
    """max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor"""
    return max_pool_backward(g, grad_output, self, indices, 2, scatter_add=True)


@register("aten::max_pool3d_with_indices_backward.default")
def aten_max_pool3d_with_indices_backward(g, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                                          indices):
    """max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, int[3] padding, int[3] dilation, bool ceil_mode, Tensor indices) -> Tensor"""
    return max_pool_backward(g, grad_output, self, indices, 3, scatter_add=True)


@register("aten::_unsafe_masked_index_put_accumulate.default")
def aten__unsafe_masked_index_put_accumulate(g, self, mask, indices, values):
    """_unsafe_masked_index_put_accumulate(Tensor self, Tensor mask, Tensor?[] indices, Tensor values) -> Tensor"""
    shape = static(self, "_unsafe_masked_index_put_accumulate")
    if 0 in shape:
        return self
    total = accumulator(self.dtype)
    values = g.op("Where", mask, cast(g, cast(g, values, self.dtype), total), g.const(0, dtype=total))
    out = index_put(g, cast(g, self, total), clamped_indices(g, shape, list(indices)), values, reduction="add")
    return cast(g, out, self.dtype)


@register("aten::embedding_renorm.default")
def aten_embedding_renorm(g, self, indices, max_norm, norm_type):
    """embedding_renorm(Tensor self, Tensor indices, float max_norm, float norm_type) -> Tensor"""
    return embedding_renorm(g, self, indices, max_norm, norm_type, scatter_add=True)
