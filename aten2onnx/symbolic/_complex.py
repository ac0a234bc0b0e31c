"""Complex arithmetic on real pairs. A complex tensor of shape S is carried as a real tensor of shape
S + [2] (real, imaginary; see ir/builder.py); these helpers split, join and convert such
carriers with ops that read the same at every opset (Gather, Concat, Reshape)."""

from __future__ import annotations

from typing import Sequence

import torch

from aten2onnx import _dtypes
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast

Part = Value | None  # a real or imaginary part with a trailing axis of 1; None is an exact zero


def logical_rank(x: Value) -> int | None:
    """The rank of the tensor a value stands for: a complex carrier has one axis more."""
    return None if x.rank is None else x.rank - x.complex


def logical_shape(x: Value) -> tuple | None:
    return None if x.shape is None else (x.shape[:-1] if x.complex else x.shape)


def lift(g: GraphBuilder, x: Value) -> Value:
    """A real tensor of shape S as S + [1], to line up with the parts of a carrier."""
    if x.is_static:
        return g.op("Reshape", x, g.const(list(x.shape) + [1], dtype=torch.int64))
    shape = g.op("Concat", g.op("Shape", x), g.const([1], dtype=torch.int64), axis=0)
    return g.op("Reshape", x, shape)


def parts(g: GraphBuilder, x: Value) -> tuple[Value, Part]:
    """(real, imaginary) parts of x, each with a trailing axis of 1; a real x has no imaginary part."""
    if not x.complex:
        return lift(g, x), None
    return (g.op("Gather", x, g.const([0], dtype=torch.int64), axis=-1),
            g.op("Gather", x, g.const([1], dtype=torch.int64), axis=-1))


def zeros_like(g: GraphBuilder, part: Value) -> Value:
    if part.is_static:
        return g.const(torch.zeros(part.shape, dtype=part.dtype))
    return g.op("ConstantOfShape", g.op("Shape", part), value=torch.zeros(1, dtype=part.dtype))


def pack(g: GraphBuilder, re: Value, im: Part) -> Value:
    """The carrier of re + i*im (parts with a trailing axis of 1, of one shape)."""
    return g.op("Concat", re, zeros_like(g, re) if im is None else im, axis=-1)


def component(g: GraphBuilder, x: Value, index: int) -> Value:
    """The real (0) or imaginary (1) part of a carrier, without the trailing axis."""
    return g.op("Gather", x, g.const(index, dtype=torch.int64), axis=-1)


def to_carrier(g: GraphBuilder, x: Value, dtype: torch.dtype) -> Value:
    """x (complex or real) as a carrier of complex `dtype`: parts cast to its real dtype."""
    real = _dtypes.real_part(dtype)
    if x.complex:
        return cast(g, x, real)
    re, _ = parts(g, cast(g, x, real))
    return pack(g, re, None)


def add(g: GraphBuilder, a: Part, b: Part) -> Part:
    if a is None or b is None:
        return b if a is None else a
    return g.op("Add", a, b)


def sub(g: GraphBuilder, a: Part, b: Part) -> Part:
    if b is None:
        return a
    return g.op("Neg", b) if a is None else g.op("Sub", a, b)


def mul(g: GraphBuilder, a: Part, b: Part) -> Part:
    return None if a is None or b is None else g.op("Mul", a, b)


def complex_mul(g: GraphBuilder, a: tuple[Value, Part], b: tuple[Value, Part]) -> tuple[Value, Part]:
    """(ar + i ai)(br + i bi) on parts; a missing imaginary part costs nothing."""
    (ar, ai), (br, bi) = a, b
    re = sub(g, mul(g, ar, br), mul(g, ai, bi))
    im = add(g, mul(g, ar, bi), mul(g, ai, br))
    return re, im


def dim(d: int, rank: int) -> int:
    """A dim of the complex tensor as an axis of its carrier (negative dims count from the end of
    the complex tensor's dims, not the carrier's)."""
    if not -max(rank, 1) <= d < max(rank, 1):
        raise IndexError(f"dim {d} is out of range for a tensor of rank {rank}")
    return d % rank if rank else 0


def dims(ds: Sequence[int], rank: int) -> list[int]:
    return [dim(d, rank) for d in ds]
