"""Opset-9 base, shapes and views: sizes, reshape/view/expand, squeeze and unsqueeze, transpose and
permute, flatten, slice, select and take, split/chunk/unbind, cat and stack, diff."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (
    INT64_MAX,
    dim_size,
    fill,
    is_full_slice,
    norm_dim,
    norm_dims,
    promote,
    reshape,
    slice_axis,
    sym_prod,
    transpose_perm,
    unsqueeze_static,
)

register = functools.partial(registry.register, opset=9)


# -- shapes and views --------------------------------------------------------------------------------------


@register("aten::sym_size.int")
def aten_sym_size(g, self, dim):
    """sym_size.int(Tensor self, int dim) -> SymInt"""
    return dim_size(g, self, norm_dim(dim, self.rank))


@register("aten::sym_numel.default")
def aten_sym_numel(g, self):
    """sym_numel(Tensor self) -> SymInt"""
    return g.op("Size", self)


@register("aten::sym_stride.int")
def aten_sym_stride(g, self, dim):
    """sym_stride.int(Tensor self, int dim) -> SymInt"""
    # A graph value is a contiguous tensor: its stride is the product of the sizes after dim.
    dim = norm_dim(dim, self.rank)
    if dim == self.rank - 1:
        return g.const(1, dtype=torch.int64)
    after = g.op("Gather", g.op("Shape", self), g.const(list(range(dim + 1, self.rank)), dtype=torch.int64), axis=0)
    return g.op("ReduceProd", after, keepdims=0)


def torch_reshape(g: GraphBuilder, x: Value, shape: list) -> Value:
    """x as torch's view/reshape reads shape. A size 0 there makes the result empty, so it is made of
    the shape (ConstantOfShape): Reshape would read the 0 as "keep the input's size", and
    onnxruntime's shape inference refuses a 0 beside a size it cannot see. A size computed in the graph
    that may be 0 (one read from data) is read as a size by the Reshape emitter where Reshape can say so
    (allowzero); a -1 beside it cannot be inferred when it is 0, which torch refuses too."""
    if any(isinstance(s, int) and s == 0 for s in shape):
        return fill(g, list(shape), 0, x.dtype)
    if -1 not in shape and any(isinstance(s, Value) and (s.least is None or s.least < 1) for s in shape):
        return g.reshape_to_sizes(x, g.int_list(shape))
    return reshape(g, x, shape)


@register("aten::view.default", "aten::_unsafe_view.default")
def aten_view(g, self, size):
    """view(Tensor(a) self, SymInt[] size) -> Tensor(a)"""
    return torch_reshape(g, self, size)


@register("aten::reshape.default")
def aten_reshape(g, self, shape):
    """reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)"""
    return torch_reshape(g, self, shape)


@register("aten::expand.default")
def aten_expand(g, self, size, *, implicit=False):
    """expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)"""
    # -1 keeps a dim; Expand broadcasts, so 1 does the same.
    target = [1 if isinstance(s, int) and s == -1 else s for s in size]
    if self.shape is not None and list(self.shape) == target:
        return self
    return g.op("Expand", self, g.int_list(target))


@register("aten::expand_as.default")
def aten_expand_as(g, self, other):
    """expand_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    return g.op("Expand", self, g.op("Shape", other))


@register("aten::unsqueeze.default")
def aten_unsqueeze(g, self, dim):
    """unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"""
    return g.unsqueeze(self, [norm_dim(dim, self.rank + 1)])


def squeezable(x: Value, dims: list[int]) -> list[int]:
    """The dims ATen's squeeze would drop: those of size 1 (others are a no-op in ATen)."""
    return [d for d in dims if x.shape is not None and x.shape[d] == 1]


@register("aten::squeeze.dim")
def aten_squeeze_dim(g, self, dim):
    """squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)"""
    return aten_squeeze_dims(g, self, [dim])


@register("aten::squeeze.dims")
def aten_squeeze_dims(g, self, dim):
    """squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)"""
    if self.rank == 0:
        return self
    axes = squeezable(self, norm_dims(dim, self.rank))
    return g.squeeze(self, axes) if axes else self


@register("aten::squeeze.default")
def aten_squeeze(g, self):
    """squeeze(Tensor(a) self) -> Tensor(a)"""
    return aten_squeeze_dims(g, self, list(range(self.rank)))


@register("aten::transpose.int")
def aten_transpose(g, self, dim0, dim1):
    """transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"""
    rank = self.rank
    if rank < 2:
        return self
    dim0, dim1 = norm_dim(dim0, rank), norm_dim(dim1, rank)
    if dim0 == dim1:
        return self
    return g.op("Transpose", self, perm=transpose_perm(rank, dim0, dim1))


@register("aten::permute.default")
def aten_permute(g, self, dims):
    """permute(Tensor(a) self, int[] dims) -> Tensor(a)"""
    perm = norm_dims(dims, self.rank)
    if perm == sorted(perm):
        return self
    return g.op("Transpose", self, perm=perm)


@register("aten::t.default")
def aten_t(g, self):
    """t(Tensor(a) self) -> Tensor(a)"""
    return aten_transpose(g, self, 0, 1)


@register("aten::movedim.int")
def aten_movedim(g, self, source, destination):
    """movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)"""
    rank = self.rank
    order = [d for d in range(rank) if d != norm_dim(source, rank)]
    order.insert(norm_dim(destination, rank), norm_dim(source, rank))
    return aten_permute(g, self, order)


@register("aten::flatten.using_ints")
def aten_flatten(g, self, start_dim=0, end_dim=-1):
    """flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)"""
    rank = self.rank
    if rank == 0:
        return reshape(g, self, [1])
    start, end = norm_dim(start_dim, rank), norm_dim(end_dim, rank)
    if start == end:
        return self
    # Reshape's 0 copies the input dim at the same index, which holds for the dims before start. Its -1
    # cannot be inferred when another dim is 0 (no element to divide): then the flattened size is the product
    nonzero = all(isinstance(n, int) and n > 0 for d, n in enumerate(self.shape) if not start <= d <= end)
    flat = -1 if nonzero else sym_prod(g, [dim_size(g, self, d) for d in range(start, end + 1)])
    shape = [0] * start + [flat] + [dim_size(g, self, d) for d in range(end + 1, rank)]
    return reshape(g, self, shape)


@register("aten::unflatten.int")
def aten_unflatten(g, self, dim, sizes):
    """unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)"""
    rank = self.rank
    dim = norm_dim(dim, rank)
    shape = [0] * dim + list(sizes) + [dim_size(g, self, d) for d in range(dim + 1, rank)]
    return reshape(g, self, shape)


@register("aten::slice.Tensor")
def aten_slice(g, self, dim=0, start=None, end=None, step=1):
    """slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)"""
    dim = norm_dim(dim, self.rank)
    if is_full_slice(self, dim, start, end, step):
        return self
    return slice_axis(g, self, dim, 0 if start is None else start, INT64_MAX if end is None else end, step)


@register("aten::select.int")
def aten_select(g, self, dim, index):
    """select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"""
    idx = index if isinstance(index, Value) else g.const(index, dtype=torch.int64)
    return g.gather(self, idx, norm_dim(dim, self.rank))


@register("aten::take.default")
def aten_take(g, self, index):
    """take(Tensor self, Tensor index) -> Tensor"""
    return g.gather(reshape(g, self, [-1]), index, 0)


def chunk_sizes(total: int, split_size: int) -> list[int]:
    if split_size == 0:
        return [0]
    n = max(1, -(-total // split_size))
    return [split_size] * (n - 1) + [total - split_size * (n - 1)]


def static_dim(x: Value, dim: int, what: str) -> int:
    size = x.shape[dim] if x.shape is not None else None
    if not isinstance(size, int):
        raise NotImplementedError(f"{what} along a dynamic dim is not supported yet")
    return size


@register("aten::split.Tensor")
def aten_split(g, self, split_size, dim=0):
    """split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"""
    dim = norm_dim(dim, self.rank)
    return g.split(self, chunk_sizes(static_dim(self, dim, "split"), split_size), dim)


@register("aten::split_with_sizes.default")
def aten_split_with_sizes(g, self, split_sizes, dim=0):
    """split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]"""
    return g.split(self, list(split_sizes), norm_dim(dim, self.rank))


@register("aten::chunk.default")
def aten_chunk(g, self, chunks, dim=0):
    """chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"""
    dim = norm_dim(dim, self.rank)
    total = static_dim(self, dim, "chunk")
    return g.split(self, chunk_sizes(total, -(-total // chunks)), dim)


@register("aten::unbind.int")
def aten_unbind(g, self, dim=0):
    """unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]"""
    dim = norm_dim(dim, self.rank)
    return [aten_select(g, self, dim, i) for i in range(static_dim(self, dim, "unbind"))]


@register("aten::cat.default")
def aten_cat(g, tensors, dim=0):
    """cat(Tensor[] tensors, int dim=0) -> Tensor"""
    # ATen skips legacy empty 1-D tensors in cat; ONNX Concat would reject them.
    tensors = [t for t in tensors if not (t.shape == (0,) and t.rank == 1)] or tensors[:1]
    tensors = promote(g, *tensors)
    if len(tensors) == 1:
        return tensors[0]
    return g.op("Concat", *tensors, axis=norm_dim(dim, tensors[0].rank))


@register("aten::stack.default")
def aten_stack(g, tensors, dim=0):
    """stack(Tensor[] tensors, int dim=0) -> Tensor"""
    dim = norm_dim(dim, tensors[0].rank + 1)
    tensors = promote(g, *tensors)
    return g.op("Concat", *(unsqueeze_static(g, t, dim) for t in tensors), axis=dim)


def diff(g: GraphBuilder, self: Value, n: int, dim: int, prepend, append) -> Value:
    dim = norm_dim(dim, self.rank)
    parts = [t for t in (prepend, self, append) if t is not None]
    x = g.op("Concat", *promote(g, *parts), axis=dim) if len(parts) > 1 else self
    for _ in range(n):
        later = slice_axis(g, x, dim, 1, INT64_MAX)
        earlier = slice_axis(g, x, dim, 0, -1)
        x = g.op("Xor" if x.dtype == torch.bool else "Sub", later, earlier)
    return x


@register("aten::diff.default")
def aten_diff(g, self, n=1, dim=-1, prepend=None, append=None):
    """diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor"""
    return diff(g, self, n, dim, prepend, append)
