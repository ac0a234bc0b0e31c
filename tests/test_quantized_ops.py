"""Each quantization op a captured quantized model holds (PT2E's quantized_decomposed, torchao's affine
primitives) against eager, at opsets 13, 18 and 21: in onnxruntime and aten2onnx.runtime the default
export's integers are within one step of eager's (QuantizeLinear divides where eager multiplies by the
reciprocal) and its floats equal eager's up to rounding; exact mode is bit for bit in aten2onnx.runtime.
(quantized_decomposed::choose_qparams_per_token is left out: its eager kernel returns float32 scales and
zero points where its meta kernel, which a captured graph follows, says float64 and int64.)"""

from __future__ import annotations

import pytest
import torch

import aten2onnx
from conftest import run_ort

import torch.ao.quantization.fx._decomposed  # noqa: F401  (defines quantized_decomposed::)

qd = torch.ops.quantized_decomposed
I8, U8, I16, F32 = torch.int8, torch.uint8, torch.int16, torch.float32


def scales(n):
    return torch.rand(n) * 0.1 + 0.01


def int8s(*shape):
    return torch.randint(-128, 128, shape, dtype=I8)


# name -> (function of the inputs, inputs)
CASES = {
    "quantize_per_tensor_int8": (lambda x: qd.quantize_per_tensor(x, 0.05, 3, -128, 127, I8), lambda: (torch.randn(4, 6),)),
    "quantize_per_tensor_uint8": (lambda x: qd.quantize_per_tensor(x, 0.02, 128, 0, 255, U8), lambda: (torch.randn(4, 6),)),
    "quantize_per_tensor_reduced_range": (lambda x: qd.quantize_per_tensor(x, 0.02, 64, 0, 127, U8),
                                          lambda: (torch.randn(4, 6),)),
    "quantize_per_tensor_int16": (lambda x: qd.quantize_per_tensor(x, 0.001, 0, -32768, 32767, I16),
                                  lambda: (torch.randn(4, 6),)),
    "quantize_per_tensor_half": (lambda x: qd.quantize_per_tensor(x, 0.05, 0, -128, 127, I8),
                                 lambda: (torch.randn(4, 6).half(),)),
    "quantize_per_tensor_tensor": (lambda x, s, z: qd.quantize_per_tensor.tensor(x, s, z, -128, 127, I8),
                                   lambda: (torch.randn(4, 6), torch.tensor([0.04]), torch.tensor([-2]))),
    "dequantize_per_tensor": (lambda q: qd.dequantize_per_tensor(q, 0.05, 3, -128, 127, I8), lambda: (int8s(4, 6),)),
    "dequantize_per_tensor_tensor": (lambda q, s, z: qd.dequantize_per_tensor.tensor(q, s, z, -128, 127, I8),
                                     lambda: (int8s(4, 6), torch.tensor([0.04], dtype=torch.float64),
                                              torch.tensor([-2]))),
    "dequantize_per_tensor_bfloat16": (lambda q: qd.dequantize_per_tensor(q, 0.05, 3, -128, 127, I8,
                                                                          out_dtype=torch.bfloat16),
                                       lambda: (int8s(4, 6),)),
    "quantize_per_channel_axis0": (lambda x, s, z: qd.quantize_per_channel(x, s, z, 0, -128, 127, I8),
                                   lambda: (torch.randn(4, 6), scales(4), torch.randint(-3, 3, (4,)))),
    "quantize_per_channel_axis1": (lambda x, s, z: qd.quantize_per_channel(x, s, z, 1, 0, 255, U8),
                                   lambda: (torch.randn(2, 6, 3), scales(6), torch.randint(120, 130, (6,)))),
    "dequantize_per_channel": (lambda q, s, z: qd.dequantize_per_channel(q, s, z, 0, -128, 127, I8),
                               lambda: (int8s(4, 6), scales(4), torch.randint(-3, 3, (4,)))),
    "dequantize_per_channel_no_zero_point": (lambda q, s: qd.dequantize_per_channel(q, s, None, 1, -128, 127, I8),
                                             lambda: (int8s(4, 6), scales(6))),
    "choose_qparams": (lambda x: qd.choose_qparams.tensor(x, 0, 255, torch.finfo(F32).eps, U8),
                       lambda: (torch.randn(4, 6),)),
    "choose_qparams_int8": (lambda x: qd.choose_qparams.tensor(x, -128, 127, torch.finfo(F32).eps, I8),
                            lambda: (torch.randn(4, 6),)),
    "choose_qparams_symmetric": (lambda x: qd.choose_qparams_symmetric.tensor(x, -128, 127, torch.finfo(F32).eps, I8),
                                 lambda: (torch.randn(4, 6),)),
    "per_token_round_trip": (lambda x: qd.dequantize_per_token(
        qd.quantize_per_token(x, *qd.choose_qparams_per_token_asymmetric(x, I8), -128, 127, I8),
        *qd.choose_qparams_per_token_asymmetric(x, I8), -128, 127, I8, F32), lambda: (torch.randn(3, 5, 16),)),
    "per_channel_group": (lambda x, s, z: qd.dequantize_per_channel_group(
        qd.quantize_per_channel_group(x, s, z, -8, 7, I8, 8), s, z, -8, 7, I8, 8, F32),
        lambda: (torch.randn(4, 16), scales(8), torch.randint(-2, 2, (8,)))),
    "convert_element_type_no_fuse": (lambda x: qd.convert_element_type.no_fuse(x, torch.float16),
                                     lambda: (torch.randn(4, 6),)),
}

try:
    import torchao.quantization.quant_primitives  # noqa: F401  (defines torchao::)

    ao = torch.ops.torchao
    CASES.update({
        "torchao_quantize_affine_per_row": (lambda x, s, z: ao.quantize_affine(x, [1, 16], s, z, I8, -128, 127),
                                            lambda: (torch.randn(4, 16), scales(4).reshape(4, 1),
                                                     torch.randint(-3, 3, (4, 1), dtype=I8))),
        "torchao_quantize_affine_grouped": (lambda x, s, z: ao.quantize_affine(x, [1, 8], s, z, I8, -8, 7),
                                            lambda: (torch.randn(4, 16), scales(8).reshape(4, 2),
                                                     torch.zeros(4, 2, dtype=I8))),
        "torchao_dequantize_affine_grouped": (lambda q, s, z: ao.dequantize_affine(q, [1, 8], s, z, I8, -8, 7),
                                              lambda: (torch.randint(-8, 8, (4, 16), dtype=I8), scales(8).reshape(4, 2),
                                                       torch.randint(-2, 2, (4, 2), dtype=I8))),
        "torchao_dequantize_affine_blocks_2d": (lambda q, s: ao.dequantize_affine(q, [2, 8], s, None, I8),
                                                lambda: (int8s(4, 16), scales(4).reshape(2, 2))),
        "torchao_choose_qparams_symmetric": (lambda x: ao.choose_qparams_affine(
            x, "SYMMETRIC", [1, 16], I8, -128, 127, torch.finfo(F32).eps, F32, I8, True), lambda: (torch.randn(4, 16),)),
        "torchao_choose_qparams_asymmetric": (lambda x: ao.choose_qparams_affine(
            x, "ASYMMETRIC", [1, 8], U8, 0, 255, None, F32, torch.int32, False), lambda: (torch.randn(4, 16),)),
    })
except ImportError:
    pass


class Op(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def assert_matches(ours: torch.Tensor, eager: torch.Tensor, what: str) -> None:
    assert ours.dtype == eager.dtype and ours.shape == eager.shape, (what, ours.dtype, eager.dtype, ours.shape)
    if eager.dtype.is_floating_point:
        torch.testing.assert_close(ours, eager, rtol=1e-6, atol=1e-6, msg=what)
    else:  # one quantization step at most (QuantizeLinear divides where eager multiplies by the reciprocal)
        assert (ours.to(torch.int32) - eager.to(torch.int32)).abs().max() <= 1, what


@pytest.mark.parametrize("name", sorted(CASES))
def test_quantization_op_against_eager(name):
    fn, inputs = CASES[name]
    args = inputs()
    eager = fn(*args)
    eager = list(eager) if isinstance(eager, (tuple, list)) else [eager]
    for opset in (13, 18, 21):
        exported = aten2onnx.export(Op(fn), args, opset=opset)
        assert exported.fallback_ops == [], (opset, exported.fallback_ops)
        ours = exported.run(*args)
        ours = list(ours) if isinstance(ours, (tuple, list)) else [ours]
        for i, e in enumerate(eager):
            assert_matches(ours[i], e, f"{name}: runtime opset {opset} output {i}")
        if all(e.dtype != torch.bfloat16 for e in eager):  # (numpy, which onnxruntime returns, has no bfloat16)
            feeds = {i.name: a for i, a in zip(exported.model_proto.graph.input, args)}
            ort_out = [torch.from_numpy(o) for o in run_ort(exported.model_proto, feeds)]
            for i, e in enumerate(eager):
                assert_matches(ort_out[i].to(e.dtype), e, f"{name}: onnxruntime opset {opset} output {i}")
        exact = aten2onnx.export(Op(fn), args, opset=opset, exact=True)
        got = exact.run(*args)
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        for i, e in enumerate(eager):
            assert torch.equal(got[i], e), (name, opset, i)
