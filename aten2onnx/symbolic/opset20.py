"""Opset 20: Gelu arrives, with both of ATen's approximations."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import cast, float_opmath

register = functools.partial(registry.register, opset=20)


@register("aten::gelu.default")
def aten_gelu(g, self, *, approximate="none"):
    """gelu(Tensor self, *, str approximate="none") -> Tensor (half types in float32, rounded once, as eager)"""
    return cast(g, g.op("Gelu", float_opmath(g, self), approximate=approximate), self.dtype)
