"""Opset-9 base, linear algebra from singular values and eigenvalues: symmetric eigenvalues and singular
values by cyclic Jacobi (_linalg_spectral), the matrix norms and condition numbers, matrix rank and the
pseudo-inverse; the factorizations and solves are in opset9_linalg."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, fill, norm_dims, reshape, scalar_type
from aten2onnx.symbolic._linalg import I64, is_empty, matrix_shape, shape_only, size_min, size_sub, sizes
from aten2onnx.symbolic._linalg_spectral import cutoff, eigvalsh, ones, pinv, svdvals
from aten2onnx.symbolic.opset9_linalg import aten_linalg_inv_ex
from aten2onnx.symbolic.opset9_reduce import vector_norm

register = functools.partial(registry.register, opset=9)


# -- Jacobi: symmetric eigenvalues and singular values ---------------------------------------------------------


@register("aten::linalg_eigvalsh.default")
def aten_linalg_eigvalsh(g, self, UPLO="L"):
    """linalg_eigvalsh(Tensor self, str UPLO="L") -> Tensor"""
    if UPLO not in ("L", "U"):
        raise NotImplementedError(f"linalg_eigvalsh: UPLO {UPLO!r}")
    folded = shape_only(g, torch.ops.aten.linalg_eigvalsh.default, (self, UPLO))
    if folded is not None:
        return folded[0]
    return eigvalsh(g, self, UPLO == "U", "linalg_eigvalsh")


@register("aten::linalg_svdvals.default")
def aten_linalg_svdvals(g, A, *, driver=None):
    """linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_svdvals.default, (A,))
    if folded is not None:
        return folded[0]
    return svdvals(g, A, "linalg_svdvals")


# -- matrix norms and condition numbers ------------------------------------------------------------------------


def singular_value_norm(g: GraphBuilder, A: Value, ord, dim: list[int], keepdim: bool, dtype) -> Value:
    """The 2-norm (largest singular value), its -2 counterpart (smallest) or the nuclear norm (sum) over
    two dims of A, as eager: those dims moved last, svdvals, then amax / amin / sum."""
    x = cast(g, A, scalar_type(dtype)) if dtype is not None else A
    shape = matrix_shape(g, x, "linalg_matrix_norm")
    rank = len(shape)
    d0, d1 = norm_dims(dim, rank)
    perm = [d for d in range(rank) if d not in (d0, d1)] + [d0, d1]
    if perm != list(range(rank)):
        dims = x.shape
        x = g.op("Transpose", x, perm=perm)
        x.shape = tuple(dims[d] for d in perm)
    batch, k = [shape[d] for d in perm[:-2]], size_min(g, shape[d0], shape[d1])
    out_shape = [1 if d in (d0, d1) else s for d, s in enumerate(shape)] if keepdim else batch
    if is_empty([k] + batch):
        return fill(g, out_shape, 0, x.dtype)  # eager's empty sum; amax / amin of nothing raise there
    values = aten_linalg_svdvals(g, x)
    if ord == "nuc":
        result = g.op("MatMul", values, ones(g, k, 1, x.dtype))
    else:
        result = g.op("Gather", values, g.int_list([0 if ord > 0 else size_sub(g, k, 1)]), axis=len(batch))
    return reshape(g, result, out_shape)


def cond(g: GraphBuilder, self: Value, p) -> Value:
    """linalg.cond: sigma_max / sigma_min for p = None or +-2, else norm(A) norm(A^-1) with a singular A's
    inverse taken as infinite and a NaN product as infinity."""
    if p is None or p in (2, -2):
        folded = shape_only(g, torch.ops.aten.linalg_cond.default, (self, p))
        if folded is not None:
            return folded[0]
        shape = matrix_shape(g, self, "linalg_cond")
        batch, k = shape[:-2], size_min(g, shape[-2], shape[-1])
        values = aten_linalg_svdvals(g, self)
        first = g.op("Gather", values, g.const([0], dtype=I64), axis=len(batch))
        last = g.op("Gather", values, g.int_list([size_sub(g, k, 1)]), axis=len(batch))
        ratio = g.op("Div", last, first) if p == -2 else g.op("Div", first, last)
        return reshape(g, ratio, batch)
    folded = shape_only(g, torch.ops.aten.linalg_cond.p_str if isinstance(p, str) else torch.ops.aten.linalg_cond.default,
                        (self, p))
    if folded is not None:
        return folded[0]
    inverse_, info = aten_linalg_inv_ex(g, self)
    singular = g.op("Greater", reshape(g, info, sizes(g, self)[:-2] + [1, 1]), g.const(0, dtype=torch.int32))
    inverse_ = g.op("Where", singular, g.const(math.inf, dtype=self.dtype), inverse_)
    product = g.op("Mul", matrix_norm(g, self, p, [-2, -1], False, None),
                   matrix_norm(g, inverse_, p, [-2, -1], False, None))
    return g.op("Where", g.op("IsNaN", product), g.const(math.inf, dtype=product.dtype), product)


@register("aten::linalg_matrix_norm.default")
def aten_linalg_matrix_norm(g, self, ord, dim=[-2, -1], keepdim=False, *, dtype=None):
    """linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return matrix_norm(g, self, ord, dim, keepdim, dtype)


@register("aten::linalg_matrix_norm.str_ord")
def aten_linalg_matrix_norm_str_ord(g, self, ord="fro", dim=[-2, -1], keepdim=False, *, dtype=None):
    """linalg_matrix_norm.str_ord(Tensor self, str ord="fro", int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return matrix_norm(g, self, ord, dim, keepdim, dtype)


@register("aten::linalg_norm.default")
def aten_linalg_norm(g, self, ord=None, dim=None, keepdim=False, *, dtype=None):
    """linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return linalg_norm(g, self, ord, dim, keepdim, dtype)


@register("aten::linalg_norm.ord_str")
def aten_linalg_norm_ord_str(g, self, ord, dim=None, keepdim=False, *, dtype=None):
    """linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return linalg_norm(g, self, ord, dim, keepdim, dtype)


@register("aten::nuclear_norm.default")
def aten_nuclear_norm(g, self, keepdim=False):
    """nuclear_norm(Tensor self, bool keepdim=False) -> Tensor"""
    return singular_value_norm(g, self, "nuc", [0, 1], keepdim, None)


@register("aten::nuclear_norm.dim")
def aten_nuclear_norm_dim(g, self, dim, keepdim=False):
    """nuclear_norm.dim(Tensor self, int[2] dim, bool keepdim=False) -> Tensor"""
    return singular_value_norm(g, self, "nuc", dim, keepdim, None)


@register("aten::linalg_cond.default")
def aten_linalg_cond(g, self, p=None):
    """linalg_cond(Tensor self, Scalar? p=None) -> Tensor"""
    return cond(g, self, p)


@register("aten::linalg_cond.p_str")
def aten_linalg_cond_p_str(g, self, p):
    """linalg_cond.p_str(Tensor self, str p) -> Tensor"""
    return cond(g, self, p)


# -- matrix rank -------------------------------------------------------------------------------------------


def matrix_rank(g: GraphBuilder, A: Value, atol, rtol, hermitian: bool, what: str) -> Value:
    """The number of singular values (absolute eigenvalues when `hermitian`) above
    max(atol, rtol * the largest); atol defaults to 0 and rtol to eps * max(m, n), or 0 where atol > 0.
    atol and rtol are floats, None or tensors broadcasting with the batch."""
    shape = matrix_shape(g, A, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    if is_empty(shape):
        return fill(g, batch, 0, I64)
    if hermitian:
        values = g.op("Abs", eigvalsh(g, A, False, what))
        k = n
        top = g.op("Max", g.op("Gather", values, g.const([0], dtype=I64), axis=len(batch)),
                   g.op("Gather", values, g.int_list([size_sub(g, k, 1)]), axis=len(batch)))
    else:
        values, k = aten_linalg_svdvals(g, A), size_min(g, m, n)
        top = g.op("Gather", values, g.const([0], dtype=I64), axis=len(batch))
    bound = cutoff(g, atol, rtol, top, m, n)
    above = cast(g, g.op("Greater", values, bound), A.dtype)
    count = g.op("MatMul", above, ones(g, k, 1, A.dtype))
    return cast(g, reshape(g, count, batch), I64) if batch else cast(g, reshape(g, count, []), I64)


@register("aten::linalg_matrix_rank.atol_rtol_tensor")
def aten_linalg_matrix_rank_atol_rtol_tensor(g, input, *, atol=None, rtol=None, hermitian=False):
    """linalg_matrix_rank.atol_rtol_tensor(Tensor input, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor"""
    return matrix_rank(g, input, atol, rtol, hermitian, "linalg_matrix_rank")


@register("aten::linalg_matrix_rank.atol_rtol_float")
def aten_linalg_matrix_rank_atol_rtol_float(g, self, *, atol=None, rtol=None, hermitian=False):
    """linalg_matrix_rank.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor"""
    return matrix_rank(g, self, atol, rtol, hermitian, "linalg_matrix_rank")


@register("aten::linalg_matrix_rank.default")
def aten_linalg_matrix_rank(g, self, tol, hermitian=False):
    """linalg_matrix_rank(Tensor self, float tol, bool hermitian=False) -> Tensor"""
    return matrix_rank(g, self, tol, 0.0, hermitian, "linalg_matrix_rank")


@register("aten::linalg_matrix_rank.tol_tensor")
def aten_linalg_matrix_rank_tol_tensor(g, input, tol, hermitian=False):
    """linalg_matrix_rank.tol_tensor(Tensor input, Tensor tol, bool hermitian=False) -> Tensor"""
    return matrix_rank(g, input, tol, 0.0, hermitian, "linalg_matrix_rank")


# -- pseudo-inverse ---------------------------------------------------------------------------------------------


@register("aten::linalg_pinv.atol_rtol_tensor")
def aten_linalg_pinv_atol_rtol_tensor(g, self, *, atol=None, rtol=None, hermitian=False):
    """linalg_pinv.atol_rtol_tensor(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor"""
    return pinv(g, self, atol, rtol, hermitian, "linalg_pinv")


@register("aten::linalg_pinv.atol_rtol_float")
def aten_linalg_pinv_atol_rtol_float(g, self, *, atol=None, rtol=None, hermitian=False):
    """linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor"""
    return pinv(g, self, atol, rtol, hermitian, "linalg_pinv")


@register("aten::linalg_pinv.default")
def aten_linalg_pinv(g, self, rcond, hermitian=False):
    """linalg_pinv(Tensor self, float rcond, bool hermitian=False) -> Tensor"""
    return pinv(g, self, 0.0, rcond, hermitian, "linalg_pinv")


@register("aten::linalg_pinv.rcond_tensor")
def aten_linalg_pinv_rcond_tensor(g, self, rcond, hermitian=False):
    """linalg_pinv.rcond_tensor(Tensor self, Tensor rcond, bool hermitian=False) -> Tensor"""
    return pinv(g, self, 0.0, rcond, hermitian, "linalg_pinv")


@register("aten::pinverse.default")
def aten_pinverse(g, self, rcond=1e-15):
    """pinverse(Tensor self, float rcond=1.0000000000000001e-15) -> Tensor"""
    return pinv(g, self, 0.0, rcond, False, "pinverse")


def matrix_norm(g: GraphBuilder, A: Value, ord, dim: list[int], keepdim: bool, dtype) -> Value:
    """linalg.matrix_norm: 'fro' and the +-1 / +-inf norms by reductions, +-2 and 'nuc' from singular values."""
    if ord == "fro":
        return vector_norm(g, A, 2, dim, keepdim, dtype)
    if ord == "nuc" or ord in (2, -2):
        return singular_value_norm(g, A, ord, dim, keepdim, dtype)
    if not isinstance(ord, (int, float)) or abs(ord) not in (1, math.inf):
        raise NotImplementedError(f"linalg_matrix_norm: order {ord!r}")
    d0, d1 = norm_dims(dim, A.rank)
    if A.is_static and 0 in (A.shape[d0], A.shape[d1]):  # eager's norm of an empty matrix is 0
        shape = [1 if d in (d0, d1) else s for d, s in enumerate(A.shape)] if keepdim else \
            [s for d, s in enumerate(A.shape) if d not in (d0, d1)]
        return fill(g, shape, 0, scalar_type(dtype) or A.dtype)
    if abs(ord) == math.inf:  # the inf-norm is the 1-norm of the transpose
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    sums = vector_norm(g, A, 1, [d0], keepdim, dtype)
    return g.reduce("ReduceMax" if ord > 0 else "ReduceMin", sums, [d1], keepdim)


def linalg_norm(g: GraphBuilder, self: Value, ord, dim, keepdim: bool, dtype) -> Value:
    """linalg.norm: a matrix norm for an order over two dims (or a 2-D input), else a vector norm."""
    if isinstance(ord, str) or (ord is not None and ((dim is not None and len(dim) == 2) or
                                                     (dim is None and self.rank == 2))):
        return matrix_norm(g, self, ord, list(dim) if dim is not None else [0, 1], keepdim, dtype)
    return vector_norm(g, self, 2 if ord is None else ord, dim, keepdim, dtype)
