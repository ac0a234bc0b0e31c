"""Opset-9 base, elementwise extras: NaN-aware extremes, closeness and membership tests, a few special
functions with closed forms, and small composites (softmax backward, sum_to_size, vander)."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._helpers import (
    as_value,
    cast,
    dim_size,
    float_opmath,
    half_step,
    norm_dim,
    promote,
    result_type,
    scalar_type,
    to_float,
)
from aten2onnx.symbolic.opset9 import extremum
from aten2onnx.symbolic.opset9_math import float_result, is_zero
from aten2onnx.symbolic.opset9_reduce import vector_norm
from aten2onnx.symbolic.opset9_data import arange_of, int_mod
from aten2onnx.symbolic.opset9_shape import aten_roll

register = functools.partial(registry.register, opset=9)


# -- NaN-aware extremes -------------------------------------------------------------------------------


def nan_ignoring_extremum(g: GraphBuilder, op_type: str, a: Value, b: Value) -> Value:
    """fmax/fmin: a NaN operand yields the other one (NaN only where both are)."""
    a, b = promote(g, a, b)
    out = extremum(g, op_type, a, b)
    if not a.dtype.is_floating_point:
        return out
    return g.op("Where", g.op("IsNaN", a), b, g.op("Where", g.op("IsNaN", b), a, out))


@register("aten::fmax.default")
def aten_fmax(g, self, other):
    """fmax(Tensor self, Tensor other) -> Tensor"""
    return nan_ignoring_extremum(g, "Max", self, other)


@register("aten::fmin.default")
def aten_fmin(g, self, other):
    """fmin(Tensor self, Tensor other) -> Tensor"""
    return nan_ignoring_extremum(g, "Min", self, other)


@register("aten::max.other")
def aten_max_other(g, self, other):
    """max.other(Tensor self, Tensor other) -> Tensor"""
    return extremum(g, "Max", self, other)


@register("aten::min.other")
def aten_min_other(g, self, other):
    """min.other(Tensor self, Tensor other) -> Tensor"""
    return extremum(g, "Min", self, other)


# -- tests --------------------------------------------------------------------------------------------


@register("aten::isclose.default")
def aten_isclose(g, self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """isclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> Tensor"""
    dtype = result_type(self, other)
    a, b = promote(g, self, other, to=dtype if dtype.is_floating_point else torch.float64)
    # Equal values (infinities included) are close; otherwise |a - b| <= atol + rtol * |b|.
    close = g.equal(a, b)
    diff = g.op("Abs", g.op("Sub", a, b))
    bound = g.op("Add", g.const(atol, like=a), g.op("Mul", g.const(rtol, like=a), g.op("Abs", b)))
    close = g.op("Or", close, g.op("Not", g.op("Greater", diff, bound)))
    nan_diff = g.op("IsNaN", diff)  # NaN operands, or inf - inf of one sign: not close
    close = g.op("And", close, g.op("Not", g.op("And", nan_diff, g.op("Not", g.equal(a, b)))))
    if equal_nan:
        close = g.op("Or", close, g.op("And", g.op("IsNaN", a), g.op("IsNaN", b)))
    return close


@register("aten::isreal.default")
def aten_isreal(g, self):
    """isreal(Tensor self) -> Tensor"""
    return g.op("Expand", g.const(True), g.op("Shape", self))


@register("aten::angle.default")
def aten_angle(g, self):
    """angle(Tensor self) -> Tensor"""
    x = to_float(g, self)
    zero = g.const(0.0, like=x)
    out = g.op("Where", g.op("Less", x, zero), g.const(math.pi, like=x), g.op("Mul", x, zero))
    return g.op("Where", g.op("IsNaN", x), x, out)


def append_axis(g: GraphBuilder, x: Value) -> Value:
    """x with a trailing axis of size 1 (Unsqueeze: a Reshape to a shape read from x misreads a 0 there)."""
    if x.rank is None:
        return g.reshape_to_sizes(x, g.op("Concat", g.op("Shape", x), g.const([1], dtype=torch.int64), axis=0))
    return g.unsqueeze(x, [x.rank])


def isin(g: GraphBuilder, elements, test_elements, invert: bool) -> Value:
    """Each element compared with every test element (flattened along a new last axis)."""
    elements, test_elements = promote(g, elements, test_elements)
    flat = g.op("Reshape", test_elements, g.const([-1], dtype=torch.int64))
    expanded = append_axis(g, elements)
    hits = g.equal(expanded, flat)
    found = g.reduce("ReduceSum", cast(g, hits, torch.int32), [elements.rank], False)
    found = g.op("Greater", found, g.const(0, dtype=torch.int32))
    return g.op("Not", found) if invert else found


@register("aten::isin.Tensor_Tensor")
def aten_isin(g, elements, test_elements, *, assume_unique=False, invert=False):
    """isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor"""
    return isin(g, elements, test_elements, invert)


# -- special functions with closed forms ------------------------------------------------------------


@register("aten::special_entr.default")
def aten_special_entr(g, self):
    """special_entr(Tensor self) -> Tensor"""
    x = to_float(g, self)
    zero = g.const(0.0, like=x)
    out = g.op("Neg", g.op("Mul", x, g.op("Log", g.op("Where", g.op("Greater", x, zero), x, g.const(1.0, like=x)))))
    out = g.op("Where", g.op("Less", x, zero), g.const(-math.inf, like=x), out)
    return g.op("Where", g.op("IsNaN", x), x, out)


@register("aten::special_xlog1py.default", "aten::special_xlog1py.self_scalar", "aten::special_xlog1py.other_scalar")
def aten_special_xlog1py(g, self, other):
    """special_xlog1py(Tensor self, Tensor other) -> Tensor"""
    x, y = promote(g, self, other, to=float_result(self, other))
    out = g.op("Mul", x, g.op("Log", g.op("Add", y, g.const(1.0, like=y))))
    out = g.op("Where", is_zero(g, x), g.const(0.0, like=x), out)
    return g.op("Where", g.op("IsNaN", y), y, out)


@register("aten::special_ndtr.default")
def aten_special_ndtr(g, self):
    """special_ndtr(Tensor self) -> Tensor (half types rounded after each step, as ATen's kernel)"""
    dtype = to_float(g, self).dtype
    x = float_opmath(g, self)

    def step(v: Value) -> Value:
        return half_step(g, v, dtype)

    erf = step(g.op("Erf", step(g.op("Mul", x, g.const(1 / math.sqrt(2), like=x)))))
    return cast(g, g.op("Mul", step(g.op("Add", g.const(1.0, like=x), erf)), g.const(0.5, like=x)), dtype)


@register("aten::special_spherical_bessel_j0.default")
def aten_special_spherical_bessel_j0(g, x):
    """special_spherical_bessel_j0(Tensor x) -> Tensor"""
    x = to_float(g, x)
    small = g.op("Less", g.op("Abs", x), g.const(1e-4, like=x))
    safe = g.op("Where", small, g.const(1.0, like=x), x)
    series = g.op("Sub", g.const(1.0, like=x), g.op("Div", g.op("Mul", x, x), g.const(6.0, like=x)))
    return g.op("Where", small, series, g.op("Div", g.op("Sin", safe), safe))


@register("aten::ldexp.Tensor")
def aten_ldexp(g, self, other):
    """ldexp.Tensor(Tensor self, Tensor other) -> Tensor"""
    x, e = promote(g, self, other, to=float_result(self, other))
    return g.op("Mul", x, g.op("Pow", g.const(2.0, like=e), e))


# -- small composites ---------------------------------------------------------------------------------


def fft_shift(g: GraphBuilder, x: Value, dim, sign: int, roll=aten_roll) -> Value:
    """fftshift (sign 1) or ifftshift (-1) of a real tensor or a complex carrier (its logical dims):
    a roll by half of each dim (by roll, the handler of aten::roll that the caller dispatched). A dim
    known only at run time is rolled by a Gather of the positions (i + first) % n, first = ceil(n / 2)
    (fftshift) or floor(n / 2) (ifftshift), computed in the graph."""
    rank = cx.logical_rank(x)
    dims = list(range(rank)) if dim is None else [norm_dim(d, rank) for d in dim]
    if x.is_static:
        return roll(g, x, [sign * (x.shape[d] // 2) for d in dims], dims)
    i64 = torch.int64
    for d in dims:
        n = as_value(g, dim_size(g, x, d), i64)
        first = g.op("Div", g.op("Add", n, g.const(1, dtype=i64)) if sign == 1 else n, g.const(2, dtype=i64))
        positions = g.op("Add", arange_of(g, n, has_range=False), first)
        x = g.op("Gather", x, int_mod(g, positions, n), axis=d)
    return x


@register("aten::fft_fftshift.default")
def aten_fft_fftshift(g, self, dim=None):
    """fft_fftshift(Tensor self, int[1]? dim=None) -> Tensor"""
    return fft_shift(g, self, dim, 1)


@register("aten::fft_ifftshift.default")
def aten_fft_ifftshift(g, self, dim=None):
    """fft_ifftshift(Tensor self, int[1]? dim=None) -> Tensor"""
    return fft_shift(g, self, dim, -1)


def sum_to_size(g: GraphBuilder, x: Value, size: list[int]) -> Value:
    if x.shape is None:
        raise NotImplementedError("sum_to_size needs the input's rank")
    lead = x.rank - len(size)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and x.shape[lead + i] != 1]
    if not axes:
        return x
    out = g.reduce("ReduceSum", x, axes, True)
    return g.op("Reshape", out, g.int_list(list(size))) if lead else out


@register("aten::sum_to_size.default")
def aten_sum_to_size(g, self, size):
    """sum_to_size(Tensor self, SymInt[] size) -> Tensor"""
    return sum_to_size(g, self, list(size))


def softmax_backward(g: GraphBuilder, grad_output: Value, output: Value, dim: int, input_dtype) -> Value:
    grad, out = promote(g, grad_output, output)
    dot = g.reduce("ReduceSum", g.op("Mul", grad, out), [norm_dim(dim, out.rank)], True)
    return cast(g, g.op("Mul", out, g.op("Sub", grad, dot)), grad_output.dtype)


@register("aten::_softmax_backward_data.default")
def aten__softmax_backward_data(g, grad_output, output, dim, input_dtype):
    """_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor"""
    return softmax_backward(g, grad_output, output, dim, input_dtype)


def safe_softmax(g: GraphBuilder, x: Value, dim: int, dtype) -> Value:
    """Softmax whose rows of only -inf give zeros instead of NaN."""
    dtype = scalar_type(dtype)
    x = x if dtype is None else cast(g, x, dtype)
    out = g.softmax("Softmax", x, norm_dim(dim, x.rank))
    neg_inf = g.equal(x, g.const(-math.inf, like=x))
    live = g.reduce("ReduceSum", cast(g, g.op("Not", neg_inf), torch.int32), [norm_dim(dim, x.rank)], True)
    dead = g.op("Not", g.op("Greater", live, g.const(0, dtype=torch.int32)))
    return g.op("Where", dead, g.const(0, like=out), out)


@register("aten::_safe_softmax.default")
def aten__safe_softmax(g, self, dim, dtype=None):
    """_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    return safe_softmax(g, self, dim, dtype)


@register("aten::linalg_multi_dot.default")
def aten_linalg_multi_dot(g, tensors):
    """linalg_multi_dot(Tensor[] tensors) -> Tensor"""
    out = tensors[0]
    for t in tensors[1:]:
        out = g.op("MatMul", out, t)
    return out


@register("aten::linalg_vander.default")
def aten_linalg_vander(g, x, *, N=None):
    """linalg_vander(Tensor x, *, SymInt? N=None) -> Tensor"""
    n = N if N is not None else (x.shape[-1] if x.rank else 1)
    if not isinstance(n, int):
        raise NotImplementedError("linalg.vander needs a static number of columns")
    x = x if x.dtype.is_floating_point else cast(g, x, torch.int64)  # eager widens integer powers to int64
    x = g.op("Reshape", x, g.const([1], dtype=torch.int64)) if x.rank == 0 else x
    col = append_axis(g, x)
    # Successive products keep integer powers exact (Pow takes floats only before opset 12).
    cols, power = [g.op("Expand", g.const(1, like=col), g.op("Shape", col))], col
    for _ in range(1, n):
        cols.append(power)
        power = g.op("Mul", power, col)
    return g.op("Concat", *cols, axis=-1)


# -- distances ----------------------------------------------------------------------------------------


def dist(g: GraphBuilder, a: Value, b: Value, p) -> Value:
    a, b = promote(g, a, b, to=float_result(a, b))
    return vector_norm(g, g.op("Sub", a, b), p, None, False, None)


@register("aten::dist.default")
def aten_dist(g, self, other, p=2):
    """dist(Tensor self, Tensor other, Scalar p=2) -> Tensor"""
    return dist(g, self, other, p)


def cdist(g: GraphBuilder, x1: Value, x2: Value, p: float) -> Value:
    """Pairwise p-norms of the rows of x1 [..., P, M] and x2 [..., R, M], by broadcasting to [..., P, R, M]."""
    x1, x2 = promote(g, x1, x2)
    a = g.unsqueeze(x1, [x1.rank - 1])
    b = g.unsqueeze(x2, [x2.rank - 2])
    return vector_norm(g, g.op("Sub", a, b), p, [max(x1.rank, x2.rank)], False, None)


@register("aten::cdist.default")
def aten_cdist(g, x1, x2, p=2.0, compute_mode=None):
    """cdist(Tensor x1, Tensor x2, float p=2., int? compute_mode=None) -> Tensor"""
    return cdist(g, x1, x2, p)


@register("aten::_cdist_forward.default")
def aten__cdist_forward(g, x1, x2, p, compute_mode):
    """_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor"""
    return cdist(g, x1, x2, p)


def pdist(g: GraphBuilder, x: Value, p: float) -> Value:
    """p-norms of the row pairs i < j of x [N, M], rows picked by constant Gather indices."""
    if x.shape is None or not isinstance(x.shape[0], int):
        raise NotImplementedError("pdist needs a static number of rows")
    i, j = torch.triu_indices(x.shape[0], x.shape[0], 1)
    a = g.op("Gather", x, g.const(i, dtype=torch.int64), axis=0)
    b = g.op("Gather", x, g.const(j, dtype=torch.int64), axis=0)
    return vector_norm(g, g.op("Sub", a, b), p, [1], False, None)


@register("aten::pdist.default", "aten::_pdist_forward.default")
def aten_pdist(g, self, p=2.0):
    """pdist(Tensor self, float p=2.) -> Tensor"""
    return pdist(g, self, p)


# -- data-dependent shapes: NonZero and Compress --------------------------------------------------------


@register("aten::nonzero.default", "aten::argwhere.default")
def aten_nonzero(g, self):
    """nonzero(Tensor self) -> Tensor"""
    if self.rank == 0:  # eager gives [n, 0]: n hits, no coordinates
        coords = g.op("Transpose", g.op("NonZero", g.op("Reshape", self, g.const([1], dtype=torch.int64))), perm=[1, 0])
        return g.op("Gather", coords, g.const(torch.zeros(0, dtype=torch.int64)), axis=1)
    return g.op("Transpose", g.op("NonZero", self), perm=[1, 0])


@register("aten::nonzero_numpy.default")
def aten_nonzero_numpy(g, self):
    """nonzero_numpy(Tensor self) -> Tensor[]"""
    x = g.op("Reshape", self, g.const([1], dtype=torch.int64)) if self.rank == 0 else self  # eager reads 0-d as [1]
    coords = g.op("NonZero", x)
    return [g.op("Gather", coords, g.const(i, dtype=torch.int64), axis=0) for i in range(max(self.rank, 1))]


@register("aten::where.default")
def aten_where(g, condition):
    """where(Tensor condition) -> Tensor[]"""
    return aten_nonzero_numpy(g, condition)


@register("aten::masked_select.default")
def aten_masked_select(g, self, mask):
    """masked_select(Tensor self, Tensor mask) -> Tensor"""
    mask = cast(g, mask, torch.bool)
    x = g.op("Where", mask, self, self)  # broadcast self to the common shape
    mask = g.op("Expand", mask, g.op("Shape", x))
    flat = g.const([-1], dtype=torch.int64)
    return g.op("Compress", g.op("Reshape", x, flat), g.op("Reshape", mask, flat), axis=0)
