"""nn.LSTM / nn.GRU as ONNX LSTM / GRU nodes, against eager in onnxruntime and aten2onnx.runtime."""

import warnings

import onnx
import pytest
import torch

import aten2onnx
from conftest import flat_tensors, run_ort

CASES = {
    "lstm_two_layers_batch_first": (lambda: torch.nn.LSTM(8, 16, num_layers=2, batch_first=True),
                                    lambda: (torch.randn(2, 5, 8),)),
    "lstm_bidirectional": (lambda: torch.nn.LSTM(8, 6, bidirectional=True), lambda: (torch.randn(5, 3, 8),)),
    "lstm_no_bias_given_state": (lambda: torch.nn.LSTM(4, 5, bias=False, batch_first=True),
                                 lambda: (torch.randn(2, 3, 4), (torch.randn(1, 2, 5), torch.randn(1, 2, 5)))),
    "gru_two_layers_bidirectional": (lambda: torch.nn.GRU(8, 16, num_layers=2, batch_first=True, bidirectional=True),
                                     lambda: (torch.randn(2, 5, 8),)),
    "gru_given_state": (lambda: torch.nn.GRU(4, 6), lambda: (torch.randn(7, 2, 4), torch.randn(1, 2, 6))),
    "rnn_relu_two_layers_bidirectional": (
        lambda: torch.nn.RNN(4, 6, num_layers=2, nonlinearity="relu", bidirectional=True, batch_first=True),
        lambda: (torch.randn(2, 5, 4), torch.randn(4, 2, 6))),
    "rnn_tanh_no_bias": (lambda: torch.nn.RNN(4, 6, bias=False), lambda: (torch.randn(5, 2, 4),)),
}


@pytest.mark.parametrize("opset", [9, 14, 18])
@pytest.mark.parametrize("name", list(CASES))
def test_recurrent_layer_matches_eager(name, opset):
    make_model, make_args = CASES[name]
    model, args = make_model().eval(), make_args()
    exported = aten2onnx.export(model, args, opset=opset, fallback="error")
    onnx.checker.check_model(exported.model_proto, full_check=True)
    assert {"LSTM", "GRU", "RNN"} & {n.op_type for n in exported.model_proto.graph.node}
    expected = flat_tensors(model(*args))
    feeds = dict(zip(exported.input_names, torch.utils._pytree.tree_leaves(args)))
    for got, want in zip(run_ort(exported.model_proto, feeds), expected):
        torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-4, atol=1e-5)
    for got, want in zip(flat_tensors(exported.run(*args)), expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_projections_export_as_torchs_decomposition():
    """ONNX's LSTM has no projection: an LSTM with proj_size is exported as torch's decomposition of
    aten::lstm (the steps unrolled), which onnxruntime runs."""
    model = torch.nn.LSTM(4, 6, proj_size=3, num_layers=2, bidirectional=True).eval()
    x = torch.randn(3, 2, 4)
    exported = aten2onnx.export(model, (x,), fallback="error")
    assert "aten::lstm.input" in exported.decomposed_ops and not exported.fallback_ops
    x = torch.randn(3, 2, 4)
    with torch.no_grad():
        want = model(x)
    got = exported.run(x)
    ort = run_ort(exported.model_proto, {exported.input_names[0]: x})
    for w, g, o in zip(flat_tensors(want), flat_tensors(got), ort):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(torch.from_numpy(o), w, rtol=1e-5, atol=1e-6)


class Cells(torch.nn.Module):
    def __init__(self, bias: bool):
        super().__init__()
        self.lstm = torch.nn.LSTMCell(4, 5, bias=bias)
        self.gru = torch.nn.GRUCell(4, 5, bias=bias)
        self.tanh = torch.nn.RNNCell(4, 5, bias=bias)
        self.relu = torch.nn.RNNCell(4, 5, bias=bias, nonlinearity="relu")

    def forward(self, x, h):
        # batched with given states, then unbatched with zero states (torch's cells take both)
        return (*self.lstm(x, (h, 0.5 * h)), self.gru(x, h), self.tanh(x, h), self.relu(x, h), *self.lstm(x[0]),
                self.gru(x[0]))


@pytest.mark.parametrize("opset", [9, 18])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_eager(bias, opset):
    model, args = Cells(bias).eval(), (torch.randn(3, 4), torch.randn(3, 5))
    exported = aten2onnx.export(model, args, opset=opset, fallback="error")
    onnx.checker.check_model(exported.model_proto, full_check=True)
    expected = flat_tensors(model(*args))
    for got, want in zip(run_ort(exported.model_proto, dict(zip(exported.input_names, args))), expected):
        torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-4, atol=1e-5)
    for got, want in zip(flat_tensors(exported.run(*args)), expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


AUTO = torch.export.Dim.AUTO
# name: (module, args(batch, length), dynamic shapes of the args): every batch and length dim dynamic
DYNAMIC = {
    "lstm_bidirectional_two_layers_batch_first": (
        lambda: torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True),
        lambda b, t: (torch.randn(b, t, 4),), ({0: AUTO, 1: AUTO},)),
    "lstm_given_states": (
        lambda: torch.nn.LSTM(4, 5),
        lambda b, t: (torch.randn(t, b, 4), (torch.randn(1, b, 5), torch.randn(1, b, 5))),
        ({0: AUTO, 1: AUTO}, ({1: AUTO}, {1: AUTO}))),
    "gru_bidirectional": (lambda: torch.nn.GRU(4, 6, bidirectional=True), lambda b, t: (torch.randn(t, b, 4),),
                          ({0: AUTO, 1: AUTO},)),
    "gru_given_state_batch_first": (
        lambda: torch.nn.GRU(4, 6, num_layers=2, batch_first=True),
        lambda b, t: (torch.randn(b, t, 4), torch.randn(2, b, 6)), ({0: AUTO, 1: AUTO}, {1: AUTO})),
    "rnn_relu": (lambda: torch.nn.RNN(4, 6, nonlinearity="relu", num_layers=2), lambda b, t: (torch.randn(t, b, 4),),
                 ({0: AUTO, 1: AUTO},)),
}


@pytest.mark.parametrize("opset", [14, 18])
@pytest.mark.parametrize("name", list(DYNAMIC))
def test_recurrent_layers_keep_a_dynamic_length_and_batch(name, opset):
    """torch.export computed these ops' example outputs by running torch's kernel for them, a loop over the
    time steps that fixed the length (silently with Dim.AUTO, narrowed with a warning for a named Dim); the
    length and batch stay dynamic, and other sizes run right in both runtimes."""
    make_model, make_args, shapes = DYNAMIC[name]
    model = make_model().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error", aten2onnx.NarrowedExportWarning)
        exported = aten2onnx.export(model, make_args(2, 5), opset=opset, dynamic_shapes=shapes, fallback="error")
    dims = exported.model_proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.HasField("dim_param") for d in dims] == [True, True, False]
    for b, t in ((3, 9), (1, 1), (2, 5)):
        args = make_args(b, t)
        expected = flat_tensors(model(*args))
        feeds = dict(zip(exported.input_names, torch.utils._pytree.tree_leaves(args)))
        for got, want in zip(run_ort(exported.model_proto, feeds), expected):
            torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-4, atol=1e-5)
        for got, want in zip(flat_tensors(exported.run(*args)), expected):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


class LSTMLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(4, 5, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0].square().mean()


def test_a_dynamic_length_a_training_export_fixes_is_warned_of():
    """A training export differentiates the recurrent layer through torch's decomposition, a loop over the
    time steps, which fixes the length: declared Dim.AUTO, it was fixed silently; now it is warned of,
    naming the input and dim, and the batch stays dynamic."""
    with pytest.warns(aten2onnx.NarrowedExportWarning, match=r"input 'x' dim 1 \(x_dim1\) was declared dynamic, "
                      r"but the export fixed it at 6"):
        trained = aten2onnx.export_training(LSTMLoss(), (torch.randn(2, 6, 4),), dynamic_shapes=({0: AUTO, 1: AUTO},))
    dims = trained.model_proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].HasField("dim_param") and dims[1].dim_value == 6
