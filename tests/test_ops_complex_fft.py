"""FFTs with complex inputs or results: a dynamic batch, and their OpInfos exporting natively (the op
table is tests/optables/complex_fft.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import run_ort
from optable import Call, assert_opinfo_native

import aten2onnx
from optables.complex_fft import HANN8

fft = torch.fft


def test_dynamic_batch():
    """Batch dims stay symbolic: transforms reshape around them, and istft's zero padding takes
    its shape from the graph."""
    def fn(x, s):
        return fft.rfft2(x, dim=(1, 2)), fft.irfft(s, dim=1), torch.istft(s, 8, 2, window=HANN8, length=30)

    batch = torch.export.Dim("batch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(Call(fn), (torch.randn(2, 5, 6), torch.randn(2, 5, 11, dtype=torch.complex64)),
                                    dynamic_shapes=(({0: batch}, {0: batch}),), fallback="error")
    args = (torch.randn(3, 5, 6), torch.randn(3, 5, 11, dtype=torch.complex64))
    expected = fn(*args)
    ours = exported.run(*args)
    outs = run_ort(exported.model_proto, exported.carried_inputs(dict(zip(exported.input_names, args))))
    theirs = exported.structure_outputs(dict(zip(exported.output_names, outs)))
    for a, b, want in zip(ours, theirs, expected):
        torch.testing.assert_close(a, want, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(torch.as_tensor(np.asarray(b)), want, rtol=1e-4, atol=1e-5)


FFT_OPINFOS = ["fft.fft", "fft.fft2", "fft.fftn", "fft.ifft", "fft.ifft2", "fft.ifftn", "fft.rfft", "fft.rfft2",
               "fft.rfftn", "fft.ihfft", "fft.ihfft2", "fft.ihfftn", "fft.irfft", "fft.irfft2", "fft.irfftn",
               "fft.hfft", "fft.hfft2", "fft.hfftn", "fft.fftshift", "fft.ifftshift"]


@pytest.mark.parametrize("name", FFT_OPINFOS + ["stft"])
def test_opinfo_native(name):
    assert_opinfo_native(name, [9, 18])


@pytest.mark.parametrize("name", FFT_OPINFOS + ["stft", "istft"])
def test_opinfo_native_complex(name):
    assert_opinfo_native(name, [18], dtype="complex64")
