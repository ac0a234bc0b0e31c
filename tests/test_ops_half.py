"""float16 and bfloat16: norms, vector norms, loss sums and reducing scatters computed in float32 and rounded
once, as ATen's CPU kernels do (opmath), compared with eager in onnxruntime (float16) and aten2onnx.runtime;
and their OpInfos exporting natively at float16."""

from __future__ import annotations

import dataclasses
import warnings

import onnx
import pytest
import torch
import torch.nn.functional as F
import aten2onnx
from optable import Entry, assert_opinfo_native, cases, run_both, t

HALF = (torch.float16,)
BF16 = (torch.bfloat16,)
aten = torch.ops.aten


def big(*shape):
    """Values whose squares overflow float16 (rms_norm's and vector_norm's sums)."""
    return t(*shape, low=-800.0, high=800.0)


def bn_sample(dtype):
    return (torch.randn(6, 4, 5, dtype=dtype) * 3 + 1, torch.randn(4, dtype=dtype), torch.randn(4, dtype=dtype),
            torch.randn(4, dtype=dtype), torch.rand(4, dtype=dtype) + 0.5)


def scatter_sample(dtype):
    return torch.randn(3, 5, dtype=dtype) * 3, torch.randint(0, 5, (3, 40)), torch.randn(3, 40, dtype=dtype) * 3


def entries(dtypes: tuple, ort: bool) -> list[Entry]:
    tag = str(dtypes[0]).split(".")[1]
    table = [
        Entry(f"layer_norm_{tag}", lambda x, w, b, m, v: (F.layer_norm(x, (5,), None, None),
                                                     aten.native_layer_norm(x, [5], None, None, 1e-5)),
              [bn_sample], dtypes, opsets=(9, 13, 17, 18), ort=ort),
        Entry(f"group_norm_{tag}", lambda x, w, b, m, v: (F.group_norm(x, 2, w, b), aten.native_group_norm(x, w, b, 6, 4, 5, 2, 1e-5)),
              [bn_sample], dtypes, opsets=(9, 18), ort=ort),
        Entry(f"batch_norm_train_{tag}", lambda x, w, b, m, v: (
            F.batch_norm(x, None, None, w, b, training=True),
            aten._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5)),
              [bn_sample], dtypes, opsets=(9, 18), ort=ort),
        Entry(f"batch_norm_eval_{tag}", lambda x, w, b, m, v: (F.batch_norm(x, m, v, w, b),
                                                                aten.native_batch_norm(x, w, b, m, v, False, 0.1, 1e-5)[0]),
              [bn_sample], dtypes, opsets=(9, 18), ort=ort),
        Entry(f"instance_norm_{tag}", lambda x, w, b, m, v: F.instance_norm(x, weight=w, bias=b),
              [bn_sample], dtypes, opsets=(9, 18), ort=ort),
        Entry(f"rms_norm_{tag}", lambda x: (F.rms_norm(x, (4,)), F.rms_norm(x, (3, 4), eps=0.5)), [big(2, 3, 4)], dtypes,
              opsets=(9, 18), ort=ort),
        Entry(f"vector_norm_{tag}", lambda x: (torch.linalg.vector_norm(x), torch.linalg.vector_norm(x, 3, dim=1),
                                               torch.linalg.vector_norm(x, 0.5, dim=0), torch.linalg.vector_norm(x, 0)),
              [big(4, 6)], dtypes, opsets=(9, 13, 18), ort=ort),
        Entry(f"pairwise_distance_{tag}", lambda a, b: F.pairwise_distance(a * 100, b * 100),
              [lambda d: (torch.randn(5, 10, dtype=d), torch.randn(5, 10, dtype=d))], dtypes, opsets=(9, 18), ort=ort),
        Entry(f"scatter_add_{tag}", lambda x, i, s: (x.scatter_add(1, i, s), x.scatter_reduce(1, i, s, "sum"),
                                                     x.scatter_reduce(1, i, s, "mean", include_self=False),
                                                     x.scatter_reduce(1, i, s, "prod")),
              [scatter_sample], dtypes, opsets=(16, 18), ort=ort),
        Entry(f"scatter_amax_{tag}", lambda x, i, s: (x.scatter_reduce(1, i, s, "amax"),
                                                      x.index_reduce(1, i[0], s, "amin", include_self=False)),
              [scatter_sample], dtypes, opsets=(18,), ort=ort),
    ]
    if torch.bfloat16 in dtypes:  # no ONNX op casts bfloat16 before opset 13 (see test_bfloat16_before_opset_13)
        table = [dataclasses.replace(e, opsets=tuple(sorted({max(o, 13) for o in e.opsets}))) for e in table]
    return table


TABLE = entries(HALF, ort=True) + entries(BF16, ort=False) + [
    # ATen's CPU kernels compute float16 Huber in float32 but bfloat16 smooth L1 (and not float16's)
    Entry("huber_loss_half", lambda a, b: (F.huber_loss(a, b, reduction="none"), F.huber_loss(a, b, delta=0.3),
                                           F.smooth_l1_loss(a, b, reduction="none", beta=0.7)),
          [lambda d: (torch.randn(40, dtype=d) * 4, torch.randn(40, dtype=d) * 4)], HALF, opsets=(9, 18)),
    # ATen's CPU attention computes half types in float32; ONNX's Attention (23) in its inputs' type
    Entry("attention_half", lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True),
          [lambda d: ((torch.randint(-16, 17, (3, 2, 4, 2)) * 1.25).to(d),)], HALF + BF16, opsets=(18, 23), ort=False),
    Entry("smooth_l1_loss_bf16", lambda a, b: F.smooth_l1_loss(a, b, reduction="none", beta=0.3),
          [lambda d: (torch.randn(40, dtype=d) * 4, torch.randn(40, dtype=d) * 4)], BF16, opsets=(13, 18), ort=False),
]
CASES = cases(TABLE)


@pytest.mark.parametrize("entry, sample, dtype, opset", CASES)
def test_op(entry: Entry, sample, dtype, opset):
    torch.manual_seed(0)
    run_both(entry.fn, sample(dtype), opset, ort=entry.ort)


NATIVE = [
    "nn.functional.rms_norm", "nn.functional.group_norm", "nn.functional.instance_norm", "nn.functional.batch_norm",
    "_batch_norm_with_update", "linalg.vector_norm", "nn.functional.huber_loss", "scatter_add", "scatter_reduce.mean",
]


@pytest.mark.parametrize("name", NATIVE)
def test_opinfo_native_float16(name):
    assert_opinfo_native(name, [18], dtype="float16")


def test_bfloat16_before_opset_13_falls_back_instead_of_writing_an_invalid_model():
    x = torch.randn(4, 5, dtype=torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(lambda x: F.layer_norm(x, (5,)) * 2, (x,), opset=9)
    onnx.checker.check_model(exported.model_proto, full_check=True)
    assert exported.fallback_ops  # Cast takes bfloat16 only from opset 13: those ops run as ATen nodes
    torch.testing.assert_close(exported.run(x), F.layer_norm(x, (5,)) * 2)
    with pytest.raises(aten2onnx.UnsupportedOperatorError, match="takes no torch.bfloat16 input"):
        aten2onnx.export(lambda x: F.layer_norm(x, (5,)) * 2, (x,), opset=9, fallback="error")
