"""Per-op tests beyond the op table (tests/optables/ops.py, run by test_ops_generic.py): a fast OpInfo
subset; hypothesis properties for elementwise ops on broadcastable shapes and dtypes; values at the edges."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, strategies as st

import aten2onnx
from conftest import run_ort
from optable import TOL, assert_opinfo_native, run_both

# -- a fast OpInfo subset: first sample, float32, opsets 13 and 18 ------------------------------------------

OPINFO_SUBSET = [
    "abs", "acos", "add", "addcmul", "addmm", "addmv", "amax", "argmax", "argmin", "atan2", "baddbmm", "bmm",
    "cat", "ceil", "clamp", "cos", "cosh", "cumsum", "deg2rad", "diag", "diag_embed", "diagonal", "div",
    "eq", "erf", "exp", "expand", "flatten", "flip", "floor", "fmod", "frac", "gather", "ge", "hstack", "index_select",
    "isinf", "isnan", "kron", "le", "lerp", "log", "log10", "log1p", "log_softmax", "logaddexp", "logsumexp",
    "masked_fill", "matmul", "max.reduction_with_dim", "maximum", "mean", "min.reduction_with_dim", "mm",
    "movedim", "mul", "mv", "nan_to_num", "neg", "nn.functional.conv2d", "nn.functional.elu",
    "nn.functional.gelu", "nn.functional.glu", "nn.functional.hardswish", "nn.functional.layer_norm",
    "nn.functional.linear", "nn.functional.relu", "nn.functional.silu", "nn.functional.softplus", "permute",
    "pow", "prod", "reciprocal", "remainder", "repeat", "reshape", "roll", "rot90", "round", "rsqrt", "sigmoid",
    "sign", "sin", "softmax", "split", "sqrt", "square", "squeeze", "stack", "std", "sub", "sum", "t", "tanh",
    "tensordot", "tile", "transpose", "tril", "triu", "trunc", "unsqueeze", "var", "vstack", "where", "xlogy",
]


@pytest.mark.parametrize("name", OPINFO_SUBSET)
def test_opinfo_subset(name):
    assert_opinfo_native(name, [13, 18])


# OpInfos native at opset 9 through its own spellings: TopK of the order-reversed values for the smallest first,
# GatherElements as a flat Gather, Round from Floor, MaxPool's ceil mode as end padding, ~x as -1 - x,
# dynamic arange by NonZero, integer and/or/xor bit by bit, reducing scatters by a one-hot mask, writes along
# a dim or at flat positions by Scatter
OPSET9_SPELLINGS = [
    ("scatter_add", "float32"), ("scatter_reduce.prod", "int64"), ("scatter_reduce.amax", "float16"),
    ("scatter_reduce.mean", "float32"), ("index_reduce.amin", "int32"), ("index_add", "float32"),
    ("index_copy", "float32"), ("index_fill", "int64"), ("diagonal_scatter", "float32"),
    ("as_strided_scatter", "float32"),
    ("sort", "float32"), ("argsort", "float16"), ("msort", "float32"), ("kthvalue", "float32"), ("median", "float32"),
    ("nanmedian", "float32"), ("quantile", "float32"), ("nanquantile", "float32"), ("masked.median", "float32"),
    ("cummin", "float32"), ("topk", "int8"), ("nn.functional.max_pool2d", "float32"),
    ("nn.functional.max_pool1d", "float32"), ("bitwise_not", "int64"), ("nn.functional.one_hot", "int64"),
    ("bitwise_and", "int64"), ("__rxor__", "int32"), ("bitwise_or", "uint8"),
]


@pytest.mark.parametrize("name, dtype", OPSET9_SPELLINGS)
def test_opinfo_native_at_opset_9(name, dtype):
    assert_opinfo_native(name, [9], dtype=dtype)


# -- hypothesis: elementwise ops on broadcastable shapes and dtypes ------------------------------------------

SHAPES = st.lists(st.integers(1, 3), min_size=0, max_size=3)
DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64]
BINARY = {"atan2": torch.atan2, "fmod": torch.fmod, "remainder": torch.remainder, "hypot": torch.hypot,
          "logaddexp": torch.logaddexp, "copysign": torch.copysign, "xlogy": torch.xlogy,
          "true_divide": torch.true_divide}
FLOAT_ONLY = {"hypot", "logaddexp", "atan2"}  # atan2: onnxruntime has no double Atan kernel


@st.composite
def broadcast_pair(draw):
    shape = draw(SHAPES)
    other = [d if draw(st.booleans()) else 1 for d in shape][draw(st.integers(0, len(shape))):]
    return shape, other


@given(broadcast_pair(), st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.sampled_from(sorted(BINARY)),
       st.sampled_from([9, 13, 18]))
@example(([3], [3]), torch.int64, torch.int64, "remainder", 9)  # integer remainder before Mod (opset 10)
@example(([2, 3], [3]), torch.float32, torch.int32, "atan2", 18)
def test_binary_elementwise_matches_eager(shapes, a_dtype, b_dtype, op, opset):
    if op in FLOAT_ONLY:
        a_dtype = b_dtype = torch.float32
    fn = BINARY[op]
    a = (torch.randn(shapes[0]) * 4).to(a_dtype)
    b = (torch.randn(shapes[1]) * 4 + 0.5).to(b_dtype)
    if op in ("fmod", "remainder"):
        b = torch.where(b == 0, torch.ones_like(b), b)
    expected = fn(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(lambda a, b: fn(a, b), (a, b), opset=opset, fallback="error")
    rtol, atol = TOL.get(expected.dtype, (0, 0))
    got = exported.run(a, b)
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=rtol, atol=max(atol, 1e-5), equal_nan=True)
    (ort_out,) = run_ort(exported.model_proto, {"a": a, "b": b})
    torch.testing.assert_close(torch.from_numpy(ort_out), expected, rtol=rtol, atol=max(atol, 1e-5), equal_nan=True)


UNARY = {"sign": torch.sign, "trunc": torch.trunc, "round": torch.round, "expm1": torch.expm1,
         "log1p": torch.log1p, "frac": torch.frac, "square": torch.square, "sinc": torch.sinc}


@given(SHAPES, st.sampled_from([torch.float32, torch.float64]), st.sampled_from(sorted(UNARY)),
       st.sampled_from([9, 11, 18]))
def test_unary_elementwise_matches_eager(shape, dtype, op, opset):
    x = (torch.randn(shape) * 3).to(dtype)
    run_both(UNARY[op], (x,), opset)


# -- values at the edges: signed zeros, infinities and NaN divisors, narrow integers and negative numbers ------


@pytest.mark.parametrize("op", [torch.remainder, torch.fmod], ids=["remainder", "fmod"])
@pytest.mark.parametrize("opset", [9, 10, 18])
def test_remainder_and_fmod_keep_eager_signed_zeros_and_infinities(op, opset):
    """A zero remainder has the dividend's sign (ATen's fmod), so a division by it gets eager's
    infinity; a finite number is its own remainder by an infinity; a NaN divisor gives NaN."""
    a = torch.tensor([2.5, -2.5, 0.0, -0.0, 7.0, -7.0, float("inf"), float("nan"), 3.0, -3.0, 3.0])
    b = torch.tensor([-1.25, -1.25, 1.0, 1.0, 3.0, 3.0, 2.0, 1.0, float("inf"), float("inf"), float("nan")])
    expected = op(a, b)
    exported = aten2onnx.export(op, (a, b), opset=opset, fallback="error")
    (theirs,) = run_ort(exported.model_proto, dict(zip(exported.input_names, (a, b))))
    for got in (exported.run(a, b), torch.from_numpy(theirs)):
        torch.testing.assert_close(got, expected, equal_nan=True)
        assert torch.equal(torch.signbit(got), torch.signbit(expected))


@pytest.mark.parametrize("opset", [9, 18])
def test_integer_floor_division_by_a_negative_number_wraps_it_first(opset):
    """uint8 // -1 divides by 255, as eager casts the number to the tensor's dtype first."""
    x = torch.tensor([3, 200, 255], dtype=torch.uint8)

    def f(x):
        return x // -1, x // -2, x % -3, torch.div(x, -2, rounding_mode="trunc")

    exported = aten2onnx.export(f, (x,), opset=opset, fallback="error")
    for got, want in zip(exported.run(x), f(x)):
        assert torch.equal(got, want)


@pytest.mark.parametrize("opset", [9, 18])
def test_hypot_neither_overflows_nor_loses_infinities(opset):
    """hypot squares in float64 (float32 squares overflow from 1.8e19) and is inf where either side is."""
    a = torch.tensor([68.0, 1e20, 3.0, 0.0, float("inf"), float("nan"), -float("inf")])
    b = torch.tensor([1.0, 1e20, 4.0, 0.0, float("nan"), 2.0, 1.0])
    exported = aten2onnx.export(torch.hypot, (a, b), opset=opset, fallback="error")
    (theirs,) = run_ort(exported.model_proto, dict(zip(exported.input_names, (a, b))))
    for got in (exported.run(a, b), torch.from_numpy(theirs)):
        torch.testing.assert_close(got, torch.hypot(a, b), equal_nan=True)


@pytest.mark.parametrize("fn", [F.hardswish, F.hardsigmoid, F.leaky_relu, F.selu],
                         ids=["hardswish", "hardsigmoid", "leaky_relu", "selu"])
def test_float64_activations_use_float64_constants(fn):
    """ONNX's activation attributes are float32 (1/6 is 3e-9 off): float64 inputs compute with float64 ones."""
    x = torch.arange(-16, 17, dtype=torch.float64) / 4
    exported = aten2onnx.export(fn, (x,), opset=18, fallback="error")
    (theirs,) = run_ort(exported.model_proto, {exported.input_names[0]: x})
    for got in (exported.run(x), torch.from_numpy(theirs)):
        torch.testing.assert_close(got, fn(x), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("opset", [9, 18])
def test_atan2_reads_the_signs_of_zeros(opset):
    """atan2(+-0, -0) is +-pi, atan2(-0, x < 0) -pi and atan2(+-1, -0) +-pi/2, as C's atan2 gives them;
    a -0 result stays -0 (but in onnxruntime, whose Where makes -0 from its first branch +0)."""
    y = torch.tensor([0.0, -0.0, 0.0, -0.0, -0.0, 0.0, 1.0, -1.0, float("nan"), -0.0])
    x = torch.tensor([0.0, 0.0, -0.0, -0.0, -2.0, -2.0, -0.0, 0.0, 1.0, 1.0])
    expected = torch.atan2(y, x)
    exported = aten2onnx.export(torch.atan2, (y, x), opset=opset, fallback="error")
    (theirs,) = run_ort(exported.model_proto, dict(zip(exported.input_names, (y, x))))
    ours = exported.run(y, x)
    for got in (ours, torch.from_numpy(theirs)):
        torch.testing.assert_close(got, expected, equal_nan=True)
    assert torch.equal(torch.signbit(ours), torch.signbit(expected))


@pytest.mark.parametrize("opset", [9, 18])
def test_sign_of_nan_and_negative_zero_is_eager_zero(opset):
    x = torch.tensor([float("nan"), -0.0, 0.0, -2.5, 3.0, float("inf")])
    exported = aten2onnx.export(torch.sign, (x,), opset=opset, fallback="error")
    (theirs,) = run_ort(exported.model_proto, {exported.input_names[0]: x})
    for got in (exported.run(x), torch.from_numpy(theirs)):
        assert torch.equal(got, torch.sign(x)) and not torch.signbit(got[1])


@pytest.mark.parametrize("opset", [9, 11, 12, 18])
def test_clamp_with_one_bound_leaves_infinities(opset):
    """Clip's missing bound is the largest finite number; clamp's is none at all."""
    x = torch.tensor([float("inf"), -float("inf"), 1.0, -3.0, float("nan")])

    def f(x):
        return x.clamp(min=-2.0), x.clamp(max=2.0)

    exported = aten2onnx.export(f, (x,), opset=opset, fallback="error")
    theirs = run_ort(exported.model_proto, {exported.input_names[0]: x})
    for got in (exported.run(x), tuple(torch.from_numpy(t) for t in theirs)):
        for g_, w in zip(got, f(x)):
            torch.testing.assert_close(g_, w, equal_nan=True)
