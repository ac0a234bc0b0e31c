"""Kernels, one small single-node model per table entry, run by aten2onnx.runtime and onnxruntime;
kernels that are the image of one ATen op are also checked bitwise against eager PyTorch, and so are
an MLP and a transformer layer written as ONNX graphs by hand."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

from aten2onnx.runtime import InferenceSession

RNG = np.random.default_rng(0)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def i64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def single_node_model(op: str, inputs: list[np.ndarray | None], attrs: dict[str, Any], opset: int,
                      n_outputs: int = 1) -> onnx.ModelProto:
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    outputs = [f"out{i}" for i in range(n_outputs)]
    node = helper.make_node(op, names, outputs, **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
                    for n, x in zip(names, inputs) if x is not None]
    graph_outputs = [helper.make_empty_tensor_value_info(o) for o in outputs]
    graph = helper.make_graph([node], op, graph_inputs, graph_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)  # onnxruntime wants typed outputs


def run_ours(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return InferenceSession(model).run(None, feeds)


def run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@dataclasses.dataclass
class Entry:
    op: str
    inputs: list[np.ndarray | None]
    attrs: dict[str, Any] = dataclasses.field(default_factory=dict)
    opset: int = 18
    n_outputs: int = 1
    rtol: float = 1e-5
    atol: float = 1e-6
    id: str = ""


TABLE = [
    Entry("Add", [f32(3, 4), f32(4)]),
    Entry("Sub", [f32(3, 4), f32(3, 1)]),
    Entry("Mul", [i64([[1, -2], [3, 4]]), i64([5, -6])]),
    Entry("Div", [i64([7, -7, 7, -7]), i64([2, 2, -2, -2])], id="int_trunc"),
    Entry("Div", [f32(3, 4), f32(3, 4) + 3]),
    Entry("Pow", [np.abs(f32(3, 4)), f32(3, 4)]),
    Entry("Mod", [i64([5, -5, 5, -5]), i64([3, 3, -3, -3])], id="python_mod"),
    Entry("Mod", [f32(6), f32(6) + 3], attrs={"fmod": 1}, id="fmod"),
    Entry("Sqrt", [np.abs(f32(5))]),
    Entry("Erf", [f32(2, 5)]),
    Entry("Sigmoid", [f32(2, 5)]),
    Entry("Sign", [f32(7)]),
    Entry("Round", [np.array([0.5, 1.5, 2.5, -0.5, -1.5], np.float32)]),
    Entry("Relu", [f32(4, 4)]),
    Entry("LeakyRelu", [f32(4, 4)], attrs={"alpha": 0.2}),
    Entry("Clip", [f32(4, 4), np.array(-0.5, np.float32), np.array(0.5, np.float32)], opset=13),
    Entry("Clip", [f32(4, 4)], attrs={"min": -0.1, "max": 0.3}, opset=9, id="attrs"),
    Entry("Max", [f32(3, 4), f32(4), f32(3, 1)]),
    Entry("Min", [f32(3, 4), f32(4)]),
    Entry("Equal", [i64([1, 2, 3]), i64([1, 0, 3])]),
    Entry("Less", [f32(4), f32(4)]),
    Entry("GreaterOrEqual", [f32(4), f32(4)]),
    Entry("Xor", [np.array([True, False, True]), np.array([True, True, False])]),
    Entry("Not", [np.array([True, False])]),
    Entry("IsNaN", [np.array([1.0, np.nan, np.inf], np.float32)]),
    Entry("IsInf", [np.array([1.0, -np.inf, np.inf], np.float32)], attrs={"detect_positive": 0}, opset=10),
    Entry("Where", [np.array([[True, False], [False, True]]), f32(2, 2), f32(2)]),
    Entry("BitwiseAnd", [np.array([5, 3], np.int32), np.array([6, 1], np.int32)]),
    Entry("BitwiseNot", [np.array([5, 0], np.uint8)]),
    Entry("Cast", [f32(3, 3) * 10], attrs={"to": TensorProto.INT32}),
    Entry("Cast", [np.array([0.0, 1.5, -2.0], np.float32)], attrs={"to": TensorProto.BOOL}, id="to_bool"),
    Entry("CastLike", [f32(3), np.array([1], np.float16)], opset=15, rtol=1e-3),
    Entry("Reshape", [f32(2, 3, 4), i64([0, -1])], opset=14),
    Entry("Reshape", [f32(0, 3), i64([3, 0])], attrs={"allowzero": 1}, opset=14, id="allowzero"),
    Entry("Expand", [f32(3, 1), i64([2, 1, 4])], opset=13),
    Entry("Unsqueeze", [f32(3, 4), i64([0, -1])], opset=13),
    Entry("Unsqueeze", [f32(3, 4)], attrs={"axes": [1]}, opset=11, id="attr"),
    Entry("Squeeze", [f32(1, 3, 1), i64([2])], opset=13),
    Entry("Transpose", [f32(2, 3, 4)], attrs={"perm": [1, 2, 0]}),
    Entry("Slice", [f32(6, 5), i64([5, 1]), i64([-100, 4]), i64([0, 1]), i64([-2, 2])], opset=13, id="neg_step"),
    Entry("Slice", [f32(6, 5), i64([1]), i64([1000]), i64([-1])], opset=13, id="clamp"),
    Entry("Gather", [f32(5, 3), i64([[0, -1], [2, 3]])], attrs={"axis": 0}, opset=13),
    Entry("GatherElements", [f32(3, 3), i64([[0, -1, 2], [1, 1, 0]])], attrs={"axis": 1}, opset=13),
    Entry("GatherND", [f32(2, 3, 4), i64([[[0, 1]], [[1, 2]]])], attrs={"batch_dims": 1}, opset=13),
    Entry("ScatterND", [f32(4, 3), i64([[1], [3]]), f32(2, 3)], attrs={"reduction": "add"}, opset=18),
    Entry("ScatterElements", [f32(3, 3), i64([[1, 0, 2]]), f32(1, 3)], attrs={"axis": 0, "reduction": "max"}),
    Entry("NonZero", [np.array([[1, 0], [0, 3]], np.int32)], opset=13),
    Entry("Split", [f32(7, 2)], attrs={"num_outputs": 3}, n_outputs=3),
    Entry("Split", [f32(6, 2), i64([2, 4])], opset=13, n_outputs=2, id="sizes"),
    Entry("Concat", [f32(2, 3), f32(1, 3)], attrs={"axis": 0}),
    Entry("Shape", [f32(2, 3, 4)], attrs={"start": 1, "end": -1}),
    Entry("Size", [f32(2, 3, 4)]),
    Entry("Tile", [f32(2, 3), i64([2, 1])], opset=13),
    Entry("Pad", [f32(3, 4), i64([1, 2, 0, 1])], attrs={"mode": "reflect"}),
    Entry("Pad", [f32(3, 4), i64([1, -1, 2, 1]), np.array(1.5, np.float32)], id="constant_negative"),
    Entry("Pad", [f32(3, 4), i64([1, 2, 2, 3])], attrs={"mode": "edge"}, id="edge"),
    Entry("Pad", [f32(3, 4), i64([2, 3, 2, 3])], attrs={"mode": "wrap"}, opset=19, id="wrap"),
    Entry("Flatten", [f32(2, 3, 4)], attrs={"axis": 2}),
    Entry("ConstantOfShape", [i64([2, 3])], attrs={"value": numpy_helper.from_array(np.array([7], np.int32))}),
    Entry("Range", [np.array(1, np.int64), np.array(10, np.int64), np.array(3, np.int64)]),
    Entry("CumSum", [f32(3, 4), np.array(1, np.int64)], attrs={"exclusive": 1, "reverse": 1}, opset=14),
    Entry("Trilu", [f32(4, 4), np.array(1, np.int64)], attrs={"upper": 0}, opset=14),
    Entry("EyeLike", [f32(3, 4)], attrs={"k": 1}, opset=9),
    Entry("MatMul", [f32(2, 3, 4), f32(4, 5)]),
    Entry("Gemm", [f32(3, 4), f32(5, 4), f32(5)], attrs={"transB": 1}),
    Entry("Gemm", [f32(4, 3), f32(4, 5), f32(3, 5)], attrs={"transA": 1, "alpha": 0.5, "beta": 2.0}, id="scaled"),
    # a scale that is not finite: torch.addmm drops a NaN alpha at some shapes (6x8 @ 8x16 gave C + A @ B)
    Entry("Gemm", [f32(6, 8), f32(16, 8), f32(16)], attrs={"transB": 1, "alpha": float("nan")}, id="nan_alpha"),
    Entry("Gemm", [f32(6, 8), f32(16, 8), f32(16)], attrs={"transB": 1, "beta": float("nan")}, id="nan_beta"),
    Entry("Gemm", [f32(6, 8), f32(16, 8), f32(16)], attrs={"transB": 1, "alpha": float("inf")}, id="inf_alpha"),
    Entry("Einsum", [f32(2, 3), f32(3, 4)], attrs={"equation": "ij,jk->ik"}, opset=12),
    Entry("ReduceSum", [f32(3, 4, 5), i64([0, 2])], attrs={"keepdims": 0}, opset=13),
    Entry("ReduceMean", [f32(3, 4, 5), i64([-1])], opset=18),
    Entry("ReduceMax", [f32(3, 4, 5)], attrs={"axes": [1]}, opset=13),
    Entry("ReduceMin", [f32(3, 4), i64([])], attrs={"noop_with_empty_axes": 0}, opset=18),
    Entry("ReduceProd", [f32(3, 4), i64([0, 1])], opset=18),
    Entry("ReduceLogSumExp", [f32(3, 4), i64([1])], opset=18),
    Entry("ArgMax", [np.array([[1, 3, 3], [2, 2, 0]], np.float32)], attrs={"axis": 1, "select_last_index": 1},
          opset=13),
    Entry("ArgMin", [f32(3, 4)], attrs={"axis": 0, "keepdims": 0}, opset=13),
    Entry("TopK", [np.array([[1, 3, 3, 2]], np.float32), i64([2])], attrs={"axis": 1}, opset=11, n_outputs=2),
    Entry("Softmax", [f32(2, 3, 4)], attrs={"axis": 1}, opset=13),
    Entry("Softmax", [f32(2, 3, 4)], attrs={"axis": 1}, opset=11, id="coerced_2d"),
    Entry("LogSoftmax", [f32(2, 5)], opset=13),
    Entry("Gelu", [f32(2, 5)], attrs={"approximate": "tanh"}, opset=20),
    Entry("LayerNormalization", [f32(2, 3, 4), f32(3, 4), f32(3, 4)], attrs={"axis": -2}, opset=17, rtol=1e-4,
          atol=1e-5),
    Entry("BatchNormalization", [f32(2, 3, 4, 4), f32(3), f32(3), f32(3), np.abs(f32(3)) + 0.5], opset=15,
          rtol=1e-4, atol=1e-5),
    Entry("InstanceNormalization", [f32(2, 3, 4, 4), f32(3), f32(3)], rtol=1e-4, atol=1e-5),
    Entry("Conv", [f32(1, 2, 7, 7), f32(4, 2, 3, 3), f32(4)], attrs={"pads": [1, 0, 2, 1], "strides": [2, 1]},
          rtol=1e-4, atol=1e-5),
    Entry("Conv", [f32(1, 4, 6, 6), f32(4, 2, 3, 3)], attrs={"auto_pad": "SAME_LOWER", "group": 2, "strides": [2, 1]},
          rtol=1e-4, atol=1e-5, id="same"),
    Entry("Conv", [f32(1, 2, 9, 9), f32(3, 2, 3, 3)], attrs={"dilations": [2, 3], "pads": [2, 1, 0, 3]},
          rtol=1e-4, atol=1e-5, id="dilated"),
    Entry("ConvTranspose", [f32(1, 2, 4, 4), f32(2, 3, 3, 3), f32(3)],
          attrs={"strides": [2, 2], "output_padding": [1, 0], "pads": [1, 0, 0, 1]}, rtol=1e-4, atol=1e-5),
    Entry("ConvTranspose", [f32(1, 2, 4), f32(2, 3, 3)], attrs={"strides": [2], "output_shape": [10]},
          rtol=1e-4, atol=1e-5, id="output_shape"),
    Entry("MaxPool", [f32(1, 2, 7, 7)], attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                                "ceil_mode": 1}, n_outputs=2),
    Entry("MaxPool", [f32(1, 2, 6, 6)], attrs={"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
          id="same"),
    Entry("MaxPool", [f32(1, 2, 8, 8)], attrs={"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [0, 1, 1, 0]},
          n_outputs=2, id="dilated_asymmetric"),
    Entry("AveragePool", [f32(1, 2, 7, 7)], attrs={"kernel_shape": [3, 3], "pads": [0, 1, 2, 0],
                                                    "count_include_pad": 1}, rtol=1e-5, atol=1e-6),
    Entry("AveragePool", [f32(1, 2, 6, 6)], attrs={"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1,
                                                    "pads": [1, 1, 1, 1]}, id="ceil"),
    Entry("GlobalAveragePool", [f32(2, 3, 4, 5)]),
    Entry("Resize", [f32(1, 1, 4, 4), np.array([], np.float32), np.array([1, 1, 2, 1.5], np.float32)],
          attrs={"mode": "linear"}, opset=13),
    Entry("Resize", [f32(1, 1, 4, 4), np.array([], np.float32), None, i64([1, 1, 3, 6])],
          attrs={"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, opset=13, rtol=1e-4,
          atol=1e-5, id="cubic_sizes"),
    Entry("Resize", [f32(1, 1, 3, 3), np.array([], np.float32), np.array([1, 1, 2, 2], np.float32)],
          attrs={"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
          opset=13, id="nearest"),
    Entry("DepthToSpace", [f32(1, 8, 2, 2)], attrs={"blocksize": 2, "mode": "CRD"}, opset=13),
    Entry("OneHot", [i64([0, 2, -1]), np.array(3, np.int64), np.array([0, 5], np.float32)], opset=11),
    # recurrent layers: ONNX gate orders (LSTM iofc, GRU zrh), directions, layout, sequence_lens
    Entry("RNN", [f32(5, 2, 3), f32(1, 4, 3), f32(1, 4, 4), f32(1, 8)], attrs={"hidden_size": 4}, opset=14,
          n_outputs=2, rtol=1e-4, atol=1e-5),
    Entry("GRU", [f32(5, 2, 3), f32(2, 12, 3), f32(2, 12, 4), f32(2, 24), np.array([5, 3], np.int32)],
          attrs={"hidden_size": 4, "direction": "bidirectional", "linear_before_reset": 1}, opset=14, n_outputs=2,
          rtol=1e-4, atol=1e-5, id="bidirectional_lens"),
    Entry("LSTM", [f32(5, 2, 3), f32(1, 16, 3), f32(1, 16, 4), f32(1, 32), None, f32(1, 2, 4), f32(1, 2, 4),
                   f32(1, 12)],
          attrs={"hidden_size": 4}, opset=14, n_outputs=3, rtol=1e-4, atol=1e-5, id="peepholes"),
    Entry("LSTM", [f32(4, 2, 3), f32(1, 16, 3), f32(1, 16, 4)],
          attrs={"hidden_size": 4, "direction": "reverse", "clip": 0.5}, opset=14, n_outputs=3, rtol=1e-4,
          atol=1e-5, id="reverse_clip"),
    Entry("NonMaxSuppression", [np.abs(f32(2, 6, 4)).cumsum(-1), np.abs(f32(2, 2, 6)), i64([3]),
                                np.array([0.3], np.float32), np.array([0.1], np.float32)], opset=11),
    Entry("RoiAlign", [f32(2, 3, 9, 11), np.array([[1, 1, 5, 5], [-3, 2.5, 4.5, 30], [7, 7, 7.2, 7.1], [5, 5, 2, 3]],
                                                np.float32), i64([0, 1, 0, 1])],
          attrs={"output_height": 3, "output_width": 2, "spatial_scale": 0.5}, opset=10, id="output_half_pixel"),
    Entry("RoiAlign", [f32(2, 3, 9, 11), np.array([[1, 1, 5, 5], [-3, 2.5, 4.5, 30], [7, 7, 7.2, 7.1]], np.float32),
                       i64([0, 1, 0])],
          attrs={"output_height": 2, "output_width": 3, "sampling_ratio": 2, "spatial_scale": 0.25}, opset=16,
          id="half_pixel"),
    Entry("MaxRoiPool", [f32(2, 3, 9, 11), np.array([[0, 1, 1, 5, 5], [1, -3, 2.5, 4.5, 30], [0, 7, 7, 7.2, 7.1],
                                                     [1, 5, 5, 2, 3], [0, 1.5, 2.5, 9.5, 8.5]], np.float32)],
          attrs={"pooled_shape": [3, 2], "spatial_scale": 1.0}, opset=10, rtol=0, atol=0),
    Entry("DFT", [f32(2, 8, 1), None, i64(-2)], attrs={"onesided": 1}, opset=20, rtol=1e-4, atol=1e-5),
    Entry("DFT", [f32(2, 8, 2), i64(8), i64(1)], attrs={"inverse": 1}, opset=20, rtol=1e-4, atol=1e-5, id="inverse"),
    Entry("Mod", [f32(6) * 3, f32(6) + 3], opset=13, attrs={"fmod": 1}, id="fmod13"),
    # Col2Im: asymmetric pads, strides and dilations (torch's fold takes only symmetric pads)
    Entry("Col2Im", [f32(2, 3 * 2 * 3, 5 * 6), i64([7, 9]), i64([2, 3])],
          attrs={"strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 2, 1]}, opset=18),
    Entry("MaxUnpool", [f32(1, 2, 2, 2), i64([[[[0, 3], [9, 14]], [[17, 18], [28, 31]]]])],
          attrs={"kernel_shape": [2, 2], "strides": [2, 2]}, opset=11),
    Entry("QLinearConv", [RNG.integers(0, 255, (1, 2, 6, 6), dtype=np.uint8), np.array(0.05, np.float32),
                          np.array(120, np.uint8), RNG.integers(-100, 100, (3, 2, 3, 3), dtype=np.int8),
                          np.array([0.02, 0.01, 0.03], np.float32), np.array([0, 0, 0], np.int8),
                          np.array(0.3, np.float32), np.array(100, np.uint8), np.array([500, -900, 40], np.int32)],
          attrs={"pads": [1, 0, 1, 2], "strides": [2, 1]}, opset=10, rtol=0, atol=0),
    Entry("TensorScatter", [f32(2, 3, 5, 4), f32(2, 3, 2, 4), np.array([1, 4], np.int64)], attrs={"mode": "circular"},
          opset=24),
]


@pytest.mark.parametrize("entry", TABLE, ids=[e.op + (f"-{e.id}" if e.id else "") for e in TABLE])
def test_kernel_matches_onnxruntime(entry: Entry):
    model = single_node_model(entry.op, entry.inputs, entry.attrs, entry.opset, entry.n_outputs)
    feeds = {f"in{i}": x for i, x in enumerate(entry.inputs) if x is not None}
    ours, theirs = run_ours(model, feeds), run_ort(model, feeds)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=entry.rtol, atol=entry.atol)


# ---- bitwise equality with eager: these kernels are one ATen call with the same arguments ----

def _bitwise(op: str, inputs: list[np.ndarray], attrs: dict, opset: int, eager: Callable[..., torch.Tensor]):
    model = single_node_model(op, inputs, attrs, opset)
    out = InferenceSession(model).run_torch({f"in{i}": torch.from_numpy(x) for i, x in enumerate(inputs)})["out0"]
    expected = eager(*[torch.from_numpy(x) for x in inputs])
    assert torch.equal(out, expected)


def test_matmul_bitwise():
    _bitwise("MatMul", [f32(4, 64, 96), f32(96, 80)], {}, 18, torch.matmul)


def test_gemm_is_addmm_bitwise():
    _bitwise("Gemm", [f32(16, 96), f32(80, 96), f32(80)], {"transB": 1}, 18, lambda a, b, c: torch.addmm(c, a, b.t()))
    _bitwise("Gemm", [f32(16, 96), f32(80, 96), f32(80)], {"transB": 1}, 18, lambda a, b, c: F.linear(a, b, c))


def test_softmax_bitwise():
    _bitwise("Softmax", [f32(4, 8, 33)], {"axis": -1}, 13, lambda x: torch.softmax(x, -1))


def test_layer_norm_bitwise():
    _bitwise("LayerNormalization", [f32(4, 8, 64), f32(64), f32(64)], {"epsilon": 1e-5}, 17,
             lambda x, w, b: F.layer_norm(x, (64,), w, b, 1e-5))


def test_conv_bitwise():
    _bitwise("Conv", [f32(2, 3, 16, 16), f32(8, 3, 3, 3), f32(8)], {"pads": [1, 1, 1, 1], "strides": [2, 2]}, 18,
             lambda x, w, b: F.conv2d(x, w, b, 2, 1))


def test_gelu_and_erf_bitwise():
    _bitwise("Gelu", [f32(4, 50)], {}, 20, F.gelu)
    _bitwise("Erf", [f32(4, 50)], {}, 18, torch.erf)


def test_integer_div_truncates_and_uint_arithmetic():
    _bitwise("Div", [np.array([-7, 7], np.int32), np.array([2, -2], np.int32)], {}, 18,
             lambda a, b: torch.tensor([-3, -3], dtype=torch.int32))
    _bitwise("Add", [np.array([1, 2**31], np.uint32), np.array([3, 5], np.uint32)], {}, 18,
             lambda a, b: torch.tensor([4, 2**31 + 5], dtype=torch.int64).to(torch.uint32))


# ---- hand-built graphs: an MLP and a transformer layer, bitwise equal to the same torch code ----

def _graph_model(nodes, inputs, outputs, initializers, opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def test_mlp_bitwise():
    w1, b1, w2, b2 = f32(64, 32), f32(64), f32(10, 64), f32(10)
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1),
        helper.make_node("Softmax", ["y"], ["p"], axis=-1),
    ]
    model = _graph_model(nodes, [_vi("x", ["n", 32])], [_vi("p", ["n", 10])], {"w1": w1, "b1": b1, "w2": w2, "b2": b2})
    x = torch.from_numpy(f32(8, 32))
    out = InferenceSession(model).run_torch({"x": x})["p"]
    t = {k: torch.from_numpy(v) for k, v in {"w1": w1, "b1": b1, "w2": w2, "b2": b2}.items()}
    expected = torch.softmax(F.linear(torch.relu(F.linear(x, t["w1"], t["b1"])), t["w2"], t["b2"]), -1)
    assert torch.equal(out, expected)


def test_transformer_layer_bitwise():
    d, heads, ff = 32, 4, 64
    hd = d // heads
    p = {"ln1_w": f32(d), "ln1_b": f32(d), "qkv_w": f32(d, 3 * d), "qkv_b": f32(3 * d), "proj_w": f32(d, d),
         "proj_b": f32(d), "ln2_w": f32(d), "ln2_b": f32(d), "fc_w": f32(d, ff), "fc_b": f32(ff),
         "out_w": f32(ff, d), "out_b": f32(d), "scale": np.array(1 / np.sqrt(hd), np.float32),
         "heads_shape": i64([0, 0, heads, hd]), "merge_shape": i64([0, 0, d]), "split": i64([d, d, d])}
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln1_w", "ln1_b"], ["ln1"], axis=-1, epsilon=1e-5),
        n("MatMul", ["ln1", "qkv_w"], ["qkv0"]), n("Add", ["qkv0", "qkv_b"], ["qkv"]),
        n("Split", ["qkv", "split"], ["q0", "k0", "v0"], axis=-1),
        n("Reshape", ["q0", "heads_shape"], ["q1"]), n("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]),
        n("Reshape", ["k0", "heads_shape"], ["k1"]), n("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]),
        n("Reshape", ["v0", "heads_shape"], ["v1"]), n("Transpose", ["v1"], ["v"], perm=[0, 2, 1, 3]),
        n("MatMul", ["q", "kt"], ["s0"]), n("Mul", ["s0", "scale"], ["s"]),
        n("Softmax", ["s"], ["a"], axis=-1), n("MatMul", ["a", "v"], ["o0"]),
        n("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]), n("Reshape", ["o1", "merge_shape"], ["o2"]),
        n("MatMul", ["o2", "proj_w"], ["o3"]), n("Add", ["o3", "proj_b"], ["o4"]),
        n("Add", ["x", "o4"], ["h"]),
        n("LayerNormalization", ["h", "ln2_w", "ln2_b"], ["ln2"], axis=-1, epsilon=1e-5),
        n("MatMul", ["ln2", "fc_w"], ["f0"]), n("Add", ["f0", "fc_b"], ["f1"]), n("Gelu", ["f1"], ["g"]),
        n("MatMul", ["g", "out_w"], ["m0"]), n("Add", ["m0", "out_b"], ["m1"]),
        n("Add", ["h", "m1"], ["y"]),
    ]
    model = _graph_model(nodes, [_vi("x", ["b", "s", d])], [_vi("y", ["b", "s", d])], p, opset=20)
    x = torch.from_numpy(f32(2, 5, d))
    out = InferenceSession(model).run_torch({"x": x})["y"]
    t = {k: torch.from_numpy(v) for k, v in p.items()}
    ln1 = F.layer_norm(x, (d,), t["ln1_w"], t["ln1_b"], 1e-5)
    qkv = torch.add(torch.matmul(ln1, t["qkv_w"]), t["qkv_b"])
    q0, k0, v0 = torch.split(qkv, [d, d, d], -1)
    q = q0.reshape(2, 5, heads, hd).permute(0, 2, 1, 3)
    kt = k0.reshape(2, 5, heads, hd).permute(0, 2, 3, 1)
    v = v0.reshape(2, 5, heads, hd).permute(0, 2, 1, 3)
    a = torch.softmax(torch.mul(torch.matmul(q, kt), t["scale"]), -1)
    o = torch.matmul(a, v).permute(0, 2, 1, 3).reshape(2, 5, d)
    h = torch.add(x, torch.add(torch.matmul(o, t["proj_w"]), t["proj_b"]))
    ln2 = F.layer_norm(h, (d,), t["ln2_w"], t["ln2_b"], 1e-5)
    g = F.gelu(torch.add(torch.matmul(ln2, t["fc_w"]), t["fc_b"]))
    expected = torch.add(h, torch.add(torch.matmul(g, t["out_w"]), t["out_b"]))
    assert torch.equal(out, expected)


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split_folds_without_a_node(opset):
    """Constant folding runs kernels with no NodeProto: Split counts its outputs from `split` then."""
    from aten2onnx.runtime.fold import evaluate_constant

    x = torch.arange(10.0)
    if opset < 13:
        outs = evaluate_constant("Split", opset, [x], {"axis": 0, "split": [3, 7]})
    else:
        outs = evaluate_constant("Split", opset, [x, torch.tensor([3, 7])], {"axis": 0})
    assert [o.tolist() for o in outs] == [x[:3].tolist(), x[3:].tolist()]
