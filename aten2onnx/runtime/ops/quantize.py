"""Linear quantization: QuantizeLinear, DequantizeLinear (per tensor, per axis, per block),
DynamicQuantizeLinear, QLinearMatMul, MatMulInteger's convolution twin ConvInteger, QLinearConv; onnxruntime's contrib
MatMulNBits (what export(optimize="onnxruntime") writes for a 4-bit weight's matmul)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from onnx import TensorProto

from aten2onnx import _dtypes
from aten2onnx.runtime.kernel import Kernel, kernel, runtime_dtype
from aten2onnx.runtime.ops import _narrow
from aten2onnx.runtime.ops._util import norm_axis
from aten2onnx.runtime.ops.cast import cast
from aten2onnx.runtime.ops.nn import Conv


def _broadcast_param(p: torch.Tensor, x: torch.Tensor, axis: int, block_size: int) -> torch.Tensor:
    """A scale or zero point shaped to broadcast against x: scalar, per axis (1-D), or per block."""
    if p.dim() == 0 or p.numel() == 1 and p.dim() <= 1:
        return p.reshape(())
    axis = norm_axis(axis, x.dim())
    if block_size:
        return p.repeat_interleave(block_size, axis).narrow(axis, 0, x.shape[axis])
    shape = [1] * x.dim()
    shape[axis] = -1
    return p.reshape(shape)


def _quantize(x: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor | None, *, axis: int, block_size: int,
              out_type: int, saturate: bool, precision: int = 0) -> torch.Tensor:
    """saturate(x / scale + zero_point) as element type out_type. The division is in the `precision` type, else
    in the scale's type (as the spec says; float32 for an int32 or float8e8m0 scale, which cannot hold a
    quotient); integers round it to nearest even and clamp to their range (a NaN: undefined in ONNX, here the
    zero point); floats cast with ONNX's saturation rules (ops/_narrow.py)."""
    work = runtime_dtype(precision) if precision else scale.dtype
    if not work.is_floating_point or work.itemsize == 1:
        work = torch.float32
    y = x.to(work) / _broadcast_param(_widened(scale), x, axis, block_size).to(work)
    zero = None if zero_point is None else _broadcast_param(_widened(zero_point), x, axis, block_size).to(torch.float64)
    limits = _INT_RANGES.get(out_type) or (_narrow.int_range(out_type) if out_type in _narrow.INTS else None)
    if limits is None:  # a float type: the zero point is usually 0, but the formula stays the same
        if zero is not None:  # where it is 0, x / scale as it is: adding +0 would turn a -0 into +0
            y = torch.where(zero == 0, y.to(torch.float64), y.to(torch.float64) + zero)
        return cast(y, out_type, saturate)
    q = torch.nan_to_num(torch.round(y).to(torch.float64), nan=0.0)
    if zero is not None:
        q = q + zero
    return q.clamp(*limits).to(runtime_dtype(out_type))


def _widened(p: torch.Tensor) -> torch.Tensor:
    """A scale or zero point in a dtype torch can broadcast and compute with (float8 as float32, exact)."""
    return p.to(torch.float32) if p.dtype.is_floating_point and p.dtype.itemsize == 1 else p


_INT_RANGES = {TensorProto.UINT8: (0, 255), TensorProto.INT8: (-128, 127), TensorProto.UINT16: (0, 65535),
               TensorProto.INT16: (-32768, 32767)}


def _quantize_node(k: Kernel, x, y_scale, y_zero_point, *, axis: int = 1, block_size: int = 0, output_dtype: int = 0,
                   saturate: bool = True, precision: int = 0) -> tuple[torch.Tensor]:
    """The output type is output_dtype, else the zero point's (as planned: an int4 is held as int8), else uint8."""
    zero_type = k.input_type(2, y_zero_point) if y_zero_point is not None else None
    if output_dtype and zero_type and output_dtype != zero_type:
        raise ValueError(f"output_dtype {TensorProto.DataType.Name(output_dtype)} is not the zero point's type, "
                         f"{TensorProto.DataType.Name(zero_type)}")
    out_type = output_dtype or zero_type or TensorProto.UINT8
    return (_quantize(x, y_scale, y_zero_point, axis=axis, block_size=block_size, out_type=out_type,
                      saturate=saturate, precision=precision),)


@kernel("QuantizeLinear", since=10, until=13)
class QuantizeLinear10(Kernel):
    def run(self, x, y_scale, y_zero_point=None):
        return _quantize_node(self, x, y_scale, y_zero_point)


@kernel("QuantizeLinear", since=13, until=19)  # 13: per-axis scales
class QuantizeLinear13(Kernel):
    def setup(self, axis: int = 1) -> None:
        self.axis = axis

    def run(self, x, y_scale, y_zero_point=None):
        return _quantize_node(self, x, y_scale, y_zero_point, axis=self.axis)


@kernel("QuantizeLinear", since=19, until=21)  # 19: float8 and saturate
class QuantizeLinear19(Kernel):
    def setup(self, axis: int = 1, saturate: int = 1) -> None:
        self.axis, self.saturate = axis, bool(saturate)

    def run(self, x, y_scale, y_zero_point=None):
        return _quantize_node(self, x, y_scale, y_zero_point, axis=self.axis, saturate=self.saturate)


@kernel("QuantizeLinear", since=21, until=23)  # 21: block_size, output_dtype, int4/uint4
class QuantizeLinear21(Kernel):
    def setup(self, axis: int = 1, block_size: int = 0, output_dtype: int = 0, saturate: int = 1) -> None:
        self.attrs = dict(axis=axis, block_size=_block(block_size), output_dtype=_out_type(output_dtype),
                          saturate=bool(saturate))

    def run(self, x, y_scale, y_zero_point=None):
        return _quantize_node(self, x, y_scale, y_zero_point, **self.attrs)


@kernel("QuantizeLinear", since=23)  # 23: precision, float4e2m1; 24: float8e8m0 scales; 25: int2/uint2; 28: float6
class QuantizeLinear(Kernel):
    def setup(self, axis: int = 1, block_size: int = 0, output_dtype: int = 0, saturate: int = 1,
              precision: int = 0) -> None:
        if precision:
            runtime_dtype(precision)
        self.attrs = dict(axis=axis, block_size=_block(block_size), output_dtype=_out_type(output_dtype),
                          saturate=bool(saturate), precision=precision)

    def run(self, x, y_scale, y_zero_point=None):
        return _quantize_node(self, x, y_scale, y_zero_point, **self.attrs)


def _block(block_size: int) -> int:
    if block_size < 0:
        raise ValueError(f"block_size must be positive, not {block_size}")
    return block_size


def _out_type(elem_type: int) -> int:
    if elem_type:
        runtime_dtype(elem_type)  # a type the runtime has no dtype for fails at session creation
    return elem_type


def _dequantize(x: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor | None, *, axis: int,
                block_size: int, out_dtype: torch.dtype | None) -> torch.Tensor:
    """(x - zero_point) * scale, computed in float32 and rounded once to the output type (output_dtype, else the
    scale's): the spec multiplies in the output type, which this equals wherever x - zero_point and the scale are
    values of it (an 8-bit or narrower x; int16 and int32 are rounded to float32 first, as the reference does)."""
    out_dtype = out_dtype or scale.dtype
    if not out_dtype.is_floating_point or out_dtype.itemsize == 1:
        raise ValueError(f"DequantizeLinear's output cannot be {out_dtype}; a float8e8m0 scale needs output_dtype")
    y = _widened(x).to(torch.float32)
    if zero_point is not None:
        y = y - _broadcast_param(_widened(zero_point), x, axis, block_size).to(torch.float32)
    return (y * _broadcast_param(_widened(scale), x, axis, block_size).to(torch.float32)).to(out_dtype)


@kernel("DequantizeLinear", since=10, until=13)
class DequantizeLinear10(Kernel):
    def run(self, x, x_scale, x_zero_point=None):
        return (_dequantize(x, x_scale, x_zero_point, axis=1, block_size=0, out_dtype=None),)


@kernel("DequantizeLinear", since=13, until=21)  # 13: per-axis scales; 19: float8
class DequantizeLinear13(Kernel):
    def setup(self, axis: int = 1) -> None:
        self.axis = axis

    def run(self, x, x_scale, x_zero_point=None):
        return (_dequantize(x, x_scale, x_zero_point, axis=self.axis, block_size=0, out_dtype=None),)


@kernel("DequantizeLinear", since=21, until=23)  # 21: block_size, int4/uint4
class DequantizeLinear21(Kernel):
    def setup(self, axis: int = 1, block_size: int = 0) -> None:
        self.axis, self.block_size = axis, _block(block_size)

    def run(self, x, x_scale, x_zero_point=None):
        return (_dequantize(x, x_scale, x_zero_point, axis=self.axis, block_size=self.block_size, out_dtype=None),)


@kernel("DequantizeLinear", since=23)  # 23: output_dtype, float4e2m1; 24: float8e8m0 scales; 25: int2/uint2; 28: float6
class DequantizeLinear(Kernel):
    def setup(self, axis: int = 1, block_size: int = 0, output_dtype: int = 0) -> None:
        self.axis, self.block_size = axis, _block(block_size)
        self.out_dtype = runtime_dtype(output_dtype) if output_dtype else None

    def run(self, x, x_scale, x_zero_point=None):
        return (_dequantize(x, x_scale, x_zero_point, axis=self.axis, block_size=self.block_size,
                            out_dtype=self.out_dtype),)


@kernel("DynamicQuantizeLinear", since=11)
class DynamicQuantizeLinear(Kernel):
    def run(self, x):
        lo = torch.clamp(torch.amin(x), max=0.0)
        hi = torch.clamp(torch.amax(x), min=0.0)
        scale = (hi - lo) / 255.0
        zero_point = torch.clamp(torch.round(-lo / scale), 0, 255).to(torch.uint8)
        y = torch.clamp(torch.round(x / scale) + zero_point.to(torch.float32), 0, 255).to(torch.uint8)
        return y, scale.to(x.dtype), zero_point


@kernel("QLinearMatMul", since=10)
class QLinearMatMul(Kernel):
    def run(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
        fa = (a.to(torch.float32) - _vec(a_zero_point, a, -2)) * _vec(a_scale, a, -2)
        fb = (b.to(torch.float32) - _vec(b_zero_point, b, -1)) * _vec(b_scale, b, -1)
        y = torch.matmul(fa, fb)
        return (_quantize(y, y_scale, y_zero_point, axis=1, block_size=0, out_type=self.input_type(7, y_zero_point),
                          saturate=True),)


def _vec(p: torch.Tensor, x: torch.Tensor, axis: int) -> torch.Tensor:
    """A per-row (axis -2) or per-column (axis -1) parameter as a broadcastable float tensor."""
    p = p.to(torch.float32)
    if p.numel() == 1:
        return p.reshape(())
    return p.reshape(-1, 1) if axis == -2 else p.reshape(-1)


@kernel("ConvInteger", since=10)
class ConvInteger(Kernel):
    def setup(self, auto_pad: str = "NOTSET", dilations: list[int] | None = None, group: int = 1,
              kernel_shape: list[int] | None = None, pads: list[int] | None = None,
              strides: list[int] | None = None) -> None:
        self.conv = Conv(self.ctx, self.node, auto_pad=auto_pad, dilations=dilations, group=group,
                         kernel_shape=kernel_shape, pads=pads, strides=strides)

    def run(self, x, w, x_zero_point=None, w_zero_point=None):
        return (self.conv.run(*_centred(x, x_zero_point, w, w_zero_point))[0].round().to(torch.int32),)


@kernel("QLinearConv", since=10)
class QLinearConv(ConvInteger):
    """ConvInteger's exact integer sums, plus the int32 bias (quantized with scale x_scale * w_scale), requantized
    as QuantizeLinear does: (x_scale * w_scale / y_scale) times the sum, rounded to nearest even, plus y's zero
    point, saturated. w_scale may be one per output channel."""

    def run(self, x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None):
        acc = self.conv.run(*_centred(x, x_zero_point, w, w_zero_point))[0]
        shape = [1, -1] + [1] * (acc.dim() - 2)
        if B is not None:
            acc = acc + B.to(torch.float64).reshape(shape)
        scale = x_scale.to(torch.float64) * w_scale.to(torch.float64).reshape(shape if w_scale.numel() > 1 else ())
        y = torch.round(acc * scale / y_scale.to(torch.float64).reshape(())) + y_zero_point.to(torch.float64).reshape(())
        limits = _INT_RANGES[self.input_type(7, y_zero_point)]
        return (y.clamp(*limits).to(y_zero_point.dtype),)


def _centred(x, x_zero_point, w, w_zero_point) -> tuple[torch.Tensor, torch.Tensor]:
    """x and w less their zero points (w's may be one per output channel), in float64, where integer sums are exact."""
    xf = x.to(torch.float64) - (0 if x_zero_point is None else x_zero_point.to(torch.float64))
    wf = w.to(torch.float64)
    if w_zero_point is not None:
        wf = wf - _broadcast_param(w_zero_point, w, 0, 0).to(torch.float64)
    return xf, wf


@kernel("BitCast", since=26)
class BitCast(Kernel):
    def setup(self, to: int) -> None:
        self.dtype = _dtypes.to_torch(to)

    def run(self, x):
        return (x.view(self.dtype),)


@kernel("GridSample", since=16)  # 20: modes renamed linear/cubic, N-D inputs
class GridSample(Kernel):
    """GridSample: torch.grid_sample; opset 20 renamed the modes linear/cubic (and allows N-D)."""

    def setup(self, align_corners: int = 0, mode: str = "bilinear", padding_mode: str = "zeros") -> None:
        self.align_corners = bool(align_corners)
        self.mode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
        self.padding_mode = padding_mode

    def run(self, x, grid):
        return (F.grid_sample(x, grid.to(x.dtype), self.mode, self.padding_mode, self.align_corners),)


@kernel("AffineGrid", since=20)
class AffineGrid(Kernel):
    def setup(self, align_corners: int = 0) -> None:
        self.align_corners = bool(align_corners)

    def run(self, theta, size):
        return (F.affine_grid(theta, size.tolist(), align_corners=self.align_corners),)


def _unpacked(packed: torch.Tensor, bits: int) -> torch.Tensor:
    """uint8 bytes of `bits`-bit unsigned values, the first in the low bits, as one value per element
    along a new last axis folded into the previous one."""
    per_byte = 8 // bits
    mask = (1 << bits) - 1
    values = torch.stack([(packed >> (bits * i)) & mask for i in range(per_byte)], dim=-1)
    return values.reshape(*packed.shape[:-1], packed.shape[-1] * per_byte).to(torch.int32)


@kernel("MatMulNBits", since=1, domain="com.microsoft")
class MatMulNBits(Kernel):
    """A @ W^T (+ bias), W [N, K] stored in blocks of block_size along K: B [N, blocks, bytes] of unsigned
    `bits`-bit values, scales [N * blocks], zero points packed likewise per row (default 2^(bits-1)) or of
    the scales' type. Computed in float32 from the dequantized weight."""

    def setup(self, K: int, N: int, bits: int = 4, block_size: int = 0, accuracy_level: int = 0,
              weight_prepacked: int = 0) -> None:
        if bits not in (2, 4, 8) or not block_size:
            raise ValueError(f"MatMulNBits with bits={bits}, block_size={block_size} is not supported")
        self.k, self.n, self.bits, self.block = K, N, bits, block_size

    def run(self, A, B, scales, zero_points=None, g_idx=None, bias=None):
        if g_idx is not None:
            raise ValueError("MatMulNBits with g_idx is not supported")
        blocks = -(-self.k // self.block)
        q = _unpacked(B.reshape(self.n, -1), self.bits)[:, :self.k]
        scale = scales.to(torch.float32).reshape(self.n, blocks)
        if zero_points is None:
            zero = torch.full((self.n, blocks), float(1 << (self.bits - 1)))
        elif zero_points.dtype == torch.uint8:
            zero = _unpacked(zero_points.reshape(self.n, -1), self.bits)[:, :blocks].to(torch.float32)
        else:
            zero = zero_points.to(torch.float32).reshape(self.n, blocks)
        w = (q.to(torch.float32) - zero.repeat_interleave(self.block, 1)[:, :self.k]) * \
            scale.repeat_interleave(self.block, 1)[:, :self.k]
        y = torch.matmul(A.to(torch.float32), w.t())
        if bias is not None:
            y = y + bias.to(torch.float32)
        return (y.to(A.dtype),)
