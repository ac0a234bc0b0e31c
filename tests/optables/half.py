"""float16 and bfloat16: norms, vector norms, loss sums and reducing scatters computed in float32 and rounded
once, as ATen's CPU kernels do (opmath)."""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from optable import Entry, t

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


def flash_backward(q, k, v):
    """The CPU flash attention's gradients with respect to q, k and v, for a gradient of v's values."""
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)
    return aten._scaled_dot_product_flash_attention_for_cpu_backward(v, q, k, v, out, lse, 0.0, False)


def entries(dtypes: tuple, ort: bool) -> list[Entry]:
    tag = str(dtypes[0]).split(".")[1]
    table = [
        Entry(f"layer_norm_{tag}", lambda x, w, b, m, v: (F.layer_norm(x, (5,), None, None),
                                                     aten.native_layer_norm(x, [5], None, None, 1e-5)),
              [bn_sample], dtypes, opsets=(9, 13, 17, 18), ort=ort,
              keys=("aten::layer_norm.default", "aten::native_layer_norm.default")),
        Entry(f"group_norm_{tag}", lambda x, w, b, m, v: (F.group_norm(x, 2, w, b), aten.native_group_norm(x, w, b, 6, 4, 5, 2, 1e-5)),
              [bn_sample], dtypes, opsets=(9, 18), ort=ort,
              keys=("aten::group_norm.default", "aten::native_group_norm.default")),
        Entry(f"batch_norm_train_{tag}", lambda x, w, b, m, v: (
            F.batch_norm(x, None, None, w, b, training=True),
            aten._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5)),
              [bn_sample], dtypes, opsets=(9, 18), ort=ort,
              keys=("aten::_native_batch_norm_legit.no_stats", "aten::batch_norm.default")),
        Entry(f"batch_norm_eval_{tag}", lambda x, w, b, m, v: (F.batch_norm(x, m, v, w, b),
                                                                aten.native_batch_norm(x, w, b, m, v, False, 0.1, 1e-5)[0]),
              [bn_sample], dtypes, opsets=(9, 18), ort=ort,
              keys=("aten::batch_norm.default", "aten::native_batch_norm.default")),
        Entry(f"instance_norm_{tag}", lambda x, w, b, m, v: F.instance_norm(x, weight=w, bias=b),
              [bn_sample], dtypes, opsets=(9, 18), ort=ort, keys=("aten::instance_norm.default",)),
        Entry(f"rms_norm_{tag}", lambda x: (F.rms_norm(x, (4,)), F.rms_norm(x, (3, 4), eps=0.5)), [big(2, 3, 4)], dtypes,
              opsets=(9, 18), ort=ort, keys=("aten::rms_norm.default",)),
        Entry(f"vector_norm_{tag}", lambda x: (torch.linalg.vector_norm(x), torch.linalg.vector_norm(x, 3, dim=1),
                                               torch.linalg.vector_norm(x, 0.5, dim=0), torch.linalg.vector_norm(x, 0)),
              [big(4, 6)], dtypes, opsets=(9, 13, 18), ort=ort, keys=("aten::linalg_vector_norm.default",)),
        Entry(f"pairwise_distance_{tag}", lambda a, b: F.pairwise_distance(a * 100, b * 100),
              [lambda d: (torch.randn(5, 10, dtype=d), torch.randn(5, 10, dtype=d))], dtypes, opsets=(9, 18), ort=ort,
              keys=("aten::mul.Tensor", "aten::pairwise_distance.default")),
        Entry(f"scatter_add_{tag}", lambda x, i, s: (x.scatter_add(1, i, s), x.scatter_reduce(1, i, s, "sum"),
                                                     x.scatter_reduce(1, i, s, "mean", include_self=False),
                                                     x.scatter_reduce(1, i, s, "prod")),
              [scatter_sample], dtypes, opsets=(16, 18), ort=ort,
              keys=("aten::scatter_add.default", "aten::scatter_reduce.two")),
        Entry(f"scatter_amax_{tag}", lambda x, i, s: (x.scatter_reduce(1, i, s, "amax"),
                                                      x.index_reduce(1, i[0], s, "amin", include_self=False)),
              [scatter_sample], dtypes, opsets=(18,), ort=ort,
              keys=("aten::index_reduce.default", "aten::scatter_reduce.two", "aten::select.int")),
    ]
    if torch.bfloat16 in dtypes:  # no ONNX op casts bfloat16 before opset 13 (see test_bfloat16_before_opset_13)
        table = [dataclasses.replace(e, opsets=tuple(sorted({max(o, 13) for o in e.opsets}))) for e in table]
    return table


TABLE = entries(HALF, ort=True) + entries(BF16, ort=False) + [
    # ATen's CPU kernels compute float16 Huber in float32 but bfloat16 smooth L1 (and not float16's)
    Entry("huber_loss_half", lambda a, b: (F.huber_loss(a, b, reduction="none"), F.huber_loss(a, b, delta=0.3),
                                           F.smooth_l1_loss(a, b, reduction="none", beta=0.7)),
          [lambda d: (torch.randn(40, dtype=d) * 4, torch.randn(40, dtype=d) * 4)], HALF, opsets=(9, 18),
          keys=("aten::broadcast_tensors.default", "aten::huber_loss.default", "aten::smooth_l1_loss.default")),
    # ATen's CPU attention computes half types in float32; ONNX's Attention (23) in its inputs' type
    Entry("attention_half", lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True),
          [lambda d: ((torch.randint(-16, 17, (3, 2, 4, 2)) * 1.25).to(d),)], HALF + BF16, opsets=(18, 23), ort=False,
          keys=("aten::scaled_dot_product_attention.default",)),
    # ATen's CPU flash attention (training graphs) computes half types in float32, its logsumexp float32
    Entry("flash_attention_half",
          lambda q, k, v: (aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=True),
                           flash_backward(q, k, v)),
          [lambda d: tuple(torch.randn(2, 3, 5, 4, dtype=d) for _ in range(3))], HALF + BF16, opsets=(13, 18),
          ort=False,
          keys=("aten::_scaled_dot_product_flash_attention_for_cpu.default",
                "aten::_scaled_dot_product_flash_attention_for_cpu_backward.default")),
    Entry("smooth_l1_loss_bf16", lambda a, b: F.smooth_l1_loss(a, b, reduction="none", beta=0.3),
          [lambda d: (torch.randn(40, dtype=d) * 4, torch.randn(40, dtype=d) * 4)], BF16, opsets=(13, 18), ort=False,
          keys=("aten::broadcast_tensors.default", "aten::smooth_l1_loss.default")),
]
