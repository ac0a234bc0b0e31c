"""Opset-9 base, factory ops: arange, full/zeros/ones and their new_/_like variants; and tril/triu by a
constant mask, for opsets before Trilu (14)."""

from __future__ import annotations

import functools

import torch

from onnx import TensorProto

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import as_value, fill, fill_dtype

register = functools.partial(registry.register, opset=9)


def creation_dtype(dtype: torch.dtype | None, *values) -> torch.dtype:
    if dtype is not None:
        return dtype
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values if not isinstance(v, Value)):
        return torch.int64
    return torch.get_default_dtype()


def arange(g: GraphBuilder, start, end, step, dtype: torch.dtype | None, *, has_range: bool) -> Value:
    dtype = creation_dtype(dtype, start, end, step)
    if any(isinstance(v, Value) for v in (start, end, step)):
        if dtype.is_floating_point:
            raise NotImplementedError("arange with dynamic float bounds is not supported")
        if not has_range:
            return range_by_nonzero(g, start, end, step, dtype)
        return g.op("Range", *(as_value(g, v, dtype) for v in (start, end, step)))
    return g.const(torch.arange(start, end, step, dtype=dtype))


def range_by_nonzero(g: GraphBuilder, start, end, step, dtype: torch.dtype) -> Value:
    """Integer arange with dynamic bounds before Range (11): the positions NonZero finds in
    ConstantOfShape(count) of ones, times step, plus start; count = max(ceil((end - start) / step), 0),
    computed in float64 (exact for bounds below 2**53)."""
    i64, f64 = torch.int64, torch.float64
    s, e, d = (as_value(g, v, i64) for v in (start, end, step))
    count = g.op("Ceil", g.op("Div", g.op("Cast", g.op("Sub", e, s), to=TensorProto.DOUBLE),
                              g.op("Cast", d, to=TensorProto.DOUBLE)))
    count = g.op("Max", count, g.const(0.0, dtype=f64))
    n = g.op("Reshape", g.op("Cast", count, to=TensorProto.INT64), g.const([1], dtype=i64))
    ones = g.op("ConstantOfShape", n, value=torch.ones(1, dtype=torch.bool))
    steps = g.op("Reshape", g.op("NonZero", ones), g.const([-1], dtype=i64))
    out = g.op("Add", g.op("Mul", steps, d), s)
    return out if dtype == i64 else g.op("Cast", out, to=_dtypes.to_onnx(dtype))


@register("aten::arange.default")
def aten_arange(g, end, *, dtype=None, layout=None, device=None, pin_memory=None):
    """arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return arange(g, 0, end, 1, dtype, has_range=False)


@register("aten::arange.start")
def aten_arange_start(g, start, end, *, dtype=None, layout=None, device=None, pin_memory=None):
    """arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return arange(g, start, end, 1, dtype, has_range=False)


@register("aten::arange.start_step")
def aten_arange_start_step(g, start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None):
    """arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return arange(g, start, end, step, dtype, has_range=False)


@register("aten::full.default")
def aten_full(g, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    """full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return fill(g, list(size), fill_value, fill_dtype(fill_value, dtype))


@register("aten::zeros.default")
def aten_zeros(g, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return fill(g, list(size), 0, dtype or torch.get_default_dtype())


@register("aten::ones.default")
def aten_ones(g, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return fill(g, list(size), 1, dtype or torch.get_default_dtype())


@register("aten::new_ones.default")
def aten_new_ones(g, self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return fill(g, list(size), 1, dtype or self.dtype)


@register("aten::new_zeros.default")
def aten_new_zeros(g, self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return fill(g, list(size), 0, dtype or self.dtype)


def fill_like(g: GraphBuilder, self: Value, value, dtype: torch.dtype | None) -> Value:
    size = list(self.shape) if self.is_static else g.op("Shape", self)
    return fill(g, size, value, dtype or self.dtype)


@register("aten::zeros_like.default")
def aten_zeros_like(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return fill_like(g, self, 0, dtype)


@register("aten::ones_like.default")
def aten_ones_like(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return fill_like(g, self, 1, dtype)


@register("aten::full_like.default")
def aten_full_like(g, self, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None,
                   memory_format=None):
    """full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return fill_like(g, self, fill_value, dtype)


@register("aten::tril.default")
def aten_tril(g, self, diagonal=0):
    """tril(Tensor self, SymInt diagonal=0) -> Tensor"""
    return triangle(g, self, diagonal, upper=False)


@register("aten::triu.default")
def aten_triu(g, self, diagonal=0):
    """triu(Tensor self, SymInt diagonal=0) -> Tensor"""
    return triangle(g, self, diagonal, upper=True)


def triangle(g: GraphBuilder, self: Value, diagonal: int, *, upper: bool) -> Value:
    """tril/triu by a constant mask, for opsets before Trilu (14)."""
    rows, cols = self.shape[-2], self.shape[-1]
    if not (isinstance(rows, int) and isinstance(cols, int) and isinstance(diagonal, int)):
        raise NotImplementedError("tril/triu on dynamic dims needs opset 14 (Trilu)")
    ones = torch.ones(rows, cols, dtype=torch.bool)
    mask = ones.triu(diagonal) if upper else ones.tril(diagonal)
    return g.op("Where", g.const(mask), self, g.const(0, like=self) if self.dtype != torch.bool else g.const(False))
