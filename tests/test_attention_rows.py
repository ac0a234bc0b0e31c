"""scaled_dot_product_attention's rows that attend to nothing: a query row whose keys are all masked (left
padding) or whose scores are all -inf (infinite inputs) is 0 in eager (ATen's safe softmax, with a mask or
without), where Softmax gives NaN (the unmasked case was NaN before); and a constant mask that masks
nothing is dropped. Each case at opsets 18 and 23, in onnxruntime and our runtime, against eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import run_ort

import aten2onnx


def randn(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


def padded_mask() -> torch.Tensor:
    mask = torch.rand(2, 1, 3, 5, generator=torch.Generator().manual_seed(1)) > 0.4
    mask[0, 0, 1] = False  # a query row that sees no key
    mask[1, 0, 2] = False
    return mask


PADDED = padded_mask()
FLOAT_PADDED = torch.where(PADDED, 0.0, float("-inf"))


def infinite_keys() -> torch.Tensor:
    k = randn(2, 2, 5, 4)
    k[0, :, :, 0] = float("inf")  # with a positive query element, every score of the row is -inf or inf
    return k


def positive_query() -> torch.Tensor:
    q = randn(2, 2, 3, 4).abs()
    q[0, :, :, 0] = -1.0  # row scores of batch 0 are all -inf
    return q


def infinite_last_key() -> torch.Tensor:
    k = randn(2, 2, 5, 4)
    k[:, :, -1, 0] = float("inf")  # with a positive query, the last key's score is inf
    return k


LAST_KEY_MASKED = torch.ones(3, 5, dtype=torch.bool)
LAST_KEY_MASKED[:, -1] = False


# name: (function of q, k, v, (q, k, v), op types that must not be there at opset 18)
CASES = {
    "bool_mask_empty_rows": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=PADDED),
                             (randn(2, 2, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 4)), set()),
    "float_mask_empty_rows": (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=FLOAT_PADDED),
        (randn(2, 2, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 4)), set()),
    "mask_as_input": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                      (randn(2, 2, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 4), PADDED), set()),
    "no_mask_infinite_scores": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                                (positive_query(), infinite_keys(), randn(2, 2, 5, 4)), set()),
    # ATen adds a bool mask as a bias of 0 and -inf: a masked +inf score is NaN (a Where gave -inf)
    "bool_mask_masks_an_infinite_score": (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=LAST_KEY_MASKED), (randn(2, 2, 3, 4).abs(), infinite_last_key(), randn(2, 2, 5, 4)), set()),
    # is_causal fills -inf: ATen's CPU kernel never reads the keys it masks
    "causal_masks_an_infinite_score": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                       (randn(2, 2, 5, 4).abs(), infinite_last_key(), randn(2, 2, 5, 4)), set()),
    "all_true_constant_mask": (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.ones(3, 5, dtype=torch.bool)),
        (randn(2, 2, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 4)), set()),
}
# opset 23: Attention gives 0 for masked rows as eager does, but computes the scores itself: rows made -inf
# by infinite inputs stay NaN there, and onnxruntime's causal mask adds -inf to a masked +inf score (NaN)
NOT_AT_23 = {"no_mask_infinite_scores", "causal_masks_an_infinite_score"}


@pytest.mark.parametrize("opset", [18, 23])
@pytest.mark.parametrize("name", list(CASES))
def test_rows_that_attend_to_nothing_are_zero_as_in_eager(name, opset):
    if opset == 23 and name in NOT_AT_23:
        pytest.skip("opset 23's Attention node computes the scores itself")
    fn, inputs, _ = CASES[name]
    want = fn(*inputs)
    exported = aten2onnx.export(fn, inputs, opset=opset, fallback="error")
    got = run_ort(exported.model_proto, dict(zip(exported.input_names, inputs)))[0]
    torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-5, atol=1e-6, equal_nan=True)
    torch.testing.assert_close(exported.run(*inputs), want, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_a_constant_mask_that_masks_nothing_is_dropped():
    fn, inputs, _ = CASES["all_true_constant_mask"]
    for opset in (18, 23):
        exported = aten2onnx.export(fn, inputs, opset=opset)
        ops = [n.op_type for n in exported.model_proto.graph.node]
        assert ops.count("Where") == (1 if opset == 18 else 0), ops  # (18: the empty-row guard only)
