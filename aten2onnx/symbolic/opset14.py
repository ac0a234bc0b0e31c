"""Opset 14: Trilu arrives for tril/triu on any shape; Add/Sub/Mul/Div take
int8, int16 and uint8."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.symbolic._helpers import promote
from aten2onnx.symbolic.opset9 import binary

register = functools.partial(registry.register, opset=14)


def trilu(g, self, diagonal, *, upper: bool):
    k = diagonal if not isinstance(diagonal, int) else g.const(diagonal, dtype=torch.int64)
    return g.op("Trilu", self, k, upper=int(upper))


@register("aten::tril.default")
def aten_tril(g, self, diagonal=0):
    """tril(Tensor self, SymInt diagonal=0) -> Tensor"""
    return trilu(g, self, diagonal, upper=False)


@register("aten::triu.default")
def aten_triu(g, self, diagonal=0):
    """triu(Tensor self, SymInt diagonal=0) -> Tensor"""
    return trilu(g, self, diagonal, upper=True)


@register("aten::add.Tensor")
def aten_add(g, self, other, *, alpha=1):
    """add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    return binary(g, "Add", self, other, alpha, small_ints=True)


@register("aten::add.Scalar")
def aten_add_scalar(g, self, other, alpha=1):
    """add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return binary(g, "Add", self, other, alpha, small_ints=True)


@register("aten::sub.Tensor", "aten::subtract.Tensor")
def aten_sub(g, self, other, *, alpha=1):
    """sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    return binary(g, "Sub", self, other, alpha, small_ints=True)


@register("aten::sub.Scalar", "aten::subtract.Scalar")
def aten_sub_scalar(g, self, other, alpha=1):
    """sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return binary(g, "Sub", self, other, alpha, small_ints=True)


@register("aten::rsub.Scalar")
def aten_rsub(g, self, other, alpha=1):
    """rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    self, other = promote(g, self, other)
    return binary(g, "Sub", other, self, alpha, small_ints=True)


@register("aten::mul.Tensor", "aten::mul.Scalar")
def aten_mul(g, self, other):
    """mul.Tensor(Tensor self, Tensor other) -> Tensor"""
    if self.dtype == torch.bool and getattr(other, "dtype", None) == torch.bool:
        return g.op("And", self, other)
    return binary(g, "Mul", self, other, small_ints=True)
