"""Every error's advice works when followed: each diagnosis comes with an example model that gets it, and the
same model rewritten as the message says, which exports and gives eager's results (in aten2onnx.runtime and,
where it has no ATen node, in onnxruntime), over several calls where the model keeps state."""

from __future__ import annotations

import copy
import dataclasses
import re
import warnings
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F

import aten2onnx
from aten2onnx.errors import CaptureError, ExportError, UnsupportedOperatorError
from aten2onnx.exporter.diagnose import DataDependentError, GlobalStateError
from conftest import flat_tensors, run_ort

state = None
STATE = torch.zeros(4)
SCALE = 3.0


class AssignsGlobal(torch.nn.Module):
    def forward(self, x):
        global state
        state = x + 1
        return x * 2


class CopiesIntoGlobal(torch.nn.Module):
    """GlobalStateError's advice: `state.copy_(new_value)` into a tensor that exists before the call."""

    def forward(self, x):
        STATE.copy_(x + 1)
        return x * 2 + STATE


class Branch(torch.nn.Module):
    def forward(self, x):
        if (x > 0).all():
            return x + 1
        return x - 1


class BranchWhere(torch.nn.Module):
    def forward(self, x):
        return torch.where((x > 0).all(), x + 1, x - 1)


class BranchCond(torch.nn.Module):
    def forward(self, x):
        return torch.cond((x > 0).all(), lambda t: t + 1, lambda t: t - 1, (x,))


class NumberBranch(torch.nn.Module):
    def forward(self, x):
        return x * 2 if x.sum().item() > 0 else x


class NumberWhere(torch.nn.Module):
    """The advice for a Python number made from a tensor: keep it a tensor (torch.where)."""

    def forward(self, x):
        return torch.where(x.sum() > 0, x * 2, x)


class ReadsGlobalNumber(torch.nn.Module):
    def forward(self, x):
        return x * SCALE


class ScaleBuffer(torch.nn.Module):
    """The advice for a global number: make it a buffer (it then follows changes, as state)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(SCALE))

    def forward(self, x):
        return x * self.scale


class UniqueBroadcast(torch.nn.Module):
    def forward(self, x):
        one = torch.unique((x >= x).int())
        return x * one


class UniqueChecked(torch.nn.Module):
    """The advice: say what the size read from data is (torch._check)."""

    def forward(self, x):
        one = torch.unique((x >= x).int())
        torch._check(one.shape[0] == 1)
        return x * one


class WriteThroughDropout(torch.nn.Module):
    def forward(self, x):
        F.dropout(x, 0.5, training=False).unfold(0, 2, 2)[1].add_(1)
        return x * 1


class WriteIntoDropoutCopy(torch.nn.Module):
    """The advice: write into a copy of the dropout's result."""

    def forward(self, x):
        y = F.dropout(x, 0.5, training=False).clone()
        y.unfold(0, 2, 2)[1].add_(1)
        return y * 1


class WriteThroughExpand(torch.nn.Module):
    def forward(self, x):
        y = x.unsqueeze(0).expand(3, -1)
        y.add_(1)
        return y


class WriteBeforeExpand(torch.nn.Module):
    """The advice: write into the tensor before expanding it."""

    def forward(self, x):
        x = x + 1
        return x.unsqueeze(0).expand(3, -1)


class WritesFromItself(torch.nn.Module):
    def forward(self, x):
        y = x.repeat(2, 1)
        y[:, 1][...] = y[:-1]
        return y * 1


class WritesFromACopy(torch.nn.Module):
    """The advice: write from a copy."""

    def forward(self, x):
        y = x.repeat(2, 1)
        y[:, 1][...] = y[:-1].clone()
        return y * 1


class IndexPut(torch.nn.Module):
    def forward(self, x, i):
        return x.index_put((i,), torch.ones(2), accumulate=True)


@dataclasses.dataclass
class Case:
    name: str
    error: type[Exception] | None  # None: a warning of `warning`'s class
    bad: Callable[[], tuple[Any, tuple, dict]]  # (model, args, export options)
    match: str  # in the message: what to do
    good: Callable[[], tuple[Any, tuple, dict]]
    warning: type[Warning] = UserWarning
    calls: int = 1
    narrowed: bool = False  # the rewritten model's export warns what it assumes (rightly, for its inputs)


def upsampled() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv1d(2, 2, 1), torch.nn.Upsample(scale_factor=2, mode="linear"))


def x4(*_: Any) -> torch.Tensor:
    return torch.randn(4)


CASES = [
    Case("global_assignment", GlobalStateError, lambda: (AssignsGlobal(), (x4(),), {}), r"`state.copy_\(new_value\)`",
         lambda: (CopiesIntoGlobal(), (x4(),), {}), calls=3),
    Case("branch_where", DataDependentError, lambda: (Branch(), (x4().abs(),), {}), r"torch.where\(cond, a, b\)",
         lambda: (BranchWhere(), (x4().abs(),), {})),
    Case("branch_cond", DataDependentError, lambda: (Branch(), (x4().abs(),), {}), r"torch.cond\(pred, true_fn",
         lambda: (BranchCond(), (x4().abs(),), {})),
    Case("number_from_tensor", DataDependentError, lambda: (NumberBranch(), (x4(),), {}), r"Keep it a tensor",
         lambda: (NumberWhere(), (x4(),), {})),
    Case("global_number", None, lambda: (ReadsGlobalNumber(), (x4(),), {}), r"make it a buffer",
         lambda: (ScaleBuffer(), (x4(),), {})),
    Case("assumption_broken", CaptureError, lambda: (UniqueBroadcast(), (torch.randn(2),), {}),
         r"torch._check\(t.shape\[0\] == 1\)", lambda: (UniqueChecked(), (torch.randn(2),), {}), narrowed=True),
    Case("write_through_eval_dropout", ExportError, lambda: (WriteThroughDropout(), (x4(),), {}),
         r"into a copy of the dropout's result \(.clone\(\)\)", lambda: (WriteIntoDropoutCopy(), (x4(),), {})),
    Case("write_through_expand", ExportError, lambda: (WriteThroughExpand(), (x4(),), {}),
         r"Write into the tensor before expanding it", lambda: (WriteBeforeExpand(), (x4(),), {})),
    Case("write_from_itself", ExportError, lambda: (WritesFromItself(), (torch.randn(2),), {}),
         r"Write from a copy", lambda: (WritesFromACopy(), (torch.randn(2),), {})),
    Case("opset_too_low", UnsupportedOperatorError,
         lambda: (IndexPut(), (x4(), torch.tensor([1, 1])), {"opset": 9, "fallback": "error"}),
         r"supported from opset (\d+)", lambda: (IndexPut(), (x4(), torch.tensor([1, 1])), {"opset": "ADVISED"})),
    Case("exact_mode_refusal", ExportError,
         lambda: (upsampled(), (torch.randn(1, 2, 4),), {"exact": True, "training": True}),
         r"Export without exact=True", lambda: (upsampled(), (torch.randn(1, 2, 4),), {"training": True})),
]


def export(model: Any, args: tuple, options: dict) -> Any:
    options = dict(options)
    if options.pop("training", False):
        return aten2onnx.export_training(model, args, loss_fn=lambda out: out.square().mean(), **options)
    return aten2onnx.export(model, args, **options)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_following_the_advice_exports_and_matches_eager(case):
    global state
    model, args, options = case.bad()
    if case.error is None:
        with pytest.warns(case.warning, match=case.match):
            export(model, args, options)
    else:
        with pytest.raises(case.error) as caught:
            export(model, args, options)
        found = re.search(case.match, str(caught.value))
        assert found, str(caught.value)
    state = None
    model, args, options = case.good()
    if options.get("opset") == "ADVISED":  # the opset the message names
        options = {**options, "opset": int(found.group(1))}
    kept = STATE.clone()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore" if case.narrowed else "error", aten2onnx.NarrowedExportWarning)
            exported = export(model, args, options)
        reference = copy.deepcopy(model)
        for _ in range(case.calls):
            if options.get("training"):
                loss, _ = exported.run(*args)
                torch.testing.assert_close(loss, reference(*args).square().mean())
                continue
            want = flat_tensors(reference(*[a.clone() for a in args]))
            torch.testing.assert_close(flat_tensors(exported.run(*[a.clone() for a in args])), want)
            if not exported.fallback_ops:
                got = run_ort(exported.model_proto, dict(zip(exported.input_names, args)))
                if case.calls == 1:
                    for g, w in zip(got, want):
                        torch.testing.assert_close(torch.from_numpy(g), w)
    finally:
        with torch.no_grad():
            STATE.copy_(kept)
