"""Opset 23: Attention arrives, so scaled_dot_product_attention on 4-D inputs is one node; RMSNormalization
arrives, so rms_norm is one node."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.symbolic._helpers import cast, dim_size, opmath
from aten2onnx.symbolic.opset9_attention import attention, masks_nothing, no_attention_dropout, repeat_heads

register = functools.partial(registry.register, opset=23)


@register("aten::scaled_dot_product_attention.default")
def aten_scaled_dot_product_attention(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *,
                                      scale=None, enable_gqa=False):
    """scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"""
    no_attention_dropout(dropout_p)
    if masks_nothing(attn_mask):
        attn_mask = None
    if not (query.rank == key.rank == value.rank == 4):
        return attention(g, query, key, value, attn_mask, is_causal, scale, enable_gqa, has_range=True)
    if enable_gqa and query.shape[1] != key.shape[1]:
        repeats = query.shape[1] // key.shape[1]
        key, value = repeat_heads(g, key, repeats), repeat_heads(g, value, repeats)
    # ATen's CPU attention computes half types in float32 (opmath) and rounds the result once; ONNX's
    # Attention computes in its inputs' type, so half inputs are cast up and the result back
    dtype, acc = query.dtype, opmath(query.dtype)
    query, key, value = (cast(g, x, acc) for x in (query, key, value))
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        attn_mask = cast(g, attn_mask, acc)
    if attn_mask is not None:
        attn_mask = _full_rows(g, attn_mask, query, key)
    scale_attribute = None if scale is None else float(scale)
    if acc == torch.float64 and isinstance(query.shape[-1], int):
        # Attention's scale is a FLOAT attribute, which rounds a float64 scale to float32 (onnxruntime was
        # 2e-8 off eager): Q is scaled by the float64 value in the graph, and the attribute is 1
        factor = scale if scale is not None else 1 / math.sqrt(query.shape[-1])
        query = g.op("Mul", query, g.const(float(factor), dtype=torch.float64))
        scale_attribute = 1.0
    out = g.op("Attention", query, key, value, attn_mask, is_causal=int(is_causal), scale=scale_attribute)
    return cast(g, out, dtype)


def _full_rows(g, attn_mask, query, key):
    """attn_mask with its last two dims the query and key lengths. The spec broadcasts a mask over the query
    rows but pads a last dim shorter than the keys with -inf (a per-row [..., S, 1] mask would attend to key
    0 alone, where ATen broadcasts it), and onnxruntime's kernel (1.32) refuses any mask not [..., S, T]
    ("inconsistent q_sequence_length"); batch and head dims may stay broadcast."""
    rows, keys = query.shape[2], key.shape[2]
    if attn_mask.shape is not None and attn_mask.rank >= 2 and None not in (rows, keys) \
            and tuple(attn_mask.shape[-2:]) == (rows, keys):
        return attn_mask
    return g.op("Expand", attn_mask, g.int_list([dim_size(g, query, 2), dim_size(g, key, 2)]))


@register("aten::rms_norm.default")
def aten_rms_norm(g, input, normalized_shape, weight=None, eps=None):
    """rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor
    RMSNormalization computes in float32 (stash_type) for half inputs and rounds once, as ATen's kernel
    computes them in opmath; without a weight its scale is ones of the normalized shape."""
    if input.rank is None or not input.dtype.is_floating_point:
        raise NotImplementedError("rms_norm is one RMSNormalization for floating inputs of known rank")
    if eps is None:
        eps = torch.finfo(opmath(input.dtype)).eps
    if weight is None:
        if not all(isinstance(n, int) for n in normalized_shape):
            raise NotImplementedError("rms_norm without a weight over sizes known only when run")
        weight = g.const(torch.ones(list(normalized_shape), dtype=input.dtype))
    return g.op("RMSNormalization", input, cast(g, weight, input.dtype), axis=-len(normalized_shape),
                epsilon=float(eps), stash_type=1)
