"""Opset 18, scatter family: reductions "max" and "min" arrive (scatter_reduce amax/amin)."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic.opset11_scatter import scatter
from aten2onnx.symbolic.opset16_scatter import REDUCTIONS, reduction

register = functools.partial(registry.register, opset=18)


@register("aten::scatter_reduce.two")
def aten_scatter_reduce(g, self, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor"""
    if not include_self:
        raise NotImplementedError("scatter_reduce with include_self=False has no ONNX equivalent")
    return scatter(g, self, dim, index, src, reduction=reduction(reduce, {**REDUCTIONS, "amax": "max", "amin": "min"}))
