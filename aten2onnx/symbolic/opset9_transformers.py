"""Custom ops transformers defines (transformers.integrations.moe, imported by transformers' MoE models,
not by aten2onnx): the grouped matmul its mixture-of-experts layers run their experts through on CPU
(`_grouped_mm_fallback`: rows sorted by expert, per-expert cumulative offsets), and its backward (what a
training export of an MoE model meets).

The row count stays symbolic and there is no Loop. The forward picks at run time (If) between two exact
forms: with fewer rows than experts (a decode step: num_experts_per_tok rows a token) each row's own
expert weight is gathered and multiplied in a batched MatMul, reading only the weights in use; otherwise
(prefill) every row is multiplied by every expert's weight in one broadcast MatMul and each row keeps its
own expert's product (Where and a sum over the experts, which adds exact zeros): num_experts times the
FLOPs of the grouped product, in one large MatMul instead of a gather of S weight matrices."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import branch, cast, dim_size, fill, reshape
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


def grouping(g: GraphBuilder, what: str, input: Value, weight: Value, offs: Value) -> Value:
    """expert_rows for input's rows; the number of experts must be static."""
    if weight.shape is None or not isinstance(weight.shape[0], int):
        raise NotImplementedError(f"transformers::{what} is exported for a static number of experts "
                                  "(weight's first dim); export with the expert weights as parameters")
    rows = arange_of(g, dim_size(g, input, 0), has_range=False)
    return expert_rows(g, rows, offs, weight.shape[0])


def own_expert(g: GraphBuilder, mask: Value, products: Value) -> Value:
    """(S, N): each row's product with its own expert's weight out of (E, S, N); 0 for a row of none."""
    mine = g.op("Where", mask, products, fill(g, [], 0, products.dtype))
    return g.reduce("ReduceSum", mine, [0], keepdims=False)


def gathered(g: GraphBuilder, input: Value, weight: Value, offs: Value) -> Value:
    """(S, N): each row times its own expert's weight, gathered: (S, 1, K) @ (S, K, N); 0 for a row of none."""
    num_experts = weight.shape[0]
    rows = reshape(g, arange_of(g, dim_size(g, input, 0), has_range=False), [1, -1])
    ended = g.op("Not", g.op("Less", rows, reshape(g, cast(g, offs, I64), [num_experts, 1])))  # offs[e] <= r
    ids = reshape(g, g.reduce("ReduceSum", cast(g, ended, I64), [0], keepdims=False), [-1, 1])  # (S, 1)
    some = g.op("Less", ids, g.const(num_experts, dtype=I64))
    ids = g.op("Where", some, ids, g.const(num_experts - 1, dtype=I64))
    own = g.op("Gather", weight, reshape(g, ids, [-1]), axis=0)  # (S, K, N)
    rows = reshape(g, g.op("MatMul", g.unsqueeze(input, [1]), own), [-1, weight.shape[2]])
    return g.op("Where", some, rows, fill(g, [], 0, rows.dtype))


@register("transformers::grouped_mm_fallback.default")
def transformers_grouped_mm_fallback(g, input, weight, offs):
    """grouped_mm_fallback(Tensor input, Tensor weight, Tensor offs) -> Tensor"""
    mask = grouping(g, "grouped_mm_fallback", input, weight, offs)
    weight = cast(g, weight, input.dtype)
    rows = dim_size(g, input, 0)
    if isinstance(rows, int):
        return gathered(g, input, weight, offs) if rows < weight.shape[0] else \
            own_expert(g, mask, g.op("MatMul", input, weight))
    few = g.op("Less", reshape(g, rows, []), g.const(weight.shape[0], dtype=I64))
    out = g.op("If", few,
               then_branch=branch(g, lambda b: gathered(b, input, weight, offs), "moe_gathered"),
               else_branch=branch(g, lambda b: own_expert(b, mask, b.op("MatMul", input, weight)), "moe_dense"))
    out.dtype, out.shape = input.dtype, (input.shape[0], weight.shape[2]) if input.shape is not None else None
    return out


@register("transformers::grouped_mm_fallback_backward.default")
def transformers_grouped_mm_fallback_backward(g, input, weight, offs, grad_output):
    """grouped_mm_fallback_backward(Tensor input, Tensor weight, Tensor offs, Tensor grad_output) -> (Tensor, Tensor)"""
    mask = grouping(g, "grouped_mm_fallback_backward", input, weight, offs)
    weight_t = g.op("Transpose", cast(g, weight, grad_output.dtype), perm=[0, 2, 1])  # (E, N, K)
    grad_input = cast(g, own_expert(g, mask, g.op("MatMul", grad_output, weight_t)), input.dtype)
    # each expert's rows of input (the others 0), transposed: (E, K, S) @ (S, N)
    rows_of = g.op("Where", mask, input, fill(g, [], 0, input.dtype))
    grad_weight = g.op("MatMul", g.op("Transpose", rows_of, perm=[0, 2, 1]), cast(g, grad_output, input.dtype))
    return grad_input, cast(g, grad_weight, weight.dtype)
