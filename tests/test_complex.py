"""Complex tensors carried as real pairs: graph inputs and outputs, weights, constants, fallback nodes,
and dispatch (a handler written for real tensors never sees a carrier)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import aten2onnx
from aten2onnx.errors import UnsupportedOperatorError
from aten2onnx.exporter.model import COMPLEX_KEY
from optable import Call


def export(model, args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export(model, args, **kwargs)


class Rotary(torch.nn.Module):
    """A complex buffer, as Meta's LLaMA keeps its rotary frequencies."""

    def __init__(self) -> None:
        super().__init__()
        freqs = torch.outer(torch.arange(6.0), 1.0 / 10000 ** (torch.arange(0, 8, 2).float() / 8))
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(freqs), freqs))

    def forward(self, x):
        xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * self.freqs_cis).flatten(-2)


def complex_meta(exported) -> dict:
    meta = {e.key: e.value for e in exported.model_proto.metadata_props}
    return json.loads(meta[COMPLEX_KEY]) if COMPLEX_KEY in meta else {}


def ort_outputs(exported, *args):
    sess = ort.InferenceSession(exported.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = exported.carried_inputs({n: a.numpy() for n, a in zip(exported.input_names, args)})
    return exported.structure_outputs(sess.run(None, feeds))


@pytest.mark.parametrize("opset", [9, 13, 18])
def test_complex_inputs_and_outputs_are_real_pairs(opset):
    x = torch.randn(3, 4, dtype=torch.complex64)
    y = torch.randn(3, 4)
    exported = export(Call(lambda a, b: (torch.view_as_complex(torch.view_as_real(a)), a.real * b)), (x, y), opset=opset)
    graph = exported.model_proto.graph
    onnx.checker.check_model(exported.model_proto, full_check=True)
    # the complex input and output are float32 [3, 4, 2]; nothing in the graph is of a complex type
    types = {v.name: v.type.tensor_type for v in list(graph.input) + list(graph.output)}
    for name in (exported.input_names[0], exported.output_names[0]):
        assert types[name].elem_type == onnx.TensorProto.FLOAT
        assert [d.dim_value for d in types[name].shape.dim] == [3, 4, 2]
    assert complex_meta(exported) == {"inputs": [exported.input_names[0]], "outputs": [exported.output_names[0]]}
    want = (x, x.real * y)
    for got in (exported.run(x, y), ort_outputs(exported, x, y)):
        assert torch.as_tensor(got[0]).dtype == torch.complex64
        torch.testing.assert_close(torch.as_tensor(got[0]), want[0])
        torch.testing.assert_close(torch.as_tensor(got[1]), want[1])


def test_complex_buffer_is_stored_as_pairs():
    model = Rotary()
    x = torch.randn(2, 6, 8)
    exported = export(model, (x,), opset=17)
    assert not exported.fallback_ops
    weights = {i.name: i for i in exported.model_proto.graph.initializer}
    freqs = [w for name, w in weights.items() if "freqs_cis" in name]
    assert freqs and all(w.data_type == onnx.TensorProto.FLOAT and list(w.dims) == [6, 4, 2] for w in freqs)
    torch.testing.assert_close(exported.run(x), model(x))
    torch.testing.assert_close(torch.as_tensor(ort_outputs(exported, x)), model(x))


def test_complex_constant_and_empty_result():
    # 1j is a constant of the graph; an empty complex result is an empty carrier
    fn = lambda a: (torch.view_as_real(a.cfloat() * 1j), torch.complex(a, a)[:, :0])  # noqa: E731
    x = torch.randn(3, 4)
    exported = export(Call(fn), (x,), opset=17)
    want = fn(x)
    got = exported.run(x)
    torch.testing.assert_close(got[0], want[0])
    assert got[1].shape == want[1].shape and got[1].dtype == torch.complex64


def test_fallback_node_converts_pairs():
    # linalg.eigvals has no symbolic: its ATen node takes and returns pairs, converted in the runtime
    x = torch.randn(4, 4, dtype=torch.float64)
    exported = export(Call(lambda a: torch.linalg.eigvals(a) * 2), (x,), opset=17, fallback="aten")
    assert "aten::linalg_eigvals.default" in exported.fallback_ops
    node = next(n for n in exported.model_proto.graph.node if n.op_type == "ATen")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs["complex_outputs"] == [0] and "complex_inputs" not in attrs
    torch.testing.assert_close(exported.run(x), torch.linalg.eigvals(x) * 2)


def test_complex_node_without_handler_names_complex():
    x = torch.randn(4, 4)
    with pytest.raises(UnsupportedOperatorError, match="complex"):
        export(Call(lambda a: torch.linalg.eigvals(a)), (x,), opset=17, fallback="error")


def test_real_handlers_never_see_carriers():
    """A user symbolic for an op is for real tensors: a complex node of that op does not reach it."""
    seen = []

    @aten2onnx.register_symbolic("aten::exp.default", opset=9)
    def exp(g, self):
        seen.append(self.complex)
        return g.op("Exp", self)

    try:
        x = torch.randn(3)
        exported = export(Call(lambda a: torch.exp(a) + torch.view_as_real(torch.exp(a.cfloat()))[..., 0]), (x,),
                          opset=17, fallback="aten")
        assert seen == [False]
        torch.testing.assert_close(exported.run(x), torch.exp(x) + torch.exp(x.cfloat()).real)
    finally:
        aten2onnx.unregister_symbolic("aten::exp.default")


def test_an_override_reaches_the_complex_nodes_that_lift_its_real_translation():
    """Complex gather is the real gather on each part, through the export's one dispatch: a per-call
    override of the real gather (here a deliberately doubled one) is what those parts get."""
    calls = []

    def doubled_gather(g, self, dim, index, *, sparse_grad=False):
        calls.append(self.complex)
        out = g.op("GatherElements", self, index, axis=dim)
        return g.op("Mul", out, g.const(2.0, like=out))

    z = torch.randn(3, 4, dtype=torch.complex64)
    index = torch.tensor([[0, 2], [1, 1], [3, 0]])
    exported = export(Call(lambda a, i: torch.gather(a, 1, i)), (z, index), opset=17,
                      custom_symbolics={"aten::gather.default": doubled_gather})
    assert calls == [False, False]  # the real and the imaginary part, each a real tensor
    torch.testing.assert_close(exported.run(z, index), 2 * torch.gather(z, 1, index))


def test_an_override_reaches_a_complex_layout_op_on_the_pairs():
    seen = []

    def view(g, self, size):
        seen.append(list(size))
        return g.op("Reshape", self, g.int_list(list(size)))

    z = torch.randn(2, 6, dtype=torch.complex64)
    exported = export(Call(lambda a: a.view(3, 4) * 1j), (z,), opset=17, custom_symbolics={"aten::view.default": view})
    assert seen == [[3, 4, 2]]  # the complex view is the real one on the pairs, their axis kept
    torch.testing.assert_close(exported.run(z), z.view(3, 4) * 1j)


def test_a_user_symbolic_registered_for_complex_translates_complex_nodes():
    seen = []

    @aten2onnx.register_symbolic("aten::neg.default", opset=9, complex=True)
    def neg(g, self):
        seen.append(self.complex)
        return g.op("Neg", self)

    try:
        z = torch.randn(3, dtype=torch.complex64)
        exported = export(Call(lambda a, x: (-a, -x)), (z, torch.randn(3)), opset=17)
        assert seen == [True]  # the real neg stays the built-in one
        torch.testing.assert_close(exported.run(z, torch.ones(3))[0], -z)
    finally:
        aten2onnx.unregister_symbolic("aten::neg.default", complex=True)


def test_numpy_complex_feeds():
    x = np.random.randn(2, 3).astype(np.float32) + 1j * np.random.randn(2, 3).astype(np.float32)
    x = x.astype(np.complex64)
    exported = export(Call(lambda a: a.imag), (torch.from_numpy(x),), opset=17)
    got = ort_outputs(exported, torch.from_numpy(x))
    np.testing.assert_allclose(np.asarray(got), x.imag)


def test_complex32_is_carried_as_float16_pairs():
    x = torch.randn(3, 2)
    exported = export(Call(lambda a: torch.view_as_complex(a.half()) * 2), (x,), opset=17)
    out = exported.model_proto.graph.output[0].type.tensor_type
    assert out.elem_type == onnx.TensorProto.FLOAT16
    got = exported.run(x)
    assert got.dtype == torch.complex32
    torch.testing.assert_close(torch.view_as_real(got), torch.view_as_real(torch.view_as_complex(x.half()) * 2))


def test_fallback_node_takes_a_complex_scalar(monkeypatch):
    # index_fill made to fall back (every complex op with a Scalar exports natively): an ATen node whose
    # value is complex
    from aten2onnx.errors import KernelOnly
    from aten2onnx.symbolic import opset9_scatter

    def refuse(*args, **kwargs):
        raise KernelOnly("made to fall back")
    monkeypatch.setattr(opset9_scatter, "rows_along", refuse)
    x = torch.randn(4, 3, dtype=torch.complex64)
    index = torch.tensor([0, 2])
    fn = lambda a, i: a.index_fill(0, i, 1 - 2j) * 2  # noqa: E731
    exported = export(Call(fn), (x, index), opset=9, fallback="aten")
    node = next(n for n in exported.model_proto.graph.node if n.op_type == "ATen")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs["complex_scalars"] == [b"value"] and attrs["value"] == [1.0, -2.0]
    torch.testing.assert_close(exported.run(x, index), fn(x, index))
