"""Opset-9 base for nodes with complex tensors, carried as real pairs (a trailing axis of 2; see
ir/builder.py). Layout ops reuse the real symbolic for the target opset on the carrier, with
dims and sizes moved past the pair axis; arithmetic is written out on the real and imaginary parts."""

from __future__ import annotations

import functools
import itertools
import math

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.registry._schema import resolve_overload
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._helpers import cast, norm_dim, result_type, scalar_type
from aten2onnx.symbolic.opset9 import unsqueeze_static
from aten2onnx.symbolic.opset9_math import is_zero

register = functools.partial(registry.register_complex, opset=9)
Parts = tuple[Value, cx.Part]


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


def operand_parts(g: GraphBuilder, x, real: torch.dtype) -> Parts:
    """Parts of a tensor or Python number (int, float, complex) in the real dtype `real`."""
    if isinstance(x, Value):
        re, im = cx.parts(g, x)  # split first: a cast carrier would no longer read as complex
        return cast(g, re, real), None if im is None else cast(g, im, real)
    z = complex(x)
    return g.const([z.real], dtype=real), (g.const([z.imag], dtype=real) if z.imag != 0 else None)


# -- carriers, parts and shapes -----------------------------------------------------------------------


def dtype_of(x: Value) -> torch.dtype:
    """The dtype of the tensor x stands for (complex64 for a float32 carrier)."""
    return _dtypes.complex_of(x.dtype) if x.complex else x.dtype


def carrier(g: GraphBuilder, x, dtype: torch.dtype) -> Value:
    """A tensor (complex or real) or Python number as a carrier of the complex dtype."""
    if isinstance(x, Value):
        shape = cx.logical_shape(x)
        return _shaped(cx.to_carrier(g, x, dtype), None if shape is None else tuple(shape) + (2,))
    return g.const(torch.tensor(complex(x), dtype=dtype))


def tagged(g: GraphBuilder, value: Value) -> Value:
    """A carrier built here, marked complex so that another complex handler can take it."""
    if value.complex:
        return value
    if value.kind != "node":  # a folded constant may be shared: re-make it with the tag
        return g.retag(value, complex=True)
    value.complex = True
    return value


def convert(g: GraphBuilder, x: Value, dtype) -> Value:
    """x as dtype, as torch converts: complex -> complex casts the parts, real -> complex adds a zero
    imaginary part, complex -> bool tests both parts, complex -> other real keeps the real part."""
    dtype = scalar_type(dtype)
    if dtype is None or (dtype == dtype_of(x)):
        return x
    if dtype.is_complex:
        return cx.to_carrier(g, x, dtype)  # complex32 too: float16 pairs
    if not x.complex:
        return cast(g, x, dtype)
    if dtype == torch.bool:
        re, im = split(g, x)
        return g.op("Or", g.op("Not", is_zero(g, re)), g.op("Not", is_zero(g, im)))
    return cast(g, cx.component(g, x, 0), dtype)  # eager warns that the imaginary part is discarded


def _shaped(value: Value, shape) -> Value:
    """value with a shape the builder could not infer (Gather, Transpose...), for real symbolics that
    read it; a folded constant already has its own."""
    if value.shape is None and shape is not None:
        value.shape = tuple(shape)
    return value


def split(g: GraphBuilder, x: Value, real: torch.dtype | None = None) -> tuple[Value, Value | None]:
    """(real, imaginary) parts of x without the pair axis, in dtype real (x's own by default); a
    real x has no imaginary part."""
    shape = cx.logical_shape(x)
    if not x.complex:
        return (x if real is None else cast(g, x, real)), None
    re, im = (_shaped(cx.component(g, x, i), shape) for i in (0, 1))
    if real is not None:
        re, im = cast(g, re, real), cast(g, im, real)
    return re, im


def join(g: GraphBuilder, re: Value, im: Value | None) -> Value:
    """The carrier of re + i*im from parts without the pair axis (of one shape)."""
    out = cx.pack(g, cx.lift(g, re), None if im is None else cx.lift(g, im))
    return _shaped(out, None if re.shape is None else tuple(re.shape) + (2,))


def rank_of(x: Value) -> int:
    rank = cx.logical_rank(x)
    if rank is None:
        raise NotImplementedError("a complex tensor of unknown rank")
    return rank


def shape_of(g: GraphBuilder, x: Value) -> Value | list:
    """The shape of the tensor x stands for: a list when static, else a 1-D int64 value."""
    if x.is_static:
        return list(cx.logical_shape(x))
    shape = g.op("Shape", x)
    if not x.complex:
        return shape
    return g.op("Gather", shape, g.const(list(range(rank_of(x))), dtype=torch.int64), axis=0)


def _shape_value(g: GraphBuilder, shape: Value | list) -> Value:
    return shape if isinstance(shape, Value) else g.int_list(list(shape))


def _pairs_first(g: GraphBuilder, x: Value) -> Value:
    """A carrier [S..., 2] as [2, S...], for real ops that work on the trailing dims (tril, diagonal)."""
    rank = rank_of(x)
    out = g.op("Transpose", x, perm=[rank] + list(range(rank)))
    return _shaped(out, None if x.shape is None else (2,) + tuple(x.shape[:-1]))


def _pairs_last(g: GraphBuilder, y: Value, rank: int) -> Value:
    """The inverse of _pairs_first for a result of logical rank `rank`."""
    return g.op("Transpose", y, perm=list(range(1, rank + 1)) + [0])


def _k(g: GraphBuilder, value: float, like: Value) -> Value:
    return g.const(value, like=like)


def _wide(g: GraphBuilder, x: Value) -> Value:
    """float32 parts in float64, where a formula would lose range or precision (abs, sqrt, log)."""
    return cast(g, x, torch.float64) if x.dtype in (torch.float16, torch.bfloat16, torch.float32) else x


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
    return convert(g, self, dtype)


@register("aten::chalf.default")
def aten_chalf(g, self, *, memory_format=None):
    """chalf(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor"""
    return convert(g, self, torch.complex32)  # carried as float16 pairs


@register("aten::to.dtype")
def aten_to_dtype(g, self, dtype, non_blocking=False, copy=False, memory_format=None):
    """to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"""
    return convert(g, self, dtype)


@register("aten::to.dtype_layout")
def aten_to_dtype_layout(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
                         copy=False, memory_format=None):
    """to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"""
    return convert(g, self, dtype)


@register("aten::to.device")
def aten_to_device(g, self, device, dtype, non_blocking=False, copy=False, memory_format=None):
    """to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"""
    return convert(g, self, dtype)


@register("aten::type_as.default")
def aten_type_as(g, self, other):
    """type_as(Tensor self, Tensor other) -> Tensor"""
    return convert(g, self, dtype_of(other))


@register("aten::real.default")
def aten_real(g, self):
    """real(Tensor(a) self) -> Tensor(a)"""
    return cx.component(g, self, 0)


@register("aten::imag.default")
def aten_imag(g, self):
    """imag(Tensor(a) self) -> Tensor(a)"""
    return cx.component(g, self, 1)


@register("aten::clone.default")
def aten_clone(g, self, *, memory_format=None):
    """clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor"""
    return self


@register("aten::contiguous.default")
def aten_contiguous(g, self, *, memory_format=torch.contiguous_format):
    """contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)"""
    return self


@register("aten::detach.default", "aten::alias.default", "aten::lift_fresh_copy.default", "aten::alias_copy.default",
          "aten::detach_copy.default", "aten::positive.default", "aten::resolve_conj.default",
          "aten::resolve_neg.default")
def aten_detach(g, self):
    """detach(Tensor(a) self) -> Tensor(a)"""
    # Graph values are materialized: a conjugate or negative view is already resolved.
    return self


@register("aten::_conj.default", "aten::conj.default", "aten::conj_physical.default")
def aten__conj(g, self):
    """_conj(Tensor(a) self) -> Tensor(a)"""
    return conj(g, self)


def conj(g: GraphBuilder, x: Value) -> Value:
    """The conjugate carrier: the imaginary part negated (a zero becomes -0, as in eager)."""
    return g.op("Mul", x, g.const([1.0, -1.0], dtype=x.dtype))


@register("aten::_neg_view.default")
def aten__neg_view(g, self):
    """_neg_view(Tensor(a) self) -> Tensor(a)"""
    return g.op("Neg", self)


@register("aten::_assert_tensor_metadata.default")
def aten__assert_tensor_metadata(g, a, size=None, stride=None, dtype=None, *, device=None, layout=None):
    """_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None, ScalarType? dtype=None, *, Device? device=None, Layout? layout=None) -> ()"""
    return None


@register("aten::copy.default")
def aten_copy(g, self, src, non_blocking=False):
    """copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor"""
    value = convert(g, src, dtype_of(self))
    if self.shape is not None and value.shape == self.shape:
        return value
    return g.op("Expand", value, g.const(list(self.shape), dtype=torch.int64) if self.is_static else g.op("Shape", self))


# -- creation -------------------------------------------------------------------------------------------------


def full(g: GraphBuilder, size: Value | list, value, dtype: torch.dtype) -> Value:
    """A tensor of `size` (a list or a 1-D value) filled with a number or a 0-d tensor, of dtype."""
    if isinstance(value, Value):
        fill = convert(g, value, dtype)
    elif not dtype.is_complex:
        if isinstance(value, complex):
            raise NotImplementedError(f"a complex fill value for a {dtype} tensor")
        fill = g.const(value, dtype=dtype)
    elif isinstance(size, list) and all(isinstance(s, int) for s in size) and 0 < math.prod(size) <= 64:
        return g.const(torch.full(size, complex(value), dtype=dtype))
    else:
        fill = carrier(g, value, dtype)
    shape = _shape_value(g, size)
    if dtype.is_complex:
        shape = g.op("Concat", shape, g.const([2], dtype=torch.int64), axis=0)
    return g.op("Expand", fill, shape)


def fill_dtype(value, dtype) -> torch.dtype:
    """full's dtype: the given one, else the default for the fill value's kind."""
    if dtype is not None:
        return scalar_type(dtype)
    if isinstance(value, complex):
        return _dtypes.complex_of(torch.get_default_dtype())
    if isinstance(value, bool):
        return torch.bool
    return torch.int64 if isinstance(value, int) else torch.get_default_dtype()


@register("aten::full.default")
def aten_full(g, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    """full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return full(g, list(size), fill_value, fill_dtype(fill_value, dtype))


@register("aten::zeros.default")
def aten_zeros(g, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return full(g, list(size), 0, fill_dtype(0.0, dtype))


@register("aten::empty.memory_format")
def aten_empty(g, size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return full(g, list(size), 0, fill_dtype(0.0, dtype))  # uninitialized in eager; zeros here


@register("aten::ones.default")
def aten_ones(g, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return full(g, list(size), 1, fill_dtype(1.0, dtype))


@register("aten::full_like.default")
def aten_full_like(g, self, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None,
                   memory_format=None):
    """full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return full(g, shape_of(g, self), fill_value, scalar_type(dtype) or dtype_of(self))


@register("aten::zeros_like.default", "aten::empty_like.default")
def aten_zeros_like(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return full(g, shape_of(g, self), 0, scalar_type(dtype) or dtype_of(self))


@register("aten::ones_like.default")
def aten_ones_like(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return full(g, shape_of(g, self), 1, scalar_type(dtype) or dtype_of(self))


@register("aten::new_full.default")
def aten_new_full(g, self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    """new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return full(g, list(size), fill_value, scalar_type(dtype) or dtype_of(self))


@register("aten::new_zeros.default", "aten::new_empty.default")
def aten_new_zeros(g, self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return full(g, list(size), 0, scalar_type(dtype) or dtype_of(self))


@register("aten::new_ones.default")
def aten_new_ones(g, self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return full(g, list(size), 1, scalar_type(dtype) or dtype_of(self))


@register("aten::fill.Scalar", "aten::fill.Tensor")
def aten_fill(g, self, value):
    """fill.Scalar(Tensor self, Scalar value) -> Tensor"""
    return full(g, shape_of(g, self), value, dtype_of(self))


@register("aten::zero.default")
def aten_zero(g, self):
    """zero(Tensor self) -> Tensor"""
    return full(g, shape_of(g, self), 0, dtype_of(self))


@register("aten::scalar_tensor.default")
def aten_scalar_tensor(g, s, *, dtype=None, layout=None, device=None, pin_memory=None):
    """scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    default = torch.get_default_dtype()
    return full(g, [], s, scalar_type(dtype) or (_dtypes.complex_of(default) if isinstance(s, complex) else default))


# -- layout: the real symbolic on the carrier, dims moved before the pair axis ----------------------------


def on_carrier(g: GraphBuilder, key: str, self: Value, *args, **kwargs):
    """The real symbolic for key applied to a carrier (its dims and sizes already adjusted)."""
    return real_symbolic(g, key)(g, self, *args, **kwargs)


@register("aten::view.default", "aten::_unsafe_view.default", "aten::view_copy.default")
def aten_view(g, self, size):
    """view(Tensor(a) self, SymInt[] size) -> Tensor(a)"""
    return on_carrier(g, "aten::view.default", self, list(size) + [2])


@register("aten::reshape.default")
def aten_reshape(g, self, shape):
    """reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)"""
    return on_carrier(g, "aten::reshape.default", self, list(shape) + [2])


@register("aten::view_as.default", "aten::reshape_as.default")
def aten_view_as(g, self, other):
    """view_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    shape = shape_of(g, other)
    if isinstance(shape, list):
        return on_carrier(g, "aten::reshape.default", self, shape + [2])
    return g.op("Reshape", self, g.op("Concat", shape, g.const([2], dtype=torch.int64), axis=0))


@register("aten::ravel.default")
def aten_ravel(g, self):
    """ravel(Tensor(a) self) -> Tensor(a)"""
    return on_carrier(g, "aten::reshape.default", self, [-1, 2])


@register("aten::flatten.using_ints")
def aten_flatten(g, self, start_dim=0, end_dim=-1):
    """flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)"""
    rank = rank_of(self)
    if rank == 0:
        return on_carrier(g, "aten::reshape.default", self, [1, 2])
    return on_carrier(g, "aten::flatten.using_ints", self, cx.dim(start_dim, rank), cx.dim(end_dim, rank))


@register("aten::unflatten.int")
def aten_unflatten(g, self, dim, sizes):
    """unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)"""
    return on_carrier(g, "aten::unflatten.int", self, cx.dim(dim, rank_of(self)), sizes)


@register("aten::permute.default", "aten::permute_copy.default")
def aten_permute(g, self, dims):
    """permute(Tensor(a) self, int[] dims) -> Tensor(a)"""
    rank = rank_of(self)
    return on_carrier(g, "aten::permute.default", self, cx.dims(dims, rank) + [rank])


@register("aten::transpose.int", "aten::transpose_copy.int")
def aten_transpose(g, self, dim0, dim1):
    """transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"""
    rank = rank_of(self)
    if rank < 2:
        return self
    return on_carrier(g, "aten::transpose.int", self, cx.dim(dim0, rank), cx.dim(dim1, rank))


@register("aten::t.default", "aten::t_copy.default")
def aten_t(g, self):
    """t(Tensor(a) self) -> Tensor(a)"""
    return aten_transpose(g, self, 0, 1)


@register("aten::numpy_T.default")
def aten_numpy_T(g, self):
    """numpy_T(Tensor(a) self) -> Tensor(a)"""
    return aten_permute(g, self, list(range(rank_of(self)))[::-1])


@register("aten::mT.default")
def aten_mT(g, self):
    """mT(Tensor(a) self) -> Tensor(a)"""
    return aten_transpose(g, self, -2, -1)


@register("aten::mH.default", "aten::adjoint.default", "aten::matrix_H.default")
def aten_mH(g, self):
    """mH(Tensor(a) self) -> Tensor(a)"""
    return conj(g, aten_transpose(g, self, -2, -1))


@register("aten::movedim.int")
def aten_movedim(g, self, source, destination):
    """movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)"""
    return aten_movedim_intlist(g, self, [source], [destination])


@register("aten::movedim.intlist")
def aten_movedim_intlist(g, self, source, destination):
    """movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)"""
    rank = rank_of(self)
    source, destination = cx.dims(source, rank), cx.dims(destination, rank)
    rest = iter(d for d in range(rank) if d not in source)
    moved = dict(zip(destination, source))
    return aten_permute(g, self, [moved[d] if d in moved else next(rest) for d in range(rank)])


@register("aten::unsqueeze.default", "aten::unsqueeze_copy.default")
def aten_unsqueeze(g, self, dim):
    """unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"""
    return on_carrier(g, "aten::unsqueeze.default", self, cx.dim(dim, rank_of(self) + 1))


@register("aten::squeeze.default", "aten::squeeze_copy.default")
def aten_squeeze(g, self):
    """squeeze(Tensor(a) self) -> Tensor(a)"""
    return on_carrier(g, "aten::squeeze.default", self)  # the pair axis (2) is never squeezed


@register("aten::squeeze.dim", "aten::squeeze_copy.dim")
def aten_squeeze_dim(g, self, dim):
    """squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)"""
    return aten_squeeze_dims(g, self, [dim])


@register("aten::squeeze.dims", "aten::squeeze_copy.dims")
def aten_squeeze_dims(g, self, dim):
    """squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)"""
    rank = rank_of(self)
    if rank == 0:
        return self
    return on_carrier(g, "aten::squeeze.dims", self, cx.dims(dim, rank))


@register("aten::expand.default", "aten::expand_copy.default")
def aten_expand(g, self, size, *, implicit=False):
    """expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)"""
    return on_carrier(g, "aten::expand.default", self, list(size) + [2])


@register("aten::expand_as.default")
def aten_expand_as(g, self, other):
    """expand_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    shape = shape_of(g, other)
    if self.complex:
        shape = list(shape) + [2] if isinstance(shape, list) else \
            g.op("Concat", shape, g.const([2], dtype=torch.int64), axis=0)
    return g.op("Expand", self, _shape_value(g, shape))


@register("aten::slice.Tensor", "aten::slice_copy.Tensor")
def aten_slice(g, self, dim=0, start=None, end=None, step=1):
    """slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)"""
    return on_carrier(g, "aten::slice.Tensor", self, cx.dim(dim, rank_of(self)), start, end, step)


@register("aten::select.int", "aten::select_copy.int")
def aten_select(g, self, dim, index):
    """select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"""
    return on_carrier(g, "aten::select.int", self, cx.dim(dim, rank_of(self)), index)


@register("aten::narrow.default", "aten::narrow_copy.default")
def aten_narrow(g, self, dim, start, length):
    """narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)"""
    return on_carrier(g, "aten::narrow.default", self, cx.dim(dim, rank_of(self)), start, length)


@register("aten::split.Tensor", "aten::unsafe_split.Tensor")
def aten_split(g, self, split_size, dim=0):
    """split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"""
    return on_carrier(g, "aten::split.Tensor", self, split_size, cx.dim(dim, rank_of(self)))


@register("aten::split_with_sizes.default", "aten::split_with_sizes_copy.default")
def aten_split_with_sizes(g, self, split_sizes, dim=0):
    """split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]"""
    return on_carrier(g, "aten::split_with_sizes.default", self, split_sizes, cx.dim(dim, rank_of(self)))


@register("aten::chunk.default", "aten::unsafe_chunk.default")
def aten_chunk(g, self, chunks, dim=0):
    """chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"""
    return on_carrier(g, "aten::chunk.default", self, chunks, cx.dim(dim, rank_of(self)))


@register("aten::unbind.int", "aten::unbind_copy.int")
def aten_unbind(g, self, dim=0):
    """unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]"""
    return on_carrier(g, "aten::unbind.int", self, cx.dim(dim, rank_of(self)))


@register("aten::tensor_split.sections")
def aten_tensor_split_sections(g, self, sections, dim=0):
    """tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]"""
    return on_carrier(g, "aten::tensor_split.sections", self, sections, cx.dim(dim, rank_of(self)))


@register("aten::tensor_split.indices")
def aten_tensor_split_indices(g, self, indices, dim=0):
    """tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]"""
    return on_carrier(g, "aten::tensor_split.indices", self, indices, cx.dim(dim, rank_of(self)))


def _legacy_empty(x: Value) -> bool:
    """A 1-D tensor of no elements, which cat skips whatever the other shapes are."""
    return cx.logical_shape(x) == (0,)


@register("aten::cat.default")
def aten_cat(g, tensors, dim=0):
    """cat(Tensor[] tensors, int dim=0) -> Tensor"""
    dtype = functools.reduce(torch.promote_types, [dtype_of(t) for t in tensors])
    kept = [t for t in tensors if not _legacy_empty(t)] or list(tensors[:1])
    parts = [carrier(g, t, dtype) for t in kept]  # real tensors get a zero imaginary part
    if len(parts) == 1:
        return parts[0]
    return g.op("Concat", *parts, axis=cx.dim(dim, rank_of(kept[0])))


@register("aten::stack.default")
def aten_stack(g, tensors, dim=0):
    """stack(Tensor[] tensors, int dim=0) -> Tensor"""
    dtype = functools.reduce(torch.promote_types, [dtype_of(t) for t in tensors])
    axis = cx.dim(dim, rank_of(tensors[0]) + 1)
    parts = [unsqueeze_static(g, _shaped(carrier(g, t, dtype), cx.logical_shape(t) + (2,)
                                         if t.shape is not None else None), axis) for t in tensors]
    return parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis=axis)


@register("aten::index_select.default")
def aten_index_select(g, self, dim, index):
    """index_select(Tensor self, int dim, Tensor index) -> Tensor"""
    rank = rank_of(self)
    if rank == 0:
        return self  # the one element (eager rejects any index but 0)
    return on_carrier(g, "aten::index_select.default", self, cx.dim(dim, rank), index)


@register("aten::index.Tensor")
def aten_index(g, self, indices):
    """index.Tensor(Tensor self, Tensor?[] indices) -> Tensor"""
    # The pair axis is a trailing dim no index touches, so it stays last, as advanced indexing keeps it.
    return on_carrier(g, "aten::index.Tensor", self, indices)


@register("aten::flip.default")
def aten_flip(g, self, dims):
    """flip(Tensor self, int[] dims) -> Tensor"""
    rank = rank_of(self)
    if rank == 0 or not dims:
        return self
    return on_carrier(g, "aten::flip.default", self, cx.dims(dims, rank))


@register("aten::roll.default")
def aten_roll(g, self, shifts, dims=[]):
    """roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor"""
    rank = rank_of(self)
    if rank == 0:
        return self
    if dims:
        return on_carrier(g, "aten::roll.default", self, shifts, cx.dims(dims, rank))
    # no dims: roll the flattened elements (pairs stay together), then restore the shape
    numel = math.prod(cx.logical_shape(self)) if self.is_static else -1
    flat = _shaped(g.op("Reshape", self, g.const([-1, 2], dtype=torch.int64)), (numel, 2) if numel >= 0 else None)
    rolled = on_carrier(g, "aten::roll.default", flat, shifts, [0])
    return g.op("Reshape", rolled, _shape_value(g, list(self.shape)) if self.is_static else g.op("Shape", self))


@register("aten::repeat.default")
def aten_repeat(g, self, repeats):
    """repeat(Tensor self, SymInt[] repeats) -> Tensor"""
    return on_carrier(g, "aten::repeat.default", self, list(repeats) + [1])


@register("aten::tile.default")
def aten_tile(g, self, dims):
    """tile(Tensor self, SymInt[] dims) -> Tensor"""
    dims = [1] * (rank_of(self) - len(dims)) + list(dims)
    return aten_repeat(g, self, dims)


@register("aten::diagonal.default", "aten::diagonal_copy.default")
def aten_diagonal(g, self, offset=0, dim1=0, dim2=1):
    """diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)"""
    rank = rank_of(self)
    out = on_carrier(g, "aten::diagonal.default", _pairs_first(g, self), offset,
                     norm_dim(dim1, rank) + 1, norm_dim(dim2, rank) + 1)
    return _pairs_last(g, out, rank - 1)


@register("aten::diag_embed.default")
def aten_diag_embed(g, self, offset=0, dim1=-2, dim2=-1):
    """diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor"""
    rank = rank_of(self) + 1
    out = on_carrier(g, "aten::diag_embed.default", _pairs_first(g, self), offset,
                     norm_dim(dim1, rank) + 1, norm_dim(dim2, rank) + 1)
    return _pairs_last(g, out, rank)


@register("aten::diag.default")
def aten_diag(g, self, diagonal=0):
    """diag(Tensor self, int diagonal=0) -> Tensor"""
    if rank_of(self) == 1:
        return aten_diag_embed(g, self, diagonal, 0, 1)
    return aten_diagonal(g, self, diagonal, 0, 1)


@register("aten::tril.default")
def aten_tril(g, self, diagonal=0):
    """tril(Tensor self, SymInt diagonal=0) -> Tensor"""
    return _pairs_last(g, on_carrier(g, "aten::tril.default", _pairs_first(g, self), diagonal), rank_of(self))


@register("aten::triu.default")
def aten_triu(g, self, diagonal=0):
    """triu(Tensor self, SymInt diagonal=0) -> Tensor"""
    return _pairs_last(g, on_carrier(g, "aten::triu.default", _pairs_first(g, self), diagonal), rank_of(self))


@register("aten::pad.default")
def aten_pad(g, self, pad, mode="constant", value=None):
    """pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor"""
    if mode == "constant":
        return aten_constant_pad_nd(g, self, pad, 0 if value is None else value)
    # reflect, replicate, circular: each part on its own (an extra axis would change F.pad's reading)
    re, im = split(g, self)
    return join(g, on_carrier(g, "aten::pad.default", re, pad, mode, value),
                on_carrier(g, "aten::pad.default", im, pad, mode, value))


def _where(g: GraphBuilder, condition: Value, a, b) -> Value:
    """where(condition, a, b) for a complex result: both branches as carriers, the condition lifted."""
    dtype = complex_result(a, b)
    return g.op("Where", cx.lift(g, cast(g, condition, torch.bool)), carrier(g, a, dtype), carrier(g, b, dtype))


@register("aten::where.self")
def aten_where(g, condition, self, other):
    """where.self(Tensor condition, Tensor self, Tensor other) -> Tensor"""
    return _where(g, condition, self, other)


@register("aten::where.ScalarSelf")
def aten_where_scalar_self(g, condition, self, other):
    """where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor"""
    return _where(g, condition, self, other)


@register("aten::where.ScalarOther")
def aten_where_scalar_other(g, condition, self, other):
    """where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor"""
    return _where(g, condition, self, other)


@register("aten::where.Scalar")
def aten_where_scalar(g, condition, self, other):
    """where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor"""
    return _where(g, condition, self, other)


@register("aten::masked_fill.Scalar", "aten::masked_fill.Tensor")
def aten_masked_fill(g, self, mask, value):
    """masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor"""
    if not self.complex:
        raise NotImplementedError("masked_fill of a real tensor with a complex value")
    dtype = dtype_of(self)
    return g.op("Where", cx.lift(g, cast(g, mask, torch.bool)), carrier(g, value, dtype), self)


@register("aten::constant_pad_nd.default")
def aten_constant_pad_nd(g, self, pad, value=0):
    """constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor"""
    z = complex(value)
    if z == 0:  # pad lists the last dim first: the carrier's pair axis gets no padding
        return on_carrier(g, "aten::constant_pad_nd.default", self, [0, 0] + list(pad), 0)
    re, im = split(g, self)
    return join(g, on_carrier(g, "aten::constant_pad_nd.default", re, pad, z.real),
                on_carrier(g, "aten::constant_pad_nd.default", im, pad, z.imag))


# -- complex math on parts ----------------------------------------------------------------------------------
# Parts carry a trailing axis of 1 (cx.parts), so parts of different shapes broadcast as the complex
# tensors do, and the result packs with one Concat.


def _is_complex(x) -> bool:
    return x.complex if isinstance(x, Value) else isinstance(x, complex)


def pair_parts(g: GraphBuilder, c: Value) -> Parts:
    """Parts of a carrier built here (cx.parts reads the complex tag, which only graph values from
    FX carry)."""
    return (g.op("Gather", c, g.const([0], dtype=torch.int64), axis=-1),
            g.op("Gather", c, g.const([1], dtype=torch.int64), axis=-1))


def times_i(g: GraphBuilder, c: Value) -> Value:
    """i * c for a carrier c: (-Im c, Re c)."""
    swapped = g.op("Gather", c, g.const([1, 0], dtype=torch.int64), axis=-1)
    return g.op("Mul", swapped, g.const([-1.0, 1.0], dtype=c.dtype))


def carrier_mul(g: GraphBuilder, a: Value, b: Value) -> Value:
    """a * b for carriers (broadcasting) as Re(a) b + Im(a) (i b): b is read whole, so a weight there
    stays one initializer (its rotation folds to a constant when small)."""
    re, im = pair_parts(g, a)
    return g.op("Add", g.op("Mul", re, b), g.op("Mul", im, times_i(g, b)))


def _mul_number(g: GraphBuilder, c: Value, z: complex) -> Value:
    """A carrier times a Python number: z.real c + z.imag (i c)."""
    scaled = None if z.real == 0 else c if z.real == 1 else g.op("Mul", c, g.const(z.real, dtype=c.dtype))
    if z.imag == 0:
        return scaled if scaled is not None else g.op("Mul", c, g.const(0.0, dtype=c.dtype))
    turned = times_i(g, c)
    turned = turned if z.imag == 1 else g.op("Mul", turned, g.const(z.imag, dtype=c.dtype))
    return turned if scaled is None else g.op("Add", scaled, turned)


def complex_div(g: GraphBuilder, a: Parts, b: Parts) -> Parts:
    """a / b with both scaled by max(|Re b|, |Im b|) first, as eager's kernel does, so |b|^2 neither
    overflows nor underflows."""
    (ar, ai), (br, bi) = a, b
    if bi is None:
        return g.op("Div", ar, br), None if ai is None else g.op("Div", ai, br)
    scale = g.op("Reciprocal", g.op("Max", g.op("Abs", br), g.op("Abs", bi)))
    ar, ai, br, bi = (None if p is None else g.op("Mul", p, scale) for p in (ar, ai, br, bi))
    denom = g.op("Add", g.op("Mul", br, br), g.op("Mul", bi, bi))
    re = cx.add(g, cx.mul(g, ar, br), cx.mul(g, ai, bi))
    im = cx.sub(g, cx.mul(g, ai, br), cx.mul(g, ar, bi))
    return g.op("Div", re, denom), g.op("Div", im, denom)


def _negative(g: GraphBuilder, x: Value) -> Value:
    """x < 0 or x is -0 (the sign bit, where atan2 and sqrt read it); False for NaN."""
    zero = _k(g, 0.0, x)
    return g.op("Or", g.op("Less", x, zero), g.op("Less", g.op("Reciprocal", x), zero))


def _is_inf(g: GraphBuilder, x: Value) -> Value:
    """|x| is infinite, by comparing with the largest finite value (IsInf comes at opset 10)."""
    return g.op("Greater", g.op("Abs", x), _k(g, torch.finfo(x.dtype).max, x))


def hypot(g: GraphBuilder, re: Value, im: Value) -> Value:
    """|re + i im| as C's hypot: without overflow (float32 parts squared in float64, float64 parts
    scaled), and infinite when a part is, even if the other is NaN."""
    if re.dtype != torch.float64:
        r, i = cast(g, re, torch.float64), cast(g, im, torch.float64)
        out = cast(g, g.op("Sqrt", g.op("Add", g.op("Mul", r, r), g.op("Mul", i, i))), re.dtype)
    else:
        out = _scaled_hypot(g, re, im)
    infinite = g.op("Or", _is_inf(g, re), _is_inf(g, im))
    return g.op("Where", infinite, _k(g, math.inf, out), out)


def _scaled_hypot(g: GraphBuilder, re: Value, im: Value) -> Value:
    """hi * sqrt(1 + (lo / hi)^2) for hi, lo the larger and smaller of |re|, |im|."""
    a, b = g.op("Abs", re), g.op("Abs", im)
    bigger = g.op("Greater", b, a)
    hi, lo = g.op("Where", bigger, b, a), g.op("Where", bigger, a, b)
    q = g.op("Div", lo, hi)
    scaled = g.op("Mul", hi, g.op("Sqrt", g.op("Add", _k(g, 1.0, q), g.op("Mul", q, q))))
    # lo == hi (both zero or both infinite) makes q 0/0 or inf/inf; a NaN part stays NaN
    same = g.op("Not", g.op("Or", g.op("Less", lo, hi), g.op("IsNaN", lo)))
    return g.op("Where", same, g.op("Mul", hi, _k(g, math.sqrt(2.0), hi)), scaled)


def log_abs(g: GraphBuilder, re: Value, im: Value) -> Value:
    """log |re + i im|, float32 parts through float64 so tiny and huge parts keep their range."""
    if re.dtype != torch.float64:
        r, i = cast(g, re, torch.float64), cast(g, im, torch.float64)
        half_log = g.op("Mul", g.op("Log", g.op("Add", g.op("Mul", r, r), g.op("Mul", i, i))), _k(g, 0.5, r))
        return cast(g, half_log, re.dtype)
    return g.op("Log", hypot(g, re, im))


def atan(g: GraphBuilder, x: Value) -> Value:
    """Atan; onnxruntime has it for float only, so float64 takes float32's and one Newton step on
    sin t - x cos t = 0, which squares its error (1e-7 -> 1e-14)."""
    if x.dtype != torch.float64:
        return g.op("Atan", x)
    t = cast(g, g.op("Atan", cast(g, x, torch.float32)), torch.float64)
    sin, cos = g.op("Sin", t), g.op("Cos", t)
    step = g.op("Div", g.op("Sub", sin, g.op("Mul", x, cos)), g.op("Add", cos, g.op("Mul", x, sin)))
    return g.op("Sub", t, step)


def sinh_cosh(g: GraphBuilder, x: Value) -> tuple[Value, Value]:
    """(sinh x, cosh x); onnxruntime has Sinh and Cosh for float only, so float64 goes through Exp."""
    if x.dtype != torch.float64:
        return g.op("Sinh", x), g.op("Cosh", x)
    up, down = g.op("Exp", x), g.op("Exp", g.op("Neg", x))
    half = _k(g, 0.5, x)
    return g.op("Mul", g.op("Sub", up, down), half), g.op("Mul", g.op("Add", up, down), half)


def atan2(g: GraphBuilder, y: Value | None, x: Value) -> Value:
    """atan2(y, x) from Atan (ONNX has no Atan2): the angle of (|x|, |y|) in [0, pi/2] from the
    smaller-over-larger ratio, then reflected by the sign bits of x and y, so signed zeros, infinities
    and NaN come out as in C's atan2. y None is a zero."""
    if y is None:
        y = g.op("Mul", x, _k(g, 0.0, x))  # +0 or -0 does not matter to the result but NaN does
        y = g.op("Where", g.op("IsNaN", y), y, _k(g, 0.0, x))
    ax, ay = g.op("Abs", x), g.op("Abs", y)
    steep = g.op("Greater", ay, ax)
    num, den = g.op("Where", steep, ax, ay), g.op("Where", steep, ay, ax)
    # num == den: 0/0 (both zero) reads 0, inf/inf (both infinite) 1; a NaN stays NaN through Div
    tie = g.op("Not", g.op("Or", g.op("Less", num, den), g.op("Or", g.op("IsNaN", num), g.op("IsNaN", den))))
    ratio = g.op("Where", tie, g.op("Where", is_zero(g, den), _k(g, 0.0, x), _k(g, 1.0, x)), g.op("Div", num, den))
    t = atan(g, ratio)
    t = g.op("Where", steep, g.op("Sub", _k(g, math.pi / 2, t), t), t)
    t = g.op("Where", _negative(g, x), g.op("Sub", _k(g, math.pi, t), t), t)
    return g.op("Where", _negative(g, y), g.op("Neg", t), t)


def complex_abs(g: GraphBuilder, x: Value, real: torch.dtype | None = None) -> Value:
    """|x| of a complex graph value, without the pair axis."""
    re, im = split(g, x, real)
    return _shaped(hypot(g, re, im), cx.logical_shape(x))


def complex_exp(g: GraphBuilder, z: Parts) -> Parts:
    re, im = z
    e = g.op("Exp", re)
    if im is None:
        return e, None
    return g.op("Mul", e, g.op("Cos", im)), g.op("Mul", e, g.op("Sin", im))


def complex_log(g: GraphBuilder, z: Parts) -> Parts:
    re, im = z
    if im is None:
        im = g.op("Mul", re, _k(g, 0.0, re))
        im = g.op("Where", g.op("IsNaN", im), im, _k(g, 0.0, re))
    return log_abs(g, re, im), atan2(g, im, re)


def complex_sqrt(g: GraphBuilder, z: Parts) -> Parts:
    """The principal square root, as C's csqrt: t = sqrt((|re| + |z|) / 2) goes to the real part
    when re >= 0, else to the imaginary part with the sign of im; float32 computes in float64."""
    re, im = z
    dtype = re.dtype
    re = cast(g, re, torch.float64)
    im = cast(g, im, torch.float64) if im is not None else g.op("Mul", re, _k(g, 0.0, re))
    half = _k(g, 0.5, re)  # halved before the sum, which could overflow float64
    t = g.op("Sqrt", g.op("Add", g.op("Mul", g.op("Abs", re), half), g.op("Mul", hypot(g, re, im), half)))
    other = g.op("Div", im, g.op("Add", t, t))
    other = g.op("Where", is_zero(g, t), im, other)  # sqrt(+-0 + i0) = +0 + i0
    right = g.op("Not", _negative(g, re))
    out_re = g.op("Where", right, t, g.op("Abs", other))
    out_im = g.op("Where", right, other, g.op("Where", _negative(g, im), g.op("Neg", t), t))
    infinite = _is_inf(g, im)  # sqrt(x +- i inf) = inf +- i inf, whatever x is
    out_re = g.op("Where", infinite, _k(g, math.inf, out_re), out_re)
    out_im = g.op("Where", infinite, im, out_im)
    return cast(g, out_re, dtype), cast(g, out_im, dtype)


def complex_pow(g: GraphBuilder, z: Parts, w: Parts) -> Parts:
    """z ** w = exp(w log z), as C's cpow; a zero base gives 0 where Re w > 0."""
    log = complex_log(g, z)
    out = complex_exp(g, cx.complex_mul(g, log, w))
    zr, zi = z
    zero = is_zero(g, zr) if zi is None else g.op("And", is_zero(g, zr), is_zero(g, zi))
    zero = g.op("And", zero, g.op("Greater", w[0], _k(g, 0.0, w[0])))
    re, im = out
    im = im if im is not None else g.op("Mul", re, _k(g, 0.0, re))
    return tuple(g.op("Where", zero, _k(g, 0.0, p), p) for p in (re, im))


def complex_int_pow(g: GraphBuilder, z: Parts, n: int) -> Parts:
    """z ** n for an integer n, by repeated squaring (negative n: the reciprocal)."""
    result, base, k = None, z, abs(n)
    while k:
        if k & 1:
            result = base if result is None else cx.complex_mul(g, result, base)
        k >>= 1
        if k:
            base = cx.complex_mul(g, base, base)
    if n < 0:
        result = complex_div(g, (_k(g, 1.0, z[0]), None), result)
    return result


def complex_tanh(g: GraphBuilder, z: Parts) -> Parts:
    """tanh(a + ib) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b), with |a| held at 20 (where tanh is
    1 to float64 precision) so cosh does not overflow."""
    a, b = z
    big = g.op("Greater", g.op("Abs", a), _k(g, 20.0, a))
    a = g.op("Where", big, g.op("Mul", g.op("Sign", a), _k(g, 20.0, a)), a)
    a2 = g.op("Add", a, a)
    re, denom = sinh_cosh(g, a2)
    if b is None:
        return g.op("Div", re, denom), None
    b2 = g.op("Add", b, b)
    denom = g.op("Add", denom, g.op("Cos", b2))
    return g.op("Div", re, denom), g.op("Div", g.op("Sin", b2), denom)


# -- arithmetic -------------------------------------------------------------------------------------------


def _scaled(g: GraphBuilder, x, alpha, dtype: torch.dtype) -> Value:
    """alpha * x as a carrier of dtype."""
    alpha = complex(alpha)
    if not isinstance(x, Value):
        return carrier(g, complex(x) * alpha, dtype)
    return _mul_number(g, carrier(g, x, dtype), alpha)


@register("aten::add.Tensor")
def aten_add(g, self, other, *, alpha=1):
    """add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    dtype = complex_result(self, other)
    return g.op("Add", carrier(g, self, dtype), _scaled(g, other, alpha, dtype))


@register("aten::add.Scalar")
def aten_add_scalar(g, self, other, alpha=1):
    """add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return aten_add(g, self, other, alpha=alpha)


@register("aten::sub.Tensor")
def aten_sub(g, self, other, *, alpha=1):
    """sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    dtype = complex_result(self, other)
    return g.op("Sub", carrier(g, self, dtype), _scaled(g, other, alpha, dtype))


@register("aten::sub.Scalar")
def aten_sub_scalar(g, self, other, alpha=1):
    """sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return aten_sub(g, self, other, alpha=alpha)


@register("aten::rsub.Tensor")
def aten_rsub(g, self, other, *, alpha=1):
    """rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    dtype = complex_result(self, other)
    return g.op("Sub", carrier(g, other, dtype), _scaled(g, self, alpha, dtype))


@register("aten::rsub.Scalar")
def aten_rsub_scalar(g, self, other, alpha=1):
    """rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return aten_rsub(g, self, other, alpha=alpha)


@register("aten::mul.Tensor", "aten::mul.Scalar")
def aten_mul(g, self, other):
    """mul.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = complex_result(self, other)
    real = _dtypes.real_part(dtype)
    a, b = (self, other) if _is_complex(self) else (other, self)
    if not _is_complex(b):  # a real factor scales both parts: one Mul
        factor = cx.lift(g, cast(g, b, real)) if isinstance(b, Value) else g.const(float(b), dtype=real)
        return g.op("Mul", carrier(g, a, dtype), factor)
    if not isinstance(b, Value):
        return _mul_number(g, carrier(g, a, dtype), complex(b))
    if a.kind in ("const", "initializer") and b.kind not in ("const", "initializer"):
        a, b = b, a  # the weight is read whole (see carrier_mul)
    return carrier_mul(g, carrier(g, a, dtype), carrier(g, b, dtype))


@register("aten::div.Tensor", "aten::div.Scalar")
def aten_div(g, self, other):
    """div.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = complex_result(self, other)
    real = _dtypes.real_part(dtype)
    if not _is_complex(other):
        divisor = cx.lift(g, cast(g, other, real)) if isinstance(other, Value) else g.const(float(other), dtype=real)
        return g.op("Div", carrier(g, self, dtype), divisor)
    return cx.pack(g, *complex_div(g, operand_parts(g, self, real), operand_parts(g, other, real)))


@register("aten::div.Tensor_mode", "aten::div.Scalar_mode")
def aten_div_mode(g, self, other, *, rounding_mode):
    """div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"""
    if rounding_mode is not None:
        raise NotImplementedError(f"div with rounding_mode={rounding_mode!r} is not defined for complex tensors")
    return aten_div(g, self, other)


@register("aten::neg.default")
def aten_neg(g, self):
    """neg(Tensor self) -> Tensor"""
    return g.op("Neg", self)


@register("aten::reciprocal.default")
def aten_reciprocal(g, self):
    """reciprocal(Tensor self) -> Tensor"""
    z = cx.parts(g, self)
    return cx.pack(g, *complex_div(g, (_k(g, 1.0, z[0]), None), z))


@register("aten::abs.default")
def aten_abs(g, self):
    """abs(Tensor self) -> Tensor"""
    return complex_abs(g, self)


@register("aten::angle.default")
def aten_angle(g, self):
    """angle(Tensor self) -> Tensor"""
    re, im = split(g, self)
    return atan2(g, im, re)


@register("aten::sgn.default")
def aten_sgn(g, self):
    """sgn(Tensor self) -> Tensor"""
    re, im = cx.parts(g, self)
    r = hypot(g, re, im)
    return g.op("Where", is_zero(g, r), _k(g, 0.0, r), g.op("Div", self, r))


def _unary(g: GraphBuilder, fn, self: Value) -> Value:
    """A function of one complex tensor, on its parts."""
    return cx.pack(g, *fn(g, cx.parts(g, self)))


@register("aten::exp.default")
def aten_exp(g, self):
    """exp(Tensor self) -> Tensor"""
    return _unary(g, complex_exp, self)


@register("aten::exp2.default")
def aten_exp2(g, self):
    """exp2(Tensor self) -> Tensor"""
    ln2 = math.log(2.0)
    return _unary(g, lambda g, z: complex_exp(g, tuple(g.op("Mul", p, _k(g, ln2, p)) for p in z)), self)


@register("aten::log.default")
def aten_log(g, self):
    """log(Tensor self) -> Tensor"""
    return _unary(g, complex_log, self)


def _log_base(g: GraphBuilder, self: Value, base: float) -> Value:
    scale = 1.0 / math.log(base)
    return _unary(g, lambda g, z: tuple(g.op("Mul", p, _k(g, scale, p)) for p in complex_log(g, z)), self)


@register("aten::log2.default")
def aten_log2(g, self):
    """log2(Tensor self) -> Tensor"""
    return _log_base(g, self, 2.0)


@register("aten::log10.default")
def aten_log10(g, self):
    """log10(Tensor self) -> Tensor"""
    return _log_base(g, self, 10.0)


@register("aten::sqrt.default")
def aten_sqrt(g, self):
    """sqrt(Tensor self) -> Tensor"""
    return _unary(g, complex_sqrt, self)


@register("aten::rsqrt.default")
def aten_rsqrt(g, self):
    """rsqrt(Tensor self) -> Tensor"""
    return _unary(g, lambda g, z: complex_div(g, (_k(g, 1.0, z[0]), None), complex_sqrt(g, z)), self)


@register("aten::square.default")
def aten_square(g, self):
    """square(Tensor self) -> Tensor"""
    return _unary(g, lambda g, z: cx.complex_mul(g, z, z), self)


@register("aten::pow.Tensor_Scalar")
def aten_pow_tensor_scalar(g, self, exponent):
    """pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor"""
    dtype = complex_result(self, exponent)
    real = _dtypes.real_part(dtype)
    w = complex(exponent)
    if w == 0:
        return full(g, shape_of(g, self), 1, dtype)
    z = operand_parts(g, self, real)
    if w.imag == 0 and math.isfinite(w.real) and w.real == int(w.real) and abs(w.real) <= 64:
        out = complex_int_pow(g, z, int(w.real))
    elif w == 0.5:
        out = complex_sqrt(g, z)
    elif w == -0.5:
        out = complex_div(g, (_k(g, 1.0, z[0]), None), complex_sqrt(g, z))
    else:
        out = complex_pow(g, z, operand_parts(g, w, real))
    return cx.pack(g, *out)


@register("aten::pow.Tensor_Tensor")
def aten_pow_tensor_tensor(g, self, exponent):
    """pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"""
    dtype = complex_result(self, exponent)
    real = _dtypes.real_part(dtype)
    return cx.pack(g, *complex_pow(g, operand_parts(g, self, real), operand_parts(g, exponent, real)))


@register("aten::pow.Scalar")
def aten_pow_scalar(g, self, exponent):
    """pow.Scalar(Scalar self, Tensor exponent) -> Tensor"""
    base = complex(self)
    if base == 0:
        raise NotImplementedError("pow of a zero complex base")
    dtype = complex_result(self, exponent)
    real = _dtypes.real_part(dtype)
    log = cmath_log(base)
    w = operand_parts(g, exponent, real)
    re, im = complex_exp(g, cx.complex_mul(g, w, operand_parts(g, log, real)))
    return cx.pack(g, re, im)


def cmath_log(z: complex) -> complex:
    return complex(math.log(abs(z)), math.atan2(z.imag, z.real))


@register("aten::sin.default")
def aten_sin(g, self):
    """sin(Tensor self) -> Tensor"""
    def sin(g, z):
        a, b = z
        sinh, cosh = sinh_cosh(g, b)
        return g.op("Mul", g.op("Sin", a), cosh), g.op("Mul", g.op("Cos", a), sinh)
    return _unary(g, sin, self)


@register("aten::cos.default")
def aten_cos(g, self):
    """cos(Tensor self) -> Tensor"""
    def cos(g, z):
        a, b = z
        sinh, cosh = sinh_cosh(g, b)
        return g.op("Mul", g.op("Cos", a), cosh), g.op("Neg", g.op("Mul", g.op("Sin", a), sinh))
    return _unary(g, cos, self)


@register("aten::sinh.default")
def aten_sinh(g, self):
    """sinh(Tensor self) -> Tensor"""
    def sinh(g, z):
        a, b = z
        sinh, cosh = sinh_cosh(g, a)
        return g.op("Mul", sinh, g.op("Cos", b)), g.op("Mul", cosh, g.op("Sin", b))
    return _unary(g, sinh, self)


@register("aten::cosh.default")
def aten_cosh(g, self):
    """cosh(Tensor self) -> Tensor"""
    def cosh(g, z):
        a, b = z
        sinh, cosh = sinh_cosh(g, a)
        return g.op("Mul", cosh, g.op("Cos", b)), g.op("Mul", sinh, g.op("Sin", b))
    return _unary(g, cosh, self)


@register("aten::tanh.default")
def aten_tanh(g, self):
    """tanh(Tensor self) -> Tensor"""
    return _unary(g, complex_tanh, self)


@register("aten::tan.default")
def aten_tan(g, self):
    """tan(Tensor self) -> Tensor"""
    def tan(g, z):  # tan z = -i tanh(i z)
        a, b = z
        u, v = complex_tanh(g, (g.op("Neg", b), a))
        return v, g.op("Neg", u)
    return _unary(g, tan, self)


@register("aten::sigmoid.default")
def aten_sigmoid(g, self):
    """sigmoid(Tensor self) -> Tensor"""
    def sigmoid(g, z):  # 1 / (1 + exp(-z))
        er, ei = complex_exp(g, tuple(g.op("Neg", p) for p in z))
        one = _k(g, 1.0, er)
        return complex_div(g, (one, None), (g.op("Add", er, one), ei))
    return _unary(g, sigmoid, self)


# -- predicates and comparisons -------------------------------------------------------------------------


@register("aten::isnan.default")
def aten_isnan(g, self):
    """isnan(Tensor self) -> Tensor"""
    re, im = split(g, self)
    return g.op("Or", g.op("IsNaN", re), g.op("IsNaN", im))


@register("aten::isinf.default")
def aten_isinf(g, self):
    """isinf(Tensor self) -> Tensor"""
    re, im = split(g, self)
    return g.op("Or", _is_inf(g, re), _is_inf(g, im))


@register("aten::isfinite.default")
def aten_isfinite(g, self):
    """isfinite(Tensor self) -> Tensor"""
    re, im = split(g, self)
    inf = _k(g, math.inf, re)
    return g.op("And", g.op("Less", g.op("Abs", re), inf), g.op("Less", g.op("Abs", im), inf))


@register("aten::isreal.default")
def aten_isreal(g, self):
    """isreal(Tensor self) -> Tensor"""
    return is_zero(g, split(g, self)[1])


def complex_eq(g: GraphBuilder, self, other) -> Value:
    """self == other: both parts equal (the real eq of the target opset on the carriers)."""
    dtype = complex_result(self, other)
    both = on_carrier(g, "aten::eq.Tensor", carrier(g, self, dtype), carrier(g, other, dtype))
    return g.op("And", cx.component(g, both, 0), cx.component(g, both, 1))


@register("aten::eq.Tensor", "aten::eq.Scalar")
def aten_eq(g, self, other):
    """eq.Tensor(Tensor self, Tensor other) -> Tensor"""
    return complex_eq(g, self, other)


@register("aten::ne.Tensor", "aten::ne.Scalar")
def aten_ne(g, self, other):
    """ne.Tensor(Tensor self, Tensor other) -> Tensor"""
    return g.op("Not", complex_eq(g, self, other))


@register("aten::isclose.default")
def aten_isclose(g, self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """isclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> Tensor"""
    # eager: self == other, or a finite |self - other| <= atol + rtol * |other|
    close = complex_eq(g, self, other)
    if equal_nan:
        close = g.op("Or", close, g.op("And", aten_isnan(g, self), aten_isnan(g, other)))
    if rtol == 0 and atol == 0:
        return close
    diff = aten_sub(g, self, other)
    actual = hypot(g, cx.component(g, diff, 0), cx.component(g, diff, 1))
    if isinstance(other, Value):
        re, im = split(g, other, actual.dtype)
        size = hypot(g, re, im) if im is not None else g.op("Abs", re)
        allowed = g.op("Add", _k(g, atol, actual), g.op("Mul", _k(g, rtol, actual), size))
    else:
        allowed = _k(g, atol + rtol * abs(other), actual)
    within = g.op("And", g.op("Less", actual, _k(g, math.inf, actual)), g.op("Not", g.op("Greater", actual, allowed)))
    return g.op("Or", close, within)


@register("aten::nan_to_num.default")
def aten_nan_to_num(g, self, nan=None, posinf=None, neginf=None):
    """nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor"""
    return on_carrier(g, "aten::nan_to_num.default", self, nan, posinf, neginf)  # each part on its own


# -- reductions --------------------------------------------------------------------------------------------


def _axes(dim, rank: int) -> list[int]:
    """Reduction dims of a complex tensor as carrier axes; None or [] is every dim."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return list(range(rank))
    return cx.dims([dim] if isinstance(dim, int) else dim, rank)


def _reduce(g: GraphBuilder, key: str, self: Value, dim, keepdim: bool, dtype) -> Value:
    """A linear reduction (sum, mean) of the carrier over the complex tensor's dims."""
    x = convert(g, self, dtype)
    rank = rank_of(self)
    if rank == 0:
        return x
    return on_carrier(g, key, x, _axes(dim, rank), keepdim)


@register("aten::sum.dim_IntList")
def aten_sum_dim(g, self, dim, keepdim=False, *, dtype=None):
    """sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(g, "aten::sum.dim_IntList", self, dim, keepdim, dtype)


@register("aten::sum.default")
def aten_sum(g, self, *, dtype=None):
    """sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(g, "aten::sum.dim_IntList", self, None, False, dtype)


@register("aten::mean.dim")
def aten_mean_dim(g, self, dim, keepdim=False, *, dtype=None):
    """mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(g, "aten::mean.dim", self, dim, keepdim, dtype)


@register("aten::mean.default")
def aten_mean(g, self, *, dtype=None):
    """mean(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(g, "aten::mean.dim", self, None, False, dtype)


def _prod(g: GraphBuilder, self: Value, dim, keepdim: bool, dtype) -> Value:
    """The product as exp(sum log|z|) at angle sum(arg z), in float64 (a zero factor gives 0)."""
    dtype = scalar_type(dtype) or dtype_of(self)
    rank = rank_of(self)
    if rank == 0:
        return convert(g, self, dtype)
    re, im = split(g, self, torch.float64)
    shape = cx.logical_shape(self)
    log_r = _shaped(log_abs(g, re, im), shape)
    theta = _shaped(atan2(g, im, re), shape)
    total = real_symbolic(g, "aten::sum.dim_IntList")
    axes = _axes(dim, rank)
    r = g.op("Exp", total(g, log_r, axes, keepdim))
    theta = total(g, theta, axes, keepdim)
    real = _dtypes.real_part(dtype)
    return join(g, cast(g, g.op("Mul", r, g.op("Cos", theta)), real), cast(g, g.op("Mul", r, g.op("Sin", theta)), real))


@register("aten::prod.default")
def aten_prod(g, self, *, dtype=None):
    """prod(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return _prod(g, self, None, False, dtype)


@register("aten::prod.dim_int")
def aten_prod_dim(g, self, dim, keepdim=False, *, dtype=None):
    """prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return _prod(g, self, dim, keepdim, dtype)


@register("aten::cumsum.default")
def aten_cumsum(g, self, dim, *, dtype=None):
    """cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    x = convert(g, self, dtype)
    rank = rank_of(self)
    return x if rank == 0 else on_carrier(g, "aten::cumsum.default", x, cx.dim(dim, rank))


def _var_mean(g: GraphBuilder, self: Value, dim, correction, keepdim: bool) -> tuple[Value, Value]:
    """(variance, mean): the real var of each part over the complex dims, summed (E|z - mean|^2)."""
    rank = rank_of(self)
    x = self
    if rank == 0:  # one element: reduce over a dim of 1
        x = _shaped(g.op("Reshape", self, g.const([1, 2], dtype=torch.int64)), (1, 2))
        rank, dim, keepdim = 1, None, False
    var, mean = on_carrier(g, "aten::var_mean.correction", x, _axes(dim, rank), correction=correction,
                           keepdim=keepdim)
    return g.op("Add", cx.component(g, var, 0), cx.component(g, var, 1)), mean


@register("aten::var.correction")
def aten_var(g, self, dim=None, *, correction=None, keepdim=False):
    """var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return _var_mean(g, self, dim, correction, keepdim)[0]


@register("aten::std.correction")
def aten_std(g, self, dim=None, *, correction=None, keepdim=False):
    """std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return g.op("Sqrt", _var_mean(g, self, dim, correction, keepdim)[0])


@register("aten::var_mean.correction")
def aten_var_mean(g, self, dim=None, *, correction=None, keepdim=False):
    """var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    return _var_mean(g, self, dim, correction, keepdim)


@register("aten::std_mean.correction")
def aten_std_mean(g, self, dim=None, *, correction=None, keepdim=False):
    """std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    var, mean = _var_mean(g, self, dim, correction, keepdim)
    return g.op("Sqrt", var), mean


@register("aten::var.dim")
def aten_var_dim(g, self, dim, unbiased=True, keepdim=False):
    """var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return _var_mean(g, self, dim, int(unbiased), keepdim)[0]


@register("aten::std.dim")
def aten_std_dim(g, self, dim, unbiased=True, keepdim=False):
    """std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return g.op("Sqrt", _var_mean(g, self, dim, int(unbiased), keepdim)[0])


@register("aten::var_mean.dim")
def aten_var_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    return _var_mean(g, self, dim, int(unbiased), keepdim)


@register("aten::std_mean.dim")
def aten_std_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    var, mean = _var_mean(g, self, dim, int(unbiased), keepdim)
    return g.op("Sqrt", var), mean


@register("aten::linalg_vector_norm.default")
def aten_linalg_vector_norm(g, self, ord=2, dim=None, keepdim=False, *, dtype=None):
    """linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    dtype = scalar_type(dtype)
    magnitude = complex_abs(g, self, None if dtype is None else _dtypes.real_part(dtype))
    return on_carrier(g, "aten::linalg_vector_norm.default", magnitude, ord, dim, keepdim)


# -- products ---------------------------------------------------------------------------------------------------


def multilinear(g: GraphBuilder, fn, operands: list[Value], *, conj_first: bool = False) -> Value:
    """A product linear in each operand, on the real and imaginary parts: fn (a real symbolic of the
    parts) once per choice of part, each term adding to the real or imaginary part by i**k."""
    dtype = functools.reduce(torch.promote_types, [dtype_of(x) for x in operands])
    real = _dtypes.real_part(dtype)
    parts = [split(g, x, real) for x in operands]
    if conj_first and parts[0][1] is not None:
        parts[0] = (parts[0][0], g.op("Neg", parts[0][1]))
    choices = [(0,) if im is None else (0, 1) for _, im in parts]
    if math.prod(len(c) for c in choices) > 8:
        raise NotImplementedError("a product of more than three complex operands")
    re = im = None
    for pick in itertools.product(*choices):
        term = fn(*(p[i] for p, i in zip(parts, pick)))
        k = sum(pick) % 4
        if k % 2 == 0:
            re = cx.add(g, re, term) if k == 0 else cx.sub(g, re, term)
        else:
            im = cx.add(g, im, term) if k == 1 else cx.sub(g, im, term)
    return join(g, re, im)


def _product(key: str, *, conj_first: bool = False):
    def handler(g, self, other):
        fn = real_symbolic(g, key)
        return multilinear(g, lambda a, b: fn(g, a, b), [self, other], conj_first=conj_first)
    return handler


@register("aten::mm.default")
def aten_mm(g, self, mat2):
    """mm(Tensor self, Tensor mat2) -> Tensor"""
    return _product("aten::mm.default")(g, self, mat2)


@register("aten::bmm.default")
def aten_bmm(g, self, mat2):
    """bmm(Tensor self, Tensor mat2) -> Tensor"""
    return _product("aten::bmm.default")(g, self, mat2)


@register("aten::matmul.default")
def aten_matmul(g, self, other):
    """matmul(Tensor self, Tensor other) -> Tensor"""
    return _product("aten::matmul.default")(g, self, other)


@register("aten::dot.default")
def aten_dot(g, self, tensor):
    """dot(Tensor self, Tensor tensor) -> Tensor"""
    return _product("aten::dot.default")(g, self, tensor)


@register("aten::vdot.default")
def aten_vdot(g, self, other):
    """vdot(Tensor self, Tensor other) -> Tensor"""
    return _product("aten::dot.default", conj_first=True)(g, self, other)


@register("aten::inner.default")
def aten_inner(g, self, other):
    """inner(Tensor self, Tensor other) -> Tensor"""
    return _product("aten::inner.default")(g, self, other)


@register("aten::mv.default")
def aten_mv(g, self, vec):
    """mv(Tensor self, Tensor vec) -> Tensor"""
    return _product("aten::mv.default")(g, self, vec)


@register("aten::outer.default")
def aten_outer(g, self, vec2):
    """outer(Tensor self, Tensor vec2) -> Tensor"""
    return _product("aten::outer.default")(g, self, vec2)


@register("aten::kron.default")
def aten_kron(g, self, other):
    """kron(Tensor self, Tensor other) -> Tensor"""
    return _product("aten::kron.default")(g, self, other)


@register("aten::tensordot.default")
def aten_tensordot(g, self, other, dims_self, dims_other):
    """tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor"""
    fn = real_symbolic(g, "aten::tensordot.default")
    return multilinear(g, lambda a, b: fn(g, a, b, dims_self, dims_other), [self, other])


@register("aten::linalg_vecdot.default")
def aten_linalg_vecdot(g, x, y, *, dim=-1):
    """linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor"""
    fn = real_symbolic(g, "aten::linalg_vecdot.default")
    return multilinear(g, lambda a, b: fn(g, a, b, dim=dim), [x, y], conj_first=True)


@register("aten::trace.default")
def aten_trace(g, self):
    """trace(Tensor self) -> Tensor"""
    fn = real_symbolic(g, "aten::trace.default")
    return multilinear(g, lambda a: fn(g, a), [self])


@register("aten::linalg_cross.default")
def aten_linalg_cross(g, self, other, *, dim=-1):
    """linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor"""
    fn = real_symbolic(g, "aten::linalg_cross.default")
    return multilinear(g, lambda a, b: fn(g, a, b, dim=dim), [self, other])


@register("aten::cross.default")
def aten_cross(g, self, other, dim=None):
    """cross(Tensor self, Tensor other, int? dim=None) -> Tensor"""
    fn = real_symbolic(g, "aten::cross.default")
    return multilinear(g, lambda a, b: fn(g, a, b, dim), [self, other])


@register("aten::linear.default")
def aten_linear(g, input, weight, bias=None):
    """linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"""
    fn = real_symbolic(g, "aten::linear.default")
    out = multilinear(g, lambda a, b: fn(g, a, b), [input, weight])
    if bias is None:
        return out
    return g.op("Add", out, carrier(g, bias, complex_result(input, weight, bias)))


@register("aten::addmm.default")
def aten_addmm(g, self, mat1, mat2, *, beta=1, alpha=1):
    """addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    product = _mul_number(g, aten_mm(g, mat1, mat2), complex(alpha))
    if complex(beta) == 0:
        return product  # eager ignores self (NaN included)
    dtype = functools.reduce(torch.promote_types, [dtype_of(x) for x in (self, mat1, mat2)])
    return g.op("Add", _scaled(g, self, beta, dtype), product)


@register("aten::einsum.default")
def aten_einsum(g, equation, tensors, *, path=None):
    """einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor"""
    fn = real_symbolic(g, "aten::einsum.default")
    return multilinear(g, lambda *xs: fn(g, equation, list(xs)), list(tensors))


def _beta_alpha(g: GraphBuilder, self: Value, product: Value, beta, alpha, dtype: torch.dtype) -> Value:
    """beta * self + alpha * product (a carrier); beta == 0 ignores self, NaN included, as eager."""
    product = _mul_number(g, cast(g, product, _dtypes.real_part(dtype)), complex(alpha))
    if complex(beta) == 0:
        return product
    return g.op("Add", _scaled(g, self, beta, dtype), product)


def _dtype_of_all(*xs: Value) -> torch.dtype:
    return functools.reduce(torch.promote_types, [dtype_of(x) for x in xs])


@register("aten::addmv.default")
def aten_addmv(g, self, mat, vec, *, beta=1, alpha=1):
    """addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return _beta_alpha(g, self, aten_mv(g, mat, vec), beta, alpha, _dtype_of_all(self, mat, vec))


@register("aten::addr.default")
def aten_addr(g, self, vec1, vec2, *, beta=1, alpha=1):
    """addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return _beta_alpha(g, self, aten_outer(g, vec1, vec2), beta, alpha, _dtype_of_all(self, vec1, vec2))


@register("aten::baddbmm.default")
def aten_baddbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return _beta_alpha(g, self, aten_bmm(g, batch1, batch2), beta, alpha, _dtype_of_all(self, batch1, batch2))


@register("aten::addbmm.default")
def aten_addbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    # the sum of the batch's products, by the real addbmm with beta=0 (self only gives the shape)
    fn = real_symbolic(g, "aten::addbmm.default")
    like = split(g, self)[0]
    product = multilinear(g, lambda a, b: fn(g, like, a, b, beta=0, alpha=1), [batch1, batch2])
    return _beta_alpha(g, self, product, beta, alpha, _dtype_of_all(self, batch1, batch2))


def _convolution(g: GraphBuilder, key: str, input: Value, weight: Value, bias, **kwargs) -> Value:
    """A convolution is bilinear in input and weight; the bias is added once, along the channel dim."""
    fn = real_symbolic(g, key)
    out = multilinear(g, lambda x, w: fn(g, x, w, None, **kwargs), [input, weight])
    if bias is None:
        return out
    dtype = _dtype_of_all(input, weight, bias)
    spatial = rank_of(weight) - 2  # the output is [N, C, spatial...] or, unbatched, [C, spatial...]
    bias = g.op("Reshape", carrier(g, bias, dtype), g.const([-1] + [1] * spatial + [2], dtype=torch.int64))
    return g.op("Add", cast(g, out, _dtypes.real_part(dtype)), bias)


@register("aten::conv1d.default")
def aten_conv1d(g, input, weight, bias=None, stride=[1], padding=[0], dilation=[1], groups=1):
    """conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv1d.default", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv1d.padding")
def aten_conv1d_padding(g, input, weight, bias=None, stride=[1], padding="valid", dilation=[1], groups=1):
    """conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], str padding="valid", SymInt[1] dilation=[1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv1d.padding", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv_transpose1d.default")
def aten_conv_transpose1d(g, input, weight, bias=None, stride=[1], padding=[0], output_padding=[0], groups=1,
                        dilation=[1]):
    """conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor"""
    return _convolution(g, "aten::conv_transpose1d.default", input, weight, bias, stride=stride, padding=padding,
                        output_padding=output_padding, groups=groups, dilation=dilation)


@register("aten::conv2d.default")
def aten_conv2d(g, input, weight, bias=None, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1):
    """conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv2d.default", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv2d.padding")
def aten_conv2d_padding(g, input, weight, bias=None, stride=[1, 1], padding="valid", dilation=[1, 1], groups=1):
    """conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], str padding="valid", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv2d.padding", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv_transpose2d.input")
def aten_conv_transpose2d(g, input, weight, bias=None, stride=[1, 1], padding=[0, 0], output_padding=[0, 0], groups=1,
                        dilation=[1, 1]):
    """conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor"""
    return _convolution(g, "aten::conv_transpose2d.input", input, weight, bias, stride=stride, padding=padding,
                        output_padding=output_padding, groups=groups, dilation=dilation)


@register("aten::conv3d.default")
def aten_conv3d(g, input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1], groups=1):
    """conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv3d.default", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv3d.padding")
def aten_conv3d_padding(g, input, weight, bias=None, stride=[1, 1, 1], padding="valid", dilation=[1, 1, 1], groups=1):
    """conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], str padding="valid", SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv3d.padding", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv_transpose3d.input")
def aten_conv_transpose3d(g, input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0], output_padding=[0, 0, 0], groups=1,
                        dilation=[1, 1, 1]):
    """conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor"""
    return _convolution(g, "aten::conv_transpose3d.input", input, weight, bias, stride=stride, padding=padding,
                        output_padding=output_padding, groups=groups, dilation=dilation)


@register("aten::convolution.default")
def aten_convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor"""
    return _convolution(g, "aten::convolution.default", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, transposed=transposed, output_padding=output_padding, groups=groups)


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


@register("aten::as_strided.default", "aten::as_strided_copy.default")
def aten_as_strided(g, self, size, stride, storage_offset=None):
    """as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)"""
    return partwise(g, "aten::as_strided.default", {"self": self}, size=size, stride=stride,
                    storage_offset=storage_offset)


@register("aten::rot90.default")
def aten_rot90(g, self, k=1, dims=[0, 1]):
    """rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor"""
    return partwise(g, "aten::rot90.default", {"self": self}, k=k, dims=dims)


@register("aten::fliplr.default")
def aten_fliplr(g, self):
    """fliplr(Tensor self) -> Tensor"""
    return aten_flip(g, self, [1])


@register("aten::flipud.default")
def aten_flipud(g, self):
    """flipud(Tensor self) -> Tensor"""
    return aten_flip(g, self, [0])


@register("aten::atleast_1d.default")
def aten_atleast_1d(g, self):
    """atleast_1d(Tensor self) -> Tensor"""
    return partwise(g, "aten::atleast_1d.default", {"self": self})


@register("aten::atleast_2d.default")
def aten_atleast_2d(g, self):
    """atleast_2d(Tensor self) -> Tensor"""
    return partwise(g, "aten::atleast_2d.default", {"self": self})


@register("aten::atleast_3d.default")
def aten_atleast_3d(g, self):
    """atleast_3d(Tensor self) -> Tensor"""
    return partwise(g, "aten::atleast_3d.default", {"self": self})


@register("aten::atleast_1d.Sequence")
def aten_atleast_1d_sequence(g, tensors):
    """atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return [aten_atleast_1d(g, t) if t.complex else on_carrier(g, "aten::atleast_1d.default", t) for t in tensors]


@register("aten::atleast_2d.Sequence")
def aten_atleast_2d_sequence(g, tensors):
    """atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return [aten_atleast_2d(g, t) if t.complex else on_carrier(g, "aten::atleast_2d.default", t) for t in tensors]


@register("aten::atleast_3d.Sequence")
def aten_atleast_3d_sequence(g, tensors):
    """atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return [aten_atleast_3d(g, t) if t.complex else on_carrier(g, "aten::atleast_3d.default", t) for t in tensors]


@register("aten::broadcast_to.default")
def aten_broadcast_to(g, self, size):
    """broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)"""
    return aten_expand(g, self, size)


@register("aten::broadcast_tensors.default")
def aten_broadcast_tensors(g, tensors):
    """broadcast_tensors(Tensor[] tensors) -> Tensor[]"""
    if not all(t.is_static for t in tensors):
        raise NotImplementedError("broadcast_tensors of complex tensors with dynamic shapes")
    shape = list(torch.broadcast_shapes(*(cx.logical_shape(t) for t in tensors)))
    return [g.op("Expand", t, g.const(shape + [2] * t.complex, dtype=torch.int64)) for t in tensors]


@register("aten::meshgrid.indexing")
def aten_meshgrid_indexing(g, tensors, *, indexing):
    """meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]"""
    return partwise(g, "aten::meshgrid.indexing", {"tensors": tensors}, indexing=indexing)


@register("aten::meshgrid.default")
def aten_meshgrid(g, tensors):
    """meshgrid(Tensor[] tensors) -> Tensor[]"""
    return partwise(g, "aten::meshgrid.default", {"tensors": tensors})


@register("aten::block_diag.default")
def aten_block_diag(g, tensors):
    """block_diag(Tensor[] tensors) -> Tensor"""
    return partwise(g, "aten::block_diag.default", {"tensors": tensors})


@register("aten::cartesian_prod.default")
def aten_cartesian_prod(g, tensors):
    """cartesian_prod(Tensor[] tensors) -> Tensor"""
    return partwise(g, "aten::cartesian_prod.default", {"tensors": tensors})


@register("aten::hstack.default")
def aten_hstack(g, tensors):
    """hstack(Tensor[] tensors) -> Tensor"""
    return partwise(g, "aten::hstack.default", {"tensors": tensors})


@register("aten::vstack.default")
def aten_vstack(g, tensors):
    """vstack(Tensor[] tensors) -> Tensor"""
    return partwise(g, "aten::vstack.default", {"tensors": tensors})


@register("aten::dstack.default")
def aten_dstack(g, tensors):
    """dstack(Tensor[] tensors) -> Tensor"""
    return partwise(g, "aten::dstack.default", {"tensors": tensors})


@register("aten::column_stack.default")
def aten_column_stack(g, tensors):
    """column_stack(Tensor[] tensors) -> Tensor"""
    return partwise(g, "aten::column_stack.default", {"tensors": tensors})


@register("aten::_chunk_cat.default")
def aten__chunk_cat(g, tensors, dim, num_chunks):
    """_chunk_cat(Tensor[] tensors, int dim, int num_chunks) -> Tensor"""
    return partwise(g, "aten::_chunk_cat.default", {"tensors": tensors}, dim=dim, num_chunks=num_chunks)


@register("aten::hsplit.int")
def aten_hsplit(g, self, sections):
    """hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]"""
    return partwise(g, "aten::hsplit.int", {"self": self}, sections=sections)


@register("aten::hsplit.array")
def aten_hsplit_array(g, self, indices):
    """hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]"""
    return partwise(g, "aten::hsplit.array", {"self": self}, indices=indices)


@register("aten::vsplit.int")
def aten_vsplit(g, self, sections):
    """vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]"""
    return partwise(g, "aten::vsplit.int", {"self": self}, sections=sections)


@register("aten::vsplit.array")
def aten_vsplit_array(g, self, indices):
    """vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]"""
    return partwise(g, "aten::vsplit.array", {"self": self}, indices=indices)


@register("aten::dsplit.int")
def aten_dsplit(g, self, sections):
    """dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]"""
    return partwise(g, "aten::dsplit.int", {"self": self}, sections=sections)


@register("aten::dsplit.array")
def aten_dsplit_array(g, self, indices):
    """dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]"""
    return partwise(g, "aten::dsplit.array", {"self": self}, indices=indices)


@register("aten::diagflat.default")
def aten_diagflat(g, self, offset=0):
    """diagflat(Tensor self, int offset=0) -> Tensor"""
    return partwise(g, "aten::diagflat.default", {"self": self}, offset=offset)


@register("aten::diff.default")
def aten_diff(g, self, n=1, dim=-1, prepend=None, append=None):
    """diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor"""
    return partwise(g, "aten::diff.default", {"self": self, "prepend": prepend, "append": append}, n=n, dim=dim)


@register("aten::gradient.scalarint")
def aten_gradient_scalarint(g, self, *, spacing=None, dim=None, edge_order=1):
    """gradient.scalarint(Tensor self, *, Scalar? spacing=None, int? dim=None, int edge_order=1) -> Tensor[]"""
    return partwise(g, "aten::gradient.scalarint", {"self": self}, spacing=spacing, dim=dim, edge_order=edge_order)


@register("aten::gradient.scalarrayint")
def aten_gradient_scalarrayint(g, self, *, spacing, dim=None, edge_order=1):
    """gradient.scalarrayint(Tensor self, *, Scalar[] spacing, int? dim=None, int edge_order=1) -> Tensor[]"""
    return partwise(g, "aten::gradient.scalarrayint", {"self": self}, spacing=spacing, dim=dim, edge_order=edge_order)


@register("aten::gradient.array")
def aten_gradient_array(g, self, *, dim, edge_order=1):
    """gradient.array(Tensor self, *, int[] dim, int edge_order=1) -> Tensor[]"""
    return partwise(g, "aten::gradient.array", {"self": self}, dim=dim, edge_order=edge_order)


@register("aten::gradient.scalararray")
def aten_gradient_scalararray(g, self, *, spacing, dim, edge_order=1):
    """gradient.scalararray(Tensor self, *, Scalar spacing, int[] dim, int edge_order=1) -> Tensor[]"""
    return partwise(g, "aten::gradient.scalararray", {"self": self}, spacing=spacing, dim=dim, edge_order=edge_order)


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


@register("aten::trapezoid.x")
def aten_trapezoid_x(g, y, x, *, dim=-1):
    """trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor"""
    fn = real_symbolic(g, "aten::trapezoid.x")  # linear in y and in x (through its differences)
    return multilinear(g, lambda y, x: fn(g, y, x, dim=dim), [y, x])


@register("aten::trapezoid.dx")
def aten_trapezoid_dx(g, y, *, dx=1, dim=-1):
    """trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor"""
    if isinstance(dx, complex):
        raise NotImplementedError("a complex dx")
    return partwise(g, "aten::trapezoid.dx", {"y": y}, dx=dx, dim=dim)


@register("aten::trapz.x")
def aten_trapz_x(g, y, x, *, dim=-1):
    """trapz.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor"""
    fn = real_symbolic(g, "aten::trapz.x")  # linear in y and in x (through its differences)
    return multilinear(g, lambda y, x: fn(g, y, x, dim=dim), [y, x])


@register("aten::trapz.dx")
def aten_trapz_dx(g, y, *, dx=1.0, dim=-1):
    """trapz.dx(Tensor y, *, float dx=1., int dim=-1) -> Tensor"""
    return partwise(g, "aten::trapz.dx", {"y": y}, dx=dx, dim=dim)


@register("aten::cumulative_trapezoid.x")
def aten_cumulative_trapezoid_x(g, y, x, *, dim=-1):
    """cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor"""
    fn = real_symbolic(g, "aten::cumulative_trapezoid.x")  # linear in y and in x (through its differences)
    return multilinear(g, lambda y, x: fn(g, y, x, dim=dim), [y, x])


@register("aten::cumulative_trapezoid.dx")
def aten_cumulative_trapezoid_dx(g, y, *, dx=1, dim=-1):
    """cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor"""
    if isinstance(dx, complex):
        raise NotImplementedError("a complex dx")
    return partwise(g, "aten::cumulative_trapezoid.dx", {"y": y}, dx=dx, dim=dim)


@register("aten::sum_to_size.default")
def aten_sum_to_size(g, self, size):
    """sum_to_size(Tensor self, SymInt[] size) -> Tensor"""
    return partwise(g, "aten::sum_to_size.default", {"self": self}, size=size)


@register("aten::repeat_interleave.self_int")
def aten_repeat_interleave_self_int(g, self, repeats, dim=None, *, output_size=None):
    """repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor"""
    return partwise(g, "aten::repeat_interleave.self_int", {"self": self}, repeats=repeats, dim=dim,
                    output_size=output_size)


@register("aten::repeat_interleave.self_Tensor")
def aten_repeat_interleave_self_tensor(g, self, repeats, dim=None, *, output_size=None):
    """repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor"""
    return partwise(g, "aten::repeat_interleave.self_Tensor", {"self": self}, repeats=repeats, dim=dim,
                    output_size=output_size)


@register("aten::unfold.default", "aten::unfold_copy.default")
def aten_unfold(g, self, dimension, size, step):
    """unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)"""
    return partwise(g, "aten::unfold.default", {"self": self}, dimension=dimension, size=size, step=step)


@register("aten::pixel_shuffle.default")
def aten_pixel_shuffle(g, self, upscale_factor):
    """pixel_shuffle(Tensor self, int upscale_factor) -> Tensor"""
    return partwise(g, "aten::pixel_shuffle.default", {"self": self}, upscale_factor=upscale_factor)


@register("aten::pixel_unshuffle.default")
def aten_pixel_unshuffle(g, self, downscale_factor):
    """pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor"""
    return partwise(g, "aten::pixel_unshuffle.default", {"self": self}, downscale_factor=downscale_factor)


@register("aten::channel_shuffle.default")
def aten_channel_shuffle(g, self, groups):
    """channel_shuffle(Tensor self, SymInt groups) -> Tensor"""
    return partwise(g, "aten::channel_shuffle.default", {"self": self}, groups=groups)


@register("aten::take.default")
def aten_take(g, self, index):
    """take(Tensor self, Tensor index) -> Tensor"""
    return partwise(g, "aten::take.default", {"self": self}, index=index)


@register("aten::take_along_dim.default")
def aten_take_along_dim(g, self, indices, dim=None):
    """take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor"""
    return partwise(g, "aten::take_along_dim.default", {"self": self}, indices=indices, dim=dim)


@register("aten::gather.default")
def aten_gather(g, self, dim, index, *, sparse_grad=False):
    """gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor"""
    return partwise(g, "aten::gather.default", {"self": self}, dim=dim, index=index)


@register("aten::index_add.default")
def aten_index_add(g, self, dim, index, source, *, alpha=1):
    """index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor"""
    if complex(alpha).imag != 0:
        source, alpha = tagged(g, _scaled(g, source, alpha, dtype_of(self))), 1
    return partwise(g, "aten::index_add.default", {"self": self, "source": source}, dim=dim, index=index,
                    alpha=complex(alpha).real)


@register("aten::index_copy.default")
def aten_index_copy(g, self, dim, index, source):
    """index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor"""
    return partwise(g, "aten::index_copy.default", {"self": self, "source": source}, dim=dim, index=index)


@register("aten::index_fill.int_Scalar", "aten::index_fill.int_Tensor")
def aten_index_fill(g, self, dim, index, value):
    """index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"""
    key = "aten::index_fill.int_Tensor" if isinstance(value, Value) else "aten::index_fill.int_Scalar"
    return partwise(g, key, {"self": self, "value": value}, dim=dim, index=index)


@register("aten::index_put.default")
def aten_index_put(g, self, indices, values, accumulate=False):
    """index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor"""
    return partwise(g, "aten::index_put.default", {"self": self, "values": values}, indices=indices,
                    accumulate=accumulate)


@register("aten::masked_scatter.default")
def aten_masked_scatter(g, self, mask, source):
    """masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor"""
    return partwise(g, "aten::masked_scatter.default", {"self": self, "source": source}, mask=mask)


@register("aten::masked_select.default")
def aten_masked_select(g, self, mask):
    """masked_select(Tensor self, Tensor mask) -> Tensor"""
    return partwise(g, "aten::masked_select.default", {"self": self}, mask=mask)


@register("aten::scatter.src")
def aten_scatter_src(g, self, dim, index, src):
    """scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"""
    return partwise(g, "aten::scatter.src", {"self": self, "src": src}, dim=dim, index=index)


@register("aten::scatter.value")
def aten_scatter_value(g, self, dim, index, value):
    """scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"""
    return partwise(g, "aten::scatter.value", {"self": self, "value": value}, dim=dim, index=index)


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


@register("aten::scatter_add.default")
def aten_scatter_add(g, self, dim, index, src):
    """scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"""
    return partwise(g, "aten::scatter_add.default", {"self": self, "src": src}, dim=dim, index=index)


@register("aten::put.default")
def aten_put(g, self, index, source, accumulate=False):
    """put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor"""
    return partwise(g, "aten::put.default", {"self": self, "source": source}, index=index, accumulate=accumulate)


@register("aten::_unsafe_masked_index.default")
def aten__unsafe_masked_index(g, self, mask, indices, fill):
    """_unsafe_masked_index(Tensor self, Tensor mask, Tensor?[] indices, Scalar fill) -> Tensor"""
    return partwise(g, "aten::_unsafe_masked_index.default", {"self": self, "fill": fill}, mask=mask, indices=indices)


@register("aten::_unsafe_masked_index_put_accumulate.default")
def aten__unsafe_masked_index_put_accumulate(g, self, mask, indices, values):
    """_unsafe_masked_index_put_accumulate(Tensor self, Tensor mask, Tensor?[] indices, Tensor values) -> Tensor"""
    return partwise(g, "aten::_unsafe_masked_index_put_accumulate.default", {"self": self, "values": values},
                    mask=mask, indices=indices)


@register("aten::diagonal_scatter.default")
def aten_diagonal_scatter(g, self, src, offset=0, dim1=0, dim2=1):
    """diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor"""
    return partwise(g, "aten::diagonal_scatter.default", {"self": self, "src": src}, offset=offset, dim1=dim1,
                    dim2=dim2)


@register("aten::as_strided_scatter.default")
def aten_as_strided_scatter(g, self, src, size, stride, storage_offset=None):
    """as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor"""
    return partwise(g, "aten::as_strided_scatter.default", {"self": self, "src": src}, size=size, stride=stride,
                    storage_offset=storage_offset)


@register("aten::select_scatter.default")
def aten_select_scatter(g, self, src, dim, index):
    """select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor"""
    return partwise(g, "aten::select_scatter.default", {"self": self, "src": src}, dim=dim, index=index)


@register("aten::slice_scatter.default")
def aten_slice_scatter(g, self, src, dim=0, start=None, end=None, step=1):
    """slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor"""
    return partwise(g, "aten::slice_scatter.default", {"self": self, "src": src}, dim=dim, start=start, end=end,
                    step=step)


# -- compositions of the handlers above --------------------------------------------------------------------------


@register("aten::true_divide.Tensor", "aten::true_divide.Scalar", "aten::divide.Tensor", "aten::divide.Scalar")
def aten_true_divide(g, self, other):
    """true_divide.Tensor(Tensor self, Tensor other) -> Tensor"""
    return aten_div(g, self, other)


@register("aten::addcmul.default")
def aten_addcmul(g, self, tensor1, tensor2, *, value=1):
    """addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"""
    return aten_add(g, self, tagged(g, aten_mul(g, tensor1, tensor2)), alpha=value)


@register("aten::addcdiv.default")
def aten_addcdiv(g, self, tensor1, tensor2, *, value=1):
    """addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"""
    return aten_add(g, self, tagged(g, aten_div(g, tensor1, tensor2)), alpha=value)


@register("aten::lerp.Scalar")
def aten_lerp(g, self, end, weight):
    """lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor"""
    return aten_add(g, self, tagged(g, aten_sub(g, end, self)), alpha=weight)


@register("aten::lerp.Tensor")
def aten_lerp_tensor(g, self, end, weight):
    """lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor"""
    return aten_add(g, self, tagged(g, aten_mul(g, weight, tagged(g, aten_sub(g, end, self)))))


def _double(g: GraphBuilder, x):
    """An operand of float_power: complex128 (a tensor) or a Python number as it is."""
    if not isinstance(x, Value):
        return x
    return tagged(g, convert(g, x, torch.complex128)) if x.complex else cast(g, x, torch.float64)


@register("aten::float_power.Tensor_Tensor")
def aten_float_power(g, self, exponent):
    """float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"""
    return aten_pow_tensor_tensor(g, _double(g, self), _double(g, exponent))


@register("aten::float_power.Tensor_Scalar")
def aten_float_power_tensor_scalar(g, self, exponent):
    """float_power.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor"""
    return aten_pow_tensor_scalar(g, _double(g, self), exponent)


@register("aten::float_power.Scalar")
def aten_float_power_scalar(g, self, exponent):
    """float_power.Scalar(Scalar self, Tensor exponent) -> Tensor"""
    return aten_pow_scalar(g, self, _double(g, exponent))


@register("aten::ldexp.Tensor")
def aten_ldexp(g, self, other):
    """ldexp.Tensor(Tensor self, Tensor other) -> Tensor"""
    if other.complex:
        return aten_mul(g, self, tagged(g, aten_exp2(g, other)))
    dtype = complex_result(self, other)
    real = _dtypes.real_part(dtype)
    scale = g.op("Pow", g.const(2.0, dtype=real), cast(g, other, real))
    return g.op("Mul", carrier(g, self, dtype), cx.lift(g, _shaped(scale, other.shape)))


@register("aten::sinc.default")
def aten_sinc(g, self):
    """sinc(Tensor self) -> Tensor"""
    def sinc(g, z):  # sin(pi z) / (pi z), 1 at z = 0
        re, im = z
        pz = (g.op("Mul", re, _k(g, math.pi, re)), g.op("Mul", im, _k(g, math.pi, im)))
        a, b = pz
        sinh, cosh = sinh_cosh(g, b)
        out = complex_div(g, (g.op("Mul", g.op("Sin", a), cosh), g.op("Mul", g.op("Cos", a), sinh)), pz)
        zero = g.op("And", is_zero(g, re), is_zero(g, im))
        return g.op("Where", zero, _k(g, 1.0, re), out[0]), g.op("Where", zero, _k(g, 0.0, im), out[1])
    return _unary(g, sinc, self)


def nonzero_mask(g: GraphBuilder, x: Value) -> Value:
    """x != 0 as bool (a complex x: either part nonzero, NaN counting as nonzero)."""
    return _shaped(convert(g, x, torch.bool), cx.logical_shape(x))


@register("aten::logical_not.default")
def aten_logical_not(g, self):
    """logical_not(Tensor self) -> Tensor"""
    return g.op("Not", nonzero_mask(g, self))


@register("aten::logical_and.default")
def aten_logical_and(g, self, other):
    """logical_and(Tensor self, Tensor other) -> Tensor"""
    return g.op("And", nonzero_mask(g, self), nonzero_mask(g, other))


@register("aten::logical_or.default")
def aten_logical_or(g, self, other):
    """logical_or(Tensor self, Tensor other) -> Tensor"""
    return g.op("Or", nonzero_mask(g, self), nonzero_mask(g, other))


@register("aten::logical_xor.default")
def aten_logical_xor(g, self, other):
    """logical_xor(Tensor self, Tensor other) -> Tensor"""
    return g.op("Xor", nonzero_mask(g, self), nonzero_mask(g, other))


@register("aten::all.default")
def aten_all(g, self):
    """all(Tensor self) -> Tensor"""
    return on_carrier(g, "aten::all.default", nonzero_mask(g, self))


@register("aten::all.dim")
def aten_all_dim(g, self, dim, keepdim=False):
    """all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"""
    return on_carrier(g, "aten::all.dim", nonzero_mask(g, self), dim, keepdim)


@register("aten::all.dims")
def aten_all_dims(g, self, dim=None, keepdim=False):
    """all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"""
    return on_carrier(g, "aten::all.dims", nonzero_mask(g, self), dim, keepdim)


@register("aten::any.default")
def aten_any(g, self):
    """any(Tensor self) -> Tensor"""
    return on_carrier(g, "aten::any.default", nonzero_mask(g, self))


@register("aten::any.dim")
def aten_any_dim(g, self, dim, keepdim=False):
    """any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"""
    return on_carrier(g, "aten::any.dim", nonzero_mask(g, self), dim, keepdim)


@register("aten::any.dims")
def aten_any_dims(g, self, dim=None, keepdim=False):
    """any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"""
    return on_carrier(g, "aten::any.dims", nonzero_mask(g, self), dim, keepdim)


@register("aten::argwhere.default")
def aten_argwhere(g, self):
    """argwhere(Tensor self) -> Tensor"""
    return on_carrier(g, "aten::argwhere.default", nonzero_mask(g, self))


@register("aten::nonzero.default")
def aten_nonzero(g, self):
    """nonzero(Tensor self) -> Tensor"""
    return on_carrier(g, "aten::nonzero.default", nonzero_mask(g, self))


def _distance(g: GraphBuilder, a, b, eps: float = 0.0) -> Value:
    """|a - b + eps| as a real tensor of the broadcast shape."""
    diff = tagged(g, aten_sub(g, a, b))
    if eps:
        diff = tagged(g, aten_add(g, diff, eps))
    shape = None
    if a.is_static and b.is_static:
        shape = tuple(torch.broadcast_shapes(cx.logical_shape(a), cx.logical_shape(b)))
    return _shaped(hypot(g, cx.component(g, diff, 0), cx.component(g, diff, 1)), shape)


@register("aten::dist.default")
def aten_dist(g, self, other, p=2):
    """dist(Tensor self, Tensor other, Scalar p=2) -> Tensor"""
    d = _distance(g, self, other)
    rank = max(rank_of(self), rank_of(other))
    return on_carrier(g, "aten::linalg_vector_norm.default", d, p, list(range(rank)) or None, False)


@register("aten::l1_loss.default")
def aten_l1_loss(g, self, target, reduction=1):
    """l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor"""
    d = _distance(g, self, target)
    if reduction == 0:
        return d
    return on_carrier(g, "aten::mean.default" if reduction == 1 else "aten::sum.default", d)


@register("aten::pairwise_distance.default")
def aten_pairwise_distance(g, x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """pairwise_distance(Tensor x1, Tensor x2, float p=2., float eps=9.9999999999999995e-07, bool keepdim=False) -> Tensor"""
    d = _distance(g, x1, x2, eps)
    rank = max(rank_of(x1), rank_of(x2))
    return on_carrier(g, "aten::linalg_vector_norm.default", d, p, [rank - 1], keepdim)


@register("aten::var.default")
def aten_var_default(g, self, unbiased=True):
    """var(Tensor self, bool unbiased=True) -> Tensor"""
    return _var_mean(g, self, None, int(unbiased), False)[0]


@register("aten::std.default")
def aten_std_default(g, self, unbiased=True):
    """std(Tensor self, bool unbiased=True) -> Tensor"""
    return g.op("Sqrt", _var_mean(g, self, None, int(unbiased), False)[0])


@register("aten::var_mean.default")
def aten_var_mean_default(g, self, unbiased=True):
    """var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    return _var_mean(g, self, None, int(unbiased), False)


@register("aten::std_mean.default")
def aten_std_mean_default(g, self, unbiased=True):
    """std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    var, mean = _var_mean(g, self, None, int(unbiased), False)
    return g.op("Sqrt", var), mean


# -- inverse trigonometric and hyperbolic functions, through log and sqrt in float64 ------------------------------


def _wide_unary(g: GraphBuilder, fn, self: Value) -> Value:
    """A function of one complex tensor computed on float64 parts (float32 loses too much to the
    cancellations in these formulas), cast back."""
    re, im = cx.parts(g, self)
    out = fn(g, (_wide(g, re), _wide(g, im)))
    return cx.pack(g, *(cast(g, p, re.dtype) for p in out))


def complex_asinh(g: GraphBuilder, z: Parts) -> Parts:
    """asinh z = log(z + sqrt(z^2 + 1)), on the half-plane Re z >= 0 (asinh is odd), where the sum
    does not cancel."""
    a, b = z
    flip = _negative(g, a)
    sign = g.op("Where", flip, _k(g, -1.0, a), _k(g, 1.0, a))
    a, b = g.op("Mul", a, sign), g.op("Mul", b, sign)
    sq_re = g.op("Add", g.op("Sub", g.op("Mul", a, a), g.op("Mul", b, b)), _k(g, 1.0, a))
    sq_im = g.op("Mul", _k(g, 2.0, a), g.op("Mul", a, b))
    root = complex_sqrt(g, (sq_re, sq_im))
    re, im = complex_log(g, (g.op("Add", a, root[0]), g.op("Add", b, root[1])))
    return g.op("Mul", re, sign), g.op("Mul", im, sign)


def complex_atanh(g: GraphBuilder, z: Parts) -> Parts:
    """atanh z = (log(1 + z) - log(1 - z)) / 2."""
    a, b = z
    one = _k(g, 1.0, a)
    up = complex_log(g, (g.op("Add", one, a), b))
    down = complex_log(g, (g.op("Sub", one, a), g.op("Neg", b)))
    half = _k(g, 0.5, a)
    return g.op("Mul", g.op("Sub", up[0], down[0]), half), g.op("Mul", g.op("Sub", up[1], down[1]), half)


def _times_i(g: GraphBuilder, z: Parts) -> Parts:
    return g.op("Neg", z[1]), z[0]


def _times_minus_i(g: GraphBuilder, z: Parts) -> Parts:
    return z[1], g.op("Neg", z[0])


@register("aten::asinh.default")
def aten_asinh(g, self):
    """asinh(Tensor self) -> Tensor"""
    return _wide_unary(g, complex_asinh, self)


@register("aten::asin.default")
def aten_asin(g, self):
    """asin(Tensor self) -> Tensor"""
    return _wide_unary(g, lambda g, z: _times_minus_i(g, complex_asinh(g, _times_i(g, z))), self)


@register("aten::acos.default")
def aten_acos(g, self):
    """acos(Tensor self) -> Tensor"""
    def acos(g, z):  # pi/2 - asin z
        re, im = _times_minus_i(g, complex_asinh(g, _times_i(g, z)))
        return g.op("Sub", _k(g, math.pi / 2, re), re), g.op("Neg", im)
    return _wide_unary(g, acos, self)


@register("aten::acosh.default")
def aten_acosh(g, self):
    """acosh(Tensor self) -> Tensor"""
    def acosh(g, z):  # log(z + sqrt(z + 1) sqrt(z - 1))
        a, b = z
        one = _k(g, 1.0, a)
        root = cx.complex_mul(g, complex_sqrt(g, (g.op("Add", a, one), b)), complex_sqrt(g, (g.op("Sub", a, one), b)))
        return complex_log(g, (g.op("Add", a, root[0]), g.op("Add", b, root[1])))
    return _wide_unary(g, acosh, self)


@register("aten::atanh.default")
def aten_atanh(g, self):
    """atanh(Tensor self) -> Tensor"""
    return _wide_unary(g, complex_atanh, self)


@register("aten::atan.default")
def aten_atan(g, self):
    """atan(Tensor self) -> Tensor"""
    return _wide_unary(g, lambda g, z: _times_minus_i(g, complex_atanh(g, _times_i(g, z))), self)
