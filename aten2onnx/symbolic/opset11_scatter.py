"""Opset 11, scatter family: ScatterND arrives, so writes into tensors at index tensors (index_put,
index_copy, index_fill, and the *_scatter ops the mutation rewrite emits) translate. Accumulating writes
(index_put with accumulate=True, index_add, index_reduce) take ScatterND's reduction (g.scatter_nd: add/mul
from opset 16, max/min from 18, NotImplementedError before)."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import INT64_MAX, cast, dim_size, norm_dim, unsqueeze_static
from aten2onnx.symbolic.opset9 import extremum
from aten2onnx.symbolic.opset11 import index_layout

register = functools.partial(registry.register, opset=11)


# -- index_put: ScatterND over the indexed dims -----------------------------------------------------


def _inverse(perm: list[int]) -> list[int]:
    return sorted(range(len(perm)), key=perm.__getitem__)


def index_put(g: GraphBuilder, self: Value, indices: list[Value | None], values: Value, *,
              reduction: str | None) -> Value:
    """self[indices] = values (or op= values): the indexed dims are moved first, the index tensors
    broadcast and stacked for ScatterND, and values broadcast to the shape self[indices] has in eager."""
    if reduction is None and len(indices) == 1 and indices[0] is not None and indices[0].dtype == torch.bool \
            and indices[0].rank == self.rank and values.rank == 0:
        return g.op("Where", indices[0], cast(g, values, self.dtype), self)  # x[mask] = scalar
    layout = index_layout(g, self, indices)
    rest_shape = [self.shape[i] for i in layout.rest] if self.shape is not None else None
    nd_shape = _static_shape(layout.index_shape, rest_shape)
    updates = cast(g, values, self.dtype)
    order = layout.eager_order()
    if order is None:
        updates = _broadcast_to(g, updates, nd_shape, lambda: g.op("GatherND", layout.x, layout.stacked))
    else:
        # values broadcast in eager's layout of self[indices], then moved to ScatterND's.
        eager_shape = None if nd_shape is None else [nd_shape[i] for i in order]
        updates = _broadcast_to(g, updates, eager_shape,
                                lambda: g.op("Transpose", g.op("GatherND", layout.x, layout.stacked), perm=order))
        updates = g.op("Transpose", updates, perm=_inverse(order))
    out = g.scatter_nd(layout.x, layout.stacked, updates, reduction)
    return out if layout.perm == sorted(layout.perm) else g.op("Transpose", out, perm=_inverse(layout.perm))


def _static_shape(index_shape, rest_shape) -> list[int] | None:
    if index_shape is None or rest_shape is None:
        return None
    shape = list(index_shape) + list(rest_shape)
    return shape if all(isinstance(d, int) for d in shape) else None


def _broadcast_to(g: GraphBuilder, value: Value, shape: list[int] | None, like) -> Value:
    """value broadcast to shape, or to the shape of like() when shape is not static."""
    if shape is not None:
        if value.shape is not None and list(value.shape) == shape:
            return value
        return g.op("Expand", value, g.const(shape, dtype=torch.int64))
    return g.op("Expand", value, g.op("Shape", like()))


@register("aten::index_put.default")
def aten_index_put(g, self, indices, values, accumulate=False):
    """index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor"""
    return index_put(g, self, list(indices), values, reduction="add" if accumulate else None)


def index_along(g: GraphBuilder, self: Value, dim: int, index: Value, source: Value, *, reduction: str | None) -> Value:
    """index_copy/index_add: rows `index` along dim of self take (or add) source's."""
    if self.rank == 0:  # a scalar self: its one element is the row (index can only be 0)
        value = g.op("Reshape", cast(g, source, self.dtype), g.const([], dtype=torch.int64))
        return value if reduction is None else g.op("Add", self, value)
    dim = norm_dim(dim, self.rank)
    indices = [None] * dim + [index]
    return index_put(g, self, indices, source, reduction=reduction)


@register("aten::index_copy.default")
def aten_index_copy(g, self, dim, index, source):
    """index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor"""
    return index_along(g, self, dim, index, source, reduction=None)


@register("aten::index_fill.int_Scalar", "aten::index_fill.int_Tensor")
def aten_index_fill(g, self, dim, index, value):
    """index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"""
    value = value if isinstance(value, Value) else g.const(value, dtype=self.dtype)
    return index_along(g, self, dim, index, value, reduction=None)  # the value broadcasts to the rows


# -- the *_scatter ops: the inverses of views -------------------------------------------------------------


def slice_scatter(g: GraphBuilder, self: Value, src: Value, dim: int, start, end, step) -> Value:
    """self with self[dim-slice] replaced by src. Unit steps with static bounds are Slice + Concat
    (no index tensors); otherwise ScatterND along the dim."""
    dim = norm_dim(dim, self.rank)
    size = self.shape[dim] if self.shape is not None else None
    src = cast(g, src, self.dtype)
    start = 0 if start is None else start
    end = INT64_MAX if end is None else end
    if isinstance(size, int) and all(isinstance(v, int) for v in (start, end, step)):
        lo, hi, _ = slice(start, end, step).indices(size)
        if step == 1:
            pieces = []
            if lo > 0:
                pieces.append(_slice(g, self, dim, 0, lo))
            pieces.append(src)
            if hi < size:
                pieces.append(_slice(g, self, dim, hi, size))
            return pieces[0] if len(pieces) == 1 else g.op("Concat", *pieces, axis=dim)
        rows = g.const(list(range(lo, hi, step)), dtype=torch.int64)
    else:
        limit = dim_size(g, self, dim)
        bounds = [_clamp_index(g, v, limit) for v in (start, end)]
        rows = g.op("Range", bounds[0], bounds[1], g.const(step, dtype=torch.int64) if isinstance(step, int) else step)
        rows.shape = (src.shape[dim] if src.shape is not None else None,)  # as many rows as src has along dim
    return index_along(g, self, dim, rows, src, reduction=None)


def _slice(g: GraphBuilder, x: Value, dim: int, lo: int, hi: int) -> Value:
    return g.op("Slice", x, g.const([lo], dtype=torch.int64), g.const([hi], dtype=torch.int64),
                g.const([dim], dtype=torch.int64))


def _clamp_index(g: GraphBuilder, value, size) -> Value:
    """A slice bound as Python's slice.indices does it: negative from the end, clamped to [0, size]."""
    v = value if isinstance(value, Value) else g.const(value, dtype=torch.int64)
    n = size if isinstance(size, Value) else g.const(size, dtype=torch.int64)
    v = cast(g, v, torch.int64)
    v = g.op("Where", g.op("Less", v, g.const(0, dtype=torch.int64)), g.op("Add", v, n), v)
    return extremum(g, "Min", extremum(g, "Max", v, g.const(0, dtype=torch.int64)), n)


@register("aten::slice_scatter.default")
def aten_slice_scatter(g, self, src, dim=0, start=None, end=None, step=1):
    """slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor"""
    return slice_scatter(g, self, src, dim, start, end, step)


@register("aten::select_scatter.default")
def aten_select_scatter(g, self, src, dim, index):
    """select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor"""
    dim = norm_dim(dim, self.rank)
    if dim == 0:
        # A [1] index makes ScatterND write one row taken as it is: y[i] += f(y[i]) is one node.
        if isinstance(index, Value):
            idx = g.op("Reshape", cast(g, index, torch.int64), g.const([1], dtype=torch.int64))
        else:
            idx = g.const([index], dtype=torch.int64)
        return g.scatter_nd(self, idx, cast(g, src, self.dtype))
    row = unsqueeze_static(g, cast(g, src, self.dtype), dim)
    size = self.shape[dim] if self.shape is not None else None
    if isinstance(index, int) and isinstance(size, int):
        index = index % size
        return slice_scatter(g, self, row, dim, index, index + 1, 1)
    rows = g.op("Reshape", cast(g, index, torch.int64) if isinstance(index, Value) else g.const(index, dtype=torch.int64),
                g.const([1], dtype=torch.int64))
    return index_along(g, self, dim, rows, row, reduction=None)


