"""ONNX local functions: `export(..., functions=[ModuleClass])` makes each call of a listed class a call of
one FunctionProto (onnx's full checker, onnxruntime, our runtime and eager PyTorch as the truths), and
aten2onnx.runtime runs local functions of any file (hand-built ones against onnxruntime; hostile ones
are our error)."""

from __future__ import annotations

import collections
import copy
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

import aten2onnx
from aten2onnx.errors import InvalidModelError
from aten2onnx.exporter.functions import DOMAIN, INLINE_CONSTANT
from aten2onnx.runtime import InferenceSession
from aten2onnx.symbolic import MAX_OPSET

import models

F32 = TensorProto.FLOAT


def _calls(model: onnx.ModelProto) -> collections.Counter:
    return collections.Counter(n.op_type for n in model.graph.node if n.domain == DOMAIN)


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _kernels(exported: aten2onnx.ExportedModel) -> collections.Counter:
    """The kernels our runtime plans for an export (after inlining, fusion and constant hoisting)."""
    return collections.Counter(step.node.op_type for step in exported.session()._runner.steps)


# ---- GPT-2: one function, one call per block, everything else as the flat export -------------------

def test_gpt2_twelve_blocks_make_one_function():
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    model = models.gpt2(layers=12).eval()
    ids = models.token_ids()
    flat = aten2onnx.export(model, (ids,))
    functions = aten2onnx.export(model, (ids,), functions=[GPT2Block])
    proto = functions.model_proto
    assert [f.name for f in proto.functions] == ["GPT2Block"]
    assert _calls(proto) == {"GPT2Block": len(model.h)}
    onnx.checker.check_model(proto, full_check=True)
    # weights are main-graph initializers, each once; a body holds only small constants
    assert sorted(t.name for t in proto.graph.initializer if t.name in model.state_dict()) == \
        sorted(t.name for t in flat.model_proto.graph.initializer if t.name in model.state_dict())
    body = proto.functions[0]
    assert all(np.prod(a.t.dims) <= INLINE_CONSTANT for n in body.node for a in n.attribute if a.type == a.TENSOR)
    assert all(n.metadata_props for n in body.node if n.op_type != "Constant")  # provenance kept in the body
    assert len(proto.SerializeToString()) <= len(flat.model_proto.SerializeToString())

    # the one difference: the flat export writes the last block's residual sum, which ln_f alone reads, as
    # Sum (not fused by onnxruntime into its slower SkipLayerNormalization); a function's body is the same
    # in every call, so there it stays an Add, which onnxruntime fuses: its results differ in rounding
    feeds = {"input_ids": ids.numpy()}
    np.testing.assert_allclose(_ort(proto, feeds)[0], _ort(flat.model_proto, feeds)[0], rtol=1e-5, atol=1e-5)
    assert torch.equal(functions.run(ids).last_hidden_state, flat.run(ids).last_hidden_state)
    # inlined, our runtime fuses as it does the flat export
    assert _kernels(flat) - _kernels(functions) == collections.Counter({"Sum": 1})
    assert _kernels(functions) - _kernels(flat) == collections.Counter({"Add": 1})
    with torch.no_grad():
        torch.testing.assert_close(functions.run(ids).last_hidden_state, model(ids).last_hidden_state)


def test_bert_layers_as_functions_keep_the_flat_exports_sums():
    from transformers.models.bert.modeling_bert import BertLayer

    model = models.bert(layers=2).eval()
    ids = models.token_ids()
    flat = aten2onnx.export(model, (ids,))
    functions = aten2onnx.export(model, (ids,), functions=[BertLayer])
    assert _calls(functions.model_proto) == {"BertLayer": 2}
    # a residual sum its own layer's norm alone reads is a Sum in the body as in the flat export (onnxruntime
    # would fuse an Add into its slower SkipLayerNormalization): inlined, the two plan the same kernels
    assert collections.Counter(n.op_type for n in functions.model_proto.functions[0].node)["Sum"] == 2
    assert _kernels(functions) == _kernels(flat)
    feeds = {"input_ids": ids.numpy()}
    with torch.no_grad():
        want = model(ids).last_hidden_state.numpy()
    np.testing.assert_allclose(_ort(functions.model_proto, feeds)[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("opset", [13, 18, MAX_OPSET])
def test_gpt2_at_opsets(opset):
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    model = models.gpt2(layers=2).eval()
    ids = models.token_ids()
    exported = aten2onnx.export(model, (ids,), opset=opset, functions=[GPT2Block],
                                dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}})
    onnx.checker.check_model(exported.model_proto, full_check=True)
    other = models.token_ids(batch=3, seq=9)
    with torch.no_grad():
        expected = model(other).last_hidden_state
    torch.testing.assert_close(torch.from_numpy(_ort(exported.model_proto, {"input_ids": other.numpy()})[0]), expected)
    torch.testing.assert_close(exported.run(other).last_hidden_state, expected)


@pytest.mark.parametrize("spec", ["nested", "all"])
def test_nested_and_every_repeated_class(spec):
    """Listed classes nest (a block's function calls its attention's); True takes every class called twice."""
    from transformers.models.gpt2.modeling_gpt2 import GPT2Attention, GPT2Block

    model = models.gpt2(layers=2).eval()
    ids = models.token_ids()
    exported = aten2onnx.export(model, (ids,), functions=[GPT2Block, GPT2Attention] if spec == "nested" else True)
    proto = exported.model_proto
    onnx.checker.check_model(proto, full_check=True)
    names = {f.name for f in proto.functions}
    assert {"GPT2Block", "GPT2Attention"} <= names
    block = next(f for f in proto.functions if f.name == "GPT2Block")
    assert "GPT2Attention" in {n.op_type for n in block.node if n.domain == DOMAIN}
    assert _calls(proto)["GPT2Block"] == 2
    with torch.no_grad():
        expected = model(ids).last_hidden_state
    torch.testing.assert_close(torch.from_numpy(_ort(proto, {"input_ids": ids.numpy()})[0]), expected)
    torch.testing.assert_close(exported.run(ids).last_hidden_state, expected)


def test_llama_decoder_layers():
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    model = models.llama(layers=3).eval()
    ids = models.token_ids()
    exported = aten2onnx.export(model, (ids,), functions=[LlamaDecoderLayer])
    proto = exported.model_proto
    assert _calls(proto) == {"LlamaDecoderLayer": 3}
    assert [f.name for f in proto.functions] == ["LlamaDecoderLayer"]
    onnx.checker.check_model(proto, full_check=True)
    with torch.no_grad():
        expected = model(ids).last_hidden_state
    torch.testing.assert_close(torch.from_numpy(_ort(proto, {"input_ids": ids.numpy()})[0]), expected)
    torch.testing.assert_close(exported.run(ids).last_hidden_state, expected)


def test_transformer_encoder_dynamic_batch():
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)  # eager runs the path the graph records
    try:
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=3, enable_nested_tensor=False).eval()
        exported = aten2onnx.export(model, (torch.randn(2, 7, 32),), functions=[torch.nn.TransformerEncoderLayer],
                                    dynamic_shapes={"src": {0: "batch"}})
        proto = exported.model_proto
        assert sum(_calls(proto).values()) == 3
        assert all(f.name.startswith("TransformerEncoderLayer") for f in proto.functions)
        onnx.checker.check_model(proto, full_check=True)
        x = torch.randn(5, 7, 32)
        with torch.no_grad():
            expected = model(x)
    finally:
        torch.backends.mha.set_fastpath_enabled(before)
    torch.testing.assert_close(torch.from_numpy(_ort(proto, {exported.input_names[0]: x.numpy()})[0]), expected)
    torch.testing.assert_close(exported.run(x), expected)


# ---- bodies that differ, state, fallback nodes, exact mode -----------------------------------------

class Scaled(torch.nn.Module):
    """Python control flow bakes the scale into the graph: instances with other scales have other bodies."""

    def __init__(self, scale):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.scale = scale

    def forward(self, x):
        return torch.tanh(self.linear(x)) * self.scale


class Stack(torch.nn.Module):
    def __init__(self, scales):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Scaled(s) for s in scales])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


@pytest.mark.parametrize("scales", [(2.0, 2.0, 2.0), (2.0, 3.0, 2.0)])
def test_bodies_differing_between_calls_get_their_own_function(scales):
    model = Stack(scales).eval()
    x = torch.randn(4, 8)
    exported = aten2onnx.export(model, (x,), functions=[Scaled])
    proto = exported.model_proto
    assert len(proto.functions) == len(set(scales))
    assert sum(_calls(proto).values()) == len(scales)
    onnx.checker.check_model(proto, full_check=True)
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(torch.from_numpy(_ort(proto, {exported.input_names[0]: x.numpy()})[0]), expected)
    torch.testing.assert_close(exported.run(x), expected)


class Counting(torch.nn.Module):
    """A block that writes a buffer and calls an op that may fall back to an ATen node."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.register_buffer("seen", torch.zeros(8))

    def forward(self, x):
        self.seen.add_(x.sum(0))
        return torch.special.bessel_j0(self.linear(x)) + self.seen


@pytest.mark.parametrize("exact", [False, True], ids=["default", "exact"])
@pytest.mark.parametrize("fallback", [False, True], ids=["symbolic", "aten_fallback"])
def test_state_fallback_and_exact_inside_functions(exact, fallback, without_builtin):
    if fallback:
        without_builtin("aten::special_bessel_j0.default")
    model = torch.nn.Sequential(*[Counting() for _ in range(3)]).eval()
    reference = copy.deepcopy(model)
    x = torch.randn(4, 8)
    exported = aten2onnx.export(model, (x,), functions=[Counting], exact=exact)
    proto = exported.model_proto
    assert _calls(proto) == {"Counting": 3}
    assert exported.fallback_ops == (["aten::special_bessel_j0.default"] if fallback else [])
    assert any(n.domain == "org.pytorch.aten" for n in proto.functions[0].node) == fallback
    onnx.checker.check_model(proto, full_check=not fallback)  # shape inference knows no ATen nodes
    for _ in range(2):  # the buffers carry over between runs, as in eager
        with torch.no_grad():
            expected = reference(x)
        got = exported.run(x)
        if exact:
            assert torch.equal(got, expected)
        else:
            torch.testing.assert_close(got, expected)


def test_save_and_load_with_external_data(tmp_path):
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    model = models.gpt2(layers=2).eval()
    ids = models.token_ids()
    exported = aten2onnx.export(model, (ids,), functions=[GPT2Block])
    path = os.path.join(tmp_path, "gpt2.onnx")
    exported.save(path, external_data=True)
    assert any(name.endswith(".data") for name in os.listdir(tmp_path))
    loaded = onnx.load(path)
    assert [f.name for f in loaded.functions] == ["GPT2Block"]
    onnx.checker.check_model(loaded, full_check=True)  # weights read back from the data file
    with torch.no_grad():
        expected = model(ids).last_hidden_state.numpy()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    np.testing.assert_allclose(ort.InferenceSession(path, options).run(None, {"input_ids": ids.numpy()})[0],
                               expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(InferenceSession(path).run(None, {"input_ids": ids.numpy()})[0],
                               expected, rtol=1e-4, atol=1e-5)


def test_arguments():
    model = Stack((2.0, 2.0)).eval()
    with pytest.warns(UserWarning, match="no module of class Linear2"):
        exported = aten2onnx.export(model, (torch.randn(2, 8),), functions=["Linear2"])
    assert not exported.model_proto.functions and any("Linear2" in note for note in exported.notes)
    with pytest.raises(aten2onnx.ArgumentError, match="functions"):
        aten2onnx.export(model, (torch.randn(2, 8),), functions=[model.blocks[0]])
    by_name = aten2onnx.export(model, (torch.randn(2, 8),), functions=["Scaled"])
    assert _calls(by_name.model_proto) == {"Scaled": 2}


# ---- the runtime: functions of other tools' files, and hostile ones ------------------------------

def _vi(name, shape=None, elem=F32):
    return helper.make_tensor_value_info(name, elem, shape)


def _function(name, inputs, outputs, nodes, *, domain="custom", attributes=(), defaults=(), opset=18):
    function = helper.make_function(domain, name, list(inputs), list(outputs), list(nodes),
                                    [helper.make_opsetid("", opset), helper.make_opsetid(domain, 1)],
                                    attributes=list(attributes))
    function.attribute_proto.extend(defaults)
    return function


def _model(nodes, functions, inputs=("x",), outputs=("y",), opset=18, domain="custom"):
    graph = helper.make_graph(list(nodes), "g", [_vi(i, [2, 3]) for i in inputs], [_vi(o, [2, 3]) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(domain, 1)],
                             functions=list(functions), ir_version=10)


def _foreign_model() -> onnx.ModelProto:
    """As onnxscript writes them: an attribute reference with a default, a function calling a function,
    a call inside an If branch, and one function called twice."""
    relu = helper.make_node("LeakyRelu", ["a"], ["b"])
    relu.attribute.append(helper.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT))
    leaky = _function("Leaky", ["a"], ["b"], [relu], defaults=[helper.make_attribute("alpha", 0.2)])
    block = _function("Block", ["u", "w"], ["v"], [
        helper.make_node("MatMul", ["u", "w"], ["m"]),
        helper.make_node("Leaky", ["m"], ["l"], domain="custom", alpha=0.05),
        helper.make_node("Leaky", ["l"], ["v"], domain="custom"),
    ])
    branch = helper.make_graph([helper.make_node("Block", ["h", "w"], ["t"], domain="custom")], "then", [], [_vi("t", [3, 4])])
    other = helper.make_graph([helper.make_node("Neg", ["h"], ["e"])], "else", [], [_vi("e", [3, 4])])
    w = helper.make_tensor("w", F32, [4, 4], np.random.default_rng(0).standard_normal(16).astype(np.float32))
    nodes = [
        helper.make_node("Block", ["x", "w"], ["h"], domain="custom"),
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["p"]),
        helper.make_node("If", ["p"], ["y"], then_branch=branch, else_branch=other),
    ]
    graph = helper.make_graph(nodes, "g", [_vi("x", [3, 4])], [_vi("y", [3, 4])],
                              [w, helper.make_tensor("zero", F32, [], [0.0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("custom", 1)],
                             functions=[leaky, block], ir_version=10)


def test_runtime_runs_other_tools_functions():
    model = _foreign_model()
    onnx.checker.check_model(model, full_check=True)
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    for x in (x, -x):  # each branch once
        expected = _ort(model, {"x": x})[0]
        np.testing.assert_allclose(InferenceSession(model).run(None, {"x": x})[0], expected, rtol=1e-6, atol=1e-6)


def _chain(depth, calls_each):
    """f0 calls f1 `calls_each` times, ... down to f{depth}, an Identity."""
    functions = [_function(f"f{depth}", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])])]
    for k in range(depth - 1, -1, -1):
        nodes, current = [], "a"
        for i in range(calls_each):
            nodes.append(helper.make_node(f"f{k + 1}", [current], [f"t{i}"], domain="custom"))
            current = f"t{i}"
        nodes.append(helper.make_node("Identity", [current], ["b"]))
        functions.append(_function(f"f{k}", ["a"], ["b"], nodes))
    return _model([helper.make_node("f0", ["x"], ["y"], domain="custom")], functions)


def _single(body_nodes, inputs=("a",), outputs=("b",), call_inputs=("x",), call_outputs=("y",), **call_attrs):
    function = _function("f", inputs, outputs, body_nodes)
    return _model([helper.make_node("f", list(call_inputs), list(call_outputs), domain="custom", **call_attrs)],
                  [function])


def _recursive():
    f = _function("f", ["a"], ["b"], [helper.make_node("g", ["a"], ["b"], domain="custom")])
    g = _function("g", ["a"], ["b"], [helper.make_node("f", ["a"], ["b"], domain="custom")])
    return _model([helper.make_node("f", ["x"], ["y"], domain="custom")], [f, g])


def _self_call_in_branch():
    branch = helper.make_graph([helper.make_node("f", ["a"], ["t"], domain="custom")], "then", [], [_vi("t")])
    other = helper.make_graph([helper.make_node("Identity", ["a"], ["e"])], "else", [], [_vi("e")])
    f = _function("f", ["a", "p"], ["b"], [helper.make_node("If", ["p"], ["b"], then_branch=branch, else_branch=other)])
    return _model([helper.make_node("f", ["x", "x"], ["y"], domain="custom")], [f])


def _duplicate():
    f = _function("f", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])])
    return _model([helper.make_node("f", ["x"], ["y"], domain="custom")], [f, copy.deepcopy(f)])


def _other_opset():
    f = _function("f", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])], opset=13)
    return _model([helper.make_node("f", ["x"], ["y"], domain="custom")], [f])


HOSTILE = [
    ("recursion", _recursive, "calls itself"),
    ("self_call_in_branch", _self_call_in_branch, "calls itself"),
    ("duplicate", _duplicate, "defined twice"),
    ("reads_outer_name", lambda: _single([helper.make_node("Add", ["a", "x"], ["b"])]), "no input of the function"),
    ("output_not_made", lambda: _single([helper.make_node("Identity", ["a"], ["c"])]), "made by no node"),
    ("output_is_input", lambda: _single([], outputs=("a",)), "made by no node"),
    ("defined_twice", lambda: _single([helper.make_node("Identity", ["a"], ["b"]),
                                       helper.make_node("Identity", ["a"], ["b"])]), "already defined"),
    ("too_many_inputs", lambda: _single([helper.make_node("Identity", ["a"], ["b"])], call_inputs=("x", "x")),
     "the function takes 1"),
    ("unknown_attribute", lambda: _single([helper.make_node("Identity", ["a"], ["b"])], alpha=1.0),
     "does not declare"),
    ("exponential", lambda: _chain(24, 3), "expand to more than"),
    ("deep", lambda: _chain(40, 1), "nests calls"),
    ("other_opset", _other_opset, "runs function bodies inlined"),
]


@pytest.mark.parametrize("build,message", [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE])
def test_hostile_functions_are_our_error(build, message):
    with pytest.raises(InvalidModelError, match=message):
        InferenceSession(build())


def test_inlined_names_do_not_clash():
    """Two calls of one function, whose body names coincide with the main graph's own names."""
    f = _function("f", ["a"], ["b"], [helper.make_node("Neg", ["a"], ["y"]), helper.make_node("Abs", ["y"], ["b"])])
    model = _model([helper.make_node("f", ["x"], ["h"], domain="custom", name="first"),
                    helper.make_node("f", ["h"], ["y"], domain="custom", name="second")], [f])
    onnx.checker.check_model(model, full_check=True)
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(InferenceSession(model).run(None, {"x": x})[0], _ort(model, {"x": x})[0])


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.linear(x).sin() * 0.5, lambda x: x.cos() + 1.5, (x,))


def test_control_flow_inside_a_function():
    """An If inside the body reads the block's weights and constants from the function's scope."""
    model = torch.nn.Sequential(Gate(), Gate(), Gate()).eval()
    exported = aten2onnx.export(model, (torch.randn(3, 4),), functions=[Gate])
    proto = exported.model_proto
    assert _calls(proto) == {"Gate": 3} and "If" in {n.op_type for n in proto.functions[0].node}
    onnx.checker.check_model(proto, full_check=True)
    for x in (torch.ones(3, 4), -torch.ones(3, 4)):  # both branches
        with torch.no_grad():
            expected = model(x)
        torch.testing.assert_close(torch.from_numpy(_ort(proto, {exported.input_names[0]: x.numpy()})[0]), expected)
        torch.testing.assert_close(exported.run(x), expected)


CLI_SPEC = '''
import torch

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return x + torch.relu(self.linear(x))

def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(Block(), Block(), Block()).eval(), (torch.randn(2, 8),)
'''


@pytest.mark.parametrize("names", ["Block", "all"])
def test_command_exports_functions(tmp_path, monkeypatch, capsys, names):
    from aten2onnx import cli

    (tmp_path / "spec.py").write_text(CLI_SPEC)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["export", "spec.py:make", "-o", "blocks.onnx", "--functions", names]) == 0
    assert "PASS" in capsys.readouterr().out
    model = onnx.load(str(tmp_path / "blocks.onnx"))
    assert _calls(model)["Block"] == 3
    onnx.checker.check_model(model, full_check=True)


def test_function_constants_with_external_data_are_read_from_the_models_folder(tmp_path):
    """A Constant in a function body may keep its data in a file (onnx.save's size threshold): read as
    any other external tensor, from the model's folder only."""
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    constant = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", F32, [2, 3], value.reshape(-1)))
    f = _function("f", ["a"], ["b"], [constant, helper.make_node("Add", ["a", "c"], ["b"])])
    model = _model([helper.make_node("f", ["x"], ["y"], domain="custom")], [f])
    tensor = model.functions[0].node[0].attribute[0].t
    (tmp_path / "c.bin").write_bytes(value.tobytes())
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="c.bin")
    onnx.save(model, str(tmp_path / "m.onnx"))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(InferenceSession(str(tmp_path / "m.onnx")).run(None, {"x": x})[0], x + value)
    hostile = copy.deepcopy(model)
    hostile.functions[0].node[0].attribute[0].t.external_data[0].value = "../c.bin"
    with pytest.raises(InvalidModelError, match=r"\.\."):
        InferenceSession(hostile, base_dir=tmp_path)


def test_a_call_that_cannot_be_cut_out_stays_inline():
    """A node outside the call that reads from it and feeds it: no single call node can replace the
    call's nodes without a cycle, so they stay as they are, with a note; a call without one is cut."""
    from aten2onnx.exporter.functions import extract
    from aten2onnx.ir import GraphBuilder

    g = GraphBuilder(18)
    x = g.input("x", torch.float32, (2, 3))
    inside = ("L__self__block", "block", "mymodels.Block")
    first = g.op("Relu", x)
    between = g.op("Neg", first)
    last = g.op("Add", first, between)
    stacks = {id(first.producer): (inside,), id(between.producer): (), id(last.producer): (inside,)}
    cut = extract(g, list(g.nodes), stacks, {"mymodels.Block"}, [last])
    assert [n.op_type for n in cut.nodes] == ["Relu", "Neg", "Add"] and not cut.functions
    assert any("stays inline" in note and "block" in note for note in cut.notes)

    stacks[id(between.producer)] = (inside,)
    cut = extract(g, list(g.nodes), stacks, {"mymodels.Block"}, [last])
    assert [n.op_type for n in cut.nodes] == ["Block"] and [f.name for f in cut.functions] == ["Block"]


def test_nodes_between_a_calls_nodes_that_read_from_it_follow_the_call():
    from aten2onnx.exporter.functions import extract
    from aten2onnx.ir import GraphBuilder

    g = GraphBuilder(18)
    x = g.input("x", torch.float32, (2, 3))
    inside = ("L__self__block", "block", "mymodels.Block")
    first = g.op("Relu", x)
    side = g.op("Neg", first)  # reads the call's value, feeds nothing of it
    last = g.op("Abs", first)
    stacks = {id(first.producer): (inside,), id(side.producer): (), id(last.producer): (inside,)}
    cut = extract(g, list(g.nodes), stacks, {"mymodels.Block"}, [last, side])
    assert [n.op_type for n in cut.nodes] == ["Block", "Neg"]
    assert [v.name for v in cut.nodes[0].outputs] == [first.name, last.name]  # both leave the call
