"""Opset 11, fused attention of training graphs: Range arrives, so is_causal builds its mask for
dynamic sequence lengths too."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic.opset9_attention import no_attention_dropout
from aten2onnx.symbolic.opset9_attention_backward import fused_attention, fused_attention_backward

register = functools.partial(registry.register, opset=11)


@register("aten::_scaled_dot_product_flash_attention_for_cpu.default")
def aten__scaled_dot_product_flash_attention_for_cpu(g, query, key, value, dropout_p=0.0, is_causal=False, *,
                                                     attn_mask=None, scale=None):
    """_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)"""
    no_attention_dropout(dropout_p)
    return fused_attention(g, query, key, value, attn_mask, is_causal, scale, has_range=True)


@register("aten::_scaled_dot_product_flash_attention_for_cpu_backward.default")
def aten__scaled_dot_product_flash_attention_for_cpu_backward(g, grad_out, query, key, value, out, logsumexp,
                                                              dropout_p, is_causal, *, attn_mask=None, scale=None):
    """_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)"""
    no_attention_dropout(dropout_p)
    return fused_attention_backward(g, grad_out, query, key, value, out, logsumexp, attn_mask, is_causal, scale,
                                    has_range=True)
