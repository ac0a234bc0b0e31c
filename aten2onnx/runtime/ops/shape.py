"""Shape manipulation: Reshape, Expand, (Un)Squeeze, Transpose, Concat, Split, Slice, Shape, Size,
Flatten, Tile, Pad, Identity, DepthToSpace/SpaceToDepth, SpaceToDepth28, CenterCropPad. Views wherever torch gives one."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import int_list, norm_axes, norm_axis, scalar


@kernel("Reshape", since=5)  # 14: allowzero
class Reshape(Kernel):
    """Reshape: 0 copies the input's dim unless allowzero (opset 14); -1 is inferred."""

    def setup(self, allowzero: int = 0) -> None:
        self.allowzero = allowzero

    def run(self, x, shape):
        dims = shape.tolist()
        if not self.allowzero and 0 in dims:
            dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
        return (torch.reshape(x, dims),)


@kernel("Expand", since=8)
class Expand(Kernel):
    """Expand: broadcasts both ways (the shape may have 1s where the input does not)."""

    def run(self, x, shape):
        return (x.expand(torch.broadcast_shapes(x.shape, tuple(shape.tolist()))),)


def _squeeze(x: torch.Tensor, axes: list[int] | None) -> torch.Tensor:
    if axes is None:
        return torch.squeeze(x)
    return torch.squeeze(x, tuple(norm_axes(axes, x.dim())))


def _unsqueeze(x: torch.Tensor, axes: list[int]) -> torch.Tensor:
    rank = x.dim() + len(axes)
    shape = list(x.shape)
    for axis in sorted(norm_axes(axes, rank)):
        shape.insert(axis, 1)
    return x.reshape(shape)


@kernel("Squeeze", since=1)  # 11: negative axes
class Squeeze1(Kernel):
    def setup(self, axes: list[int] | None = None) -> None:
        self.axes = axes

    def run(self, x):
        return (_squeeze(x, self.axes),)


@kernel("Squeeze", since=13)
class Squeeze13(Kernel):
    def run(self, x, axes=None):
        return (_squeeze(x, int_list(axes)),)


@kernel("Unsqueeze", since=1)  # 11: negative axes
class Unsqueeze1(Kernel):
    def setup(self, axes: list[int]) -> None:
        self.axes = axes

    def run(self, x):
        return (_unsqueeze(x, self.axes),)


@kernel("Unsqueeze", since=13)
class Unsqueeze13(Kernel):
    def run(self, x, axes):
        return (_unsqueeze(x, int_list(axes)),)


@kernel("Transpose", since=1)
class Transpose(Kernel):
    def setup(self, perm: list[int] | None = None) -> None:
        self.perm = perm

    def run(self, x):
        perm = self.perm if self.perm is not None else list(range(x.dim() - 1, -1, -1))
        return (x.permute(perm),)


@kernel("Concat", since=4)  # 11: negative axis
class Concat(Kernel):
    def setup(self, axis: int) -> None:
        self.axis = axis

    def run(self, *inputs):
        return (torch.cat(inputs, self.axis),)


def _outputs(kernel: Kernel) -> int | None:
    """The node's output count; None when the kernel runs without a node (constant folding)."""
    return None if kernel.node is None else len(kernel.node.output)


def _split(x: torch.Tensor, axis: int, split: list[int] | None, outputs: int | None, num_outputs: int | None = None):
    if split is None:
        n = num_outputs or outputs
        if n is None:
            raise ValueError("Split with neither `split` nor num_outputs needs its node's output count")
        size = x.shape[axis]
        chunk = math.ceil(size / n) if num_outputs else size // n
        split = [chunk] * (n - 1) + [size - chunk * (n - 1)]
    return tuple(torch.split(x, split, axis))


@kernel("Split", since=2)  # 11: negative axis
class Split2(Kernel):
    def setup(self, axis: int = 0, split: list[int] | None = None) -> None:
        self.axis, self.split = axis, split

    def run(self, x):
        return _split(x, self.axis, self.split, _outputs(self))


@kernel("Split", since=13)
class Split13(Kernel):
    def setup(self, axis: int = 0) -> None:
        self.axis = axis

    def run(self, x, split=None):
        return _split(x, self.axis, int_list(split), _outputs(self))


@kernel("Split", since=18)
class Split18(Kernel):
    """Split from opset 18: without `split`, num_outputs chunks of ceil(size / n), the last smaller."""

    def setup(self, axis: int = 0, num_outputs: int | None = None) -> None:
        self.axis, self.num_outputs = axis, num_outputs

    def run(self, x, split=None):
        return _split(x, self.axis, int_list(split), _outputs(self), self.num_outputs)


def _slice(x: torch.Tensor, starts, ends, axes, steps) -> torch.Tensor:
    rank = x.dim()
    axes = list(range(len(starts))) if axes is None else norm_axes(axes, rank)
    steps = [1] * len(starts) if steps is None else steps
    index: list[slice] = [slice(None)] * rank
    flips = []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        dim = x.shape[axis]
        if step == 0:
            raise ValueError("Slice step cannot be 0")
        if start < 0:
            start += dim
        if end < 0:
            end += dim
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
            index[axis] = slice(start, max(start, end), step)
        else:
            start, end = min(max(start, -1), dim - 1), min(max(end, -1), dim - 1)
            count = max(0, (start - end - step - 1) // -step)  # ceil((start - end) / -step)
            if count == 0:
                index[axis] = slice(0, 0)
            else:
                last = start + (count - 1) * step
                index[axis] = slice(last, start + 1, -step)
                flips.append(axis)
    out = x[tuple(index)]
    return torch.flip(out, flips) if flips else out


@kernel("Slice", since=1)
class Slice1(Kernel):
    def setup(self, starts: list[int], ends: list[int], axes: list[int] | None = None) -> None:
        self.starts, self.ends, self.axes = starts, ends, axes

    def run(self, x):
        return (_slice(x, self.starts, self.ends, self.axes, None),)


@kernel("Slice", since=10)  # 11: negative starts/ends/axes documented
class Slice10(Kernel):
    def run(self, x, starts, ends, axes=None, steps=None):
        return (_slice(x, int_list(starts), int_list(ends), int_list(axes), int_list(steps)),)


@kernel("Shape", since=1)  # 15: start and end
class Shape(Kernel):
    """Shape; start/end (opset 15) select a range of dims, clamped like Python slicing."""

    def setup(self, start: int = 0, end: int | None = None) -> None:
        self.start, self.end = start, end

    def run(self, x):
        dims = x.shape[self.start:self.end] if (self.start or self.end is not None) else x.shape
        return (torch.tensor(dims, dtype=torch.int64, device=self.ctx.device),)


@kernel("Size", since=1)
class Size(Kernel):
    def run(self, x):
        return (torch.tensor(x.numel(), dtype=torch.int64, device=self.ctx.device),)


@kernel("Flatten", since=1)  # 11: negative axis
class Flatten(Kernel):
    def setup(self, axis: int = 1) -> None:
        self.axis = axis

    def run(self, x):
        axis = norm_axis(self.axis, x.dim())
        outer = math.prod(x.shape[:axis])
        return (x.reshape(outer, math.prod(x.shape[axis:])),)


@kernel("Tile", since=6)
class Tile(Kernel):
    def run(self, x, repeats):
        return (x.repeat(repeats.tolist()),)


def _pad_indices(size: int, before: int, after: int, mode: str, device) -> torch.Tensor:
    i = torch.arange(-before, size + after, device=device)
    if mode == "edge":
        return i.clamp(0, size - 1)
    if mode == "wrap":
        return torch.remainder(i, size)
    period = 2 * (size - 1)  # reflect, mirroring about the edge values
    if period == 0:
        return torch.zeros_like(i)
    i = torch.remainder(i, period)
    return torch.where(i >= size, period - i, i)


def _pad(x: torch.Tensor, pads: list[int], mode: str, value, axes: list[int] | None) -> torch.Tensor:
    rank = x.dim()
    axes = list(range(rank)) if axes is None else norm_axes(axes, rank)
    n = len(axes)
    begin = dict(zip(axes, pads[:n]))
    end = dict(zip(axes, pads[n:]))
    if mode == "constant":
        torch_pads: list[int] = []
        for axis in range(rank - 1, -1, -1):
            torch_pads += [begin.get(axis, 0), end.get(axis, 0)]
        if value is None:
            value = 0
        if x.dtype == torch.bool:
            return F.pad(x.to(torch.uint8), torch_pads, value=float(bool(value))).to(torch.bool)
        return F.pad(x, torch_pads, value=value)
    for axis in axes:
        b, e = begin[axis], end[axis]
        if b < 0 or e < 0:  # negative pads crop first
            x = x.narrow(axis, max(-b, 0), x.shape[axis] - max(-b, 0) - max(-e, 0))
            b, e = max(b, 0), max(e, 0)
        if b or e:
            x = x.index_select(axis, _pad_indices(x.shape[axis], b, e, mode, x.device))
    return x


@kernel("Pad", since=2)
class Pad2(Kernel):
    def setup(self, pads: list[int], mode: str = "constant", value: float = 0.0) -> None:
        self.pads, self.mode, self.value = pads, mode, value

    def run(self, x):
        return (_pad(x, self.pads, self.mode, self.value, None),)


@kernel("Pad", since=11)  # 18: the axes input; 19: wrap mode
class Pad11(Kernel):
    """Pad from opset 11: pads and constant_value are inputs; axes (18); wrap mode (19)."""

    def setup(self, mode: str = "constant") -> None:
        if mode not in ("constant", "reflect", "edge", "wrap"):
            raise ValueError(f"Pad mode {mode!r} is not one of constant, reflect, edge, wrap")
        self.mode = mode

    def run(self, x, pads, constant_value=None, axes=None):
        return (_pad(x, int_list(pads), self.mode, scalar(constant_value), int_list(axes)),)


@kernel("Identity", since=1)  # 14: sequences, 16: optionals
class Identity(Kernel):
    def run(self, x):
        return (x,)


@kernel("DepthToSpace", since=1)  # 11: mode DCR/CRD
class DepthToSpace(Kernel):
    def setup(self, blocksize: int, mode: str = "DCR") -> None:
        self.b, self.mode = blocksize, mode

    def run(self, x):
        n, c, h, w = x.shape
        b = self.b
        if self.mode == "DCR":
            y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
        return (y.reshape(n, c // (b * b), h * b, w * b),)


@kernel("SpaceToDepth", since=1)
class SpaceToDepth(Kernel):
    def setup(self, blocksize: int) -> None:
        self.b = blocksize

    def run(self, x):
        n, c, h, w = x.shape
        b = self.b
        y = x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
        return (y.reshape(n, c * b * b, h // b, w // b),)


@kernel("SpaceToDepth", since=28)
class SpaceToDepth28(Kernel):
    """SpaceToDepth from opset 28: mode DCR (the default, as before) or CRD."""

    def setup(self, blocksize: int, mode: str = "DCR") -> None:
        if mode not in ("DCR", "CRD"):
            raise ValueError(f"SpaceToDepth mode must be DCR or CRD, not {mode!r}")
        self.b, self.mode = blocksize, mode

    def run(self, x):
        n, c, h, w = x.shape
        b = self.b
        y = x.reshape(n, c, h // b, b, w // b, b)
        y = y.permute(0, 3, 5, 1, 2, 4) if self.mode == "DCR" else y.permute(0, 1, 3, 5, 2, 4)
        return (y.reshape(n, c * b * b, h // b, w // b),)


@kernel("CenterCropPad", since=18)
class CenterCropPad(Kernel):
    def setup(self, axes: list[int] | None = None) -> None:
        self.axes = axes

    def run(self, x, shape):
        target = int_list(shape)
        axes = list(range(x.dim())) if self.axes is None else norm_axes(self.axes, x.dim())
        for axis, size in zip(axes, target):
            dim = x.shape[axis]
            if size < dim:
                x = x.narrow(axis, (dim - size) // 2, size)
            elif size > dim:
                before = (size - dim) // 2
                shape_out = list(x.shape)
                shape_out[axis] = size
                out = torch.zeros(shape_out, dtype=x.dtype, device=x.device)
                out.narrow(axis, before, dim).copy_(x)
                x = out
        return (x,)
