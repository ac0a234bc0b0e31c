"""Data movement, indexing and counting ops: histograms and bincount (edges, NaN, weights, density),
segment and bag reductions, put and masked writes, repeat_interleave, unique_consecutive, im2col/col2im
and unfold windows, at opsets before and after CumSum (11) and ScatterElements' reduction (16)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from optable import Entry, t

FLOATS = (torch.float32, torch.float64)
INTS = (torch.int32, torch.int64)
NAN, INF = float("nan"), float("inf")
# before and after scatter-add (16); the newest opset
COUNTING = (9, 16, 26)
aten = torch.ops.aten


def ints(*shape, low=0, high=6):
    return lambda dtype: (torch.randint(low, high, shape).to(dtype),)


def near_edges(dtype):
    """Values on, just below and just above linspace(-1.3, 2.7, 11)'s edges, where bins are decided."""
    e = torch.linspace(-1.3, 2.7, 11, dtype=dtype)
    return (torch.cat([e, e.nextafter(torch.tensor(-10.0, dtype=dtype)), e.nextafter(torch.tensor(10.0, dtype=dtype)),
                       torch.tensor([NAN, -5.0, 5.0], dtype=dtype)]),)


def segments(lengths):
    return lambda dtype: (torch.tensor([1.0, NAN, 3.0, -2.0, 5.0, 0.5], dtype=dtype), torch.tensor(lengths))


def bags(dtype):
    return torch.randn(6, 3, dtype=dtype), torch.tensor([0, 4, 1, 4, 5]), torch.tensor([0, 2, 2, 5])


HISTOGRAMS = [
    Entry("histc", lambda x: (torch.histc(x, 7), torch.histc(x, 4, -1, 1), torch.histc(x, 1)), [t(40)], FLOATS,
          opsets=COUNTING, keys=("aten::histc.default",)),
    Entry("histc_edges_nan", lambda x: (torch.histc(x, 10, -1.3, 2.7), torch.histc(x[:-3], 10)), [near_edges], FLOATS,
          opsets=(9, 16), keys=("aten::histc.default", "aten::slice.Tensor")),
    Entry("histc_constant", lambda x: torch.histc(x, 4), [lambda d: (torch.full((5,), 2.0, dtype=d),)], opsets=(9, 16),
          keys=("aten::histc.default",)),
    Entry("histogram", lambda x, w: (torch.histogram(x, 5), torch.histogram(x, 3, weight=w, density=True),
                                     torch.histogram(x, 4, range=(-1.0, 1.0), weight=w)),
          [lambda d: (torch.randn(30, dtype=d), torch.rand(30, dtype=d))], FLOATS, opsets=COUNTING,
          keys=("aten::histogram.bin_ct",)),
    Entry("histogram_edges", lambda x: torch.histogram(x[:-3], 10), [near_edges], FLOATS, opsets=(9, 16),
          keys=("aten::histogram.bin_ct", "aten::slice.Tensor")),
    Entry("histogram_bins_tensor", lambda x, b: torch.histogram(x, b, density=True),
          [lambda d: (torch.randn(20, dtype=d), torch.tensor([-1.0, 0.0, 0.0, 0.5, 2.0], dtype=d))], FLOATS,
          opsets=(9, 16), keys=("aten::histogram.bins_tensor",)),
    Entry("histogram_inf_weight", lambda x, w: torch.histogram(x, 4, range=(0.0, 1.0), weight=w),
          [lambda d: (torch.rand(8, dtype=d), torch.tensor([NAN, INF, 1, 1, 1, 1, 1, 1], dtype=d))], opsets=(9, 16),
          keys=("aten::histogram.bin_ct",)),
    Entry("histogramdd", lambda x, w: (torch.histogramdd(x, [3, 2, 4], weight=w, density=True),
                                       torch.histogramdd(x, [2, 2, 2], range=[-1.0, 1.0, 0.0, 2.0, -3.0, 3.0])),
          [lambda d: (torch.randn(25, 3, dtype=d), torch.rand(25, dtype=d))], FLOATS, opsets=(9, 16),
          keys=("aten::histogramdd.default",)),
    Entry("histogramdd_tensors", lambda x, a, b: torch.histogramdd(x, [a, b]),
          [lambda d: (torch.randn(20, 2, dtype=d), torch.tensor([-1.0, 0.0, 1.0], dtype=d),
                      torch.tensor([-2.0, 0.0, 0.5, 2.0], dtype=d))], opsets=(9, 16),
          keys=("aten::histogramdd.TensorList_bins",)),
    Entry("histogram_empty", lambda x: (torch.histogram(x, 3), torch.histc(x, 2)), [t(0, 4)], opsets=(9, 16),
          keys=("aten::histc.default", "aten::histogram.bin_ct")),
    Entry("bincount", lambda x: (torch.bincount(x), torch.bincount(x, minlength=9)), [ints(12)],
          (torch.uint8, torch.int64), opsets=COUNTING, keys=("aten::bincount.default",)),
    Entry("bincount_weights", lambda x, w, v: (torch.bincount(x, w), torch.bincount(x, v, 8)),
          [lambda d: (torch.randint(0, 6, (10,)), torch.randn(10, dtype=d), torch.randint(-5, 5, (10,)))], FLOATS,
          opsets=(9, 16), keys=("aten::bincount.default",)),
    Entry("bincount_empty", lambda x: torch.bincount(x, minlength=3), [ints(0)], (torch.int64,), opsets=(9, 16),
          keys=("aten::bincount.default",)),
]

SEGMENTS = [
    # before and after CumSum and ReduceSum's axes input (13), the other reductions' axes input (18)
    Entry("segment_reduce", lambda d, n: [aten.segment_reduce(d, reduce, lengths=n, initial=initial)
                                          for reduce in ("sum", "mean", "max", "min", "prod") for initial in (None, 2.0)],
          [segments([2, 0, 3, 1])], FLOATS, opsets=(9, 13, 18, 26), keys=("aten::segment_reduce.default",)),
    Entry("segment_reduce_offsets_axis", lambda d, o: (aten.segment_reduce(d, "max", offsets=o, axis=1),
                                                       aten.segment_reduce(d, "mean", offsets=o, axis=1, initial=-1.0)),
          [lambda d: (torch.randn(2, 5, 3, dtype=d), torch.tensor([[0, 2, 2, 5], [0, 1, 4, 5]]))], opsets=(9, 13, 18),
          keys=("aten::segment_reduce.default",)),
    Entry("unique_consecutive", lambda x: (aten.unique_consecutive(x), aten.unique_consecutive(x, True, True)),
          [lambda d: (torch.tensor([[1, 1, 2], [2, 2, 3]], dtype=d),)], (torch.float32, torch.int64, torch.uint8),
          opsets=(9, 11, 26), keys=("aten::unique_consecutive.default",)),
    Entry("unique_consecutive_nan", lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True),
          [lambda d: (torch.tensor([NAN, NAN, 1.0, 1.0, INF], dtype=d),)], FLOATS, opsets=(9, 11),
          keys=("aten::unique_consecutive.default",)),
    Entry("unique_consecutive_dim", lambda x: (aten.unique_consecutive(x, dim=1), aten.unique_consecutive(x, True, True, 0)),
          [lambda d: (torch.tensor([[1, 1, 2, 2], [2, 2, 3, 3], [2, 2, 3, 3]], dtype=d),)], (torch.float32, torch.int64),
          opsets=(9, 11, 18), keys=("aten::unique_consecutive.default",)),
    Entry("embedding_bag", lambda w, i, o, p: [aten.embedding_bag.padding_idx(w, i, o if last else o[:-1], False, mode,
                                                                              False, p if mode == 0 else None, last, pad)
                                               for mode in range(3) for pad in (None, 4, -1) for last in (False, True)],
          [lambda d: (*bags(d), torch.rand(5, dtype=d))], FLOATS, opsets=(9, 18),
          keys=("aten::embedding_bag.padding_idx", "aten::slice.Tensor")),
    Entry("embedding_bag_functional", lambda w, i, o: (F.embedding_bag(i, w, o, mode="max"),
                                                       F.embedding_bag(i.reshape(1, 5), w, mode="mean", padding_idx=0)),
          [lambda d: bags(d)[:2] + (torch.tensor([0, 3]),)], opsets=(9, 13, 18),
          keys=("aten::arange.start_step", "aten::embedding_bag.padding_idx", "aten::reshape.default")),
    Entry("embedding_renorm", lambda w, i: [aten.embedding_renorm(w, i, 1.0, p) for p in (2.0, 1.0, 3.0, 0.0, INF, -INF)],
          [lambda d: (torch.randn(5, 3, dtype=d) * 2, torch.tensor([[0, 2], [2, 4]]))], FLOATS, opsets=(9, 16, 18),
          keys=("aten::embedding_renorm.default",)),
]

WRITES = [
    Entry("put", lambda x, i, s: (aten.put(x, i, s), aten.put(x, i, s, True)),
          [lambda d: (torch.randn(3, 3).to(d), torch.tensor([0, -1, 4, 0]), torch.randn(4).to(d))],
          (torch.float64, torch.int32), opsets=(9, 11, 16, 26), keys=("aten::put.default",)),
    Entry("put_0d", lambda x, i, s: aten.put(x, i, s, True), [lambda d: (torch.randn(()).to(d), torch.tensor(0),
                                                                        torch.randn(()).to(d))], opsets=(9, 16),
          keys=("aten::put.default",)),
    Entry("put_bool", lambda x, i, s: (aten.put(x, i, s), aten.put(x, i, s, True)),
          [lambda d: (torch.rand(5) > 0.5, torch.tensor([0, 4, 4]), torch.tensor([True, False, True]))], (torch.bool,),
          opsets=(9, 11, 16), keys=("aten::put.default",)),
    Entry("masked_scatter", lambda x, m, s: x.masked_scatter(m, s),
          [lambda d: (torch.randn(3, 4).to(d), torch.rand(4) > 0.5, torch.randn(20).to(d))],
          (torch.float32, torch.int64, torch.int16), opsets=(9, 11), keys=("aten::masked_scatter.default",)),
    Entry("masked_index", lambda x, m, i, j: aten._unsafe_masked_index(x, m, [i, j], 2.5),
          [lambda d: (torch.randn(5, 5, 2).to(d), torch.rand(6, 7, 1) > 0.3, torch.randint(-7, 8, (6, 1)),
                      torch.randint(-7, 8, (1, 7)))], (torch.float32, torch.int16), opsets=(9, 11, 26),
          keys=("aten::_unsafe_masked_index.default",)),
    Entry("masked_index_skipped_dim", lambda x, m, j: aten._unsafe_masked_index(x, m, [None, j], -1),
          [lambda d: (torch.randn(5, 5, 2).to(d), torch.rand(5, 7, 2) > 0.3, torch.randint(-7, 8, (7,)))],
          opsets=(11, 18), keys=("aten::_unsafe_masked_index.default",)),
    Entry("masked_index_put", lambda x, m, i, j, v: aten._unsafe_masked_index_put_accumulate(x, m, [i, j], v),
          [lambda d: (torch.randn(5, 5).to(d), torch.rand(6, 7) > 0.3, torch.randint(-7, 8, (6, 1)),
                      torch.randint(-7, 8, (1, 7)), torch.randn(6, 7).to(d))], (torch.float32, torch.int32),
          opsets=COUNTING, keys=("aten::_unsafe_masked_index_put_accumulate.default",)),
    Entry("masked_index_put_skipped_dim", lambda x, m, j, v: aten._unsafe_masked_index_put_accumulate(x, m, [None, j], v),
          [lambda d: (torch.randn(5, 5).to(d), torch.rand(5, 7) > 0.3, torch.randint(-7, 8, (7,)), torch.randn(5, 7).to(d))],
          opsets=(16, 18), keys=("aten::_unsafe_masked_index_put_accumulate.default",)),
    Entry("max_pool2d_backward", lambda g, x, i: aten.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1],
                                                                                       False, i),
          [lambda d: (torch.randn(2, 3, 3, 3, dtype=d), torch.randn(2, 3, 6, 5, dtype=d),
                      torch.randint(0, 30, (2, 3, 3, 3)))], FLOATS, opsets=(9, 16),
          keys=("aten::max_pool2d_with_indices_backward.default",)),
    Entry("max_pool3d_backward", lambda g, x, i: aten.max_pool3d_with_indices_backward(g, x, [2] * 3, [2] * 3, [0] * 3,
                                                                                       [1] * 3, False, i),
          [lambda d: (torch.randn(2, 2, 2, 2, dtype=d), torch.randn(2, 4, 4, 4, dtype=d),
                      torch.randint(0, 64, (2, 2, 2, 2)))], opsets=(9, 16),
          keys=("aten::max_pool3d_with_indices_backward.default",)),
]

MOVES = [
    Entry("repeat_interleave", lambda x, r: (torch.repeat_interleave(x, 3, 1), torch.repeat_interleave(x, 2),
                                             torch.repeat_interleave(x, r, 0), torch.repeat_interleave(r),
                                             torch.repeat_interleave(x, r[:1], 0)),
          [lambda d: (torch.randn(4, 2).to(d), torch.tensor([1, 0, 3, 2]))], (torch.float32, torch.int64),
          opsets=(9, 11, 18),
          keys=("aten::repeat_interleave.Tensor", "aten::repeat_interleave.self_Tensor",
                "aten::repeat_interleave.self_int", "aten::slice.Tensor")),
    Entry("nonzero_static", lambda x: (aten.nonzero_static(x, size=4), aten.nonzero_static(x, size=1, fill_value=7),
                                       aten.nonzero_static(x, size=0)),
          [lambda d: (torch.tensor([[0, 1, 2], [0, 0, 3]], dtype=d),)], (torch.float32, torch.int64, torch.bool),
          opsets=(9, 18), keys=("aten::nonzero_static.default",)),
    Entry("combinations", lambda x: torch.combinations(x, 1), [t(4)], FLOATS + INTS, opsets=(9, 18),
          keys=("aten::combinations.default",)),
    Entry("resize", lambda x, y: (aten.resize(x, [3, 2]), aten.resize(x, [2, 4]), aten.resize_as(x, y)),
          [lambda d: (torch.randn(2, 4).to(d), torch.randn(8).to(d))], FLOATS + INTS, opsets=(9, 18),
          keys=("aten::resize.default", "aten::resize_as.default")),
    Entry("unfold_copy", lambda x: (aten.unfold_copy(x, 1, 3, 2), aten.unfold_copy(x, -1, 2, 1), aten.unfold_copy(x[0, 0, 0], 0, 1, 1)),
          [t(2, 7, 3)], FLOATS + INTS, opsets=(9, 18), keys=("aten::select.int", "aten::unfold_copy.default")),
    Entry("im2col", lambda x: (F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), F.unfold(x, 2),
                               F.unfold(x[0], 3, padding=(0, 2))),
          [t(2, 3, 5, 6)], FLOATS, opsets=(9, 13, 18), keys=("aten::im2col.default", "aten::select.int")),
    Entry("col2im", lambda x: (F.fold(x, (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
                               F.fold(x[0], (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))),
          [t(2, 18, 12)], FLOATS, opsets=(9, 13, 18), keys=("aten::col2im.default", "aten::select.int")),
    Entry("col2im_nan", lambda x: F.fold(x, (3, 3), 2), [lambda d: (torch.tensor([[NAN, 1.0, 2.0, 3.0]] * 4, dtype=d),)],
          opsets=(9, 18), keys=("aten::col2im.default",)),
]

TABLE = HISTOGRAMS + SEGMENTS + WRITES + MOVES
