"""Opset-9 base, fused attention of training graphs: ATen's CPU flash attention (output and the rows'
logsumexp), which a training export keeps as scaled_dot_product_attention's forward, and its backward,
which recomputes the probabilities from the logsumexp (fused_attention and its gradient, shared with opset 11)."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, opmath, reshape
from aten2onnx.symbolic.opset9_attention import attention_scores, default_scale, no_attention_dropout, repeat_heads

register = functools.partial(registry.register, opset=9)


def _transposed(g: GraphBuilder, x: Value) -> Value:
    """x [B, H, L, S] as [B, H, S, L] (the op takes 4-D inputs only)."""
    return g.op("Transpose", x, perm=[0, 1, 3, 2])


def _heads(g: GraphBuilder, query: Value, key: Value, value: Value) -> tuple[Value, Value, int]:
    """key and value with query's head count (grouped-query attention repeats each kv head in place),
    and how many times each was repeated."""
    heads, kv_heads = query.shape[1], key.shape[1]
    if heads == kv_heads:
        return key, value, 1
    if not (isinstance(heads, int) and isinstance(kv_heads, int)):
        raise NotImplementedError("grouped-query flash attention needs static head counts")
    repeats = heads // kv_heads
    return repeat_heads(g, key, repeats), repeat_heads(g, value, repeats), repeats


def _ungrouped(g: GraphBuilder, grad: Value, like: Value, repeats: int) -> Value:
    """A gradient with respect to repeated heads [B, H*repeats, S, E] summed back onto the heads of
    like [B, H, S, E], the key or value it repeated."""
    if repeats == 1:
        return grad
    grouped = reshape(g, grad, [0, like.shape[1], repeats, -1, like.shape[3]])
    return g.reduce("ReduceSum", grouped, [2], False)


def fused_attention(g: GraphBuilder, query: Value, key: Value, value: Value, attn_mask, is_causal: bool, scale, *,
                    has_range: bool) -> tuple[Value, Value]:
    """(softmax(S) v, logsumexp(S) over each row) for S = q k^T * scale + mask, in ATen's accumulation
    type. As in ATen's CPU kernel, a row every key is masked out of gives output 0 and logsumexp 0 (not NaN
    and -inf), so the backward's exp(S - logsumexp) is 0 there."""
    dtype, acc = query.dtype, opmath(query.dtype)
    query, key, value = (cast(g, x, acc) for x in (query, key, value))
    key, value, _ = _heads(g, query, key, value)
    scores = attention_scores(g, query, key, attn_mask, is_causal, scale, has_range=has_range)
    zero = g.const(0.0, like=scores)
    top = g.reduce("ReduceMax", scores, [3], True)
    top = g.op("Where", g.op("Greater", top, g.const(float("-inf"), like=top)), top, zero)
    weights = g.op("Exp", g.op("Sub", scores, top))
    total = g.reduce("ReduceSum", weights, [3], True)
    total = g.op("Where", g.op("Greater", total, zero), total, g.const(1.0, like=total))
    out = g.op("Div", g.op("MatMul", weights, value), total)
    logsumexp = g.op("Add", top, g.op("Log", total))
    return cast(g, out, dtype), g.squeeze(logsumexp, [3])


def fused_attention_backward(g: GraphBuilder, grad_out: Value, query: Value, key: Value, value: Value, out: Value,
                             logsumexp: Value, attn_mask, is_causal: bool, scale, *,
                             has_range: bool) -> tuple[Value, Value, Value]:
    """(dQ, dK, dV) from P = exp(S - logsumexp): dV = P^T dO, dS = P (dO V^T - rowsum(dO O)),
    dQ = dS K scale, dK = dS^T Q scale; with grouped heads, dK and dV summed over each group."""
    dtype, acc = query.dtype, opmath(query.dtype)
    grad_out, query, key, value, out, logsumexp = (
        cast(g, x, acc) for x in (grad_out, query, key, value, out, logsumexp))
    grouped_key, grouped_value = key, value
    key, value, repeats = _heads(g, query, key, value)
    scores = attention_scores(g, query, key, attn_mask, is_causal, scale, has_range=has_range)
    probs = g.op("Exp", g.op("Sub", scores, g.unsqueeze(logsumexp, [3])))
    grad_value = g.op("MatMul", _transposed(g, probs), grad_out)
    grad_probs = g.op("MatMul", grad_out, _transposed(g, value))
    row = g.reduce("ReduceSum", g.op("Mul", grad_out, out), [3], True)
    grad_scores = g.op("Mul", probs, g.op("Sub", grad_probs, row))
    factor = g.const(default_scale(query, scale), like=query)
    grad_query = g.op("Mul", g.op("MatMul", grad_scores, key), factor)
    grad_key = g.op("Mul", g.op("MatMul", _transposed(g, grad_scores), query), factor)
    grad_key = _ungrouped(g, grad_key, grouped_key, repeats)
    grad_value = _ungrouped(g, grad_value, grouped_value, repeats)
    return tuple(cast(g, x, dtype) for x in (grad_query, grad_key, grad_value))


@register("aten::_scaled_dot_product_flash_attention_for_cpu.default")
def aten__scaled_dot_product_flash_attention_for_cpu(g, query, key, value, dropout_p=0.0, is_causal=False, *,
                                                     attn_mask=None, scale=None):
    """_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)"""
    no_attention_dropout(dropout_p)
    return fused_attention(g, query, key, value, attn_mask, is_causal, scale, has_range=False)


@register("aten::_scaled_dot_product_flash_attention_for_cpu_backward.default")
def aten__scaled_dot_product_flash_attention_for_cpu_backward(g, grad_out, query, key, value, out, logsumexp,
                                                              dropout_p, is_causal, *, attn_mask=None, scale=None):
    """_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)"""
    no_attention_dropout(dropout_p)
    return fused_attention_backward(g, grad_out, query, key, value, out, logsumexp, attn_mask, is_causal, scale,
                                    has_range=False)
