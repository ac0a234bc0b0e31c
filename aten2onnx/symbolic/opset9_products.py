"""Opset-9 base, products: matrix and vector products (MatMul, with bool and small ints computed in
int64), their scaled sums (addmv, addr, baddbmm, addbmm), kron, tensordot, trace, cross and bilinear;
and linear, addmm, mm and matmul, one Gemm or MatMul each."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (
    as_value,
    cast,
    dim_size,
    half_step,
    norm_dim,
    norm_dims,
    opmath,
    promote,
    reshape,
    result_type,
    slice_axis,
    sym_prod,
)
from aten2onnx.symbolic.opset9_views import aten_permute, aten_t, aten_transpose, static_dim
from aten2onnx.symbolic.opset9_shape import aten_diagonal

register = functools.partial(registry.register, opset=9)


# -- products --------------------------------------------------------------------------------------------


def matmul(g: GraphBuilder, a: Value, b: Value) -> Value:
    """MatMul; ONNX's takes no bool or small ints, which compute in int64 and cast back."""
    dtype = result_type(a, b)
    if dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64):
        a, b = promote(g, a, b, to=dtype)
        return g.op("MatMul", a, b)
    return cast(g, g.op("MatMul", *promote(g, a, b, to=torch.int64)), dtype)


def scaled_add(g: GraphBuilder, self: Value, product: Value, beta, alpha) -> Value:
    """beta * self + alpha * product, as addmm and friends; beta == 0 ignores self (even NaN)."""
    dtype = product.dtype
    if alpha != 1:
        product = g.op("Mul", product, as_value(g, alpha, dtype))
    if beta == 0:
        return _broadcast_like(g, product, self)
    s = cast(g, self, dtype)
    if beta != 1:
        s = g.op("Mul", s, as_value(g, beta, dtype))
    return g.op("Add", s, product)


def _broadcast_like(g: GraphBuilder, x: Value, other: Value) -> Value:
    """x broadcast with other's shape without reading other's values."""
    if x.shape is not None and other.shape is not None and len(other.shape) <= len(x.shape) and x.is_static and \
            other.is_static and all(o in (1, d) for o, d in zip(other.shape[::-1], x.shape[::-1])):
        return x
    return g.op("Expand", x, g.op("Shape", other))


@register("aten::dot.default")
def aten_dot(g, self, tensor):
    """dot(Tensor self, Tensor tensor) -> Tensor"""
    return matmul(g, self, tensor)


@register("aten::vdot.default", "aten::inner.default")
def aten_inner(g, self, other):
    """vdot(Tensor self, Tensor other) -> Tensor"""
    if self.rank == 0 or other.rank == 0:
        return g.op("Mul", *promote(g, self, other))
    if self.rank > 1 or other.rank > 1:
        return matmul(g, self, aten_transpose(g, other, -1, -2) if other.rank > 1 else other)
    return matmul(g, self, other)


@register("aten::mv.default")
def aten_mv(g, self, vec):
    """mv(Tensor self, Tensor vec) -> Tensor"""
    return matmul(g, self, vec)


@register("aten::outer.default")
def aten_outer(g, self, vec2):
    """outer(Tensor self, Tensor vec2) -> Tensor"""
    a, b = promote(g, self, vec2)
    return g.op("Mul", reshape(g, a, [-1, 1]), reshape(g, b, [1, -1]))


@register("aten::addmv.default")
def aten_addmv(g, self, mat, vec, *, beta=1, alpha=1):
    """addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return scaled_add(g, self, matmul(g, mat, vec), beta, alpha)


@register("aten::addr.default")
def aten_addr(g, self, vec1, vec2, *, beta=1, alpha=1):
    """addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return scaled_add(g, self, aten_outer(g, vec1, vec2), beta, alpha)


def opmath_scaled_matmul(g: GraphBuilder, self: Value, a: Value, b: Value, beta, alpha) -> Value:
    """beta * self + alpha * (a @ b) computed in float32 and rounded once, as ATen's CPU gemm does
    for float16 and bfloat16 (addmm_ of one batch, baddbmm)."""
    dtype = result_type(a, b)
    acc = opmath(dtype)
    product = matmul(g, cast(g, a, acc), cast(g, b, acc))
    return cast(g, scaled_add(g, cast(g, self, acc), product, beta, alpha), dtype)


@register("aten::baddbmm.default")
def aten_baddbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
    Half types in float32, rounded once (ATen's CPU kernel)."""
    if opmath(result_type(batch1, batch2)) != result_type(batch1, batch2):
        return opmath_scaled_matmul(g, self, batch1, batch2, beta, alpha)
    return scaled_add(g, self, matmul(g, batch1, batch2), beta, alpha)


@register("aten::addbmm.default")
def aten_addbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
    Half types as ATen's CPU kernel: one addmm_ per batch (beta on the first), each in float32
    and rounded to the dtype (a static batch count; else one product, rounded once)."""
    dtype = result_type(batch1, batch2)
    batches = batch1.shape[0] if batch1.shape is not None else None
    if opmath(dtype) != dtype and isinstance(batches, int) and batches > 0:
        out = self
        for i in range(batches):
            a, b = (reshape(g, slice_axis(g, x, 0, i, i + 1), list(x.shape[1:])) for x in (batch1, batch2))
            out = opmath_scaled_matmul(g, out, a, b, beta if i == 0 else 1, alpha)
        return out
    n, m = dim_size(g, batch1, 1), dim_size(g, batch2, 2)
    product = matmul(g, reshape(g, aten_permute(g, batch1, [1, 0, 2]), [n, -1]),
                     reshape(g, batch2, [-1, m]))
    return scaled_add(g, self, product, beta, alpha)


@register("aten::kron.default")
def aten_kron(g, self, other):
    """kron(Tensor self, Tensor other) -> Tensor"""
    a, b = promote(g, self, other)
    rank = max(a.rank, b.rank)
    a = reshape(g, a, [1] * (rank - a.rank) + list(a.shape)) if a.rank < rank else a
    b = reshape(g, b, [1] * (rank - b.rank) + list(b.shape)) if b.rank < rank else b
    if not (a.is_static and b.is_static):
        raise NotImplementedError("kron on dynamic shapes")
    sa = [d for s in a.shape for d in (s, 1)]
    sb = [d for s in b.shape for d in (1, s)]
    out = g.op("Mul", reshape(g, a, sa), reshape(g, b, sb))
    return reshape(g, out, [x * y for x, y in zip(a.shape, b.shape)])


@register("aten::tensordot.default")
def aten_tensordot(g, self, other, dims_self, dims_other):
    """tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor"""
    a, b = promote(g, self, other)
    ds, do = norm_dims(dims_self, a.rank), norm_dims(dims_other, b.rank)
    free_a = [d for d in range(a.rank) if d not in ds]
    free_b = [d for d in range(b.rank) if d not in do]
    if not (a.is_static and b.is_static):
        raise NotImplementedError("tensordot on dynamic shapes")
    k = math.prod(a.shape[d] for d in ds)
    at = reshape(g, aten_permute(g, a, free_a + ds) if free_a + ds != list(range(a.rank)) else a,
                 [math.prod(a.shape[d] for d in free_a), k])
    bt = reshape(g, aten_permute(g, b, do + free_b) if do + free_b != list(range(b.rank)) else b,
                 [k, math.prod(b.shape[d] for d in free_b)])
    return reshape(g, matmul(g, at, bt), [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])


@register("aten::trace.default")
def aten_trace(g, self):
    """trace(Tensor self) -> Tensor"""
    diag = aten_diagonal(g, self)
    x = cast(g, diag, torch.int64) if not diag.dtype.is_floating_point else diag
    return g.op("ReduceSum", x, keepdims=0)


@register("aten::linalg_vecdot.default")
def aten_linalg_vecdot(g, x, y, *, dim=-1):
    """linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor"""
    prod = g.op("Mul", *promote(g, x, y))
    rank = max(x.rank, y.rank)
    return _sum_axis(g, prod, norm_dim(dim, rank))


def _sum_axis(g: GraphBuilder, x: Value, axis: int) -> Value:
    """Sum over one axis by MatMul with ones (the same at every opset): move it last, multiply. A
    symbolic axis is a ReduceSum (the builder's emitter spells its axes)."""
    rank = x.rank
    if x.shape is not None and not isinstance(x.shape[axis], int):
        return g.reduce("ReduceSum", x, [axis], False)
    n = static_dim(x, axis, "sum")
    if axis != rank - 1:
        x = g.op("Transpose", x, perm=[d for d in range(rank) if d != axis] + [axis])
    return matmul(g, x, g.const(torch.ones(n, dtype=x.dtype)))


def cross(g: GraphBuilder, a: Value, b: Value, dim: int) -> Value:
    a, b = promote(g, a, b)
    rank = max(a.rank, b.rank)
    dim = norm_dim(dim, rank)

    def comp(x, i):
        return g.op("Gather", x, g.const([i], dtype=torch.int64), axis=dim - (rank - x.rank))

    a0, a1, a2 = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    c0 = g.op("Sub", g.op("Mul", a1, b2), g.op("Mul", a2, b1))
    c1 = g.op("Sub", g.op("Mul", a2, b0), g.op("Mul", a0, b2))
    c2 = g.op("Sub", g.op("Mul", a0, b1), g.op("Mul", a1, b0))
    return g.op("Concat", c0, c1, c2, axis=dim)


@register("aten::linalg_cross.default")
def aten_linalg_cross(g, self, other, *, dim=-1):
    """linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor"""
    return cross(g, self, other, dim)


@register("aten::cross.default")
def aten_cross(g, self, other, dim=None):
    """cross(Tensor self, Tensor other, int? dim=None) -> Tensor"""
    if dim is None:
        dim = next(i for i, s in enumerate(self.shape) if s == 3)
    return cross(g, self, other, dim)


@register("aten::bilinear.default")
def aten_bilinear(g, input1, input2, weight, bias=None):
    """bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor"""
    # y_k = x1 W_k x2^T + b_k: (x1 @ W) per k, then multiply by x2 and sum.
    # (sizes are ints where static, else read from the graph)
    out_features, in1, in2 = (dim_size(g, weight, d) for d in range(3))
    x1 = reshape(g, input1, [-1, in1])
    x2 = reshape(g, input2, [-1, in2])
    w = reshape(g, aten_permute(g, weight, [1, 0, 2]), [in1, sym_prod(g, [out_features, in2])])
    t = reshape(g, matmul(g, x1, w), [-1, out_features, in2])
    t.shape = (None, weight.shape[0], weight.shape[2])
    # the second contraction is eager's other bmm: half types multiply and sum in float32, rounded once
    dtype, acc = t.dtype, opmath(t.dtype)
    terms = g.op("Mul", cast(g, t, acc), cast(g, reshape(g, x2, [-1, 1, in2]), acc))
    terms.shape = terms.shape or t.shape
    y = half_step(g, _sum_axis(g, terms, 2), dtype)
    if bias is not None:
        y = g.op("Add", y, cast(g, bias, acc))
    y = cast(g, y, dtype)
    y.shape = (None, weight.shape[0])
    lead = [dim_size(g, input1, d) for d in range(input1.rank - 1)]
    return reshape(g, y, lead + [out_features])


# -- linear algebra ---------------------------------------------------------------------------------------------


@register("aten::linear.default")
def aten_linear(g, input, weight, bias=None):
    """linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"""
    if input.rank == 2 and bias is not None and weight.rank == 2:
        return g.gemm(input, weight, bias, trans_b=True)
    y = g.op("MatMul", input, aten_t(g, weight))
    return y if bias is None else g.op("Add", y, bias)


@register("aten::addmm.default")
def aten_addmm(g, self, mat1, mat2, *, beta=1, alpha=1):
    """addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return g.gemm(mat1, mat2, self, alpha=alpha, beta=beta)


@register("aten::mm.default", "aten::bmm.default")
def aten_mm(g, self, mat2):
    """mm(Tensor self, Tensor mat2) -> Tensor"""
    return g.op("MatMul", self, mat2)


@register("aten::matmul.default")
def aten_matmul(g, self, other):
    """matmul(Tensor self, Tensor other) -> Tensor"""
    return g.op("MatMul", self, other)
