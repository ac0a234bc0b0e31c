"""Opset 16, scatter family: ScatterND and ScatterElements gain reduction="add"/"mul", so
accumulating writes (index_put accumulate=True, index_add, scatter_add, scatter reduce) translate.
scatter_add and scatter_reduce accumulate float16 and bfloat16 in float32 and round once, as ATen does
(onnxruntime has no float16 kernel for a reducing ScatterElements either)."""

from __future__ import annotations

import functools
from typing import Callable

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import as_value, cast, opmath, reshape
from aten2onnx.symbolic.opset11_scatter import index_along, index_put, scatter

register = functools.partial(registry.register, opset=16)

# torch's reduce names -> ONNX reduction attribute
REDUCTIONS = {"add": "add", "sum": "add", "multiply": "mul", "prod": "mul"}


def reduction(reduce: str, supported: dict[str, str]) -> str:
    if reduce not in supported:
        raise NotImplementedError(f"scatter reduce={reduce!r} has no ONNX reduction at this opset; "
                                  f"supported: {sorted(supported)}")
    return supported[reduce]


@register("aten::index_put.default")
def aten_index_put(g, self, indices, values, accumulate=False):
    """index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor"""
    return index_put(g, self, list(indices), values, reduction="add" if accumulate else None)


@register("aten::index_add.default")
def aten_index_add(g, self, dim, index, source, *, alpha=1):
    """index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor"""
    if alpha != 1:
        source = g.op("Mul", source, as_value(g, alpha, source.dtype))
    return index_along(g, self, dim, index, source, reduction="add")


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
    return accumulated(g, self, dim, index, src, reduction(reduce, REDUCTIONS))


@register("aten::scatter.value_reduce")
def aten_scatter_value_reduce(g, self, dim, index, value, *, reduce):
    """scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor"""
    return accumulated(g, self, dim, index, value, reduction(reduce, REDUCTIONS))


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
                write: Callable[[Value, Value | int | float, str | None], Value], supported: dict[str, str], *,
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
        op = reduction(reduce, supported)
        base = self if include_self else write(self, identity(reduce, self.dtype), None)
        return cast(g, write(base, src, op), dtype)
    if "add" not in supported.values():
        raise NotImplementedError("scatter reduce='mean' needs ScatterElements reduction='add' (opset 16)")
    base = self if include_self else write(self, 0, None)
    sums = write(base, src, "add")
    ones = ones_like(g, self, self.dtype)
    counts = write(ones if include_self else write(ones, 0, None), ones_like(g, hits, self.dtype), "add")
    if self.dtype.is_floating_point:
        return g.op("Div", cast(g, sums, dtype), cast(g, counts, dtype))
    quotient = g.op("Floor", g.op("Div", cast(g, sums, torch.float64), cast(g, counts, torch.float64)))
    return cast(g, quotient, self.dtype)


def scatter_reduce(g: GraphBuilder, self: Value, dim: int, index: Value, src: Value, reduce: str,
                   include_self: bool, supported: dict[str, str]) -> Value:
    acc = opmath(self.dtype)
    return reduce_into(g, cast(g, self, acc), cast(g, src, acc), reduce, include_self,
                       lambda base, values, op: scatter(g, base, dim, index, values, reduction=op), supported,
                       hits=index, dtype=self.dtype)


def acc_differs(dtype: torch.dtype) -> bool:
    return opmath(dtype) != dtype


def index_reduce(g: GraphBuilder, self: Value, dim: int, index: Value, source: Value, reduce: str,
                 include_self: bool, supported: dict[str, str]) -> Value:
    if self.rank == 0:  # eager reads a 0-d self, index and source as one-element vectors
        out = index_reduce(g, reshape(g, self, [1]), 0, reshape(g, index, [1]), reshape(g, source, [1]), reduce,
                           include_self, supported)
        return reshape(g, out, [])
    if reduce in ("amax", "amin") and acc_differs(self.dtype):
        # a maximum or minimum is exact in any float type: onnxruntime's float32 kernel computes it
        acc = opmath(self.dtype)
        out = index_reduce(g, cast(g, self, acc), dim, index, cast(g, source, acc), reduce, include_self, supported)
        return cast(g, out, self.dtype)
    if acc_differs(self.dtype):
        raise NotImplementedError(f"index_reduce {reduce!r} rounds each step in {self.dtype} in eager, "
                                  "which a ScatterND reduction cannot reproduce")

    def write(base, values, op):
        values = values if isinstance(values, Value) else g.const(values, dtype=self.dtype)
        return index_along(g, base, dim, index, values, reduction=op)
    return reduce_into(g, self, source, reduce, include_self, write, supported, hits=source)


@register("aten::scatter_reduce.two")
def aten_scatter_reduce(g, self, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor"""
    return scatter_reduce(g, self, dim, index, src, reduce, include_self, REDUCTIONS)


@register("aten::index_reduce.default")
def aten_index_reduce(g, self, dim, index, source, reduce, *, include_self=True):
    """index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) -> Tensor"""
    return index_reduce(g, self, dim, index, source, reduce, include_self, REDUCTIONS)
