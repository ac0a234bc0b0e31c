"""Numeric utilities, order statistics and margin losses: bit shifts, gcd/lcm, trapezoid rules,
gradient, renorm, frexp, nextafter, multi(label) margin losses, quantiles, nanmedian and mode, on
edge values."""

from __future__ import annotations

import math

import torch

from optable import Entry, t, t2

FLOATS = (torch.float32, torch.float64)
INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
SIGNED = (torch.int8, torch.int16, torch.int32, torch.int64)
F = torch.nn.functional
nan, inf = math.nan, math.inf


def shifts(dtype):
    """Values (negatives, extremes) against shift amounts of 0 up to past the bit width, negatives too."""
    info = torch.iinfo(dtype)
    values = [5, 1, info.max, info.min, 100 % (info.max + 1), 3, 0, 7]
    amounts = [0, 1, info.bits - 1, info.bits, info.bits + 1, 2, 3, 1]
    if dtype.is_signed:
        values[1:3] = [-5, -1]
        amounts[6:] = [-1, -3]
    return (torch.tensor(values, dtype=dtype), torch.tensor(amounts, dtype=dtype))


def gcd_pairs(dtype, *, minimum=True):
    """Zeros, negatives, extremes; the most negative value too (eager's lcm of it can trap: left out)."""
    info = torch.iinfo(dtype)
    a = [0, 0, 12, 7, 100, info.max, 36, 1]
    b = [0, 9, 18, 13, 75, 3, 0, info.max]
    if dtype.is_signed:
        a[2:4], b[6] = [-12, info.min if minimum else -info.max], -24
    return (torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype))


def rows(*values, dtype=None):
    return lambda d: (torch.tensor(values, dtype=dtype or d),)


def frexp_values(dtype):
    info = torch.finfo(dtype)
    return (torch.tensor([0.0, -0.0, inf, -inf, nan, 1.0, 0.5, -3.0, 1024.0, 0.1, info.max, -info.max, info.tiny,
                          info.tiny / 2, info.tiny * 2 ** -(round(-math.log2(info.eps))), 2.0 ** -100 if dtype != torch.float16
                          else 2.0 ** -10], dtype=dtype),)


def nextafter_values(dtype):
    info = torch.finfo(dtype)
    tiny_sub = info.tiny * info.eps
    x = [0.0, 0.0, -0.0, 1.0, 1.0, -1.0, -1.0, 2.0, 2.0, 0.75, info.max, info.max, -info.max, inf, -inf, inf, nan,
         1.0, info.tiny, info.tiny, tiny_sub, -tiny_sub, 3.0, 0.1, -1024.0]
    y = [1.0, -1.0, 0.0, 2.0, 0.0, -2.0, 0.0, 0.0, 3.0, 1.0, inf, 0.0, -inf, 0.0, 0.0, inf, 1.0,
         nan, 0.0, 1.0, 0.0, 0.0, 3.0, -5.0, -inf]
    return (torch.tensor(x, dtype=dtype), torch.tensor(y, dtype=dtype))


def margin_sample(rows_, classes, targets):
    return lambda d: (torch.randn(rows_, classes, dtype=d), torch.tensor(targets))


def labels_sample(d):
    return (torch.randn(4, 5, dtype=d), torch.tensor([[3, 0, -1, 1, 2], [1, 1, 4, -1, -1], [-1, 2, 3, 0, 0],
                                                      [0, 1, 2, 3, 4]]))


def with_nans(d):
    x = torch.randn(4, 6, dtype=d)
    x[0, 2] = x[1, 0] = x[1, 5] = nan
    x[2] = nan
    x[3, 1], x[3, 4] = inf, -inf
    return (x,)


def nan_before_inf(d):
    return (torch.tensor([[nan, inf, 1.0], [inf, nan, 2.0], [nan, inf, inf], [2.0, 2.0, 2.0], [3.0, 1.0, 3.0]],
                         dtype=d),)


def mode_ties(d):
    return (torch.tensor([[1, 2, 2, 1, 3], [3, 3, 1, 1, 1], [0, 1, 2, 3, 4], [4, 4, 4, 4, 4]], dtype=d),)


QUANTILE_Q = torch.tensor([0.0, 0.25, 0.5, 0.6, 1.0])
OPSETS = (9, 18)  # the base, and the newest axes forms (the OpInfo checks below run 26 too)
SORTING = (9, 11, 26)  # TopK sorts ascending, stably, from opset 11; before, as the largest of -x, and
# GatherElements is a Gather from the flattened tensor (static shapes)
SORTING_INTS = (11, 26)  # before 11 TopK takes floats only, and int32/int64 do not widen to one exactly

TABLE = [
    Entry("left_shift", torch.bitwise_left_shift, [shifts], INTS, opsets=OPSETS,
          keys=("aten::bitwise_left_shift.Tensor",)),
    Entry("right_shift", torch.bitwise_right_shift, [shifts], INTS, opsets=OPSETS,
          keys=("aten::bitwise_right_shift.Tensor",)),
    Entry("shift_scalars", lambda a, b: (a << 3, a >> 2, torch.bitwise_left_shift(3, b), torch.bitwise_right_shift(-100, b)),
          [lambda d: (torch.tensor([[1, -7, 100]], dtype=d), torch.tensor([0, 5, 63], dtype=d))], (torch.int64,), opsets=OPSETS,
          keys=("aten::__lshift__.Scalar", "aten::__rshift__.Scalar", "aten::bitwise_left_shift.Scalar_Tensor",
                "aten::bitwise_right_shift.Scalar_Tensor")),
    Entry("shift_promoted", lambda a, b: (a << b, a >> b), [lambda d: (torch.tensor([200, 1, 255], dtype=torch.uint8),
                                                                       torch.tensor([[1], [9]], dtype=d))], (torch.int64,), opsets=OPSETS,
          keys=("aten::__lshift__.Tensor", "aten::__rshift__.Tensor")),
    Entry("gcd", torch.gcd, [gcd_pairs], INTS, opsets=OPSETS, keys=("aten::gcd.default",)),
    Entry("lcm", torch.lcm, [lambda d: gcd_pairs(d, minimum=False), lambda d: (torch.tensor([[4], [6]], dtype=d), torch.tensor([6, 0, 10], dtype=d))],
          (torch.uint8, torch.int8, torch.int64), opsets=OPSETS, keys=("aten::lcm.default",)),
    Entry("gcd_empty", torch.gcd, [lambda d: (torch.zeros(0, 3, dtype=d), torch.ones(3, dtype=d))], (torch.int64,), opsets=OPSETS,
          keys=()),  # empty results are constants: nothing dispatched
    Entry("trapezoid", lambda y, x: (torch.trapezoid(y, x), torch.trapezoid(y, x[0], dim=1), torch.trapz(y, x),
                                     torch.trapezoid(y, dx=0.5, dim=0), torch.trapz(y, dx=2.0)),
          [t2((3, 4), (3, 4))], FLOATS, opsets=OPSETS,
          keys=("aten::select.int", "aten::trapezoid.dx", "aten::trapezoid.x", "aten::trapz.dx", "aten::trapz.x")),
    Entry("trapezoid_broadcast", lambda y, x: (torch.trapezoid(y, x[:, :1], dim=-2), torch.trapezoid(y, x[:1]),
                                               torch.cumulative_trapezoid(y, x[:1])),
          [t2((2, 3, 4), (3, 4))], opsets=OPSETS,
          keys=("aten::cumulative_trapezoid.x", "aten::slice.Tensor", "aten::trapezoid.x")),
    Entry("trapezoid_ints", lambda y, x: (torch.trapezoid(y), torch.trapezoid(y, x), torch.trapezoid(y, dx=3),
                                          torch.cumulative_trapezoid(y, dx=2), torch.cumulative_trapezoid(y, x)),
          [lambda d: (torch.tensor([[100, 0, 100, 50], [-100, 27, 1, 3]], dtype=d), torch.tensor([1, 3, 4, 100], dtype=d))],
          (torch.int8, torch.int64), opsets=OPSETS,
          keys=("aten::cumulative_trapezoid.dx", "aten::cumulative_trapezoid.x", "aten::trapezoid.dx",
                "aten::trapezoid.x")),
    Entry("trapezoid_empty", lambda y: (torch.trapezoid(y, dim=0), torch.trapezoid(y, dx=2.0), torch.cumulative_trapezoid(y)),
          [lambda d: (torch.ones(0, 1, dtype=d),)], opsets=OPSETS, keys=("aten::trapezoid.dx",)),
    Entry("cumulative_trapezoid", lambda y, x: (torch.cumulative_trapezoid(y, x), torch.cumulative_trapezoid(y, x[1], dim=1),
                                                torch.cumulative_trapezoid(y, dx=0.3, dim=0)),
          [t2((3, 5), (3, 5))], FLOATS, opsets=OPSETS,
          keys=("aten::cumulative_trapezoid.dx", "aten::cumulative_trapezoid.x", "aten::select.int")),
    Entry("gradient", lambda x: (*torch.gradient(x), *torch.gradient(x, spacing=2.0, dim=1, edge_order=2),
                                 *torch.gradient(x, spacing=[0.5, 3], edge_order=2), *torch.gradient(x, dim=(0,)),
                                 *torch.gradient(x, spacing=1.5, dim=[1, 0]), *torch.gradient(x, spacing=[2.0], dim=1)),
          [t(3, 4)], FLOATS, opsets=OPSETS,
          keys=("aten::gradient.array", "aten::gradient.scalararray", "aten::gradient.scalarint",
                "aten::gradient.scalarrayint")),
    Entry("gradient_two", lambda x: (*torch.gradient(x, spacing=(torch.tensor([0.0, 2.0]), torch.tensor([1.0, 1.5, 4.0]))),
                                     *torch.gradient(x, spacing=3.0, dim=0)),
          [t(2, 3)], opsets=OPSETS,
          keys=("aten::detach.default", "aten::gradient.scalarint", "aten::gradient.tensorarrayint",
                "aten::lift_fresh_copy.default")),
    Entry("gradient_coordinates", lambda x, c: (*torch.gradient(x, spacing=(c, c * 2), dim=(0, 2)),
                                                *torch.gradient(x, spacing=(c,), dim=1, edge_order=2)),
          [lambda d: (torch.randn(4, 4, 4, dtype=d), torch.tensor([0.0, 0.5, 1.5, 4.0], dtype=d))], FLOATS, opsets=OPSETS,
          keys=("aten::gradient.tensorarray", "aten::gradient.tensorarrayint", "aten::mul.Tensor")),
    Entry("gradient_ints", lambda x, c: (*torch.gradient(x), *torch.gradient(x, edge_order=2), *torch.gradient(x, spacing=(c,)),
                                         *torch.gradient(x, spacing=(c,), edge_order=2)),
          [lambda d: (torch.tensor([100, -100, 5, 7, 120], dtype=d), torch.tensor([0, 1, 3, 4, 9], dtype=d))],
          (torch.int8, torch.int64), opsets=OPSETS, keys=("aten::gradient.scalarint", "aten::gradient.tensorarrayint")),
    Entry("gradient_uint8_coordinates", lambda x, c: (*torch.gradient(x, spacing=(c,)), *torch.gradient(x, spacing=(c,), edge_order=2)),
          [lambda d: (torch.tensor([1.0, 2.0, 4.0, 7.0, 11.0], dtype=d), torch.tensor([0, 1, 3, 4, 9], dtype=torch.uint8))],
          opsets=OPSETS, keys=("aten::gradient.tensorarrayint",)),
    Entry("renorm", lambda x: (torch.renorm(x, 2, 0, 1.0), torch.renorm(x, 1, 1, 2.0), torch.renorm(x, 3, -1, 0.5),
                               torch.renorm(x, inf, 2, 1.0), torch.renorm(x, 1.5, 0, 100.0)),
          [t(3, 4, 2)], FLOATS, opsets=OPSETS, keys=("aten::renorm.default",)),
    Entry("renorm_nan", lambda x: (torch.renorm(x, inf, 0, 1.0), torch.renorm(x, 2, 0, 1.0)), [with_nans], opsets=OPSETS,
          keys=("aten::renorm.default",)),
    Entry("frexp", torch.frexp, [frexp_values], FLOATS, opsets=OPSETS, keys=("aten::frexp.Tensor",)),
    Entry("frexp_half", torch.frexp, [frexp_values], (torch.float16,), opsets=OPSETS, keys=("aten::frexp.Tensor",)),
    Entry("nextafter", torch.nextafter, [nextafter_values, t2((3, 1), (4,))], FLOATS, opsets=OPSETS,
          keys=("aten::nextafter.default",)),
    Entry("multi_margin_loss", lambda x, y, w: (F.multi_margin_loss(x, y), F.multi_margin_loss(x, y, p=2, margin=0.5, reduction="sum"),
                                                F.multi_margin_loss(x, y, weight=w, reduction="none"),
                                                F.multi_margin_loss(x, y, p=2, weight=w, margin=-2.0)),
          [lambda d: (torch.randn(4, 5, dtype=d), torch.tensor([0, 4, 2, 2]), torch.rand(5, dtype=d))], FLOATS, opsets=OPSETS,
          keys=("aten::multi_margin_loss.default",)),
    Entry("multi_margin_loss_1d", lambda x, y: (F.multi_margin_loss(x, y, reduction="none"),
                                                F.multi_margin_loss(x, y.reshape(1), reduction="none"),
                                                F.multi_margin_loss(x[:1], y * 0), F.multi_margin_loss(x[0], y * 0)),
          [lambda d: (torch.randn(5, dtype=d), torch.tensor(3))], opsets=OPSETS,
          keys=("aten::mul.Tensor", "aten::multi_margin_loss.default", "aten::reshape.default", "aten::select.int",
                "aten::slice.Tensor")),
    Entry("multilabel_margin_loss", lambda x, y: (F.multilabel_margin_loss(x, y), F.multilabel_margin_loss(x, y, reduction="none"),
                                                  F.multilabel_margin_loss(x, y, reduction="sum"),
                                                  F.multilabel_margin_loss(x[1], y[1], reduction="none")),
          [labels_sample], FLOATS, opsets=OPSETS, keys=("aten::multilabel_margin_loss.default", "aten::select.int")),
    Entry("quantile", lambda x: (torch.quantile(x, 0.3), torch.quantile(x, QUANTILE_Q.to(x.dtype), dim=1, keepdim=True),
                                 *(torch.quantile(x, QUANTILE_Q.to(x.dtype), dim=0, interpolation=m)
                                   for m in ("linear", "lower", "higher", "midpoint", "nearest")),
                                 torch.quantile(x, torch.tensor(0.7, dtype=x.dtype), dim=-1, interpolation="nearest"),
                                 torch.quantile(x, QUANTILE_Q.to(x.dtype), keepdim=True)),
          [t(4, 6), with_nans], opsets=SORTING,
          keys=("aten::detach.default", "aten::lift_fresh_copy.default", "aten::quantile.default",
                "aten::quantile.scalar", "aten::to.dtype")),
    Entry("quantile_nearest_ties", lambda x: tuple(torch.quantile(x, q, dim=0, interpolation="nearest") for q in (0.125, 0.375, 0.5)),
          [t(5, 3)], opsets=SORTING, keys=("aten::quantile.scalar",)),
    Entry("nanquantile", lambda x: (torch.nanquantile(x, 0.3), torch.nanquantile(x, QUANTILE_Q.to(x.dtype), dim=1, keepdim=True),
                                    *(torch.nanquantile(x, QUANTILE_Q.to(x.dtype), dim=1, interpolation=m)
                                      for m in ("linear", "lower", "higher", "midpoint", "nearest")),
                                    torch.nanquantile(x[0], 0.5, dim=0, keepdim=True)),
          [t(4, 6), with_nans], (torch.float64,), opsets=SORTING,
          keys=("aten::nanquantile.default", "aten::nanquantile.scalar", "aten::select.int", "aten::to.dtype")),
    Entry("quantile_0d", lambda x: (torch.quantile(x, 0.5), torch.quantile(x, 0.2, dim=0, keepdim=True),
                                    torch.nanquantile(x, torch.tensor([0.1, 0.9]), dim=-1)), [t()], opsets=SORTING,
          keys=("aten::detach.default", "aten::lift_fresh_copy.default", "aten::nanquantile.default",
                "aten::quantile.scalar")),
    Entry("nanmedian", lambda x: (torch.nanmedian(x), *torch.nanmedian(x, 1), *torch.nanmedian(x, 0, keepdim=True)),
          [with_nans, nan_before_inf, t(3, 4)], FLOATS, opsets=SORTING,
          keys=("aten::nanmedian.default", "aten::nanmedian.dim")),
    Entry("nanmedian_ints", lambda x: (torch.nanmedian(x), *torch.nanmedian(x, 1), *torch.nanmedian(x, -1, keepdim=True)),
          [mode_ties], (torch.int32, torch.int64), opsets=SORTING_INTS,
          keys=("aten::nanmedian.default", "aten::nanmedian.dim")),
    Entry("nanmedian_small", lambda x: (torch.nanmedian(x), *torch.nanmedian(x, 0), *torch.nanmedian(x[None], 0),
                                        torch.nanmedian(x[:0])),
          [rows(nan, 2.0, nan), rows(nan), rows(*[nan] * 7)], opsets=SORTING,
          keys=("aten::nanmedian.default", "aten::nanmedian.dim", "aten::unsqueeze.default")),
    Entry("nanmedian_0d", lambda x: (torch.nanmedian(x), *torch.nanmedian(x, 0), *torch.nanmedian(x, -1, keepdim=True)),
          [t()], opsets=SORTING, keys=("aten::nanmedian.default", "aten::nanmedian.dim")),
    Entry("masked_median", lambda x, m: torch.masked.median(x, 1, mask=m), [lambda d: (torch.randn(3, 5, dtype=d), torch.rand(3, 5) > 0.4)], opsets=SORTING,
          keys=("aten::detach.default", "aten::lift_fresh_copy.default", "aten::nanmedian.dim", "aten::to.dtype",
                "aten::where.self")),
    Entry("mode", lambda x: (*torch.mode(x), *torch.mode(x, 0, keepdim=True), *torch.mode(x[0], 0)),
          [mode_ties], (torch.float64, torch.int16, torch.int32, torch.uint8), opsets=OPSETS,
          keys=("aten::mode.default", "aten::select.int")),
    Entry("mode_bool_half", lambda x: (*torch.mode(x > 1), *torch.mode(x.half(), 0)), [mode_ties], (torch.int64,), opsets=OPSETS,
          keys=("aten::gt.Scalar", "aten::mode.default", "aten::to.dtype")),
    Entry("mode_random", lambda x: (*torch.mode(x), *torch.mode(x, 1)), [t(3, 7, 4)], FLOATS, opsets=OPSETS,
          keys=("aten::mode.default",)),
    Entry("mode_0d", lambda x: (*torch.mode(x), *torch.mode(x, 0, True)), [t()], opsets=OPSETS,
          keys=("aten::mode.default",)),
    # integer distances: the difference wraps in its dtype, + eps promotes it to float32 (torch's norm);
    # cosine_embedding_loss's products wrap too, and sum in int64
    Entry("pairwise_distance_ints", lambda a, b, n: (F.pairwise_distance(a, b), F.pairwise_distance(a, b, p=1.0),
                                                     F.triplet_margin_loss(a, b, n), F.triplet_margin_loss(a, b, n, swap=True)),
          [lambda d: tuple(torch.randint(0 if d == torch.uint8 else -100, 101, (4, 6), dtype=d) for _ in range(3))],
          INTS, opsets=OPSETS, keys=("aten::pairwise_distance.default", "aten::triplet_margin_loss.default")),
    Entry("cosine_embedding_loss_ints", lambda a, b, y: (F.cosine_embedding_loss(a, b, y, reduction="none"),
                                                         F.cosine_embedding_loss(a, b, y, margin=0.2)),
          [lambda d: (torch.randint(0, 2, (5, 7)).to(d) if d == torch.bool else
                      torch.randint(0 if d == torch.uint8 else -100, 101, (5, 7), dtype=d),
                      torch.randint(0, 2, (5, 7)).to(d) if d == torch.bool else
                      torch.randint(0 if d == torch.uint8 else -100, 101, (5, 7), dtype=d),
                      torch.tensor([1, -1, 1, -1, 1]))],
          INTS + (torch.bool,), opsets=OPSETS, keys=("aten::cosine_embedding_loss.default",)),
    # ATen's integer pow: a negative exponent gives 1 (base 1), +-1 (base -1), else 0 (base 0 too)
    Entry("pow_negative_int_exponent", lambda a, b: (torch.pow(a, b), 2 ** b, torch.pow(-1, b)),
          [lambda d: (torch.tensor([-3, -2, -1, 0, 1, 2, 3] * 7, dtype=d),
                      torch.tensor([e for e in range(-3, 4) for _ in range(7)], dtype=d))],
          SIGNED, opsets=(13, 18), keys=("aten::pow.Tensor_Tensor", "aten::pow.Scalar")),
    # cummax/cummin index: the last j <= i holding the extreme, also when it equals the filler of the
    # positions past i (the dtype's minimum for cummax, maximum for cummin)
    Entry("cummax_cummin_extreme_values", lambda x: (*torch.cummax(x, 1), *torch.cummin(x, 1), *torch.cummax(x, 0)),
          [lambda d: (torch.tensor([[torch.iinfo(d).min] * 3 + [1, torch.iinfo(d).min, 2],
                                    [torch.iinfo(d).max, 0, torch.iinfo(d).max, torch.iinfo(d).max, 0, 5],
                                    [3, 3, torch.iinfo(d).min, 3, torch.iinfo(d).max, 3]], dtype=d),)],
          INTS, opsets=(13, 18), keys=("aten::cummax.default", "aten::cummin.default")),
]
