"""Opset 19 (float8 types arrive): torchao's float8 ops as a captured graph holds them (its PT2E float8 layers'
quantize/dequantize_affine_float8_non_decomposed, its dynamic configs' choose_scale_float8) and aten::_scaled_mm.

Eager quantizes to float8 as x / scale in float32, clamped to the type's largest value, then cast (to nearest,
ties to even): QuantizeLinear to that type computes the same, its saturate=1 (the default) taking what lies past
the largest value, infinities too, to it and keeping NaN and -0. Eager dequantizes as q * scale in float32:
DequantizeLinear. Both per tensor, per index along an axis, or per block along one axis from 21; eager's
arithmetic (Div, Clip, Cast; Cast, Mul) under exact=True and where those forms cannot say the layout or scale.
Before 19 ONNX has no float8 type: these ops are decomposed, or ATen nodes where they make or read float8.
(PT2E's quantized_decomposed ops to float8 are opset11_quantized's.)
"""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, reshape, scalar_type
from aten2onnx.symbolic.opset11_quantized import Blocks

register = functools.partial(registry.register, opset=19, library="torchao.quantization.quant_primitives")
register_aten = functools.partial(registry.register, opset=19)

F32 = torch.float32
# scale types whose values float32 holds exactly: eager divides and multiplies by them in float32
_SINGLE_OR_NARROWER = (torch.float32, torch.float16, torch.bfloat16)
FLOAT8 = (torch.float8_e5m2, torch.float8_e4m3fn, torch.float8_e5m2fnuz, torch.float8_e4m3fnuz)


def blocks_of(g: GraphBuilder, x: Value, scale: Value) -> Blocks | None:
    """How a scale spans x, as torchao expands it (_maybe_expand_scale_to_tensor_shape): None for one scale
    (one element), else the blocks of a scale of x's rank (a dim of x's size is one scale per index, a dim of
    1 spans x's, another size a block of x's size over it)."""
    if scale.shape is None or x.shape is None:
        raise NotImplementedError("a float8 scale or tensor of unknown rank")
    if all(n == 1 for n in scale.shape):
        return None
    if len(scale.shape) != len(x.shape):
        raise NotImplementedError(f"a float8 scale of shape {list(scale.shape)} for a tensor of shape {list(x.shape)}")
    sizes = []
    for n, s in zip(x.shape, scale.shape):
        if s == n:
            sizes.append(1)
        elif isinstance(n, int) and isinstance(s, int) and n % s == 0:
            sizes.append(n // s)
        else:
            raise NotImplementedError(f"a float8 scale of shape {list(scale.shape)} for a tensor of shape "
                                      f"{list(x.shape)}")
    return Blocks(g, x, sizes)


def onnx_scale(g: GraphBuilder, x: Value, scale: Value, blocks: Blocks | None) -> Value | None:
    """The scale as float32 shaped as QuantizeLinear and DequantizeLinear take it for x, or None where eager's
    arithmetic is not theirs (a scale wider than float32) or the layout has no such form."""
    if scale.dtype not in _SINGLE_OR_NARROWER or (blocks is not None and blocks.axis == -1):
        return None
    if blocks is None:
        # one scale broadcasts to x's shape, unless it has more dims than x
        return cast(g, reshape(g, scale, []), F32) if scale.rank <= x.rank else None
    return cast(g, blocks.onnx_params(g, scale), F32)


def zero_point(g: GraphBuilder, scale: Value, dtype: torch.dtype) -> Value | None:
    """Zero points of 0 in dtype, of the scale's shape (QuantizeLinear's result type: it has no output_dtype
    before 21), as an initializer (the builder makes no float8 constants: numpy, which keys them, has no
    float8); None for a scale of dynamic shape."""
    if not scale.is_static:
        return None
    return g.initializer("float8_zero_point", torch.zeros(scale.shape, dtype=dtype))


def relu_result(x: Value) -> bool:
    """Whether x is a Relu's result: onnxruntime removes a Relu before a QuantizeLinear whose one zero point is
    not int8 or uint8 (its ReluQuantTransformer, at its default optimization level), as if the quantization
    clipped at zero, which to float8 it does not (measured: an MLP's output moved by a third of its scale).
    Those take eager's arithmetic."""
    return x.producer is not None and x.producer.op_type == "Relu" and not x.producer.domain


def quantize(g: GraphBuilder, x: Value, scale: Value, dtype: torch.dtype) -> Value:
    """torchao's _quantize_affine_float8: x as float32 / scale (expanded to x's shape), clamped to plus or minus
    dtype's largest value, cast to dtype."""
    blocks = blocks_of(g, x, scale)
    x32 = cast(g, x, F32)
    params = None if g.exact or relu_result(x32) else onnx_scale(g, x, scale, blocks)
    zero = None if params is None else zero_point(g, params, dtype)
    if zero is not None:
        axis, block = (None, None) if blocks is None else (blocks.axis, blocks.block)
        q = g.quantize_linear(x32, params, zero, axis=axis, block_size=block)
        if q is not None:
            return q
    work = torch.promote_types(F32, scale.dtype)
    if blocks is None:
        scaled = g.op("Div", cast(g, x32, work), cast(g, scale, work))
    else:
        scaled = g.op("Div", cast(g, reshape(g, x32, blocks.shape), work),
                      cast(g, reshape(g, scale, blocks.params), work))
        scaled = reshape(g, scaled, blocks.sizes)
    largest = float(torch.finfo(dtype).max)
    return cast(g, g.clip(scaled, g.const(-largest, like=scaled), g.const(largest, like=scaled)), dtype)


def dequantize(g: GraphBuilder, q: Value, scale: Value, dtype: torch.dtype) -> Value:
    """torchao's _dequantize_affine_float8: q as float32 * scale (expanded to q's shape), as dtype."""
    blocks = blocks_of(g, q, scale)
    params = None if g.exact else onnx_scale(g, q, scale, blocks)
    if params is not None:
        axis, block = (None, None) if blocks is None else (blocks.axis, blocks.block)
        y = g.dequantize_linear(q, params, None, axis=axis, block_size=block)
        if y is not None:
            return cast(g, y, dtype)
    work = torch.promote_types(F32, scale.dtype)
    q32 = cast(g, cast(g, q, F32), work)
    if blocks is None:
        return cast(g, g.op("Mul", q32, cast(g, scale, work)), dtype)
    y = g.op("Mul", reshape(g, q32, blocks.shape), cast(g, reshape(g, scale, blocks.params), work))
    return cast(g, reshape(g, y, blocks.sizes), dtype)


@register("torchao::quantize_affine_float8_non_decomposed.default")
def torchao_quantize_affine_float8_non_decomposed(g, tensor, scale, float8_dtype=torch.float8_e4m3fn):
    """quantize_affine_float8_non_decomposed(Tensor tensor, Tensor scale, ScalarType float8_dtype=24) -> Tensor"""
    return quantize(g, tensor, scale, scalar_type(float8_dtype))


@register("torchao::dequantize_affine_float8_non_decomposed.default")
def torchao_dequantize_affine_float8_non_decomposed(g, tensor, scale, output_dtype=torch.float32):
    """dequantize_affine_float8_non_decomposed(Tensor tensor, Tensor scale, ScalarType output_dtype=6) -> Tensor"""
    return dequantize(g, tensor, scale, scalar_type(output_dtype))


@register("torchao::choose_scale_float8.default")
def torchao_choose_scale_float8(g, tensor, block_size, float8_dtype=torch.float8_e4m3fn, scale_dtype=torch.float32,
                                hp_value_lb=None, hp_value_ub=None):
    """choose_scale_float8(Tensor tensor, SymInt[] block_size, ScalarType float8_dtype=24, ScalarType scale_dtype=6, float? hp_value_lb=None, float? hp_value_ub=None) -> Tensor"""
    # eager: the largest |tensor| of each block (in tensor's dtype), clamped to the bounds given, over the float8
    # type's largest value, as float32
    if scalar_type(scale_dtype) != F32:
        raise NotImplementedError("choose_scale_float8 of power-of-two (float8_e8m0fnu) scales")
    blocks = Blocks(g, tensor, block_size)
    largest = g.reduce("ReduceMax", g.op("Abs", reshape(g, tensor, blocks.shape)), blocks.reduced, True)
    if hp_value_lb is not None or hp_value_ub is not None:
        bounds = [None if b is None else g.const(float(b), like=largest) for b in (hp_value_lb, hp_value_ub)]
        largest = g.clip(largest, *bounds)
    scale = g.op("Div", largest, g.const(float(torch.finfo(scalar_type(float8_dtype)).max), like=largest))
    return cast(g, reshape(g, scale, blocks.counts), F32)


@register_aten("aten::_scaled_mm.default")
def aten__scaled_mm(g, self, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
                    use_fast_accum=False):
    """_scaled_mm(Tensor self, Tensor mat2, Tensor scale_a, Tensor scale_b, Tensor? bias=None, Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False) -> Tensor"""
    # eager's CPU kernel (its emulation; oneDNN's on CPUs with AMX): (self as float32 * scale_a) @ (mat2 as float32
    # * scale_b), plus the bias, in float32, then out_dtype; a float8 result is divided by scale_result first. One
    # scale per tensor, or one per row of self and one per column of mat2
    out = scalar_type(out_dtype) if out_dtype is not None else self.dtype
    y = g.op("MatMul", dequantize(g, self, scale_a, F32), dequantize(g, mat2, scale_b, F32))
    if bias is not None:
        y = g.op("Add", y, cast(g, bias, F32))
    if scale_result is not None and out in FLOAT8:
        y = g.op("Mul", y, g.op("Reciprocal", cast(g, reshape(g, scale_result, []), F32)))
    return cast(g, y, out)
