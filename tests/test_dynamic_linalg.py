"""Linear algebra with symbolic sizes: each op exported once with its batch and matrix sizes symbolic,
native (no ATen fallback), and right in onnxruntime and our runtime on a second batch and matrix size."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Callable

import pytest
import torch

import aten2onnx
from optable import Call, assert_runs_like_eager

LA = torch.linalg
Dim = torch.export.Dim
BATCH, N, M, K = Dim("batch", min=2, max=16), Dim("n", min=2, max=16), Dim("m", min=2, max=16), Dim("k", min=2, max=16)


def well_conditioned(b: int, n: int) -> torch.Tensor:
    return torch.randn(b, n, n) + n * torch.eye(n)


def spd(b: int, n: int) -> torch.Tensor:
    a = torch.randn(b, n, n)
    return a @ a.mT + n * torch.eye(n)


def square(b, n, m, k):
    return (well_conditioned(b, n),)


def with_rhs(b, n, m, k):
    return well_conditioned(b, n), torch.randn(b, n, k)


def with_vector(b, n, m, k):
    return well_conditioned(b, n), torch.randn(b, n)


def with_lhs(b, n, m, k):
    """A and B for X A = B (left=False): B is [b, k, n]."""
    return well_conditioned(b, n), torch.randn(b, k, n)


def positive_definite(b, n, m, k):
    return (spd(b, n),)


def cholesky_factor_and_rhs(b, n, m, k):
    return torch.randn(b, n, k), LA.cholesky(spd(b, n))


def general(b, n, m, k):
    return (torch.randn(b, m, n),)


def lu_factored(b, n, m, k):
    lu, pivots = LA.lu_factor(well_conditioned(b, n))
    return lu, pivots, torch.randn(b, n, k)


def reflectors(b, n, m, k):
    """geqrf's packed reflectors and taus of a tall [b, m, n] stack (m = n + k), and a [b, m, k] C."""
    a, tau = torch.geqrf(torch.randn(b, n + k, n))
    return a, tau, torch.randn(b, n + k, k)


SQUARE = {0: BATCH, 1: N, 2: N}
RHS = {0: BATCH, 1: N, 2: K}
RECTANGULAR = {0: BATCH, 1: M, 2: N}
TALL = {0: BATCH, 1: M, 2: N}


@dataclasses.dataclass
class Case:
    name: str
    fn: Callable
    make: Callable  # (batch, n, m, k) -> args
    dims: tuple  # dynamic_shapes, one dict per argument


CASES = [
    Case("inv", LA.inv, square, (SQUARE,)),
    Case("inv_ex", LA.inv_ex, square, (SQUARE,)),
    Case("solve", LA.solve, with_rhs, (SQUARE, RHS)),
    Case("solve_vector", LA.solve, with_vector, (SQUARE, {0: BATCH, 1: N})),
    Case("solve_broadcast", LA.solve, lambda b, n, m, k: (well_conditioned(b, n), torch.randn(n, k)), (SQUARE, {0: N, 1: K})),
    Case("cholesky_solve_broadcast", torch.cholesky_solve, lambda b, n, m, k: (torch.randn(1, n, k), LA.cholesky(spd(b, n))),
         ({1: N, 2: K}, SQUARE)),
    Case("solve_ex_right", lambda a, b: LA.solve_ex(a, b, left=False), with_lhs, (SQUARE, {0: BATCH, 1: K, 2: N})),
    Case("solve_triangular", lambda a, b: LA.solve_triangular(a.triu(), b, upper=True), with_rhs, (SQUARE, RHS)),
    Case("solve_triangular_right", lambda a, b: LA.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
         with_lhs, (SQUARE, {0: BATCH, 1: K, 2: N})),
    Case("triangular_solve", lambda a, b: torch.triangular_solve(b, a.tril(), upper=False, transpose=True), with_rhs,
         (SQUARE, RHS)),
    Case("cholesky", LA.cholesky, positive_definite, (SQUARE,)),
    Case("cholesky_ex_upper", lambda a: LA.cholesky_ex(a, upper=True), positive_definite, (SQUARE,)),
    Case("cholesky_solve", torch.cholesky_solve, cholesky_factor_and_rhs, (RHS, SQUARE)),
    Case("cholesky_inverse", torch.cholesky_inverse, lambda b, n, m, k: (LA.cholesky(spd(b, n)),), (SQUARE,)),
    Case("lu_factor_ex", LA.lu_factor_ex, square, (SQUARE,)),
    Case("lu", LA.lu, general, (RECTANGULAR,)),
    Case("lu_solve", LA.lu_solve, lu_factored, (SQUARE, {0: BATCH, 1: N}, RHS)),
    Case("lu_unpack", lambda lu, p: torch.lu_unpack(lu, p), lambda b, n, m, k: lu_factored(b, n, m, k)[:2],
         (SQUARE, {0: BATCH, 1: N})),
    Case("qr", LA.qr, general, (RECTANGULAR,)),
    Case("qr_complete", lambda a: LA.qr(a, mode="complete"), general, (RECTANGULAR,)),
    Case("householder_product", lambda a, tau: LA.householder_product(a, tau), lambda b, n, m, k: reflectors(b, n, m, k)[:2],
         ({0: BATCH, 1: M, 2: N}, {0: BATCH, 1: N})),
    Case("ormqr", lambda a, tau, c: torch.ormqr(a, tau, c, transpose=True), reflectors,
         ({0: BATCH, 1: M, 2: N}, {0: BATCH, 1: N}, {0: BATCH, 1: M, 2: K})),
]

def symmetric_indefinite(b, n, m, k):
    a = torch.randn(b, n, n)
    return (a + a.mT,)


def ldl_factored(b, n, m, k):
    ld, pivots = LA.ldl_factor(symmetric_indefinite(b, n, m, k)[0])
    return ld, pivots, torch.randn(b, n, k)


def tensor_pair(b, n, m, k):
    """A [b, n, n, b] tensor, invertible as a [b*n, n*b] matrix, and a right-hand side [b, n]."""
    return well_conditioned(1, b * n)[0].reshape(b, n, n, b), torch.randn(b, n)


CASES += [
    Case("matrix_exp", torch.matrix_exp, lambda b, n, m, k: (torch.randn(b, n, n) / n,), (SQUARE,)),
    Case("svdvals", LA.svdvals, general, (RECTANGULAR,)),
    Case("svdvals_square", LA.svdvals, square, (SQUARE,)),
    Case("eigvalsh", LA.eigvalsh, symmetric_indefinite, (SQUARE,)),
    Case("pinv", LA.pinv, general, (RECTANGULAR,)),
    Case("pinv_hermitian", lambda a: LA.pinv(a, hermitian=True), positive_definite, (SQUARE,)),
    Case("matrix_rank", LA.matrix_rank, general, (RECTANGULAR,)),
    Case("cond", LA.cond, square, (SQUARE,)),
    Case("nuclear_norm", lambda a: LA.matrix_norm(a, "nuc"), general, (RECTANGULAR,)),
    Case("ldl_factor_ex", LA.ldl_factor_ex, symmetric_indefinite, (SQUARE,)),
    Case("ldl_solve", LA.ldl_solve, ldl_factored, (SQUARE, {0: BATCH, 1: N}, RHS)),
    Case("tensorinv", lambda a: LA.tensorinv(a, ind=2), lambda b, n, m, k: tensor_pair(b, n, m, k)[:1],
         ({0: BATCH, 1: N, 2: N, 3: BATCH},)),
    Case("tensorsolve", LA.tensorsolve, tensor_pair, ({0: BATCH, 1: N, 2: N, 3: BATCH}, {0: BATCH, 1: N})),
]

# The example sizes, and others with every symbolic size different: (batch, n, m, k); n odd and even,
# m above and below n.
EXAMPLE, OTHERS = (2, 3, 5, 2), [(3, 4, 6, 3), (2, 5, 3, 4)]


def export(case: Case, args: tuple, opset: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export(Call(case.fn), args, dynamic_shapes={"args": case.dims}, opset=opset, fallback="error")


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_symbolic_sizes_are_native_and_right_on_other_sizes(case, opset):
    torch.manual_seed(0)
    exported = export(case, case.make(*EXAMPLE), opset)
    for sizes in OTHERS:
        assert_runs_like_eager(exported, case.fn, case.make(*sizes))
