"""Opset-9 base, data movement and counting: segment and bag reductions, histograms and bincount, static
nonzero, put and masked writes, repeat_interleave, unique_consecutive, im2col/col2im and unfold windows.

Index arithmetic that depends only on static shapes (window positions, combinations) is done here in Python
and stored as constants; data-dependent counts are one-hot sums (MatMul of a 0/1 mask) until opset 16 lets
ScatterElements add (see opset16_data).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import INT64_MAX, cast, dim_size, fill, norm_dim, reshape, sym_prod
from aten2onnx.symbolic.opset9 import positions_along

register = functools.partial(registry.register, opset=9)

I64 = torch.int64
# The largest n for which a cumulative sum may be an n x n triangular MatMul (before CumSum, opset 11).
TRIANGLE_LIMIT = 4096
# The largest one-hot mask (elements) a count may build before ScatterElements adds (opset 16).
ONE_HOT_LIMIT = 1 << 26


# -- shared pieces ------------------------------------------------------------------------------------------


def ints(g: GraphBuilder, values) -> Value:
    return g.const(list(values), dtype=I64)


def to_shape(g: GraphBuilder, x: Value, shape: list[int]) -> Value:
    """Reshape to a static shape, which the result then carries (Reshape would read a 0 as "keep")."""
    if 0 in shape:
        return fill(g, list(shape), 0, x.dtype)
    out = g.op("Reshape", x, ints(g, shape))
    out.shape = tuple(shape)
    return out


def flat(g: GraphBuilder, x: Value) -> Value:
    out = g.op("Reshape", x, ints(g, [-1]))
    out.shape = (math.prod(x.shape),) if x.is_static else (None,)
    return out


def static(x: Value, what: str) -> list[int]:
    if not x.is_static:
        raise NotImplementedError(f"{what} is exported for static shapes only")
    return list(x.shape)


def scalar_of(g: GraphBuilder, x: Value) -> Value:
    out = g.op("Reshape", x, ints(g, []))
    out.shape = ()
    return out


def where(g: GraphBuilder, cond: Value, a: Value, b: Value) -> Value:
    """Where for any dtype: onnxruntime's Where takes neither bool nor int16 values."""
    if a.dtype == torch.bool:
        return g.op("Or", g.op("And", cond, a), g.op("And", g.op("Not", cond), b))
    if a.dtype == torch.int16:
        return cast(g, g.op("Where", cond, cast(g, a, torch.int32), cast(g, b, torch.int32)), torch.int16)
    return g.op("Where", cond, a, b)


def accumulator(dtype: torch.dtype) -> torch.dtype:
    """The dtype sums are carried in (onnxruntime adds and multiplies few small types): float32 and
    float64 as they are, other floats in float32, integers and bool in int64 (cast back, they wrap as
    eager's do; a bool sum is true where nonzero)."""
    if dtype in (torch.float32, torch.float64):
        return dtype
    return torch.float32 if dtype.is_floating_point else I64


def arange_of(g: GraphBuilder, n: int | Value, *, has_range: bool) -> Value:
    """0, 1, ..., n-1 (int64) for an int or a 0-d int64 graph value: Range from opset 11, else the
    coordinates NonZero gives for n true values."""
    if isinstance(n, int):
        return g.const(torch.arange(n)) if n > 0 else fill(g, [0], 0, I64)
    n = scalar_of(g, cast(g, n, I64))
    if has_range:
        out = g.op("Range", g.const(0, dtype=I64), n, g.const(1, dtype=I64))
    else:
        trues = g.op("ConstantOfShape", reshape(g, n, [1]), value=torch.tensor([True]))
        out = g.op("Reshape", g.op("NonZero", trues), ints(g, [-1]))
    out.shape = (None,)
    return out


def int_mod(g: GraphBuilder, a: Value, n: Value) -> Value:
    """a mod n for int64 a >= 0 and n > 0, by Div (Mod takes ints only from opset 10)."""
    return g.op("Sub", a, g.op("Mul", g.op("Div", a, n), n))


def int_max(g: GraphBuilder, a: Value, b: Value) -> Value:
    """Elementwise max of int64 tensors (Max takes ints only from opset 12)."""
    return where(g, g.op("Greater", a, b), a, b)


def int_min(g: GraphBuilder, a: Value, b: Value) -> Value:
    """Elementwise min of int64 tensors (Min takes ints only from opset 12)."""
    return where(g, g.op("Less", a, b), a, b)


def int_clamp(g: GraphBuilder, x: Value, lo: int | Value, hi: int | Value) -> Value:
    lo = lo if isinstance(lo, Value) else g.const(lo, dtype=I64)
    hi = hi if isinstance(hi, Value) else g.const(hi, dtype=I64)
    x = where(g, g.op("Less", x, lo), lo, x)
    return where(g, g.op("Greater", x, hi), hi, x)


def wrap_negative(g: GraphBuilder, index: Value, size: int | Value) -> Value:
    """Negative indices counted from the end, as eager reads them."""
    index = cast(g, index, I64)
    n = size if isinstance(size, Value) else g.const(size, dtype=I64)
    return where(g, g.op("Less", index, g.const(0, dtype=I64)), g.op("Add", index, n), index)


def ones_like(g: GraphBuilder, x: Value, dtype: torch.dtype) -> Value:
    """Ones of x's shape (x is an integer tensor, equal to itself everywhere)."""
    return cast(g, g.op("Equal", x, x), dtype)


def cumsum_last(g: GraphBuilder, x: Value, *, exclusive: bool, has_cumsum: bool) -> Value:
    """Cumulative sum of an integer tensor along its last axis: CumSum from opset 11, else a MatMul with a
    0/1 triangle (exact in float64) for a static axis of at most TRIANGLE_LIMIT."""
    if has_cumsum:
        out = g.op("CumSum", x, g.const(-1, dtype=I64), exclusive=int(exclusive))
        out.shape = x.shape
        return out
    n = x.shape[-1] if x.shape is not None else None
    if not isinstance(n, int) or n > TRIANGLE_LIMIT:
        raise NotImplementedError(f"a cumulative sum over {n} elements needs opset 11 (CumSum)")
    k = torch.arange(n)
    triangle = (k[:, None] < k[None, :]) if exclusive else (k[:, None] <= k[None, :])
    out = cast(g, g.op("MatMul", cast(g, x, torch.float64), g.const(triangle.to(torch.float64))), x.dtype)
    out.shape = x.shape
    return out


# -- adding values into bins: one-hot sums (opset 9) or ScatterElements reduction="add" (opset 16) ----------


def count_into(g: GraphBuilder, size: int | Value, index: Value, updates: Value | None, dtype: torch.dtype, *,
               scatter_add: bool) -> Value:
    """Rows of `size` zeros, per row b the updates[b, j] (ones where None) added at index[b, j]: index and
    updates are [B, L] (index in range), the result [B, size] of dtype."""
    total = accumulator(dtype)
    return cast(g, add_into(g, size, index, None if updates is None else cast(g, updates, total), total,
                            scatter_add=scatter_add), dtype)


def add_into(g: GraphBuilder, size: int | Value, index: Value, updates: Value | None, dtype: torch.dtype, *,
             scatter_add: bool) -> Value:
    if scatter_add:
        lead = g.op("Gather", g.op("Shape", index), ints(g, [0]), axis=0)
        size_1d = ints(g, [size]) if isinstance(size, int) else reshape(g, cast(g, size, I64), [1])
        zeros = g.op("ConstantOfShape", g.op("Concat", lead, size_1d, axis=0), value=torch.zeros(1, dtype=dtype))
        return g.op("ScatterElements", zeros, index, updates if updates is not None else ones_like(g, index, dtype),
                    axis=1, reduction="add")
    if index.is_static and isinstance(size, int) and math.prod(index.shape) * size > ONE_HOT_LIMIT:
        raise NotImplementedError(f"counting {math.prod(index.shape)} values into {size} bins needs opset 16 "
                                  "(ScatterElements reduction='add')")
    column = ints(g, [0, 0, 1])
    hot = g.op("Equal", g.op("Reshape", index, column), arange_of(g, size, has_range=False))  # [B, L, size]
    if updates is None:
        terms = cast(g, hot, dtype)
    else:  # Where, not a product: a NaN or inf update stays in its own bin
        terms = where(g, hot, g.op("Reshape", updates, column), g.const(0, dtype=dtype))
    ones = g.op("Reshape", ones_like(g, index, dtype), ints(g, [0, 1, -1]))  # [B, 1, L]
    return g.op("Reshape", g.op("MatMul", ones, terms), ints(g, [0, -1]))


def count_1d(g: GraphBuilder, size: int | Value, index: Value, updates: Value | None, dtype: torch.dtype, *,
             scatter_add: bool) -> Value:
    """count_into for one row: a [size] tensor from 1-D index and updates."""
    row = ints(g, [1, -1])
    out = count_into(g, size, g.op("Reshape", index, row), None if updates is None else g.op("Reshape", updates, row),
                     dtype, scatter_add=scatter_add)
    return g.op("Reshape", out, ints(g, [-1]))


# -- combinations, resize, nonzero_static, repeat_interleave -------------------------------------


@register("aten::combinations.default")
def aten_combinations(g, self, r=2, with_replacement=False):
    """combinations(Tensor self, int r=2, bool with_replacement=False) -> Tensor"""
    (n,) = static(self, "combinations")
    if r == 0:
        return fill(g, [0], 0, self.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = list(pick(range(n), r))
    if not index:
        return fill(g, [0, r], 0, self.dtype)
    return g.op("Gather", self, g.const(index, dtype=I64), axis=0)


def resize(g: GraphBuilder, self: Value, size: list[int]) -> Value:
    """The first prod(size) elements of self in order, shaped `size`; elements beyond self's own are
    uninitialized in eager, zeros here."""
    if not self.is_static or not all(isinstance(s, int) for s in size):
        raise NotImplementedError("resize is exported for static shapes only")
    have, want = math.prod(self.shape), math.prod(size)
    x = flat(g, self)
    if want < have:
        x = g.op("Gather", x, g.const(torch.arange(want)), axis=0) if want else fill(g, [0], 0, self.dtype)
    elif want > have:
        x = g.op("Concat", x, fill(g, [want - have], 0, self.dtype), axis=0)
    return to_shape(g, x, list(size))


@register("aten::resize.default")
def aten_resize(g, self, size, *, memory_format=None):
    """resize(Tensor self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor"""
    return resize(g, self, list(size))


@register("aten::resize_as.default")
def aten_resize_as(g, self, the_template, *, memory_format=None):
    """resize_as(Tensor self, Tensor the_template, *, MemoryFormat? memory_format=None) -> Tensor"""
    return resize(g, self, static(the_template, "resize_as"))


@register("aten::nonzero_static.default")
def aten_nonzero_static(g, self, *, size, fill_value=-1):
    """nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor"""
    if not isinstance(size, int):
        raise NotImplementedError("nonzero_static with a symbolic size")
    rank = self.rank
    if rank == 0 or size == 0:
        return fill(g, [size, rank], fill_value, I64)
    coords = g.op("Transpose", g.op("NonZero", cast(g, self, torch.bool)), perm=[1, 0])  # [hits, rank]
    padded = g.op("Concat", coords, fill(g, [size, rank], fill_value, I64), axis=0)
    return g.op("Gather", padded, g.const(torch.arange(size)), axis=0)


def repeat_indices(g: GraphBuilder, repeats: Value, *, has_range: bool) -> Value:
    """[0]*repeats[0] + [1]*repeats[1] + ...: the row-major true positions of `column < repeats[row]`
    over a [n, max(repeats)] grid, divided by the row length."""
    repeats = flat(g, cast(g, repeats, I64))
    longest = g.op("ReduceMax", g.op("Concat", repeats, ints(g, [0]), axis=0), keepdims=0)
    grid = g.op("Less", g.op("Reshape", arange_of(g, longest, has_range=has_range), ints(g, [1, -1])),
                g.op("Reshape", repeats, ints(g, [-1, 1])))
    hits = g.op("Reshape", g.op("NonZero", g.op("Reshape", grid, ints(g, [-1]))), ints(g, [-1]))
    return g.op("Div", hits, longest)


def repeat_along(g: GraphBuilder, self: Value, repeats: Value | int, dim: int | None, *, has_range: bool) -> Value:
    x, dim = (flat(g, self), 0) if dim is None else (self, norm_dim(dim, self.rank))
    n = x.shape[dim] if x.shape is not None else None
    if isinstance(repeats, int) and isinstance(n, int):  # static: constant source rows
        return g.op("Gather", x, g.const(torch.arange(n).repeat_interleave(repeats)), axis=dim)
    repeats = repeats if isinstance(repeats, Value) else g.const(repeats, dtype=I64)
    if repeats.shape in ((), (1,)):  # one count for every row
        rows = n if isinstance(n, int) else g.op("Gather", g.op("Shape", x), ints(g, [dim]), axis=0)
        repeats = g.op("Expand", reshape(g, cast(g, repeats, I64), [1]), ints(g, [rows]) if isinstance(rows, int) else rows)
        repeats.shape = (n,)
    return g.op("Gather", x, repeat_indices(g, repeats, has_range=has_range), axis=dim)


@register("aten::repeat_interleave.self_int")
def aten_repeat_interleave_self_int(g, self, repeats, dim=None, *, output_size=None):
    """repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor"""
    return repeat_along(g, self, repeats, dim, has_range=False)


@register("aten::repeat_interleave.self_Tensor")
def aten_repeat_interleave_self_tensor(g, self, repeats, dim=None, *, output_size=None):
    """repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor"""
    return repeat_along(g, self, repeats, dim, has_range=False)


@register("aten::repeat_interleave.Tensor")
def aten_repeat_interleave_tensor(g, repeats, *, output_size=None):
    """repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor"""
    return repeat_indices(g, repeats, has_range=False)


# -- windows: unfold_copy, im2col, col2im --------------------------------------------------------------------


@register("aten::unfold_copy.default")
def aten_unfold_copy(g, self, dimension, size, step):
    """unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor"""
    x = reshape(g, self, [1]) if self.rank == 0 else self
    rank = max(self.rank, 1)
    d = norm_dim(dimension, rank)
    n = static(x, "unfold")[d]
    windows = (n - size) // step + 1
    index = torch.arange(windows)[:, None] * step + torch.arange(size)[None, :]
    out = g.op("Gather", x, g.const(index), axis=d)  # [..., windows, size, ...]
    if self.rank == 0:
        return g.op("Reshape", out, ints(g, [size]))
    perm = list(range(d + 1)) + list(range(d + 2, rank + 1)) + [d + 1]
    return out if perm == list(range(rank + 1)) else g.op("Transpose", out, perm=perm)


def window_map(height: int, width: int, kernel_size, dilation, padding, stride) -> torch.Tensor:
    """im2col of one [height, width] plane as element numbers: [kh*kw, L], 1 + the flat position read,
    0 where the window reads padding."""
    numbers = torch.arange(1, height * width + 1, dtype=torch.float64).reshape(1, 1, height, width)
    cols = F.unfold(numbers, list(kernel_size), dilation=list(dilation), padding=list(padding), stride=list(stride))
    return cols[0].to(I64)


def with_zero_slot(g: GraphBuilder, planes: Value) -> Value:
    """[N, C, K] -> [N, C, 1 + K] with a zero in front, the value that element number 0 picks."""
    lead = g.op("Gather", g.op("Shape", planes), ints(g, [0, 1]), axis=0)
    zeros = g.op("ConstantOfShape", g.op("Concat", lead, ints(g, [1]), axis=0), value=torch.zeros(1, dtype=planes.dtype))
    return g.op("Concat", zeros, planes, axis=2)


@register("aten::im2col.default")
def aten_im2col(g, self, kernel_size, dilation, padding, stride):
    """im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor"""
    height, width = self.shape[-2:] if self.shape is not None else (None, None)
    if not (isinstance(height, int) and isinstance(width, int)):
        raise NotImplementedError("im2col needs static spatial sizes")
    numbers = window_map(height, width, kernel_size, dilation, padding, stride)
    blocks = numbers.shape[1]
    planes = g.op("Reshape", self, ints(g, [0, 0, height * width] if self.rank == 4 else [1, -1, height * width]))
    if bool((numbers == 0).any()):
        planes = with_zero_slot(g, planes)
    else:
        numbers = numbers - 1
    cols = g.op("Gather", planes, g.const(numbers), axis=2)  # [N, C, kh*kw, L]
    return g.op("Reshape", cols, ints(g, ([0] if self.rank == 4 else []) + [-1, blocks]))


@register("aten::col2im.default")
def aten_col2im(g, self, output_size, kernel_size, dilation, padding, stride):
    """col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor"""
    if not all(isinstance(s, int) for s in output_size):
        raise NotImplementedError("col2im needs a static output size")
    height, width = output_size
    numbers = window_map(height, width, kernel_size, dilation, padding, stride).reshape(-1)
    # For each output element, the column entries (1 + flat position in a plane's columns) that sum into it.
    sources = [[] for _ in range(height * width)]
    for j, number in enumerate(numbers.tolist()):
        if number:
            sources[number - 1].append(j + 1)
    width_most = max(1, max(len(s) for s in sources))
    table = torch.tensor([s + [0] * (width_most - len(s)) for s in sources], dtype=I64)
    per_plane = ints(g, [0, -1, numbers.numel()] if self.rank == 3 else [1, -1, numbers.numel()])
    planes = with_zero_slot(g, g.op("Reshape", self, per_plane))
    picked = g.op("Gather", planes, g.const(table), axis=2)  # [N, C, H*W, M]
    summed = g.op("MatMul", picked, g.const(torch.ones(width_most, 1, dtype=self.dtype)))
    return g.op("Reshape", summed, ints(g, ([0] if self.rank == 3 else []) + [-1, height, width]))


# -- counting: bincount, histc, histogram, histogramdd ----------------------------------------------------------


def bincount(g: GraphBuilder, self: Value, weights: Value | None, minlength: int, *, scatter_add: bool) -> Value:
    x = cast(g, flat(g, self), I64)
    if self.is_static and math.prod(self.shape) == 0:
        size = minlength
    else:
        top = g.op("ReduceMax", g.op("Concat", x, ints(g, [-1]), axis=0), keepdims=0)
        size = int_max(g, g.op("Add", top, g.const(1, dtype=I64)), g.const(minlength, dtype=I64))
    if weights is None:
        return count_1d(g, size, x, None, I64, scatter_add=scatter_add)
    dtype = torch.float32 if weights.dtype == torch.float32 else torch.float64  # eager sums other weights in double
    return count_1d(g, size, x, flat(g, weights), dtype, scatter_add=scatter_add)


@register("aten::bincount.default")
def aten_bincount(g, self, weights=None, minlength=0):
    """bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor"""
    return bincount(g, self, weights, minlength, scatter_add=False)


def in_range(g: GraphBuilder, x: Value, lo: Value, hi: Value) -> Value:
    """lo <= x <= hi, false for NaN."""
    outside = g.op("Or", g.op("Or", g.op("Less", x, lo), g.op("Greater", x, hi)), g.op("IsNaN", x))
    return g.op("Not", outside)


def linear_bin(g: GraphBuilder, x: Value, lo: Value, hi: Value, bins: int) -> Value:
    """The bin eager's linear interpolation picks, in x's dtype: int((x - lo) * bins / (hi - lo))."""
    scaled = g.op("Div", g.op("Mul", g.op("Sub", x, lo), g.const(float(bins), dtype=x.dtype)), g.op("Sub", hi, lo))
    return cast(g, scaled, I64)


def searched_bin(g: GraphBuilder, x: Value, edges: Value) -> Value:
    """upper_bound(edges, x) - 1: how many edges are <= x, less one (x a column [N, 1])."""
    at_most = g.op("Not", g.op("Greater", g.op("Reshape", edges, ints(g, [1, -1])), x))  # [N, E]
    count = g.op("MatMul", cast(g, at_most, torch.float64), g.const(torch.ones(edges.shape[0], 1, dtype=torch.float64)))
    return g.op("Sub", cast(g, count, I64), g.const(1, dtype=I64))


def local_search(g: GraphBuilder, x: Value, pos: Value, edges: Value, bins: int) -> Value:
    """Eager's check of the bins left and right of the interpolated `pos`: upper_bound over
    edges[pos-1 : pos+2] (clamped to the edges), less one."""
    first = int_clamp(g, g.op("Sub", pos, g.const(1, dtype=I64)), 0, bins)
    last = int_clamp(g, g.op("Add", pos, g.const(2, dtype=I64)), 0, bins + 1)  # exclusive
    count = None
    for offset in range(3):
        k = g.op("Add", first, g.const(offset, dtype=I64))
        inside = g.op("Less", k, last)
        edge = g.op("Gather", edges, int_clamp(g, k, 0, bins), axis=0)
        hit = cast(g, g.op("And", inside, g.op("Not", g.op("Greater", edge, x))), I64)
        count = hit if count is None else g.op("Add", count, hit)
    return g.op("Sub", g.op("Add", first, count), g.const(1, dtype=I64))


def linspace_edges(g: GraphBuilder, lo: Value, hi: Value, bins: int) -> Value:
    """torch.linspace(lo, hi, bins + 1) for graph values lo and hi, as eager's CPU kernel computes it:
    step = (hi - lo) / bins in the dtype, then lo + step * i for the first half and hi - step * (bins - i)
    for the rest, each a fused multiply-add (one rounding), which float64 reproduces for float32."""
    steps = bins + 1
    dtype = lo.dtype
    step = g.op("Div", g.op("Sub", hi, lo), g.const(float(bins), dtype=dtype))
    wide = torch.float64 if dtype == torch.float32 else dtype
    lo, hi, step = (cast(g, v, wide) for v in (lo, hi, step))
    i = torch.arange(steps)
    up = g.op("Add", lo, g.op("Mul", step, g.const(i.to(wide))))
    down = g.op("Sub", hi, g.op("Mul", step, g.const((bins - i).to(wide))))
    out = cast(g, where(g, g.const(i < steps // 2), up, down), dtype)
    out.shape = (steps,)
    return out


def column(g: GraphBuilder, x2: Value, d: int) -> Value:
    out = g.op("Gather", x2, g.const(d, dtype=I64), axis=1)
    out.shape = (x2.shape[0],)
    return out


def outer_edges(g: GraphBuilder, col: Value, expand: float) -> tuple[Value, Value]:
    """The data's min and max, widened by `expand` on each side when equal (0.5 for histogram, 1 for histc)."""
    dtype = col.dtype
    lo = g.op("ReduceMin", col, keepdims=0)
    hi = g.op("ReduceMax", col, keepdims=0)
    same = g.equal(lo, hi)
    lo = where(g, same, g.op("Sub", lo, g.const(expand, dtype=dtype)), lo)
    hi = where(g, same, g.op("Add", hi, g.const(expand, dtype=dtype)), hi)
    return lo, hi


def const_edges(g: GraphBuilder, bins: int, bounds: tuple[float, float], dtype: torch.dtype) -> Value:
    """Edges over a range known at export time: eager's own linspace (an empty range widened by 0.5)."""
    lo, hi = bounds
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return g.const(torch.linspace(lo, hi, bins + 1, dtype=dtype))


def bin_count(spec: int | Value) -> int:
    return spec if isinstance(spec, int) else static(spec, "histogram bins")[0] - 1


def dim_bins(g: GraphBuilder, col: Value, spec: int | Value, bound: tuple[float, float] | None):
    """One dim's edges, its outer edges, and each value's bin (garbage where out of range)."""
    if isinstance(spec, Value):  # given edges: binary search
        edges = cast(g, spec, col.dtype)
        bins = bin_count(spec)
        lo = g.op("Gather", edges, g.const(0, dtype=I64), axis=0)
        hi = g.op("Gather", edges, g.const(bins, dtype=I64), axis=0)
        pos = g.op("Reshape", searched_bin(g, g.op("Reshape", col, ints(g, [-1, 1])), edges), ints(g, [-1]))
        return edges, lo, hi, pos
    bins = spec
    if bound is not None or col.shape[0] == 0:
        edges = const_edges(g, bins, bound or (0.0, 1.0), col.dtype)  # eager's range for no data
        lo = g.op("Gather", edges, g.const(0, dtype=I64), axis=0)
        hi = g.op("Gather", edges, g.const(bins, dtype=I64), axis=0)
    else:
        lo, hi = outer_edges(g, col, 0.5)
        edges = linspace_edges(g, lo, hi, bins)
    guess = where(g, in_range(g, col, lo, hi), linear_bin(g, col, lo, hi, bins), g.const(0, dtype=I64))
    return edges, lo, hi, local_search(g, col, int_clamp(g, guess, 0, bins), edges, bins)


def histogramdd(g: GraphBuilder, self: Value, bins: list[int | Value], bounds: list | None, weight: Value | None,
                density: bool, *, scatter_add: bool) -> tuple[Value, list[Value]]:
    """The D-dimensional histogram of self's rows ([..., D]): int bins by linear interpolation with eager's
    local search over linspace edges, tensor bins by binary search; the last bin holds its right edge."""
    shape = static(self, "histogramdd")
    dims = shape[-1]
    x2 = to_shape(g, self, [math.prod(shape[:-1]), dims])
    counts = [bin_count(b) for b in bins]
    valid, index, edges = None, None, []
    for d in range(dims):
        col = column(g, x2, d)
        bound = None if bounds is None else (float(bounds[2 * d]), float(bounds[2 * d + 1]))
        e, lo, hi, pos = dim_bins(g, col, bins[d], bound)
        ok = in_range(g, col, lo, hi)
        pos = int_clamp(g, pos, 0, counts[d] - 1)
        stride = math.prod(counts[d + 1:])
        term = g.op("Mul", pos, g.const(stride, dtype=I64)) if stride != 1 else pos
        index = term if index is None else g.op("Add", index, term)
        valid = ok if valid is None else g.op("And", valid, ok)
        edges.append(e)
    zero = g.const(0, dtype=self.dtype)
    amounts = cast(g, valid, self.dtype) if weight is None else where(g, valid, cast(g, flat(g, weight), self.dtype), zero)
    index = where(g, valid, index, g.const(0, dtype=I64))
    hist = to_shape(g, count_1d(g, math.prod(counts), index, amounts, self.dtype, scatter_add=scatter_add), counts)
    if density:
        hist = g.op("Div", hist, g.op("ReduceSum", hist, keepdims=0))
        for d, (e, nb) in enumerate(zip(edges, counts)):
            widths = g.op("Sub", g.op("Gather", e, g.const(torch.arange(1, nb + 1)), axis=0),
                          g.op("Gather", e, g.const(torch.arange(nb)), axis=0))
            hist = g.op("Div", hist, to_shape(g, widths, [nb if k == d else 1 for k in range(dims)]))
    return hist, edges


def histc(g: GraphBuilder, self: Value, bins: int, min, max, *, scatter_add: bool) -> Value:
    """histc: bins by linear interpolation alone (no local search), over [min, max] or the data's range."""
    x = flat(g, self)
    lo, hi = float(min), float(max)
    if lo == hi and x.shape[0] != 0:
        lo, hi = outer_edges(g, x, 1.0)
    else:
        lo, hi = (lo - 1, hi + 1) if lo == hi else (lo, hi)
        lo, hi = g.const(lo, dtype=self.dtype), g.const(hi, dtype=self.dtype)
    ok = in_range(g, x, lo, hi)
    pos = int_clamp(g, where(g, ok, linear_bin(g, x, lo, hi, bins), g.const(0, dtype=I64)), 0, bins - 1)
    return count_1d(g, bins, pos, cast(g, ok, self.dtype), self.dtype, scatter_add=scatter_add)


@register("aten::histc.default")
def aten_histc(g, self, bins=100, min=0, max=0):
    """histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor"""
    return histc(g, self, bins, min, max, scatter_add=False)


def histogram(g: GraphBuilder, self: Value, bins: int | Value, bounds, weight, density: bool, *, scatter_add: bool):
    x = to_shape(g, self, [math.prod(static(self, "histogram")), 1])
    hist, (edges,) = histogramdd(g, x, [bins], bounds, weight, density, scatter_add=scatter_add)
    return hist, edges


@register("aten::histogram.bin_ct")
def aten_histogram_bin_ct(g, self, bins=100, *, range=None, weight=None, density=False):
    """histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)"""
    return histogram(g, self, bins, range, weight, density, scatter_add=False)


@register("aten::histogram.bins_tensor")
def aten_histogram_bins_tensor(g, self, bins, *, weight=None, density=False):
    """histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)"""
    return histogram(g, self, bins, None, weight, density, scatter_add=False)


@register("aten::histogramdd.default")
def aten_histogramdd(g, self, bins, range=None, weight=None, density=False):
    """histogramdd(Tensor self, int[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)"""
    return histogramdd(g, self, list(bins), range, weight, density, scatter_add=False)


@register("aten::histogramdd.int_bins")
def aten_histogramdd_int_bins(g, self, bins, range=None, weight=None, density=False):
    """histogramdd.int_bins(Tensor self, int bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)"""
    return histogramdd(g, self, [bins] * static(self, "histogramdd")[-1], range, weight, density, scatter_add=False)


@register("aten::histogramdd.TensorList_bins")
def aten_histogramdd_tensorlist_bins(g, self, bins, range=None, weight=None, density=False):
    """histogramdd.TensorList_bins(Tensor self, Tensor[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)"""
    return histogramdd(g, self, list(bins), range, weight, density, scatter_add=False)


# -- scatter-like writes: put, masked_scatter, max-pool backward ----------------------------------------------


def put(g: GraphBuilder, self: Value, index: Value, source: Value, accumulate: bool, *, scatter_add: bool) -> Value:
    """self.flatten()[index] = source (or += source), indices counted from the end where negative.
    Symbolic sizes: self's element count is computed in the graph."""
    if self.is_static and index.is_static:
        shape, numel = list(self.shape), math.prod(self.shape)
        x = to_shape(g, self, [numel])
        if math.prod(index.shape) == 0:
            return self
    else:
        if self.rank is None:
            raise NotImplementedError("put needs self's rank")
        shape, numel = None, sym_prod(g, [dim_size(g, self, d) for d in range(self.rank)])
        x = flat(g, self)
    index = wrap_negative(g, flat(g, index), numel)
    source = flat(g, cast(g, source, self.dtype))
    if accumulate:
        total = accumulator(self.dtype)
        added = count_1d(g, numel, index, source, total, scatter_add=scatter_add)
        out = cast(g, g.op("Add", cast(g, x, total), added), self.dtype)
    else:
        out = g.scatter_elements(x, index, source, 0)
    if shape is not None:
        return to_shape(g, out, shape)
    out = g.op("Reshape", out, g.op("Shape", self))
    out.shape = self.shape
    return out


@register("aten::put.default")
def aten_put(g, self, index, source, accumulate=False):
    """put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor"""
    return put(g, self, index, source, accumulate, scatter_add=False)


def masked_scatter(g: GraphBuilder, self: Value, mask: Value, source: Value, *, has_range: bool) -> Value:
    """self with its mask-true positions (row-major, after broadcasting) taking source's leading elements."""
    mask = cast(g, mask, torch.bool)
    x = where(g, mask, self, self)  # self broadcast to the common shape
    shape = g.op("Shape", x)
    hits = g.op("Reshape", g.op("NonZero", g.op("Reshape", g.op("Expand", mask, shape), ints(g, [-1]))), ints(g, [-1]))
    count = g.op("Shape", hits)
    taken = g.op("Gather", flat(g, cast(g, source, self.dtype)), arange_of(g, count, has_range=has_range), axis=0)
    return g.op("Reshape", g.scatter_elements(g.op("Reshape", x, ints(g, [-1])), hits, taken, 0), shape)


@register("aten::masked_scatter.default")
def aten_masked_scatter(g, self, mask, source):
    """masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor"""
    return masked_scatter(g, self, mask, source, has_range=False)


def max_pool_backward(g: GraphBuilder, grad_output: Value, self: Value, indices: Value, spatial: int, *,
                      scatter_add: bool) -> Value:
    """The input gradient of max pooling: each output gradient added at its argmax (`indices`, flat in
    the input plane), per plane."""
    shape = static(self, "max pool backward")
    plane = math.prod(shape[-spatial:])
    windows = math.prod(static(grad_output, "max pool backward")[-spatial:])
    grads = g.op("Reshape", grad_output, ints(g, [-1, windows]))
    where_to = g.op("Reshape", cast(g, indices, I64), ints(g, [-1, windows]))
    return to_shape(g, count_into(g, plane, where_to, grads, self.dtype, scatter_add=scatter_add), shape)


@register("aten::max_pool2d_with_indices_backward.default")
def aten_max_pool2d_with_indices_backward(g, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                                          indices):
    """max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor"""
    return max_pool_backward(g, grad_output, self, indices, 2, scatter_add=False)


@register("aten::max_pool3d_with_indices_backward.default")
def aten_max_pool3d_with_indices_backward(g, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                                          indices):
    """max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, int[3] padding, int[3] dilation, bool ceil_mode, Tensor indices) -> Tensor"""
    return max_pool_backward(g, grad_output, self, indices, 3, scatter_add=False)


# -- masked indexing (the clamped reads and accumulating writes inductor's decompositions emit) ----------------


def clamped_indices(g: GraphBuilder, shape: list[int], indices: list[Value | None]) -> list[Value | None]:
    """Each dim's index tensor clamped to [-size, size) and counted from the end where negative, as eager's
    masked index ops clamp them (indices the mask hides may be anything)."""
    out = []
    for d, idx in enumerate(indices):
        if idx is not None:
            idx = wrap_negative(g, int_clamp(g, cast(g, idx, I64), -shape[d], shape[d] - 1), shape[d])
        out.append(idx)
    return out


def leading_rows(g: GraphBuilder, self: Value, indices: list[Value | None]) -> tuple[Value, Value, list[int], list[int]]:
    """Index tensors on self's leading dims, read as one row number each: self as [rows, rest...], the row
    numbers (broadcast shape B), B, and rest. Skipped dims need GatherND/ScatterND (opset 11)."""
    shape = static(self, "masked indexing")
    if any(i is None for i in indices):
        raise NotImplementedError("masked indexing that skips a dim needs opset 11 (GatherND)")
    k = len(indices)
    batch = list(torch.broadcast_shapes(*(tuple(static(i, "masked indexing")) for i in indices)))
    row = None
    for d, idx in enumerate(indices):
        stride = math.prod(shape[d + 1:k])
        term = g.op("Mul", idx, g.const(stride, dtype=I64)) if stride != 1 else idx
        row = term if row is None else g.op("Add", row, term)
    rows = to_shape(g, self, [math.prod(shape[:k])] + shape[k:])
    return rows, g.op("Expand", row, ints(g, batch)) if batch else row, batch, shape[k:]


def indexed_shape(shape: list[int], indices: list[Value | None]) -> list[int]:
    """The shape of self[indices] (eager's advanced-indexing layout), found on meta tensors."""
    x = torch.empty(shape, device="meta")
    key = tuple(slice(None) if i is None else torch.empty(static(i, "indexing"), dtype=I64, device="meta")
                for i in indices)
    return list(x[key].shape)


def masked_index(g: GraphBuilder, self: Value, mask: Value, indices: list, fill_value, *,
                 gather_nd: Callable[[GraphBuilder, Value, list], Value] | None) -> Value:
    """self[indices] where mask, else fill_value; the indices clamped per dim. Index tensors
    on the leading dims read one row each (Gather); others need `gather_nd` (opset 11's advanced indexing)."""
    shape = static(self, "_unsafe_masked_index")
    indices = clamped_indices(g, shape, indices)
    if math.prod(shape) == 0:
        return fill(g, indexed_shape(shape, indices), fill_value, self.dtype)
    if gather_nd is not None and None in indices:
        read = gather_nd(g, self, indices)
    else:
        rows, row, _, _ = leading_rows(g, self, indices)
        read = g.op("Gather", rows, row, axis=0)
    return where(g, mask, read, g.const(fill_value, dtype=self.dtype))


@register("aten::_unsafe_masked_index.default")
def aten__unsafe_masked_index(g, self, mask, indices, fill):
    """_unsafe_masked_index(Tensor self, Tensor mask, Tensor?[] indices, Scalar fill) -> Tensor"""
    return masked_index(g, self, mask, list(indices), fill, gather_nd=None)


def masked_index_put_accumulate(g: GraphBuilder, self: Value, mask: Value, indices: list, values: Value, *,
                                scatter_add: bool) -> Value:
    """self[indices] += values where mask; the indices clamped to [-size, size) per dim."""
    shape = static(self, "_unsafe_masked_index_put_accumulate")
    if math.prod(shape) == 0:
        return self
    indices = clamped_indices(g, shape, list(indices))
    _, row, batch, rest = leading_rows(g, self, indices)
    width = math.prod(rest)
    # every written element's flat position: its row times the row width, plus its place in the row
    row = to_shape(g, row, batch + [1] * len(rest)) if batch else row
    place = g.const(torch.arange(width).reshape(rest)) if rest else g.const(0, dtype=I64)
    positions = g.op("Add", g.op("Mul", row, g.const(width, dtype=I64)), place)
    total = accumulator(self.dtype)
    values = g.op("Where", mask, cast(g, cast(g, values, self.dtype), total), g.const(0, dtype=total))
    values = g.op("Expand", values, ints(g, batch + rest))
    added = count_1d(g, math.prod(shape), flat(g, positions), flat(g, values), total, scatter_add=scatter_add)
    return cast(g, g.op("Add", cast(g, self, total), to_shape(g, added, shape)), self.dtype)


@register("aten::_unsafe_masked_index_put_accumulate.default")
def aten__unsafe_masked_index_put_accumulate(g, self, mask, indices, values):
    """_unsafe_masked_index_put_accumulate(Tensor self, Tensor mask, Tensor?[] indices, Tensor values) -> Tensor"""
    return masked_index_put_accumulate(g, self, mask, list(indices), values, scatter_add=False)


# -- segments: segment_reduce, unique_consecutive, embedding_bag ----------------------------------------------


def between(g: GraphBuilder, position: Value, starts: Value, ends: Value) -> Value:
    """starts <= position < ends, broadcast."""
    return g.op("And", g.op("Not", g.op("Less", position, starts)), g.op("Less", position, ends))


def segment_reduce(g: GraphBuilder, data: Value, reduce: str, lengths: Value | None, offsets: Value | None, axis: int,
                   initial, *, has_cumsum: bool) -> Value:
    """Reduce runs of data along axis (given by lengths or offsets, per leading index): a [.., S, N] mask of
    which element falls in which segment selects the elements for one Reduce* over N. Empty segments give
    `initial`, or the reduction's identity (NaN for mean); max and min propagate NaN as eager does."""
    shape = static(data, "segment_reduce")
    axis = norm_dim(axis, len(shape))
    outer, n, inner = shape[:axis], shape[axis], shape[axis + 1:]
    if lengths is not None:
        lengths = cast(g, lengths, I64)
        segments = static(lengths, "segment_reduce lengths")[-1]
        starts = cumsum_last(g, lengths, exclusive=True, has_cumsum=has_cumsum)
        ends = g.op("Add", starts, lengths)
    else:
        offsets = cast(g, offsets, I64)
        segments = static(offsets, "segment_reduce offsets")[-1] - 1
        last = offsets.rank - 1
        starts = g.op("Gather", offsets, g.const(torch.arange(segments)), axis=last)
        ends = g.op("Gather", offsets, g.const(torch.arange(1, segments + 1)), axis=last)
        lengths = g.op("Sub", ends, starts)
    bounds = outer + [segments, 1]
    member = between(g, g.const(torch.arange(n)), to_shape(g, starts, bounds), to_shape(g, ends, bounds))
    member = to_shape(g, member, outer + [segments, n] + [1] * len(inner))
    x = to_shape(g, data, outer + [1, n] + inner)
    dtype = data.dtype
    along = [axis + 1]

    def masked(op_type: str, identity: float, values: Value = x, keep: Value = member) -> Value:
        return g.reduce(op_type, g.op("Where", keep, values, g.const(identity, dtype=dtype)), along, False)

    if reduce in ("sum", "mean"):
        out = masked("ReduceSum", 0.0)
        if initial is not None:
            out = g.op("Add", out, g.const(initial, dtype=dtype))
        if reduce == "mean":
            count = cast(g, to_shape(g, lengths, outer + [segments] + [1] * len(inner)), dtype)
            empty = float("nan") if initial is None else initial
            out = g.op("Where", g.op("Greater", count, g.const(0, dtype=dtype)), g.op("Div", out, count),
                       g.const(empty, dtype=dtype))
        return out
    if reduce == "prod":
        out = masked("ReduceProd", 1.0)
        return out if initial is None else g.op("Mul", out, g.const(initial, dtype=dtype))
    if reduce not in ("max", "min"):
        raise NotImplementedError(f"segment_reduce reduce={reduce!r}")
    if initial is not None and math.isnan(initial):
        return fill(g, outer + [segments] + inner, float("nan"), dtype)
    nan = g.op("IsNaN", x)
    op_type, identity = ("ReduceMax", -math.inf) if reduce == "max" else ("ReduceMin", math.inf)
    out = masked(op_type, identity, keep=g.op("And", member, g.op("Not", nan)))
    if initial is not None:
        out = g.op("Max" if reduce == "max" else "Min", out, g.const(initial, dtype=dtype))
    any_nan = g.op("Greater", masked("ReduceMax", 0.0, values=cast(g, nan, dtype), keep=member), g.const(0, dtype=dtype))
    return g.op("Where", any_nan, g.const(float("nan"), dtype=dtype), out)


@register("aten::segment_reduce.default")
def aten_segment_reduce(g, data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor"""
    if lengths is None and offsets is None:
        raise NotImplementedError("segment_reduce by indices (eager does not support it either)")
    return segment_reduce(g, data, reduce, lengths, offsets, axis, initial, has_cumsum=False)


def unique_consecutive(g: GraphBuilder, self: Value, return_inverse: bool, return_counts: bool, dim: int | None, *,
                       has_cumsum: bool) -> tuple[Value, Value, Value]:
    """Runs of equal elements (dim None) or equal slices along dim: a run starts where an element differs
    from the one before (NaN differs from everything); counts are the distances between run starts and
    run ends, the inverse a cumulative count of run starts. With dim, eager returns inverse and counts
    whatever the flags say."""
    shape = static(self, "unique_consecutive")
    x, d = (flat(g, self), 0) if dim is None else (self, norm_dim(dim, len(shape)))
    n = x.shape[d]
    if n == 0:
        empty = fill(g, [0], 0, I64)
        inverse = fill(g, shape, 0, I64) if dim is None and return_inverse else empty
        return (fill(g, [0], 0, self.dtype) if dim is None else self), inverse, empty
    later = g.op("Gather", x, g.const(torch.arange(1, n)), axis=d)
    earlier = g.op("Gather", x, g.const(torch.arange(n - 1)), axis=d)
    differ = g.op("Not", g.equal(later, earlier))
    if dim is not None:  # a slice differs if any of its elements does
        width = math.prod(shape) // n
        if width == 0:
            differ = fill(g, [n - 1], False, torch.bool)
        else:
            perm = [d] + [k for k in range(len(shape)) if k != d]
            rows = g.op("Reshape", g.op("Transpose", differ, perm=perm), ints(g, [n - 1, width]))
            hits = g.op("MatMul", cast(g, rows, torch.float32), g.const(torch.ones(width, 1)))
            differ = g.op("Reshape", g.op("Greater", hits, g.const(0.0)), ints(g, [n - 1]))
    true = g.const([True])
    starts = g.op("Concat", true, differ, axis=0)
    values = g.op("Compress", x, starts, axis=d)
    first = g.op("Reshape", g.op("NonZero", starts), ints(g, [-1]))
    last = g.op("Reshape", g.op("NonZero", g.op("Concat", differ, true, axis=0)), ints(g, [-1]))
    counts = g.op("Add", g.op("Sub", last, first), g.const(1, dtype=I64))
    if dim is None and not return_counts:
        counts = fill(g, [0], 0, I64)
    if dim is None and not return_inverse:
        inverse = fill(g, [0], 0, I64)
    else:
        starts.shape = (n,)
        run = cumsum_last(g, cast(g, starts, I64), exclusive=False, has_cumsum=has_cumsum)
        inverse = g.op("Sub", run, g.const(1, dtype=I64))
        inverse = to_shape(g, inverse, shape) if dim is None else inverse
    return values, inverse, counts


@register("aten::unique_consecutive.default")
def aten_unique_consecutive(g, self, return_inverse=False, return_counts=False, dim=None):
    """unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)"""
    return unique_consecutive(g, self, return_inverse, return_counts, dim, has_cumsum=False)


def embedding_bag(g: GraphBuilder, weight: Value, indices: Value, offsets: Value, mode: int,
                  per_sample_weights: Value | None, include_last_offset: bool, padding_idx: int | None) -> tuple[Value, Value, Value, Value]:
    """Bags of embedding rows reduced by sum (weighted by per_sample_weights), mean or max; padding rows
    left out and empty bags zero. Also eager's bookkeeping outputs: each index's bag (empty on the
    unweighted float sum path, as eager skips it), the bag sizes and the rows the max picked; where eager
    leaves these uninitialized (sum, mean), zeros or the bag sizes as eager fills them. The counts of
    indices and offsets may be symbolic: a [bags, n] membership mask built from the offsets selects the rows."""
    if indices.rank != 1 or offsets.rank != 1:
        raise NotImplementedError("embedding_bag with 2-D indices (F.embedding_bag flattens them)")
    n, marks = dim_size(g, indices, 0), dim_size(g, offsets, 0)
    index_dtype = indices.dtype
    idx = cast(g, indices, I64)
    off = cast(g, offsets, I64)
    if include_last_offset:
        starts, ends = g.slice(off, [0], [-1], [0]), g.slice(off, [1], [INT64_MAX], [0])
    else:
        starts = off
        ends = g.op("Concat", g.slice(off, [1], [INT64_MAX], [0]), g.int_list([n]), axis=0)
    position = positions_along(g, indices, 0)  # [n]
    member = between(g, position, g.unsqueeze(starts, [1]), g.unsqueeze(ends, [1]))  # [bags, n]
    if padding_idx is not None:
        member = g.op("And", member, g.op("Not", g.op("Equal", idx, g.const(padding_idx, dtype=I64))))
    count = g.reduce("ReduceSum", cast(g, member, I64), [1], False)  # [bags]
    rows = g.unsqueeze(g.op("Gather", weight, idx, axis=0), [0])  # [1, n, width]
    inside = g.unsqueeze(member, [2])  # [bags, n, 1]
    dtype = weight.dtype
    zero = g.const(0, dtype=dtype)
    if mode == 2:
        picked = g.op("Where", inside, rows, g.const(-math.inf, dtype=dtype))
        nonempty = g.unsqueeze(g.op("Greater", count, g.const(0, dtype=I64)), [1])
        out = g.op("Where", nonempty, g.reduce("ReduceMax", picked, [1], False), zero)
        best = g.op("Gather", idx, g.op("ArgMax", picked, axis=1, keepdims=0), axis=0)
        max_indices = g.op("Where", nonempty, best, g.const(0, dtype=I64))
    else:
        if per_sample_weights is not None:
            rows = g.op("Mul", rows, g.unsqueeze(cast(g, per_sample_weights, dtype), [0, 2]))
        terms = g.op("Where", inside, rows, zero)  # Where, not a product: a NaN row stays in its bag
        out = g.reduce("ReduceSum", terms, [1], False)  # [bags, width]
        if mode == 1:
            nonempty = g.op("Greater", count, g.const(0, dtype=I64))
            divisor = cast(g, g.op("Where", nonempty, count, g.const(1, dtype=I64)), dtype)
            out = g.op("Div", out, g.unsqueeze(divisor, [1]))
    fast_sum = mode == 0 and padding_idx is None and dtype in (torch.float32, torch.float16, torch.bfloat16)
    if fast_sum:
        offset2bag = fill(g, [0], 0, index_dtype)
    else:  # the number of offsets at or before each position, less one
        reached = g.op("Not", g.op("Greater", off, g.unsqueeze(position, [1])))  # [n, marks]
        offset2bag = g.op("Sub", g.reduce("ReduceSum", cast(g, reached, I64), [1], False), g.const(1, dtype=I64))
    if mode == 0:
        bag_size = fill(g, [marks], 0, I64)
        max_indices = bag_size
    else:
        bag_size = count
        max_indices = max_indices if mode == 2 else count
    return out, cast(g, offset2bag, index_dtype), cast(g, bag_size, index_dtype), cast(g, max_indices, index_dtype)


def bag_padding(padding_idx: int | None, weight: Value, *, negative_is_none: bool) -> int | None:
    """embedding_bag.padding_idx counts a negative padding_idx from the end; _embedding_bag reads it as
    none. (Only a negative one needs the table's row count, which torch.export then keeps static.)"""
    if padding_idx is None or (negative_is_none and padding_idx < 0):
        return None
    return padding_idx + static(weight, "embedding_bag with a negative padding_idx")[0] if padding_idx < 0 else padding_idx


@register("aten::embedding_bag.padding_idx")
def aten_embedding_bag_padding_idx(g, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                                   include_last_offset, padding_idx):
    """embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq, int mode, bool sparse, Tensor? per_sample_weights, bool include_last_offset, int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)"""
    padding = bag_padding(padding_idx, weight, negative_is_none=False)
    return embedding_bag(g, weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding)


@register("aten::embedding_bag.default")
def aten_embedding_bag(g, weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                       per_sample_weights=None, include_last_offset=False):
    """embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False) -> (Tensor, Tensor, Tensor, Tensor)"""
    return embedding_bag(g, weight, indices, offsets, mode, per_sample_weights, include_last_offset, None)


@register("aten::_embedding_bag.default", "aten::_embedding_bag_forward_only.default")
def aten__embedding_bag(g, weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                        per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)"""
    padding = bag_padding(padding_idx, weight, negative_is_none=True)
    return embedding_bag(g, weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding)


def row_norms(g: GraphBuilder, x: Value, p: float) -> Value:
    """The p-norm of each row of a static [R, D] x, as Tensor.norm(p) reads p (inf, -inf and 0 included)."""
    rows, width = static(x, "row norms")
    size = g.op("Abs", x)
    if math.isinf(p):
        return g.reduce("ReduceMax" if p > 0 else "ReduceMin", size, [1], False)
    ones = g.const(torch.ones(width, 1, dtype=x.dtype))
    if p == 0:
        return to_shape(g, g.op("MatMul", cast(g, g.op("Greater", size, g.const(0, dtype=x.dtype)), x.dtype), ones), [rows])
    powered = size if p == 1 else g.op("Mul", size, size) if p == 2 else g.op("Pow", size, g.const(p, dtype=x.dtype))
    total = to_shape(g, g.op("MatMul", powered, ones), [rows])
    return total if p == 1 else g.op("Sqrt", total) if p == 2 else g.op("Pow", total, g.const(1 / p, dtype=x.dtype))


def embedding_renorm(g: GraphBuilder, self: Value, indices: Value, max_norm: float, norm_type: float, *,
                     scatter_add: bool) -> Value:
    """The rows `indices` names, each scaled by max_norm / (norm + 1e-7) where its norm exceeds max_norm
    (the scale in double, as eager computes it)."""
    rows, _ = static(self, "embedding_renorm")
    named = g.op("Greater", count_1d(g, rows, flat(g, cast(g, indices, I64)), None, I64, scatter_add=scatter_add),
                 g.const(0, dtype=I64))
    norm = cast(g, row_norms(g, self, norm_type), torch.float64)
    limit = g.const(max_norm, dtype=torch.float64)
    scale = g.op("Div", limit, g.op("Add", norm, g.const(1e-7, dtype=torch.float64)))
    scale = g.op("Where", g.op("And", named, g.op("Greater", norm, limit)), scale, g.const(1.0, dtype=torch.float64))
    return g.op("Mul", self, to_shape(g, cast(g, scale, self.dtype), [rows, 1]))


@register("aten::embedding_renorm.default")
def aten_embedding_renorm(g, self, indices, max_norm, norm_type):
    """embedding_renorm(Tensor self, Tensor indices, float max_norm, float norm_type) -> Tensor"""
    return embedding_renorm(g, self, indices, max_norm, norm_type, scatter_add=False)
