"""Linear algebra: the OpInfos exporting natively (the op table is tests/optables/linalg.py)."""

from __future__ import annotations

import pytest

from optable import assert_opinfo_native

NATIVE = ["linalg.inv", "linalg.inv_ex", "linalg.solve", "linalg.solve_ex", "linalg.solve_triangular",
          "triangular_solve", "linalg.cholesky", "linalg.cholesky_ex", "cholesky", "cholesky_solve",
          "cholesky_inverse", "linalg.lu_factor", "linalg.lu_factor_ex", "linalg.lu", "lu", "lu_solve",
          "linalg.lu_solve", "lu_unpack", "linalg.matrix_power", "linalg.tensorinv", "linalg.tensorsolve",
          "matrix_exp", "linalg.householder_product", "linalg.qr", "qr", "geqrf", "ormqr", "linalg.eigvalsh",
          "linalg.svdvals", "linalg.matrix_norm", "linalg.norm", "norm.nuc", "linalg.cond", "linalg.matrix_rank",
          "linalg.matrix_rank.hermitian", "linalg.pinv", "linalg.pinv.singular", "linalg.pinv.hermitian", "pinverse",
          "linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve"]


@pytest.mark.parametrize("name", NATIVE)
def test_opinfo_native(name):
    assert_opinfo_native(name, [9, 18])
