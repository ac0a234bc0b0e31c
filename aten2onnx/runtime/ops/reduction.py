"""Reductions (Reduce*, ArgMax/ArgMin) and scans (CumSum, CumProd). Reduce* take axes as an
attribute until opset 13 (ReduceSum) or 18 (the rest), then as an optional input."""

from __future__ import annotations

import torch

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import WIDEN, int_list, norm_axes, norm_axis


def _amax(x, dims, keepdim):
    return torch.amax(x, dims, keepdim)


def _amin(x, dims, keepdim):
    return torch.amin(x, dims, keepdim)


def _prod(x, dims, keepdim):
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, d, keepdim)
    return x


def _l1(x, dims, keepdim):
    return torch.sum(torch.abs(x), dims, keepdim)


def _l2(x, dims, keepdim):
    return torch.sqrt(torch.sum(x * x, dims, keepdim))


def _sum_square(x, dims, keepdim):
    return torch.sum(x * x, dims, keepdim)


def _log_sum(x, dims, keepdim):
    return torch.log(torch.sum(x, dims, keepdim))


def _log_sum_exp(x, dims, keepdim):
    return torch.logsumexp(x, dims, keepdim)


_FUNCS = {
    "ReduceSum": torch.sum, "ReduceMean": torch.mean, "ReduceMax": _amax, "ReduceMin": _amin, "ReduceProd": _prod,
    "ReduceL1": _l1, "ReduceL2": _l2, "ReduceSumSquare": _sum_square, "ReduceLogSum": _log_sum,
    "ReduceLogSumExp": _log_sum_exp,
}
# The value of a reduction over no elements, where torch raises instead of giving it.
_EMPTY = {"ReduceMax": float("-inf"), "ReduceMin": float("inf")}


def _reduce(op: str, x: torch.Tensor, axes: list[int] | None, keepdims: int, noop: int) -> torch.Tensor:
    if not axes:
        if noop:
            return x
        dims = list(range(x.dim()))
    else:
        dims = norm_axes(axes, x.dim())
    dtype = x.dtype
    if x.numel() == 0 and op in _EMPTY:
        shape = [1 if i in dims else s for i, s in enumerate(x.shape)] if keepdims else \
            [s for i, s in enumerate(x.shape) if i not in dims]
        if dtype.is_floating_point:
            return torch.full(shape, _EMPTY[op], dtype=dtype, device=x.device)
        info = torch.iinfo(dtype) if dtype != torch.bool else None
        fill = (info.min if op == "ReduceMax" else info.max) if info else op == "ReduceMin"
        return torch.full(shape, fill, dtype=dtype, device=x.device)
    if x.dim() == 0:
        return _FUNCS[op](x.reshape(1), [0], False).reshape(()) if op != "ReduceSum" else x
    if not dtype.is_floating_point:
        # int reductions: torch sums to int64 and has no int mean; compute wide, cast back as ONNX keeps the type
        wide = torch.float64 if op in ("ReduceMean", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp") else \
            (torch.int64 if dtype != torch.bool else torch.uint8)
        return _FUNCS[op](x.to(wide), dims, bool(keepdims)).to(dtype)
    return _FUNCS[op](x, dims, bool(keepdims))


def _reduce_kernels(op: str, input_since: int) -> tuple[type[Kernel], type[Kernel]]:
    """The two kernels of op: axes as an attribute (opset 1), axes as an input (input_since)."""

    class AxesAttribute(Kernel):
        def setup(self, axes: list[int] | None = None, keepdims: int = 1) -> None:
            self.axes, self.keepdims = axes, keepdims

        def run(self, x):
            return (_reduce(op, x, self.axes, self.keepdims, 0),)

    class AxesInput(Kernel):
        def setup(self, keepdims: int = 1, noop_with_empty_axes: int = 0) -> None:
            self.keepdims, self.noop = keepdims, noop_with_empty_axes

        def run(self, x, axes=None):
            return (_reduce(op, x, int_list(axes), self.keepdims, self.noop),)

    AxesAttribute.__name__ = AxesAttribute.__qualname__ = f"{op}1"
    AxesInput.__name__ = AxesInput.__qualname__ = f"{op}{input_since}"
    return kernel(op, since=1)(AxesAttribute), kernel(op, since=input_since)(AxesInput)


# The other versions of each change only types (12: int8/uint8 for Max/Min, 13: bfloat16, 20: bool for
# Max/Min, 28: floats only for LogSum/LogSumExp) or allow negative axes (11).
ReduceSum1, ReduceSum13 = _reduce_kernels("ReduceSum", 13)
ReduceMean1, ReduceMean18 = _reduce_kernels("ReduceMean", 18)
ReduceMax1, ReduceMax18 = _reduce_kernels("ReduceMax", 18)
ReduceMin1, ReduceMin18 = _reduce_kernels("ReduceMin", 18)
ReduceProd1, ReduceProd18 = _reduce_kernels("ReduceProd", 18)
ReduceL1_1, ReduceL1_18 = _reduce_kernels("ReduceL1", 18)
ReduceL2_1, ReduceL2_18 = _reduce_kernels("ReduceL2", 18)
ReduceSumSquare1, ReduceSumSquare18 = _reduce_kernels("ReduceSumSquare", 18)
ReduceLogSum1, ReduceLogSum18 = _reduce_kernels("ReduceLogSum", 18)
ReduceLogSumExp1, ReduceLogSumExp18 = _reduce_kernels("ReduceLogSumExp", 18)


def _arg(fn, x, axis, keepdims, last):
    axis = norm_axis(axis, x.dim())
    if x.dtype in WIDEN or x.dtype == torch.bool:
        x = x.to(torch.int64)
    if last:
        flipped = fn(torch.flip(x, (axis,)), axis, bool(keepdims))
        return x.shape[axis] - 1 - flipped
    return fn(x, axis, bool(keepdims))


@kernel("ArgMax", since=1)  # 11: negative axis; 12: select_last_index
class ArgMax(Kernel):
    """ArgMax; select_last_index (opset 12) picks the last of equal maxima instead of the first."""

    def setup(self, axis: int = 0, keepdims: int = 1, select_last_index: int = 0) -> None:
        self.axis, self.keepdims, self.last = axis, keepdims, select_last_index

    def run(self, x):
        return (_arg(torch.argmax, x, self.axis, self.keepdims, self.last),)


@kernel("ArgMin", since=1)  # 11: negative axis; 12: select_last_index
class ArgMin(Kernel):
    def setup(self, axis: int = 0, keepdims: int = 1, select_last_index: int = 0) -> None:
        self.axis, self.keepdims, self.last = axis, keepdims, select_last_index

    def run(self, x):
        return (_arg(torch.argmin, x, self.axis, self.keepdims, self.last),)


def _scan(fn, identity, x, axis, exclusive, reverse):
    axis = norm_axis(int(axis), x.dim())
    dtype = x.dtype
    if dtype in WIDEN:
        x = x.to(torch.int64)
    if reverse:
        x = torch.flip(x, (axis,))
    out = fn(x, axis, dtype=x.dtype)
    if exclusive:
        first = torch.full_like(out.narrow(axis, 0, 1), identity)
        out = torch.cat([first, out.narrow(axis, 0, out.shape[axis] - 1)], axis)
    if reverse:
        out = torch.flip(out, (axis,))
    return out.to(dtype)


@kernel("CumSum", since=11)
class CumSum(Kernel):
    def setup(self, exclusive: int = 0, reverse: int = 0) -> None:
        self.exclusive, self.reverse = exclusive, reverse

    def run(self, x, axis):
        return (_scan(torch.cumsum, 0, x, axis, self.exclusive, self.reverse),)


@kernel("CumProd", since=26)
class CumProd(Kernel):
    def setup(self, exclusive: int = 0, reverse: int = 0) -> None:
        self.exclusive, self.reverse = exclusive, reverse

    def run(self, x, axis):
        return (_scan(torch.cumprod, 1, x, axis, self.exclusive, self.reverse),)
