"""Opset 10, pooling beyond the 2-D basics: 1-D and 3-D max pools, max pooling with indices, average
pooling with AveragePool's ceil_mode (opset9_spatial builds ceil_mode from padding below 10);
registered at 10, where MaxPool and AveragePool gain ceil_mode."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic.opset9_spatial import avg_pool, batched, conv, expand, pool_args

register = functools.partial(registry.register, opset=10)


@register("aten::avg_pool1d.default")
def aten_avg_pool1d(g, self, kernel_size, stride=[], padding=[0], ceil_mode=False, count_include_pad=True):
    """avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor"""
    return avg_pool(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, has_ceil=True)


@register("aten::avg_pool2d.default")
def aten_avg_pool2d(g, self, kernel_size, stride=[], padding=[0, 0], ceil_mode=False, count_include_pad=True,
                    divisor_override=None):
    """avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"""
    return avg_pool(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                    has_ceil=True)


@register("aten::avg_pool3d.default")
def aten_avg_pool3d(g, self, kernel_size, stride=[], padding=[0, 0, 0], ceil_mode=False, count_include_pad=True,
                    divisor_override=None):
    """avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"""
    return avg_pool(g, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3,
                    has_ceil=True)


def max_pool(g: GraphBuilder, x: Value, kernel_size, stride, padding, dilation, ceil_mode, spatial: int, *,
             indices: bool):
    """MaxPool; with indices, ONNX's (which count over the whole tensor) made torch's (per plane)."""
    kernel, strides, pads = pool_args(kernel_size, stride, expand(padding, spatial), spatial)
    dilations = expand(dilation, spatial)

    def pool(b: Value):
        if not indices:
            return g.op("MaxPool", b, kernel_shape=kernel, strides=strides, pads=pads, dilations=dilations,
                        ceil_mode=int(ceil_mode))
        if not b.is_static:
            raise NotImplementedError("max pooling with indices is exported for static shapes only")
        y, idx = g.op("MaxPool", b, outputs=2, kernel_shape=kernel, strides=strides, pads=pads,
                      dilations=dilations, ceil_mode=int(ceil_mode))
        n, c = b.shape[:2]
        plane = math.prod(b.shape[2:])
        offsets = (torch.arange(n * c, dtype=torch.int64) * plane).reshape([n, c] + [1] * spatial)
        return y, g.op("Sub", idx, g.const(offsets))

    return batched(g, x, spatial, pool)


@register("aten::max_pool1d.default")
def aten_max_pool1d(g, self, kernel_size, stride=[], padding=[0], dilation=[1], ceil_mode=False):
    """max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> Tensor"""
    return max_pool(g, self, kernel_size, stride, padding, dilation, ceil_mode, 1, indices=False)


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
