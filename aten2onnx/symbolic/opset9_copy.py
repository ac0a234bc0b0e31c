"""Base opset, copies and scalars: copy (what copy_ becomes) and item."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import graph_type
from aten2onnx.symbolic._helpers import as_value, cast

register = functools.partial(registry.register, opset=9)


@register("aten::copy.default")
def aten_copy(g, self, src, non_blocking=False):
    """copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor"""
    # a Python number (x.copy_(0.75), which eager takes as a 0-d tensor) fills self
    value = as_value(g, src, self.dtype)
    if self.shape is not None and value.shape == self.shape:
        return value
    return g.op("Expand", value, g.const(list(self.shape), dtype=torch.int64) if self.is_static else g.op("Shape", self))


def number_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the Python number read from a tensor of dtype, as the graph declares the SymInt,
    SymFloat or SymBool of the node that reads it, and as the handlers that meet that number cast it."""
    return graph_type(False if dtype == torch.bool else 0.0 if dtype.is_floating_point else 0)[0]


@register("aten::item.default", "aten::_local_scalar_dense.default")
def aten_item(g, self):
    """item(Tensor self) -> Scalar"""
    value = self if self.rank == 0 else g.op("Reshape", self, g.const([], dtype=torch.int64))
    # the number takes its declared dtype: an int32 one left int32 would meet int64 sizes in one op
    return value if self.complex else cast(g, value, number_dtype(self.dtype))
