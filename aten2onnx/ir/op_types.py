"""Which element types each ONNX op takes at an opset, read from onnx.defs: what the builder uses to
infer result dtypes, and to compute an op ONNX does not define for a dtype in one it does.

An ONNX op's type constraints differ by version (Add takes int8 from 14, bool never; ReduceMax takes
no int16; TopK no bool), and a model that breaks them is rejected by the checker and onnxruntime.
PyTorch defines those ops for those dtypes, so the builder widens: it casts the inputs of a
constrained type to the narrowest wider type the op takes, and the results of that type back. A type
ONNX allows but onnxruntime has no CPU kernel for (ort_gaps.py: bool Where, bfloat16 Add, int16 Max)
is widened too, where a wider type runs; where none does, it is left as ONNX allows it. The
widening is exact for every op whose PyTorch kernel computes in a wider type and rounds once
(elementwise and reduction kernels for half and bfloat16), and for integer and bool inputs of ops
that keep their type (Add of bools is `or` once cast back, Max is `or`, Mul `and`; int8 Add wraps
when cast back, as PyTorch's does).
"""

from __future__ import annotations

import dataclasses
import functools

import onnx
import torch

from aten2onnx import _dtypes
from aten2onnx.ir.ort_gaps import GAPS, REDUCTION_GAPS

# For each dtype, the wider dtypes that compute its values exactly, narrowest first. Integers of up
# to 16 bits and bools fit float64 exactly, and so do products and sums of them; int32 and int64 do
# not reach a float, whose rounding would change the result.
_WIDER: dict[torch.dtype, tuple[torch.dtype, ...]] = {
    torch.bool: (torch.int32, torch.int64, torch.float32, torch.float64),
    torch.uint8: (torch.int32, torch.int64, torch.float64),
    torch.int8: (torch.int32, torch.int64, torch.float64),
    torch.int16: (torch.int32, torch.int64, torch.float64),
    torch.uint16: (torch.int32, torch.int64, torch.float64),
    torch.uint32: (torch.int64,),
    torch.int32: (torch.int64,),
    torch.float16: (torch.float32, torch.float64),
    torch.bfloat16: (torch.float32, torch.float64),
    torch.float32: (torch.float64,),
    torch.float8_e4m3fn: (torch.float16, torch.float32),
    torch.float8_e4m3fnuz: (torch.float16, torch.float32),
    torch.float8_e5m2: (torch.float16, torch.float32),
    torch.float8_e5m2fnuz: (torch.float16, torch.float32),
}


def type_string(dtype: torch.dtype) -> str:
    """ONNX's name of a tensor type, as type constraints list it: tensor(float), tensor(int64)."""
    return f"tensor({onnx.TensorProto.DataType.Name(_dtypes.to_onnx(dtype)).lower()})"


@dataclasses.dataclass(frozen=True)
class Signature:
    """An op's typed formals at one opset: per input and output, a constraint name or a fixed type."""

    inputs: tuple[str, ...]
    variadic: bool  # the last input repeats
    outputs: tuple[str, ...]
    allowed: dict[str, frozenset[str]]  # constraint name -> allowed type strings
    runs: dict[str, frozenset[str]]  # the allowed types onnxruntime runs

    def input_type(self, i: int) -> str | None:
        if i < len(self.inputs):
            return self.inputs[i]
        return self.inputs[-1] if self.variadic and self.inputs else None

    def output_type(self, i: int) -> str | None:
        return self.outputs[i] if i < len(self.outputs) else None

    def takes(self, formal: str, dtype: torch.dtype, table: str = "allowed") -> bool:
        types = getattr(self, table).get(formal)
        if types is None:  # a fixed type such as tensor(int64)
            return formal == type_string(dtype) or not formal.startswith("tensor(")
        return type_string(dtype) in types


@functools.lru_cache(maxsize=None)
def signature(op_type: str, opset: int, domain: str = "", reduction: str | None = None) -> Signature | None:
    """The op's formals at `opset`, or None when onnx does not define it there; a scatter's with the
    data types onnxruntime runs its `reduction` on."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    variadic = bool(schema.inputs) and schema.inputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
    allowed = {c.type_param_str: frozenset(c.allowed_type_strs) for c in schema.type_constraints}
    refused = {name: frozenset(GAPS.get((op_type, schema.since_version, name), ())) for name in allowed}
    if reduction is not None:
        refused["T"] = refused.get("T", frozenset()) | frozenset(REDUCTION_GAPS.get((op_type, schema.since_version, reduction), ()))
    runs = {name: types - refused[name] for name, types in allowed.items()}
    return Signature(tuple(i.type_str for i in schema.inputs), variadic, tuple(o.type_str for o in schema.outputs),
                     allowed, runs)


def widened(sig: Signature, dtypes: list[torch.dtype | None]) -> dict[str, tuple[torch.dtype, torch.dtype]]:
    """Constraints the inputs break: constraint name -> (the inputs' dtype, the dtype to compute in).

    Raises NotImplementedError when no exact wider dtype is allowed."""
    widen: dict[str, tuple[torch.dtype, torch.dtype]] = {}
    for i, dtype in enumerate(dtypes):
        formal = sig.input_type(i)
        if dtype is None or formal is None or formal not in sig.allowed or formal in widen:
            continue
        if not _dtypes.has_onnx(dtype) or sig.takes(formal, dtype, "runs"):
            continue
        wider = wider_type(sig, formal, dtype)
        if wider is not None:
            widen[formal] = (dtype, wider)
        elif not sig.takes(formal, dtype):
            raise NotImplementedError(f"takes no {dtype} input ({formal} is one of "
                                      f"{sorted(t[7:-1] for t in sig.allowed[formal])})")
    return widen


def wider_type(sig: Signature, formal: str, dtype: torch.dtype) -> torch.dtype | None:
    """The narrowest dtype that holds every `dtype` value exactly and that `formal` takes and
    onnxruntime runs, or None."""
    return next((w for w in _WIDER.get(dtype, ()) if sig.takes(formal, w, "runs")), None)


def result_dtypes(sig: Signature, dtypes: list[torch.dtype | None], outputs: int) -> list[tuple[torch.dtype | None, int | None]]:
    """Each output's dtype where the signature ties it to an input's constraint (and that input's
    index) or fixes it (index None); (None, None) where it does neither."""
    bound: dict[str, tuple[torch.dtype, int]] = {}
    for i, dtype in enumerate(dtypes):
        formal = sig.input_type(i)
        if dtype is not None and formal is not None:
            bound.setdefault(formal, (dtype, i))
    out: list[tuple[torch.dtype | None, int | None]] = []
    for i in range(outputs):
        formal = sig.output_type(i)
        if formal in bound:
            out.append(bound[formal])
        elif formal is not None and formal not in sig.allowed and formal.startswith("tensor("):
            out.append((_fixed(formal), None))
        elif formal in sig.allowed and len(sig.allowed[formal]) == 1:
            out.append((_fixed(next(iter(sig.allowed[formal]))), None))
        else:
            out.append((None, None))
    return out


def _fixed(type_str: str) -> torch.dtype | None:
    name = type_str[len("tensor("):-1].upper()
    try:
        return _dtypes.to_torch(onnx.TensorProto.DataType.Value(name))
    except (ValueError, TypeError):
        return None
