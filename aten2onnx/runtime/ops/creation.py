"""Tensors made from attributes or shapes: Constant, ConstantOfShape, Range, EyeLike, Trilu, and the
signal windows (Hann, Hamming, Blackman)."""

from __future__ import annotations

import math

import torch

from aten2onnx import _dtypes
from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import int_list, scalar


@kernel("Constant", since=1)  # 11: sparse_value (refused); 12: value_float(s)/value_int(s)/value_string(s)
class Constant(Kernel):
    """Constant: exactly one of value / value_float(s) / value_int(s) (opset 12); strings unsupported."""

    def setup(self, value: torch.Tensor | None = None, value_float: float | None = None,
              value_floats: list[float] | None = None, value_int: int | None = None,
              value_ints: list[int] | None = None, sparse_value=None, value_string: str | None = None,
              value_strings: list[str] | None = None) -> None:
        if value is not None:
            tensor = value
        elif value_float is not None:
            tensor = torch.tensor(value_float, dtype=torch.float32)
        elif value_floats is not None:
            tensor = torch.tensor(value_floats, dtype=torch.float32)
        elif value_int is not None:
            tensor = torch.tensor(value_int, dtype=torch.int64)
        elif value_ints is not None:
            tensor = torch.tensor(value_ints, dtype=torch.int64)
        else:
            raise ValueError("Constant needs a value, value_float(s) or value_int(s) attribute; "
                             "sparse and string constants are not supported")
        self.value = tensor.to(self.ctx.device)

    def run(self):
        return (self.value,)


@kernel("ConstantOfShape", since=9)
class ConstantOfShape(Kernel):
    def setup(self, value: torch.Tensor | None = None) -> None:
        value = torch.zeros(1, dtype=torch.float32) if value is None else value
        self.fill, self.dtype = value.reshape(-1)[0].item(), value.dtype

    def run(self, shape):
        return (torch.full(int_list(shape), self.fill, dtype=self.dtype, device=self.ctx.device),)


@kernel("Range", since=11)
class Range(Kernel):
    def run(self, start, limit, delta):
        return (torch.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype, device=self.ctx.device),)


@kernel("Range", since=27)
class Range27(Kernel):
    """Range from opset 27: float16/bfloat16, accumulated as start + i * delta in float32 when
    stash_type is 1 (the default), else in the input type itself."""

    def setup(self, stash_type: int = 1) -> None:
        self.stash = stash_type == 1

    def run(self, start, limit, delta):
        dtype = start.dtype
        if dtype not in (torch.float16, torch.bfloat16):
            return (torch.arange(start.item(), limit.item(), delta.item(), dtype=dtype, device=self.ctx.device),)
        wide = torch.float32 if self.stash else dtype
        s, l, d = (t.to(wide) for t in (start, limit, delta))
        n = max(int(torch.ceil((l - s) / d).item()), 0)
        steps = torch.arange(n, dtype=wide, device=self.ctx.device)
        return ((s + steps * d).to(dtype),)


@kernel("EyeLike", since=9)
class EyeLike(Kernel):
    def setup(self, dtype: int | None = None, k: int = 0) -> None:
        self.dtype = None if dtype is None else _dtypes.to_torch(dtype)
        self.k = k

    def run(self, x):
        n, m = x.shape
        rows = torch.arange(n, device=x.device).unsqueeze(1)
        cols = torch.arange(m, device=x.device).unsqueeze(0)
        return ((cols - rows == self.k).to(self.dtype or x.dtype),)


@kernel("Trilu", since=14)
class Trilu(Kernel):
    def setup(self, upper: int = 1) -> None:
        self.fn = torch.triu if upper else torch.tril

    def run(self, x, k=None):
        return (self.fn(x, 0 if k is None else int(scalar(k))),)


def _window(kind: str, size: torch.Tensor, periodic: int, dtype: torch.dtype, device) -> torch.Tensor:
    n = int(scalar(size))
    denominator = n if periodic else n - 1
    k = torch.arange(n, dtype=torch.float64, device=device)
    phase = 2 * math.pi * k / denominator
    if kind == "hann":
        w = 0.5 - 0.5 * torch.cos(phase)
    elif kind == "hamming":
        w = 25 / 46 - 21 / 46 * torch.cos(phase)
    else:
        w = 0.42 - 0.5 * torch.cos(phase) + 0.08 * torch.cos(2 * phase)
    return w.to(dtype)


def _window_kernel(op_type: str, kind: str) -> type[Kernel]:
    def setup(self, output_datatype: int = 1, periodic: int = 1) -> None:
        self.dtype, self.periodic = _dtypes.to_torch(output_datatype), periodic

    def run(self, size):
        return (_window(kind, size, self.periodic, self.dtype, self.ctx.device),)

    return kernel(op_type, since=17)(type(op_type, (Kernel,), {"setup": setup, "run": run, "__module__": __name__}))


HannWindow = _window_kernel("HannWindow", "hann")
HammingWindow = _window_kernel("HammingWindow", "hamming")
BlackmanWindow = _window_kernel("BlackmanWindow", "blackman")
