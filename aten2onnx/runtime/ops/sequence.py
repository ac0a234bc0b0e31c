"""Sequence and Optional ops. A sequence is a Python list of tensors (never mutated: ops that change
one return a new list); an empty optional is None."""

from __future__ import annotations

import torch

from aten2onnx import _dtypes
from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import int_list, norm_axis


@kernel("SequenceConstruct", since=11)
class SequenceConstruct(Kernel):
    def run(self, *tensors):
        return (list(tensors),)


@kernel("SequenceEmpty", since=11)
class SequenceEmpty(Kernel):
    def setup(self, dtype: int = 1) -> None:
        self.dtype = _dtypes.to_torch(dtype)

    def run(self):
        return ([],)


@kernel("SequenceInsert", since=11)
class SequenceInsert(Kernel):
    def run(self, seq, tensor, position=None):
        pos = len(seq) if position is None else int(position)
        if pos < 0:
            pos += len(seq)
        return (seq[:pos] + [tensor] + seq[pos:],)


@kernel("SequenceAt", since=11)
class SequenceAt(Kernel):
    def run(self, seq, position):
        return (seq[int(position)],)


@kernel("SequenceErase", since=11)
class SequenceErase(Kernel):
    def run(self, seq, position=None):
        pos = len(seq) - 1 if position is None else int(position)
        if pos < 0:
            pos += len(seq)
        return (seq[:pos] + seq[pos + 1:],)


@kernel("SequenceLength", since=11)
class SequenceLength(Kernel):
    def run(self, seq):
        return (torch.tensor(len(seq), dtype=torch.int64, device=self.ctx.device),)


@kernel("SplitToSequence", since=11)
class SplitToSequence(Kernel):
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


@kernel("ConcatFromSequence", since=11)
class ConcatFromSequence(Kernel):
    def setup(self, axis: int, new_axis: int = 0) -> None:
        self.axis, self.new_axis = axis, new_axis

    def run(self, seq):
        if self.new_axis:
            return (torch.stack(seq, norm_axis(self.axis, seq[0].dim() + 1)),)
        return (torch.cat(seq, self.axis),)


@kernel("Optional", since=15)
class Optional(Kernel):
    def setup(self, type=None) -> None:
        pass

    def run(self, x=None):
        return (x,)


@kernel("OptionalHasElement", since=15)  # 18: the input may be left out (false), or be a plain tensor
class OptionalHasElement(Kernel):
    def run(self, x=None):
        return (torch.tensor(x is not None, device=self.ctx.device),)


@kernel("OptionalGetElement", since=15)  # 18: a plain tensor or sequence input too
class OptionalGetElement(Kernel):
    def run(self, x):
        if x is None:
            raise ValueError("OptionalGetElement on an empty optional")
        return (x,)
