"""Opset 12: LessOrEqual and GreaterOrEqual arrive; Max, Min and Clip take integers."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import as_value, cast, compare, result_type
from aten2onnx.symbolic.opset9 import clip_bounds, extremum

register = functools.partial(registry.register, opset=12)


@register("aten::le.Tensor", "aten::le.Scalar")
def aten_le(g, self, other):
    """le.Tensor(Tensor self, Tensor other) -> Tensor"""
    return compare(g, "LessOrEqual", self, other)


@register("aten::ge.Tensor", "aten::ge.Scalar")
def aten_ge(g, self, other):
    """ge.Tensor(Tensor self, Tensor other) -> Tensor"""
    return compare(g, "GreaterOrEqual", self, other)


@register("aten::maximum.default")
def aten_maximum(g, self, other):
    """maximum(Tensor self, Tensor other) -> Tensor"""
    return extremum(g, "Max", self, other, int_inputs=True)


@register("aten::minimum.default")
def aten_minimum(g, self, other):
    """minimum(Tensor self, Tensor other) -> Tensor"""
    return extremum(g, "Min", self, other, int_inputs=True)


@register("aten::clamp.default")
def aten_clamp(g, self, min=None, max=None):
    """clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"""
    self = cast(g, self, result_type(*(v for v in (self, min, max) if v is not None)))  # bool.clamp(0, 1) is int64
    min, max = clip_bounds(self, min, max)
    lo = None if min is None else as_value(g, min, self.dtype)
    hi = None if max is None else as_value(g, max, self.dtype)
    return g.op("Clip", self, lo, hi)


@register("aten::einsum.default")
def aten_einsum(g, equation, tensors, *, path=None):
    """einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor"""
    return g.op("Einsum", *tensors, equation=equation)
