"""An export matches eager or raises our error: names a graph cannot have, handlers that return
something else than their op makes, byte-identical files for the same model, dynamic dims torch.export
narrows, joint graphs, and a capture that fails in our words only."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import onnx
import pytest
import torch

import aten2onnx
from aten2onnx import ArgumentError, CaptureError, ExportError, SymbolicError
from conftest import run_ort


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(2, 2))

    def forward(self, x):
        return x @ self.weight


def double(x):
    return x * 2


def sin_and_double(x):
    return (x * 2).sin(), x * 2


def passthrough(x):
    return x, x * 2


def named_output(output):
    return output * 2


# -- names ----------------------------------------------------------------------------------------------------

# (model, export keywords, a fragment of the error) for names no ONNX graph can have
BAD_NAMES = [
    (double, {"output_names": [""]}, "empty name"),
    (double, {"input_names": [""]}, "empty name"),
    (double, {"input_names": ["a"], "output_names": ["a"]}, "'a' is already the name of an input"),
    (sin_and_double, {"output_names": ["a", "a"]}, "'a' is already the name of an output"),
    (Linear(), {"input_names": ["weight"]}, "names of the model's weights"),
    (Linear(), {"output_names": ["weight"]}, "'weight' is already the name of a graph weight"),
    (passthrough, {"output_names": ["x", "y"]}, "'x' is already the name of a graph input"),
]


@pytest.mark.parametrize("model, keywords, fragment", BAD_NAMES)
def test_names_a_graph_cannot_have_are_argument_errors(model, keywords, fragment):
    with pytest.raises(ArgumentError, match=fragment):
        aten2onnx.export(model, (torch.randn(2, 2),), **keywords)


# (model, export keywords, the output names the model must have): names that can be honoured are
GOOD_NAMES = [
    (named_output, {}, None),                                       # default "output" is the input's name
    (sin_and_double, {"output_names": ["mul", "sin"]}, ["mul", "sin"]),  # intermediates of those names move
    (double, {"output_names": ["const"]}, ["const"]),               # so do constants
    (sin_and_double, {}, ["output_0", "output_1"]),
]


@pytest.mark.parametrize("model, keywords, expected", GOOD_NAMES)
def test_names_that_clash_with_internal_values_give_valid_models(model, keywords, expected):
    x = torch.randn(2, 2)
    exported = aten2onnx.export(model, (x,), **keywords)
    onnx.checker.check_model(exported.model_proto, full_check=True)
    if expected is not None:
        assert exported.output_names == expected
    outs = run_ort(exported.model_proto, {exported.input_names[0]: x})
    for got, want in zip(outs, torch.utils._pytree.tree_leaves(model(x))):
        torch.testing.assert_close(torch.from_numpy(got), want)


def test_output_names_clash_inside_control_flow_bodies():
    class Gate(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda x: x.sin() * 2, lambda x: x.cos(), (x,))

    exported = aten2onnx.export(Gate(), (torch.randn(3),), output_names=["cos"])  # a value in the else branch
    onnx.checker.check_model(exported.model_proto, full_check=True)
    x = -torch.ones(3)
    torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, {"x": x})[0]), Gate()(x))


# -- handler results ------------------------------------------------------------------------------------------

BAD_RESULTS = [
    (lambda g, self: 42, r"returned 42 \(int\) where the op makes a tensor"),
    (lambda g, self: None, "returned None"),
    (lambda g, self: (self, self), "where the op makes a tensor"),
    (lambda g, self: [g.op("Relu", self)], "where the op makes a tensor"),
]


@pytest.mark.parametrize("handler, fragment", BAD_RESULTS)
def test_a_handler_returning_what_its_op_does_not_make_is_a_symbolic_error(handler, fragment):
    with pytest.raises(SymbolicError, match=fragment):
        aten2onnx.export(lambda x: torch.relu(x) + 1, (torch.randn(3),), custom_symbolics={"aten::relu.default": handler})


def test_a_handler_returning_too_few_results_is_a_symbolic_error():
    def one_of_two(g, self, dim, keepdim=False):
        return (g.op("ReduceMax", self, axes=[dim], keepdims=int(keepdim)),)

    with pytest.raises(SymbolicError, match="makes 2 results"):
        aten2onnx.export(lambda x: torch.max(x, 0), (torch.randn(3, 2),), opset=13,
                         custom_symbolics={"aten::max.dim": one_of_two})


# -- determinism ----------------------------------------------------------------------------------------------

DETERMINISM = textwrap.dedent("""
    import hashlib, sys, warnings
    import torch, aten2onnx
    warnings.simplefilter("ignore")

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 3)
            self.register_buffer("count", torch.zeros(3))

        def forward(self, x):
            self.count.add_(x.sum(0))
            y = torch.cond(x.sum() > 0, lambda x: x.sin() * 2, lambda x: x.cos(), (x,))
            return torch.logaddexp(self.linear(y), x), (x[..., None] * 1j).abs()

    torch.manual_seed(0)
    model = Model()
    for opset in (9, 18):
        for _ in range(2):
            exported = aten2onnx.export(model, (torch.randn(4, 3),), opset=opset,
                                        dynamic_shapes={"x": {0: "batch"}})
            print(hashlib.sha256(exported.model_proto.SerializeToString()).hexdigest())
""")


def test_the_same_model_exports_byte_identical_files_in_and_across_processes():
    def digests(seed: str) -> list[str]:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", DETERMINISM], env=env, capture_output=True, text=True, check=True)
        return done.stdout.split()

    first, second = digests("1"), digests("2")
    assert first == second  # across processes with different string hashing
    assert first[0] == first[1] and first[2] == first[3]  # a second export in one process


# -- capture --------------------------------------------------------------------------------------------------

class Encoder(torch.nn.Module):
    """Positions sliced from a buffer of 16, as BERT's are from 512: torch.export narrows seq to 16."""

    def __init__(self):
        super().__init__()
        self.register_buffer("positions", torch.arange(16))
        self.table = torch.nn.Embedding(16, 4)

    def forward(self, x):
        return x + self.table(self.positions[: x.shape[1]])[None]


def test_dims_torch_export_narrows_are_refined_with_a_warning_naming_the_range():
    dims = {"x": {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}}
    model = Encoder().eval()
    with pytest.warns(UserWarning, match=r"suggested fixes: .*seq.*max=16.*x\[1\] in \[\d+, 16\]"):
        exported = aten2onnx.export(model, (torch.randn(2, 5, 4),), dynamic_shapes=dims)
    for shape in [(3, 9, 4), (1, 16, 4)]:
        x = torch.randn(shape)
        torch.testing.assert_close(exported.run(x), model(x))


def test_capture_failure_prints_nothing_and_keeps_torch_log(capfd):
    class Branchy(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x + 1
            return x - 1

    with pytest.raises(CaptureError) as info:
        aten2onnx.export(Branchy(), (torch.randn(3),))
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
    assert any("def forward" in entry for entry in info.value.torch_log)  # torch's partial graph, kept


def test_a_joint_forward_backward_program_is_an_export_error():
    from torch.export.experimental import _export_forward_backward

    class Loss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 1)

        def forward(self, x):
            return (self.linear(x) ** 2).sum()

    joint = _export_forward_backward(torch.export.export(Loss(), (torch.randn(4, 3),)))
    with pytest.raises(ExportError, match="joint forward-backward.*aten2onnx.export_training"):
        aten2onnx.export(joint)


def test_an_unexpected_internal_failure_is_an_export_error_naming_the_cause(monkeypatch):
    from aten2onnx.exporter import translate

    def broken(*args, **kwargs):
        raise KeyError("internal")

    monkeypatch.setattr(translate.Translator, "run", broken)
    with pytest.raises(aten2onnx.InternalError, match="KeyError") as info:
        aten2onnx.export(double, (torch.randn(2),))
    assert isinstance(info.value.__cause__, KeyError)


def test_a_split_into_more_pieces_at_a_new_size_runs_the_pieces_the_graph_reads():
    """split(2) of a dynamic dim makes more pieces at a larger size than at the example; the graph
    reads the pieces the export saw, which an ATen node now gives instead of refusing the list."""

    class Pieces(torch.nn.Module):
        def forward(self, x):
            first, second = x.split(2)[:2]
            return first * 2, second + 1

    exported = aten2onnx.export(Pieces(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: "batch"}})
    for size in (4, 5, 6):
        x = torch.randn(size, 3)
        for got, want in zip(exported.run(x), Pieces()(x)):
            torch.testing.assert_close(got, want)


class Means(torch.nn.Module):
    def forward(self, x):
        return (x.mean(1), x.mean(), x.mean((0, 1), keepdim=True), x.mean(-1, dtype=torch.float64),
                torch.nn.functional.mse_loss(x, x * 2), torch.nn.functional.l1_loss(x, x * 2),
                torch.nn.functional.smooth_l1_loss(x, x * 2),
                # a loss whose rank the translation does not know: its mean divides by every element
                torch.nn.functional.triplet_margin_loss(x, x * 2, x.flip(0), margin=1e-6))


@pytest.mark.parametrize("size", [(3, 0), (0, 4), (5, 7)])
def test_the_mean_of_a_dynamic_dim_that_is_empty_at_run_time_is_nan_in_onnxruntime(size):
    """Eager's mean of no elements is NaN; onnxruntime's ReduceMean gives 0 (a silent wrong answer)."""
    exported = aten2onnx.export(Means(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: "rows", 1: "cols"}})
    x = torch.randn(*size)
    want = Means()(x)
    for got, expected in zip(run_ort(exported.model_proto, {"x": x}), want):
        torch.testing.assert_close(torch.from_numpy(got), expected, equal_nan=True)
    for got, expected in zip(exported.run(x), want):
        torch.testing.assert_close(got, expected, equal_nan=True)


class SelectedTimesInput(torch.nn.Module):
    def forward(self, x):
        selected = x[x > 0]
        return selected.unflatten(0, (selected.shape[0], 1)), selected * x


class Selections(torch.nn.Module):
    def forward(self, x):
        return x[x > 0] * 2, x.nonzero(), x.unique()


def test_a_size_read_from_data_that_torch_export_fixes_is_warned_of_with_the_users_line():
    """x[x > 0] * x: torch.export assumes every element is selected (Eq(u0, 2)) and bakes the size, which
    the ONNX graph cannot check; the export says so, naming the line that read the size from data."""
    with pytest.warns(aten2onnx.NarrowedExportWarning, match=r"Eq\(u0, 2\) \(the value from .*test_no_silent_wrong\.py:\d+\)"):
        exported = aten2onnx.export(SelectedTimesInput(), (torch.tensor([1.0, 2.0]),))
    x = torch.tensor([3.0, 4.0])  # inside the assumption: as eager
    for got, want in zip(exported.run(x), SelectedTimesInput()(x)):
        torch.testing.assert_close(got, want)


def test_sizes_read_from_data_within_their_natural_bounds_are_not_warned_of(recwarn):
    aten2onnx.export(Selections(), (torch.randn(5),))
    assert not [w for w in recwarn if issubclass(w.category, aten2onnx.NarrowedExportWarning)]


class UniqueBroadcast(torch.nn.Module):
    """unique of an all-true comparison has one element; broadcast against a size-2 input, torch.export
    assumes the size read from data is 2 (not 1, size-obliviously): its own program fails on this input."""

    def __init__(self, checked: bool = False) -> None:
        super().__init__()
        self.checked = checked

    def forward(self, x):
        one = torch.unique((x >= x).int())
        if self.checked:  # the error's advice: say what the size is
            torch._check(one.shape[0] == 1)
        return torch.gcd(x, torch.zeros_like(one).scatter_add(0, torch.zeros_like(one[:1]).long(), one[:1]))


def test_an_example_that_breaks_what_torch_export_assumed_is_our_error_not_a_wrong_graph():
    """Found by fuzz_models (seed 2711000, program 2712814): the graph computed with the assumed size 2 and
    gave 6 where eager gives 1. Now the export says the example breaks the assumption, names the line, and
    the advice, followed, exports a graph right on the example."""
    x = torch.tensor([4, 6], dtype=torch.int32)
    with pytest.raises(aten2onnx.CaptureError, match=r"u0 >= 2 \(the value from .*test_no_silent_wrong\.py:\d+\), and "
                       r"your example inputs themselves break it") as caught:
        aten2onnx.export(UniqueBroadcast(), (x,))
    assert "test_no_silent_wrong.py:" in caught.value.source and "torch._check(" in str(caught.value)
    exported = aten2onnx.export(UniqueBroadcast(checked=True), (x,))
    for y in (x, torch.tensor([9, -12], dtype=torch.int32)):
        want = UniqueBroadcast()(y)
        assert torch.equal(exported.run(y), want)
        assert torch.equal(torch.from_numpy(run_ort(exported.model_proto, {exported.input_names[0]: y})[0]), want)


LIB = torch.library.Library("a2o_sizes_test", "DEF")  # noqa: TOR901 (a test library of one op)
LIB.define("keep_positive(Tensor x) -> Tensor")


@torch.library.impl(LIB, "keep_positive", "CPU")
def _keep_positive(x):
    return x[x > 0]


@torch.library.register_fake("a2o_sizes_test::keep_positive", lib=LIB)
def _keep_positive_fake(x):
    # the deprecated call torchvision's nms uses, whose default floor is 2
    return x.new_empty(torch.library.get_ctx().create_unbacked_symint())


def test_a_fake_kernels_legacy_data_dependent_size_may_be_zero_or_one(recwarn):
    """A custom op whose fake kernel makes its size read from data with ctx.create_unbacked_symint() (floor 2
    by default): torch.export would assume, and its program assert, that at least two elements are kept, so
    an example keeping one was refused (and a warning was given on every export). Captured from 0 up, the
    op exports from such an example and is right where one, none or many are kept, with no warning."""
    fn = lambda x: torch.ops.a2o_sizes_test.keep_positive(x) * 2  # noqa: E731
    exported = aten2onnx.export(fn, (torch.tensor([1.0, -2.0, -3.0]),), dynamic_shapes=({0: "n"},))
    assert not [w for w in recwarn if issubclass(w.category, aten2onnx.NarrowedExportWarning)]
    for x in (torch.tensor([-1.0, -2.0]), torch.tensor([5.0]), torch.tensor([1.0, 2.0, -3.0, 4.0])):
        assert torch.equal(exported.run(x), fn(x))


# rounding toward zero keeps the sign of a zero result (-0.3 and -0.0 give -0.0), which a later division
# by it turns into -inf (eager) or +inf (a spelling that loses the sign)
SIGNED_ZEROS = [
    ("trunc", torch.trunc),
    ("fix", torch.fix),
    ("div_trunc", lambda x: torch.div(x, 3.0, rounding_mode="trunc")),
    ("fmod", lambda x: torch.fmod(x, 1.0)),
]


@pytest.mark.parametrize("opset", [9, 18])
@pytest.mark.parametrize("name, fn", SIGNED_ZEROS, ids=[n for n, _ in SIGNED_ZEROS])
def test_rounding_toward_zero_keeps_the_sign_of_zero(name, fn, opset):
    from optable import Call

    x = torch.tensor([-0.3, -0.0, 0.0, 0.4, -2.5, 2.5, -1.0, float("nan"), float("-inf")])
    exported = aten2onnx.export(Call(lambda x: 1 / fn(x)), (x,), opset=opset, fallback="error")
    want = 1 / fn(x)
    ort = run_ort(exported.model_proto, {exported.input_names[0]: x})[0]
    for got in (exported.run(x), torch.from_numpy(ort)):
        torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_uint8_resampling_is_eagers_kernel_not_a_float_matrix(mode):
    # the float matrices of the linear modes were cast to uint8 (all zeros); torch's decomposition
    # rounds otherwise than eager's fixed-point kernel: the op stays an ATen node, bitwise eager's
    torch.manual_seed(0)
    x = torch.randint(0, 256, (2, 3, 27, 31), dtype=torch.uint8)

    def fn(x):
        return torch.nn.functional.interpolate(x, size=(13, 40), mode=mode, align_corners=False)
    exported = aten2onnx.export(fn, (x,), opset=18)
    assert exported.fallback_ops and not exported.decomposed_ops
    assert torch.equal(exported.run(x), fn(x))
    with pytest.raises(aten2onnx.UnsupportedOperatorError, match="fixed-point"):
        aten2onnx.export(fn, (x,), opset=18, fallback="error")


RESAMPLINGS = [
    ("bilinear", lambda x: torch.nn.functional.interpolate(x, size=(5, 7), mode="bilinear")),
    ("bicubic", lambda x: torch.nn.functional.interpolate(x, size=(9, 3), mode="bicubic", align_corners=True)),
    ("linear", lambda x: torch.nn.functional.interpolate(x[0], size=11, mode="linear")),
    ("trilinear", lambda x: torch.nn.functional.interpolate(x.unsqueeze(0), size=(3, 5, 8), mode="trilinear")),
    ("adaptive_avg", lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (3, 4))),
]


@pytest.mark.parametrize("opset", [9, 18])
@pytest.mark.parametrize("name, fn", RESAMPLINGS, ids=[n for n, _ in RESAMPLINGS])
def test_a_nan_or_infinity_reaches_only_the_resampled_outputs_that_read_it(name, fn, opset):
    # the weight matrices' zeros carried a NaN or an infinity to every output of its row and column.
    # (bicubic takes no infinity here: at a border eager's clamped taps read an entry twice, with weights
    # of opposite signs, so inf - inf makes NaN where one gathered tap of their summed weight gives inf)
    x = torch.randn(1, 2, 4, 6)
    x[0, 0, 0, 0] = float("nan")
    if name != "bicubic":
        x[0, 0, 3, 5], x[0, 1, 2, 2] = float("inf"), -float("inf")
    exported = aten2onnx.export(fn, (x,), opset=opset, fallback="error")
    want = fn(x)
    (theirs,) = run_ort(exported.model_proto, {exported.input_names[0]: x})
    for got in (exported.run(x), torch.from_numpy(theirs)):
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
        finite = want.isfinite()
        torch.testing.assert_close(got[finite], want[finite], rtol=1e-4, atol=1e-5)
        assert torch.equal(got[want.isinf()], want[want.isinf()])


# floor division as ATen's kernel computes it: the quotient of a less its remainder (Floor(a / b) gives
# 1 // 0.1 = 10.0, eager 9.0), NaN for an infinite dividend (fuzz_models seed 4210108: inf), -1 for a
# finite one over an infinity of the other sign; int64 beyond 2 ** 53 exactly (a float64 quotient is not)
FLOOR_DIVISIONS = [
    ("float32", torch.tensor([1.0, 1.0, -1.0, float("inf"), -float("inf"), 7.0, -7.0, 3.0, -3.0, 0.0, -0.0,
                              float("nan"), 5.0, 0.3, -0.7]),
     torch.tensor([0.1, -0.1, 0.1, 2.0, 3.0, float("inf"), float("inf"), -float("inf"), 0.0, 0.0, 2.0,
                   2.0, float("nan"), 0.1, 0.35])),
    ("float64", None, None),
    ("float16", None, None),
    ("int64", torch.tensor([2 ** 60 + 1, -(2 ** 60) - 1, 2 ** 62, -7, 7, -6, 9_007_199_254_740_993]),
     torch.tensor([3, 3, -7, 2, -2, 3, 2])),
    ("int32", torch.tensor([2 ** 30 + 1, -(2 ** 30) - 1, -7, 7, -6], dtype=torch.int32),
     torch.tensor([3, 3, 2, -2, 3], dtype=torch.int32)),
]


@pytest.mark.parametrize("opset", [11, 18])
@pytest.mark.parametrize("dtype", [d for d, _, _ in FLOOR_DIVISIONS])
def test_floor_division_is_atens(dtype, opset):
    from optable import Call

    table = {d: (a, b) for d, a, b in FLOOR_DIVISIONS}
    a, b = table[dtype] if table[dtype][0] is not None else (t.to(getattr(torch, dtype)) for t in table["float32"])
    fn = lambda a, b: (a // b, torch.div(a, b, rounding_mode="floor"), a // 3)  # noqa: E731
    exported = aten2onnx.export(Call(fn), (a, b), opset=opset, fallback="error")
    want = fn(a, b)
    ort = run_ort(exported.model_proto, dict(zip(exported.input_names, (a, b))))
    for got in (exported.run(a, b), [torch.from_numpy(x) for x in ort]):
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, equal_nan=True, rtol=0, atol=0)
            if w.dtype.is_floating_point:  # a zero's sign too
                assert torch.equal(torch.signbit(g[w == 0]), torch.signbit(w[w == 0]))
