"""Opset-9 base, the classical orthogonal polynomials (Chebyshev T/U/V/W and their shifted forms,
Hermite, Laguerre, Legendre) by their three-term recurrences, unrolled or as an ONNX Loop, as eager
evaluates them."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import as_value, cast, loop
from aten2onnx.symbolic.opset9_bessel import F64, _dtypes, _k, _pick  # the special functions' shared numerics

register = functools.partial(registry.register, opset=9)


# -- classical orthogonal polynomials ---------------------------------------------------------------
#
# torch evaluates P_n(x) per element in the result dtype: n is converted to it, then truncated to an
# int64 degree; n < 0 gives 0; some families special-case the ends of their interval and, for larger
# n inside it, use a trigonometric closed form; otherwise the three-term recurrence runs from P_0 = 1
# and P_1 up to P_n, stopping early once it yields NaN.

_UNROLL = 16  # a Python-int degree up to this is unrolled; beyond, and for tensor degrees, an ONNX Loop
_HERMITE_LIMIT = {torch.float32: 128, torch.float64: 512}  # eager gives NaN above these degrees

Step = Callable[[GraphBuilder, Value, Value, Value], Value]


def _polynomial_operands(g: GraphBuilder, x, n) -> tuple[Value, Value, int | None, torch.dtype]:
    """x in eager's dtype, broadcast against n; eager's int64 degree (NaN, infinities and |n| >= 2^63
    truncate to a negative one on the machines torch runs on); the degree as a Python int when n is
    one; and the result dtype."""
    out, work = _dtypes(x, n)
    x = as_value(g, x, work)
    if isinstance(n, Value):
        n = cast(g, n, work)
        x = g.op("Expand", x, g.op("Shape", n))
        finite = g.op("Less", g.op("Abs", n), _k(g, 2.0 ** 63, n))
        return x, cast(g, g.op("Where", finite, n, _k(g, -1.0, n)), torch.int64), None, out
    degree = float(torch.tensor(n, dtype=work))
    degree = int(degree) if math.isfinite(degree) and abs(degree) < 2.0 ** 63 else -1
    return x, g.const(degree, dtype=torch.int64), degree, out


def _recurrence(g: GraphBuilder, first: Value, n: Value, static: int | None, step: Step, needed: Value) -> Value:
    """P_n where `needed`, from P_0 = 1 and P_1 = first by P_{k+1} = step(k, P_k, P_{k-1}) for
    k = 1 .. n - 1 (k as a float of P's dtype). A Python-int degree is unrolled when small; otherwise
    a Loop runs to the largest degree needed, each element advancing while k < n, and stops once
    every element still advancing is NaN, as eager's loops do."""
    one = _k(g, 1.0, first)
    if static is not None and static <= _UNROLL:
        p, q = one, first
        for k in range(1, static):
            p, q = q, step(g, _k(g, float(k), first), q, p)
        return q
    last = g.op("Where", needed, n, g.const(1, dtype=torch.int64))
    flat = g.op("Reshape", last, g.const([-1], dtype=torch.int64))
    top = g.reduce("ReduceMax", g.op("Concat", flat, g.const([1], dtype=torch.int64), axis=0), None, False)
    trip = g.op("Sub", top, g.const(1, dtype=torch.int64))

    def body(b: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        p, q = state
        k = b.op("Add", i, b.const(1, dtype=torch.int64))
        advancing = b.op("Less", k, last)
        r = step(b, cast(b, k, first.dtype), q, p)
        p, q = b.op("Where", advancing, q, p), b.op("Where", advancing, r, q)
        going = b.op("And", b.op("Less", b.op("Add", k, b.const(1, dtype=torch.int64)), last),
                     b.op("Not", b.op("IsNaN", q)))
        more = b.reduce("ReduceMax", cast(b, going, torch.float32), None, False)
        return [p, q, b.op("Greater", more, b.const(0.0, dtype=torch.float32))]

    return loop(g, trip, [g.op("Expand", one, g.op("Shape", first)), first], body, name="recurrence", stop=True)[1]


def _acos(g: GraphBuilder, x: Value) -> Value:
    """acos, evaluated in float64 and rounded to x's dtype (onnxruntime's float32 kernels stray from
    eager's by more than the trigonometric forms' large multiples of the angle tolerate). onnxruntime
    has no double Acos: 2 asin(sqrt((1 - |x|) / 2)) (mirrored for x < 0), the arcsine from float32
    refined by two Newton steps on sin(t) = s (t <= pi/4: well conditioned up to |x| = 1)."""
    x64 = cast(g, x, F64)
    s = g.op("Sqrt", g.op("Mul", g.op("Sub", _k(g, 1.0, x64), g.op("Abs", x64)), _k(g, 0.5, x64)))
    t = cast(g, g.op("Asin", cast(g, s, torch.float32)), F64)
    for _ in range(2):
        t = g.op("Sub", t, g.op("Div", g.op("Sub", g.op("Sin", t), s), g.op("Cos", t)))
    theta = g.op("Add", t, t)
    theta = g.op("Where", g.op("Less", x64, _k(g, 0.0, x64)), g.op("Sub", _k(g, math.pi, x64), theta), theta)
    return cast(g, theta, x.dtype)


def _circular(g: GraphBuilder, op_type: str, angle: Value) -> Value:
    """Sin or Cos, evaluated in float64 and rounded to the angle's dtype (as _acos)."""
    return cast(g, g.op(op_type, cast(g, angle, F64)), angle.dtype)


def _is(g: GraphBuilder, x: Value, value: float) -> Value:
    return g.equal(x, _k(g, value, x))


def _even(g: GraphBuilder, n: Value) -> Value:
    two = g.const(2, dtype=torch.int64)
    return g.op("Equal", g.op("Sub", n, g.op("Mul", g.op("Div", n, two), two)), g.const(0, dtype=torch.int64))


def _low_degrees(g: GraphBuilder, value: Value, n: Value, first: Value) -> Value:
    """P_0 = 1 and P_1 = first around the recurrence's value."""
    value = g.op("Where", g.op("Equal", n, g.const(1, dtype=torch.int64)), first, value)
    return g.op("Where", g.op("Equal", n, g.const(0, dtype=torch.int64)), _k(g, 1.0, first), value)


def _finish(g: GraphBuilder, value: Value, n: Value, out: torch.dtype) -> Value:
    """0 for a negative degree, in the result dtype."""
    value = g.op("Where", g.op("Less", n, g.const(0, dtype=torch.int64)), _k(g, 0.0, value), value)
    return cast(g, value, out)


_CHEBYSHEV_TRIG_FROM = {("t", False): 6, ("u", False): 8, ("v", False): 8, ("w", False): 8,
                        ("t", True): 6, ("u", True): 6, ("v", True): 6, ("w", True): 4}


def chebyshev(g: GraphBuilder, x, n, kind: str, *, shifted: bool) -> Value:
    """Chebyshev T, U, V, W (shifted: of 2x - 1): fixed values at the ends of [-1, 1] ([0, 1]),
    cos/sin of multiples of acos inside it for n above a threshold, the recurrence
    P_{k+1} = 2x P_k - P_{k-1} elsewhere."""
    x, n, static, out = _polynomial_operands(g, x, n)
    xs = g.op("Sub", g.op("Add", x, x), _k(g, 1.0, x)) if shifted else x
    two_xs = g.op("Add", xs, xs)
    first = {"t": xs, "u": two_xs, "v": g.op("Sub", two_xs, _k(g, 1.0, x)),
             "w": g.op("Add", two_xs, _k(g, 1.0, x))}[kind]
    n_f = cast(g, n, x.dtype)
    sign = g.op("Where", _even(g, n), _k(g, 1.0, x), _k(g, -1.0, x))
    n_1 = g.op("Add", n_f, _k(g, 1.0, x))
    n_2 = g.op("Add", g.op("Add", n_f, n_f), _k(g, 1.0, x))
    at_top = {"t": _k(g, 1.0, x), "u": n_1, "v": _k(g, 1.0, x), "w": n_2}[kind]
    at_bottom = {"t": sign, "u": g.op("Mul", sign, n_1), "v": g.op("Mul", sign, n_2), "w": sign}[kind]
    top, bottom = _is(g, x, 1.0), _is(g, x, 0.0 if shifted else -1.0)

    trig = g.op("And", g.op("Greater", n, g.const(_CHEBYSHEV_TRIG_FROM[kind, shifted], dtype=torch.int64)),
                g.op("Less", g.op("Abs", xs), _k(g, 1.0, x)))
    theta = _acos(g, _pick(g, trig, xs, 0.0))
    if kind == "t":
        closed = _circular(g, "Cos", g.op("Mul", n_f, theta))
    elif kind == "u":
        sin = _circular(g, "Sin", theta)
        closed = g.op("Where", _is(g, sin, 0.0),
                      g.op("Div", g.op("Mul", n_1, _circular(g, "Cos", g.op("Mul", n_1, theta))), xs),
                      g.op("Div", _circular(g, "Sin", g.op("Mul", n_1, theta)), sin))
    else:
        half = g.op("Div", theta, _k(g, 2.0, x))
        angle = g.op("Mul", g.op("Add", n_f, _k(g, 0.5, x)), theta)
        if kind == "v":
            closed = g.op("Where", _is(g, _circular(g, "Sin", half), 1.0), at_bottom,
                          g.op("Div", _circular(g, "Cos", angle), _circular(g, "Cos", half)))
        else:
            degenerate = at_bottom if shifted else g.op("Where", g.op("Greater", x, _k(g, 0.0, x)), n_2, at_bottom)
            closed = g.op("Where", _is(g, _circular(g, "Cos", half), 1.0), degenerate,
                          g.op("Div", _circular(g, "Sin", angle), _circular(g, "Sin", half)))

    special = g.op("Or", g.op("Or", top, bottom), trig)
    needed = g.op("And", g.op("Greater", n, g.const(1, dtype=torch.int64)), g.op("Not", special))
    value = _recurrence(g, first, n, static, lambda b, k, q, p: b.op("Sub", b.op("Mul", two_xs, q), p), needed)
    value = g.op("Where", trig, closed, _low_degrees(g, value, n, first))
    value = g.op("Where", bottom, at_bottom, g.op("Where", top, at_top, value))
    return _finish(g, value, n, out)


def legendre(g: GraphBuilder, x, n) -> Value:
    """Legendre P: +-1 at x = +-1, else (k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}."""
    x, n, static, out = _polynomial_operands(g, x, n)

    def step(b, k, q, p):
        rise = b.op("Mul", b.op("Mul", b.op("Add", b.op("Add", k, k), _k(b, 1.0, k)), x), q)
        return b.op("Div", b.op("Sub", rise, b.op("Mul", k, p)), b.op("Add", k, _k(b, 1.0, k)))

    top, bottom = _is(g, x, 1.0), _is(g, x, -1.0)
    needed = g.op("And", g.op("Greater", n, g.const(1, dtype=torch.int64)), g.op("Not", g.op("Or", top, bottom)))
    value = _low_degrees(g, _recurrence(g, x, n, static, step, needed), n, x)
    sign = g.op("Where", _even(g, n), _k(g, 1.0, x), _k(g, -1.0, x))
    value = g.op("Where", bottom, sign, g.op("Where", top, _k(g, 1.0, x), value))
    return _finish(g, value, n, out)


def laguerre(g: GraphBuilder, x, n) -> Value:
    """Laguerre L: 1 at x = 0, else (k + 1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}."""
    x, n, static, out = _polynomial_operands(g, x, n)
    one_minus_x = g.op("Sub", _k(g, 1.0, x), x)

    def step(b, k, q, p):
        rise = b.op("Mul", b.op("Add", b.op("Add", k, k), one_minus_x), q)
        return b.op("Div", b.op("Sub", rise, b.op("Mul", k, p)), b.op("Add", k, _k(b, 1.0, k)))

    origin = _is(g, x, 0.0)
    needed = g.op("And", g.op("Greater", n, g.const(1, dtype=torch.int64)), g.op("Not", origin))
    value = _low_degrees(g, _recurrence(g, one_minus_x, n, static, step, needed), n, one_minus_x)
    return _finish(g, g.op("Where", origin, _k(g, 1.0, x), value), n, out)


def hermite(g: GraphBuilder, x, n, *, physicists: bool) -> Value:
    """Hermite H (physicists': H_{k+1} = 2x H_k - 2k H_{k-1}) or He (He_{k+1} = x He_k - k He_{k-1});
    NaN above eager's degree limit for the dtype."""
    x, n, static, out = _polynomial_operands(g, x, n)
    factor = g.op("Add", x, x) if physicists else x

    def step(b, k, q, p):
        return b.op("Sub", b.op("Mul", factor, q), b.op("Mul", b.op("Add", k, k) if physicists else k, p))

    limit = g.const(_HERMITE_LIMIT[x.dtype], dtype=torch.int64)
    beyond = g.op("Greater", n, limit)
    needed = g.op("And", g.op("Greater", n, g.const(1, dtype=torch.int64)), g.op("Not", beyond))
    value = _low_degrees(g, _recurrence(g, factor, n, static, step, needed), n, factor)
    value = g.op("Where", beyond, _k(g, math.nan, x), value)
    return _finish(g, value, n, out)


@register("aten::special_chebyshev_polynomial_t.default", "aten::special_chebyshev_polynomial_t.x_scalar",
          "aten::special_chebyshev_polynomial_t.n_scalar")
def aten_special_chebyshev_polynomial_t(g, x, n):
    """special_chebyshev_polynomial_t(Tensor x, Tensor n) -> Tensor"""
    return chebyshev(g, x, n, "t", shifted=False)


@register("aten::special_chebyshev_polynomial_u.default", "aten::special_chebyshev_polynomial_u.x_scalar",
          "aten::special_chebyshev_polynomial_u.n_scalar")
def aten_special_chebyshev_polynomial_u(g, x, n):
    """special_chebyshev_polynomial_u(Tensor x, Tensor n) -> Tensor"""
    return chebyshev(g, x, n, "u", shifted=False)


@register("aten::special_chebyshev_polynomial_v.default", "aten::special_chebyshev_polynomial_v.x_scalar",
          "aten::special_chebyshev_polynomial_v.n_scalar")
def aten_special_chebyshev_polynomial_v(g, x, n):
    """special_chebyshev_polynomial_v(Tensor x, Tensor n) -> Tensor"""
    return chebyshev(g, x, n, "v", shifted=False)


@register("aten::special_chebyshev_polynomial_w.default", "aten::special_chebyshev_polynomial_w.x_scalar",
          "aten::special_chebyshev_polynomial_w.n_scalar")
def aten_special_chebyshev_polynomial_w(g, x, n):
    """special_chebyshev_polynomial_w(Tensor x, Tensor n) -> Tensor"""
    return chebyshev(g, x, n, "w", shifted=False)


@register("aten::special_hermite_polynomial_h.default", "aten::special_hermite_polynomial_h.x_scalar",
          "aten::special_hermite_polynomial_h.n_scalar")
def aten_special_hermite_polynomial_h(g, x, n):
    """special_hermite_polynomial_h(Tensor x, Tensor n) -> Tensor"""
    return hermite(g, x, n, physicists=True)


@register("aten::special_hermite_polynomial_he.default", "aten::special_hermite_polynomial_he.x_scalar",
          "aten::special_hermite_polynomial_he.n_scalar")
def aten_special_hermite_polynomial_he(g, x, n):
    """special_hermite_polynomial_he(Tensor x, Tensor n) -> Tensor"""
    return hermite(g, x, n, physicists=False)


@register("aten::special_laguerre_polynomial_l.default", "aten::special_laguerre_polynomial_l.x_scalar",
          "aten::special_laguerre_polynomial_l.n_scalar")
def aten_special_laguerre_polynomial_l(g, x, n):
    """special_laguerre_polynomial_l(Tensor x, Tensor n) -> Tensor"""
    return laguerre(g, x, n)


@register("aten::special_legendre_polynomial_p.default", "aten::special_legendre_polynomial_p.x_scalar",
          "aten::special_legendre_polynomial_p.n_scalar")
def aten_special_legendre_polynomial_p(g, x, n):
    """special_legendre_polynomial_p(Tensor x, Tensor n) -> Tensor"""
    return legendre(g, x, n)


@register("aten::special_shifted_chebyshev_polynomial_t.default",
          "aten::special_shifted_chebyshev_polynomial_t.x_scalar",
          "aten::special_shifted_chebyshev_polynomial_t.n_scalar")
def aten_special_shifted_chebyshev_polynomial_t(g, x, n):
    """special_shifted_chebyshev_polynomial_t(Tensor x, Tensor n) -> Tensor"""
    return chebyshev(g, x, n, "t", shifted=True)


@register("aten::special_shifted_chebyshev_polynomial_u.default",
          "aten::special_shifted_chebyshev_polynomial_u.x_scalar",
          "aten::special_shifted_chebyshev_polynomial_u.n_scalar")
def aten_special_shifted_chebyshev_polynomial_u(g, x, n):
    """special_shifted_chebyshev_polynomial_u(Tensor x, Tensor n) -> Tensor"""
    return chebyshev(g, x, n, "u", shifted=True)


@register("aten::special_shifted_chebyshev_polynomial_v.default",
          "aten::special_shifted_chebyshev_polynomial_v.x_scalar",
          "aten::special_shifted_chebyshev_polynomial_v.n_scalar")
def aten_special_shifted_chebyshev_polynomial_v(g, x, n):
    """special_shifted_chebyshev_polynomial_v(Tensor x, Tensor n) -> Tensor"""
    return chebyshev(g, x, n, "v", shifted=True)


@register("aten::special_shifted_chebyshev_polynomial_w.default",
          "aten::special_shifted_chebyshev_polynomial_w.x_scalar",
          "aten::special_shifted_chebyshev_polynomial_w.n_scalar")
def aten_special_shifted_chebyshev_polynomial_w(g, x, n):
    """special_shifted_chebyshev_polynomial_w(Tensor x, Tensor n) -> Tensor"""
    return chebyshev(g, x, n, "w", shifted=True)
