"""Packed sequences: pack_padded_sequence -> LSTM / GRU / RNN -> pad_packed_sequence exports as ONNX's
recurrent op with sequence_lens, and matches eager in onnxruntime and our runtime for batches of mixed
lengths (other batch sizes and lengths than the example), every layout and direction."""

from __future__ import annotations

import dataclasses
import warnings

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import aten2onnx
from conftest import run_ort


class Packed(torch.nn.Module):
    def __init__(self, kind: str, batch_first: bool, bidirectional: bool, layers: int, enforce_sorted: bool,
                 initial_state: bool, total_length: int | None, padding_value: float) -> None:
        super().__init__()
        options = {"nonlinearity": "relu"} if kind == "RNN_RELU" else {}
        self.rnn = getattr(torch.nn, kind.split("_")[0])(4, 5, num_layers=layers, batch_first=batch_first,
                                                         bidirectional=bidirectional, **options)
        self.kind, self.batch_first, self.enforce_sorted = kind, batch_first, enforce_sorted
        self.initial_state, self.total_length, self.padding_value = initial_state, total_length, padding_value

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, ...]:
        packed = pack_padded_sequence(x, lengths, batch_first=self.batch_first, enforce_sorted=self.enforce_sorted)
        hx = None
        if self.initial_state:
            batch = x.shape[0 if self.batch_first else 1]
            rows = self.rnn.num_layers * (2 if self.rnn.bidirectional else 1)
            h0 = torch.ones(rows, batch, 5) * 0.1
            hx = (h0, -h0) if self.kind == "LSTM" else h0
        out, state = self.rnn(packed, hx)
        out, out_lengths = pad_packed_sequence(out, batch_first=self.batch_first, padding_value=self.padding_value,
                                               total_length=self.total_length)
        return (out, out_lengths, *(state if isinstance(state, tuple) else (state,)))


@dataclasses.dataclass
class Case:
    name: str
    kind: str = "LSTM"
    batch_first: bool = True
    bidirectional: bool = False
    layers: int = 1
    enforce_sorted: bool = False
    initial_state: bool = False
    total_length: int | None = None
    padding_value: float = 0.0

    def model(self) -> Packed:
        return Packed(self.kind, self.batch_first, self.bidirectional, self.layers, self.enforce_sorted,
                      self.initial_state, self.total_length, self.padding_value).eval()


CASES = [
    Case("lstm"),
    Case("lstm_bidirectional_two_layers", bidirectional=True, layers=2),
    Case("lstm_time_major_initial_state", batch_first=False, initial_state=True),
    Case("lstm_sorted_padding_value", enforce_sorted=True, padding_value=-1.0),
    Case("gru_bidirectional", "GRU", bidirectional=True),
    Case("gru_two_layers_initial_state", "GRU", layers=2, initial_state=True),
    Case("rnn_tanh", "RNN_TANH", batch_first=False, bidirectional=True),
    Case("rnn_relu_total_length", "RNN_RELU", total_length=9),
]


def batch(case: Case, sizes: list[int], steps: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.tensor(sorted(sizes, reverse=True) if case.enforce_sorted else sizes)
    x = torch.randn(len(sizes), steps, 4, generator=gen)
    return (x if case.batch_first else x.transpose(0, 1).contiguous()), lengths


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_packed_sequences_match_eager_for_mixed_lengths(case):
    torch.manual_seed(0)
    model = case.model()
    axis = {0: "batch", 1: "time"} if case.batch_first else {1: "batch", 0: "time"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, batch(case, [4, 6, 2], 6, 0),
                                    dynamic_shapes={"x": axis, "lengths": {0: "batch"}})
    assert not exported.fallback_ops
    assert any(n.op_type in ("LSTM", "GRU", "RNN") and n.input[4] for n in exported.model_proto.graph.node)
    # other batch sizes; the longest sequence shorter than the padded time axis; one of length 1
    for sizes, steps, seed in (([3, 7, 1, 5], 7, 1), ([2, 3], 5, 2), ([6, 6, 6], 6, 3)):
        x, lengths = batch(case, sizes, steps, seed)
        with torch.no_grad():
            want = model(x, lengths)
        got = exported.run(x, lengths)
        ort = run_ort(exported.model_proto, dict(zip(exported.input_names, (x, lengths))))
        for i, expected in enumerate(want):
            torch.testing.assert_close(got[i], expected, rtol=1e-5, atol=1e-6, msg=lambda m: f"output {i}: {m}")
            torch.testing.assert_close(torch.from_numpy(ort[i]), expected, rtol=1e-5, atol=1e-6,
                                       msg=lambda m: f"onnxruntime output {i}: {m}")


def test_exact_mode_runs_eagers_packed_kernels_bitwise():
    case = Case("gru_exact", "GRU", bidirectional=True, layers=2)
    torch.manual_seed(0)
    model = case.model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, batch(case, [4, 6, 2], 6, 0), exact=True)
    x, lengths = batch(case, [5, 6, 3], 6, 1)
    with torch.no_grad():
        want = model(x, lengths)
    for got, expected in zip(exported.run(x, lengths), want):
        assert torch.equal(got, expected)


def test_saved_exact_export_runs_in_a_fresh_process(tmp_path):
    """A fresh interpreter that imports only aten2onnx.runtime loads the saved exact file (whose calls
    include aten2onnx::packed_rnn) with the default session and reproduces eager bitwise."""
    import subprocess
    import sys

    import numpy as np

    case = Case("lstm_saved", "LSTM", batch_first=False, layers=1)
    torch.manual_seed(0)
    model = case.model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aten2onnx.export(model, batch(case, [4, 6, 2], 6, 0), exact=True).save(tmp_path / "m.onnx")
    x, lengths = batch(case, [5, 6, 3], 6, 1)
    np.savez(tmp_path / "in.npz", x=x.numpy(), lengths=lengths.numpy())
    script = ("import sys, numpy as np\nfrom aten2onnx.runtime import InferenceSession\n"
              "d = sys.argv[1]\ns = InferenceSession(d + '/m.onnx')\ni = np.load(d + '/in.npz')\n"
              "names = [v.name for v in s.get_inputs()]\n"
              "out = s.run(None, dict(zip(names, [i['x'], i['lengths']])))\n"
              "np.savez(d + '/out.npz', *out)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    got = np.load(tmp_path / "out.npz")
    with torch.no_grad():
        want = model(x, lengths)
    for i, expected in enumerate(want):
        assert torch.equal(torch.from_numpy(got[f"arr_{i}"]), expected), f"output {i}"
