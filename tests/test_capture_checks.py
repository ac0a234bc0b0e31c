"""Library functions that check their arguments on tensor values, captured through the equivalents in
exporter/capture.py (gaussian_nll_loss's negative-variance check, narrow at a start held in a
tensor, ctc_loss's data-sized alphas, transformers' causal-mask detection), compared with eager in
onnxruntime and aten2onnx.runtime; numbers read with item in size arithmetic; matrix_exp's degree
choice; and the OpInfos these made native."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import run_ort
from optable import Entry, assert_opinfo_native, cases, run_both
from torch import nn

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
    *float32_float64("ctc_loss_padded", every_ctc(), [ctc_sample()]),
    # the padded case's graph but for how targets and lengths arrive: two opsets
    Entry("ctc_loss_padded_int_lengths", every_ctc((INPUT_LENGTHS, TARGET_LENGTHS)), [ctc_sample(lengths=False)],
          FLOATS, (9, 18)),
    Entry("ctc_loss_concatenated", every_ctc(), [ctc_sample(concatenated=True)], FLOATS, (9, 18)),
    Entry("ctc_loss_concatenated_int_lengths", every_ctc((INPUT_LENGTHS, TARGET_LENGTHS)),
          [ctc_sample(concatenated=True, lengths=False)], FLOATS, (9, 18)),
    Entry("ctc_loss_blank_last", every_ctc(blank=CLASSES - 1), [ctc_sample(blank_last=True)], FLOATS, (9, 18)),
    # one sequence: (T, C) log-probabilities, 0-d lengths; (1, 3, 3) in 3 steps is impossible; no target
    Entry("ctc_loss_unbatched", every_ctc(), [unbatched, lambda d: unbatched(d, input_length=3),
                                              lambda d: unbatched(d, target_length=0)], FLOATS, (18,)),
    Entry("ctc_loss_unbatched_int_lengths", every_ctc(([STEPS], [3])), [lambda d: unbatched(d)[:2]], FLOATS, (9,)),
    Entry("ctc_loss_module", lambda *args: nn.CTCLoss(zero_infinity=True)(*args), [ctc_sample()], opsets=(18,)),
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
    Entry("item_int32_in_size_arithmetic", drop_last, [read(2), read([4])], FLOATS, SLICE_OPSETS),
    Entry("item_int32_in_range", ranged, [read(3), read([1])], opsets=(11, 18)),  # Range from 11
    Entry("item_int16", drop_last, [read(1, torch.int16)], opsets=(9, 18)),
    # a float64 or float16 number scaling a float32 tensor leaves it float32, as a Python float does
    Entry("item_float", scaled, [read([1.5], torch.float64), read([0.5], torch.float16), read(3.0, torch.float32)],
          FLOATS, (9, 18)),
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

TABLE = GAUSSIAN + NARROW + CTC_LOSS + ITEMS + MATRIX_EXP


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


def test_ctc_loss_graph_grows_by_one_small_step_per_time_step():
    """The time loop is unrolled: each step adds the same few nodes, however long the targets."""
    def nodes(steps, width):
        log_probs = torch.randn(steps, 3, 6).log_softmax(-1)
        args = (log_probs, torch.randint(1, 6, (3, width)), torch.full((3,), steps), torch.full((3,), width))
        return len(export(F.ctc_loss, args, 13).model_proto.graph.node)

    per_step = (nodes(30, 4) - nodes(10, 4)) / 20
    assert per_step <= 24
    assert nodes(10, 12) == nodes(10, 4)


class Decode(nn.Module):
    """nn.Transformer given a target mask (and a source mask) without is_causal hints: eager compares
    each mask with a causal one and reads the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.transformer = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                          dim_feedforward=32, batch_first=True)

    def forward(self, src, tgt, tgt_mask, src_mask=None):
        return self.transformer(src, tgt, src_mask=src_mask, tgt_mask=tgt_mask)


def causal(n):
    return nn.Transformer.generate_square_subsequent_mask(n)


def open_mask(n):
    """A float mask that is not causal: random penalties, the diagonal open."""
    return torch.rand(n, n).mul(-4).fill_diagonal_(0)


TRANSFORMER_SAMPLES = {
    "causal": lambda: (torch.randn(2, 7, 16), torch.randn(2, 5, 16), causal(5)),
    "not_causal": lambda: (torch.randn(2, 7, 16), torch.randn(2, 5, 16), open_mask(5)),
    "causal_both": lambda: (torch.randn(2, 7, 16), torch.randn(2, 5, 16), causal(5), causal(7)),
}


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("sample", TRANSFORMER_SAMPLES, ids=str)
def test_transformer_mask_without_is_causal(sample, opset):
    run_both(Decode().eval(), TRANSFORMER_SAMPLES[sample](), opset)


@pytest.mark.parametrize("opset", [13, 18])
def test_transformer_mask_is_read_when_run(opset):
    """Captured with a causal mask, the graph still applies whatever mask it is given."""
    model = Decode().eval()
    src, tgt = torch.randn(2, 7, 16), torch.randn(2, 5, 16)
    exported = export(model, (src, tgt, causal(5)), opset)
    for mask in (causal(5), open_mask(5), torch.zeros(5, 5)):
        with torch.no_grad():
            want = model(src, tgt, mask)
        theirs = run_ort(exported.model_proto, dict(zip(exported.input_names, (src, tgt, mask))))
        torch.testing.assert_close(exported.run(src, tgt, mask), want, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(torch.from_numpy(theirs[0]), want, rtol=1e-4, atol=1e-5)


def test_causal_mask_detection_restored():
    """The detection is replaced only while capturing, failed captures included."""
    from torch.nn.modules import transformer

    detect = transformer._detect_is_causal_mask
    export(Decode().eval(), TRANSFORMER_SAMPLES["causal"](), 18)
    assert transformer._detect_is_causal_mask is detect

    def branches(x):
        return x + 1 if x.sum() > 0 else x - 1

    with pytest.raises(ExportError):
        export(branches, (torch.randn(3),), 18)
    assert transformer._detect_is_causal_mask is detect


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_opinfo_ctc_loss_native(dtype):
    # the first sample gives lengths as int lists, the second as tensors
    assert_opinfo_native("nn.functional.ctc_loss", [9, 13, 18, 26], samples=2, dtype=dtype)


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
