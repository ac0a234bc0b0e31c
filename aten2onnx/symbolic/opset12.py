"""Opset 12: Einsum arrives."""

from __future__ import annotations

import functools

from aten2onnx import registry

register = functools.partial(registry.register, opset=12)


@register("aten::einsum.default")
def aten_einsum(g, equation, tensors, *, path=None):
    """einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor"""
    return g.op("Einsum", *tensors, equation=equation)
