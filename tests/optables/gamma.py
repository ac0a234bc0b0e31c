"""Gamma-family special functions (aten2onnx/symbolic/opset9_gamma.py, opset9_igamma.py): edge values (poles,
zeros of either sign, infinities, NaN, the branch boundaries of each approximation) and random samples."""

from __future__ import annotations

import functools

import torch
from optable import Entry, t, t2

FLOATS = (torch.float32, torch.float64)
INF, NAN = float("inf"), float("nan")
# The translations use opset-9 ops only, the same at every opset: the lowest and the newest are checked,
# and the incomplete gamma functions (large graphs, with a Loop) at one opset in between.
OPSETS = (9, 26)
IGAMMA_OPSETS = (18,)
E = functools.partial(Entry, opsets=OPSETS)


def v(*values):
    """One sample: a tensor of these values at the entry's dtype."""
    return lambda dtype: (torch.tensor(values, dtype=dtype),)


def pairs(*rows):
    """One sample of two tensors from (a, b) rows."""
    return lambda dtype: tuple(torch.tensor(col, dtype=dtype) for col in zip(*rows))


def positive_pairs(n, low, high):
    return lambda dtype: tuple(torch.empty(n).uniform_(low, high).to(dtype) for _ in range(2))


TABLE = [
    E("lgamma", torch.lgamma, [
        v(0.0, -0.0, -1.0, -2.0, -2.5, 1.0, 2.0, 0.5, 1.5, -0.5, INF, -INF, NAN, 1e-30, -1e-30, 1e20, 171.5, -100.2),
        t(30, low=-10, high=10)], FLOATS, keys=("aten::lgamma.default",)),
    E("lgamma_int", torch.lgamma, [v(-3, 0, 1, 2, 7)], (torch.int32, torch.int64), keys=("aten::lgamma.default",)),
    E("lgamma_half", torch.lgamma, [t(20, low=-5, high=5)], (torch.float16,), keys=("aten::lgamma.default",)),
    E("digamma", torch.digamma, [
        v(0.0, -0.0, -1.0, -3.0, -2.5, -0.3, 1.0, 9.0, 10.0, 11.0, 1e17, INF, -INF, NAN, 1e-30, -1e-30),
        t(30, low=-10, high=20)], FLOATS, keys=("aten::digamma.default",)),
    E("digamma_bool", torch.digamma, [lambda d: (torch.tensor([True, False]),)], (torch.bool,),
      keys=("aten::digamma.default",)),
    E("trigamma", lambda x: torch.polygamma(1, x), [
        v(0.0, 0.49, 0.5, 1.0, 6.5, -2.5, -0.3, INF, NAN, 1e-10, 1e10), t(30, low=-7.9, high=-7.1),
        t(30, low=0.01, high=30)], FLOATS, keys=("aten::polygamma.default",)),
    # eager reflects with sin(pi x) unreduced, in the input's dtype: at a pole (a non-positive integer, every
    # integer input's case) a huge finite value, and far below 0 a float32 result rounded as eager's
    # (onnxruntime's float64 Sin of -pi is exactly 0, where eager's is -1.2e-16: -1 is left to the integers)
    E("trigamma_poles", lambda x: torch.polygamma(1, x), [v(-8, -3, -1, 0, 2), v(-100, -17, -120, 5)],
      (torch.int8, torch.int16, torch.int64), keys=("aten::polygamma.default",)),
    E("trigamma_float_poles", lambda x: torch.polygamma(1, x), [v(-8, -3, 0, 2), v(-100, -17, -120, 5)], FLOATS,
      keys=("aten::polygamma.default",)),
    E("trigamma_far_below_zero", lambda x: torch.polygamma(1, x), [v(-1000.3, -4567.25, -300.7, -12345.6)], FLOATS,
      keys=("aten::polygamma.default",)),
    E("polygamma_3", lambda x: torch.polygamma(3, x), [
        v(0.0, -1.0, -2.5, 1.0, 1e-13, 0.5, 100.0, INF, -INF, NAN), t(30, low=-9, high=9)], FLOATS,
      keys=("aten::polygamma.default",)),
    # n! overflows float32 from n = 35: eager's float32 result is infinite there, its float64 one finite.
    E("polygamma_40", lambda x: torch.polygamma(40, x), [v(10.0, 0.5, 100.0, -3.3)], FLOATS + (torch.int64,),
      keys=("aten::polygamma.default",)),
    E("mvlgamma_1", lambda x: torch.mvlgamma(x, 1), [t(3, 4, low=0.1, high=10)], FLOATS,
      keys=("aten::mvlgamma.default",)),
    E("mvlgamma_5", lambda x: torch.mvlgamma(x, 5), [t(3, 4, low=2.01, high=10), v(2.5)], FLOATS,
      keys=("aten::mvlgamma.default",)),
    E("mvlgamma_int", lambda x: torch.mvlgamma(x, 3), [v(2, 3, 10)], (torch.int64,), keys=("aten::mvlgamma.default",)),
    E("zeta", torch.special.zeta, [
        pairs((2.0, INF), (2.0, -INF), (INF, 2.0), (INF, 0.5), (1.5, -1.5), (3.0, -1.5), (3.0, -30.5), (2.0, 1e-30),
              (1.0, 2.0), (0.5, 2.0), (2.0, NAN), (NAN, 1.0), (1e10, 2.0), (100.0, 1.0), (4.0, -3.7), (1.0001, 0.3),
              (30.0, 1e-3), (2.0, -2.0), (2.0, 0.0), (2.5, 1e5)),
        lambda d: (torch.empty(30).uniform_(1, 12).to(d), torch.empty(30).uniform_(0.01, 20).to(d)),
        t2((4, 1), (5,), 1.1, 6)], FLOATS, keys=("aten::special_zeta.default",)),
    E("zeta_int", torch.special.zeta, [pairs((2, 1), (3, 2), (4, -2), (1, 5), (0, 3))], (torch.int64,),
      keys=("aten::special_zeta.default",)),
    E("zeta_self_scalar", lambda q: torch.special.zeta(2.0, q), [t(5, low=0.1, high=5)], FLOATS,
      keys=("aten::special_zeta.self_scalar",)),
    E("zeta_other_scalar", lambda x: torch.special.zeta(x, 3), [t(5, low=1.1, high=5)], FLOATS,
      keys=("aten::special_zeta.other_scalar",)),
    E("igamma", torch.igamma, [
        pairs((0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (INF, INF), (INF, 1.0), (2.0, INF), (-1.0, 1.0), (1.0, -1.0),
              (NAN, 1.0), (1.0, NAN), (1e-30, 1.0), (1e30, 1e30), (1e5, 1e5 + 10), (25.0, 24.0), (150.0, 160.0),
              (300.0, 280.0), (3.0, 1e-3), (0.5, 0.7), (1e-3, 1e3), (5.0, 1.05), (0.2, 0.3), (2.0, 1.5)),
        positive_pairs(30, 0.01, 30), lambda d: (torch.tensor([30.0, 50.0, 400.0], dtype=d),
                                                  torch.tensor([[25.0], [33.0], [45.0]], dtype=d))],
          FLOATS, opsets=IGAMMA_OPSETS, keys=("aten::igamma.default",)),
    E("igammac", torch.igammac, [
        pairs((0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (INF, INF), (INF, 1.0), (2.0, INF), (-1.0, 1.0), (NAN, 1.0),
              (1e-30, 1.0), (1e5, 1e5 + 10), (25.0, 24.0), (300.0, 280.0), (3.0, 1e-3), (0.5, 0.7), (0.01, 0.3),
              (1e-3, 1e3), (5.0, 1.05), (0.2, 0.6), (2.0, 1.5), (40.0, 10.0)),
        positive_pairs(30, 0.01, 30)], FLOATS, opsets=IGAMMA_OPSETS, keys=("aten::igammac.default",)),
    E("erfinv", torch.erfinv, [
        v(0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 0.7, -0.7, 0.70001, 0.9999, -0.999999, 1e-20, INF, NAN),
        t(30, low=-1, high=1)], FLOATS, keys=("aten::erfinv.default",)),
    E("erfinv_int", torch.erfinv, [v(-1, 0, 1, 2)], (torch.int64,), keys=("aten::erfinv.default",)),
    E("ndtri", torch.special.ndtri, [
        v(0.0, -0.0, 1.0, -0.1, 1.1, 0.5, 0.135, 0.136, 0.864, 0.865, 1e-20, 1e-30, 1 - 1e-7, INF, NAN),
        t(30, low=0, high=1), lambda d: (torch.logspace(-30, -1, 20).to(d),)], FLOATS,
      keys=("aten::special_ndtri.default",)),
    E("erfcx", torch.special.erfcx, [
        v(-30.0, -26.7, -10.0, -6.2, -6.0, -1.0, -0.0, 0.0, 0.3, 2.49, 2.5, 2.51, 49.0, 51.0, 1e8, INF, -INF, NAN),
        t(30, low=-6, high=12)], FLOATS, keys=("aten::special_erfcx.default",)),
    E("erfcx_int", torch.special.erfcx, [v(-2, 0, 3)], (torch.int32,), keys=("aten::special_erfcx.default",)),
    E("log_ndtr", torch.special.log_ndtr, [
        v(-INF, INF, NAN, -1e3, -40.0, -3.6, -1.0, -0.99, 0.0, 5.0, 10.0, 40.0), t(30, low=-12, high=8)], FLOATS,
      keys=("aten::special_log_ndtr.default",)),
]
