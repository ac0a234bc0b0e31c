"""Signal processing: DFT (axis as an attribute at 17, an input from 20) and STFT over torch.fft;
the last dimension of signals and spectra holds [real] or [real, imaginary]."""

from __future__ import annotations

import torch

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import norm_axis, scalar


def _complex(x: torch.Tensor) -> torch.Tensor:
    """[..., 1] real or [..., 2] real/imaginary as a complex tensor of shape [...]."""
    if x.shape[-1] == 1:
        return torch.complex(x[..., 0], torch.zeros_like(x[..., 0]))
    return torch.complex(x[..., 0], x[..., 1])


def _dft(x: torch.Tensor, axis: int, length: int | None, inverse: bool, onesided: bool) -> torch.Tensor:
    dtype = x.dtype
    signal = _complex(x.to(torch.float64))  # float64 throughout: float32 FFTs round differently from numpy's
    axis = norm_axis(axis, signal.dim())
    if inverse and onesided:  # a one-sided spectrum back to a real signal
        n = length if length is not None else 2 * (signal.shape[axis] - 1)
        return torch.fft.irfft(signal, n, axis).unsqueeze(-1).to(dtype)
    n = signal.shape[axis] if length is None else length
    spectrum = torch.fft.ifft(signal, n, axis) if inverse else torch.fft.fft(signal, n, axis)
    if onesided:
        spectrum = spectrum.narrow(axis, 0, n // 2 + 1)
    return torch.view_as_real(spectrum).to(dtype)


@kernel("DFT", since=17)
class DFT17(Kernel):
    def setup(self, axis: int = 1, inverse: int = 0, onesided: int = 0) -> None:
        self.axis, self.inverse, self.onesided = axis, bool(inverse), bool(onesided)

    def run(self, x, dft_length=None):
        # the axis counts over the signal's dimensions, the trailing real/imaginary one included
        axis = norm_axis(self.axis, x.dim())
        return (_dft(x, axis, scalar(dft_length), self.inverse, self.onesided),)


@kernel("DFT", since=20)
class DFT20(Kernel):
    """DFT from opset 20: the axis is an optional input (default -2, the last signal dimension)."""

    def setup(self, inverse: int = 0, onesided: int = 0) -> None:
        self.inverse, self.onesided = bool(inverse), bool(onesided)

    def run(self, x, dft_length=None, axis=None):
        a = norm_axis(int(scalar(axis, -2)), x.dim())
        return (_dft(x, a, scalar(dft_length), self.inverse, self.onesided),)


@kernel("STFT", since=17)
class STFT(Kernel):
    def setup(self, onesided: int = 1) -> None:
        self.onesided = bool(onesided)

    def run(self, signal, frame_step, window=None, frame_length=None):
        step = int(scalar(frame_step))
        length = int(scalar(frame_length)) if frame_length is not None else window.shape[0]
        frames = signal.unfold(1, length, step)  # [batch, frames, 1|2, length]
        frames = frames.movedim(2, -1)  # [batch, frames, length, 1|2]
        if window is not None:
            frames = frames * window.to(frames.dtype).reshape(1, 1, -1, 1)
        return (_dft(frames, 2, None, False, self.onesided),)
