"""Opset 12: Einsum arrives."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import surely_positive

register = functools.partial(registry.register, opset=12)


@register("aten::einsum.default")
def aten_einsum(g, equation, tensors, *, path=None):
    """einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor"""
    # onnxruntime's Einsum dies of a division by zero (SIGFPE) on some equations with an empty dim kept in
    # the output ("blhd,bshd->blhs" for s = 0): a dim that may be 0 goes through torch's decomposition
    if not all(t.shape is not None and all(surely_positive(g, d) for d in t.shape) for t in tensors):
        raise NotImplementedError("an operand's dim may be 0, where onnxruntime's Einsum crashes")
    return g.op("Einsum", *tensors, equation=equation)
