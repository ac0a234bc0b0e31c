"""Where a graph node came from: the user's file:line and module path, as every exported node records."""

from __future__ import annotations

import os
import re

import torch
import torch.fx

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
LIBRARY_DIRS = (_TORCH_DIR, _OWN_DIR)  # frames in these are not the user's code
# Frames of code FX generates (a control-flow body's forward), numbered per process: never the
# user's line, and a model's metadata must not depend on how many graphs the process made before.
_GENERATED = "<eval_with_key>"
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


def source_of(node: torch.fx.Node) -> str | None:
    """file:line of the user's code that made node: the innermost frame outside torch and aten2onnx."""
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    if not frames:
        return None
    frames = [(file, line) for file, line, _ in frames if not file.startswith(_GENERATED)]
    if not frames:
        return None
    for file, line in reversed(frames):
        if not file.startswith(LIBRARY_DIRS):
            return f"{file}:{line}"
    file, line = frames[-1]
    return f"{file}:{line}"


def user_frame(where: str | None) -> str | None:
    """A source_of location, unless it lies in torch's own files (a model that is a torch.nn layer itself)."""
    return where if where is not None and not where.startswith(_TORCH_DIR) else None


def module_of(node: torch.fx.Node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, cls = list(stack.values())[-1]
    cls_name = cls if isinstance(cls, str) else getattr(cls, "__qualname__", str(cls))
    return f"{path or '<root>'} ({cls_name.rsplit('.', 1)[-1]})"
