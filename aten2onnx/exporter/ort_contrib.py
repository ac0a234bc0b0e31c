"""`export(..., optimize="onnxruntime")`: the ATen ops onnxruntime runs fastest as one of its contrib ops
(domain com.microsoft), translated as that op. These symbolics are per-export overrides (a user's own
custom_symbolics still win); where a call's arguments are outside what the contrib op computes as ATen
does, they hand the call to the built-in translation.

- scaled_dot_product_attention (float32, as many key heads as query heads or a GQA multiple of them, a
  static head dim) becomes MultiHeadAttention on [batch, seq, heads * head] layouts; a causal
  self-attention (is_causal, or a constant causal mask, as transformers passes it for known lengths,
  with as many keys as queries) GroupQueryAttention, onnxruntime's causal kernel, which takes the fewer
  key heads itself. The transposes between the model's projections and that layout cancel against the
  model's own in the graph optimizer. A boolean mask becomes an additive bias of 0 and -inf; another
  causal call a constant or computed bias; a query row whose every key is masked gives 0, as ATen's
  attention does. Differences stay only with infinite inputs: a row whose scores are all -inf because the
  inputs are infinite (no mask involved) gives NaN in MultiHeadAttention, where ATen gives 0; and a +inf
  score a causal bias masks is NaN there (the bias is added, where ATen's kernel never reads the score).
"""

from __future__ import annotations

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.ir.builder import axes_of
from aten2onnx.symbolic._helpers import cast, dim_size, reshape, unsqueeze_static
from aten2onnx.symbolic.opset9_attention import causal_mask, default_scale, masks_nothing, no_attention_dropout

MICROSOFT = "com.microsoft"
SDPA = "aten::scaled_dot_product_attention.default"
_HEADS_FIRST = [0, 2, 1, 3]  # [B, N, S, H] <-> [B, S, N, H]


def _builtin(g: GraphBuilder, key: str):
    return registry.Resolver(registry.REGISTRY, g.opset)(key)


def _static(*dims) -> bool:
    return all(isinstance(d, int) for d in dims)


def _mask_fits(attn_mask, query: Value, key: Value) -> bool:
    """Whether attn_mask broadcasts to [B, N, S, T] (its batch and head dims 1 or the query's)."""
    if attn_mask is None:
        return True
    if attn_mask.shape is None or attn_mask.rank > 4 or attn_mask.dtype not in (torch.bool, torch.float32):
        return False
    shape = (1,) * (4 - attn_mask.rank) + tuple(attn_mask.shape)
    return (shape[0] in (1, query.shape[0]) and shape[1] in (1, query.shape[1]) and shape[2] in (1, query.shape[2])
            and shape[3] in (1, key.shape[2]))


def _seq_layout(g: GraphBuilder, x: Value, repeats: int = 1) -> Value:
    """[B, N, S, H] -> [B, S, N * repeats * H], each head repeated in place (GQA's keys and values, for as many
    heads as the query's). The repeat is made after the Transpose, which then meets the model's own (read
    from [B, S, N, H]) with only elementwise ops between, such as a rotary embedding's, which onnxruntime's
    transpose optimizer moves the Transposes across until they cancel."""
    b, n, s, h = x.shape
    moved = g.op("Transpose", x, perm=_HEADS_FIRST)
    if repeats > 1:
        moved = g.op("Expand", unsqueeze_static(g, moved, 3), g.const([1, 1, n, repeats, h], dtype=torch.int64))
    out = reshape(g, moved, [b, s, n * repeats * h] if _static(b, s) else [0, 0, n * repeats * h])
    out.shape = out.shape or (b, s, n * repeats * h)  # (the bias reads the lengths from it)
    return out


def _unrepeated(x: Value) -> tuple[Value, int]:
    """x [B, N, S, H] as (y, r) where x repeats each head of y [B, N / r, S, H] r times in place, as the model
    wrote it (repeat_kv: unsqueeze at 2, expand, reshape); else (x, 1). Reading y, the repeat is made in
    the layout MultiHeadAttention takes, after the model's Transpose is undone."""
    reshaped = x.producer
    if reshaped is None or reshaped.op_type != "Reshape" or reshaped.domain:
        return x, 1
    expanded = reshaped.inputs[0].producer
    if expanded is None or expanded.op_type != "Expand" or expanded.domain:
        return x, 1
    unsqueezed = expanded.inputs[0].producer
    if unsqueezed is None or unsqueezed.op_type != "Unsqueeze" or unsqueezed.domain or axes_of(unsqueezed) != [2]:
        return x, 1
    y = unsqueezed.inputs[0]
    if y.shape is None or y.rank != 4 or expanded.outputs[0].shape is None:
        return x, 1
    b, k, s, h = y.shape
    repeats = expanded.outputs[0].shape[2] if expanded.outputs[0].rank == 5 else None
    if not _static(k, h, repeats) or tuple(expanded.outputs[0].shape) != (b, k, repeats, s, h) \
            or tuple(x.shape) != (b, k * repeats, s, h):
        return x, 1
    return y, repeats


def _unrepeated_pair(key: Value, value: Value) -> tuple[Value, Value, int]:
    """key and value read before the one repeat of their heads the model wrote for both, and that repeat;
    else (key, value, 1)."""
    (fewer_keys, repeats), (fewer_values, value_repeats) = _unrepeated(key), _unrepeated(value)
    return (fewer_keys, fewer_values, repeats) if repeats == value_repeats else (key, value, 1)


def _bias(g: GraphBuilder, attn_mask, is_causal: bool, query: Value, key: Value) -> tuple[Value | None, Value | None]:
    """The additive [b, n, S, T] bias MultiHeadAttention takes, and, where a row may have no key to attend,
    whether each query row of each head is empty ([b, S, n, 1] bool). query and key in the [B, S, N * H]
    layout (lengths read from them, not from the model's [B, N, S, H] values, which then go dead)."""
    if is_causal:  # (row i sees key 0: no row is empty)
        bias = g.op("Where", causal_mask(g, query, key, has_range=g.opset >= 11), g.const(0.0, like=query),
                    g.const(float("-inf"), like=query))
        return unsqueeze_static(g, unsqueeze_static(g, bias, 0), 0), None
    if attn_mask is None:
        return None, None
    if attn_mask.dtype == torch.bool:
        bias = g.op("Where", attn_mask, g.const(0.0, like=query), g.const(float("-inf"), like=query))
    else:
        bias = attn_mask
    while bias.rank < 4:
        bias = unsqueeze_static(g, bias, 0)
    b, n = bias.shape[:2]
    full = [dim_size(g, bias, 0) if b != 1 else 1, n, dim_size(g, query, 1), dim_size(g, key, 1)]
    if tuple(bias.shape[2:]) != (query.shape[1], key.shape[1]) or None in bias.shape[2:]:
        bias = g.op("Expand", bias, g.int_list(full))
        bias.shape = (b, n, query.shape[1], key.shape[1])
    # a row of -inf attends to nothing: 0 in ATen, NaN in MultiHeadAttention (a NaN row stays NaN)
    empty = g.op("Equal", g.reduce("ReduceMax", bias, [3], keepdims=True), g.const(float("-inf"), like=query))
    if empty.const is not None and not bool(empty.const.any()):
        return bias, None  # (a constant mask with a key for every row)
    return bias, g.op("Transpose", empty, perm=_HEADS_FIRST)


def _causal_constant(attn_mask) -> bool:
    """Whether attn_mask is a constant causal mask: for each query row i, keys 0..i (bool True, or a bias of
    0 there and -inf elsewhere), the same for every batch and head (what transformers passes for is_causal
    when the lengths are known at export)."""
    if not isinstance(attn_mask, Value) or attn_mask.const is None or attn_mask.rank is None or attn_mask.rank < 2:
        return False
    mask = attn_mask.const
    rows, cols = mask.shape[-2:]
    if rows != cols or mask.numel() == 0:
        return False
    lower = torch.ones(rows, cols, dtype=torch.bool).tril()
    if mask.dtype == torch.bool:
        return bool((mask == lower).all())
    return bool(((mask == 0) == lower).all() and (mask[..., ~lower] == float("-inf")).all())


def _group_query_attention(g: GraphBuilder, query: Value, key: Value, value: Value, scale) -> Value:
    """A causal self-attention (as many keys as queries) as GroupQueryAttention, onnxruntime's causal kernel,
    about twice as fast on CPU as MultiHeadAttention with a causal bias: every sequence of the batch
    whole (seqlens_k T - 1, total length T), no past. It takes fewer key/value heads itself, so keys and values
    the model repeated are read before the repeat."""
    key, value, _ = _unrepeated_pair(key, value)
    heads, kv_heads = query.shape[1], key.shape[1]
    q3, k3, v3 = _seq_layout(g, query), _seq_layout(g, key), _seq_layout(g, value)
    batch, length = key.shape[0], key.shape[2]
    if _static(batch, length):
        seqlens = g.const([length - 1] * batch, dtype=torch.int32)
        total = g.const([length], dtype=torch.int32)
    else:
        shape = g.op("Shape", k3)
        total = cast(g, g.op("Gather", shape, g.const([1], dtype=torch.int64), axis=0), torch.int32)
        rows = g.op("Gather", shape, g.const([0], dtype=torch.int64), axis=0)
        seqlens = g.op("Expand", g.op("Sub", total, g.const([1], dtype=torch.int32)), rows)
    out = g.op("GroupQueryAttention", q3, k3, v3, None, None, seqlens, total, domain=MICROSOFT, num_heads=heads,
               kv_num_heads=kv_heads, scale=float(default_scale(query, scale)))
    out.shape, out.dtype = q3.shape, q3.dtype
    b, _, s, h = query.shape
    heads_out = reshape(g, out, [b, s, heads, h] if _static(b, s) else [0, 0, heads, h])
    return g.op("Transpose", heads_out, perm=_HEADS_FIRST)


def multi_head_attention(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
                         enable_gqa=False):
    """scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"""
    no_attention_dropout(dropout_p)
    heads = query.shape[1] if query.shape is not None and query.rank == 4 else None
    takes = (heads is not None and key.rank == 4 and value.rank == 4 and query.dtype == torch.float32
             and key.dtype == value.dtype == torch.float32 and _static(heads, key.shape[1], query.shape[3])
             and query.shape[3] == key.shape[3] == value.shape[3]
             and (key.shape[1] == heads or enable_gqa and heads % key.shape[1] == 0)
             and key.shape[1] == value.shape[1] and _mask_fits(attn_mask, query, key)
             and not (is_causal and attn_mask is not None))
    if not takes:
        return _builtin(g, SDPA)(g, query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                 enable_gqa=enable_gqa)
    if masks_nothing(attn_mask):
        attn_mask = None
    if (is_causal and attn_mask is None or _causal_constant(attn_mask)) and query.shape[2] == key.shape[2]:
        return _group_query_attention(g, query, key, value, scale)
    repeats = heads // key.shape[1]
    if repeats == 1:
        # keys and values whose heads the model repeated for GQA (transformers' repeat_kv): read before it
        key, value, repeats = _unrepeated_pair(key, value)
    q3, k3, v3 = _seq_layout(g, query), _seq_layout(g, key, repeats), _seq_layout(g, value, repeats)
    bias, empty = _bias(g, attn_mask, is_causal, q3, k3)
    out = g.op("MultiHeadAttention", q3, k3, v3, None, None, bias, domain=MICROSOFT, num_heads=heads,
               scale=float(default_scale(query, scale)))
    out.shape = out.shape or q3.shape  # (a Reshape of it to [B, S, N * H] is then a no-op)
    b, _, s, h = query.shape
    heads_out = reshape(g, out, [b, s, heads, h] if _static(b, s) else [0, 0, heads, h])
    if empty is not None:
        heads_out = g.op("Where", empty, g.const(0.0, like=out), heads_out)
    return g.op("Transpose", heads_out, perm=_HEADS_FIRST)


SYMBOLICS = {SDPA: multi_head_attention}
