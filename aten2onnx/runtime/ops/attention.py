"""Attention (opsets 23, 24, 25) and RotaryEmbedding (23, and onnxruntime's contrib one), following the ONNX
reference: scale split as sqrt(scale) on Q and K, causal masks aligned bottom-right to the KV cache, GQA by repeating KV
heads, and rows with no attendable key giving zeros. onnxruntime's contrib MultiHeadAttention and
Attention (what export(optimize="onnxruntime") writes for encoder attention) as onnxruntime computes
them: softmax(q k^T * scale + attention_bias) v, a row of -inf giving NaN."""

from __future__ import annotations

import math

import torch

from aten2onnx import _dtypes
from aten2onnx._contrib_math import causal_grouped_attention
from aten2onnx.runtime.kernel import Kernel, kernel


def _to_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(1, 2)


def _allowed(q_len: int, kv_len: int, offset, left: int, right: int, causal: bool, device) -> torch.Tensor | None:
    """Which (query, key) pairs the causal and sliding-window rules allow; offset is an int or (batch,)."""
    i = torch.arange(q_len, device=device).reshape(q_len, 1)
    j = torch.arange(kv_len, device=device).reshape(1, kv_len)
    if isinstance(offset, torch.Tensor):
        i = i + offset.reshape(-1, 1, 1, 1).to(i.device)
    else:
        i = i + offset
    allowed = None
    if causal:
        allowed = j <= i
    diff = i - j
    if left >= 0:
        allowed = (diff <= left) if allowed is None else allowed & (diff <= left)
    if right >= 0:
        allowed = (-diff <= right) if allowed is None else allowed & (-diff <= right)
    return allowed


def _attention(q, k, v, attn_mask, past_key, past_value, nonpad, *, scale, is_causal, q_num_heads, kv_num_heads,
               softmax_precision, softcap, qk_mode, left=-1, right=-1):
    three_d = q.dim() == 3
    if three_d:
        q, k, v = _to_heads(q, q_num_heads), _to_heads(k, kv_num_heads), _to_heads(v, kv_num_heads)
    dtype = q.dtype
    if scale is None:
        scale = 1 / math.sqrt(q.shape[3])
    root = torch.tensor(math.sqrt(scale), dtype=dtype)
    present_key = torch.cat([past_key, k], 2) if past_key is not None else k
    present_value = torch.cat([past_value, v], 2) if past_value is not None else v
    k, v = present_key, present_value
    q_len, kv_len = q.shape[2], k.shape[2]
    neg_inf = torch.tensor(float("-inf"), dtype=dtype, device=q.device)
    zero = torch.zeros((), dtype=dtype, device=q.device)
    bias = torch.zeros((q_len, kv_len), dtype=dtype, device=q.device)
    if attn_mask is not None:
        pad = kv_len - attn_mask.shape[-1]
        if attn_mask.dtype == torch.bool:
            attn_mask = torch.where(attn_mask, zero, neg_inf)
        if pad > 0:
            attn_mask = torch.nn.functional.pad(attn_mask, (0, pad), value=float("-inf"))
        bias = bias + attn_mask
    if past_key is None and nonpad is not None:
        offset = nonpad.reshape(-1).to(torch.int64) - q_len
    else:
        offset = past_key.shape[2] if past_key is not None else 0
    allowed = _allowed(q_len, kv_len, offset, left, right, bool(is_causal), q.device)
    if allowed is not None:
        bias = bias + torch.where(allowed, zero, neg_inf)
    if nonpad is not None:
        keep = torch.arange(kv_len, device=q.device) < nonpad.reshape(-1, 1).to(q.device)
        bias = bias + torch.where(keep, zero, neg_inf).reshape(-1, 1, 1, kv_len)
    heads_q, heads_k = q.shape[1], k.shape[1]
    if heads_q != heads_k and heads_q % heads_k == 0:
        k = k.repeat_interleave(heads_q // heads_k, 1)
        v = v.repeat_interleave(heads_q // heads_k, 1)
    scores = torch.matmul(q * root, k.transpose(2, 3) * root)
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    with_bias = scores + bias
    qk_out = with_bias if qk_mode == 2 else scores
    work = with_bias if softmax_precision is None else with_bias.to(_dtypes.to_torch(softmax_precision))
    probs = _softmax(work)
    masked_rows = torch.isneginf(torch.amax(bias, -1, keepdim=True))
    probs = torch.where(masked_rows, torch.zeros((), dtype=probs.dtype, device=probs.device), probs)
    if qk_mode == 3:
        qk_out = probs
    y = torch.matmul(probs.to(dtype), v)
    if three_d:
        y = y.transpose(1, 2).reshape(y.shape[0], y.shape[2], -1)
    return y, present_key, present_value, qk_out.to(dtype)


def _softmax(x: torch.Tensor) -> torch.Tensor:
    if x.dtype in (torch.float32, torch.float64):
        return torch.softmax(x, -1)
    # half types: round after each step as the reference (and the function body) does
    top = torch.amax(x, -1, keepdim=True)
    top = torch.where(torch.isneginf(top), torch.zeros_like(top), top)
    e = torch.exp(x - top)
    total = torch.sum(e, -1, keepdim=True)
    return e / torch.where(total == 0, torch.ones_like(total), total)


@kernel("Attention", since=23)
class Attention23(Kernel):
    def setup(self, is_causal: int = 0, kv_num_heads: int | None = None, q_num_heads: int | None = None,
              qk_matmul_output_mode: int = 0, scale: float | None = None, softcap: float = 0.0,
              softmax_precision: int | None = None) -> None:
        self.options = dict(scale=scale, is_causal=is_causal, q_num_heads=q_num_heads, kv_num_heads=kv_num_heads,
                            softmax_precision=softmax_precision, softcap=softcap, qk_mode=qk_matmul_output_mode)

    def run(self, q, k, v, attn_mask=None, past_key=None, past_value=None):
        return _attention(q, k, v, attn_mask, past_key, past_value, None, **self.options)


@kernel("Attention", since=24)
class Attention24(Attention23):
    """Attention from opset 24: nonpad_kv_seqlen, per-batch valid KV lengths of a static cache."""

    def run(self, q, k, v, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None):
        return _attention(q, k, v, attn_mask, past_key, past_value, nonpad_kv_seqlen, **self.options)


@kernel("Attention", since=25)
class Attention25(Attention24):
    """Attention from opset 25: a sliding window of left/right_window_size keys (-1: unbounded)."""

    def setup(self, is_causal: int = 0, kv_num_heads: int | None = None, q_num_heads: int | None = None,
              qk_matmul_output_mode: int = 0, scale: float | None = None, softcap: float = 0.0,
              softmax_precision: int | None = None, left_window_size: int = -1, right_window_size: int = -1) -> None:
        super().setup(is_causal, kv_num_heads, q_num_heads, qk_matmul_output_mode, scale, softcap, softmax_precision)
        self.options.update(left=left_window_size, right=right_window_size)


def _rotary(x, cos_cache, sin_cache, position_ids, interleaved: int, num_heads: int | None, dim: int):
    """x [B, N, S, H] or [B, S, N * H] rotated by the cache rows at position_ids (the cache itself, [B, S, d],
    where None), over its first dim (0: all) of each head."""
    shape = x.shape
    if x.dim() == 4:
        x = x.transpose(1, 2)  # (batch, seq, heads, head_size)
    else:
        x = x.reshape(shape[0], shape[1], num_heads, shape[2] // num_heads)
    dim = dim or x.shape[3]
    rotate, keep = x[..., :dim], x[..., dim:]
    if position_ids is not None:
        cos_cache, sin_cache = cos_cache[position_ids], sin_cache[position_ids]
    cos, sin = cos_cache.unsqueeze(2), sin_cache.unsqueeze(2)
    if interleaved:
        x1, x2 = rotate[..., 0::2], rotate[..., 1::2]
    else:
        x1, x2 = rotate.chunk(2, -1)
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        rotated = torch.stack([real, imag], -1).reshape(rotate.shape)
    else:
        rotated = torch.cat([real, imag], -1)
    out = torch.cat([rotated, keep], -1)
    return out.reshape(shape) if len(shape) == 3 else out.transpose(1, 2)


@kernel("RotaryEmbedding", since=23)
class RotaryEmbedding(Kernel):
    def setup(self, interleaved: int = 0, num_heads: int | None = None, rotary_embedding_dim: int = 0) -> None:
        self.interleaved, self.num_heads, self.dim = interleaved, num_heads, rotary_embedding_dim

    def run(self, x, cos_cache, sin_cache, position_ids=None):
        return (_rotary(x, cos_cache, sin_cache, position_ids, self.interleaved, self.num_heads, self.dim),)


@kernel("RotaryEmbedding", since=1, domain="com.microsoft")
class ContribRotaryEmbedding(Kernel):
    """onnxruntime's RotaryEmbedding: its inputs (input, position_ids, cos_cache, sin_cache), position_ids
    [B, S] or one offset [1] (positions offset, offset + 1, ... for every sequence); a 3-D input without
    num_heads has heads of twice the cache's width."""

    def setup(self, interleaved: int = 0, num_heads: int = 0, rotary_embedding_dim: int = 0, scale: float = 1.0,
              is_packed_batching: int = 0) -> None:
        if scale != 1.0 or is_packed_batching:
            raise ValueError("RotaryEmbedding with a scale or packed batching is not supported")
        self.interleaved, self.num_heads, self.dim = interleaved, num_heads, rotary_embedding_dim

    def run(self, input, position_ids, cos_cache, sin_cache):
        seq = input.shape[2] if input.dim() == 4 else input.shape[1]
        if position_ids.dim() == 1:
            position_ids = (position_ids[0] + torch.arange(seq)).expand(input.shape[0], seq)
        heads = self.num_heads or (input.shape[-1] // (self.dim or 2 * cos_cache.shape[-1]) if input.dim() == 3 else None)
        return (_rotary(input, cos_cache, sin_cache, position_ids, self.interleaved, heads, self.dim),)


def _contrib_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention_bias, heads: int,
                       scale: float | None) -> torch.Tensor:
    """onnxruntime's attention core: q [B, S, N*H], k and v [B, T, N*H] or [B, N, T, H]."""
    b, s, hidden = q.shape
    qh = _to_heads(q, heads)
    kh, vh = (x if x.dim() == 4 else _to_heads(x, heads) for x in (k, v))
    factor = 1.0 / math.sqrt(qh.shape[-1]) if scale is None else scale
    scores = torch.matmul(qh, kh.transpose(-1, -2)) * factor
    if attention_bias is not None:
        scores = scores + attention_bias.to(scores.dtype)
    out = torch.matmul(torch.softmax(scores, -1), vh)
    return out.transpose(1, 2).reshape(b, s, -1).to(q.dtype)


@kernel("MultiHeadAttention", since=1, domain="com.microsoft")
class MultiHeadAttention(Kernel):
    """query [B, S, N*H] with key and value [B, T, N*H] or [B, N, T, H], attention_bias [B or 1, N or 1,
    S, T]; the packed, padding-mask, past and causal forms are not run."""

    def setup(self, num_heads: int, scale: float | None = None, unidirectional: int = 0,
              mask_filter_value: float = -10000.0) -> None:
        if unidirectional:
            raise ValueError("MultiHeadAttention with unidirectional=1 is not supported")
        self.heads, self.scale = num_heads, scale

    def run(self, query, key=None, value=None, bias=None, key_padding_mask=None, attention_bias=None,
            past_key=None, past_value=None, past_sequence_length=None, cache_indirection=None):
        if key is None or value is None or query.dim() != 3 or any(
                x is not None for x in (bias, key_padding_mask, past_key, past_value, past_sequence_length,
                                        cache_indirection)):
            raise ValueError("MultiHeadAttention is run with a 3-D query, key and value, and attention_bias only")
        return (_contrib_attention(query, key, value, attention_bias, self.heads, self.scale),)


@kernel("GroupQueryAttention", since=1, domain="com.microsoft")
class GroupQueryAttention(Kernel):
    """onnxruntime's causal attention with fewer key/value heads: query [B, S, N*H] with key and value
    [B, S, K*H], past key and value [B, K, P, H] (optional); each sequence b of seqlens_k[b] + 1 positions in
    all, query s at position seqlens_k[b] + 1 - S + s seeing the keys up to it. Returns the output and the
    present key and value (past and new); query may pack all three. The rotary, windowed and softcapped forms
    are not run."""

    def setup(self, num_heads: int, kv_num_heads: int, scale: float | None = None, local_window_size: int = -1,
              do_rotary: int = 0, rotary_interleaved: int = 0, softcap: float = 0.0, smooth_softmax: int = 0,
              qk_output: int = 0) -> None:
        if local_window_size != -1 or do_rotary or softcap or smooth_softmax or qk_output:
            raise ValueError("GroupQueryAttention with a window, rotary, softcap, smooth softmax or qk output "
                             "is not supported")
        self.heads, self.kv_heads, self.scale = num_heads, kv_num_heads, scale

    def run(self, query, key, value, past_key=None, past_value=None, seqlens_k=None, total_sequence_length=None,
            *rest):
        if (key is None) != (value is None) or any(x is not None for x in rest):
            raise ValueError("GroupQueryAttention is run without rotary caches, position ids or attention bias")
        if key is None:  # (query packs all three)
            head = query.shape[-1] // (self.heads + 2 * self.kv_heads)
            query, key, value = query.split([self.heads * head, self.kv_heads * head, self.kv_heads * head], -1)
        b, s, _ = query.shape
        q = _to_heads(query, self.heads)
        k, v = _to_heads(key, self.kv_heads), _to_heads(value, self.kv_heads)
        if past_key is not None:
            k, v = torch.cat([past_key, k], 2), torch.cat([past_value, v], 2)
        positions = seqlens_k.long()[:, None] + 1 - s + torch.arange(s)[None]  # [B, S]
        scale = 1.0 / math.sqrt(q.shape[-1]) if self.scale is None else self.scale
        out = causal_grouped_attention(q, k, v, positions, scale)
        results = out.transpose(1, 2).reshape(b, s, -1).to(query.dtype), k, v
        return results[:len(self.node.output)] if self.node is not None else results


@kernel("Attention", since=1, domain="com.microsoft")
class ContribAttention(Kernel):
    """input [B, S, K] projected by weights [K, 3*hidden] (query, key, value) plus bias, then attention
    with attention_bias; mask_index, past and causal forms are not run."""

    def setup(self, num_heads: int, scale: float | None = None, unidirectional: int = 0,
              qkv_hidden_sizes: list[int] | None = None, mask_filter_value: float = -10000.0,
              do_rotary: int = 0, past_present_share_buffer: int = 0, rotary_embedding_dim: int = 0) -> None:
        if unidirectional or do_rotary or past_present_share_buffer:
            raise ValueError("Attention with unidirectional, do_rotary or past_present_share_buffer is not supported")
        self.heads, self.scale, self.sizes = num_heads, scale, qkv_hidden_sizes

    def run(self, input, weights, bias=None, mask_index=None, past=None, attention_bias=None,
            past_sequence_length=None):
        if any(x is not None for x in (mask_index, past, past_sequence_length)):
            raise ValueError("Attention is run with input, weights, bias and attention_bias only")
        qkv = torch.matmul(input, weights)
        if bias is not None:
            qkv = qkv + bias
        sizes = list(self.sizes) if self.sizes else [weights.shape[1] // 3] * 3
        q, k, v = qkv.split(sizes, -1)
        return (_contrib_attention(q, k, v, attention_bias, self.heads, self.scale),)
