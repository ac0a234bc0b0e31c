"""Library functions that check their arguments on tensor values, captured through the equivalents in
exporter/capture.py (gaussian_nll_loss's negative-variance check, narrow at a start held in a
tensor), compared with eager in onnxruntime and aten2onnx.runtime; matrix_exp's degree choice; and
the OpInfos these made native."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import run_ort
from optable import Entry, assert_opinfo_native, cases, run_both

import aten2onnx
from aten2onnx.errors import ExportError

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


def float32_float64(name, fn, samples):
    """float32 and float64 at every opset."""
    return [Entry(name, fn, samples), Entry(name, fn, samples, (torch.float64,))]


GAUSSIAN = [
    *float32_float64("gaussian_nll_loss_var_same_shape", every_reduction, [gaussian((4, 3, 5))]),
    *float32_float64("gaussian_nll_loss_var_one_fewer_dim", every_reduction, [gaussian((4, 3))]),
    *float32_float64("gaussian_nll_loss_var_last_dim_1", every_reduction, [gaussian((4, 3, 1))]),
    *float32_float64("gaussian_nll_loss_var_one_dim_1", every_reduction, [gaussian((4, 1, 5))]),
    # below eps: var is clamped to it
    *float32_float64("gaussian_nll_loss_eps", lambda i, t, v: every_reduction(i, t, v, eps=1e-2),
                     [gaussian((4, 3, 5), low=0.0, high=0.02)]),
    Entry("gaussian_nll_loss_module", lambda i, t, v: torch.nn.GaussianNLLLoss(full=True, reduction="sum")(i, t, v),
          [gaussian((4, 3, 1))]),
]

NARROW = [
    Entry("narrow_tensor_start", narrow_each_dim, [started(2), started(0), started(3)], FLOATS, SLICE_OPSETS),
    Entry("narrow_tensor_start_negative", narrow_each_dim, [started(-2), started(-4)], FLOATS, SLICE_OPSETS),
    Entry("narrow_tensor_start_int32", narrow_each_dim, [started(-3, dtype=torch.int32)], opsets=SLICE_OPSETS),

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
          FLOATS, (9, 18)),
]

TABLE = GAUSSIAN + NARROW + MATRIX_EXP


@pytest.mark.parametrize("entry, sample, dtype, opset", cases(TABLE))
def test_op(entry: Entry, sample, dtype, opset):
    torch.manual_seed(0)
    run_both(entry.fn, sample(dtype), opset, ort=entry.ort)


def export(fn, args, opset, fallback="error"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export(fn, args, opset=opset, fallback=fallback)


@pytest.mark.parametrize("opset", [9, 18])
def test_gaussian_nll_loss_negative_var_is_nan(opset):
    """Eager raises on a negative variance; the graph, which cannot raise, returns NaN for all of it."""
    input, target, var = gaussian((4, 3))(torch.float32)
    exported = export(every_reduction, (input, target, var), opset)
    negative = var.clone()
    negative[2, 1] = -0.5
    with pytest.raises(ValueError, match="negative"):
        every_reduction(input, target, negative)
    ours = exported.run(input, target, negative)
    theirs = run_ort(exported.model_proto, dict(zip(exported.input_names, (input, target, negative))))
    for got in [*ours, *map(torch.from_numpy, theirs)]:
        assert got.isnan().all()


def test_gaussian_nll_loss_module_exports():
    """The module itself, whose forward names its first input `input`."""
    module = torch.nn.GaussianNLLLoss(full=True)
    args = gaussian((4, 3, 1))(torch.float32)
    torch.testing.assert_close(export(module, args, 18).run(*args), module(*args))


@pytest.mark.parametrize("opset", SLICE_OPSETS)
def test_narrow_start_read_when_run(opset):
    """The start is an input of the graph, not the value it was captured with."""
    x = torch.randn(5, 6, 4)
    exported = export(narrow_each_dim, (x, torch.tensor(1)), opset)
    for start in (-4, -3, -2, 0, 2, 3):
        t = torch.tensor(start)
        want = narrow_each_dim(x, t)
        theirs = run_ort(exported.model_proto, dict(zip(exported.input_names, (x, t))))
        for got in (exported.run(x, t), tuple(map(torch.from_numpy, theirs))):
            for g, w in zip(got, want, strict=True):
                torch.testing.assert_close(g, w, rtol=0, atol=0)


def add_through_narrow(x, t):
    x = x.clone()
    x.narrow(0, t, 2).add_(1)
    return x


def scale_input_through_narrow(x, t):
    x.narrow(1, t, 2).mul_(2)
    return x.sum(1)


WRITES = [add_through_narrow, scale_input_through_narrow]


def check_writes(fn, exported, *, ort: bool):
    """Outputs and the written input as eager's for several starts."""
    for start in (0, 1, -2):
        x, t = torch.randn(4, 4), torch.tensor(start)
        want_x = x.clone()
        want = fn(want_x, t)
        got_x = x.clone()
        torch.testing.assert_close(exported.run(got_x, t), want)
        torch.testing.assert_close(got_x, want_x)
        if ort:
            theirs = run_ort(exported.model_proto, dict(zip(exported.input_names, (x, t))))
            torch.testing.assert_close(torch.from_numpy(theirs[0]), want)


@pytest.mark.parametrize("opset", [9, 11, 18])
@pytest.mark.parametrize("fn", WRITES, ids=lambda fn: fn.__name__)
def test_narrow_write_through_exports_right_or_not_at_all(fn, opset):
    """narrow at a tensor start is a view: a write through it reaches the narrowed tensor. Without
    fallbacks the export gives eager's answers or refuses; it never drops the write."""
    try:
        exported = export(fn, (torch.randn(4, 4), torch.tensor(1)), opset)
    except ExportError:
        return
    check_writes(fn, exported, ort=True)


@pytest.mark.parametrize("opset", [9, 18])
@pytest.mark.parametrize("fn", WRITES, ids=lambda fn: fn.__name__)
def test_narrow_write_through_with_fallback(fn, opset):
    exported = export(fn, (torch.randn(4, 4), torch.tensor(1)), opset, fallback="aten")
    check_writes(fn, exported, ort=False)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_opinfo_gaussian_nll_loss_native(dtype):
    assert_opinfo_native("nn.functional.gaussian_nll_loss", [9, 13, 18, 26], samples=2, dtype=dtype)


def test_opinfo_narrow_native():
    # the second sample starts at a tensor: Slice at opset 10 and later, Compress at 9
    assert_opinfo_native("narrow", [9, 10, 13, 18, 26], samples=2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_opinfo_matrix_exp_native(dtype):
    # the second sample is a batch whose exponential cancels to 0.15 among entries of 300
    assert_opinfo_native("matrix_exp", [9, 13, 18, 26], samples=2, dtype=dtype)
