"""Opset-9 base, data movement and creation: view/copy variants, stacking and splitting, ops that only
move elements (as Gather of constant element indices), matrix products, and factory ops."""

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
    half_step,
    norm_dim,
    norm_dims,
    opmath,
    promote,
    reshape,
    result_type,
    scalar_type,
    slice_axis,
    sym_prod,
    unsqueeze_static,
)
from aten2onnx.symbolic.opset9 import (
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


# -- products --------------------------------------------------------------------------------------------


def matmul(g: GraphBuilder, a: Value, b: Value) -> Value:
    """MatMul; ONNX's takes no bool or small ints, which compute in int64 and cast back."""
    dtype = result_type(a, b)
    if dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64):
        a, b = promote(g, a, b, to=dtype)
        return g.op("MatMul", a, b)
    return cast(g, g.op("MatMul", *promote(g, a, b, to=torch.int64)), dtype)


def scaled_add(g: GraphBuilder, self: Value, product: Value, beta, alpha) -> Value:
    """beta * self + alpha * product, as addmm and friends; beta == 0 ignores self (even NaN)."""
    dtype = product.dtype
    if alpha != 1:
        product = g.op("Mul", product, as_value(g, alpha, dtype))
    if beta == 0:
        return _broadcast_like(g, product, self)
    s = cast(g, self, dtype)
    if beta != 1:
        s = g.op("Mul", s, as_value(g, beta, dtype))
    return g.op("Add", s, product)


def _broadcast_like(g: GraphBuilder, x: Value, other: Value) -> Value:
    """x broadcast with other's shape without reading other's values."""
    if x.shape is not None and other.shape is not None and len(other.shape) <= len(x.shape) and x.is_static and \
            other.is_static and all(o in (1, d) for o, d in zip(other.shape[::-1], x.shape[::-1])):
        return x
    return g.op("Expand", x, g.op("Shape", other))


@register("aten::dot.default")
def aten_dot(g, self, tensor):
    """dot(Tensor self, Tensor tensor) -> Tensor"""
    return matmul(g, self, tensor)


@register("aten::vdot.default", "aten::inner.default")
def aten_inner(g, self, other):
    """vdot(Tensor self, Tensor other) -> Tensor"""
    if self.rank == 0 or other.rank == 0:
        return g.op("Mul", *promote(g, self, other))
    if self.rank > 1 or other.rank > 1:
        return matmul(g, self, aten_transpose(g, other, -1, -2) if other.rank > 1 else other)
    return matmul(g, self, other)


@register("aten::mv.default")
def aten_mv(g, self, vec):
    """mv(Tensor self, Tensor vec) -> Tensor"""
    return matmul(g, self, vec)


@register("aten::outer.default")
def aten_outer(g, self, vec2):
    """outer(Tensor self, Tensor vec2) -> Tensor"""
    a, b = promote(g, self, vec2)
    return g.op("Mul", reshape(g, a, [-1, 1]), reshape(g, b, [1, -1]))


@register("aten::addmv.default")
def aten_addmv(g, self, mat, vec, *, beta=1, alpha=1):
    """addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return scaled_add(g, self, matmul(g, mat, vec), beta, alpha)


@register("aten::addr.default")
def aten_addr(g, self, vec1, vec2, *, beta=1, alpha=1):
    """addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return scaled_add(g, self, aten_outer(g, vec1, vec2), beta, alpha)


def opmath_scaled_matmul(g: GraphBuilder, self: Value, a: Value, b: Value, beta, alpha) -> Value:
    """beta * self + alpha * (a @ b) computed in float32 and rounded once, as ATen's CPU gemm does
    for float16 and bfloat16 (addmm_ of one batch, baddbmm)."""
    dtype = result_type(a, b)
    acc = opmath(dtype)
    product = matmul(g, cast(g, a, acc), cast(g, b, acc))
    return cast(g, scaled_add(g, cast(g, self, acc), product, beta, alpha), dtype)


@register("aten::baddbmm.default")
def aten_baddbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
    Half types in float32, rounded once (ATen's CPU kernel)."""
    if opmath(result_type(batch1, batch2)) != result_type(batch1, batch2):
        return opmath_scaled_matmul(g, self, batch1, batch2, beta, alpha)
    return scaled_add(g, self, matmul(g, batch1, batch2), beta, alpha)


@register("aten::addbmm.default")
def aten_addbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
    Half types as ATen's CPU kernel: one addmm_ per batch (beta on the first), each in float32
    and rounded to the dtype (a static batch count; else one product, rounded once)."""
    dtype = result_type(batch1, batch2)
    batches = batch1.shape[0] if batch1.shape is not None else None
    if opmath(dtype) != dtype and isinstance(batches, int) and batches > 0:
        out = self
        for i in range(batches):
            a, b = (reshape(g, slice_axis(g, x, 0, i, i + 1), list(x.shape[1:])) for x in (batch1, batch2))
            out = opmath_scaled_matmul(g, out, a, b, beta if i == 0 else 1, alpha)
        return out
    n, m = dim_size(g, batch1, 1), dim_size(g, batch2, 2)
    product = matmul(g, reshape(g, aten_permute(g, batch1, [1, 0, 2]), [n, -1]),
                     reshape(g, batch2, [-1, m]))
    return scaled_add(g, self, product, beta, alpha)


@register("aten::kron.default")
def aten_kron(g, self, other):
    """kron(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other)
    rank = max(a.rank, b.rank)
    a = reshape(g, a, [1] * (rank - a.rank) + list(a.shape)) if a.rank < rank else a
    b = reshape(g, b, [1] * (rank - b.rank) + list(b.shape)) if b.rank < rank else b
    if not (a.is_static and b.is_static):
        raise NotImplementedError("kron on dynamic shapes")
    sa = [d for s in a.shape for d in (s, 1)]
    sb = [d for s in b.shape for d in (1, s)]
    out = g.op("Mul", reshape(g, a, sa), reshape(g, b, sb))
    return reshape(g, out, [x * y for x, y in zip(a.shape, b.shape)])


@register("aten::tensordot.default")
def aten_tensordot(g, self, other, dims_self, dims_other):
    """tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor"""
    a, b = promote(g, self, other)
    ds, do = norm_dims(dims_self, a.rank), norm_dims(dims_other, b.rank)
    free_a = [d for d in range(a.rank) if d not in ds]
    free_b = [d for d in range(b.rank) if d not in do]
    if not (a.is_static and b.is_static):
        raise NotImplementedError("tensordot on dynamic shapes")
    k = math.prod(a.shape[d] for d in ds)
    at = reshape(g, aten_permute(g, a, free_a + ds) if free_a + ds != list(range(a.rank)) else a,
                 [math.prod(a.shape[d] for d in free_a), k])
    bt = reshape(g, aten_permute(g, b, do + free_b) if do + free_b != list(range(b.rank)) else b,
                 [k, math.prod(b.shape[d] for d in free_b)])
    return reshape(g, matmul(g, at, bt), [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])


@register("aten::trace.default")
def aten_trace(g, self):
    """trace(Tensor self) -> Tensor"""
    diag = aten_diagonal(g, self)
    x = cast(g, diag, torch.int64) if not diag.dtype.is_floating_point else diag
    return g.op("ReduceSum", x, keepdims=0)


@register("aten::linalg_vecdot.default")
def aten_linalg_vecdot(g, x, y, *, dim=-1):
    """linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor"""
    prod = g.op("Mul", *promote(g, x, y))
    rank = max(x.rank, y.rank)
    return _sum_axis(g, prod, norm_dim(dim, rank))


def _sum_axis(g: GraphBuilder, x: Value, axis: int) -> Value:
    """Sum over one axis by MatMul with ones (the same at every opset): move it last, multiply. A
    symbolic axis is a ReduceSum (the builder's emitter spells its axes)."""
    rank = x.rank
    if x.shape is not None and not isinstance(x.shape[axis], int):
        return g.reduce("ReduceSum", x, [axis], False)
    n = static_dim(x, axis, "sum")
    if axis != rank - 1:
        x = g.op("Transpose", x, perm=[d for d in range(rank) if d != axis] + [axis])
    return matmul(g, x, g.const(torch.ones(n, dtype=x.dtype)))


def cross(g: GraphBuilder, a: Value, b: Value, dim: int) -> Value:
    a, b = promote(g, a, b)
    rank = max(a.rank, b.rank)
    dim = norm_dim(dim, rank)

    def comp(x, i):
        return g.op("Gather", x, g.const([i], dtype=torch.int64), axis=dim - (rank - x.rank))

    a0, a1, a2 = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    c0 = g.op("Sub", g.op("Mul", a1, b2), g.op("Mul", a2, b1))
    c1 = g.op("Sub", g.op("Mul", a2, b0), g.op("Mul", a0, b2))
    c2 = g.op("Sub", g.op("Mul", a0, b1), g.op("Mul", a1, b0))
    return g.op("Concat", c0, c1, c2, axis=dim)


@register("aten::linalg_cross.default")
def aten_linalg_cross(g, self, other, *, dim=-1):
    """linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor"""
    return cross(g, self, other, dim)


@register("aten::cross.default")
def aten_cross(g, self, other, dim=None):
    """cross(Tensor self, Tensor other, int? dim=None) -> Tensor"""
    if dim is None:
        dim = next(i for i, s in enumerate(self.shape) if s == 3)
    return cross(g, self, other, dim)


@register("aten::bilinear.default")
def aten_bilinear(g, input1, input2, weight, bias=None):
    """bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor"""
    # y_k = x1 W_k x2^T + b_k: (x1 @ W) per k, then multiply by x2 and sum.
    # (sizes are ints where static, else read from the graph)
    out_features, in1, in2 = (dim_size(g, weight, d) for d in range(3))
    x1 = reshape(g, input1, [-1, in1])
    x2 = reshape(g, input2, [-1, in2])
    w = reshape(g, aten_permute(g, weight, [1, 0, 2]), [in1, sym_prod(g, [out_features, in2])])
    t = reshape(g, matmul(g, x1, w), [-1, out_features, in2])
    t.shape = (None, weight.shape[0], weight.shape[2])
    # the second contraction is eager's other bmm: half types multiply and sum in float32, rounded once
    dtype, acc = t.dtype, opmath(t.dtype)
    terms = g.op("Mul", cast(g, t, acc), cast(g, reshape(g, x2, [-1, 1, in2]), acc))
    terms.shape = terms.shape or t.shape
    y = half_step(g, _sum_axis(g, terms, 2), dtype)
    if bias is not None:
        y = g.op("Add", y, cast(g, bias, acc))
    y = cast(g, y, dtype)
    y.shape = (None, weight.shape[0])
    lead = [dim_size(g, input1, d) for d in range(input1.rank - 1)]
    return reshape(g, y, lead + [out_features])


# -- creation ---------------------------------------------------------------------------------------------


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


# -- SymInt comparisons and arithmetic torch.export leaves as Python operators -------------------------------
