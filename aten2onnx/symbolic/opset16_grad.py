"""Opset 16, gradients: ScatterND adds up repeated indices (reduction="add"), so the embedding
gradient scatters its rows instead of multiplying by a one-hot matrix."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import cast, fill
from aten2onnx.symbolic.opset9_grad import c, embedding_rows

register = functools.partial(registry.register, opset=16)


@register("aten::embedding_dense_backward.default")
def aten_embedding_dense_backward(g, grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor"""
    rows, idx, kept, dim = embedding_rows(g, grad_output, indices, padding_idx)
    out = g.op("ScatterND", fill(g, [num_weights, dim], 0, rows.dtype), idx, rows, reduction="add")
    if scale_grad_by_freq:
        ones = cast(g, g.op("Or", kept, g.op("Not", kept)), rows.dtype)  # a column of ones, one per index
        counts = g.op("ScatterND", fill(g, [num_weights, 1], 0, rows.dtype), idx, ones, reduction="add")
        out = g.op("Div", out, g.op("Max", counts, c(g, 1.0, counts)))
    return out
