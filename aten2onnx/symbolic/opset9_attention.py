"""Opset-9 base, softmax and attention: Softmax/LogSoftmax along one dim, and scaled_dot_product_attention
as softmax(q k^T * scale + mask) v (attention() and its helpers, shared with the later opsets)."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (as_value, cast, dim_size, norm_dim, opmath, reshape, transpose_perm,
                                         unsqueeze_static)

register = functools.partial(registry.register, opset=9)


def causal_mask(g: GraphBuilder, query: Value, key: Value, *, has_range: bool) -> Value:
    """The [L, S] bool mask j <= i that is_causal applies: a constant when both lengths are
    static, else built with Range (opset 11)."""
    length, source = query.shape[-2], key.shape[-2]
    if isinstance(length, int) and isinstance(source, int):
        return g.const(torch.ones(length, source, dtype=torch.bool).tril())
    if not has_range:
        raise NotImplementedError("is_causal=True with dynamic sequence lengths needs opset 11 (Range)")
    zero, one = g.const(0, dtype=torch.int64), g.const(1, dtype=torch.int64)
    rows = g.op("Range", zero, as_value(g, dim_size(g, query, query.rank - 2), torch.int64), one)
    cols = g.op("Range", zero, as_value(g, dim_size(g, key, key.rank - 2), torch.int64), one)
    rows = g.op("Reshape", rows, g.const([-1, 1], dtype=torch.int64))
    return g.op("Not", g.op("Less", rows, cols))


def no_attention_dropout(dropout_p: float) -> None:
    """sdpa applies dropout whenever dropout_p > 0, in eval too: that is random, so not exported."""
    if dropout_p > 0:
        raise NotImplementedError(f"scaled_dot_product_attention with dropout_p={dropout_p} is random; "
                                  "pass dropout_p=0.0 outside training")


def attention(g: GraphBuilder, query: Value, key: Value, value: Value, attn_mask, is_causal: bool,
              scale, enable_gqa: bool, *, has_range: bool) -> Value:
    """softmax(q k^T * scale + mask) v, the math of torch's reference implementation. Half types are
    computed in float32 and rounded once, as ATen's CPU attention kernels compute them."""
    dtype, acc = query.dtype, opmath(query.dtype)
    if acc != dtype:
        query, key, value = (cast(g, x, acc) for x in (query, key, value))
        if attn_mask is not None and attn_mask.dtype != torch.bool:
            attn_mask = cast(g, attn_mask, acc)
        return cast(g, attention(g, query, key, value, attn_mask, is_causal, scale, enable_gqa,
                                 has_range=has_range), dtype)
    if masks_nothing(attn_mask):
        attn_mask = None  # (a constant mask of all True, or of zeros, that a model builds for no padding)
    if enable_gqa and query.shape[-3] != key.shape[-3]:
        repeats = query.shape[-3] // key.shape[-3]
        key, value = (repeat_heads(g, t, repeats) for t in (key, value))
    scores = attention_scores(g, query, key, attn_mask, is_causal, scale, has_range=has_range)
    out = g.op("MatMul", g.op("Softmax", scores, axis=query.rank - 1), value)
    # a query row whose keys are all masked (left padding), or whose scores are all -inf (infinite
    # inputs), attends to nothing: ATen's attention gives 0 there (its safe softmax, with a mask or
    # without), where Softmax of a row of -inf is NaN (a row max below the dtype's lowest finite value is
    # -inf; NaN rows stay NaN, as in ATen). The row's result is replaced, not its weights: the head dim
    # is usually the smaller, and Where is among onnxruntime's slower kernels.
    empty = g.op("Less", g.reduce("ReduceMax", scores, [query.rank - 1], keepdims=True),
                 g.const(float(torch.finfo(scores.dtype).min), like=scores))
    return g.op("Where", empty, g.const(0.0, like=out), out)


def masks_nothing(attn_mask) -> bool:
    """Whether attn_mask is a constant that changes no score: all True (bool) or all 0 (float)."""
    if not isinstance(attn_mask, Value) or attn_mask.const is None:
        return False
    mask = attn_mask.const
    return bool(mask.all()) if mask.dtype == torch.bool else bool((mask == 0).all())


def default_scale(query: Value, scale) -> float:
    """The scale attention applies: scale, or 1 / sqrt(head dim) when it is None."""
    if scale is not None:
        return scale
    head_dim = query.shape[-1]
    if not isinstance(head_dim, int):
        raise NotImplementedError("scaled_dot_product_attention needs a static head dim when scale is None")
    return 1.0 / math.sqrt(head_dim)


def scale_of(g: GraphBuilder, query: Value, scale) -> Value:
    """default_scale as a value of query's dtype: for a symbolic head dim, 1 / sqrt(E) computed in the graph
    (in float64, as eager computes the factor, then rounded)."""
    if scale is not None or query.shape is None or isinstance(query.shape[-1], int):
        return g.const(default_scale(query, scale), like=query)
    head_dim = cast(g, dim_size(g, query, query.rank - 1), torch.float64)
    return cast(g, g.op("Reciprocal", g.op("Sqrt", head_dim)), query.dtype)


def attention_scores(g: GraphBuilder, query: Value, key: Value, attn_mask, is_causal: bool, scale, *,
                     has_range: bool) -> Value:
    """q k^T * scale, -inf where is_causal or a bool attn_mask masks, plus a float attn_mask: the scores
    attention takes the softmax of (key with as many heads as query)."""
    rank = query.rank
    key_t = g.op("Transpose", key, perm=transpose_perm(rank, rank - 2, rank - 1))
    scores = g.op("MatMul", query, key_t)
    if (scale is None and not isinstance(query.shape[-1], int)) or default_scale(query, scale) != 1.0:
        scores = g.op("Mul", scores, scale_of(g, query, scale))  # (a scale of 1, Whisper's, changes nothing)
    if is_causal:
        mask = causal_mask(g, query, key, has_range=has_range)
        scores = g.op("Where", mask, scores, g.const(float("-inf"), like=scores))
    if attn_mask is not None:
        # a bool mask is added as a bias of 0 and -inf, as ATen converts it (a +inf score it masks is NaN
        # there); is_causal above fills -inf, as ATen's CPU kernel skips the keys it masks
        bias = (g.op("Where", attn_mask, g.const(0.0, like=scores), g.const(float("-inf"), like=scores))
                if attn_mask.dtype == torch.bool else cast(g, attn_mask, scores.dtype))
        scores = g.op("Add", scores, bias)
    return scores


def repeat_heads(g: GraphBuilder, x: Value, repeats: int) -> Value:
    """[B, H, S, E] -> [B, H*repeats, S, E], each head repeated in place (repeat_interleave)."""
    b, h, s, e = x.shape
    expanded = g.op("Expand", unsqueeze_static(g, x, 2),
                    g.int_list([dim_size(g, x, 0), h, repeats, dim_size(g, x, 2), e]))
    out = reshape(g, expanded, [0, h * repeats, -1, e])
    out.shape = out.shape or (x.shape[0], h * repeats, x.shape[2], e)  # causal_mask reads the key's length
    return out


@register("aten::softmax.int")
def aten_softmax(g, self, dim, dtype=None):
    """softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self if dtype is None else cast(g, self, dtype)
    return g.softmax("Softmax", x, norm_dim(dim, x.rank))


@register("aten::_softmax.default")
def aten__softmax(g, self, dim, half_to_float):
    """_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    x = cast(g, self, torch.float32) if half_to_float else self
    return g.softmax("Softmax", x, norm_dim(dim, x.rank))


@register("aten::log_softmax.int")
def aten_log_softmax(g, self, dim, dtype=None):
    """log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self if dtype is None else cast(g, self, dtype)
    return g.softmax("LogSoftmax", x, norm_dim(dim, x.rank))


@register("aten::_log_softmax.default")
def aten__log_softmax(g, self, dim, half_to_float):
    """_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"""
    x = cast(g, self, torch.float32) if half_to_float else self
    return g.softmax("LogSoftmax", x, norm_dim(dim, x.rank))


@register("aten::scaled_dot_product_attention.default")
def aten_scaled_dot_product_attention(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *,
                                      scale=None, enable_gqa=False):
    """scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"""
    no_attention_dropout(dropout_p)
    return attention(g, query, key, value, attn_mask, is_causal, scale, enable_gqa, has_range=False)
