"""Opset-9 complex ops that act on the real and imaginary parts alone (see opset9_complex.py): the
real translation at the target opset applied to each part (indexing, scatter, stacking, splitting),
declared in the EACH_PART table (symbolic/_lifting.py); the handlers below also check or scale."""

from __future__ import annotations

import functools

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._carrier import (
    _shaped,
    complex_result,
    dtype_of,
    join,
    on_carrier,
    real_symbolic,
    split,
    tagged,
)
from aten2onnx.symbolic._complex_math import _scaled
from aten2onnx.symbolic._lifting import Lift, lift
from aten2onnx.symbolic.opset9_complex import aten_flip

register = functools.partial(registry.register, opset=9, complex=True)


# -- ops that act on each part alone: the real symbolic twice ---------------------------------------------------


def _zeros(g: GraphBuilder, x: Value) -> Value:
    """Zeros shaped as x (an imaginary part for a real tensor), without a constant of x's size."""
    out = g.op("ConstantOfShape", g.op("Shape", x), value=torch.zeros(1, dtype=x.dtype))
    return _shaped(out, x.shape)


def _part_args(g: GraphBuilder, x, real: torch.dtype):
    """(real-part, imaginary-part) forms of one data argument: a tensor, a number or a tensor list."""
    if isinstance(x, (list, tuple)):
        pairs = [_part_args(g, v, real) for v in x]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    if isinstance(x, Value):
        re, im = split(g, x, real)
        return re, im if im is not None else _zeros(g, re)
    if x is None:
        return None, None
    z = complex(x)
    return z.real, z.imag


def partwise(g: GraphBuilder, key: str, data: dict, **rest):
    """The real symbolic for key on the real parts, then on the imaginary parts: right for ops that
    move elements or are linear with real coefficients, f(a + ib) = f(a) + i f(b). data names the
    arguments that are complex data (tensors, numbers, tensor lists; a real tensor among them gets a
    zero imaginary part); rest pass unchanged to both calls (index tensors, sizes, dims)."""
    tensors = [v for x in data.values() for v in (x if isinstance(x, (list, tuple)) else [x]) if isinstance(v, Value)]
    dtype = functools.reduce(torch.promote_types, [dtype_of(v) for v in tensors])
    if not dtype.is_complex:
        dtype = complex_result(*tensors, *[x for x in data.values() if isinstance(x, complex)])
    real = _dtypes.real_part(dtype)
    re_args, im_args = {}, {}
    for name, x in data.items():
        re_args[name], im_args[name] = _part_args(g, x, real)
    fn = real_symbolic(g, key)
    re, im = fn(g, **re_args, **rest), fn(g, **im_args, **rest)
    if isinstance(re, (list, tuple)):
        return [join(g, r, i) for r, i in zip(re, im)]
    return join(g, re, im)


def each_part(g: GraphBuilder, real: str, data: tuple[str, ...], arguments: dict):
    """The lifting of EACH_PART: partwise with the arguments named in data as the complex data."""
    rest = dict(arguments)
    return partwise(g, real, {name: rest.pop(name) for name in data}, **rest)


# Overloads that move elements or are linear with real coefficients, lifted by each_part: the real
# translation on the real parts, then on the imaginary ones. spec: the arguments that are complex data.
EACH_PART = [
    Lift(("aten::as_strided.default", "aten::as_strided_copy.default"), ("self",), real="aten::as_strided.default"),
    Lift(("aten::unfold.default", "aten::unfold_copy.default"), ("self",), real="aten::unfold.default"),
    *(Lift((key,), ("self",)) for key in (
        "aten::rot90.default", "aten::atleast_1d.default", "aten::atleast_2d.default", "aten::atleast_3d.default",
        "aten::hsplit.int", "aten::hsplit.array", "aten::vsplit.int", "aten::vsplit.array", "aten::dsplit.int",
        "aten::dsplit.array", "aten::diagflat.default", "aten::gradient.scalarint", "aten::gradient.scalarrayint",
        "aten::gradient.array", "aten::gradient.scalararray", "aten::sum_to_size.default",
        "aten::repeat_interleave.self_int", "aten::repeat_interleave.self_Tensor", "aten::pixel_shuffle.default",
        "aten::pixel_unshuffle.default", "aten::channel_shuffle.default", "aten::take.default",
        "aten::take_along_dim.default", "aten::gather.default", "aten::masked_select.default")),
    Lift(("aten::trapz.dx",), ("y",)),  # dx is a float: a real coefficient
    *(Lift((key,), ("tensors",)) for key in (
        "aten::meshgrid.indexing", "aten::meshgrid.default", "aten::block_diag.default", "aten::cartesian_prod.default",
        "aten::hstack.default", "aten::vstack.default", "aten::dstack.default", "aten::column_stack.default",
        "aten::_chunk_cat.default")),
    Lift(("aten::diff.default",), ("self", "prepend", "append")),
    *(Lift((key,), ("self", "source")) for key in (
        "aten::index_copy.default", "aten::masked_scatter.default", "aten::put.default")),
    *(Lift((key,), ("self", "values")) for key in (
        "aten::index_put.default", "aten::_unsafe_masked_index_put_accumulate.default")),
    *(Lift((key,), ("self", "src")) for key in (
        "aten::scatter.src", "aten::scatter_add.default", "aten::diagonal_scatter.default",
        "aten::as_strided_scatter.default", "aten::select_scatter.default", "aten::slice_scatter.default")),
    Lift(("aten::scatter.value",), ("self", "value")),
    Lift(("aten::_unsafe_masked_index.default",), ("self", "fill")),
]
lift(EACH_PART, each_part, "each part", opset=9)


@register("aten::fliplr.default")
def aten_fliplr(g, self):
    """fliplr(Tensor self) -> Tensor"""
    return aten_flip(g, self, [1])


@register("aten::flipud.default")
def aten_flipud(g, self):
    """flipud(Tensor self) -> Tensor"""
    return aten_flip(g, self, [0])


@register("aten::atleast_1d.Sequence")
def aten_atleast_1d_sequence(g, tensors):
    """atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return [partwise(g, "aten::atleast_1d.default", {"self": t}) if t.complex
            else on_carrier(g, "aten::atleast_1d.default", t) for t in tensors]


@register("aten::atleast_2d.Sequence")
def aten_atleast_2d_sequence(g, tensors):
    """atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return [partwise(g, "aten::atleast_2d.default", {"self": t}) if t.complex
            else on_carrier(g, "aten::atleast_2d.default", t) for t in tensors]


@register("aten::atleast_3d.Sequence")
def aten_atleast_3d_sequence(g, tensors):
    """atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return [partwise(g, "aten::atleast_3d.default", {"self": t}) if t.complex
            else on_carrier(g, "aten::atleast_3d.default", t) for t in tensors]


@register("aten::broadcast_to.default")
def aten_broadcast_to(g, self, size):
    """broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)"""
    return on_carrier(g, "aten::expand.default", self, list(size) + [2])


@register("aten::broadcast_tensors.default")
def aten_broadcast_tensors(g, tensors):
    """broadcast_tensors(Tensor[] tensors) -> Tensor[]"""
    if not all(t.is_static for t in tensors):
        raise NotImplementedError("broadcast_tensors of complex tensors with dynamic shapes")
    shape = list(torch.broadcast_shapes(*(cx.logical_shape(t) for t in tensors)))
    return [g.op("Expand", t, g.const(shape + [2] * t.complex, dtype=torch.int64)) for t in tensors]


def _real_coordinates(*xs) -> None:
    if any(isinstance(x, Value) and x.complex for x in xs):
        raise NotImplementedError("complex sample points (the op is then not linear with real coefficients)")


@register("aten::gradient.tensorarrayint")
def aten_gradient_tensorarrayint(g, self, *, spacing, dim=None, edge_order=1):
    """gradient.tensorarrayint(Tensor self, *, Tensor[] spacing, int? dim=None, int edge_order=1) -> Tensor[]"""
    _real_coordinates(*spacing)
    return partwise(g, "aten::gradient.tensorarrayint", {"self": self}, spacing=spacing, dim=dim,
                    edge_order=edge_order)


@register("aten::gradient.tensorarray")
def aten_gradient_tensorarray(g, self, *, spacing, dim, edge_order=1):
    """gradient.tensorarray(Tensor self, *, Tensor[] spacing, int[] dim, int edge_order=1) -> Tensor[]"""
    _real_coordinates(*spacing)
    return partwise(g, "aten::gradient.tensorarray", {"self": self}, spacing=spacing, dim=dim, edge_order=edge_order)


@register("aten::trapezoid.dx")
def aten_trapezoid_dx(g, y, *, dx=1, dim=-1):
    """trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor"""
    if isinstance(dx, complex):
        raise NotImplementedError("a complex dx")
    return partwise(g, "aten::trapezoid.dx", {"y": y}, dx=dx, dim=dim)


@register("aten::cumulative_trapezoid.dx")
def aten_cumulative_trapezoid_dx(g, y, *, dx=1, dim=-1):
    """cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor"""
    if isinstance(dx, complex):
        raise NotImplementedError("a complex dx")
    return partwise(g, "aten::cumulative_trapezoid.dx", {"y": y}, dx=dx, dim=dim)


@register("aten::index_add.default")
def aten_index_add(g, self, dim, index, source, *, alpha=1):
    """index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor"""
    if complex(alpha).imag != 0:
        source, alpha = tagged(g, _scaled(g, source, alpha, dtype_of(self))), 1
    return partwise(g, "aten::index_add.default", {"self": self, "source": source}, dim=dim, index=index,
                    alpha=complex(alpha).real)


@register("aten::index_fill.int_Scalar", "aten::index_fill.int_Tensor")
def aten_index_fill(g, self, dim, index, value):
    """index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"""
    key = "aten::index_fill.int_Tensor" if isinstance(value, Value) else "aten::index_fill.int_Scalar"
    return partwise(g, key, {"self": self, "value": value}, dim=dim, index=index)


def _additive(reduce: str) -> None:
    if reduce != "add":
        raise NotImplementedError(f"scatter with reduce={reduce!r} on complex tensors (only 'add' is linear)")


@register("aten::scatter.reduce")
def aten_scatter_reduce(g, self, dim, index, src, *, reduce):
    """scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor"""
    _additive(reduce)
    return partwise(g, "aten::scatter.reduce", {"self": self, "src": src}, dim=dim, index=index, reduce=reduce)


@register("aten::scatter.value_reduce")
def aten_scatter_value_reduce(g, self, dim, index, value, *, reduce):
    """scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor"""
    _additive(reduce)
    return partwise(g, "aten::scatter.value_reduce", {"self": self, "value": value}, dim=dim, index=index,
                    reduce=reduce)


