"""Per-op tests: a data table of ops x samples x dtypes x opsets through the real dispatch, compared
with eager in onnxruntime and aten2onnx.runtime; a fast OpInfo subset; hypothesis properties for
elementwise ops on broadcastable shapes and dtypes."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, strategies as st

import aten2onnx
from conftest import run_ort
from optable import TOL, Entry, assert_opinfo_native, cases, run_both, t, t2

FLOATS = (torch.float32, torch.float64)
NUMERIC = (torch.float32, torch.int32, torch.int64)

TABLE = [
    Entry("abs", torch.abs, [t(3, 4)], NUMERIC),
    Entry("acos", torch.acos, [t(5, low=-0.9, high=0.9)]),  # onnxruntime has no double Acos/Atan kernels
    Entry("atan2", torch.atan2, [t2((3, 4), (4,))]),
    Entry("round", torch.round, [lambda d: (torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 1.2, -2.7], dtype=d),)], FLOATS),
    Entry("round_decimals", lambda x: torch.round(x, decimals=2), [t(6)]),
    Entry("trunc", torch.trunc, [t(7)], FLOATS),
    Entry("fmod", torch.fmod, [t2((3, 4), (3, 4), 1, 3)], NUMERIC),
    Entry("remainder", torch.remainder, [lambda d: (torch.tensor([-7, -3, 3, 7], dtype=d), torch.tensor([2, -2, 2, -3], dtype=d))],
          NUMERIC),
    Entry("logaddexp", torch.logaddexp, [t2((3, 1), (4,))]),
    Entry("xlogy", torch.xlogy, [lambda d: (torch.tensor([0.0, 1.0, 2.0], dtype=d), torch.tensor([0.0, 3.0, 0.5], dtype=d))]),
    Entry("isinf", torch.isinf, [lambda d: (torch.tensor([1.0, float("inf"), -float("inf"), float("nan")], dtype=d),)]),
    Entry("nan_to_num", torch.nan_to_num, [lambda d: (torch.tensor([1.0, float("inf"), -float("inf"), float("nan")], dtype=d),)]),
    Entry("hardswish", torch.nn.functional.hardswish, [t(3, 4)]),
    Entry("elu", lambda x: torch.nn.functional.elu(x, 0.5), [t(3, 4)]),
    Entry("softplus", lambda x: torch.nn.functional.softplus(x, beta=2, threshold=3), [t(3, 4)]),
    Entry("hardtanh", torch.nn.functional.hardtanh, [t(3, 4)], opsets=(9, 11, 12, 18)),
    Entry("glu", torch.nn.functional.glu, [t(3, 4)]),
    Entry("var", lambda x: torch.var(x, dim=1, keepdim=True), [t(3, 4)]),
    Entry("std_mean", lambda x: torch.std_mean(x, dim=[0, 2], correction=0), [t(2, 3, 4)]),
    Entry("logsumexp", lambda x: torch.logsumexp(x, dim=-1), [t(3, 4)]),
    Entry("_log_softmax", lambda x: torch.ops.aten._log_softmax(x, 1, False), [t(3, 4)], FLOATS),
    Entry("empty_strided", lambda x: torch.ones_like(torch.empty_strided((3, 4), (1, 3))) * x, [t(3, 4)]),
    Entry("vector_norm", lambda x: torch.linalg.vector_norm(x, ord=3, dim=1), [t(3, 4)]),
    Entry("any", lambda x: torch.any(x > 1, dim=0), [t(3, 4)]),
    Entry("prod", lambda x: torch.prod(x, 1), [t(3, 4)], NUMERIC),
    Entry("argmin", lambda x: torch.argmin(x, 1, keepdim=True), [t(3, 4)]),
    Entry("min_dim", lambda x: torch.min(x, 0), [t(3, 4)]),
    Entry("sum_0d", lambda x: x.sum(0), [t()]),
    Entry("roll", lambda x: torch.roll(x, (1, -2), (0, 1)), [t(3, 4)], NUMERIC),
    Entry("rot90", torch.rot90, [t(3, 4)]),
    Entry("repeat", lambda x: x.repeat(2, 1, 3), [t(3, 4)]),
    Entry("diagonal", lambda x: torch.diagonal(x, 1), [t(4, 4)]),
    Entry("diag_embed", torch.diag_embed, [t(2, 3)], NUMERIC),
    Entry("as_strided", lambda x: torch.as_strided(x, (2, 2), (1, 2), 1), [t(3, 3)]),
    Entry("stack_last", lambda a, b: torch.stack([a, b], -1), [t2((3, 4), (3, 4))]),
    Entry("meshgrid", lambda a, b: torch.meshgrid(a, b, indexing="xy"), [t2((3,), (4,))]),
    Entry("tensor_split", lambda x: torch.tensor_split(x, 3, dim=1), [t(2, 7)]),
    Entry("kron", torch.kron, [t2((2, 3), (3, 2))]),
    Entry("tensordot", lambda a, b: torch.tensordot(a, b, dims=([1], [0])), [t2((3, 4), (4, 5))]),
    Entry("addmv", lambda s, m, v: torch.addmv(s, m, v, beta=0.5, alpha=2),
          [lambda d: (torch.randn(3, dtype=d), torch.randn(3, 4, dtype=d), torch.randn(4, dtype=d))]),
    Entry("cross", lambda a, b: torch.linalg.cross(a, b), [t2((4, 3), (4, 3))]),
    Entry("conv2d_unbatched", lambda x, w: torch.nn.functional.conv2d(x, w, padding=1), [t2((3, 5, 5), (2, 3, 3, 3))]),
    Entry("linspace", lambda x: x + torch.linspace(-1, 1, 5), [t(5)]),
    Entry("empty_like", lambda x: torch.zeros_like(torch.empty_like(x)) + x, [t(3)]),
    Entry("cummax", lambda x: torch.cummax(x, 1), [t(3, 5)], NUMERIC, opsets=(11, 18)),
    Entry("cummin", lambda x: torch.cummin(x, 0), [t(4, 3)], opsets=(11, 26)),
    Entry("logcumsumexp", lambda x: torch.logcumsumexp(x, 1), [t(3, 5)], opsets=(11, 18)),
    Entry("cumprod", lambda x: torch.cumprod(x, 1), [t(3, 5)], FLOATS, opsets=(11, 18, 26)),
    Entry("sort", lambda x: torch.sort(x, 0, descending=True), [t(5, 3)], NUMERIC, opsets=(11, 18)),
    Entry("topk", lambda x: torch.topk(x, 2, largest=False), [t(3, 5)], opsets=(11, 18)),
    Entry("kthvalue_median", lambda x: (torch.kthvalue(x, 2, 1, keepdim=True), torch.median(x, 0), torch.median(x)),
          [t(5, 4)], opsets=(11, 18)),
    Entry("searchsorted", lambda s, v: torch.searchsorted(s, v, right=True),
          [lambda d: (torch.tensor([-1.0, 0.0, 0.5, 2.0], dtype=d), torch.tensor([[-2.0, 0.0], [0.7, 3.0]], dtype=d))],
          opsets=(11, 18)),
    Entry("take_along_dim", lambda x, i: torch.take_along_dim(x, i, 1),
          [lambda d: (torch.randn(3, 4).to(d), torch.tensor([[0, 3], [1, 1], [2, 0]]))], opsets=(11, 18)),
    Entry("group_norm", lambda x, w, b: torch.nn.functional.group_norm(x, 2, w, b), [
        lambda d: (torch.randn(2, 4, 3, 2, dtype=d), torch.randn(4, dtype=d), torch.randn(4, dtype=d))], FLOATS),
    Entry("native_layer_norm", lambda x: torch.ops.aten.native_layer_norm(x, [3], None, None, 1e-5), [t(2, 4, 3)]),
    Entry("batch_norm_train", lambda x: torch.nn.functional.batch_norm(x, None, None, training=True), [t(4, 3, 2)]),
    Entry("instance_norm", torch.nn.functional.instance_norm, [t(2, 3, 5)]),
    Entry("mse_l1_huber", lambda a, b: (torch.nn.functional.mse_loss(a, b), torch.nn.functional.l1_loss(a, b, reduction="sum"),
                                        torch.nn.functional.huber_loss(a, b, reduction="none", delta=0.5)),
          [t2((3, 4), (3, 4))]),
    Entry("bce_with_logits", lambda x, y: torch.nn.functional.binary_cross_entropy_with_logits(x, y, pos_weight=torch.tensor([2.0])),
          [t2((3, 4), (3, 4), 0.0, 1.0)]),
    Entry("cross_entropy", lambda x: torch.nn.functional.cross_entropy(x, torch.tensor([0, 2, 1]), label_smoothing=0.1),
          [t(3, 4)]),
    Entry("nll_loss_ignore", lambda x: torch.nn.functional.nll_loss(x, torch.tensor([0, -100, 1]), reduction="sum"), [t(3, 4)]),
    Entry("max_pool2d_indices", lambda x: torch.nn.functional.max_pool2d(x, 2, return_indices=True), [t(1, 2, 4, 4)],
          opsets=(10, 18)),
    Entry("avg_pool1d", lambda x: torch.nn.functional.avg_pool1d(x, 3, 2, 1), [t(2, 3, 7)], opsets=(10, 18)),
    Entry("conv_transpose2d", lambda x, w: torch.nn.functional.conv_transpose2d(x, w, stride=2, output_padding=1),
          [t2((1, 2, 3, 3), (2, 3, 3, 3))], opsets=(9, 18)),
    Entry("conv_transpose_1d_3d_unbatched", lambda x, w, v, k: (
        torch.nn.functional.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1, dilation=2, groups=2),
        torch.nn.functional.conv_transpose3d(v, k, stride=2), torch.nn.functional.conv_transpose1d(x[0], w)),
        [lambda d: (torch.randn(2, 4, 5, dtype=d), torch.randn(4, 3, 3, dtype=d), torch.randn(1, 2, 3, 3, 3, dtype=d),
                    torch.randn(2, 2, 2, 2, 2, dtype=d))], opsets=(9, 18)),
    # dim -1 is ATen's "norm of the whole tensor", not "all dims but the last"
    Entry("weight_norm", lambda v, g0, g2, g1: (torch._weight_norm(v, g0, 0), torch._weight_norm(v, g2, 2),
                                                torch._weight_norm(v, g0[0, 0, 0], -1), torch._weight_norm(v, g1, -2),
                                                *torch._weight_norm_interface(v, g0, 0)),
          [lambda d: (torch.randn(3, 4, 5, dtype=d), torch.randn(3, 1, 1, dtype=d), torch.randn(1, 1, 5, dtype=d),
                      torch.randn(1, 4, 1, dtype=d))], FLOATS, opsets=(9, 18)),
    Entry("add_int8", lambda a, b: (a + b, a * b, a - b),
          [lambda d: (torch.tensor([100, -50, 3], dtype=d), torch.tensor([100, 2, -3], dtype=d))],
          (torch.int8, torch.int16, torch.uint8), opsets=(9, 13, 14)),
    Entry("fmax_nan", lambda a, b: (torch.fmax(a, b), torch.fmin(a, b)),
          [lambda d: (torch.tensor([1.0, float("nan"), 2.0, float("nan")], dtype=d),
                      torch.tensor([float("nan"), 3.0, -1.0, float("nan")], dtype=d))], FLOATS),
    Entry("isclose", lambda a, b: (torch.isclose(a, b), torch.isclose(a, b, equal_nan=True)),
          [lambda d: (torch.tensor([1.0, float("inf"), float("nan"), 1e-9, 2.0], dtype=d),
                      torch.tensor([1.0 + 1e-6, float("inf"), float("nan"), 0.0, 2.1], dtype=d))], FLOATS),
    Entry("isin", torch.isin, [lambda d: (torch.tensor([[1, 2], [3, 4]], dtype=d), torch.tensor([4, 1, 9], dtype=d))],
          NUMERIC),
    Entry("special_closed_forms", lambda x: (torch.special.entr(x), torch.special.ndtr(x), torch.angle(x),
                                             torch.special.spherical_bessel_j0(x), torch.special.xlog1py(x, x.abs())),
          [lambda d: (torch.tensor([-1.0, 0.0, 0.5, 2.0, float("nan")], dtype=d),)]),
    Entry("safe_softmax", lambda x: torch.ops.aten._safe_softmax(x, 1),
          [lambda d: (torch.tensor([[float("-inf"), float("-inf")], [0.0, 1.0]], dtype=d),)]),
    Entry("sum_to_size", lambda x: x.sum_to_size(1, 4), [t(2, 3, 4)]),
    Entry("distances", lambda a, b: (torch.dist(a, b), torch.cdist(a, b), torch.nn.functional.pdist(a)),
          [t2((4, 3), (4, 3))]),
    Entry("nonzero_masked_select", lambda x: (torch.nonzero(x > 0), torch.masked_select(x, x > 0)), [t(3, 4)]),
    Entry("vander", lambda x: torch.linalg.vander(x, N=4), [lambda d: (torch.tensor([1, 2, -3], dtype=d),)], NUMERIC),
    Entry("det", lambda x: (torch.linalg.det(x), *torch.linalg.slogdet(x)), [t(2, 3, 3)], opsets=(11, 18)),
    Entry("einsum", lambda a, b: torch.einsum("bij,bjk->bik", a, b), [t2((2, 3, 4), (2, 4, 5))], opsets=(12, 18)),
    Entry("max_unpool2d", lambda x: torch.nn.functional.max_unpool2d(*torch.nn.functional.max_pool2d(x, 2, return_indices=True), 2),
          [t(1, 2, 4, 4)], opsets=(11, 18)),
    Entry("unique", lambda x: torch.unique(x, return_inverse=True, return_counts=True),
          [lambda d: (torch.tensor([[3, 1, 2], [3, 0, 1]], dtype=d),)], (torch.float32, torch.int64),  # no int32 ORT kernel
          opsets=(11, 18)),
    Entry("relu_int", torch.relu, [lambda d: (torch.tensor([-3, 0, 5], dtype=d),)], (torch.int32, torch.int64),
          opsets=(9, 13, 14)),
    # ONNX defines Add, Mul, Max, Clip, TopK, ReduceMax... on no bools: computed in a wider type, cast back
    Entry("bool_arithmetic", lambda a, b: (a + b, a * b, a + True, torch.add(a, b, alpha=True), torch.maximum(a, b),
                                          torch.minimum(a, b), a.clamp(0, 1), a.amax(), a.max(0).values, a * 2.5,
                                          torch.where(a, b, False), a.masked_fill(b, True),
                                          a.tril(), a.cumsum(1), a | True, a & b, a ^ True),
          [lambda d: (torch.rand(3, 4) > 0.5, torch.rand(3, 4) > 0.5)], (torch.bool,), opsets=(9, 11, 13, 18)),
    Entry("bool_sort", lambda a: (a.sort(0).values, a.sort(1, descending=True).values, a.unique()), [lambda d: (torch.rand(3, 4) > 0.5,)],
          (torch.bool,), opsets=(11, 18)),
    Entry("narrow_int_reductions", lambda x: (x.amax(1), x.amin(0), x.max(), -x.abs(), x.relu(), x.clamp(-1, 2),
                                              torch.maximum(x, x.flip(0))),
          [lambda d: (torch.tensor([[-3, 0, 5], [7, -128 if d != torch.uint8 else 200, 1]], dtype=d),)],
          (torch.int8, torch.int16, torch.uint8), opsets=(9, 12, 13, 18)),
    # opsets 9 and 10 have no CumSum, GatherND or GatherElements: a Loop, a flattened Gather, offsets
    Entry("cumsum", lambda x: (x.cumsum(1), x.cumsum(0), x.cumsum(-1, dtype=torch.float64)), [t(3, 5)],
          NUMERIC + (torch.bool,), opsets=(9, 10, 11, 18)),
    Entry("cumsum_accumulates_wide", lambda x: (x.cumsum(0), x.cumsum(0, dtype=torch.float16)),  # eager: double, float
          [lambda d: (torch.tensor([1e8, 1.0, -1e8, 3.0], dtype=d),)], (torch.float32,), opsets=(9, 11, 18)),
    Entry("index_tensors", lambda x, i, j: (x[i, j], x[:, i, j], x[i, :, j], x[i, -1], x[:, -1, i], x[i[:, None], j.reshape(1, -1)]),
          [lambda d: (torch.randn(4, 5, 6).to(d), torch.tensor([0, -1, 2]), torch.tensor([[1], [-2]]))],
          NUMERIC, opsets=(9, 10, 11, 18)),
    Entry("index_masks", lambda x: (x[x > 0], x[:, x[0] > 0], x[x.sum(1) > 0, 1:]), [t(4, 5)], opsets=(9, 10, 18)),
    Entry("gather", lambda x, i: (x.gather(1, i), x.gather(0, i), x.gather(-1, i[:, :1])),
          [lambda d: (torch.randn(4, 5).to(d), torch.tensor([[0, 3, 1], [3, 3, 2]]))], NUMERIC,
          opsets=(9, 10, 11, 18)),
]


CASES = cases(TABLE)


@pytest.mark.parametrize("entry, sample, dtype, opset", CASES)
def test_op(entry: Entry, sample, dtype, opset):
    torch.manual_seed(0)
    run_both(entry.fn, sample(dtype), opset, ort=entry.ort)


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
