"""What exact mode (`export(..., exact=True)`) refuses before translating: paths eager takes that the
exported graph cannot follow, each an ExportError naming the cause and what to do. The mechanism itself
(each op's ATen call in metadata) is in translate.py (`Translator._exact`) and runtime/exact.py."""

from __future__ import annotations

from typing import Any

import torch

from aten2onnx.errors import ExportError
from aten2onnx.exporter.gradients import takes_gradients

# Modules whose eager forward takes a fused "fast path" kernel (in eval mode, without grad) that a trace
# does not take: torch.export records the standard path, which rounds differently.
_FAST_PATHS = (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer, torch.nn.TransformerEncoder)


def check_model(model: Any) -> None:
    if not isinstance(model, torch.nn.Module) or not torch.backends.mha.get_fastpath_enabled():
        return
    fast = sorted({f"{name or '<root>'} ({type(m).__name__})" for name, m in model.named_modules()
                   if isinstance(m, _FAST_PATHS)})
    if fast:
        raise ExportError(f"exact mode: eager PyTorch runs {', '.join(fast)} through a fused fast-path kernel in "
                          "eval mode without grad, which a traced graph cannot follow, so no export can match it "
                          "bit for bit. Call torch.backends.mha.set_fastpath_enabled(False) (eager then runs the "
                          "path the graph records) and export again, or export without exact=True")


# Modules whose eager forward and backward with grad enabled (training) take kernels other than the ones
# the trace records: nn.LSTM's fused kernel and its backward round differently from the per-step ops
# torch.export records (found by tests/test_training.py; nn.GRU and nn.RNN are bitwise there).
_GRAD_PATHS = (torch.nn.LSTM,)


def check_training_model(model: Any) -> None:
    """What exact mode refuses in a training export (captured in train mode, run with grad)."""
    fused = sorted({f"{name or '<root>'} ({type(m).__name__})" for name, m in model.named_modules()
                    if isinstance(m, _GRAD_PATHS)})
    if fused:
        raise ExportError(f"exact mode: eager PyTorch runs {', '.join(fused)} with grad enabled through a fused "
                          "kernel that the traced per-step graph does not follow, so a training export cannot match "
                          "it bit for bit. Export without exact=True (the gradients are then equal within rounding)")


def check_training_program(ep: Any) -> None:
    """What exact mode refuses in a training export's captured program, before its joint export."""
    if takes_gradients(ep):
        raise ExportError("exact mode: the loss takes a gradient inside the forward (torch.autograd.grad, "
                          "torch.func), which the training export differentiates again as one graph; eager's "
                          "backward runs through that gradient's own backward nodes and sums the parameters' "
                          "gradient contributions in another order, so the gradients cannot match bit for bit. "
                          "Export without exact=True (the gradients are then equal within rounding)")


def check_traced(inexact: list[str]) -> None:
    if inexact:
        calls = ", ".join(sorted(set(inexact)))
        raise ExportError(f"exact mode: {calls} cannot be captured as eager runs it (its kernel reads tensor values "
                          "into Python); aten2onnx traces an equivalent formula, which rounds differently from "
                          "eager's kernel. Export without exact=True")
