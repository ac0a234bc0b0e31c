"""Opset-9 base, FFTs with real outputs (irfft, hfft and their 2-D and N-D forms) of real inputs:
constant DFT matrices in float64, one MatMul per transformed dim, which read the same at every
opset. A complex input has no tensor type onnxruntime computes with, so it is declined."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.exporter.builder import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, norm_dims

register = functools.partial(registry.register, opset=9)

# A DFT matrix above this many elements (128 MiB in float64) is declined rather than built: the
# model would approach protobuf's 2 GiB limit (an irfft of 4096 points needs 2049 x 4096).
MAX_MATRIX = 1 << 24


def _cos_sin(rows: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of 2*pi*j*t/n for j < rows, t < n: the product reduced mod n first so it stays
    exact, and the values that are exactly 0 made so (pocketfft's twiddles are exact there too)."""
    j = torch.arange(rows, dtype=torch.int64).unsqueeze(1)
    t = torch.arange(n, dtype=torch.int64).unsqueeze(0)
    turns = j * t % n
    angles = turns.to(torch.float64) * (2 * math.pi / n)
    cos, sin = torch.cos(angles), torch.sin(angles)
    cos[(4 * turns) % (2 * n) == n] = 0.0  # a quarter or three quarters of a turn
    sin[(2 * turns) % n == 0] = 0.0        # none or half a turn
    return cos, sin


def _c2r_matrices(rows: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[rows, n] weights of the real and imaginary parts of the first `rows` bins of a one-sided
    spectrum (zero-padded to n // 2 + 1) in the length-n inverse real DFT: each bin but DC and
    Nyquist stands for itself and its mirror, and the imaginary parts of those two are ignored, as
    pocketfft does."""
    cos, sin = _cos_sin(rows, n)
    twice = torch.full((rows, 1), 2.0, dtype=torch.float64)
    twice[0] = 1.0
    if n % 2 == 0 and rows > n // 2:
        twice[n // 2] = 1.0
    return twice * cos, -twice * sin  # the sines of DC and Nyquist are 0


def _along(g: GraphBuilder, x: Value, axis: int, rank: int, matrix: torch.Tensor) -> Value:
    """x times matrix along one axis (x's axis size must be the matrix's rows)."""
    if axis == rank - 1:
        return g.op("MatMul", x, g.const(matrix))
    perm = [d for d in range(rank) if d != axis] + [axis]
    moved = g.op("MatMul", g.op("Transpose", x, perm=perm), g.const(matrix))
    return g.op("Transpose", moved, perm=[perm.index(d) for d in range(rank)])


def _first(g: GraphBuilder, x: Value | None, axis: int, size: int, keep: int) -> Value | None:
    """The first `keep` of x's `size` elements along axis (a static Gather, the same at every opset)."""
    if x is None or keep == size:
        return x
    return g.op("Gather", x, g.const(list(range(keep)), dtype=torch.int64), axis=axis)


def fft_c2r(g: GraphBuilder, x: Value, s, dim, norm: str | None, *, forward: bool) -> Value:
    """ATen's c2r transforms of a real x (imaginary part zero): a full complex DFT along all of dim
    but the last (inverse for irfftn; forward, then conjugated, for hfftn), then the inverse real
    DFT of the one-sided spectrum along the last, scaled by norm over the output's signal size."""
    if x.dtype.is_complex:
        raise NotImplementedError("FFTs of complex tensors: onnxruntime has no complex kernels")
    if x.shape is None or any(not isinstance(x.shape[d], int) for d in dim):
        raise NotImplementedError("FFTs are exported for static sizes along the transformed dims")
    if norm not in (None, "backward", "forward", "ortho"):
        raise NotImplementedError(f"FFT norm {norm!r}")
    rank = x.rank
    sizes = [x.shape[d] for d in dim]
    *lengths, last = [n if n != -1 else m for n, m in zip(s, sizes)] if s is not None else sizes
    if s is None or s[-1] == -1:
        last = 2 * (sizes[-1] - 1)
    if last < 1 or any(n < 1 for n in lengths):
        raise NotImplementedError("an FFT of no points")
    used = [min(m, n) for m, n in zip(sizes, lengths)] + [min(sizes[-1], last // 2 + 1)]
    if any(rows * n > MAX_MATRIX for rows, n in zip(used, lengths + [last])):
        raise NotImplementedError("an FFT too long for a dense DFT matrix")
    signal = math.prod(lengths) * last
    # backward normalizes the inverse transform (irfft), forward the forward one (hfft)
    scale = 1 / math.sqrt(signal) if norm == "ortho" else (1 / signal if (norm == "forward") == forward else 1.0)

    # the input is cut to the signal sizes, or zero-padded by the matrices having fewer rows
    real, imag = cast(g, x, torch.float64), None
    for axis, m, rows, n in zip(dim[:-1], sizes, used, lengths):
        real, imag = _first(g, real, axis, m, rows), _first(g, imag, axis, m, rows)
        cos, sin = _cos_sin(rows, n)
        sin = -sin if forward else sin
        rc, rs = _along(g, real, axis, rank, cos), _along(g, real, axis, rank, sin)
        if imag is None:
            real, imag = rc, rs
        else:
            ic, is_ = _along(g, imag, axis, rank, cos), _along(g, imag, axis, rank, sin)
            real, imag = g.op("Sub", rc, is_), g.op("Add", rs, ic)
    real, imag = _first(g, real, dim[-1], sizes[-1], used[-1]), _first(g, imag, dim[-1], sizes[-1], used[-1])
    re_w, im_w = _c2r_matrices(used[-1], last)
    out = _along(g, real, dim[-1], rank, re_w * scale)
    if imag is not None:  # hfftn conjugates before the real transform
        out = g.op("Add", out, _along(g, imag, dim[-1], rank, im_w * (-scale if forward else scale)))
    result = x.dtype if x.dtype.is_floating_point else torch.get_default_dtype()
    return cast(g, out, result)


def _dims(dim, rank: int, s) -> list[int]:
    """The transformed dims: all dims, or the last len(s) when dim is None, as ATen fills them in."""
    if dim is None:
        dim = list(range(rank - len(s), rank)) if s is not None else list(range(rank))
    dims = norm_dims(list(dim), rank)
    if not dims or len(set(dims)) != len(dims) or (s is not None and len(s) != len(dims)):
        raise NotImplementedError("FFT dims must be unique, nonempty and match s")
    return dims


@register("aten::fft_irfft.default")
def aten_fft_irfft(g, self, n=None, dim=-1, norm=None):
    """fft_irfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return fft_c2r(g, self, None if n is None else [n], _dims([dim], self.rank, None), norm, forward=False)


@register("aten::fft_hfft.default")
def aten_fft_hfft(g, self, n=None, dim=-1, norm=None):
    """fft_hfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return fft_c2r(g, self, None if n is None else [n], _dims([dim], self.rank, None), norm, forward=True)


@register("aten::fft_irfft2.default")
def aten_fft_irfft2(g, self, s=None, dim=[-2, -1], norm=None):
    """fft_irfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor"""
    return fft_c2r(g, self, s, _dims(dim, self.rank, s), norm, forward=False)


@register("aten::fft_hfft2.default")
def aten_fft_hfft2(g, self, s=None, dim=[-2, -1], norm=None):
    """fft_hfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor"""
    return fft_c2r(g, self, s, _dims(dim, self.rank, s), norm, forward=True)


@register("aten::fft_irfftn.default")
def aten_fft_irfftn(g, self, s=None, dim=None, norm=None):
    """fft_irfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"""
    return fft_c2r(g, self, s, _dims(dim, self.rank, s), norm, forward=False)


@register("aten::fft_hfftn.default")
def aten_fft_hfftn(g, self, s=None, dim=None, norm=None):
    """fft_hfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"""
    return fft_c2r(g, self, s, _dims(dim, self.rank, s), norm, forward=True)
