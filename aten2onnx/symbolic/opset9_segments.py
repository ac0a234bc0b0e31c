"""Opset-9 base, segments: segment_reduce, unique_consecutive and embedding bags (embedding_bag,
embedding_renorm), from masks of the positions between segment starts and ends and cumulative sums."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import INT64_MAX, cast, dim_size, fill, norm_dim
from aten2onnx.symbolic.opset9_index import positions_along
from aten2onnx.symbolic.opset9_data import I64, count_1d, cumsum_last, flat, ints, static, to_shape

register = functools.partial(registry.register, opset=9)


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
