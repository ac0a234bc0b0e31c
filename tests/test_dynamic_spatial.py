"""Symbolic spatial sizes, lengths and pad widths (issue 20): FFTs, shifts, pooling, resampling, grid
sampling, circular padding and im2col exported with every dim Dim.AUTO, natively (fallback="error"),
and right against eager at the example and at a second size, in onnxruntime and in our runtime."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import run_ort
from optable import Call, assert_runs_like_eager

import aten2onnx

fft = torch.fft


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)), dtype=dtype)


def grid(*shape):
    """Grid coordinates in [-1.2, 1.2]: some outside, for the padding modes."""
    return torch.rand(*shape, generator=torch.Generator().manual_seed(7)) * 2.4 - 1.2


# name: (function of the inputs, inputs at the example size, inputs at a second size)
CASES = {
    "fft": (lambda x: torch.view_as_real(fft.fft(x)), (randn(3, 5),), (randn(4, 8),)),
    "rfft_n": (lambda x: torch.view_as_real(fft.rfft(x, n=6)), (randn(2, 5),), (randn(3, 9),)),
    "ifft2_ortho": (lambda x: torch.view_as_real(fft.ifft2(x, norm="ortho")), (randn(2, 3, 4),), (randn(3, 5, 7),)),
    "ihfftn_forward": (lambda x: torch.view_as_real(fft.ihfftn(x, norm="forward")), (randn(3, 6),), (randn(4, 7),)),
    "stft": (lambda x: torch.view_as_real(torch.stft(x, 8, 3, window=torch.hann_window(8), center=False,
                                                     return_complex=True)), (randn(2, 20),), (randn(3, 27),)),
    "stft_center_constant": (lambda x: torch.view_as_real(torch.stft(x, 8, 2, center=True, pad_mode="constant",
                                                                     return_complex=True)), (randn(21),), (randn(30),)),
    # stft.center itself (torch.stft pads before calling stft.default): the frames read through the padding
    "stft_center_reflect": (lambda x: torch.view_as_real(torch.ops.aten.stft.center(
        x, 8, 2, None, None, True, "reflect", False, None, True)), (randn(2, 21),), (randn(3, 30),)),
    "stft_center_constant_op": (lambda x: torch.view_as_real(torch.ops.aten.stft.center(
        x, 8, 3, 6, None, True, "constant", True, None, True)), (randn(21),), (randn(30),)),
    "fftshift": (lambda x: fft.fftshift(x), (randn(3, 5),), (randn(4, 6),)),
    "ifftshift": (lambda x: fft.ifftshift(x), (randn(2, 3, 5),), (randn(3, 4, 6),)),
    "max_pool2d_indices": (lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True, return_indices=True),
                           (randn(2, 2, 7, 7),), (randn(3, 3, 9, 8),)),
    "avg_pool2d_ceil_divisor": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, divisor_override=2),
                                (randn(2, 3, 9, 9),), (randn(3, 4, 10, 12),)),
    "avg_pool1d_float64": (lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                           (randn(2, 3, 8, dtype=torch.float64),), (randn(3, 2, 11, dtype=torch.float64),)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (3, 4)), (randn(2, 2, 7, 9),), (randn(3, 3, 10, 11),)),
    "adaptive_avg_pool1d_unbatched": (lambda x: F.adaptive_avg_pool1d(x, 3), (randn(2, 7),), (randn(3, 10),)),
    "bilinear_scale": (lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear"),
                       (randn(2, 3, 4, 5),), (randn(3, 2, 6, 7),)),
    "bicubic_align_size": (lambda x: F.interpolate(x, size=(5, 6), mode="bicubic", align_corners=True),
                           (randn(2, 3, 4, 4),), (randn(3, 2, 7, 5),)),
    "linear_shrink": (lambda x: F.interpolate(x, scale_factor=0.6, mode="linear"), (randn(2, 3, 8),), (randn(3, 2, 11),)),
    "trilinear_recomputed": (lambda x: F.interpolate(x, scale_factor=1.5, mode="trilinear", recompute_scale_factor=True),
                             (randn(2, 2, 3, 4, 5),), (randn(3, 3, 4, 5, 6),)),
    "area": (lambda x: F.interpolate(x, size=(3, 2), mode="area"), (randn(2, 3, 5, 7),), (randn(3, 2, 8, 9),)),
    "pad_circular": (lambda x: F.pad(x, (-1, 2, 1, 1), mode="circular"), (randn(2, 3, 4, 5),), (randn(3, 2, 6, 7),)),
    # one channel (a size-1 dim, which capture specializes): im2col's view to [0, 9, L] has a static 0
    "unfold_empty_batch": (lambda x: F.unfold(x, 3), (randn(0, 1, 5, 5),), (randn(0, 1, 6, 7),)),
    "grid_sample_reflection": (lambda x, g: F.grid_sample(x, g, padding_mode="reflection", align_corners=False),
                               (randn(2, 3, 4, 5), grid(2, 3, 3, 2)), (randn(3, 2, 6, 7), grid(3, 4, 5, 2))),
    "grid_sample_3d_border": (lambda x, g: F.grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True),
                              (randn(2, 2, 3, 4, 5), grid(2, 2, 3, 3, 3)), (randn(3, 3, 4, 5, 6), grid(3, 3, 2, 4, 3))),
}


@pytest.mark.parametrize("opset", [13, 18, 26])
@pytest.mark.parametrize("name", list(CASES))
def test_symbolic_sizes_export_natively_and_right_at_another_size(name, opset):
    fn, example, other = CASES[name]
    dynamic = tuple({d: torch.export.Dim.AUTO for d in range(t.dim())} for t in example)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(Call(fn), example, dynamic_shapes=(dynamic,), opset=opset, fallback="error")
    for args in (example, other):
        assert_runs_like_eager(exported, fn, args, tol=(1e-4, 1e-5))


NEAREST = {
    "1d_scale": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), (2, 3, 5)),
    "1d_fraction": (lambda x: F.interpolate(x, scale_factor=1.7, mode="nearest"), (2, 3, 5)),
    "1d_size": (lambda x: F.interpolate(x, size=9, mode="nearest-exact"), (2, 3, 5)),
    "2d_scale": (lambda x: F.interpolate(x, scale_factor=(2, 0.6), mode="nearest"), (2, 3, 5, 7)),
    "2d_exact": (lambda x: F.interpolate(x, scale_factor=(1.5, 3), mode="nearest-exact"), (1, 2, 5, 4)),
    "3d_scale": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), (1, 2, 3, 4, 5)),
}


@pytest.mark.parametrize("opset", [9, 13, 18])
@pytest.mark.parametrize("name", list(NEAREST))
def test_nearest_resampling_with_dynamic_sizes_is_native(name, opset):
    """Nearest resampling (1-D, 2-D, 3-D; scale factors whole and fractional, sizes; nearest-exact) with every
    dim dynamic: one Gather per axis, its indices computed as ATen's kernel does (it fell back, and with
    static sizes it gathered from a constant as large as the output)."""
    fn, shape = NEAREST[name]
    x = torch.randn(*shape)
    exported = aten2onnx.export(fn, (x,), opset=opset, fallback="error",
                                dynamic_shapes=({d: torch.export.Dim.AUTO for d in range(len(shape))},))
    for other in (x, torch.randn(*[n + 2 for n in shape])):
        want = fn(other)
        assert torch.equal(exported.run(other), want)
        assert torch.equal(torch.from_numpy(run_ort(exported.model_proto, {exported.input_names[0]: other})[0]), want)


MAX_POOL_1D = {
    "floor": torch.nn.MaxPool1d(3, stride=2, padding=1),
    "dilated": torch.nn.MaxPool1d(3, stride=1, padding=1, dilation=2),
    "ceil": torch.nn.MaxPool1d(3, stride=2, ceil_mode=True),
    "ceil_padded": torch.nn.MaxPool1d(2, stride=2, padding=1, ceil_mode=True),
}


@pytest.mark.parametrize("name", list(MAX_POOL_1D))
def test_max_pool1d_keeps_a_dynamic_length(name):
    """torch.export computed max_pool1d's example output with its C++ kernel, which read the length as a number
    and fixed it (silently under Dim.AUTO); its size formula keeps it symbolic, ceil mode included."""
    model = MAX_POOL_1D[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", aten2onnx.NarrowedExportWarning)
        exported = aten2onnx.export(model, (torch.randn(2, 3, 9),), fallback="error",
                                    dynamic_shapes=({0: torch.export.Dim.AUTO, 2: torch.export.Dim.AUTO},))
    for length in (9, 10, 17):
        x = torch.randn(3, 3, length)
        assert torch.equal(exported.run(x), model(x))
        assert torch.equal(torch.from_numpy(run_ort(exported.model_proto, {exported.input_names[0]: x})[0]), model(x))
