"""Spatial sampling, pooling leftovers and real-output FFTs: average pooling with ceil_mode and
divisor_override, adaptive max pooling over uneven bins (NaN and ties), grid sampling in every mode,
antialiased bilinear resizing, irfft/hfft in 1-D, 2-D and N-D."""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from optable import Entry, t

FLOATS = (torch.float32, torch.float64)
HALF = (torch.float16,)
INF, NAN = float("inf"), float("nan")


def ints(*shape, low=-20, high=20):
    return lambda dtype: (torch.randint(low, high, shape).to(dtype),)


def with_specials(*shape):
    """Uniform values with inf, -inf at fixed places."""
    def make(dtype):
        x = torch.empty(shape).uniform_(-3, 3)
        x.view(-1)[3], x.view(-1)[-2] = INF, -INF
        return (x.to(dtype),)
    return make


POOL_OPSETS = (10, 13, 18, 26)  # avg_pool2d's opset-9 symbolic lives in opset9_pool.py

POOLING = [
    Entry("avg_pool2d_ceil", lambda x: (F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
                                        F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                        F.avg_pool2d(x, (2, 3), (3, 2), (1, 0), ceil_mode=True)),
          [t(2, 3, 8, 7), t(3, 6, 6)], FLOATS + HALF, opsets=POOL_OPSETS, keys=("aten::avg_pool2d.default",)),
    Entry("avg_pool2d_divisor", lambda x: (F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, divisor_override=2),
                                           F.avg_pool2d(x, 2, 1, 1, divisor_override=-3)),
          [t(1, 2, 7, 9)], FLOATS, opsets=POOL_OPSETS, keys=("aten::avg_pool2d.default",)),
    Entry("avg_pool2d_int", lambda x: (F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                                       F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, divisor_override=4),
                                       F.avg_pool2d(x, 2)),
          [ints(2, 2, 7, 6)], (torch.int64,), opsets=POOL_OPSETS, keys=("aten::avg_pool2d.default",)),
    Entry("avg_pool2d_inf", lambda x: F.avg_pool2d(x, 2, 2, 1, ceil_mode=True), [with_specials(1, 1, 5, 5)], FLOATS,
          opsets=POOL_OPSETS, keys=("aten::avg_pool2d.default",)),
    Entry("avg_pool1d_3d", lambda a, b: (F.avg_pool1d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                         F.avg_pool3d(b, 2, 2, 1, ceil_mode=True, divisor_override=3),
                                         F.avg_pool3d(b, (3, 2, 2), (2, 3, 1), (1, 1, 0), ceil_mode=True)),
          [lambda d: (torch.randn(2, 3, 8).to(d), torch.randn(1, 2, 5, 6, 4).to(d))], FLOATS, opsets=(9, 13, 18, 26),
          keys=("aten::avg_pool1d.default", "aten::avg_pool3d.default")),
    Entry("avg_pool3d_int", lambda x: F.avg_pool3d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False),
          [ints(1, 2, 3, 4, 5)], (torch.int64,), opsets=(9, 18), keys=("aten::avg_pool3d.default",)),
    Entry("adaptive_max_pool", lambda a, b, c: (F.adaptive_max_pool1d(a, 3, return_indices=True),
                                                F.adaptive_max_pool2d(b, (3, 2), return_indices=True),
                                                F.adaptive_max_pool3d(c, (2, 3, 2), return_indices=True)),
          [lambda d: (torch.randn(2, 3, 7).to(d), torch.randn(2, 3, 7, 5).to(d), torch.randn(1, 2, 5, 4, 3).to(d))],
          FLOATS + HALF, opsets=(9, 13, 18, 26),
          keys=("aten::adaptive_max_pool1d.default", "aten::adaptive_max_pool2d.default",
                "aten::adaptive_max_pool3d.default")),
    Entry("adaptive_max_pool_upscale", lambda x: (F.adaptive_max_pool2d(x, (5, 4), return_indices=True),
                                                  F.adaptive_max_pool2d(x[0], (2, 3), return_indices=True)),
          [t(2, 2, 3, 3)], FLOATS, opsets=(9, 18), keys=("aten::adaptive_max_pool2d.default", "aten::select.int")),
    # fractional max pooling: windows placed by each plane's samples (the F functions are captured as
    # aten2onnx::fractional_max_pool, ATen's own ops come from a program captured elsewhere), NaN windows
    Entry("fractional_max_pool", lambda x, s, y, r: (
        F.fractional_max_pool2d(x, (2, 3), output_size=(3, 2), return_indices=True, _random_samples=s),
        F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.7), _random_samples=s),
        F.fractional_max_pool3d(y, 2, output_ratio=0.5, return_indices=True, _random_samples=r)),
          [lambda d: (with_specials(2, 3, 7, 8)(d)[0], torch.rand(2, 3, 2).to(d), torch.randn(1, 2, 5, 6, 4).to(d),
                      torch.rand(1, 2, 3).to(d))],
          FLOATS, opsets=(9, 13, 18, 26), keys=("aten2onnx::fractional_max_pool.default",)),
    Entry("fractional_max_pool_aten", lambda x, s, y, r: (
        torch.ops.aten.fractional_max_pool2d(x, [2, 2], [3, 4], s),
        torch.ops.aten.fractional_max_pool3d(y, [2, 1, 2], [2, 3, 2], r)),
          [lambda d: (torch.randn(2, 3, 7, 8).to(d), torch.rand(2, 3, 2).to(d), torch.randn(1, 2, 5, 6, 4).to(d),
                      torch.rand(1, 2, 3).to(d))],
          FLOATS, opsets=(9, 18), keys=("aten::fractional_max_pool2d.default", "aten::fractional_max_pool3d.default")),
    # ATen keeps the first maximum, and the last NaN where a window holds one
    Entry("adaptive_max_pool_nan_ties", lambda x: F.adaptive_max_pool1d(x, 3, return_indices=True),
          [lambda d: (torch.tensor([[[1.0, NAN, 3.0, NAN, 3.0, 2.0, 2.0, -INF],
                                     [2.0, 2.0, INF, INF, -INF, -INF, -INF, 0.0]]], dtype=d),)],
          FLOATS, opsets=(9, 18), keys=("aten::adaptive_max_pool1d.default",)),
]

GRID_MODES = list(itertools.product(("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"),
                                    (False, True)))


def grid_sample(mode, padding, align):
    return lambda x, grid: F.grid_sample(x, grid, mode, padding, align)


def image_and_grid(image, out, spread=1.3):
    """An image and a grid over [-spread, spread], some points exactly on -1, 0 and 1."""
    def make(dtype):
        grid = torch.empty(out + (len(image) - 2,)).uniform_(-spread, spread)
        grid.view(-1)[:5] = torch.tensor([-1.0, 1.0, 0.0, 1.0, -1.0])
        return torch.randn(image).to(dtype), grid.to(dtype)
    return make


GRIDS = [Entry(f"grid_sample_2d_{m}_{p}_{a}", grid_sample(m, p, a), [image_and_grid((2, 3, 5, 7), (2, 4, 6))],
               FLOATS, opsets=(9, 16, 20), keys=("aten::grid_sampler.default",))
         for m, p, a in GRID_MODES] + [
    # half types round every step as ATen's kernels do, in both runtimes
    Entry(f"grid_sample_2d_{m}_{p}_{a}_half", grid_sample(m, p, a), [image_and_grid((2, 3, 5, 7), (2, 4, 6))],
          HALF, opsets=(9,), keys=("aten::grid_sampler.default",))
    for m, p, a in GRID_MODES if a == (p == "reflection")] + [
    Entry(f"grid_sample_3d_{m}_{p}_{a}", grid_sample(m, p, a), [image_and_grid((2, 2, 3, 4, 5), (2, 3, 2, 4))],
          FLOATS, opsets=(9, 20), keys=("aten::grid_sampler.default",))
    for m, p, a in GRID_MODES if m != "bicubic"] + [
    Entry("grid_sample_bfloat16", grid_sample("bicubic", "reflection", False),
          [image_and_grid((1, 2, 4, 6), (1, 3, 5))], (torch.bfloat16,), opsets=(16,), ort=False,
          keys=("aten::grid_sampler.default",)),
    Entry("grid_sample_one_pixel", lambda x, g: (F.grid_sample(x, g, "bilinear", "reflection", True),
                                                 F.grid_sample(x, g, "nearest", "reflection", False)),
          [image_and_grid((1, 2, 1, 1), (1, 3, 2), spread=3)], FLOATS, opsets=(9, 20),
          keys=("aten::grid_sampler.default",)),
]

RESIZE = [
    Entry("upsample_bilinear_aa", lambda x: (F.interpolate(x, (3, 5), mode="bilinear", antialias=True),
                                             F.interpolate(x, (13, 1), mode="bilinear", antialias=True),
                                             F.interpolate(x, scale_factor=(0.6, 1.7), mode="bilinear",
                                                           antialias=True, align_corners=True)),
          [t(2, 3, 10, 8), t(1, 2, 6, 1)], FLOATS, opsets=(9, 18, 26), keys=("aten::_upsample_bilinear2d_aa.vec",)),
    Entry("upsample_bilinear_aa_default", lambda x: torch.ops.aten._upsample_bilinear2d_aa(x, [4, 3], False, 0.5, 0.3),
          [t(1, 2, 7, 9)], FLOATS, opsets=(9, 18), keys=("aten::_upsample_bilinear2d_aa.default",)),
]

FFT_OPSETS = (9, 17, 20, 26)

FFTS = [
    Entry("irfft", lambda x: (torch.fft.irfft(x), torch.fft.irfft(x, 7, norm="ortho"), torch.fft.irfft(x, 12, 0),
                              torch.fft.irfft(x, 1, norm="forward"), torch.fft.irfft(x, 4, norm="backward")),
          [t(5, 6)], FLOATS, opsets=FFT_OPSETS, keys=("aten::fft_irfft.default",)),
    Entry("hfft", lambda x: (torch.fft.hfft(x), torch.fft.hfft(x, 9, norm="forward"), torch.fft.hfft(x, 3, 0),
                             torch.fft.hfft(x, 10, norm="ortho")),
          [t(5, 6)], FLOATS, opsets=FFT_OPSETS, keys=("aten::fft_hfft.default",)),
    Entry("irfftn", lambda x: (torch.fft.irfftn(x), torch.fft.irfftn(x, s=(4, -1), dim=(0, 2), norm="ortho"),
                               torch.fft.irfft2(x, s=(3, 9), norm="forward"), torch.fft.irfftn(x, s=(6,))),
          [t(3, 4, 5)], FLOATS, opsets=FFT_OPSETS, keys=("aten::fft_irfft2.default", "aten::fft_irfftn.default")),
    Entry("hfftn", lambda x: (torch.fft.hfftn(x), torch.fft.hfftn(x, s=(5, 2, -1), norm="forward"),
                              torch.fft.hfft2(x, dim=(2, 0), norm="ortho"), torch.fft.hfftn(x, dim=(1,))),
          [t(3, 4, 5)], FLOATS, opsets=FFT_OPSETS, keys=("aten::fft_hfft2.default", "aten::fft_hfftn.default")),
    Entry("irfft_ints", lambda x: (torch.fft.irfft(x), torch.fft.hfftn(x, s=(3, 3))), [ints(4, 5)],
          (torch.int64, torch.int32), opsets=(9, 18), keys=("aten::fft_hfftn.default", "aten::fft_irfft.default")),
    # cut-off bins are dropped, not multiplied by zero: an inf there changes nothing
    Entry("irfft_specials", lambda x: (torch.fft.irfft(x), torch.fft.hfft(x), torch.fft.irfft(x, 4),
                                       torch.fft.hfftn(x, s=(1, 3))),
          [with_specials(2, 6)], FLOATS, opsets=(9, 18),
          keys=("aten::fft_hfft.default", "aten::fft_hfftn.default", "aten::fft_irfft.default")),
]

TABLE = POOLING + GRIDS + RESIZE + FFTS
