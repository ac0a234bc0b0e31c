"""Diagnosis of Python patterns that cannot be exported as written, with the documented rewrite.

Globals are found by reading the bytecode of the user's forward methods (not torch's own): a
global number read at trace time is baked into the model (warned), and a global assigned during
tracing would be left holding a traced tensor (restored, then raised).
"""

from __future__ import annotations

import contextlib
import dataclasses
import dis
import os
import types
from typing import Any, Iterator

import torch

from aten2onnx.errors import CaptureError, ExportError, warn_user

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_MISSING = object()


class DataDependentError(CaptureError):
    """The model's Python depends on tensor values (a branch, a Python scalar, a shape)."""


class GlobalStateError(ExportError):
    """The model assigns to a Python global while running; the exported model could not do that."""


@dataclasses.dataclass(frozen=True)
class GlobalUse:
    name: str
    file: str
    line: int
    namespace: dict


def _user_functions(model: Any) -> list[Any]:
    """The user's forward functions (each module class's forward, or the function itself)."""
    functions = []
    if isinstance(model, torch.nn.Module):
        seen = set()
        for module in model.modules():
            forward = type(module).forward
            if forward not in seen:
                seen.add(forward)
                functions.append(forward)
        fn = getattr(model, "fn", None)  # a plain function wrapped for capture
        if callable(fn):
            functions.append(fn)
    elif callable(model):
        functions.append(model)
    return functions


def _user_code(model: Any) -> list[types.CodeType]:
    """Code objects of the user's forward functions (their nested functions included)."""
    codes = []
    for fn in _user_functions(model):
        code = getattr(fn, "__code__", None)
        # torch's generated code (a GraphModule's forward, `<eval_with_key>.N`) is not the user's; code the user
        # runs from a string or a prompt (`<stdin>`, exec) is
        if code is None or code.co_filename.startswith((_TORCH_DIR, _OWN_DIR, "<eval_with_key")):
            continue
        stack = [code]
        while stack:
            current = stack.pop()
            codes.append((current, fn.__globals__))
            stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return codes


def _globals(model: Any, opname: str) -> list[GlobalUse]:
    uses = []
    for code, namespace in _user_code(model):
        line = code.co_firstlineno
        for instr in dis.get_instructions(code):
            if instr.positions is not None and instr.positions.lineno is not None:
                line = instr.positions.lineno
            if instr.opname == opname:
                uses.append(GlobalUse(instr.argval, code.co_filename, line, namespace))
    return uses


@contextlib.contextmanager
def guarded_globals(model: Any) -> Iterator[None]:
    """Run capture with the user's globals protected: any global the forward code assigns is put
    back afterwards, and an assignment that happened is an error naming the line."""
    writes = _globals(model, "STORE_GLOBAL")
    saved = [(use, use.namespace.get(use.name, _MISSING)) for use in writes]
    changed: list[GlobalUse] = []
    try:
        yield
    finally:
        for use, value in saved:
            if use.namespace.get(use.name, _MISSING) is not value:
                changed.append(use)
                if value is _MISSING:
                    use.namespace.pop(use.name, None)
                else:
                    use.namespace[use.name] = value
    if changed:
        use = changed[0]
        raise GlobalStateError(
            f"the model assigns to the global variable {use.name!r} at {use.file}:{use.line}; an exported model "
            f"cannot change Python variables outside it. Keep the state in a tensor that exists before the call "
            f"(a buffer, or a global tensor) and update it in place, e.g. `{use.name}.copy_(new_value)` instead of "
            f"`{use.name} = new_value`, or return the value."
        )


def user_tensors(model: Any) -> dict[int, tuple[str, torch.Tensor]]:
    """The tensors a model keeps outside its parameters and buffers, which it may write in place and which
    outlive the call, by id: (where it lives, the tensor). Plain tensor attributes of its modules (named by
    their attribute path), globals its forward code reads (by the global's qualified name, module.name) and
    tensors its forward functions' closures hold (function.variable)."""
    found: dict[int, tuple[str, torch.Tensor]] = {}
    if isinstance(model, torch.nn.Module):
        for prefix, module in model.named_modules():
            for key, value in vars(module).items():
                if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                    found.setdefault(id(value), (f"{prefix}.{key}" if prefix else key, value))
    for use in _globals(model, "LOAD_GLOBAL"):
        value = use.namespace.get(use.name, _MISSING)
        if isinstance(value, torch.Tensor):
            found.setdefault(id(value), (f"{use.namespace.get('__name__', 'global')}.{use.name}", value))
    for fn in _user_functions(model):
        cells = getattr(fn, "__closure__", None) or ()
        for var, cell in zip(getattr(getattr(fn, "__code__", None), "co_freevars", ()), cells):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(value, torch.Tensor):
                found.setdefault(id(value), (f"{fn.__qualname__}.{var}", value))
    return found


@contextlib.contextmanager
def user_tensors_kept(model: Any) -> Iterator[dict[int, tuple[str, torch.Tensor]]]:
    """Capture with the model's own tensors (user_tensors) kept: torch.export's non-strict capture runs the
    forward's writes into them (`self.steps.add_(1)`, a global's `copy_`) on the tensors themselves, so each
    gets its value from before the capture back afterwards; the program's constants, which are those same
    tensors, then hold the values the exported model starts from. Yields user_tensors(model)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    found = user_tensors(model)
    with unset_fake_temporarily(), torch.no_grad():
        saved = {key: value.clone() for key, (_, value) in found.items()}
    try:
        yield found
    finally:
        with unset_fake_temporarily(), torch.no_grad():
            for key, (_, value) in found.items():
                before = saved[key]
                if value.shape == before.shape and value.dtype == before.dtype:
                    value.copy_(before)
                else:  # resize_ or set_ changed what it holds
                    value.set_(before)


def warn_baked_globals(model: Any) -> None:
    """Warn for each global number the forward code reads: its value at export time is baked in."""
    reported = set()
    for use in _globals(model, "LOAD_GLOBAL"):
        value = use.namespace.get(use.name, _MISSING)
        if isinstance(value, (bool, int, float)) and (use.name, use.file) not in reported:
            reported.add((use.name, use.file))
            warn_user(
                f"the global {use.name!r} (= {value!r}) read at {use.file}:{use.line} is baked into the exported "
                "model; it will not follow later changes. Pass it as an input tensor or make it a buffer if it "
                "changes."
            )


_DATA_DEPENDENT = ("GuardOnDataDependentSymNode", "DataDependentOutputException", "data-dependent",
                   "Data-dependent", "data dependent")


def reshaped_input(model: Any, args: tuple, kwargs: dict | None, error: CaptureError) -> ExportError | None:
    """Our error for a forward that changes the shape of one of its inputs in place (x.unsqueeze_(0),
    as_strided_), where torch.export's capture failed on it without saying so (an IndexError in its guards:
    the input's rank no longer fits its dynamic shapes). Found by running the forward on copies of the
    inputs, the model's own tensors restored after; None for any other failure."""
    import traceback

    from torch.overrides import TorchFunctionMode

    from aten2onnx.exporter.provenance import LIBRARY_DIRS

    if not any(isinstance(e, IndexError) for _, e in error.failures) or not callable(model):
        return None
    copies = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.detach().clone(), (args, kwargs or {}))
    inputs = {id(t): tuple(t.shape) for t in torch.utils._pytree.tree_leaves(copies) if isinstance(t, torch.Tensor)}
    found: list[str] = []

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, call_args: tuple = (), call_kwargs: dict | None = None) -> Any:
            out = func(*call_args, **(call_kwargs or {}))
            target = call_args[0] if call_args else None
            if not found and isinstance(target, torch.Tensor) and id(target) in inputs \
                    and tuple(target.shape) != inputs[id(target)]:
                frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(LIBRARY_DIRS)]
                where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
                name = getattr(func, "__name__", str(func))
                found.append(f"{name}(){where} changes the shape of the model's input in place ({inputs[id(target)]} "
                             f"-> {tuple(target.shape)}), which an exported model's input keeps; use the view "
                             f"instead (y = x.{name.rstrip('_')}(...))")
            return out

    try:
        with user_tensors_kept(model), torch.no_grad(), Watch():
            model(*copies[0], **copies[1])
    except Exception:  # noqa: BLE001 (the forward failing eagerly too: the capture's own error stands)
        return None
    return ExportError(found[0]) if found else None


def classify_capture_error(error: CaptureError) -> CaptureError:
    """A capture error caused by Python depending on tensor data, retyped with the rewrite to use."""
    text = " ".join(f"{type(e).__name__}: {e}" for _, e in error.failures)
    if not any(marker in text for marker in _DATA_DEPENDENT):
        return error
    where = f" at {error.source}" if error.source else ""
    better = DataDependentError(
        f"the model's Python depends on tensor values{where}: a branch on a tensor (`if (x > 0).all():`), a "
        "Python number made from one (`.item()`, `float(t)`, `int(t)`), or a shape that depends on values "
        "(`x[x > 0]`, `nonzero`) where it sets a size. Keep it a tensor: use `torch.where(cond, a, b)` for "
        "values and `torch.cond(pred, true_fn, false_fn, operands)` for branches; for a value-dependent size, "
        "declare the dim dynamic or keep the full size and mask with torch.where.\n" + str(error),
        failures=error.failures, source=error.source, torch_log=error.torch_log)
    return better
