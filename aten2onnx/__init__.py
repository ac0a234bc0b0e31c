"""aten2onnx: export PyTorch models to ONNX through opset-versioned symbolic functions, and run
what it exports.

    import aten2onnx
    exported = aten2onnx.export(model, (x,), opset=18)
    exported.save("model.onnx")
    y = exported.run(x)
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Mapping

import torch
from beartype import BeartypeConf, beartype
from torch.export import ExportedProgram

from aten2onnx.errors import (
    ArgumentError,
    Aten2OnnxError,
    CaptureError,
    ExportError,
    InvalidInputError,
    InternalError,
    InvalidModelError,
    KernelError,
    RegistrationError,
    RunError,
    SymbolicError,
    UnsupportedOperatorError,
)
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.exporter.model import ExportedModel
from aten2onnx.exporter.training import TrainingModel
from aten2onnx.registry import REGISTRY
from aten2onnx.verification import Divergence, OutputCheck, VerificationReport

__all__ = [
    "export",
    "export_training",
    "verify",
    "ExportedModel",
    "TrainingModel",
    "VerificationReport",
    "OutputCheck",
    "Divergence",
    "register_symbolic",
    "unregister_symbolic",
    "GraphBuilder",
    "Value",
    "Aten2OnnxError",
    "ArgumentError",
    "CaptureError",
    "ExportError",
    "InvalidInputError",
    "InternalError",
    "InvalidModelError",
    "KernelError",
    "RegistrationError",
    "RunError",
    "SymbolicError",
    "UnsupportedOperatorError",
]
__version__ = "0.1.0"


_checked = beartype(conf=BeartypeConf(violation_param_type=ArgumentError, violation_return_type=ArgumentError))


@_checked
def export(
    model: torch.nn.Module | ExportedProgram | Callable[..., Any],
    args: tuple[Any, ...] | torch.Tensor = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    opset: int = 18,
    dynamic_shapes: Mapping[str, Any] | tuple[Any, ...] | list[Any] | None = None,
    fallback: Literal["aten", "error"] = "aten",
    input_names: list[str] | tuple[str, ...] | None = None,
    output_names: list[str] | tuple[str, ...] | None = None,
    custom_symbolics: Mapping[str, Callable[..., Any]] | None = None,
    progress: bool | None = None,
    exact: bool = False,
    functions: bool | list[type | str] | tuple[type | str, ...] = False,
) -> ExportedModel:
    """Export `model` called on `args`/`kwargs` to ONNX at `opset`.

    model: an nn.Module (exported in eval mode; its state is left exactly as it was), a plain
        function of tensors, or a torch.export.ExportedProgram.
    dynamic_shapes: torch.export's forms (Dim, Dim.AUTO, dicts/tuples by argument) or plain names,
        {"input_ids": {0: "batch", 1: "seq"}}; dynamic dims become ONNX dim_params named after them.
    fallback: "aten" exports ops with no symbolic as ATen nodes (runnable in aten2onnx.runtime) and
        warns; "error" raises one UnsupportedOperatorError listing every such op.
    custom_symbolics: {"aten::op.overload": fn} used for this export only, at every opset.
    progress: progress bars on stderr (capture, rewrite, translation); None: when stderr is a terminal.
    exact: aten2onnx.runtime runs the model bitwise equal to eager PyTorch (README "Exact mode" gives the
        conditions); the file is the same standard ONNX otherwise, with each op's ATen call in metadata.
    functions: module classes (or class names) whose every call becomes a call of an ONNX local function,
        one per class and body (domain aten2onnx.functions, named after the class), its weights passed
        in from the main graph; True: every class called more than once. Listed classes nest.
    """
    from aten2onnx._backend import runtime_backend
    from aten2onnx.exporter import export_program

    if isinstance(args, torch.Tensor):
        args = (args,)
    return export_program(
        model,
        args,
        dict(kwargs) if kwargs is not None else None,
        opset=opset,
        dynamic_shapes=dynamic_shapes,
        fallback=fallback,
        input_names=list(input_names) if input_names is not None else None,
        output_names=list(output_names) if output_names is not None else None,
        custom_symbolics=dict(custom_symbolics) if custom_symbolics is not None else None,
        backend=runtime_backend(),
        progress=progress,
        exact=exact,
        functions=functions if isinstance(functions, bool) else list(functions),
    )


@_checked
def export_training(
    model: torch.nn.Module,
    args: tuple[Any, ...] | torch.Tensor = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    targets: tuple[Any, ...] | list[Any] | torch.Tensor = (),
    loss_fn: Callable[..., Any] | None = None,
    opset: int = 18,
    dynamic_shapes: Mapping[str, Any] | tuple[Any, ...] | list[Any] | None = None,
    exact: bool = False,
    optimizer: Any = None,
    fallback: Literal["aten", "error"] = "aten",
    custom_symbolics: Mapping[str, Callable[..., Any]] | None = None,
    progress: bool | None = None,
) -> TrainingModel:
    """Export one training step's forward and backward: the loss `loss_fn(model(*args, **kwargs),
    *targets)`, or without loss_fn the model's own output (a scalar, or its first output), and its
    gradient with respect to each trainable parameter, captured in train mode (dropout and batch norm
    as `model.train()` runs them). The model is left as it was (training flags, requires_grad, .grad,
    buffers).

    The graph's inputs are args then targets (kwargs after them); its outputs `loss`, `<name>.grad`
    per trainable parameter (state_dict names; tied parameters one gradient), then `<buffer>.updated`
    per buffer the forward writes. `TrainingModel.run(*args, *targets)` returns (loss, {name: grad}).
    dynamic_shapes: by the graph's input names (the model's argument names, then `target` or
        `target_<i>`). exact, fallback, custom_symbolics, progress: as for `export`.
    optimizer: not exported yet; anything but None is an ArgumentError.
    """
    from aten2onnx._backend import runtime_backend
    from aten2onnx.exporter import export_traced
    from aten2onnx.exporter.training import loss_module

    if optimizer is not None:
        raise ArgumentError(f"optimizer={type(optimizer).__name__}: optimizer steps are not exported yet (a later "
                            "version); export_training exports the loss and the gradients. Apply the update to the "
                            "gradients TrainingModel.run returns, or pass optimizer=None")
    if isinstance(args, torch.Tensor):
        args = (args,)
    if isinstance(targets, torch.Tensor):
        targets = (targets,)
    kwargs = dict(kwargs) if kwargs is not None else None
    module = loss_module(model, args, kwargs, tuple(targets), loss_fn)
    return export_traced(
        module,
        (*args, *targets),
        kwargs,
        opset=opset,
        dynamic_shapes=dynamic_shapes,
        fallback=fallback,
        input_names=None,
        output_names=None,
        custom_symbolics=dict(custom_symbolics) if custom_symbolics is not None else None,
        backend=runtime_backend(),
        progress=progress,
        exact=exact,
        training=True,
    ).exported


@_checked
def verify(
    model: torch.nn.Module | ExportedProgram | Callable[..., Any],
    args: tuple[Any, ...] | torch.Tensor = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    opset: int = 18,
    runtimes: tuple[str, ...] | list[str] = ("onnxruntime", "aten2onnx"),
    inputs: tuple[Any, ...] | list[Any] = (),
    custom_symbolics: Mapping[str, Callable[..., Any]] | None = None,
    dynamic_shapes: Mapping[str, Any] | tuple[Any, ...] | list[Any] | None = None,
    fallback: Literal["aten", "error"] = "aten",
    progress: bool | None = None,
    exact: bool = False,
) -> VerificationReport:
    """Export `model` as `export` does, run the export in each runtime on `args`/`kwargs` and on each of
    `inputs` (more positional arguments: a tuple, or one tensor; the same kwargs), and compare every
    output, and every buffer or input the model writes, with eager PyTorch (DEFAULT_TOLERANCES per
    dtype, NaN equal to NaN). When anything differs, `first_divergence` names the first FX node whose
    ONNX value differs from eager's value of it: the ONNX node, op type, ATen overload, the user's
    file:line and module. onnxruntime is skipped (and says why) for models it cannot run.
    exact: export with exact=True and hold aten2onnx.runtime to bitwise equality (torch.equal; NaN equal
        to NaN): the first divergence is then the first op whose value is not bitwise eager's.
    """
    from aten2onnx.verification import verify_export

    if isinstance(args, torch.Tensor):
        args = (args,)
    return verify_export(model, args, dict(kwargs) if kwargs is not None else None, opset=opset,
                         runtimes=tuple(runtimes), inputs=list(inputs),
                         custom_symbolics=dict(custom_symbolics) if custom_symbolics is not None else None,
                         dynamic_shapes=dynamic_shapes, fallback=fallback, progress=progress, exact=exact)[1]


@_checked
def register_symbolic(name: str, opset: int = 9, *,
                      complex: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `fn(g, <schema arguments>)` as the translation of `name` (an ATen overload such as
    "aten::gelu.default", or a torch.library custom op "mylib::op") for every target opset >= opset.

    A user registration wins over the built-in ones at every opset at or above its own. It translates
    nodes with real tensors only, unless `complex=True`: then it translates the nodes with a complex
    tensor among their inputs or results instead, which reach it as real pairs (a trailing axis of 2).
    A real registration still reaches complex nodes whose built-in translation applies the real one to
    parts or to the pairs (docs/operators.md, "Complex tensors").
    """
    from aten2onnx import symbolic  # noqa: F401  (built-ins first, so the user layer sits on top)

    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        REGISTRY.add(name, opset, fn, user=True, complex=complex)
        return fn

    return decorator


@_checked
def unregister_symbolic(name: str, opset: int | None = None, *, complex: bool = False) -> None:
    """Remove a user registration (at one opset, or all of them); the built-in applies again."""
    REGISTRY.remove_user(name, opset, complex=complex)
