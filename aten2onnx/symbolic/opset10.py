"""Opset 10: Mod arrives (fmod, remainder)."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic import opset9_math as math9

register = functools.partial(registry.register, opset=10)


@register("aten::fmod.Tensor", "aten::fmod.Scalar")
def aten_fmod(g, self, other):
    """fmod.Tensor(Tensor self, Tensor other) -> Tensor"""
    return math9.fmod(g, self, other, has_mod=True)


@register("aten::remainder.Tensor", "aten::remainder.Scalar", "aten::remainder.Scalar_Tensor")
def aten_remainder(g, self, other):
    """remainder.Tensor(Tensor self, Tensor other) -> Tensor"""
    return math9.remainder(g, self, other, has_mod=True)
