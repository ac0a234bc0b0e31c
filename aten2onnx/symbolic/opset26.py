"""Opset 26, the newest onnxruntime 1.31 runs: CumProd arrives."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.symbolic._helpers import cast, norm_dim
from aten2onnx.symbolic.opset9_reduce import sum_dtype

register = functools.partial(registry.register, opset=26)


@register("aten::cumprod.default")
def aten_cumprod(g, self, dim, *, dtype=None):
    """cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    x = cast(g, self, sum_dtype(self, dtype))
    return g.op("CumProd", x, g.const(norm_dim(dim, self.rank), dtype=torch.int64))
