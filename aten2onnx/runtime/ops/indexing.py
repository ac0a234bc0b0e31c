"""Indexing: Gather*, Scatter*, TensorScatter, NonZero, OneHot, TopK, Unique, Compress, ReverseSequence.
ONNX indices may be negative (counted from the end); they are normalized before torch sees them."""

from __future__ import annotations

import math

import torch

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import norm_axis, scalar


def _positive(idx: torch.Tensor, size: int) -> torch.Tensor:
    idx = idx.to(torch.int64)
    return torch.where(idx < 0, idx + size, idx)


@kernel("Gather", since=1)  # 11: negative indices
class Gather(Kernel):
    def setup(self, axis: int = 0) -> None:
        self.axis = axis

    def run(self, x, indices):
        axis = norm_axis(self.axis, x.dim())
        size = x.shape[axis]
        if indices.dim() == 0:
            i = int(indices)
            return (x.select(axis, i + size if i < 0 else i),)
        flat = _positive(indices.reshape(-1), size)
        out = x.index_select(axis, flat)
        return (out.reshape(x.shape[:axis] + indices.shape + x.shape[axis + 1:]),)


@kernel("GatherElements", since=11)
class GatherElements(Kernel):
    def setup(self, axis: int = 0) -> None:
        self.axis = axis

    def run(self, x, indices):
        axis = norm_axis(self.axis, x.dim())
        return (torch.gather(x, axis, _positive(indices, x.shape[axis])),)


@kernel("GatherND", since=11)  # 12: batch_dims
class GatherND(Kernel):
    def setup(self, batch_dims: int = 0) -> None:
        self.b = batch_dims

    def run(self, x, indices):
        b = self.b
        k = indices.shape[-1]
        batch = math.prod(x.shape[:b])
        xf = x.reshape((batch,) + x.shape[b:])
        idx = indices.reshape(batch, -1, k).to(torch.int64)
        sizes = torch.tensor(x.shape[b:b + k], dtype=torch.int64, device=x.device)
        idx = torch.where(idx < 0, idx + sizes, idx)
        arange = torch.arange(batch, device=x.device).unsqueeze(1)
        out = xf[(arange,) + tuple(idx[..., j] for j in range(k))]
        return (out.reshape(indices.shape[:-1] + x.shape[b + k:]),)


_REDUCE = {"mul": "prod", "max": "amax", "min": "amin"}


@kernel("ScatterND", since=11)  # 16: reduction add/mul; 18: max/min
class ScatterND(Kernel):
    """ScatterND; reduction add/mul (opset 16) and max/min (18)."""

    def setup(self, reduction: str = "none") -> None:
        if reduction not in ("none", "add", "mul", "max", "min"):
            raise ValueError(f"ScatterND reduction {reduction!r} is not supported")
        self.reduction = reduction

    def run(self, x, indices, updates):
        k = indices.shape[-1]
        lead = x.shape[:k]
        out = x.clone(memory_format=torch.contiguous_format)  # x may be a permuted view; out must view flat
        width = math.prod(x.shape[k:])  # named, not -1: an empty tensor leaves -1 undecided
        flat = out.view(math.prod(lead), width)
        idx = indices.reshape(-1, k).to(torch.int64)
        sizes = torch.tensor(lead, dtype=torch.int64, device=x.device)
        idx = torch.where(idx < 0, idx + sizes, idx)
        strides = torch.tensor([math.prod(lead[j + 1:]) for j in range(k)], dtype=torch.int64, device=x.device)
        linear = (idx * strides).sum(-1)
        upd = updates.reshape(linear.shape[0], width)
        if self.reduction == "none":
            flat.index_copy_(0, linear, upd)
        elif self.reduction == "add":
            flat.index_add_(0, linear, upd)
        else:
            flat.scatter_reduce_(0, linear.unsqueeze(1).expand_as(upd), upd, _REDUCE[self.reduction])
        return (out,)


def _scatter_elements(x, axis, indices, updates, reduction):
    axis = norm_axis(axis, x.dim())
    idx = _positive(indices, x.shape[axis])
    if reduction == "none":
        return torch.scatter(x, axis, idx, updates)
    if reduction == "add":
        return torch.scatter_add(x, axis, idx, updates)
    return torch.scatter_reduce(x, axis, idx, updates, _REDUCE[reduction])


@kernel("Scatter", since=9)  # 11: negative indices, deprecated
class Scatter(Kernel):
    """Scatter (opset 9, deprecated for ScatterElements at 11)."""

    def setup(self, axis: int = 0) -> None:
        self.axis = axis

    def run(self, x, indices, updates):
        return (_scatter_elements(x, self.axis, indices, updates, "none"),)


@kernel("ScatterElements", since=11)  # 16: reduction add/mul; 18: max/min
class ScatterElements(Kernel):
    def setup(self, axis: int = 0, reduction: str = "none") -> None:
        if reduction not in ("none", "add", "mul", "max", "min"):
            raise ValueError(f"ScatterElements reduction {reduction!r} is not supported")
        self.axis, self.reduction = axis, reduction

    def run(self, x, indices, updates):
        return (_scatter_elements(x, self.axis, indices, updates, self.reduction),)


@kernel("NonZero", since=9)
class NonZero(Kernel):
    def run(self, x):
        if x.dim() == 0:
            x = x.reshape(1)
        return (torch.nonzero(x).t().contiguous(),)


@kernel("OneHot", since=9)  # 11: negative axis and indices
class OneHot(Kernel):
    """OneHot: indices outside [-depth, depth) give an all-`off` row."""

    def setup(self, axis: int = -1) -> None:
        self.axis = axis

    def run(self, indices, depth, values):
        d = int(scalar(depth))
        idx = indices.to(torch.int64)  # float indices truncate
        idx = torch.where(idx < 0, idx + d, idx)
        hot = idx.unsqueeze(-1) == torch.arange(d, device=idx.device)
        axis = norm_axis(self.axis, indices.dim() + 1)
        hot = torch.movedim(hot, -1, axis)
        return (torch.where(hot, values[1], values[0]),)


def _topk(x, k, axis, largest, sorted_):
    # A stable sort puts equal values in index order, as ONNX requires; torch.topk does not promise it.
    values, indices = torch.sort(x, dim=axis, descending=bool(largest), stable=True)
    return values.narrow(axis, 0, k), indices.narrow(axis, 0, k)


@kernel("TopK", since=1)
class TopK1(Kernel):
    def setup(self, k: int, axis: int = -1) -> None:
        self.k, self.axis = k, axis

    def run(self, x):
        return _topk(x, self.k, self.axis, True, True)


@kernel("TopK", since=10)  # 11: largest and sorted, negative axis
class TopK10(Kernel):
    def setup(self, axis: int = -1, largest: int = 1, sorted: int = 1) -> None:
        self.axis, self.largest, self.sorted = axis, largest, sorted

    def run(self, x, k):
        return _topk(x, int(scalar(k)), self.axis, self.largest, self.sorted)


@kernel("Unique", since=11)
class Unique(Kernel):
    """Unique: values, first-occurrence indices, inverse indices, counts; sorted or in order of appearance."""

    def setup(self, axis: int | None = None, sorted: int = 1) -> None:
        self.axis, self.sorted = axis, sorted

    def run(self, x):
        if self.axis is None:
            x = x.reshape(-1)
            axis = 0
            values, inverse, counts = torch.unique(x, sorted=True, return_inverse=True, return_counts=True)
        else:
            axis = norm_axis(self.axis, x.dim())
            values, inverse, counts = torch.unique(x, sorted=True, return_inverse=True, return_counts=True, dim=axis)
        n = inverse.shape[0]
        first = torch.full((values.shape[axis],), n, dtype=torch.int64, device=x.device)
        first.scatter_reduce_(0, inverse, torch.arange(n, device=x.device), "amin")
        if not self.sorted:
            order = torch.argsort(first)
            rank = torch.empty_like(order)
            rank[order] = torch.arange(order.shape[0], device=x.device)
            values, first, counts, inverse = values.index_select(axis, order), first[order], counts[order], rank[inverse]
        return values, first, inverse, counts


@kernel("Compress", since=9)  # 11: negative axis
class Compress(Kernel):
    def setup(self, axis: int | None = None) -> None:
        self.axis = axis

    def run(self, x, condition):
        if self.axis is None:
            x, axis = x.reshape(-1), 0
        else:
            axis = norm_axis(self.axis, x.dim())
        keep = torch.nonzero(condition.reshape(-1))[:, 0]
        keep = keep[keep < x.shape[axis]]
        return (x.index_select(axis, keep),)


@kernel("ReverseSequence", since=10)
class ReverseSequence(Kernel):
    def setup(self, batch_axis: int = 1, time_axis: int = 0) -> None:
        self.batch_axis, self.time_axis = batch_axis, time_axis

    def run(self, x, sequence_lens):
        t = torch.arange(x.shape[self.time_axis], device=x.device).unsqueeze(1)  # (T, 1)
        lens = sequence_lens.to(torch.int64).unsqueeze(0)  # (1, B)
        src = torch.where(t < lens, lens - 1 - t, t)  # (T, B)
        shape = [1] * x.dim()
        shape[self.time_axis], shape[self.batch_axis] = src.shape[0], src.shape[1]
        if self.time_axis > self.batch_axis:
            src = src.t()
        return (torch.gather(x, self.time_axis, src.reshape(shape).expand(x.shape)),)


@kernel("TensorScatter", since=24)
class TensorScatter(Kernel):
    """A KV cache update: `update` written into a copy of `past_cache` along `axis` from each batch entry's write
    index (0 without write_indices), wrapping past the cache's end in "circular" mode."""

    def setup(self, axis: int = -2, mode: str = "linear") -> None:
        if mode not in ("linear", "circular"):
            raise ValueError(f"mode must be 'linear' or 'circular', not {mode!r}")
        self.axis, self.mode = axis, mode

    def run(self, past_cache, update, write_indices=None):
        axis = norm_axis(self.axis, past_cache.dim())
        if axis == 0:
            raise ValueError("TensorScatter's axis cannot be the batch dimension")
        length, size = update.shape[axis], past_cache.shape[axis]
        batch = past_cache.shape[0]
        start = torch.zeros(batch, dtype=torch.int64) if write_indices is None else write_indices.to(torch.int64)
        positions = start.reshape(-1, 1) + torch.arange(length).reshape(1, -1)  # [batch, length]
        if self.mode == "circular":
            positions = positions % size
        elif bool(((positions < 0) | (positions >= size)).any()):
            raise ValueError(f"write indices {start.tolist()} with {length} updates pass the cache's {size} positions")
        shape = [batch] + [1] * (past_cache.dim() - 1)
        shape[axis] = length
        index = positions.reshape(shape).expand(update.shape).to(past_cache.device)
        return (past_cache.scatter(axis, index, update),)
