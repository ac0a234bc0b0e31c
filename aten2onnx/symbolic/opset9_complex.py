"""Opset-9 base for nodes with complex tensors, carried as real pairs (a trailing axis of 2; see
exporter/builder.py). Layout ops reuse the real symbolic for the target opset on the carrier, with
dims and sizes moved past the pair axis; arithmetic is written out on the real and imaginary parts."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.exporter.builder import GraphBuilder, Value
from aten2onnx.registry._schema import resolve_overload
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._helpers import cast, result_type

register = functools.partial(registry.register_complex, opset=9)


def real_symbolic(g: GraphBuilder, key: str):
    """The real-tensor symbolic for key at the target opset (a layout op applied to a carrier)."""
    resolved = registry.REGISTRY.resolve(resolve_overload(key), g.opset)
    if resolved is None:
        raise NotImplementedError(f"{key} has no symbolic at opset {g.opset}")
    return resolved.handler


def _logical(x):
    """x as type promotion sees it: a carrier as its complex tensor."""
    if isinstance(x, Value) and x.complex:
        return Value(x.name, _dtypes.complex_of(x.dtype), cx.logical_shape(x))
    return x


def complex_result(*operands) -> torch.dtype:
    """The complex dtype torch gives an arithmetic op on operands (Values or Python numbers)."""
    dtype = result_type(*(_logical(x) for x in operands))
    return dtype if dtype.is_complex else _dtypes.complex_of(dtype)


def operand_parts(g: GraphBuilder, x, real: torch.dtype) -> tuple[Value, cx.Part]:
    """Parts of a tensor or Python number (int, float, complex) in the real dtype `real`."""
    if isinstance(x, Value):
        return cx.parts(g, cast(g, x, real))
    z = complex(x)
    return g.const([z.real], dtype=real), (g.const([z.imag], dtype=real) if z.imag != 0 else None)


# -- conversions ------------------------------------------------------------------------------------


@register("aten::view_as_real.default")
def aten_view_as_real(g, self):
    """view_as_real(Tensor(a) self) -> Tensor(a)"""
    return self  # the carrier itself; the translator reads it as real


@register("aten::view_as_complex.default")
def aten_view_as_complex(g, self):
    """view_as_complex(Tensor(a) self) -> Tensor(a)"""
    return self


@register("aten::complex.default")
def aten_complex(g, real, imag):
    """complex(Tensor real, Tensor imag) -> Tensor"""
    (re, _), (im, _) = cx.parts(g, real), cx.parts(g, imag)
    return cx.pack(g, *_broadcast_parts(g, re, im))


@register("aten::polar.default")
def aten_polar(g, abs, angle):
    """polar(Tensor abs, Tensor angle) -> Tensor"""
    (r, _), (theta, _) = cx.parts(g, abs), cx.parts(g, angle)
    return cx.pack(g, *_broadcast_parts(g, g.op("Mul", r, g.op("Cos", theta)), g.op("Mul", r, g.op("Sin", theta))))


def _broadcast_parts(g: GraphBuilder, re: Value, im: Value) -> tuple[Value, Value]:
    """Two parts broadcast to one shape, as Concat needs (Expand broadcasts both ways)."""
    if re.shape is not None and re.shape == im.shape and re.is_static:
        return re, im
    re = g.op("Expand", re, g.op("Shape", im))
    return re, g.op("Expand", im, g.op("Shape", re))


@register("aten::_to_copy.default")
def aten__to_copy(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
                  memory_format=None):
    """_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor"""
    if dtype is None:
        return g.op("Identity", self)
    if dtype.is_complex:
        return cx.to_carrier(g, self, dtype)
    # complex -> real keeps the real part (eager warns that the imaginary part is discarded)
    return cast(g, cx.component(g, self, 0), dtype)


@register("aten::real.default")
def aten_real(g, self):
    """real(Tensor(a) self) -> Tensor(a)"""
    return cx.component(g, self, 0)


@register("aten::imag.default")
def aten_imag(g, self):
    """imag(Tensor(a) self) -> Tensor(a)"""
    return cx.component(g, self, 1)
