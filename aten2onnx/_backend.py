"""aten2onnx.runtime as the exporter's backend: the constant folder and ExportedModel.run's sessions.
The one module that hands the runtime to the exporter; neither imports the other."""

from __future__ import annotations

import functools
from typing import Any

from aten2onnx import _aten_node
from aten2onnx.exporter import Backend


def _session(model: Any, fallback_ops: list[str]) -> Any:
    """A session of a model this process exported from the caller's own code: its own fallback ops
    run (a custom op included) besides what the safety rule admits."""
    from aten2onnx.runtime import InferenceSession, exact as exact_mode, safety

    # an exact export runs its ops as the ATen calls the caller's own code made, trusted as its
    # fallback ops are; and draws random numbers where eager would: from the process's generator
    exact = _aten_node.is_exact(model)
    calls = exact_mode.call_keys(model) if exact else set()
    namespaces = {"aten"} | {op.split("::", 1)[0] for op in set(fallback_ops) | calls}
    own = frozenset(fallback_ops) | calls
    return InferenceSession(model, allowed_aten_namespaces=tuple(sorted(namespaces)),
                            allowed_aten_ops=lambda op: safety.is_safe(op) or safety.op_key(op) in own,
                            rng="process" if exact else "private")


def _evaluate(*args: Any) -> Any:
    from aten2onnx.runtime.fold import evaluate_constant

    return evaluate_constant(*args)


@functools.cache
def runtime_backend() -> Backend:
    return Backend(evaluate=_evaluate, session=_session)
