"""What exact mode (`export(..., exact=True)`) refuses before translating: paths eager takes that the
exported graph cannot follow, each an ExportError naming the cause and what to do. The mechanism itself
(each op's ATen call in metadata) is in translate.py (`Translator._exact`) and runtime/exact.py."""

from __future__ import annotations

from typing import Any

import torch

from aten2onnx.errors import ExportError
from aten2onnx.exporter.gradients import takes_gradients
from aten2onnx.exporter.provenance import source_of

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


# Ops whose joint export is not eager's autograd (measured: the joint program run with eager's kernels
# differs from eager's backward), by overload packet: the reason each is refused under exact=True.
_JOINT_TRACED_OTHERWISE = dict.fromkeys(
    ("upsample_linear1d", "upsample_bilinear2d", "upsample_bicubic2d", "upsample_trilinear3d", "multi_margin_loss",
     "multilabel_margin_loss", "multilabel_margin_loss_forward"),
    "torch's joint export runs its Python decomposition (registered for autograd) where eager runs the op's kernel "
    "and its backward kernel, so the loss and the gradients round differently")
_JOINT_TRACED_OTHERWISE["prod"] = (
    "eager's backward picks its formula by whether the input holds zeros (grad * result / input when none), which "
    "a traced graph cannot follow: the joint export always takes the zero-safe cumulative-product formula, which "
    "rounds differently")


def check_training_program(ep: Any) -> None:
    """What exact mode refuses in a training export's captured program, before its joint export."""
    for node in ep.graph.nodes:
        packet = getattr(getattr(node.target, "_overloadpacket", None), "__name__", None)
        val = node.meta.get("val")
        if node.op == "call_function" and packet in _JOINT_TRACED_OTHERWISE and isinstance(val, torch.Tensor) \
                and val.dtype.is_floating_point:
            where = source_of(node)
            raise ExportError(f"exact mode: node {node.name!r} (aten::{packet}){f' at {where}' if where else ''}: "
                              f"{_JOINT_TRACED_OTHERWISE[packet]}; a training export cannot match eager bit for bit. "
                              "Export without exact=True (the gradients are then equal within rounding)")
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
