"""Bessel and Airy functions and the classical orthogonal polynomials: edge values, dtypes, tensor and
scalar degrees through the real dispatch, compared with eager in onnxruntime and aten2onnx.runtime;
and their OpInfos exporting natively."""

from __future__ import annotations

import pytest
import torch
from optable import Entry, assert_opinfo_native, cases, run_both, t

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
          [edges_and_uniform(BESSEL_EDGES, -30, 30)], FLOATS, opsets=(9, 18, 26)),
    Entry("i0_half_and_ints", lambda x: (torch.i0(x), S.i1e(x)),
          [lambda d: (torch.arange(-12, 13).to(d),)], (torch.float16, torch.int64), opsets=(9, 18)),
    Entry("bessel_k", lambda x: (S.modified_bessel_k0(x), S.modified_bessel_k1(x), S.scaled_modified_bessel_k0(x),
                                 S.scaled_modified_bessel_k1(x)),
          [edges_and_uniform(BESSEL_EDGES, 0, 12)], FLOATS, opsets=(9, 18, 26)),
    Entry("bessel_jy", lambda x: (S.bessel_j0(x), S.bessel_j1(x), S.bessel_y0(x), S.bessel_y1(x)),
          [edges_and_uniform(BESSEL_EDGES, -40, 40)], FLOATS, opsets=(9, 18, 26)),
    Entry("airy_ai", S.airy_ai, [edges_and_uniform(BESSEL_EDGES, -40, 10)], FLOATS, opsets=(9, 18, 26)),
    Entry("bessel_empty", lambda x: (torch.i0(x), S.i1e(x), S.modified_bessel_k1(x), S.bessel_y0(x), S.airy_ai(x)),
          [t(0, 3)], opsets=(18,)),
    Entry("chebyshev", lambda x, n: tuple(f(x, n) for f in CHEBYSHEV), [grid(POLY_X, POLY_N)], FLOATS),
    Entry("shifted_chebyshev", lambda x, n: tuple(f(x, n) for f in SHIFTED), [grid(POLY_X, POLY_N)], FLOATS),
    Entry("hermite_laguerre_legendre", lambda x, n: tuple(f(x, n) for f in OTHERS), [grid(POLY_X, POLY_N)], FLOATS),
    Entry("polynomial_int_degree", lambda x, n: tuple(f(x, n) for f in POLYNOMIALS),
          [grid([-1.5, -1.0, -0.4, 0.0, 0.3, 1.0, 2.0], [-2, 0, 1, 3, 8, 12, 30], torch.int64)], FLOATS,
          opsets=(9, 18)),
    # a Python degree: unrolled up to 16, a Loop beyond; fractions truncate, negatives give 0
    Entry("polynomial_scalar_degree", lambda x: tuple(f(x, n) for f in POLYNOMIALS for n in (-1, 3, 9.7, 25)),
          [edges([-1.5, -1.0, -0.4, 0.0, 0.3, 0.5, 1.0, 2.0])], FLOATS, opsets=(18,)),
    Entry("polynomial_scalar_x", lambda n: tuple(f(x, n) for f in POLYNOMIALS for x in (0.5, 2)),
          [edges([-1.0, 0.0, 1.0, 2.0, 7.0, 12.0])], FLOATS, opsets=(18,)),
    Entry("polynomial_int_operands", lambda x, n: tuple(f(x, n) for f in POLYNOMIALS),
          [lambda d: (torch.tensor([[-2], [0], [1], [3]], dtype=d), torch.tensor([0, 1, 2, 5], dtype=d))],
          (torch.int64,), opsets=(9, 18)),
    # above degree 128 (float32) or 512 (float64) eager gives NaN
    Entry("hermite_degree_limit", lambda x, n: (S.hermite_polynomial_h(x, n), S.hermite_polynomial_he(x, n)),
          [grid([-0.3, 0.0, 0.2], [127.0, 128.0, 129.0, 513.0, 600.0])], FLOATS, opsets=(9, 18)),
]

CASES = cases(TABLE)


@pytest.mark.parametrize("entry, sample, dtype, opset", CASES)
def test_op(entry: Entry, sample, dtype, opset):
    torch.manual_seed(0)
    run_both(entry.fn, sample(dtype), opset, ort=entry.ort)


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
