"""Opset 13, gradients: ReduceSum takes its axes as an input (log_softmax backward)."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import AXES13
from aten2onnx.symbolic.opset9_grad import log_softmax_backward

register = functools.partial(registry.register, opset=13)


@register("aten::_log_softmax_backward_data.default")
def aten__log_softmax_backward_data(g, grad_output, output, dim, input_dtype):
    """_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor"""
    return log_softmax_backward(g, grad_output, output, dim, input_dtype, mode=AXES13)
