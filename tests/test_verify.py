"""aten2onnx.verify: the report's numbers against eager PyTorch and onnxruntime computed here, and the first
diverging node of a deliberately wrong symbolic named with its op, source line and module."""

from __future__ import annotations

import inspect
import json
import math

import onnxruntime as ort
import pytest
import torch

import aten2onnx
from aten2onnx.verification import WHOLE_RUN, errors


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Linear(4, 4)

    def forward(self, y):
        y = self.scale(y) - 0.5
        z = torch.relu(y)
        z = torch.tanh(z * 3) + 1
        return z


class Several(torch.nn.Module):
    """Ops before and after the block's relu and tanh; each op's line is found by its text below."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(4, 4)
        self.block = Block()

    def forward(self, x):
        y = self.inner(x) * 2
        y = y.exp().log1p()
        z = self.block(y)
        return torch.cat([z, y], -1).sum(-1)


def line_of(fn, text: str) -> int:
    """The line of fn's source that contains text, from the file itself (independent of FX's records)."""
    lines, first = inspect.getsourcelines(fn)
    (offset,) = [i for i, line in enumerate(lines) if text in line]
    return first + offset


def wrong_relu(g, self):
    return g.op("Abs", self)


def wrong_tanh(g, self):
    return g.op("Sigmoid", self)


def wrong_exp(g, self):
    return g.op("Exp", g.op("Mul", self, g.const(1.01, like=self)))


# (overload, wrong symbolic, ONNX op it makes, FX node, the function and text of the op's line, module)
WRONG = [
    ("aten::relu.default", wrong_relu, "Abs", "relu", Block.forward, "torch.relu(", "block (Block)"),
    ("aten::tanh.default", wrong_tanh, "Sigmoid", "tanh", Block.forward, "torch.tanh(", "block (Block)"),
    ("aten::exp.default", wrong_exp, "Exp", "exp", Several.forward, ".exp()", "<root> (Several)"),
]


@pytest.mark.parametrize("key, symbolic, op_type, fx_node, fn, text, module", WRONG, ids=[w[3] for w in WRONG])
def test_a_wrong_symbolic_is_named_with_its_source_line(key, symbolic, op_type, fx_node, fn, text, module):
    torch.manual_seed(0)
    model = Several().eval()
    report = aten2onnx.verify(model, (torch.randn(6, 4),), custom_symbolics={key: symbolic})
    assert not report.ok
    assert {c.runtime for c in report.outputs if not c.ok} == {"onnxruntime", "aten2onnx"}
    d = report.first_divergence
    assert (d.fx_node, d.op_type, d.aten_op, d.module) == (fx_node, op_type, key, module)
    assert d.source == f"{inspect.getsourcefile(fn)}:{line_of(fn, text)}"
    assert d.onnx_node.startswith(fx_node + "/") and "differ" in d.error
    text_report = report.to_text()
    assert "MISMATCH" in text_report and d.source in text_report and op_type in text_report


def test_a_right_export_reports_the_errors_measured_here():
    torch.manual_seed(0)
    model = Several().eval()
    x = torch.randn(6, 4)
    more = [torch.randn(2, 4), torch.randn(9, 4)]
    report = aten2onnx.verify(model, (x,), inputs=more, dynamic_shapes={"x": {0: "batch"}})
    assert report.ok and report.first_divergence is None and report.fallback_ops == []
    assert {(c.runtime, c.run) for c in report.outputs} == {(r, i) for r in ("onnxruntime", "aten2onnx") for i in range(3)}
    exported = aten2onnx.export(model, (x,), dynamic_shapes={"x": {0: "batch"}})
    session = ort.InferenceSession(exported.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    worst = 0.0
    for inp in [x, *more]:
        (got,) = session.run(None, {"x": inp.numpy()})
        worst = max(worst, float((torch.from_numpy(got).double() - model(inp).detach().double()).abs().max()))
    abs_err, rel_err = report.max_errors()["onnxruntime"]["output"]
    assert abs_err == pytest.approx(worst, rel=1e-6, abs=1e-12) and 0 <= rel_err < 1e-5
    assert sum(report.node_counts.values()) == len(exported.model_proto.graph.node)
    as_json = json.loads(report.to_json())
    assert as_json["ok"] is True and as_json["first_divergence"] is None and len(as_json["outputs"]) == 6


def test_extra_inputs_a_static_export_cannot_take_fail_the_report():
    model = torch.nn.Linear(4, 2).eval()
    report = aten2onnx.verify(model, (torch.randn(3, 4),), inputs=[torch.randn(5, 4)])
    assert not report.ok and report.first_divergence is None
    failed = [c for c in report.outputs if not c.ok]
    assert {(c.runtime, c.run, c.output) for c in failed} == {("onnxruntime", 1, WHOLE_RUN), ("aten2onnx", 1, WHOLE_RUN)}
    assert "size 5 in dim 0" in next(c.detail for c in failed if c.runtime == "aten2onnx")


@torch.library.custom_op("verify_test::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x):
    return torch.empty_like(x)


def test_onnxruntime_is_skipped_with_its_reason_for_fallback_nodes():
    report = aten2onnx.verify(lambda x: twice(x.sin()) + 1, (torch.randn(5),))
    assert report.ok and report.fallback_ops == ["verify_test::twice.default"]
    assert "verify_test::twice.default" in report.skipped["onnxruntime"]
    assert {c.runtime for c in report.outputs} == {"aten2onnx"}


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("seen", torch.zeros(2))

    def forward(self, x):
        self.seen.add_(x.sum(0))
        x.mul_(2)
        return x + self.seen


def test_state_updates_are_compared_and_verify_changes_nothing():
    model = Counter()
    x = torch.randn(3, 2)
    before = x.clone()
    report = aten2onnx.verify(model, (x,), inputs=[torch.randn(3, 2)])
    assert report.ok
    assert {c.output for c in report.outputs} == {"output", "seen.updated", "x.updated"}
    assert torch.equal(x, before) and torch.equal(model.seen, torch.zeros(2))


INF, NAN = math.inf, math.nan
# (got, expected, max abs error, max rel error)
ERRORS = [
    ([1.0, 2.0], [1.0, 2.0], 0.0, 0.0),
    ([1.5, 2.0], [1.0, 2.0], 0.5, 0.5),
    ([NAN, 1.0], [NAN, 1.0], 0.0, 0.0),
    ([NAN], [1.0], INF, INF),
    ([INF, -INF], [INF, -INF], 0.0, 0.0),
    ([1e-3], [0.0], 1e-3, INF),
    ([3], [1], 2.0, 2.0),
]


@pytest.mark.parametrize("got, expected, abs_err, rel_err", ERRORS)
def test_errors_treat_nan_and_infinity_as_the_comparison_does(got, expected, abs_err, rel_err):
    assert errors(torch.tensor(got), torch.tensor(expected)) == (pytest.approx(abs_err), pytest.approx(rel_err))
