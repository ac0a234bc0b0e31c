"""Each quantization op a captured quantized model holds (PT2E's quantized_decomposed, torchao's affine
primitives) against eager, at opsets 13, 18 and 21: in onnxruntime and aten2onnx.runtime the default
export's integers are within one step of eager's (QuantizeLinear divides where eager multiplies by the
reciprocal) and its floats equal eager's up to rounding; exact mode is bit for bit in aten2onnx.runtime.
(quantized_decomposed::choose_qparams_per_token is left out: its eager kernel returns float32 scales and
zero points where its meta kernel, which a captured graph follows, says float64 and int64.)

The float8 ops (torchao's float8 primitives, aten::_scaled_mm, quantized_decomposed to float8) at opsets 19,
21 and 23, on adversarial values (infinities, NaN, -0, past the largest float8, ties, subnormals; every float8
code to dequantize): bit for bit in aten2onnx.runtime, default and exact, and in onnxruntime (its matmul's
sums up to rounding); before 19, where ONNX has no float8 type, they run as ATen nodes or decomposed."""

from __future__ import annotations

import onnx
import onnxruntime as ort
import pytest
import torch

import aten2onnx
from aten2onnx import _dtypes
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


# -- float8 ----------------------------------------------------------------------------------------------

F8, E5M2, F16 = torch.float8_e4m3fn, torch.float8_e5m2, torch.float16
FLOAT8 = (F8, E5M2)
INF, NAN = float("inf"), float("nan")
# x / 0.5 past the largest e4m3fn (448) and e5m2 (57344) values, on ties (17 and 19 round to 16 and 20), at
# the smallest subnormal's half and one and a half (2 ** -10, 3 * 2 ** -10: to 0 and 2 ** -8)
SPECIAL = [0.0, -0.0, INF, -INF, NAN, 1e30, -1e30, 8.5, 9.5, -9.5, 230.0, 232.0, 4e4, 2.0 ** -11, -(2.0 ** -11),
           3 * 2.0 ** -11]


def adversarial(*shape, dtype=F32):
    x = torch.randn(*shape) * 50
    x.view(-1)[:len(SPECIAL)] = torch.tensor(SPECIAL)
    return x.to(dtype)


def every_float8(rows=16, dtype=F8):
    """Every float8 code once (NaNs, -0, subnormals, the largest), as a [rows, 256 / rows] tensor."""
    return torch.arange(256, dtype=U8).view(dtype).reshape(rows, -1)


def float8s(*shape):
    return torch.randn(*shape).to(F8)


FLOAT8_CASES = {
    "quantize_per_tensor_float8": (lambda x: qd.quantize_per_tensor(x, 0.5, 0, -448, 448, F8),
                                   lambda: (adversarial(4, 16),)),
    "quantize_per_channel_float8": (lambda x, s, z: qd.quantize_per_channel(x, s, z, 0, -448, 448, F8),
                                    lambda: (adversarial(4, 16), scales(4), torch.zeros(4, dtype=torch.int64))),
    "dequantize_per_tensor_float8": (lambda q: qd.dequantize_per_tensor(q, 0.5, 0, -448, 448, F8),
                                     lambda: (every_float8(),)),
    "scaled_mm_per_tensor": (lambda a, b, sa, sb: torch._scaled_mm(a, b.t(), sa, sb, out_dtype=F32),
                             lambda: (float8s(8, 32), float8s(16, 32), torch.tensor(0.3), torch.tensor(0.7))),
    "scaled_mm_rowwise_bias": (lambda a, b, sa, sb, c: torch._scaled_mm(a, b.t(), sa, sb, c, out_dtype=F32),
                               lambda: (float8s(8, 32), float8s(16, 32), scales(8).reshape(8, 1),
                                        scales(16).reshape(1, 16), torch.randn(16))),
    "scaled_mm_half": (lambda a, b, sa, sb, c: torch._scaled_mm(a, b.t(), sa, sb, c, out_dtype=F16),
                       lambda: (float8s(8, 32), float8s(16, 32), torch.tensor(0.3), torch.tensor(0.7),
                                torch.randn(16).half())),
    "scaled_mm_float8": (lambda a, b, sa, sb, r: torch._scaled_mm(a, b.t(), sa, sb, None, r, F8),
                         lambda: (float8s(8, 32), float8s(16, 32), torch.tensor(0.3), torch.tensor(0.7),
                                  torch.tensor(0.25))),
}

try:
    import torchao.quantization.quant_primitives  # noqa: F401,F811  (defines torchao::)

    ao = torch.ops.torchao
    FLOAT8_CASES.update({
        "torchao_quantize_float8_per_tensor": (lambda x, s: ao.quantize_affine_float8_non_decomposed(x, s),
                                               lambda: (adversarial(4, 16), torch.tensor([0.5]))),
        "torchao_quantize_float8_e5m2": (lambda x, s: ao.quantize_affine_float8_non_decomposed(x, s, E5M2),
                                         lambda: (adversarial(4, 16) * 200, torch.tensor([0.5]))),
        "torchao_quantize_float8_half": (lambda x, s: ao.quantize_affine_float8_non_decomposed(x, s),
                                         lambda: (adversarial(4, 16, dtype=F16),
                                         torch.tensor([0.5]))),
        "torchao_quantize_float8_per_row": (lambda x, s: ao.quantize_affine_float8_non_decomposed(x, s),
                                            lambda: (adversarial(4, 16), scales(4).reshape(4, 1))),
        "torchao_quantize_float8_blocks": (lambda x, s: ao.quantize_affine_float8_non_decomposed(x, s),
                                           lambda: (adversarial(4, 16), scales(8).reshape(4, 2))),
        "torchao_quantize_float8_blocks_2d": (lambda x, s: ao.quantize_affine_float8_non_decomposed(x, s),
                                              lambda: (adversarial(4, 16), scales(4).reshape(2, 2))),
        "torchao_dequantize_float8_per_tensor": (lambda q, s: ao.dequantize_affine_float8_non_decomposed(q, s),
                                                 lambda: (every_float8(), torch.tensor([0.5]))),
        "torchao_dequantize_float8_e5m2": (lambda q, s: ao.dequantize_affine_float8_non_decomposed(q, s),
                                           lambda: (every_float8(dtype=E5M2), torch.tensor([0.5]))),
        "torchao_dequantize_float8_half": (lambda q, s: ao.dequantize_affine_float8_non_decomposed(q, s, F16),
                                           lambda: (every_float8(), torch.tensor([0.5]))),
        "torchao_dequantize_float8_per_row": (lambda q, s: ao.dequantize_affine_float8_non_decomposed(q, s),
                                              lambda: (every_float8(), scales(16).reshape(16, 1))),
        "torchao_dequantize_float8_blocks": (lambda q, s: ao.dequantize_affine_float8_non_decomposed(q, s),
                                             lambda: (every_float8(), scales(32).reshape(16, 2))),
        "torchao_dequantize_float8_blocks_2d": (lambda q, s: ao.dequantize_affine_float8_non_decomposed(q, s),
                                                lambda: (every_float8(), scales(8).reshape(4, 2))),
        "torchao_choose_scale_float8_per_tensor": (lambda x: ao.choose_scale_float8(x, [4, 16]),
                                                   lambda: (torch.randn(4, 16),)),
        "torchao_choose_scale_float8_per_row": (lambda x: ao.choose_scale_float8(x, [1, 16]),
                                                lambda: (torch.randn(4, 16).half(),)),
        "torchao_choose_scale_float8_blocks": (lambda x: ao.choose_scale_float8(x, [2, 8]),
                                               lambda: (torch.randn(4, 16),)),
        "torchao_choose_scale_float8_bounded": (lambda x: ao.choose_scale_float8(x, [1, 16], hp_value_lb=0.5,
                                                                                 hp_value_ub=2.0),
                                                lambda: (torch.randn(4, 16) * torch.tensor([[0.1], [1], [3], [1]]),)),
    })
except ImportError:
    pass


def same_values(ours: torch.Tensor, eager: torch.Tensor, *, signed_zeros: bool = True) -> bool:
    """Equal bit for bit (-0 apart from 0 where signed_zeros), a NaN for a NaN whatever its payload."""
    if ours.dtype != eager.dtype or ours.shape != eager.shape:
        return False
    bits = {1: U8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[eager.element_size()]
    same = (ours.view(bits) == eager.view(bits)) | (ours.isnan() & eager.isnan())
    if not signed_zeros:
        same |= (ours == 0) & (eager == 0)
    return bool(same.all())


def ort_float8(model: onnx.ModelProto, args) -> list[torch.Tensor]:
    """onnxruntime's outputs: a float8 input fed as its bytes with its ONNX type, a float8 result read as float32
    (exactly; numpy, which onnxruntime's Python API speaks, has no float8, and it returns no float8e5m2)."""
    feeds = {}
    for info, a in zip(model.graph.input, args):
        feeds[info.name] = a.numpy() if a.dtype not in FLOAT8 else \
            ort.OrtValue.ortvalue_from_numpy_with_onnx_type(a.view(U8).numpy(), _dtypes.to_onnx(a.dtype))
    model = onnx.ModelProto.FromString(model.SerializeToString())
    types = [_dtypes.to_torch(o.type.tensor_type.elem_type) for o in model.graph.output]
    for output, dtype in zip(model.graph.output, types):
        if dtype in FLOAT8:
            model.graph.node.append(onnx.helper.make_node("Cast", [output.name], [output.name + ".float"],
                                                          to=onnx.TensorProto.FLOAT))
            output.name += ".float"
            output.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [torch.from_numpy(r).to(t) for r, t in zip(session.run(None, feeds), types)]


def as_list(out) -> list[torch.Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("name", sorted(FLOAT8_CASES))
def test_float8_op_against_eager(name):
    fn, inputs = FLOAT8_CASES[name]
    args = inputs()
    eager = as_list(fn(*args))
    for opset in (19, 21, 23):
        exported = aten2onnx.export(Op(fn), args, opset=opset)
        assert exported.fallback_ops == [], (opset, exported.fallback_ops)
        for i, (ours, e) in enumerate(zip(as_list(exported.run(*args)), eager)):
            assert same_values(ours, e), f"{name}: runtime opset {opset} output {i}"
        for i, (ours, e) in enumerate(zip(ort_float8(exported.model_proto, args), eager)):
            if name.startswith("scaled_mm") and e.dtype not in FLOAT8:  # (onnxruntime's MatMul sums in its order)
                torch.testing.assert_close(ours, e, rtol=1e-5, atol=1e-5, equal_nan=True)
            else:
                # (onnxruntime drops an Add of a constant 0, which eager's zero point is: its -0 stays -0)
                assert same_values(ours, e, signed_zeros=False), f"{name}: onnxruntime opset {opset} output {i}"


@pytest.mark.parametrize("name", sorted(FLOAT8_CASES))
def test_float8_op_exact(name):
    fn, inputs = FLOAT8_CASES[name]
    args = inputs()
    eager = as_list(fn(*args))
    for opset in (19, 21, 23):
        exact = aten2onnx.export(Op(fn), args, opset=opset, exact=True)
        for i, (ours, e) in enumerate(zip(as_list(exact.run(*args)), eager)):
            assert same_values(ours, e), f"{name}: exact opset {opset} output {i}"


@pytest.mark.parametrize("name", sorted(FLOAT8_CASES))
@pytest.mark.filterwarnings("ignore:.*exported as ATen fallback nodes")
def test_float8_op_before_opset_19(name):
    """ONNX has no float8 type before 19: an op that makes or reads a float8 tensor is an ATen node (or its
    decomposition, one that reads none), right in aten2onnx.runtime."""
    fn, inputs = FLOAT8_CASES[name]
    args = inputs()
    eager = as_list(fn(*args))
    exported = aten2onnx.export(Op(fn), args, opset=18)
    onnx.checker.check_model(exported.model_proto)
    for i, (ours, e) in enumerate(zip(as_list(exported.run(*args)), eager)):
        assert same_values(ours, e), f"{name}: opset 18 output {i}"
