"""Opset 11: Unique (so unique, and unique along a dim) and GatherElements (take_along_dim) arrive."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.symbolic._helpers import norm_dim, reshape
from aten2onnx.symbolic.opset9_norm import static_shape

register = functools.partial(registry.register, opset=11)


# -- taking elements ---------------------------------------------------------------------------------------------


@register("aten::take_along_dim.default")
def aten_take_along_dim(g, self, indices, dim=None):
    """take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor"""
    if dim is None:
        return g.op("GatherElements", reshape(g, self, [-1]), reshape(g, indices, [-1]), axis=0)
    x_shape, i_shape = static_shape(self, "take_along_dim"), static_shape(indices, "take_along_dim")
    dim = norm_dim(dim, len(x_shape))
    batch = list(torch.broadcast_shapes(tuple(x_shape[:dim] + [1] + x_shape[dim + 1:]),
                                        tuple(i_shape[:dim] + [1] + i_shape[dim + 1:])))
    x = g.op("Expand", self, g.const(batch[:dim] + [x_shape[dim]] + batch[dim + 1:], dtype=torch.int64))
    idx = g.op("Expand", indices, g.const(batch[:dim] + [i_shape[dim]] + batch[dim + 1:], dtype=torch.int64))
    return g.op("GatherElements", x, idx, axis=dim)


@register("aten::_unique2.default")
def aten__unique2(g, self, sorted=True, return_inverse=False, return_counts=False):
    """_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)"""
    # Eager sorts the values whatever `sorted` says on CPU; ONNX's sorted=1 matches that order.
    values, _, inverse, counts = g.op("Unique", self, sorted=1, outputs=4)
    empty = g.const(torch.zeros(0, dtype=torch.int64))
    inverse = g.op("Reshape", inverse, g.op("Shape", self)) if return_inverse else empty
    return values, inverse, counts if return_counts else empty


@register("aten::unique_dim.default")
def aten_unique_dim(g, self, dim, sorted=True, return_inverse=False, return_counts=False):
    """unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)"""
    # Eager sorts the slices lexicographically whatever `sorted` says, as Unique's sorted=1 does along an
    # axis, and returns the inverse indices and counts whatever the flags say.
    values, _, inverse, counts = g.op("Unique", self, axis=norm_dim(dim, self.rank), sorted=1, outputs=4)
    return values, inverse, counts
