"""Opset-9 base, elementwise math: unary functions, activations, and binary ops beyond the
arithmetic in opset9.py. Later opsetN modules override what a new ONNX op makes simpler."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (as_value, binary, cast, float_opmath, float_unary, fmod_without_mod, half_step,
                                         norm_dim, opmath, promote, result_type, to_float, trunc)
from aten2onnx.symbolic.opset9 import aten_div_mode, bitwise, extremum

register = functools.partial(registry.register, opset=9)


def float_result(*operands) -> torch.dtype:
    """The dtype of a float-valued op (true division, atan2, ...): ints promote to the default float."""
    dtype = result_type(*operands)
    return dtype if dtype.is_floating_point else torch.get_default_dtype()


def const_like(g: GraphBuilder, value, x: Value) -> Value:
    return g.const(value, like=x)


def is_zero(g: GraphBuilder, x: Value) -> Value:
    """x == 0 by Less/Greater, which take floats at every opset (Equal does from 11); NaN is not zero."""
    zero = const_like(g, 0, x)
    nonzero = g.op("Or", g.op("Less", x, zero), g.op("Greater", x, zero))
    if x.dtype.is_floating_point:
        nonzero = g.op("Or", nonzero, g.op("IsNaN", x))
    return g.op("Not", nonzero)


# -- unary math ------------------------------------------------------------------------------------------


def _unary(op_type: str):
    def handler(g, self):
        return float_unary(g, op_type, self)
    return handler


for _name, _op in [("acos", "Acos"), ("asin", "Asin"), ("atan", "Atan"), ("cosh", "Cosh"), ("sinh", "Sinh"),
                   ("tan", "Tan"), ("asinh", "Asinh"), ("acosh", "Acosh"), ("atanh", "Atanh")]:
    _fn = _unary(_op)
    _fn.__name__ = _fn.__qualname__ = f"aten_{_name}"
    _fn.__doc__ = f"{_name}(Tensor self) -> Tensor"
    globals()[_fn.__name__] = register(f"aten::{_name}.default")(_fn)


@register("aten::ceil.default")
def aten_ceil(g, self):
    """ceil(Tensor self) -> Tensor"""
    return self if not self.dtype.is_floating_point else g.op("Ceil", self)


@register("aten::trunc.default", "aten::fix.default")
def aten_trunc(g, self):
    """trunc(Tensor self) -> Tensor"""
    return self if not self.dtype.is_floating_point else trunc(g, self)


def round_half_even(g: GraphBuilder, x: Value, *, has_round: bool) -> Value:
    """Round half to even, as torch.round; before opset 11 (Round) from Floor."""
    if has_round:
        return g.op("Round", x)
    half = g.op("Add", x, const_like(g, 0.5, x))
    r = g.op("Floor", half)
    tie = g.op("Not", g.op("Or", g.op("Less", r, half), g.op("Greater", r, half)))
    two = const_like(g, 2.0, x)
    odd = g.op("Sub", r, g.op("Mul", g.op("Floor", g.op("Div", r, two)), two))
    return g.op("Sub", r, g.op("Mul", cast(g, tie, x.dtype), odd))


def round_decimals(g: GraphBuilder, self: Value, decimals: int, *, has_round: bool) -> Value:
    if not self.dtype.is_floating_point:
        return self
    if decimals == 0:
        return round_half_even(g, self, has_round=has_round)
    scale = const_like(g, 10.0 ** decimals, self)
    return g.op("Div", round_half_even(g, g.op("Mul", self, scale), has_round=has_round), scale)


@register("aten::round.default")
def aten_round(g, self):
    """round(Tensor self) -> Tensor"""
    return round_decimals(g, self, 0, has_round=False)


@register("aten::round.decimals")
def aten_round_decimals(g, self, *, decimals):
    """round.decimals(Tensor self, *, int decimals) -> Tensor"""
    return round_decimals(g, self, decimals, has_round=False)


@register("aten::sign.default", "aten::sgn.default")
def aten_sign(g, self):
    """sign(Tensor self) -> Tensor"""
    if self.dtype == torch.bool:
        return self
    if not self.dtype.is_floating_point:
        return g.op("Sign", self)
    # (x > 0) - (x < 0), as ATen computes it: 0 for NaN and +0 for -0, where Sign gives NaN and -0
    zero = const_like(g, 0.0, self)
    return g.op("Sub", cast(g, g.op("Greater", self, zero), self.dtype), cast(g, g.op("Less", self, zero), self.dtype))


@register("aten::signbit.default")
def aten_signbit(g, self):
    """signbit(Tensor self) -> Tensor"""
    if self.dtype == torch.bool:
        return g.op("Not", g.op("Or", self, g.op("Not", self)))
    x = self
    if x.dtype.is_floating_point:
        # -0.0 has its sign bit set: 1 / -0.0 = -inf.
        neg = g.op("Less", x, const_like(g, 0, x))
        zero_neg = g.op("Less", g.op("Reciprocal", x), const_like(g, 0, x))
        return g.op("Or", neg, zero_neg)
    return g.op("Less", x, const_like(g, 0, x))


@register("aten::expm1.default")
def aten_expm1(g, self):
    """expm1(Tensor self) -> Tensor
    Half types in float32, rounded once (ATen's kernel). exp(x) - 1 loses x's low bits near 0, so
    there the result is (u - 1) * x / log(u) with u = exp(x) (Kahan), and x where u == 1. Where |x| >= 1
    (or x is NaN) u - 1 loses nothing and is the result: (u - 1) * x would overflow long before u does
    (exp(87) is finite in float32, 87 * exp(87) is not)."""
    x = float_opmath(g, self)
    u = g.op("Exp", x)
    um1 = g.op("Sub", u, const_like(g, 1.0, x))
    one = g.op("Not", g.op("Or", g.op("Less", um1, const_like(g, 0.0, x)), g.op("Greater", um1, const_like(g, 0.0, x))))
    edge = g.op("Not", g.op("Less", g.op("Abs", x), const_like(g, 1.0, x)))
    safe_u = g.op("Where", g.op("Or", one, edge), const_like(g, 2.0, x), u)
    accurate = g.op("Div", g.op("Mul", g.op("Sub", safe_u, const_like(g, 1.0, x)), x), g.op("Log", safe_u))
    out = g.op("Where", one, x, g.op("Where", edge, um1, accurate))
    return cast(g, out, to_float(g, self).dtype)


@register("aten::log1p.default")
def aten_log1p(g, self):
    """log1p(Tensor self) -> Tensor
    Half types in float32, rounded once (ATen's kernel). log(1 + x) loses x's low bits near 0, so
    the result is log(u) * x / (u - 1) with u = 1 + x (Goldberg): x where u == 1, log(u) where u
    is inf or not positive."""
    x = float_opmath(g, self)
    u = g.op("Add", x, const_like(g, 1.0, x))
    log_u = g.op("Log", u)
    um1 = g.op("Sub", u, const_like(g, 1.0, x))
    one = g.op("Not", g.op("Or", g.op("Less", um1, const_like(g, 0.0, x)), g.op("Greater", um1, const_like(g, 0.0, x))))
    plain = g.op("Or", one, g.op("Not", g.op("And", g.op("Greater", u, const_like(g, 0.0, x)),
                                            g.op("Less", u, const_like(g, float("inf"), x)))))
    safe_um1 = g.op("Where", plain, const_like(g, 1.0, x), um1)
    accurate = g.op("Div", g.op("Mul", log_u, x), safe_um1)
    out = g.op("Where", one, x, g.op("Where", plain, log_u, accurate))
    return cast(g, out, to_float(g, self).dtype)


@register("aten::log2.default")
def aten_log2(g, self):
    """log2(Tensor self) -> Tensor"""
    x = to_float(g, self)
    return g.op("Div", g.op("Log", x), const_like(g, math.log(2.0), x))


@register("aten::log10.default")
def aten_log10(g, self):
    """log10(Tensor self) -> Tensor"""
    x = to_float(g, self)
    return g.op("Div", g.op("Log", x), const_like(g, math.log(10.0), x))


@register("aten::exp2.default")
def aten_exp2(g, self):
    """exp2(Tensor self) -> Tensor"""
    x = to_float(g, self)
    return g.op("Pow", const_like(g, 2.0, x), x)


@register("aten::erfc.default")
def aten_erfc(g, self):
    """erfc(Tensor self) -> Tensor (half types in float32, rounded once: 1 - erf(x) in float16 loses
    the small values)"""
    x = float_opmath(g, self)
    return cast(g, g.op("Sub", const_like(g, 1.0, x), g.op("Erf", x)), to_float(g, self).dtype)


@register("aten::square.default")
def aten_square(g, self):
    """square(Tensor self) -> Tensor"""
    x = cast(g, self, torch.int64) if self.dtype == torch.bool else self
    return g.op("Mul", x, x)


@register("aten::frac.default")
def aten_frac(g, self):
    """frac(Tensor self) -> Tensor"""
    return g.op("Sub", self, trunc(g, self))


@register("aten::deg2rad.default")
def aten_deg2rad(g, self):
    """deg2rad(Tensor self) -> Tensor"""
    x = to_float(g, self)
    return g.op("Mul", x, const_like(g, math.pi / 180.0, x))


@register("aten::rad2deg.default")
def aten_rad2deg(g, self):
    """rad2deg(Tensor self) -> Tensor"""
    x = to_float(g, self)
    return g.op("Mul", x, const_like(g, 180.0 / math.pi, x))


@register("aten::positive.default", "aten::resolve_conj.default", "aten::resolve_neg.default",
          "aten::conj.default", "aten::conj_physical.default", "aten::real.default")
def aten_positive(g, self):
    """positive(Tensor(a) self) -> Tensor(a)"""
    return self


@register("aten::isnan.default")
def aten_isnan(g, self):
    """isnan(Tensor self) -> Tensor"""
    if not self.dtype.is_floating_point:
        return g.op("Not", g.op("Equal", cast(g, self, torch.bool), cast(g, self, torch.bool)))
    return g.op("IsNaN", self)


def is_inf(g: GraphBuilder, x: Value, *, positive: bool = True, negative: bool = True) -> Value:
    """|x| == inf by comparisons (IsInf arrives in opset 10)."""
    inf = const_like(g, float("inf"), x)
    pos = g.op("Not", g.op("Or", g.op("Less", x, inf), g.op("IsNaN", x)))
    neg = g.op("Not", g.op("Or", g.op("Greater", x, g.op("Neg", inf)), g.op("IsNaN", x)))
    if positive and negative:
        return g.op("Or", pos, neg)
    return pos if positive else neg


def all_false(g: GraphBuilder, self: Value) -> Value:
    b = cast(g, self, torch.bool)
    return g.op("And", b, g.op("Not", b))


@register("aten::isinf.default")
def aten_isinf(g, self):
    """isinf(Tensor self) -> Tensor"""
    if not self.dtype.is_floating_point:
        return all_false(g, self)
    return is_inf(g, self)


@register("aten::isposinf.default")
def aten_isposinf(g, self):
    """isposinf(Tensor self) -> Tensor"""
    if not self.dtype.is_floating_point:
        return all_false(g, self)
    return is_inf(g, self, negative=False)


@register("aten::isneginf.default")
def aten_isneginf(g, self):
    """isneginf(Tensor self) -> Tensor"""
    if not self.dtype.is_floating_point:
        return all_false(g, self)
    return is_inf(g, self, positive=False)


@register("aten::isfinite.default")
def aten_isfinite(g, self):
    """isfinite(Tensor self) -> Tensor"""
    if not self.dtype.is_floating_point:
        return g.op("Not", all_false(g, self))
    return g.op("Not", g.op("Or", g.op("IsNaN", self), aten_isinf(g, self)))


@register("aten::nan_to_num.default")
def aten_nan_to_num(g, self, nan=None, posinf=None, neginf=None):
    """nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor"""
    if not self.dtype.is_floating_point:
        return self
    info = torch.finfo(self.dtype)
    x = g.op("Where", g.op("IsNaN", self), const_like(g, 0.0 if nan is None else nan, self), self)
    x = g.op("Where", aten_isposinf(g, self), const_like(g, info.max if posinf is None else posinf, self), x)
    return g.op("Where", aten_isneginf(g, self), const_like(g, info.min if neginf is None else neginf, self), x)


@register("aten::sinc.default")
def aten_sinc(g, self):
    """sinc(Tensor self) -> Tensor (half types in float32, rounded once, as ATen's kernel)"""
    x = float_opmath(g, self)
    pix = g.op("Mul", x, const_like(g, math.pi, x))
    zero = is_zero(g, x)
    safe = g.op("Where", zero, const_like(g, 1.0, x), pix)
    out = g.op("Where", zero, const_like(g, 1.0, x), g.op("Div", g.op("Sin", safe), safe))
    return cast(g, out, to_float(g, self).dtype)


@register("aten::logit.default")
def aten_logit(g, self, eps=None):
    """logit(Tensor self, float? eps=None) -> Tensor (half types rounded after each step, as ATen's kernel)"""
    dtype = to_float(g, self).dtype
    x = float_opmath(g, self)
    if eps is not None:
        low = torch.tensor(eps, dtype=dtype).item()  # eager clamps to eps and 1 - eps in the dtype
        high = torch.tensor(1.0 - eps, dtype=dtype).item()
        x = g.op("Max", g.op("Min", x, const_like(g, high, x)), const_like(g, low, x))
    ratio = half_step(g, g.op("Div", x, half_step(g, g.op("Sub", const_like(g, 1.0, x), x), dtype)), dtype)
    return cast(g, g.op("Log", ratio), dtype)


# -- activations -----------------------------------------------------------------------------------------


def relu6_of_shifted(g: GraphBuilder, x: Value) -> Value:
    """min(max(x + 3, 0), 6), as ATen's hardsigmoid and hardswish compute it."""
    return g.op("Min", g.op("Max", g.op("Add", x, const_like(g, 3.0, x)), const_like(g, 0.0, x)), const_like(g, 6.0, x))


# HardSigmoid's alpha and beta are float32 attributes: 1/6 in float32 is 3e-9 off in float64, so a
# float64 input gets ATen's own formula.
@register("aten::hardsigmoid.default")
def aten_hardsigmoid(g, self):
    """hardsigmoid(Tensor self) -> Tensor"""
    if self.dtype == torch.float64:
        return g.op("Div", relu6_of_shifted(g, self), const_like(g, 6.0, self))
    return g.op("HardSigmoid", self, alpha=1 / 6, beta=0.5)


@register("aten::hardswish.default")
def aten_hardswish(g, self):
    """hardswish(Tensor self) -> Tensor"""
    if self.dtype == torch.float64:
        return g.op("Div", g.op("Mul", self, relu6_of_shifted(g, self)), const_like(g, 6.0, self))
    return g.op("Mul", self, g.op("HardSigmoid", self, alpha=1 / 6, beta=0.5))


@register("aten::relu6.default")
def aten_relu6(g, self):
    """relu6(Tensor self) -> Tensor"""
    # Clip, which runtimes fuse into a preceding Conv; Max and Min where Clip cannot take the dtype
    return g.clip(self, as_value(g, 0, self.dtype), as_value(g, 6, self.dtype))


@register("aten::elu.default")
def aten_elu(g, self, alpha=1, scale=1, input_scale=1):
    """elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor"""
    if scale == 1 and input_scale == 1 and attribute_exact(self, alpha):
        return g.op("Elu", self, alpha=float(alpha))
    x = g.op("Mul", self, const_like(g, float(input_scale), self))
    neg = g.op("Mul", g.op("Sub", g.op("Exp", x), const_like(g, 1.0, self)), const_like(g, float(alpha), self))
    positive = g.op("Greater", self, const_like(g, 0.0, self))
    return g.op("Mul", g.op("Where", positive, self, neg), const_like(g, float(scale), self))


@register("aten::selu.default")
def aten_selu(g, self):
    """selu(Tensor self) -> Tensor"""
    if not attribute_exact(self, SELU_ALPHA, SELU_SCALE):
        return aten_elu(g, self, SELU_ALPHA, SELU_SCALE)
    return g.op("Selu", self)


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def attribute_exact(x: Value, *values) -> bool:
    """Whether an op's float attributes (float32 in ONNX) hold these numbers exactly for x's dtype: a
    float64 input needs them in float64 (0.01 in float32 is 2e-10 off), narrower ones do not."""
    return x.dtype != torch.float64 or all(float(torch.tensor(float(v), dtype=torch.float32)) == float(v) for v in values)


@register("aten::celu.default")
def aten_celu(g, self, alpha=1.0):
    """celu(Tensor self, Scalar alpha=1.) -> Tensor"""
    alpha = float(alpha)
    positive = g.op("Relu", self)
    inner = g.op("Sub", g.op("Exp", g.op("Div", self, const_like(g, alpha, self))), const_like(g, 1.0, self))
    negative = g.op("Mul", const_like(g, alpha, self), inner)
    return g.op("Add", positive, g.op("Min", const_like(g, 0.0, self), negative))


@register("aten::softplus.default")
def aten_softplus(g, self, beta=1, threshold=20):
    """softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor"""
    bx = g.op("Mul", self, const_like(g, float(beta), self)) if beta != 1 else self
    soft = g.op("Softplus", bx)
    if beta != 1:
        soft = g.op("Div", soft, const_like(g, float(beta), self))
    return g.op("Where", g.op("Greater", bx, const_like(g, float(threshold), self)), self, soft)


@register("aten::mish.default")
def aten_mish(g, self):
    """mish(Tensor self) -> Tensor (half types in float32, rounded once, as eager)"""
    x = float_opmath(g, self)
    return cast(g, g.op("Mul", x, g.op("Tanh", g.op("Softplus", x))), self.dtype)


@register("aten::log_sigmoid_forward.default")
def aten_log_sigmoid_forward(g, self):
    """log_sigmoid_forward(Tensor self) -> (Tensor output, Tensor buffer)"""
    out = g.op("Neg", g.op("Softplus", g.op("Neg", self)))
    # the buffer as ATen's CPU kernel saves it, exp(-|x|): log_sigmoid_backward's CPU kernel reads it
    # (under exact=True the call computes it; a constant here would be taken for a fold of the input)
    return out, g.op("Exp", g.op("Neg", g.op("Abs", self)))


@register("aten::hardshrink.default")
def aten_hardshrink(g, self, lambd=0.5):
    """hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor"""
    lam = const_like(g, float(lambd), self)
    keep = g.op("Or", g.op("Greater", self, lam), g.op("Less", self, g.op("Neg", lam)))
    return g.op("Where", keep, self, const_like(g, 0.0, self))


@register("aten::softshrink.default")
def aten_softshrink(g, self, lambd=0.5):
    """softshrink(Tensor self, Scalar lambd=0.5) -> Tensor"""
    lam = const_like(g, float(lambd), self)
    zero = const_like(g, 0.0, self)
    up = g.op("Where", g.op("Greater", self, lam), g.op("Sub", self, lam), zero)
    return g.op("Where", g.op("Less", self, g.op("Neg", lam)), g.op("Add", self, lam), up)


@register("aten::threshold.default")
def aten_threshold(g, self, threshold, value):
    """threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor"""
    return g.op("Where", g.op("Greater", self, as_value(g, threshold, self.dtype)), self,
                as_value(g, value, self.dtype))


@register("aten::prelu.default", "aten::_prelu_kernel.default")
def aten_prelu(g, self, weight):
    """prelu(Tensor self, Tensor weight) -> Tensor"""
    if weight.rank == 1 and self.rank is not None and self.rank >= 2:
        # one weight per channel (dim 1): shape it to broadcast from dim 1
        weight = g.op("Reshape", weight, g.const([-1] + [1] * (self.rank - 2), dtype=torch.int64))
    return g.op("Where", g.op("Less", self, const_like(g, 0.0, self)), g.op("Mul", self, weight), self)


@register("aten::glu.default")
def aten_glu(g, self, dim=-1):
    """glu(Tensor self, int dim=-1) -> Tensor"""
    from aten2onnx.symbolic.opset9_views import static_dim

    dim = norm_dim(dim, self.rank)
    half = static_dim(self, dim, "glu") // 2
    # Gather with constant ranges reads the same at every opset (Split changed at 13 and 18)
    a = g.op("Gather", self, g.const(list(range(half)), dtype=torch.int64), axis=dim)
    b = g.op("Gather", self, g.const(list(range(half, 2 * half)), dtype=torch.int64), axis=dim)
    return g.op("Mul", a, g.op("Sigmoid", b))


# -- binary math ----------------------------------------------------------------------------------------


def sign_bit(g: GraphBuilder, x: Value) -> Value:
    """x < 0 or x is -0 (1 / -0 is -inf): the sign C's atan2 and csqrt read; False for NaN."""
    zero = const_like(g, 0.0, x)
    return g.op("Or", g.op("Less", x, zero), g.op("Less", g.op("Reciprocal", x), zero))


def atan(g: GraphBuilder, x: Value) -> Value:
    """Atan; onnxruntime has it for float only, so float64 takes float32's and one Newton step on
    sin t - x cos t = 0, which squares its error (1e-7 -> 1e-14)."""
    if x.dtype != torch.float64:
        return g.op("Atan", x)
    t = cast(g, g.op("Atan", cast(g, x, torch.float32)), torch.float64)
    sin, cos = g.op("Sin", t), g.op("Cos", t)
    step = g.op("Div", g.op("Sub", sin, g.op("Mul", x, cos)), g.op("Add", cos, g.op("Mul", x, sin)))
    return g.op("Sub", t, step)


def atan2(g: GraphBuilder, y: Value | None, x: Value) -> Value:
    """atan2(y, x) from Atan (ONNX has no Atan2): the angle of (|x|, |y|) in [0, pi/2] from the
    smaller-over-larger ratio, then reflected by the sign bits of x and y, so signed zeros, infinities
    and NaN come out as in C's atan2 (y/x would be NaN for two infinities, and a NaN y over a zero x
    is no quarter turn). y None is a zero."""
    if y is None:
        y = g.op("Mul", x, const_like(g, 0.0, x))  # +0 or -0 does not matter to the result but NaN does
        y = g.op("Where", g.op("IsNaN", y), y, const_like(g, 0.0, x))
    ax, ay = g.op("Abs", x), g.op("Abs", y)
    steep = g.op("Greater", ay, ax)
    num, den = g.op("Where", steep, ax, ay), g.op("Where", steep, ay, ax)
    # num == den: 0/0 (both zero) reads 0, inf/inf (both infinite) 1; a NaN stays NaN through Div
    tie = g.op("Not", g.op("Or", g.op("Less", num, den), g.op("Or", g.op("IsNaN", num), g.op("IsNaN", den))))
    ratio = g.op("Where", tie, g.op("Where", is_zero(g, den), const_like(g, 0.0, x), const_like(g, 1.0, x)),
                 g.op("Div", num, den))
    t = atan(g, ratio)
    t = g.op("Where", steep, g.op("Sub", const_like(g, math.pi / 2, t), t), t)
    t = g.op("Where", sign_bit(g, x), g.op("Sub", const_like(g, math.pi, t), t), t)
    # y's sign as a factor of +-1, not a Where between -t and t: onnxruntime's Where gives +0.0 for a
    # -0.0 it picks from its first branch (atan2(-0, 1) is -0)
    return g.op("Mul", t, g.op("Where", sign_bit(g, y), const_like(g, -1.0, t), const_like(g, 1.0, t)))


@register("aten::atan2.default", "aten::arctan2.default")
def aten_atan2(g, self, other):
    """atan2(Tensor self, Tensor other) -> Tensor"""
    dtype = float_result(self, other)
    y, x = promote(g, self, other, to=opmath(dtype))  # half types in float32, rounded once, as ATen does
    return cast(g, atan2(g, y, x), dtype)


def fmod(g: GraphBuilder, self, other, *, has_mod: bool) -> Value:
    """C's fmod: the remainder of truncated division, with the dividend's sign (a zero too)."""
    a, b = promote(g, self, other)
    if has_mod:
        return g.op("Mod", a, b, fmod=1)
    if not a.dtype.is_floating_point:
        return g.op("Sub", a, g.op("Mul", g.op("Div", a, b), b))  # integer Div truncates
    return fmod_without_mod(g, a, b)


def remainder(g: GraphBuilder, self, other, *, has_mod: bool) -> Value:
    """Python's %, as ATen computes it for floats: fmod, moved by the divisor where the two signs
    differ; a zero keeps the dividend's sign."""
    a, b = promote(g, self, other)
    if not a.dtype.is_floating_point:
        if has_mod:
            return g.op("Mod", a, b, fmod=0)
        q = aten_div_mode(g, a, b, rounding_mode="floor")
        return g.op("Sub", a, g.op("Mul", q, b))
    m = fmod(g, a, b, has_mod=has_mod)
    zero = g.const(0, like=m)
    other_side = g.op("Xor", g.op("Less", m, zero), g.op("Less", b, zero))
    return g.op("Where", g.op("And", g.op("Not", is_zero(g, m)), other_side), g.op("Add", m, b), m)


@register("aten::fmod.Tensor", "aten::fmod.Scalar")
def aten_fmod(g, self, other):
    """fmod.Tensor(Tensor self, Tensor other) -> Tensor"""
    return fmod(g, self, other, has_mod=False)


@register("aten::remainder.Tensor", "aten::remainder.Scalar", "aten::remainder.Scalar_Tensor")
def aten_remainder(g, self, other):
    """remainder.Tensor(Tensor self, Tensor other) -> Tensor"""
    return remainder(g, self, other, has_mod=False)


@register("aten::true_divide.Tensor", "aten::true_divide.Scalar")
def aten_true_divide(g, self, other):
    """true_divide.Tensor(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other, to=float_result(self, other))
    return g.op("Div", a, b)


@register("aten::rsub.Tensor")
def aten_rsub_tensor(g, self, other, *, alpha=1):
    """rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    return binary(g, "Sub", other, self, alpha) if isinstance(other, Value) else \
        binary(g, "Sub", *promote(g, other, self), alpha)


@register("aten::logical_xor.default")
def aten_logical_xor(g, self, other):
    """logical_xor(Tensor self, Tensor other) -> Tensor"""
    return g.op("Xor", cast(g, self, torch.bool), cast(g, other, torch.bool))


@register("aten::__xor__.Tensor", "aten::__xor__.Scalar", "aten::bitwise_xor.Tensor", "aten::bitwise_xor.Scalar",
          "aten::bitwise_xor.Scalar_Tensor")
def aten_bitwise_xor(g, self, other):
    """bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor"""
    return bitwise(g, "Xor", self, other)


@register("aten::float_power.Tensor_Tensor", "aten::float_power.Tensor_Scalar", "aten::float_power.Scalar")
def aten_float_power(g, self, exponent):
    """float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"""
    base, exp = promote(g, self, exponent, to=torch.float64)
    return g.op("Pow", base, exp)


@register("aten::xlogy.Tensor", "aten::xlogy.Scalar_Other", "aten::xlogy.Scalar_Self")
def aten_xlogy(g, self, other):
    """xlogy.Tensor(Tensor self, Tensor other) -> Tensor"""
    x, y = promote(g, self, other, to=float_result(self, other))
    zero = const_like(g, 0.0, x)
    out = g.op("Mul", x, g.op("Log", y))
    out = g.op("Where", is_zero(g, x), zero, out)
    return g.op("Where", g.op("IsNaN", y), y, out)


@register("aten::hypot.default")
def aten_hypot(g, self, other):
    """hypot(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other)
    dtype = a.dtype
    # squares of float32 overflow from 1.8e19 where hypot does not: computed in float64, rounded once
    wide = torch.float64 if dtype in (torch.float16, torch.bfloat16, torch.float32) else dtype
    a, b = cast(g, a, wide), cast(g, b, wide)
    r = g.op("Sqrt", g.op("Add", g.op("Mul", a, a), g.op("Mul", b, b)))
    top = g.const(torch.finfo(wide).max, dtype=wide)
    infinite = g.op("Or", g.op("Greater", g.op("Abs", a), top), g.op("Greater", g.op("Abs", b), top))
    return cast(g, g.op("Where", infinite, g.const(math.inf, dtype=wide), r), dtype)  # hypot(inf, nan) is inf


@register("aten::logaddexp.default")
def aten_logaddexp(g, self, other):
    """logaddexp(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other)
    dtype = a.dtype  # half types computed in float32 and rounded once, as ATen's kernel does
    a, b = cast(g, a, opmath(dtype)), cast(g, b, opmath(dtype))
    m = g.op("Max", a, b)
    diff = g.op("Neg", g.op("Abs", g.op("Sub", a, b)))
    out = g.op("Add", m, aten_log1p(g, g.op("Exp", diff)))
    # equal infinities: the difference is NaN, the result is that infinity
    return cast(g, g.op("Where", g.op("IsNaN", diff), m, out), dtype)


@register("aten::logaddexp2.default")
def aten_logaddexp2(g, self, other):
    """logaddexp2(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other)
    dtype = a.dtype
    a, b = cast(g, a, opmath(dtype)), cast(g, b, opmath(dtype))
    m = g.op("Max", a, b)
    diff = g.op("Neg", g.op("Abs", g.op("Sub", a, b)))
    out = g.op("Add", m, aten_log2(g, g.op("Add", const_like(g, 1.0, a), aten_exp2(g, diff))))
    return cast(g, g.op("Where", g.op("IsNaN", diff), m, out), dtype)


@register("aten::copysign.Tensor", "aten::copysign.Scalar")
def aten_copysign(g, self, other):
    """copysign.Tensor(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other, to=float_result(self, other))
    negative = aten_signbit(g, b)
    mag = g.op("Abs", a)
    return g.op("Where", negative, g.op("Neg", mag), mag)


@register("aten::heaviside.default")
def aten_heaviside(g, self, values):
    """heaviside(Tensor self, Tensor values) -> Tensor"""
    x, v = promote(g, self, values)
    zero = const_like(g, 0, x)
    pos = cast(g, g.op("Greater", x, zero), x.dtype)
    return g.op("Where", is_zero(g, x), v, pos)


@register("aten::lerp.Scalar", "aten::lerp.Tensor")
def aten_lerp(g, self, end, weight):
    """lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor
    As ATen's kernel: in opmath (half types in float32, rounded once), self + w * (end - self) where
    |w| < 0.5, else end - (end - self) * (1 - w)."""
    a, b = promote(g, self, end)
    dtype, acc = a.dtype, opmath(a.dtype)
    a, b = cast(g, a, acc), cast(g, b, acc)
    w = cast(g, weight, acc) if isinstance(weight, Value) else as_value(g, weight, acc)
    diff = g.op("Sub", b, a)
    small = g.op("Less", g.op("Abs", w), const_like(g, 0.5, w))
    near_self = g.op("Add", a, g.op("Mul", w, diff))
    near_end = g.op("Sub", b, g.op("Mul", diff, g.op("Sub", const_like(g, 1.0, w), w)))
    return cast(g, g.op("Where", small, near_self, near_end), dtype)


def add_scaled(g: GraphBuilder, op_type: str, self: Value, tensor1: Value, tensor2: Value, value) -> Value:
    """self + value * tensor1 op tensor2, for addcmul (Mul) and addcdiv (Div), in ATen's order and,
    for half types, in float32 rounded once, as ATen's CPU kernels compute them."""
    s, t1, t2 = promote(g, self, tensor1, tensor2)
    dtype, acc = s.dtype, opmath(s.dtype)
    s, t1, t2 = cast(g, s, acc), cast(g, t1, acc), cast(g, t2, acc)
    if value != 1:
        t1 = g.op("Mul", as_value(g, value, acc), t1)
    return cast(g, g.op("Add", s, g.op(op_type, t1, t2)), dtype)


@register("aten::addcmul.default")
def aten_addcmul(g, self, tensor1, tensor2, *, value=1):
    """addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"""
    return add_scaled(g, "Mul", self, tensor1, tensor2, value)


@register("aten::addcdiv.default")
def aten_addcdiv(g, self, tensor1, tensor2, *, value=1):
    """addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"""
    return add_scaled(g, "Div", self, tensor1, tensor2, value)


def clamp_tensor(g: GraphBuilder, self: Value, min, max) -> Value:
    dtype = result_type(*(v for v in (self, min, max) if v is not None))
    x = cast(g, self, dtype)
    if min is not None:
        x = extremum(g, "Max", x, cast(g, min, dtype))
    if max is not None:
        x = extremum(g, "Min", x, cast(g, max, dtype))
    return x


@register("aten::clamp.Tensor")
def aten_clamp_tensor(g, self, min=None, max=None):
    """clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor"""
    return clamp_tensor(g, self, min, max)


@register("aten::clamp_min.default", "aten::clamp_min.Tensor")
def aten_clamp_min(g, self, min):
    """clamp_min(Tensor self, Scalar min) -> Tensor"""
    return clamp_tensor(g, self, min if isinstance(min, Value) else as_value(g, min, result_type(self, min)), None)


@register("aten::clamp_max.default", "aten::clamp_max.Tensor")
def aten_clamp_max(g, self, max):
    """clamp_max(Tensor self, Scalar max) -> Tensor"""
    return clamp_tensor(g, self, None, max if isinstance(max, Value) else as_value(g, max, result_type(self, max)))
