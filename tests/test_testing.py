"""aten2onnx.testing: passes for correct symbolics, fails and shrinks for a wrong one, and says why."""

import pytest
import torch
from hypothesis import HealthCheck, settings, strategies as st

import aten2onnx
from aten2onnx.testing import (MismatchError, OpCheckError, arguments, broadcastable_shapes, check_op, dtypes,
                               shapes, symbolic_property, tensors)

FLOATS = dtypes("float", exclude=(torch.float16, torch.bfloat16))
FAST = {"max_examples": 6}
SMALL = shapes(max_dims=2, max_side=3)  # few distinct shapes: each new one costs a torch.export
# A failing run must find, and shrink to, the same case every time.
SEARCH = settings(derandomize=True, database=None, deadline=None, max_examples=40,
                  suppress_health_check=[HealthCheck.too_slow])


def binary(dtype=FLOATS):
    return broadcastable_shapes(2, max_dims=2, max_side=3).flatmap(
        lambda s: arguments(tensors(shape=s[0], dtype=dtype), tensors(shape=s[1], dtype=dtype)))


# -- correct symbolics pass ----------------------------------------------------------------------------


def test_builtin_relu_passes():
    check_op(torch.ops.aten.relu.default, arguments(tensors(shape=SMALL, dtype=FLOATS)), **FAST)


def test_builtin_add_passes_with_broadcasting_and_promotion():
    check_op(torch.ops.aten.add.Tensor, binary(), **FAST)


def test_builtin_softmax_passes_with_a_drawn_dim():
    strategy = shapes(min_dims=1, max_dims=2, max_side=3).flatmap(
        lambda s: arguments(tensors(shape=s), st.integers(-len(s), len(s) - 1), False))
    check_op(torch.ops.aten._softmax.default, strategy, opsets=(11, 13, 18), **FAST)


def test_nan_and_infinity_compare_equal():
    check_op(torch.ops.aten.abs.default, arguments(tensors(shape=(3,), elements=st.floats())), **FAST)


test_builtin_mul_as_collected_property = symbolic_property(torch.ops.aten.mul.Tensor, binary(), **FAST)


def test_plain_callables_and_tuple_strategies_work():
    check_op(lambda x, y: torch.relu(x) * y, st.tuples(tensors(shape=(2, 3)), tensors(shape=(3,))), **FAST)


# -- a wrong symbolic fails, shrinks, and explains -------------------------------------------------------


def relu_as_abs(g, self):
    return g.op("Abs", self)


@pytest.mark.parametrize("runtimes, stage", [(("onnxruntime", "aten2onnx"), "onnxruntime"),
                                             (("aten2onnx",), "aten2onnx")])
def test_wrong_user_symbolic_is_found_and_shrunk(runtimes, stage):
    aten2onnx.register_symbolic("aten::relu.default", opset=9)(relu_as_abs)
    try:
        with pytest.raises(MismatchError) as info:
            check_op(torch.ops.aten.relu.default, arguments(tensors(shape=SMALL)), runtimes=runtimes,
                     settings=SEARCH)
    finally:
        aten2onnx.unregister_symbolic("aten::relu.default")
    error = info.value
    assert (error.op, error.opset, error.stage, error.output) == ("aten::relu.default", 13, stage, 0)
    (x,) = error.inputs.args
    # Minimal: one element, no dims, a small negative value (the only kind where Abs and Relu differ).
    assert x.shape == () and -1 <= x.item() < 0
    message = str(error)
    for part in ("aten::relu.default at opset 13", f"{stage} disagrees", "float32[]", "exported nodes: Abs",
                 "relu_as_abs (user, registered at opset 9)", "abs diff"):
        assert part in message, (part, message)


def test_custom_symbolics_argument_is_checked_too():
    with pytest.raises(MismatchError, match="relu_as_abs \\(custom_symbolics\\)"):
        check_op(torch.ops.aten.relu.default, arguments(tensors(shape=(3,))), opsets=(18,),
                 custom_symbolics={"aten::relu.default": relu_as_abs}, settings=SEARCH)


def test_wrong_dtype_is_found_at_export_or_as_a_mismatch_even_when_values_agree():
    def relu_in_double(g, self):
        return g.op("Cast", g.op("Relu", self), to=11)  # DOUBLE

    def relu_in_double_labelled_float(g, self):
        out = relu_in_double(g, self)
        out.dtype = torch.float32  # a handler that mislabels its result: only running the model shows it
        return out

    with pytest.raises(OpCheckError, match="export failed.*is torch.float64 but the op makes torch.float32"):
        check_op(torch.ops.aten.relu.default, arguments(tensors(shape=(2,))), opsets=(18,),
                 custom_symbolics={"aten::relu.default": relu_in_double}, settings=SEARCH)
    # onnx.checker already rejects the model (its declared output type is float32); skip it to reach
    # the comparison.
    with pytest.raises(MismatchError, match="dtype torch.float64, expected torch.float32"):
        check_op(torch.ops.aten.relu.default, arguments(tensors(shape=(2,))), opsets=(18,), runtimes=("aten2onnx",),
                 custom_symbolics={"aten::relu.default": relu_in_double_labelled_float}, check_model=False,
                 settings=SEARCH)
    with pytest.raises(OpCheckError, match="the exported model is invalid"):
        check_op(torch.ops.aten.relu.default, arguments(tensors(shape=(2,))), opsets=(18,),
                 custom_symbolics={"aten::relu.default": relu_in_double_labelled_float}, settings=SEARCH)


def test_a_failing_export_names_the_stage_and_chains_the_cause():
    def broken(g, self):
        raise RuntimeError("boom")

    with pytest.raises(OpCheckError, match="export failed") as info:
        check_op(torch.ops.aten.relu.default, arguments(tensors(shape=(3,))), opsets=(18,),
                 custom_symbolics={"aten::relu.default": broken}, settings=SEARCH)
    assert info.value.stage == "export" and "boom" in repr(info.value.__cause__.__cause__ or info.value.__cause__)


# -- multiple outputs and fallback-only ops -------------------------------------------------------------


def test_multiple_outputs_are_each_compared():
    # Values that tie (hypothesis likes zeros) check that indices agree on ties too.
    values = st.integers(-50, 50).map(lambda i: i / 8)
    strategy = st.sampled_from([(4,), (2, 3)]).flatmap(
        lambda s: arguments(tensors(shape=s, elements=values), st.integers(-len(s), len(s) - 1)))
    check_op(torch.ops.aten.max.dim, strategy, **FAST)
    check_op(torch.ops.aten.split.Tensor, arguments(tensors(shape=(5, 2)), st.integers(1, 5)), **FAST)


def test_a_wrong_second_output_is_reported_by_index():
    def max_with_bad_indices(g, self, dim, keepdim=False):
        values = g.op("ReduceMax", self, axes=[dim], keepdims=int(keepdim))
        indices = g.op("ArgMin", self, axis=dim, keepdims=int(keepdim))
        return values, indices

    with pytest.raises(MismatchError) as info:
        check_op(torch.ops.aten.max.dim, arguments(tensors(shape=(3,)), 0), opsets=(13,),
                 custom_symbolics={"aten::max.dim": max_with_bad_indices}, settings=SEARCH)
    assert info.value.output == 1 and "output 1" in str(info.value)


def test_fallback_only_ops_run_in_aten2onnx_runtime_only(without_builtin):
    without_builtin("aten::mode.default")
    strategy = arguments(tensors(shape=st.sampled_from([(4,), (2, 3)])), 0)
    check_op(torch.ops.aten.mode.default, strategy, **FAST)  # two outputs, an ATen node, no onnxruntime
    with pytest.raises(OpCheckError, match="UnsupportedOperatorError") as info:
        check_op(torch.ops.aten.mode.default, strategy, fallback="error", settings=SEARCH)
    assert info.value.stage == "export"


# -- strategies and argument checking ------------------------------------------------------------------


@pytest.mark.parametrize("kinds, allowed", [(("int",), {torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8}),
                                            (("bool", "complex"), {torch.bool, torch.complex64, torch.complex128})])
def test_tensors_follow_the_requested_shape_and_dtype(kinds, allowed):
    from hypothesis import given

    @settings(max_examples=20, deadline=None)
    @given(tensors(shape=(2, 3), dtype=dtypes(*kinds)), broadcastable_shapes(3, max_dims=4))
    def check(t, shapes3):
        assert t.shape == (2, 3) and t.dtype in allowed
        torch.broadcast_shapes(*shapes3)

    check()


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(TypeError, match="hypothesis strategy"):
        check_op(torch.ops.aten.relu.default, torch.randn(3))
    with pytest.raises(ValueError, match="runtimes"):
        check_op(torch.ops.aten.relu.default, arguments(tensors()), runtimes=("tensorrt",))
    with pytest.raises(ValueError, match="unknown dtype kinds"):
        dtypes("floats")
    with pytest.raises(OpCheckError, match="eager PyTorch raised"):
        check_op(torch.ops.aten.mm.default, arguments(tensors(shape=(2, 3)), tensors(shape=(2, 3))),
                 settings=SEARCH)
