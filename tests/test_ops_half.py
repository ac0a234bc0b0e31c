"""float16 and bfloat16: their OpInfos exporting natively at float16, and bfloat16 before opset 13
falling back (the op table is tests/optables/half.py)."""

from __future__ import annotations

import warnings

import onnx
import pytest
import torch
import torch.nn.functional as F
import aten2onnx
from optable import Call, assert_opinfo_native, assert_runs_like_eager

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


def half_grid(n: int, low: float, high: float) -> torch.Tensor:
    """n float16 values evenly over [low, high], shuffled (no two tests share an order by chance)."""
    return torch.linspace(low, high, n).half()[torch.randperm(n)]


# float16 ops whose eager kernels round each step to float16 (the transposed convolution: each kernel
# tap summed over the input channels in float32, the taps added in float16): onnxruntime runs a chain of
# float16 ops in float32 and rounds only at its end, so only a graph that rounds between the steps
# itself (half_step) gives eager's bits there
PER_STEP = [
    ("logit", lambda x: torch.logit(x), lambda: (half_grid(4000, 0.001, 0.999),)),
    ("logit_eps", lambda x: torch.logit(x, eps=0.05), lambda: (half_grid(4000, -0.5, 1.5),)),
    ("ndtr", torch.special.ndtr, lambda: (half_grid(4000, -5.0, 5.0),)),
    ("cosine_similarity", lambda a, b: F.cosine_similarity(a, b, dim=1),
     lambda: (torch.randn(64, 20).half() * 3, torch.randn(64, 20).half() * 3)),
    ("pairwise_distance", F.pairwise_distance, lambda: (torch.randn(64, 20).half(), torch.randn(64, 20).half())),
    ("triplet_margin_loss", lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction="none"),
     lambda: tuple(torch.randn(64, 12).half() for _ in range(3))),
    # bilinear's second contraction is a bmm: its products summed in float32 and rounded once
    ("bilinear", F.bilinear, lambda: (torch.randn(40, 6).half() * 3, torch.randn(40, 5).half() * 3,
                                      torch.randn(3, 6, 5).half(), torch.randn(3).half())),
    ("conv_transpose1d", lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1),
     lambda: (torch.randn(2, 6, 9).half(), torch.randn(6, 4, 5).half(), torch.randn(4).half())),
    ("conv_transpose2d_groups", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 1), padding=(1, 2), groups=2,
                                                                   dilation=(1, 2)),
     lambda: (torch.randn(2, 4, 6, 7).half(), torch.randn(4, 3, 3, 4).half(), torch.randn(6).half())),
    ("conv_transpose3d_unbatched", lambda x, w: F.conv_transpose3d(x, w, stride=2),
     lambda: (torch.randn(3, 4, 5, 3).half(), torch.randn(3, 2, 2, 3, 2).half())),
]


@pytest.mark.parametrize("opset", [9, 18])
@pytest.mark.parametrize("name,fn,sample", PER_STEP, ids=[c[0] for c in PER_STEP])
def test_float16_rounded_per_step_bitwise_in_both_runtimes(name, fn, sample, opset):
    torch.manual_seed(0)
    args = sample()
    exported = aten2onnx.export(Call(fn), args, opset=opset, fallback="error")
    assert_runs_like_eager(exported, fn, args, tol=(0, 0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_conv_transpose_output_padding_past_the_stride(dtype):
    # torch allows an output padding below the dilation; onnxruntime's ConvTranspose only one below
    # the stride: the export spells it as end padding (eager's cropped rows, then rows of bias)
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 2, 4, 4, dtype=dtype), torch.randn(2, 2, 4, 5, dtype=dtype), torch.randn(4, dtype=dtype)
    for padding in [(1, 2), (3, 0)]:
        def fn(x, w, b):
            return F.conv_transpose2d(x, w, b, stride=(3, 2), padding=padding, output_padding=(2, 3), groups=2,
                                      dilation=(4, 4))
        exported = aten2onnx.export(Call(fn), (x, w, b), opset=18, fallback="error")
        if dtype == torch.bfloat16:  # onnxruntime has no bfloat16 ConvTranspose
            torch.testing.assert_close(exported.run(x, w, b), fn(x, w, b))
        else:
            assert_runs_like_eager(exported, fn, (x, w, b))
