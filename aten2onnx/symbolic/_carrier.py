"""Complex tensors as carriers (a real tensor with a trailing axis of 2, see ir/builder.py) for the
complex handlers: conversions to and from carriers, their logical dtype, rank and shape, and the real
symbolic of an op applied to a carrier."""

from __future__ import annotations

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import _complex as cx
from aten2onnx.symbolic._helpers import cast, result_type, scalar_type
from aten2onnx.symbolic.opset9_math import is_zero

Parts = tuple[Value, cx.Part]


def real_symbolic(g: GraphBuilder, key: str):
    """The real-tensor symbolic for key at the target opset (a layout op applied to a carrier), through
    the exporter's dispatch, so a per-call override or user symbolic for key is the one applied."""
    handler = (g.resolve or registry.Resolver(registry.REGISTRY, g.opset))(key)
    if handler is None:
        raise NotImplementedError(f"{key} has no symbolic at opset {g.opset}")
    return handler


def _logical(x):
    """x as type promotion sees it: a carrier as its complex tensor."""
    if isinstance(x, Value) and x.complex:
        return Value(x.name, _dtypes.complex_of(x.dtype), cx.logical_shape(x))
    return x


def complex_result(*operands) -> torch.dtype:
    """The complex dtype torch gives an arithmetic op on operands (Values or Python numbers)."""
    dtype = result_type(*(_logical(x) for x in operands))
    return dtype if dtype.is_complex else _dtypes.complex_of(dtype)


def operand_parts(g: GraphBuilder, x, real: torch.dtype) -> Parts:
    """Parts of a tensor or Python number (int, float, complex) in the real dtype `real`."""
    if isinstance(x, Value):
        re, im = cx.parts(g, x)  # split first: a cast carrier would no longer read as complex
        return cast(g, re, real), None if im is None else cast(g, im, real)
    z = complex(x)
    return g.const([z.real], dtype=real), (g.const([z.imag], dtype=real) if z.imag != 0 else None)


def dtype_of(x: Value) -> torch.dtype:
    """The dtype of the tensor x stands for (complex64 for a float32 carrier)."""
    return _dtypes.complex_of(x.dtype) if x.complex else x.dtype


def carrier(g: GraphBuilder, x, dtype: torch.dtype) -> Value:
    """A tensor (complex or real) or Python number as a carrier of the complex dtype."""
    if isinstance(x, Value):
        shape = cx.logical_shape(x)
        return _shaped(cx.to_carrier(g, x, dtype), None if shape is None else tuple(shape) + (2,))
    return g.const(torch.tensor(complex(x), dtype=dtype))


def tagged(g: GraphBuilder, value: Value) -> Value:
    """A carrier built here, marked complex so that another complex handler can take it."""
    if value.complex:
        return value
    if value.kind != "node":  # a folded constant may be shared: re-make it with the tag
        return g.retag(value, complex=True)
    value.complex = True
    return value


def convert(g: GraphBuilder, x: Value, dtype) -> Value:
    """x as dtype, as torch converts: complex -> complex casts the parts, real -> complex adds a zero
    imaginary part, complex -> bool tests both parts, complex -> other real keeps the real part."""
    dtype = scalar_type(dtype)
    if dtype is None or (dtype == dtype_of(x)):
        return x
    if dtype.is_complex:
        return cx.to_carrier(g, x, dtype)  # complex32 too: float16 pairs
    if not x.complex:
        return cast(g, x, dtype)
    if dtype == torch.bool:
        re, im = split(g, x)
        return g.op("Or", g.op("Not", is_zero(g, re)), g.op("Not", is_zero(g, im)))
    return cast(g, cx.component(g, x, 0), dtype)  # eager warns that the imaginary part is discarded


def _shaped(value: Value, shape) -> Value:
    """value with a shape the builder could not infer (Gather, Transpose...), for real symbolics that
    read it; a folded constant already has its own."""
    if value.shape is None and shape is not None:
        value.shape = tuple(shape)
    return value


def split(g: GraphBuilder, x: Value, real: torch.dtype | None = None) -> tuple[Value, Value | None]:
    """(real, imaginary) parts of x without the pair axis, in dtype real (x's own by default); a
    real x has no imaginary part."""
    shape = cx.logical_shape(x)
    if not x.complex:
        return (x if real is None else cast(g, x, real)), None
    re, im = (_shaped(cx.component(g, x, i), shape) for i in (0, 1))
    if real is not None:
        re, im = cast(g, re, real), cast(g, im, real)
    return re, im


def join(g: GraphBuilder, re: Value, im: Value | None) -> Value:
    """The carrier of re + i*im from parts without the pair axis (of one shape)."""
    out = cx.pack(g, cx.lift(g, re), None if im is None else cx.lift(g, im))
    return _shaped(out, None if re.shape is None else tuple(re.shape) + (2,))


def rank_of(x: Value) -> int:
    rank = cx.logical_rank(x)
    if rank is None:
        raise NotImplementedError("a complex tensor of unknown rank")
    return rank


def shape_of(g: GraphBuilder, x: Value) -> Value | list:
    """The shape of the tensor x stands for: a list when static, else a 1-D int64 value."""
    if x.is_static:
        return list(cx.logical_shape(x))
    shape = g.op("Shape", x)
    if not x.complex:
        return shape
    return g.op("Gather", shape, g.const(list(range(rank_of(x))), dtype=torch.int64), axis=0)


def _k(g: GraphBuilder, value: float, like: Value) -> Value:
    return g.const(value, like=like)


def on_carrier(g: GraphBuilder, key: str, self: Value, *args, **kwargs):
    """The real symbolic for key applied to a carrier (its dims and sizes already adjusted)."""
    return real_symbolic(g, key)(g, self, *args, **kwargs)
