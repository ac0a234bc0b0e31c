"""Complex functions written out on real and imaginary parts for the complex handlers. Parts carry a
trailing axis of 1 (cx.parts), so parts of different shapes broadcast as the complex tensors do, and
the result packs with one Concat."""

from __future__ import annotations

import functools
import itertools
import math

import torch

from aten2onnx import _dtypes
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._carrier import Parts, _k, _shaped, carrier, dtype_of, join, split
from aten2onnx.symbolic._helpers import cast
from aten2onnx.symbolic.opset9_math import atan2, is_zero, sign_bit


def _is_complex(x) -> bool:
    return x.complex if isinstance(x, Value) else isinstance(x, complex)


def pair_parts(g: GraphBuilder, c: Value) -> Parts:
    """Parts of a carrier built here (cx.parts reads the complex tag, which only graph values from
    FX carry)."""
    return (g.op("Gather", c, g.const([0], dtype=torch.int64), axis=-1),
            g.op("Gather", c, g.const([1], dtype=torch.int64), axis=-1))


def times_i(g: GraphBuilder, c: Value) -> Value:
    """i * c for a carrier c: (-Im c, Re c)."""
    swapped = g.op("Gather", c, g.const([1, 0], dtype=torch.int64), axis=-1)
    return g.op("Mul", swapped, g.const([-1.0, 1.0], dtype=c.dtype))


def carrier_mul(g: GraphBuilder, a: Value, b: Value) -> Value:
    """a * b for carriers (broadcasting) as Re(a) b + Im(a) (i b): b is read whole, so a weight there
    stays one initializer (its rotation folds to a constant when small)."""
    re, im = pair_parts(g, a)
    return g.op("Add", g.op("Mul", re, b), g.op("Mul", im, times_i(g, b)))


def _mul_number(g: GraphBuilder, c: Value, z: complex) -> Value:
    """A carrier times a Python number: z.real c + z.imag (i c)."""
    scaled = None if z.real == 0 else c if z.real == 1 else g.op("Mul", c, g.const(z.real, dtype=c.dtype))
    if z.imag == 0:
        return scaled if scaled is not None else g.op("Mul", c, g.const(0.0, dtype=c.dtype))
    turned = times_i(g, c)
    turned = turned if z.imag == 1 else g.op("Mul", turned, g.const(z.imag, dtype=c.dtype))
    return turned if scaled is None else g.op("Add", scaled, turned)


def complex_div(g: GraphBuilder, a: Parts, b: Parts) -> Parts:
    """a / b with both scaled by max(|Re b|, |Im b|) first, as eager's kernel does, so |b|^2 neither
    overflows nor underflows."""
    (ar, ai), (br, bi) = a, b
    if bi is None:
        return g.op("Div", ar, br), None if ai is None else g.op("Div", ai, br)
    scale = g.op("Reciprocal", g.op("Max", g.op("Abs", br), g.op("Abs", bi)))
    ar, ai, br, bi = (None if p is None else g.op("Mul", p, scale) for p in (ar, ai, br, bi))
    denom = g.op("Add", g.op("Mul", br, br), g.op("Mul", bi, bi))
    re = cx.add(g, cx.mul(g, ar, br), cx.mul(g, ai, bi))
    im = cx.sub(g, cx.mul(g, ai, br), cx.mul(g, ar, bi))
    return g.op("Div", re, denom), g.op("Div", im, denom)


def _is_inf(g: GraphBuilder, x: Value) -> Value:
    """|x| is infinite, by comparing with the largest finite value (IsInf comes at opset 10)."""
    return g.op("Greater", g.op("Abs", x), _k(g, torch.finfo(x.dtype).max, x))


def hypot(g: GraphBuilder, re: Value, im: Value) -> Value:
    """|re + i im| as C's hypot: without overflow (float32 parts squared in float64, float64 parts
    scaled), and infinite when a part is, even if the other is NaN."""
    if re.dtype != torch.float64:
        r, i = cast(g, re, torch.float64), cast(g, im, torch.float64)
        out = cast(g, g.op("Sqrt", g.op("Add", g.op("Mul", r, r), g.op("Mul", i, i))), re.dtype)
    else:
        out = _scaled_hypot(g, re, im)
    infinite = g.op("Or", _is_inf(g, re), _is_inf(g, im))
    return g.op("Where", infinite, _k(g, math.inf, out), out)


def _scaled_hypot(g: GraphBuilder, re: Value, im: Value) -> Value:
    """hi * sqrt(1 + (lo / hi)^2) for hi, lo the larger and smaller of |re|, |im|."""
    a, b = g.op("Abs", re), g.op("Abs", im)
    bigger = g.op("Greater", b, a)
    hi, lo = g.op("Where", bigger, b, a), g.op("Where", bigger, a, b)
    q = g.op("Div", lo, hi)
    scaled = g.op("Mul", hi, g.op("Sqrt", g.op("Add", _k(g, 1.0, q), g.op("Mul", q, q))))
    # lo == hi (both zero or both infinite) makes q 0/0 or inf/inf; a NaN part stays NaN
    same = g.op("Not", g.op("Or", g.op("Less", lo, hi), g.op("IsNaN", lo)))
    return g.op("Where", same, g.op("Mul", hi, _k(g, math.sqrt(2.0), hi)), scaled)


def log_abs(g: GraphBuilder, re: Value, im: Value) -> Value:
    """log |re + i im|, float32 parts through float64 so tiny and huge parts keep their range."""
    if re.dtype != torch.float64:
        r, i = cast(g, re, torch.float64), cast(g, im, torch.float64)
        half_log = g.op("Mul", g.op("Log", g.op("Add", g.op("Mul", r, r), g.op("Mul", i, i))), _k(g, 0.5, r))
        return cast(g, half_log, re.dtype)
    return g.op("Log", hypot(g, re, im))


def sinh_cosh(g: GraphBuilder, x: Value) -> tuple[Value, Value]:
    """(sinh x, cosh x); onnxruntime has Sinh and Cosh for float only, so float64 goes through Exp."""
    if x.dtype != torch.float64:
        return g.op("Sinh", x), g.op("Cosh", x)
    up, down = g.op("Exp", x), g.op("Exp", g.op("Neg", x))
    half = _k(g, 0.5, x)
    return g.op("Mul", g.op("Sub", up, down), half), g.op("Mul", g.op("Add", up, down), half)


def complex_abs(g: GraphBuilder, x: Value, real: torch.dtype | None = None) -> Value:
    """|x| of a complex graph value, without the pair axis."""
    re, im = split(g, x, real)
    return _shaped(hypot(g, re, im), cx.logical_shape(x))


def complex_exp(g: GraphBuilder, z: Parts) -> Parts:
    re, im = z
    e = g.op("Exp", re)
    if im is None:
        return e, None
    return g.op("Mul", e, g.op("Cos", im)), g.op("Mul", e, g.op("Sin", im))


def complex_log(g: GraphBuilder, z: Parts) -> Parts:
    re, im = z
    if im is None:
        im = g.op("Mul", re, _k(g, 0.0, re))
        im = g.op("Where", g.op("IsNaN", im), im, _k(g, 0.0, re))
    return log_abs(g, re, im), atan2(g, im, re)


def complex_sqrt(g: GraphBuilder, z: Parts) -> Parts:
    """The principal square root, as C's csqrt: t = sqrt((|re| + |z|) / 2) goes to the real part
    when re >= 0, else to the imaginary part with the sign of im; float32 computes in float64."""
    re, im = z
    dtype = re.dtype
    re = cast(g, re, torch.float64)
    im = cast(g, im, torch.float64) if im is not None else g.op("Mul", re, _k(g, 0.0, re))
    half = _k(g, 0.5, re)  # halved before the sum, which could overflow float64
    t = g.op("Sqrt", g.op("Add", g.op("Mul", g.op("Abs", re), half), g.op("Mul", hypot(g, re, im), half)))
    other = g.op("Div", im, g.op("Add", t, t))
    other = g.op("Where", is_zero(g, t), im, other)  # sqrt(+-0 + i0) = +0 + i0
    right = g.op("Not", sign_bit(g, re))
    out_re = g.op("Where", right, t, g.op("Abs", other))
    out_im = g.op("Where", right, other, g.op("Where", sign_bit(g, im), g.op("Neg", t), t))
    infinite = _is_inf(g, im)  # sqrt(x +- i inf) = inf +- i inf, whatever x is
    out_re = g.op("Where", infinite, _k(g, math.inf, out_re), out_re)
    out_im = g.op("Where", infinite, im, out_im)
    return cast(g, out_re, dtype), cast(g, out_im, dtype)


def complex_pow(g: GraphBuilder, z: Parts, w: Parts) -> Parts:
    """z ** w = exp(w log z), as C's cpow; a zero base gives 0 where Re w > 0."""
    log = complex_log(g, z)
    out = complex_exp(g, cx.complex_mul(g, log, w))
    zr, zi = z
    zero = is_zero(g, zr) if zi is None else g.op("And", is_zero(g, zr), is_zero(g, zi))
    zero = g.op("And", zero, g.op("Greater", w[0], _k(g, 0.0, w[0])))
    re, im = out
    im = im if im is not None else g.op("Mul", re, _k(g, 0.0, re))
    return tuple(g.op("Where", zero, _k(g, 0.0, p), p) for p in (re, im))


def complex_int_pow(g: GraphBuilder, z: Parts, n: int) -> Parts:
    """z ** n for an integer n, by repeated squaring (negative n: the reciprocal)."""
    result, base, k = None, z, abs(n)
    while k:
        if k & 1:
            result = base if result is None else cx.complex_mul(g, result, base)
        k >>= 1
        if k:
            base = cx.complex_mul(g, base, base)
    if n < 0:
        result = complex_div(g, (_k(g, 1.0, z[0]), None), result)
    return result


def complex_tanh(g: GraphBuilder, z: Parts) -> Parts:
    """tanh(a + ib) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b), with |a| held at 20 (where tanh is
    1 to float64 precision) so cosh does not overflow."""
    a, b = z
    big = g.op("Greater", g.op("Abs", a), _k(g, 20.0, a))
    a = g.op("Where", big, g.op("Mul", g.op("Sign", a), _k(g, 20.0, a)), a)
    a2 = g.op("Add", a, a)
    re, denom = sinh_cosh(g, a2)
    if b is None:
        return g.op("Div", re, denom), None
    b2 = g.op("Add", b, b)
    denom = g.op("Add", denom, g.op("Cos", b2))
    return g.op("Div", re, denom), g.op("Div", g.op("Sin", b2), denom)


def _scaled(g: GraphBuilder, x, alpha, dtype: torch.dtype) -> Value:
    """alpha * x as a carrier of dtype."""
    alpha = complex(alpha)
    if not isinstance(x, Value):
        return carrier(g, complex(x) * alpha, dtype)
    return _mul_number(g, carrier(g, x, dtype), alpha)


def multilinear(g: GraphBuilder, fn, operands: list[Value], *, conj_first: bool = False) -> Value:
    """A product linear in each operand, on the real and imaginary parts: fn (a real symbolic of the
    parts) once per choice of part, each term adding to the real or imaginary part by i**k."""
    dtype = functools.reduce(torch.promote_types, [dtype_of(x) for x in operands])
    real = _dtypes.real_part(dtype)
    parts = [split(g, x, real) for x in operands]
    if conj_first and parts[0][1] is not None:
        parts[0] = (parts[0][0], g.op("Neg", parts[0][1]))
    choices = [(0,) if im is None else (0, 1) for _, im in parts]
    if math.prod(len(c) for c in choices) > 8:
        raise NotImplementedError("a product of more than three complex operands")
    re = im = None
    for pick in itertools.product(*choices):
        term = fn(*(p[i] for p, i in zip(parts, pick)))
        k = sum(pick) % 4
        if k % 2 == 0:
            re = cx.add(g, re, term) if k == 0 else cx.sub(g, re, term)
        else:
            im = cx.add(g, im, term) if k == 1 else cx.sub(g, im, term)
    return join(g, re, im)
