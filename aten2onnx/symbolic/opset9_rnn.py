"""Base opset, recurrent layers: aten::lstm / gru / rnn_tanh / rnn_relu as ONNX LSTM / GRU / RNN,
one node per layer; the single-step cells (lstm_cell, gru_cell, rnn_*_cell) as their gate math.

torch packs gates as LSTM (i, f, g, o) and GRU (r, z, n); ONNX as LSTM (i, o, f, c) and GRU
(z, r, h). Weights that are parameters are reordered once, at export, into new initializers;
torch's GRU applies the reset gate after the hidden matmul, which is ONNX's linear_before_reset=1.
"""

from __future__ import annotations

import functools

import torch

from aten2onnx import _packed_rnn, registry  # _packed_rnn defines aten2onnx::packed_rnn
from aten2onnx.ir import GraphBuilder, Value, lazy
from aten2onnx.symbolic._helpers import cast

register = functools.partial(registry.register, opset=9)

LSTM_ORDER = (0, 3, 1, 2)  # torch i f g o -> ONNX i o f c
GRU_ORDER = (1, 0, 2)  # torch r z n -> ONNX z r h


def reordered(g: GraphBuilder, weights: list[Value], order: tuple[int, ...], concat: bool = False) -> Value:
    """The directions' weights, gates reordered, stacked on a new leading axis (biases of one
    direction concatenated first when concat). Computed at export when they are weights."""
    if all(w.const is not None for w in weights):
        def stacked(*tensors: torch.Tensor) -> torch.Tensor:
            per_dir = [torch.cat([t.chunk(len(order))[i] for i in order]) for t in tensors]
            if concat:
                per_dir = [torch.cat(per_dir[i:i + 2]) for i in range(0, len(per_dir), 2)]
            return torch.stack(per_dir)
        name = weights[0].name + (".onnx_gates" if not concat else ".onnx_bias")
        return g.initializer(name, lazy.apply(stacked, *(w.const for w in weights)))
    raise NotImplementedError("lstm/gru with weights computed in the graph are not translated")


def recurrent(g: GraphBuilder, op_type: str, input: Value, hx: list[Value], params: list[Value], has_biases: bool,
              num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool,
              order: tuple[int, ...], lengths: Value | None = None, **attrs) -> tuple[Value, list[Value]]:
    """lengths: each batch entry's sequence length (ONNX's sequence_lens): steps past it are not run,
    and give zeros; the final states are each sequence's own last step's."""
    if train and dropout > 0 and num_layers > 1:
        raise NotImplementedError("dropout between recurrent layers is random; export in eval mode")
    directions = 2 if bidirectional else 1
    per_layer = 4 if has_biases else 2
    if len(params) != num_layers * directions * per_layer:
        raise NotImplementedError("recurrent layers with projections (proj_size) are not translated")
    hidden = params[1].shape[-1]
    x = g.op("Transpose", input, perm=[1, 0, 2]) if batch_first else input
    sequence_lens = None if lengths is None else cast(g, lengths, torch.int32)
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
        outs = g.op(op_type, x, w, r, b, sequence_lens, *states, outputs=1 + len(hx), hidden_size=hidden,
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


@register("aten::rnn_tanh.input")
def aten_rnn_tanh(g, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """rnn_tanh.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"""
    output, (h,) = recurrent(g, "RNN", input, [hx], list(params), has_biases, num_layers, dropout, train,
                             bidirectional, batch_first, (0,), activations=["Tanh"] * (2 if bidirectional else 1))
    return output, h


@register("aten::rnn_relu.input")
def aten_rnn_relu(g, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """rnn_relu.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"""
    output, (h,) = recurrent(g, "RNN", input, [hx], list(params), has_biases, num_layers, dropout, train,
                             bidirectional, batch_first, (0,), activations=["Relu"] * (2 if bidirectional else 1))
    return output, h


@register("aten2onnx::packed_rnn.default")
def aten2onnx_packed_rnn(g, mode, input, lengths, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    """packed_rnn(str mode, Tensor input, Tensor lengths, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor, Tensor)"""
    kinds = {"LSTM": ("LSTM", LSTM_ORDER, {}), "GRU": ("GRU", GRU_ORDER, {"linear_before_reset": 1}),
             "RNN_TANH": ("RNN", (0,), {"activations": ["Tanh"] * (2 if bidirectional else 1)}),
             "RNN_RELU": ("RNN", (0,), {"activations": ["Relu"] * (2 if bidirectional else 1)})}
    op_type, order, attrs = kinds[mode]
    states = list(hx)
    output, finals = recurrent(g, op_type, input, states, list(params), has_biases, num_layers, dropout, train,
                               bidirectional, False, order, lengths=lengths, **attrs)
    # c_n: LSTM's cell state; the other layers' op gives a copy of h_n there (a value of its own)
    return output, finals[0], finals[1] if len(finals) > 1 else g.op("Identity", finals[0])


def cell_linear(g: GraphBuilder, x: Value, weight: Value, bias: Value | None) -> Value:
    """x @ weight.T + bias for a cell's [gates * hidden, features] weight; x is [batch, features] or
    [features] (torch's cells take both)."""
    y = g.op("MatMul", x, g.op("Transpose", weight, perm=[1, 0]))
    return y if bias is None else g.op("Add", y, bias)


def gate_chunks(g: GraphBuilder, gates: Value, count: int, hidden: int, axis: int) -> list[Value]:
    """The `count` equal chunks of the gates along `axis` (their last), by Gather: one form at every
    opset, unlike Split and Slice."""
    return [g.op("Gather", gates, g.const(list(range(k * hidden, (k + 1) * hidden)), dtype=torch.int64), axis=axis)
            for k in range(count)]


@register("aten::lstm_cell.default")
def aten_lstm_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> (Tensor, Tensor)"""
    h, c = hx
    gates = g.op("Add", cell_linear(g, input, w_ih, b_ih), cell_linear(g, h, w_hh, b_hh))
    i, f, cand, o = gate_chunks(g, gates, 4, w_hh.shape[-1], input.rank - 1)
    c_new = g.op("Add", g.op("Mul", g.op("Sigmoid", f), c), g.op("Mul", g.op("Sigmoid", i), g.op("Tanh", cand)))
    return g.op("Mul", g.op("Sigmoid", o), g.op("Tanh", c_new)), c_new


@register("aten::gru_cell.default")
def aten_gru_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor"""
    hidden = w_hh.shape[-1]
    i_r, i_z, i_n = gate_chunks(g, cell_linear(g, input, w_ih, b_ih), 3, hidden, input.rank - 1)
    h_r, h_z, h_n = gate_chunks(g, cell_linear(g, hx, w_hh, b_hh), 3, hidden, input.rank - 1)
    r = g.op("Sigmoid", g.op("Add", i_r, h_r))
    z = g.op("Sigmoid", g.op("Add", i_z, h_z))
    n = g.op("Tanh", g.op("Add", i_n, g.op("Mul", r, h_n)))
    # (1 - z) * n + z * h, as n + z * (h - n)
    return g.op("Add", n, g.op("Mul", z, g.op("Sub", hx, n)))


@register("aten::rnn_tanh_cell.default")
def aten_rnn_tanh_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor"""
    return g.op("Tanh", g.op("Add", cell_linear(g, input, w_ih, b_ih), cell_linear(g, hx, w_hh, b_hh)))


@register("aten::rnn_relu_cell.default")
def aten_rnn_relu_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor"""
    return g.op("Relu", g.op("Add", cell_linear(g, input, w_ih, b_ih), cell_linear(g, hx, w_hh, b_hh)))
