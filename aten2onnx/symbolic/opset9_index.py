"""Opset-9 base, indexing: embedding, index_select, advanced indexing (aten::index, with eager's order of
the indexed dims) and gather, as Gather of the positions computed in the graph."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import SymInt, cast, dim_size, norm_dim, reshape

register = functools.partial(registry.register, opset=9)


# -- indexing ---------------------------------------------------------------------------------------------------


@register("aten::embedding.default")
def aten_embedding(g, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor"""
    return g.op("Gather", weight, indices, axis=0)


@register("aten::index_select.default")
def aten_index_select(g, self, dim, index):
    """index_select(Tensor self, int dim, Tensor index) -> Tensor"""
    if self.rank == 0:
        return g.op("Gather", reshape(g, self, [1]), reshape(g, index, []), axis=0)
    return g.op("Gather", self, reshape(g, index, [-1]) if index.rank == 0 else index, axis=norm_dim(dim, self.rank))


def broadcast_indices(g: GraphBuilder, indices: list[Value]) -> list[Value]:
    """Index tensors broadcast to one shape, as advanced indexing does (x*0 sums share the shape)."""
    if len(indices) == 1:
        return indices
    zero = None
    for idx in indices:
        z = g.op("Mul", idx, g.const(0, like=idx))
        zero = z if zero is None else g.op("Add", zero, z)
    return [g.op("Add", idx, zero) for idx in indices]


def index_tensors(g: GraphBuilder, indices: list[Value | None]) -> list[Value | None]:
    """Advanced-indexing arguments with masks expanded: a mask over k dims stands for k index
    tensors, the coordinates of its true entries (one row of NonZero each)."""
    expanded: list[Value | None] = []
    for idx in indices:
        if idx is not None and idx.dtype in (torch.bool, torch.uint8):
            coords = g.op("NonZero", cast(g, idx, torch.bool))
            for k in range(idx.rank):
                row = g.op("Gather", coords, g.const(k, dtype=torch.int64), axis=0)
                row.shape = (None,)  # one coordinate per true element
                expanded.append(row)
        else:
            expanded.append(idx)
    return expanded


def eager_index_order(positions: list[int], rest: int, index_rank: int | None) -> list[int] | None:
    """The transpose from a gather's layout [index dims..., other dims...] to eager's, where adjacent
    indexed dims leave the result's index dims at the first one's place (None: the layouts agree)."""
    first = positions[0]
    adjacent = positions == list(range(first, positions[-1] + 1))
    if not adjacent or first == 0:
        return None
    if index_rank is None:
        raise NotImplementedError("advanced indexing after a full dim with index tensors of unknown rank")
    k = index_rank
    return list(range(k, k + first)) + list(range(k)) + list(range(k + first, k + rest))


def from_end(g: GraphBuilder, index: Value, size: SymInt) -> Value:
    """Negative indices counted from the end of a dim of `size`, as advanced indexing reads them
    (Gather takes negative indices only from opset 11)."""
    index = cast(g, index, torch.int64)
    negative = cast(g, g.op("Less", index, g.const(0, dtype=torch.int64)), torch.int64)
    return g.op("Add", index, g.op("Mul", negative, int_scalar(g, size)))


def int_scalar(g: GraphBuilder, size: SymInt) -> Value:
    """A size as a 0-d int64 value (dim_size gives a static size as an int)."""
    return size if isinstance(size, Value) else g.const(size, dtype=torch.int64)


@register("aten::index.Tensor")
def aten_index(g, self, indices):
    """index.Tensor(Tensor self, Tensor?[] indices) -> Tensor"""
    expanded = index_tensors(g, list(indices))
    positions = [i for i, idx in enumerate(expanded) if idx is not None]
    rest = [i for i in range(self.rank) if i not in positions]
    sizes = [dim_size(g, self, p) for p in positions]
    index = broadcast_indices(g, [from_end(g, expanded[p], size) for p, size in zip(positions, sizes)])
    if len(positions) == 1:
        return g.op("Gather", self, index[0], axis=positions[0])
    # one Gather over the indexed dims flattened, at each index's row-major offset among them
    linear = index[0]
    for idx, size in zip(index[1:], sizes[1:]):
        linear = g.op("Add", g.op("Mul", linear, int_scalar(g, size)), idx)
    x = self if positions == list(range(len(positions))) else g.op("Transpose", self, perm=positions + rest)
    out = g.op("Gather", g.op("Flatten", x, axis=len(positions)), linear, axis=0)
    rest_sizes = g.op("Gather", g.op("Shape", self), g.const(rest, dtype=torch.int64), axis=0)
    out = g.reshape_to_sizes(out, g.op("Concat", g.op("Shape", linear), rest_sizes, axis=0))
    order = eager_index_order(positions, len(rest), linear.rank)
    return out if order is None else g.op("Transpose", out, perm=order)


def positions_along(g: GraphBuilder, x: Value, dim: int) -> Value:
    """0, 1, ..., x.size(dim) - 1 laid along `dim` of a tensor of x's rank (size 1 elsewhere),
    without Range (opset 11): the coordinates NonZero gives of a vector of ones."""
    size = dim_size(g, x, dim)
    if isinstance(size, int):
        line = g.const(list(range(size)), dtype=torch.int64)
    else:
        ones = g.op("ConstantOfShape", g.int_list([size]), value=torch.ones(1, dtype=torch.int64))
        line = g.op("NonZero", ones)
    return g.op("Reshape", line, g.int_list([1] * dim + [size] + [1] * (x.rank - dim - 1)))


@register("aten::gather.default")
def aten_gather(g, self, dim, index, *, sparse_grad=False):
    """gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor"""
    if self.rank == 0 or index.rank != self.rank:
        raise NotImplementedError("gather of a 0-d tensor needs opset 11 (GatherElements)")
    axis = norm_dim(dim, self.rank)
    # each result element's row-major offset in self: the index on `axis`, its own position elsewhere
    offset = None
    for d in range(self.rank):
        coord = cast(g, index, torch.int64) if d == axis else positions_along(g, index, d)
        offset = coord if offset is None else g.op("Add", g.op("Mul", offset, int_scalar(g, dim_size(g, self, d))), coord)
    return g.op("Gather", g.op("Reshape", self, g.const([-1], dtype=torch.int64)), offset, axis=0)
