"""Graphs that runtimes run fast (issue 31): ops that only move elements are the ONNX op that moves them
(Pad, Tile, Slice, Reshape and Transpose, Gather of one axis' positions), never a Gather of a constant
index table as large as the activation; hardtanh and ReLU6 are Clip. Each case is exported at two sizes:
the largest constant must not grow with the input, the named op must be there, and onnxruntime and our
runtime must match eager at every opset in the table."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from conftest import run_ort

import aten2onnx


def randn(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


# name: (function, input shape (a second size doubles the last two dims), the op it must be spelled with)
CASES = {
    "pad_constant": (lambda x: F.pad(x, (1, 2, 0, 3), value=0.5), (1, 3, 8, 8), "Pad"),
    "pad_reflect": (lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), (1, 3, 8, 8), "Pad"),
    "pad_replicate": (lambda x: F.pad(x, (2, 1, 1, 2), mode="replicate"), (1, 3, 8, 8), "Pad"),
    "pad_reflect_1d": (lambda x: F.pad(x, (3, 1), mode="reflect"), (2, 8, 8), "Pad"),
    "zero_pad_module": (lambda x: torch.nn.ZeroPad2d((1, 0, 1, 0))(x), (1, 3, 8, 8), "Pad"),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 0.5), (1, 3, 8, 8), "Clip"),
    "relu6": (lambda x: F.relu6(x * 4), (1, 3, 8, 8), "Clip"),
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), (1, 8, 8, 8), "Transpose"),
    "pixel_unshuffle": (lambda x: F.pixel_unshuffle(x, 2), (1, 2, 8, 8), "Transpose"),
    "channel_shuffle": (lambda x: F.channel_shuffle(x, 2), (1, 4, 8, 8), "Transpose"),
    "repeat": (lambda x: x.repeat(1, 2, 1, 3), (1, 3, 8, 8), "Tile"),
    "tile": (lambda x: torch.tile(x, (2, 2)), (1, 3, 8, 8), "Tile"),
    "rot90": (lambda x: torch.rot90(x, 1, (2, 3)), (1, 3, 8, 8), "Transpose"),
    "rot90_3": (lambda x: torch.rot90(x, 3, (2, 3)), (1, 3, 8, 8), "Transpose"),
    "fliplr": (lambda x: torch.fliplr(x), (1, 3, 8, 8), "Slice"),
    "flipud": (lambda x: torch.flipud(x), (1, 3, 8, 8), "Slice"),
    "unfold": (lambda x: x.unfold(3, 3, 2), (1, 3, 8, 8), "Gather"),
    "narrow": (lambda x: torch.narrow(x, 3, -5, 3), (1, 3, 8, 8), "Slice"),
}


class Model(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def largest_constant(model) -> int:
    return max([1] + [numpy_helper.to_array(t).size for t in model.graph.initializer])


@pytest.mark.parametrize("opset", [11, 18])
@pytest.mark.parametrize("name", list(CASES))
def test_element_moves_are_onnx_ops_not_index_tables(name, opset):
    fn, shape, op = CASES[name]
    largest = []
    for scale in (1, 2):
        x = randn(*shape[:-2], shape[-2] * scale, shape[-1] * scale)
        exported = aten2onnx.export(Model(fn), (x,), opset=opset, fallback="error")
        proto = exported.model_proto
        assert op in {n.op_type for n in proto.graph.node}, [n.op_type for n in proto.graph.node]
        want = fn(x)
        got = run_ort(proto, {exported.input_names[0]: x})[0]
        torch.testing.assert_close(torch.from_numpy(got), want, rtol=0, atol=0)
        torch.testing.assert_close(exported.run(x), want, rtol=0, atol=0)
        largest.append(largest_constant(proto))
    # a table of element indices grows 4x with the input; positions along one axis about 2x
    assert largest[1] < 3 * largest[0] and largest[1] < x.numel() // 8, largest
