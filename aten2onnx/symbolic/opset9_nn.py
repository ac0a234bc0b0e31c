"""Opset-9 base, neural-network ops that only move elements: padding in every mode, nearest
upsampling, pixel and channel shuffles, unfold; as Gather of constant element indices where shapes are
static, padding and unfold of symbolic sizes by Pad and by Gather of positions computed in the graph."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import as_value, cast, dim_size, norm_dim, opmath
from aten2onnx.symbolic.opset9_shape import gather_static

register = functools.partial(registry.register, opset=9)


def _moved(fn):
    """fn on element numbers carried in float64 (exact up to 2**53), as F.pad's reflect and
    interpolate need a float tensor; back to int64 indices."""
    return lambda i: fn(i.to(torch.float64)).to(torch.int64)


# F.pad's modes that ONNX's Pad has
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def pad_with(g, self, pad, mode: str, value):
    pad = list(pad)
    if not self.is_static and mode in _PAD_MODES and all(isinstance(p, int) and p >= 0 for p in pad):
        # symbolic sizes: Pad, whose widths here are constants (a negative one crops: not Pad's)
        begins, ends = [0] * self.rank, [0] * self.rank
        for i in range(len(pad) // 2):
            begins[self.rank - 1 - i], ends[self.rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
        return g.pad(self, begins + ends, _PAD_MODES[mode], (0 if value is None else value) if mode == "constant" else None)
    if mode == "constant":
        return gather_static(g, [self], lambda i: F.pad(i, pad, value=0), fill_value=0 if value is None else value)
    # F.pad in these modes wants a batch and channel dim; element numbers carry through unchanged
    lead = self.rank - len(pad) // 2

    def moved(i):
        x = i.reshape((1,) * max(0, 2 - lead) + tuple(i.shape)) if lead < 2 else i
        out = F.pad(x.to(torch.float64), pad, mode=mode).to(torch.int64)
        return out.reshape(out.shape[max(0, 2 - lead):]) if lead < 2 else out

    return gather_static(g, [self], moved)


@register("aten::pad.default")
def aten_pad(g, self, pad, mode="constant", value=None):
    """pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor"""
    return pad_with(g, self, pad, mode, value)


@register("aten::constant_pad_nd.default")
def aten_constant_pad_nd(g, self, pad, value=0):
    """constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor"""
    return pad_with(g, self, pad, "constant", value)


@register("aten::reflection_pad1d.default", "aten::reflection_pad2d.default", "aten::reflection_pad3d.default")
def aten_reflection_pad(g, self, padding):
    """reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor"""
    return pad_with(g, self, padding, "reflect", None)


@register("aten::replication_pad1d.default", "aten::replication_pad2d.default", "aten::replication_pad3d.default")
def aten_replication_pad(g, self, padding):
    """replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor"""
    return pad_with(g, self, padding, "replicate", None)


@register("aten::_pad_circular.default")
def aten_pad_circular(g, self, pad):
    """_pad_circular(Tensor self, SymInt[] pad) -> Tensor"""
    return pad_with(g, self, pad, "circular", None)


def nearest(g, input, output_size, scale_factors, *, exact: bool):
    mode = "nearest-exact" if exact else "nearest"
    return gather_static(g, [input], _moved(lambda i: F.interpolate(
        i, size=None if output_size is None else list(output_size),
        scale_factor=None if scale_factors is None else list(scale_factors), mode=mode)))


@register("aten::upsample_nearest1d.vec", "aten::upsample_nearest2d.vec", "aten::upsample_nearest3d.vec")
def aten_upsample_nearest(g, input, output_size, scale_factors):
    """upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return nearest(g, input, output_size, scale_factors, exact=False)


@register("aten::_upsample_nearest_exact1d.vec", "aten::_upsample_nearest_exact2d.vec",
          "aten::_upsample_nearest_exact3d.vec")
def aten_upsample_nearest_exact(g, input, output_size, scale_factors):
    """_upsample_nearest_exact1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return nearest(g, input, output_size, scale_factors, exact=True)


@register("aten::pixel_shuffle.default")
def aten_pixel_shuffle(g, self, upscale_factor):
    """pixel_shuffle(Tensor self, int upscale_factor) -> Tensor"""
    return gather_static(g, [self], lambda i: F.pixel_shuffle(i, upscale_factor))


@register("aten::pixel_unshuffle.default")
def aten_pixel_unshuffle(g, self, downscale_factor):
    """pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor"""
    return gather_static(g, [self], lambda i: F.pixel_unshuffle(i, downscale_factor))


@register("aten::channel_shuffle.default", "aten::native_channel_shuffle.default")
def aten_channel_shuffle(g, self, groups):
    """channel_shuffle(Tensor self, SymInt groups) -> Tensor"""
    return gather_static(g, [self], lambda i: F.channel_shuffle(i, groups))


@register("aten::unfold.default")
def aten_unfold(g, self, dimension, size, step):
    """unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)"""
    if self.is_static:
        return gather_static(g, [self], lambda i: i.unfold(dimension, size, step))
    return unfold_dynamic(g, self, norm_dim(dimension, max(self.rank, 1)), size, step)


def unfold_dynamic(g: GraphBuilder, x: Value, dim: int, size: int, step: int) -> Value:
    """x.unfold(dim, size, step) with dim's length computed in the graph: Gather of the windows' positions
    [(n - size) // step + 1, size] along dim, the window axis then moved last."""
    if x.rank == 0:
        return g.op("Reshape", x, g.const([1], dtype=torch.int64))
    i64 = torch.int64
    length = as_value(g, dim_size(g, x, dim), i64)
    count = g.op("Add", g.op("Div", g.op("Sub", length, g.const(size, dtype=i64)), g.const(step, dtype=i64)),
                 g.const(1, dtype=i64))
    starts = g.op("Mul", g.op("Range", g.const(0, dtype=i64), count, g.const(1, dtype=i64)), g.const(step, dtype=i64))
    positions = g.op("Add", g.unsqueeze(starts, [1]), g.const(torch.arange(size).reshape(1, size)))
    windows = g.op("Gather", x, positions, axis=dim)  # [..., count, size, ...]
    perm = list(range(dim + 1)) + list(range(dim + 2, x.rank + 1)) + [dim + 1]
    return windows if perm == sorted(perm) else g.op("Transpose", windows, perm=perm)


@register("aten::log_sigmoid.default")
def aten_log_sigmoid(g, self):
    """log_sigmoid(Tensor self) -> Tensor"""
    return g.op("Neg", g.op("Softplus", g.op("Neg", self)))


# -- linear resampling: separable, one constant matrix per spatial axis --------------------------------------


def separable(g, x, op, args_for):
    """x resampled by op, an ATen op that is linear and separable over the spatial axes (linear,
    bilinear, bicubic, trilinear, area): along each axis, a MatMul by the matrix that op makes of
    an identity basis laid along that axis. Transpose and MatMul read the same at every opset.
    Half types are resampled in float32 and rounded once (ATen's CPU kernels accumulate them in float32;
    some round between axes or keep their weights in the dtype, which this does not follow)."""
    if not x.is_static:
        raise NotImplementedError("resampling is exported for static shapes only")
    spatial = x.rank - 2
    dtype, acc = x.dtype, opmath(x.dtype)
    out = cast(g, x, acc)
    shape = list(x.shape)
    for k in range(spatial):
        n = shape[2 + k]
        basis = torch.eye(n, dtype=torch.float64).reshape([n, 1] + [n if j == k else 1 for j in range(spatial)])
        result = op(basis, *args_for(k))
        matrix = result.reshape(n, -1) if spatial == 1 else result.flatten(2).reshape(n, -1)
        n_out = result.shape[2 + k]
        matrix = result[(slice(None), 0) + tuple(slice(None) if j == k else 0 for j in range(spatial))]
        axis = 2 + k
        perm = [d for d in range(x.rank) if d != axis] + [axis]
        inverse = [perm.index(d) for d in range(x.rank)]
        moved = g.op("Transpose", out, perm=perm)
        mixed = g.op("MatMul", moved, g.const(matrix.to(acc)))
        out = g.op("Transpose", mixed, perm=inverse)
        shape[axis] = n_out
    return cast(g, out, dtype)


def _interp_args(output_size, align_corners, scale_factors, with_align=True):
    def args(k):
        size = None if output_size is None else [s if j == k else 1 for j, s in enumerate(output_size)]
        scales = None if scale_factors is None else [s if j == k else 1.0 for j, s in enumerate(scale_factors)]
        if size is not None:
            scales = None if scale_factors is None else scales
        return (size, align_corners, scales) if with_align else (size, scales)
    return args


@register("aten::upsample_linear1d.vec")
def aten_upsample_linear1d(g, input, output_size, align_corners, scale_factors):
    """upsample_linear1d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return separable(g, input, torch.ops.aten.upsample_linear1d.vec, _interp_args(output_size, align_corners, scale_factors))


@register("aten::upsample_bilinear2d.vec")
def aten_upsample_bilinear2d(g, input, output_size, align_corners, scale_factors):
    """upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return separable(g, input, torch.ops.aten.upsample_bilinear2d.vec, _interp_args(output_size, align_corners, scale_factors))


@register("aten::upsample_trilinear3d.vec")
def aten_upsample_trilinear3d(g, input, output_size, align_corners, scale_factors):
    """upsample_trilinear3d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return separable(g, input, torch.ops.aten.upsample_trilinear3d.vec, _interp_args(output_size, align_corners, scale_factors))


@register("aten::upsample_bicubic2d.vec")
def aten_upsample_bicubic2d(g, input, output_size, align_corners, scale_factors):
    """upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return separable(g, input, torch.ops.aten.upsample_bicubic2d.vec, _interp_args(output_size, align_corners, scale_factors))


def adaptive_avg(g, x, output_size):
    """Adaptive average pooling, by the same separable matrices."""
    spatial = len(output_size)
    pool = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[spatial]
    if x.rank == spatial + 1:  # unbatched: pool a batch of one
        if not x.is_static:
            raise NotImplementedError("unbatched adaptive pooling of dynamic shape")
        one = g.op("Reshape", x, g.const([1] + list(x.shape), dtype=torch.int64))
        one.shape = (1,) + tuple(x.shape)
        out = adaptive_avg(g, one, output_size)
        return g.op("Reshape", out, g.const(list(x.shape[:1]) + list(output_size), dtype=torch.int64))
    return separable(g, x, lambda b, size: pool(b, size),
                     lambda k: ([s if j == k else 1 for j, s in enumerate(output_size)],))


@register("aten::adaptive_avg_pool2d.default", "aten::adaptive_avg_pool1d.default")
def aten_adaptive_avg_pool2d(g, self, output_size):
    """adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor

    An AveragePool where the windows tile the input evenly, GlobalAveragePool for a size of ones,
    the separable matrices otherwise."""
    if self.rank == len(output_size) + 1:
        return adaptive_avg(g, self, list(output_size))
    x = cast(g, self, opmath(self.dtype))  # half types averaged in float32, rounded once (ATen's kernel)
    if all(s == 1 for s in output_size):
        return cast(g, g.op("GlobalAveragePool", x), self.dtype)
    spatial = list(self.shape[-len(output_size):])
    if not all(isinstance(s, int) and s % o == 0 for s, o in zip(spatial, output_size)):
        return adaptive_avg(g, self, list(output_size))
    kernel = [s // o for s, o in zip(spatial, output_size)]
    return cast(g, g.op("AveragePool", x, kernel_shape=kernel, strides=kernel), self.dtype)


@register("aten::_adaptive_avg_pool2d.default", "aten::_adaptive_avg_pool3d.default",
          "aten::adaptive_avg_pool3d.default")
def aten_adaptive_avg_pool(g, self, output_size):
    """_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor"""
    return adaptive_avg(g, self, list(output_size))
