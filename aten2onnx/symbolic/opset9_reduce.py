"""Opset-9 base, reductions: sum, mean, amax/amin, max.dim and argmax; variance and deviation, products,
any/all, argmin and min/max, logsumexp, vector norms, nan-aware sums. Reduce* go through the builder's
emitter (g.reduce), which spells their axes as each opset wants."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (cast, dim_size, element_count, loop, norm_dim, norm_dims, opmath, reshape,
                                         scalar_type, sym_prod)

register = functools.partial(registry.register, opset=9)


def dims_of(x: Value, dim) -> list[int]:
    if dim is None:
        return list(range(x.rank))
    if isinstance(dim, int):
        dim = [dim]
    if x.rank is None and dim and all(d >= 0 for d in dim):
        return list(dim)  # shape unknown to the builder, axes already absolute
    return norm_dims(dim, x.rank) if dim else list(range(x.rank))


def var_mean(g: GraphBuilder, x: Value, dim, correction, keepdim: bool) -> tuple[Value, Value]:
    x = x if x.dtype.is_floating_point else cast(g, x, torch.get_default_dtype())
    axes = dims_of(x, dim)
    correction = 1 if correction is None else correction
    mean = g.reduce("ReduceMean", x, axes, True)
    centered = g.op("Sub", x, mean)
    sq = g.reduce("ReduceSum", g.op("Mul", centered, centered), axes, keepdim)
    n = sym_prod(g, [dim_size(g, x, a) for a in axes]) if x.rank else 1
    if isinstance(n, int):
        dof = g.const(float(max(n - correction, 0)), like=x)
    else:  # max(n - correction, 0), as ATen clamps the degrees of freedom
        dof = g.max(g.op("Sub", cast(g, n, x.dtype), g.const(float(correction), like=x)), g.const(0.0, like=x))
    var = g.op("Div", sq, dof)
    if not keepdim:
        mean = g.reduce("ReduceMean", x, axes, False)
    return var, mean


def var(g, self, dim, correction, keepdim) -> Value:
    return var_mean(g, self, dim, correction, keepdim)[0]


def std(g, self, dim, correction, keepdim) -> Value:
    return g.op("Sqrt", var(g, self, dim, correction, keepdim))


def std_mean(g, self, dim, correction, keepdim) -> tuple[Value, Value]:
    v, m = var_mean(g, self, dim, correction, keepdim)
    return g.op("Sqrt", v), m


@register("aten::var.correction")
def aten_var_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return var(g, self, dim, correction, keepdim)


@register("aten::var.dim")
def aten_var_dim(g, self, dim, unbiased=True, keepdim=False):
    """var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return var(g, self, dim, int(unbiased), keepdim)


@register("aten::var.default")
def aten_var(g, self, unbiased=True):
    """var(Tensor self, bool unbiased=True) -> Tensor"""
    return var(g, self, None, int(unbiased), False)


@register("aten::std.correction")
def aten_std_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"""
    return std(g, self, dim, correction, keepdim)


@register("aten::std.dim")
def aten_std_dim(g, self, dim, unbiased=True, keepdim=False):
    """std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return std(g, self, dim, int(unbiased), keepdim)


@register("aten::std.default")
def aten_std(g, self, unbiased=True):
    """std(Tensor self, bool unbiased=True) -> Tensor"""
    return std(g, self, None, int(unbiased), False)


@register("aten::var_mean.correction")
def aten_var_mean_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    return var_mean(g, self, dim, correction, keepdim)


@register("aten::var_mean.dim")
def aten_var_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    return var_mean(g, self, dim, int(unbiased), keepdim)


@register("aten::var_mean.default")
def aten_var_mean(g, self, unbiased=True):
    """var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    return var_mean(g, self, None, int(unbiased), False)


@register("aten::std_mean.correction")
def aten_std_mean_correction(g, self, dim=None, *, correction=None, keepdim=False):
    """std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    return std_mean(g, self, dim, correction, keepdim)


@register("aten::std_mean.dim")
def aten_std_mean_dim(g, self, dim, unbiased=True, keepdim=False):
    """std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"""
    return std_mean(g, self, dim, int(unbiased), keepdim)


@register("aten::std_mean.default")
def aten_std_mean(g, self, unbiased=True):
    """std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)"""
    return std_mean(g, self, None, int(unbiased), False)


# -- products, any/all, extremes ------------------------------------------------------------------------


def prod(g, self, dim, keepdim, dtype) -> Value:
    x = cast(g, self, sum_dtype(self, scalar_type(dtype)))
    return g.reduce("ReduceProd", x, dims_of(x, dim), keepdim)


@register("aten::prod.default")
def aten_prod(g, self, *, dtype=None):
    """prod(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return prod(g, self, None, False, dtype)


@register("aten::prod.dim_int")
def aten_prod_dim(g, self, dim, keepdim=False, *, dtype=None):
    """prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return prod(g, self, dim, keepdim, dtype)


def any_all(g, self, dim, keepdim, *, all_: bool) -> Value:
    """any: some element is nonzero (ReduceMax of 0/1); all: none is zero (ReduceMin). The reduction's result
    is compared with 0, not cast: over no elements ReduceMax gives int32's lowest value (nonzero, so a cast
    said True where any() of nothing is False) and ReduceMin its highest (all() of nothing: True)."""
    nonzero = cast(g, cast(g, self, torch.bool), torch.int32)
    out = g.reduce("ReduceMin" if all_ else "ReduceMax", nonzero, dims_of(self, dim), keepdim)
    if self.rank == 0:
        out = nonzero
    out = g.op("Greater", out, g.const(0, dtype=torch.int32))
    return cast(g, out, torch.uint8) if self.dtype == torch.uint8 else out


@register("aten::any.default")
def aten_any(g, self):
    """any(Tensor self) -> Tensor"""
    return any_all(g, self, None, False, all_=False)


@register("aten::any.dim")
def aten_any_dim(g, self, dim, keepdim=False):
    """any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"""
    return any_all(g, self, dim, keepdim, all_=False)


@register("aten::any.dims")
def aten_any_dims(g, self, dim=None, keepdim=False):
    """any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"""
    return any_all(g, self, dim, keepdim, all_=False)


@register("aten::all.default")
def aten_all(g, self):
    """all(Tensor self) -> Tensor"""
    return any_all(g, self, None, False, all_=True)


@register("aten::all.dim")
def aten_all_dim(g, self, dim, keepdim=False):
    """all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"""
    return any_all(g, self, dim, keepdim, all_=True)


@register("aten::all.dims")
def aten_all_dims(g, self, dim=None, keepdim=False):
    """all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"""
    return any_all(g, self, dim, keepdim, all_=True)


def extreme(g, self, op_type: str) -> Value:
    x = self
    if x.dtype == torch.bool:
        return cast(g, g.reduce(op_type, cast(g, x, torch.int32), None, False), torch.bool)
    return g.reduce(op_type, x, None, False)


@register("aten::max.default")
def aten_max(g, self):
    """max(Tensor self) -> Tensor"""
    return extreme(g, self, "ReduceMax")


@register("aten::min.default")
def aten_min(g, self):
    """min(Tensor self) -> Tensor"""
    return extreme(g, self, "ReduceMin")


def arg_extreme(g, self, dim, keepdim, op_type: str) -> Value:
    """ArgMax/ArgMin; ties pick the first index, as torch does (select_last_index=0 is the default)."""
    if self.rank == 0:
        return g.const(0, dtype=torch.int64)
    if dim is None:
        flat = reshape(g, self, [-1])
        out = g.op(op_type, flat, axis=0, keepdims=0)
        return reshape(g, out, [1] * self.rank) if keepdim else out
    return g.op(op_type, self, axis=norm_dim(dim, self.rank), keepdims=int(keepdim))


@register("aten::argmin.default")
def aten_argmin(g, self, dim=None, keepdim=False):
    """argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"""
    return arg_extreme(g, self, dim, keepdim, "ArgMin")


def min_max_dim(g, self, dim, keepdim, op_type: str, arg_type: str):
    if self.rank == 0:
        return self, g.const(0, dtype=torch.int64)
    dim = norm_dim(dim, self.rank)
    return (g.reduce(op_type, self, [dim], keepdim),
            g.op(arg_type, self, axis=dim, keepdims=int(keepdim)))


@register("aten::min.dim")
def aten_min_dim(g, self, dim, keepdim=False):
    """min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    return min_max_dim(g, self, dim, keepdim, "ReduceMin", "ArgMin")


def aminmax(g, self, dim, keepdim):
    axes = None if dim is None else [norm_dim(dim, self.rank)]
    if self.rank == 0:
        return self, self
    return (g.reduce("ReduceMin", self, axes, keepdim),
            g.reduce("ReduceMax", self, axes, keepdim))


@register("aten::aminmax.default")
def aten_aminmax(g, self, *, dim=None, keepdim=False):
    """aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)"""
    return aminmax(g, self, dim, keepdim)


# -- logsumexp, norms, nan-aware sums ------------------------------------------------------------------------


def logsumexp(g, self, dim, keepdim) -> Value:
    x = self if self.dtype.is_floating_point else cast(g, self, torch.get_default_dtype())
    axes = dims_of(x, dim)
    if x.rank == 0:
        return x
    m = g.reduce("ReduceMax", x, axes, True)
    # an all -inf slice: subtract 0 instead of -inf, so the result is -inf rather than NaN
    inf = g.const(float("inf"), like=x)
    finite = g.op("Less", g.op("Abs", m), inf)
    m = g.op("Where", finite, m, g.const(0.0, like=x))
    s = g.reduce("ReduceSum", g.op("Exp", g.op("Sub", x, m)), axes, True)
    out = g.op("Add", g.op("Log", s), m)
    if not keepdim:
        out = g.op("Reshape", out, g.const(_kept_shape(x, axes), dtype=torch.int64)) if x.is_static else \
            g.reduce("ReduceMax", out, axes, False)
    return out


def _kept_shape(x: Value, axes: list[int]) -> list[int]:
    return [d for i, d in enumerate(x.shape) if i not in axes]


@register("aten::logsumexp.default")
def aten_logsumexp(g, self, dim, keepdim=False):
    """logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor"""
    return logsumexp(g, self, dim, keepdim)


def vector_norm(g, self, ord, dim, keepdim, dtype) -> Value:
    x = cast(g, self, scalar_type(dtype)) if dtype is not None else self
    x = x if x.dtype.is_floating_point else cast(g, x, torch.get_default_dtype())
    # ATen sums float16 and bfloat16 powers in float32 and rounds the norm once
    return cast(g, vector_norm_of(g, cast(g, x, opmath(x.dtype)), float(ord), dim, keepdim), x.dtype)


def vector_norm_of(g, x: Value, ord: float, dim, keepdim: bool) -> Value:
    axes = None if x.rank == 0 else dims_of(x, dim)
    a = g.op("Abs", x)
    if ord == float("inf"):
        return g.reduce("ReduceMax", a, axes, keepdim)
    if ord == float("-inf"):
        return g.reduce("ReduceMin", a, axes, keepdim)
    if ord == 0:
        nz = cast(g, g.op("Not", g.op("Not", cast(g, x, torch.bool))), x.dtype)
        return g.reduce("ReduceSum", nz, axes, keepdim)
    if ord == 1:
        return g.reduce("ReduceSum", a, axes, keepdim)
    if ord == 2:
        return g.op("Sqrt", g.reduce("ReduceSum", g.op("Mul", a, a), axes, keepdim))
    p = g.const(ord, like=x)
    s = g.reduce("ReduceSum", g.op("Pow", a, p), axes, keepdim)
    return g.op("Pow", s, g.const(1.0 / ord, like=x))


@register("aten::linalg_vector_norm.default")
def aten_linalg_vector_norm(g, self, ord=2, dim=None, keepdim=False, *, dtype=None):
    """linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return vector_norm(g, self, ord, dim, keepdim, dtype)


def nansum(g, self, dim, keepdim, dtype) -> Value:
    x = self
    if x.dtype.is_floating_point:
        x = g.op("Where", g.op("IsNaN", x), g.const(0.0, like=x), x)
    x = cast(g, x, sum_dtype(self, scalar_type(dtype)))
    return g.reduce("ReduceSum", x, dims_of(self, dim), keepdim)


@register("aten::nansum.default")
def aten_nansum(g, self, dim=None, keepdim=False, *, dtype=None):
    """nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return nansum(g, self, dim, keepdim, dtype)


def nanmean(g, self, dim, keepdim, dtype) -> Value:
    total = nansum(g, self, dim, keepdim, dtype)
    valid = cast(g, g.op("Not", g.op("IsNaN", self)), total.dtype)
    n = g.reduce("ReduceSum", valid, dims_of(self, dim), keepdim)
    return g.op("Div", total, n)


@register("aten::nanmean.default")
def aten_nanmean(g, self, dim=None, keepdim=False, *, dtype=None):
    """nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return nanmean(g, self, dim, keepdim, dtype)


def count_nonzero(g, self, dim) -> Value:
    nz = cast(g, cast(g, self, torch.bool), torch.int64)
    return g.reduce("ReduceSum", nz, dims_of(self, dim), False)


@register("aten::count_nonzero.default")
def aten_count_nonzero(g, self, dim=None):
    """count_nonzero(Tensor self, int? dim=None) -> Tensor"""
    return count_nonzero(g, self, dim)


@register("aten::count_nonzero.dim_IntList")
def aten_count_nonzero_dims(g, self, dim):
    """count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor"""
    return count_nonzero(g, self, list(dim))


def cumsum_accumulator(dtype: torch.dtype) -> torch.dtype:
    """The dtype ATen's CPU cumsum accumulates in (`at::acc_type`): float64 for float32, float32 for
    half types; each step is rounded to the result dtype from there."""
    return {torch.float32: torch.float64, torch.float16: torch.float32, torch.bfloat16: torch.float32}.get(dtype, dtype)


@register("aten::cumsum.default")
def aten_cumsum(g, self, dim, *, dtype=None):
    """cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    out_dtype = sum_dtype(self, dtype)
    if self.rank == 0:
        return cast(g, self, out_dtype)
    # CumSum arrives in opset 11: a Loop over the dim, carrying the running sum in eager's accumulator
    axis = norm_dim(dim, self.rank)
    perm = [axis] + [d for d in range(self.rank) if d != axis]
    x = cast(g, cast(g, self, out_dtype), cumsum_accumulator(out_dtype))
    x = x if axis == 0 else g.op("Transpose", x, perm=perm)
    row = g.op("Gather", g.op("Shape", x), g.const(list(range(1, self.rank)), dtype=torch.int64), axis=0)
    zeros = g.op("ConstantOfShape", row, value=torch.zeros(1, dtype=x.dtype))
    steps = g.op("Gather", g.op("Shape", x), g.const(0, dtype=torch.int64), axis=0)

    def step(body: GraphBuilder, i: Value, carried: list[Value]) -> list[Value]:
        running = body.op("Add", carried[0], body.op("Gather", x, i, axis=0))
        return [running, cast(body, running, out_dtype)]

    _, sums = loop(g, steps, [zeros], step, name="cumsum", scan_outputs=1)
    inverse = [perm.index(d) for d in range(self.rank)]
    return sums if axis == 0 else g.op("Transpose", sums, perm=inverse)


# -- sum, mean, amax/amin, max.dim, argmax -------------------------------------------------------------------


def sum_dtype(self: Value, dtype: torch.dtype | None) -> torch.dtype:
    """torch sums integers and bools in int64 unless told otherwise."""
    if dtype is not None:
        return dtype
    return torch.int64 if not self.dtype.is_floating_point and not self.dtype.is_complex else self.dtype


@register("aten::sum.dim_IntList")
def aten_sum_dim(g, self, dim, keepdim=False, *, dtype=None):
    """sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    x = cast(g, self, sum_dtype(self, dtype))
    return g.reduce("ReduceSum", x, norm_dims(dim or [], self.rank), keepdim)


@register("aten::sum.default")
def aten_sum(g, self, *, dtype=None):
    """sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return aten_sum_dim(g, self, None, False, dtype=dtype)


@register("aten::mean.dim")
def aten_mean_dim(g, self, dim, keepdim=False, *, dtype=None):
    """mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    x = self if dtype is None else cast(g, self, dtype)
    return mean_of(g, x, norm_dims(dim or [], self.rank), keepdim)


def mean_of(g: GraphBuilder, x: Value, axes: list[int], keepdim: bool) -> Value:
    """ReduceMean where every reduced size is known to be nonzero. Otherwise ReduceSum over the count
    from the shape: the mean of no elements is NaN in eager (0/0), and onnxruntime's ReduceMean gives 0."""
    reduced = axes or list(range(x.rank or 0))
    if x.rank == 0 or x.shape is not None and all(isinstance(x.shape[a], int) and x.shape[a] > 0 for a in reduced):
        return g.reduce("ReduceMean", x, axes, keepdim)
    total = g.reduce("ReduceSum", x, axes, keepdim)
    if not axes:  # every element, whatever the rank (which may not be known here)
        return g.op("Div", total, cast(g, g.op("Size", x), x.dtype))
    return g.op("Div", total, element_count(g, x, axes, x.dtype))


@register("aten::mean.default")
def aten_mean(g, self, *, dtype=None):
    """mean(Tensor self, *, ScalarType? dtype=None) -> Tensor"""
    return aten_mean_dim(g, self, None, False, dtype=dtype)


@register("aten::amax.default")
def aten_amax(g, self, dim=[], keepdim=False):
    """amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"""
    return g.reduce("ReduceMax", self, norm_dims(dim, self.rank), keepdim)


@register("aten::amin.default")
def aten_amin(g, self, dim=[], keepdim=False):
    """amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"""
    return g.reduce("ReduceMin", self, norm_dims(dim, self.rank), keepdim)


@register("aten::max.dim")
def aten_max_dim(g, self, dim, keepdim=False):
    """max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    dim = norm_dim(dim, self.rank)
    values = g.reduce("ReduceMax", self, [dim], keepdim)
    return values, g.op("ArgMax", self, axis=dim, keepdims=int(keepdim))


@register("aten::argmax.default")
def aten_argmax(g, self, dim=None, keepdim=False):
    """argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"""
    if self.rank == 0:
        return g.const(0, dtype=torch.int64)
    if dim is None:
        flat = reshape(g, self, [-1])
        out = g.op("ArgMax", flat, axis=0, keepdims=0)
        return reshape(g, out, [1] * self.rank) if keepdim else out
    return g.op("ArgMax", self, axis=norm_dim(dim, self.rank), keepdims=int(keepdim))
