"""Cast and CastLike to every ONNX element type: torch's conversion where it is ONNX's, and ONNX's own rules for
float8 (`saturate`), float8e8m0 (`round_mode`), float4e2m1, float6 and the 2- and 4-bit integers (ops/_narrow.py);
strings as numpy object arrays, the string kernels' representation. A class per schema version that changed the
attributes; the current one carries the op's name, the earlier ones their since_version."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from onnx import TensorProto

from aten2onnx.runtime.kernel import Kernel, kernel, runtime_dtype, to_numpy
from aten2onnx.runtime.ops import _narrow


def cast(x: Any, elem_type: int, saturate: bool = True, round_mode: str = "up", from_type: int | None = None) -> Any:
    """x as ONNX element type elem_type, held as the runtime holds that type. from_type: x's element type where
    its dtype does not tell it (a string's source, a value held widened), for a cast to string."""
    if elem_type == TensorProto.STRING:
        return _to_strings(x, from_type)
    if isinstance(x, np.ndarray):
        x = _from_strings(x, elem_type)
    if _narrow.is_narrow(elem_type):
        return _narrow.cast(x, elem_type, saturate, round_mode)
    dtype = runtime_dtype(elem_type)
    if x.dtype == dtype:
        return x
    if x.dtype in _FLOAT8 and dtype != torch.float32:
        x = x.to(torch.float32)  # exact, and then one rounding: torch converts float8 to few dtypes directly
    return x.to(dtype)


_FLOAT8 = frozenset({torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz,
                     torch.float8_e8m0fnu})


def _from_strings(x: np.ndarray, elem_type: int) -> torch.Tensor:
    """Strings parsed as numbers: "+INF", "INF", "-INF" and "NaN" in any case, plain and scientific notation. An
    integer is parsed as one (exact past 2^53); a fraction to an integer type is undefined in ONNX, here truncated."""
    floating = elem_type not in _INTEGERS
    values = [_parse(s, floating) for s in x.reshape(-1).tolist()]
    return torch.tensor(values, dtype=torch.float64 if floating else torch.int64).reshape(x.shape)


def _parse(text: Any, floating: bool) -> float | int:
    text = text.decode("utf-8") if isinstance(text, bytes) else str(text)
    if not floating:
        try:
            return int(text.strip())
        except ValueError:
            return int(float(text))
    return float(text)


def _to_strings(x: Any, from_type: int | None) -> np.ndarray:
    """Numbers as text, as numpy writes them (the shortest text that reads back as the same value)."""
    if isinstance(x, np.ndarray):
        return x
    if from_type in _narrow.INTS:  # held as int8/uint8, every value exact: its text is the held value's
        from_type = None
    array = to_numpy(x, from_type)
    if array.dtype.kind not in "biuf":  # bfloat16, float8, float4 ...: their values as float32 text
        array = array.astype(np.float32)
    return np.asarray(array.astype(np.str_), dtype=object)


_INTEGERS = frozenset({TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8,
                       TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64, TensorProto.INT4, TensorProto.UINT4,
                       TensorProto.INT2, TensorProto.UINT2, TensorProto.BOOL})


def _check_target(elem_type: int) -> int:
    if elem_type != TensorProto.STRING:
        runtime_dtype(elem_type)  # a type the runtime has no dtype for fails at session creation
    return elem_type


@kernel("Cast", since=6, until=19)  # 9: strings; 13: bfloat16
class Cast6(Kernel):
    def setup(self, to: int) -> None:
        self.to = _check_target(to)

    def run(self, x):
        return (cast(x, self.to, from_type=_source(self, x, self.to)),)


@kernel("Cast", since=19, until=24)  # 19: float8 and saturate; 21: int4/uint4; 23: float4e2m1
class Cast19(Kernel):
    def setup(self, to: int, saturate: int = 1) -> None:
        self.to, self.saturate = _check_target(to), bool(saturate)

    def run(self, x):
        return (cast(x, self.to, self.saturate, from_type=_source(self, x, self.to)),)


@kernel("Cast", since=24)  # 24: float8e8m0 and round_mode; 25: int2/uint2; 28: float6
class Cast(Kernel):
    def setup(self, to: int, saturate: int = 1, round_mode: str = "up") -> None:
        if round_mode not in _narrow.ROUND_MODES:
            raise ValueError(f"round_mode must be one of {_narrow.ROUND_MODES}, not {round_mode!r}")
        self.to, self.saturate, self.round_mode = _check_target(to), bool(saturate), round_mode

    def run(self, x):
        return (cast(x, self.to, self.saturate, self.round_mode, _source(self, x, self.to)),)


def _source(k: Kernel, x: Any, to: int) -> int | None:
    """x's element type where a cast to string needs it (its text depends on it: an int4 held as int8)."""
    return k.input_type(0, x) if to == TensorProto.STRING and isinstance(x, torch.Tensor) else None


def _target(k: Kernel, like: Any) -> int:
    """The element type CastLike casts to: its second input's, as planned (an int4 is held as int8)."""
    if isinstance(like, np.ndarray):
        return TensorProto.STRING
    return k.input_type(1, like)


@kernel("CastLike", since=15, until=19)
class CastLike15(Kernel):
    def run(self, x, like):
        to = _target(self, like)
        return (cast(x, to, from_type=_source(self, x, to)),)


@kernel("CastLike", since=19, until=24)  # 19: float8 and saturate; 21: int4/uint4; 23: float4e2m1
class CastLike19(Kernel):
    def setup(self, saturate: int = 1) -> None:
        self.saturate = bool(saturate)

    def run(self, x, like):
        to = _target(self, like)
        return (cast(x, to, self.saturate, from_type=_source(self, x, to)),)


@kernel("CastLike", since=24)  # 24: float8e8m0 and round_mode; 25: int2/uint2
class CastLike(Kernel):
    def setup(self, saturate: int = 1, round_mode: str = "up") -> None:
        if round_mode not in _narrow.ROUND_MODES:
            raise ValueError(f"round_mode must be one of {_narrow.ROUND_MODES}, not {round_mode!r}")
        self.saturate, self.round_mode = bool(saturate), round_mode

    def run(self, x, like):
        to = _target(self, like)
        return (cast(x, to, self.saturate, self.round_mode, _source(self, x, to)),)

