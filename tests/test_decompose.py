"""Decompose before falling back: an op no symbolic expresses (none registered, or a handler that cannot
express the case, such as symbolic sizes) is exported as torch's decomposition of it; checked against
eager with every dim symbolic, on the example and on a second size, in onnxruntime and aten2onnx.runtime."""

import warnings

import onnx
import pytest
import torch
import torch.nn.functional as F

import aten2onnx
from aten2onnx.symbolic import MAX_OPSET
from conftest import flat_tensors, run_ort

AUTO = torch.export.Dim.AUTO
OPSETS = (13, 18, MAX_OPSET)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _r(*shape):
    return torch.randn(*shape)


# name: (model, example inputs, inputs of another size, the op the export decomposes)
DECOMPOSED = {
    "eye": (lambda x: torch.eye(x.shape[0]) + x, (_r(4, 4),), (_r(6, 6),), "aten::eye.default"),
    # window_length is an int, not a SymInt: torch.export bakes it, the batch stays symbolic
    "hann_window": (lambda x: torch.hann_window(8) * x, (_r(3, 8),), (_r(5, 8),), "aten::hann_window.default"),
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), (_r(2, 8, 4, 6),), (_r(3, 12, 5, 7),),
                      "aten::pixel_shuffle.default"),
    "pixel_unshuffle": (lambda x: F.pixel_unshuffle(x, 2), (_r(2, 3, 4, 6),), (_r(3, 5, 8, 10),),
                        "aten::pixel_unshuffle.default"),
    "moveaxis": (lambda x: torch.moveaxis(x, 0, -1), (_r(2, 3, 5),), (_r(4, 6, 7),), "aten::moveaxis.int"),
    "tensordot": (lambda x, y: torch.tensordot(x, y, dims=([1], [0])), (_r(5, 6), _r(6, 3)), (_r(7, 4), _r(4, 2)),
                  "aten::tensordot.default"),
    "where(cond)": (lambda x: torch.where(x > 0), (_r(5, 6),), (_r(7, 3),), "aten::where.default"),
    "reflection pad": (lambda x: F.pad(x, (1, 2), mode="reflect"), (_r(2, 3, 6),), (_r(3, 4, 9),),
                       "aten::pad.default"),
}


def _export(model, args, opset, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export(model, args, opset=opset, dynamic_shapes=(tuple({i: AUTO for i in range(a.dim())}
                                                                                for a in args),), **options)


def _check_against_eager(model, exported, inputs, exact=False):
    expected = flat_tensors(model(*inputs))
    ours = flat_tensors(exported.run(*inputs))
    ort = run_ort(exported.model_proto, dict(zip(exported.input_names, inputs)))
    assert len(ours) == len(ort) == len(expected)
    for want, got, theirs in zip(expected, ours, ort):
        if exact:
            assert got.dtype == want.dtype and torch.equal(got, want)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(torch.from_numpy(theirs), want)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", list(DECOMPOSED))
def test_decomposed_on_symbolic_sizes(name, opset):
    fn, example, other, op = DECOMPOSED[name]
    model = Fn(fn)
    exported = _export(model, example, opset, fallback="error")
    assert op in exported.decomposed_ops
    assert any(op in note for note in exported.notes)
    onnx.checker.check_model(exported.model_proto, full_check=True)
    for inputs in (example, other):
        _check_against_eager(model, exported, inputs)


def test_pieces_keep_the_users_provenance():
    exported = _export(Fn(lambda x: F.pixel_shuffle(x, 2)), (_r(2, 8, 4, 6),), 18)
    stamped = [{p.key: p.value for p in n.metadata_props} for n in exported.model_proto.graph.node]
    pieces = [m for m in stamped if m.get("decomposed_from") == "aten::pixel_shuffle.default"]
    assert pieces and all(m["source"].startswith(__file__) for m in pieces)
    assert {m["aten_op"] for m in pieces} - {"aten::pixel_shuffle.default"}  # the pieces name their own ops


def test_inexpressible_pieces_fall_back_to_one_aten_node(without_builtin):
    """moveaxis decomposes to permute: with permute's symbolic hidden, moveaxis is one ATen node."""
    without_builtin("aten::permute.default")
    model = Fn(lambda x: torch.moveaxis(x, 0, -1) * 2)
    exported = _export(model, (_r(2, 3, 5),), 18)
    assert exported.fallback_ops == ["aten::moveaxis.int"]
    assert exported.decomposed_ops == []
    aten = [n for n in exported.model_proto.graph.node if n.op_type == "ATen"]
    assert len(aten) == 1
    inputs = (_r(4, 6, 7),)
    torch.testing.assert_close(exported.run(*inputs), model(*inputs))


def test_fallback_error_names_the_piece(without_builtin):
    without_builtin("aten::permute.default")
    with pytest.raises(aten2onnx.UnsupportedOperatorError, match="moveaxis.*permute"):
        _export(Fn(lambda x: torch.moveaxis(x, 0, -1)), (_r(2, 3, 5),), 18, fallback="error")


@pytest.mark.parametrize("name", ["pixel_shuffle", "tensordot", "hann_window"])
def test_exact_mode_stays_bitwise_on_a_decomposed_op(name):
    fn, example, other, op = DECOMPOSED[name]
    model = Fn(fn)
    exported = _export(model, example, 18, exact=True, fallback="error")
    assert op in exported.decomposed_ops
    for inputs in (example, other):
        _check_against_eager(model, exported, inputs, exact=True)
