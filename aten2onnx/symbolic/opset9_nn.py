"""Opset-9 base, neural-network ops that only move elements: padding in every mode, nearest
upsampling, pixel and channel shuffles, unfold; as Gather of constant element indices where shapes are
static, padding and unfold of symbolic sizes by Pad and by Gather of positions computed in the graph."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from aten2onnx import registry
from aten2onnx.errors import KernelOnly
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _resample
from aten2onnx.symbolic._helpers import as_value, cast, dim_size, norm_dim, opmath
from aten2onnx.symbolic.opset9_data import arange_of, int_mod
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
    static = all(isinstance(p, int) for p in pad)
    begins, ends = [0] * self.rank, [0] * self.rank  # Pad's order: F.pad's pairs start at the last dim
    for i in range(len(pad) // 2):
        begins[self.rank - 1 - i], ends[self.rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    if mode in _PAD_MODES and static and all(p >= 0 for p in pad):
        # Pad, static or symbolic sizes: its widths here are constants (a negative one crops, which only
        # constant mode's Pad does; those are gathered below)
        try:
            return g.pad(self, begins + ends, _PAD_MODES[mode], (0 if value is None else value) if mode == "constant" else None)
        except NotImplementedError:
            if not self.is_static:
                raise
            # no Pad for this dtype at this opset (before 11 it takes floats only): the elements' moves below
    if mode == "constant" and not static:
        # widths computed in the graph (a dynamic size's difference), a negative one cropping as eager's does
        try:
            return g.pad(self, begins + ends, "constant", 0 if value is None else value)
        except NotImplementedError:
            pass  # no Pad taking them at this opset: what follows, or a fallback
    if not self.is_static and mode == "circular" and all(isinstance(p, int) for p in pad):
        return _circular(g, self, pad)
    if mode == "constant":
        return gather_static(g, [self], lambda i: F.pad(i, pad, value=0), fill_value=0 if value is None else value)
    # F.pad in these modes wants a batch and channel dim; element numbers carry through unchanged
    lead = self.rank - len(pad) // 2

    def moved(i):
        x = i.reshape((1,) * max(0, 2 - lead) + tuple(i.shape)) if lead < 2 else i
        out = F.pad(x.to(torch.float64), pad, mode=mode).to(torch.int64)
        return out.reshape(out.shape[max(0, 2 - lead):]) if lead < 2 else out

    return gather_static(g, [self], moved)


def _circular(g, x, pad: list[int]):
    """Circular padding of symbolic sizes, as eager: along each padded axis of n elements, negative
    widths crop first, to m = n - cropped elements; then a Gather of the positions
    cropped_before + (i + m - before) % m for i < before + m + after (before, after the positive
    widths, which eager takes up to m)."""
    i64, rank = torch.int64, x.rank
    for i in range(len(pad) // 2):
        axis, before, after = rank - 1 - i, pad[2 * i], pad[2 * i + 1]
        n = as_value(g, dim_size(g, x, axis), i64)
        m = g.op("Add", n, g.const(min(before, 0) + min(after, 0), dtype=i64))
        grow_before, grow_after = max(before, 0), max(after, 0)
        count = g.op("Add", m, g.const(grow_before + grow_after, dtype=i64))
        positions = g.op("Add", arange_of(g, count, has_range=False), g.op("Sub", m, g.const(grow_before, dtype=i64)))
        positions = g.op("Add", int_mod(g, positions, m), g.const(max(-before, 0), dtype=i64))
        x = g.op("Gather", x, positions, axis=axis)
    return x


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
    """Nearest resampling as one Gather per resampled axis (each axis' source indices depend on that axis
    alone): computed by torch itself where the axis' sizes are static (a constant as long as the output
    axis), else in the graph as ATen's kernel computes them, in float32: floor(i * scale) (nearest) or
    floor((i + 0.5) * scale) (nearest-exact), at most n - 1, scale 1 / scale_factor where one is given, else
    n / output size; an output size from a scale factor is floor(n * scale_factor) in float64."""
    if input.rank is None:
        raise NotImplementedError("nearest resampling needs its input's rank")
    spatial = input.rank - 2
    x = input
    for j in range(spatial):
        axis = 2 + j
        n = dim_size(g, input, axis)
        size = None if output_size is None else output_size[j]
        factor = None if scale_factors is None else scale_factors[j]
        if isinstance(n, int) and (size is None or isinstance(size, int)):
            index = nearest_indices(n, size, factor, exact)
            x = g.op("Gather", x, g.const(index), axis=axis)
            continue
        i64 = torch.int64
        n = as_value(g, n, i64)
        if size is None:  # floor(n * scale_factor), in float64
            size = cast(g, g.op("Floor", g.op("Mul", cast(g, n, torch.float64),
                                              g.const(float(factor), dtype=torch.float64))), i64)
        size = as_value(g, size, i64)
        scale = g.const(float(torch.tensor(1.0 / factor, dtype=torch.float32)), dtype=torch.float32) \
            if factor is not None else g.op("Div", cast(g, n, torch.float32), cast(g, size, torch.float32))
        position = cast(g, arange_of(g, size, has_range=False), torch.float32)
        if exact:
            position = g.op("Add", position, g.const(0.5, dtype=torch.float32))
        source = cast(g, g.op("Floor", g.op("Mul", position, scale)), i64)
        last = g.op("Sub", n, g.const(1, dtype=i64))
        source = g.op("Where", g.op("Greater", source, last), last, source)
        x = g.op("Gather", x, source, axis=axis)
    return x


def nearest_indices(n: int, size: int | None, factor: float | None, exact: bool) -> torch.Tensor:
    """The source index of each output position along one axis of static sizes, as torch computes it."""
    probe = torch.arange(n, dtype=torch.float64).reshape(1, 1, n)
    out = F.interpolate(probe, size=size, scale_factor=factor, mode="nearest-exact" if exact else "nearest")
    return out.reshape(-1).to(torch.int64)


@register("aten::upsample_nearest1d.vec", "aten::upsample_nearest2d.vec", "aten::upsample_nearest3d.vec")
def aten_upsample_nearest(g, input, output_size, scale_factors):
    """upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return nearest(g, input, output_size, scale_factors, exact=False)


@register("aten::_upsample_nearest_exact1d.vec", "aten::_upsample_nearest_exact2d.vec",
          "aten::_upsample_nearest_exact3d.vec")
def aten_upsample_nearest_exact(g, input, output_size, scale_factors):
    """_upsample_nearest_exact1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return nearest(g, input, output_size, scale_factors, exact=True)


def _regroup(g: GraphBuilder, x: Value, split: list, perm: list[int], joined: list) -> Value:
    """x reshaped to split's sizes, transposed by perm, reshaped to joined's: how the shuffles move
    elements, as ONNX writes them (no index table). Sizes are ints or graph values (dim_size's)."""
    def to(v: Value, sizes: list) -> Value:
        if all(isinstance(n, int) for n in sizes):
            out = g.op("Reshape", v, g.const(sizes, dtype=torch.int64))
            out.shape = tuple(sizes)
            return out
        return g.reshape_to_sizes(v, g.int_list(sizes))
    return to(g.op("Transpose", to(x, split), perm=perm), joined)


def _quotient(g: GraphBuilder, n, d: int):
    return n // d if isinstance(n, int) else g.op("Div", n, g.const(d, dtype=torch.int64))


def _product(g: GraphBuilder, n, d: int):
    return n * d if isinstance(n, int) else g.op("Mul", n, g.const(d, dtype=torch.int64))


@register("aten::pixel_shuffle.default")
def aten_pixel_shuffle(g, self, upscale_factor):
    """pixel_shuffle(Tensor self, int upscale_factor) -> Tensor"""
    r, lead = upscale_factor, self.rank - 3
    dims = [dim_size(g, self, d) for d in range(self.rank)]
    *batch, c, h, w = dims
    channels = _quotient(g, c, r * r)
    perm = list(range(lead)) + [lead, lead + 3, lead + 1, lead + 4, lead + 2]
    return _regroup(g, self, batch + [channels, r, r, h, w], perm,
                    batch + [channels, _product(g, h, r), _product(g, w, r)])


@register("aten::pixel_unshuffle.default")
def aten_pixel_unshuffle(g, self, downscale_factor):
    """pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor"""
    r, lead = downscale_factor, self.rank - 3
    dims = [dim_size(g, self, d) for d in range(self.rank)]
    *batch, c, h, w = dims
    rows, cols = _quotient(g, h, r), _quotient(g, w, r)
    perm = list(range(lead)) + [lead, lead + 2, lead + 4, lead + 1, lead + 3]
    return _regroup(g, self, batch + [c, rows, r, cols, r], perm, batch + [_product(g, c, r * r), rows, cols])


@register("aten::channel_shuffle.default", "aten::native_channel_shuffle.default")
def aten_channel_shuffle(g, self, groups):
    """channel_shuffle(Tensor self, SymInt groups) -> Tensor"""
    if not isinstance(groups, int):
        raise NotImplementedError("channel_shuffle of a symbolic group count")
    n, c, *rest = [dim_size(g, self, d) for d in range(self.rank)]
    perm = [0, 2, 1] + list(range(3, self.rank + 1))
    return _regroup(g, self, [n, groups, _quotient(g, c, groups)] + rest, perm, [n, c] + rest)


@register("aten::unfold.default")
def aten_unfold(g, self, dimension, size, step):
    """unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)"""
    return unfold_dynamic(g, self, norm_dim(dimension, max(self.rank, 1)), size, step)


def unfold_dynamic(g: GraphBuilder, x: Value, dim: int, size: int, step: int) -> Value:
    """x.unfold(dim, size, step): Gather of the windows' positions [(n - size) // step + 1, size] along dim
    (a constant where dim's length n is static, else computed in the graph), the window axis then moved
    last."""
    if x.rank == 0:
        return g.op("Reshape", x, g.const([1], dtype=torch.int64))
    i64 = torch.int64
    n = dim_size(g, x, dim)
    if isinstance(n, int):
        starts = torch.arange(0, (n - size) // step + 1, dtype=i64) * step
        positions = g.const(starts.reshape(-1, 1) + torch.arange(size, dtype=i64).reshape(1, size))
    else:
        length = as_value(g, n, i64)
        count = g.op("Add", g.op("Div", g.op("Sub", length, g.const(size, dtype=i64)), g.const(step, dtype=i64)),
                     g.const(1, dtype=i64))
        starts = g.op("Mul", g.op("Range", g.const(0, dtype=i64), count, g.const(1, dtype=i64)),
                      g.const(step, dtype=i64))
        positions = g.op("Add", g.unsqueeze(starts, [1]), g.const(torch.arange(size).reshape(1, size)))
    windows = g.op("Gather", x, positions, axis=dim)  # [..., count, size, ...]
    perm = list(range(dim + 1)) + list(range(dim + 2, x.rank + 1)) + [dim + 1]
    return windows if perm == sorted(perm) else g.op("Transpose", windows, perm=perm)


@register("aten::log_sigmoid.default")
def aten_log_sigmoid(g, self):
    """log_sigmoid(Tensor self) -> Tensor"""
    return g.op("Neg", g.op("Softplus", g.op("Neg", self)))


# -- linear resampling: separable, one constant matrix per spatial axis --------------------------------------


def separable(g, x, op, args_for, dynamic_for=None, spatial=None):
    """x resampled by op, an ATen op that is linear and separable over the trailing `spatial` axes
    (all but batch and channel by default; linear, bilinear, bicubic, trilinear, area): along each
    axis, the entries each output reads (gathered_taps) weighed as op weighs an identity basis laid along
    that axis. An axis of a size known only at run time (or an output size the graph computes) takes
    dynamic_for(k, n_in)'s taps instead (interpolation: each output's input positions and weights,
    gathered), or its matrix (adaptive averaging: a MatMul), computed in the graph (_resample.py). Half
    types are resampled in float32 and rounded once (ATen's CPU kernels accumulate them in float32; some
    round between axes or keep their weights in the dtype, which this does not follow)."""
    spatial = x.rank - 2 if spatial is None else spatial
    dtype, acc = x.dtype, opmath(x.dtype)
    if not (dtype.is_floating_point or dtype.is_complex):
        # eager's uint8 kernel weighs with 16-bit fixed-point weights and rounds after each axis
        raise KernelOnly(f"linear resampling of {dtype} (eager's fixed-point weights) is not translated")
    out = cast(g, x, acc)
    for k in range(spatial):
        axis = x.rank - spatial + k
        n, args = (x.shape[axis] if x.shape is not None else None), args_for(k)
        perm = [d for d in range(x.rank) if d != axis] + [axis]
        inverse = [perm.index(d) for d in range(x.rank)]
        moved = g.op("Transpose", out, perm=perm)
        if isinstance(n, int) and not any(isinstance(a, Value) for a in _leaves(args)):
            along = [n if j == k else 1 for j in range(spatial)]
            pick = (slice(None), 0) + tuple(slice(None) if j == k else 0 for j in range(spatial))
            weights = op(torch.eye(n, dtype=torch.float64).reshape([n, 1] + along), *args)[pick]  # [n, n_out]
            # the entries eager reads for each output, zero weights included: a NaN there reaches it
            nan_basis = torch.where(torch.eye(n, dtype=torch.bool), math.nan, 0.0).to(torch.float64)
            reads = op(nan_basis.reshape([n, 1] + along), *args)[pick].isnan()
            resampled = gathered_taps(g, moved, x.rank, weights, reads, acc)
        elif dynamic_for is None:
            raise NotImplementedError("this resampling is exported for static shapes only")
        else:
            made = dynamic_for(k, dim_size(g, x, axis))
            if isinstance(made, list):  # taps (index, weight), each [n_out]: gathered, as gathered_taps does
                resampled = None
                for index, weight in made:
                    term = g.op("Mul", g.op("Gather", moved, index, axis=x.rank - 1), cast(g, weight, acc))
                    resampled = term if resampled is None else g.op("Add", resampled, term)
            else:
                resampled = g.op("MatMul", moved, cast(g, made, acc))
        out = g.op("Transpose", resampled, perm=inverse)
    return cast(g, out, dtype)


def gathered_taps(g, x: Value, rank: int, weights: torch.Tensor, reads: torch.Tensor, acc: torch.dtype) -> Value:
    """x's last axis (of `rank`) resampled by `weights` [n_in, n_out]: each output the weighted sum of the entries it
    reads (`reads`, zero weights included), gathered, not a MatMul by the whole matrix, so that a NaN or
    an infinity reaches only the outputs that read it, as in eager."""
    taps = max(int(reads.sum(0).max()), 1)
    order = torch.sort(reads.to(torch.int8), dim=0, descending=True, stable=True).indices[:taps].T  # [n_out, taps]
    valid = reads.T.gather(1, order)
    index = torch.where(valid, order, 0)
    weight = torch.where(valid, weights.T.gather(1, order), 0.0)
    picked = g.op("Gather", x, g.const(index), axis=rank - 1)  # [..., n_out, taps]
    products = g.op("Mul", picked, g.const(weight.to(acc)))
    if not bool(valid.all()):
        products = g.op("Where", g.const(valid), products, g.const(0.0, dtype=acc))
    return g.reduce("ReduceSum", products, [rank], keepdims=False)


def _leaves(args) -> list:
    return [a for arg in args for a in (arg if isinstance(arg, (list, tuple)) else [arg])]


def _interp_dynamic(g, weights, output_size, align_corners, scale_factors):
    """dynamic_for of an upsample_*.vec: weights(g, n_in, n_out, align_corners, scale) along axis k,
    the output size the one given or floor(n_in * scale)."""
    def matrix(k, n_in):
        scale = None if scale_factors is None else scale_factors[k]
        n_out = _resample.output_size(g, n_in, None if output_size is None else output_size[k], scale)
        return weights(g, n_in, n_out, align_corners, scale if output_size is None else None)
    return matrix


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
    return separable(g, input, torch.ops.aten.upsample_linear1d.vec, _interp_args(output_size, align_corners, scale_factors),
                     _interp_dynamic(g, _resample.linear, output_size, align_corners, scale_factors))


@register("aten::upsample_bilinear2d.vec")
def aten_upsample_bilinear2d(g, input, output_size, align_corners, scale_factors):
    """upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return separable(g, input, torch.ops.aten.upsample_bilinear2d.vec, _interp_args(output_size, align_corners, scale_factors),
                     _interp_dynamic(g, _resample.linear, output_size, align_corners, scale_factors))


@register("aten::upsample_trilinear3d.vec")
def aten_upsample_trilinear3d(g, input, output_size, align_corners, scale_factors):
    """upsample_trilinear3d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return separable(g, input, torch.ops.aten.upsample_trilinear3d.vec, _interp_args(output_size, align_corners, scale_factors),
                     _interp_dynamic(g, _resample.linear, output_size, align_corners, scale_factors))


@register("aten::upsample_bicubic2d.vec")
def aten_upsample_bicubic2d(g, input, output_size, align_corners, scale_factors):
    """upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    return separable(g, input, torch.ops.aten.upsample_bicubic2d.vec, _interp_args(output_size, align_corners, scale_factors),
                     _interp_dynamic(g, _resample.cubic, output_size, align_corners, scale_factors))


def adaptive_avg(g, x, output_size):
    """Adaptive average pooling, by the same separable matrices."""
    spatial = len(output_size)
    pool = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[spatial]
    dynamic = (lambda k, n_in: _resample.area(g, n_in, output_size[k]))
    if x.rank == spatial + 1 and not x.is_static:  # unbatched: the trailing axes pooled as they are
        return separable(g, x, lambda b, size: pool(b, size),
                         lambda k: ([s if j == k else 1 for j, s in enumerate(output_size)],), dynamic, spatial)
    if x.rank == spatial + 1:  # unbatched: pool a batch of one
        one = g.op("Reshape", x, g.const([1] + list(x.shape), dtype=torch.int64))
        one.shape = (1,) + tuple(x.shape)
        out = adaptive_avg(g, one, output_size)
        return g.op("Reshape", out, g.const(list(x.shape[:1]) + list(output_size), dtype=torch.int64))
    return separable(g, x, lambda b, size: pool(b, size),
                     lambda k: ([s if j == k else 1 for j, s in enumerate(output_size)],), dynamic)


@register("aten::adaptive_avg_pool2d.default", "aten::adaptive_avg_pool1d.default")
def aten_adaptive_avg_pool2d(g, self, output_size):
    """adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor

    An AveragePool where the windows tile the input evenly, GlobalAveragePool for a size of ones,
    the separable matrices otherwise."""
    if self.rank == len(output_size) + 1:
        return adaptive_avg(g, self, list(output_size))
    x = cast(g, self, opmath(self.dtype))  # half types averaged in float32, rounded once (ATen's kernel)
    if all(isinstance(s, int) and s == 1 for s in output_size):
        return cast(g, g.op("GlobalAveragePool", x), self.dtype)
    spatial = list(self.shape[-len(output_size):])
    if not all(isinstance(s, int) and isinstance(o, int) and s % o == 0 for s, o in zip(spatial, output_size)):
        return adaptive_avg(g, self, list(output_size))
    kernel = [s // o for s, o in zip(spatial, output_size)]
    return cast(g, g.op("AveragePool", x, kernel_shape=kernel, strides=kernel), self.dtype)


@register("aten::_adaptive_avg_pool2d.default", "aten::_adaptive_avg_pool3d.default",
          "aten::adaptive_avg_pool3d.default")
def aten_adaptive_avg_pool(g, self, output_size):
    """_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor"""
    return adaptive_avg(g, self, list(output_size))
