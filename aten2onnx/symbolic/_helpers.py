"""Shared translation math for the opset modules. Helpers take explicit parameters for what changed
between opsets (`axes_as_input=True`); none of them asks for the target opset."""

from __future__ import annotations

from typing import Sequence

import torch
from aten2onnx import _dtypes
from aten2onnx.exporter.builder import GraphBuilder, Value

Operand = Value | int | float | bool

# -- type promotion (torch.result_type semantics) ---------------------------------------------------

def _scalar_dtype(x: int | float | bool | complex) -> torch.dtype:
    if isinstance(x, bool):
        return torch.bool
    if isinstance(x, int):
        return torch.int64
    if isinstance(x, complex):
        return torch.complex64 if torch.get_default_dtype() == torch.float32 else torch.complex128
    return torch.get_default_dtype()


def _promote_group(dtypes: list[torch.dtype]) -> torch.dtype | None:
    result = None
    for dtype in dtypes:
        result = dtype if result is None else torch.promote_types(result, dtype)
    return result


def _combine(higher: torch.dtype | None, lower: torch.dtype | None) -> torch.dtype | None:
    """A higher-priority group's dtype wins unless a lower one is of a higher category
    (TensorIterator's combine_categories)."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return torch.promote_types(higher, lower) if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher == torch.bool or lower.is_floating_point:
        return torch.promote_types(higher, lower)
    return higher


def result_type(*operands: Operand) -> torch.dtype:
    """The dtype torch gives an elementwise op on these operands: dimensioned tensors outrank 0-d
    tensors, which outrank Python scalars, except where a lower group is of a higher category."""
    dims, zeros, scalars = [], [], []
    for x in operands:
        if isinstance(x, Value):
            if x.dtype is None:
                raise TypeError(f"the dtype of {x.name} is unknown; cannot apply type promotion")
            (zeros if x.rank == 0 else dims).append(x.dtype)
        elif isinstance(x, (bool, int, float, complex)):
            scalars.append(_scalar_dtype(x))
        elif x is not None:
            raise TypeError(f"cannot promote a {type(x).__name__}")
    result = _combine(_promote_group(dims), _combine(_promote_group(zeros), _promote_group(scalars)))
    if result is None:
        raise TypeError("no operands to promote")
    return result


def cast(g: GraphBuilder, x: Value, dtype: torch.dtype) -> Value:
    if x.dtype == dtype:
        return x
    return g.op("Cast", x, to=_dtypes.to_onnx(dtype))


def as_value(g: GraphBuilder, x: Operand, dtype: torch.dtype) -> Value:
    """x as a Value of dtype: Python scalars become constants, Values are cast where needed."""
    if isinstance(x, Value):
        return cast(g, x, dtype)
    return g.const(x, dtype=dtype)


def promote(g: GraphBuilder, *operands: Operand, to: torch.dtype | None = None) -> list[Value]:
    """Operands cast to their common dtype (or `to`), Python scalars made constants of it."""
    dtype = to if to is not None else result_type(*operands)
    return [as_value(g, x, dtype) for x in operands]


FLOATS = (torch.float16, torch.float32, torch.float64)

# -- axes and shapes ----------------------------------------------------------------------------


def norm_dim(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def norm_dims(dims: Sequence[int], rank: int) -> list[int]:
    return [norm_dim(d, max(rank, 1)) for d in dims]


def unsqueeze(g: GraphBuilder, x: Value, axes: Sequence[int], *, axes_as_input: bool) -> Value:
    if axes_as_input:
        return g.op("Unsqueeze", x, g.const(list(axes), dtype=torch.int64))
    return g.op("Unsqueeze", x, axes=list(axes))


def squeeze(g: GraphBuilder, x: Value, axes: Sequence[int] | None, *, axes_as_input: bool) -> Value:
    if axes is None:
        return g.op("Squeeze", x)
    if axes_as_input:
        return g.op("Squeeze", x, g.const(list(axes), dtype=torch.int64))
    return g.op("Squeeze", x, axes=list(axes))


def reduce(g: GraphBuilder, op_type: str, x: Value, axes: Sequence[int] | None, keepdim: bool, *,
           axes_as_input: bool) -> Value:
    """Reduce over axes (all axes when None or empty, as ATen does)."""
    if not axes:
        return g.op(op_type, x, keepdims=int(keepdim))
    if axes_as_input:
        return g.op(op_type, x, g.const(list(axes), dtype=torch.int64), keepdims=int(keepdim))
    return g.op(op_type, x, axes=list(axes), keepdims=int(keepdim))
