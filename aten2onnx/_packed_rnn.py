"""`aten2onnx::packed_rnn`: the op a recurrent layer over a packed sequence is captured as (see
exporter/passes/packed.py), defined where both the exporter and its symbolic can import it."""

from __future__ import annotations

import torch


@torch.library.custom_op("aten2onnx::packed_rnn", mutates_args=())
def packed_rnn(mode: str, input: torch.Tensor, lengths: torch.Tensor, hx: list[torch.Tensor],
               params: list[torch.Tensor], has_biases: bool, num_layers: int, dropout: float, train: bool,
               bidirectional: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A recurrent layer over a padded, time-major batch [T, B, F] of sequences of `lengths` (sorted,
    longest first): (output [T, B, directions * hidden], zero past each length; h_n; c_n, for LSTM, else
    a copy of h_n), as eager's layer on the packed sequence gives them."""
    data, batch_sizes = torch._VF._pack_padded_sequence(input, lengths.cpu(), False)
    if mode == "LSTM":
        out, h, c = torch._VF.lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
    else:
        run = {"GRU": torch._VF.gru, "RNN_TANH": torch._VF.rnn_tanh, "RNN_RELU": torch._VF.rnn_relu}[mode]
        out, h = run(data, batch_sizes, hx[0], params, has_biases, num_layers, dropout, train, bidirectional)
        c = h.clone()
    padded, _ = torch._VF._pad_packed_sequence(out, batch_sizes, False, 0.0, input.shape[0])
    return padded, h, c


@packed_rnn.register_fake
def _(mode, input, lengths, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    hidden = hx[0].shape[-1]
    directions = 2 if bidirectional else 1
    out = input.new_empty(input.shape[0], input.shape[1], directions * hidden)
    return out, hx[0].new_empty(hx[0].shape), hx[0].new_empty(hx[0].shape)
