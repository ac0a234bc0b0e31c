"""A model file is untrusted input: hostile models built by hand (file access, out-of-bounds views, unsafe
sparse constructors, process state, external-data tricks, malformed graphs) must raise our own error,
never crash, touch a file, raise a foreign exception or give a wrong answer; and a mutation fuzzer."""

from __future__ import annotations

import os
import re
import signal
import time

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import aten2onnx
from aten2onnx import _aten_node
from aten2onnx.errors import InvalidInputError, InvalidModelError, KernelError, RunError, RunTimeoutError
from aten2onnx.runtime import InferenceSession, fuzz, safety
from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops import MAX_OPSET
from aten2onnx.runtime.validate import MAX_NESTING

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64


def _vi(name, shape, elem=F32):
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes, inputs, outputs, initializers=(), opset=18, domains=(), ir=10):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in domains]
    return helper.make_model(graph, opset_imports=opsets, ir_version=ir)


def _aten(operator, inputs=(), input_args=(), outputs=("out",), overload="", **attrs):
    if input_args:
        attrs["input_args"] = list(input_args)
    return helper.make_node("ATen", list(inputs), list(outputs), domain=_aten_node.DOMAIN, operator=operator,
                            overload_name=overload, **attrs)


def _aten_model(*nodes, inputs=(), outputs=("out",), out_elem=F32):
    return _model(list(nodes), [_vi(n, None, e) for n, e in inputs], [_vi(o, None, out_elem) for o in outputs],
                  domains=[(_aten_node.DOMAIN, 1)])


# ---- ATen nodes that would read or write files, touch memory out of bounds or process state ---------
# (id, model, feeds, the refusal's message). Each runs in a worker process: a regression crashes the
# worker, not the test session, and shows as a failed case.

X = ("x", F32)
HOSTILE_ATEN = [
    ("from_file reads any file", _aten_model(_aten("from_file", filename="/etc/passwd", shared=0, size=64,
                                                   dtype="uint8"), out_elem=TensorProto.UINT8), {},
     r"aten::from_file.default may not run.*'filename' is a file path"),
    ("copy_ writes a graph input", _aten_model(_aten("copy_", ["x", "x"], ["self", "src"]), inputs=[X]),
     {"x": np.ones(3, np.float32)}, r"copy_.default.*writes its argument 'self'"),
    ("_reshape_alias reads past the tensor", _aten_model(_aten("_reshape_alias", ["x"], ["self"], size=[1000],
                                                               stride=[1]), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "_reshape_alias.default.*view at sizes and strides"),
    ("_reshape_alias_copy reads past the tensor", _aten_model(_aten("_reshape_alias_copy", ["x"], ["self"],
                                                                    size=[1000], stride=[1]), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "without bounds checks"),
    ("as_strided", _aten_model(_aten("as_strided", ["x"], ["self"], size=[1000], stride=[1]), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "view at sizes and strides"),
    ("_unsafe_view", _aten_model(_aten("_unsafe_view", ["x"], ["self"], size=[3]), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "aliases its input"),
    ("_sparse_coo_tensor_unsafe then to_dense", _aten_model(
        _aten("_sparse_coo_tensor_unsafe", ["i", "x"], ["indices", "values"], ["s"], size=[4]),
        _aten("to_dense", ["s"], ["self"]), inputs=[("i", I64), X]),
     {"i": np.array([[10**8]], np.int64), "x": np.ones(1, np.float32)}, r"_unsafe constructor"),
    ("sparse_coo_tensor with forged indices", _aten_model(
        _aten("sparse_coo_tensor", ["i", "x"], ["indices", "values"], ["s"], overload="indices_size", size=[4]),
        _aten("to_dense", ["s"], ["self"]), inputs=[("i", I64), X]),
     {"i": np.array([[10**8]], np.int64), "x": np.ones(1, np.float32)}, "sparse"),
    ("manual_seed", _aten_model(_aten("manual_seed", seed=0)), {}, "returns nothing"),
    ("_print writes stdout", _aten_model(_aten("_print", s="pwned")), {}, "returns nothing"),
    ("set_grad_enabled", _aten_model(_aten("set_grad_enabled", val=1)), {}, "returns nothing"),
    ("warn", _aten_model(_aten("warn", message="pwned")), {}, "returns nothing"),
    ("resize_ grows a graph input", _aten_model(_aten("resize_", ["x"], ["self"], size=[1000]), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "writes its argument 'self'"),
    ("set_ points a tensor at another's storage", _aten_model(
        _aten("set_", ["x", "x"], ["self", "source"], overload="source_Tensor"), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "writes its argument 'self'"),
    ("resize returns uninitialized memory", _aten_model(_aten("resize", ["x"], ["self"], size=[1000]), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "uninitialized memory"),
    ("_copy_from writes an undeclared argument", _aten_model(_aten("_copy_from", ["x", "x"], ["self", "dst"]),
                                                            inputs=[X]),
     {"x": np.ones(3, np.float32)}, "does not declare"),
    # each of these crashed the process with the forged argument given here
    ("max_pool2d backward with forged indices", _aten_model(
        _aten("max_pool2d_with_indices_backward", ["g", "x", "i"], ["grad_output", "self", "indices"],
              kernel_size=[2, 2], stride=[2, 2], padding=[0, 0], dilation=[1, 1], ceil_mode=0),
        inputs=[("g", F32), X, ("i", I64)]),
     {"g": np.ones((1, 1, 2, 2), np.float32), "x": np.ones((1, 1, 4, 4), np.float32),
      "i": np.full((1, 1, 2, 2), 10**8, np.int64)}, "indices, offsets or lengths"),
    ("segment_reduce with forged offsets", _aten_model(
        _aten("segment_reduce", ["x", "o"], ["data", "offsets"], reduce="sum"), inputs=[X, ("o", I64)]),
     {"x": np.ones(4, np.float32), "o": np.array([0, 10**8], np.int64)}, "indices, offsets or lengths"),
    ("_ctc_loss with forged targets", _aten_model(
        _aten("_ctc_loss", ["x", "t"], ["log_probs", "targets"], ["l", "a"], input_lengths=[5], target_lengths=[2]),
        inputs=[X, ("t", I64)], outputs=("l", "a")),
     {"x": np.log(np.full((5, 1, 3), 1 / 3, np.float32)), "t": np.array([[1, 10**8]], np.int64)},
     "indices, offsets or lengths"),
    ("_sobol_engine_draw with a forged dimension", _aten_model(
        _aten("_sobol_engine_draw", ["q", "s"], ["quasi", "sobolstate"], ["d", "q2"], n=3, dimension=1000,
              num_generated=0), inputs=[("q", I64), ("s", I64)], outputs=("d", "q2")),
     {"q": np.zeros(5, np.int64), "s": np.zeros((2, 2), np.int64)}, "indices, offsets or lengths"),
    # found by the fuzzer's synthesized ATen nodes (scripts/fuzz_runtime.py --kinds aten): crashes and hangs
    ("_nnpack_spatial_convolution with stride 0", _aten_model(
        _aten("_nnpack_spatial_convolution", ["x", "x"], ["input", "weight"], padding=[64, 1, 3], stride=[0, 2, 2]),
        inputs=[X]), {"x": np.ones((1, 1, 2, 2), np.float32)}, "one backend's kernel"),
    ("_remove_batch_dim", _aten_model(_aten("_remove_batch_dim", ["x"], ["self"], level=2**31 - 1, batch_size=-1,
                                            out_dim=-1), inputs=[X]), {"x": np.ones(3, np.float32)}, "vmap internals"),
    ("_add_batch_dim", _aten_model(_aten("_add_batch_dim", ["x"], ["self"], batch_dim=7, level=1), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "vmap internals"),
    ("_efficientzerotensor", _aten_model(_aten("_efficientzerotensor", size=[0])), {}, "vmap internals"),
    ("_new_zeros_with_same_feature_meta", _aten_model(_aten("_new_zeros_with_same_feature_meta", ["x", "x"],
                                                            ["self", "other"], self_num_batch_dims=64), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "vmap internals"),
    ("batch_norm_backward with forged statistics", _aten_model(
        _aten("batch_norm_backward", ["x", "x", "x", "x", "x", "r"], ["grad_out", "input", "weight", "running_var",
                                                                      "save_mean", "reserve"], ["a", "b", "c"],
              update=1, eps=2.0, output_mask=[0, 1, 1]), inputs=[X, ("r", TensorProto.UINT8)], outputs=("a", "b", "c")),
     {"x": np.ones((2, 3), np.float32), "r": np.zeros(0, np.uint8)}, "forged saved or running statistics"),
    ("_foreach_copy of lists of different lengths", _aten_model(
        _aten("_foreach_copy", ["x", "x", "x", "x", "x"], ["self", "self", "src", "src", "src"], outputs=["a", "b"]),
        inputs=[X], outputs=("a", "b")), {"x": np.ones(2, np.float32)}, "public op calls only with checked"),
    ("range with a step an int dtype rounds to zero", _aten_model(
        _aten("range", overload="step", start=1e-30, end=1e-30, step=0.5, dtype="int64"), out_elem=I64), {},
     "public op calls only with checked"),
    ("_cholesky_solve_helper", _aten_model(_aten("_cholesky_solve_helper", ["x", "x"], ["self", "A"], upper=1),
                                           inputs=[X]), {"x": np.ones((2, 2), np.float32)},
     "public op calls only with checked"),
    ("choose_qparams_optimized with a negative bin count (hung)", _aten_model(
        _aten("choose_qparams_optimized", ["x"], ["input"], ["a", "b"], numel=7, n_bins=-2, ratio=float("inf"),
              bit_width=3), inputs=[X], outputs=("a", "b")), {"x": np.ones(7, np.float32)}, "quantized"),
    ("a sparse layout", _aten_model(_aten("zeros", size=[3], layout="sparse_coo")), {}, "layout 'sparse_coo'"),
    ("a quantized dtype", _aten_model(_aten("zeros", size=[3], dtype="qint8")), {}, "qint8"),
    ("initial_seed of a generator", _aten_model(_aten("initial_seed")), {}, "is a Generator"),
    ("a namespace the session does not allow", _aten_model(_aten("add", ["x", "x"], ["self", "other"],
                                                                 overload="Tensor", namespace="mylib"), inputs=[X]),
     {"x": np.ones(3, np.float32)}, "namespace 'mylib' is not allowed"),
]


# Admitted ops whose arguments are checked on each run: these crashed the process before.
HOSTILE_ARGUMENTS = [
    ("native_batch_norm without statistics, not training", _aten_model(
        _aten("native_batch_norm", ["x", "x"], ["input", "bias"], ["y", "m", "v"], training=0, momentum=0.0,
              eps=float("nan")), inputs=[X], outputs=("y", "m", "v")), {"x": np.ones((2, 3), np.float32)},
     "needs both running statistics"),
    ("batch_norm_update_stats without a variance", _aten_model(
        _aten("batch_norm_update_stats", ["x", "x"], ["input", "running_mean"], ["m", "v"], momentum=1e-30),
        inputs=[X], outputs=("m", "v")), {"x": np.ones((2, 3), np.float32)}, "needs both running statistics"),
    ("_batch_norm_no_update without statistics", _aten_model(
        _aten("_batch_norm_no_update", ["x", "x", "x"], ["input", "weight", "bias"], ["y", "m", "v", "r"],
              momentum=0.5, eps=0.0), inputs=[X], outputs=("y", "m", "v", "r")),
     {"x": np.ones((2, 3), np.float32)}, "needs both running statistics"),
    ("_native_batch_norm_legit without statistics, not training", _aten_model(
        _aten("_native_batch_norm_legit", ["x"], ["input"], ["y", "m", "v"], overload="no_stats", training=0,
              momentum=0.5, eps=1e-5), inputs=[X], outputs=("y", "m", "v")),
     {"x": np.ones((2, 3), np.float32)}, "needs both running statistics"),
    ("linalg_eigvals of NaN (the exporter's own fallback for eigvals)", _aten_model(
        _aten("linalg_eigvals", ["x"], ["self"]), inputs=[X], out_elem=TensorProto.COMPLEX64),
     {"x": np.full((3, 3), np.nan, np.float32)}, "infinities or NaN"),
    ("_fft_r2c at a dim far outside the rank", _aten_model(
        _aten("_fft_r2c", ["x"], ["self"], dim=[2**31 - 1, -1], normalization=64, onesided=1), inputs=[X],
        out_elem=TensorProto.COMPLEX64), {"x": np.ones((3, 5), np.float32)}, "outside the rank"),
    ("_fft_r2c at a negative dim, which its kernel does not wrap (segfaulted)", _aten_model(
        _aten("_fft_r2c", ["x"], ["self"], dim=[-2], normalization=0, onesided=1), inputs=[X],
        out_elem=TensorProto.COMPLEX64), {"x": np.ones((3, 4), np.float32)}, "not one of its input's dims"),
    ("_fft_c2c at a repeated dim", _aten_model(
        _aten("_fft_c2c", ["x"], ["self"], dim=[0, 0], normalization=0, forward=1), inputs=[X]),
     {"x": np.ones((3, 4), np.float32)}, "repeats a dim"),
]


@pytest.fixture(scope="module")
def worker():
    w = fuzz.Worker()
    yield w
    w.close()


@pytest.mark.parametrize("model, feeds, message", [pytest.param(*c[1:], id=c[0]) for c in HOSTILE_ATEN])
def test_hostile_aten_nodes_are_refused_at_session_creation(worker, model, feeds, message):
    stages, failure = worker.run(model.SerializeToString(), feeds)
    assert failure is None
    ours = stages[0]
    assert ours.kind == "ours" and "InvalidModelError" in ours.detail, ours.detail
    assert re.search(message, ours.detail), ours.detail


@pytest.mark.parametrize("model, feeds, message", [pytest.param(*c[1:], id=c[0]) for c in HOSTILE_ARGUMENTS])
def test_hostile_arguments_of_admitted_ops_are_refused_when_they_arrive(worker, model, feeds, message):
    stages, failure = worker.run(model.SerializeToString(), feeds)
    assert failure is None
    assert stages[0].kind == "ours" and "KernelError" in stages[0].detail, stages[0].detail
    assert re.search(message, stages[0].detail), stages[0].detail


A = torch.ops.aten
T = torch.ones(2, 3, 4)
ARGUMENT_CHECKS = [
    # (op, arguments, a piece of the refusal or None): what argument_problem must let through, too
    (A.cumsum.default, {"self": T, "dim": 2}, None),
    (A.unsqueeze.default, {"self": T, "dim": 3}, None),
    (A.cumsum.default, {"self": T, "dim": 4}, "outside the rank 3"),
    (A.cat.default, {"tensors": [T, T], "dim": -4}, None),
    (A.rrelu.default, {"self": T, "training": False}, None),
    (A.instance_norm.default, {"input": T, "running_mean": None, "running_var": None, "use_input_stats": True}, None),
    (A.instance_norm.default, {"input": T, "running_mean": None, "running_var": None, "use_input_stats": False},
     "running statistics"),
    (A.native_batch_norm.default, {"input": T, "running_mean": None, "running_var": None, "training": True}, None),
    (A.linalg_eigvals.default, {"self": torch.eye(3)}, None),
    (A.linalg_eigvals.default, {"self": torch.full((3, 3), float("inf"))}, "infinities or NaN"),
    # tile's `dims` are repetitions, not dims: x.tile(5) of a 1-D x was refused (found by fuzz_models --exact)
    (A.tile.default, {"self": torch.ones(3), "dims": [5]}, None),
    (A.permute.default, {"self": T, "dims": [0, 5, 1]}, "outside the rank 3"),
]


@pytest.mark.parametrize("op, arguments, problem", ARGUMENT_CHECKS)
def test_argument_checks_refuse_only_what_crashes(op, arguments, problem):
    found = safety.argument_problem(op, arguments)
    assert (found is None) if problem is None else (problem in found)


def test_a_file_mapped_by_from_file_is_never_written(tmp_path, worker):
    """from_file(shared=True) maps a file; copy_ into the mapping would overwrite it (a .py file that
    then ran the model's payload)."""
    target = tmp_path / "victim.py"
    target.write_bytes(b"print('hello')\n" * 4)
    model = _aten_model(
        _aten("from_file", outputs=["mapped"], filename=str(target), shared=1, size=60, dtype="uint8"),
        _aten("copy_", ["mapped", "payload"], ["self", "src"]),
        inputs=[("payload", TensorProto.UINT8)], out_elem=TensorProto.UINT8)
    stages, failure = worker.run(model.SerializeToString(), {"payload": np.full(60, ord("#"), np.uint8)})
    assert failure is None and stages[0].kind == "ours"
    assert target.read_bytes() == b"print('hello')\n" * 4


def test_uninitialized_memory_is_zeroed():
    """empty() runs (the exporter emits it), but a model reads zeros, never the process's heap."""
    junk = torch.full((4096,), 123.0)
    del junk
    model = _aten_model(_aten("empty", overload="memory_format", size=[4096]))
    out = InferenceSession(model).run_torch({})["out"]
    assert torch.equal(out, torch.zeros(4096))


# ---- the rule itself ----------------------------------------------------------------------------------

# Every overload the OpInfo sweep's exports use as ATen fallback nodes (python scripts/opinfo_sweep.py
# --json, fallback_ops at opsets 9 13 17 18 26, torch 2.13): each must pass the rule.
OPINFO_FALLBACK_OPS = (
    "aten::_unique2.default aten::arange.default aten::argsort.default aten::as_strided_scatter.default "
    "aten::bitwise_and.Tensor aten::bitwise_not.default aten::bitwise_or.Tensor aten::bitwise_xor.Tensor "
    "aten::bucketize.Tensor aten::conv3d.padding aten::cummax.default aten::cummin.default aten::cumprod.default "
    "aten::cumsum.default aten::diagonal_scatter.default aten::einsum.default aten::gather.default "
    "aten::hash_tensor.default aten::index_add.default aten::index_copy.default aten::index_fill.int_Scalar "
    "aten::index_fill.int_Tensor aten::index_put.default aten::index_reduce.default aten::kthvalue.default "
    "aten::linalg_det.default aten::linalg_eig.default aten::linalg_eigh.default aten::linalg_eigvals.default "
    "aten::linalg_slogdet.default aten::logcumsumexp.default aten::logdet.default aten::max_pool1d.default "
    "aten::max_pool1d_with_indices.default aten::max_pool2d.default aten::max_pool2d_with_indices.default "
    "aten::max_pool3d.default aten::max_pool3d_with_indices.default aten::max_unpool2d.default "
    "aten::max_unpool3d.default aten::median.default aten::median.dim aten::msort.default aten::nanmedian.default "
    "aten::nanmedian.dim aten::nanquantile.scalar aten::one_hot.default aten::quantile.scalar aten::scatter.reduce "
    "aten::scatter.src aten::scatter_add.default aten::scatter_reduce.two aten::select_scatter.default "
    "aten::slice_scatter.default aten::sort.default aten::take.default aten::take_along_dim.default "
    "aten::tensor_split.indices aten::topk.default "
    "torch_nn::_linear_cross_entropy_batch_chunked.default "
    "torch_nn::_linear_cross_entropy_batch_chunked_no_reduction.default"
).split()


def _overload(key):
    import torch.nn.modules.linear_cross_entropy  # noqa: F401  (defines the torch_nn ops)

    namespace, rest = key.split("::")
    name, overload = rest.rsplit(".", 1)
    return getattr(getattr(getattr(torch.ops, namespace), name), overload)


@pytest.mark.parametrize("key", OPINFO_FALLBACK_OPS)
def test_every_fallback_the_opinfo_sweep_exports_passes_the_rule(key):
    assert safety.refusal(_overload(key)) is None


# Overloads with a built-in symbolic that the rule refuses: a handler that cannot express a case
# (dynamic shapes, say) exports them as ATen nodes, which ExportedModel.run runs (it trusts its own
# fallbacks) but a session loading the file refuses unless allowed_aten_ops says otherwise.
REGISTERED_BUT_REFUSED = {
    "aten::_assert_scalar.default": "returns nothing",
    "aten::_assert_tensor_metadata.default": "returns nothing",
    "aten::sym_constrain_range_for_size.default": "returns nothing",
    "aten::_unsafe_view.default": "aliases its input",
    "aten::as_strided.default": "view at sizes and strides",
    "aten::resize.default": "uninitialized",
    "aten::resize_as.default": "uninitialized",
    "aten::segment_reduce.default": "can forge",
    "aten::max_pool2d_with_indices_backward.default": "can forge",
    "aten::max_pool3d_with_indices_backward.default": "can forge",
    "aten::native_batch_norm_backward.default": "forged saved or running statistics",
    "aten::batch_norm_backward.default": "forged saved or running statistics",
    "aten::_scaled_dot_product_flash_attention_for_cpu.default": "one backend's kernel",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward.default": "one backend's kernel",
    "aten::_int_mm.default": "one backend's kernel",
    # native since opset 11; their ATen calls (exact mode, older opsets) stay refused by the DENY list
    **{f"aten::{name}": "quantized tensors" for name in (
        "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default", "fake_quantize_per_channel_affine.default",
        "fake_quantize_per_channel_affine_cachemask.default", "fake_quantize_per_tensor_affine.default",
        "fake_quantize_per_tensor_affine.tensor_qparams", "fake_quantize_per_tensor_affine_cachemask.default")},
}


def test_the_rule_refuses_exactly_these_registered_functional_overloads():
    import aten2onnx.symbolic  # noqa: F401  (registers the built-ins)
    from aten2onnx.registry import REGISTRY

    refused = {}
    for key in {e.key for e in REGISTRY.entries(complex=None)}:
        if "::" not in key or key.split("::")[0] not in ("aten", "prims"):
            continue
        reason = safety.refusal(_overload(key))
        if reason and "writes its argument" not in reason:  # in-place and out= twins are functionalized
            refused[key] = reason
    assert sorted(refused) == sorted(REGISTERED_BUT_REFUSED)
    for key, reason in refused.items():
        assert REGISTERED_BUT_REFUSED[key] in reason


def test_opinfo_fallback_samples_still_run_in_a_session_under_the_rule():
    """The OpInfo sweep runs each export in InferenceSession with the default rule; these fall back to
    ATen nodes at opset 9 and must still match eager."""
    import optable

    # (topk, cummax, sort and one_hot export natively at opset 9 since the emitters spell them there)
    # (take_along_dim exports natively at opset 9 as torch's decomposition of it; the scatter reductions by a
    # one-hot mask, as_strided_scatter by Scatter, the determinants by LU)
    for name in ("linalg.eig", "index_put", "linalg.eigh", "linalg.eigvals", "unique"):
        statuses = optable.opinfo_statuses(name, [9])
        assert statuses["9"]["status"] == "fallback", (name, statuses)


class _Double(torch.nn.Module):
    def forward(self, x):
        return torch.ops.sectest.double(x)


torch.library.define("sectest::double", "(Tensor x) -> Tensor")
torch.library.impl("sectest::double", "CompositeExplicitAutograd")(lambda x: x * 2)
torch.library.register_fake("sectest::double")(lambda x: torch.empty_like(x))


def test_a_custom_op_runs_in_exported_model_and_is_judged_by_its_schema():
    x = torch.randn(3)
    with pytest.warns(UserWarning):
        exported = aten2onnx.export(_Double(), (x,))
    assert exported.fallback_ops == ["sectest::double.default"]
    torch.testing.assert_close(exported.run(x), x * 2)
    session = InferenceSession(exported.model_proto, allowed_aten_namespaces=("aten", "sectest"))
    torch.testing.assert_close(session.run_torch({"x": x})["output"], x * 2)


def test_running_statistics_an_op_writes_undeclared_are_copies():
    """native_batch_norm in training mode updates running_mean and running_var in place although its
    schema does not say so: the initializers (over the model's own bytes) must stay as they were."""
    stats = [numpy_helper.from_array(np.zeros(3, np.float32), "mean"), numpy_helper.from_array(np.ones(3, np.float32), "var")]
    model = _model([_aten("native_batch_norm", ["x", "mean", "var"], ["input", "running_mean", "running_var"],
                          ["y", "m", "v"], training=1, momentum=0.5, eps=1e-5)],
                   [_vi("x", [4, 3])], [_vi("y", [4, 3])], stats, domains=[(_aten_node.DOMAIN, 1)])
    session = InferenceSession(model)
    x = torch.randn(4, 3) * 5 + 3
    first, second = (session.run_torch({"x": x})["y"] for _ in range(2))
    assert torch.equal(first, second)
    assert torch.equal(session._runner._initial[session._runner._slot["mean"]], torch.zeros(3))


def test_allowed_aten_ops_narrows_and_widens_the_rule():
    model = _aten_model(_aten("add_", ["x", "y"], ["self", "other"], overload="Tensor"), inputs=[X, ("y", F32)])
    x, y = torch.ones(3), torch.full((3,), 2.0)
    with pytest.raises(InvalidModelError, match="writes its argument 'self'"):
        InferenceSession(model)
    with pytest.raises(InvalidModelError, match="not among the session's allowed_aten_ops"):
        InferenceSession(model, allowed_aten_ops={"aten::mul.Tensor"})
    # widened on purpose: the op runs on a copy, so the graph input is not written
    session = InferenceSession(model, allowed_aten_ops={"aten::add_.Tensor"})
    assert torch.equal(session.run_torch({"x": x, "y": y})["out"], torch.full((3,), 3.0))
    assert torch.equal(x, torch.ones(3))
    narrowed = _aten_model(_aten("add", ["x", "y"], ["self", "other"], overload="Tensor"), inputs=[X, ("y", F32)])
    with pytest.raises(InvalidModelError, match="refused by the session's allowed_aten_ops predicate"):
        InferenceSession(narrowed, allowed_aten_ops=lambda op: safety.is_safe(op) and op.__name__ != "add.Tensor")


# ---- what a kernel returns ----------------------------------------------------------------------------


@kernel("Short", since=1, domain="test.security")
class _Short(Kernel):
    """Test-only: returns nothing for its one output."""

    def run(self, x):
        return ()


@kernel("Text", since=1, domain="test.security")
class _Text(Kernel):
    """Test-only: returns a Python string as its output."""

    def run(self, x):
        return ("text",)


RESULTS = [
    ("a kernel returns fewer values than the node's outputs",
     _model([helper.make_node("Short", ["x"], ["y"], domain="test.security")], [_vi("x", [3])], [_vi("y", [3])],
            domains=[("test.security", 1)]), "returned 0 values"),
    ("a kernel returns a non-tensor",
     _model([helper.make_node("Text", ["x"], ["y"], domain="test.security")], [_vi("x", [3])], [_vi("y", [3])],
            domains=[("test.security", 1)]), "gave a str"),
    ("an ATen op returns more values than the node has outputs",
     _aten_model(_aten("topk", ["x"], ["self"], k=1), inputs=[X]), "returned 2 values, but the node has 1"),
    ("an ATen op returns fewer values than the node has outputs",
     _aten_model(_aten("relu", ["x"], ["self"], outputs=["a", "b"]), inputs=[X], outputs=("a", "b")),
     "returned 1 values, but the node has 2"),
    ("an ATen op returns complex32, which no ONNX type holds (found by the fuzzer)",
     _aten_model(_aten("chalf", ["x"], ["self"]), inputs=[X], out_elem=0), "plain dense tensor"),
    ("an ATen op's result is not of the declared dtype",
     _aten_model(_aten("relu", ["x"], ["self"]), inputs=[X], out_elem=I64), "must give a tensor of torch.int64"),
]


@pytest.mark.parametrize("model, message", [pytest.param(*c[1:], id=c[0]) for c in RESULTS])
def test_kernel_results_are_checked(model, message):
    with pytest.raises(KernelError, match=message):
        InferenceSession(model).run_torch({"x": torch.ones(3)})


def _one_node(op, outputs=("y",), **attrs):
    return _model([helper.make_node(op, ["x"], list(outputs), name="n", **attrs)], [_vi("x", [3])],
                  [_vi(o, None) for o in outputs])


_SEQUENCE = _model([helper.make_node("SequenceConstruct", ["x"], ["y"], name="n")], [_vi("x", [3])],
                   [helper.make_value_info("y", helper.make_sequence_type_proto(helper.make_tensor_type_proto(F32, None)))])

# An ai.onnx kernel made to return something its op's schema does not allow: the session's one check
# (runtime/results.py) names the node, its op and what was wrong, whichever kernel it is.
WRONG_RESULTS = [
    ("a tuple too short", _one_node("TopK", ("v", "i"), axis=0), "TopK", lambda self, x, k=None: (x,),
     r"node 'n' \(TopK\): its kernel returned 1 values, but the node has 2 outputs"),
    ("more values than the op has outputs", _one_node("Relu"), "Relu", lambda self, x: (x, x),
     r"node 'n' \(Relu\): its kernel returned 2 values, but the node has 1 outputs"),
    ("a list instead of a tuple", _one_node("Relu"), "Relu", lambda self, x: [x],
     r"node 'n' \(Relu\): its kernel returned a list, not a tuple"),
    ("a sequence where the schema gives a tensor", _one_node("Relu"), "Relu", lambda self, x: ([x],),
     r"node 'n' \(Relu\): it gave a list of 1 for its output 'y'; it must give a tensor"),
    ("a tensor where the schema gives a sequence", _SEQUENCE, "SequenceConstruct", lambda self, *xs: (xs[0],),
     r"node 'n' \(SequenceConstruct\): it gave a tensor of torch.float32 for its output 'y'; it must give a sequence"),
    ("None for a tensor output", _one_node("Relu"), "Relu", lambda self, x: (None,),
     r"it gave None for its output 'y'; it must give a tensor"),
    ("complex32, which no ONNX type holds", _one_node("Relu"), "Relu", lambda self, x: (x.to(torch.complex32),),
     r"it gave a tensor of torch.complex32 for its output 'y'; it must give a tensor \(tensors of an ONNX"),
    ("a number", _one_node("Relu"), "Relu", lambda self, x: (1.0,), r"it gave a float for its output 'y'"),
]


@pytest.mark.parametrize("model, op, run, message", [pytest.param(*c[1:], id=c[0]) for c in WRONG_RESULTS])
def test_wrong_kernel_results_are_named(monkeypatch, model, op, run, message):
    from aten2onnx.runtime.kernel import find_kernel

    monkeypatch.setattr(find_kernel("", op, 18), "run", run)
    with pytest.raises(KernelError, match=message):
        InferenceSession(model).run_torch({"x": torch.ones(3)})


def test_results_a_node_leaves_out_are_not_checked(monkeypatch):
    """A kernel may compute optional outputs the node does not name (Dropout's mask): only named ones count."""
    model = _model([helper.make_node("Dropout", ["x"], ["y"], name="n")], [_vi("x", [3])], [_vi("y", [3])])
    from aten2onnx.runtime.kernel import find_kernel

    monkeypatch.setattr(find_kernel("", "Dropout", 18), "run", lambda self, x, *rest: (x, "not looked at"))
    assert torch.equal(InferenceSession(model).run_torch({"x": torch.ones(3)})["y"], torch.ones(3))


# ---- malformed graphs: refused at load, as onnxruntime refuses them -----------------------------------


def _if(then_outputs, else_outputs, node_outputs):
    def branch(name, outs):
        return helper.make_graph([helper.make_node("Identity", ["x"], [f"{name}{i}"]) for i in range(outs)], name, [],
                                 [_vi(f"{name}{i}", [3]) for i in range(outs)])

    return _model([helper.make_node("If", ["c"], [f"z{i}" for i in range(node_outputs)],
                                    then_branch=branch("t", then_outputs), else_branch=branch("e", else_outputs))],
                  [_vi("c", [], TensorProto.BOOL), _vi("x", [3])], [_vi(f"z{i}", [3]) for i in range(node_outputs)])


def _nested(depth):
    """If in If ... depth deep, built in place (copying a graph that deep exceeds protobuf's own limit)."""
    model = _model([], [_vi("c", [], TensorProto.BOOL), _vi("x", [3])], [_vi("y0", [3])])
    graph = model.graph
    for level in range(depth):
        node = graph.node.add()
        node.op_type, node.output[:] = "If", [f"y{level}"]
        node.input.append("c")
        else_branch = helper.make_graph([helper.make_node("Identity", ["x"], [f"e{level}"])], f"e{level}", [],
                                        [_vi(f"e{level}", [3])])
        node.attribute.append(helper.make_attribute("else_branch", else_branch))
        then = node.attribute.add()
        then.name, then.type = "then_branch", onnx.AttributeProto.GRAPH
        graph = then.g
        graph.name = f"level{level + 1}"
        graph.output.append(_vi(f"y{level + 1}", [3]))
    graph.node.append(helper.make_node("Identity", ["x"], [f"y{depth}"]))
    return model


def _loop(carried):
    """A Loop whose node carries `carried` values into a body that takes one."""
    body = helper.make_graph([helper.make_node("Identity", ["cond"], ["cond_out"]),
                              helper.make_node("Identity", ["a"], ["a_out"])], "body",
                             [_vi("i", [], I64), _vi("cond", [], TensorProto.BOOL), _vi("a", [3])],
                             [_vi("cond_out", [], TensorProto.BOOL), _vi("a_out", [3])])
    return _model([helper.make_node("Loop", ["m", ""] + ["a0"] * carried, ["a"] * carried, body=body)],
                  [_vi("m", [], I64), _vi("a0", [3])], [_vi("a", [3])])


def _relu(**kw):
    return _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [3])], [_vi("y", [3])], **kw)


def _with(model, edit):
    edit(model)
    return model


def _state(updates, buffer_init=True):
    init = [numpy_helper.from_array(np.zeros(3, np.float32), "seen")] if buffer_init else []
    model = _model([helper.make_node("Add", ["seen", "x"], ["seen.updated"]), helper.make_node("Mul", ["x", "x"], ["y"])],
                   [_vi("x", [3]), _vi("seen", [3])], [_vi("y", [3]), _vi("seen.updated", [3])], init)
    entry = model.metadata_props.add()
    entry.key, entry.value = "aten2onnx.state_updates", updates
    return model


def _not_utf8(model, marker):
    """model serialized with the bytes of `marker` (a name in it) turned into invalid UTF-8: protobuf
    then hands that field back as bytes (found by the fuzzer: a foreign TypeError deep in planning)."""
    data = model.SerializeToString()
    assert data.count(marker.encode()) == 1
    return data.replace(marker.encode(), b"\xff" + marker.encode()[1:])


def _stamped(model, name):
    """Named and stamped as a node of an exported gelu group, so that fusion reads the name."""
    model.graph.node[0].name = name
    model.graph.node[0].metadata_props.add(key="aten_op", value="aten::gelu.default")
    return model


_NODE = helper.make_node
MALFORMED = [
    # found by scripts/fuzz_runtime.py (seed 0, mutants 490 and 2265: flipped bytes)
    ("a node name that is not UTF-8", _not_utf8(_stamped(_relu(), "gelu/Mul"), "gelu/Mul"), "NodeProto.name .* UTF-8"),
    ("a metadata key that is not UTF-8", _not_utf8(_with(_relu(), lambda m: m.metadata_props.add(key="source", value="v")),
                                                   "source"), "StringStringEntryProto.key .* UTF-8"),
    ("a cycle", _model([_NODE("Relu", ["b"], ["a"]), _NODE("Relu", ["a"], ["b"])], [_vi("x", [3])], [_vi("a", [3])]),
     "cycle"),
    ("a node reading its own output", _model([_NODE("Add", ["x", "y"], ["y"])], [_vi("x", [3])], [_vi("y", [3])]),
     "reads"),
    ("a value defined twice", _model([_NODE("Relu", ["x"], ["y"]), _NODE("Neg", ["x"], ["y"])], [_vi("x", [3])],
                                     [_vi("y", [3])]), "'y', which is already defined"),
    ("a node output named like a graph input", _model([_NODE("Relu", ["x"], ["x"])], [_vi("x", [3])], [_vi("x", [3])]),
     "'x', which is already defined"),
    ("a node output named like an initializer", _model(
        [_NODE("Relu", ["x"], ["w"]), _NODE("Add", ["w", "x"], ["y"])], [_vi("x", [3])], [_vi("y", [3])],
        [numpy_helper.from_array(np.ones(3, np.float32), "w")]), "'w', which is already defined"),
    ("a duplicate graph input", _model([_NODE("Relu", ["x"], ["y"])], [_vi("x", [3]), _vi("x", [3])], [_vi("y", [3])]),
     "graph input 'x' appears twice"),
    ("a duplicate graph output", _model([_NODE("Relu", ["x"], ["y"])], [_vi("x", [3])], [_vi("y", [3]), _vi("y", [3])]),
     "graph output 'y' appears twice"),
    ("a duplicate initializer", _model([_NODE("Add", ["x", "w"], ["y"])], [_vi("x", [3])], [_vi("y", [3])],
                                       [numpy_helper.from_array(np.ones(3, np.float32), "w")] * 2),
     "initializer 'w' appears twice"),
    ("an output no node produces", _model([_NODE("Relu", ["x"], ["y"])], [_vi("x", [3])], [_vi("z", [3])]),
     "produced by no node"),
    ("a subgraph output shadowing an enclosing value", _model(
        [_NODE("If", ["c"], ["z"], then_branch=helper.make_graph([_NODE("Neg", ["x"], ["x2"]), _NODE("Relu", ["x"], ["c"])],
                                                                  "t", [], [_vi("x2", [3])]),
               else_branch=helper.make_graph([_NODE("Neg", ["x"], ["x3"])], "e", [], [_vi("x3", [3])]))],
        [_vi("c", [], TensorProto.BOOL), _vi("x", [3])], [_vi("z", [3])]), "'c', which is already defined"),
    ("If branches with different output counts", _if(1, 2, 1), "else_branch's output count is 2"),
    ("an If with more outputs than its branches", _if(1, 1, 2), "then_branch's output count is 1"),
    ("a Loop carrying more values than its body takes", _with(_loop(2), lambda m: m.graph.node[0].output.__setitem__(
        slice(None), ["a", "b"])), "body's input count"),
    ("nesting deeper than the bound", _nested(MAX_NESTING + 8), f"refuses more than {MAX_NESTING} levels"),
    ("IR version 0", _relu(ir=0), "IR version 0"),
    ("an IR version from the future", _relu(ir=onnx.IR_VERSION + 1), "IR version"),
    ("opset 0", _relu(opset=0), "version 0"),
    ("an opset from the future", _relu(opset=MAX_OPSET + 1), str(MAX_OPSET + 1)),
    ("a domain imported twice", _relu(domains=[("", 18)]), "twice"),
    ("the ATen domain at version 2", _relu(domains=[(_aten_node.DOMAIN, 2)]), "version 2"),
    ("an element type that does not exist", _model([_NODE("Relu", ["x"], ["y"])], [_vi("x", [3], 99)], [_vi("y", [3])]),
     "element type 99"),
    ("an initializer of an element type that does not exist", _with(
        _model([_NODE("Add", ["x", "w"], ["y"])], [_vi("x", [3])], [_vi("y", [3])],
               [numpy_helper.from_array(np.ones(3, np.float32), "w")]),
        lambda m: setattr(m.graph.initializer[0], "data_type", 77)), "element type 77"),
    ("an initializer with a negative dim", _with(
        _model([_NODE("Add", ["x", "w"], ["y"])], [_vi("x", [3])], [_vi("y", [3])],
               [numpy_helper.from_array(np.ones(3, np.float32), "w")]),
        lambda m: m.graph.initializer[0].dims.__setitem__(0, -3)), "negative dimension"),
    ("an attribute given twice", _with(_model([_NODE("Softmax", ["x"], ["y"], axis=0)], [_vi("x", [3])], [_vi("y", [3])]),
                                       lambda m: m.graph.node[0].attribute.append(helper.make_attribute("axis", 0))),
     "attribute 'axis' appears twice"),
    ("a node in the runtime's internal domain", _model(
        [_NODE("Gelu", ["x"], ["y"], domain="aten2onnx.fused")], [_vi("x", [3])], [_vi("y", [3])]), "internal domain"),
    ("state_updates that is not JSON", _state("[{"), "malformed"),
    ("state_updates naming no output", _state('[{"output": "nope", "kind": "buffer", "input": "seen"}]'),
     "no such output or input"),
    ("state_updates of an unknown kind", _state('[{"output": "seen.updated", "kind": "file", "input": "seen"}]'),
     "kind must be"),
    ("state_updates updating one input twice", _state(
        '[{"output": "seen.updated", "kind": "buffer", "input": "seen"}, {"output": "y", "kind": "buffer", '
        '"input": "seen"}]'), "input 'seen' appears twice"),
    ("a buffer without a default", _state('[{"output": "seen.updated", "kind": "buffer", "input": "seen"}]',
                                          buffer_init=False), "a buffer is an input with an initializer"),
    ("state_updates with strings that are not", _state('[{"output": 1, "kind": "buffer", "input": "seen"}]'),
     "must be strings"),
]


@pytest.mark.parametrize("model, message", [pytest.param(*c[1:], id=c[0]) for c in MALFORMED])
def test_malformed_models_are_refused_at_load(model, message):
    with pytest.raises(InvalidModelError, match=message):
        InferenceSession(model)


def test_a_state_update_that_does_not_fit_its_input_is_our_error():
    model = _model([helper.make_node("Concat", ["seen", "x"], ["seen.updated"], axis=0)], [_vi("x", [3]), _vi("seen", None)],
                   [_vi("seen.updated", None)], [numpy_helper.from_array(np.zeros(3, np.float32), "seen")])
    entry = model.metadata_props.add()
    entry.key, entry.value = "aten2onnx.state_updates", '[{"output": "seen.updated", "kind": "input", "input": "x"}]'
    with pytest.raises(InvalidModelError, match="gives a value its input 'x' does not accept.*size 6"):
        InferenceSession(model).run_torch({"x": torch.ones(3)})


def test_a_written_input_that_cannot_be_written_is_our_error():
    exported = aten2onnx.export(lambda x: x.add_(1), (torch.zeros(3),))
    session = InferenceSession(exported.model_proto)
    with pytest.raises(InvalidInputError, match="cannot be written in place"):
        session.run_torch({exported.input_names[0]: torch.zeros(1).expand(3)})


# ---- external data: only from the folder named, never outside it --------------------------------------


def _external_model(location, **extra):
    tensor = numpy_helper.from_array(np.arange(3, dtype=np.float32), "w")
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in {"location": location, **extra}.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, str(value)
    return _model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", [3])], [_vi("y", [3])], [tensor])


def _weights(folder, name="w.bin"):
    (folder / name).write_bytes(np.arange(3, dtype=np.float32).tobytes())
    return folder / name


EXTERNAL = [
    ("bytes with external data and no base_dir", lambda d: (_external_model("w.bin").SerializeToString(), {}),
     "pass base_dir="),
    ("a ModelProto with external data and no base_dir", lambda d: (_external_model("w.bin"), {}), "pass base_dir="),
    ("a parent-directory location", lambda d: (_external_model("../secret.bin"), {"base_dir": d / "m"}), "without '..'"),
    ("a parent-directory location inside a path", lambda d: (_external_model("sub/../../secret.bin"),
                                                             {"base_dir": d / "m"}), "without '..'"),
    ("a windows parent-directory location", lambda d: (_external_model("..\\secret.bin"), {"base_dir": d / "m"}),
     "without '..'"),
    ("an absolute location", lambda d: (_external_model(str(d / "secret.bin")), {"base_dir": d / "m"}),
     "must be a relative path"),
    ("a drive-letter location", lambda d: (_external_model("C:/secret.bin"), {"base_dir": d / "m"}),
     "must be a relative path"),
    ("a location with a NUL byte", lambda d: (_external_model("w.bin\0.txt"), {"base_dir": d / "m"}),
     "must be a relative path"),
    ("a symlink out of the folder", lambda d: (_external_model("link.bin"), {"base_dir": d / "m"}), "outside the model's folder"),
    ("a location that is a folder", lambda d: (_external_model("sub"), {"base_dir": d / "m"}), "not a regular file"),
    ("a file that does not exist", lambda d: (_external_model("none.bin"), {"base_dir": d / "m"}), "cannot open"),
    ("bytes beyond the file", lambda d: (_external_model("w.bin", offset=8, length=12), {"base_dir": d / "m"}),
     "beyond the end"),
    ("a negative offset", lambda d: (_external_model("w.bin", offset=-4), {"base_dir": d / "m"}), "non-negative"),
    ("an unknown key", lambda d: (_external_model("w.bin", mode="rw"), {"base_dir": d / "m"}), "'mode' is unknown"),
    ("a Constant's external tensor in bytes", lambda d: (_model(
        [helper.make_node("Constant", [], ["y"], value=_external_model("w.bin").graph.initializer[0])], [],
        [_vi("y", [3])]).SerializeToString(), {}), "pass base_dir="),
]


@pytest.fixture
def folders(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "sub").mkdir()
    (tmp_path / "secret.bin").write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    _weights(tmp_path / "m")
    os.symlink(tmp_path / "secret.bin", tmp_path / "m" / "link.bin")
    return tmp_path


@pytest.mark.parametrize("build, message", [pytest.param(*c[1:], id=c[0]) for c in EXTERNAL])
def test_external_data_tricks_are_refused(folders, build, message):
    model, kwargs = build(folders)
    with pytest.raises(InvalidModelError, match=message):
        InferenceSession(model, **kwargs)


def test_external_data_loads_from_the_folder_named_or_the_model_files(folders):
    x = np.ones(3, np.float32)
    want = x + np.arange(3, dtype=np.float32)
    model = _external_model("w.bin")
    np.testing.assert_array_equal(InferenceSession(model.SerializeToString(), base_dir=folders / "m").run(None, {"x": x})[0], want)
    np.testing.assert_array_equal(InferenceSession(model, base_dir=str(folders / "m")).run(None, {"x": x})[0], want)
    assert model.graph.initializer[0].data_location == TensorProto.EXTERNAL  # the caller's proto is left as it was
    onnx.save(model, str(folders / "m" / "model.onnx"))
    np.testing.assert_array_equal(InferenceSession(folders / "m" / "model.onnx").run(None, {"x": x})[0], want)
    # a symlink inside the folder to a file inside it is fine
    os.symlink(folders / "m" / "w.bin", folders / "m" / "alias.bin")
    np.testing.assert_array_equal(InferenceSession(_external_model("alias.bin"), base_dir=folders / "m")
                                  .run(None, {"x": x})[0], want)


def test_a_symlinked_model_reads_data_beside_its_real_file(tmp_path):
    """The Hugging Face cache layout: snapshots/v/model.onnx -> ../../blobs/m; onnxruntime allows data
    under the link's folder or the real file's."""
    (tmp_path / "blobs").mkdir()
    (tmp_path / "snap").mkdir()
    _weights(tmp_path / "blobs")
    onnx.save(_external_model("w.bin"), str(tmp_path / "blobs" / "model"))
    os.symlink(tmp_path / "blobs" / "model", tmp_path / "snap" / "model.onnx")
    os.symlink(tmp_path / "blobs" / "w.bin", tmp_path / "snap" / "w.bin")
    out = InferenceSession(str(tmp_path / "snap" / "model.onnx")).run(None, {"x": np.zeros(3, np.float32)})[0]
    np.testing.assert_array_equal(out, np.arange(3, dtype=np.float32))


# ---- the process is left as it was --------------------------------------------------------------------


def test_a_session_never_changes_process_state(capfd):
    """Random ATen ops and random ONNX kernels draw from the session's own generator: the caller's
    stream of random numbers, threads, grad mode and stdout are as they were."""
    nodes = [_aten("randn", outputs=["a"], size=[4]),
             _aten("bernoulli", ["x"], ["self"], outputs=["b"], overload="p", p=0.5),
             _aten("native_dropout", ["x"], ["input"], outputs=["c", "c_mask"], p=0.5, train=1),
             helper.make_node("RandomNormal", [], ["d"], shape=[4]),
             helper.make_node("Dropout", ["x", "ratio", "train"], ["e"])]
    model = _model(nodes, [_vi("x", [4])], [_vi(n, [4]) for n in "abcde"],
                   [numpy_helper.from_array(np.array(0.5, np.float32), "ratio"),
                    numpy_helper.from_array(np.array(True), "train")], domains=[(_aten_node.DOMAIN, 1)])
    session = InferenceSession(model)
    torch.manual_seed(1234)
    state, threads, grad = torch.get_rng_state(), torch.get_num_threads(), torch.is_grad_enabled()
    first = session.run_torch({"x": torch.full((4,), 0.5)})
    second = session.run_torch({"x": torch.full((4,), 0.5)})
    assert torch.equal(torch.get_rng_state(), state)
    assert (torch.get_num_threads(), torch.is_grad_enabled()) == (threads, grad)
    assert not torch.equal(first["a"], second["a"])  # the session's own stream moves on
    assert capfd.readouterr().out == ""


# ---- long runs stop; a caller's signal is the caller's ------------------------------------------------


def _endless_loop():
    body = helper.make_graph([helper.make_node("Identity", ["cond"], ["cond_out"]), helper.make_node("Add", ["a", "a"], ["a_out"])],
                             "body", [_vi("i", [], I64), _vi("cond", [], TensorProto.BOOL), _vi("a", [1])],
                             [_vi("cond_out", [], TensorProto.BOOL), _vi("a_out", [1])])
    return _model([helper.make_node("Loop", ["", "c", "a0"], ["a"], body=body)],
                  [_vi("c", [], TensorProto.BOOL), _vi("a0", [1])], [_vi("a", [1])])


FEEDS = {"c": np.array(True), "a0": np.zeros(1, np.float32)}


@pytest.mark.parametrize("session_timeout, run_timeout", [(None, 0.3), (0.3, None)])
def test_a_long_loop_stops_at_the_timeout(session_timeout, run_timeout):
    session = InferenceSession(_endless_loop(), timeout=session_timeout)
    start = time.monotonic()
    with pytest.raises(RunTimeoutError, match="took longer than its timeout"):
        session.run(None, FEEDS, timeout=run_timeout)
    assert time.monotonic() - start < 5
    assert issubclass(RunTimeoutError, RunError)


class _Stop(Exception):
    pass


def test_an_exception_raised_by_a_signal_handler_propagates_unchanged():
    def stop(signum, frame):
        raise _Stop()

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(_Stop):
            InferenceSession(_endless_loop()).run(None, FEEDS)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---- fusion only where the structure is proven --------------------------------------------------------


class _MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def _attention(q, k, v, mask):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _set_constant(value_before, value_after):
    def edit(model):
        for init in model.graph.initializer:
            array = numpy_helper.to_array(init)
            if array.ndim == 0 and np.isclose(float(array), value_before):  # (-inf included)
                init.CopyFrom(numpy_helper.from_array(np.array(value_after, array.dtype), init.name))
                return
        raise AssertionError(f"no constant {value_before}")

    return edit


def _rewire_erf(model):
    erf = next(n for n in model.graph.node if n.op_type == "Erf")
    scaled = next(n for n in model.graph.node if n.output[0] == erf.input[0])
    scaled.input[0] = scaled.input[0] + "_other"
    model.graph.node.insert(0, helper.make_node("Neg", [scaled.input[0][:-6]], [scaled.input[0]]))


def _extra_attribute(model):
    next(n for n in model.graph.node if n.op_type == "Erf").attribute.append(helper.make_attribute("approximate", 1))


def _overridable(model):
    half = next(i for i in model.graph.initializer if not i.dims and np.isclose(numpy_helper.to_array(i), 0.5))
    model.graph.input.append(helper.make_tensor_value_info(half.name, half.data_type, []))


def _unmasked_fill(model):
    _set_constant(-np.inf, 0.0)(model)


FUSION = [
    # (id, model maker, edit, fused after the edit)
    ("gelu as exported", "mlp", None, True),
    ("gelu with 0.5 edited to 2.0", "mlp", _set_constant(0.5, 2.0), False),
    ("gelu with sqrt(2) edited to 1.0", "mlp", _set_constant(2 ** 0.5, 1.0), False),
    ("gelu with its erf fed another value", "mlp", _rewire_erf, False),
    ("gelu with an attribute added", "mlp", _extra_attribute, None),
    ("gelu whose constant a feed can override", "mlp", _overridable, False),
    ("attention as exported", "attention", None, True),
    ("attention with another scale", "attention", _set_constant(0.5, 0.125), True),
    ("attention whose mask fills 0 instead of -inf", "attention", _unmasked_fill, False),
]


def _fusion_case(kind):
    torch.manual_seed(0)
    if kind == "mlp":
        args = (torch.randn(3, 4),)
        return aten2onnx.export(_MLP().eval(), args, opset=17), args
    args = tuple(torch.randn(1, 2, 4, 4) for _ in range(3)) + (torch.rand(4, 4) > 0.3,)
    return aten2onnx.export(_attention, args, opset=18), args


@pytest.mark.parametrize("kind, edit, fused", [pytest.param(*c[1:], id=c[0]) for c in FUSION])
def test_a_group_is_fused_only_when_its_structure_is_the_exporters(kind, edit, fused):
    exported, args = _fusion_case(kind)
    model = onnx.ModelProto()
    model.CopyFrom(exported.model_proto)
    if edit is not None:
        edit(model)
    feeds = {name: a.numpy() for name, a in zip(exported.input_names, args) if name in {i.name for i in model.graph.input}}
    if fused is None:  # an invalid node: onnxruntime refuses it, and so do we
        with pytest.raises(InvalidModelError):
            InferenceSession(model)
        return
    session = InferenceSession(model)
    kernels = {s.node.domain for s in session._runner.steps}
    assert ("aten2onnx.fused" in kernels) == fused
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(session.run(None, feeds)[0], theirs[0], rtol=1e-5, atol=1e-6)


UNFUSABLE_MASKS = [
    # (id, the mask's declared shape, the mask fed): found by the fuzzer (seed 0, mutants 253, 490, 742)
    ("a 1-D mask, which the fused op cannot take", [4], np.array([True, False, True, True])),
    ("a fully masked row: NaN as written, zeros in torch's attention", [4, 1], np.array([[True], [False], [True], [True]])),
]


@pytest.mark.parametrize("shape, mask", [pytest.param(*c[1:], id=c[0]) for c in UNFUSABLE_MASKS])
def test_a_fused_group_runs_as_written_when_its_inputs_are_not_what_the_fused_op_assumes(shape, mask):
    exported, args = _fusion_case("attention")
    model = onnx.ModelProto()
    model.CopyFrom(exported.model_proto)
    info = next(i for i in model.graph.input if i.name == exported.input_names[3])
    info.type.tensor_type.shape.ClearField("dim")
    for size in shape:
        info.type.tensor_type.shape.dim.add().dim_value = size
    feeds = {name: a.numpy() for name, a in zip(exported.input_names, args)}
    feeds[info.name] = mask
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(InferenceSession(model).run(None, feeds)[0], theirs[0], rtol=1e-5, atol=1e-6)


# ---- every ONNX element type torch has travels through the numpy API ----------------------------------


def _cast_model(source, target):
    return _model([helper.make_node("Cast", ["x"], ["y"], to=target)], [_vi("x", [4], source)], [_vi("y", [4], target)],
                  opset=21)


NUMPY_TYPES = [
    # (id, model, feed): the output, dtype and bits, as onnx's reference evaluator gives it
    ("a bfloat16 output", _cast_model(F32, TensorProto.BFLOAT16), np.array([1.5, -2.25, 3e5, 0.1], np.float32)),
    ("a float8 e4m3fn output", _cast_model(F32, TensorProto.FLOAT8E4M3FN), np.array([1.5, -2.25, 448, 0.1], np.float32)),
    ("a float8 e5m2 output", _cast_model(F32, TensorProto.FLOAT8E5M2), np.array([1.5, -2.25, 448, 0.1], np.float32)),
    ("a bfloat16 feed", _cast_model(TensorProto.BFLOAT16, F32), np.array([1.5, -2.25, 3e5, 0.1], ml_dtypes.bfloat16)),
    ("a float8 feed", _cast_model(TensorProto.FLOAT8E4M3FN, F32), np.array([1.5, -2.25, 448, 0.1], ml_dtypes.float8_e4m3fn)),
    ("an int4 feed and output", _model([helper.make_node("Identity", ["x"], ["y"])], [_vi("x", [4], TensorProto.INT4)],
                                       [_vi("y", [4], TensorProto.INT4)], opset=21), np.array([1, -2, 7, -8], ml_dtypes.int4)),
    ("a TensorProto feed", _cast_model(F32, TensorProto.DOUBLE),
     numpy_helper.from_array(np.array([1.5, -2.25, 3e5, 0.1], np.float32), "x")),
]


@pytest.mark.parametrize("model, feed", [pytest.param(*c[1:], id=c[0]) for c in NUMPY_TYPES])
def test_numpy_api_carries_every_element_type(model, feed):
    (ours,) = InferenceSession(model).run(None, {"x": feed})
    array = numpy_helper.to_array(feed) if isinstance(feed, onnx.TensorProto) else feed
    (want,) = ReferenceEvaluator(model).run(None, {"x": array})
    assert ours.dtype == want.dtype
    assert ours.tobytes() == want.tobytes()


# ---- saving -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("external", [False, True])
def test_saved_files_follow_the_umask(tmp_path, external):
    exported = aten2onnx.export(_MLP().eval(), (torch.randn(3, 4),))
    previous = os.umask(0o022)
    try:
        exported.save(tmp_path / "model.onnx", external_data=external)
    finally:
        os.umask(previous)
    assert {name: os.stat(tmp_path / name).st_mode & 0o777 for name in os.listdir(tmp_path)} == \
        {name: 0o644 for name in os.listdir(tmp_path)}


def test_a_save_interrupted_before_the_model_is_written_leaves_the_old_model_with_its_own_weights(tmp_path,
                                                                                                   monkeypatch):
    x = torch.randn(3, 4)
    old, new = _MLP().eval(), _MLP().eval()  # the same shapes, other weights
    path = tmp_path / "model.onnx"
    aten2onnx.export(old, (x,)).save(path, external_data=True)
    replaced = []
    real_replace = os.replace

    def crash_at_the_model(src, dst):
        if str(dst) == str(path):
            raise OSError("power cut")
        replaced.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash_at_the_model)
    with pytest.raises(OSError, match="power cut"):
        aten2onnx.export(new, (x,)).save(path, external_data=True)
    monkeypatch.setattr(os, "replace", real_replace)
    assert replaced  # the new weights were written, under a name of their own
    got = InferenceSession(str(path)).run_torch({"x": x})["output"]
    torch.testing.assert_close(got, old(x))
    aten2onnx.export(new, (x,)).save(path, external_data=True)
    torch.testing.assert_close(InferenceSession(str(path)).run_torch({"x": x})["output"], new(x))
    data = [name for name in os.listdir(tmp_path) if name.endswith(".data")]
    assert len(data) == 1  # earlier saves' data removed once the new model is in place
    (location,) = {e.value for t in onnx.load(str(path), load_external_data=False).graph.initializer
                   for e in t.external_data if e.key == "location"}
    assert location == data[0] and os.sep not in location


# ---- the mutation fuzzer ------------------------------------------------------------------------------


def _fuzz_script():
    """scripts/fuzz_runtime.py, imported by path: its seed models."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "fuzz_runtime.py"
    spec = importlib.util.spec_from_file_location("fuzz_runtime", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fuzzed_mutants_of_exported_models_never_escape():
    report = fuzz.fuzz(_fuzz_script().seeds(), n=400, seed=0)
    assert report.tried == 400
    assert not report.escapes, report.summary()
    assert not report.fusion, report.summary()
