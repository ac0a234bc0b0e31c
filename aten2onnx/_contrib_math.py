"""The arithmetic of onnxruntime's contrib ops that two layers compute: the exporter's capture ops for the
fused LLM modules (exporter.llm_fusion, whose eager results the exported graph must match) and the runtime's
kernels of the same ops (runtime.ops.attention). One definition, so the two cannot drift apart."""

from __future__ import annotations

import torch


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The rotary (halves, not interleaved) on the first 2 * cos.shape[-1] features of x."""
    half = cos.shape[-1]
    x1, x2, rest = x[..., :half], x[..., half:2 * half], x[..., 2 * half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], -1).to(x.dtype)


def causal_grouped_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor,
                             scale: float, attention_bias: torch.Tensor | None = None) -> torch.Tensor:
    """GroupQueryAttention's core: q [B, N, S, H] against keys and values [B, K, T, H], K dividing N (key
    head j serving query heads j * N / K to (j + 1) * N / K - 1); query s of row b, at position
    positions[b, s], sees the keys at positions up to its own. Scores scaled, plus attention_bias, softmax,
    all in float32; the result [B, N, S, H] in q's dtype."""
    repeats = q.shape[1] // k.shape[1]
    keys, values = k.repeat_interleave(repeats, 1), v.repeat_interleave(repeats, 1)
    scores = (q.float() @ keys.float().transpose(-1, -2)) * scale
    if attention_bias is not None:
        scores = scores + attention_bias.float()
    visible = torch.arange(k.shape[2], device=q.device)[None, None, :] <= positions[:, :, None]  # [B, S, T]
    scores = scores.masked_fill(~visible[:, None], float("-inf"))
    return (scores.softmax(-1) @ values.float()).to(q.dtype)
