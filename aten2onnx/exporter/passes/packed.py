"""Packed sequences at capture: pack_padded_sequence -> nn.LSTM / GRU / RNN -> pad_packed_sequence.

Eager packs a padded batch into a data tensor whose size is the sum of the lengths, a value torch.export
cannot trace. During capture the packed sequence keeps the padded batch and the lengths instead (its data
tensor is a stand-in the three steps recognize), the recurrent layer runs as one `aten2onnx::packed_rnn`
call on the padded batch and the lengths (translated to ONNX's LSTM / GRU / RNN with sequence_lens),
and padding back masks each sequence's tail with the padding value. Everything else about a packed
sequence (sorting by length, the order of the hidden states) is torch's own code."""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator

import torch
from torch.nn.modules import rnn as rnn_modules
from torch.nn.utils import rnn as rnn_utils
from torch.overrides import TorchFunctionMode

from aten2onnx import _packed_rnn  # noqa: F401  (defines torch.ops.aten2onnx.packed_rnn)


class PackedSequences(TorchFunctionMode):
    """Active during capture: packing keeps (padded batch, lengths) by the stand-in data tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.packed: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def keep(self, padded: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """A stand-in data tensor for a packed sequence that is padded [T, B, *] with lengths."""
        data = padded.reshape(-1, *padded.shape[2:])
        self.packed[id(data)] = (padded, lengths, data)  # (data kept alive, so its id stays its own)
        return data

    def find(self, data: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        entry = self.packed.get(id(data))
        return None if entry is None or entry[2] is not data else entry[:2]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name == "_pack_padded_sequence":
            input, lengths, batch_first = args
            padded = input.transpose(0, 1) if batch_first else input
            # one entry per time step, as eager's batch sizes (packing only reads its length)
            return self.keep(padded, lengths), lengths.new_zeros(padded.shape[0])
        if name == "_pad_packed_sequence":
            found = self.find(args[0])
            if found is not None:
                return _padded(*found, *args[2:])
        return func(*args, **kwargs)


_ACTIVE: list[PackedSequences] = []


def _padded(padded: torch.Tensor, lengths: torch.Tensor, batch_first: bool, padding_value: float,
            max_seq_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """_pad_packed_sequence: the tail of each sequence set to padding_value, the time axis cut to the
    longest length (or total_length, when pad_packed_sequence was given one)."""
    steps = padded.shape[0]
    total = _given_total_length()
    if total is not None:  # total_length steps: the padded batch's, cut or extended (the extension is padding)
        padded = padded.index_select(0, torch.arange(total).clamp(max=steps - 1))
        steps = total
    inside = torch.arange(steps).unsqueeze(1) < lengths.unsqueeze(0)  # [T, B]
    inside = inside.reshape(*inside.shape, *([1] * (padded.dim() - 2)))
    out = torch.where(inside, padded, torch.full((), padding_value, dtype=padded.dtype))
    if total is None:
        longest = lengths.max().item()
        torch._check_is_size(longest)
        torch._check(longest <= steps)
        out = out.narrow(0, 0, longest)
    return (out.transpose(0, 1) if batch_first else out), lengths


def _given_total_length() -> int | None:
    """pad_packed_sequence's total_length argument, read from its frame (its call of the ATen op passes
    the length it computed either way)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is rnn_utils.pad_packed_sequence.__code__:
            return frame.f_locals.get("total_length")
        frame = frame.f_back
    return None


def _packed_forward(original: Any) -> Any:
    def forward(self: torch.nn.RNNBase, input: Any, hx: Any = None) -> Any:
        found = _ACTIVE[-1].find(input.data) if _ACTIVE and isinstance(input, rnn_utils.PackedSequence) else None
        if found is None:
            return original(self, input, hx)
        return _run_packed(self, input, hx, *found)
    forward.__wrapped__ = original
    return forward


def _run_packed(module: torch.nn.RNNBase, input: rnn_utils.PackedSequence, hx: Any, padded: torch.Tensor,
                lengths: torch.Tensor) -> tuple[rnn_utils.PackedSequence, Any]:
    if getattr(module, "proj_size", 0):
        raise NotImplementedError("a packed LSTM with proj_size is not exported")
    directions = 2 if module.bidirectional else 1
    lstm = module.mode == "LSTM"
    if hx is None:
        zeros = padded.new_zeros(module.num_layers * directions, padded.shape[1], module.hidden_size)
        states = [zeros, zeros.clone()] if lstm else [zeros]
    else:
        hx = module.permute_hidden(hx, input.sorted_indices)
        states = list(hx) if lstm else [hx]
    out, h, c = torch.ops.aten2onnx.packed_rnn(module.mode, padded, lengths, states, list(module._flat_weights),
                                               module.bias, module.num_layers, float(module.dropout),
                                               module.training, module.bidirectional)
    data = _ACTIVE[-1].keep(out, lengths)
    packed = rnn_utils.PackedSequence(data, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
    return packed, module.permute_hidden((h, c) if lstm else h, input.unsorted_indices)


@contextlib.contextmanager
def packed_sequences() -> Iterator[None]:
    """Capture packed sequences through recurrent layers as aten2onnx::packed_rnn (see the module doc)."""
    mode = PackedSequences()
    classes = (rnn_modules.LSTM, rnn_modules.GRU, rnn_modules.RNN)
    originals = {cls: cls.__dict__["forward"] for cls in classes}
    for cls in classes:
        cls.forward = _packed_forward(originals[cls])
    _ACTIVE.append(mode)
    try:
        with mode:
            yield
    finally:
        _ACTIVE.pop()
        for cls, forward in originals.items():
            cls.forward = forward
