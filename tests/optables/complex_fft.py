"""FFTs with complex inputs or results (carried as real pairs): fft, ifft, rfft, ihfft and their 2-D and
N-D forms, irfft and hfft of complex spectra, ATen's r2c/c2c/c2r primitives, stft, istft and the FFT shifts."""

from __future__ import annotations

import pytest
import torch
from optable import Entry, t

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # eager's advice on windows and lengths

REALS = (torch.float32, torch.float64)
COMPLEXES = (torch.complex64, torch.complex128)
# the emission is the same at every opset (MatMul, Gather, Transpose, Reshape, Concat)
OPSETS = (9, 18)
aten = torch.ops.aten
fft = torch.fft


def c(*shape):
    return lambda dtype: (torch.randn(shape, dtype=dtype),)


def spectrum(n_fft, frames, *, onesided=True, batch=()):
    """A spectrogram-shaped complex input: bins x frames."""
    bins = n_fft // 2 + 1 if onesided else n_fft
    return lambda dtype: (torch.randn(*batch, bins, frames, dtype=dtype),)


def with_infs(dtype):
    """Infinities only where a transform cuts the input off, or in the imaginary parts of DC and
    Nyquist, which c2r ignores: they must change nothing."""
    x = torch.randn(3, 6, dtype=dtype)
    x[:, 5] = complex(float("inf"), 1.0)
    x[:, 0] = complex(1.0, float("inf"))
    return (x,)


# windows as constants of the graph (hann_window itself is no ONNX op here)
HANN8, HANN6, HANN16 = (torch.hann_window(n) + 0.1 for n in (8, 6, 16))
COMPLEX_WINDOW = torch.randn(8, dtype=torch.complex64) + 2

TRANSFORMS = [
    Entry("fft_complex", lambda x: (fft.fft(x), fft.fft(x, 9, norm="ortho"), fft.fft(x, 3, 0, "forward"),
                                    fft.ifft(x), fft.ifft(x, 4, -2, "ortho"), fft.ifft(x, 7, norm="forward")),
          [c(4, 6)], COMPLEXES, opsets=(9, 13, 18, 26),
          keys=("complex:aten::fft_fft.default", "complex:aten::fft_ifft.default")),
    Entry("fftn_complex", lambda x: (fft.fftn(x), fft.fftn(x, s=(3, 10), dim=(1, 2), norm="ortho"), fft.fft2(x),
                                     fft.ifftn(x, s=(8,)), fft.ifft2(x, s=(-1, 2), dim=(2, 0), norm="forward"),
                                     fft.ifftn(x, dim=1)),
          [c(3, 4, 5)], COMPLEXES, opsets=OPSETS,
          keys=("complex:aten::fft_fft2.default", "complex:aten::fft_fftn.default", "complex:aten::fft_ifft2.default",
                "complex:aten::fft_ifftn.default")),
    Entry("fft_real", lambda x: (fft.fft(x), fft.fft2(x, norm="ortho"), fft.ifftn(x, s=(3, 7)), fft.ifft(x, 4, 0)),
          [t(4, 6)], REALS, opsets=OPSETS,
          keys=("complex:aten::fft_fft.default", "complex:aten::fft_fft2.default", "complex:aten::fft_ifft.default",
                "complex:aten::fft_ifftn.default")),
    Entry("rfft", lambda x: (fft.rfft(x), fft.rfft(x, 5, 0, "forward"), fft.rfft(x, 12, norm="ortho"),
                             fft.ihfft(x), fft.ihfft(x, 3, 0, "ortho"), fft.ihfft(x, 9, norm="forward")),
          [t(4, 6)], REALS, opsets=OPSETS, keys=("complex:aten::fft_ihfft.default", "complex:aten::fft_rfft.default")),
    Entry("rfftn", lambda x: (fft.rfftn(x), fft.rfft2(x, s=(3, 9)), fft.rfftn(x, dim=(2, 0), norm="forward"),
                              fft.ihfftn(x, norm="ortho"), fft.ihfft2(x), fft.ihfftn(x, s=(4, 1), dim=(0, 1))),
          [t(3, 4, 5)], REALS, opsets=OPSETS,
          keys=("complex:aten::fft_ihfft2.default", "complex:aten::fft_ihfftn.default",
                "complex:aten::fft_rfft2.default", "complex:aten::fft_rfftn.default")),
    Entry("irfft_complex", lambda x: (fft.irfft(x), fft.irfft(x, 7, norm="ortho"), fft.irfft(x, 12, 0),
                                      fft.hfft(x), fft.hfft(x, 9, norm="forward"), fft.hfft(x, 3, 0)),
          [c(5, 6)], COMPLEXES, opsets=OPSETS,
          keys=("complex:aten::fft_hfft.default", "complex:aten::fft_irfft.default")),
    Entry("irfftn_complex", lambda x: (fft.irfftn(x), fft.irfftn(x, s=(4, -1), dim=(0, 2), norm="ortho"),
                                       fft.irfft2(x, s=(3, 9), norm="forward"), fft.hfftn(x),
                                       fft.hfftn(x, s=(5, 2, -1), norm="forward"), fft.hfft2(x, dim=(2, 0))),
          [c(3, 4, 5)], COMPLEXES, opsets=OPSETS,
          keys=("complex:aten::fft_hfft2.default", "complex:aten::fft_hfftn.default",
                "complex:aten::fft_irfft2.default", "complex:aten::fft_irfftn.default")),
    Entry("fft_cut_off_infs", lambda x: (fft.fft(x[:, 1:], 4), fft.irfft(x, 8), fft.hfft(x, 4),
                                         fft.irfft(x, 6, 1, "ortho")),
          [with_infs], (torch.complex64,), opsets=OPSETS,
          keys=("aten::slice.Tensor", "complex:aten::fft_fft.default", "complex:aten::fft_hfft.default",
                "complex:aten::fft_irfft.default", "complex:aten::slice.Tensor")),
    Entry("fft_primitives", lambda x, r: (aten._fft_c2c(x, [0, 2], 1, True), aten._fft_c2c(x, [1], 2, False),
                                          aten._fft_r2c(r, [0, 2], 2, True), aten._fft_r2c(r, [1], 0, False),
                                          aten._fft_c2r(x, [0, 2], 2, 8), aten._fft_c2r(x, [2], 0, 9)),
          [lambda d: (torch.randn(3, 4, 5, dtype=d), torch.randn(3, 4, 5, dtype=d.to_real()))], COMPLEXES,
          opsets=OPSETS,
          keys=("complex:aten::_fft_c2c.default", "complex:aten::_fft_c2r.default", "complex:aten::_fft_r2c.default")),
    Entry("fftshift_complex", lambda x: (fft.fftshift(x), fft.ifftshift(x), fft.fftshift(x, (0, 2)),
                                         fft.ifftshift(x, -1)),
          [c(3, 4, 5)], COMPLEXES, opsets=OPSETS,
          keys=("aten::roll.default", "complex:aten::fft_fftshift.default", "complex:aten::fft_ifftshift.default")),
    # FNet's token mixing, and a magnitude spectrogram: the complex values never leave the graph
    Entry("fnet_mixing", lambda x: (fft.fftn(x, dim=(-2, -1)).real,
                                    torch.view_as_real(fft.fft(fft.fft(x), dim=-2))),
          [t(2, 8, 12)], REALS, opsets=OPSETS,
          keys=("complex:aten::fft_fft.default", "complex:aten::fft_fftn.default", "complex:aten::real.default",
                "complex:aten::view_as_real.default")),
    Entry("spectrogram_abs", lambda x: torch.stft(x, 16, 4, window=HANN16, return_complex=True).abs(),
          [t(2, 100)], opsets=OPSETS,
          keys=("aten::pad.default", "aten::view.default", "complex:aten::abs.default", "complex:aten::stft.default")),
]

SHORT_TIME = [
    Entry("stft", lambda x: (torch.stft(x, 8, 2, window=HANN8, return_complex=True),
                             torch.stft(x, 8, 3, 6, HANN6, normalized=True, return_complex=True),
                             torch.stft(x, 8, center=False, onesided=False, return_complex=True),
                             torch.stft(x, 7, 2, center=False, pad_mode="constant", return_complex=False),
                             torch.stft(x, 8, 3, 5, HANN6[:5], center=False, align_to_window=True,
                                        return_complex=True),
                             torch.stft(x, 8, 2, window=COMPLEX_WINDOW.to(x.dtype.to_complex()),
                                        return_complex=True)),
          [t(40), t(2, 37)], REALS, opsets=OPSETS,
          keys=("aten::pad.default", "aten::slice.Tensor", "aten::stft.default", "aten::view.default",
                "complex:aten::stft.default", "complex:aten::to.dtype")),
    Entry("stft_center_modes", lambda x: [aten.stft.center(x, 8, 3, None, HANN8, True, mode, return_complex=True)
                                          for mode in ("reflect", "constant", "replicate", "circular")],
          [t(2, 30)], REALS, opsets=OPSETS, keys=("complex:aten::stft.center",)),
    Entry("stft_complex", lambda x: (torch.stft(x, 8, 2, window=HANN8, center=False, return_complex=True),
                                     torch.stft(x, 8, 3, 6, HANN6, center=False, normalized=True),
                                     aten.stft.center(x, 8, 3, None, HANN8, True, "reflect", return_complex=True)),
          [c(40), c(2, 37)], COMPLEXES, opsets=OPSETS,
          keys=("complex:aten::stft.center", "complex:aten::stft.default")),
    Entry("istft", lambda x: (torch.istft(x, 8, 2, window=HANN8), torch.istft(x, 8, 2, window=HANN8, length=45),
                              torch.istft(x, 8, 3, 6, window=HANN6, normalized=True, length=30),
                              torch.istft(x, 8, 2, window=HANN8, center=False)),
          [spectrum(8, 21), spectrum(8, 21, batch=(2,))], COMPLEXES, opsets=OPSETS,
          keys=("complex:aten::istft.default",)),
    Entry("istft_two_sided", lambda x: (torch.istft(x, 8, 2, window=HANN8, return_complex=True),
                                        torch.istft(x, 8, 2, window=COMPLEX_WINDOW, return_complex=True),
                                        torch.istft(x, 8, 2, window=HANN8, onesided=False),
                                        torch.istft(x, 8, 4, return_complex=True, normalized=True, center=False)),
          [spectrum(8, 11, onesided=False, batch=(2,))], (torch.complex64,), opsets=OPSETS,
          keys=("complex:aten::istft.default",)),
]

TABLE = TRANSFORMS + SHORT_TIME
