"""Library functions that check their arguments on tensor values, captured through the equivalents in
exporter/passes/tracing.py (gaussian_nll_loss's negative-variance check, narrow at a start held in a tensor,
ctc_loss's data-sized alphas); numbers read with item in size arithmetic; matrix_exp's degree choice."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from optable import Entry
from torch import nn

FLOATS = (torch.float32, torch.float64)
REDUCTIONS = ("none", "mean", "sum")
SLICE_OPSETS = (9, 10, 13, 18, 26)


def gaussian(var_shape, low=0.1, high=2.0):
    return lambda dtype: (torch.randn(4, 3, 5, dtype=dtype), torch.randn(4, 3, 5, dtype=dtype),
                          torch.empty(var_shape, dtype=dtype).uniform_(low, high))


def every_reduction(input, target, var, eps=1e-6):
    return tuple(F.gaussian_nll_loss(input, target, var, full=full, eps=eps, reduction=reduction)
                 for reduction in REDUCTIONS for full in (False, True))


def started(start, shape=(5, 6, 4), dtype=torch.int64):
    return lambda d: (torch.randn(shape, dtype=d), torch.tensor(start, dtype=dtype))


def narrow_each_dim(x, t):
    return torch.narrow(x, 0, t, 1), x.narrow(1, t, 2), x.narrow(dim=-1, start=t, length=1), x.narrow(2, t, 0)


def float32_float64(name, fn, samples, keys):
    """float32 and float64 at every opset."""
    return [Entry(name, fn, samples, keys=keys), Entry(name, fn, samples, (torch.float64,), keys=keys)]


GAUSSIAN = [
    *float32_float64("gaussian_nll_loss_var_same_shape", every_reduction, [gaussian((4, 3, 5))],
                     keys=("aten::add.Tensor", "aten::any.default", "aten::clamp.default", "aten::div.Tensor",
                           "aten::log.default", "aten::lt.Scalar", "aten::mean.default", "aten::mul.Tensor",
                           "aten::pow.Tensor_Scalar", "aten::sub.Tensor", "aten::sum.default",
                           "aten::where.ScalarSelf")),
    *float32_float64("gaussian_nll_loss_var_one_fewer_dim", every_reduction, [gaussian((4, 3))],
                     keys=("aten::add.Tensor", "aten::any.default", "aten::clamp.default", "aten::div.Tensor",
                           "aten::log.default", "aten::lt.Scalar", "aten::mean.default", "aten::mul.Tensor",
                           "aten::pow.Tensor_Scalar", "aten::sub.Tensor", "aten::sum.default",
                           "aten::unsqueeze.default", "aten::where.ScalarSelf")),
    *float32_float64("gaussian_nll_loss_var_last_dim_1", every_reduction, [gaussian((4, 3, 1))],
                     keys=("aten::add.Tensor", "aten::any.default", "aten::clamp.default", "aten::div.Tensor",
                           "aten::log.default", "aten::lt.Scalar", "aten::mean.default", "aten::mul.Tensor",
                           "aten::pow.Tensor_Scalar", "aten::sub.Tensor", "aten::sum.default",
                           "aten::where.ScalarSelf")),
    *float32_float64("gaussian_nll_loss_var_one_dim_1", every_reduction, [gaussian((4, 1, 5))],
                     keys=("aten::add.Tensor", "aten::any.default", "aten::clamp.default", "aten::div.Tensor",
                           "aten::log.default", "aten::lt.Scalar", "aten::mean.default", "aten::mul.Tensor",
                           "aten::pow.Tensor_Scalar", "aten::sub.Tensor", "aten::sum.default",
                           "aten::where.ScalarSelf")),
    # below eps: var is clamped to it
    *float32_float64("gaussian_nll_loss_eps", lambda i, t, v: every_reduction(i, t, v, eps=1e-2),
                     [gaussian((4, 3, 5), low=0.0, high=0.02)],
                     keys=("aten::add.Tensor", "aten::any.default", "aten::clamp.default", "aten::div.Tensor",
                           "aten::log.default", "aten::lt.Scalar", "aten::mean.default", "aten::mul.Tensor",
                           "aten::pow.Tensor_Scalar", "aten::sub.Tensor", "aten::sum.default",
                           "aten::where.ScalarSelf")),
    Entry("gaussian_nll_loss_module", lambda i, t, v: torch.nn.GaussianNLLLoss(full=True, reduction="sum")(i, t, v),
          [gaussian((4, 3, 1))],
          keys=("aten::add.Tensor", "aten::any.default", "aten::clamp.default", "aten::div.Tensor",
                "aten::log.default", "aten::lt.Scalar", "aten::mul.Tensor", "aten::pow.Tensor_Scalar",
                "aten::sub.Tensor", "aten::sum.default", "aten::where.ScalarSelf")),
]

NARROW = [
    Entry("narrow_tensor_start", narrow_each_dim, [started(2), started(0), started(3)], FLOATS, SLICE_OPSETS,
          keys=("_operator::add", "_operator::lt", "aten::item.default", "aten::slice.Tensor", "aten::to.dtype",
                "torch::sym_ite")),
    Entry("narrow_tensor_start_negative", narrow_each_dim, [started(-2), started(-4)], FLOATS, SLICE_OPSETS,
          keys=("_operator::add", "_operator::lt", "aten::item.default", "aten::slice.Tensor", "aten::to.dtype",
                "torch::sym_ite")),
    Entry("narrow_tensor_start_int32", narrow_each_dim, [started(-3, dtype=torch.int32)], opsets=SLICE_OPSETS,
          keys=("_operator::add", "_operator::lt", "aten::item.default", "aten::slice.Tensor", "aten::to.dtype",
                "torch::sym_ite")),
]

# ctc_loss: 5 sequences of up to 4 labels from 4 classes (so labels repeat), over 8 steps. The fourth
# has no input; the fifth's labels (2, 2, 2) need 5 steps and get 3: an impossible alignment, an
# infinite loss (0 with zero_infinity). Padding past a target's end is junk eager never reads.
STEPS, CLASSES = 8, 4
INPUT_LENGTHS, TARGET_LENGTHS = [8, 6, 8, 0, 3], [4, 3, 0, 2, 3]


def ctc_targets():
    targets = torch.randint(0, CLASSES - 1, (5, 4)) + 1
    targets[4, :3] = 2
    return torch.where(torch.arange(4) < torch.tensor(TARGET_LENGTHS)[:, None], targets, -1)


def ctc_sample(concatenated=False, lengths=True, blank_last=False):
    """(log_probs, targets[, input_lengths, target_lengths]): padded or concatenated targets, the
    lengths as tensors or left to the function as ints; with the last class blank, labels are 0-2."""
    def sample(dtype):
        log_probs = torch.randn(STEPS, 5, CLASSES, dtype=dtype).mul(2).log_softmax(-1)
        targets = ctc_targets() - int(blank_last)
        if concatenated:
            targets = targets[targets >= 0]
        return (log_probs, targets, *(torch.tensor(INPUT_LENGTHS), torch.tensor(TARGET_LENGTHS)) * lengths)
    return sample


def every_ctc(lengths=None, blank=0):
    """ctc_loss at every reduction, infinite losses kept and zeroed; at int lengths when given."""
    def fn(log_probs, targets, *tensor_lengths):
        input_lengths, target_lengths = lengths or tensor_lengths
        return tuple(F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=blank,
                                reduction=reduction, zero_infinity=zero_infinity)
                     for reduction, zero_infinity in [("none", False), ("none", True), ("mean", True), ("sum", False)])
    return fn


def unbatched(dtype, input_length=STEPS, target_length=3):
    return (torch.randn(STEPS, CLASSES, dtype=dtype).log_softmax(-1), torch.tensor([1, 3, 3][:target_length]),
            torch.tensor(input_length), torch.tensor(target_length))


CTC_LOSS = [
    *float32_float64("ctc_loss_padded", every_ctc(), [ctc_sample()],
                     keys=("aten::add.Tensor", "aten::alias.default", "aten::arange.default", "aten::cat.default",
                           "aten::clamp.default", "aten::div.Tensor", "aten::eq.Scalar", "aten::exp.default",
                           "aten::full.default", "aten::full_like.default", "aten::gt.Scalar",
                           "aten::index_select.default", "aten::log.default", "aten::lt.Scalar", "aten::lt.Tensor",
                           "aten::maximum.default", "aten::mean.default", "aten::mul.Tensor", "aten::ne.Tensor",
                           "aten::neg.default", "aten::reshape.default", "aten::select.int", "aten::slice.Tensor",
                           "aten::stack.default", "aten::sub.Tensor", "aten::sum.default", "aten::to.device",
                           "aten::to.dtype", "aten::unsqueeze.default", "aten::where.Scalar",
                           "aten::where.ScalarOther", "aten::where.ScalarSelf", "aten::where.self")),
    # the padded case's graph but for how targets and lengths arrive: two opsets
    Entry("ctc_loss_padded_int_lengths", every_ctc((INPUT_LENGTHS, TARGET_LENGTHS)), [ctc_sample(lengths=False)],
          FLOATS, (9, 18),
          keys=("aten::add.Tensor", "aten::alias.default", "aten::arange.default", "aten::cat.default",
                "aten::clamp.default", "aten::div.Tensor", "aten::eq.Scalar", "aten::exp.default",
                "aten::full.default", "aten::full_like.default", "aten::gt.Scalar", "aten::index_select.default",
                "aten::lift_fresh_copy.default", "aten::log.default", "aten::lt.Scalar", "aten::lt.Tensor",
                "aten::maximum.default", "aten::mean.default", "aten::mul.Tensor", "aten::ne.Tensor",
                "aten::neg.default", "aten::reshape.default", "aten::select.int", "aten::slice.Tensor",
                "aten::stack.default", "aten::sub.Tensor", "aten::sum.default", "aten::to.device", "aten::to.dtype",
                "aten::unsqueeze.default", "aten::where.Scalar", "aten::where.ScalarOther", "aten::where.ScalarSelf",
                "aten::where.self")),
    Entry("ctc_loss_concatenated", every_ctc(), [ctc_sample(concatenated=True)], FLOATS, (9, 18),
          keys=("aten::add.Tensor", "aten::arange.default", "aten::cat.default", "aten::clamp.default",
                "aten::div.Tensor", "aten::eq.Scalar", "aten::exp.default", "aten::full.default",
                "aten::full_like.default", "aten::gt.Scalar", "aten::index.Tensor", "aten::index_select.default",
                "aten::log.default", "aten::lt.Scalar", "aten::lt.Tensor", "aten::maximum.default",
                "aten::mean.default", "aten::mul.Tensor", "aten::ne.Tensor", "aten::neg.default",
                "aten::reshape.default", "aten::select.int", "aten::slice.Tensor", "aten::stack.default",
                "aten::sub.Tensor", "aten::sum.default", "aten::sum.dim_IntList", "aten::to.device", "aten::to.dtype",
                "aten::unsqueeze.default", "aten::where.Scalar", "aten::where.ScalarOther", "aten::where.ScalarSelf",
                "aten::where.self")),
    Entry("ctc_loss_concatenated_int_lengths", every_ctc((INPUT_LENGTHS, TARGET_LENGTHS)),
          [ctc_sample(concatenated=True, lengths=False)], FLOATS, (9, 18),
          keys=("aten::add.Tensor", "aten::arange.default", "aten::cat.default", "aten::clamp.default",
                "aten::div.Tensor", "aten::eq.Scalar", "aten::exp.default", "aten::full.default",
                "aten::full_like.default", "aten::gt.Scalar", "aten::index.Tensor", "aten::index_select.default",
                "aten::lift_fresh_copy.default", "aten::log.default", "aten::lt.Scalar", "aten::lt.Tensor",
                "aten::maximum.default", "aten::mean.default", "aten::mul.Tensor", "aten::ne.Tensor",
                "aten::neg.default", "aten::reshape.default", "aten::select.int", "aten::slice.Tensor",
                "aten::stack.default", "aten::sub.Tensor", "aten::sum.default", "aten::sum.dim_IntList",
                "aten::to.device", "aten::to.dtype", "aten::unsqueeze.default", "aten::where.Scalar",
                "aten::where.ScalarOther", "aten::where.ScalarSelf", "aten::where.self")),
    Entry("ctc_loss_blank_last", every_ctc(blank=CLASSES - 1), [ctc_sample(blank_last=True)], FLOATS, (9, 18),
          keys=("aten::add.Tensor", "aten::alias.default", "aten::arange.default", "aten::cat.default",
                "aten::clamp.default", "aten::div.Tensor", "aten::eq.Scalar", "aten::exp.default",
                "aten::full.default", "aten::full_like.default", "aten::gt.Scalar", "aten::index_select.default",
                "aten::log.default", "aten::lt.Scalar", "aten::lt.Tensor", "aten::maximum.default",
                "aten::mean.default", "aten::mul.Tensor", "aten::ne.Tensor", "aten::neg.default",
                "aten::reshape.default", "aten::select.int", "aten::slice.Tensor", "aten::stack.default",
                "aten::sub.Tensor", "aten::sum.default", "aten::to.device", "aten::to.dtype",
                "aten::unsqueeze.default", "aten::where.Scalar", "aten::where.ScalarOther", "aten::where.ScalarSelf",
                "aten::where.self")),
    # one sequence: (T, C) log-probabilities, 0-d lengths; (1, 3, 3) in 3 steps is impossible; no target
    Entry("ctc_loss_unbatched", every_ctc(), [unbatched, lambda d: unbatched(d, input_length=3),
                                              lambda d: unbatched(d, target_length=0)], FLOATS, (18,),
          keys=("aten::add.Tensor", "aten::arange.default", "aten::cat.default", "aten::clamp.default",
                "aten::div.Tensor", "aten::eq.Scalar", "aten::exp.default", "aten::full.default",
                "aten::full_like.default", "aten::gt.Scalar", "aten::index_select.default", "aten::log.default",
                "aten::lt.Scalar", "aten::lt.Tensor", "aten::maximum.default", "aten::mean.default",
                "aten::mul.Tensor", "aten::ne.Tensor", "aten::neg.default", "aten::reshape.default",
                "aten::select.int", "aten::slice.Tensor", "aten::squeeze.dim", "aten::stack.default",
                "aten::sub.Tensor", "aten::sum.default", "aten::to.device", "aten::to.dtype",
                "aten::unsqueeze.default", "aten::where.Scalar", "aten::where.ScalarOther", "aten::where.ScalarSelf",
                "aten::where.self")),
    Entry("ctc_loss_unbatched_int_lengths", every_ctc(([STEPS], [3])), [lambda d: unbatched(d)[:2]], FLOATS, (9,),
          keys=("aten::add.Tensor", "aten::arange.default", "aten::cat.default", "aten::clamp.default",
                "aten::div.Tensor", "aten::eq.Scalar", "aten::exp.default", "aten::full.default",
                "aten::full_like.default", "aten::gt.Scalar", "aten::index.Tensor", "aten::index_select.default",
                "aten::lift_fresh_copy.default", "aten::log.default", "aten::lt.Scalar", "aten::lt.Tensor",
                "aten::maximum.default", "aten::mean.default", "aten::mul.Tensor", "aten::ne.Tensor",
                "aten::neg.default", "aten::reshape.default", "aten::select.int", "aten::slice.Tensor",
                "aten::squeeze.dim", "aten::stack.default", "aten::sub.Tensor", "aten::sum.default",
                "aten::sum.dim_IntList", "aten::to.device", "aten::to.dtype", "aten::unsqueeze.default",
                "aten::where.Scalar", "aten::where.ScalarOther", "aten::where.ScalarSelf", "aten::where.self")),
    Entry("ctc_loss_module", lambda *args: nn.CTCLoss(zero_infinity=True)(*args), [ctc_sample()], opsets=(18,),
          keys=("aten::add.Tensor", "aten::alias.default", "aten::arange.default", "aten::cat.default",
                "aten::clamp.default", "aten::div.Tensor", "aten::eq.Scalar", "aten::exp.default",
                "aten::full.default", "aten::full_like.default", "aten::gt.Scalar", "aten::index_select.default",
                "aten::log.default", "aten::lt.Scalar", "aten::lt.Tensor", "aten::maximum.default",
                "aten::mean.default", "aten::mul.Tensor", "aten::ne.Tensor", "aten::neg.default",
                "aten::reshape.default", "aten::select.int", "aten::slice.Tensor", "aten::stack.default",
                "aten::sub.Tensor", "aten::to.device", "aten::to.dtype", "aten::unsqueeze.default",
                "aten::where.Scalar", "aten::where.ScalarOther", "aten::where.ScalarSelf", "aten::where.self")),
]


# A number read with item from an int32 tensor is an int64 in the graph, as sizes are: arithmetic
# mixing the two, and the slices, ranges and views it sizes, hold one integer type.
def read(value, dtype=torch.int32):
    return lambda d: (torch.randn(6, 4, dtype=d), torch.tensor(value, dtype=dtype))


def drop_last(x, t):
    n = t.item()
    torch._check(n >= 0)
    torch._check(n <= x.shape[0])
    return x[: x.shape[0] - n] * 2, x[x.shape[0] - n:]


def ranged(x, t):
    n = t.item()
    torch._check(n >= 1)
    return torch.arange(x.shape[1] * n), x.reshape(-1)[: n * x.shape[1]]


def scaled(x, t):
    return x * t.item(), x * (t.item() * 2.5), x * (t.item() / 2), x * (x.shape[0] / 4)


ITEMS = [
    Entry("item_int32_in_size_arithmetic", drop_last, [read(2), read([4])], FLOATS, SLICE_OPSETS,
          keys=("_operator::sub", "aten::item.default", "aten::mul.Tensor", "aten::slice.Tensor")),
    Entry("item_int32_in_range", ranged, [read(3), read([1])], opsets=(11, 18),
          keys=("_operator::mul", "aten::arange.default", "aten::item.default", "aten::reshape.default",
                "aten::slice.Tensor")),  # Range from 11
    Entry("item_int16", drop_last, [read(1, torch.int16)], opsets=(9, 18),
          keys=("_operator::sub", "aten::item.default", "aten::mul.Tensor", "aten::slice.Tensor")),
    # a float64 or float16 number scaling a float32 tensor leaves it float32, as a Python float does
    Entry("item_float", scaled, [read([1.5], torch.float64), read([0.5], torch.float16), read(3.0, torch.float32)],
          FLOATS, (9, 18), keys=("_operator::mul", "_operator::truediv", "aten::item.default", "aten::mul.Tensor")),
]

# Single matrices take eager's degree for their 1-norm (in float32: 1, 2, 4, 8, 12, 18 unscaled, 18
# squared; float64's thresholds are lower); 4x4 products are unrolled as eager's bmm loop sums them,
# 9x9 ones are MatMul.
NORMS = (1e-8, 1e-4, 0.02, 0.3, 1.0, 2.0, 20.0)


def one_norms(n):
    def sample(dtype):
        m = torch.randn(len(NORMS), n, n, dtype=torch.float64)
        m = m / m.abs().sum(-2).amax(-1).reshape(-1, 1, 1) * torch.tensor(NORMS, dtype=torch.float64).reshape(-1, 1, 1)
        return tuple(m.to(dtype))
    return sample


MATRIX_EXP = [
    Entry("matrix_exp_degrees", lambda *ms: tuple(torch.matrix_exp(m) for m in ms), [one_norms(4), one_norms(9)],
          FLOATS, (9, 18), keys=("aten::matrix_exp.default",)),
]

TABLE = GAUSSIAN + NARROW + CTC_LOSS + ITEMS + MATRIX_EXP
