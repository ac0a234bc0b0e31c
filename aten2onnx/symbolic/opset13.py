"""Opset 13: Softmax and LogSoftmax work along any axis instead of flattening to 2-D. (Unsqueeze, Squeeze,
Split and ReduceSum taking axes as inputs from 13 is spelling, which the builder's emitters decide.)"""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.symbolic import opset9_special as special
from aten2onnx.symbolic._helpers import cast
from aten2onnx.symbolic.opset9 import softmax

register = functools.partial(registry.register, opset=13)


@register("aten::softmax.int")
def aten_softmax(g, self, dim, dtype=None):
    """softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self if dtype is None else cast(g, self, dtype)
    return softmax(g, "Softmax", x, dim, any_axis=True)


@register("aten::_softmax.default")
def aten__softmax(g, self, dim, half_to_float):
    """_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    x = cast(g, self, torch.float32) if half_to_float else self
    return softmax(g, "Softmax", x, dim, any_axis=True)


@register("aten::log_softmax.int")
def aten_log_softmax(g, self, dim, dtype=None):
    """log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self if dtype is None else cast(g, self, dtype)
    return softmax(g, "LogSoftmax", x, dim, any_axis=True)


@register("aten::_log_softmax.default")
def aten__log_softmax(g, self, dim, half_to_float):
    """_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    x = cast(g, self, torch.float32) if half_to_float else self
    return softmax(g, "LogSoftmax", x, dim, any_axis=True)


# -- reductions of opset9_reduce, with axes as inputs --------------------------------------------------


@register("aten::_safe_softmax.default")
def aten__safe_softmax(g, self, dim, dtype=None):
    """_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    return special.safe_softmax(g, self, dim, dtype, any_axis=True)


