"""Opset 18, scatter family: reductions "max" and "min" arrive (scatter_reduce and index_reduce amax/amin)."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic.opset16_scatter import REDUCTIONS, index_reduce, scatter_reduce

register = functools.partial(registry.register, opset=18)

REDUCTIONS18 = {**REDUCTIONS, "amax": "max", "amin": "min"}


@register("aten::scatter_reduce.two")
def aten_scatter_reduce(g, self, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor"""
    return scatter_reduce(g, self, dim, index, src, reduce, include_self, REDUCTIONS18)


@register("aten::index_reduce.default")
def aten_index_reduce(g, self, dim, index, source, reduce, *, include_self=True):
    """index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) -> Tensor"""
    return index_reduce(g, self, dim, index, source, reduce, include_self, REDUCTIONS18)
