"""Opset 18, data family: ReduceMax, ReduceMin and ReduceProd take their axes as an input (segment_reduce,
embedding_bag's max mode, embedding_renorm's inf-norms)."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import AXES18
from aten2onnx.symbolic.opset9_data import (
    bag_padding,
    embedding_bag,
    embedding_renorm,
    segment_reduce,
    static,
)

register = functools.partial(registry.register, opset=18)


@register("aten::segment_reduce.default")
def aten_segment_reduce(g, data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor"""
    if lengths is None and offsets is None:
        raise NotImplementedError("segment_reduce by indices (eager does not support it either)")
    return segment_reduce(g, data, reduce, lengths, offsets, axis, initial, mode=AXES18, has_cumsum=True)


@register("aten::embedding_bag.padding_idx")
def aten_embedding_bag_padding_idx(g, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                                   include_last_offset, padding_idx):
    """embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq, int mode, bool sparse, Tensor? per_sample_weights, bool include_last_offset, int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)"""
    padding = bag_padding(padding_idx, static(weight, "embedding_bag")[0], negative_is_none=False)
    return embedding_bag(g, weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding, axes=AXES18)


@register("aten::embedding_bag.default")
def aten_embedding_bag(g, weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                       per_sample_weights=None, include_last_offset=False):
    """embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False) -> (Tensor, Tensor, Tensor, Tensor)"""
    return embedding_bag(g, weight, indices, offsets, mode, per_sample_weights, include_last_offset, None, axes=AXES18)


@register("aten::_embedding_bag.default", "aten::_embedding_bag_forward_only.default")
def aten__embedding_bag(g, weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                        per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)"""
    padding = bag_padding(padding_idx, static(weight, "embedding_bag")[0], negative_is_none=True)
    return embedding_bag(g, weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding, axes=AXES18)


@register("aten::embedding_renorm.default")
def aten_embedding_renorm(g, self, indices, max_norm, norm_type):
    """embedding_renorm(Tensor self, Tensor indices, float max_norm, float norm_type) -> Tensor"""
    return embedding_renorm(g, self, indices, max_norm, norm_type, axes=AXES18, scatter_add=True)
