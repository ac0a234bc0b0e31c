"""Spatial sampling, pooling leftovers and real-output FFTs: their OpInfos exporting natively (the op
table is tests/optables/spatial.py)."""

from __future__ import annotations

import pytest
from optable import assert_opinfo_native

NATIVE = {
    "grid_sampler_2d": [9, 16, 20, 26], "grid_sampler_3d": [9, 18, 20], "nn.functional.grid_sample": [9, 16, 20],
    "nn.functional.adaptive_max_pool1d": [9, 18, 26], "nn.functional.adaptive_max_pool2d": [9, 18, 26],
    "nn.functional.adaptive_max_pool3d": [9, 18], "nn.functional.avg_pool1d": [9, 18],
    "nn.functional.avg_pool2d": [10, 18, 26], "nn.functional.avg_pool3d": [9, 18, 26],
    "_upsample_bilinear2d_aa": [9, 18, 26], "fft.irfft": [9, 17, 26], "fft.irfft2": [9, 18], "fft.irfftn": [9, 26],
    "fft.hfft": [9, 17, 26], "fft.hfft2": [9, 18], "fft.hfftn": [9, 26],
}


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_opinfo_native(name):
    assert_opinfo_native(name, NATIVE[name])
