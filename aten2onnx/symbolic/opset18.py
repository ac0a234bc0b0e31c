"""Opset 18: Bitwise* ops arrive (BitwiseXor too). (All Reduce* taking axes as an input from 18 is spelling,
which the builder's emitters decide.)"""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.symbolic._helpers import promote

register = functools.partial(registry.register, opset=18)


def bitwise(g, bool_op: str, int_op: str, self, other):
    self, other = promote(g, self, other)
    return g.op(bool_op if self.dtype == torch.bool else int_op, self, other)


@register("aten::__and__.Tensor", "aten::__and__.Scalar", "aten::bitwise_and.Tensor", "aten::bitwise_and.Scalar",
          "aten::bitwise_and.Scalar_Tensor")
def aten_bitwise_and(g, self, other):
    """bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "And", "BitwiseAnd", self, other)


@register("aten::__or__.Tensor", "aten::__or__.Scalar", "aten::bitwise_or.Tensor", "aten::bitwise_or.Scalar",
          "aten::bitwise_or.Scalar_Tensor")
def aten_bitwise_or(g, self, other):
    """bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Or", "BitwiseOr", self, other)


@register("aten::bitwise_not.default")
def aten_bitwise_not(g, self):
    """bitwise_not(Tensor self) -> Tensor"""
    return g.op("Not" if self.dtype == torch.bool else "BitwiseNot", self)


# -- reductions of opset9_reduce, with axes as inputs --------------------------------------------------


@register("aten::__xor__.Tensor", "aten::__xor__.Scalar", "aten::bitwise_xor.Tensor", "aten::bitwise_xor.Scalar",
          "aten::bitwise_xor.Scalar_Tensor")
def aten_bitwise_xor(g, self, other):
    """__xor__.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Xor", "BitwiseXor", self, other)


