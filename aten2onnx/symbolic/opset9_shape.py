"""Opset-9 base, data movement: view/copy variants, stacking and splitting, and ops that only move
elements (as Gather of constant element indices). Products are in opset9_products, factory ops in
opset9_creation."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (
    INT64_MAX,
    SymInt,
    as_value,
    cast,
    dim_size,
    fill,
    norm_dim,
    norm_dims,
    promote,
    reshape,
    slice_axis,
    unsqueeze_static,
)
from aten2onnx.symbolic.opset9_views import (
    aten_cat,
    aten_expand,
    aten_permute,
    aten_stack,
    aten_transpose,
    aten_unbind,
    chunk_sizes,
    static_dim,
)

register = functools.partial(registry.register, opset=9)


# -- element moves by constant indices ---------------------------------------------------------------------


def gather_static(g: GraphBuilder, inputs: list[Value], fn, *, fill_value=None) -> Value:
    """An op that only moves elements (and may fill with a constant): fn is the op on tensors of
    element numbers; the result gathers the flattened inputs at those numbers. With fill_value, the
    numbers start at 1 and the 0 that fn leaves where it fills picks the fill value. Its index table is
    as large as the result, so it is kept for what no ONNX op expresses (as_strided, diagonals, diag and
    block_diag's fills, padding that crops) and for dtypes no such op takes at the opset."""
    if not all(x.is_static for x in inputs):
        raise NotImplementedError("this op is exported for static shapes only")
    start = 0 if fill_value is None else 1
    numbers, flats = [], []
    if fill_value is not None:
        flats.append(g.const([fill_value], dtype=inputs[0].dtype))
    for x in inputs:
        n = math.prod(x.shape)
        numbers.append(torch.arange(start, start + n, dtype=torch.int64).reshape(x.shape))
        flats.append(reshape(g, x, [-1]))
        start += n
    index = fn(*numbers)
    data = flats[0] if len(flats) == 1 else g.op("Concat", *flats, axis=0)
    if index.numel() == 0 or start == 0:
        return fill(g, list(index.shape), 0, inputs[0].dtype)
    return g.op("Gather", data, g.const(index.contiguous()), axis=0)


@register("aten::as_strided.default", "aten::as_strided_copy.default")
def aten_as_strided(g, self, size, stride, storage_offset=None):
    """as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)"""
    return gather_static(g, [self], lambda i: torch.as_strided(i.contiguous(), size, stride, storage_offset or 0))


@register("aten::diagonal.default", "aten::diagonal_copy.default")
def aten_diagonal(g, self, offset=0, dim1=0, dim2=1):
    """diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)"""
    if self.is_static:
        return gather_static(g, [self], lambda i: torch.diagonal(i, offset, dim1, dim2))
    return diagonal_dynamic(g, self, offset, norm_dim(dim1, self.rank), norm_dim(dim2, self.rank))


def diagonal_dynamic(g: GraphBuilder, x: Value, offset: int, dim1: int, dim2: int) -> Value:
    """torch.diagonal with the two dims' sizes computed in the graph: the dims moved last, the diagonal's
    rows gathered, then each row's column by GatherElements; the diagonal is the last dim, as in eager."""
    i64 = torch.int64
    rest = [d for d in range(x.rank) if d not in (dim1, dim2)]
    moved = g.op("Transpose", x, perm=rest + [dim1, dim2])
    first, second = max(-offset, 0), max(offset, 0)
    rows_left = g.op("Sub", as_value(g, dim_size(g, x, dim1), i64), g.const(first, dtype=i64))
    cols_left = g.op("Sub", as_value(g, dim_size(g, x, dim2), i64), g.const(second, dtype=i64))
    length = g.max(g.min(rows_left, cols_left), g.const(0, dtype=i64))
    steps = g.op("Range", g.const(0, dtype=i64), length, g.const(1, dtype=i64))
    rows = g.op("Gather", moved, g.op("Add", steps, g.const(first, dtype=i64)), axis=len(rest))  # [..., L, n2]
    cols = g.unsqueeze(g.op("Add", steps, g.const(second, dtype=i64)), [1])  # [L, 1]
    lead = g.slice(g.op("Shape", rows), [0], [len(rest) + 1], [0])
    index = g.op("Expand", cols, g.op("Concat", lead, g.const([1], dtype=i64), axis=0))
    return g.squeeze(g.op("GatherElements", rows, index, axis=len(rest) + 1), [len(rest) + 1])


@register("aten::linalg_diagonal.default")
def aten_linalg_diagonal(g, A, *, offset=0, dim1=-2, dim2=-1):
    """linalg_diagonal(Tensor(a) A, *, int offset=0, int dim1=-2, int dim2=-1) -> Tensor(a)"""
    return aten_diagonal(g, A, offset, dim1, dim2)


@register("aten::roll.default")
def aten_roll(g, self, shifts, dims=[]):
    """roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor"""
    axes = norm_dims(dims, self.rank)
    sizes = [self.shape[a] for a in axes] if self.shape is not None else [None]
    if axes and all(isinstance(s, int) for s in [*shifts, *sizes]):
        # each rolled dim's last elements moved to its front by two slices: the other dims may be dynamic
        x = self
        for shift, axis, size in zip(shifts, axes, sizes):
            if size and shift % size:
                cut = size - shift % size
                x = g.op("Concat", slice_axis(g, x, axis, cut, size), slice_axis(g, x, axis, 0, cut), axis=axis)
        return x
    return gather_static(g, [self], lambda i: torch.roll(i, list(shifts), list(dims)))


@register("aten::rot90.default")
def aten_rot90(g, self, k=1, dims=[0, 1]):
    """rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor"""
    d0, d1 = norm_dims(dims, self.rank)
    k %= 4
    if k == 0:
        return self
    if k == 2:
        return aten_flip(g, self, [d0, d1])
    # k == 1: flip dim1, then swap the two; k == 3: flip dim0, then swap
    perm = list(range(self.rank))
    perm[d0], perm[d1] = d1, d0
    return g.op("Transpose", aten_flip(g, self, [d1 if k == 1 else d0]), perm=perm)


@register("aten::fliplr.default")
def aten_fliplr(g, self):
    """fliplr(Tensor self) -> Tensor"""
    return aten_flip(g, self, [1])


@register("aten::flipud.default")
def aten_flipud(g, self):
    """flipud(Tensor self) -> Tensor"""
    return aten_flip(g, self, [0])


@register("aten::flip.default")
def aten_flip(g, self, dims):
    """flip(Tensor self, int[] dims) -> Tensor"""
    axes = norm_dims(dims, self.rank)
    if not axes:
        return self
    n = len(axes)
    return g.slice(self, [-1] * n, [-INT64_MAX] * n, axes, [-1] * n)


@register("aten::repeat.default")
def aten_repeat(g, self, repeats):
    """repeat(Tensor self, SymInt[] repeats) -> Tensor"""
    x = self
    extra = len(repeats) - self.rank
    if extra:  # leading axes of 1 (Unsqueeze: a Reshape to a shape read from x misreads a 0 there)
        x = g.unsqueeze(x, list(range(extra)))
    return g.op("Tile", x, g.int_list(list(repeats)))


@register("aten::tile.default")
def aten_tile(g, self, dims):
    """tile(Tensor self, SymInt[] dims) -> Tensor"""
    dims = list(dims)
    if len(dims) < self.rank:
        dims = [1] * (self.rank - len(dims)) + dims
    return aten_repeat(g, self, dims)


@register("aten::diag.default")
def aten_diag(g, self, diagonal=0):
    """diag(Tensor self, int diagonal=0) -> Tensor"""
    return gather_static(g, [self], lambda i: torch.diag(i, diagonal), fill_value=0)


@register("aten::diag_embed.default")
def aten_diag_embed(g, self, offset=0, dim1=-2, dim2=-1):
    """diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor"""
    return gather_static(g, [self], lambda i: torch.diag_embed(i, offset, dim1, dim2), fill_value=0)


@register("aten::diagflat.default")
def aten_diagflat(g, self, offset=0):
    """diagflat(Tensor self, int offset=0) -> Tensor"""
    return gather_static(g, [self], lambda i: torch.diagflat(i, offset), fill_value=0)


@register("aten::block_diag.default")
def aten_block_diag(g, tensors):
    """block_diag(Tensor[] tensors) -> Tensor"""
    tensors = promote(g, *tensors)
    return gather_static(g, tensors, lambda *i: torch.block_diag(*i), fill_value=0)


@register("aten::narrow.default", "aten::narrow_copy.default")
def aten_narrow(g, self, dim, start, length):
    """narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)"""
    if isinstance(start, Value) or isinstance(length, Value):
        # bounds computed in the graph (a length read from data, a symbolic size): Slice from opset 10
        end = g.op("Add", as_value(g, start, torch.int64), as_value(g, length, torch.int64))
        return g.slice(self, [start], [end], [norm_dim(dim, self.rank)])
    dim = norm_dim(dim, self.rank)
    size = self.shape[dim] if self.shape is not None else None
    if start < 0 and isinstance(size, int):
        start += size
    if start >= 0:
        return g.slice(self, [start], [start + length], [dim])
    return gather_static(g, [self], lambda i: torch.narrow(i, dim, start, length))


@register("aten::movedim.intlist")
def aten_movedim_intlist(g, self, source, destination):
    """movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)"""
    rank = self.rank
    src, dst = norm_dims(source, rank), norm_dims(destination, rank)
    order = [None] * rank
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(rank) if d not in src)
    order = [o if o is not None else next(rest) for o in order]
    return aten_permute(g, self, order)


@register("aten::mT.default", "aten::mH.default", "aten::adjoint.default", "aten::matrix_H.default")
def aten_mT(g, self):
    """mT(Tensor(a) self) -> Tensor(a)"""
    return aten_transpose(g, self, -2, -1)


@register("aten::numpy_T.default")
def aten_numpy_T(g, self):
    """numpy_T(Tensor(a) self) -> Tensor(a)"""
    return aten_permute(g, self, list(range(self.rank))[::-1])


# -- copy variants of views (the functional IR's *_copy ops) ------------------------------------------------


@register("aten::alias_copy.default")
def aten_alias_copy(g, self):
    """alias_copy(Tensor self) -> Tensor"""
    return self


@register("aten::permute_copy.default")
def aten_permute_copy(g, self, dims):
    """permute_copy(Tensor self, int[] dims) -> Tensor"""
    return aten_permute(g, self, dims)


@register("aten::t_copy.default")
def aten_t_copy(g, self):
    """t_copy(Tensor self) -> Tensor"""
    return aten_transpose(g, self, 0, 1)


@register("aten::transpose_copy.int")
def aten_transpose_copy(g, self, dim0, dim1):
    """transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor"""
    return aten_transpose(g, self, dim0, dim1)


@register("aten::unsqueeze_copy.default")
def aten_unsqueeze_copy(g, self, dim):
    """unsqueeze_copy(Tensor self, int dim) -> Tensor"""
    return unsqueeze_static(g, self, norm_dim(dim, self.rank + 1))




@register("aten::squeeze_copy.default")
def aten_squeeze_copy(g, self):
    """squeeze_copy(Tensor self) -> Tensor"""
    return squeeze_static(g, self, list(range(self.rank)))


@register("aten::squeeze_copy.dim")
def aten_squeeze_copy_dim(g, self, dim):
    """squeeze_copy.dim(Tensor self, int dim) -> Tensor"""
    return squeeze_static(g, self, [dim])


@register("aten::squeeze_copy.dims")
def aten_squeeze_copy_dims(g, self, dim):
    """squeeze_copy.dims(Tensor self, int[] dim) -> Tensor"""
    return squeeze_static(g, self, list(dim))


def squeeze_static(g: GraphBuilder, x: Value, dims: list[int]) -> Value:
    """Squeeze by Reshape to the known shape (the same at every opset; Squeeze changed at 13)."""
    if x.rank == 0:
        return x
    dims = norm_dims(dims, x.rank)
    return reshape(g, x, [static_dim(x, d, "squeeze") for d in range(x.rank) if not (d in dims and x.shape[d] == 1)])


@register("aten::view_copy.default")
def aten_view_copy(g, self, size):
    """view_copy(Tensor self, SymInt[] size) -> Tensor"""
    return reshape(g, self, size)


@register("aten::expand_copy.default")
def aten_expand_copy(g, self, size, *, implicit=False):
    """expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor"""
    return aten_expand(g, self, size)


@register("aten::unbind_copy.int")
def aten_unbind_copy(g, self, dim=0):
    """unbind_copy.int(Tensor self, int dim=0) -> Tensor[]"""
    return aten_unbind(g, self, dim)


@register("aten::split_with_sizes_copy.default")
def aten_split_with_sizes_copy(g, self, split_sizes, dim=0):
    """split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]"""
    return split_sizes_at(g, self, list(split_sizes), norm_dim(dim, self.rank))


def split_sizes_at(g: GraphBuilder, x: Value, sizes: list[int], dim: int) -> list[Value]:
    """Split by Gather of constant ranges, which reads the same at every opset (Split changed at 13, 18)."""
    bounds, at = [], 0
    for size in sizes[:-1]:
        at += size
        bounds.append(at)
    return split_at(g, x, bounds, dim)


@register("aten::unsafe_split.Tensor")
def aten_unsafe_split(g, self, split_size, dim=0):
    """unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]"""
    dim = norm_dim(dim, self.rank)
    return split_sizes_at(g, self, chunk_sizes(static_dim(self, dim, "split"), split_size), dim)


@register("aten::unsafe_chunk.default")
def aten_unsafe_chunk(g, self, chunks, dim=0):
    """unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]"""
    dim = norm_dim(dim, self.rank)
    total = static_dim(self, dim, "chunk")
    return split_sizes_at(g, self, chunk_sizes(total, -(-total // chunks)), dim)


def split_at(g: GraphBuilder, x: Value, bounds: list[SymInt], dim: int) -> list[Value]:
    """Pieces of x between the given boundaries along dim (tensor_split semantics: Slice's reading of bounds,
    negative from the end and clamped), which may be SymInts read from data."""
    edges = [0, *bounds, INT64_MAX]
    return [g.slice(x, [lo], [hi], [dim]) for lo, hi in zip(edges, edges[1:])]


@register("aten::tensor_split.sections")
def aten_tensor_split(g, self, sections, dim=0):
    """tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]"""
    dim = norm_dim(dim, self.rank)
    size = static_dim(self, dim, "tensor_split")
    base, extra = divmod(size, sections)
    bounds, at = [], 0
    for i in range(sections - 1):
        at += base + (1 if i < extra else 0)
        bounds.append(at)
    return split_at(g, self, bounds, dim)


@register("aten::tensor_split.indices")
def aten_tensor_split_indices(g, self, indices, dim=0):
    """tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]"""
    return split_at(g, self, list(indices), norm_dim(dim, self.rank))


def _split_sections(g, self, sections, dim):
    if isinstance(sections, int):
        return aten_tensor_split(g, self, sections, dim)
    return split_at(g, self, list(sections), norm_dim(dim, self.rank))


@register("aten::hsplit.int")
def aten_hsplit(g, self, sections):
    """hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]"""
    return _split_sections(g, self, sections, 1 if self.rank > 1 else 0)


@register("aten::hsplit.array")
def aten_hsplit_array(g, self, indices):
    """hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]"""
    return _split_sections(g, self, list(indices), 1 if self.rank > 1 else 0)


@register("aten::vsplit.int")
def aten_vsplit(g, self, sections):
    """vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]"""
    return _split_sections(g, self, sections, 0)


@register("aten::vsplit.array")
def aten_vsplit_array(g, self, indices):
    """vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]"""
    return _split_sections(g, self, list(indices), 0)


@register("aten::dsplit.int")
def aten_dsplit(g, self, sections):
    """dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]"""
    return _split_sections(g, self, sections, 2)


@register("aten::dsplit.array")
def aten_dsplit_array(g, self, indices):
    """dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]"""
    return _split_sections(g, self, list(indices), 2)


def atleast(g: GraphBuilder, x: Value, rank: int) -> Value:
    if x.rank >= rank:
        return x
    if x.rank == 0:
        return reshape(g, x, [1] * rank)
    if rank == 2:
        return reshape(g, x, [1, -1])
    if x.rank == 1:
        return reshape(g, x, [1, -1, 1])
    return reshape(g, x, [0, 0, 1])


@register("aten::atleast_1d.default")
def aten_atleast_1d(g, self):
    """atleast_1d(Tensor self) -> Tensor"""
    return atleast(g, self, 1)


@register("aten::atleast_2d.default")
def aten_atleast_2d(g, self):
    """atleast_2d(Tensor self) -> Tensor"""
    return atleast(g, self, 2)


@register("aten::atleast_3d.default")
def aten_atleast_3d(g, self):
    """atleast_3d(Tensor self) -> Tensor"""
    return atleast(g, self, 3)


@register("aten::atleast_1d.Sequence")
def aten_atleast_1d_seq(g, tensors):
    """atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return [atleast(g, t, 1) for t in tensors]


@register("aten::atleast_2d.Sequence")
def aten_atleast_2d_seq(g, tensors):
    """atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return [atleast(g, t, 2) for t in tensors]


@register("aten::atleast_3d.Sequence")
def aten_atleast_3d_seq(g, tensors):
    """atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]"""
    return [atleast(g, t, 3) for t in tensors]


@register("aten::hstack.default")
def aten_hstack(g, tensors):
    """hstack(Tensor[] tensors) -> Tensor"""
    tensors = [atleast(g, t, 1) for t in tensors]
    return aten_cat(g, tensors, 0 if tensors[0].rank == 1 else 1)


@register("aten::vstack.default")
def aten_vstack(g, tensors):
    """vstack(Tensor[] tensors) -> Tensor"""
    return aten_cat(g, [atleast(g, t, 2) for t in tensors], 0)


@register("aten::dstack.default")
def aten_dstack(g, tensors):
    """dstack(Tensor[] tensors) -> Tensor"""
    return aten_cat(g, [atleast(g, t, 3) for t in tensors], 2)


@register("aten::column_stack.default")
def aten_column_stack(g, tensors):
    """column_stack(Tensor[] tensors) -> Tensor"""
    cols = [reshape(g, t, [-1, 1]) if t.rank <= 1 else t for t in tensors]
    return aten_cat(g, cols, 1)


@register("aten::_chunk_cat.default")
def aten_chunk_cat(g, tensors, dim, num_chunks):
    """_chunk_cat(Tensor[] tensors, int dim, int num_chunks) -> Tensor"""
    # Each tensor is zero-padded along dim to a multiple of num_chunks, viewed as [lead..., num_chunks, -1],
    # and the views are concatenated on their last axis.
    parts = []
    for t in tensors:
        d = norm_dim(dim, t.rank)
        shape = [static_dim(t, i, "_chunk_cat") for i in range(t.rank)]
        padded = -(-shape[d] // num_chunks) * num_chunks
        if padded != shape[d]:
            t = g.op("Concat", t, fill(g, shape[:d] + [padded - shape[d]] + shape[d + 1:], 0, t.dtype), axis=d)
        parts.append(reshape(g, t, shape[:d] + [num_chunks, padded // num_chunks * math.prod(shape[d + 1:])]))
    return parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis=norm_dim(dim, tensors[0].rank) + 1)


@register("aten::view_as.default", "aten::reshape_as.default")
def aten_view_as(g, self, other):
    """view_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    return g.op("Reshape", self, g.op("Shape", other))


@register("aten::ravel.default")
def aten_ravel(g, self):
    """ravel(Tensor(a) self) -> Tensor(a)"""
    return reshape(g, self, [-1])


@register("aten::broadcast_to.default")
def aten_broadcast_to(g, self, size):
    """broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)"""
    return aten_expand(g, self, size)


@register("aten::broadcast_tensors.default")
def aten_broadcast_tensors(g, tensors):
    """broadcast_tensors(Tensor[] tensors) -> Tensor[]"""
    if len(tensors) == 1:
        return list(tensors)
    zero = None
    for t in tensors:
        z = g.op("Mul", cast(g, t, torch.float32), g.const(0.0))
        zero = z if zero is None else g.op("Add", zero, z)
    shape = g.op("Shape", zero)
    return [g.op("Expand", t, shape) for t in tensors]


@register("aten::meshgrid.indexing")
def aten_meshgrid(g, tensors, *, indexing):
    """meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]"""
    tensors = [reshape(g, t, [-1]) if t.rank == 0 else t for t in tensors]
    n = len(tensors)
    sizes = [static_dim(t, 0, "meshgrid") for t in tensors]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    outs = []
    for i, t in enumerate(tensors):
        pos = i
        if indexing == "xy" and n >= 2 and i < 2:
            pos = 1 - i
        shape = [1] * n
        shape[pos] = -1
        out = g.op("Expand", reshape(g, t, shape), g.const(sizes, dtype=torch.int64))
        out.shape = tuple(sizes)
        outs.append(out)
    return outs


@register("aten::meshgrid.default")
def aten_meshgrid_default(g, tensors):
    """meshgrid(Tensor[] tensors) -> Tensor[]"""
    return aten_meshgrid(g, tensors, indexing="ij")


@register("aten::cartesian_prod.default")
def aten_cartesian_prod(g, tensors):
    """cartesian_prod(Tensor[] tensors) -> Tensor"""
    if len(tensors) == 1:
        return tensors[0]
    tensors = promote(g, *tensors)
    grids = aten_meshgrid(g, tensors, indexing="ij")
    return aten_stack(g, [reshape(g, t, [-1]) for t in grids], 1)
