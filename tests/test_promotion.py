"""Type promotion helpers against torch.result_type and against eager ops, over the dtype lattice."""

import torch
from hypothesis import given, strategies as st

import aten2onnx
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import promote, result_type
from conftest import run_ort

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]
SCALARS = st.one_of(st.booleans(), st.integers(-5, 5), st.floats(-4, 4, allow_nan=False))


def operand(dtype: torch.dtype, zero_dim: bool):
    value = Value("v", dtype, () if zero_dim else (3,))
    tensor = torch.ones((), dtype=dtype) if zero_dim else torch.ones(3, dtype=dtype)
    return value, tensor


@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.booleans(), st.booleans())
def test_tensor_tensor_matches_torch(a, b, a_zero, b_zero):
    (va, ta), (vb, tb) = operand(a, a_zero), operand(b, b_zero)
    assert result_type(va, vb) == torch.result_type(ta, tb)


@given(st.sampled_from(DTYPES), st.booleans(), SCALARS)
def test_tensor_scalar_matches_torch(a, a_zero, scalar):
    va, ta = operand(a, a_zero)
    assert result_type(va, scalar) == torch.result_type(ta, scalar)
    assert result_type(scalar, va) == torch.result_type(scalar, ta)


@given(st.lists(st.tuples(st.sampled_from(DTYPES), st.booleans()), min_size=3, max_size=3))
def test_three_operands_match_eager_where(operands):
    (c, _), (a, a_zero), (b, b_zero) = operands
    (va, ta), (vb, tb) = operand(a, a_zero), operand(b, b_zero)
    assert result_type(va, vb) == torch.where(torch.ones(3, dtype=torch.bool), ta, tb).dtype


def test_promote_inserts_casts_only_where_needed():
    g = GraphBuilder(18)
    x = g.input("x", torch.int32, (3,))
    y = g.input("y", torch.float16, (3,))
    px, py, pz = promote(g, x, y, 2.5)
    assert px.dtype == py.dtype == pz.dtype == torch.float16
    assert py is y and px is not x
    assert [n.op_type for n in g.nodes] == ["Cast"]


# Elementwise ops on random broadcastable shapes and dtypes, exported and run in onnxruntime.
SHAPES = st.lists(st.integers(1, 3), min_size=0, max_size=3)
NUMERIC = [torch.int32, torch.int64, torch.float32, torch.float64]


@st.composite
def broadcast_pair(draw):
    shape = draw(SHAPES)
    other = [d if draw(st.booleans()) else 1 for d in shape][draw(st.integers(0, len(shape))):]
    return shape, other


@given(broadcast_pair(), st.sampled_from(NUMERIC), st.sampled_from(NUMERIC),
       st.sampled_from(["add", "sub", "mul", "div", "lt", "eq", "maximum"]))
def test_elementwise_ops_promote_like_eager(shapes, a_dtype, b_dtype, op):
    fn = getattr(torch, op)
    a = (torch.randn(shapes[0]) * 4).to(a_dtype)
    b = (torch.randn(shapes[1]) * 4 + 0.5).to(b_dtype)
    if op == "div" and not b_dtype.is_floating_point:
        b = torch.where(b == 0, torch.ones_like(b), b)
    expected = fn(a, b)
    exported = aten2onnx.export(lambda a, b: fn(a, b), (a, b), opset=17, fallback="error")
    (got,) = run_ort(exported.model_proto, {"a": a, "b": b})
    got = torch.from_numpy(got)
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
