"""Opset-9 base, linear algebra: factorizations, solves, inverses and matrix functions written as elimination loops.

ONNX has no factorization ops, so each algorithm is an ONNX Loop over the columns (or rows) of a
stack of matrices flattened to [B, m, n]: one iteration is a handful of vectorized row operations,
Gather/Where with masks built from the iteration number, so the node count does not grow with the
matrix size. Batch and matrix sizes may be symbolic: they are then read from Shape and the masks and
index ranges built with Range (opset 11), where a static export has constants. LU (getrf), Cholesky (potrf), Householder QR (geqrf/orgqr/ormqr) and
Bunch-Kaufman LDL^T (sytrf/sytrs) follow LAPACK's pivoting and sign conventions, so factors, pivots
and info are eager's, not merely equivalent ones. Empty inputs have shape-only results, folded. What is
computed from eigenvalues and singular values (norms, condition numbers, rank, pseudo-inverse) is in
opset9_linalg_spectral.
"""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import SymInt, cast, fill, loop, reshape, sym_prod
from aten2onnx.symbolic._linalg import (
    I64,
    MEXP_THETAS,
    MatrixPowers,
    apply_reflectors,
    broadcast_batch,
    cholesky_results,
    cholesky_solve,
    first_indices,
    flatten,
    gather_rows,
    geqrf,
    eye,
    identity,
    inverse,
    is_empty,
    lu_factor_results,
    lu_loop,
    masked,
    matrix_product,
    matrix_shape,
    mexp_t1,
    mexp_t2,
    mexp_t4,
    mexp_t8,
    mexp_t12,
    mexp_t18,
    permutation,
    permutation_matrix,
    qr,
    same_sizes,
    shape_only,
    size_min,
    sizes,
    solve_results,
    solve_triangular,
    solve_with_lu,
    square_size,
    tril_mask,
    triu_mask,
    unflatten,
    unpack_lu,
    zero_based,
)
from aten2onnx.symbolic._linalg_spectral import ldl_factor, ones, sytrs
from aten2onnx.symbolic.opset9_products import matmul

register = functools.partial(registry.register, opset=9)


# -- static stacks of matrices ------------------------------------------------------------------------


# -- LU with partial pivoting ---------------------------------------------------------------------------


# -- triangular solves -----------------------------------------------------------------------------------


# -- Cholesky --------------------------------------------------------------------------------------------


# -- handlers: inverses and general solves -----------------------------------------------------------------


@register("aten::linalg_inv.default")
def aten_linalg_inv(g, A):
    """linalg_inv(Tensor A) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_inv_ex.default, (A,))
    if folded is not None:
        return folded[0]
    return inverse(g, A, "linalg_inv")[0]


@register("aten::linalg_inv_ex.default")
def aten_linalg_inv_ex(g, A, *, check_errors=False):
    """linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)"""
    folded = shape_only(g, torch.ops.aten.linalg_inv_ex.default, (A,))
    if folded is not None:
        return tuple(folded)
    return inverse(g, A, "linalg_inv_ex")


@register("aten::inverse.default")
def aten_inverse(g, self):
    """inverse(Tensor self) -> Tensor"""
    return aten_linalg_inv(g, self)


@register("aten::linalg_solve.default")
def aten_linalg_solve(g, A, B, *, left=True):
    """linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor"""
    return solve_results(g, A, B, left, "linalg_solve")[0]


@register("aten::linalg_solve_ex.default")
def aten_linalg_solve_ex(g, A, B, *, left=True, check_errors=False):
    """linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor info)"""
    x, _, _, info = solve_results(g, A, B, left, "linalg_solve_ex")
    return x, info


@register("aten::_linalg_solve_ex.default")
def aten__linalg_solve_ex(g, A, B, *, left=True, check_errors=False):
    """_linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor LU, Tensor pivots, Tensor info)"""
    return solve_results(g, A, B, left, "_linalg_solve_ex")


# -- determinants by LU, before Det (11) -----------------------------------------------------------------------


def lu_determinant(g: GraphBuilder, A: Value, what: str) -> tuple[Value, Value]:
    """(the sign of A's row permutation, the diagonal of U) of its partial-pivoting LU, as eager computes
    determinants ([*batch] and [*batch, n], in A's dtype)."""
    shape = matrix_shape(g, A, what)
    batch, n = shape[:-2], square_size(shape, what)
    count = sym_prod(g, batch)
    lu, pivots, _ = lu_loop(g, flatten(g, A, batch, [n, n]), count, n, n, pivot=True)
    on_diagonal = g.op("And", tril_mask(g, n, n, 0), triu_mask(g, n, n, 0))
    diagonal = g.reduce("ReduceSum", masked(g, on_diagonal, lu), [2], keepdims=False)  # [count, n]
    swaps = g.op("Not", g.op("Equal", pivots, first_indices(g, n)))
    count_swaps = g.reduce("ReduceSum", cast(g, swaps, torch.int64), [1], keepdims=False)
    two = g.const(2, dtype=torch.int64)
    odd = g.op("Sub", count_swaps, g.op("Mul", g.op("Div", count_swaps, two), two))  # (Mod arrives at 10)
    sign = g.op("Sub", g.const(1.0, dtype=A.dtype), g.op("Mul", cast(g, odd, A.dtype), g.const(2.0, dtype=A.dtype)))
    return unflatten(g, sign, batch, []), unflatten(g, diagonal, batch, [n])


@register("aten::linalg_det.default")
def aten_linalg_det(g, A):
    """linalg_det(Tensor A) -> Tensor"""
    if is_empty(matrix_shape(g, A, "linalg_det")):
        return fill(g, matrix_shape(g, A, "linalg_det")[:-2], 1, A.dtype)
    sign, diagonal = lu_determinant(g, A, "linalg_det")
    return g.op("Mul", sign, g.reduce("ReduceProd", diagonal, [A.rank - 2], keepdims=False))


@register("aten::linalg_slogdet.default")
def aten_linalg_slogdet(g, A):
    """linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)"""
    if is_empty(matrix_shape(g, A, "linalg_slogdet")):
        batch = matrix_shape(g, A, "linalg_slogdet")[:-2]
        return fill(g, batch, 1, A.dtype), fill(g, batch, 0, A.dtype)
    sign, diagonal = lu_determinant(g, A, "linalg_slogdet")
    last = A.rank - 2
    sign = g.op("Mul", sign, g.reduce("ReduceProd", g.op("Sign", diagonal), [last], keepdims=False))
    return sign, g.reduce("ReduceSum", g.op("Log", g.op("Abs", diagonal)), [last], keepdims=False)


@register("aten::logdet.default")
def aten_logdet(g, self):
    """logdet(Tensor self) -> Tensor (NaN where the determinant is negative, as eager)"""
    sign, logabsdet = aten_linalg_slogdet(g, self)
    return g.op("Where", g.op("Less", sign, g.const(0.0, like=sign)), g.const(math.nan, like=logabsdet), logabsdet)


# -- handlers: LU ------------------------------------------------------------------------------------------


@register("aten::linalg_lu_factor.default")
def aten_linalg_lu_factor(g, A, *, pivot=True):
    """linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)"""
    return lu_factor_results(g, A, pivot, "linalg_lu_factor")[:2]


@register("aten::linalg_lu_factor_ex.default")
def aten_linalg_lu_factor_ex(g, A, *, pivot=True, check_errors=False):
    """linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info)"""
    return lu_factor_results(g, A, pivot, "linalg_lu_factor_ex")


@register("aten::_lu_with_info.default")
def aten__lu_with_info(g, self, pivot=True, check_errors=True):
    """_lu_with_info(Tensor self, bool pivot=True, bool check_errors=True) -> (Tensor LU, Tensor pivots, Tensor info)"""
    return lu_factor_results(g, self, pivot, "_lu_with_info")


@register("aten::linalg_lu.default")
def aten_linalg_lu(g, A, *, pivot=True):
    """linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)"""
    folded = shape_only(g, torch.ops.aten.linalg_lu.default, (A,), {"pivot": pivot})
    if folded is not None:
        return tuple(folded)
    shape = matrix_shape(g, A, "linalg_lu")
    batch, (m, n) = shape[:-2], shape[-2:]
    b, k = sym_prod(g, batch), size_min(g, m, n)
    lu, pivots, _ = lu_loop(g, flatten(g, A, batch, [m, n]), b, m, n, pivot=pivot)
    l, u = unpack_lu(g, lu, b, m, n)
    l, u = unflatten(g, l, batch, [m, k]), unflatten(g, u, batch, [k, n])
    if not pivot:
        return fill(g, [0], 0, A.dtype), l, u
    p = permutation_matrix(g, permutation(g, pivots, b, m, k), b, m, A.dtype)
    return unflatten(g, p, batch, [m, m]), l, u


@register("aten::lu_unpack.default")
def aten_lu_unpack(g, LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)"""
    folded = shape_only(g, torch.ops.aten.lu_unpack.default, (LU_data, LU_pivots, unpack_data, unpack_pivots))
    if folded is not None:
        return tuple(folded)
    shape = matrix_shape(g, LU_data, "lu_unpack")
    batch, (m, n) = shape[:-2], shape[-2:]
    b, k = sym_prod(g, batch), size_min(g, m, n)
    empty = fill(g, [0], 0, LU_data.dtype)
    l = u = p = empty
    if unpack_data:
        l, u = unpack_lu(g, flatten(g, LU_data, batch, [m, n]), b, m, n)
        l, u = unflatten(g, l, batch, [m, k]), unflatten(g, u, batch, [k, n])
    if unpack_pivots:
        pivots = reshape(g, zero_based(g, LU_pivots), [b, k])
        p = unflatten(g, permutation_matrix(g, permutation(g, pivots, b, m, k), b, m, LU_data.dtype), batch, [m, m])
    return p, l, u


@register("aten::linalg_lu_solve.default")
def aten_linalg_lu_solve(g, LU, pivots, B, *, left=True, adjoint=False):
    """linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_lu_solve.default, (LU, pivots, B), {"left": left, "adjoint": adjoint})
    if folded is not None:
        return folded[0]
    return solve_with_lu(g, LU, pivots, B, left, adjoint, "linalg_lu_solve")


@register("aten::lu_solve.default")
def aten_lu_solve(g, self, LU_data, LU_pivots):
    """lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor"""
    return aten_linalg_lu_solve(g, LU_data, LU_pivots, self)


# -- handlers: triangular solves -----------------------------------------------------------------------


@register("aten::linalg_solve_triangular.default")
def aten_linalg_solve_triangular(g, self, B, *, upper, left=True, unitriangular=False):
    """linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_solve_triangular.default, (self, B),
                        {"upper": upper, "left": left, "unitriangular": unitriangular})
    if folded is not None:
        return folded[0]
    return solve_triangular(g, self, B, upper=upper, left=left, transpose=False, unitriangular=unitriangular,
                            what="linalg_solve_triangular")[0]


@register("aten::triangular_solve.default")
def aten_triangular_solve(g, self, A, upper=True, transpose=False, unitriangular=False):
    """triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)"""
    folded = shape_only(g, torch.ops.aten.triangular_solve.default, (self, A, upper, transpose, unitriangular))
    if folded is not None:
        return tuple(folded)
    x, batch = solve_triangular(g, A, self, upper=upper, left=True, transpose=transpose, unitriangular=unitriangular,
                                what="triangular_solve")
    n = sizes(g, A)[-1]
    own = list(A.shape[:-2])
    same = all(isinstance(d, int) for d in own) and same_sizes(own, batch)
    coefficient = A if same else g.op("Expand", A, g.int_list(batch + [n, n]))
    return x, g.op("Identity", coefficient)


# -- handlers: Cholesky ------------------------------------------------------------------------------------


@register("aten::linalg_cholesky.default")
def aten_linalg_cholesky(g, self, *, upper=False):
    """linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor"""
    return cholesky_results(g, self, upper, "linalg_cholesky")[0]


@register("aten::linalg_cholesky_ex.default")
def aten_linalg_cholesky_ex(g, self, *, upper=False, check_errors=False):
    """linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)"""
    return cholesky_results(g, self, upper, "linalg_cholesky_ex")


@register("aten::cholesky.default")
def aten_cholesky(g, self, upper=False):
    """cholesky(Tensor self, bool upper=False) -> Tensor"""
    return cholesky_results(g, self, upper, "cholesky")[0]


@register("aten::cholesky_solve.default")
def aten_cholesky_solve(g, self, input2, upper=False):
    """cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.cholesky_solve.default, (self, input2, upper))
    if folded is not None:
        return folded[0]
    symbols: dict[str, Value] = {}
    f_shape = matrix_shape(g, input2, "cholesky_solve", symbols=symbols)
    n = square_size(f_shape, "cholesky_solve")
    b_shape = matrix_shape(g, self, "cholesky_solve", symbols=symbols)
    if self.dtype != input2.dtype:
        raise NotImplementedError(f"cholesky_solve of {self.dtype} and {input2.dtype}")
    batch = broadcast_batch(g, f_shape[:-2], b_shape[:-2])
    count = sym_prod(g, batch)
    x = cholesky_solve(g, flatten(g, self, batch, b_shape[-2:]), flatten(g, input2, batch, [n, n]), upper,
                       count, n, b_shape[-1])
    return reshape(g, x, batch + b_shape[-2:])


@register("aten::cholesky_inverse.default")
def aten_cholesky_inverse(g, self, upper=False):
    """cholesky_inverse(Tensor self, bool upper=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.cholesky_inverse.default, (self, upper))
    if folded is not None:
        return folded[0]
    shape = matrix_shape(g, self, "cholesky_inverse")
    n = square_size(shape, "cholesky_inverse")
    batch = shape[:-2]
    count = sym_prod(g, batch)
    x = cholesky_solve(g, identity(g, count, n, self.dtype), flatten(g, self, batch, [n, n]), upper, count, n, n)
    return unflatten(g, x, batch, [n, n])


# -- handlers: matrix functions -------------------------------------------------------------------------


@register("aten::linalg_matrix_power.default", "aten::matrix_power.default")
def aten_linalg_matrix_power(g, self, n):
    """linalg_matrix_power(Tensor self, int n) -> Tensor"""
    if n < 0:
        self, n = aten_linalg_inv(g, self), -n
    if n == 0:
        shape = matrix_shape(g, self, "matrix_power", dtypes=(self.dtype,))
        size = square_size(shape, "matrix_power")
        return g.op("Expand", eye(g, size, size, self.dtype), g.int_list(shape))
    if n == 1:
        return g.op("Identity", self)
    # eager's order of products: a binary decomposition of n, bits from the lowest
    if n in (2, 3):
        square = matmul(g, self, self)
        return square if n == 2 else matmul(g, square, self)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = self if z is None else matmul(g, z, z)
        if bit:
            result = z if result is None else matmul(g, result, z)
    return result


@register("aten::linalg_tensorinv.default")
def aten_linalg_tensorinv(g, self, ind=2):
    """linalg_tensorinv(Tensor self, int ind=2) -> Tensor"""
    if self.shape is None:
        raise NotImplementedError("linalg_tensorinv is exported for inputs of known rank only")
    shape = sizes(g, self)
    front, back = sym_prod(g, shape[:ind]), sym_prod(g, shape[ind:])
    out_shape = shape[ind:] + shape[:ind]
    if is_empty(shape):
        return fill(g, out_shape, 0, self.dtype)
    return reshape(g, aten_linalg_inv(g, square_matrices(g, self, [front, back], self.name)), out_shape)


@register("aten::linalg_tensorsolve.default")
def aten_linalg_tensorsolve(g, self, other, dims=None):
    """linalg_tensorsolve(Tensor self, Tensor other, int[]? dims=None) -> Tensor"""
    if self.shape is None or other.rank is None:
        raise NotImplementedError("linalg_tensorsolve is exported for inputs of known rank only")
    shape, rank = sizes(g, self), self.rank
    if dims:
        moved = [d % rank for d in dims]
        perm = [d for d in range(rank) if d not in moved] + moved
        dims_before = self.shape
        self, shape = g.op("Transpose", self, perm=perm), [shape[d] for d in perm]
        self.shape = tuple(dims_before[d] for d in perm)
    result_shape = shape[other.rank:]
    size = sym_prod(g, result_shape)
    if is_empty(result_shape):
        return fill(g, result_shape, 0, self.dtype)
    x = aten_linalg_solve(g, square_matrices(g, self, [size, size], self.name),
                          square_matrices(g, other, [size], self.name))
    return reshape(g, x, result_shape)


def square_matrices(g: GraphBuilder, x: Value, shape: list[SymInt], label: str) -> Value:
    """x reshaped to `shape`, whose sizes are equal by the op's contract, though products of different
    symbols: the result's shape names each symbolic one `label`_size, so the linalg helpers see the
    matrix square (and a right-hand side of its size)."""
    out = reshape(g, x, shape)
    if not all(isinstance(d, int) for d in shape):
        out.shape = tuple(d if isinstance(d, int) else f"{label}_size" for d in shape)
    return out


# -- matrix exponential --------------------------------------------------------------------------------------
# Eager's algorithm (ATen LinearAlgebra.cpp after Bader, Blanes & Casas, "Computing the matrix exponential
# with an optimized Taylor polynomial approximation", 2019): an optimized Taylor polynomial of degree
# 1, 2, 4, 8, 12 or 18 chosen by the 1-norm, degree 18 with scaling and squaring above the last threshold.
# Its coefficients, thresholds and order of operations are eager's, rounded to the working dtype as
# eager's are: a float32 result that cancels (a small entry of a matrix with large ones) then rounds as
# eager's does. Computing in float64 would come closer to the exact exponential and further from eager.


@register("aten::matrix_exp.default", "aten::linalg_matrix_exp.default")
def aten_matrix_exp(g, self):
    """matrix_exp(Tensor self) -> Tensor"""
    shape = matrix_shape(g, self, "matrix_exp", dtypes=(torch.float16, torch.bfloat16, torch.float32, torch.float64))
    n = square_size(shape, "matrix_exp")
    batch = shape[:-2]
    if is_empty(shape):
        return fill(g, shape, 0, self.dtype)
    if isinstance(n, int) and n == 1:
        return g.op("Exp", self)  # as eager (a symbolic n of 1 at run time takes the approximants: exp within rounding)
    count = sym_prod(g, batch)
    dtype = torch.float64 if self.dtype == torch.float64 else torch.float32
    thetas = MEXP_THETAS[dtype]
    a = flatten(g, cast(g, self, dtype), batch, [n, n])
    # the 1-norm: the largest column sum of magnitudes
    col_sums = g.op("MatMul", ones(g, 1, n, dtype), g.op("Abs", a))  # [count, 1, n]
    col_sums = reshape(g, col_sums, [count, n, 1])
    widest = g.op("ArgMax", col_sums, axis=1, keepdims=0)
    norm = gather_rows(g, col_sums, widest, count, n, 1)  # [count, 1, 1]
    # s = max(0, ceil(log2(norm / theta_18))); 0 for a non-finite norm, whose result is not finite anyway
    s = g.op("Ceil", g.op("Div", g.op("Log", g.op("Div", norm, g.const(thetas[-1], dtype=dtype))),
                          g.const(math.log(2.0), dtype=dtype)))
    finite = g.op("And", g.op("Greater", s, g.const(0, dtype=dtype)),
                  g.op("Less", norm, g.const(math.inf, dtype=dtype)))
    s = g.op("Where", finite, s, g.const(0, dtype=dtype))
    # s is 0 below theta_18, so the scaled stack is the input exactly wherever a lower degree is chosen
    powers = MatrixPowers(g, g.op("Mul", a, g.op("Pow", g.const(0.5, dtype=dtype), s)), n)
    squarings = cast(g, s, I64)

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        (r,) = state
        return [body.op("Where", body.op("Less", i, squarings), matrix_product(body, r, r, n), r)]

    trips = g.op("ReduceMax", squarings, keepdims=0)
    result = loop(g, trips, [mexp_t18(g, powers, dtype)], step, name="squaring")[0]
    if not isinstance(count, int) or count == 1:
        # eager picks the degree by the norm for a single matrix only (a batch always takes degree 18);
        # degree 18 from theta_12 on, each lower degree up to its theta
        approximants = (mexp_t1, mexp_t2, mexp_t4, mexp_t8, mexp_t12)
        picked = g.op("Where", g.op("Less", norm, g.const(thetas[4], dtype=dtype)),
                      mexp_t12(g, powers, dtype), result)
        for theta, approximant in reversed(list(zip(thetas[:4], approximants))):
            picked = g.op("Where", g.op("Greater", norm, g.const(theta, dtype=dtype)), picked,
                          approximant(g, powers, dtype))
        single = count == 1 if isinstance(count, int) else g.op("Equal", count, g.const(1, dtype=I64))
        result = picked if single is True else g.op("Where", single, picked, result)
    # a matrix with a NaN is all NaN, as eager
    nans = g.op("MatMul", g.op("MatMul", ones(g, 1, n, dtype), cast(g, g.op("IsNaN", a), dtype)), ones(g, n, 1, dtype))
    result = g.op("Where", g.op("Greater", nans, g.const(0, dtype=dtype)), g.const(math.nan, dtype=dtype), result)
    return cast(g, unflatten(g, result, batch, [n, n]), self.dtype)


# -- Householder QR ----------------------------------------------------------------------------------------


@register("aten::geqrf.default")
def aten_geqrf(g, self):
    """geqrf(Tensor self) -> (Tensor a, Tensor tau)"""
    folded = shape_only(g, torch.ops.aten.geqrf.default, (self,))
    if folded is not None:
        return tuple(folded)
    r, taus, batch, m, n = geqrf(g, self, "geqrf")
    return unflatten(g, r, batch, [m, n]), reshape(g, taus, batch + [size_min(g, m, n)])


@register("aten::linalg_qr.default")
def aten_linalg_qr(g, A, mode="reduced"):
    """linalg_qr(Tensor A, str mode="reduced") -> (Tensor Q, Tensor R)"""
    return qr(g, A, mode, "linalg_qr")


@register("aten::qr.default")
def aten_qr(g, self, some=True):
    """qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)"""
    return qr(g, self, "reduced" if some else "complete", "qr")


@register("aten::linalg_householder_product.default")
def aten_linalg_householder_product(g, input, tau):
    """linalg_householder_product(Tensor input, Tensor tau) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_householder_product.default, (input, tau))
    if folded is not None:
        return folded[0]
    symbols: dict[str, Value] = {}
    shape = matrix_shape(g, input, "linalg_householder_product", symbols=symbols)
    if tau.shape is None or tau.dtype != input.dtype:
        raise NotImplementedError("linalg_householder_product with a tau of unknown rank or another dtype")
    batch, (m, n), k = shape[:-2], shape[-2:], sizes(g, tau, symbols)[-1]
    count = sym_prod(g, batch)
    start = g.op("Expand", eye(g, m, n, input.dtype), g.int_list([count, m, n]))
    if is_empty([k]):
        return unflatten(g, start, batch, [m, n])
    q = apply_reflectors(g, flatten(g, input, batch, [m, n]), reshape(g, tau, [count, k]), start, count, m, k,
                         left=True, transpose=False)
    return unflatten(g, q, batch, [m, n])


@register("aten::ormqr.default")
def aten_ormqr(g, self, input2, input3, left=True, transpose=False):
    """ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.ormqr.default, (self, input2, input3, left, transpose))
    if folded is not None:
        return folded[0]
    symbols: dict[str, Value] = {}
    a_shape = matrix_shape(g, self, "ormqr", symbols=symbols)
    c_shape = matrix_shape(g, input3, "ormqr", symbols=symbols)
    if input2.shape is None or len({self.dtype, input2.dtype, input3.dtype}) != 1:
        raise NotImplementedError("ormqr with a tau of unknown rank or mixed dtypes")
    tau_shape = sizes(g, input2, symbols)
    m, k = a_shape[-2], tau_shape[-1]
    batch = broadcast_batch(g, a_shape[:-2], tau_shape[:-1], c_shape[:-2])
    if is_empty([k]):
        return g.op("Identity", input3)
    count = sym_prod(g, batch)
    x = apply_reflectors(g, flatten(g, self, batch, a_shape[-2:]), reshape(g, g.op("Expand", input2, g.int_list(
        batch + [k])), [count, k]), flatten(g, input3, batch, c_shape[-2:]), count, m, k, left=left,
        transpose=transpose)
    return reshape(g, x, batch + c_shape[-2:])


# -- LDL^T with Bunch-Kaufman pivoting ----------------------------------------------------------------------


@register("aten::linalg_ldl_factor_ex.default")
def aten_linalg_ldl_factor_ex(g, self, *, hermitian=False, check_errors=False):
    """linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) -> (Tensor LD, Tensor pivots, Tensor info)"""
    folded = shape_only(g, torch.ops.aten.linalg_ldl_factor_ex.default, (self,), {"hermitian": hermitian})
    if folded is not None:
        return tuple(folded)
    return ldl_factor(g, self, "linalg_ldl_factor_ex")


@register("aten::linalg_ldl_factor.default")
def aten_linalg_ldl_factor(g, self, *, hermitian=False):
    """linalg_ldl_factor(Tensor self, *, bool hermitian=False) -> (Tensor LD, Tensor pivots)"""
    return aten_linalg_ldl_factor_ex(g, self, hermitian=hermitian)[:2]


@register("aten::linalg_ldl_solve.default")
def aten_linalg_ldl_solve(g, LD, pivots, B, *, hermitian=False):
    """linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_ldl_solve.default, (LD, pivots, B), {"hermitian": hermitian})
    if folded is not None:
        return folded[0]
    symbols: dict[str, Value] = {}
    ld_shape = matrix_shape(g, LD, "linalg_ldl_solve", symbols=symbols)
    b_shape = matrix_shape(g, B, "linalg_ldl_solve", symbols=symbols)
    n = square_size(ld_shape, "linalg_ldl_solve")
    if B.dtype != LD.dtype or pivots.shape is None:
        raise NotImplementedError("linalg_ldl_solve with mixed dtypes or pivots of unknown rank")
    batch = broadcast_batch(g, ld_shape[:-2], sizes(g, pivots, symbols)[:-1], b_shape[:-2])
    count = sym_prod(g, batch)
    codes = reshape(g, g.op("Expand", cast(g, pivots, I64), g.int_list(batch + [n])), [count, n])
    x = sytrs(g, masked(g, tril_mask(g, n, n, 0), flatten(g, LD, batch, [n, n])), codes,
              flatten(g, B, batch, b_shape[-2:]), count, n, b_shape[-1])
    return reshape(g, x, batch + b_shape[-2:])
