"""Library functions that check their arguments on tensor values, captured through the equivalents in
exporter/passes/tracing.py: negative variances, narrow's tensor start read when run and written through,
ctc_loss's graph size, transformers' causal-mask detection; and the OpInfos these made native (the op
table is tests/optables/capture.py)."""

from __future__ import annotations

import inspect
import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import run_ort
from optable import Call, assert_opinfo_native, assert_runs_like_eager, run_both
from torch import nn

import aten2onnx
from aten2onnx.errors import ExportError
from optables.capture import SLICE_OPSETS, every_reduction, gaussian, narrow_each_dim


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


def ctc_batch(steps, batch, width, *, short=False):
    """log_probs [T, N, 6], padded targets [N, S] without the blank, full input lengths (or one sequence
    shorter than T, and one target empty, with short=True)."""
    log_probs = torch.randn(steps, batch, 6).log_softmax(-1)
    inputs, targets = torch.full((batch,), steps), torch.full((batch,), width)
    if short:
        inputs[0], targets[-1] = max(steps - 2, 1), 0
    return log_probs, torch.randint(1, 6, (batch, width)), inputs, targets


def ctc_concatenated(steps, batch, width):
    """Targets concatenated into one 1-D tensor, each sequence's length its index mod width + 1."""
    lengths = torch.arange(batch) % width + 1
    return (torch.randn(steps, batch, 6).log_softmax(-1), torch.randint(1, 6, (int(lengths.sum()),)),
            torch.full((batch,), steps), lengths)


AUTO = torch.export.Dim.AUTO
# name: (fn, make(steps, batch, width), dynamic dims, sizes to run besides the example (5, 3, 2)); the length
# T stays dynamic: the time loop is a Scan (onnxruntime's fails on zero steps, so the first step is scanned too)
CTC_DYNAMIC = {
    "mean": (F.ctc_loss, ctc_batch, ({0: AUTO, 1: AUTO}, {0: AUTO, 1: AUTO}, {0: AUTO}, {0: AUTO}),
             [(9, 4, 3), (1, 2, 1), (2, 1, 4)]),
    "none_short": (lambda lp, t, i, n: F.ctc_loss(lp, t, i, n, reduction="none", zero_infinity=True),
                   lambda *s: ctc_batch(*s, short=True), ({0: AUTO, 1: AUTO}, {0: AUTO, 1: AUTO}, {0: AUTO}, {0: AUTO}),
                   [(8, 3, 4), (3, 2, 2)]),
    "sum_concatenated": (lambda lp, t, i, n: F.ctc_loss(lp, t, i, n, blank=0, reduction="sum"), ctc_concatenated,
                         ({0: AUTO}, {0: AUTO}, None, None), [(11, 3, 2), (1, 3, 2)]),
}


@pytest.mark.parametrize("opset", [9, 13, 18])
@pytest.mark.parametrize("name", list(CTC_DYNAMIC))
def test_ctc_loss_keeps_a_dynamic_length(name, opset):
    fn, make, dims, others = CTC_DYNAMIC[name]
    example = make(5, 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", aten2onnx.NarrowedExportWarning)
        exported = aten2onnx.export(Call(fn), example, opset=opset, dynamic_shapes=(dims,), fallback="error")
    assert exported.model_proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    for sizes in [(5, 3, 2)] + others:
        args = example if sizes == (5, 3, 2) else make(*sizes)
        assert_runs_like_eager(exported, fn, args, tol=(1e-5, 1e-5))


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


class Predict(nn.Module):
    """AdaptiveLogSoftmaxWithLoss.predict branches on whether every row's class is in the shortlist."""

    def __init__(self):
        super().__init__()
        self.asm = nn.AdaptiveLogSoftmaxWithLoss(16, 20, cutoffs=[5, 10])

    def forward(self, x):
        return self.asm.predict(x)


def test_a_torch_layer_that_cannot_be_captured_is_named_by_the_line_that_calls_it():
    """A torch.nn layer's method that reads data into Python: the error names the model's line that calls it,
    never generated code (`<string>:1`, what torch's guards run in) or the standard library."""
    model = Predict().eval()
    batch = torch.export.Dim("batch")
    with pytest.raises(aten2onnx.CaptureError) as caught:
        aten2onnx.export(model, (torch.randn(4, 16),), dynamic_shapes=({0: batch},))
    lines, first = inspect.getsourcelines(Predict.forward)
    call = first + next(i for i, line in enumerate(lines) if "predict(x)" in line)
    assert caught.value.source is not None and caught.value.source.endswith(f"test_capture_checks.py:{call}")
    assert "<string>" not in str(caught.value)


class InputReshapedInPlace(nn.Module):
    def __init__(self, write, rewritten):
        super().__init__()
        self.write, self.rewritten = write, rewritten

    def forward(self, x):
        if self.rewritten:  # the message's advice followed: the view, the input left as it is
            return self.write(x) * 2
        self.write(x)
        return x * 2


RESHAPED_INPUTS = {
    "unsqueeze_": (lambda x: x.unsqueeze_(0), lambda x: x.unsqueeze(0), (3, 4)),
    "as_strided_": (lambda x: x.as_strided_((2, 2), (1, 2)), lambda x: x.as_strided((2, 2), (1, 2)), (10,)),
}


@pytest.mark.parametrize("name", list(RESHAPED_INPUTS))
def test_an_input_reshaped_in_place_gets_our_error_naming_the_line_and_the_view_works(name):
    """x.unsqueeze_(0) on forward's input with a dynamic dim: torch.export's capture failed with an IndexError
    in its guards, our CaptureError naming no line. Now our ExportError names the op, the line and the view."""
    in_place, view, shape = RESHAPED_INPUTS[name]
    spec = ({0: torch.export.Dim.AUTO},)
    with pytest.raises(ExportError, match=rf"{name}\(\) at .*test_capture_checks\.py:\d+ changes the shape of the "
                                          r"model's input in place .* use the view instead"):
        aten2onnx.export(InputReshapedInPlace(in_place, False), (torch.randn(shape),), dynamic_shapes=spec)
    x = torch.randn(shape)
    model = InputReshapedInPlace(view, True)
    exported = aten2onnx.export(model, (x.clone(),), dynamic_shapes=spec)
    torch.testing.assert_close(exported.run(x.clone()), model(x.clone()))
