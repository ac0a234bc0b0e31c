"""Opset-9 base for FFTs with a complex input or result (carried as real pairs): fft, ifft, rfft, ihfft
and their 2-D and N-D forms, irfft and hfft of complex spectra, ATen's r2c/c2c/c2r primitives, stft,
istft and the FFT shifts, on opset9_fft's DFT matrices, which read the same at every opset."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _complex as cx, opset9_fft
from aten2onnx.symbolic._carrier import real_symbolic
from aten2onnx.symbolic._helpers import cast, norm_dims
from aten2onnx.symbolic.opset9_fft import (
    BY_N,
    BY_ROOT_N,
    _c2r_matrices,
    _cos_sin,
    _scale,
    _sizes,
    along,
    complex_matrix,
    dft,
    dft_to_real,
    fftn,
    pair_parts,
    zeros_along,
)
from aten2onnx.symbolic.opset9_special import fft_shift

register = functools.partial(registry.register, opset=9, complex=True)


# -- complex results: fft, ifft, rfft, ihfft ----------------------------------------------------------


@register("aten::fft_fft.default")
def aten_fft_fft(g, self, n=None, dim=-1, norm=None):
    """fft_fft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return fftn(g, self, None if n is None else [n], [dim], norm, inverse=False)


@register("aten::fft_ifft.default")
def aten_fft_ifft(g, self, n=None, dim=-1, norm=None):
    """fft_ifft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return fftn(g, self, None if n is None else [n], [dim], norm, inverse=True)


@register("aten::fft_rfft.default")
def aten_fft_rfft(g, self, n=None, dim=-1, norm=None):
    """fft_rfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return fftn(g, self, None if n is None else [n], [dim], norm, inverse=False, onesided=True)


@register("aten::fft_ihfft.default")
def aten_fft_ihfft(g, self, n=None, dim=-1, norm=None):
    """fft_ihfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return fftn(g, self, None if n is None else [n], [dim], norm, inverse=True, onesided=True)


@register("aten::fft_fft2.default")
def aten_fft_fft2(g, self, s=None, dim=[-2, -1], norm=None):
    """fft_fft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor"""
    return fftn(g, self, s, dim, norm, inverse=False)


@register("aten::fft_ifft2.default")
def aten_fft_ifft2(g, self, s=None, dim=[-2, -1], norm=None):
    """fft_ifft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor"""
    return fftn(g, self, s, dim, norm, inverse=True)


@register("aten::fft_rfft2.default")
def aten_fft_rfft2(g, self, s=None, dim=[-2, -1], norm=None):
    """fft_rfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor"""
    return fftn(g, self, s, dim, norm, inverse=False, onesided=True)


@register("aten::fft_ihfft2.default")
def aten_fft_ihfft2(g, self, s=None, dim=[-2, -1], norm=None):
    """fft_ihfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor"""
    return fftn(g, self, s, dim, norm, inverse=True, onesided=True)


@register("aten::fft_fftn.default")
def aten_fft_fftn(g, self, s=None, dim=None, norm=None):
    """fft_fftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"""
    return fftn(g, self, s, dim, norm, inverse=False)


@register("aten::fft_ifftn.default")
def aten_fft_ifftn(g, self, s=None, dim=None, norm=None):
    """fft_ifftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"""
    return fftn(g, self, s, dim, norm, inverse=True)


@register("aten::fft_rfftn.default")
def aten_fft_rfftn(g, self, s=None, dim=None, norm=None):
    """fft_rfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"""
    return fftn(g, self, s, dim, norm, inverse=False, onesided=True)


@register("aten::fft_ihfftn.default")
def aten_fft_ihfftn(g, self, s=None, dim=None, norm=None):
    """fft_ihfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"""
    return fftn(g, self, s, dim, norm, inverse=True, onesided=True)


# -- real results of complex spectra: irfft, hfft -----------------------------------------------------

# opset9_fft's handlers read a real spectrum or a carrier alike, so they serve complex input too.
register("aten::fft_irfft.default")(opset9_fft.aten_fft_irfft)
register("aten::fft_hfft.default")(opset9_fft.aten_fft_hfft)
register("aten::fft_irfft2.default")(opset9_fft.aten_fft_irfft2)
register("aten::fft_hfft2.default")(opset9_fft.aten_fft_hfft2)
register("aten::fft_irfftn.default")(opset9_fft.aten_fft_irfftn)
register("aten::fft_hfftn.default")(opset9_fft.aten_fft_hfftn)


# -- ATen's primitives (what the fft_* ops decompose to) ----------------------------------------------


@register("aten::_fft_r2c.default")
def aten__fft_r2c(g, self, dim, normalization, onesided):
    """_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor"""
    dims = norm_dims(dim, cx.logical_rank(self))
    return dft(g, self, dims, [None] * len(dims), normalization, inverse=False, onesided=onesided)


@register("aten::_fft_c2c.default")
def aten__fft_c2c(g, self, dim, normalization, forward):
    """_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor"""
    dims = norm_dims(dim, cx.logical_rank(self))
    return dft(g, self, dims, [None] * len(dims), normalization, inverse=not forward)


@register("aten::_fft_c2r.default")
def aten__fft_c2r(g, self, dim, normalization, last_dim_size):
    """_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor"""
    dims = norm_dims(dim, cx.logical_rank(self))
    if not isinstance(last_dim_size, int):
        raise NotImplementedError("FFTs are exported for static sizes along the transformed dims")
    return dft_to_real(g, self, dims, _sizes(self, dims)[:-1] + [last_dim_size], normalization, forward=False)


# -- short-time transforms ----------------------------------------------------------------------------


# opset9_fft's stft reads a real or a complex signal and window alike.
register("aten::stft.default")(opset9_fft.aten_stft)
register("aten::stft.center")(opset9_fft.aten_stft_center)


def _padded_window(g: GraphBuilder, window: Value | None, left: int, win: int, width: int) -> Value | None:
    """The window (a carrier if complex) zero-padded from win to width points, starting at left;
    None for a rectangular one of all width points, which needs no multiplying."""
    if window is None:
        if win == width:
            return None
        return g.const(torch.cat([torch.zeros(left), torch.ones(win), torch.zeros(width - left - win)]).double())
    pair = [2] if window.complex else []
    pieces = [cast(g, window, torch.float64)]
    if left:
        pieces.insert(0, g.const(torch.zeros([left] + pair, dtype=torch.float64)))
    if width - left - win:
        pieces.append(g.const(torch.zeros([width - left - win] + pair, dtype=torch.float64)))
    return g.op("Concat", *pieces, axis=0) if len(pieces) > 1 else pieces[0]


def _overlap_add(g: GraphBuilder, frames: Value, batch: int, count: int, blocks: int, hop: int,
                 pair: list[int]) -> Value:
    """Frames [..., count, blocks * hop] (pairs after) overlap-added at hop apart, [..., T] with
    T = (count + blocks - 1) * hop: each block of hop samples is added in at its offset, padded by
    zero frames to the full length (Concat and Add, the same at every opset)."""
    rank = batch + 2 + len(pair)
    split = g.op("Reshape", frames, g.const([0] * batch + [count, blocks, hop] + pair, dtype=torch.int64))
    total = None
    for c in range(blocks):
        block = g.op("Gather", split, g.const(c, dtype=torch.int64), axis=batch + 1)  # [..., count, hop]
        pieces = [block]
        if c:
            pieces.insert(0, zeros_along(g, block, rank, batch, c))
        if blocks - 1 - c:
            pieces.append(zeros_along(g, block, rank, batch, blocks - 1 - c))
        placed = g.op("Concat", *pieces, axis=batch) if len(pieces) > 1 else block
        total = placed if total is None else g.op("Add", total, placed)
    return g.op("Reshape", total, g.const([0] * batch + [-1] + pair, dtype=torch.int64))


def _divide(g: GraphBuilder, a: tuple[Value, Value], b: tuple[Value, Value]) -> tuple[Value, Value]:
    """(ar + i ai) / (br + i bi) on parts."""
    (ar, ai), (br, bi) = a, b
    denominator = g.op("Add", g.op("Mul", br, br), g.op("Mul", bi, bi))
    re = g.op("Add", g.op("Mul", ar, br), g.op("Mul", ai, bi))
    im = g.op("Sub", g.op("Mul", ai, br), g.op("Mul", ar, bi))
    return g.op("Div", re, denominator), g.op("Div", im, denominator)


@register("aten::istft.default")
def aten_istft(g, self, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
               onesided=None, length=None, return_complex=False):
    """istft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, bool normalized=False, bool? onesided=None, int? length=None, bool return_complex=False) -> Tensor"""
    rank = cx.logical_rank(self)
    if not self.complex or rank not in (2, 3):
        raise NotImplementedError("istft of a tensor not complex 2-D or 3-D")
    bins, count = _sizes(self, [rank - 2, rank - 1])
    hop = hop_length if hop_length is not None else n_fft // 4
    win = win_length if win_length is not None else n_fft
    left = (n_fft - win) // 2
    onesided = bins != n_fft if onesided is None else onesided
    if not (0 < hop <= win <= n_fft and bins == (n_fft // 2 + 1 if onesided else n_fft)):
        raise NotImplementedError("istft sizes that eager rejects")
    complex_window = window is not None and window.complex
    if onesided and return_complex or complex_window and not return_complex:
        raise NotImplementedError("istft with a one-sided complex result, or a complex window and a real one")
    batch = rank - 2
    blocks = -(-n_fft // hop)  # each frame padded to whole hops
    width = blocks * hop
    # the frames: the inverse DFT of each column, [..., frames, width] (zero past n_fft)
    y = g.op("Transpose", cast(g, self, torch.float64), perm=list(range(batch)) + [rank - 1, rank - 2, rank])
    scale = _scale(BY_ROOT_N if normalized else BY_N, n_fft)
    if return_complex:
        cos, sin = _cos_sin(bins, n_fft)
        matrix = complex_matrix(scale * cos, scale * sin, complex_in=True)
    else:
        re_w, im_w = _c2r_matrices(min(bins, n_fft // 2 + 1), n_fft)
        matrix = torch.stack([scale * re_w, scale * im_w], dim=1).flatten(0, 1)
    matrix = torch.nn.functional.pad(matrix, [0, (width - n_fft) * (2 if return_complex else 1)])
    y = along(g, y, rank - 1, rank, bins, matrix, complex_in=True, complex_out=return_complex)
    pair = [2] if return_complex else []
    window_ = _padded_window(g, window, left, win, width)
    if complex_window:
        y = cx.pack(g, *cx.complex_mul(g, pair_parts(g, y, True), pair_parts(g, window_, True)))
    elif window_ is not None:
        y = g.op("Mul", y, cx.lift(g, window_) if return_complex else window_)
    y = _overlap_add(g, y, batch, count, blocks, hop, pair)
    # the squared window overlap-added the same way: what each output sample was multiplied by
    spread = torch.zeros(count + blocks - 1, blocks, dtype=torch.float64)
    for c in range(blocks):
        spread[c:c + count, c] = 1.0
    if window_ is None:
        envelope = g.const((spread @ torch.ones(blocks, hop, dtype=torch.float64)).flatten())
    else:
        if complex_window:  # squared as a complex number, as eager does
            squared = cx.pack(g, *cx.complex_mul(g, pair_parts(g, window_, True), pair_parts(g, window_, True)))
        else:
            squared = g.op("Mul", window_, window_)
        squared = g.op("Reshape", squared, g.const([blocks, -1], dtype=torch.int64))
        envelope = g.op("MatMul", g.const(spread), squared)
        envelope = g.op("Reshape", envelope, g.const([-1] + ([2] if complex_window else []), dtype=torch.int64))
    expected = n_fft + hop * (count - 1)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (expected - n_fft // 2 if center else expected)
    stop = min(end, expected)
    if stop <= start:
        raise NotImplementedError("an istft of no samples")
    index = g.const(list(range(start, stop)), dtype=torch.int64)
    envelope = g.op("Gather", envelope, index, axis=0)
    y = g.op("Gather", y, index, axis=batch)
    if complex_window:
        y = cx.pack(g, *_divide(g, pair_parts(g, y, True), pair_parts(g, envelope, True)))
    else:
        y = g.op("Div", y, cx.lift(g, envelope) if return_complex else envelope)
    if end > stop:  # eager pads a length past the signal with zeros
        y = g.op("Concat", y, zeros_along(g, y, batch + 1 + len(pair), batch, end - stop), axis=batch)
    return cast(g, y, self.dtype)


# -- shifts -----------------------------------------------------------------------------------------


@register("aten::fft_fftshift.default")
def aten_fft_fftshift(g, self, dim=None):
    """fft_fftshift(Tensor self, int[1]? dim=None) -> Tensor"""
    return fft_shift(g, self, dim, 1, real_symbolic(g, "aten::roll.default"))


@register("aten::fft_ifftshift.default")
def aten_fft_ifftshift(g, self, dim=None):
    """fft_ifftshift(Tensor self, int[1]? dim=None) -> Tensor"""
    return fft_shift(g, self, dim, -1, real_symbolic(g, "aten::roll.default"))
