"""Linear algebra: inverses, solves, LU/Cholesky factorizations, matrix functions (pivots and info
included)."""

from __future__ import annotations

import torch

from optable import Entry

FLOATS = (torch.float32, torch.float64)
INF = float("inf")
LA = torch.linalg


def well_conditioned(*shape):
    """Random square matrices with a dominant diagonal."""
    n = shape[-1]
    return lambda dtype: (torch.randn(shape, dtype=dtype) + n * torch.eye(n, dtype=dtype),)


def symmetric(a):
    return a + a.mT


def general(*shape):
    return lambda dtype: (torch.randn(shape, dtype=dtype),)


def fixed(*rows):
    return lambda dtype: (torch.tensor(rows, dtype=dtype),)


def with_rhs(a_shape, b_shape):
    def make(dtype):
        n = a_shape[-1]
        return torch.randn(a_shape, dtype=dtype) + n * torch.eye(n, dtype=dtype), torch.randn(b_shape, dtype=dtype)
    return make


def spd(*shape):
    """Symmetric positive definite matrices."""
    def make(dtype):
        a = torch.randn(shape, dtype=dtype)
        return (a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype),)
    return make


def factored(*shape, k=3):
    """(LU, pivots, B) of a general matrix: lu_factor's output and a right-hand side."""
    def make(dtype):
        lu, pivots = LA.lu_factor(torch.randn(shape, dtype=dtype))
        return lu, pivots, torch.randn(*shape[:-1], k, dtype=dtype)
    return make


def lu_all(a):
    return LA.lu_factor_ex(a), LA.lu(a), torch.lu(a, get_infos=True)


def solves(a, b):
    return LA.solve(a, b), LA.solve_ex(a, b), LA.solve(a, b.mT, left=False)


def lu_solves(lu, pivots, b):
    return (LA.lu_solve(lu, pivots, b), LA.lu_solve(lu, pivots, b, adjoint=True),
            LA.lu_solve(lu, pivots, b.mT, left=False), LA.lu_solve(lu, pivots, b.mT, left=False, adjoint=True),
            torch.lu_solve(b, lu, pivots), torch.lu_unpack(lu, pivots), torch.lu_unpack(lu, pivots, False, True))


def triangular(a, b):
    out = []
    for upper in (True, False):
        for unit in (True, False):
            out.append(LA.solve_triangular(a, b, upper=upper, unitriangular=unit))
            out.append(LA.solve_triangular(a, b.mT, upper=upper, left=False, unitriangular=unit))
        out.extend(torch.triangular_solve(b, a, upper=upper, transpose=True))
    return out


# torch.cholesky and torch.qr (aten::cholesky, aten::qr) are gone from torch 2.14: used where torch has them
HAS_CHOLESKY, HAS_QR = hasattr(torch.ops.aten, "cholesky"), hasattr(torch.ops.aten, "qr")


def choleskys(a):
    lower, upper = LA.cholesky(a), LA.cholesky(a, upper=True)
    b = a[..., :2]
    return (lower, upper, LA.cholesky_ex(a), *((torch.cholesky(a, upper=True),) if HAS_CHOLESKY else ()),
            torch.cholesky_solve(b, lower), torch.cholesky_solve(b, upper, upper=True), torch.cholesky_inverse(lower),
            torch.cholesky_inverse(upper, upper=True))


def powers(a):
    return tuple(LA.matrix_power(a, n) for n in (0, 1, 2, 3, 6, 13, -1, -2))


# In one batch: an exactly singular matrix (info 2), magnitudes that tie (the first row wins), a random one.
EDGES = [[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]],
         [[1.0, 1.0, 1.0], [-1.0, 1.0, 1.0], [1.0, 2.0, -1.0]],
         [[0.3, -1.2, 0.7], [2.1, 0.4, -0.9], [-0.5, 1.6, 1.1]]]
# Not positive definite: potrf stops at column 2, keeping A's values from there on, as eager does.
INDEFINITE = fixed([4.0, 2.0, 1.0], [2.0, -3.0, 1.0], [1.0, 1.0, 5.0])
ALL_OPSETS = (9, 13, 18, 26)
OPSETS = (9, 18)

TABLE = [
    Entry("inv", lambda a: (LA.inv(a), LA.inv_ex(a), torch.inverse(a)), [well_conditioned(2, 1, 3, 3)], FLOATS,
          ALL_OPSETS, keys=("aten::inverse.default", "aten::linalg_inv.default", "aten::linalg_inv_ex.default")),
    Entry("inv_sizes", LA.inv, [well_conditioned(1, 1), well_conditioned(5, 5), general(2, 0, 0)], FLOATS, OPSETS,
          keys=()),  # empty results are constants: nothing dispatched
    # before Det (11): the sign of the LU's row permutation times U's diagonal, as eager computes them; a
    # singular matrix (the first EDGES one), negative determinants (logdet NaN), empty matrices
    Entry("det_by_lu", lambda a: (LA.det(a), LA.slogdet(a), torch.logdet(a)),
          [fixed(*EDGES), general(2, 4, 4)], FLOATS, (9, 10),
          keys=("aten::linalg_det.default", "aten::linalg_slogdet.default", "aten::logdet.default")),
    Entry("det_by_lu_empty", lambda a: (LA.det(a), LA.slogdet(a)), [general(0, 3, 3), general(2, 0, 0)], FLOATS,
          (9,), keys=()),  # empty results are constants: nothing dispatched
    Entry("inv_ex_singular", LA.inv_ex, [fixed(*EDGES)], FLOATS, OPSETS, keys=("aten::linalg_inv_ex.default",)),
    Entry("lu_factor", lu_all, [fixed(*EDGES)], FLOATS, ALL_OPSETS,
          keys=("aten::_lu_with_info.default", "aten::linalg_lu.default", "aten::linalg_lu_factor_ex.default")),
    Entry("lu_factor_shapes", lu_all, [general(5, 5), general(3, 5), general(2, 6, 4), general(1, 1), general(3, 0)],
          FLOATS, OPSETS,
          keys=("aten::_lu_with_info.default", "aten::linalg_lu.default", "aten::linalg_lu_factor_ex.default")),
    Entry("lu_solve", lu_solves, [factored(4, 4), factored(2, 3, 3, k=1)], FLOATS, OPSETS,
          keys=("aten::linalg_lu_solve.default", "aten::lu_solve.default", "aten::lu_unpack.default",
                "aten::mT.default")),
    Entry("lu_unpack_rectangular", lambda lu, p: torch.lu_unpack(lu, p),
          [lambda d: LA.lu_factor(torch.randn(2, 3, 5, dtype=d)), lambda d: LA.lu_factor(torch.randn(6, 4, dtype=d))],
          FLOATS, OPSETS, keys=("aten::lu_unpack.default",)),
    Entry("solve", solves, [with_rhs((5, 5), (5, 3)), with_rhs((3, 3), (2, 3, 4)), with_rhs((2, 1, 3, 3), (4, 3, 2)),
                            with_rhs((2, 2), (2, 0)), with_rhs((2, 2), (0, 2, 2))], FLOATS, OPSETS,
          keys=("aten::linalg_solve_ex.default",)),
    Entry("solve_vector", lambda a, b: (LA.solve(a, b), LA.solve_ex(a, b)),
          [with_rhs((2, 4, 4), (2, 4)), with_rhs((1, 1), (1,))], FLOATS, OPSETS,
          keys=("aten::linalg_solve.default", "aten::linalg_solve_ex.default")),
    Entry("triangular", triangular, [with_rhs((2, 4, 4), (4, 2)), with_rhs((1, 1), (1, 1))], FLOATS, OPSETS,
          keys=("aten::linalg_solve_triangular.default", "aten::mT.default", "aten::triangular_solve.default")),
    Entry("cholesky", choleskys, [spd(3, 4, 4)], FLOATS, ALL_OPSETS,
          keys=(*(("aten::cholesky.default",) if HAS_CHOLESKY else ()), "aten::cholesky_inverse.default",
                "aten::cholesky_solve.default", "aten::linalg_cholesky.default", "aten::linalg_cholesky_ex.default",
                "aten::slice.Tensor")),
    Entry("cholesky_sizes", LA.cholesky_ex, [spd(1, 1), spd(5, 5)], FLOATS, OPSETS,
          keys=("aten::linalg_cholesky_ex.default",)),
    Entry("cholesky_one_triangle_and_indefinite",
          lambda a, m: (LA.cholesky(a.tril()), LA.cholesky(a.triu(), upper=True), LA.cholesky_ex(m),
                        LA.cholesky_ex(m, upper=True), LA.cholesky_ex(torch.zeros_like(m))),
          [lambda d: spd(3, 3)(d) + INDEFINITE(d)], FLOATS, OPSETS,
          keys=("aten::linalg_cholesky.default", "aten::linalg_cholesky_ex.default", "aten::tril.default",
                "aten::triu.default", "aten::zeros_like.default")),
    Entry("matrix_power", powers, [well_conditioned(1, 1), well_conditioned(2, 3, 3)], FLOATS, OPSETS,
          keys=("aten::linalg_matrix_power.default",)),
    Entry("matrix_power_int", lambda a: (LA.matrix_power(a, 0), LA.matrix_power(a, 5)),
          [lambda d: (torch.randint(-2, 3, (2, 3, 3)).to(d),)], (torch.int64,), OPSETS,
          keys=("aten::linalg_matrix_power.default",)),
    Entry("tensor_inv_solve", lambda a, b: (LA.tensorinv(a.reshape(2, 3, 6)), LA.tensorinv(a.reshape(6, 2, 3), ind=1),
                                            LA.tensorsolve(a, b), LA.tensorsolve(a.permute(0, 2, 1, 3), b, dims=(1,))),
          [lambda d: ((torch.randn(6, 6, dtype=d) + 6 * torch.eye(6, dtype=d)).reshape(2, 3, 2, 3),
                      torch.randn(2, 3, dtype=d))], FLOATS, OPSETS,
          keys=("aten::linalg_tensorinv.default", "aten::linalg_tensorsolve.default", "aten::permute.default",
                "aten::reshape.default")),
    Entry("matrix_exp", torch.matrix_exp,
          [lambda d: (torch.randn(3, 4, 4, dtype=d) * torch.tensor([0.01, 1.5, 4.0], dtype=d).reshape(3, 1, 1),),
           general(1, 1), general(0, 3, 3)], FLOATS, OPSETS, keys=()),  # empty results are constants: nothing dispatched
    Entry("qr", lambda a: (torch.geqrf(a), LA.qr(a), LA.qr(a, mode="complete"), LA.qr(a, mode="r"),
                           *((torch.qr(a, some=False),) if HAS_QR else ())),
          [general(5, 3), general(2, 3, 5), general(1, 1), fixed([0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 0.0, 5.0]),
           general(4, 0)], FLOATS, OPSETS, keys=("aten::linalg_qr.default", *(("aten::qr.default",) if HAS_QR else ()))),
    Entry("ormqr", lambda a, t, c: tuple(torch.ormqr(a, t, c if left else c.mT, left=left, transpose=tr)
                                         for left in (True, False) for tr in (True, False)),
          [lambda d: (*torch.geqrf(torch.randn(2, 5, 3, dtype=d)), torch.randn(2, 5, 4, dtype=d))], FLOATS, OPSETS,
          keys=("aten::mT.default", "aten::ormqr.default")),
    Entry("eigvalsh", lambda a: (LA.eigvalsh(a), LA.eigvalsh(a, UPLO="U")),
          [general(1, 1), general(5, 5), general(2, 4, 4), fixed([2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 3.0])],
          FLOATS, OPSETS, keys=("aten::linalg_eigvalsh.default",)),
    Entry("svdvals", LA.svdvals, [general(1, 1), general(5, 3), general(2, 3, 6), fixed([1.0, 2.0], [2.0, 4.0], [0.0, 0.0])],
          FLOATS, OPSETS, keys=("aten::linalg_svdvals.default",)),
    Entry("matrix_norm", lambda a: tuple(LA.matrix_norm(a, o, dim=d, keepdim=k) for o in ("fro", "nuc", 1, -1, 2, -2, INF, -INF)
                                         for d, k in (((-2, -1), False), ((2, 0), True))),
          [general(2, 3, 4)], FLOATS, ALL_OPSETS,
          keys=("aten::linalg_matrix_norm.default", "aten::linalg_matrix_norm.str_ord")),
    Entry("norm_and_cond", lambda a: (LA.norm(a), LA.norm(a, 2, dim=(0, 2)), LA.norm(a, "nuc", dim=(1, 2), keepdim=True),
                                      LA.norm(a, dim=0, ord=3), torch.norm(a[0], p="nuc"),
                                      *(LA.cond(a, p) for p in (None, -2, 1, INF, "fro", "nuc"))),
          [well_conditioned(2, 3, 3)], FLOATS, ALL_OPSETS,
          keys=("aten::linalg_cond.default", "aten::linalg_cond.p_str", "aten::linalg_matrix_norm.str_ord",
                "aten::linalg_norm.default", "aten::linalg_norm.ord_str", "aten::select.int")),
    Entry("cond_singular", lambda a: (LA.cond(a, 1), LA.cond(a, -INF)), [fixed([1.0, 2.0], [2.0, 4.0])], FLOATS, OPSETS,
          keys=("aten::linalg_cond.default",)),
    Entry("matrix_rank", lambda a: (LA.matrix_rank(a), LA.matrix_rank(a, hermitian=True), LA.matrix_rank(a, atol=0.5, rtol=0.0)),
          [lambda d: (torch.tensor([[[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.0]], [[4.0, 0.5, 0.0], [0.5, 0.2, 0.1],
                                                                                          [0.0, 0.1, 3.0]]], dtype=d),)],
          FLOATS, OPSETS,
          keys=("aten::linalg_matrix_rank.atol_rtol_float", "aten::linalg_matrix_rank.atol_rtol_tensor")),
    Entry("pinv", lambda a: (LA.pinv(a), LA.pinv(a, rtol=0.3), torch.pinverse(a, rcond=1e-4)),
          [general(4, 4), general(2, 3, 5), lambda d: (torch.randn(6, 2, dtype=d) @ torch.randn(2, 4, dtype=d),)], FLOATS,
          OPSETS,
          keys=("aten::linalg_pinv.atol_rtol_float", "aten::linalg_pinv.atol_rtol_tensor", "aten::pinverse.default")),
    Entry("pinv_hermitian", lambda a: (LA.pinv(a, hermitian=True), LA.pinv(a.tril(), hermitian=True)),
          [general(1, 1), lambda d: (symmetric(torch.randn(2, 5, 5, dtype=d)),)], FLOATS, OPSETS,
          keys=("aten::linalg_pinv.atol_rtol_tensor", "aten::tril.default")),
    Entry("ldl", lambda a, b: (LA.ldl_factor_ex(a), LA.ldl_solve(*LA.ldl_factor(a), b)),
          [lambda d: (symmetric(torch.randn(8, 5, 5, dtype=d)), torch.randn(8, 5, 2, dtype=d)),
           lambda d: (symmetric(torch.randint(-2, 3, (6, 4, 4)).to(d)) + torch.eye(4, dtype=d), torch.randn(4, 1, dtype=d)),
           lambda d: (torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]], dtype=d), torch.randn(3, 2, dtype=d)),
           lambda d: (torch.randn(1, 1, dtype=d), torch.randn(1, 1, dtype=d))], FLOATS, OPSETS,
          keys=("aten::linalg_ldl_factor.default", "aten::linalg_ldl_factor_ex.default",
                "aten::linalg_ldl_solve.default")),
    Entry("ldl_singular", LA.ldl_factor_ex, [fixed([1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]), general(0, 2, 2)],
          FLOATS, OPSETS, keys=()),  # empty results are constants: nothing dispatched
    Entry("householder_product", LA.householder_product,
          [lambda d: (torch.randn(5, 5, dtype=d), torch.rand(5, dtype=d)),
           lambda d: (torch.randn(2, 1, 6, 4, dtype=d), torch.rand(2, 1, 3, dtype=d)),
           lambda d: (torch.randn(3, 3, dtype=d), torch.rand(0, dtype=d))], FLOATS, OPSETS,
          keys=("aten::linalg_householder_product.default",)),
]
