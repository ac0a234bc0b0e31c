"""Elementwise math: unary functions, broadcasting arithmetic (Add .. Mod), variadic Max/Min/Sum/Mean,
Clip. Each is the ATen kernel the exporter lowered from, so results are bitwise those of eager."""

from __future__ import annotations

from typing import Callable

import torch

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import WIDEN, widened


def _unary(op_type: str, since: int, fn: Callable[[torch.Tensor], torch.Tensor]) -> type[Kernel]:
    """The kernel of a one-input op that is exactly `fn` (no attributes), registered from version `since`."""

    def run(self, x):
        return (fn(x),)

    return kernel(op_type, since)(type(op_type, (Kernel,), {
        "run": run, "__doc__": f"{op_type}: {getattr(fn, '__name__', fn)}", "__module__": __name__}))


def _abs(x):
    return widened(torch.abs, x) if x.dtype in WIDEN else torch.abs(x)


def _sign(x):
    return widened(torch.sign, x) if x.dtype in WIDEN else torch.sign(x)


def _neg(x):
    return torch.neg(x)


def _reciprocal(x):
    return torch.reciprocal(x)


Abs = _unary("Abs", 6, _abs)
Neg = _unary("Neg", 6, _neg)
Reciprocal = _unary("Reciprocal", 6, _reciprocal)
Sqrt = _unary("Sqrt", 6, torch.sqrt)
Exp = _unary("Exp", 6, torch.exp)
Log = _unary("Log", 6, torch.log)
Floor = _unary("Floor", 6, torch.floor)
Ceil = _unary("Ceil", 6, torch.ceil)
Round = _unary("Round", 11, torch.round)  # ONNX and torch both round half to even
Sin = _unary("Sin", 7, torch.sin)
Cos = _unary("Cos", 7, torch.cos)
Tan = _unary("Tan", 7, torch.tan)
Asin = _unary("Asin", 7, torch.asin)
Acos = _unary("Acos", 7, torch.acos)
Atan = _unary("Atan", 7, torch.atan)
Sinh = _unary("Sinh", 9, torch.sinh)
Cosh = _unary("Cosh", 9, torch.cosh)
Asinh = _unary("Asinh", 9, torch.asinh)
Acosh = _unary("Acosh", 9, torch.acosh)
Atanh = _unary("Atanh", 9, torch.atanh)
Tanh = _unary("Tanh", 6, torch.tanh)
Sigmoid = _unary("Sigmoid", 6, torch.sigmoid)
Erf = _unary("Erf", 9, torch.erf)
Sign = _unary("Sign", 9, _sign)
Relu = _unary("Relu", 6, torch.relu)


def _binary(op_type: str, since: int, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> type[Kernel]:
    """The kernel of a broadcasting two-input op; uint16/32/64 (no torch kernels) run widened."""

    def run(self, a, b):
        try:
            return (fn(a, b),)
        except (RuntimeError, NotImplementedError):
            if a.dtype not in WIDEN:
                raise
            return (widened(fn, a, b),)

    return kernel(op_type, since)(type(op_type, (Kernel,), {
        "run": run, "__doc__": f"{op_type}: {getattr(fn, '__name__', fn)}", "__module__": __name__}))


def _div(a, b):
    # ONNX integer division truncates toward zero; torch.div would give a float.
    if a.dtype.is_floating_point:
        return torch.div(a, b)
    return torch.div(a, b, rounding_mode="trunc")


Add = _binary("Add", 7, torch.add)
Sub = _binary("Sub", 7, torch.sub)
Mul = _binary("Mul", 7, torch.mul)
Div = _binary("Div", 7, _div)


@kernel("Pow", since=7)  # 12, 13, 15: integer and bfloat16 types
class Pow(Kernel):
    """Pow: X ** Y; since opset 12 Y may have another type, and the result has X's type."""

    def run(self, x, y):
        if x.dtype in WIDEN:
            return (widened(torch.pow, x, y),)
        if y.dim() == 0 and y.device.type == "cpu":
            # A scalar exponent as a Python number takes ATen's scalar fast path (x*x for 2, ...):
            # many times faster than the tensor-tensor kernel, and the same kernel as eager x ** 3.
            y = y.item()
        out = torch.pow(x, y)
        return (out if out.dtype == x.dtype else out.to(x.dtype),)


@kernel("Mod", since=10)
class Mod(Kernel):
    """Mod: fmod=0 takes the divisor's sign (Python %, torch.remainder); fmod=1 the dividend's (C fmod)."""

    def setup(self, fmod: int = 0) -> None:
        self.fn = torch.fmod if fmod else torch.remainder

    def run(self, a, b):
        if a.dtype in WIDEN:
            return (widened(self.fn, a, b),)
        return (self.fn(a, b),)


@kernel("BitShift", since=11)  # 28: signed types (arithmetic right shift, as torch's)
class BitShift(Kernel):
    def setup(self, direction: str) -> None:
        if direction not in ("LEFT", "RIGHT"):
            raise ValueError(f"BitShift direction must be LEFT or RIGHT, not {direction!r}")
        self.left = direction == "LEFT"

    def run(self, x, y):
        dtype = x.dtype
        if dtype in WIDEN or dtype == torch.uint8:
            bits = {torch.uint8: 8, torch.uint16: 16, torch.uint32: 32, torch.uint64: 64}[dtype]
            xw, yw = x.to(torch.int64), y.to(torch.int64)
            if bits == 64:
                xw, yw = x.view(torch.int64), y.view(torch.int64)
            if self.left:
                out = torch.bitwise_left_shift(xw, yw)
            elif bits == 64:
                # logical shift of the unsigned bits: arithmetic shift, then clear the sign copies
                shifted = torch.bitwise_right_shift(xw, yw)
                mask = torch.bitwise_left_shift(torch.ones_like(yw), 64 - yw) - 1
                out = torch.where(yw > 0, torch.bitwise_and(shifted, mask), shifted)
            else:
                out = torch.bitwise_right_shift(xw, yw)
            if bits == 64:
                return (out.view(torch.uint64),)
            return (torch.bitwise_and(out, (1 << bits) - 1).to(dtype),)
        fn = torch.bitwise_left_shift if self.left else torch.bitwise_right_shift
        return (fn(x, y),)


def _variadic(fn, inputs):
    if inputs[0].dtype in WIDEN:
        return widened(lambda *xs: _variadic(fn, xs), *inputs)
    out = inputs[0]
    for x in inputs[1:]:
        out = fn(out, x)
    return out


@kernel("Max", since=6)  # 8: broadcasting; then types
class Max(Kernel):
    def run(self, *inputs):
        return (_variadic(torch.maximum, inputs),)


@kernel("Min", since=6)  # 8: broadcasting; then types
class Min(Kernel):
    def run(self, *inputs):
        return (_variadic(torch.minimum, inputs),)


@kernel("Sum", since=6)  # 8: broadcasting
class Sum(Kernel):
    def run(self, *inputs):
        return (_variadic(torch.add, inputs),)


@kernel("Mean", since=6)  # 8: broadcasting
class Mean(Kernel):
    def run(self, *inputs):
        return (torch.div(_variadic(torch.add, inputs), len(inputs)),)


def _clip(x, lo, hi):
    if lo is None and hi is None:
        return x
    if x.dtype in WIDEN:
        return widened(lambda t: torch.clamp(t, None if lo is None else lo.to(t.dtype), None if hi is None else hi.to(t.dtype)), x)
    return torch.clamp(x, lo, hi)


@kernel("Clip", since=6)
class Clip6(Kernel):
    """Clip before opset 11: bounds are float attributes."""

    def setup(self, min: float = -3.4028234663852886e38, max: float = 3.4028234663852886e38) -> None:
        self.lo, self.hi = min, max

    def run(self, x):
        # a float32 bound beyond a narrower type's range (the defaults, for float16) bounds nothing
        finite = torch.finfo(x.dtype) if x.dtype.is_floating_point else None
        lo = None if finite is not None and self.lo < finite.min else self.lo
        hi = None if finite is not None and self.hi > finite.max else self.hi
        return (x.clone() if lo is None and hi is None else torch.clamp(x, lo, hi),)


@kernel("Clip", since=11)
class Clip11(Kernel):
    """Clip from opset 11: optional 0-d min and max inputs (integer types from 12)."""

    def run(self, x, lo=None, hi=None):
        return (_clip(x, lo, hi),)
