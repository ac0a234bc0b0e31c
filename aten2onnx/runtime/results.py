"""What a kernel may return, decided per node when the session plans it and checked on every run, in
this one place: as many values as the node has outputs, each of the kind its op's schema gives it."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import onnx
import torch

from aten2onnx.errors import KernelError
from aten2onnx.runtime.kernel import holds_onnx

# The kinds of value a node output can hold, as the runtime holds them: a tensor (torch, or a numpy
# object array of str for tensor(string)), a sequence (a list of tensors), or None (an empty optional).
TENSOR, SEQUENCE, NONE = "a tensor", "a sequence", "None"
ANY = frozenset((TENSOR, SEQUENCE, NONE))  # an op onnx does not define: its kernel is the definition


class ResultCheck:
    """The checks for one node's results.

    kinds: per node output, the kinds of value it may hold (from the op's schema).
    dtypes: per node output, the dtype the model declares for it, checked where given: for ATen nodes,
        whose kernel (any torch op) gives dtypes the runtime cannot know in advance.
    max_results: the most values the kernel may give (the op's schema may have optional outputs the
        node leaves out, which the kernel computes anyway); None: exactly one per node output.
    device: where given, each tensor must be a plain dense tensor there (a foreign op's result: zero
        tensors, batched tensors and subclasses are refused).
    """

    __slots__ = ("node", "kinds", "dtypes", "max_results", "device")

    def __init__(self, node: onnx.NodeProto, kinds: Sequence[frozenset[str]], dtypes: Sequence[torch.dtype | None] = (),
                 max_results: int | None = None, device: torch.device | None = None) -> None:
        self.node = node
        self.kinds = tuple(kinds)
        self.dtypes = tuple(dtypes) or (None,) * len(node.output)
        self.max_results = max_results
        self.device = device

    @classmethod
    def for_schema(cls, node: onnx.NodeProto, schema: onnx.defs.OpSchema | None) -> ResultCheck:
        """The check for a node of an op with this schema (None: an op onnx does not define, whose kernel
        is its definition: any kind of value, one per output)."""
        if schema is None or not schema.outputs:
            return cls(node, [ANY] * len(node.output))
        kinds = [_kind(schema, schema.outputs[min(i, len(schema.outputs) - 1)]) for i in range(len(node.output))]
        return cls(node, kinds, max_results=max(schema.max_output, len(node.output)))

    @classmethod
    def foreign(cls, node: onnx.NodeProto, dtypes: Sequence[torch.dtype | None], device: torch.device) -> ResultCheck:
        """The check for a node whose kernel runs code not written for the runtime (an ATen op): exactly
        one plain dense tensor per output, on the session's device, of the dtype the model declares."""
        return cls(node, [frozenset({TENSOR})] * len(node.output), dtypes, device=device)

    def __call__(self, results: Any) -> None:
        """Raise KernelError naming the node unless `results` is what its kernel may return."""
        n = len(self.node.output)
        if not isinstance(results, tuple):
            self._fail(f"its kernel returned a {type(results).__name__}, not a tuple of values")
        if len(results) < n or len(results) > (self.max_results or n):
            bound = "" if (self.max_results or n) == n else f" (at most {self.max_results})"
            self._fail(f"its kernel returned {len(results)} values, but the node has {n} outputs{bound}")
        for i, name in enumerate(self.node.output):
            if name:
                problem = self._problem(results[i], self.kinds[i], self.dtypes[i])
                if problem:
                    self._fail(f"it gave {_describe(results[i])} for its output {name!r}; it must give {problem}")

    def _problem(self, value: Any, kinds: frozenset[str], dtype: torch.dtype | None) -> str | None:
        """What is wrong with one output's value (None: nothing), as what it must be instead."""
        if dtype is not None and not (isinstance(value, torch.Tensor) and value.dtype == dtype):
            return f"a tensor of {dtype}, as the model declares"
        if self.device is not None and not _plain(value, self.device):
            return f"a plain dense tensor on {self.device} of an ONNX element type"
        if value is None:
            kind = NONE
        elif isinstance(value, list):
            kind = SEQUENCE if all(_tensor(v) for v in value) else None
        else:
            kind = TENSOR if _tensor(value) else None
        if kind in kinds:
            return None
        return " or ".join(k for k in (TENSOR, SEQUENCE, NONE) if k in kinds) + \
            ("" if kind else " (tensors of an ONNX element type)")

    def _fail(self, what: str) -> None:
        raise KernelError(f"node {self.node.name!r} ({self.node.op_type}): {what}")


def _tensor(value: Any) -> bool:
    """A tensor the runtime holds: strided torch of an ONNX element type, or strings as a numpy object array."""
    if isinstance(value, torch.Tensor):
        return value.layout == torch.strided and holds_onnx(value.dtype)
    return isinstance(value, np.ndarray) and value.dtype == object


def _plain(value: Any, device: torch.device) -> bool:
    """A tensor the runtime can hold from a foreign op: dense, on the session's device, of an ONNX
    element type, and not one of torch's special tensors (zero tensors, vmap's batched tensors,
    tensor subclasses)."""
    return type(value) is torch.Tensor and value.layout == torch.strided and value.device == device \
        and holds_onnx(value.dtype) and not value._is_zerotensor() \
        and not torch._C._functorch.is_batchedtensor(value)


def _kind(schema: onnx.defs.OpSchema, output: onnx.defs.OpSchema.FormalParameter) -> frozenset[str]:
    """The kinds an output of the schema may hold: from its type string, or its type constraint's types."""
    types = [output.type_str]
    for constraint in schema.type_constraints:
        if constraint.type_param_str == output.type_str:
            types = list(constraint.allowed_type_strs)
    kinds = set()
    for t in types:
        optional = t.startswith("optional(")
        inner = t[len("optional("):] if optional else t
        kinds.add(SEQUENCE if inner.startswith("seq(") else TENSOR)
        if optional:
            kinds.add(NONE)
    return frozenset(kinds)


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of {value.dtype}" + ("" if value.layout == torch.strided else f" ({value.layout})")
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "None" if value is None else f"a {type(value).__name__}"
