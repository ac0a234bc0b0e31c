"""The runtime runs node groups the exporter made from one ATen op (gelu, silu) as that op again:
bitwise eager's result; other nodes, a user's own decomposition included, are left alone."""

import math

import pytest
import torch
import torch.nn.functional as F

import aten2onnx
from aten2onnx.runtime import InferenceSession


class Activations(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = torch.nn.functional.gelu(self.linear(x)) + torch.nn.functional.gelu(x, approximate="tanh")
        return torch.nn.functional.silu(y)


def manual_gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))  # the same math, written by hand


def kernels(session: InferenceSession) -> list[str]:
    return [f"{s.node.domain}:{s.node.op_type}" if s.node.domain else s.node.op_type for s in session._runner.steps]


@pytest.mark.parametrize("opset", [13, 17, 18])
def test_exported_gelu_and_silu_run_as_one_kernel_bitwise_equal_to_eager(opset):
    model = Activations().eval()
    x = torch.randn(8, 16)
    exported = aten2onnx.export(model, (x,), opset=opset)
    session = InferenceSession(exported.model_proto)
    assert kernels(session).count("aten2onnx.fused:Gelu") == 2
    assert kernels(session).count("aten2onnx.fused:Silu") == 1
    assert torch.equal(session.run_torch({"x": x})["output"], model(x))
    unfused = InferenceSession(exported.model_proto, fuse=False)
    assert not any(k.startswith("aten2onnx.fused") for k in kernels(unfused))
    torch.testing.assert_close(unfused.run_torch({"x": x})["output"], model(x))


def test_a_hand_written_decomposition_is_not_fused():
    exported = aten2onnx.export(manual_gelu, (torch.randn(5),), opset=17)
    session = InferenceSession(exported.model_proto)
    assert "Erf" in kernels(session) and not any(k.startswith("aten2onnx.fused") for k in kernels(session))


def test_a_group_whose_intermediate_escapes_is_not_fused():
    import onnx

    exported = aten2onnx.export(Activations().eval(), (torch.randn(2, 16),), opset=17)
    model = onnx.ModelProto()
    model.CopyFrom(exported.model_proto)
    erf = next(n for n in model.graph.node if n.op_type == "Erf")
    model.graph.output.append(onnx.helper.make_tensor_value_info(erf.output[0], onnx.TensorProto.FLOAT, None))
    session = InferenceSession(model)
    assert kernels(session).count("aten2onnx.fused:Gelu") == 1  # the exact gelu stays decomposed
    assert "Erf" in kernels(session)


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_transformers_run_bitwise_equal_to_eager_with_fusion(name):
    """Every exported node of these models is a one-to-one image of an ATen kernel or a re-fused
    group (gelu, attention): the whole model gives eager's bits."""
    import models

    torch.manual_seed(0)
    model = getattr(models, name)().eval()
    ids = models.token_ids(2, 16)
    exported = aten2onnx.export(model, (ids,), opset=18)
    session = InferenceSession(exported.model_proto)
    assert kernels(session).count("aten2onnx.fused:Attention") == 2
    got = session.run_torch({exported.input_names[0]: ids})[exported.output_names[0]]
    assert torch.equal(got, model(ids).last_hidden_state)


def test_hand_written_attention_is_not_fused():
    def attention(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) * 0.25, dim=-1) @ v

    exported = aten2onnx.export(attention, tuple(torch.randn(1, 2, 4, 8) for _ in range(3)), opset=18)
    assert not any(k.startswith("aten2onnx.fused") for k in kernels(InferenceSession(exported.model_proto)))


def test_fused_attention_keeps_a_float64_scale_exact():
    """The fused node's scale is a float64 tensor: a FLOAT attribute rounded 1/sqrt(2) to float32,
    1e-8 off eager's float64 attention."""
    torch.manual_seed(0)
    q = torch.randn(2, 3, 2, dtype=torch.float64)
    exported = aten2onnx.export(lambda q: F.scaled_dot_product_attention(q, q, q), (q,), opset=18)
    assert torch.equal(exported.run(q), F.scaled_dot_product_attention(q, q, q))


class Attention(torch.nn.Module):
    def __init__(self, scale=None):
        super().__init__()
        self.scale = scale

    def forward(self, q, mask):
        return F.scaled_dot_product_attention(q, q, q, attn_mask=mask, scale=self.scale)


@pytest.mark.parametrize("opset", range(9, 27))
def test_every_exported_decomposition_is_fused(opset):
    """The runtime's patterns (runtime/optimize.py) are exactly what the exporter writes at every opset it
    exports: no exported gelu, silu or attention is left running as its decomposition (a change to a
    symbolic that the patterns miss fails here, not silently in speed and bits)."""
    model, x = Activations().eval(), torch.randn(4, 16)
    session = InferenceSession(aten2onnx.export(model, (x,), opset=opset).model_proto)
    assert not {"Erf", "Tanh", "Sigmoid"} & set(kernels(session)), kernels(session)
    assert torch.equal(session.run_torch({"x": x})["output"], model(x))
    q, mask = torch.randn(1, 2, 3, 4), torch.rand(3, 3) > 0.2
    for model in (Attention(), Attention(scale=1.0)):  # (a scale of 1 is not written)
        exported = aten2onnx.export(model, (q, mask), opset=opset)
        assert model.scale is None or "Mul" not in {n.op_type for n in exported.model_proto.graph.node}
        session = InferenceSession(exported.model_proto)
        assert "Softmax" not in kernels(session), kernels(session)
        got, want = session.run_torch({"q": q, "mask": mask})["output"], model(q, mask)
        if "aten2onnx.fused:Attention" in kernels(session):
            assert torch.equal(got, want)
        else:  # ONNX's own Attention (opset 23): its kernel follows the spec's math, not sdpa's bits
            torch.testing.assert_close(got, want)


def test_attention_whose_reduce_max_lost_its_axes_runs_unfused():
    """A masked attention's ReduceMax without its axes attribute (a graph edited after export: the max is then
    over every axis) is not the exported attention: it runs as written, as onnx's reference evaluator runs it,
    where the fusion's matcher raised KeyError('axes') (fuzz_runtime, seed 2029113025)."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    torch.manual_seed(0)
    q, mask = torch.randn(1, 2, 3, 4), torch.rand(3, 3) > 0.2
    proto = aten2onnx.export(Attention(), (q, mask), opset=17).model_proto
    maxes = [n for n in proto.graph.node if n.op_type == "ReduceMax"]
    assert maxes and all(any(a.name == "axes" for a in n.attribute) for n in maxes)
    for node in maxes:
        kept = [a for a in node.attribute if a.name != "axes"]
        del node.attribute[:]
        node.attribute.extend(kept)
    onnx.checker.check_model(proto)
    session = InferenceSession(proto)
    assert "aten2onnx.fused:Attention" not in kernels(session)
    got = session.run_torch({"q": q, "mask": mask})["output"]
    want = ReferenceEvaluator(proto).run(None, {"q": q.numpy(), "mask": mask.numpy()})[0]
    torch.testing.assert_close(got, torch.from_numpy(want))
