"""Ops exported with symbolic sizes (issue 20): each case exports once with the marked dims dynamic, must
translate natively (no ATen fallback node), and must match eager in onnxruntime and in our runtime on the
example and on inputs of another size, at opsets 13, 18 and the newest; below the opset an op's translation
needs, the export fails naming it. (multinomial, random, is checked by statistics in test_random.py.)"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import aten2onnx
from optable import Call, assert_runs_like_eager

AUTO = torch.export.Dim.AUTO
OPSETS = (13, 18, 26)


def ramp(*shape, step=0.05):
    """Values on a grid of `step` (many ties of x / scale for fake quantization), shuffled."""
    n = torch.Size(shape).numel()
    return (torch.arange(n) - n // 2)[torch.randperm(n)].reshape(shape).float() * step


def with_nans(x):
    """x with a few NaNs (adaptive max pooling picks a window's last NaN)."""
    x.view(-1)[::7] = float("nan")
    return x


def bags(n, *, last=False):
    """Indices into 10 rows (padding row 2 among them) and offsets of bags of 2, the first bag empty;
    both counts grow with n."""
    indices = torch.randint(0, 10, (n,))
    indices[::3] = 2
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.arange(0, n, 2)] +
                        ([torch.tensor([n])] if last else []))
    return indices, offsets, torch.randn(10, 4), torch.rand(n)


def multilabel(rows, classes):
    """Scores and multilabel targets: each row some class indices (one repeated), a -1, then labels that
    no longer count."""
    target = torch.randint(0, classes, (rows, classes))
    for r in range(rows):
        target[r, r % classes] = -1
    return torch.randn(rows, classes), target


def picked(q, k, keep):
    """Products with rows picked by a mask, their count read from data (0 included): einsum keeping that
    count in its output (onnxruntime's Einsum died of SIGFPE on an empty one) and a view to it (Reshape
    read a 0 there as the input's dim)."""
    kept = k[keep]
    cols = kept.reshape(-1, 12).t()
    return torch.einsum("lhd,shd->lhs", q, kept), cols.view(2, 6, cols.shape[1])


def to_pick(n):
    """q, k and a mask that picks every third row of k at n = 5 and none at n = 8."""
    return torch.randn(n, 3, 4), torch.randn(n + 2, 3, 4), (torch.arange(n + 2) % 3 == 0) & (n < 8)


aten = torch.ops.aten
# name: (fn, make(n) -> args with a size n somewhere, the dynamic dims of each argument)
CASES = {
    "fake_quantize_per_tensor": (lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 3, -128, 127),
                                 lambda n: (ramp(n, 5),), ({0: AUTO, 1: AUTO},)),
    "fake_quantize_per_tensor_qparams": (lambda x, s, z: torch.fake_quantize_per_tensor_affine(x, s, z, 0, 15),
                                         lambda n: (ramp(3, n), torch.tensor(0.1), torch.tensor(4, dtype=torch.int32)),
                                         ({0: AUTO, 1: AUTO}, None, None)),
    "fake_quantize_per_channel": (lambda x, s, z: torch.fake_quantize_per_channel_affine(x, s, z, 1, -128, 127),
                                  lambda n: (ramp(n, 3, n + 1), torch.tensor([0.1, 0.05, 0.3]),
                                             torch.tensor([0, 3, -2], dtype=torch.int32)),
                                  ({0: AUTO, 2: AUTO}, None, None)),
    "embedding_bag_padding": (
        lambda i, o, w, p: (F.embedding_bag(i, w, o, mode="sum", padding_idx=2),
                            F.embedding_bag(i, w, o, mode="mean", padding_idx=-8),
                            F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p, padding_idx=2),
                            aten.embedding_bag.padding_idx(w, i, o, False, 2, False, None, False, 2)),
        bags, ({0: AUTO}, {0: AUTO}, None, {0: AUTO})),
    "embedding_bag_last_offset": (
        lambda i, o, w, p: (aten.embedding_bag.padding_idx(w, i, o, False, 1, False, None, True, 2),
                            aten.embedding_bag.padding_idx(w, i, o, False, 0, False, p, True, None),
                            aten._embedding_bag(w, i, o, False, 2, False, None, True, -1)),
        lambda n: bags(n, last=True), ({0: AUTO}, {0: AUTO}, None, {0: AUTO})),
    # 2-D indices (F.embedding_bag flattens them, with offsets from a symbolic arange)
    "embedding_bag_2d": (
        lambda i, w: (F.embedding_bag(i, w, mode="mean", padding_idx=0), F.embedding_bag(i, w, mode="max")),
        lambda n: (torch.randint(0, 6, (n, n - 2)), torch.randn(6, 3)), ({0: AUTO, 1: AUTO}, None)),
    # the table's size symbolic too (torch.export keeps it so where no padding_idx is given)
    "embedding_bag_symbolic_table": (
        lambda i, o, w, p: (aten.embedding_bag.padding_idx(w, i, o, False, 0, False, p, False, None),
                            aten.embedding_bag.padding_idx(w, i, o, False, 1, False, None, True, None)),
        lambda n: (torch.arange(n) % 4 + n, torch.cat([torch.arange(0, n, 2), torch.tensor([n])]), torch.randn(n + 4, n - 2),
                   torch.rand(n)),
        ({0: AUTO}, {0: AUTO}, {0: AUTO, 1: AUTO}, {0: AUTO})),
    # pooled lengths symbolic (batch and channels too): windows computed in the graph; NaNs and ties
    "adaptive_max_pool": (
        lambda a, b, c: (F.adaptive_max_pool1d(a, 3, return_indices=True),
                         F.adaptive_max_pool2d(b, (3, 6), return_indices=True),
                         F.adaptive_max_pool3d(c, (2, 3, 2), return_indices=True)),
        lambda n: (with_nans(ramp(2, 3, n + 2).round()), with_nans(ramp(2, n, n + 1).round()), torch.randn(1, 2, n, 4, n)),
        ({0: AUTO, 1: AUTO, 2: AUTO}, {0: AUTO, 1: AUTO, 2: AUTO}, {2: AUTO, 4: AUTO})),
    # repeated rows and columns, in an order that is not sorted; eager sorts slices lexicographically
    "unique_dim": (
        lambda a, b, c: (torch.unique(a, dim=0, return_inverse=True, return_counts=True),
                         torch.unique(a, dim=-1, return_counts=True), torch.unique(b, dim=1, return_inverse=True),
                         torch.unique(c, dim=0), aten.unique_dim(c, 1, False)),
        lambda n: (torch.randint(-2, 2, (n, 3)), torch.randint(0, 2, (2, n), dtype=torch.int32),
                   torch.randint(0, 3, (n, 2, 3)).float() / 2),
        ({0: AUTO}, {1: AUTO}, {0: AUTO})),
    # native_layer_norm (what GPT-2 captures as under transformers 4.57) with its statistics, dynamic lead
    # dims: it fell back for anything but static shapes
    # RMSNorm with dynamic lead dims (a formula before opset 23, RMSNormalization from it; it fell back everywhere)
    "rms_norm": (lambda x, w: (F.rms_norm(x, (8,), w), F.rms_norm(x, (3, 8)), F.rms_norm(x, (8,), eps=0.5)),
                 lambda n: (torch.randn(n, 3, 8), torch.randn(8)), ({0: AUTO}, None)),
    # rows and classes dynamic (it fell back for anything but static shapes)
    "multilabel_margin_loss": (
        lambda x, t, v, u: (F.multilabel_margin_loss(x, t), F.multilabel_margin_loss(x, t, reduction="none"),
                            F.multilabel_margin_loss(v, u, reduction="sum")),
        lambda n: (*multilabel(n, n - 1), *(z[0] for z in multilabel(1, n))),
        ({0: AUTO, 1: AUTO}, {0: AUTO, 1: AUTO}, {0: AUTO}, {0: AUTO})),
    "picked_by_mask": (picked, to_pick, ({0: AUTO}, {0: AUTO}, {0: AUTO})),
    "native_layer_norm": (lambda x, w, b: aten.native_layer_norm.default(x, [8], w, b, 1e-5),
                          lambda n: (torch.randn(2, n, 8), torch.randn(8), torch.randn(8)),
                          ({0: AUTO, 1: AUTO}, None, None)),
}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", list(CASES))
def test_op_exports_natively_with_symbolic_sizes(name, opset):
    fn, make, dims = CASES[name]
    example, other = make(5), make(8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(Call(fn), example, opset=opset, dynamic_shapes=(dims,), fallback="error")
    assert not exported.fallback_ops
    for args in (example, other):
        assert_runs_like_eager(exported, fn, args, equal_nan=True)


# below the opset their translation needs (Round, Unique, GatherElements: 11), a clear error naming it
BELOW = {"fake_quantize_per_tensor": "supported from opset 11", "fake_quantize_per_channel": "supported from opset 11",
         "unique_dim": "supported from opset 11", "adaptive_max_pool": "no GatherElements at opset 10"}


@pytest.mark.parametrize("name", list(BELOW))
def test_op_below_its_opset_is_a_clear_error(name):
    fn, make, dims = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(aten2onnx.UnsupportedOperatorError, match=BELOW[name]):
            aten2onnx.export(Call(fn), make(5), opset=10, dynamic_shapes=(dims,), fallback="error")
