"""Opset 11 (Round arrives): the quantization ops a captured quantized model holds. PT2E's
(`quantized_decomposed`: torch.ao's convert_pt2e, torchao's) per tensor, per channel, per token and per
channel group, with the ops choosing their parameters at run time, and torchao's affine primitives
(`torchao::quantize_affine`, `dequantize_affine`, `choose_qparams_affine`, by block size).

Two spellings, decided per node:
- QuantizeLinear/DequantizeLinear (g.quantize_linear / g.dequantize_linear: per tensor, per axis from 13,
  per block from 21, the integer types each version takes), which onnxruntime's QDQ transformer turns into
  integer kernels (QLinearConv, QLinearMatMul, MatMulInteger, MatMulNBits). QuantizeLinear divides by the
  scale where eager multiplies by its reciprocal, so the two can round one step apart where x / scale is
  within an ulp of a tie (x.5): the default promises the quantized value within one step of eager's.
  A quant range narrower than the integer type is a Clip of the quantized integers.
- Eager's arithmetic (clamp(round(x * (1 / scale)) + zero_point) then a Cast; (q - zero_point) * scale),
  in eager's types: under exact=True, where the forms above cannot say the op (per token, per channel
  group, a block layout ONNX has none for, an output type other than float32), and before 13 for the
  per-channel forms. aten2onnx.runtime runs an exact export's calls as eager, bit for bit.
"""

from __future__ import annotations

import functools
from typing import Sequence

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value, lazy
from aten2onnx.symbolic._helpers import SymInt, cast, dim_size, fill, norm_dim, opmath, reshape, scalar_type

register = functools.partial(registry.register, opset=11, library="torch.ao.quantization.fx._decomposed")
register_aten = functools.partial(registry.register, opset=11)
register_torchao = functools.partial(registry.register, opset=11, library="torchao.quantization.quant_primitives")

F32, F64, I64 = torch.float32, torch.float64, torch.int64


def type_range(dtype: torch.dtype) -> tuple[int, int]:
    """The integers a quantized dtype holds (torch.uintN/intN: N bits, kept in uint8/int8 by torchao)."""
    name = str(dtype).removeprefix("torch.")
    for prefix, signed in (("uint", False), ("int", True)):
        bits = name.removeprefix(prefix)
        if name.startswith(prefix) and bits.isdigit() and int(bits) < 8:
            bits = int(bits)
            return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    info = torch.iinfo(dtype)
    return info.min, info.max


def container(dtype: torch.dtype) -> torch.dtype:
    """The dtype eager stores a quantized dtype's values in (torchao keeps uint1..uint7 in uint8)."""
    name = str(dtype).removeprefix("torch.")
    if name.startswith("uint") and name[4:].isdigit() and int(name[4:]) < 8:
        return torch.uint8
    if name.startswith("int") and name[3:].isdigit() and int(name[3:]) < 8:
        raise NotImplementedError(f"eager has no tensors of {dtype} to quantize into")
    return dtype


def scalar(g: GraphBuilder, x: Value) -> Value:
    """A one-element tensor (the .tensor overloads' scale and zero point) as a 0-d value."""
    return reshape(g, x, []) if x.rank != 0 else x


def narrowed(g: GraphBuilder, q: Value, quant_min: int, quant_max: int) -> Value:
    """QuantizeLinear's result (saturated to its type) clamped to a narrower quant range."""
    low, high = type_range(q.dtype)
    if (quant_min, quant_max) == (low, high):
        return q
    return g.clip(q, g.const(max(quant_min, low), dtype=q.dtype), g.const(min(quant_max, high), dtype=q.dtype))


def eager_quantize(g: GraphBuilder, x: Value, inverse: Value, zero_point: Value | None, quant_min: int,
                   quant_max: int, dtype: torch.dtype, *, zero_point_first: bool = False) -> Value:
    """clamp(round(x * inverse) + zero_point, quant_min, quant_max) as dtype, eager's arithmetic in x's dtype
    (inverse and zero_point already in it); zero_point_first: round(x * inverse + zero_point), the order of
    quantize_per_token and quantize_per_channel_group (different at ties for an odd zero point)."""
    scaled = g.op("Mul", x, inverse)
    if zero_point is None:
        q = g.round(scaled)
    elif zero_point_first:
        q = g.round(g.op("Add", scaled, zero_point))
    else:
        q = g.op("Add", g.round(scaled), zero_point)
    q = g.clip(q, g.const(float(quant_min), like=q), g.const(float(quant_max), like=q))
    return cast(g, q, container(dtype))


def reciprocal(g: GraphBuilder, scale: Value, dtype: torch.dtype) -> Value:
    """1 / scale computed in dtype (Reciprocal: onnxruntime rewrites a Div of 1 into a Div by the scale)."""
    return g.op("Reciprocal", cast(g, scale, dtype))


def fixed_or_dynamic_quantized(scale: Value) -> bool:
    """Whether a scale is a constant, or DynamicQuantizeLinear's (through Casts and Reshapes): the scales
    QuantizeLinear may divide by. A scale computed otherwise from the data itself (torchao's and PT2E's
    symmetric dynamic quantization: max|x| / 127.5) puts the largest element of each row exactly on a tie,
    -127.5, where x / scale and eager's x * (1 / scale) round to -128 and -127 about half the time: one
    step on every other row, systematically (measured: torchao's int8 dynamic MLP 0.0095 from eager in
    onnxruntime, against quantization's own 0.0102). Those take eager's arithmetic."""
    while scale.const is None and scale.producer is not None and scale.producer.op_type in ("Cast", "Reshape"):
        scale = scale.producer.inputs[0]
    return scale.const is not None or (scale.producer is not None and scale.producer.op_type == "DynamicQuantizeLinear")


_AVERAGING = frozenset({"AveragePool", "GlobalAveragePool", "ReduceMean", "Resize"})
_SAME_VALUES = frozenset({"Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose"})


def averaged(x: Value) -> bool:
    """Whether x is an average (a pool, a mean, a linear resize) of what the graph computed before it: of values
    dequantized on one grid of steps (PT2E shares a pool's quantization parameters with its input's), an average
    of an even count lands exactly between two steps, where QuantizeLinear's x / scale is the tie itself
    (rounded to even) and eager's x * (1 / scale) an ulp to one side (measured: a PT2E CNN's average pool moved
    quantized values by one step at a tenth of its elements, its output by half of what quantization moved it).
    Those take eager's arithmetic."""
    while x.producer is not None and x.producer.op_type in _SAME_VALUES and not x.producer.domain:
        x = x.producer.inputs[0]
    return x.producer is not None and x.producer.op_type in _AVERAGING and not x.producer.domain


def quantize(g: GraphBuilder, x: Value, scale: Value, zero_point: Value | None, quant_min: int, quant_max: int,
             dtype: torch.dtype, *, axis: int | None = None, block_size: int | None = None) -> Value | None:
    """x as QuantizeLinear in float32 (x and scale as float32, the zero point in dtype), clamped to the quant
    range; None under exact=True, for a scale computed from the data otherwise than by DynamicQuantizeLinear
    (fixed_or_dynamic_quantized) or an averaged x (averaged), for a float8 dtype (eager rounds to an integer
    before the cast to float8; QuantizeLinear to float8 rounds x / scale to the float8 grid, fractions kept), or
    where the version cannot say it."""
    if g.exact or container(dtype) != dtype or dtype.is_floating_point or not fixed_or_dynamic_quantized(scale) \
            or averaged(x):
        return None
    zp = cast(g, zero_point, dtype) if zero_point is not None else g.const(0, dtype=dtype)
    if zero_point is None and axis is not None:
        return None
    q = g.quantize_linear(cast(g, x, F32), cast(g, scale, F32), zp, axis=axis, block_size=block_size)
    return None if q is None else narrowed(g, q, quant_min, quant_max)


def dequantize(g: GraphBuilder, q: Value, scale: Value, zero_point: Value | None, out_dtype: torch.dtype, *,
               axis: int | None = None, block_size: int | None = None,
               quant_range: tuple[int, int] | None = None) -> Value | None:
    """q as DequantizeLinear to float32 (the scale as float32, the zero point in q's dtype); None under
    exact=True, for another output type, or where the version cannot say it. A weight whose quant_range
    fits 4 bits is stored as int4/uint4 where the version takes them (21: onnxruntime runs a blocked
    4-bit DequantizeLinear into MatMul as MatMulNBits)."""
    if g.exact or out_dtype != F32:
        return None
    scale = cast(g, scale, F32)
    narrow = four_bit(g, q, zero_point, quant_range)
    if narrow is not None:
        y = g.dequantize_linear(narrow[0], scale, narrow[1], axis=axis, block_size=block_size)
        if y is not None:
            return y
    if q.dtype.is_floating_point:
        # float8 (from 19): eager subtracts its integer zero point in out_dtype, which a float8 zero point holds
        # exactly only for some; the quantizers write 0
        if zero_point is not None and not zero(zero_point):
            return None
        return g.dequantize_linear(q, scale, None, axis=axis, block_size=block_size)
    zp = cast(g, zero_point, q.dtype) if zero_point is not None else None
    return g.dequantize_linear(q, scale, zp, axis=axis, block_size=block_size)


def zero(v: Value) -> bool:
    """Whether v is a constant of zeros."""
    return v.const is not None and not lazy.is_lazy(v.const) and not bool(v.const.any())


def four_bit(g: GraphBuilder, q: Value, zero_point: Value | None,
             quant_range: tuple[int, int] | None) -> tuple[Value, Value | None] | None:
    """A constant int8/uint8 weight whose values and zero points lie in a 4-bit range, stored as int4 or
    uint4 (half the bytes once packed); None where it is not one."""
    if quant_range is None or q.const is None or q.kind != "initializer" or q.dtype not in (torch.int8, torch.uint8):
        return None
    low, high = quant_range
    narrow = torch.int4 if low >= -8 and high <= 7 else torch.uint4 if low >= 0 and high <= 15 else None
    if narrow is None:
        return None
    held = torch.int8 if narrow == torch.int4 else torch.uint8
    bounds = type_range(narrow)
    values = [q.const] + ([zero_point.const] if zero_point is not None else [])
    if any(v is None or v.numel() == 0 or lazy.is_lazy(v) or int(v.min()) < bounds[0] or int(v.max()) > bounds[1] for v in values):
        return None
    packed = g.initializer(f"{q.name}.{str(narrow).removeprefix('torch.')}", q.const.to(held).view(narrow))
    if zero_point is None:
        return packed, None
    zp = g.initializer(f"{q.name}.zero_point", zero_point.const.to(held).contiguous().view(narrow))
    return packed, zp


def out_dtype_of(out_dtype) -> torch.dtype:
    return scalar_type(out_dtype, F32)


# -- per tensor -------------------------------------------------------------------------------------

def quantize_per_tensor(g: GraphBuilder, input: Value, scale: Value, zero_point: Value, quant_min: int,
                        quant_max: int, dtype: torch.dtype) -> Value:
    """Eager: input (float16/bfloat16 as float32) * float32(1.0 / double(scale)), rounded, plus the zero
    point, clamped. scale and zero_point are 0-d (a Python number's value or a tensor's one element)."""
    fast = quantize(g, input, scale, zero_point, quant_min, quant_max, dtype)
    if fast is not None:
        return fast
    inverse = cast(g, reciprocal(g, scale, F64), F32)
    return eager_quantize(g, cast(g, input, F32), inverse, cast(g, zero_point, F32), quant_min, quant_max, dtype)


def dequantize_per_tensor(g: GraphBuilder, input: Value, scale: Value, zero_point: Value,
                          out_dtype: torch.dtype | None) -> Value:
    """Eager: (input as out_dtype - zero_point) * scale, in out_dtype (float32 by default)."""
    out = out_dtype_of(out_dtype)
    fast = dequantize(g, input, scale, zero_point, out)
    if fast is not None:
        return fast
    # each op rounds to out_dtype, computed in its opmath type (float32 for float16/bfloat16): the Python
    # scale is not rounded to out_dtype first
    work = opmath(out)
    shifted = cast(g, g.op("Sub", cast(g, input, work), cast(g, zero_point, work)), out)
    return cast(g, g.op("Mul", cast(g, shifted, work), cast(g, scale, work)), out)


@register("quantized_decomposed::quantize_per_tensor.default")
def quantized_decomposed_quantize_per_tensor(g, input, scale, zero_point, quant_min, quant_max, dtype):
    """quantize_per_tensor(Tensor input, float scale, int zero_point, int quant_min, int quant_max, ScalarType dtype) -> Tensor"""
    return quantize_per_tensor(g, input, g.const(float(scale), dtype=F64), g.const(int(zero_point), dtype=I64),
                               quant_min, quant_max, dtype)


@register("quantized_decomposed::quantize_per_tensor.tensor")
def quantized_decomposed_quantize_per_tensor_tensor(g, input, scale, zero_point, quant_min, quant_max, dtype):
    """quantize_per_tensor.tensor(Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, ScalarType dtype) -> Tensor"""
    return quantize_per_tensor(g, input, scalar(g, scale), scalar(g, zero_point), quant_min, quant_max, dtype)


@register("quantized_decomposed::quantize_per_tensor.tensor2")
def quantized_decomposed_quantize_per_tensor_tensor2(g, input, scale, zero_point, quant_min, quant_max, dtype):
    """quantize_per_tensor.tensor2(Tensor input, Tensor scale, Tensor zero_point, Tensor quant_min, Tensor quant_max, ScalarType dtype) -> Tensor"""
    bounds = [v.const for v in (quant_min, quant_max)]
    if any(b is None for b in bounds):
        raise NotImplementedError("quantize_per_tensor.tensor2 with a quant range computed at run time")
    return quantize_per_tensor(g, input, scalar(g, scale), scalar(g, zero_point), int(bounds[0]), int(bounds[1]),
                               dtype)


@register("quantized_decomposed::dequantize_per_tensor.default")
def quantized_decomposed_dequantize_per_tensor(g, input, scale, zero_point, quant_min, quant_max, dtype, *,
                                               out_dtype=None):
    """dequantize_per_tensor(Tensor input, float scale, int zero_point, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor"""
    return dequantize_per_tensor(g, input, g.const(float(scale), dtype=F64), g.const(int(zero_point), dtype=I64),
                                 out_dtype)


@register("quantized_decomposed::dequantize_per_tensor.tensor", "quantized_decomposed::dequantize_per_tensor.tensor2")
def quantized_decomposed_dequantize_per_tensor_tensor(g, input, scale, zero_point, quant_min, quant_max, dtype, *,
                                                      out_dtype=None):
    """dequantize_per_tensor.tensor(Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor"""
    return dequantize_per_tensor(g, input, scalar(g, scale), scalar(g, zero_point), out_dtype)


# -- per channel ------------------------------------------------------------------------------------

def along(g: GraphBuilder, params: Value, axis: int, rank: int) -> Value:
    """A per-channel parameter [C] shaped to broadcast along axis of a rank-`rank` tensor."""
    return reshape(g, params, [-1] + [1] * (rank - axis - 1))


@register("quantized_decomposed::quantize_per_channel.default")
def quantized_decomposed_quantize_per_channel(g, input, scales, zero_points, axis, quant_min, quant_max, dtype):
    """quantize_per_channel(Tensor input, Tensor scales, Tensor zero_points, int axis, int quant_min, int quant_max, ScalarType dtype) -> Tensor"""
    axis = norm_dim(axis, input.rank)
    fast = quantize(g, input, scales, zero_points, quant_min, quant_max, dtype, axis=axis)
    if fast is not None:
        return fast
    # eager: input (as float32) * (1.0 / scales), in the promoted type of the two
    work = F64 if scales.dtype == F64 else F32
    inverse = along(g, reciprocal(g, scales, scales.dtype if scales.dtype.is_floating_point else F32), axis,
                    input.rank)
    return eager_quantize(g, cast(g, input, work), cast(g, inverse, work),
                          along(g, cast(g, zero_points, work), axis, input.rank), quant_min, quant_max, dtype)


@register("quantized_decomposed::dequantize_per_channel.default")
def quantized_decomposed_dequantize_per_channel(g, input, scales, zero_points, axis, quant_min, quant_max, dtype, *,
                                                out_dtype=None):
    """dequantize_per_channel(Tensor input, Tensor scales, Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor"""
    out = out_dtype_of(out_dtype)
    axis = norm_dim(axis, input.rank)
    fast = dequantize(g, input, scales, zero_points, out, axis=axis, quant_range=(quant_min, quant_max))
    if fast is not None:
        return fast
    # eager: (input - zero_points) in int64, times scales in their type, then as out_dtype
    work = scales.dtype
    shifted = cast(g, input, I64)
    if zero_points is not None:
        shifted = g.op("Sub", shifted, along(g, cast(g, zero_points, I64), axis, input.rank))
    return cast(g, g.op("Mul", cast(g, shifted, work), along(g, scales, axis, input.rank)), out)


# -- per token and per channel group (eager's arithmetic) ---------------------------------------------

@register("quantized_decomposed::quantize_per_token.default")
def quantized_decomposed_quantize_per_token(g, input, scales, zero_points, quant_min, quant_max, dtype):
    """quantize_per_token(Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, ScalarType dtype) -> Tensor"""
    work = torch.promote_types(input.dtype, scales.dtype)
    inverse = reciprocal(g, scales, scales.dtype)
    return eager_quantize(g, cast(g, input, work), cast(g, inverse, work), cast(g, zero_points, work), quant_min,
                          quant_max, dtype, zero_point_first=True)


@register("quantized_decomposed::dequantize_per_token.default")
def quantized_decomposed_dequantize_per_token(g, input, scales, zero_points, quant_min, quant_max, dtype,
                                              output_dtype):
    """dequantize_per_token(Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, ScalarType dtype, ScalarType output_dtype) -> Tensor"""
    output_dtype = scalar_type(output_dtype)
    shifted_dtype = torch.promote_types(input.dtype, zero_points.dtype)
    shifted = g.op("Sub", cast(g, input, shifted_dtype), cast(g, zero_points, shifted_dtype))
    work = torch.promote_types(shifted_dtype, scales.dtype)
    return cast(g, g.op("Mul", cast(g, shifted, work), cast(g, scales, work)), output_dtype)


def grouped(g: GraphBuilder, input: Value, scales: Value, group_size: int) -> tuple[int, list[SymInt]]:
    """The group size eager uses (the whole row where scales has one column and the row is shorter) and
    input's shape."""
    columns = dim_size(g, input, input.rank - 1)
    if isinstance(columns, int) and group_size > columns and scales.shape and scales.shape[-1] == 1:
        group_size = columns
    return group_size, [dim_size(g, input, i) for i in range(input.rank)]


@register("quantized_decomposed::quantize_per_channel_group.default")
def quantized_decomposed_quantize_per_channel_group(g, input, scales, zero_points, quant_min, quant_max, dtype,
                                                    group_size):
    """quantize_per_channel_group(Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, ScalarType dtype, int group_size) -> Tensor"""
    group_size, shape = grouped(g, input, scales, group_size)
    work = torch.promote_types(input.dtype, scales.dtype)
    groups = cast(g, reshape(g, input, [-1, group_size]), work)
    inverse = cast(g, reciprocal(g, reshape(g, scales, [-1, 1]), scales.dtype), work)
    q = eager_quantize(g, groups, inverse, cast(g, reshape(g, zero_points, [-1, 1]), work), quant_min, quant_max,
                       dtype, zero_point_first=True)
    return reshape(g, q, shape)


@register("quantized_decomposed::dequantize_per_channel_group.default")
def quantized_decomposed_dequantize_per_channel_group(g, input, scales, zero_points, quant_min, quant_max, dtype,
                                                      group_size, output_dtype):
    """dequantize_per_channel_group(Tensor input, Tensor scales, Tensor? zero_points, int quant_min, int quant_max, ScalarType dtype, int group_size, ScalarType output_dtype) -> Tensor"""
    group_size, shape = grouped(g, input, scales, group_size)
    groups = reshape(g, input, [-1, group_size])
    zp_dtype = zero_points.dtype if zero_points is not None else torch.int32
    shifted_dtype = torch.promote_types(input.dtype, zp_dtype)
    shifted = cast(g, groups, shifted_dtype)
    if zero_points is not None:
        shifted = g.op("Sub", shifted, cast(g, reshape(g, zero_points, [-1, 1]), shifted_dtype))
    work = torch.promote_types(shifted_dtype, scales.dtype)
    out = g.op("Mul", cast(g, shifted, work), cast(g, reshape(g, scales, [-1, 1]), work))
    return cast(g, reshape(g, out, shape), output_dtype)


@register_aten("aten::_int_mm.default")
def aten__int_mm(g, self, mat2):
    """_int_mm(Tensor self, Tensor mat2) -> Tensor"""
    # int8 @ int8 summed in int32 (torchao's int8 dynamic quantization): MatMulInteger, an integer kernel
    return g.matmul_integer(self, mat2)


@register("quantized_decomposed::convert_element_type.no_fuse")
def quantized_decomposed_convert_element_type_no_fuse(g, input, dtype):
    """convert_element_type.no_fuse(Tensor input, ScalarType dtype) -> Tensor"""
    return cast(g, input, dtype)


# -- parameters chosen at run time ----------------------------------------------------------------

def extremes(g: GraphBuilder, x: Value, axes: Sequence[int] | None, keepdims: bool) -> tuple[Value, Value]:
    """min(amin(x), 0) and max(amax(x), 0) over axes (all where None)."""
    zero = g.const(0.0, like=x)
    low = g.min(g.reduce("ReduceMin", x, axes, keepdims), zero)
    high = g.max(g.reduce("ReduceMax", x, axes, keepdims), zero)
    return low, high


@register("quantized_decomposed::choose_qparams.tensor")
def quantized_decomposed_choose_qparams_tensor(g, input, quant_min, quant_max, eps, dtype):
    """choose_qparams.tensor(Tensor input, int quant_min, int quant_max, float eps, ScalarType dtype) -> (Tensor, Tensor)"""
    # torch.ao's determine_qparams (affine): scale = max((max_pos - min_neg) / (qmax - qmin), eps) in input's
    # dtype, zero_point = clamp(qmin - round(min_neg / scale)); as float64 and int64 of shape [1]
    if not g.exact and (quant_min, quant_max, dtype) == (0, 255, torch.uint8) and input.dtype == F32:
        # DynamicQuantizeLinear's scale and zero point are these, but for the eps floor (a range below
        # 255 * eps, where its scale is finer): onnxruntime runs the quantization it starts on integers
        _, scale, zero_point = g.op("DynamicQuantizeLinear", input, outputs=3)
        return reshape(g, cast(g, scale, F64), [1]), reshape(g, cast(g, zero_point, I64), [1])
    low, high = extremes(g, input, None, False)
    scale = g.op("Div", g.op("Sub", high, low), g.const(float(quant_max - quant_min), like=low))
    scale = g.max(scale, g.const(float(eps), like=scale))
    zero_point = g.op("Sub", g.const(float(quant_min), like=scale), g.round(g.op("Div", low, scale)))
    zero_point = g.clip(zero_point, g.const(float(quant_min), like=scale), g.const(float(quant_max), like=scale))
    return reshape(g, cast(g, scale, F64), [1]), reshape(g, cast(g, zero_point, I64), [1])


@register("quantized_decomposed::choose_qparams_symmetric.tensor")
def quantized_decomposed_choose_qparams_symmetric_tensor(g, input, quant_min, quant_max, eps, dtype):
    """choose_qparams_symmetric.tensor(Tensor input, int quant_min, int quant_max, float eps, ScalarType dtype) -> (Tensor, Tensor)"""
    low, high = extremes(g, input, None, False)
    high = g.max(g.op("Neg", low), high)
    scale = g.op("Div", high, g.const(float(quant_max - quant_min) / 2, like=high))
    scale = g.max(scale, g.const(float(eps), like=scale))
    zero_point = 128 if dtype == torch.uint8 else 0
    return reshape(g, cast(g, scale, F64), [1]), g.const([zero_point], dtype=I64)


@register("quantized_decomposed::choose_qparams_per_token_asymmetric.default")
def quantized_decomposed_choose_qparams_per_token_asymmetric(g, input, dtype):
    """choose_qparams_per_token_asymmetric(Tensor input, ScalarType dtype) -> (Tensor, Tensor)"""
    qmin, qmax = -128, 127
    low, high = extremes(g, input, [input.rank - 1], True)
    scale = g.op("Div", g.op("Sub", high, low), g.const(float(qmax - qmin), like=low))
    scale = g.max(scale, g.const(torch.finfo(F32).eps, like=scale))
    descaled_min, descaled_max = g.op("Div", low, scale), g.op("Div", high, scale)
    from_min = g.op("Add", g.const(float(qmin), like=scale), descaled_min)
    from_max = g.op("Add", g.const(float(qmax), like=scale), descaled_max)
    zero_point = g.op("Where", g.op("Greater", g.op("Add", from_min, from_max), g.const(0.0, like=scale)),
                      g.op("Sub", g.const(float(qmin), like=scale), descaled_min),
                      g.op("Sub", g.const(float(qmax), like=scale), descaled_max))
    zero_point = g.round(g.clip(zero_point, g.const(float(qmin), like=scale), g.const(float(qmax), like=scale)))
    return cast(g, scale, F64), cast(g, zero_point, I64)


@register("quantized_decomposed::choose_qparams_per_token.default")
def quantized_decomposed_choose_qparams_per_token(g, input, dtype):
    """choose_qparams_per_token(Tensor input, ScalarType dtype) -> (Tensor, Tensor)"""
    if dtype != torch.int8:
        raise NotImplementedError(f"choose_qparams_per_token of {dtype} (eager takes int8 only)")
    scales = g.reduce("ReduceMax", g.op("Abs", input), [input.rank - 1], True)
    if scales.dtype == torch.float16:
        scales = cast(g, scales, F32)
    scales = g.op("Div", g.max(scales, g.const(1e-5, like=scales)), g.const(127.0, like=scales))
    return scales, fill(g, g.op("Shape", scales), 0, I64)


# -- torchao's affine primitives, by block size -----------------------------------------------------

class Blocks:
    """torchao's view of a tensor by block_size (its _get_reduction_params): `shape` the tensor is viewed
    as (a dim cut into blocks becomes two: the block count and the block), `reduced` the dims of that view
    one parameter spans, `params` the parameters' shape broadcast against the view, and the ONNX form the
    layout has, if any: `axis` and `block` (per tensor: both None; per axis: block None; per block)."""

    def __init__(self, g: GraphBuilder, x: Value, block_size: Sequence[int]):
        self.sizes = [dim_size(g, x, i) for i in range(x.rank)]
        self.shape: list[SymInt] = []
        self.reduced: list[int] = []
        self.params: list[SymInt] = []
        self.counts: list[SymInt] = []  # parameters along each dim of x
        for n, b in zip(self.sizes, block_size):
            if b == 1 or (isinstance(n, int) and b == n):
                self.shape.append(n)
                self.params.append(n if b == 1 else 1)
                self.counts.append(n if b == 1 else 1)
                if b != 1:
                    self.reduced.append(len(self.shape) - 1)
                continue
            if not isinstance(n, int):
                raise NotImplementedError(f"torchao blocks of {b} along a dynamic dim")
            self.shape += [n // b, b]
            self.params += [n // b, 1]
            self.counts.append(n // b)
            self.reduced.append(len(self.shape) - 1)
        self.axis, self.block = self._onnx_form(block_size)

    def _onnx_form(self, block_size: Sequence[int]) -> tuple[int | None, int | None]:
        spread = [i for i, c in enumerate(self.counts) if not (isinstance(c, int) and c == 1)]
        if not spread:
            return None, None
        blocked = [i for i, b in enumerate(block_size) if b != 1 and not (isinstance(self.sizes[i], int)
                                                                          and self.sizes[i] == 1)]
        whole = [i for i, b in enumerate(block_size) if b != 1 and isinstance(self.sizes[i], int) and b == self.sizes[i]]
        if len(spread) == 1 and len(whole) == len(blocked) and set(spread).isdisjoint(blocked):
            return spread[0], None  # one parameter per index along one axis, the other dims whole
        if len(blocked) == 1:
            return blocked[0], block_size[blocked[0]]  # blocks along one axis, one parameter per other index
        return -1, -1  # no ONNX form

    def onnx_params(self, g: GraphBuilder, params: Value) -> Value:
        """The parameters shaped as QuantizeLinear takes them for this layout."""
        if self.axis is None:
            return reshape(g, params, [])
        if self.block is None:
            return reshape(g, params, [-1])
        return reshape(g, params, self.counts)


def affine_bounds(dtype: torch.dtype, quant_min, quant_max) -> tuple[int, int]:
    low, high = type_range(dtype)
    return (low if quant_min is None else int(quant_min)), (high if quant_max is None else int(quant_max))


@register_torchao("torchao::quantize_affine.default")
def torchao_quantize_affine(g, input, block_size, scale, zero_point, output_dtype, quant_min=None, quant_max=None):
    """quantize_affine(Tensor input, SymInt[] block_size, Tensor scale, Tensor? zero_point, ScalarType output_dtype, Scalar? quant_min=None, Scalar? quant_max=None) -> Tensor"""
    quant_min, quant_max = affine_bounds(output_dtype, quant_min, quant_max)
    blocks = Blocks(g, input, block_size)
    if blocks.axis != -1:
        zp = blocks.onnx_params(g, zero_point) if zero_point is not None else None
        fast = quantize(g, input, blocks.onnx_params(g, scale), zp, quant_min, quant_max, output_dtype,
                        axis=blocks.axis, block_size=blocks.block)
        if fast is not None:
            return fast
    # eager: round(input * (1.0 / scale)) + zero_point, in the promoted type of input and scale
    work = torch.promote_types(input.dtype, scale.dtype)
    inverse = cast(g, reshape(g, reciprocal(g, scale, scale.dtype), blocks.params), work)
    zp = None if zero_point is None else cast(g, reshape(g, zero_point, blocks.params), work)
    q = eager_quantize(g, cast(g, reshape(g, input, blocks.shape), work), inverse, zp, quant_min, quant_max,
                       output_dtype)
    return reshape(g, q, blocks.sizes)


@register_torchao("torchao::dequantize_affine.default")
def torchao_dequantize_affine(g, input, block_size, scale, zero_point, input_dtype, quant_min=None, quant_max=None,
                              output_dtype=torch.float32):
    """dequantize_affine(Tensor input, SymInt[] block_size, Tensor scale, Tensor? zero_point, ScalarType input_dtype, Scalar? quant_min=None, Scalar? quant_max=None, ScalarType output_dtype=6) -> Tensor"""
    output_dtype = scalar_type(output_dtype)
    blocks = Blocks(g, input, block_size)
    if blocks.axis != -1 and scale.dtype == output_dtype:
        zp = blocks.onnx_params(g, zero_point) if zero_point is not None else None
        fast = dequantize(g, input, blocks.onnx_params(g, scale), zp, output_dtype, axis=blocks.axis,
                          block_size=blocks.block, quant_range=affine_bounds(input_dtype, quant_min, quant_max))
        if fast is not None:
            return fast
    # eager: (input as output_dtype - zero_point as output_dtype) * scale, then as output_dtype
    shifted = cast(g, reshape(g, input, blocks.shape), output_dtype)
    if zero_point is not None:
        shifted = g.op("Sub", shifted, cast(g, reshape(g, zero_point, blocks.params), output_dtype))
    work = torch.promote_types(output_dtype, scale.dtype)
    out = g.op("Mul", cast(g, shifted, work), cast(g, reshape(g, scale, blocks.params), work))
    return cast(g, reshape(g, out, blocks.sizes), output_dtype)


@register_torchao("torchao::choose_qparams_affine.default")
def torchao_choose_qparams_affine(g, input, mapping_type, block_size, target_dtype, quant_min=None, quant_max=None,
                                  eps=None, scale_dtype=None, zero_point_dtype=None, keepdim=False):
    """choose_qparams_affine(Tensor? input, str mapping_type, SymInt[] block_size, ScalarType target_dtype, Scalar? quant_min=None, Scalar? quant_max=None, float? eps=None, ScalarType? scale_dtype=None, ScalarType? zero_point_dtype=None, bool keepdim=False) -> (Tensor, Tensor)"""
    quant_min, quant_max = affine_bounds(target_dtype, quant_min, quant_max)
    scale_dtype = input.dtype if scale_dtype is None else scale_dtype
    eps = torch.finfo(input.dtype).smallest_normal if eps is None else eps
    blocks = Blocks(g, input, block_size)
    low, high = extremes(g, reshape(g, input, blocks.shape), blocks.reduced, True)
    if mapping_type == "SYMMETRIC":
        scale = g.op("Div", g.max(g.op("Neg", low), high), g.const(float(quant_max - quant_min) / 2, like=high))
    elif mapping_type == "SYMMETRIC_NO_CLIPPING_ERR":
        smin = g.op("Div", low, g.const(float(quant_min), like=low))
        smax = g.op("Div", high, g.const(float(quant_max), like=high))
        scale = g.op("Where", g.op("Greater", smin, smax), smin, smax)
    elif mapping_type == "ASYMMETRIC":
        scale = g.op("Div", g.op("Sub", high, low), g.const(float(quant_max - quant_min), like=low))
    else:
        raise NotImplementedError(f"choose_qparams_affine's mapping type {mapping_type!r}")
    scale = g.max(scale, g.const(float(eps), like=scale))
    if mapping_type == "ASYMMETRIC":
        zero_point = g.op("Sub", g.const(float(quant_min), like=scale), g.round(g.op("Div", low, scale)))
        zero_point = g.clip(zero_point, g.const(float(quant_min), like=scale), g.const(float(quant_max), like=scale))
        zero_point_dtype = torch.int32 if zero_point_dtype is None else zero_point_dtype
    else:
        zero_point = fill(g, g.op("Shape", scale), int((quant_max + quant_min + 1) / 2), scale.dtype)
        zero_point_dtype = scale.dtype if zero_point_dtype is None else zero_point_dtype
    kept = blocks.counts if keepdim else [n for i, n in enumerate(blocks.shape) if i not in blocks.reduced]
    return reshape(g, cast(g, scale, scale_dtype), kept), reshape(g, cast(g, zero_point, zero_point_dtype), kept)
