"""Opset-9 complex ops that act on the real and imaginary parts alone (see opset9_complex.py): the
real symbolic for the target opset applied to each part (indexing, scatter, stacking, splitting)."""

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
from aten2onnx.symbolic._complex_math import _scaled, multilinear
from aten2onnx.symbolic.opset9_complex import aten_expand, aten_flip

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
