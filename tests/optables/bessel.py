"""Bessel and Airy functions and the classical orthogonal polynomials: edge values, dtypes, tensor and
scalar degrees."""

from __future__ import annotations

import torch
from optable import Entry, t

FLOATS = (torch.float32, torch.float64)
INF, NAN = float("inf"), float("nan")
S = torch.special

BESSEL_EDGES = [-INF, -150.0, -103.0, -20.0, -8.5, -5.0, -2.09, -1.0, -1e-6, -0.0, 0.0, 1e-7, 0.5, 2.0, 2.09,
                5.0, 7.9, 8.0, 8.1, 30.0, 89.0, 103.9, 200.0, INF, NAN]


def edges(values):
    return lambda dtype: (torch.tensor(values, dtype=dtype),)


def edges_and_uniform(values, low, high):
    """The edge values, then 48 uniform draws from [low, high)."""
    return lambda dtype: (torch.cat([torch.tensor(values), torch.empty(48).uniform_(low, high)]).to(dtype),)


def grid(xs, ns, n_dtype=None):
    """x down a column against n along a row, so the result covers every pair."""
    return lambda dtype: (torch.tensor(xs, dtype=dtype)[:, None], torch.tensor(ns, dtype=n_dtype or dtype))


# Past 1 in |x| the recurrences grow fast; these stay inside float32 (eager's FMA-contracted float32
# recurrences round differently from separate ops only once the values overflow).
POLY_X = [-INF, -2.5, -1.5, -1.0, -0.999, -0.7, -0.3, 0.0, 1e-20, 0.2, 0.5, 0.75, 0.9999, 1.0, 1.2, 2.5]
POLY_N = [-3.0, -0.5, 0.0, 0.7, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 13.0, 25.0, 40.0, NAN, INF, -INF, 1e19]

CHEBYSHEV = (S.chebyshev_polynomial_t, S.chebyshev_polynomial_u, S.chebyshev_polynomial_v, S.chebyshev_polynomial_w)
SHIFTED = (S.shifted_chebyshev_polynomial_t, S.shifted_chebyshev_polynomial_u, S.shifted_chebyshev_polynomial_v,
           S.shifted_chebyshev_polynomial_w)
OTHERS = (S.hermite_polynomial_h, S.hermite_polynomial_he, S.laguerre_polynomial_l, S.legendre_polynomial_p)
POLYNOMIALS = CHEBYSHEV + SHIFTED + OTHERS

TABLE = [
    Entry("bessel_i", lambda x: (torch.i0(x), S.i0e(x), S.i1(x), S.i1e(x), S.modified_bessel_i0(x),
                                 S.modified_bessel_i1(x)),
          [edges_and_uniform(BESSEL_EDGES, -30, 30)], FLOATS, opsets=(9, 18, 26),
          keys=("aten::i0.default", "aten::special_i0e.default", "aten::special_i1.default",
                "aten::special_i1e.default", "aten::special_modified_bessel_i0.default",
                "aten::special_modified_bessel_i1.default")),
    Entry("i0_half_and_ints", lambda x: (torch.i0(x), S.i1e(x)),
          [lambda d: (torch.arange(-12, 13).to(d),)], (torch.float16, torch.int64), opsets=(9, 18),
          keys=("aten::i0.default", "aten::special_i1e.default")),
    Entry("bessel_k", lambda x: (S.modified_bessel_k0(x), S.modified_bessel_k1(x), S.scaled_modified_bessel_k0(x),
                                 S.scaled_modified_bessel_k1(x)),
          [edges_and_uniform(BESSEL_EDGES, 0, 12)], FLOATS, opsets=(9, 18, 26),
          keys=("aten::special_modified_bessel_k0.default", "aten::special_modified_bessel_k1.default",
                "aten::special_scaled_modified_bessel_k0.default", "aten::special_scaled_modified_bessel_k1.default")),
    Entry("bessel_jy", lambda x: (S.bessel_j0(x), S.bessel_j1(x), S.bessel_y0(x), S.bessel_y1(x)),
          [edges_and_uniform(BESSEL_EDGES, -40, 40)], FLOATS, opsets=(9, 18, 26),
          keys=("aten::special_bessel_j0.default", "aten::special_bessel_j1.default",
                "aten::special_bessel_y0.default", "aten::special_bessel_y1.default")),
    Entry("airy_ai", S.airy_ai, [edges_and_uniform(BESSEL_EDGES, -40, 10)], FLOATS, opsets=(9, 18, 26),
          keys=("aten::special_airy_ai.default",)),
    Entry("bessel_empty", lambda x: (torch.i0(x), S.i1e(x), S.modified_bessel_k1(x), S.bessel_y0(x), S.airy_ai(x)),
          [t(0, 3)], opsets=(18,), keys=()),  # empty results are constants: nothing dispatched
    Entry("chebyshev", lambda x, n: tuple(f(x, n) for f in CHEBYSHEV), [grid(POLY_X, POLY_N)], FLOATS,
          keys=("aten::special_chebyshev_polynomial_t.default", "aten::special_chebyshev_polynomial_u.default",
                "aten::special_chebyshev_polynomial_v.default", "aten::special_chebyshev_polynomial_w.default")),
    Entry("shifted_chebyshev", lambda x, n: tuple(f(x, n) for f in SHIFTED), [grid(POLY_X, POLY_N)], FLOATS,
          keys=("aten::special_shifted_chebyshev_polynomial_t.default",
                "aten::special_shifted_chebyshev_polynomial_u.default",
                "aten::special_shifted_chebyshev_polynomial_v.default",
                "aten::special_shifted_chebyshev_polynomial_w.default")),
    Entry("hermite_laguerre_legendre", lambda x, n: tuple(f(x, n) for f in OTHERS), [grid(POLY_X, POLY_N)], FLOATS,
          keys=("aten::special_hermite_polynomial_h.default", "aten::special_hermite_polynomial_he.default",
                "aten::special_laguerre_polynomial_l.default", "aten::special_legendre_polynomial_p.default")),
    Entry("polynomial_int_degree", lambda x, n: tuple(f(x, n) for f in POLYNOMIALS),
          [grid([-1.5, -1.0, -0.4, 0.0, 0.3, 1.0, 2.0], [-2, 0, 1, 3, 8, 12, 30], torch.int64)], FLOATS,
          opsets=(9, 18),
          keys=("aten::special_chebyshev_polynomial_t.default", "aten::special_chebyshev_polynomial_u.default",
                "aten::special_chebyshev_polynomial_v.default", "aten::special_chebyshev_polynomial_w.default",
                "aten::special_hermite_polynomial_h.default", "aten::special_hermite_polynomial_he.default",
                "aten::special_laguerre_polynomial_l.default", "aten::special_legendre_polynomial_p.default",
                "aten::special_shifted_chebyshev_polynomial_t.default",
                "aten::special_shifted_chebyshev_polynomial_u.default",
                "aten::special_shifted_chebyshev_polynomial_v.default",
                "aten::special_shifted_chebyshev_polynomial_w.default")),
    # a Python degree: unrolled up to 16, a Loop beyond; fractions truncate, negatives give 0
    Entry("polynomial_scalar_degree", lambda x: tuple(f(x, n) for f in POLYNOMIALS for n in (-1, 3, 9.7, 25)),
          [edges([-1.5, -1.0, -0.4, 0.0, 0.3, 0.5, 1.0, 2.0])], FLOATS, opsets=(18,),
          keys=("aten::special_chebyshev_polynomial_t.n_scalar", "aten::special_chebyshev_polynomial_u.n_scalar",
                "aten::special_chebyshev_polynomial_v.n_scalar", "aten::special_chebyshev_polynomial_w.n_scalar",
                "aten::special_hermite_polynomial_h.n_scalar", "aten::special_hermite_polynomial_he.n_scalar",
                "aten::special_laguerre_polynomial_l.n_scalar", "aten::special_legendre_polynomial_p.n_scalar",
                "aten::special_shifted_chebyshev_polynomial_t.n_scalar",
                "aten::special_shifted_chebyshev_polynomial_u.n_scalar",
                "aten::special_shifted_chebyshev_polynomial_v.n_scalar",
                "aten::special_shifted_chebyshev_polynomial_w.n_scalar")),
    Entry("polynomial_scalar_x", lambda n: tuple(f(x, n) for f in POLYNOMIALS for x in (0.5, 2)),
          [edges([-1.0, 0.0, 1.0, 2.0, 7.0, 12.0])], FLOATS, opsets=(18,),
          keys=("aten::special_chebyshev_polynomial_t.x_scalar", "aten::special_chebyshev_polynomial_u.x_scalar",
                "aten::special_chebyshev_polynomial_v.x_scalar", "aten::special_chebyshev_polynomial_w.x_scalar",
                "aten::special_hermite_polynomial_h.x_scalar", "aten::special_hermite_polynomial_he.x_scalar",
                "aten::special_laguerre_polynomial_l.x_scalar", "aten::special_legendre_polynomial_p.x_scalar",
                "aten::special_shifted_chebyshev_polynomial_t.x_scalar",
                "aten::special_shifted_chebyshev_polynomial_u.x_scalar",
                "aten::special_shifted_chebyshev_polynomial_v.x_scalar",
                "aten::special_shifted_chebyshev_polynomial_w.x_scalar")),
    Entry("polynomial_int_operands", lambda x, n: tuple(f(x, n) for f in POLYNOMIALS),
          [lambda d: (torch.tensor([[-2], [0], [1], [3]], dtype=d), torch.tensor([0, 1, 2, 5], dtype=d))],
          (torch.int64,), opsets=(9, 18),
          keys=("aten::special_chebyshev_polynomial_t.default", "aten::special_chebyshev_polynomial_u.default",
                "aten::special_chebyshev_polynomial_v.default", "aten::special_chebyshev_polynomial_w.default",
                "aten::special_hermite_polynomial_h.default", "aten::special_hermite_polynomial_he.default",
                "aten::special_laguerre_polynomial_l.default", "aten::special_legendre_polynomial_p.default",
                "aten::special_shifted_chebyshev_polynomial_t.default",
                "aten::special_shifted_chebyshev_polynomial_u.default",
                "aten::special_shifted_chebyshev_polynomial_v.default",
                "aten::special_shifted_chebyshev_polynomial_w.default")),
    # above degree 128 (float32) or 512 (float64) eager gives NaN
    Entry("hermite_degree_limit", lambda x, n: (S.hermite_polynomial_h(x, n), S.hermite_polynomial_he(x, n)),
          [grid([-0.3, 0.0, 0.2], [127.0, 128.0, 129.0, 513.0, 600.0])], FLOATS, opsets=(9, 18),
          keys=("aten::special_hermite_polynomial_h.default", "aten::special_hermite_polynomial_he.default")),
]
