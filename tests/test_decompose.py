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


class Call(torch.nn.Module):
    """Defined here: the provenance test checks that pieces point at a line of this file."""

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
    # (pixel_shuffle and pixel_unshuffle were here until their symbolic took symbolic sizes)
    "roll": (lambda x: torch.roll(x, 2, 1), (_r(2, 5, 3),), (_r(3, 7, 4),), "aten::roll.default"),
    "diag_embed": (lambda x: torch.diag_embed(x), (_r(2, 4),), (_r(3, 6),), "aten::diag_embed.default"),
    "moveaxis": (lambda x: torch.moveaxis(x, 0, -1), (_r(2, 3, 5),), (_r(4, 6, 7),), "aten::moveaxis.int"),
    "tensordot": (lambda x, y: torch.tensordot(x, y, dims=([1], [0])), (_r(5, 6), _r(6, 3)), (_r(7, 4), _r(4, 2)),
                  "aten::tensordot.default"),
    # (where(cond) was here until it got a symbolic: torch 2.14's decomposition of it failed on symbolic sizes)
    # (torch.export bakes the sizes _dim_arange reads: a static case, checked on other values)
    "_dim_arange": (lambda x: torch.ops.aten._dim_arange(x, 1), (_r(5, 6),), (_r(5, 6),), "aten::_dim_arange.default"),
}

# name: (model, example inputs, inputs of another size[, the dims declared symbolic per input: all when not
# given]): ops issue 20 found falling back with symbolic sizes where torch.onnx is native, and small cases
# found the same way; native with those dims symbolic
NATIVE = {
    "diagonal": (lambda x: torch.diagonal(x, 1), (_r(5, 6),), (_r(7, 4),)),
    "diagonal of a batch": (lambda x: torch.diagonal(x, -1, 2, 0), (_r(4, 3, 5),), (_r(6, 2, 3),)),
    "split_with_sizes": (lambda x: torch.split(x, [2, x.shape[1] - 2], 1), (_r(5, 6),), (_r(3, 9),)),
    "constant pad": (lambda x: F.pad(x, (1, 2, 0, 3), value=1.5), (_r(2, 3, 4),), (_r(3, 5, 2),)),
    "replicate pad": (lambda x: F.pad(x, (2, 1), mode="replicate"), (_r(2, 3, 6),), (_r(3, 4, 9),)),
    "reflection pad": (lambda x: F.pad(x, (1, 2), mode="reflect"), (_r(2, 3, 6),), (_r(3, 4, 9),)),
    "unfold": (lambda x: x.unfold(1, 2, 1), (_r(5, 6),), (_r(3, 9),)),
    "unfold with a step": (lambda x: x.unfold(0, 3, 2), (_r(7, 4),), (_r(10, 3),)),
    "sort": (lambda x: torch.sort(x, 1), (_r(5, 6),), (_r(3, 9),)),
    "sort descending": (lambda x: torch.sort(x, 0, descending=True), (_r(5, 6),), (_r(3, 9),)),
    "full": (lambda x: torch.full((x.shape[0], 3), 2.5) + x[:, :1], (_r(5, 6),), (_r(3, 9),)),
    "full_like": (lambda x: torch.full_like(x, 7), (_r(5, 6),), (_r(3, 9),)),
    "arange.start_step": (lambda x: torch.arange(1, x.shape[0], 2), (_r(5, 6),), (_r(8, 9),)),
    "arange without dtype is int64": (lambda x: torch.arange(x.shape[0]), (_r(5, 6),), (_r(3, 9),)),
    "where on a uint8 condition": (lambda c, x: torch.where(c.bool(), x, 0.0),
                                   (torch.tensor([[1, 0, 1], [0, 0, 1]], dtype=torch.uint8), _r(2, 3)),
                                   (torch.tensor([[1, 0], [0, 1], [1, 1]], dtype=torch.uint8), _r(3, 2))),
    "prelu with a 0-d weight": (lambda x: F.prelu(x, torch.tensor(0.25)), (_r(5, 6),), (_r(3, 9),)),
    # (eager has no bool bmm: a bool einsum that sums is refused there too)
    "bool einsum": (lambda a, b: torch.einsum("ij,ik->ijk", a, b), (_r(2, 3) > 0, _r(2, 4) > 0),
                    (_r(5, 2) > 0, _r(5, 3) > 0)),
    # the pooled length stays static (ATen's bins depend on it); batch and channels symbolic
    "adaptive_max_pool1d": (lambda x: F.adaptive_max_pool1d(x, 3, return_indices=True), (_r(2, 3, 7),),
                            (_r(4, 5, 7),), ((0, 1),)),
}


def _export(model, args, opset, dims=None, **options):
    """Exported with every dim of every input symbolic, or dims[i] of input i."""
    dims = dims or [range(a.dim()) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export(model, args, opset=opset, dynamic_shapes=(tuple({i: AUTO for i in d} for d in dims),),
                                **options)


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
    model = Call(fn)
    exported = _export(model, example, opset, fallback="error")
    assert op in exported.decomposed_ops
    assert any(op in note for note in exported.notes)
    onnx.checker.check_model(exported.model_proto, full_check=True)
    for inputs in (example, other):
        _check_against_eager(model, exported, inputs)


def test_pieces_keep_the_users_provenance():
    exported = _export(Call(lambda x: torch.roll(x, 2, 1)), (_r(2, 5, 3),), 18)
    stamped = [{p.key: p.value for p in n.metadata_props} for n in exported.model_proto.graph.node]
    pieces = [m for m in stamped if m.get("decomposed_from") == "aten::roll.default"]
    assert pieces and all(m["source"].startswith(__file__) for m in pieces)
    assert {m["aten_op"] for m in pieces} - {"aten::roll.default"}  # the pieces name their own ops


def test_a_piece_is_decomposed_in_turn(without_builtin):
    """pad decomposes to reflection_pad1d, which decomposes to _unsafe_index (the symbolics of both hidden)."""
    without_builtin("aten::pad.default", "aten::reflection_pad1d.default")
    model = Call(lambda x: F.pad(x, (1, 2), mode="reflect"))
    exported = _export(model, (_r(2, 3, 6),), 18, fallback="error")
    assert {"aten::pad.default", "aten::reflection_pad1d.default", "aten::_unsafe_index.Tensor"} <= set(
        exported.decomposed_ops)
    for inputs in ((_r(2, 3, 6),), (_r(3, 4, 9),)):
        _check_against_eager(model, exported, inputs)


def test_inexpressible_pieces_fall_back_to_one_aten_node(without_builtin):
    """moveaxis decomposes to permute: with permute's symbolic hidden, moveaxis is one ATen node."""
    without_builtin("aten::permute.default")
    model = Call(lambda x: torch.moveaxis(x, 0, -1) * 2)
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
        _export(Call(lambda x: torch.moveaxis(x, 0, -1)), (_r(2, 3, 5),), 18, fallback="error")


@pytest.mark.parametrize("name", ["roll", "tensordot", "hann_window"])
def test_exact_mode_stays_bitwise_on_a_decomposed_op(name):
    fn, example, other, op = DECOMPOSED[name]
    model = Call(fn)
    exported = _export(model, example, 18, exact=True, fallback="error")
    assert op in exported.decomposed_ops
    for inputs in (example, other):
        _check_against_eager(model, exported, inputs, exact=True)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", list(NATIVE))
def test_native_on_symbolic_sizes(name, opset):
    fn, example, other, *dims = NATIVE[name]
    model = Call(fn)
    exported = _export(model, example, opset, *dims, fallback="error")
    assert exported.fallback_ops == []
    onnx.checker.check_model(exported.model_proto, full_check=True)
    for inputs in (example, other):
        _check_against_eager(model, exported, inputs)


@pytest.mark.parametrize("name, fn, example, other, hidden", [
    # _adaptive_avg_pool2d's decomposition drops its window mask where the example's sizes divide evenly
    # (the built-in symbolics, which take symbolic sizes, hidden)
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 4)), (_r(2, 3, 7, 9),), (_r(3, 4, 8, 10),),
     ("aten::adaptive_avg_pool2d.default", "aten::_adaptive_avg_pool2d.default")),
    # split's decomposition fixes the number of pieces: right at every smaller size, wrong at a larger one
    ("split", lambda x: x.split(2)[:2], (_r(4, 3),), (_r(5, 3),), ()),
])
def test_a_decomposition_right_only_at_the_example_falls_back(name, fn, example, other, hidden, without_builtin):
    without_builtin(*hidden)
    model = Call(fn)
    exported = _export(model, example, 18)
    assert exported.decomposed_ops == [] and exported.fallback_ops
    for got, want in zip(flat_tensors(exported.run(*other)), flat_tensors(model(*other))):
        torch.testing.assert_close(got, want)


def test_checking_a_decomposition_at_another_size_uses_no_deprecated_torch_api(without_builtin):
    """A decomposition traced on symbolic sizes is checked at other sizes from the size symbols' example
    values; torch 2.13 deprecates ShapeEnv.var_to_val for backed_var_to_val, and a FutureWarning raised in
    our code is an error (pyproject's filterwarnings), so reading the deprecated one fails here."""
    without_builtin("aten::layer_norm.default")
    model = Call(lambda x: F.layer_norm(x, (4,)))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=FutureWarning, module="aten2onnx")
        warnings.filterwarnings("error", category=DeprecationWarning, module="aten2onnx")
        exported = aten2onnx.export(model, (_r(3, 4),), opset=18, dynamic_shapes=(({0: AUTO},),))
    assert exported.decomposed_ops and exported.fallback_ops == []
    _check_against_eager(model, exported, (_r(5, 4),))
