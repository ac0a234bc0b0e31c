"""Neural-network ops: Conv, ConvTranspose, pooling and MaxUnpool, Col2Im, normalizations (onnxruntime's contrib
SkipSimplifiedLayerNormalization among them), Softmax/LogSoftmax/Hardmax,
Dropout, LRN, the two losses. Where the ONNX attributes fit the torch kernel (symmetric pads, no
dilation on average pools, ...) that kernel runs directly, exactly as eager; otherwise the op is
computed from explicit padding."""

from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import norm_axes, norm_axis, scalar

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _pads(auto_pad: str, pads: Sequence[int] | None, sizes: Sequence[int], kernel: Sequence[int],
          strides: Sequence[int], dilations: Sequence[int]) -> tuple[list[int], list[int]]:
    """(begin, end) padding per spatial dim, resolving auto_pad SAME_UPPER/SAME_LOWER/VALID."""
    n = len(sizes)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for size, k, s, d in zip(sizes, kernel, strides, dilations):
            total = max(0, (math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size)
            small, big = total // 2, total - total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else big)
            end.append(big if auto_pad == "SAME_UPPER" else small)
        return begin, end
    if auto_pad == "VALID" or not pads:
        return [0] * n, [0] * n
    return list(pads[:n]), list(pads[n:])


def _torch_pad(begin: Sequence[int], end: Sequence[int]) -> list[int]:
    """ONNX (begin, end) per dim as F.pad's list, last dim first."""
    out: list[int] = []
    for b, e in zip(reversed(begin), reversed(end)):
        out += [b, e]
    return out


class _Spatial(Kernel):
    """Common attributes of convolutions and pools."""

    def _geometry(self, x: torch.Tensor, kernel: Sequence[int]):
        nd = x.dim() - 2
        strides = self.strides or [1] * nd
        dilations = self.dilations or [1] * nd
        begin, end = _pads(self.auto_pad, self.pads, x.shape[2:], kernel, strides, dilations)
        return nd, strides, dilations, begin, end


@kernel("Conv", since=1)  # 11 rewords the docs only
class Conv(_Spatial):
    def setup(self, auto_pad: str = "NOTSET", dilations: list[int] | None = None, group: int = 1,
              kernel_shape: list[int] | None = None, pads: list[int] | None = None,
              strides: list[int] | None = None) -> None:
        self.auto_pad, self.dilations, self.group, self.pads, self.strides = auto_pad, dilations, group, pads, strides

    def run(self, x, w, b=None):
        nd, strides, dilations, begin, end = self._geometry(x, w.shape[2:])
        if begin != end:
            x = F.pad(x, _torch_pad(begin, end))
            begin = [0] * nd
        return (_CONV[nd](x, w, b, strides, begin, dilations, self.group),)


@kernel("ConvTranspose", since=1)  # 11 rewords the docs only
class ConvTranspose(_Spatial):
    """ConvTranspose: torch's kernel where pads are symmetric and output_padding fits; otherwise the
    full transposed convolution is cropped and padded to the ONNX output size."""

    def setup(self, auto_pad: str = "NOTSET", dilations: list[int] | None = None, group: int = 1,
              kernel_shape: list[int] | None = None, output_padding: list[int] | None = None,
              output_shape: list[int] | None = None, pads: list[int] | None = None,
              strides: list[int] | None = None) -> None:
        self.auto_pad, self.dilations, self.group, self.pads, self.strides = auto_pad, dilations, group, pads, strides
        self.output_padding, self.output_shape = output_padding, output_shape

    def run(self, x, w, b=None):
        nd = x.dim() - 2
        sizes = x.shape[2:]
        kernel = w.shape[2:]
        strides = self.strides or [1] * nd
        dilations = self.dilations or [1] * nd
        out_pad = self.output_padding or [0] * nd
        full = [s * (i - 1) + op + (k - 1) * d + 1 for i, s, k, d, op in zip(sizes, strides, kernel, dilations, out_pad)]
        if self.output_shape is not None or self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            target = list(self.output_shape[-nd:]) if self.output_shape is not None else [i * s for i, s in zip(sizes, strides)]
            total = [f - t for f, t in zip(full, target)]
            if self.auto_pad == "SAME_UPPER":
                begin = [t // 2 for t in total]
            else:
                begin = [t - t // 2 for t in total]
            end = [t - bg for t, bg in zip(total, begin)]
        elif self.auto_pad == "VALID" or not self.pads:
            begin, end = [0] * nd, [0] * nd
        else:
            begin, end = list(self.pads[:nd]), list(self.pads[nd:])
        if begin == end and all(p >= 0 for p in begin) and all(op < max(s, d) for op, s, d in zip(out_pad, strides, dilations)):
            return (_CONV_T[nd](x, w, b, strides, begin, out_pad, self.group, dilations),)
        y = _CONV_T[nd](x, w, None, strides, 0, 0, self.group, dilations)
        # crop `begin`, and end at full - end (output_padding adds zero rows past the kernel's reach)
        y = F.pad(y, _torch_pad([-p for p in begin], [op - p for op, p in zip(out_pad, end)]))
        if b is not None:
            y = y + b.reshape((1, -1) + (1,) * nd)
        return (y,)


def _pool_out_extra(sizes, kernel, strides, dilations, begin, end, ceil_mode) -> list[int]:
    """Extra right padding ceil_mode needs beyond `end`, with torch's rule that the last window
    must start inside the input or the left padding."""
    extra = []
    for i, k, s, d, b, e in zip(sizes, kernel, strides, dilations, begin, end):
        span = (k - 1) * d + 1
        padded = i + b + e
        n = (padded - span) // s + 1 if not ceil_mode else -(-(padded - span) // s) + 1
        if ceil_mode and (n - 1) * s >= i + b:
            n -= 1
        extra.append(max(0, (n - 1) * s + span - padded))
    return extra


def _window_sum(x, kernel, strides, dilations, begin, end, extra, mask_value):
    """Per-window sums of x and of a validity mask (1 inside, mask_value on explicit pads, 0 beyond),
    as depthwise convolutions with a ones kernel."""
    nd = x.dim() - 2
    channels = x.shape[1]
    pad = _torch_pad(begin, [e + x_ for e, x_ in zip(end, extra)])
    xp = F.pad(x, pad)
    ones = torch.ones((channels, 1) + tuple(kernel), dtype=x.dtype, device=x.device)
    total = _CONV[nd](xp, ones, None, strides, 0, dilations, channels)
    mask = torch.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype, device=x.device)
    mask = F.pad(mask, _torch_pad(begin, end), value=mask_value)
    mask = F.pad(mask, _torch_pad([0] * nd, extra))
    count = _CONV[nd](mask, ones[:1], None, strides, 0, dilations)
    return total, count


class _Pool(_Spatial):
    def setup(self, kernel_shape: list[int], auto_pad: str = "NOTSET", ceil_mode: int = 0,
              dilations: list[int] | None = None, pads: list[int] | None = None, strides: list[int] | None = None,
              count_include_pad: int = 0, storage_order: int = 0, p: int = 2) -> None:
        self.kernel, self.auto_pad, self.ceil_mode = kernel_shape, auto_pad, bool(ceil_mode)
        self.dilations, self.pads, self.strides = dilations, pads, strides
        self.count_include_pad, self.storage_order, self.p = bool(count_include_pad), storage_order, p

    def _simple(self, begin, end, dilations) -> bool:
        return begin == end and all(b <= k // 2 for b, k in zip(begin, self.kernel))


@kernel("AveragePool", since=1)  # 7: count_include_pad; 10: ceil_mode (11 rewords the docs); 19: dilations
class AveragePool(_Pool):
    def setup(self, kernel_shape: list[int], auto_pad: str = "NOTSET", ceil_mode: int = 0,
              count_include_pad: int = 0, dilations: list[int] | None = None, pads: list[int] | None = None,
              strides: list[int] | None = None) -> None:
        super().setup(kernel_shape, auto_pad, ceil_mode, dilations, pads, strides, count_include_pad)

    def run(self, x):
        nd, strides, dilations, begin, end = self._geometry(x, self.kernel)
        if self._simple(begin, end, dilations) and all(d == 1 for d in dilations) and self.auto_pad == "NOTSET":
            return (_AVG_POOL[nd](x, self.kernel, strides, begin, self.ceil_mode, self.count_include_pad),)
        extra = _pool_out_extra(x.shape[2:], self.kernel, strides, dilations, begin, end, self.ceil_mode)
        total, count = _window_sum(x, self.kernel, strides, dilations, begin, end, extra,
                                   1.0 if self.count_include_pad else 0.0)
        return (total / count,)


@kernel("LpPool", since=2)  # 11 rewords the docs only; 18: ceil_mode and dilations
class LpPool(_Pool):
    def setup(self, kernel_shape: list[int], auto_pad: str = "NOTSET", ceil_mode: int = 0,
              dilations: list[int] | None = None, pads: list[int] | None = None, strides: list[int] | None = None,
              p: int = 2) -> None:
        super().setup(kernel_shape, auto_pad, ceil_mode, dilations, pads, strides, p=p)

    def run(self, x):
        nd, strides, dilations, begin, end = self._geometry(x, self.kernel)
        extra = _pool_out_extra(x.shape[2:], self.kernel, strides, dilations, begin, end, self.ceil_mode)
        total, _ = _window_sum(torch.abs(x) ** self.p, self.kernel, strides, dilations, begin, end, extra, 0.0)
        return (total ** (1.0 / self.p),)


@kernel("MaxPool", since=1)  # 8: the Indices output and storage_order; 10: ceil_mode and dilations; 12: int8/uint8
class MaxPool(_Pool):
    """MaxPool; the optional Indices output is flat over the whole input (N, C and spatial dims),
    row-major, or column-major over the spatial dims with storage_order=1."""

    def setup(self, kernel_shape: list[int], auto_pad: str = "NOTSET", ceil_mode: int = 0,
              dilations: list[int] | None = None, pads: list[int] | None = None, storage_order: int = 0,
              strides: list[int] | None = None) -> None:
        super().setup(kernel_shape, auto_pad, ceil_mode, dilations, pads, strides, storage_order=storage_order)
        self.want_indices = self.node is not None and len(self.node.output) > 1 and bool(self.node.output[1])

    def run(self, x):
        dtype = x.dtype
        if not dtype.is_floating_point:  # no integer max-pool kernels in torch; int8/uint8 are exact in float
            x = x.to(torch.float32)
        nd, strides, dilations, begin, end = self._geometry(x, self.kernel)
        sizes = x.shape[2:]
        if self._simple(begin, end, dilations) and self.auto_pad == "NOTSET":
            out = _MAX_POOL[nd](x, self.kernel, strides, begin, dilations, self.ceil_mode, self.want_indices)
            padded_sizes, offset = sizes, [0] * nd
        else:
            extra = _pool_out_extra(sizes, self.kernel, strides, dilations, begin, end, self.ceil_mode)
            xp = F.pad(x, _torch_pad(begin, [e + x_ for e, x_ in zip(end, extra)]), value=float("-inf"))
            out = _MAX_POOL[nd](xp, self.kernel, strides, 0, dilations, False, self.want_indices)
            padded_sizes, offset = xp.shape[2:], begin
        if not self.want_indices:
            return (out.to(dtype),)
        values, idx = out
        return values.to(dtype), self._flat_indices(idx, x.shape, padded_sizes, offset)

    def _flat_indices(self, idx, shape, padded_sizes, offset):
        coords = []
        rest = idx
        for size in reversed(padded_sizes):
            coords.append(rest % size)
            rest = rest // size
        coords = [c - o for c, o in zip(reversed(coords), offset)]
        sizes = shape[2:]
        flat = torch.zeros_like(idx)
        if self.storage_order:
            for c, size in zip(reversed(coords), reversed(sizes)):
                flat = flat * size + c
        else:
            for c, size in zip(coords, sizes):
                flat = flat * size + c
        n, ch = shape[0], shape[1]
        plane = math.prod(sizes)
        base = torch.arange(n * ch, device=idx.device).reshape((n, ch) + (1,) * len(sizes)) * plane
        return flat + base


@kernel("MaxUnpool", since=9)  # 11 rewords the docs only; 22: bfloat16
class MaxUnpool(Kernel):
    """MaxPool's partial inverse: each value of X at its index in I, zeros elsewhere. The indices are flat over the
    whole unpooled tensor of the shape the attributes give, (in - 1) * stride + kernel - pads per spatial dim (as
    MaxPool's Indices output is); an output_shape beyond it is zeros after it on each axis (onnx's reference and
    its test data do so)."""

    def setup(self, kernel_shape: list[int], pads: list[int] | None = None, strides: list[int] | None = None) -> None:
        self.kernel, self.pads, self.strides = kernel_shape, pads, strides

    def run(self, x, indices, output_shape=None):
        nd = x.dim() - 2
        strides = self.strides or [1] * nd
        pads = self.pads or [0] * (2 * nd)
        inferred = list(x.shape[:2]) + [(size - 1) * s + k - pads[i] - pads[nd + i]
                                        for i, (size, k, s) in enumerate(zip(x.shape[2:], self.kernel, strides))]
        flat = x.new_zeros(math.prod(inferred))
        flat[indices.reshape(-1).to(torch.int64)] = x.reshape(-1)
        y = flat.reshape(inferred)
        if output_shape is None:
            return (y,)
        shape = [int(v) for v in output_shape.tolist()]
        out = x.new_zeros(shape)
        out[tuple(slice(0, min(a, b)) for a, b in zip(inferred, shape))] = \
            y[tuple(slice(0, min(a, b)) for a, b in zip(inferred, shape))]
        return (out,)


@kernel("Col2Im", since=18)
class Col2Im(Kernel):
    """Column blocks [N, C * prod(block_shape), L] summed back into an image [N, C, *image_shape] (torch's fold, in
    any number of spatial dims): each block's values added at their positions in the padded image, the pads then
    cut off."""

    def setup(self, dilations: list[int] | None = None, pads: list[int] | None = None,
              strides: list[int] | None = None) -> None:
        self.dilations, self.pads, self.strides = dilations, pads, strides

    def run(self, x, image_shape, block_shape):
        image, block = [int(v) for v in image_shape.tolist()], [int(v) for v in block_shape.tolist()]
        nd = len(image)
        dilations, strides = self.dilations or [1] * nd, self.strides or [1] * nd
        pads = self.pads or [0] * (2 * nd)
        padded = [size + pads[i] + pads[nd + i] for i, size in enumerate(image)]
        counts = [(p - d * (k - 1) - 1) // s + 1 for p, k, s, d in zip(padded, block, strides, dilations)]
        # the flat padded-image position of kernel offset k in block l: sum over dims of (l*s + k*d) * row stride
        position = torch.zeros((1, 1), dtype=torch.int64)
        for p, k, s, d, n in zip(padded, block, strides, dilations, counts):
            offsets = (torch.arange(k) * d).reshape(-1, 1) + (torch.arange(n) * s).reshape(1, -1)
            position = (position.reshape(position.shape[0], 1, position.shape[1], 1) * p
                        + offsets.reshape(1, k, 1, n)).reshape(position.shape[0] * k, position.shape[1] * n)
        if x.shape[1] % math.prod(block) or x.shape[2] != math.prod(counts):
            raise ValueError(f"input {tuple(x.shape)} is not [N, C * {math.prod(block)}, {math.prod(counts)}], the "
                             f"blocks of {block} over image {image}")
        batch, channels = x.shape[0], x.shape[1] // math.prod(block)
        columns = x.reshape(batch, channels, -1)
        out = x.new_zeros(batch, channels, math.prod(padded))
        out.index_add_(2, position.reshape(-1).to(x.device), columns)
        out = out.reshape(batch, channels, *padded)
        return (out[(slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + size) for i, size in enumerate(image))],)


@kernel("GlobalAveragePool", since=1)
class GlobalAveragePool(Kernel):
    def run(self, x):
        return (torch.mean(x, list(range(2, x.dim())), keepdim=True),)


@kernel("GlobalMaxPool", since=1)
class GlobalMaxPool(Kernel):
    def run(self, x):
        return (torch.amax(x, list(range(2, x.dim())), keepdim=True),)


@kernel("GlobalLpPool", since=2)
class GlobalLpPool(Kernel):
    def setup(self, p: int = 2) -> None:
        self.p = p

    def run(self, x):
        return (torch.sum(torch.abs(x) ** self.p, list(range(2, x.dim())), keepdim=True) ** (1.0 / self.p),)


@kernel("BatchNormalization", since=9)
class BatchNormalization9(Kernel):
    def setup(self, epsilon: float = 1e-5, momentum: float = 0.9) -> None:
        self.epsilon = epsilon

    def run(self, x, scale, bias, mean, var):
        return (F.batch_norm(x, mean, var, scale, bias, False, 0.0, self.epsilon),)


@kernel("BatchNormalization", since=14)
class BatchNormalization14(Kernel):
    """BatchNormalization from opset 14: training_mode normalizes with the batch's statistics and
    also returns the updated running mean and (biased) variance."""

    def setup(self, epsilon: float = 1e-5, momentum: float = 0.9, training_mode: int = 0) -> None:
        self.epsilon, self.momentum, self.training = epsilon, momentum, training_mode

    def run(self, x, scale, bias, mean, var):
        if not self.training:
            return (F.batch_norm(x, mean, var, scale, bias, False, 0.0, self.epsilon),)
        dims = [0] + list(range(2, x.dim()))
        batch_mean = torch.mean(x, dims)
        batch_var = torch.var(x, dims, unbiased=False)
        y = F.batch_norm(x, batch_mean, batch_var, scale, bias, False, 0.0, self.epsilon)
        m = self.momentum
        return y, mean * m + batch_mean * (1 - m), var * m + batch_var * (1 - m)


@kernel("LayerNormalization", since=17)
class LayerNormalization(Kernel):
    """LayerNormalization over dims axis..end: torch.native_layer_norm (what F.layer_norm runs),
    whose mean and 1/std are the optional outputs."""

    def setup(self, axis: int = -1, epsilon: float = 1e-5, stash_type: int = 1) -> None:
        self.axis, self.epsilon = axis, epsilon
        self.stats = self.node is not None and len(self.node.output) > 1

    def run(self, x, scale, bias=None):
        axis = norm_axis(self.axis, x.dim())
        shape = x.shape[axis:]
        weight_fits = scale.shape == shape and (bias is None or bias.shape == shape)
        if not self.stats and weight_fits:
            return (F.layer_norm(x, shape, scale, bias, self.epsilon),)
        y, mean, rstd = torch.native_layer_norm(x, shape, scale if weight_fits else None,
                                                bias if weight_fits else None, self.epsilon)
        if not weight_fits:
            y = y * scale if bias is None else y * scale + bias
        stash = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
        return y, mean.to(stash), rstd.to(stash)


@kernel("RMSNormalization", since=23)
class RMSNormalization(Kernel):
    def setup(self, axis: int = -1, epsilon: float = 1e-5, stash_type: int = 1) -> None:
        self.axis, self.epsilon = axis, epsilon

    def run(self, x, scale):
        axis = norm_axis(self.axis, x.dim())
        shape = x.shape[axis:]
        if scale.shape == shape:
            return (F.rms_norm(x, shape, scale, self.epsilon),)
        return (F.rms_norm(x, shape, None, self.epsilon) * scale,)


@kernel("InstanceNormalization", since=6)
class InstanceNormalization(Kernel):
    def setup(self, epsilon: float = 1e-5) -> None:
        self.epsilon = epsilon

    def run(self, x, scale, bias):
        return (F.instance_norm(x, weight=scale, bias=bias, eps=self.epsilon),)


@kernel("GroupNormalization", since=18)
class GroupNormalization18(Kernel):
    """GroupNormalization at opset 18: scale and bias have one value per group."""

    def setup(self, num_groups: int, epsilon: float = 1e-5) -> None:
        self.groups, self.epsilon = num_groups, epsilon

    def run(self, x, scale, bias):
        per_group = x.shape[1] // self.groups
        scale = scale.repeat_interleave(per_group) if scale.numel() == self.groups else scale
        bias = bias.repeat_interleave(per_group) if bias.numel() == self.groups else bias
        return (F.group_norm(x, self.groups, scale, bias, self.epsilon),)


@kernel("GroupNormalization", since=21)
class GroupNormalization21(Kernel):
    def setup(self, num_groups: int, epsilon: float = 1e-5, stash_type: int = 1) -> None:
        self.groups, self.epsilon = num_groups, epsilon

    def run(self, x, scale, bias):
        return (F.group_norm(x, self.groups, scale, bias, self.epsilon),)


def _coerced(fn, x: torch.Tensor, axis: int) -> torch.Tensor:
    """Softmax-like fn before opset 13: over all dims from axis on, as a 2-D [outer, inner] matrix."""
    axis = norm_axis(axis, x.dim())
    return fn(x.reshape(math.prod(x.shape[:axis]), -1), 1).reshape(x.shape)


def _hardmax(x: torch.Tensor, axis: int) -> torch.Tensor:
    idx = torch.argmax(x, axis, keepdim=True)
    return torch.zeros_like(x).scatter_(axis, idx, 1)


def _softmax_kernels(op: str, fn) -> tuple[type[Kernel], type[Kernel]]:
    """The two kernels of op: over dims axis.. as a matrix (opset 1; 11: negative axis), over one axis (13)."""

    class Coerced(Kernel):
        def setup(self, axis: int = 1) -> None:
            self.axis = axis

        def run(self, x):
            return (_coerced(fn, x, self.axis),)

    class OneAxis(Kernel):
        def setup(self, axis: int = -1) -> None:
            self.axis = axis

        def run(self, x):
            return (fn(x, self.axis),)

    Coerced.__name__ = Coerced.__qualname__ = f"{op}1"
    OneAxis.__name__ = OneAxis.__qualname__ = f"{op}13"
    return kernel(op, since=1)(Coerced), kernel(op, since=13)(OneAxis)


Softmax1, Softmax13 = _softmax_kernels("Softmax", torch.softmax)
LogSoftmax1, LogSoftmax13 = _softmax_kernels("LogSoftmax", torch.log_softmax)
Hardmax1, Hardmax13 = _softmax_kernels("Hardmax", _hardmax)


@kernel("Dropout", since=7)  # 10: a bool mask; 12: ratio and training_mode as inputs, seed
class Dropout(Kernel):
    """Dropout: the identity unless training_mode (opset 12 input) is true and ratio > 0."""

    def setup(self, ratio: float = 0.5, seed: int | None = None) -> None:
        self.ratio = ratio
        self.generator = torch.Generator()  # its own: a run never draws from the process's generator
        if seed is None:
            self.generator.seed()
        else:
            self.generator.manual_seed(seed)

    def run(self, x, ratio=None, training_mode=None):
        training = training_mode is not None and bool(training_mode)
        p = self.ratio if ratio is None else float(scalar(ratio))
        if not training or p == 0:
            return x, torch.ones(x.shape, dtype=torch.bool, device=x.device)
        mask = torch.rand(x.shape, generator=self.generator).to(x.device) >= p
        return x * mask / (1 - p), mask


@kernel("LRN", since=1)
class LRN(Kernel):
    """LRN: the window over channels is [c - floor((size-1)/2), c + ceil((size-1)/2)]."""

    def setup(self, size: int, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0) -> None:
        self.size, self.alpha, self.beta, self.bias = size, alpha, beta, bias

    def run(self, x):
        before, after = (self.size - 1) // 2, self.size - 1 - (self.size - 1) // 2
        sq = torch.movedim(x * x, 1, -1)
        sq = F.pad(sq, (before, after))
        total = torch.movedim(sq.unfold(-1, self.size, 1).sum(-1), -1, 1)
        return (x / (self.bias + self.alpha / self.size * total) ** self.beta,)


@kernel("LpNormalization", since=1)
class LpNormalization(Kernel):
    def setup(self, axis: int = -1, p: int = 2) -> None:
        self.axis, self.p = axis, p

    def run(self, x):
        norm = torch.linalg.vector_norm(x, self.p, self.axis, keepdim=True)
        return (torch.where(norm == 0, torch.zeros_like(x), x / norm),)


@kernel("MeanVarianceNormalization", since=9)
class MeanVarianceNormalization(Kernel):
    def setup(self, axes: list[int] | None = None) -> None:
        self.axes = [0, 2, 3] if axes is None else axes

    def run(self, x):
        axes = norm_axes(self.axes, x.dim())
        mean = torch.mean(x, axes, keepdim=True)
        var = torch.mean(x * x, axes, keepdim=True) - mean * mean
        return ((x - mean) / (torch.sqrt(var) + 1e-9),)


def _nll(log_prob, target, weight, reduction, ignore_index):
    return F.nll_loss(log_prob, target.to(torch.int64), weight, ignore_index=-100 if ignore_index is None else ignore_index,
                      reduction=reduction)


@kernel("NegativeLogLikelihoodLoss", since=12)
class NegativeLogLikelihoodLoss(Kernel):
    def setup(self, reduction: str = "mean", ignore_index: int | None = None) -> None:
        self.reduction, self.ignore_index = reduction, ignore_index

    def run(self, x, target, weight=None):
        return (_nll(x, target, weight, self.reduction, self.ignore_index),)


@kernel("SoftmaxCrossEntropyLoss", since=12)
class SoftmaxCrossEntropyLoss(Kernel):
    def setup(self, reduction: str = "mean", ignore_index: int | None = None) -> None:
        self.reduction, self.ignore_index = reduction, ignore_index

    def run(self, scores, labels, weights=None):
        log_prob = torch.log_softmax(scores, 1)
        return _nll(log_prob, labels, weights, self.reduction, self.ignore_index), log_prob


@kernel("SkipSimplifiedLayerNormalization", since=1, domain="com.microsoft")
class SkipSimplifiedLayerNormalization(Kernel):
    """onnxruntime's RMS norm of a residual sum: s = input + skip (+ bias); output s / sqrt(mean(s^2) + epsilon)
    * gamma over the last axis, computed in float32; also the mean of squares, 1 / rms, and s."""

    def setup(self, epsilon: float = 1e-5) -> None:
        self.epsilon = epsilon

    def run(self, input, skip, gamma, bias=None):
        total = input + skip if bias is None else input + skip + bias
        x = total.to(torch.float32)
        mean = x.pow(2).mean(-1, keepdim=True)
        inverse = torch.rsqrt(mean + self.epsilon)
        return ((x * inverse).to(total.dtype) * gamma, mean, inverse, total)
