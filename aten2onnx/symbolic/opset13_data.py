"""Opset 13, data family: ReduceSum takes its axes as an input (segment_reduce), and CumSum is in reach
for the segment starts."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic.opset9_segments import segment_reduce

register = functools.partial(registry.register, opset=13)


@register("aten::segment_reduce.default")
def aten_segment_reduce(g, data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor"""
    if lengths is None and offsets is None:
        raise NotImplementedError("segment_reduce by indices (eager does not support it either)")
    return segment_reduce(g, data, reduce, lengths, offsets, axis, initial, has_cumsum=True)
