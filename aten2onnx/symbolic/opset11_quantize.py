"""Opset 11: fake quantization (torch.fake_quantize_per_tensor_affine, _per_channel_affine), which needs
Round (half to even, as eager's nearbyint), arriving here."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, norm_dim, reshape

register = functools.partial(registry.register, opset=11)


def fake_quantize(g: GraphBuilder, x: Value, scale: Value, zero_point: Value, quant_min: int,
                  quant_max: int) -> tuple[Value, Value]:
    """ATen's fake quantization and its mask: q = round(x * (1 / scale)) + zero_point, the output
    (clamp(q, quant_min, quant_max) - zero_point) * scale, the mask quant_min <= q <= quant_max. Written
    out rather than as QuantizeLinear/DequantizeLinear: eager multiplies by the float32 reciprocal of
    the scale where QuantizeLinear divides (the two round apart at ties), and takes any quant range,
    where QuantizeLinear saturates to its integer type's. scale and zero_point broadcast against x."""
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    scale32 = cast(g, scale, torch.float32)
    # eager's 1.0f / scale, as Reciprocal: onnxruntime rewrites a Mul by Div(1, s) into a Div by s, which
    # rounds apart at ties
    inverse = cast(g, g.op("Reciprocal", scale32), work)
    zero = cast(g, zero_point, work)
    q = g.op("Add", g.op("Round", g.op("Mul", cast(g, x, work), inverse)), zero)
    low, high = g.const(float(quant_min), dtype=work), g.const(float(quant_max), dtype=work)
    out = g.op("Mul", g.op("Sub", g.clip(q, low, high), zero), cast(g, scale32, work))
    mask = g.op("And", g.op("Not", g.op("Less", q, low)), g.op("Not", g.op("Greater", q, high)))
    return cast(g, out, x.dtype), mask


def per_channel(g: GraphBuilder, params: Value, axis: int, rank: int) -> Value:
    """A per-channel parameter [C] shaped to broadcast along axis of a rank-`rank` input."""
    return reshape(g, params, [-1] + [1] * (rank - axis - 1))


@register("aten::fake_quantize_per_tensor_affine.default")
def aten_fake_quantize_per_tensor_affine(g, self, scale, zero_point, quant_min, quant_max):
    """fake_quantize_per_tensor_affine(Tensor self, float scale, int zero_point, int quant_min, int quant_max) -> Tensor"""
    return fake_quantize(g, self, g.const(float(scale), dtype=torch.float32), g.const(zero_point, dtype=torch.int64),
                         quant_min, quant_max)[0]


@register("aten::fake_quantize_per_tensor_affine.tensor_qparams")
def aten_fake_quantize_per_tensor_affine_tensor_qparams(g, self, scale, zero_point, quant_min, quant_max):
    """fake_quantize_per_tensor_affine.tensor_qparams(Tensor self, Tensor scale, Tensor zero_point, int quant_min, int quant_max) -> Tensor"""
    return fake_quantize(g, self, scale, zero_point, quant_min, quant_max)[0]


@register("aten::fake_quantize_per_tensor_affine_cachemask.default")
def aten_fake_quantize_per_tensor_affine_cachemask(g, self, scale, zero_point, quant_min, quant_max):
    """fake_quantize_per_tensor_affine_cachemask(Tensor self, float scale, int zero_point, int quant_min, int quant_max) -> (Tensor output, Tensor mask)"""
    return fake_quantize(g, self, g.const(float(scale), dtype=torch.float32), g.const(zero_point, dtype=torch.int64),
                         quant_min, quant_max)


@register("aten::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default")
def aten__fake_quantize_per_tensor_affine_cachemask_tensor_qparams(g, self, scale, zero_point, fake_quant_enabled,
                                                                    quant_min, quant_max):
    """_fake_quantize_per_tensor_affine_cachemask_tensor_qparams(Tensor self, Tensor scale, Tensor zero_point, Tensor fake_quant_enabled, int quant_min, int quant_max) -> (Tensor output, Tensor mask)"""
    out, mask = fake_quantize(g, self, scale, zero_point, quant_min, quant_max)
    # disabled (fake_quant_enabled[0] == 0), eager returns the input and a mask all true
    enabled = g.op("Not", g.op("Equal", reshape(g, cast(g, fake_quant_enabled, torch.int64), []),
                               g.const(0, dtype=torch.int64)))
    return g.op("Where", enabled, out, self), g.op("Or", mask, g.op("Not", enabled))


@register("aten::fake_quantize_per_channel_affine.default")
def aten_fake_quantize_per_channel_affine(g, self, scale, zero_point, axis, quant_min, quant_max):
    """fake_quantize_per_channel_affine(Tensor self, Tensor scale, Tensor zero_point, int axis, int quant_min, int quant_max) -> Tensor"""
    axis = norm_dim(axis, self.rank)
    return fake_quantize(g, self, per_channel(g, scale, axis, self.rank), per_channel(g, zero_point, axis, self.rank),
                         quant_min, quant_max)[0]


@register("aten::fake_quantize_per_channel_affine_cachemask.default")
def aten_fake_quantize_per_channel_affine_cachemask(g, self, scale, zero_point, axis, quant_min, quant_max):
    """fake_quantize_per_channel_affine_cachemask(Tensor self, Tensor scale, Tensor zero_point, int axis, int quant_min, int quant_max) -> (Tensor output, Tensor mask)"""
    axis = norm_dim(axis, self.rank)
    return fake_quantize(g, self, per_channel(g, scale, axis, self.rank), per_channel(g, zero_point, axis, self.rank),
                         quant_min, quant_max)
