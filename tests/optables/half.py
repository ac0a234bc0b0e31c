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
              opsets=(9, 18, 23), ort=ort, keys=("aten::rms_norm.default",)),
        Entry(f"vector_norm_{tag}", lambda x: (torch.linalg.vector_norm(x), torch.linalg.vector_norm(x, 3, dim=1),
                                               torch.linalg.vector_norm(x, 0.5, dim=0), torch.linalg.vector_norm(x, 0)),
              [big(4, 6)], dtypes, opsets=(9, 13, 18), ort=ort, keys=("aten::linalg_vector_norm.default",)),
        # the squared norms overflow float16 unless summed in float32, as ATen's vector_norm sums them
        Entry(f"cosine_similarity_{tag}", lambda a, b: (F.cosine_similarity(a, b), F.cosine_similarity(a, b, dim=0)),
              [lambda d: big(5, 10)(d) + big(5, 10)(d)], dtypes, opsets=(9, 18), ort=ort,
              keys=("aten::cosine_similarity.default",)),
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


def opmath_entries(dtypes: tuple, ort: bool) -> list[Entry]:
    """Elementwise kernels and gemms that ATen computes for half types in float32, rounding once; expm1
    and log1p stay accurate near 0 (their ONNX spellings exp(x) - 1 and log(1 + x) lose x's low bits;
    scaled by 64, exact, so that the errors exceed the absolute tolerance)."""
    tag = str(dtypes[0]).split(".")[1]
    return [
        Entry(f"expm1_log1p_{tag}", lambda x, y: (torch.expm1(x) * 64, torch.log1p(x) * 64, torch.expm1(y),
                                                          torch.log1p(y)),
              [lambda d: (torch.empty(64).uniform_(-0.01, 0.01).to(d), torch.empty(64).uniform_(-0.99, 10).to(d))], dtypes, opsets=(13, 18), ort=ort,
              keys=("aten::expm1.default", "aten::log1p.default")),
        Entry(f"lerp_{tag}", lambda a, b, w: (torch.lerp(a, b, 0.7), torch.lerp(a, b, 0.3), torch.lerp(a, b, w)),
              [lambda d: (torch.empty(100).uniform_(-1000, 1000).to(d), torch.empty(100).uniform_(-1000, 1000).to(d),
                          torch.rand(100).to(d))], dtypes, opsets=(13, 18), ort=ort,
              keys=("aten::lerp.Scalar", "aten::lerp.Tensor")),
        Entry(f"addcmul_addcdiv_{tag}", lambda s, a, b: (torch.addcmul(s, a, b), torch.addcmul(s, a, b, value=0.3),
                                                       torch.addcdiv(s, a, b, value=-1.7)),
              [lambda d: (torch.empty(200).uniform_(-100, 100).to(d), torch.empty(200).uniform_(-10, 10).to(d),
                          torch.empty(200).uniform_(-10, 10).to(d))], dtypes, opsets=(13, 18), ort=ort,
              keys=("aten::addcmul.default", "aten::addcdiv.default")),
        # adaptive average pooling sums each window in float32 and rounds once (uneven windows resample
        # by matrices, even ones are an AveragePool)
        Entry(f"adaptive_avg_pool2d_{tag}", lambda x: (F.adaptive_avg_pool2d(x, (3, 5)), F.adaptive_avg_pool2d(x, (2, 2))),
              [lambda d: (torch.randn(2, 3, 8, 12).to(d) * 100 + 50,)], dtypes, opsets=(13, 18), ort=ort,
              keys=("aten::adaptive_avg_pool2d.default",)),
        # ATen's CPU attention computes half types in float32 and rounds once (at every opset, not only
        # where ONNX's Attention op is written)
        Entry(f"attention_{tag}", lambda q, k, v, m: (F.scaled_dot_product_attention(q, k, v),
                                                      F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                                                      F.scaled_dot_product_attention(q, k, v, is_causal=True)),
              [lambda d: (torch.randn(2, 3, 12, 8).to(d) * 2, torch.randn(2, 3, 12, 8).to(d) * 2,
                          torch.randn(2, 3, 12, 8).to(d), torch.randn(12, 12).to(d))], dtypes, opsets=(13, 18), ort=ort,
              keys=("aten::scaled_dot_product_attention.default",)),
        # activations that are several ONNX ops: float32, rounded once (per-op rounding differs in a fifth
        # of bfloat16 values)
        Entry(f"activations_{tag}", lambda x: (F.silu(x), F.gelu(x), F.gelu(x, approximate="tanh"), F.mish(x)),
              [lambda d: (torch.randn(400).to(d) * 3,)], dtypes, opsets=(13, 18, 20), ort=ort,
              keys=("aten::silu.default", "aten::gelu.default", "aten::mish.default")),
        # index_reduce's prod and mean go one index at a time, each step rounded to the dtype
        Entry(f"index_reduce_{tag}", lambda x, i, s: (x.index_reduce(0, i, s, "prod"),
                                                      x.index_reduce(0, i, s, "prod", include_self=False),
                                                      x.index_reduce(0, i, s, "mean"),
                                                      x.index_reduce(1, i[:3], s[:5, :3], "mean", include_self=False)),
              [lambda d: (torch.randn(5, 6).to(d) * 2, torch.tensor([0, 2, 0, 4, 0, 2, 0]), torch.randn(7, 6).to(d) * 2)],
              dtypes, opsets=(9, 13, 18) if dtypes[0] == torch.float16 else (13, 18), ort=ort,
              keys=("aten::index_reduce.default", "aten::slice.Tensor")),
        # ATen's CPU gemm for half types: float32 sums and beta * self + alpha * product, rounded once;
        # addbmm rounds after each batch's addmm_
        Entry(f"baddbmm_addbmm_{tag}", lambda s, s2, a, b: (torch.baddbmm(s, a, b, beta=0.5, alpha=1.5),
                                                          torch.addbmm(s2, a, b, beta=0.5, alpha=1.5), torch.addbmm(s2, a, b)),
              [lambda d: (torch.randn(6, 5, 4).to(d) * 10, torch.randn(5, 4).to(d) * 10, torch.randn(6, 5, 16).to(d) * 2,
                          torch.randn(6, 16, 4).to(d) * 2)], dtypes, opsets=(13, 18), ort=ort,
              keys=("aten::baddbmm.default", "aten::addbmm.default")),
    ]


TABLE = entries(HALF, ort=True) + entries(BF16, ort=False) + opmath_entries(HALF, ort=True) + \
    opmath_entries(BF16, ort=False) + [
    # float32 expm1 and log1p near 0, scaled by 2**20 (exact)
    Entry("expm1_log1p_float32_small", lambda x: (torch.expm1(x) * 2.0 ** 20, torch.log1p(x) * 2.0 ** 20),
          [t(64, low=-1e-6, high=1e-6)], opsets=(9, 18),
          keys=("aten::expm1.default", "aten::log1p.default")),
    # erfc and sinc in float32 for float16 (scaled by 1024, exact, so their small values' errors show)
    Entry("erfc_sinc_half", lambda x, y: (torch.erfc(x) * 1024, torch.sinc(y) * 1024),
          [lambda d: (torch.empty(40).uniform_(2.0, 3.0).to(d), torch.empty(40).uniform_(0.9, 1.1).to(d))],
          HALF, opsets=(9, 18), keys=("aten::erfc.default", "aten::sinc.default")),
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
