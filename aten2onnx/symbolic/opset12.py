"""Opset 12: LessOrEqual and GreaterOrEqual arrive."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic.opset9 import compare

register = functools.partial(registry.register, opset=12)


@register("aten::le.Tensor", "aten::le.Scalar")
def aten_le(g, self, other):
    """le.Tensor(Tensor self, Tensor other) -> Tensor"""
    return compare(g, "LessOrEqual", self, other)


@register("aten::ge.Tensor", "aten::ge.Scalar")
def aten_ge(g, self, other):
    """ge.Tensor(Tensor self, Tensor other) -> Tensor"""
    return compare(g, "GreaterOrEqual", self, other)
