"""Opset 11: Round arrives; Range (so dynamic arange and causal masks), CumSum, GatherElements, GatherND and
ScatterND arrive."""

from __future__ import annotations

import dataclasses
import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import opset9_math as math9
from aten2onnx.symbolic._helpers import cast, norm_dim, unsqueeze_static
from aten2onnx.symbolic.opset9_index import broadcast_indices, eager_index_order, index_tensors
from aten2onnx.symbolic.opset9_attention import attention, no_attention_dropout
from aten2onnx.symbolic.opset9_creation import arange
from aten2onnx.symbolic.opset9_reduce import cumsum_accumulator, sum_dtype

register = functools.partial(registry.register, opset=11)


@register("aten::gather.default")
def aten_gather(g, self, dim, index, *, sparse_grad=False):
    """gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor"""
    return g.op("GatherElements", self, index, axis=norm_dim(dim, self.rank))


@register("aten::cumsum.default")
def aten_cumsum(g, self, dim, *, dtype=None):
    """cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"""
    out_dtype = sum_dtype(self, dtype)
    x = cast(g, cast(g, self, out_dtype), cumsum_accumulator(out_dtype))
    return cast(g, g.op("CumSum", x, g.const(norm_dim(dim, self.rank), dtype=torch.int64)), out_dtype)


@register("aten::arange.default")
def aten_arange(g, end, *, dtype=None, layout=None, device=None, pin_memory=None):
    """arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return arange(g, 0, end, 1, dtype, has_range=True)


@register("aten::arange.start")
def aten_arange_start(g, start, end, *, dtype=None, layout=None, device=None, pin_memory=None):
    """arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return arange(g, start, end, 1, dtype, has_range=True)


@register("aten::arange.start_step")
def aten_arange_start_step(g, start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None):
    """arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return arange(g, start, end, step, dtype, has_range=True)


@dataclasses.dataclass
class IndexLayout:
    """How GatherND/ScatterND see `self[indices]`: self with the indexed dims first (`x`, by
    `perm`), and the broadcast index tensors stacked on a last axis (`stacked`). Their result is
    laid out [index dims..., other dims...]; `eager_order` is the transpose to eager's layout, where
    adjacent indexed dims stay at the first one's place (None when the layouts agree)."""

    x: Value
    perm: list[int]
    stacked: Value
    positions: list[int]
    rest: list[int]
    index_shape: tuple | None

    def eager_order(self) -> list[int] | None:
        return eager_index_order(self.positions, len(self.rest), None if self.index_shape is None else len(self.index_shape))


def index_layout(g: GraphBuilder, self: Value, indices: list[Value | None]) -> IndexLayout:
    expanded = index_tensors(g, indices)
    positions = [i for i, idx in enumerate(expanded) if idx is not None]
    rest = [i for i in range(self.rank) if i not in positions]
    perm = positions + rest
    x = self if perm == list(range(self.rank)) else g.op("Transpose", self, perm=perm)
    idx = broadcast_indices(g, [cast(g, expanded[i], torch.int64) for i in positions])
    stacked = g.op("Concat", *(unsqueeze_static(g, i, i.rank) for i in idx), axis=-1)
    return IndexLayout(x, perm, stacked, positions, rest, idx[0].shape)


def advanced_index(g: GraphBuilder, self: Value, indices: list[Value | None]) -> Value:
    """x[i0, i1, ...] with integer or boolean index tensors (None for a full dim), by GatherND."""
    expanded = index_tensors(g, indices)
    positions = [i for i, idx in enumerate(expanded) if idx is not None]
    if len(positions) == 1:
        return g.op("Gather", self, expanded[positions[0]], axis=positions[0])
    layout = index_layout(g, self, expanded)
    out = g.op("GatherND", layout.x, layout.stacked)
    order = layout.eager_order()
    return out if order is None else g.op("Transpose", out, perm=order)


@register("aten::index.Tensor")
def aten_index(g, self, indices):
    """index.Tensor(Tensor self, Tensor?[] indices) -> Tensor"""
    return advanced_index(g, self, list(indices))


@register("aten::scaled_dot_product_attention.default")
def aten_scaled_dot_product_attention(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *,
                                      scale=None, enable_gqa=False):
    """scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"""
    no_attention_dropout(dropout_p)
    return attention(g, query, key, value, attn_mask, is_causal, scale, enable_gqa, has_range=True)


@register("aten::round.default")
def aten_round(g, self):
    """round(Tensor self) -> Tensor"""
    return math9.round_decimals(g, self, 0, has_round=True)


@register("aten::round.decimals")
def aten_round_decimals(g, self, *, decimals):
    """round.decimals(Tensor self, *, int decimals) -> Tensor"""
    return math9.round_decimals(g, self, decimals, has_round=True)


@register("aten::linalg_det.default")
def aten_linalg_det(g, A):
    """linalg_det(Tensor A) -> Tensor"""
    return g.op("Det", A)


@register("aten::logdet.default")
def aten_logdet(g, self):
    """logdet(Tensor self) -> Tensor"""
    return g.op("Log", g.op("Det", self))  # a negative determinant gives NaN, as eager


@register("aten::linalg_slogdet.default")
def aten_linalg_slogdet(g, A):
    """linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)"""
    det = g.op("Det", A)
    return g.op("Sign", det), g.op("Log", g.op("Abs", det))
