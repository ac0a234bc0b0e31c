"""Opset-9 base FFT math: DFT matrices in float64 (constants, or computed in the graph from the dim's
size where it is known only at run time), one MatMul per transformed dim, which read the same at every
opset; a complex tensor is a carrier (real pairs on a trailing axis), its pairs
interleaved along the transformed dim. Registered here: the FFTs of real tensors with real results
(irfft, hfft and their 2-D and N-D forms; stft with return_complex=False); those with a complex input
or result are in opset9_complex_fft.py."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._helpers import as_value, cast, dim_size, fill, norm_dims
from aten2onnx.symbolic.opset9_data import arange_of, int_clamp, int_mod, where

register = functools.partial(registry.register, opset=9)

# A DFT matrix above this many elements (128 MiB in float64) is declined rather than built: the
# model would approach protobuf's 2 GiB limit (an irfft of 4096 points needs 2049 x 4096).
MAX_MATRIX = 1 << 24

# ATen's fft_norm_mode: a transform's output is divided by nothing, sqrt(n) or n
NO_NORM, BY_ROOT_N, BY_N = 0, 1, 2


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


def complex_matrix(cos: torch.Tensor, sin: torch.Tensor, *, complex_in: bool) -> torch.Tensor:
    """The real matrix of y[k] = sum_t (cos + i*sin)[t, k] * x[t] on interleaved pairs: rows
    (re x[0], im x[0], re x[1], ...) for a complex x (re x[0], re x[1], ... for a real one), columns
    (re y[0], im y[0], re y[1], ...)."""
    rows, cols = cos.shape
    of_real = torch.stack([cos, sin], dim=-1)
    if not complex_in:
        return of_real.reshape(rows, 2 * cols)
    of_imag = torch.stack([-sin, cos], dim=-1)
    return torch.stack([of_real, of_imag], dim=1).reshape(2 * rows, 2 * cols)


def cos_sin_of(g: GraphBuilder, rows: int | Value, n: int | Value, cols: int | Value) -> tuple[Value, Value]:
    """_cos_sin(rows, n)[:, :cols] computed in the graph, for sizes known only at run time: the same
    float64 steps (the turns reduced mod n, exact zeros made so)."""
    i64, f64 = torch.int64, torch.float64
    n = as_value(g, n, i64)
    j = g.unsqueeze(arange_of(g, rows, has_range=False), [1])
    t = g.unsqueeze(arange_of(g, cols, has_range=False), [0])
    turns = int_mod(g, g.op("Mul", j, t), n)
    angles = g.op("Mul", cast(g, turns, f64), g.op("Div", g.const(2 * math.pi, dtype=f64), cast(g, n, f64)))
    zero = g.const(0.0, dtype=f64)
    quarter = g.equal(int_mod(g, g.op("Mul", turns, g.const(4, dtype=i64)), g.op("Mul", n, g.const(2, dtype=i64))), n)
    half = g.equal(int_mod(g, g.op("Mul", turns, g.const(2, dtype=i64)), n), g.const(0, dtype=i64))
    return g.op("Where", quarter, zero, g.op("Cos", angles)), g.op("Where", half, zero, g.op("Sin", angles))


def complex_matrix_of(g: GraphBuilder, cos: Value, sin: Value, cols: int | Value, *, complex_in: bool) -> Value:
    """complex_matrix of [rows, cols] graph values: the same layout, built by Concat and Reshape."""
    re, im = g.unsqueeze(cos, [2]), g.unsqueeze(sin, [2])
    of_real = g.op("Concat", re, im, axis=2)  # [rows, cols, 2]
    width = g.int_list([-1, cols * 2 if isinstance(cols, int) else g.op("Mul", cols, g.const(2, dtype=torch.int64))])
    if not complex_in:
        return g.op("Reshape", of_real, width)
    of_imag = g.op("Concat", g.op("Neg", im), re, axis=2)
    both = g.op("Concat", g.unsqueeze(of_real, [1]), g.unsqueeze(of_imag, [1]), axis=1)  # [rows, 2, cols, 2]
    return g.op("Reshape", both, width)


def scale_of(g: GraphBuilder, mode: int, n: int | Value) -> Value | float:
    """_scale for a length known only at run time: a 0-d float64 value (1.0 for no normalization)."""
    if mode == NO_NORM:
        return 1.0
    n = cast(g, as_value(g, n, torch.int64), torch.float64)
    return g.op("Div", g.const(1.0, dtype=torch.float64), g.op("Sqrt", n) if mode == BY_ROOT_N else n)


def dft_matrix_of(g: GraphBuilder, rows: int | Value, n: int | Value, cols: int | Value, mode: int, *,
                  inverse: bool, complex_in: bool) -> Value:
    """The matrix dft multiplies by along one dim (rows input points, n-point transform, cols bins),
    computed in the graph."""
    cos, sin = cos_sin_of(g, rows, n, cols)
    scale = scale_of(g, mode, n)
    if isinstance(scale, Value):
        cos, sin = g.op("Mul", cos, scale), g.op("Mul", sin, scale)
    if not inverse:
        sin = g.op("Neg", sin)
    return complex_matrix_of(g, cos, sin, cols, complex_in=complex_in)


def norm_mode(norm: str | None, *, inverse: bool) -> int:
    """ATen's normalization for a norm string: "backward" (the default) divides the inverse
    transform by n, "forward" the forward one, "ortho" both by sqrt(n)."""
    if norm not in (None, "backward", "forward", "ortho"):
        raise NotImplementedError(f"FFT norm {norm!r}")
    if norm == "ortho":
        return BY_ROOT_N
    return BY_N if (norm == "forward") != inverse else NO_NORM


def _scale(mode: int, n: int) -> float:
    return {NO_NORM: 1.0, BY_ROOT_N: 1 / math.sqrt(n), BY_N: 1 / n}[mode]


def _transpose(g: GraphBuilder, x: Value, perm: list[int]) -> Value:
    return x if perm == sorted(perm) else g.op("Transpose", x, perm=perm)


def along(g: GraphBuilder, x: Value, axis: int, rank: int, size: int | None, matrix: torch.Tensor | Value, *,
          complex_in: bool, complex_out: bool) -> Value:
    """x times matrix along one of its `rank` dims, of `size` points (a carrier's pairs interleaved
    with them, as complex_matrix lays them out). The matrix may cover only the first points; points
    whose rows are all zero are gathered away rather than multiplied by zero: cut-off bins and the
    ignored imaginary parts of c2r's DC and Nyquist bins change nothing even when infinite, as in
    pocketfft. A matrix the graph computes (a graph value) covers every point and has no zero row."""
    if isinstance(matrix, torch.Tensor) and matrix.numel() > MAX_MATRIX:
        raise NotImplementedError("an FFT too long for a dense DFT matrix")
    others = [d for d in range(rank) if d != axis]
    pair = [rank] if complex_in else []
    x = _transpose(g, x, others + [axis] + pair)
    if complex_in:  # [..., m, 2] -> [..., 2m]: (re, im) of each point in turn
        x = g.op("Reshape", x, g.const([0] * (rank - 1) + [-1], dtype=torch.int64))
    if isinstance(matrix, torch.Tensor):
        keep = torch.nonzero(matrix.abs().sum(dim=1)).flatten()
        if len(keep) == 0:  # an all-zero matrix: one point keeps the MatMul nonempty
            keep = torch.tensor([0])
        if len(keep) < size * (2 if complex_in else 1):
            x = g.op("Gather", x, g.const(keep), axis=rank - 1)
            matrix = matrix[keep]
        matrix = g.const(matrix)
    y = g.op("MatMul", x, matrix)
    layout = others + [axis]
    if complex_out:
        y = g.op("Reshape", y, g.const([0] * (rank - 1) + [-1, 2], dtype=torch.int64))
        layout = layout + [rank]
    return _transpose(g, y, [layout.index(d) for d in range(len(layout))])


def _sizes(x: Value, dims: list[int]) -> list[int]:
    shape = cx.logical_shape(x)
    if shape is None or any(not isinstance(shape[d], int) for d in dims):
        raise NotImplementedError("FFTs are exported for static sizes along the transformed dims")
    return [shape[d] for d in dims]


def _symbolic_sizes(g: GraphBuilder, x: Value, dims: list[int]) -> list[int | Value]:
    """The sizes of x's transformed dims: ints where static, 0-d int64 graph values where not."""
    if cx.logical_shape(x) is None:
        raise NotImplementedError("FFTs are exported for inputs of known rank")
    return [dim_size(g, x, d) for d in dims]


def _result(x: Value) -> torch.dtype:
    return x.dtype if x.dtype.is_floating_point else torch.get_default_dtype()


def dft(g: GraphBuilder, x: Value, dims: list[int], lengths: list[int], mode: int, *, inverse: bool,
        onesided: bool = False) -> Value:
    """The complex DFT (inverse: of the opposite sign) of x, a carrier or a real tensor, along dims,
    each cut or zero-padded to its signal length (None: the dim's size) and scaled by mode; onesided keeps the first
    n // 2 + 1 bins of the last dim (of a real x, which goes first), as r2c does. A carrier results.
    A dim whose size or signal length is known only at run time is cut to its length (Slice) and
    multiplied by a matrix computed in the graph."""
    rank = cx.logical_rank(x)
    sizes = _symbolic_sizes(g, x, dims)
    lengths = [m if n is None else n for m, n in zip(sizes, lengths)]
    if any(isinstance(n, int) and n < 1 for n in lengths):
        raise NotImplementedError("an FFT of no points")
    if onesided and x.complex:
        raise NotImplementedError("a one-sided FFT of a complex tensor")
    steps = list(zip(dims, sizes, lengths))
    if not x.complex:  # the real dim first, on half the work
        steps = steps[-1:] + steps[:-1]
    y, is_complex = cast(g, x, torch.float64), x.complex
    for axis, m, n in steps:
        if not (isinstance(m, int) and isinstance(n, int)):
            if n is not m:  # a signal length given: the first n points (fewer: the matrix pads with zeros)
                y = g.slice(y, [0], [n], [axis], [1])
                m = dim_size(g, y, axis)
            cols = n
            if onesided and axis == dims[-1]:
                cols = n // 2 + 1 if isinstance(n, int) else g.op(
                    "Add", g.op("Div", n, g.const(2, dtype=torch.int64)), g.const(1, dtype=torch.int64))
            matrix = dft_matrix_of(g, m, n, cols, mode, inverse=inverse, complex_in=is_complex)
            y, is_complex = along(g, y, axis, rank, None, matrix, complex_in=is_complex, complex_out=True), True
            continue
        cols = n // 2 + 1 if onesided and axis == dims[-1] else n
        cos, sin = _cos_sin(min(m, n), n)
        scale = _scale(mode, n)
        matrix = complex_matrix(scale * cos[:, :cols], (scale if inverse else -scale) * sin[:, :cols],
                                complex_in=is_complex)
        y, is_complex = along(g, y, axis, rank, m, matrix, complex_in=is_complex, complex_out=True), True
    return cast(g, y, _result(x))


def dft_to_real(g: GraphBuilder, x: Value, dims: list[int], lengths: list[int], mode: int, *,
                forward: bool) -> Value:
    """ATen's c2r transforms of x (a carrier, or a real tensor: its imaginary part zero): a complex
    DFT along all of dims but the last (inverse for irfftn; forward, then conjugated, for hfftn),
    then the inverse real DFT of the one-sided spectrum along the last, of length lengths[-1]."""
    rank = cx.logical_rank(x)
    sizes = _sizes(x, dims)
    if not all(isinstance(n, int) for n in lengths):
        raise NotImplementedError("c2r FFTs are exported for static signal lengths")
    if any(n < 1 for n in lengths):
        raise NotImplementedError("an FFT of no points")
    y, is_complex = cast(g, x, torch.float64), x.complex
    for axis, m, n in zip(dims[:-1], sizes, lengths):
        cos, sin = _cos_sin(min(m, n), n)
        scale = _scale(mode, n)
        matrix = complex_matrix(scale * cos, (-scale if forward else scale) * sin, complex_in=is_complex)
        y, is_complex = along(g, y, axis, rank, m, matrix, complex_in=is_complex, complex_out=True), True
    last = lengths[-1]
    re_w, im_w = _c2r_matrices(min(sizes[-1], last // 2 + 1), last)
    scale = _scale(mode, last)
    if is_complex:  # hfftn conjugates before the real transform
        matrix = torch.stack([scale * re_w, (-scale if forward else scale) * im_w], dim=1).flatten(0, 1)
    else:
        matrix = scale * re_w
    out = along(g, y, dims[-1], rank, sizes[-1], matrix, complex_in=is_complex, complex_out=False)
    return cast(g, out, _result(x))


def dims_of(dim, rank: int, s) -> list[int]:
    """The transformed dims: all dims, or the last len(s) when dim is None, as ATen fills them in."""
    if dim is None:
        dim = list(range(rank - len(s), rank)) if s is not None else list(range(rank))
    dims = norm_dims(list(dim), rank)
    if not dims or len(set(dims)) != len(dims) or (s is not None and len(s) != len(dims)):
        raise NotImplementedError("FFT dims must be unique, nonempty and match s")
    return dims


def signal_lengths(g: GraphBuilder, x: Value, dims: list[int], s) -> list[int | Value]:
    """The signal length per transformed dim: s where given (-1: the input's size), else the input's
    (a 0-d int64 graph value where it is known only at run time)."""
    sizes = _symbolic_sizes(g, x, dims)
    return sizes if s is None else [m if n == -1 else n for n, m in zip(s, sizes)]


def fftn(g: GraphBuilder, x: Value, s, dim, norm: str | None, *, inverse: bool, onesided: bool = False) -> Value:
    """fftn/ifftn (rfftn/ihfftn with onesided) and their 1-D and 2-D forms: ihfftn is the one-sided
    inverse transform of a real signal, conj(rfftn(x)) / n."""
    dims = dims_of(dim, cx.logical_rank(x), s)
    lengths = [None] * len(dims) if s is None else [None if isinstance(n, int) and n == -1 else n for n in s]
    return dft(g, x, dims, lengths, norm_mode(norm, inverse=inverse), inverse=inverse,
               onesided=onesided)


def irfftn(g: GraphBuilder, x: Value, s, dim, norm: str | None, *, forward: bool) -> Value:
    """irfftn (hfftn with forward) and their 1-D and 2-D forms: the last dim's signal is 2 * (m - 1)
    points unless s gives it; backward normalizes irfftn, forward hfftn."""
    dims = dims_of(dim, cx.logical_rank(x), s)
    lengths = signal_lengths(g, x, dims, s)
    if s is None or s[-1] == -1:
        lengths[-1] = 2 * (_sizes(x, dims)[-1] - 1)
    return dft_to_real(g, x, dims, lengths, norm_mode(norm, inverse=not forward), forward=forward)


@register("aten::fft_irfft.default")
def aten_fft_irfft(g, self, n=None, dim=-1, norm=None):
    """fft_irfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return irfftn(g, self, None if n is None else [n], [dim], norm, forward=False)


@register("aten::fft_hfft.default")
def aten_fft_hfft(g, self, n=None, dim=-1, norm=None):
    """fft_hfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor"""
    return irfftn(g, self, None if n is None else [n], [dim], norm, forward=True)


@register("aten::fft_irfft2.default")
def aten_fft_irfft2(g, self, s=None, dim=[-2, -1], norm=None):
    """fft_irfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor"""
    return irfftn(g, self, s, dim, norm, forward=False)


@register("aten::fft_hfft2.default")
def aten_fft_hfft2(g, self, s=None, dim=[-2, -1], norm=None):
    """fft_hfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor"""
    return irfftn(g, self, s, dim, norm, forward=True)


@register("aten::fft_irfftn.default")
def aten_fft_irfftn(g, self, s=None, dim=None, norm=None):
    """fft_irfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"""
    return irfftn(g, self, s, dim, norm, forward=False)


@register("aten::fft_hfftn.default")
def aten_fft_hfftn(g, self, s=None, dim=None, norm=None):
    """fft_hfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor"""
    return irfftn(g, self, s, dim, norm, forward=True)


# -- the short-time Fourier transform ---------------------------------------------------------------


def zeros_along(g: GraphBuilder, x: Value, rank: int, axis: int, count: int) -> Value:
    """Zeros of x's shape (x of `rank` axes) but `count` along axis."""
    if x.is_static:
        return fill(g, [count if d == axis else size for d, size in enumerate(x.shape)], 0, x.dtype)
    shape = g.op("Shape", x)
    pieces = [g.const([count], dtype=torch.int64)]
    if axis > 0:
        pieces.insert(0, g.op("Gather", shape, g.const(list(range(axis)), dtype=torch.int64), axis=0))
    if axis < rank - 1:
        pieces.append(g.op("Gather", shape, g.const(list(range(axis + 1, rank)), dtype=torch.int64), axis=0))
    return fill(g, g.op("Concat", *pieces, axis=0), 0, x.dtype)


def pair_parts(g: GraphBuilder, x: Value, is_complex: bool) -> tuple[Value, cx.Part]:
    """cx.parts of a value made here (which the builder has not tagged complex): is_complex says."""
    if not is_complex:
        return cx.lift(g, x), None
    return (g.op("Gather", x, g.const([0], dtype=torch.int64), axis=-1),
            g.op("Gather", x, g.const([1], dtype=torch.int64), axis=-1))


def window_times(g: GraphBuilder, frames: Value, window: Value, *, complex_frames: bool) -> Value:
    """frames (the window's axis last, or last but the pairs of a carrier) times the window, real or
    complex."""
    complex_window, window = window.complex, cast(g, window, torch.float64)
    if not complex_window:
        return g.op("Mul", frames, cx.lift(g, window) if complex_frames else window)
    return cx.pack(g, *cx.complex_mul(g, pair_parts(g, frames, complex_frames), pair_parts(g, window, True)))


def stft(g: GraphBuilder, x: Value, n_fft: int, hop_length, win_length, window: Value | None, normalized: bool,
         onesided, return_complex, align_to_window, *, center: bool = False, pad_mode: str = "reflect") -> Value:
    """The windowed DFTs of x's frames, [..., bins, frames] (as real pairs for return_complex=False):
    one Gather takes every frame's windowed samples (through center's padding, by index), the window
    multiplies them, and the DFT matrix of their positions in the n_fft-point frame transforms them."""
    rank = cx.logical_rank(x)
    if rank not in (1, 2):
        raise NotImplementedError("stft of a tensor not 1-D or 2-D")
    length = dim_size(g, x, rank - 1) if x.shape is not None else None
    if not isinstance(length, (int, Value)):
        raise NotImplementedError("stft of a tensor of unknown rank")
    hop = hop_length if hop_length is not None else n_fft // 4
    win = win_length if win_length is not None else n_fft
    left = (n_fft - win) // 2
    is_complex = x.complex or (window is not None and window.complex)
    onesided = not is_complex if onesided is None else onesided
    if onesided and is_complex:
        raise NotImplementedError("a one-sided stft of a complex signal or window")
    pad = n_fft // 2 if center else (left if align_to_window else 0)
    if isinstance(length, Value):
        if not (0 < win <= n_fft and hop > 0):
            raise NotImplementedError("stft sizes that eager rejects")
        y = _frames_of(g, x, rank, length, n_fft, hop, win, left, pad, pad_mode)
        return _stft_frames(g, x, y, rank, window, n_fft, win, left, onesided, is_complex, normalized)
    frames = 1 + (length + 2 * pad - n_fft) // hop
    if not (0 < win <= n_fft <= length + 2 * pad and hop > 0 and frames > 0):
        raise NotImplementedError("stft sizes that eager rejects")
    # where each frame's windowed samples come from, in the padded signal, then in x
    padded = (torch.arange(frames).unsqueeze(1) * hop + left + torch.arange(win)).flatten()
    y = x
    if pad and pad_mode == "constant":
        y = g.op("Concat", x, zeros_along(g, x, x.rank, rank - 1, 1), axis=rank - 1)
        source = F.pad(torch.arange(length, dtype=torch.float64), [pad, pad], value=length)
    elif pad:
        source = F.pad(torch.arange(length, dtype=torch.float64).view(1, 1, -1), [pad, pad], mode=pad_mode).flatten()
    else:
        source = torch.arange(length, dtype=torch.float64)
    index = source.to(torch.int64)[padded].reshape(frames, win)
    y = g.op("Gather", cast(g, y, torch.float64), g.const(index), axis=rank - 1)  # [..., frames, win]
    return _stft_frames(g, x, y, rank, window, n_fft, win, left, onesided, is_complex, normalized)


def _frames_of(g: GraphBuilder, x: Value, rank: int, length: Value, n_fft: int, hop: int, win: int, left: int,
               pad: int, pad_mode: str) -> Value:
    """stft's Gather of every frame's windowed samples for a signal length known only at run time:
    the positions in the padded signal computed in the graph, then mapped into x (reflected, clamped
    or, for constant padding, sent to a zero appended to x)."""
    i64 = torch.int64
    length = as_value(g, length, i64)
    frames = g.op("Add", g.op("Div", g.op("Add", length, g.const(2 * pad - n_fft, dtype=i64)), g.const(hop, dtype=i64)),
                  g.const(1, dtype=i64))
    starts = g.op("Mul", arange_of(g, frames, has_range=False), g.const(hop, dtype=i64))
    source = g.op("Add", g.unsqueeze(starts, [1]), g.const(torch.arange(win).unsqueeze(0) + left - pad))
    y = cast(g, x, torch.float64)
    if pad:
        below, last = g.op("Less", source, g.const(0, dtype=i64)), g.op("Sub", length, g.const(1, dtype=i64))
        above = g.op("Greater", source, last)
        if pad_mode == "constant":  # both sides read the zero appended at index length
            y = g.op("Concat", y, zeros_along(g, y, y.rank, rank - 1, 1), axis=rank - 1)
            source = where(g, g.op("Or", below, above), length, source)
        elif pad_mode == "replicate":
            source = int_clamp(g, source, 0, last)
        elif pad_mode == "reflect":
            source = where(g, below, g.op("Neg", source), source)
            source = where(g, above, g.op("Sub", g.op("Mul", last, g.const(2, dtype=i64)), source), source)
        else:
            raise NotImplementedError(f"stft's {pad_mode!r} padding of a signal of symbolic length")
    return g.op("Gather", y, source, axis=rank - 1)  # [..., frames, win]


def _stft_frames(g: GraphBuilder, x: Value, y: Value, rank: int, window: Value | None, n_fft: int, win: int,
                 left: int, onesided: bool, is_complex: bool, normalized: bool) -> Value:
    """stft's windowing and DFT of the gathered frames y [..., frames, win]."""
    if window is not None:
        y = window_times(g, y, window, complex_frames=x.complex)
    cols = n_fft // 2 + 1 if onesided else n_fft
    cos, sin = _cos_sin(left + win, n_fft)
    scale = 1 / math.sqrt(n_fft) if normalized else 1.0
    matrix = complex_matrix(scale * cos[left:, :cols], -scale * sin[left:, :cols], complex_in=is_complex)
    y = along(g, y, rank, rank + 1, win, matrix, complex_in=is_complex, complex_out=True)
    y = g.op("Transpose", y, perm=list(range(rank - 1)) + [rank, rank - 1, rank + 1])
    return cast(g, y, _result(x))


@register("aten::stft.default")
def aten_stft(g, self, n_fft, hop_length=None, win_length=None, window=None, normalized=False, onesided=None,
              return_complex=None, align_to_window=None):
    """stft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor"""
    return stft(g, self, n_fft, hop_length, win_length, window, normalized, onesided, return_complex,
                align_to_window)


@register("aten::stft.center")
def aten_stft_center(g, self, n_fft, hop_length=None, win_length=None, window=None, center=True,
                     pad_mode="reflect", normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """stft.center(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, str pad_mode="reflect", bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor"""
    return stft(g, self, n_fft, hop_length, win_length, window, normalized, onesided, return_complex,
                align_to_window, center=center, pad_mode=pad_mode)
