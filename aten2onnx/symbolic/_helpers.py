"""Shared translation math for the opset modules. Helpers take explicit parameters for what changed
between opsets (`axes_as_input=True`); none of them asks for the target opset."""

from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

import torch

from aten2onnx import _dtypes
from aten2onnx.ir import GraphBuilder, Subgraph, Value, body_output, op_types

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
        # the complex type of the higher group's precision: float32 with complex128 -> complex64
        return _dtypes.complex_of(higher) if higher.is_floating_point else lower
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


def scalar_type(dtype, default: torch.dtype | None = None) -> torch.dtype | None:
    """A ScalarType argument as a torch.dtype: schema defaults arrive as ATen's enum ints."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype if dtype is not None else default
    return _dtypes.from_scalar_type(int(dtype))


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


def opmath(dtype: torch.dtype) -> torch.dtype:
    """The dtype ATen's CPU kernels accumulate a dtype's reductions and norms in (`at::opmath_type`):
    float32 for float16 and bfloat16, the dtype itself otherwise."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

# -- axes and shapes ----------------------------------------------------------------------------


def norm_dim(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def norm_dims(dims: Sequence[int], rank: int) -> list[int]:
    return [norm_dim(d, max(rank, 1)) for d in dims]


# -- control flow inside a translation ----------------------------------------------------------------


def loop(g: GraphBuilder, trip_count: Value | int | None, state: Sequence[Value],
         step: Callable[[GraphBuilder, Value, list[Value]], Sequence[Value]], *, name: str = "loop",
         keep_going: Value | None = None, scan_outputs: int = 0, stop: bool = False) -> list[Value]:
    """An ONNX Loop. `step(body, i, carried)` builds one iteration in `body` (a subgraph builder that
    may read any value of `g`): `i` is the 0-d int64 iteration number, `carried` the loop-carried
    values (shaped as `state`); it returns their new values, then `scan_outputs` per-iteration values
    to stack, and last, when `stop` is set, a 0-d bool: keep going. Returns the final carried values,
    then the stacked scan outputs. `trip_count` None runs until the condition says stop; `keep_going`
    is the condition before the first iteration. A dtype the opset's Loop does not carry (bfloat16
    before 16) is carried in float32, which holds it exactly; `step` sees and returns the dtype."""
    signature = op_types.signature("Loop", g.opset)

    def carried(dtype: torch.dtype | None) -> torch.dtype | None:
        takes = dtype is None or signature is None or signature.takes("V", dtype)
        return dtype if takes else torch.float32

    body = g.subgraph()
    i = Value(g.fresh_name(f"{name}_i"), torch.int64, (), kind="input")
    cond = Value(g.fresh_name(f"{name}_cond"), torch.bool, (), kind="input")
    formals = [Value(g.fresh_name(f"{name}_state"), carried(s.dtype), s.shape, kind="input") for s in state]
    body.inputs = [i, cond, *formals]
    results = list(step(body, i, [cast(body, f, s.dtype) for f, s in zip(formals, state)]))
    again = results.pop() if stop else cond
    if len(results) != len(state) + scan_outputs:
        raise ValueError(f"loop step returned {len(results)} values; expected {len(state)} carried + {scan_outputs} scanned")
    scanned_dtypes = [r.dtype for r in results[len(state):]]
    results = [cast(body, r, carried(r.dtype)) for r in results]
    outputs: list[Value] = []
    for value in [again, *results]:
        outputs.append(body_output(body, value, outputs))
    for formal, out in zip(formals, outputs[1:]):
        if out.dtype != formal.dtype:
            raise ValueError(f"loop state changes dtype: {formal.dtype} -> {out.dtype}")
    graph = Subgraph(body, body.inputs, outputs, g.fresh_name(f"{name}_body"))
    trip = g.const(trip_count, dtype=torch.int64) if isinstance(trip_count, int) else trip_count
    first = keep_going if keep_going is not None else (None if trip is not None else g.const(True))
    outs = g.op("Loop", trip, first, *(cast(g, s, f.dtype) for s, f in zip(state, formals)),
                outputs=len(state) + scan_outputs, body=graph)
    outs = [outs] if not isinstance(outs, tuple) else list(outs)
    for out, s, f in zip(outs, state, formals):
        out.dtype, out.shape = f.dtype, s.shape
    for out, v in zip(outs[len(state):], outputs[1 + len(state):]):
        out.dtype = v.dtype
        out.shape = None if v.shape is None else (None, *v.shape)
    originals = [s.dtype for s in state] + scanned_dtypes
    return [cast(g, out, dtype) for out, dtype in zip(outs, originals)]


def branch(g: GraphBuilder, build: Callable[[GraphBuilder], Value], name: str) -> Subgraph:
    """A branch of an If: the subgraph `build(body)` makes, its one output that value (it may read any value
    of g)."""
    body = g.subgraph()
    body.inputs = []
    return Subgraph(body, [], [body_output(body, build(body), [])], g.fresh_name(name))


# -- arithmetic, comparisons, shapes, slices and fills shared by handlers of many families --------------

INT64_MAX = 2**63 - 1
SymInt = int | Value


def binary(g: GraphBuilder, op_type: str, self: Value, other, alpha=1) -> Value:
    """self <op> alpha * other, promoted as torch does. (Add/Sub/Mul/Div take int8/int16/uint8 only from
    opset 14: before, the builder computes them in int32 and casts back, wrapping as torch does.)"""
    self, other = promote(g, self, other)
    dtype = self.dtype
    if alpha != 1:
        other = g.op("Mul", other, g.const(alpha, like=other))
    return cast(g, g.op(op_type, self, other), dtype)


def to_float(g: GraphBuilder, x: Value) -> Value:
    """Ints and bools go to the default float dtype, as torch does for float-only math."""
    return x if x.dtype is not None and (x.dtype.is_floating_point or x.dtype.is_complex) else cast(g, x, torch.get_default_dtype())


def float_opmath(g: GraphBuilder, x: Value) -> Value:
    """to_float(x), in opmath: float16 and bfloat16 go to float32, as ATen's CPU elementwise kernels
    compute them (the caller rounds the result back once, with `cast`)."""
    x = to_float(g, x)
    return cast(g, x, opmath(x.dtype)) if x.dtype is not None else x


def half_step(g: GraphBuilder, x: Value, dtype: torch.dtype) -> Value:
    """x, computed in opmath (float32) for a half `dtype`, rounded to `dtype` and kept in float32: one
    step of eager's half arithmetic, which rounds every op's result. Written as two Casts, because
    onnxruntime's CPU build has no half kernels for most elementwise ops: it runs a chain of them in
    float32 and rounds only at its end, unless the graph itself rounds between them. Identity for
    dtypes that are their own opmath."""
    if opmath(dtype) == dtype or x.dtype == dtype:
        return x
    return cast(g, cast(g, x, dtype), x.dtype)


def float_unary(g: GraphBuilder, op_type: str, self: Value) -> Value:
    return g.op(op_type, to_float(g, self))


def compare(g: GraphBuilder, op_type: str, self: Value, other) -> Value:
    self, other = promote(g, self, other)
    return g.op(op_type, self, other)


def equal(g: GraphBuilder, self: Value, other) -> Value:
    return g.equal(*promote(g, self, other))


def dim_size(g: GraphBuilder, x: Value, dim: int) -> SymInt:
    """Size of one dim: an int where static, else a 0-d int64 graph value."""
    if x.shape is not None and isinstance(x.shape[dim], int):
        return x.shape[dim]
    return g.op("Gather", g.op("Shape", x), g.const(dim, dtype=torch.int64), axis=0)


def surely_positive(g: GraphBuilder, dim: int | str | None) -> bool:
    """Whether a dim of a value's shape is at least 1 whatever the inputs: a positive int, or a symbolic dim
    the capture's ranges bound at 1 or more (a size read from data may be 0)."""
    if isinstance(dim, int):
        return dim > 0
    return isinstance(dim, str) and g.dim_least.get(dim, 0) >= 1


def sym_prod(g: GraphBuilder, sizes: Sequence[SymInt]) -> SymInt:
    """The product of sizes (dim_size's ints and 0-d int64 values): an int where all are ints, else a
    0-d int64 value, the static sizes folded into one factor."""
    static = math.prod(n for n in sizes if isinstance(n, int))
    dynamic = [n for n in sizes if not isinstance(n, int)]
    if not dynamic:
        return static
    n = functools.reduce(lambda a, b: g.op("Mul", a, b), dynamic)
    return n if static == 1 else g.op("Mul", n, g.const(static, dtype=torch.int64))


def element_count(g: GraphBuilder, x: Value, axes: list[int], dtype: torch.dtype) -> Value:
    """The number of elements of x along axes, as a 0-d `dtype` value computed from its shape."""
    sizes = g.op("Gather", g.op("Shape", x), g.const(axes, dtype=torch.int64), axis=0)
    return cast(g, g.reduce("ReduceProd", sizes, [0], keepdims=False), dtype)


def trunc(g: GraphBuilder, x: Value) -> Value:
    """x rounded toward zero (floating x), keeping the sign of a zero result as eager does (-0.3 and
    -0.0 give -0.0): Floor(|x|) with x's sign, read as Sign(x + 1/x), which is -1 for -0.0 (1/x = -inf)
    and +-1 for infinities (1/x = 0); NaN stays NaN. Not Where(x < 0, Ceil, Floor): onnxruntime's
    Where gives +0.0 for a -0.0 it picks from its first branch."""
    return g.op("Mul", g.op("Floor", g.op("Abs", x)), g.op("Sign", g.op("Add", x, g.op("Reciprocal", x))))


def fmod_without_mod(g: GraphBuilder, a: Value, b: Value) -> Value:
    """C's fmod of floats a and b without ONNX's Mod (opset 10): a - trunc(a / b) * b, a zero with a's sign.
    Narrower floats compute in float64, where it is exact: float16 always, float32 and bfloat16 while the
    quotient is below 2 ** 29 and 2 ** 45 (float64's own product n * b rounds: fmod(1, 0.1) is 0). A
    finite a is its own remainder by an infinity (0 * inf is NaN); an infinite a has none (NaN)."""
    dtype = a.dtype
    a, b = cast(g, a, torch.float64), cast(g, b, torch.float64)
    r = g.op("Sub", a, g.op("Mul", trunc(g, g.op("Div", a, b)), b))
    by_infinity = g.op("And", g.op("Greater", g.op("Abs", b), g.const(torch.finfo(torch.float64).max, like=a)),
                       g.op("Less", g.op("Abs", a), g.const(math.inf, like=a)))
    magnitude = g.op("Where", by_infinity, g.op("Abs", a), g.op("Abs", r))
    # a's sign (a zero's too) as a factor of +-1 after the Where, which picks magnitudes only: onnxruntime's
    # Where gives +0.0 for a -0.0 it picks from its first branch, and keeps a NaN's sign (eager's, kept too)
    signed = g.op("Mul", magnitude, g.op("Sign", g.op("Add", a, g.op("Reciprocal", a))))
    nan = g.op("And", g.op("IsNaN", r), g.op("Not", by_infinity))
    return cast(g, g.op("Where", nan, r, signed), dtype)


def reshape(g: GraphBuilder, x: Value, shape: list[SymInt]) -> Value:
    out = g.op("Reshape", x, g.int_list(shape))
    if out.shape is None:
        out.shape = static_reshape(x, shape)
    return out


def static_reshape(x: Value, shape: list[SymInt]) -> tuple[int, ...] | None:
    """The shape Reshape gives x, where it is known when the graph is built."""
    if all(isinstance(s, int) and s > 0 for s in shape):
        return tuple(shape)
    if not x.is_static or not all(isinstance(s, int) for s in shape):
        return None
    dims = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        if known == 0:
            return None
        dims[dims.index(-1)] = math.prod(x.shape) // known
    return tuple(dims)


def transpose_perm(rank: int, dim0: int, dim1: int) -> list[int]:
    perm = list(range(rank))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return perm


def slice_axis(g: GraphBuilder, x: Value, axis: int, start: SymInt, end: SymInt, step: int = 1) -> Value:
    """x[start:end:step] along axis."""
    return g.slice(x, [start], [end], [axis], [step])


def is_full_slice(x: Value, dim: int, start, end, step) -> bool:
    size = x.shape[dim] if x.shape is not None else None
    return (step == 1 and start in (None, 0) and
            (end is None or (isinstance(end, int) and (end >= INT64_MAX or (isinstance(size, int) and end >= size)))))


def fill(g: GraphBuilder, size: list[SymInt] | Value, value, dtype: torch.dtype) -> Value:
    """A tensor of `size` filled with value: a small constant, or ConstantOfShape; a value the graph
    computes (a size read from a dynamic dim) expanded to the size."""
    shape = size if isinstance(size, Value) else None
    if isinstance(value, Value):
        return g.op("Expand", cast(g, value, dtype), shape if shape is not None else g.int_list(size))
    # (an empty constant is made by ConstantOfShape: the builder cannot hash a tensor with 0 elements)
    if isinstance(size, list) and all(isinstance(s, int) for s in size) and 0 < math.prod(size) <= 64:
        return g.const(torch.full(size, value, dtype=dtype))
    return g.op("ConstantOfShape", shape if shape is not None else g.int_list(size),
                value=torch.tensor([value], dtype=dtype))


def fill_dtype(value, dtype: torch.dtype | None) -> torch.dtype:
    """full's dtype: the given one, else the default for the fill value's kind (a SymInt's is int64)."""
    if dtype is not None:
        return dtype
    if isinstance(value, Value):
        return value.dtype if value.dtype in (torch.bool, torch.int64) else torch.get_default_dtype()
    if isinstance(value, bool):
        return torch.bool
    if isinstance(value, int):
        return torch.int64
    return torch.get_default_dtype()


def unsqueeze_static(g: GraphBuilder, x: Value, axis: int) -> Value:
    """x with a new axis of size 1 at axis, by Unsqueeze (its axes an attribute or an input, as the opset
    takes them). Not a Reshape to a shape read from x: Reshape reads a 0 there as "copy the input's dim",
    so an empty dim (a masked selection that selected nothing) was reshaped wrongly or not at all."""
    out = g.unsqueeze(x, [axis])
    if out.shape is None and x.shape is not None:
        out.shape = tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis:])
    return out
