"""Constant folding for the exporter, with the runtime's own kernels."""

from __future__ import annotations

from typing import Any

import onnx
import torch

from aten2onnx.errors import InvalidModelError
from aten2onnx.runtime import ops  # noqa: F401  (registers the kernels)
from aten2onnx.runtime.kernel import SessionContext, find_kernel, op_schema
from aten2onnx.runtime.results import ResultCheck

_CPU = torch.device("cpu")
# Ops never folded: random, or with subgraphs.
_NEVER = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                    "Bernoulli", "Dropout", "If", "Loop", "Scan"})


def evaluate_constant(op_type: str, opset: int, inputs: list[torch.Tensor | None], attrs: dict[str, Any],
                      outputs: int = 1) -> tuple[torch.Tensor, ...] | None:
    """The node's `outputs` outputs on constant inputs, or None when it cannot be folded here."""
    if op_type in _NEVER:
        return None
    try:
        cls = find_kernel("", op_type, opset)
    except InvalidModelError:
        return None
    # a node of the right arity: some kernels (Split) size their results by it
    node = onnx.helper.make_node(op_type, [], [f"out{i}" for i in range(outputs)])
    kernel = cls(SessionContext(_CPU, {"": opset}, ()), node, **attrs)
    with torch.inference_mode():
        results = kernel.run(*inputs)
    ResultCheck.for_schema(node, op_schema("", op_type, opset))(results)
    return tuple(r.clone() if r.is_inference() else r for r in results)
