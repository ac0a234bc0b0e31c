"""Matrix products: MatMul, Gemm (as torch.addmm, the kernel nn.Linear runs), Einsum, Det, MatMulInteger."""

from __future__ import annotations

import math

import torch

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import WIDEN


@kernel("MatMul", since=1)
class MatMul(Kernel):
    def run(self, a, b):
        if a.dtype in WIDEN:
            return (torch.matmul(a.to(torch.int64), b.to(torch.int64)).to(a.dtype),)
        return (torch.matmul(a, b),)


@kernel("Gemm", since=7)  # 11: C is optional
class Gemm(Kernel):
    """Gemm: alpha * A' @ B' + beta * C. With C it is torch.addmm(C, A', B'), as nn.Linear computes;
    alpha and beta are passed only when not 1 so the call is the one eager makes. A scale that is not
    finite multiplies as IEEE says: addmm's BLAS call drops a NaN alpha at some shapes (C + A' @ B')."""

    def setup(self, alpha: float = 1.0, beta: float = 1.0, transA: int = 0, transB: int = 0) -> None:
        self.alpha, self.beta, self.trans_a, self.trans_b = alpha, beta, transA, transB
        self.scaled = alpha != 1.0 or beta != 1.0
        self.finite = math.isfinite(alpha) and math.isfinite(beta)

    def run(self, a, b, c=None):
        if self.trans_a:
            a = a.t()
        if self.trans_b:
            b = b.t()
        if c is None:
            out = torch.mm(a, b)
            return (out if self.alpha == 1.0 else torch.mul(out, self.alpha),)
        if self.scaled:
            if self.beta == 0.0:
                return (torch.mul(torch.mm(a, b), self.alpha),)
            if not self.finite:
                return (torch.add(torch.mul(torch.mm(a, b), self.alpha), torch.mul(c, self.beta)),)
            return (torch.addmm(c, a, b, beta=self.beta, alpha=self.alpha),)
        return (torch.addmm(c, a, b),)


@kernel("Einsum", since=12)
class Einsum(Kernel):
    def setup(self, equation: str) -> None:
        self.equation = equation.replace(" ", "")

    def run(self, *inputs):
        return (torch.einsum(self.equation, *inputs),)


@kernel("Det", since=11)
class Det(Kernel):
    def run(self, x):
        return (torch.linalg.det(x),)


def _zero_point_rows(zp: torch.Tensor | None, a: torch.Tensor) -> torch.Tensor | int:
    """A's zero point: a scalar, or one per row of A (shape (M,)), broadcast against A's columns."""
    if zp is None:
        return 0
    zp = zp.to(torch.int32)
    return zp.reshape(-1, 1) if zp.dim() == 1 and zp.numel() > 1 else zp


@kernel("MatMulInteger", since=10)
class MatMulInteger(Kernel):
    def run(self, a, b, a_zero_point=None, b_zero_point=None):
        a32 = a.to(torch.int32) - _zero_point_rows(a_zero_point, a)
        b32 = b.to(torch.int32) - (0 if b_zero_point is None else b_zero_point.to(torch.int32))
        return (torch.matmul(a32, b32),)
