"""Opset-9 base, scatter family by ScatterElements (g.scatter_elements: Scatter before opset 11; reductions
add/mul from 16, max/min from 18, NotImplementedError before): scatter, scatter_add, scatter reduce and
scatter_reduce, and max_unpool. scatter_add and scatter_reduce accumulate float16 and bfloat16 in float32 and
round once, as ATen does (onnxruntime has no float16 kernel for a reducing ScatterElements either)."""

from __future__ import annotations

import functools
import math
from typing import Callable

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import as_value, cast, dim_size, loop, norm_dim, opmath, reshape, sym_prod
from aten2onnx.symbolic.opset9_shape import diagonal_dynamic

register = functools.partial(registry.register, opset=9)


def scatter(g: GraphBuilder, self: Value, dim: int, index: Value, src, *, reduction: str | None) -> Value:
    dim = norm_dim(dim, self.rank)
    if isinstance(src, Value) and src.shape != index.shape:
        # torch reads only src[:index.shape]; ScatterElements wants updates shaped like indices.
        # (index's symbolic sizes are read from its shape in the graph)
        if index.rank is None:
            raise NotImplementedError("scatter with a src larger than index needs index's rank")
        src = g.slice(src, [0] * index.rank, [dim_size(g, index, d) for d in range(index.rank)],
                      list(range(index.rank)))
    if not isinstance(src, Value) or src.rank == 0:
        value = g.const(src, dtype=self.dtype) if not isinstance(src, Value) else cast(g, src, self.dtype)
        src = g.op("Expand", value, g.op("Shape", index))
    return g.scatter_elements(self, index, cast(g, src, self.dtype), dim, reduction)


@register("aten::scatter.src")
def aten_scatter(g, self, dim, index, src):
    """scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"""
    return scatter(g, self, dim, index, src, reduction=None)


@register("aten::scatter.value")
def aten_scatter_value(g, self, dim, index, value):
    """scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"""
    return scatter(g, self, dim, index, value, reduction=None)


# torch's reduce names -> ONNX reduction attribute
REDUCTIONS = {"add": "add", "sum": "add", "multiply": "mul", "prod": "mul", "amax": "max", "amin": "min"}


def reduction(reduce: str) -> str:
    """The ONNX reduction of a torch reduce name (which ones the opset has, g.scatter_elements/g.scatter_nd say)."""
    if reduce not in REDUCTIONS:
        raise NotImplementedError(f"scatter reduce={reduce!r} has no ONNX reduction; supported: {sorted(REDUCTIONS)}")
    return REDUCTIONS[reduce]


@register("aten::scatter_add.default")
def aten_scatter_add(g, self, dim, index, src):
    """scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"""
    return accumulated(g, self, dim, index, src, "add")


def accumulated(g: GraphBuilder, self: Value, dim: int, index: Value, src, op: str) -> Value:
    """A reducing ScatterElements in opmath(self.dtype), rounded once (a Python src is self's dtype first)."""
    acc = opmath(self.dtype)
    src = cast(g, src if isinstance(src, Value) else g.const(src, dtype=self.dtype), acc)
    return cast(g, scatter(g, cast(g, self, acc), dim, index, src, reduction=op), self.dtype)


@register("aten::scatter.reduce")
def aten_scatter_src_reduce(g, self, dim, index, src, *, reduce):
    """scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor"""
    return accumulated(g, self, dim, index, src, reduction(reduce))


@register("aten::scatter.value_reduce")
def aten_scatter_value_reduce(g, self, dim, index, value, *, reduce):
    """scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor"""
    return accumulated(g, self, dim, index, value, reduction(reduce))


def identity(reduce: str, dtype: torch.dtype):
    """The value a reduction starts from, written over self where include_self=False."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.is_floating_point:
        return -float("inf") if reduce == "amax" else float("inf")
    if dtype == torch.bool:
        return reduce == "amin"
    info = torch.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def ones_like(g: GraphBuilder, x: Value, dtype: torch.dtype) -> Value:
    """Ones shaped like x; Where broadcasts, so the builder keeps x's static shape (Expand's is unknown)."""
    return g.op("Where", g.const(True), g.const(1, dtype=dtype), cast(g, x, dtype))


def reduce_into(g: GraphBuilder, self: Value, src: Value, reduce: str, include_self: bool,
                write: Callable[[Value, Value | int | float, str | None], Value], *,
                hits: Value, dtype: torch.dtype | None = None) -> Value:
    """scatter_reduce/index_reduce: write(base, values, reduction) scatters values into base at the
    op's indices. include_self=False first overwrites the hit positions with the reduction's identity;
    "mean" is a scatter-add of the values and of ones shaped like `hits`, divided (floor for ints, as eager).
    `dtype` (default self's) is the result's: the reduction is rounded to it, a mean's sum before dividing."""
    dtype = dtype or self.dtype
    scatter_into = write

    def write(base, values, op):
        out = scatter_into(base, values, op)
        out.shape = out.shape or base.shape  # a scatter keeps its base's shape; later writes need the rank
        return out

    if reduce != "mean":
        op = reduction(reduce)
        base = self if include_self else write(self, identity(reduce, self.dtype), None)
        return cast(g, write(base, src, op), dtype)
    base = self if include_self else write(self, 0, None)
    sums = write(base, src, "add")
    ones = ones_like(g, self, self.dtype)
    counts = write(ones if include_self else write(ones, 0, None), ones_like(g, hits, self.dtype), "add")
    if self.dtype.is_floating_point:
        return g.op("Div", cast(g, sums, dtype), cast(g, counts, dtype))
    quotient = g.op("Floor", g.op("Div", cast(g, sums, torch.float64), cast(g, counts, torch.float64)))
    return cast(g, quotient, self.dtype)


def scatter_reduce(g: GraphBuilder, self: Value, dim: int, index: Value, src: Value, reduce: str,
                   include_self: bool) -> Value:
    acc = opmath(self.dtype)
    return reduce_into(g, cast(g, self, acc), cast(g, src, acc), reduce, include_self,
                       lambda base, values, op: scatter(g, base, dim, index, values, reduction=op),
                       hits=index, dtype=self.dtype)


@register("aten::scatter_reduce.two")
def aten_scatter_reduce(g, self, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor"""
    return scatter_reduce(g, self, dim, index, src, reduce, include_self)


# -- index_copy, index_add, index_fill, index_reduce: rows along a dim by ScatterElements --------------------
# (opset 11 writes them with ScatterND, which it brings; these are the spelling before it)


def rows_along(g: GraphBuilder, self: Value, dim: int, index: Value, source: Value, *,
               reduction: str | None) -> Value:
    """self's rows `index` along dim replaced by source's (or combined with them by reduction): each row
    number spread over its row of source for ScatterElements. A 0-d source (a fill value) fills the rows."""
    if self.rank == 0:  # a scalar self: its one element is the row (index can only be 0)
        value = reshape(g, cast(g, source, self.dtype), [])
        return value if reduction is None else g.op("Add", self, value)
    dim = norm_dim(dim, self.rank)
    rank = self.rank
    index = reshape(g, cast(g, index, torch.int64), [-1])
    source = cast(g, source, self.dtype)
    if source.rank != rank:
        source = g.op("Expand", source, rows_shape(g, self, dim, index))
    spread = g.op("Expand", reshape(g, index, [1] * dim + [-1] + [1] * (rank - dim - 1)), g.op("Shape", source))
    spread.shape = source.shape
    out = g.scatter_elements(self, spread, source, dim, reduction)
    out.shape = out.shape or self.shape  # a scatter keeps its base's shape (a Loop's state needs the rank)
    return out


def rows_shape(g: GraphBuilder, self: Value, dim: int, index: Value) -> Value:
    """self's shape with its size along dim replaced by the number of indices (a 1-D int64 value)."""
    sizes = [dim_size(g, index, 0) if d == dim else dim_size(g, self, d) for d in range(self.rank)]
    if all(isinstance(n, int) for n in sizes):
        return g.const(sizes, dtype=torch.int64)
    return g.int_list(sizes)


def acc_differs(dtype: torch.dtype) -> bool:
    return opmath(dtype) != dtype


def index_reduce(g: GraphBuilder, self: Value, dim: int, index: Value, source: Value, reduce: str,
                 include_self: bool) -> Value:
    if self.rank == 0:  # eager reads a 0-d self, index and source as one-element vectors
        out = index_reduce(g, reshape(g, self, [1]), 0, reshape(g, index, [1]), reshape(g, source, [1]), reduce,
                           include_self)
        return reshape(g, out, [])
    if reduce in ("amax", "amin") and acc_differs(self.dtype):
        # a maximum or minimum is exact in any float type: onnxruntime's float32 kernel computes it
        acc = opmath(self.dtype)
        out = index_reduce(g, cast(g, self, acc), dim, index, cast(g, source, acc), reduce, include_self)
        return cast(g, out, self.dtype)
    if acc_differs(self.dtype):
        return index_reduce_in_order(g, self, dim, index, source, reduce, include_self)

    def write(base, values, op):
        values = values if isinstance(values, Value) else g.const(values, dtype=self.dtype)
        return rows_along(g, base, dim, index, values, reduction=op)
    return reduce_into(g, self, source, reduce, include_self, write, hits=source)


def index_reduce_in_order(g: GraphBuilder, self: Value, dim: int, index: Value, source: Value, reduce: str,
                          include_self: bool) -> Value:
    """index_reduce "prod" or "mean" of a half type as eager computes it: one index at a time (a Loop),
    each row's product or sum rounded to the dtype, then a mean's division by the row's count."""
    if reduce not in ("prod", "mean"):
        raise NotImplementedError(f"index_reduce has no reduction {reduce!r}; supported: amax, amin, mean, prod")
    dtype, acc = self.dtype, opmath(self.dtype)
    dim = norm_dim(dim, self.rank)
    rows = reshape(g, cast(g, index, torch.int64), [-1])
    base = self if include_self else rows_along(g, self, dim, rows, g.const(int(reduce == "prod"), dtype=dtype),
                                                reduction=None)

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        (current,) = state
        at = reshape(body, i, [1])
        row = body.gather(rows, at, axis=0)
        mine, theirs = (cast(body, body.gather(x, where, axis=dim), acc) for x, where in ((current, row), (source, at)))
        combined = body.op("Mul" if reduce == "prod" else "Add", mine, theirs)
        return [rows_along(body, current, dim, row, cast(body, combined, dtype), reduction=None)]

    (out,) = loop(g, dim_size(g, rows, 0), [base], step, name="index_reduce")
    if reduce == "prod":
        return out
    # each row's count: 1 for self where included, 1 per index; a row counted 0 divides by 1
    ones = ones_like(g, self, acc)
    counts = ones if include_self else rows_along(g, ones, dim, rows, g.const(0.0, dtype=acc), reduction=None)
    counts = rows_along(g, counts, dim, rows, ones_like(g, source, acc), reduction="add")
    counts = g.op("Max", counts, g.const(1.0, dtype=acc))
    return g.op("Div", out, cast(g, counts, dtype))


@register("aten::index_reduce.default")
def aten_index_reduce(g, self, dim, index, source, reduce, *, include_self=True):
    """index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) -> Tensor"""
    return index_reduce(g, self, dim, index, source, reduce, include_self)


@register("aten::index_copy.default")
def aten_index_copy(g, self, dim, index, source):
    """index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor"""
    return rows_along(g, self, dim, index, source, reduction=None)


@register("aten::index_add.default")
def aten_index_add(g, self, dim, index, source, *, alpha=1):
    """index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor"""
    if alpha != 1:
        source = g.op("Mul", source, g.const(alpha, dtype=source.dtype))
    return rows_along(g, self, dim, index, source, reduction="add")


@register("aten::index_fill.int_Scalar", "aten::index_fill.int_Tensor")
def aten_index_fill(g, self, dim, index, value):
    """index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"""
    value = value if isinstance(value, Value) else g.const(value, dtype=self.dtype)
    return rows_along(g, self, dim, index, value, reduction=None)


# -- as_strided_scatter and diagonal_scatter: writes at flat positions ----------------------------------------


def strided_positions(shape: list[int], size: list[int], stride: list[int], offset: int) -> torch.Tensor:
    """Flat positions in a contiguous tensor of `shape` that as_strided(size, stride, offset) reads."""
    positions = torch.as_strided(torch.arange(math.prod(shape)), size, stride, offset)
    return positions.reshape(-1, 1)


def scatter_flat(g: GraphBuilder, self: Value, src: Value, positions: torch.Tensor | Value) -> Value:
    """self with src's elements written at flat positions (any shape, read flat); a symbolic self keeps the
    shape the graph reads from it."""
    flat = g.op("Reshape", self, g.const([-1], dtype=torch.int64))
    updates = g.op("Reshape", cast(g, src, self.dtype), g.const([-1], dtype=torch.int64))
    positions = positions if isinstance(positions, Value) else g.const(positions)
    out = g.scatter_elements(flat, g.op("Reshape", positions, g.const([-1], dtype=torch.int64)), updates, 0)
    if self.is_static:
        return g.op("Reshape", out, g.const(list(self.shape), dtype=torch.int64))
    out = g.op("Reshape", out, g.op("Shape", self))
    out.shape = self.shape
    return out


@register("aten::as_strided_scatter.default")
def aten_as_strided_scatter(g, self, src, size, stride, storage_offset=None):
    """as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor"""
    if not self.is_static or not all(isinstance(v, int) for v in [*size, *stride, storage_offset or 0]):
        raise NotImplementedError("as_strided_scatter needs static shapes, sizes and strides")
    return scatter_flat(g, self, src, strided_positions(list(self.shape), list(size), list(stride), storage_offset or 0))


@register("aten::diagonal_scatter.default")
def aten_diagonal_scatter(g, self, src, offset=0, dim1=0, dim2=1):
    """diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor"""
    if not self.is_static:  # the flat positions of self's diagonal, computed in the graph
        if self.rank is None:
            raise NotImplementedError("diagonal_scatter needs self's rank")
        i64 = torch.int64
        numel = as_value(g, sym_prod(g, [dim_size(g, self, d) for d in range(self.rank)]), i64)
        ids = g.op("Reshape", g.op("Range", g.const(0, dtype=i64), numel, g.const(1, dtype=i64)), g.op("Shape", self))
        ids.shape = self.shape
        diagonal = diagonal_dynamic(g, ids, offset, norm_dim(dim1, self.rank), norm_dim(dim2, self.rank))
        return scatter_flat(g, self, src, g.op("Reshape", diagonal, g.const([-1, 1], dtype=i64)))
    shape = list(self.shape)
    positions = torch.arange(math.prod(shape)).reshape(shape).diagonal(offset, dim1, dim2).reshape(-1, 1)
    return scatter_flat(g, self, src, positions)


# -- max_unpool: ScatterElements into each flattened plane ----------------------------------------------


def max_unpool(g: GraphBuilder, self: Value, indices: Value, output_size: list[int]) -> Value:
    """Each plane's values written at their flat in-plane indices of a zero plane of output_size."""
    k = len(output_size)
    if not self.is_static or not all(isinstance(s, int) for s in output_size):
        raise NotImplementedError("max_unpool needs static input and output sizes")
    lead = list(self.shape[:-k])
    planes = lead + [-1]
    zeros = g.op("Expand", g.const(0, dtype=self.dtype), g.const(lead + [math.prod(output_size)], dtype=torch.int64))
    flat = g.scatter_elements(zeros, g.op("Reshape", cast(g, indices, torch.int64), g.const(planes, dtype=torch.int64)),
                              g.op("Reshape", self, g.const(planes, dtype=torch.int64)), len(lead))
    return g.op("Reshape", flat, g.const(lead + list(output_size), dtype=torch.int64))


@register("aten::max_unpool2d.default")
def aten_max_unpool2d(g, self, indices, output_size):
    """max_unpool2d(Tensor self, Tensor indices, SymInt[2] output_size) -> Tensor"""
    return max_unpool(g, self, indices, list(output_size))


@register("aten::max_unpool3d.default")
def aten_max_unpool3d(g, self, indices, output_size, stride, padding):
    """max_unpool3d(Tensor self, Tensor indices, SymInt[3] output_size, int[3] stride, int[3] padding) -> Tensor"""
    return max_unpool(g, self, indices, list(output_size))
