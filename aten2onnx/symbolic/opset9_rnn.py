"""Base opset, recurrent layers: aten::lstm / aten::gru as ONNX LSTM / GRU, one node per layer.

torch packs gates as LSTM (i, f, g, o) and GRU (r, z, n); ONNX as LSTM (i, o, f, c) and GRU
(z, r, h). Weights that are parameters are reordered once, at export, into new initializers;
torch's GRU applies the reset gate after the hidden matmul, which is ONNX's linear_before_reset=1.
"""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.exporter.builder import GraphBuilder, Value

register = functools.partial(registry.register, opset=9)

LSTM_ORDER = (0, 3, 1, 2)  # torch i f g o -> ONNX i o f c
GRU_ORDER = (1, 0, 2)  # torch r z n -> ONNX z r h


def reordered(g: GraphBuilder, weights: list[Value], order: tuple[int, ...], concat: bool = False) -> Value:
    """The directions' weights, gates reordered, stacked on a new leading axis (biases of one
    direction concatenated first when concat). Computed at export when they are weights."""
    if all(w.const is not None for w in weights):
        def gates(t):
            return torch.cat([t.chunk(len(order))[i] for i in order])
        per_dir = [gates(w.const) for w in weights]
        if concat:
            per_dir = [torch.cat(per_dir[i:i + 2]) for i in range(0, len(per_dir), 2)]
        name = weights[0].name + (".onnx_gates" if not concat else ".onnx_bias")
        return g.initializer(name, torch.stack(per_dir))
    raise NotImplementedError("lstm/gru with weights computed in the graph are not translated")


def recurrent(g: GraphBuilder, op_type: str, input: Value, hx: list[Value], params: list[Value], has_biases: bool,
              num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool,
              order: tuple[int, ...], **attrs) -> tuple[Value, list[Value]]:
    if train and dropout > 0 and num_layers > 1:
        raise NotImplementedError("dropout between recurrent layers is random; export in eval mode")
    directions = 2 if bidirectional else 1
    per_layer = 4 if has_biases else 2
    if len(params) != num_layers * directions * per_layer:
        raise NotImplementedError("recurrent layers with projections (proj_size) are not translated")
    hidden = params[1].shape[-1]
    x = g.op("Transpose", input, perm=[1, 0, 2]) if batch_first else input
    finals: list[list[Value]] = [[] for _ in hx]
    for layer in range(num_layers):
        group = params[layer * directions * per_layer:(layer + 1) * directions * per_layer]
        w = reordered(g, [group[d * per_layer] for d in range(directions)], order)
        r = reordered(g, [group[d * per_layer + 1] for d in range(directions)], order)
        b = None
        if has_biases:
            b = reordered(g, [group[d * per_layer + k] for d in range(directions) for k in (2, 3)], order, concat=True)
        rows = g.const(list(range(layer * directions, (layer + 1) * directions)), dtype=torch.int64)
        states = [g.op("Gather", h, rows, axis=0) for h in hx]
        outs = g.op(op_type, x, w, r, b, None, *states, outputs=1 + len(hx), hidden_size=hidden,
                    direction="bidirectional" if bidirectional else "forward", **attrs)
        y, *last = outs
        for i, state in enumerate(last):
            finals[i].append(state)
        # [seq, directions, batch, hidden] -> [seq, batch, directions * hidden]
        y = g.op("Transpose", y, perm=[0, 2, 1, 3])
        x = g.op("Reshape", y, g.const([0, 0, -1], dtype=torch.int64))
    output = g.op("Transpose", x, perm=[1, 0, 2]) if batch_first else x
    states = [f[0] if len(f) == 1 else g.op("Concat", *f, axis=0) for f in finals]
    return output, states


@register("aten::lstm.input")
def aten_lstm(g, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)"""
    output, (h, c) = recurrent(g, "LSTM", input, list(hx), list(params), has_biases, num_layers, dropout, train,
                               bidirectional, batch_first, LSTM_ORDER)
    return output, h, c


@register("aten::gru.input")
def aten_gru(g, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"""
    output, (h,) = recurrent(g, "GRU", input, [hx], list(params), has_biases, num_layers, dropout, train,
                             bidirectional, batch_first, GRU_ORDER, linear_before_reset=1)
    return output, h
