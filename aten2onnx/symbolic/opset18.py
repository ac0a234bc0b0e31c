"""Opset 18: ReduceMean/Max/Min take axes as an input; Bitwise* ops arrive."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
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


@register("aten::__and__.Tensor", "aten::bitwise_and.Tensor", "aten::bitwise_and.Scalar")
def aten_bitwise_and(g, self, other):
    """bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "And", "BitwiseAnd", self, other)


@register("aten::__or__.Tensor", "aten::bitwise_or.Tensor", "aten::bitwise_or.Scalar")
def aten_bitwise_or(g, self, other):
    """bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Or", "BitwiseOr", self, other)


@register("aten::bitwise_not.default")
def aten_bitwise_not(g, self):
    """bitwise_not(Tensor self) -> Tensor"""
    return g.op("Not" if self.dtype == torch.bool else "BitwiseNot", self)
