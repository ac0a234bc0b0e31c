"""Opset-9 base for nodes with complex tensors, carried as real pairs (a trailing axis of 2; see
ir/builder.py): conversions, creation and layout. Layout ops reuse the real translation at the target
opset on the carrier, with dims and sizes moved past the pair axis: the ON_PAIRS table declares those
that need nothing more (symbolic/_lifting.py). The other complex families are
beside it (opset9_complex_math, _reduce, _linalg, _partwise, _fft); their helpers in _carrier.py and
_complex_math.py."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._carrier import (
    _shaped,
    carrier,
    complex_result,
    convert,
    dtype_of,
    join,
    on_carrier,
    rank_of,
    shape_of,
    split,
)
from aten2onnx.symbolic._helpers import cast, norm_dim, scalar_type, unsqueeze_static
from aten2onnx.symbolic._lifting import Lift, lift

register = functools.partial(registry.register, opset=9, complex=True)


# -- shapes and the pair axis --------------------------------------------------------------------------


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


# How an argument of a complex layout op reads on the pairs (the carrier, a real tensor [S..., 2]).
SIZE = "size"  # a shape of the complex tensor: the pair axis appended
DIM = "dim"  # a dim of the complex tensor: as an axis of the carrier (negative ones counted before the pairs)
DIMS = "dims"  # a list of such dims
NEW_DIM = "new dim"  # a dim of the result, one more than self's rank (unsqueeze)
PERMUTATION = "permutation"  # a permutation of the complex tensor's dims: the pair axis stays last
REPEATS = "repeats"  # repeats per dim: the pair axis once


# each as an argument of the real op on the carrier, given the complex tensor's rank
_MOVED = {
    SIZE: lambda x, rank: list(x) + [2],
    DIM: lambda x, rank: cx.dim(x, rank),
    DIMS: lambda x, rank: cx.dims(x, rank),
    NEW_DIM: lambda x, rank: cx.dim(x, rank + 1),
    PERMUTATION: lambda x, rank: cx.dims(x, rank) + [rank],
    REPEATS: lambda x, rank: list(x) + [1],
}


def on_pairs(g: GraphBuilder, real: str, mapped: dict[str, str], arguments: dict):
    """The lifting of ON_PAIRS: the real translation on the carrier, the arguments named in mapped moved
    past the pair axis."""
    rank = rank_of(arguments["self"]) if any(how != SIZE for how in mapped.values()) else None
    moved = {name: _MOVED[how](arguments[name], rank) for name, how in mapped.items()}
    return on_carrier(g, real, **{**arguments, **moved})


# Layout ops lifted by on_pairs: the real translation applied to the carrier, a real tensor, with the
# arguments named in spec moved past the pair axis. Copy variants and aliases apply the real op they copy.
ON_PAIRS = [
    Lift(("aten::view.default", "aten::_unsafe_view.default", "aten::view_copy.default"), {"size": SIZE},
         real="aten::view.default"),
    Lift(("aten::reshape.default",), {"shape": SIZE}),
    Lift(("aten::expand.default", "aten::expand_copy.default"), {"size": SIZE}, real="aten::expand.default"),
    Lift(("aten::permute.default", "aten::permute_copy.default"), {"dims": PERMUTATION}, real="aten::permute.default"),
    Lift(("aten::repeat.default",), {"repeats": REPEATS}),
    Lift(("aten::unsqueeze.default", "aten::unsqueeze_copy.default"), {"dim": NEW_DIM},
         real="aten::unsqueeze.default"),
    # the pair axis (2) is never squeezed
    Lift(("aten::squeeze.default", "aten::squeeze_copy.default"), {}, real="aten::squeeze.default"),
    # the pair axis is a trailing dim no index touches, so it stays last, as advanced indexing keeps it
    Lift(("aten::index.Tensor",), {}),
    Lift(("aten::unflatten.int",), {"dim": DIM}),
    Lift(("aten::nan_to_num.default",), {}),  # each part on its own
    *(Lift(keys, {"dim": DIM}, real=keys[0]) for keys in (
        ("aten::slice.Tensor", "aten::slice_copy.Tensor"), ("aten::select.int", "aten::select_copy.int"),
        ("aten::narrow.default", "aten::narrow_copy.default"), ("aten::split.Tensor", "aten::unsafe_split.Tensor"),
        ("aten::split_with_sizes.default", "aten::split_with_sizes_copy.default"),
        ("aten::chunk.default", "aten::unsafe_chunk.default"), ("aten::unbind.int", "aten::unbind_copy.int"),
        ("aten::tensor_split.sections",), ("aten::tensor_split.indices",))),
]
lift(ON_PAIRS, on_pairs, "on the pairs", opset=9)


def permute(g: GraphBuilder, x: Value, dims: list[int]) -> Value:
    return on_pairs(g, "aten::permute.default", {"dims": PERMUTATION}, {"self": x, "dims": dims})


@register("aten::view_as.default", "aten::reshape_as.default")
def aten_view_as(g, self, other):
    """view_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    shape = shape_of(g, other)
    if isinstance(shape, list):
        return on_carrier(g, "aten::reshape.default", self, shape + [2])
    return g.reshape_to_sizes(self, g.op("Concat", shape, g.const([2], dtype=torch.int64), axis=0))


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
    return permute(g, self, list(range(rank_of(self)))[::-1])


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
    return permute(g, self, [moved[d] if d in moved else next(rest) for d in range(rank)])


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


@register("aten::expand_as.default")
def aten_expand_as(g, self, other):
    """expand_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    shape = shape_of(g, other)
    if self.complex:
        shape = list(shape) + [2] if isinstance(shape, list) else \
            g.op("Concat", shape, g.const([2], dtype=torch.int64), axis=0)
    return g.op("Expand", self, _shape_value(g, shape))


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


@register("aten::tile.default")
def aten_tile(g, self, dims):
    """tile(Tensor self, SymInt[] dims) -> Tensor"""
    dims = [1] * (rank_of(self) - len(dims)) + list(dims)
    return on_carrier(g, "aten::repeat.default", self, list(dims) + [1])


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
