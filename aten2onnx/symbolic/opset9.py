"""ATen -> ONNX symbolic functions for the base opset, 9: elementwise arithmetic, comparisons and logic,
no-ops and conversions. The other families sit beside it (opset9_<family>.py: shapes and views in
opset9_views, indexing in opset9_index, matrix products in opset9_products), the helpers they share in
_helpers.py.

Later opsetN modules hold only the handlers whose ONNX output changed in opset N.
"""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (
    FLOATS,
    as_value,
    binary,
    cast,
    float_opmath,
    compare,
    equal,
    float_unary,
    fmod_without_mod,
    half_step,
    opmath,
    promote,
    result_type,
    to_float,
    trunc,
)

register = functools.partial(registry.register, opset=9)


# -- elementwise arithmetic ----------------------------------------------------------------------------


@register("aten::add.Tensor")
def aten_add(g, self, other, *, alpha=1):
    """add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    return binary(g, "Add", self, other, alpha)


@register("aten::add.Scalar")
def aten_add_scalar(g, self, other, alpha=1):
    """add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return binary(g, "Add", self, other, alpha)


@register("aten::sub.Tensor", "aten::subtract.Tensor")
def aten_sub(g, self, other, *, alpha=1):
    """sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    return binary(g, "Sub", self, other, alpha)


@register("aten::sub.Scalar", "aten::subtract.Scalar")
def aten_sub_scalar(g, self, other, alpha=1):
    """sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return binary(g, "Sub", self, other, alpha)


@register("aten::rsub.Scalar")
def aten_rsub(g, self, other, alpha=1):
    """rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    self, other = promote(g, self, other)
    return binary(g, "Sub", other, self, alpha)


@register("aten::mul.Tensor", "aten::mul.Scalar")
def aten_mul(g, self, other):
    """mul.Tensor(Tensor self, Tensor other) -> Tensor"""
    if self.dtype == torch.bool and isinstance(other, Value) and other.dtype == torch.bool:
        return g.op("And", self, other)
    return binary(g, "Mul", self, other)


@register("aten::div.Tensor", "aten::div.Scalar", "aten::divide.Tensor", "aten::divide.Scalar")
def aten_div(g, self, other):
    """div.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = result_type(self, other)
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    self, other = promote(g, self, other, to=dtype)
    return g.op("Div", self, other)


def floor_divide_floats(g: GraphBuilder, a: Value, b: Value, *, has_mod: bool, rounded_to: torch.dtype) -> Value:
    """ATen's floor division of floats (div_floor_floating): a less its fmod remainder, divided by b, one less
    where remainder and divisor differ in sign, floored and rounded to the nearest whole number; by zero, as
    IEEE divides; a zero quotient with the sign of a / b. Floor(a / b) differs where the quotient rounds up to
    a whole number (1 // 0.1 is 9.0, Floor(1 / 0.1) 10.0), for an infinite dividend (NaN) and an infinite
    divisor of the other sign (-1.0). Without Mod (before opset 10) the remainder is fmod_without_mod's.
    Half types compute in float32, each step's result rounded to `rounded_to`: the half type itself, as
    ATen's vectorized kernel rounds two half tensors' steps, or float32, to round once at the end."""
    dtype = a.dtype
    a, b = cast(g, a, opmath(dtype)), cast(g, b, opmath(dtype))
    zero, one = g.const(0.0, like=a), g.const(1.0, like=a)

    def step(x: Value) -> Value:
        return half_step(g, x, rounded_to)

    quotient = step(g.op("Div", a, b))
    mod = g.op("Mod", a, b, fmod=1) if has_mod else fmod_without_mod(g, a, b)
    div = step(g.op("Div", step(g.op("Sub", a, mod)), b))
    other_side = g.op("And", g.op("Not", g.equal(mod, zero)), g.op("Xor", g.op("Less", b, zero), g.op("Less", mod, zero)))
    div = g.op("Where", other_side, step(g.op("Sub", div, one)), div)
    floored = g.op("Floor", div)
    floored = g.op("Where", g.op("Greater", g.op("Sub", div, floored), g.const(0.5, like=a)),
                   step(g.op("Add", floored, one)), floored)
    by_zero, zero_quotient = g.equal(b, zero), g.equal(div, zero)
    magnitude = g.op("Where", by_zero, quotient, g.op("Where", zero_quotient, zero, floored))
    # a zero quotient takes the sign of a / b, as a factor of +-1 (Sign(q + 1 / q) is -1 for -0.0):
    # onnxruntime's Where may give +0.0 for a -0.0 it picks
    sign = g.op("Sign", g.op("Add", quotient, g.op("Reciprocal", quotient)))
    sign = g.op("Where", g.op("And", g.op("Not", by_zero), zero_quotient), sign, one)
    return cast(g, g.op("Mul", magnitude, sign), dtype)


def _one_value(x: Value | float) -> bool:
    """Whether x is a number or a tensor of one element, which broadcasts as one value (ATen's kernels
    take such a divisor as a scalar: `TensorIterator::is_scalar`)."""
    return not isinstance(x, Value) or (x.is_static and math.prod(x.shape) == 1)


def div_mode(g: GraphBuilder, self, other, rounding_mode: str | None, *, has_mod: bool) -> Value:
    """div with rounding_mode: None (true division), "trunc" or "floor" (floor_divide_floats for floats;
    for integers the truncating quotient, one less where the remainder and the divisor differ in sign).
    Half types divide as ATen's CPU kernels do: by one value (a number, unrounded, or a tensor of one
    element) in float32, rounded once (half(1) // 0.1 is 9.0; half(1) // half(0.1) is 10.0); by a tensor
    in half arithmetic, each step rounded (trunc(half(3) / half(0.3)) is 10.0: the quotient 9.998 rounds)."""
    if rounding_mode is None:
        return aten_div(g, self, other)
    dtype = result_type(self, other)
    a, b = promote(g, self, other, to=dtype)  # a number wraps into the dtype first: uint8 // -1 divides by 255
    if dtype.is_floating_point:
        if not isinstance(other, Value):
            b = g.const(float(other), dtype=opmath(dtype))
        rounded_to = opmath(dtype) if _one_value(other) else dtype
        if rounding_mode == "floor":
            return floor_divide_floats(g, a, b, has_mod=has_mod, rounded_to=rounded_to)
        quotient = half_step(g, g.op("Div", cast(g, a, opmath(dtype)), cast(g, b, opmath(dtype))), rounded_to)
        return cast(g, trunc(g, quotient), dtype)
    if rounding_mode == "trunc":
        return g.op("Div", a, b)  # integer Div truncates
    if dtype == torch.int64:  # (a float64 quotient is not exact beyond 2 ** 53)
        q = g.op("Div", a, b)
        r = g.op("Sub", a, g.op("Mul", q, b))
        zero = g.const(0, dtype=dtype)
        other_side = g.op("And", g.op("Not", g.equal(r, zero)), g.op("Xor", g.op("Less", r, zero), g.op("Less", b, zero)))
        return g.op("Where", other_side, g.op("Sub", q, g.const(1, dtype=dtype)), q)
    q = g.op("Floor", g.op("Div", cast(g, a, torch.float64), cast(g, b, torch.float64)))  # exact for 32 bits
    return cast(g, q, dtype)


@register("aten::div.Tensor_mode", "aten::div.Scalar_mode")
def aten_div_mode(g, self, other, *, rounding_mode):
    """div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"""
    return div_mode(g, self, other, rounding_mode, has_mod=False)


@register("aten::floor_divide.default", "aten::floor_divide.Scalar")
def aten_floor_divide(g, self, other):
    """floor_divide(Tensor self, Tensor other) -> Tensor"""
    return div_mode(g, self, other, "floor", has_mod=False)


@register("aten::pow.Tensor_Scalar")
def aten_pow_tensor_scalar(g, self, exponent):
    """pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor"""
    if exponent == 2:
        # ATen computes x**2 as x*x; the same node keeps results identical.
        (x,) = promote(g, self, to=result_type(self, exponent))
        return g.op("Mul", x, x)
    if exponent == 0.5:
        return g.op("Sqrt", to_float(g, self))
    return binary(g, "Pow", self, exponent)


def int_pow(g: GraphBuilder, base: Value, exponent: Value) -> Value:
    """base ** exponent for integer tensors as ATen's integer pow: a negative exponent gives 1 for base
    1, 1 or -1 (even or odd exponent) for base -1, and 0 for any other base (0 included), where Pow
    would compute 1 / base ** -e in floats (inf for base 0)."""
    dtype = base.dtype
    e = cast(g, exponent, torch.int64)
    zero = g.const(0, dtype=torch.int64)
    negative = g.op("Less", e, zero)
    powered = binary(g, "Pow", base, cast(g, g.op("Where", negative, zero, e), dtype))
    odd = g.op("Not", equal(g, g.op("Sub", e, g.op("Mul", g.op("Div", e, g.const(2, dtype=torch.int64)),
                                                        g.const(2, dtype=torch.int64))), 0))
    b = cast(g, base, torch.int64)
    minus_one = g.op("Where", odd, g.const(-1, dtype=torch.int64), g.const(1, dtype=torch.int64))
    inverse = g.op("Where", equal(g, b, 1), g.const(1, dtype=torch.int64),
                   g.op("Where", equal(g, b, -1), minus_one, zero))
    return g.op("Where", negative, cast(g, inverse, dtype), powered)


def is_int(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


@register("aten::pow.Tensor_Tensor")
def aten_pow(g, self, exponent):
    """pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor (integers: see int_pow)"""
    if is_int(result_type(self, exponent)) and (exponent.dtype.is_signed if not exponent.dtype.is_floating_point else False):
        return int_pow(g, *promote(g, self, exponent))
    return binary(g, "Pow", self, exponent)


@register("aten::pow.Scalar")
def aten_pow_scalar(g, self, exponent):
    """pow.Scalar(Scalar self, Tensor exponent) -> Tensor (integers: see int_pow)"""
    base, exponent = promote(g, self, exponent)
    if is_int(base.dtype) and base.dtype.is_signed:
        return int_pow(g, base, exponent)
    return g.op("Pow", base, exponent)


@register("aten::neg.default")
def aten_neg(g, self):
    """neg(Tensor self) -> Tensor"""
    return g.op("Neg", self)


@register("aten::abs.default")
def aten_abs(g, self):
    """abs(Tensor self) -> Tensor"""
    return g.op("Abs", self)


@register("aten::reciprocal.default")
def aten_reciprocal(g, self):
    """reciprocal(Tensor self) -> Tensor"""
    return float_unary(g, "Reciprocal", self)


@register("aten::sqrt.default")
def aten_sqrt(g, self):
    """sqrt(Tensor self) -> Tensor"""
    return float_unary(g, "Sqrt", self)


@register("aten::rsqrt.default")
def aten_rsqrt(g, self):
    """rsqrt(Tensor self) -> Tensor"""
    return g.op("Reciprocal", float_unary(g, "Sqrt", self))


@register("aten::exp.default")
def aten_exp(g, self):
    """exp(Tensor self) -> Tensor"""
    return float_unary(g, "Exp", self)


@register("aten::log.default")
def aten_log(g, self):
    """log(Tensor self) -> Tensor"""
    return float_unary(g, "Log", self)


@register("aten::sin.default")
def aten_sin(g, self):
    """sin(Tensor self) -> Tensor"""
    return float_unary(g, "Sin", self)


@register("aten::cos.default")
def aten_cos(g, self):
    """cos(Tensor self) -> Tensor"""
    return float_unary(g, "Cos", self)


@register("aten::tanh.default")
def aten_tanh(g, self):
    """tanh(Tensor self) -> Tensor"""
    return float_unary(g, "Tanh", self)


@register("aten::sigmoid.default")
def aten_sigmoid(g, self):
    """sigmoid(Tensor self) -> Tensor"""
    return float_unary(g, "Sigmoid", self)


@register("aten::erf.default")
def aten_erf(g, self):
    """erf(Tensor self) -> Tensor"""
    return float_unary(g, "Erf", self)


@register("aten::floor.default")
def aten_floor(g, self):
    """floor(Tensor self) -> Tensor"""
    return self if not self.dtype.is_floating_point else g.op("Floor", self)


@register("aten::relu.default")
def aten_relu(g, self):
    """relu(Tensor self) -> Tensor"""
    return relu(g, self)


def relu(g: GraphBuilder, x: Value) -> Value:
    """Relu takes integers only from opset 14, and onnxruntime has no int64 kernel for it even
    there: integers select against 0 instead, at every opset."""
    if x.dtype in FLOATS or x.dtype == torch.bfloat16:
        return g.op("Relu", x)
    zero = g.const(0, like=x)
    return g.op("Where", g.op("Greater", x, zero), x, zero)


# The activations that are several ONNX ops compute half types in float32 and round once, as ATen's
# CPU kernels do (rounding each op's result in the half type differs in a fifth of bfloat16 values).


@register("aten::silu.default")
def aten_silu(g, self):
    """silu(Tensor self) -> Tensor"""
    x = float_opmath(g, self)
    return cast(g, g.op("Mul", x, g.op("Sigmoid", x)), self.dtype)


@register("aten::gelu.default")
def aten_gelu(g, self, *, approximate="none"):
    """gelu(Tensor self, *, str approximate="none") -> Tensor"""
    x = float_opmath(g, self)
    half = g.const(0.5, like=x)
    # The spellings onnxruntime's GeluFusion and FastGeluFusion turn into one Gelu or FastGelu kernel (x / sqrt(2)
    # into Erf; Pow(x, 3)); for a 0-d x the others, which it leaves alone: its FastGelu refuses 0-d inputs.
    fused = x.rank is not None and x.rank > 0
    if approximate == "tanh":
        cube = g.op("Pow", x, g.const(3.0, like=x)) if fused else g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Add", x, g.op("Mul", cube, g.const(0.044715, like=x)))
        t = g.op("Tanh", g.op("Mul", inner, g.const(math.sqrt(2 / math.pi), like=x)))
    else:
        t = g.op("Erf", g.op("Div", x, g.const(math.sqrt(2), like=x)) if fused
                 else g.op("Mul", x, g.const(1 / math.sqrt(2), like=x)))
    return cast(g, g.op("Mul", g.op("Mul", x, half), g.op("Add", t, g.const(1.0, like=x))), self.dtype)


def extremum(g: GraphBuilder, op_type: str, a: Value, b) -> Value:
    """Max/Min of a and b promoted as torch does."""
    a, b = promote(g, a, b)
    return g.max(a, b) if op_type == "Max" else g.min(a, b)


@register("aten::maximum.default")
def aten_maximum(g, self, other):
    """maximum(Tensor self, Tensor other) -> Tensor"""
    return extremum(g, "Max", self, other)


@register("aten::minimum.default")
def aten_minimum(g, self, other):
    """minimum(Tensor self, Tensor other) -> Tensor"""
    return extremum(g, "Min", self, other)


@register("aten::leaky_relu.default")
def aten_leaky_relu(g, self, negative_slope=0.01):
    """leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor"""
    if self.dtype == torch.float64 and float(torch.tensor(float(negative_slope), dtype=torch.float32)) != negative_slope:
        # LeakyRelu's alpha is a float32 attribute: a float64 slope it cannot hold is multiplied in float64
        return g.op("Where", g.op("Greater", self, g.const(0.0, like=self)), self,
                    g.op("Mul", self, g.const(float(negative_slope), like=self)))
    return g.op("LeakyRelu", self, alpha=float(negative_slope))


@register("aten::rrelu.default")
def aten_rrelu(g, self, lower=0.125, upper=0.33333333333333331, training=False, generator=None):
    """rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> Tensor
    Outside training, leaky_relu with the mean slope (lower + upper) / 2, as ATen computes it; in training
    each element draws its slope (not exported: falls back)."""
    if training:
        raise NotImplementedError("rrelu in training draws a random slope per element")
    return aten_leaky_relu(g, self, (float(lower) + float(upper)) / 2)


@register("aten::clamp.default")
def aten_clamp(g, self, min=None, max=None):
    """clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"""
    self = cast(g, self, result_type(*(v for v in (self, min, max) if v is not None)))  # bool.clamp(0, 1) is int64
    return g.clip(self, None if min is None else as_value(g, min, self.dtype),
                  None if max is None else as_value(g, max, self.dtype))


@register("aten::hardtanh.default")
def aten_hardtanh(g, self, min_val=-1, max_val=1):
    """hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor"""
    # Clip, which runtimes fuse into a preceding Conv or MatMul (ReLU6 is hardtanh(0, 6))
    return g.clip(self, as_value(g, min_val, self.dtype), as_value(g, max_val, self.dtype))


# -- comparisons and logic -------------------------------------------------------------------------------


@register("aten::eq.Tensor", "aten::eq.Scalar")
def aten_eq(g, self, other):
    """eq.Tensor(Tensor self, Tensor other) -> Tensor"""
    return equal(g, self, other)


@register("aten::ne.Tensor", "aten::ne.Scalar")
def aten_ne(g, self, other):
    """ne.Tensor(Tensor self, Tensor other) -> Tensor"""
    return g.op("Not", aten_eq(g, self, other))


@register("aten::lt.Tensor", "aten::lt.Scalar")
def aten_lt(g, self, other):
    """lt.Tensor(Tensor self, Tensor other) -> Tensor"""
    return compare(g, "Less", self, other)


@register("aten::gt.Tensor", "aten::gt.Scalar")
def aten_gt(g, self, other):
    """gt.Tensor(Tensor self, Tensor other) -> Tensor"""
    return compare(g, "Greater", self, other)


@register("aten::le.Tensor", "aten::le.Scalar")
def aten_le(g, self, other):
    """le.Tensor(Tensor self, Tensor other) -> Tensor"""
    return g.less_or_equal(*promote(g, self, other))


@register("aten::ge.Tensor", "aten::ge.Scalar")
def aten_ge(g, self, other):
    """ge.Tensor(Tensor self, Tensor other) -> Tensor"""
    return g.greater_or_equal(*promote(g, self, other))


@register("aten::logical_not.default")
def aten_logical_not(g, self):
    """logical_not(Tensor self) -> Tensor"""
    return g.op("Not", cast(g, self, torch.bool))


@register("aten::logical_and.default")
def aten_logical_and(g, self, other):
    """logical_and(Tensor self, Tensor other) -> Tensor"""
    return g.op("And", cast(g, self, torch.bool), cast(g, other, torch.bool))


@register("aten::logical_or.default")
def aten_logical_or(g, self, other):
    """logical_or(Tensor self, Tensor other) -> Tensor"""
    return g.op("Or", cast(g, self, torch.bool), cast(g, other, torch.bool))


def bitwise(g: GraphBuilder, bool_op: str, self: Value, other) -> Value:
    self, other = promote(g, self, other)
    if self.dtype == torch.bool:
        return g.op(bool_op, self, other)
    if self.dtype.is_floating_point or self.dtype.is_complex or self.rank is None or other.rank is None:
        raise NotImplementedError(f"bitwise ops on {self.dtype} need opset 18 (Bitwise*)")
    a, b = (bits(g, cast(g, v, torch.int64)) for v in (self, other))
    both = g.op("Mul", a, b)
    either = {"And": both, "Or": g.op("Sub", g.op("Add", a, b), both),
              "Xor": g.op("Sub", g.op("Add", a, b), g.op("Add", both, both))}[bool_op]
    return cast(g, from_bits(g, either, max(self.rank, other.rank)), self.dtype)


_LOW_BITS = 63  # the bits below int64's sign bit


def bits(g: GraphBuilder, x: Value) -> Value:
    """The 64 bits of an int64 x as 0/1 along a new last axis, least significant first: those of n = x, or of
    ~x = -1 - x for a negative x (then flipped), by n / 2**k - 2 * (n / 2**(k + 1)) (n >= 0, so Div floors);
    the last is the sign."""
    i64 = torch.int64
    negative = g.op("Less", x, g.const(0, dtype=i64))
    n = g.op("Where", negative, g.op("Sub", g.const(-1, dtype=i64), x), x)
    powers = g.const([1 << k for k in range(_LOW_BITS)], dtype=i64)
    last = n.rank
    q = g.op("Div", g.unsqueeze(n, [last]), powers)  # [..., 63]
    q_next = g.op("Concat", g.slice(q, [1], [_LOW_BITS], [last]),
                  g.op("Mul", g.slice(q, [0], [1], [last]), g.const(0, dtype=i64)), axis=last)
    low = g.op("Sub", q, g.op("Add", q_next, q_next))
    sign = g.unsqueeze(negative, [last])
    low = g.op("Where", sign, g.op("Sub", g.const(1, dtype=i64), low), low)
    return g.op("Concat", low, cast(g, sign, i64), axis=last)


def from_bits(g: GraphBuilder, b: Value, last: int) -> Value:
    """The int64 whose bits (bits' layout, along axis `last`) are b: the low ones weighted by powers of two, the
    sign by -2**63. Summed 16 bits at a time (each sum below 2**16, exact however a kernel accumulates:
    onnxruntime's int64 ReduceSum loses sums near 2**63), then shifted into place by products."""
    i64 = torch.int64
    local = g.op("Mul", b, g.const([1 << (k % 16) for k in range(_LOW_BITS)] + [-(1 << 15)], dtype=i64))
    out = None
    for j in range(4):
        chunk = g.reduce("ReduceSum", g.slice(local, [16 * j], [16 * j + 16], [last]), [last], False)
        chunk = g.op("Mul", chunk, g.const(1 << (16 * j), dtype=i64)) if j else chunk
        out = chunk if out is None else g.op("Add", out, chunk)
    return out


@register("aten::__and__.Tensor", "aten::__and__.Scalar", "aten::bitwise_and.Tensor", "aten::bitwise_and.Scalar",
          "aten::bitwise_and.Scalar_Tensor")
def aten_bitwise_and(g, self, other):
    """bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "And", self, other)


@register("aten::__or__.Tensor", "aten::__or__.Scalar", "aten::bitwise_or.Tensor", "aten::bitwise_or.Scalar",
          "aten::bitwise_or.Scalar_Tensor")
def aten_bitwise_or(g, self, other):
    """bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Or", self, other)


@register("aten::bitwise_not.default")
def aten_bitwise_not(g, self):
    """bitwise_not(Tensor self) -> Tensor"""
    if self.dtype == torch.bool:
        return g.op("Not", self)
    if self.dtype.is_floating_point or self.dtype.is_complex:
        raise NotImplementedError(f"bitwise_not on {self.dtype}: torch defines it on integers and bools only")
    # ~x is -1 - x in two's complement (the type's maximum - x unsigned): no overflow either way
    top = -1 if self.dtype.is_signed else torch.iinfo(self.dtype).max
    return g.op("Sub", g.const(top, dtype=self.dtype), self)


@register("aten::where.self")
def aten_where(g, condition, self, other):
    """where.self(Tensor condition, Tensor self, Tensor other) -> Tensor"""
    self, other = promote(g, self, other)
    return g.op("Where", cast(g, condition, torch.bool), self, other)


@register("aten::where.ScalarOther", "aten::where.ScalarSelf", "aten::where.Scalar")
def aten_where_scalar(g, condition, self, other):
    """where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor"""
    return aten_where(g, condition, self, other)


@register("aten::masked_fill.Scalar", "aten::masked_fill.Tensor")
def aten_masked_fill(g, self, mask, value):
    """masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor"""
    return g.op("Where", cast(g, mask, torch.bool), as_value(g, value, self.dtype), self)


# -- no-ops and conversions ----------------------------------------------------------------------------


@register("aten::contiguous.default")
def aten_contiguous(g, self, *, memory_format=torch.contiguous_format):
    """contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)"""
    return self


@register("aten::clone.default")
def aten_clone(g, self, *, memory_format=None):
    """clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor"""
    return self


@register("aten::detach.default", "aten::alias.default", "aten::lift_fresh_copy.default")
def aten_detach(g, self):
    """detach(Tensor(a) self) -> Tensor(a)"""
    return self


@register("aten::dropout.default")
def aten_dropout(g, input, p, train):
    """dropout(Tensor input, float p, bool train) -> Tensor"""
    if train and p > 0:
        raise NotImplementedError("dropout in training mode is random; export the model in eval mode")
    return input


@register("aten::_assert_tensor_metadata.default")
def aten_assert_tensor_metadata(g, a, size=None, stride=None, dtype=None, *, device=None, layout=None):
    """_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None, ScalarType? dtype=None, *, Device? device=None, Layout? layout=None) -> ()"""
    return None


@register("aten::_assert_scalar.default")
def aten_assert_scalar(g, self, assert_msg):
    """_assert_scalar(Scalar self, str assert_msg) -> ()"""
    return None


@register("aten::sym_constrain_range_for_size.default")
def aten_sym_constrain_range_for_size(g, size, *, min=None, max=None):
    """sym_constrain_range_for_size(Scalar size, *, int? min=None, int? max=None) -> ()"""
    return None


@register("aten::to.dtype")
def aten_to_dtype(g, self, dtype, non_blocking=False, copy=False, memory_format=None):
    """to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"""
    return cast(g, self, dtype)


@register("aten::to.dtype_layout")
def aten_to_dtype_layout(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
                         copy=False, memory_format=None):
    """to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"""
    return self if dtype is None else cast(g, self, dtype)


@register("aten::to.device")
def aten_to_device(g, self, device, dtype, non_blocking=False, copy=False, memory_format=None):
    """to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"""
    return cast(g, self, dtype)


@register("aten::_to_copy.default")
def aten_to_copy(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
                 memory_format=None):
    """_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor"""
    return self if dtype is None else cast(g, self, dtype)


@register("aten::type_as.default")
def aten_type_as(g, self, other):
    """type_as(Tensor self, Tensor other) -> Tensor"""
    return cast(g, self, other.dtype)
