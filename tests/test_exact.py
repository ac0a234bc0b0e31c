"""Exact mode: `export(..., exact=True)` runs in aten2onnx.runtime bitwise equal (torch.equal) to eager
PyTorch, through ExportedModel.run and through a session on the saved file; the file stays standard
ONNX; what cannot be exact is an ExportError; a file's exact-call metadata is checked like any node."""

from __future__ import annotations

import base64
import contextlib
import json

import numpy as np
import onnx
import pytest
import torch

import aten2onnx
from aten2onnx import _aten_node
from aten2onnx.runtime import InferenceSession
from conftest import flat_tensors, run_ort
from exact_models import MODELS

OPSETS = (13, 18, 26)


@contextlib.contextmanager
def no_fast_path():
    """nn.MultiheadAttention/TransformerEncoderLayer run the path a graph records (exact mode's condition)."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


def _export_and_compare(model, args, kwargs, opset):
    """Export exactly, then run the export and eager from the same seed; every output torch.equal."""
    with no_fast_path():
        exported = aten2onnx.export(model, args, kwargs, opset=opset, exact=True)
        with torch.no_grad():  # the export first: eager may write the buffers the export reads
            torch.manual_seed(1234)
            got = flat_tensors(exported.run(*args, **kwargs))
            torch.manual_seed(1234)
            want = flat_tensors(model(*args, **kwargs))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        assert torch.equal(g, w), f"output {i} differs by up to {(g.double() - w.double()).abs().max().item()}"
    return exported


CASES = [(name, opset) for name in MODELS for opset in OPSETS]


@pytest.mark.parametrize("name,opset", CASES, ids=[f"{n}-opset{o}" for n, o in CASES])
def test_exact_export_is_bitwise_equal_to_eager(name, opset):
    factory, make = MODELS[name]
    torch.manual_seed(0)
    model = factory().eval()
    args = make()
    exported = _export_and_compare(model, args, {}, opset)
    assert exported.model_proto.metadata_props  # the model says it is exact: a session needs no flag
    assert {p.key: p.value for p in exported.model_proto.metadata_props}[_aten_node.EXACT_MODEL] == "1"


@pytest.mark.parametrize("name", ["mlp", "cnn", "attention", "mlp_bfloat16"])
def test_the_saved_file_runs_bitwise_in_a_session_and_within_tolerance_in_onnxruntime(name, tmp_path):
    factory, make = MODELS[name]
    torch.manual_seed(0)
    model = factory().eval()
    args = make()
    exported = aten2onnx.export(model, args, opset=18, exact=True)
    path = tmp_path / "model.onnx"
    exported.save(str(path))
    with torch.no_grad():
        want = flat_tensors(model(*args))
    session = InferenceSession(str(path))  # numpy feeds, from a file: exact from the metadata alone
    feeds = {i.name: a.numpy() if a.dtype != torch.bfloat16 else a for i, a in zip(session.get_inputs(), args)}
    got = session.run_torch(feeds) if name.endswith("bfloat16") else session.run(None, feeds)
    got = list(got.values()) if isinstance(got, dict) else [torch.from_numpy(np.asarray(g)) for g in got]
    for g, w in zip(got, want):
        assert torch.equal(g, w)
    onnx.checker.check_model(exported.model_proto, full_check=True)
    if not name.endswith("bfloat16"):  # onnxruntime has no bfloat16 kernels for these ops
        for g, w in zip(run_ort(exported.model_proto, dict(zip(exported.input_names, args))), want):
            torch.testing.assert_close(torch.from_numpy(g), w, rtol=1e-4, atol=1e-5)


def test_weights_are_stored_once():
    """Exact mode stores each weight as the model has it (no pre-transposed or folded copy), and the
    default export is unchanged by it."""
    model = MODELS["mlp"][0]().eval()
    x = MODELS["mlp"][1]()
    exact = aten2onnx.export(model, x, exact=True).model_proto
    default = aten2onnx.export(model, x).model_proto
    names = [i.name for i in exact.graph.initializer]
    assert sorted(n for n in names if not n.startswith("const")) == sorted(model.state_dict())
    assert not any(p.key == _aten_node.EXACT_CALL for n in default.graph.node for p in n.metadata_props)
    assert not any(p.key == _aten_node.EXACT_MODEL for p in default.metadata_props)


# -- what cannot be exact ---------------------------------------------------------------------------


def test_a_module_with_an_eager_fast_path_is_refused_while_the_fast_path_is_on():
    model = torch.nn.MultiheadAttention(16, 2).eval()
    q = torch.randn(3, 2, 16)
    with pytest.raises(aten2onnx.ExportError, match=r"MultiheadAttention.*set_fastpath_enabled\(False\)"):
        aten2onnx.export(model, (q, q, q), exact=True)
    _export_and_compare(model, (q, q, q), {}, 18)  # with the fast path off, eager runs what the graph records


def test_a_call_traced_as_a_formula_is_refused():
    with pytest.raises(aten2onnx.ExportError, match=r"torch\.cov .*Export without exact=True"):
        aten2onnx.export(lambda x: torch.cov(x), (torch.randn(3, 5),), exact=True)


# -- the battery of real models ---------------------------------------------------------------------

transformers = pytest.importorskip("transformers")
import test_models_battery as battery  # noqa: E402  (after the skip: it needs transformers)

BATTERY = [(name, opset) for name in battery.MODELS for opset in OPSETS]


@pytest.mark.parametrize("name,opset", BATTERY, ids=[f"{n}-opset{o}" for n, o in BATTERY])
def test_battery_model_is_bitwise_equal_to_eager(name, opset):
    factory, make_inputs, _ = battery.MODELS[name]
    torch.manual_seed(0)
    model = factory().eval()
    args, kwargs = make_inputs()
    _export_and_compare(model, args, kwargs, opset)


# -- a file's exact-call metadata is untrusted -----------------------------------------------------


def _exact_model() -> onnx.ModelProto:
    return aten2onnx.export(lambda x, y: torch.relu(x) * y + 1, (torch.randn(3), torch.randn(3)), exact=True).model_proto


def _carrier(model: onnx.ModelProto, scope: str) -> onnx.NodeProto:
    return next(n for n in model.graph.node if n.name.startswith(scope + "/")
                and any(p.key == _aten_node.EXACT_CALL for p in n.metadata_props))


def _set_call(node: onnx.NodeProto, text: str) -> None:
    next(p for p in node.metadata_props if p.key == _aten_node.EXACT_CALL).value = text


def _call(node: onnx.NodeProto) -> onnx.NodeProto:
    return _aten_node.decode_call(next(p.value for p in node.metadata_props if p.key == _aten_node.EXACT_CALL))


def _shadow_another_value(model):
    node = _carrier(model, "mul")
    call = _call(node)
    call.output[0] = "relu"  # another op's value
    _set_call(node, _aten_node.encode_call(call))


def _shadow_an_input(model):
    node = _carrier(model, "mul")
    call = _call(node)
    call.output[0] = "x"
    _set_call(node, _aten_node.encode_call(call))


def _unsafe_op(model):
    node = _carrier(model, "mul")
    call = onnx.helper.make_node("ATen", [], [node.output[0]], domain=_aten_node.DOMAIN, operator="from_file",
                                 overload_name="", filename="/etc/passwd")
    _set_call(node, _aten_node.encode_call(call))


def _not_a_node(model):
    _set_call(_carrier(model, "mul"), "%%% not base64")


def _not_aten(model):
    node = _carrier(model, "mul")
    call = onnx.helper.make_node("Relu", ["x"], [node.output[0]])
    _set_call(node, base64.b64encode(call.SerializeToString()).decode())


def _bad_requires_grad(model):
    entry = next(p for p in model.metadata_props if p.key == _aten_node.EXACT_REQUIRES_GRAD)
    entry.value = json.dumps({"x": 1})


HOSTILE = [
    ("makes_another_ops_value", _shadow_another_value, "which no node of its own group"),
    ("makes_an_input", _shadow_an_input, "which no node of its own group"),
    ("runs_an_unsafe_op", _unsafe_op, "from_file"),
    ("is_not_a_node", _not_a_node, "not an ATen call"),
    ("is_not_an_aten_node", _not_aten, "must be an ATen node"),
    ("bad_requires_grad_list", _bad_requires_grad, "must be a list of initializer names"),
]


@pytest.mark.parametrize("name,edit,message", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_exact_metadata_is_refused_when_the_session_is_made(name, edit, message):
    model = _exact_model()
    edit(model)
    with pytest.raises(aten2onnx.InvalidModelError, match=message):
        InferenceSession(model.SerializeToString())


def test_a_fallback_node_with_an_enum_default_runs(without_decomposition):
    """A fallback node whose schema gives an enum default as an int (contiguous's memory_format=0,
    randint's dtype=4): the runtime used to fail on it (KeyError: 0) or make a float32 randint."""
    def refuse(g, self, *, memory_format=0):
        raise NotImplementedError("force the fallback")

    f = lambda x: x.transpose(0, 1).contiguous().view(-1)  # noqa: E731
    x = torch.randn(3, 4)
    exported = aten2onnx.export(f, (x,), custom_symbolics={"aten::contiguous": refuse})
    assert exported.fallback_ops == ["aten::contiguous.default"]
    assert torch.equal(exported.run(x), f(x))


def test_an_aten_call_with_a_number_for_self_runs():
    """torch.where(c, nan, x) is where.self with the number as `self`: an ATen node attribute named `self`
    used to collide with the kernel constructor's own `self` (failed before: InvalidModelError)."""
    f = lambda c, x: torch.where(c, float("nan"), x) * 2  # noqa: E731
    c, x = torch.rand(5) > 0.5, torch.randn(5)
    exported = aten2onnx.export(f, (c, x), exact=True)
    assert torch.equal(exported.run(c, x).nan_to_num(), f(c, x).nan_to_num())


# -- verify(exact=True) ----------------------------------------------------------------------------


def test_verify_exact_passes_a_bitwise_model_and_names_the_first_op_that_is_not(monkeypatch):
    model = MODELS["mlp"][0]().eval()
    x = MODELS["mlp"][1]()
    report = aten2onnx.verify(model, x, exact=True, runtimes=("aten2onnx",))
    assert report.ok, report
    # an export whose gelu carries no ATen call: the runtime computes gelu with ONNX ops (Erf), close
    # to eager but not bitwise; verify(exact=True) finds it, at the user's line
    from aten2onnx.exporter.translate import Translator

    real = Translator._exact

    def without_gelu(self, node, op, result, first_new):
        return result if "gelu" in str(op) else real(self, node, op, result, first_new)

    monkeypatch.setattr(Translator, "_exact", without_gelu)
    report = aten2onnx.verify(model, x, exact=True, runtimes=("aten2onnx",))
    assert not report.ok
    d = report.first_divergence
    assert d is not None and d.aten_op == "aten::gelu.default" and "exact_models.py" in d.source
    assert aten2onnx.verify(model, x, runtimes=("aten2onnx",)).ok  # within the default tolerance


def test_a_float_argument_reaches_the_aten_call_unrounded(without_decomposition):
    """An ONNX FLOAT attribute is float32: eps=1e-5 of a float64 layer_norm became 9.99999974e-06 in ATen
    fallback nodes and exact calls alike (found by fuzz_models --exact); such floats are float64 tensors now."""
    def refuse(g, input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
        raise NotImplementedError("force the fallback")

    f = lambda x: torch.nn.functional.layer_norm(x, (4,), eps=1e-5) * 0.1  # noqa: E731
    x = torch.randn(3, 4, dtype=torch.float64)
    fallback = aten2onnx.export(f, (x,), custom_symbolics={"aten::layer_norm": refuse})
    assert fallback.fallback_ops == ["aten::layer_norm.default"]
    assert torch.equal(fallback.run(x), f(x))
    assert torch.equal(aten2onnx.export(f, (x,), exact=True).run(x), f(x))
