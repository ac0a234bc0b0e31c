"""Bessel and Airy functions and the classical orthogonal polynomials: their OpInfos exporting natively
(the op table is tests/optables/bessel.py)."""

from __future__ import annotations

import pytest
from optable import assert_opinfo_native

OPINFOS = [
    "i0", "special.i0e", "special.i1", "special.i1e", "special.modified_bessel_i0", "special.modified_bessel_i1",
    "special.modified_bessel_k0", "special.modified_bessel_k1", "special.scaled_modified_bessel_k0",
    "special.scaled_modified_bessel_k1", "special.bessel_j0", "special.bessel_j1", "special.bessel_y0",
    "special.bessel_y1", "special.airy_ai",
    "special.chebyshev_polynomial_t", "special.chebyshev_polynomial_u", "special.chebyshev_polynomial_v",
    "special.chebyshev_polynomial_w", "special.shifted_chebyshev_polynomial_t",
    "special.shifted_chebyshev_polynomial_u", "special.shifted_chebyshev_polynomial_v",
    "special.shifted_chebyshev_polynomial_w", "special.hermite_polynomial_h", "special.hermite_polynomial_he",
    "special.laguerre_polynomial_l", "special.legendre_polynomial_p",
]


@pytest.mark.parametrize("name", OPINFOS)
def test_opinfo_native(name):
    assert_opinfo_native(name, [9, 18])
