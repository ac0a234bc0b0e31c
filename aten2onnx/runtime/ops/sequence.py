"""Sequence and Optional ops. A sequence is a Python list of tensors (never mutated: ops that change
one return a new list); an empty optional is None."""

from __future__ import annotations

import torch

from aten2onnx import _dtypes
from aten2onnx.runtime.kernel import Kernel
from aten2onnx.runtime.ops._util import int_list, norm_axis


class SequenceConstruct(Kernel):
    op_type, since_version = "SequenceConstruct", 11

    def run(self, *tensors):
        return (list(tensors),)


class SequenceEmpty(Kernel):
    op_type, since_version = "SequenceEmpty", 11

    def setup(self, dtype: int = 1) -> None:
        self.dtype = _dtypes.to_torch(dtype)

    def run(self):
        return ([],)


class SequenceInsert(Kernel):
    op_type, since_version = "SequenceInsert", 11

    def run(self, seq, tensor, position=None):
        pos = len(seq) if position is None else int(position)
        if pos < 0:
            pos += len(seq)
        return (seq[:pos] + [tensor] + seq[pos:],)


class SequenceAt(Kernel):
    op_type, since_version = "SequenceAt", 11

    def run(self, seq, position):
        return (seq[int(position)],)


class SequenceErase(Kernel):
    op_type, since_version = "SequenceErase", 11

    def run(self, seq, position=None):
        pos = len(seq) - 1 if position is None else int(position)
        if pos < 0:
            pos += len(seq)
        return (seq[:pos] + seq[pos + 1:],)


class SequenceLength(Kernel):
    op_type, since_version = "SequenceLength", 11

    def run(self, seq):
        return (torch.tensor(len(seq), dtype=torch.int64, device=self.ctx.device),)


class SplitToSequence(Kernel):
    op_type, since_version = "SplitToSequence", 11
    covers = (24,)

    def setup(self, axis: int = 0, keepdims: int = 1) -> None:
        self.axis, self.keepdims = axis, keepdims

    def run(self, x, split=None):
        axis = norm_axis(self.axis, x.dim())
        if split is None:
            parts = list(torch.split(x, 1, axis))
            return ([p.squeeze(axis) for p in parts] if not self.keepdims else parts,)
        sizes = int_list(split)
        if split.dim() == 0:
            return (list(torch.split(x, sizes[0], axis)),)
        return (list(torch.split(x, sizes, axis)),)


class ConcatFromSequence(Kernel):
    op_type, since_version = "ConcatFromSequence", 11

    def setup(self, axis: int, new_axis: int = 0) -> None:
        self.axis, self.new_axis = axis, new_axis

    def run(self, seq):
        if self.new_axis:
            return (torch.stack(seq, norm_axis(self.axis, seq[0].dim() + 1)),)
        return (torch.cat(seq, self.axis),)


class Optional(Kernel):
    op_type, since_version = "Optional", 15
    covers = (28,)

    def setup(self, type=None) -> None:
        pass

    def run(self, x=None):
        return (x,)


class OptionalHasElement(Kernel):
    op_type, since_version = "OptionalHasElement", 15

    def run(self, x=None):
        return (torch.tensor(x is not None, device=self.ctx.device),)


class OptionalGetElement(Kernel):
    op_type, since_version = "OptionalGetElement", 15
    covers = (18, 28)  # 18: a plain tensor or sequence input too

    def run(self, x):
        if x is None:
            raise ValueError("OptionalGetElement on an empty optional")
        return (x,)


class OptionalHasElement18(OptionalHasElement):
    """OptionalHasElement from opset 18: the input may be left out (false), or be a plain tensor."""

    since_version = 18
    covers = (28,)


KERNELS = (SequenceConstruct, SequenceEmpty, SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
           SplitToSequence, ConcatFromSequence, Optional, OptionalHasElement, OptionalGetElement,
    OptionalHasElement18,
)
