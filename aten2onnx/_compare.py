"""Comparing what a runtime returned with eager PyTorch: tolerances per dtype, NaN equal to NaN,
integers and bools exact; whether onnxruntime can run an export at all, and a quiet session of it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import onnx
import torch

if TYPE_CHECKING:
    from aten2onnx.exporter.model import ExportedModel

# (rtol, atol) per dtype; integer and bool results must match exactly. Wider than
# torch.testing's defaults for float32: onnxruntime's transcendental kernels differ in the last bits.
DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (2e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float32: (1e-5, 1e-6),
    torch.float64: (1e-7, 1e-9),
    torch.complex64: (1e-5, 1e-6),
    torch.complex128: (1e-7, 1e-9),
}


def ort_can_run(exported: ExportedModel) -> bool:
    """onnxruntime runs no ATen fallback nodes, and its Python API exchanges no bfloat16."""
    if exported.fallback_ops:
        return False
    graph = exported.model_proto.graph
    return all(v.type.tensor_type.elem_type != onnx.TensorProto.BFLOAT16
               for v in list(graph.input) + list(graph.output))


def ort_session(model: onnx.ModelProto, log_severity: int = 3) -> Any:
    """An onnxruntime CPU session of model, logging errors only (4: fatal ones only)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = log_severity
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def describe(value: Any) -> str:
    """dtype[shape] for a tensor, with its values when small enough to read."""
    if isinstance(value, torch.Tensor):
        head = f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
        if value.numel() <= 16:
            return f"{head} {value.tolist()}"
        return head
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    return repr(value)


def difference(got: Any, expected: Any, rtol: float | None, atol: float | None) -> str | None:
    """Why got does not match expected, or None when it does."""
    if not isinstance(expected, torch.Tensor):
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        return None if got == expected else f"got {got!r}, expected {expected!r}"
    if not isinstance(got, torch.Tensor):
        return f"got {type(got).__name__} {got!r}, expected a tensor {describe(expected)}"
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    if got.shape != expected.shape:
        return f"shape {list(got.shape)}, expected {list(expected.shape)}"
    if got.numel() == 0:
        return None
    exact = not (expected.dtype.is_floating_point or expected.dtype.is_complex)
    if exact:
        close = got == expected
        tolerance = "exact"
    else:
        default_rtol, default_atol = DEFAULT_TOLERANCES.get(expected.dtype, (1e-5, 1e-6))
        r = default_rtol if rtol is None else rtol
        a = default_atol if atol is None else atol
        close = torch.isclose(got, expected, rtol=r, atol=a, equal_nan=True)
        tolerance = f"rtol={r:g}, atol={a:g}"
    if bool(close.all()):
        return None
    wide = torch.complex128 if expected.dtype.is_complex else torch.float64
    diff = (got.to(wide) - expected.to(wide)).abs()
    diff = torch.where(close, torch.zeros_like(diff), torch.nan_to_num(diff, nan=math.inf))
    worst = int(diff.flatten().argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), expected.shape))
    bad = int((~close).sum())
    return (f"{bad} of {expected.numel()} elements differ ({tolerance}); the largest at index {list(index)}: "
            f"got {got[index].item()!r}, expected {expected[index].item()!r} (abs diff {diff.flatten()[worst].item():.3g})")
