"""InferenceSession: the onnxruntime-style API, model loading, refusals with our own exceptions,
control flow reading outer-scope values, hand-built ATen nodes, and freeing of intermediates."""

from __future__ import annotations

import weakref

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from aten2onnx import _aten_node
from aten2onnx.errors import InvalidInputError, InvalidModelError, KernelError, RunError
from aten2onnx.runtime import InferenceSession
from aten2onnx.runtime.kernel import Kernel, kernel, tensor_from_proto
from aten2onnx.runtime.ops import MAX_OPSET


def _model(nodes, inputs, outputs, initializers=(), opset=18, extra_opsets=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


@pytest.fixture
def add_model():
    return _model([helper.make_node("Add", ["x", "y"], ["z"])], [_vi("x", ["n", 3]), _vi("y", [3])], [_vi("z", ["n", 3])])


def test_run_numpy_and_metadata(add_model):
    sess = InferenceSession(add_model)
    x, y = np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)
    (z,) = sess.run(None, {"x": x, "y": y})
    assert isinstance(z, np.ndarray)
    np.testing.assert_array_equal(z, x + y)
    assert [(i.name, i.shape, i.type) for i in sess.get_inputs()] == [("x", ["n", 3], "tensor(float)"),
                                                                      ("y", [3], "tensor(float)")]
    assert [(o.name, o.shape, o.type) for o in sess.get_outputs()] == [("z", ["n", 3], "tensor(float)")]
    assert sess.run(["z"], {"x": x, "y": y})[0].shape == (2, 3)


def test_run_torch_does_not_copy_inputs():
    model = _model([helper.make_node("Identity", ["x"], ["y"])], [_vi("x", [4])], [_vi("y", [4])])
    x = torch.arange(4.0)
    y = InferenceSession(model).run_torch({"x": x})["y"]
    assert y.data_ptr() == x.data_ptr()


def test_load_from_path_bytes_and_external_data(tmp_path, add_model):
    weight = np.arange(3000, dtype=np.float32).reshape(1000, 3)
    model = _model([helper.make_node("Add", ["x", "w"], ["z"])], [_vi("x", [1000, 3])], [_vi("z", [1000, 3])],
                   [numpy_helper.from_array(weight, "w")])
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").exists()
    x = np.ones((1000, 3), np.float32)
    np.testing.assert_array_equal(InferenceSession(str(path)).run(None, {"x": x})[0], x + weight)
    np.testing.assert_array_equal(InferenceSession(path).run(None, {"x": x})[0], x + weight)
    sess = InferenceSession(add_model.SerializeToString())
    assert sess.get_outputs()[0].name == "z"


@pytest.mark.parametrize("feeds, message", [
    ({"x": np.ones((2, 3), np.float32)}, "missing"),
    ({"x": np.ones((2, 3), np.float32), "y": np.ones(3, np.float32), "w": np.ones(1, np.float32)}, "unknown"),
    ({"x": np.ones((2, 3, 1), np.float32), "y": np.ones(3, np.float32)}, "rank"),
    ({"x": np.ones((2, 3), np.float32), "y": np.ones(4, np.float32)}, "size"),
    ({"x": np.ones((2, 3), np.float64), "y": np.ones(3, np.float32)}, "dtype"),
])
def test_bad_feeds_raise_invalid_input(add_model, feeds, message):
    with pytest.raises(InvalidInputError, match=message):
        InferenceSession(add_model).run(None, feeds)


def test_unknown_output_name_raises(add_model):
    with pytest.raises(InvalidInputError):
        InferenceSession(add_model).run(["nope"], {"x": np.ones((1, 3), np.float32), "y": np.ones(3, np.float32)})


def test_refused_models():
    unknown_op = _model([helper.make_node("NoSuchOp", ["x"], ["y"])], [_vi("x", [1])], [_vi("y", [1])])
    with pytest.raises(InvalidModelError, match="NoSuchOp"):
        InferenceSession(unknown_op)
    too_new = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [1])], [_vi("y", [1])], opset=MAX_OPSET + 1)
    with pytest.raises(InvalidModelError, match=str(MAX_OPSET + 1)):
        InferenceSession(too_new)
    with pytest.raises(InvalidModelError):
        InferenceSession(b"\x08\x07this is not a model\xff\xff")
    bad_attr = _model([helper.make_node("Relu", ["x"], ["y"], color="red")], [_vi("x", [1])], [_vi("y", [1])])
    with pytest.raises(InvalidModelError, match="bad attributes"):
        InferenceSession(bad_attr)
    assert issubclass(InvalidModelError, RunError)


# ---- ATen fallback nodes ----

def _aten_model(operator, overload, inputs, input_args, output_shape, namespace=None, **attrs):
    names = [f"i{k}" for k in range(len(inputs))]
    if namespace is not None:
        attrs["namespace"] = namespace
    node = helper.make_node("ATen", names, ["out"], domain=_aten_node.DOMAIN, operator=operator,
                            overload_name=overload, input_args=input_args, **attrs)
    return _model([node], [_vi(n, list(x.shape)) for n, x in zip(names, inputs)], [_vi("out", output_shape)],
                  extra_opsets=[(_aten_node.DOMAIN, 1)])


def test_aten_add_with_alpha():
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    model = _aten_model("add", "Tensor", [a, b], ["self", "other"], [2, 3], alpha=2.5)
    out = InferenceSession(model).run_torch({"i0": a, "i1": b})["out"]
    assert torch.equal(out, torch.add(a, b, alpha=2.5))


def test_aten_cat_tensor_list():
    xs = [torch.randn(2, 3), torch.randn(1, 3), torch.randn(4, 3)]
    model = _aten_model("cat", "default", xs, ["tensors"] * 3, [7, 3], dim=0)
    out = InferenceSession(model).run_torch({f"i{k}": x for k, x in enumerate(xs)})["out"]
    assert torch.equal(out, torch.cat(xs))


def test_aten_refusals_happen_at_session_creation():
    a = torch.randn(2)
    with pytest.raises(InvalidModelError, match="no operator"):
        InferenceSession(_aten_model("definitely_not_an_op", "", [a], ["self"], [2]))
    with pytest.raises(InvalidModelError, match="no overload"):
        InferenceSession(_aten_model("add", "NoSuchOverload", [a, a], ["self", "other"], [2]))
    with pytest.raises(InvalidModelError, match="not allowed"):
        InferenceSession(_aten_model("add", "Tensor", [a, a], ["self", "other"], [2], namespace="mylib"))
    # allowed when the session says so; then the operator must exist in that namespace
    with pytest.raises(InvalidModelError, match="no operator"):
        InferenceSession(_aten_model("add", "Tensor", [a, a], ["self", "other"], [2], namespace="mylib"),
                         allowed_aten_namespaces=("aten", "mylib"))


# ---- control flow with outer-scope values ----

def test_if_reads_outer_scope():
    then_g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["r"])], "then", [], [_vi("r", [3])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "y"], ["r2"])], "else", [], [_vi("r2", [3])])
    model = _model([helper.make_node("If", ["c"], ["z"], then_branch=then_g, else_branch=else_g)],
                   [_vi("c", [], TensorProto.BOOL), _vi("x", [3]), _vi("y", [3])], [_vi("z", [3])])
    sess = InferenceSession(model)
    x, y = torch.randn(3), torch.randn(3)
    assert torch.equal(sess.run_torch({"c": torch.tensor(True), "x": x, "y": y})["z"], x + y)
    assert torch.equal(sess.run_torch({"c": torch.tensor(False), "x": x, "y": y})["z"], x - y)


def test_loop_reads_outer_scope():
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "x"], ["acc_out"]), helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])],
        "body", [_vi("i", [], TensorProto.INT64), _vi("cond", [], TensorProto.BOOL), _vi("acc", [3])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("acc_out", [3]), _vi("scan", [3])])
    model = _model([helper.make_node("Loop", ["m", "", "a0"], ["a", "s"], body=body)],
                   [_vi("m", [], TensorProto.INT64), _vi("a0", [3]), _vi("x", [3])], [_vi("a", [3]), _vi("s", [5, 3])])
    x = torch.randn(3)
    out = InferenceSession(model).run_torch({"m": torch.tensor(5), "a0": torch.zeros(3), "x": x})
    expected = torch.zeros(3)
    rows = []
    for _ in range(5):
        expected = expected + x
        rows.append(expected)
    assert torch.equal(out["a"], expected)
    assert torch.equal(out["s"], torch.stack(rows))


def test_scan_reads_outer_scope():
    body = helper.make_graph(
        [helper.make_node("Mul", ["row", "w"], ["rw"]), helper.make_node("Add", ["s", "rw"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y"])],
        "body", [_vi("s", [2]), _vi("row", [2])], [_vi("s_out", [2]), _vi("y", [2])])
    model = _model([helper.make_node("Scan", ["s0", "rows"], ["s", "ys"], body=body, num_scan_inputs=1)],
                   [_vi("s0", [2]), _vi("rows", [4, 2]), _vi("w", [2])], [_vi("s", [2]), _vi("ys", [4, 2])])
    rows, w = torch.randn(4, 2), torch.randn(2)
    out = InferenceSession(model).run_torch({"s0": torch.zeros(2), "rows": rows, "w": w})
    expected = torch.cumsum(rows * w, 0)
    torch.testing.assert_close(out["ys"], expected)
    torch.testing.assert_close(out["s"], expected[-1])


def test_scan_of_zero_steps_gives_back_its_state_and_empty_outputs():
    """A scan input with no rows: the state as given, and each scan output the concatenation of no
    per-step values, rows of the shape the body declares (the kernel returned the state alone, fewer values
    than the node's outputs). onnxruntime and ONNX's reference evaluator refuse such a scan."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "row"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y"])],
        "body", [_vi("s", [2]), _vi("row", [2])], [_vi("s_out", [2]), _vi("y", [2])])
    for axis in (0, 1):
        model = _model([helper.make_node("Scan", ["s0", "rows"], ["s", "ys"], body=body, num_scan_inputs=1,
                                         scan_output_axes=[axis])],
                       [_vi("s0", [2]), _vi("rows", ["n", 2])], [_vi("s", [2]), _vi("ys", None)])
        feeds = {"s0": torch.randn(2), "rows": torch.zeros(0, 2)}
        out = InferenceSession(model).run_torch(feeds)
        assert torch.equal(out["s"], feeds["s0"])
        assert out["ys"].shape == ((0, 2) if axis == 0 else (2, 0))


# ---- intermediates are freed as soon as their last reader has run ----

_PROBED: list[weakref.ref] = []
_ALIVE_AT_PROBE: list[int] = []


@kernel("Probe", since=1, domain="test.probe")
class _Probe(Kernel):
    """Test-only kernel: remembers its input weakly and counts earlier probed tensors still alive."""

    def run(self, x):
        _ALIVE_AT_PROBE.append(sum(r() is not None for r in _PROBED))
        _PROBED.append(weakref.ref(x))
        return (x,)



def test_intermediates_are_freed():
    nodes, prev = [], "x"
    for k in range(200):
        nodes.append(helper.make_node("Add", [prev, "one"], [f"a{k}"]))
        prev = f"a{k}"
        if k % 20 == 10:
            nodes.append(helper.make_node("Probe", [prev], [f"p{k}"], domain="test.probe"))
            prev = f"p{k}"
    model = _model(nodes, [_vi("x", [256, 1024])], [_vi(prev, [256, 1024])],
                   [numpy_helper.from_array(np.ones((), np.float32), "one")], extra_opsets=[("test.probe", 1)])
    _PROBED.clear()
    _ALIVE_AT_PROBE.clear()
    out = InferenceSession(model).run_torch({"x": torch.zeros(256, 1024)})[prev]
    assert float(out[0, 0]) == 200.0
    assert len(_ALIVE_AT_PROBE) == 10
    assert _ALIVE_AT_PROBE == [0] * 10  # each probed intermediate died before the next probe ran
    assert all(r() is None for r in _PROBED)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_session(add_model):
    sess = InferenceSession(add_model, device="cuda")
    out = sess.run_torch({"x": torch.ones(2, 3, device="cuda"), "y": torch.ones(3, device="cuda")})["z"]
    assert out.device.type == "cuda"
    assert torch.equal(out.cpu(), torch.full((2, 3), 2.0))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_cuda_refused_without_cuda(add_model):
    with pytest.raises(InvalidModelError, match="cuda"):
        InferenceSession(add_model, device="cuda")


# ---- opsets beyond the exporter's (the kernel table itself: tests/test_runtime_registry.py) ----

def test_max_opset_is_onnx_newest():
    assert MAX_OPSET == onnx.defs.onnx_opset_version()


def test_float8_tensor_not_stored_raw():
    proto = helper.make_tensor("w", TensorProto.FLOAT8E4M3FN, [3], [1.0, -2.5, 448.0])
    assert not proto.raw_data
    t = tensor_from_proto(proto)
    assert t.dtype == torch.float8_e4m3fn
    assert t.to(torch.float32).tolist() == [1.0, -2.5, 448.0]


# ---- feeds of sequences and optionals ----

def _seq_vi(name, elem=TensorProto.FLOAT):
    return helper.make_value_info(name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, None)))


def _opt_vi(name, elem=TensorProto.FLOAT):
    return helper.make_value_info(name, helper.make_optional_type_proto(helper.make_tensor_type_proto(elem, [2])))


def test_sequence_and_optional_feeds():
    seq = _model([helper.make_node("SequenceLength", ["s"], ["n"])], [_seq_vi("s")], [_vi("n", [], TensorProto.INT64)])
    sess = InferenceSession(seq)
    assert sess.get_inputs()[0].type == "seq(tensor(float))"
    assert int(sess.run(None, {"s": [np.ones(2, np.float32), np.ones(3, np.float32)]})[0]) == 2
    opt = _model([helper.make_node("OptionalHasElement", ["o"], ["h"])], [_opt_vi("o")], [_vi("h", [], TensorProto.BOOL)])
    sess = InferenceSession(opt)
    assert not sess.run(None, {"o": None})[0]
    assert sess.run(None, {"o": np.ones(2, np.float32)})[0]


@pytest.mark.parametrize("feed, message", [
    (np.ones(2, np.float32), "expects a sequence"),
    ([np.ones(2, np.float64)], r"s\[0\].*dtype"),
    ([[np.ones(2, np.float32)]], "not a tensor"),
])
def test_bad_sequence_feeds_raise_invalid_input(feed, message):
    seq = _model([helper.make_node("SequenceLength", ["s"], ["n"])], [_seq_vi("s")], [_vi("n", [], TensorProto.INT64)])
    with pytest.raises(InvalidInputError, match=message):
        InferenceSession(seq).run(None, {"s": feed})


def test_non_tensor_input_type_raises_invalid_input_not_type_error():
    map_vi = helper.make_value_info("m", helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(
        TensorProto.FLOAT, [])))
    model = _model([helper.make_node("Identity", ["m"], ["y"])], [map_vi], [helper.make_empty_tensor_value_info("y")])
    with pytest.raises(InvalidInputError, match="map_type"):
        InferenceSession(model).run_torch({"m": {1: torch.ones(())}})
    e8m0 = _model([helper.make_node("Identity", ["x"], ["y"])], [_vi("x", [2], TensorProto.FLOAT8E8M0)], [_vi("y", [2])])
    with pytest.raises(InvalidInputError, match="expects torch.float8_e8m0fnu"):
        InferenceSession(e8m0).run_torch({"x": torch.ones(2)})


# ---- models without an ai.onnx import ----

def test_model_importing_only_other_domains():
    graph = helper.make_graph([], "g", [_vi("x", [2])], [_vi("x", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 3)], ir_version=10)
    np.testing.assert_array_equal(InferenceSession(model).run(None, {"x": np.ones(2, np.float32)})[0], np.ones(2))
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [_vi("x", [2])], [_vi("y", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 3)], ir_version=10)
    with pytest.raises(InvalidModelError, match="does not import"):
        InferenceSession(model)


# ---- planning and running ----

def test_node_output_named_like_an_initializer_is_refused_as_onnxruntime_does():
    model = _model([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Add", ["h", "x"], ["y"])],
                   [_vi("x", [2])], [_vi("y", [2])], [numpy_helper.from_array(np.zeros(2, np.float32), "h")])
    with pytest.raises(Exception, match="Duplicate definition"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(InvalidModelError, match="'h', which is already defined"):
        InferenceSession(model)


def test_intermediates_of_a_run_are_freed_after_their_last_reader():
    model = _model([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Add", ["h", "x"], ["y"])],
                   [_vi("x", [2])], [_vi("y", [2])])
    sess = InferenceSession(model)
    runner = sess._runner
    assert runner._slot["h"] in runner.steps[1].free
    for _ in range(2):
        np.testing.assert_array_equal(sess.run(None, {"x": np.array([-1.0, 2.0], np.float32)})[0], [-1.0, 4.0])


@pytest.mark.parametrize("raised, expected", [(ValueError("boom"), KernelError), (KeyboardInterrupt(), KeyboardInterrupt)])
def test_kernel_failures_wrap_exceptions_but_not_interrupts(add_model, raised, expected):
    sess = InferenceSession(add_model)

    def fail(*args):
        raise raised

    sess._runner.steps[0].kernel.run = fail
    with pytest.raises(expected):
        sess.run(None, {"x": np.ones((1, 3), np.float32), "y": np.ones(3, np.float32)})
