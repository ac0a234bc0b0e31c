"""Comparisons, boolean logic, bitwise ops, IsNaN/IsInf and Where."""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import WIDEN


def _compare(op_type: str, since: int, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> type[Kernel]:
    def run(self, a, b):
        if isinstance(a, np.ndarray):  # string tensors: numpy object arrays (Equal from opset 19)
            x, y = np.broadcast_arrays(a, b)
            same = [p == q for p, q in zip(x.reshape(-1).tolist(), y.reshape(-1).tolist())]
            return (torch.tensor(same, dtype=torch.bool).reshape(x.shape),)
        if a.dtype in WIDEN:  # uint16/32/64 have no torch comparison kernels; int64 holds their values
            a, b = a.to(torch.int64), b.to(torch.int64)
        return (fn(a, b),)

    return kernel(op_type, since)(type(op_type, (Kernel,), {
        "run": run, "__doc__": f"{op_type}: {fn.__name__}", "__module__": __name__}))


Equal = _compare("Equal", 7, torch.eq)  # 19: strings
Less = _compare("Less", 7, torch.lt)
Greater = _compare("Greater", 7, torch.gt)
LessOrEqual = _compare("LessOrEqual", 12, torch.le)
GreaterOrEqual = _compare("GreaterOrEqual", 12, torch.ge)
And = _compare("And", 7, torch.logical_and)
Or = _compare("Or", 7, torch.logical_or)
Xor = _compare("Xor", 7, torch.logical_xor)


def _bitwise(op_type: str, fn: Callable[..., torch.Tensor]) -> type[Kernel]:
    def run(self, *xs):
        dtype = xs[0].dtype
        if dtype in WIDEN:  # same bits in a signed type of the same width
            signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}[dtype]
            return (fn(*[x.view(signed) for x in xs]).view(dtype),)
        return (fn(*xs),)

    return kernel(op_type, since=18)(type(op_type, (Kernel,), {
        "run": run, "__doc__": f"{op_type}: {fn.__name__}", "__module__": __name__}))


BitwiseAnd = _bitwise("BitwiseAnd", torch.bitwise_and)
BitwiseOr = _bitwise("BitwiseOr", torch.bitwise_or)
BitwiseXor = _bitwise("BitwiseXor", torch.bitwise_xor)
BitwiseNot = _bitwise("BitwiseNot", torch.bitwise_not)


@kernel("Not", since=1)
class Not(Kernel):
    def run(self, x):
        return (torch.logical_not(x),)


@kernel("IsNaN", since=9)
class IsNaN(Kernel):
    def run(self, x):
        return (torch.isnan(x),)


@kernel("IsInf", since=10)
class IsInf(Kernel):
    def setup(self, detect_negative: int = 1, detect_positive: int = 1) -> None:
        self.fn = (torch.isinf if detect_negative and detect_positive else torch.isneginf if detect_negative
                   else torch.isposinf if detect_positive else None)

    def run(self, x):
        if self.fn is None:
            return (torch.zeros_like(x, dtype=torch.bool),)
        return (self.fn(x),)


@kernel("Where", since=9)
class Where(Kernel):
    def run(self, cond, x, y):
        if x.dtype in WIDEN:
            signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}[x.dtype]
            return (torch.where(cond, x.view(signed), y.view(signed)).view(x.dtype),)
        return (torch.where(cond, x, y),)
