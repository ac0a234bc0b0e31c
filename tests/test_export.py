"""The export API: fallback, user symbolics, errors, model preservation, saving, metadata."""

import inspect
import os
import re
import warnings

import onnx
import pytest
import torch

import aten2onnx
from aten2onnx import ArgumentError, CaptureError, SymbolicError, UnsupportedOperatorError
from aten2onnx.symbolic import MAX_OPSET
from conftest import run_ort
from models import MLP


def this_line(offset: int = 0) -> str:
    """file:line of the caller's line plus offset, as the exporter reports user code."""
    frame = inspect.currentframe().f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno + offset}"


# -- ATen fallback -------------------------------------------------------------------------------------


UNMAPPED = ("aten::special_i1.default", "aten::special_bessel_j0.default", "aten::polygamma.default",
            "aten::mode.default", "aten::special_zeta.other_scalar")


@pytest.fixture
def unmapped(without_builtin):
    without_builtin(*UNMAPPED)


class Unmapped(torch.nn.Module):
    """Uses two ops that the `unmapped` fixture leaves with no symbolic: special_i1 and special_bessel_j0."""

    def forward(self, x, y):
        a = torch.special.i1(x)
        return torch.special.bessel_j0(a + y) * 2


def test_fallback_aten_exports_runnable_aten_nodes_and_warns(unmapped):
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    with pytest.warns(UserWarning, match="aten::special_bessel_j0.default"):
        exported = aten2onnx.export(Unmapped(), (x, y), opset=18)
    assert exported.fallback_ops == ["aten::special_bessel_j0.default", "aten::special_i1.default"]
    model = exported.model_proto
    aten_nodes = [n for n in model.graph.node if n.op_type == "ATen"]
    assert {n.domain for n in aten_nodes} == {"org.pytorch.aten"}
    assert any(o.domain == "org.pytorch.aten" for o in model.opset_import)
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in aten_nodes[0].attribute}
    assert attrs["operator"] in (b"special_i1", b"special_bessel_j0")
    assert "overload_name" in attrs
    onnx.checker.check_model(model, full_check=True)
    torch.testing.assert_close(exported.run(x, y), Unmapped()(x, y))
    from aten2onnx.runtime import InferenceSession

    out = InferenceSession(model.SerializeToString()).run(None, {"x": x.numpy(), "y": y.numpy()})
    torch.testing.assert_close(torch.from_numpy(out[0]), Unmapped()(x, y))


def test_fallback_encodes_lists_scalars_and_dtypes(unmapped):
    def f(x, y):
        z = torch.ops.aten.polygamma.default(1, x)  # an int argument before the tensor
        w = torch.ops.aten.mode.default(y, 0)[1]  # second output of a tuple
        return z, w, torch.ops.aten.special_zeta.other_scalar(x.abs() + 1, 2.5)  # a float Scalar

    x, y = torch.randn(3, 5), torch.randn(3, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(f, (x, y))
    assert len(exported.fallback_ops) == 3
    for got, want in zip(exported.run(x, y), f(x, y)):
        torch.testing.assert_close(got, want)


def test_fallback_error_lists_every_unsupported_op_with_source_lines(unmapped):
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    with pytest.raises(UnsupportedOperatorError) as info:
        aten2onnx.export(Unmapped(), (x, y), fallback="error")
    message = str(info.value)
    assert "aten::special_i1.default" in message and "aten::special_bessel_j0.default" in message
    source = inspect.getsource(Unmapped.forward).splitlines()
    first = inspect.getsourcelines(Unmapped.forward)[1]
    i1_line = first + next(i for i, line in enumerate(source) if "special.i1" in line)
    assert f"{__file__}:{i1_line}" in message
    assert {op.overload for op in info.value.ops} == {"aten::special_i1.default", "aten::special_bessel_j0.default"}


def test_fallback_error_names_the_lowest_opset_that_supports_an_op():
    def f(x, i):  # (index_put writes with ScatterND, from 11)
        return x.index_put((i, i), torch.tensor(1.0))

    with pytest.raises(UnsupportedOperatorError, match="supported from opset 11"):
        aten2onnx.export(f, (torch.randn(3, 3), torch.tensor([0, 2])), opset=9, fallback="error")


def test_fallback_covers_a_case_the_opset_cannot_express():
    def f(x):
        return x[::2]

    x = torch.randn(6)
    dynamic = {"x": {0: torch.export.Dim("n", min=2)}}  # a stepped slice of a static dim is a Gather at opset 9
    with pytest.raises(UnsupportedOperatorError, match="opset 9 Slice takes only constant bounds and step 1"):
        aten2onnx.export(f, (x,), opset=9, dynamic_shapes=dynamic, fallback="error")
    with pytest.warns(UserWarning):
        exported = aten2onnx.export(f, (x,), opset=9, dynamic_shapes=dynamic)
    torch.testing.assert_close(exported.run(x), f(x))


# -- user symbolics --------------------------------------------------------------------------------------


class LayerNormModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(6)

    def forward(self, x):
        return self.norm(x)


def user_layer_norm(g, input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    mean = g.op("ReduceMean", input, axes=[-1], keepdims=1) if g.opset < 18 else g.op(
        "ReduceMean", input, g.const([-1]), keepdims=1)
    centered = g.op("Sub", input, mean)
    var = g.op("ReduceMean", g.op("Mul", centered, centered), axes=[-1], keepdims=1) if g.opset < 18 else g.op(
        "ReduceMean", g.op("Mul", centered, centered), g.const([-1]), keepdims=1)
    y = g.op("Div", centered, g.op("Sqrt", g.op("Add", var, g.const(eps, like=input))))
    return g.op("Identity", g.op("Add", g.op("Mul", y, weight), bias))


def test_user_symbolic_overrides_builtin_at_every_opset_at_or_above_its_own():
    x = torch.randn(2, 3, 6)
    model = LayerNormModel().eval()
    aten2onnx.register_symbolic("aten::layer_norm.default", opset=13)(user_layer_norm)
    try:
        for opset in (13, 17, 18, MAX_OPSET):  # built-in LayerNormalization exists from 17
            exported = aten2onnx.export(model, (x,), opset=opset)
            ops = {n.op_type for n in exported.model_proto.graph.node}
            assert "LayerNormalization" not in ops and "Identity" in ops, opset
            torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, {"x": x})[0]), model(x))
        below = aten2onnx.export(model, (x,), opset=11)
        assert "Identity" not in {n.op_type for n in below.model_proto.graph.node}
    finally:
        aten2onnx.unregister_symbolic("aten::layer_norm.default")
    restored = aten2onnx.export(model, (x,), opset=17)
    assert "LayerNormalization" in {n.op_type for n in restored.model_proto.graph.node}


def test_custom_symbolics_argument_applies_to_one_export_only():
    x = torch.randn(2, 3, 6)
    model = LayerNormModel().eval()
    once = aten2onnx.export(model, (x,), opset=17, custom_symbolics={"aten::layer_norm.default": user_layer_norm})
    assert "LayerNormalization" not in {n.op_type for n in once.model_proto.graph.node}
    again = aten2onnx.export(model, (x,), opset=17)
    assert "LayerNormalization" in {n.op_type for n in again.model_proto.graph.node}


@torch.library.custom_op("aten2onnx_test::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.tanh(x) * scale


@scaled_tanh.register_fake
def _(x, scale):
    return torch.empty_like(x)


def test_custom_op_from_torch_library_gets_a_user_symbolic():
    def f(x):
        return scaled_tanh(x, 3.0) + 1

    x = torch.randn(5)
    with pytest.raises(UnsupportedOperatorError, match="aten2onnx_test::scaled_tanh.default"):
        aten2onnx.export(f, (x,), fallback="error")

    @aten2onnx.register_symbolic("aten2onnx_test::scaled_tanh")
    def scaled_tanh_onnx(g, x, scale):
        return g.op("Mul", g.op("Tanh", x), g.const(scale, like=x))

    try:
        exported = aten2onnx.export(f, (x,), fallback="error")
        torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, {"x": x})[0]), f(x))
    finally:
        aten2onnx.unregister_symbolic("aten2onnx_test::scaled_tanh")


def test_custom_op_falls_back_to_an_aten_node_in_its_own_namespace():
    def f(x):
        return scaled_tanh(x, 2.0)

    x = torch.randn(5)
    with pytest.warns(UserWarning):
        exported = aten2onnx.export(f, (x,))
    node = next(n for n in exported.model_proto.graph.node if n.op_type == "ATen")
    assert {a.name for a in node.attribute} >= {"namespace", "operator", "scale"}
    from aten2onnx.errors import InvalidModelError
    from aten2onnx.runtime import InferenceSession

    with pytest.raises(InvalidModelError, match="aten2onnx_test"):
        InferenceSession(exported.model_proto)  # not an allowed namespace by default
    session = InferenceSession(exported.model_proto, allowed_aten_namespaces=("aten", "aten2onnx_test"))
    torch.testing.assert_close(torch.from_numpy(session.run(None, {"x": x.numpy()})[0]), f(x))


def test_user_registration_is_checked_against_the_schema():
    with pytest.raises(aten2onnx.RegistrationError, match="name the parameters"):
        aten2onnx.register_symbolic("aten::relu.default")(lambda g, x: x)


# -- in-place ops ----------------------------------------------------------------------------------------


def test_inplace_ops_dispatch_to_their_functional_twin():
    def f(x):
        y = x * 2
        y.add_(1, alpha=3)
        y.relu_()
        return y.mul_(x)

    x = torch.randn(4, 4)
    exported = aten2onnx.export(f, (x,), fallback="error")
    torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, {"x": x})[0]), f(x.clone()))


# -- errors ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, argument", [
    ({"args": [torch.randn(3, 8)]}, "args"),
    ({"args": (torch.randn(3, 8),), "opset": "17"}, "opset"),
    ({"args": (torch.randn(3, 8),), "fallback": "ignore"}, "fallback"),
    ({"args": (torch.randn(3, 8),), "input_names": "x"}, None),
])
def test_wrong_argument_types_name_the_argument(kwargs, argument):
    with pytest.raises(ArgumentError) as info:
        aten2onnx.export(MLP(), **kwargs)
    if argument:
        assert argument in str(info.value)


def test_opset_out_of_range_is_an_export_error():
    with pytest.raises(aten2onnx.ExportError, match="opsets 9 to"):
        aten2onnx.export(MLP(), (torch.randn(3, 8),), opset=MAX_OPSET + 1)


def test_handler_failure_names_node_overload_opset_and_source():
    def broken(g, self):
        raise ValueError("boom")

    def f(x):
        return torch.relu(x) + 1  # the failing line

    line = inspect.getsourcelines(f)[1] + 1
    with pytest.raises(SymbolicError) as info:
        aten2onnx.export(f, (torch.randn(3),), opset=17, custom_symbolics={"aten::relu.default": broken})
    message = str(info.value)
    for part in ("aten::relu.default", "'relu'", "opset 17", f"{__file__}:{line}", "ValueError: boom"):
        assert part in message
    assert isinstance(info.value.__cause__, ValueError)


def test_a_failing_builtin_symbolic_falls_back_with_a_warning(monkeypatch):
    from aten2onnx.registry import REGISTRY, Entry

    def broken(g, self):
        raise ValueError("boom")

    monkeypatch.setitem(REGISTRY._entries, "aten::relu.default", [Entry("aten::relu.default", 9, broken)])
    x = torch.randn(4)
    with pytest.warns(UserWarning, match="ValueError: boom.*exported as an ATen node"):
        exported = aten2onnx.export(lambda x: torch.relu(x) + 1, (x,))
    assert exported.fallback_ops == ["aten::relu.default"]
    torch.testing.assert_close(exported.run(x), torch.relu(x) + 1)
    with pytest.raises(SymbolicError, match="boom"):
        aten2onnx.export(lambda x: torch.relu(x) + 1, (x,), fallback="error")


def test_capture_failure_reports_both_modes_and_the_user_line():
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # data-dependent control flow
                return x + 1
            return x - 1

    with pytest.raises(CaptureError) as info:
        aten2onnx.export(DataDependent(), (torch.randn(3),))
    message = str(info.value)
    assert "non-strict capture" in message and "strict capture" in message
    line = inspect.getsourcelines(DataDependent.forward)[1] + 1
    assert f"{__file__}:{line}" in message


# -- the user's model is left as it was ---------------------------------------------------------------------


def test_model_state_flags_and_requires_grad_are_unchanged():
    model = MLP()
    model.train()
    model.net[0].eval()
    model.net[2].weight.requires_grad_(False)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flags = [m.training for m in model.modules()]
    grads = [p.requires_grad for p in model.parameters()]
    aten2onnx.export(model, (torch.randn(3, 8),))
    assert [m.training for m in model.modules()] == flags
    assert [p.requires_grad for p in model.parameters()] == grads
    after = model.state_dict()
    assert before.keys() == after.keys()
    for key in before:
        assert torch.equal(before[key], after[key]) and before[key].dtype == after[key].dtype


def test_parameters_become_initializers_named_by_state_dict_keys():
    model = MLP().eval()
    exported = aten2onnx.export(model, (torch.randn(3, 8),))
    names = {i.name for i in exported.model_proto.graph.initializer}
    assert {k for k in model.state_dict()} <= names


def test_nodes_carry_source_location_and_module_path():
    model = MLP().eval()
    exported = aten2onnx.export(model, (torch.randn(3, 8),))
    metas = [{p.key: p.value for p in n.metadata_props} for n in exported.model_proto.graph.node]
    assert all("aten_op" in m for m in metas)
    softmax_line = inspect.getsourcelines(MLP.forward)[1] + 1
    assert any(m.get("source", "").endswith(f"models.py:{softmax_line}") for m in metas)
    assert any(m.get("module", "").startswith("net.0 (Linear)") for m in metas)


# -- saving ------------------------------------------------------------------------------------------------------


def test_save_writes_atomically_and_reloads(tmp_path):
    x = torch.randn(3, 8)
    model = MLP().eval()
    exported = aten2onnx.export(model, (x,))
    path = tmp_path / "model.onnx"
    exported.save(path)
    assert os.listdir(tmp_path) == ["model.onnx"]
    loaded = onnx.load(str(path))
    onnx.checker.check_model(loaded, full_check=True)
    torch.testing.assert_close(torch.from_numpy(run_ort(loaded, {"x": x})[0]), model(x))


def test_streamed_save_equals_the_in_memory_model(tmp_path):
    model = MLP().eval()
    x = torch.randn(3, 8)
    streamed, in_memory = (aten2onnx.export(model, (x,)) for _ in range(2))
    streamed.save(tmp_path / "a.onnx")  # written from the module's tensors, never built in memory
    in_memory.model_proto  # noqa: B018  (builds the whole proto first)
    in_memory.save(tmp_path / "b.onnx")
    assert onnx.load(str(tmp_path / "a.onnx")) == onnx.load(str(tmp_path / "b.onnx"))


def test_weights_changed_after_export_are_refused(tmp_path):
    model = MLP().eval()
    exported = aten2onnx.export(model, (torch.randn(3, 8),))
    with torch.no_grad():
        model.net[0].weight.add_(1)
    with pytest.raises(aten2onnx.ExportError, match="changed in place after export"):
        exported.save(tmp_path / "m.onnx")
    assert not os.listdir(tmp_path)


def test_save_with_external_data_keeps_weights_beside_the_model(tmp_path):
    x = torch.randn(3, 8)
    model = MLP().eval()
    exported = aten2onnx.export(model, (x,))
    path = tmp_path / "model.onnx"
    exported.save(path, external_data=True)
    model_file, data_file = sorted(os.listdir(tmp_path))
    assert model_file == "model.onnx" and re.fullmatch(r"model\.onnx\.[0-9a-f]{16}\.data", data_file)
    assert os.path.getsize(path) < 10_000
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    torch.testing.assert_close(torch.from_numpy(session.run(None, {"x": x.numpy()})[0]), model(x))
    from aten2onnx.runtime import InferenceSession

    ours = InferenceSession(str(path)).run(None, {"x": x.numpy()})
    torch.testing.assert_close(torch.from_numpy(ours[0]), model(x))
    assert exported.model_proto.graph.initializer[0].raw_data  # the in-memory model is untouched


def test_failed_save_leaves_no_partial_file(tmp_path, monkeypatch):
    exported = aten2onnx.export(MLP().eval(), (torch.randn(3, 8),))
    path = tmp_path / "model.onnx"
    path.write_bytes(b"previous")

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        exported.save(path)
    assert path.read_bytes() == b"previous"
    assert os.listdir(tmp_path) == ["model.onnx"]


@pytest.mark.parametrize("external_data", [False, True])
@pytest.mark.parametrize("target", ["a/b/'x/../m.onnx", "missing/m.onnx", "a/b/file.txt/m.onnx"])
def test_save_through_a_folder_that_does_not_exist_writes_nothing(target, external_data, tmp_path, monkeypatch):
    """A path whose folder the system cannot reach (a/b/'x/.. needs a/b/'x, which lexical normalization drops)
    is our error before anything is written: it left a/b/m.onnx.<hash>.data behind the model it could not write."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "file.txt").write_text("")
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    exported = aten2onnx.export(MLP().eval(), (torch.randn(3, 8),))
    with pytest.raises(aten2onnx.ArgumentError, match="does not exist"):
        exported.save(target, external_data=external_data)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    if "file.txt" not in target:  # the advice, followed, saves the model where the path says
        os.makedirs(os.path.dirname(target), exist_ok=True)
        exported.save(target, external_data=external_data)
        assert os.path.isfile(target)


def test_a_model_that_fails_to_write_takes_its_new_data_file_with_it(tmp_path, monkeypatch):
    """The data file is committed first; where the model then fails to be written, the new data file goes."""
    exported = aten2onnx.export(MLP().eval(), (torch.randn(3, 8),))
    real = aten2onnx.exporter.model._atomic_write

    def fail(folder, path, chunks):
        raise OSError("disk full")

    monkeypatch.setattr(aten2onnx.exporter.model, "_atomic_write", fail)
    with pytest.raises(OSError, match="disk full"):
        exported.save(tmp_path / "m.onnx", external_data=True)
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(aten2onnx.exporter.model, "_atomic_write", real)
    exported.save(tmp_path / "m.onnx", external_data=True)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".data", ".onnx"]


# -- names, structure, dynamic dims ---------------------------------------------------------------------------------


def test_input_and_output_names():
    x = torch.randn(3, 8)
    exported = aten2onnx.export(MLP().eval(), (x,), input_names=["features"], output_names=["probs"])
    assert exported.input_names == ["features"] and exported.output_names == ["probs"]
    assert [i.name for i in exported.model_proto.graph.input] == ["features"]
    with pytest.raises(aten2onnx.ExportError, match="output_names has 2 names"):
        aten2onnx.export(MLP().eval(), (x,), output_names=["a", "b"])


def test_outputs_that_are_inputs_or_repeated_get_their_own_names():
    def f(x, y):
        z = x + y
        return x, z, z, {"w": y}

    x, y = torch.randn(2), torch.randn(2)
    exported = aten2onnx.export(f, (x, y))
    onnx.checker.check_model(exported.model_proto, full_check=True)
    out = exported.run(x, y)
    assert isinstance(out, tuple) and isinstance(out[3], dict)
    torch.testing.assert_close(out[2], x + y)
    torch.testing.assert_close(out[3]["w"], y)
    assert len(set(exported.output_names)) == 4


def test_kwargs_and_nested_inputs():
    def f(x, *, scale):
        return x * scale["a"]

    x, a = torch.randn(3), torch.randn(3)
    exported = aten2onnx.export(f, (x,), {"scale": {"a": a}})
    torch.testing.assert_close(exported.run(x, scale={"a": a}), x * a)


def test_dynamic_batch_becomes_a_dim_param_and_runs_on_other_sizes():
    model = MLP().eval()
    batch = torch.export.Dim("batch")
    exported = aten2onnx.export(model, (torch.randn(3, 8),), dynamic_shapes={"x": {0: batch}})
    dim = exported.model_proto.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param and not dim.HasField("dim_value")
    for size in (1, 5, 17):
        x = torch.randn(size, 8)
        torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, {"x": x})[0]), model(x))
        torch.testing.assert_close(exported.run(x), model(x))


def test_exported_program_input():
    model = MLP().eval()
    x = torch.randn(3, 8)
    ep = torch.export.export(model, (x,))
    exported = aten2onnx.export(ep, (x,))
    torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, {"x": x})[0]), model(x))


def test_fallback_takes_runtime_symint_arguments_as_inputs(without_decomposition):
    def f(x):
        return x.roll(x.shape[0] // 2, 0)  # roll is translated for static shapes only

    exported = aten2onnx.export(f, (torch.randn(4, 3),), dynamic_shapes={"x": {0: torch.export.Dim("b")}})
    assert exported.fallback_ops == ["aten::roll.default"]
    node = next(n for n in exported.model_proto.graph.node if n.op_type == "ATen")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs["input_args"] == [b"self", b"shifts"]
    for batch in (2, 5, 7):
        x = torch.randn(batch, 3)
        torch.testing.assert_close(exported.run(x), f(x))


def test_attention_is_one_node_from_opset_23_and_a_decomposition_before():
    def f(q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    q, k, v = (torch.randn(2, 3, 5, 8) for _ in range(3))
    mask = torch.rand(2, 1, 5, 5) > 0.3
    mask[..., 0] = True
    for opset, has_attention in ((18, False), (23, True), (MAX_OPSET, True)):
        exported = aten2onnx.export(f, (q, k, v, mask), opset=opset, fallback="error")
        assert ("Attention" in {n.op_type for n in exported.model_proto.graph.node}) == has_attention
        feeds = {"q": q, "k": k, "v": v, "mask": mask}
        torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, feeds)[0]), f(q, k, v, mask))
        torch.testing.assert_close(exported.run(q, k, v, mask), f(q, k, v, mask))


def test_attention_dropout_is_never_silently_dropped():
    def f(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    args = tuple(torch.randn(1, 2, 4, 8) for _ in range(3))
    # the handler refuses the random case; torch's decomposition of the op keeps the dropout, as random nodes
    exported = aten2onnx.export(f, args, fallback="error")
    assert exported.decomposed_ops == ["aten::scaled_dot_product_attention.default"]
    assert {"RandomUniform", "RandomUniformLike", "Bernoulli"} & {n.op_type for n in exported.model_proto.graph.node}
    assert not torch.equal(exported.run(*args), exported.run(*args))


def test_fallback_op_with_a_nested_result(without_builtin):
    without_builtin(*[f"aten::{op}" for op in ("histogramdd.default", "histogramdd.int_bins", "histogramdd.TensorList_bins",
                                               "_histogramdd_bin_edges.default", "_histogramdd_from_bin_cts.default",
                                               "_histogramdd_from_bin_tensors.default")])

    def f(x):
        hist, edges = torch.histogramdd(x, bins=[3, 4])  # (Tensor, Tensor[]): no symbolic
        return hist, edges[0], edges[1]

    x = torch.rand(20, 2)
    with pytest.warns(UserWarning, match="histogramdd"):
        exported = aten2onnx.export(f, (x,))
    for got, want in zip(exported.run(x), f(x)):
        torch.testing.assert_close(got, want)


def test_numbers_the_model_returns_are_constant_graph_outputs():
    class Shapes(torch.nn.Module):
        def forward(self, x):
            return x * 2, x.shape[0], None, 0.5, True

    x = torch.randn(3, 2)
    exported = aten2onnx.export(Shapes(), (x,))
    assert len(exported.output_names) == 4  # None has no ONNX form; the numbers do
    want = Shapes()(x)
    for got in (exported.run(x), exported.structure_outputs(run_ort(exported.model_proto, {"x": x}))):
        assert [type(v) for v in got[1:]] == [type(v) for v in want[1:]] and got[1:] == want[1:]
        torch.testing.assert_close(torch.as_tensor(got[0]), want[0])


def test_a_model_with_nothing_to_output_is_refused():
    class Nothing(torch.nn.Module):
        def forward(self, x):
            return None

    with pytest.raises(aten2onnx.ExportError, match="no outputs"):
        aten2onnx.export(Nothing(), (torch.randn(2),))


@pytest.mark.parametrize("opset", [9, 18])
def test_ops_with_statically_empty_results_export_as_empty_constants(opset):
    def f(a, b, w, x):  # onnxruntime cannot run some of these MatMuls on zero-size batches
        return torch.nn.functional.bilinear(a, b, w), torch.nn.functional.adaptive_avg_pool3d(x, (5, 7, 4)), a.sum(0)

    args = (torch.randn(0, 3), torch.randn(0, 4), torch.randn(5, 3, 4), torch.randn(0, 8, 8, 8, 8))
    exported = aten2onnx.export(f, args, opset=opset)
    want = f(*args)
    kinds = {n.op_type for n in exported.model_proto.graph.node}
    assert "MatMul" not in kinds
    for got in (exported.run(*args), run_ort(exported.model_proto, dict(zip(exported.input_names, args)))):
        for g_, w in zip(got, want):
            torch.testing.assert_close(torch.as_tensor(g_), w)


@pytest.mark.parametrize("fn", [
    lambda a, b: (torch.equal(a, b), torch.allclose(a, b, rtol=0.01), a.equal(b)),
    lambda a, b: (torch.cov(a), torch.cov(a, correction=0, fweights=torch.tensor([1, 2, 1, 3]), aweights=b[0].abs()),
                  torch.corrcoef(a)),
], ids=["equal_allclose", "cov_corrcoef"])
def test_functions_with_data_dependent_checks_capture(fn):
    a = torch.randn(3, 4)
    exported = aten2onnx.export(fn, (a, a.clone()))
    for b in (a.clone(), a + 1e-4, a + 1):
        want = fn(a, b)
        for got in (exported.run(a, b), run_ort(exported.model_proto, {"a": a, "b": b})):
            for g_, w in zip(got, want):
                torch.testing.assert_close(torch.as_tensor(g_), torch.as_tensor(w), check_dtype=False)


def test_a_result_onnx_has_no_type_for_is_named_at_its_node():
    with pytest.raises(aten2onnx.ExportError, match=r"'to'.*float8_e8m0fnu.*use a dtype ONNX has"):
        aten2onnx.export(lambda x: x.to(torch.float8_e8m0fnu), (torch.randn(3),))


def test_sizes_read_from_data_capture_as_symbolic_sizes():
    one_hot = aten2onnx.export(lambda x: torch.nn.functional.one_hot(x), (torch.tensor([0, 3, 1]),),
                               dynamic_shapes={"x": {0: "n"}}, fallback="error")
    for x in (torch.tensor([0, 3, 1]), torch.tensor([4, 0]), torch.tensor([2])):
        assert torch.equal(one_hot.run(x), torch.nn.functional.one_hot(x))
        assert (run_ort(one_hot.model_proto, {"x": x})[0] == torch.nn.functional.one_hot(x).numpy()).all()
    split = aten2onnx.export(lambda x, i: torch.tensor_split(x, i, 1), (torch.randn(3, 10), torch.tensor([2, 5])),
                             fallback="error")
    for i in (torch.tensor([2, 5]), torch.tensor([0, 9]), torch.tensor([6, 3]), torch.tensor([-4, 8])):
        x = torch.randn(3, 10)
        want = torch.tensor_split(x, i, 1)
        for got in (split.run(x, i), run_ort(split.model_proto, {"x": x, "i": i})):
            assert len(got) == 3 and all(torch.equal(torch.as_tensor(a), b) for a, b in zip(got, want))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("opset", [17, 18])
def test_omitted_trailing_inputs_are_left_out(opset, dtype):
    """LayerNormalization without a bias: the omitted input is left out, not named "" (onnxruntime
    1.31 crashes on that)."""
    model = torch.nn.LayerNorm(8, elementwise_affine=False).eval()
    x = torch.randn(2, 8, dtype=dtype)
    exported = aten2onnx.export(model, (x,), opset=opset)
    assert all(not node.input or node.input[-1] for node in exported.model_proto.graph.node)
    got = run_ort(exported.model_proto, {exported.input_names[0]: x})[0]
    torch.testing.assert_close(torch.from_numpy(got), model.to(dtype)(x), rtol=1e-3, atol=1e-3)


def test_input_names_name_tensor_inputs_after_a_number():
    """input_names name the tensor inputs in order, also when a number torch.export baked comes first
    (it used to shift the names by one)."""
    class Scaled(torch.nn.Module):
        def forward(self, factor, x, y):
            return x * factor + y

    exported = aten2onnx.export(Scaled(), (2, torch.randn(3), torch.randn(3)), input_names=["x", "y"])
    assert exported.input_names == ["x", "y"]
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(exported.run(2, x, y), x * 2 + y)


@pytest.mark.parametrize("bad, message", [(None, "not NoneType"), (3, "not int"), (b"m.onnx", "not bytes"),
                                          ("", "an empty path"), (".", "a folder")])
def test_save_of_what_is_not_a_file_path_is_our_error(bad, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exported = aten2onnx.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    with pytest.raises(aten2onnx.ArgumentError, match=message):
        exported.save(bad)
    assert os.listdir(tmp_path) == []


def _forms():
    """Every form of one model people hand over: (name, make(module, example) -> the form)."""
    return [
        ("module", lambda m, x: m),
        ("function", lambda m, x: (lambda t: m(t))),
        ("exported_program", lambda m, x: torch.export.export(m, (x,))),
        ("exported_program_module", lambda m, x: torch.export.export(m, (x,)).module()),  # refuses train()/eval()
        ("symbolic_trace", lambda m, x: torch.fx.symbolic_trace(m)),
        ("torch_compile", lambda m, x: torch.compile(m)),
    ]


@pytest.mark.parametrize("name, make", _forms(), ids=[name for name, _ in _forms()])
def test_every_model_form_exports_and_matches_eager(name, make):
    """ExportedProgram.module() (and quantization's converted GraphModules) refuse train() and eval(): the
    export no longer calls them there (an InternalError before)."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU()).eval()
    x = torch.randn(3, 4)
    form = make(model, x)
    exported = aten2onnx.export(form, (x,))
    other = torch.randn(3, 4)
    torch.testing.assert_close(exported.run(other), model(other))
    torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, {exported.input_names[0]: other})[0]),
                               model(other))
