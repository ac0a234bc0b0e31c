"""scaled_dot_product_attention with a mask broadcast over any of its dims (bool or float, a constant or an
input), exported at opset 18 (MatMul, Softmax), opset 23 (one Attention node) and with
optimize="onnxruntime" (MultiHeadAttention), and run in onnxruntime and our runtime against eager. At opset 23
onnxruntime's Attention kernel refuses a mask not [..., S, T] (which the spec allows): one broadcast over
the query or key dim is expanded first."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import run_ort

import aten2onnx

B, N, S, T, H = 2, 4, 3, 5, 8


def mask(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    keep = torch.rand(shape, generator=torch.Generator().manual_seed(len(shape))) > 0.3
    keep[..., 0] = True  # every row sees a key
    return keep if dtype == torch.bool else torch.where(keep, 0.0, -1e4)


# name: mask shape (each broadcast to [B, N, S, T] as eager does)
SHAPES = {
    "one row": (1, T),
    "rows and keys": (S, T),
    "per query row": (S, 1),
    "padding": (B, 1, 1, T),
    "per head": (1, N, 1, T),
    "heads, rows, keys": (N, S, T),
    "full": (B, N, S, T),
    "one value": (1, 1, 1, 1),
}
MODES = [(18, True), (23, True), (18, "onnxruntime")]
CASES = [(name, dtype, as_input, opset, optimize) for name in SHAPES for dtype in (torch.bool, torch.float32)
         for as_input in (False, True) for opset, optimize in MODES]


@pytest.mark.parametrize("name, dtype, as_input, opset, optimize", CASES,
                         ids=[f"{n}-{str(d)[6:]}-{'input' if i else 'constant'}-{o}-{z}" for n, d, i, o, z in CASES])
def test_a_broadcast_mask_matches_eager(name, dtype, as_input, opset, optimize):
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(shape, generator=generator) for shape in ((B, N, S, H), (B, N, T, H), (B, N, T, H)))
    m = mask(SHAPES[name], dtype)
    if as_input:
        def fn(q, k, v, m):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        inputs = (q, k, v, m)
    else:
        def fn(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        inputs = (q, k, v)
    want = fn(*inputs)
    exported = aten2onnx.export(fn, inputs, opset=opset, optimize=optimize, fallback="error")
    got = run_ort(exported.model_proto, dict(zip(exported.input_names, inputs)))[0]
    torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(exported.run(*inputs), want, rtol=1e-5, atol=1e-5)


def test_a_mask_over_dynamic_lengths_at_opset_23():
    def fn(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)

    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(shape, generator=generator) for shape in ((B, N, S, H), (B, N, T, H), (B, N, T, H)))
    m = mask((B, 1, 1, T), torch.bool)
    exported = aten2onnx.export(fn, (q, k, v, m), opset=23, dynamic_shapes=(
        {2: "rows"}, {2: "keys"}, {2: "keys"}, {3: "keys"}))
    for rows, keys in ((S, T), (6, 7)):
        q, k, v = (torch.randn(shape, generator=generator) for shape in ((B, N, rows, H), (B, N, keys, H), (B, N, keys, H)))
        m = mask((B, 1, 1, keys), torch.bool)
        want = fn(q, k, v, m)
        got = run_ort(exported.model_proto, dict(zip(exported.input_names, (q, k, v, m))))[0]
        torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-5, atol=1e-5)
