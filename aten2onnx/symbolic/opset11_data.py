"""Opset 11, data family: CumSum gives unique_consecutive its inverse at any length; GatherND reads masked
indices on any dims; Range counts (masked_scatter, repeat_interleave)."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic.opset9_data import masked_index, masked_scatter, repeat_along, repeat_indices
from aten2onnx.symbolic.opset9_segments import unique_consecutive
from aten2onnx.symbolic.opset11 import advanced_index

register = functools.partial(registry.register, opset=11)


@register("aten::masked_scatter.default")
def aten_masked_scatter(g, self, mask, source):
    """masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor"""
    return masked_scatter(g, self, mask, source, has_range=True)


@register("aten::unique_consecutive.default")
def aten_unique_consecutive(g, self, return_inverse=False, return_counts=False, dim=None):
    """unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)"""
    return unique_consecutive(g, self, return_inverse, return_counts, dim, has_cumsum=True)


@register("aten::_unsafe_masked_index.default")
def aten__unsafe_masked_index(g, self, mask, indices, fill):
    """_unsafe_masked_index(Tensor self, Tensor mask, Tensor?[] indices, Scalar fill) -> Tensor"""
    return masked_index(g, self, mask, list(indices), fill, gather_nd=advanced_index)


@register("aten::repeat_interleave.self_int")
def aten_repeat_interleave_self_int(g, self, repeats, dim=None, *, output_size=None):
    """repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor"""
    return repeat_along(g, self, repeats, dim, has_range=True)


@register("aten::repeat_interleave.self_Tensor")
def aten_repeat_interleave_self_tensor(g, self, repeats, dim=None, *, output_size=None):
    """repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor"""
    return repeat_along(g, self, repeats, dim, has_range=True)


@register("aten::repeat_interleave.Tensor")
def aten_repeat_interleave_tensor(g, repeats, *, output_size=None):
    """repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor"""
    return repeat_indices(g, repeats, has_range=True)
