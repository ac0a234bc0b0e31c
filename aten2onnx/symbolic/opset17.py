"""Opset 17: LayerNormalization arrives."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry

register = functools.partial(registry.register, opset=17)


@register("aten::layer_norm.default")
def aten_layer_norm(g, input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor"""
    if weight is None and all(isinstance(s, int) for s in normalized_shape):
        weight = g.const(torch.ones(list(normalized_shape), dtype=input.dtype))
    elif weight is None:  # normalized sizes known at run time only: ones of the input's trailing shape
        trailing = g.op("Slice", g.op("Shape", input), g.const([-len(normalized_shape)], dtype=torch.int64),
                        g.const([input.rank], dtype=torch.int64))
        weight = g.op("Expand", g.const(1, dtype=input.dtype), trailing)
    return g.op("LayerNormalization", input, weight, bias, axis=-len(normalized_shape), epsilon=float(eps))
