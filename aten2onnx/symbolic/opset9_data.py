"""Opset-9 base, data movement: the index arithmetic the data families share (arange_of, int_mod, where,
...), adding values into bins, combinations, resize, static nonzero, repeat_interleave, im2col/col2im and
unfold windows, put and masked writes. Counting is in opset9_histogram, segments in opset9_segments.

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
from aten2onnx.symbolic._helpers import cast, dim_size, fill, norm_dim, reshape, sym_prod

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


def column(g: GraphBuilder, x2: Value, d: int) -> Value:
    out = g.op("Gather", x2, g.const(d, dtype=I64), axis=1)
    out.shape = (x2.shape[0],)
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
