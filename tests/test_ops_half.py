"""float16 and bfloat16: their OpInfos exporting natively at float16, and bfloat16 before opset 13
falling back (the op table is tests/optables/half.py)."""

from __future__ import annotations

import warnings

import onnx
import pytest
import torch
import torch.nn.functional as F
import aten2onnx
from optable import assert_opinfo_native

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
