"""Opset 10: Mod arrives (fmod, remainder, floor division of floats)."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic import opset9 as base9, opset9_math as math9

register = functools.partial(registry.register, opset=10)


@register("aten::fmod.Tensor", "aten::fmod.Scalar")
def aten_fmod(g, self, other):
    """fmod.Tensor(Tensor self, Tensor other) -> Tensor"""
    return math9.fmod(g, self, other, has_mod=True)


@register("aten::remainder.Tensor", "aten::remainder.Scalar", "aten::remainder.Scalar_Tensor")
def aten_remainder(g, self, other):
    """remainder.Tensor(Tensor self, Tensor other) -> Tensor"""
    return math9.remainder(g, self, other, has_mod=True)


@register("aten::div.Tensor_mode", "aten::div.Scalar_mode")
def aten_div_mode(g, self, other, *, rounding_mode):
    """div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"""
    return base9.div_mode(g, self, other, rounding_mode, has_mod=True)


@register("aten::floor_divide.default", "aten::floor_divide.Scalar")
def aten_floor_divide(g, self, other):
    """floor_divide(Tensor self, Tensor other) -> Tensor"""
    return base9.div_mode(g, self, other, "floor", has_mod=True)
