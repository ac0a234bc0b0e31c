"""Capture a model as an ATen-level ExportedProgram with torch.export, leaving the model as it was."""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import traceback
from typing import Any, Callable, Iterator

import torch
from torch.export import ExportedProgram
from torch.overrides import TorchFunctionMode

from aten2onnx.errors import CaptureError

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _FunctionModule(torch.nn.Module):
    """Lets torch.export capture a plain function of tensors."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn


def _function_module(fn: Callable) -> torch.nn.Module:
    """A module whose forward has fn's signature, so inputs keep the function's parameter names."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    signature = inspect.signature(fn)
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    forward.__signature__ = signature.replace(parameters=[self_param, *signature.parameters.values()])
    cls = type(f"Function_{getattr(fn, '__name__', 'fn')}", (_FunctionModule,), {"forward": forward})
    # torch.export keeps stack frames of functions named "forward" only, unless a function is
    # registered as an anchor; without this, nodes of a plain function would have no source line.
    anchor = getattr(torch.fx.proxy, "_register_stack_trace_anchor", None)
    if anchor is not None:
        anchor(fn)
    return cls(fn)


@contextlib.contextmanager
def _preserved(model: torch.nn.Module) -> Iterator[None]:
    """Export in eval mode, then put back every module's training flag and every parameter's
    requires_grad exactly as they were."""
    training = {m: m.training for m in model.modules()}
    requires_grad = {p: p.requires_grad for p in model.parameters()}
    try:
        model.eval()
        yield
    finally:
        for module, flag in training.items():
            module.training = flag
        for param, flag in requires_grad.items():
            param.requires_grad_(flag)


def _user_frame(exc: BaseException) -> str | None:
    """file:line of the innermost frame in the user's code (outside torch) of an exception."""
    found = None
    while exc is not None:
        for frame in traceback.extract_tb(exc.__traceback__):
            if not frame.filename.startswith((_TORCH_DIR, _OWN_DIR)):
                found = f"{frame.filename}:{frame.lineno}"
        exc = exc.__cause__ or exc.__context__
    return found


def _summary(e: BaseException, max_lines: int = 8) -> str:
    """The first lines of torch.export's message that say something (its own hints included)."""
    text = [line.rstrip() for line in str(e).strip().splitlines() if line.strip()]
    text = [line for line in text if not line.lstrip().startswith(("Set TORCH", "For more information", "File \""))]
    more = " ..." if len(text) > max_lines else ""
    return "\n    ".join(text[:max_lines]) + more


def _cov(input: torch.Tensor, *, correction: int = 1, fweights: torch.Tensor | None = None,
         aweights: torch.Tensor | None = None) -> torch.Tensor:
    """torch.cov as tensor ops (ATen's cov checks its arguments with data-dependent comparisons,
    which torch.export cannot trace; the weights' sign and integrality are not checked here)."""
    x = input if input.dim() == 2 else input.reshape(1, -1)
    weights = fweights if aweights is None else aweights if fweights is None else fweights * aweights
    if weights is None:
        avg = x.mean(1, keepdim=True)
        norm = x.shape[1] - correction
    else:
        w_sum = weights.sum()
        avg = (x * weights).sum(1, keepdim=True) / w_sum
        norm = w_sum if correction == 0 else w_sum - correction if aweights is None else \
            w_sum - correction * (weights * aweights).sum() / w_sum
    norm = torch.clamp(torch.as_tensor(norm, dtype=avg.dtype), min=0)  # ATen warns and uses 0
    xm = x - avg
    c = xm @ (xm if weights is None else xm * weights).transpose(0, 1).conj()
    return (c / norm).squeeze()


def _corrcoef(input: torch.Tensor) -> torch.Tensor:
    """torch.corrcoef by _cov, as ATen computes it."""
    c = _cov(input)
    if c.dim() == 0:
        return c / c
    std = torch.sqrt(torch.diagonal(c))
    c = c / std[:, None] / std[None, :]
    return torch.clamp(c, -1, 1) if not c.is_complex() else torch.complex(torch.clamp(c.real, -1, 1), torch.clamp(c.imag, -1, 1))


def _gaussian_nll_loss(input: torch.Tensor, target: torch.Tensor, var: torch.Tensor, full: bool = False,
                       eps: float = 1e-6, reduction: str = "mean") -> torch.Tensor:
    """F.gaussian_nll_loss with a tensor var, as torch computes it, but for the check that var has no
    negative entry: torch raises on `torch.any(var < 0)`, a bool read from data, which torch.export can
    only carry as a runtime assertion, and an exported graph drops those (translate._ASSERTIONS: ONNX has
    no op that stops a run). Dropped, the graph would clamp a negative var to eps and return a finite
    loss where eager raises; instead the whole result is NaN then, which no valid input gives (var is
    clamped to eps > 0 before the log). The shape checks read sizes only, so they stay as torch has them."""
    negative = torch.any(var < 0)
    if var.size() != input.size():
        if input.size()[:-1] == var.size():  # one var per row of the last dim
            var = torch.unsqueeze(var, -1)
        elif not (input.ndim == var.ndim
                  and sum(y for x, y in zip(input.size(), var.size(), strict=True) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # torch clamps a clone in place under no_grad, so that the gradient passes unclamped, and adds the
    # constant in place; an exported graph has no gradient, and out of place the values are the same
    var = var.clamp(min=eps)
    loss = 0.5 * (torch.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    loss = loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
    return torch.where(negative, math.nan, loss)


def _narrow(input: torch.Tensor, dim: int, start: torch.Tensor, length: int) -> torch.Tensor:
    """narrow at a start held in a 0-d tensor. narrow.Tensor reads the start inside ATen, where
    torch.export cannot bind it to the graph (PendingUnbackedSymbolNotFound); here `.item()` reads it in
    the graph, and the rest is narrow.default's: a negative start counts from the end, the range is
    checked as eager checks it (runtime assertions, which an exported graph drops like every
    torch._check), and the result is a slice, a view of input, so writes through it reach input."""
    dim = dim + input.dim() if dim < 0 else dim
    size = input.shape[dim]
    value = start.long().item()  # as narrow.Tensor reads it: item<int64_t>()
    torch._check_index((-size <= value) & (value <= size),
                       lambda: f"start out of range (expected to be in range of [{-size}, {size}], but got {value})")
    value = torch.sym_ite(value < 0, value + size, value)
    torch._check(value >= 0)
    torch._check(length >= 0, lambda: "narrow(): length must be non-negative.")
    torch._check(value + length <= size, lambda: f"start ({value}) + length ({length}) exceeds dimension size ({size}).")
    out = input[(slice(None),) * dim + (slice(value, value + length),)]
    torch._check(out.shape[dim] == length)  # the slice's size is the length, not a new unbacked symbol
    return out


def _floating_var(args: tuple, kwargs: dict) -> bool:
    """Whether a gaussian_nll_loss call's var is a floating tensor (a number needs nothing; eager
    rejects an integer tensor when it clamps it in place)."""
    var = args[2] if len(args) > 2 else kwargs.get("var")
    return isinstance(var, torch.Tensor) and var.is_floating_point()


def _tensor_start(args: tuple, kwargs: dict) -> bool:
    """Whether a narrow call starts at a 0-d integer tensor (any other tensor start is eager's error)."""
    start = args[2] if len(args) > 2 else kwargs.get("start")
    return (isinstance(start, torch.Tensor) and start.dim() == 0 and start.dtype != torch.bool
            and not start.dtype.is_floating_point and not start.dtype.is_complex)


class _DataDependentChecks(TorchFunctionMode):
    """Functions torch.export cannot trace because they compute a Python bool from tensor values
    (aten.equal has no fake kernel: its output depends on data), traced as equivalents during
    non-strict capture. torch.equal and torch.allclose become tensor ops read back with `.item()`,
    a symbolic bool the graph carries: returned, it is a graph output; branched on, torch.export
    reports the branch. torch.cov and torch.corrcoef (which call equal to check arguments) become
    their formulas. one_hot without num_classes and tensor_split at indices held in a tensor read
    their sizes from data: they become symbolic sizes. gaussian_nll_loss raises on negative variances
    read from data: its result becomes NaN there. narrow at a start held in a tensor reads the start
    where torch.export does not see it: the start becomes a symbolic int."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.equal, torch.Tensor.equal):
            a, b = args
            if a.shape != b.shape:
                return False
            return torch.eq(a, b).all().item()
        if func in (torch.allclose, torch.Tensor.allclose):
            return torch.isclose(*args, **kwargs).all().item()
        if func is torch.nn.functional.one_hot and (args[1:] or [kwargs.get("num_classes", -1)])[0] == -1:
            # the class count is the data's maximum + 1: a symbolic size the graph computes
            x = args[0]
            classes = x.max().item() + 1
            torch._check(classes >= 1)
            return (x.unsqueeze(-1) == torch.arange(classes, device=x.device)).long()
        if func in (torch.tensor_split, torch.Tensor.tensor_split) and isinstance(args[1], torch.Tensor) \
                and args[1].dim() == 1:
            # split points read from a tensor: symbolic ints (a 0-d tensor, a count of sections, would
            # make the number of outputs depend on data, which no graph can have)
            x, indices, *rest = args
            return func(x, indices.tolist(), *rest, **kwargs)
        if func in (torch.cov, torch.Tensor.cov):
            return _cov(*args, **kwargs)
        if func in (torch.corrcoef, torch.Tensor.corrcoef):
            return _corrcoef(*args, **kwargs)
        if func is torch.nn.functional.gaussian_nll_loss and _floating_var(args, kwargs):
            return _gaussian_nll_loss(*args, **kwargs)
        if func in (torch.narrow, torch.Tensor.narrow) and _tensor_start(args, kwargs):
            return _narrow(*args, **kwargs)
        return func(*args, **kwargs)


def capture(model: Any, args: tuple, kwargs: dict | None, dynamic_shapes: Any) -> ExportedProgram:
    if isinstance(model, ExportedProgram):
        return model
    module = model if isinstance(model, torch.nn.Module) else _function_module(model)
    failures: list[tuple[str, BaseException]] = []
    with _preserved(module):
        for strict in (False, True):
            try:
                with contextlib.nullcontext() if strict else _DataDependentChecks():
                    return torch.export.export(module, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)
            except Exception as e:  # torch.export raises many types; all are reported below
                failures.append(("non-strict" if not strict else "strict", e))
    where = next((w for w in (_user_frame(e) for _, e in failures) if w), None)
    lines = [f"torch.export could not capture the model{f' (at {where})' if where else ''}."]
    for mode, e in failures:
        message = str(e).strip().split("\n\n")[0]
        lines.append(f"  {mode} capture: {type(e).__name__}: {message}")
    lines.append("Fix the first failure: non-strict capture traces your Python as written.")
    error = CaptureError("\n".join(lines))
    error.failures = failures
    error.source = where
    raise error from failures[0][1]
