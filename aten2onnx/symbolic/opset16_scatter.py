"""Opset 16, scatter family: ScatterND and ScatterElements gain reduction="add"/"mul", so
accumulating writes (index_put accumulate=True, index_add, scatter_add, scatter reduce) translate."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import as_value
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
    return scatter(g, self, dim, index, src, reduction="add")


@register("aten::scatter.reduce")
def aten_scatter_src_reduce(g, self, dim, index, src, *, reduce):
    """scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor"""
    return scatter(g, self, dim, index, src, reduction=reduction(reduce, REDUCTIONS))


@register("aten::scatter.value_reduce")
def aten_scatter_value_reduce(g, self, dim, index, value, *, reduce):
    """scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor"""
    return scatter(g, self, dim, index, value, reduction=reduction(reduce, REDUCTIONS))


@register("aten::scatter_reduce.two")
def aten_scatter_reduce(g, self, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor"""
    if not include_self:
        raise NotImplementedError("scatter_reduce with include_self=False has no ONNX equivalent")
    return scatter(g, self, dim, index, src, reduction=reduction(reduce, REDUCTIONS))
