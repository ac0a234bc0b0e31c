"""Opset-9 base, normalization with statistics: native layer/group/batch norm and their mean and
rstd outputs, instance and RMS norm, batch norm in training mode, weight norm. Axis sums are MatMuls with ones,
which read the same at every opset (Reduce* changed their axes form at 13 and 18). As ATen's CPU kernels do,
float16 and bfloat16 inputs are normalized in float32 (`opmath`) and rounded once at the end."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (SymInt, cast, dim_size, element_count, fill, norm_dim, opmath, reshape,
                                         sym_prod)

register = functools.partial(registry.register, opset=9)


def static_shape(x: Value, what: str) -> list[int]:
    if not x.is_static:
        raise NotImplementedError(f"{what} is exported for static shapes only")
    return list(x.shape)


def axis_sum(g: GraphBuilder, x: Value, axis: int, *, keepdim: bool, scale: float = 1.0) -> Value:
    """scale * sum over one axis, by a MatMul with a column of `scale`s where x is static, else a
    ReduceSum (x's rank must be known)."""
    if not x.is_static:
        out = g.reduce("ReduceSum", x, [known_axis(x, axis, "this reduction")], keepdim)
        return out if scale == 1.0 else g.op("Mul", out, g.const(scale, like=out))
    shape = static_shape(x, "this reduction")
    axis = norm_dim(axis, len(shape))
    n = shape[axis]
    if axis != len(shape) - 1:
        x = g.op("Transpose", x, perm=[d for d in range(len(shape)) if d != axis] + [axis])
    out = g.op("MatMul", x, g.const(torch.full((n, 1), scale, dtype=x.dtype)))
    kept = [1 if d == axis else s for d, s in enumerate(shape)] if keepdim else \
        [s for d, s in enumerate(shape) if d != axis]
    return reshape(g, out, kept)


def axis_mean(g: GraphBuilder, x: Value, axis: int, *, keepdim: bool) -> Value:
    if not x.is_static:
        return g.reduce("ReduceMean", x, [known_axis(x, axis, "mean")], keepdim)
    n = static_shape(x, "mean")[norm_dim(axis, x.rank)]
    return axis_sum(g, x, axis, keepdim=keepdim, scale=1.0 / max(n, 1))


def known_axis(x: Value, axis: int, what: str) -> int:
    """axis counted from the front; a negative one needs x's rank known."""
    if axis >= 0:
        return axis
    if x.rank is None:
        raise NotImplementedError(f"{what} along a negative axis needs its input's rank")
    return norm_dim(axis, x.rank)


def moments(g: GraphBuilder, x2: Value, axis: int) -> tuple[Value, Value]:
    """Mean and biased variance of a static x over one axis, both kept."""
    mean = axis_mean(g, x2, axis, keepdim=True)
    centered = g.op("Sub", x2, mean)
    var = axis_mean(g, g.op("Mul", centered, centered), axis, keepdim=True)
    return mean, var


def rstd_of(g: GraphBuilder, var: Value, eps: float) -> Value:
    return g.op("Reciprocal", g.op("Sqrt", g.op("Add", var, g.const(eps, like=var))))


def affine(g: GraphBuilder, y: Value, weight, bias, channel_axis: int | None) -> Value:
    """y * weight + bias, the parameters laid along channel_axis (None: trailing dims)."""
    rank = y.rank  # (the Mul's result may not know its rank where y's dims are symbolic)

    def laid(p: Value) -> Value:
        if channel_axis is None:
            return p
        return reshape(g, p, [-1] + [1] * (rank - channel_axis - 1))
    if weight is not None:
        y = g.op("Mul", y, laid(cast(g, weight, y.dtype)))
    if bias is not None:
        y = g.op("Add", y, laid(cast(g, bias, y.dtype)))
    return y


def saved(g: GraphBuilder, stat: Value, dtype: torch.dtype) -> Value:
    """A float32 statistic as ATen's batch norm reads it back after saving it in the input's dtype."""
    return cast(g, cast(g, stat, dtype), stat.dtype)


def grouped_stats(g: GraphBuilder, x: Value, outer: list[SymInt], eps: float, *,
                  saved_stats: bool = False) -> tuple[Value, Value, Value]:
    """Normalize x over everything after its `outer` leading dims: (y, mean, rstd) in opmath(x.dtype),
    the statistics of shape [prod(outer), 1]; saved_stats normalizes with them rounded to x's dtype.
    outer's sizes may be graph values (symbolic dims)."""
    if x.is_static and all(isinstance(n, int) for n in outer):
        shape = list(x.shape)
        rows = math.prod(outer)
        x2 = reshape(g, x, [rows, math.prod(shape) // max(rows, 1)])
    else:
        shape = g.op("Shape", x)
        x2 = reshape(g, x, [sym_prod(g, outer), -1])
    x2 = cast(g, x2, opmath(x.dtype))
    mean, var = moments(g, x2, 1)
    rstd = rstd_of(g, var, eps)
    if saved_stats:
        mean, rstd = saved(g, mean, x.dtype), saved(g, rstd, x.dtype)
    y = g.op("Mul", g.op("Sub", x2, mean), rstd)
    if isinstance(shape, list):
        return reshape(g, y, shape), mean, rstd
    y = g.op("Reshape", y, shape)
    y.shape = x.shape
    return y, mean, rstd


@register("aten::native_layer_norm.default")
def aten_native_layer_norm(g, input, normalized_shape, weight, bias, eps):
    """native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)"""
    if input.rank is None:
        raise NotImplementedError("native_layer_norm is exported for inputs of known rank")
    lead = [dim_size(g, input, i) for i in range(input.rank - len(normalized_shape))]
    y, mean, rstd = grouped_stats(g, input, lead, eps)
    kept = lead + [1] * len(normalized_shape)
    y = cast(g, affine(g, y, weight, bias, None), input.dtype)
    return y, cast(g, reshape(g, mean, kept), input.dtype), cast(g, reshape(g, rstd, kept), input.dtype)


@register("aten::rms_norm.default")
def aten_rms_norm(g, input, normalized_shape, weight=None, eps=None):
    """rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor"""
    if input.rank is None:
        raise NotImplementedError("rms_norm is exported for inputs of known rank")
    acc = opmath(input.dtype)
    if eps is None:
        eps = torch.finfo(acc).eps
    lead = [dim_size(g, input, i) for i in range(input.rank - len(normalized_shape))]
    x2 = cast(g, reshape(g, input, [sym_prod(g, lead), -1]), acc)
    ms = axis_mean(g, g.op("Mul", x2, x2), 1, keepdim=True)
    y = g.op("Mul", x2, rstd_of(g, ms, eps))
    if input.is_static:
        y = reshape(g, y, list(input.shape))
    else:  # back to the input's shape, read when run
        y = g.op("Reshape", y, g.op("Shape", input))
        y.shape = input.shape
    return cast(g, affine(g, y, weight, None, None), input.dtype)


def group_norm(g: GraphBuilder, x: Value, groups: int, weight, bias, eps: float) -> tuple[Value, Value, Value]:
    n = dim_size(g, x, 0)
    y, mean, rstd = grouped_stats(g, x, [n, groups], eps)
    return (cast(g, affine(g, y, weight, bias, 1), x.dtype), cast(g, reshape(g, mean, [n, groups]), x.dtype),
            cast(g, reshape(g, rstd, [n, groups]), x.dtype))


@register("aten::group_norm.default")
def aten_group_norm(g, input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enabled=True) -> Tensor"""
    return group_norm(g, input, num_groups, weight, bias, eps)[0]


@register("aten::native_group_norm.default")
def aten_native_group_norm(g, input, weight, bias, N, C, HxW, group, eps):
    """native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)"""
    return group_norm(g, input, group, weight, bias, eps)


def batch_stats(g: GraphBuilder, x: Value, eps: float) -> tuple[Value, Value, Value, int | Value]:
    """Statistics over every dim but the channel dim 1: (y, mean [C], biased var [C], count), in
    opmath(x.dtype); y is normalized with the mean and rstd that ATen saves in x's dtype. count is an
    int, or for symbolic sizes a 0-d opmath value computed in the graph."""
    if not x.is_static:
        return batch_stats_symbolic(g, x, eps)
    shape = static_shape(x, "batch_norm with batch statistics")
    rank = len(shape)
    perm = [d for d in range(rank) if d != 1] + [1]
    moved = g.op("Transpose", x, perm=perm) if rank > 2 else x
    count = math.prod(shape) // max(shape[1], 1)
    x2 = cast(g, reshape(g, moved, [count, shape[1]]), opmath(x.dtype))
    mean, var = moments(g, x2, 0)
    y2 = g.op("Mul", g.op("Sub", x2, saved(g, mean, x.dtype)), saved(g, rstd_of(g, var, eps), x.dtype))
    y = reshape(g, y2, [shape[d] for d in perm])
    if rank > 2:
        y = g.op("Transpose", y, perm=[perm.index(d) for d in range(rank)])
        y.shape = tuple(shape)
    return y, reshape(g, mean, [shape[1]]), reshape(g, var, [shape[1]]), count


def batch_stats_symbolic(g: GraphBuilder, x: Value, eps: float) -> tuple[Value, Value, Value, Value]:
    """batch_stats for symbolic sizes: ReduceMean over the non-channel axes, the count from the shape."""
    axes = [0] + list(range(2, x.rank))
    xa = cast(g, x, opmath(x.dtype))
    mean = g.reduce("ReduceMean", xa, axes, keepdims=True)
    centered = g.op("Sub", xa, mean)
    var = g.reduce("ReduceMean", g.op("Mul", centered, centered), axes, keepdims=True)
    y = g.op("Mul", g.op("Sub", xa, saved(g, mean, x.dtype)), saved(g, rstd_of(g, var, eps), x.dtype))
    y.shape = x.shape
    return y, reshape(g, mean, [-1]), reshape(g, var, [-1]), element_count(g, x, axes, xa.dtype)


def saved_stats_dtype(input: Value, *params: Value | None) -> torch.dtype:
    """The dtype ATen saves batch statistics in: input's, or float32 for a half input whose weight,
    bias or running statistics are float32 (ATen's "mixed type" batch norm)."""
    mixed = any(p is not None and p.dtype != input.dtype for p in params)
    return opmath(input.dtype) if mixed else input.dtype


def batch_norm_train(g: GraphBuilder, input: Value, weight, bias, eps: float,
                     running: tuple[Value | None, Value | None] = (None, None)
                     ) -> tuple[Value, Value, Value, Value, int | Value]:
    """(y, mean, invstd, biased var, count) with batch statistics; the biased var in opmath(input.dtype),
    mean and invstd saved as ATen saves them given the running statistics."""
    y, mean, var, count = batch_stats(g, input, eps)
    stats = saved_stats_dtype(input, weight, bias, *running)
    return (cast(g, affine(g, y, weight, bias, 1), input.dtype), cast(g, mean, stats),
            cast(g, rstd_of(g, var, eps), stats), var, count)


def updated_running(g: GraphBuilder, running_mean: Value, running_var: Value, mean: Value, var: Value,
                    count: int | Value, momentum: float) -> tuple[Value, Value]:
    """The running statistics after one training step, from the batch's mean and biased var in opmath
    (as ATen updates them, before rounding); the running variance takes the unbiased one."""
    acc = var.dtype
    keep = g.const(1.0 - momentum, dtype=acc)
    step = g.const(momentum, dtype=acc)
    if isinstance(count, Value):  # count / max(count - 1, 1), in the graph
        one = g.const(1.0, dtype=acc)
        correction = g.op("Div", count, g.max(g.op("Sub", count, one), one))
    else:
        correction = g.const(count / max(count - 1, 1), dtype=acc)
    unbiased = g.op("Mul", var, correction)
    new_mean = g.op("Add", g.op("Mul", cast(g, running_mean, acc), keep), g.op("Mul", cast(g, mean, acc), step))
    new_var = g.op("Add", g.op("Mul", cast(g, running_var, acc), keep), g.op("Mul", unbiased, step))
    return cast(g, new_mean, running_mean.dtype), cast(g, new_var, running_var.dtype)


def batch_norm_eval(g: GraphBuilder, input: Value, weight, bias, running_mean: Value, running_var: Value,
                    eps: float) -> Value:
    """(x - running_mean) / sqrt(running_var + eps) * weight + bias, by elementwise ops in opmath."""
    acc = opmath(input.dtype)

    def laid(p: Value) -> Value:
        return reshape(g, cast(g, p, acc), [-1] + [1] * (input.rank - 2))
    x = cast(g, input, acc)
    y = g.op("Mul", g.op("Sub", x, laid(running_mean)), laid(rstd_of(g, cast(g, running_var, acc), eps)))
    y.shape = input.shape  # (known where the broadcast of symbolic dims is not)
    return cast(g, affine(g, y, weight, bias, 1), input.dtype)


def empty(g: GraphBuilder, dtype: torch.dtype) -> Value:
    return fill(g, [0], 0, dtype)


def per_channel(g: GraphBuilder, shape: tuple[int, ...] | Value, value: float, dtype: torch.dtype) -> Value:
    """A 1-D tensor of value: a constant for a static shape, else ConstantOfShape of the graph's shape."""
    if isinstance(shape, Value):
        return fill(g, shape, value, dtype)
    return g.const(torch.full(shape, value, dtype=dtype))


@register("aten::batch_norm.default")
def aten_batch_norm(g, input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor"""
    if training or running_mean is None:
        # (the running statistics it updates in place are written back by functionalization, not here)
        return batch_norm_train(g, input, weight, bias, eps)[0]
    acc = opmath(input.dtype)
    # BatchNormalization takes a scale and a bias: ones and zeros stand in, of running_mean's size
    channels = running_mean.shape if running_mean.is_static else g.op("Shape", running_mean)
    weight = per_channel(g, channels, 1.0, acc) if weight is None else cast(g, weight, acc)
    bias = per_channel(g, channels, 0.0, acc) if bias is None else cast(g, bias, acc)
    y = g.op("BatchNormalization", cast(g, input, acc), weight, bias, cast(g, running_mean, acc),
             cast(g, running_var, acc), epsilon=float(eps))
    return cast(g, y, input.dtype)


@register("aten::native_batch_norm.default")
def aten_native_batch_norm(g, input, weight, bias, running_mean, running_var, training, momentum, eps):
    """native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)"""
    if training or running_mean is None:
        y, mean, invstd, _, _ = batch_norm_train(g, input, weight, bias, eps, (running_mean, running_var))
        return y, mean, invstd
    y = batch_norm_eval(g, input, weight, bias, running_mean, running_var, eps)
    return y, empty(g, input.dtype), empty(g, input.dtype)


@register("aten::_native_batch_norm_legit_no_training.default")
def aten_native_batch_norm_legit_no_training(g, input, weight, bias, running_mean, running_var, momentum, eps):
    """_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)"""
    y = batch_norm_eval(g, input, weight, bias, running_mean, running_var, eps)
    return y, empty(g, input.dtype), empty(g, input.dtype)


@register("aten::_native_batch_norm_legit.no_stats")
def aten_native_batch_norm_legit_no_stats(g, input, weight, bias, training, momentum, eps):
    """_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)"""
    y, mean, invstd, _, _ = batch_norm_train(g, input, weight, bias, eps)
    return y, mean, invstd


@register("aten::_native_batch_norm_legit_functional.default")
def aten_native_batch_norm_legit_functional(g, input, weight, bias, running_mean, running_var, training, momentum, eps):
    """_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)"""
    if not training:
        y = batch_norm_eval(g, input, weight, bias, running_mean, running_var, eps)
        return y, empty(g, input.dtype), empty(g, input.dtype), running_mean, running_var
    y, mean, invstd, var, count = batch_norm_train(g, input, weight, bias, eps, (running_mean, running_var))
    new_mean, new_var = updated_running(g, running_mean, running_var, mean, var, count, momentum)
    return y, mean, invstd, new_mean, new_var


@register("aten::_batch_norm_with_update_functional.default")
def aten_batch_norm_with_update_functional(g, input, weight, bias, running_mean, running_var, momentum, eps):
    """_batch_norm_with_update_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)"""
    y, mean, invstd, var, count = batch_norm_train(g, input, weight, bias, eps, (running_mean, running_var))
    new_mean, new_var = updated_running(g, running_mean, running_var, mean, var, count, momentum)
    return y, mean, invstd, empty(g, torch.uint8), new_mean, new_var


@register("aten::instance_norm.default")
def aten_instance_norm(g, input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                       cudnn_enabled):
    """instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor"""
    if not use_input_stats:
        return batch_norm_eval(g, input, weight, bias, running_mean, running_var, eps)
    outer = [dim_size(g, input, 0), dim_size(g, input, 1)]
    # ATen runs instance norm as a batch norm over (1, N*C, ...), which saves its statistics in input's dtype
    y, _, _ = grouped_stats(g, input, outer, eps, saved_stats=True)
    return cast(g, affine(g, y, weight, bias, 1), input.dtype)


def norm_except_dim(g: GraphBuilder, v: Value, dim: int) -> Value:
    """The 2-norm of v over every dim but `dim`, kept as size-1 dims; dim == -1 is ATen's "no dim
    kept": the norm of the whole tensor (not of all but the last)."""
    shape = static_shape(v, "weight norm")
    if dim == -1:
        rows, kept = 1, [1] * len(shape)
    else:
        dim = norm_dim(dim, len(shape))
        rows, kept = shape[dim], [shape[dim] if d == dim else 1 for d in range(len(shape))]
        if dim != 0:
            v = g.op("Transpose", v, perm=[dim] + [d for d in range(len(shape)) if d != dim])
    v2 = reshape(g, v, [rows, math.prod(shape) // max(rows, 1)])
    return reshape(g, g.op("Sqrt", axis_sum(g, g.op("Mul", v2, v2), 1, keepdim=True)), kept)


# The schema calls the magnitude `g`, so the builder is `b` in these two.
@register("aten::_weight_norm.default")
def aten__weight_norm(b, v, g, dim=0):
    """_weight_norm(Tensor v, Tensor g, int dim=0) -> Tensor"""
    return b.op("Mul", v, b.op("Div", g, norm_except_dim(b, v, dim)))


@register("aten::_weight_norm_interface.default")
def aten__weight_norm_interface(b, v, g, dim=0):
    """_weight_norm_interface(Tensor v, Tensor g, int dim=0) -> (Tensor, Tensor)"""
    norm = norm_except_dim(b, v, dim)
    return b.op("Mul", v, b.op("Div", g, norm)), reshape(b, norm, static_shape(g, "weight norm"))


# -- layer norm, decomposed (LayerNormalization arrives at 17) -----------------------------------------------


def layer_norm_decomposed(g: GraphBuilder, x: Value, axes: list[int], weight, bias, eps: float) -> Value:
    """(x - mean) / sqrt(var + eps) * weight + bias over axes, in opmath(x.dtype) as ATen computes it."""
    acc = opmath(x.dtype)
    xa = cast(g, x, acc)
    mean = g.reduce("ReduceMean", xa, axes, True)
    centered = g.op("Sub", xa, mean)
    var = g.reduce("ReduceMean", g.op("Mul", centered, centered), axes, True)
    y = g.op("Div", centered, g.op("Sqrt", g.op("Add", var, g.const(eps, dtype=acc))))
    if weight is not None:
        y = g.op("Mul", y, cast(g, weight, acc))
    if bias is not None:
        y = g.op("Add", y, cast(g, bias, acc))
    return cast(g, y, x.dtype)


@register("aten::layer_norm.default")
def aten_layer_norm(g, input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor"""
    axes = list(range(input.rank - len(normalized_shape), input.rank))
    return layer_norm_decomposed(g, input, axes, weight, bias, eps)
