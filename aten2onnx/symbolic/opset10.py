"""Opset 10: Slice takes its bounds as inputs and gains steps (so flip); Mod arrives (fmod, remainder)."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.symbolic import opset9_math as math9
from aten2onnx.symbolic._helpers import INT64_MAX, is_full_slice, norm_dim, norm_dims, slice_axis

register = functools.partial(registry.register, opset=10)


@register("aten::slice.Tensor")
def aten_slice(g, self, dim=0, start=None, end=None, step=1):
    """slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)"""
    dim = norm_dim(dim, self.rank)
    if is_full_slice(self, dim, start, end, step):
        return self
    return slice_axis(g, self, dim, 0 if start is None else start, INT64_MAX if end is None else end, step)


@register("aten::flip.default")
def aten_flip(g, self, dims):
    """flip(Tensor self, int[] dims) -> Tensor"""
    axes = norm_dims(dims, self.rank)
    if not axes:
        return self
    n = len(axes)
    return g.op("Slice", self, g.const([-1] * n, dtype=torch.int64), g.const([-INT64_MAX] * n, dtype=torch.int64),
                g.const(axes, dtype=torch.int64), g.const([-1] * n, dtype=torch.int64))


@register("aten::fmod.Tensor", "aten::fmod.Scalar")
def aten_fmod(g, self, other):
    """fmod.Tensor(Tensor self, Tensor other) -> Tensor"""
    return math9.fmod(g, self, other, has_mod=True)


@register("aten::remainder.Tensor", "aten::remainder.Scalar", "aten::remainder.Scalar_Tensor")
def aten_remainder(g, self, other):
    """remainder.Tensor(Tensor self, Tensor other) -> Tensor"""
    return math9.remainder(g, self, other, has_mod=True)


@register("aten::tensor_split.indices")
def aten_tensor_split_indices(g, self, indices, dim=0):
    """tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]"""
    # Slice bounds follow Python slicing (negative from the end, clamped), as tensor_split's do;
    # as inputs they may be SymInts read from data.
    dim = norm_dim(dim, self.rank)
    edges = [0, *indices, INT64_MAX]
    axes = g.const([dim], dtype=torch.int64)
    return [g.op("Slice", self, g.int_list([lo]), g.int_list([hi]), axes) for lo, hi in zip(edges, edges[1:])]
