"""Opset-9 base, factory ops: arange, full/zeros/ones/empty and their new_/_like variants, fill, eye,
tril/triu_indices, linspace/logspace; and tril/triu by a constant mask, for opsets before Trilu (14)."""

from __future__ import annotations

import functools

import torch

from onnx import TensorProto

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import as_value, cast, fill, fill_dtype, reshape, scalar_type

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


# -- fill, empty, eye, index grids, linspace ---------------------------------------------------------------


@register("aten::new_full.default")
def aten_new_full(g, self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    """new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return fill(g, list(size), fill_value, dtype or self.dtype)


@register("aten::fill.Scalar", "aten::fill.Tensor")
def aten_fill(g, self, value):
    """fill.Scalar(Tensor self, Scalar value) -> Tensor"""
    v = value if isinstance(value, Value) else g.const(value, dtype=self.dtype)
    v = cast(g, v, self.dtype)
    shape = g.const(list(self.shape), dtype=torch.int64) if self.is_static else g.op("Shape", self)
    return g.op("Expand", v, shape)


@register("aten::zero.default")
def aten_zero(g, self):
    """zero(Tensor self) -> Tensor"""
    return aten_fill(g, self, 0)


@register("aten::scalar_tensor.default")
def aten_scalar_tensor(g, s, *, dtype=None, layout=None, device=None, pin_memory=None):
    """scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    dtype = dtype or torch.get_default_dtype()
    return as_value(g, s, dtype)


@register("aten::empty.memory_format")
def aten_empty(g, size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return fill(g, list(size), 0, dtype or torch.get_default_dtype())


@register("aten::empty_strided.default")
def aten_empty_strided(g, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    """empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return fill(g, list(size), 0, dtype or torch.get_default_dtype())  # graph values have no strides


@register("aten::empty_like.default")
def aten_empty_like(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    shape = list(self.shape) if self.is_static else g.op("Shape", self)
    return fill(g, shape, 0, dtype or self.dtype)


@register("aten::new_empty.default")
def aten_new_empty(g, self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return fill(g, list(size), 0, dtype or self.dtype)


@register("aten::eye.default")
def aten_eye(g, n, *, dtype=None, layout=None, device=None, pin_memory=None):
    """eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return aten_eye_m(g, n, n, dtype=dtype)


@register("aten::eye.m")
def aten_eye_m(g, n, m, *, dtype=None, layout=None, device=None, pin_memory=None):
    """eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    if isinstance(n, Value) or isinstance(m, Value):
        raise NotImplementedError("eye with dynamic size")
    return g.const(torch.eye(n, m, dtype=dtype or torch.get_default_dtype()))


@register("aten::tril_indices.default")
def aten_tril_indices(g, row, col, offset=0, *, dtype=torch.int64, layout=None, device=None, pin_memory=None):
    """tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return g.const(torch.tril_indices(row, col, offset, dtype=scalar_type(dtype, torch.int64)))


@register("aten::triu_indices.default")
def aten_triu_indices(g, row, col, offset=0, *, dtype=torch.int64, layout=None, device=None, pin_memory=None):
    """triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return g.const(torch.triu_indices(row, col, offset, dtype=scalar_type(dtype, torch.int64)))


def linspace(g: GraphBuilder, start, end, steps: int, dtype, *, base=None) -> Value:
    out_dtype = dtype or torch.get_default_dtype()
    compute = torch.float64 if not out_dtype.is_floating_point else out_dtype
    if not isinstance(start, Value) and not isinstance(end, Value):
        if base is None:
            return g.const(torch.linspace(start, end, steps, dtype=out_dtype))
        return g.const(torch.logspace(start, end, steps, base, dtype=out_dtype))
    s, e = (reshape(g, as_value(g, v, compute), []) for v in (start, end))
    if steps == 1:
        out = reshape(g, s, [1])
    else:
        step = g.op("Div", g.op("Sub", e, s), g.const(float(steps - 1), dtype=compute))
        i = g.const(torch.arange(steps, dtype=compute))
        # torch computes the second half from the end, for symmetry
        half = steps // 2
        front = g.op("Add", s, g.op("Mul", i, step))
        back = g.op("Sub", e, g.op("Mul", g.const(torch.arange(steps, dtype=compute).flip(0)), step))
        out = g.op("Where", g.const(torch.arange(steps) < half), front, back)
    if base is not None:
        out = g.op("Pow", g.const(float(base), dtype=compute), out)
    if not out_dtype.is_floating_point:
        out = g.op("Floor", out) if base is None else out
    return cast(g, out, out_dtype)


@register("aten::linspace.default", "aten::linspace.Tensor_Tensor", "aten::linspace.Tensor_Scalar",
          "aten::linspace.Scalar_Tensor")
def aten_linspace(g, start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=None):
    """linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return linspace(g, start, end, steps, dtype)


@register("aten::logspace.default", "aten::logspace.Tensor_Tensor", "aten::logspace.Tensor_Scalar",
          "aten::logspace.Scalar_Tensor")
def aten_logspace(g, start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, pin_memory=None):
    """logspace(Scalar start, Scalar end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return linspace(g, start, end, steps, dtype, base=base)
