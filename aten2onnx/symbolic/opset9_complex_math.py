"""Opset-9 complex arithmetic and elementwise functions on carriers (see opset9_complex.py): add ...
pow, exp/log, trigonometric and hyperbolic functions and their inverses, comparisons and
predicates, and compositions of them (addcmul, lerp, logical ops), written out on the real and
imaginary parts."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._carrier import (
    Parts,
    _k,
    _shaped,
    carrier,
    complex_result,
    convert,
    on_carrier,
    operand_parts,
    shape_of,
    split,
    tagged,
)
from aten2onnx.symbolic._complex_math import (
    _is_complex,
    _is_inf,
    _mul_number,
    _scaled,
    carrier_mul,
    complex_abs,
    complex_div,
    complex_exp,
    complex_int_pow,
    complex_log,
    complex_pow,
    complex_sqrt,
    complex_tanh,
    hypot,
    sinh_cosh,
)
from aten2onnx.symbolic._helpers import cast
from aten2onnx.symbolic._lifting import Lift, lift
from aten2onnx.symbolic.opset9_complex import full
from aten2onnx.symbolic.opset9_math import atan2, is_zero, sign_bit

register = functools.partial(registry.register, opset=9, complex=True)


# -- arithmetic -------------------------------------------------------------------------------------------


@register("aten::add.Tensor")
def aten_add(g, self, other, *, alpha=1):
    """add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    dtype = complex_result(self, other)
    return g.op("Add", carrier(g, self, dtype), _scaled(g, other, alpha, dtype))


@register("aten::add.Scalar")
def aten_add_scalar(g, self, other, alpha=1):
    """add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return aten_add(g, self, other, alpha=alpha)


@register("aten::sub.Tensor")
def aten_sub(g, self, other, *, alpha=1):
    """sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    dtype = complex_result(self, other)
    return g.op("Sub", carrier(g, self, dtype), _scaled(g, other, alpha, dtype))


@register("aten::sub.Scalar")
def aten_sub_scalar(g, self, other, alpha=1):
    """sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return aten_sub(g, self, other, alpha=alpha)


@register("aten::rsub.Tensor")
def aten_rsub(g, self, other, *, alpha=1):
    """rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    dtype = complex_result(self, other)
    return g.op("Sub", carrier(g, other, dtype), _scaled(g, self, alpha, dtype))


@register("aten::rsub.Scalar")
def aten_rsub_scalar(g, self, other, alpha=1):
    """rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"""
    return aten_rsub(g, self, other, alpha=alpha)


@register("aten::mul.Tensor", "aten::mul.Scalar")
def aten_mul(g, self, other):
    """mul.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = complex_result(self, other)
    real = _dtypes.real_part(dtype)
    a, b = (self, other) if _is_complex(self) else (other, self)
    if not _is_complex(b):  # a real factor scales both parts: one Mul
        factor = cx.lift(g, cast(g, b, real)) if isinstance(b, Value) else g.const(float(b), dtype=real)
        return g.op("Mul", carrier(g, a, dtype), factor)
    if not isinstance(b, Value):
        return _mul_number(g, carrier(g, a, dtype), complex(b))
    if a.kind in ("const", "initializer") and b.kind not in ("const", "initializer"):
        a, b = b, a  # the weight is read whole (see carrier_mul)
    return carrier_mul(g, carrier(g, a, dtype), carrier(g, b, dtype))


@register("aten::div.Tensor", "aten::div.Scalar")
def aten_div(g, self, other):
    """div.Tensor(Tensor self, Tensor other) -> Tensor"""
    dtype = complex_result(self, other)
    real = _dtypes.real_part(dtype)
    if not _is_complex(other):
        divisor = cx.lift(g, cast(g, other, real)) if isinstance(other, Value) else g.const(float(other), dtype=real)
        return g.op("Div", carrier(g, self, dtype), divisor)
    return cx.pack(g, *complex_div(g, operand_parts(g, self, real), operand_parts(g, other, real)))


@register("aten::div.Tensor_mode", "aten::div.Scalar_mode")
def aten_div_mode(g, self, other, *, rounding_mode):
    """div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"""
    if rounding_mode is not None:
        raise NotImplementedError(f"div with rounding_mode={rounding_mode!r} is not defined for complex tensors")
    return aten_div(g, self, other)


@register("aten::neg.default")
def aten_neg(g, self):
    """neg(Tensor self) -> Tensor"""
    return g.op("Neg", self)


@register("aten::reciprocal.default")
def aten_reciprocal(g, self):
    """reciprocal(Tensor self) -> Tensor"""
    z = cx.parts(g, self)
    return cx.pack(g, *complex_div(g, (_k(g, 1.0, z[0]), None), z))


@register("aten::abs.default")
def aten_abs(g, self):
    """abs(Tensor self) -> Tensor"""
    return complex_abs(g, self)


@register("aten::angle.default")
def aten_angle(g, self):
    """angle(Tensor self) -> Tensor"""
    re, im = split(g, self)
    return atan2(g, im, re)


@register("aten::sgn.default")
def aten_sgn(g, self):
    """sgn(Tensor self) -> Tensor"""
    re, im = cx.parts(g, self)
    r = hypot(g, re, im)
    return g.op("Where", is_zero(g, r), _k(g, 0.0, r), g.op("Div", self, r))


def _unary(g: GraphBuilder, fn, self: Value) -> Value:
    """A function of one complex tensor, on its parts."""
    return cx.pack(g, *fn(g, cx.parts(g, self)))


@register("aten::exp.default")
def aten_exp(g, self):
    """exp(Tensor self) -> Tensor"""
    return _unary(g, complex_exp, self)


@register("aten::exp2.default")
def aten_exp2(g, self):
    """exp2(Tensor self) -> Tensor"""
    ln2 = math.log(2.0)
    return _unary(g, lambda g, z: complex_exp(g, tuple(g.op("Mul", p, _k(g, ln2, p)) for p in z)), self)


@register("aten::log.default")
def aten_log(g, self):
    """log(Tensor self) -> Tensor"""
    return _unary(g, complex_log, self)


def _log_base(g: GraphBuilder, self: Value, base: float) -> Value:
    scale = 1.0 / math.log(base)
    return _unary(g, lambda g, z: tuple(g.op("Mul", p, _k(g, scale, p)) for p in complex_log(g, z)), self)


@register("aten::log2.default")
def aten_log2(g, self):
    """log2(Tensor self) -> Tensor"""
    return _log_base(g, self, 2.0)


@register("aten::log10.default")
def aten_log10(g, self):
    """log10(Tensor self) -> Tensor"""
    return _log_base(g, self, 10.0)


@register("aten::sqrt.default")
def aten_sqrt(g, self):
    """sqrt(Tensor self) -> Tensor"""
    return _unary(g, complex_sqrt, self)


@register("aten::rsqrt.default")
def aten_rsqrt(g, self):
    """rsqrt(Tensor self) -> Tensor"""
    return _unary(g, lambda g, z: complex_div(g, (_k(g, 1.0, z[0]), None), complex_sqrt(g, z)), self)


@register("aten::square.default")
def aten_square(g, self):
    """square(Tensor self) -> Tensor"""
    return _unary(g, lambda g, z: cx.complex_mul(g, z, z), self)


@register("aten::pow.Tensor_Scalar")
def aten_pow_tensor_scalar(g, self, exponent):
    """pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor"""
    dtype = complex_result(self, exponent)
    real = _dtypes.real_part(dtype)
    w = complex(exponent)
    if w == 0:
        return full(g, shape_of(g, self), 1, dtype)
    z = operand_parts(g, self, real)
    if w.imag == 0 and math.isfinite(w.real) and w.real == int(w.real) and abs(w.real) <= 64:
        out = complex_int_pow(g, z, int(w.real))
    elif w == 0.5:
        out = complex_sqrt(g, z)
    elif w == -0.5:
        out = complex_div(g, (_k(g, 1.0, z[0]), None), complex_sqrt(g, z))
    else:
        out = complex_pow(g, z, operand_parts(g, w, real))
    return cx.pack(g, *out)


@register("aten::pow.Tensor_Tensor")
def aten_pow_tensor_tensor(g, self, exponent):
    """pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"""
    dtype = complex_result(self, exponent)
    real = _dtypes.real_part(dtype)
    return cx.pack(g, *complex_pow(g, operand_parts(g, self, real), operand_parts(g, exponent, real)))


@register("aten::pow.Scalar")
def aten_pow_scalar(g, self, exponent):
    """pow.Scalar(Scalar self, Tensor exponent) -> Tensor"""
    base = complex(self)
    if base == 0:
        raise NotImplementedError("pow of a zero complex base")
    dtype = complex_result(self, exponent)
    real = _dtypes.real_part(dtype)
    log = cmath_log(base)
    w = operand_parts(g, exponent, real)
    re, im = complex_exp(g, cx.complex_mul(g, w, operand_parts(g, log, real)))
    return cx.pack(g, re, im)


def cmath_log(z: complex) -> complex:
    return complex(math.log(abs(z)), math.atan2(z.imag, z.real))


@register("aten::sin.default")
def aten_sin(g, self):
    """sin(Tensor self) -> Tensor"""
    def sin(g, z):
        a, b = z
        sinh, cosh = sinh_cosh(g, b)
        return g.op("Mul", g.op("Sin", a), cosh), g.op("Mul", g.op("Cos", a), sinh)
    return _unary(g, sin, self)


@register("aten::cos.default")
def aten_cos(g, self):
    """cos(Tensor self) -> Tensor"""
    def cos(g, z):
        a, b = z
        sinh, cosh = sinh_cosh(g, b)
        return g.op("Mul", g.op("Cos", a), cosh), g.op("Neg", g.op("Mul", g.op("Sin", a), sinh))
    return _unary(g, cos, self)


@register("aten::sinh.default")
def aten_sinh(g, self):
    """sinh(Tensor self) -> Tensor"""
    def sinh(g, z):
        a, b = z
        sinh, cosh = sinh_cosh(g, a)
        return g.op("Mul", sinh, g.op("Cos", b)), g.op("Mul", cosh, g.op("Sin", b))
    return _unary(g, sinh, self)


@register("aten::cosh.default")
def aten_cosh(g, self):
    """cosh(Tensor self) -> Tensor"""
    def cosh(g, z):
        a, b = z
        sinh, cosh = sinh_cosh(g, a)
        return g.op("Mul", cosh, g.op("Cos", b)), g.op("Mul", sinh, g.op("Sin", b))
    return _unary(g, cosh, self)


@register("aten::tanh.default")
def aten_tanh(g, self):
    """tanh(Tensor self) -> Tensor"""
    return _unary(g, complex_tanh, self)


@register("aten::tan.default")
def aten_tan(g, self):
    """tan(Tensor self) -> Tensor"""
    def tan(g, z):  # tan z = -i tanh(i z)
        a, b = z
        u, v = complex_tanh(g, (g.op("Neg", b), a))
        return v, g.op("Neg", u)
    return _unary(g, tan, self)


@register("aten::sigmoid.default")
def aten_sigmoid(g, self):
    """sigmoid(Tensor self) -> Tensor"""
    def sigmoid(g, z):  # 1 / (1 + exp(-z))
        er, ei = complex_exp(g, tuple(g.op("Neg", p) for p in z))
        one = _k(g, 1.0, er)
        return complex_div(g, (one, None), (g.op("Add", er, one), ei))
    return _unary(g, sigmoid, self)


# -- predicates and comparisons -------------------------------------------------------------------------


@register("aten::isnan.default")
def aten_isnan(g, self):
    """isnan(Tensor self) -> Tensor"""
    re, im = split(g, self)
    return g.op("Or", g.op("IsNaN", re), g.op("IsNaN", im))


@register("aten::isinf.default")
def aten_isinf(g, self):
    """isinf(Tensor self) -> Tensor"""
    re, im = split(g, self)
    return g.op("Or", _is_inf(g, re), _is_inf(g, im))


@register("aten::isfinite.default")
def aten_isfinite(g, self):
    """isfinite(Tensor self) -> Tensor"""
    re, im = split(g, self)
    inf = _k(g, math.inf, re)
    return g.op("And", g.op("Less", g.op("Abs", re), inf), g.op("Less", g.op("Abs", im), inf))


@register("aten::isreal.default")
def aten_isreal(g, self):
    """isreal(Tensor self) -> Tensor"""
    return is_zero(g, split(g, self)[1])


def complex_eq(g: GraphBuilder, self, other) -> Value:
    """self == other: both parts equal (the real eq of the target opset on the carriers)."""
    dtype = complex_result(self, other)
    both = on_carrier(g, "aten::eq.Tensor", carrier(g, self, dtype), carrier(g, other, dtype))
    return g.op("And", cx.component(g, both, 0), cx.component(g, both, 1))


@register("aten::eq.Tensor", "aten::eq.Scalar")
def aten_eq(g, self, other):
    """eq.Tensor(Tensor self, Tensor other) -> Tensor"""
    return complex_eq(g, self, other)


@register("aten::ne.Tensor", "aten::ne.Scalar")
def aten_ne(g, self, other):
    """ne.Tensor(Tensor self, Tensor other) -> Tensor"""
    return g.op("Not", complex_eq(g, self, other))


@register("aten::isclose.default")
def aten_isclose(g, self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """isclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> Tensor"""
    # eager: self == other, or a finite |self - other| <= atol + rtol * |other|
    close = complex_eq(g, self, other)
    if equal_nan:
        close = g.op("Or", close, g.op("And", aten_isnan(g, self), aten_isnan(g, other)))
    if rtol == 0 and atol == 0:
        return close
    diff = aten_sub(g, self, other)
    actual = hypot(g, cx.component(g, diff, 0), cx.component(g, diff, 1))
    if isinstance(other, Value):
        re, im = split(g, other, actual.dtype)
        size = hypot(g, re, im) if im is not None else g.op("Abs", re)
        allowed = g.op("Add", _k(g, atol, actual), g.op("Mul", _k(g, rtol, actual), size))
    else:
        allowed = _k(g, atol + rtol * abs(other), actual)
    within = g.op("And", g.op("Less", actual, _k(g, math.inf, actual)), g.op("Not", g.op("Greater", actual, allowed)))
    return g.op("Or", close, within)


# -- compositions of the handlers above --------------------------------------------------------------------------


@register("aten::true_divide.Tensor", "aten::true_divide.Scalar", "aten::divide.Tensor", "aten::divide.Scalar")
def aten_true_divide(g, self, other):
    """true_divide.Tensor(Tensor self, Tensor other) -> Tensor"""
    return aten_div(g, self, other)


@register("aten::addcmul.default")
def aten_addcmul(g, self, tensor1, tensor2, *, value=1):
    """addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"""
    return aten_add(g, self, tagged(g, aten_mul(g, tensor1, tensor2)), alpha=value)


@register("aten::addcdiv.default")
def aten_addcdiv(g, self, tensor1, tensor2, *, value=1):
    """addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"""
    return aten_add(g, self, tagged(g, aten_div(g, tensor1, tensor2)), alpha=value)


@register("aten::lerp.Scalar")
def aten_lerp(g, self, end, weight):
    """lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor"""
    return aten_add(g, self, tagged(g, aten_sub(g, end, self)), alpha=weight)


@register("aten::lerp.Tensor")
def aten_lerp_tensor(g, self, end, weight):
    """lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor"""
    return aten_add(g, self, tagged(g, aten_mul(g, weight, tagged(g, aten_sub(g, end, self)))))


def _double(g: GraphBuilder, x):
    """An operand of float_power: complex128 (a tensor) or a Python number as it is."""
    if not isinstance(x, Value):
        return x
    return tagged(g, convert(g, x, torch.complex128)) if x.complex else cast(g, x, torch.float64)


@register("aten::float_power.Tensor_Tensor")
def aten_float_power(g, self, exponent):
    """float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"""
    return aten_pow_tensor_tensor(g, _double(g, self), _double(g, exponent))


@register("aten::float_power.Tensor_Scalar")
def aten_float_power_tensor_scalar(g, self, exponent):
    """float_power.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor"""
    return aten_pow_tensor_scalar(g, _double(g, self), exponent)


@register("aten::float_power.Scalar")
def aten_float_power_scalar(g, self, exponent):
    """float_power.Scalar(Scalar self, Tensor exponent) -> Tensor"""
    return aten_pow_scalar(g, self, _double(g, exponent))


@register("aten::ldexp.Tensor")
def aten_ldexp(g, self, other):
    """ldexp.Tensor(Tensor self, Tensor other) -> Tensor"""
    if other.complex:
        return aten_mul(g, self, tagged(g, aten_exp2(g, other)))
    dtype = complex_result(self, other)
    real = _dtypes.real_part(dtype)
    scale = g.op("Pow", g.const(2.0, dtype=real), cast(g, other, real))
    return g.op("Mul", carrier(g, self, dtype), cx.lift(g, _shaped(scale, other.shape)))


@register("aten::sinc.default")
def aten_sinc(g, self):
    """sinc(Tensor self) -> Tensor"""
    def sinc(g, z):  # sin(pi z) / (pi z), 1 at z = 0
        re, im = z
        pz = (g.op("Mul", re, _k(g, math.pi, re)), g.op("Mul", im, _k(g, math.pi, im)))
        a, b = pz
        sinh, cosh = sinh_cosh(g, b)
        out = complex_div(g, (g.op("Mul", g.op("Sin", a), cosh), g.op("Mul", g.op("Cos", a), sinh)), pz)
        zero = g.op("And", is_zero(g, re), is_zero(g, im))
        return g.op("Where", zero, _k(g, 1.0, re), out[0]), g.op("Where", zero, _k(g, 0.0, im), out[1])
    return _unary(g, sinc, self)


def nonzero_mask(g: GraphBuilder, x: Value) -> Value:
    """x != 0 as bool (a complex x: either part nonzero, NaN counting as nonzero)."""
    return _shaped(convert(g, x, torch.bool), cx.logical_shape(x))


@register("aten::logical_not.default")
def aten_logical_not(g, self):
    """logical_not(Tensor self) -> Tensor"""
    return g.op("Not", nonzero_mask(g, self))


@register("aten::logical_and.default")
def aten_logical_and(g, self, other):
    """logical_and(Tensor self, Tensor other) -> Tensor"""
    return g.op("And", nonzero_mask(g, self), nonzero_mask(g, other))


@register("aten::logical_or.default")
def aten_logical_or(g, self, other):
    """logical_or(Tensor self, Tensor other) -> Tensor"""
    return g.op("Or", nonzero_mask(g, self), nonzero_mask(g, other))


@register("aten::logical_xor.default")
def aten_logical_xor(g, self, other):
    """logical_xor(Tensor self, Tensor other) -> Tensor"""
    return g.op("Xor", nonzero_mask(g, self), nonzero_mask(g, other))


def on_mask(g: GraphBuilder, real: str, spec: None, arguments: dict):
    """The lifting of ON_MASK: the real translation on self != 0, a bool tensor."""
    return on_carrier(g, real, **{**arguments, "self": nonzero_mask(g, arguments["self"])})


# Overloads that read only whether each element is nonzero, lifted by on_mask.
ON_MASK = [Lift((key,)) for key in (
    "aten::all.default", "aten::all.dim", "aten::all.dims", "aten::any.default", "aten::any.dim", "aten::any.dims",
    "aten::argwhere.default", "aten::nonzero.default")]
lift(ON_MASK, on_mask, "on the nonzero mask", opset=9)


# -- inverse trigonometric and hyperbolic functions, through log and sqrt in float64 ------------------------------


def _wide(g: GraphBuilder, x: Value) -> Value:
    """float32 parts in float64, where a formula would lose range or precision (abs, sqrt, log)."""
    return cast(g, x, torch.float64) if x.dtype in (torch.float16, torch.bfloat16, torch.float32) else x


def _wide_unary(g: GraphBuilder, fn, self: Value) -> Value:
    """A function of one complex tensor computed on float64 parts (float32 loses too much to the
    cancellations in these formulas), cast back."""
    re, im = cx.parts(g, self)
    out = fn(g, (_wide(g, re), _wide(g, im)))
    return cx.pack(g, *(cast(g, p, re.dtype) for p in out))


def complex_asinh(g: GraphBuilder, z: Parts) -> Parts:
    """asinh z = log(z + sqrt(z^2 + 1)), on the half-plane Re z >= 0 (asinh is odd), where the sum
    does not cancel."""
    a, b = z
    flip = sign_bit(g, a)
    sign = g.op("Where", flip, _k(g, -1.0, a), _k(g, 1.0, a))
    a, b = g.op("Mul", a, sign), g.op("Mul", b, sign)
    sq_re = g.op("Add", g.op("Sub", g.op("Mul", a, a), g.op("Mul", b, b)), _k(g, 1.0, a))
    sq_im = g.op("Mul", _k(g, 2.0, a), g.op("Mul", a, b))
    root = complex_sqrt(g, (sq_re, sq_im))
    re, im = complex_log(g, (g.op("Add", a, root[0]), g.op("Add", b, root[1])))
    return g.op("Mul", re, sign), g.op("Mul", im, sign)


def complex_atanh(g: GraphBuilder, z: Parts) -> Parts:
    """atanh z = (log(1 + z) - log(1 - z)) / 2."""
    a, b = z
    one = _k(g, 1.0, a)
    up = complex_log(g, (g.op("Add", one, a), b))
    down = complex_log(g, (g.op("Sub", one, a), g.op("Neg", b)))
    half = _k(g, 0.5, a)
    return g.op("Mul", g.op("Sub", up[0], down[0]), half), g.op("Mul", g.op("Sub", up[1], down[1]), half)


def _times_i(g: GraphBuilder, z: Parts) -> Parts:
    return g.op("Neg", z[1]), z[0]


def _times_minus_i(g: GraphBuilder, z: Parts) -> Parts:
    return z[1], g.op("Neg", z[0])


@register("aten::asinh.default")
def aten_asinh(g, self):
    """asinh(Tensor self) -> Tensor"""
    return _wide_unary(g, complex_asinh, self)


@register("aten::asin.default")
def aten_asin(g, self):
    """asin(Tensor self) -> Tensor"""
    return _wide_unary(g, lambda g, z: _times_minus_i(g, complex_asinh(g, _times_i(g, z))), self)


@register("aten::acos.default")
def aten_acos(g, self):
    """acos(Tensor self) -> Tensor"""
    def acos(g, z):  # pi/2 - asin z
        re, im = _times_minus_i(g, complex_asinh(g, _times_i(g, z)))
        return g.op("Sub", _k(g, math.pi / 2, re), re), g.op("Neg", im)
    return _wide_unary(g, acos, self)


@register("aten::acosh.default")
def aten_acosh(g, self):
    """acosh(Tensor self) -> Tensor"""
    def acosh(g, z):  # log(z + sqrt(z + 1) sqrt(z - 1))
        a, b = z
        one = _k(g, 1.0, a)
        root = cx.complex_mul(g, complex_sqrt(g, (g.op("Add", a, one), b)), complex_sqrt(g, (g.op("Sub", a, one), b)))
        return complex_log(g, (g.op("Add", a, root[0]), g.op("Add", b, root[1])))
    return _wide_unary(g, acosh, self)


@register("aten::atanh.default")
def aten_atanh(g, self):
    """atanh(Tensor self) -> Tensor"""
    return _wide_unary(g, complex_atanh, self)


@register("aten::atan.default")
def aten_atan(g, self):
    """atan(Tensor self) -> Tensor"""
    return _wide_unary(g, lambda g, z: _times_minus_i(g, complex_atanh(g, _times_i(g, z))), self)
