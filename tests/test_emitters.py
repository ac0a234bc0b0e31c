"""The builder's emitters spell each versioned op as onnx.defs defines the version in effect at the
target opset (attributes or inputs), and the models they make pass the checker and match eager."""

from __future__ import annotations

import math

import onnx
import pytest
import torch

import aten2onnx
from aten2onnx.ir.emitters import takes_input
from conftest import run_ort

# (case, function of x: float32[2, 3, 4], the ONNX op whose spelling changes, the argument that moves)
CASES = [
    ("sum", lambda x: x.sum(1), "ReduceSum", "axes"),
    ("mean", lambda x: x.mean((0, 2), keepdim=True), "ReduceMean", "axes"),
    ("amax", lambda x: x.amax(1), "ReduceMax", "axes"),
    ("amin", lambda x: x.amin(-1, keepdim=True), "ReduceMin", "axes"),
    ("logsumexp", lambda x: torch.logsumexp(x, 2), "ReduceMax", "axes"),
    ("unsqueeze", lambda x: x.unsqueeze(1) * 2, "Unsqueeze", "axes"),
    ("squeeze", lambda x: x[:, :1].squeeze(1) * 2, "Squeeze", "axes"),
    ("split", lambda x: [t * 2 for t in x.split([1, 2], 1)], "Split", "split"),
    ("slice", lambda x: x[:, 1:] * 2, "Slice", "starts"),
    ("clamp", lambda x: x.clamp(-0.5, 0.5), "Clip", "min"),
    ("topk", lambda x: x.topk(2, 1).values * 2, "TopK", "K"),
]
OPSETS = [9, 10, 11, 12, 13, 16, 17, 18, 20, 23]


def nodes(model: onnx.ModelProto, op_type: str) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type == op_type]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case, fn, op_type, moved", CASES, ids=[c[0] for c in CASES])
def test_an_emitted_op_is_spelled_as_its_version_at_the_opset(case, fn, op_type, moved, opset):
    x = torch.randn(2, 3, 4)
    exported = aten2onnx.export(fn, (x,), opset=opset)
    model = exported.model_proto
    onnx.checker.check_model(model, full_check=True)
    made = nodes(model, op_type)
    assert made, f"{case} made no {op_type} at opset {opset}"
    schema = onnx.defs.get_schema(op_type, opset)
    as_input = [i.name for i in schema.inputs].index(moved) if moved in [i.name for i in schema.inputs] else None
    for node in made:
        attributes = {a.name.lower() for a in node.attribute}  # TopK's input K was its attribute k
        if as_input is None:
            assert moved.lower() in attributes and len(node.input) == 1
        else:
            assert moved.lower() not in attributes and len(node.input) > as_input and node.input[as_input]
    expected = fn(x)
    expected = expected if isinstance(expected, list) else [expected]
    for got, want in zip(run_ort(model, {exported.input_names[0]: x}), expected):
        torch.testing.assert_close(torch.from_numpy(got), want)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_along_an_axis_is_direct_where_the_op_works_along_one_axis(op, dim, opset):
    x = torch.randn(2, 3, 4)
    fn = getattr(torch, op)
    exported = aten2onnx.export(lambda x: fn(x, dim), (x,), opset=opset)
    model = exported.model_proto
    onnx.checker.check_model(model, full_check=True)
    op_type = "Softmax" if op == "softmax" else "LogSoftmax"
    (node,) = nodes(model, op_type)
    axis = next(a.i for a in node.attribute if a.name == "axis")
    along_one_axis = onnx.defs.get_schema(op_type, opset).since_version >= 13
    if along_one_axis or dim == -1:
        assert axis in (dim, dim % 3) and not nodes(model, "Transpose")
    else:  # the op flattens to 2-D at its axis: the dim goes last and back
        assert axis == 2 and len(nodes(model, "Transpose")) == 2
    (got,) = run_ort(model, {exported.input_names[0]: x})
    torch.testing.assert_close(torch.from_numpy(got), fn(x, dim))


@pytest.mark.parametrize("opset", [9, 10])
def test_smallest_first_topk_before_opset_11_is_the_largest_of_the_negation(opset):
    x = torch.tensor([3.0, -0.0, 1.0, 0.0, 1.0, float("-inf")])
    exported = aten2onnx.export(lambda x: x.sort(dim=-1, stable=True), (x,), opset=opset, fallback="error")
    model = exported.model_proto
    onnx.checker.check_model(model, full_check=True)
    passes = nodes(model, "TopK")  # floats: two stable passes (NaN last, then by -x)
    assert len(passes) == 2 and all({a.name for a in n.attribute} <= {"axis", "k"} for n in passes)  # no largest
    got = run_ort(model, {exported.input_names[0]: x})
    want = x.sort(dim=-1, stable=True)
    torch.testing.assert_close(torch.from_numpy(got[0]), want.values)
    assert torch.equal(torch.from_numpy(got[1]), want.indices)  # ties lower index first


def test_smallest_first_topk_before_opset_11_refuses_int64():
    with pytest.raises(aten2onnx.UnsupportedOperatorError, match="TopK"):
        aten2onnx.export(lambda x: x.sort(-1).values, (torch.tensor([3, 1, 2]),), opset=9, fallback="error")


def test_an_op_the_opset_does_not_define_refuses():
    from aten2onnx.ir import GraphBuilder

    g = GraphBuilder(10)
    x, i = g.input("x", torch.float32, (3,)), g.input("i", torch.int64, (3,))
    with pytest.raises(NotImplementedError, match="defines no GatherElements at opset 10"):
        g.op("GatherElements", x, i, axis=0)


@pytest.mark.parametrize("opset", [9, 10, 11])
def test_gather_elements_before_opset_11_is_a_gather_from_the_flattened_tensor(opset):
    # searchsorted's sorter is read by GatherElements; before 11 it is a Gather at flat positions
    s, i, v = torch.tensor([[3.0, 1.0, 2.0], [0.5, 9.0, -1.0]]), torch.tensor([[1, 2, 0], [2, 0, 1]]), torch.randn(2, 4)
    exported = aten2onnx.export(lambda s, i, v: torch.searchsorted(s, v, sorter=i), (s, i, v), opset=opset,
                                fallback="error")
    model = exported.model_proto
    onnx.checker.check_model(model, full_check=True)
    assert bool(nodes(model, "GatherElements")) == (opset >= 11)
    (got,) = run_ort(model, dict(zip(exported.input_names, (s, i, v))))
    assert torch.equal(torch.from_numpy(got), torch.searchsorted(s, v, sorter=i))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("op", ["max_pool1d", "avg_pool1d"])
def test_a_pool_takes_ceil_mode_where_its_version_has_the_attribute(op, opset):
    x = torch.randn(2, 3, 7)
    fn = getattr(torch.nn.functional, op)
    has_ceil = "ceil_mode" in onnx.defs.get_schema("MaxPool", opset).attributes
    exported = aten2onnx.export(lambda x: fn(x, 2, ceil_mode=True), (x,), opset=opset, fallback="error")
    model = exported.model_proto
    onnx.checker.check_model(model, full_check=True)
    (node,) = nodes(model, "MaxPool" if op == "max_pool1d" else "AveragePool")
    attributes = {a.name: (a.i if a.type == onnx.AttributeProto.INT else list(a.ints)) for a in node.attribute}
    assert attributes.get("ceil_mode") == (1 if has_ceil else None)  # AveragePool without it: windows padded whole
    if op == "max_pool1d" and not has_ceil:
        assert attributes["pads"] == [0, 1]  # the window ceil mode adds, padded at the end
    (got,) = run_ort(model, {exported.input_names[0]: x})
    torch.testing.assert_close(torch.from_numpy(got), fn(x, 2, ceil_mode=True))


@pytest.mark.parametrize("opset", [9, 10, 18])
@pytest.mark.parametrize("kernel, stride, padding, size", [(3, 2, 1, 8), (2, 3, 0, 6), (4, 3, 2, 10), (3, 2, 0, 4),
                                                           (2, 2, 1, 5)])
def test_max_pool_ceil_mode_pads_the_end_before_opset_10_and_where_onnx_counts_a_window_torch_drops(
        kernel, stride, padding, size, opset):
    x = torch.randn(2, 3, size, size + 1)

    def fn(x):
        return torch.nn.functional.max_pool2d(x, kernel, stride, padding, ceil_mode=True, return_indices=True)

    exported = aten2onnx.export(fn, (x,), opset=opset, fallback="error")
    onnx.checker.check_model(exported.model_proto, full_check=True)
    got = run_ort(exported.model_proto, {exported.input_names[0]: x})
    want = fn(x)
    torch.testing.assert_close(torch.from_numpy(got[0]), want[0])
    assert torch.equal(torch.from_numpy(got[1]), want[1])


@pytest.mark.parametrize("opset", OPSETS)
def test_scatter_is_scatter_elements_from_11_and_reduces_where_the_version_has_the_reduction(opset):
    x, i, s = torch.randn(3, 2), torch.tensor([[0, 1], [2, 0]]), torch.randn(2, 2)
    exported = aten2onnx.export(lambda x, i, s: x.scatter(0, i, s), (x, i, s), opset=opset)
    onnx.checker.check_model(exported.model_proto, full_check=True)
    assert nodes(exported.model_proto, "ScatterElements" if opset >= 11 else "Scatter")
    (got,) = run_ort(exported.model_proto, dict(zip(exported.input_names, (x, i, s))))
    torch.testing.assert_close(torch.from_numpy(got), x.scatter(0, i, s))
    for reduce, since in (("sum", 16), ("prod", 16), ("amax", 18), ("amin", 18)):
        fn = (lambda x, i, s, reduce=reduce: x.scatter_reduce(0, i, s, reduce))
        exported = aten2onnx.export(fn, (x, i, s), opset=opset, fallback="error")
        # before the version with the reduction, a one-hot mask picks each row's updates
        reducing = [n for n in exported.model_proto.graph.node if n.op_type.startswith("Scatter")
                    and any(a.name == "reduction" for a in n.attribute)]
        assert bool(reducing) == (opset >= since)
        assert bool(nodes(exported.model_proto, "OneHot")) == (opset < since)
        (got,) = run_ort(exported.model_proto, dict(zip(exported.input_names, (x, i, s))))
        torch.testing.assert_close(torch.from_numpy(got), fn(x, i, s))


# (reduce, include_self, dtype): duplicate indices, indices smaller than self off the axis, infinities
# among the updates (the mask selects, never multiplies by 0)
ONE_HOT_CASES = [(r, inc, d) for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)
                 for d in (torch.float32, torch.int64)] + [("sum", True, torch.bool), ("amin", False, torch.bool)]


@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("reduce, include_self, dtype", ONE_HOT_CASES)
def test_a_scatter_reduction_the_version_lacks_is_spelled_by_a_one_hot_mask(reduce, include_self, dtype, opset):
    torch.manual_seed(0)
    x = (torch.randn(5, 4, 3) * 4).to(dtype)
    s = (torch.randn(6, 3, 2) * 4).to(dtype)
    if dtype.is_floating_point:
        s[0, 0, 0], s[2, 1, 1] = math.inf, -math.inf
    i = torch.randint(0, 5, (6, 3, 2))
    index = torch.tensor([3, 0, 3, 2])

    def fn(x, i, s, index):
        return (x.scatter_reduce(0, i, s, reduce, include_self=include_self),
                x.index_reduce(1, index, x * 2, {"sum": "mean"}.get(reduce, reduce), include_self=include_self)
                if dtype != torch.bool else x,  # index_reduce has no "sum", and no bools
                x.index_add(1, index, x) if dtype != torch.bool else x)
    args = (x, i, s, index)
    exported = aten2onnx.export(fn, args, opset=opset, fallback="error")
    onnx.checker.check_model(exported.model_proto, full_check=True)
    assert nodes(exported.model_proto, "OneHot")
    for got, want in zip(run_ort(exported.model_proto, dict(zip(exported.input_names, args))), fn(*args)):
        torch.testing.assert_close(torch.from_numpy(got), want)
    for got, want in zip(exported.run(*args), fn(*args)):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("dynamic", [False, True])
def test_gather_reads_negative_indices_at_every_opset(opset, dynamic):
    x, i = torch.randn(5, 3), torch.tensor([-1, 0, -5, 2])
    fn = (lambda x, i: x.take(i) * 2)
    shapes = {"x": {0: torch.export.Dim("n", min=2)}} if dynamic else None
    exported = aten2onnx.export(fn, (x, i), opset=opset, dynamic_shapes=shapes, fallback="error")
    onnx.checker.check_model(exported.model_proto, full_check=True)
    for x in (x, torch.randn(4, 3)) if dynamic else (x,):
        (got,) = run_ort(exported.model_proto, dict(zip(exported.input_names, (x, i))))
        torch.testing.assert_close(torch.from_numpy(got), fn(x, i))


def test_slice_before_opset_10_refuses_what_its_attributes_cannot_say():
    dynamic = {"x": {0: torch.export.Dim("n", min=2)}}  # a static dim is sliced by positions instead
    with pytest.raises(aten2onnx.UnsupportedOperatorError, match="export at opset 10 or later"):
        aten2onnx.export(lambda x: x[::2], (torch.randn(6),), opset=9, dynamic_shapes=dynamic, fallback="error")


SLICES = [
    ("step", lambda x, n: x[:, 1::2] * 2),
    ("flip", lambda x, n: x.flip(0, 2) * 2),
    ("bounds_from_data", lambda x, n: x[:, : n.item()] * 2),
    ("tensor_split_from_data", lambda x, n: [t * 2 for t in x.tensor_split([1, n.item()], 2)]),
]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case, fn", SLICES, ids=[c[0] for c in SLICES])
def test_slices_attributes_cannot_say_are_taken_by_positions_along_static_dims(case, fn, opset):
    x, n = torch.randn(2, 5, 4), torch.tensor(2)
    exported = aten2onnx.export(fn, (x, n), opset=opset, fallback="error")
    model = exported.model_proto
    onnx.checker.check_model(model, full_check=True)
    by_positions = {"Gather", "Compress"} & {node.op_type for node in model.graph.node}
    assert bool(by_positions) == (not takes_input("Slice", "starts", opset))
    for n in (n, torch.tensor(3)) if "data" in case else (n,):
        expected = fn(x, n)
        expected = expected if isinstance(expected, list) else [expected]
        got = run_ort(model, {k: v for k, v in zip(exported.input_names, (x, n))})
        for g, want in zip(got, expected):
            torch.testing.assert_close(torch.from_numpy(g), want)


# (case, function of x and y: [2, 3, 4] of dtype, the ONNX op the emitter writes where its version takes the
# dtype, dtype): elsewhere the emitter writes the same result with older ops (compare and select, Less or Equal)
TYPED_CASES = [
    ("eq", lambda x, y: x == y, "Equal", torch.float32),
    ("ne", lambda x, y: x != y, "Equal", torch.float64),
    ("le", lambda x, y: x <= y, "LessOrEqual", torch.float32),
    ("ge", lambda x, y: x >= y, "GreaterOrEqual", torch.int64),
    ("maximum", torch.maximum, "Max", torch.int32),
    ("minimum", torch.minimum, "Min", torch.int64),
    ("clamp_int", lambda x, y: x.clamp(-1, 2), "Clip", torch.int64),
    # (float64 clamps are Max and Min: onnxruntime's Relu-into-Clip fusion fails on float64 bounds)
    ("clamp_float", lambda x, y: x.clamp(max=0.25), "Clip", torch.float32),
]


def _runs_in_ort(op_type: str, dtype: torch.dtype, opset: int) -> bool:
    from aten2onnx.ir import op_types
    sig = op_types.signature(op_type, opset)
    return sig is not None and sig.takes(sig.input_type(0), dtype, "runs")


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case, fn, op_type, dtype", TYPED_CASES, ids=[c[0] for c in TYPED_CASES])
def test_a_typed_emitter_writes_its_op_where_the_version_takes_the_dtype(case, fn, op_type, dtype, opset):
    x = (torch.randn(2, 3, 4) * 3).to(dtype)
    y = (torch.randn(2, 3, 4) * 3).to(dtype)
    y[0, 0] = x[0, 0]  # some equal pairs
    if dtype.is_floating_point:
        x[1, 1, 1] = y[1, 2, 2] = math.nan
    exported = aten2onnx.export(fn, (x, y), opset=opset)
    model = exported.model_proto
    onnx.checker.check_model(model, full_check=True)
    assert bool(nodes(model, op_type)) == _runs_in_ort(op_type, dtype, opset)
    (got,) = run_ort(model, dict(zip(exported.input_names, (x, y))))
    torch.testing.assert_close(torch.from_numpy(got), fn(x, y), equal_nan=True)


GEMMS = [
    ("linear", lambda a, w, b: torch.nn.functional.linear(a, w, b), lambda d: [(5, 7), (4, 7), (4,)]),
    ("addmm", lambda c, a, b: torch.addmm(c, a, b), lambda d: [(5, 4), (5, 7), (7, 4)]),
    ("addmm_scaled", lambda c, a, b: torch.addmm(c, a, b, beta=3, alpha=-2), lambda d: [(1, 4), (5, 7), (7, 4)]),
]


@pytest.mark.parametrize("opset", [9, 13, 18])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("case, fn, shapes", GEMMS, ids=[c[0] for c in GEMMS])
def test_gemm_is_matmul_and_add_for_the_integers_onnxruntime_has_no_gemm_for(case, fn, shapes, dtype, opset):
    # int8 and uint8 products wrap in eager; their Gemm, computed in double and cast back, wraps alike
    args = [(torch.randn(s) * 40).to(dtype) for s in shapes(dtype)]
    exported = aten2onnx.export(fn, tuple(args), opset=opset)
    model = exported.model_proto
    onnx.checker.check_model(model, full_check=True)
    assert bool(nodes(model, "Gemm")) != (dtype in (torch.int32, torch.int64))
    (got,) = run_ort(model, dict(zip(exported.input_names, args)))
    if dtype.is_floating_point:
        torch.testing.assert_close(torch.from_numpy(got), fn(*args), rtol=1e-4, atol=1e-4)
    else:
        assert torch.equal(torch.from_numpy(got), fn(*args))


@pytest.mark.parametrize("opset", [9, 10, 11])
@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.int32])
@pytest.mark.parametrize("dynamic", [False, True])
def test_constant_padding_of_types_pad_cannot_hold_is_concat_with_filled_blocks(dtype, dynamic, opset):
    # Pad takes floats only before 11 (and no bool before 13): a type no wider type Pad takes holds (int64)
    # is padded by Concat with ConstantOfShape blocks; the checker rejects a Pad of a type it does not take
    x = torch.randint(-2**40, 2**40, (3, 4, 5)).to(dtype)

    def fn(x):
        return torch.nn.functional.pad(x, (1, 2, 0, 3), value=True if dtype == torch.bool else 7)
    shapes = ({0: torch.export.Dim("a"), 2: torch.export.Dim("c")},) if dynamic else None
    exported = aten2onnx.export(fn, (x,), opset=opset, dynamic_shapes=shapes, fallback="error")
    onnx.checker.check_model(exported.model_proto, full_check=True)
    if dynamic and opset < 11 and dtype == torch.int64:  # (static constant padding is a Gather with a fill)
        assert not nodes(exported.model_proto, "Pad") and nodes(exported.model_proto, "ConstantOfShape")
    for sample in [x] + ([torch.randint(-9, 9, (2, 4, 6)).to(dtype)] if dynamic else []):
        (got,) = run_ort(exported.model_proto, {exported.input_names[0]: sample})
        assert torch.equal(torch.from_numpy(got), fn(sample))
        assert torch.equal(exported.run(sample), fn(sample))


NAN, INF = float("nan"), float("inf")
# full sorts, with ties (equal values, -0 and 0) kept in index order; the partial ones (topk, kthvalue, median)
# on distinct values, as eager's selection of equal values is its own
WITH_TIES = [[NAN, INF, 1.0, -INF, INF, NAN, -0.0, 0.0, 1.0, 3.0], [2.0, 2.0, NAN, -1.0, INF, 5.0, -INF, 0.0, NAN, 7.0]]
DISTINCT = [[NAN, INF, 1.0, -INF, 5.0, NAN, -2.0, 0.0, 3.0, 4.0], [2.0, 6.0, NAN, -1.0, INF, 5.0, -INF, 0.0, NAN, 7.0],
            [2.0, 6.0, 8.0, -1.0, INF, 5.0, -INF, 0.0, 9.0, 7.0]]
SMALLEST_FIRST = {
    "sort": (lambda x: x.sort(dim=1), WITH_TIES),
    "argsort": (lambda x: x.argsort(dim=1), WITH_TIES),
    "msort": (lambda x: torch.msort(x.t()), WITH_TIES),
    "topk_smallest": (lambda x: torch.topk(x, 4, dim=1, largest=False), DISTINCT),
    "kthvalue": (lambda x: torch.kthvalue(x, 3, dim=1), DISTINCT),
    # median propagates NaN (the first NaN's index), unlike the others, which rank it the largest: it did not
    "median": (lambda x: torch.median(x, dim=1), DISTINCT),
    "median_keepdim": (lambda x: torch.median(x, dim=0, keepdim=True), DISTINCT),
    "median_all": (lambda x: torch.median(x), DISTINCT),
}


@pytest.mark.parametrize("opset", [9, 10, 18])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
@pytest.mark.parametrize("name", list(SMALLEST_FIRST))
def test_smallest_first_puts_nan_last_and_median_propagates_it(name, dtype, opset):
    """Before TopK keeps the smallest (11) the smallest were the largest of -x, but NaN stays the largest there:
    NaN came first where eager puts it last (fuzz_models seed 2741000, program 2742392: a sort of remainder(x, x)).
    +inf before NaN, ties lower index first; median NaN wherever a NaN is (it gave a number at every opset).
    Both runtimes."""
    fn, data = SMALLEST_FIRST[name]
    x = torch.tensor(data, dtype=dtype)
    exported = aten2onnx.export(fn, (x,), opset=opset, fallback="error")
    want = torch.utils._pytree.tree_leaves(fn(x))
    for got in (torch.utils._pytree.tree_leaves(exported.run(x)),
                [torch.from_numpy(t) for t in run_ort(exported.model_proto, {exported.input_names[0]: x})]):
        for a, b in zip(got, want, strict=True):
            assert torch.equal(a.nan_to_num(99), b.nan_to_num(99)) and torch.equal(a.isnan(), b.isnan())


class ReluThenClamp(torch.nn.Module):
    def forward(self, x):
        return (torch.clamp(torch.relu(x).clone(), max=-3.0), torch.clamp(x, min=-1.0, max=1.0),
                torch.relu(x).clamp(max=0.5), torch.clamp(x, min=2.0))


@pytest.mark.parametrize("opset", [9, 11, 13, 18])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64], ids=str)
def test_clamps_after_relu_load_in_onnxruntime(dtype, opset):
    """onnxruntime fuses Relu into a following Clip, and its fusion failed to load the model on float64
    bounds (fuzz_models seed 2810000, program 2810161) and, with Clip's attribute bounds, on a negative upper
    bound (the fused lower bound 0 passes it): those clamps are Max and Min. NaN and infinities as eager's."""
    x = torch.tensor([float("nan"), -2.0, 0.5, 3.0, float("inf"), -float("inf")], dtype=dtype)
    exported = aten2onnx.export(ReluThenClamp(), (x,), opset=opset, fallback="error")
    want = ReluThenClamp()(x)
    for got in (run_ort(exported.model_proto, {exported.input_names[0]: x}), exported.run(x)):
        for g, w in zip(got, want, strict=True):
            assert torch.equal(torch.as_tensor(g).nan_to_num(9), w.nan_to_num(9))
