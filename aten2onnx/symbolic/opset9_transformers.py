"""Custom ops transformers defines (transformers.integrations.moe, imported by transformers' MoE models,
not by aten2onnx): the grouped matmul its mixture-of-experts layers run their experts through on CPU
(`_grouped_mm_fallback`: rows sorted by expert, per-expert cumulative offsets).

The grouped matmul is dense: every row times every expert's weight in one broadcast MatMul, then each
row keeps its own expert's product (Where and a sum over the experts, which adds exact zeros), so the
row count stays symbolic and there is no Loop; it costs num_experts times the FLOPs of the grouped one
(the experts are few; a decode step's rows are num_experts_per_tok per token)."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, dim_size, fill, reshape
from aten2onnx.symbolic.opset9_data import arange_of

register = functools.partial(registry.register, opset=9, library="transformers.integrations.moe")

I64 = torch.int64


def expert_rows(g: GraphBuilder, rows: Value, offs: Value, num_experts: int) -> Value:
    """(num_experts, S, 1) bool: row r belongs to expert e when offs[e-1] <= r < offs[e] (offs[-1] = 0);
    rows at or past offs[-1] belong to none."""
    offs = reshape(g, cast(g, offs, I64), [num_experts, 1])
    before = g.op("Less", reshape(g, rows, [1, -1]), offs)  # r < offs[e]
    starts = g.op("Concat", g.const([[0]], dtype=I64), g.slice(offs, [0], [num_experts - 1], [0]), axis=0) \
        if num_experts > 1 else g.const([[0]], dtype=I64)
    started = g.op("Not", g.op("Less", reshape(g, rows, [1, -1]), starts))  # r >= offs[e-1]
    return g.unsqueeze(g.op("And", before, started), [2])


@register("transformers::grouped_mm_fallback.default")
def transformers_grouped_mm_fallback(g, input, weight, offs):
    """grouped_mm_fallback(Tensor input, Tensor weight, Tensor offs) -> Tensor"""
    if weight.shape is None or not isinstance(weight.shape[0], int):
        raise NotImplementedError("transformers::grouped_mm_fallback is exported for a static number of experts "
                                  "(weight's first dim); export with the expert weights as parameters")
    num_experts = weight.shape[0]
    rows = arange_of(g, dim_size(g, input, 0), has_range=False)
    products = g.op("MatMul", input, cast(g, weight, input.dtype))  # (E, S, N)
    mine = g.op("Where", expert_rows(g, rows, offs, num_experts), products, fill(g, [], 0, input.dtype))
    return g.reduce("ReduceSum", mine, [0], keepdims=False)
