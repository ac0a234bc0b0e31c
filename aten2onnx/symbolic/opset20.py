"""Opset 20: Gelu arrives, with both of ATen's approximations."""

from __future__ import annotations

import functools

from aten2onnx import registry

register = functools.partial(registry.register, opset=20)


@register("aten::gelu.default")
def aten_gelu(g, self, *, approximate="none"):
    """gelu(Tensor self, *, str approximate="none") -> Tensor"""
    return g.op("Gelu", self, approximate=approximate)
