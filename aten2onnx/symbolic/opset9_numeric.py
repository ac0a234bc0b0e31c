"""Opset-9 base, numeric utilities: bit shifts, gcd/lcm, trapezoid integration, gradients, renorm, frexp,
nextafter, margin losses and mode. Sums are MatMuls and selections Gather/ArgMax, which read the same at
every opset."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, dim_size, fill, loop, norm_dim, promote, reshape
from aten2onnx.symbolic.opset9_data import arange_of
from aten2onnx.symbolic.opset9_loss import one_hot_of, reduced
from aten2onnx.symbolic.opset9_norm import axis_sum, static_shape
from aten2onnx.symbolic.opset9_reduce import sum_dtype

register = functools.partial(registry.register, opset=9)

# ONNX arithmetic takes these only from opset 14: they run in int32 and wrap back.
NARROW_INTS = (torch.int8, torch.int16, torch.uint8)


def shaped(value: Value, shape) -> Value:
    """value, with the static shape the builder could not infer."""
    value.shape = tuple(shape)
    return value


def arith(g: GraphBuilder, op_type: str, a: Value, b: Value) -> Value:
    """a op b in a's dtype, wrapping on integer overflow as torch does."""
    if a.dtype in NARROW_INTS:
        wide = g.op(op_type, cast(g, a, torch.int32), cast(g, b, torch.int32))
        return cast(g, wide, a.dtype)
    return g.op(op_type, a, b)


def float_of(dtype: torch.dtype) -> torch.dtype:
    """The dtype float math on dtype gives: ints and bools go to the default float dtype."""
    return dtype if dtype.is_floating_point else torch.get_default_dtype()


def take(g: GraphBuilder, x: Value, axis: int, positions) -> Value:
    """x at the given positions along axis, by Gather of constant indices."""
    shape = static_shape(x, "this op")
    positions = list(positions)
    out = g.op("Gather", x, g.const(positions, dtype=torch.int64), axis=axis)
    shape[axis] = len(positions)
    return shaped(out, shape)


def to_last(g: GraphBuilder, x: Value, dim: int) -> tuple[Value, list[int]]:
    """x with dim moved last, and the permutation that did it (from_last undoes it)."""
    shape = static_shape(x, "this op")
    perm = [d for d in range(len(shape)) if d != dim] + [dim]
    if dim == len(shape) - 1:
        return x, perm
    return shaped(g.op("Transpose", x, perm=perm), [shape[d] for d in perm]), perm


def from_last(g: GraphBuilder, x: Value, perm: list[int]) -> Value:
    if perm == sorted(perm):
        return x
    shape = static_shape(x, "this op")
    back = [perm.index(d) for d in range(len(perm))]
    return shaped(g.op("Transpose", x, perm=back), [shape[d] for d in back])


def cumsum(g: GraphBuilder, x: Value, dim: int) -> Value:
    """Running sum along dim, by a MatMul with an upper-triangular matrix of ones."""
    moved, perm = to_last(g, x, dim)
    n = static_shape(moved, "cumsum")[-1]
    out = g.op("MatMul", moved, g.const(torch.ones(n, n, dtype=x.dtype).triu()))
    return from_last(g, shaped(out, moved.shape), perm)


def pick(g: GraphBuilder, rows: Value, index: Value) -> Value:
    """rows[r, index[r]] of a static [R, n] tensor, as [R, 1]: Gather on the flattened rows."""
    r, n = static_shape(rows, "this op")
    flat = g.op("Add", index, g.const([[i * n] for i in range(r)], dtype=torch.int64))
    return shaped(g.op("Gather", reshape(g, rows, [r * n]), flat, axis=0), (r, 1))


# -- bit shifts: ONNX BitShift is unsigned only; shifts are products and quotients of powers of two --------


def shift(g: GraphBuilder, self, other, *, left: bool) -> Value:
    a, b = promote(g, self, other)
    dtype = a.dtype
    if dtype == torch.bool or dtype.is_floating_point or dtype.is_complex or dtype == torch.uint64:
        raise NotImplementedError(f"bit shifts of {dtype} are not supported")
    bits = torch.iinfo(dtype).bits
    a, b = cast(g, a, torch.int64), cast(g, b, torch.int64)
    zero = g.const(0, dtype=torch.int64)
    # torch: a shift below 0 or of the bit width or more gives 0 (right shifts of signed values: the sign)
    outside = g.op("Or", g.op("Less", b, zero), g.op("Greater", b, g.const(bits - 1, dtype=torch.int64)))
    if left:
        powers = g.const(torch.tensor([1], dtype=torch.int64).repeat(bits) << torch.arange(bits))
        out = g.op("Mul", a, g.op("Gather", powers, g.op("Where", outside, zero, b), axis=0))
        return cast(g, g.op("Where", outside, zero, out), dtype)
    signed = dtype.is_signed
    amount = g.op("Where", outside, g.const(bits - 1 if signed else bits, dtype=torch.int64), b)
    top = min(bits, 62)  # 2**63 is no int64: a shift by 63 leaves only the sign
    capped = g.op("Where", g.op("Greater", amount, g.const(top, dtype=torch.int64)), g.const(top, dtype=torch.int64),
                  amount)
    powers = g.const(torch.tensor([1], dtype=torch.int64).repeat(top + 1) << torch.arange(top + 1))
    # ~a for negative a is -1 - a >= 0; a >> s == ~(~a >> s), and for non-negatives >> is division
    negative = g.op("Less", a, zero)
    magnitude = g.op("Where", negative, g.op("Sub", g.const(-1, dtype=torch.int64), a), a) if signed else a
    q = g.op("Div", magnitude, g.op("Gather", powers, capped, axis=0))
    if bits > top:
        q = g.op("Where", g.op("Greater", amount, g.const(top, dtype=torch.int64)), zero, q)
    if signed:
        q = g.op("Where", negative, g.op("Sub", g.const(-1, dtype=torch.int64), q), q)
    return cast(g, q, dtype)


@register("aten::bitwise_left_shift.Tensor", "aten::bitwise_left_shift.Tensor_Scalar",
          "aten::bitwise_left_shift.Scalar_Tensor", "aten::__lshift__.Tensor", "aten::__lshift__.Scalar")
def aten_bitwise_left_shift(g, self, other):
    """bitwise_left_shift.Tensor(Tensor self, Tensor other) -> Tensor"""
    return shift(g, self, other, left=True)


@register("aten::bitwise_right_shift.Tensor", "aten::bitwise_right_shift.Tensor_Scalar",
          "aten::bitwise_right_shift.Scalar_Tensor", "aten::__rshift__.Tensor", "aten::__rshift__.Scalar")
def aten_bitwise_right_shift(g, self, other):
    """bitwise_right_shift.Tensor(Tensor self, Tensor other) -> Tensor"""
    return shift(g, self, other, left=False)


# -- gcd and lcm: Euclid's algorithm in a Loop, until every remainder is 0 ------------------------------


def gcd(g: GraphBuilder, a: Value, b: Value) -> Value:
    """torch's calc_gcd in int64 on a and b of one integer dtype: absolute values taken in that dtype
    (so its minimum stays negative, as in torch), remainders truncated as C's %."""
    if a.dtype == torch.bool or a.dtype.is_floating_point or a.dtype.is_complex:
        raise NotImplementedError(f"gcd of {a.dtype} is not supported")
    x, y = (cast(g, g.op("Abs", v), torch.int64) for v in (a, b))
    zero, one = g.const(0, dtype=torch.int64), g.const(1, dtype=torch.int64)
    x, y = g.op("Add", x, g.op("Mul", y, zero)), g.op("Add", y, g.op("Mul", x, zero))  # broadcast both

    def step(body: GraphBuilder, i: Value, carried: list[Value]) -> list[Value]:
        x, y = carried
        live = body.op("Not", body.op("Equal", x, zero))
        divisor = body.op("Where", live, x, one)
        remainder = body.op("Sub", y, body.op("Mul", body.op("Div", y, divisor), divisor))
        new_x = body.op("Where", live, remainder, zero)
        new_y = body.op("Where", live, x, y)
        pending = body.op("ReduceSum", cast(body, body.op("Not", body.op("Equal", new_x, zero)), torch.int64),
                          keepdims=0)
        return [new_x, new_y, body.op("Greater", pending, zero)]

    return loop(g, None, [x, y], step, name="gcd", stop=True)[1]


@register("aten::gcd.default")
def aten_gcd(g, self, other):
    """gcd(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other)
    return cast(g, gcd(g, a, b), a.dtype)


@register("aten::lcm.default")
def aten_lcm(g, self, other):
    """lcm(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other)
    divisor = gcd(g, a, b)
    zero = g.const(0, dtype=torch.int64)
    none = g.op("Equal", divisor, zero)
    safe = g.op("Where", none, g.const(1, dtype=torch.int64), divisor)
    # torch: abs(a / g * b) in C++, where 8- and 16-bit values promote to int: those take the absolute
    # value before wrapping to the dtype, int32 and int64 wrap first
    product = g.op("Mul", g.op("Div", cast(g, a, torch.int64), safe), cast(g, b, torch.int64))
    if a.dtype in (torch.int32, torch.int64):
        product = cast(g, cast(g, product, a.dtype), torch.int64)
    out = g.op("Abs", product)
    return cast(g, g.op("Where", none, zero, out), a.dtype)


# -- trapezoid rule ---------------------------------------------------------------------------------------


def reduced_shape(shape: list[int], dim: int) -> list[int]:
    return shape[:dim] + shape[dim + 1:]


def spacing_as(g: GraphBuilder, x: Value, y: Value, dim: int) -> Value:
    """Sample points x laid out to broadcast against y: 1-D along dim, fewer dims padded in front."""
    xs = static_shape(x, "trapezoid")
    if x.rank == 1:
        view = [1] * y.rank
        view[dim] = xs[0]
        return reshape(g, x, view)
    if x.rank < y.rank:
        return reshape(g, x, [1] * (y.rank - x.rank) + xs)
    return x


def trapezoid_terms(g: GraphBuilder, y: Value, x: Value, dim: int) -> Value:
    """(x[i+1] - x[i]) * (y[i] + y[i+1]) / 2 along dim."""
    x = spacing_as(g, x, y, dim)
    n, m = static_shape(y, "trapezoid")[dim], static_shape(x, "trapezoid")[dim]
    dx = arith(g, "Sub", take(g, x, dim, range(1, m)), take(g, x, dim, range(m - 1)))
    pair = arith(g, "Add", take(g, y, dim, range(n - 1)), take(g, y, dim, range(1, n)))
    dx, pair = promote(g, dx, pair)
    terms = arith(g, "Mul", dx, pair)
    dtype = float_of(terms.dtype)
    return g.op("Div", cast(g, terms, dtype), g.const(2.0, dtype=dtype))


def trapezoid_x(g: GraphBuilder, y: Value, x: Value, dim: int) -> Value:
    dim = norm_dim(dim, y.rank)
    shape = static_shape(y, "trapezoid")
    if shape[dim] == 0:
        return fill(g, reduced_shape(shape, dim), 0, y.dtype)
    terms = trapezoid_terms(g, y, x, dim)
    if shape[dim] == 1:
        return fill(g, reduced_shape(list(terms.shape), dim), 0, terms.dtype)
    return axis_sum(g, terms, dim, keepdim=False)


def trapezoid_dx(g: GraphBuilder, y: Value, dx, dim: int) -> Value:
    """torch's form for a constant spacing: (sum(y) - (y[0] + y[-1]) / 2) * dx."""
    if isinstance(dx, complex):
        raise NotImplementedError("a complex spacing is not supported")
    dim = norm_dim(dim, y.rank)
    shape = static_shape(y, "trapezoid")
    n, rest = shape[dim], reduced_shape(shape, dim)
    if n == 0:
        return fill(g, rest, 0, y.dtype)
    dtype = float_of(y.dtype)
    total = cast(g, axis_sum(g, cast(g, y, sum_dtype(y, None)), dim, keepdim=False), dtype)
    ends = reshape(g, arith(g, "Add", take(g, y, dim, [0]), take(g, y, dim, [n - 1])), rest)
    half = g.op("Mul", cast(g, ends, dtype), g.const(0.5, dtype=dtype))
    return g.op("Mul", g.op("Sub", total, half), g.const(dx, dtype=dtype))


def cumulative_trapezoid_x(g: GraphBuilder, y: Value, x: Value, dim: int) -> Value:
    dim = norm_dim(dim, y.rank)
    terms = trapezoid_terms(g, y, x, dim)
    if static_shape(terms, "cumulative_trapezoid")[dim] == 0:
        return fill(g, list(terms.shape), 0, terms.dtype)
    return cumsum(g, terms, dim)


def cumulative_trapezoid_dx(g: GraphBuilder, y: Value, dx, dim: int) -> Value:
    """torch's form for a constant spacing: cumsum(dx / 2 * (y[i] + y[i+1]))."""
    if isinstance(dx, complex):
        raise NotImplementedError("a complex spacing is not supported")
    dim = norm_dim(dim, y.rank)
    n = static_shape(y, "cumulative_trapezoid")[dim]
    dtype = float_of(y.dtype)
    pair = arith(g, "Add", take(g, y, dim, range(n - 1)), take(g, y, dim, range(1, n)))
    terms = g.op("Mul", g.const(dx / 2.0, dtype=dtype), cast(g, pair, dtype))
    if max(n - 1, 0) == 0:
        return fill(g, list(pair.shape), 0, dtype)
    return cumsum(g, terms, dim)


@register("aten::trapezoid.x")
def aten_trapezoid_x(g, y, x, *, dim=-1):
    """trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor"""
    return trapezoid_x(g, y, x, dim)


@register("aten::trapezoid.dx")
def aten_trapezoid_dx(g, y, *, dx=1, dim=-1):
    """trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor"""
    return trapezoid_dx(g, y, dx, dim)


@register("aten::trapz.x")
def aten_trapz_x(g, y, x, *, dim=-1):
    """trapz.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor"""
    return trapezoid_x(g, y, x, dim)


@register("aten::trapz.dx")
def aten_trapz_dx(g, y, *, dx=1.0, dim=-1):
    """trapz.dx(Tensor y, *, float dx=1., int dim=-1) -> Tensor"""
    return trapezoid_dx(g, y, dx, dim)


@register("aten::cumulative_trapezoid.x")
def aten_cumulative_trapezoid_x(g, y, x, *, dim=-1):
    """cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor"""
    return cumulative_trapezoid_x(g, y, x, dim)


@register("aten::cumulative_trapezoid.dx")
def aten_cumulative_trapezoid_dx(g, y, *, dx=1, dim=-1):
    """cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor"""
    return cumulative_trapezoid_dx(g, y, dx, dim)


# -- gradient: central differences inside, one-sided of first or second order at the edges --------------


def scaled(g: GraphBuilder, factor: float, x: Value, dtype: torch.dtype) -> Value:
    """factor * x as torch computes it: an int factor multiplies in x's dtype (wrapping), a float one in dtype."""
    if isinstance(factor, int) and not x.dtype.is_floating_point:
        return cast(g, arith(g, "Mul", x, g.const(factor, dtype=x.dtype)), dtype)
    return g.op("Mul", g.const(float(factor), dtype=dtype), cast(g, x, dtype))


def combine(g: GraphBuilder, x: Value, dim: int, weights: list[tuple[float, int]], dtype: torch.dtype) -> Value:
    """sum of weight * x[position] along dim, left to right."""
    out = None
    for weight, position in weights:
        term = scaled(g, abs(weight), take(g, x, dim, [position]), dtype)
        if out is None:
            out = term if weight > 0 else g.op("Neg", term)
        else:
            out = g.op("Add" if weight > 0 else "Sub", out, term)
    return out


def gradient_uniform(g: GraphBuilder, self: Value, h, dim: int, edge_order: int) -> Value:
    n = static_shape(self, "gradient")[dim]
    dtype = float_of(self.dtype)
    spacing = g.const(h, dtype=dtype)

    def diff(hi: range, lo: range) -> Value:
        return cast(g, arith(g, "Sub", take(g, self, dim, hi), take(g, self, dim, lo)), dtype)

    center = g.op("Div", g.op("Div", diff(range(2, n), range(n - 2)), spacing), g.const(2.0, dtype=dtype))
    if edge_order == 1:
        first, last = diff(range(1, 2), range(1)), diff(range(n - 1, n), range(n - 2, n - 1))
    else:
        first = combine(g, self, dim, [(-1.5, 0), (2, 1), (-0.5, 2)], dtype)
        last = combine(g, self, dim, [(0.5, n - 3), (-2, n - 2), (1.5, n - 1)], dtype)
    pieces = [g.op("Div", first, spacing), center, g.op("Div", last, spacing)]
    return g.op("Concat", *(pieces if n > 2 else pieces[::2]), axis=dim)


def gradient_coordinates(g: GraphBuilder, self: Value, coordinates: Value, dim: int, edge_order: int) -> Value:
    n = static_shape(self, "gradient")[dim]
    if static_shape(coordinates, "gradient") != [n]:
        raise NotImplementedError("gradient takes 1-D coordinates, one per entry along dim")
    coefficient = float_of(coordinates.dtype)
    edge = self.dtype if self.dtype.is_floating_point else coefficient  # a 0-d coefficient times self
    center_dtype = torch.promote_types(coefficient, self.dtype) if self.dtype.is_floating_point else coefficient
    steps = arith(g, "Sub", take(g, coordinates, 0, range(1, n)), take(g, coordinates, 0, range(n - 1)))

    def step(i: int) -> Value:
        return reshape(g, take(g, steps, 0, [i % (n - 1)]), [])

    def ratio(num: Value, den: Value) -> Value:
        return g.op("Div", cast(g, num, coefficient), cast(g, den, coefficient))

    def add(a: Value, b: Value) -> Value:
        return arith(g, "Add", a, b)

    def mul(a: Value, b: Value) -> Value:
        return arith(g, "Mul", a, b)

    def neg(a: Value) -> Value:
        return arith(g, "Sub", g.const(0, dtype=a.dtype), a)

    dx1, dx2 = take(g, steps, 0, range(n - 2)), take(g, steps, 0, range(1, n - 1))
    view = [1] * self.rank
    view[dim] = n - 2
    a = reshape(g, ratio(neg(dx2), mul(dx1, add(dx1, dx2))), view)
    b = reshape(g, ratio(arith(g, "Sub", dx2, dx1), mul(dx1, dx2)), view)
    c = reshape(g, ratio(dx1, mul(dx2, add(dx1, dx2))), view)

    def weighted(w: Value, positions: range, dtype: torch.dtype) -> Value:
        return g.op("Mul", cast(g, w, dtype), cast(g, take(g, self, dim, positions), dtype))

    center = g.op("Add", g.op("Add", weighted(a, range(n - 2), center_dtype), weighted(b, range(1, n - 1), center_dtype)),
                  weighted(c, range(2, n), center_dtype))
    if edge_order == 1:
        def one_sided(hi: int, lo: int, i: int) -> Value:
            d = cast(g, arith(g, "Sub", take(g, self, dim, [hi]), take(g, self, dim, [lo])), edge)
            return g.op("Div", d, cast(g, step(i), edge))
        first, last = one_sided(1, 0, 0), one_sided(n - 1, n - 2, -1)
    else:
        h0, h1, hl, hm = step(0), step(1), step(-1), step(-2)
        two = g.const(2, dtype=coordinates.dtype)
        twice_h0 = g.op("Mul", g.const(2.0, dtype=coefficient), cast(g, h0, coefficient))
        a0 = g.op("Neg", ratio(g.op("Add", twice_h0, cast(g, h1, coefficient)), mul(h0, add(h0, h1))))
        b0 = ratio(add(h0, h1), mul(h0, h1))
        c0 = ratio(neg(h0), mul(h1, add(h0, h1)))
        first = g.op("Add", g.op("Add", weighted(a0, range(1), edge), weighted(b0, range(1, 2), edge)),
                     weighted(c0, range(2, 3), edge))
        a1 = ratio(hl, mul(hm, add(hl, hm)))
        b1 = ratio(neg(add(hl, hm)), mul(hl, hm))
        c1 = ratio(add(mul(two, hl), hm), mul(hl, add(hl, hm)))
        last = g.op("Add", g.op("Add", weighted(a1, range(n - 3, n - 2), edge), weighted(b1, range(n - 2, n - 1), edge)),
                    weighted(c1, range(n - 1, n), edge))
    out = torch.promote_types(center_dtype, edge)
    pieces = [cast(g, first, out), cast(g, center, out), cast(g, last, out)]
    return g.op("Concat", *(pieces if n > 2 else pieces[::2]), axis=dim)


def gradient(g: GraphBuilder, self: Value, spacing: list, dims: list[int], edge_order: int) -> list[Value]:
    if self.dtype.is_complex or self.dtype in (torch.bool, torch.uint8):
        raise NotImplementedError(f"gradient of {self.dtype} is not supported")
    if len(spacing) != len(dims):
        raise NotImplementedError(f"gradient takes one spacing per dim; got {len(spacing)} for {len(dims)} dims")
    shape = static_shape(self, "gradient")
    if edge_order not in (1, 2) or any(s < edge_order + 1 for s in shape):
        raise NotImplementedError("gradient needs edge_order 1 or 2 and each dim of size at least edge_order + 1")
    outs = []
    for h, dim in zip(spacing, dims):
        dim = norm_dim(dim, self.rank)
        if isinstance(h, Value):
            outs.append(gradient_coordinates(g, self, h, dim, edge_order))
        elif isinstance(h, complex):
            raise NotImplementedError("a complex spacing is not supported")
        else:
            outs.append(gradient_uniform(g, self, h, dim, edge_order))
    return outs


def all_dims(self: Value, dim) -> list[int]:
    return list(range(self.rank)) if dim is None else [dim]


@register("aten::gradient.scalarint")
def aten_gradient_scalarint(g, self, *, spacing=None, dim=None, edge_order=1):
    """gradient.scalarint(Tensor self, *, Scalar? spacing=None, int? dim=None, int edge_order=1) -> Tensor[]"""
    dims = all_dims(self, dim)
    return gradient(g, self, [1.0 if spacing is None else spacing] * len(dims), dims, edge_order)


@register("aten::gradient.scalararray")
def aten_gradient_scalararray(g, self, *, spacing, dim, edge_order=1):
    """gradient.scalararray(Tensor self, *, Scalar spacing, int[] dim, int edge_order=1) -> Tensor[]"""
    return gradient(g, self, [spacing] * len(dim), list(dim), edge_order)


@register("aten::gradient.array")
def aten_gradient_array(g, self, *, dim, edge_order=1):
    """gradient.array(Tensor self, *, int[] dim, int edge_order=1) -> Tensor[]"""
    return gradient(g, self, [1.0] * len(dim), list(dim), edge_order)


@register("aten::gradient.scalarrayint")
def aten_gradient_scalarrayint(g, self, *, spacing, dim=None, edge_order=1):
    """gradient.scalarrayint(Tensor self, *, Scalar[] spacing, int? dim=None, int edge_order=1) -> Tensor[]"""
    return gradient(g, self, list(spacing), all_dims(self, dim), edge_order)


@register("aten::gradient.scalarrayarray")
def aten_gradient_scalarrayarray(g, self, *, spacing, dim, edge_order=1):
    """gradient.scalarrayarray(Tensor self, *, Scalar[] spacing, int[] dim, int edge_order=1) -> Tensor[]"""
    return gradient(g, self, list(spacing), list(dim), edge_order)


@register("aten::gradient.tensorarrayint")
def aten_gradient_tensorarrayint(g, self, *, spacing, dim=None, edge_order=1):
    """gradient.tensorarrayint(Tensor self, *, Tensor[] spacing, int? dim=None, int edge_order=1) -> Tensor[]"""
    return gradient(g, self, list(spacing), all_dims(self, dim), edge_order)


@register("aten::gradient.tensorarray")
def aten_gradient_tensorarray(g, self, *, spacing, dim, edge_order=1):
    """gradient.tensorarray(Tensor self, *, Tensor[] spacing, int[] dim, int edge_order=1) -> Tensor[]"""
    return gradient(g, self, list(spacing), list(dim), edge_order)


# -- renorm -----------------------------------------------------------------------------------------------


def renorm(g: GraphBuilder, self: Value, p, dim: int, maxnorm) -> Value:
    """Each slice along dim scaled to p-norm maxnorm where its norm exceeds it (by maxnorm / (norm + 1e-7))."""
    if self.dtype.is_complex or not self.dtype.is_floating_point:
        raise NotImplementedError(f"renorm of {self.dtype} is not supported")
    if not p > 0:
        raise NotImplementedError("renorm needs a positive p")
    shape = static_shape(self, "renorm")
    dim = norm_dim(dim, len(shape))
    acc = torch.float32 if self.dtype in (torch.float16, torch.bfloat16) else self.dtype
    first = [dim] + [d for d in range(len(shape)) if d != dim]
    moved = shaped(g.op("Transpose", cast(g, self, acc), perm=first), [shape[d] for d in first])
    rows = reshape(g, moved, [shape[dim], math.prod(shape) // max(shape[dim], 1)])
    size = shaped(g.op("Abs", rows), rows.shape)
    if p == math.inf:
        norm = g.reduce("ReduceMax", size, [1], True)
        nan = axis_sum(g, shaped(cast(g, g.op("IsNaN", rows), acc), rows.shape), 1, keepdim=True)
        norm = g.op("Where", g.op("Greater", nan, g.const(0.0, dtype=acc)), g.const(math.nan, dtype=acc), norm)
    elif p == 1:
        norm = axis_sum(g, size, 1, keepdim=True)
    elif p == 2:
        norm = g.op("Sqrt", axis_sum(g, shaped(g.op("Mul", size, size), rows.shape), 1, keepdim=True))
    else:
        powered = shaped(g.op("Pow", size, g.const(float(p), dtype=acc)), rows.shape)
        norm = g.op("Pow", axis_sum(g, powered, 1, keepdim=True), g.const(1.0 / p, dtype=acc))
    limit = g.const(float(maxnorm), dtype=acc)
    factor = g.op("Where", g.op("Greater", norm, limit),
                  g.op("Div", limit, g.op("Add", norm, g.const(1e-7, dtype=acc))), g.const(1.0, dtype=acc))
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return g.op("Mul", self, cast(g, reshape(g, factor, view), self.dtype))


@register("aten::renorm.default")
def aten_renorm(g, self, p, dim, maxnorm):
    """renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor"""
    return renorm(g, self, p, dim, maxnorm)


# -- frexp and nextafter: exponents found from log2 and corrected by exact comparisons with powers of two ----


def exponent_of(g: GraphBuilder, magnitude: Value) -> tuple[Value, Value]:
    """For float64 magnitudes > 0: e and 2**e with 2**e <= magnitude < 2**(e+1)."""
    two = g.const(2.0, dtype=torch.float64)
    e = g.op("Floor", g.op("Div", g.op("Log", magnitude), g.const(math.log(2.0), dtype=torch.float64)))
    power = g.op("Pow", two, e)
    too_big = cast(g, g.op("Greater", power, magnitude), torch.float64)
    too_small = cast(g, g.op("Not", g.op("Greater", g.op("Mul", power, two), magnitude)), torch.float64)
    e = g.op("Add", g.op("Sub", e, too_big), too_small)
    return e, g.op("Pow", two, e)


def finite_nonzero(g: GraphBuilder, magnitude: Value) -> Value:
    """0 < magnitude <= float64 max (false for NaN)."""
    big = g.const(torch.finfo(torch.float64).max, dtype=torch.float64)
    return g.op("And", g.op("Greater", magnitude, g.const(0.0, dtype=torch.float64)),
                g.op("Not", g.op("Greater", magnitude, big)))


@register("aten::frexp.Tensor")
def aten_frexp(g, self):
    """frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)"""
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"frexp of {self.dtype} is not supported")
    x = cast(g, self, torch.float64)  # float32 and float16 values, subnormals too, are normal float64s
    magnitude = g.op("Abs", x)
    e, _ = exponent_of(g, magnitude)
    e = g.op("Add", e, g.const(1.0, dtype=torch.float64))  # mantissa in [0.5, 1)
    # 2**e in two halves: 2**1024 (and 2**-1074 at the other end) leaves float64
    two = g.const(2.0, dtype=torch.float64)
    half = g.op("Floor", g.op("Div", e, two))
    mantissa = g.op("Div", g.op("Div", x, g.op("Pow", two, half)), g.op("Pow", two, g.op("Sub", e, half)))
    normal = finite_nonzero(g, magnitude)
    mantissa = cast(g, g.op("Where", normal, mantissa, x), self.dtype)  # 0, inf and NaN come back as they are
    exponent = cast(g, g.op("Where", normal, e, g.const(0.0, dtype=torch.float64)), torch.int32)
    return mantissa, exponent


@register("aten::nextafter.default")
def aten_nextafter(g, self, other):
    """nextafter(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other)
    dtype = a.dtype
    if not dtype.is_floating_point:
        raise NotImplementedError(f"nextafter of {dtype} is not supported")
    info = torch.finfo(dtype)
    digits = 1 - round(math.log2(info.eps))  # significand bits, the implicit one included
    min_exponent = round(math.log2(info.tiny))
    x, y = cast(g, a, torch.float64), cast(g, b, torch.float64)  # exact for every dtype's values

    def c(value: float) -> Value:
        return g.const(value, dtype=torch.float64)

    magnitude = g.op("Abs", x)
    e, power = exponent_of(g, magnitude)
    e_eff = g.op("Max", e, c(float(min_exponent)))
    ulp = g.op("Pow", c(2.0), g.op("Sub", e_eff, c(float(digits - 1))))
    up, down = g.op("Greater", y, x), g.op("Less", y, x)
    zero = c(0.0)
    toward_zero = g.op("Or", g.op("And", g.op("Greater", x, zero), down), g.op("And", g.op("Less", x, zero), up))
    # below a power of two (of a normal number) the spacing halves
    at_power = g.op("And", g.op("Not", g.op("Greater", magnitude, power)), g.op("Greater", e, c(float(min_exponent))))
    ulp = g.op("Where", g.op("And", toward_zero, at_power), g.op("Mul", ulp, c(0.5)), ulp)
    out = g.op("Add", x, g.op("Where", up, ulp, g.op("Neg", ulp)))
    smallest = 2.0 ** (min_exponent - digits + 1)
    out = g.op("Where", g.op("Not", g.op("Greater", magnitude, zero)), g.op("Where", up, c(smallest), c(-smallest)), out)
    biggest = float(info.max)
    infinite = g.op("Greater", magnitude, c(torch.finfo(torch.float64).max))
    out = g.op("Where", infinite, g.op("Where", g.op("Greater", x, zero), c(biggest), c(-biggest)), out)
    moving = g.op("Or", up, down)
    out = g.op("Where", moving, out, y)
    # A zero result is signed as y when x == y, else as x (stepping from the smallest subnormal to 0):
    # 0 / (1 / y) and 0 / x carry those signs. It goes in Where's second branch, as onnxruntime's
    # Where drops the sign of a -0.0 it takes from the first.
    signed = g.op("Div", zero, g.op("Where", moving, x, g.op("Div", c(1.0), y)))
    nonzero = g.op("Or", g.op("Less", out, zero), g.op("Greater", out, zero))
    out = g.op("Where", nonzero, out, signed)
    out = g.op("Where", g.op("Or", g.op("IsNaN", x), g.op("IsNaN", y)), g.op("Add", x, y), out)
    return cast(g, out, dtype)


# -- margin losses ------------------------------------------------------------------------------------------


def as_rows(g: GraphBuilder, self: Value) -> Value:
    """[C] and 0-d inputs as one row [1, C]."""
    if self.rank == 2:
        return self
    return reshape(g, self, [1, 1 if self.rank == 0 else dim_size(g, self, 0)])


def positive(g: GraphBuilder, z: Value) -> Value:
    """z where z > 0, else 0: NaN counts as not positive, as in torch's `if (z > 0)`."""
    return g.op("Where", g.op("Greater", z, g.const(0.0, like=z)), z, g.const(0.0, like=z))


@register("aten::multi_margin_loss.default")
def aten_multi_margin_loss(g, self, target, p=1, margin=1, weight=None, reduction=1):
    """multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, Tensor? weight=None, int reduction=Mean) -> Tensor"""
    if p not in (1, 2):
        raise NotImplementedError("multi_margin_loss supports p = 1 or 2 only")
    x = as_rows(g, self)
    rows, classes = static_shape(x, "multi_margin_loss")
    labels = reshape(g, target, [rows])
    hot = shaped(one_hot_of(g, labels, classes), (rows, classes))
    zero = g.const(0.0, like=x)
    at_target = axis_sum(g, shaped(g.op("Where", hot, x, zero), (rows, classes)), 1, keepdim=True)
    z = g.op("Add", g.op("Sub", g.const(float(margin), like=x), at_target), x)
    h = positive(g, z)
    if p == 2:
        h = g.op("Mul", h, h)
    if weight is not None:
        h = g.op("Mul", h, reshape(g, g.op("Gather", cast(g, weight, x.dtype), labels, axis=0), [rows, 1]))
    total = axis_sum(g, shaped(g.op("Where", hot, zero, h), (rows, classes)), 1, keepdim=False)
    loss = reshape(g, g.op("Div", total, g.const(float(classes), like=x)), list(static_shape(target, "multi_margin_loss")))
    return reduced(g, loss, reduction)


@register("aten::multilabel_margin_loss.default")
def aten_multilabel_margin_loss(g, self, target, reduction=1):
    """multilabel_margin_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor"""
    x = as_rows(g, self)
    rows, classes = dim_size(g, x, 0), dim_size(g, x, 1)
    labels = cast(g, reshape(g, target, [rows, classes]), torch.int64)
    # a row's labels end at its first negative entry (torch's decomposition reads past it; the kernel does
    # not): position k is listed when no entry at or before it is negative. A class listed twice counts twice.
    positions = arange_of(g, classes, has_range=False)
    at_or_before = g.op("Not", g.op("Greater", reshape(g, positions, [1, -1]), reshape(g, positions, [-1, 1])))
    ended = cast(g, g.op("Less", labels, g.const(0, dtype=torch.int64)), torch.float32)
    seen = g.reduce("ReduceMax", g.op("Mul", reshape(g, ended, [rows, 1, classes]),
                                      cast(g, at_or_before, torch.float32)), [2], False)
    listed = g.op("Less", seen, g.const(0.5, dtype=torch.float32))
    hot = g.op("And", g.op("Equal", reshape(g, labels, [rows, classes, 1]), reshape(g, positions, [1, 1, -1])),
               reshape(g, listed, [rows, classes, 1]))
    count = cast(g, g.reduce("ReduceSum", cast(g, hot, torch.float32), [1], False), x.dtype)  # [rows, class]
    is_target = g.op("Greater", count, g.const(0.0, like=x))
    # z[r, j, k] = 1 - x[r, j] + x[r, k], for target classes j and the other classes k
    z = g.op("Add", g.op("Sub", g.const(1.0, like=x), reshape(g, x, [rows, classes, 1])),
             reshape(g, x, [rows, 1, classes]))
    h = g.op("Where", reshape(g, is_target, [rows, 1, classes]), g.const(0.0, like=x), positive(g, z))
    per_target = g.reduce("ReduceSum", h, [2], False)
    weighted = g.op("Where", is_target, g.op("Mul", per_target, count), g.const(0.0, like=x))
    total = g.reduce("ReduceSum", weighted, [1], False)
    count_of_classes = g.const(float(classes), like=x) if isinstance(classes, int) else cast(g, classes, x.dtype)
    loss = g.op("Div", total, count_of_classes)
    return reduced(g, loss if self.rank == 2 else reshape(g, loss, []), reduction)


# -- mode: counts of equal values by an all-pairs comparison -----------------------------------------------


def same(g: GraphBuilder, a: Value, b: Value) -> Value:
    """a == b for float32/float64/int64; NaN equals nothing."""
    return g.equal(a, b)


@register("aten::mode.default")
def aten_mode(g, self, dim=-1, keepdim=False):
    """mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    if self.rank == 0:
        return self, g.const(0, dtype=torch.int64)
    if not self.is_static:
        return mode_symbolic(g, self, norm_dim(dim, self.rank), keepdim)
    shape = static_shape(self, "mode")
    dim = norm_dim(dim, len(shape))
    moved, _ = to_last(g, self, dim)
    n = shape[dim]
    r = math.prod(shape) // max(n, 1)
    # comparisons and ArgMin/ArgMax run on float32, float64 or int64 (exact for every input dtype)
    key = moved if moved.dtype in (torch.float32, torch.float64, torch.int64) else \
        cast(g, moved, torch.float32 if moved.dtype.is_floating_point else torch.int64)
    x = reshape(g, key, [r, n])
    pairs = same(g, reshape(g, x, [r, n, 1]), reshape(g, x, [r, 1, n]))
    counts = axis_sum(g, shaped(cast(g, pairs, torch.float32), (r, n, n)), 2, keepdim=False)
    most = pick(g, counts, g.op("ArgMax", counts, axis=1, keepdims=1))
    # torch scans the sorted values: the smallest of the most frequent values, at the last index it holds
    fill_value = math.inf if x.dtype.is_floating_point else torch.iinfo(x.dtype).max
    candidates = shaped(g.op("Where", g.op("Less", counts, most), g.const(fill_value, dtype=x.dtype), x), (r, n))
    value = pick(g, candidates, g.op("ArgMin", candidates, axis=1, keepdims=1))
    positions = g.op("Where", same(g, x, value), g.const(list(range(n)), dtype=torch.int64),
                     g.const(-1, dtype=torch.int64))
    index = g.op("ArgMax", positions, axis=1, keepdims=1)
    out = [d for i, d in enumerate(shape) if i != dim] if not keepdim else [1 if i == dim else d for i, d in enumerate(shape)]
    return cast(g, reshape(g, value, out), self.dtype), reshape(g, index, out)


def mode_symbolic(g: GraphBuilder, self: Value, dim: int, keepdim: bool) -> tuple[Value, Value]:
    """aten_mode for symbolic sizes: the same all-pairs counts over rows of a length read from the graph;
    the largest count and the smallest most frequent value are ReduceMax and ReduceMin of the rows."""
    rank = self.rank
    perm = [d for d in range(rank) if d != dim] + [dim]
    moved = g.op("Transpose", self, perm=perm) if dim != rank - 1 else self
    n = dim_size(g, self, dim)
    key = moved if moved.dtype in (torch.float32, torch.float64, torch.int64) else \
        cast(g, moved, torch.float32 if moved.dtype.is_floating_point else torch.int64)
    x = shaped(reshape(g, key, [-1, n]), (None, None))
    pairs = same(g, reshape(g, x, [-1, n, 1]), reshape(g, x, [-1, 1, n]))
    counts = g.reduce("ReduceSum", cast(g, pairs, torch.float32), [2], False)
    most = g.reduce("ReduceMax", counts, [1], True)
    fill_value = math.inf if x.dtype.is_floating_point else torch.iinfo(x.dtype).max
    candidates = g.op("Where", g.op("Less", counts, most), g.const(fill_value, dtype=x.dtype), x)
    value = g.reduce("ReduceMin", candidates, [1], True)
    positions = g.op("Where", same(g, x, value), reshape(g, arange_of(g, n, has_range=False), [1, -1]),
                     g.const(-1, dtype=torch.int64))
    index = g.op("ArgMax", positions, axis=1, keepdims=1)
    out = [1 if i == dim else dim_size(g, self, i) for i in range(rank) if keepdim or i != dim]
    return cast(g, reshape(g, value, out), self.dtype), reshape(g, index, out)
