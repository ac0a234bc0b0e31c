"""Every exception aten2onnx raises on purpose.

Exporter errors derive from `ExportError`, runtime errors from `RunError`; both from `Aten2OnnxError`.
"""

from __future__ import annotations

import dataclasses


class Aten2OnnxError(Exception):
    """Base of every error raised by aten2onnx. `details`: more than the message says (what torch
    logged while failing, say), for `--verbose` and for whoever wants to dig; empty for most errors."""

    details: tuple[str, ...] = ()


class RegistrationError(Aten2OnnxError, TypeError):
    """A symbolic function was registered wrongly: unknown overload, duplicate, or a signature
    that does not match the ATen schema. Raised at registration (import) time."""


class ExportError(Aten2OnnxError):
    """Base of every error raised while exporting a model."""


class ArgumentError(ExportError, TypeError):
    """A public API function was called with a wrong argument: a wrong type, or a value that cannot
    work (an empty or repeated input or output name), named."""


class LibraryRefusal(ArgumentError):
    """A library call that aten2onnx captures through an equivalent (exporter/passes/libraries.py) asked in a way
    the equivalent cannot capture, with the call that can be: raised as it is from capture, not among
    torch.export's failures (the library's line is not the user's to change)."""


class InternalError(ExportError):
    """aten2onnx failed on its own bug, not the model's; the exception it hit is chained."""


class CaptureError(ExportError):
    """torch.export could not capture the model; carries torch.export's own messages.

    failures: (mode, exception) per capture attempt; source: the user's file:line where known;
    details (also `torch_log`): what torch logged and printed while failing, kept out of the terminal."""

    def __init__(self, message: str, *, failures: list | None = None, source: str | None = None,
                 torch_log: list[str] | None = None) -> None:
        super().__init__(message)
        self.failures = failures or []
        self.source = source
        self.details = tuple(torch_log or ())

    @property
    def torch_log(self) -> list[str]:
        return list(self.details)


class KernelOnly(NotImplementedError):
    """Raised by a symbolic function, like NotImplementedError, where ONNX cannot express the case and
    torch's decomposition of the op computes it otherwise than eager's kernel (other roundings): the node
    becomes an ATen node without its decomposition being tried. The exporter catches it."""


class SymbolicError(ExportError):
    """A symbolic function failed on one node; the message names the node, overload, opset and
    the user's source line, and the original exception is chained as `__cause__`."""


@dataclasses.dataclass(frozen=True)
class UnsupportedOp:
    """One unmapped operator occurrence: which overload, where in the user's code, and the opsets
    that do have a handler (empty when none does)."""

    overload: str
    node: str
    source: str | None
    registered_opsets: tuple[int, ...]
    reason: str | None = None  # why the handler at this opset could not translate this node
    decomposition: str | None = None  # why torch's decomposition of the op could not be translated instead

    def describe(self, opset: int) -> str:
        where = f" at {self.source}" if self.source else ""
        if self.reason:
            hint = self.reason
        elif not self.registered_opsets:
            hint = "no symbolic at any opset; register one with aten2onnx.register_symbolic"
        elif min(self.registered_opsets) > opset:
            hint = f"supported from opset {min(self.registered_opsets)}"
        else:
            hint = f"registered at opsets {list(self.registered_opsets)}"
        tried = f"; its decomposition could not be translated either: {self.decomposition}" if self.decomposition else ""
        return f"{self.overload} (node {self.node}{where}): {hint}{tried}"


class UnsupportedOperatorError(ExportError):
    """One or more operators have no symbolic function at the target opset.

    `ops` lists every occurrence, so a user sees all the work at once rather than one op at a time.
    """

    def __init__(self, ops: list[UnsupportedOp], opset: int):
        self.ops = ops
        self.opset = opset
        lines = "\n".join("  - " + op.describe(opset) for op in ops)
        super().__init__(
            f"{len(ops)} operator(s) have no symbolic function for opset {opset}:\n{lines}\n"
            "Use fallback='aten' to export them as ATen nodes runnable in aten2onnx.runtime, choose "
            "an opset where they are supported, or register a symbolic with "
            "aten2onnx.register_symbolic."
        )


class RunError(Aten2OnnxError):
    """Base of every error raised by aten2onnx.runtime."""


class InvalidModelError(RunError):
    """The model cannot be loaded: malformed graph, unknown op or opset, refused ATen operator."""


class InvalidInputError(RunError, ValueError):
    """A feed is missing, unknown, or of the wrong rank, shape or dtype."""


class KernelError(RunError):
    """A kernel failed while running; the message names the node and its op."""


class RunTimeoutError(RunError, TimeoutError):
    """A run took longer than its timeout (InferenceSession(timeout=...) or run(..., timeout=...))."""


class NarrowedExportWarning(UserWarning):
    """torch.export assumed something of the inputs that eager PyTorch does not need (a narrower range
    for a dynamic dim, a fixed value for a size read from data): the exported model holds only where
    the assumption does. The message says what was assumed and where."""


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn, attributed to the first caller outside aten2onnx (and its beartype wrappers)."""
    import os
    import sys
    import warnings

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(package)
                                 or frame.f_code.co_filename.startswith("<@beartype")):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
