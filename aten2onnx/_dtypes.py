"""The one table between torch dtypes and ONNX TensorProto element types."""

from __future__ import annotations

import functools
import warnings

import torch
from onnx import TensorProto

_TORCH_TO_ONNX: dict[torch.dtype, int] = {
    torch.float32: TensorProto.FLOAT,
    torch.float64: TensorProto.DOUBLE,
    torch.float16: TensorProto.FLOAT16,
    torch.bfloat16: TensorProto.BFLOAT16,
    torch.int8: TensorProto.INT8,
    torch.int16: TensorProto.INT16,
    torch.int32: TensorProto.INT32,
    torch.int64: TensorProto.INT64,
    torch.uint8: TensorProto.UINT8,
    torch.uint16: TensorProto.UINT16,
    torch.uint32: TensorProto.UINT32,
    torch.uint64: TensorProto.UINT64,
    torch.bool: TensorProto.BOOL,
    torch.complex64: TensorProto.COMPLEX64,
    torch.complex128: TensorProto.COMPLEX128,
    torch.float8_e4m3fn: TensorProto.FLOAT8E4M3FN,
    torch.float8_e4m3fnuz: TensorProto.FLOAT8E4M3FNUZ,
    torch.float8_e5m2: TensorProto.FLOAT8E5M2,
    torch.float8_e5m2fnuz: TensorProto.FLOAT8E5M2FNUZ,
}
_ONNX_TO_TORCH = {v: k for k, v in _TORCH_TO_ONNX.items()}
# 4-bit integers: an exported weight may be stored as them (a tensor viewed as torch.int4/uint4, one value
# per byte, packed two per byte when written); graphs never compute in them, so ONNX's INT4 and UINT4 map
# to no torch dtype (aten2onnx.runtime holds them widened)
_TORCH_TO_ONNX.update({torch.int4: TensorProto.INT4, torch.uint4: TensorProto.UINT4})
PACKED = {torch.int4: torch.int8, torch.uint4: torch.uint8}  # a 4-bit dtype -> the dtype holding one value per byte


# Complex tensors are carried in the graph as real tensors with a trailing axis of 2 (real, imaginary):
# onnxruntime has no kernels for ONNX's complex element types.
_REAL_PART = {torch.complex32: torch.float16, torch.complex64: torch.float32, torch.complex128: torch.float64}
_COMPLEX_OF = {v: k for k, v in _REAL_PART.items()}


def real_part(dtype: torch.dtype) -> torch.dtype:
    """The real dtype a complex dtype is carried as (complex64 -> float32); other dtypes unchanged."""
    return _REAL_PART.get(dtype, dtype)


def complex_of(dtype: torch.dtype) -> torch.dtype:
    """The complex dtype whose parts are `dtype` (float32 -> complex64); bfloat16 widens to complex64."""
    if dtype in _COMPLEX_OF:
        return _COMPLEX_OF[dtype]
    if dtype == torch.bfloat16:
        return torch.complex64
    raise TypeError(f"no complex dtype has {dtype} parts")


def from_pairs(x: torch.Tensor) -> torch.Tensor:
    """A real tensor with a trailing axis of 2 (real, imaginary) as the complex tensor it carries."""
    if x.numel() == 0:  # an empty view may have any strides, which view_as_complex rejects
        return torch.empty(x.shape[:-1], dtype=complex_of(x.dtype))
    return torch.view_as_complex(x.contiguous())


def to_pairs(x: torch.Tensor) -> torch.Tensor:
    """A complex tensor as real pairs (a trailing axis of 2); the inverse of from_pairs."""
    return torch.view_as_real(x.resolve_conj())


def has_onnx(dtype: torch.dtype) -> bool:
    return dtype in _TORCH_TO_ONNX


def to_onnx(dtype: torch.dtype) -> int:
    try:
        return _TORCH_TO_ONNX[dtype]
    except KeyError:
        raise TypeError(f"dtype {dtype} has no ONNX element type") from None


def to_torch(elem_type: int) -> torch.dtype:
    try:
        return _ONNX_TO_TORCH[elem_type]
    except KeyError:
        name = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() else elem_type
        raise TypeError(f"ONNX element type {name} has no torch dtype") from None


@functools.cache
def from_scalar_type(code: int) -> torch.dtype:
    """ATen's ScalarType enum value as a torch.dtype (a schema's ScalarType default arrives as one: randint's
    dtype=4 is int64, torchao's float8_dtype=24 float8_e4m3fn), read from the running torch itself, whose enum
    grows between releases; IndexError for a value it has no dtype for."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the complex32 and quantized dtypes warn when made)
        try:
            return torch.ops.aten.empty.memory_format([0], dtype=code, device="meta").dtype
        except (RuntimeError, TypeError) as e:
            raise IndexError(f"torch {torch.__version__} has no ScalarType {code}") from e
