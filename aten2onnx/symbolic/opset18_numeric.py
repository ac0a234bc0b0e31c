"""Opset 18, numeric utilities: ReduceMax takes its axes as an input, so renorm's inf-norm changes."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import AXES18
from aten2onnx.symbolic.opset9_numeric import renorm

register = functools.partial(registry.register, opset=18)


@register("aten::renorm.default")
def aten_renorm(g, self, p, dim, maxnorm):
    """renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor"""
    return renorm(g, self, p, dim, maxnorm, mode=AXES18)
