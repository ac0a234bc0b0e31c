"""Numeric utilities: frexp and nextafter bit for bit, the fallback, and their OpInfos exporting
natively (the op table is tests/optables/numeric.py)."""

from __future__ import annotations

import warnings

import pytest
import torch

import aten2onnx
from conftest import run_ort
from optable import Call, assert_opinfo_native
from optables.numeric import frexp_values, inf, nextafter_values


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("name, fn, sample", [("frexp", torch.frexp, frexp_values), ("nextafter", torch.nextafter, nextafter_values)])
def test_bit_exact(name, fn, sample, dtype):
    """frexp and nextafter to the last bit, signed zeros included, in both runtimes."""
    args = sample(dtype)
    expected = fn(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(Call(fn), args, opset=18, fallback="error")
    ours = exported.run(*args)
    theirs = [torch.from_numpy(a) for a in run_ort(exported.model_proto, dict(zip(exported.input_names, args)))]
    for got in (ours if isinstance(ours, (tuple, list)) else (ours,)), theirs:
        for g_, w in zip(got, expected):
            bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[w.element_size()]
            assert torch.equal(g_.view(bits), w.view(bits)), (name, dtype, g_, w)


def test_nextafter_random_bits():
    """Stepping random float32 values (normal and subnormal) up and down matches eager bit for bit."""
    torch.manual_seed(0)
    x = torch.cat([torch.randn(200) * 10.0 ** torch.randint(-40, 38, (200,)), torch.randn(50) * 1e-42])
    y = torch.where(torch.rand(250) > 0.5, torch.tensor(inf), torch.tensor(-inf))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(Call(torch.nextafter), (x, y), opset=13, fallback="error")
    want = torch.nextafter(x, y).view(torch.int32)
    assert torch.equal(exported.run(x, y).view(torch.int32), want)
    assert torch.equal(torch.from_numpy(run_ort(exported.model_proto, {exported.input_names[0]: x,
                                                                       exported.input_names[1]: y})[0]).view(torch.int32), want)


def test_unsupported_falls_back():
    """Arguments the translations cannot express are left to an ATen node, not exported wrong."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(Call(lambda x: torch.quantile(x, 0.5, dim=0)), (torch.randn(3, 2),), opset=9,
                                    dynamic_shapes=(({0: torch.export.Dim("n")},),))
    assert any(n.op_type == "ATen" for n in exported.model_proto.graph.node)


OPINFOS = ["bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "trapezoid", "trapz", "cumulative_trapezoid",
           "gradient", "renorm", "frexp", "nn.functional.multi_margin_loss", "nn.functional.multilabel_margin_loss",
           "mode", "nextafter"]
ORDER_STATISTICS = ["quantile", "nanquantile", "nanmedian", "masked.median"]


@pytest.mark.parametrize("name", OPINFOS)
def test_opinfo_native(name):
    assert_opinfo_native(name, [9, 18, 26])


@pytest.mark.parametrize("name", ORDER_STATISTICS)
def test_opinfo_native_order_statistics(name):
    assert_opinfo_native(name, [11, 18, 26])
