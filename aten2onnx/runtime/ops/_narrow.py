"""Conversion to ONNX's narrow element types (float8, float8e8m0, float4e2m1, float6, int4/uint4, int2/uint2) with
the rounding and saturation rules of ONNX's Cast and QuantizeLinear; Cast, CastLike and the Q/DQ kernels share it.

The rules come from the Cast schema (onnx.defs) and ONNX's technical notes on each type (docs/technical/*.md):
floats round to nearest even; float8 saturates or not by `saturate` (the tables in Cast's doc); float4e2m1 and
float6 have no infinity or NaN and always saturate, NaN to the largest value; float8e8m0 rounds by `round_mode`;
a cast to a 2- or 4-bit integer rounds to nearest even and keeps the low bits (wraps), as fixed-point casts do.
Values are computed in float64, where every step below is exact for float64, float32, float16 and bfloat16 inputs.
"""

from __future__ import annotations

import dataclasses

import torch
from onnx import TensorProto

from aten2onnx.runtime.kernel import SUB_BYTE, runtime_dtype


@dataclasses.dataclass(frozen=True)
class MiniFloat:
    """A small binary float format: `mantissa` stored bits, smallest normal exponent `min_exp` (unbiased),
    largest finite value `max`; whether it encodes infinities, NaN and -0."""

    mantissa: int
    min_exp: int
    max: float
    inf: bool
    nan: bool
    neg_zero: bool


FLOATS = {
    TensorProto.FLOAT8E4M3FN: MiniFloat(3, -6, 448.0, inf=False, nan=True, neg_zero=True),
    TensorProto.FLOAT8E4M3FNUZ: MiniFloat(3, -7, 240.0, inf=False, nan=True, neg_zero=False),
    TensorProto.FLOAT8E5M2: MiniFloat(2, -14, 57344.0, inf=True, nan=True, neg_zero=True),
    TensorProto.FLOAT8E5M2FNUZ: MiniFloat(2, -15, 57344.0, inf=False, nan=True, neg_zero=False),
    TensorProto.FLOAT4E2M1: MiniFloat(1, 0, 6.0, inf=False, nan=False, neg_zero=True),
    # float6 (opset 28): docs/technical/float6.md gives -0 -> 0 for both
    TensorProto.FLOAT6E2M3: MiniFloat(3, 0, 7.5, inf=False, nan=False, neg_zero=False),
    TensorProto.FLOAT6E3M2: MiniFloat(2, -2, 28.0, inf=False, nan=False, neg_zero=False),
}

# (bits, signed) of the integer types narrower than a byte, held one value per int8/uint8 element
INTS = {TensorProto.INT4: (4, True), TensorProto.UINT4: (4, False), TensorProto.INT2: (2, True),
        TensorProto.UINT2: (2, False)}

E8M0_MIN_EXP, E8M0_MAX_EXP = -127, 127  # float8e8m0 is 2^e for e in [-127, 127], and NaN (0xFF); no zero, no sign
ROUND_MODES = ("up", "down", "nearest")


def is_narrow(elem_type: int) -> bool:
    """Whether casting to this element type takes the rules here rather than torch's own conversion."""
    return elem_type in FLOATS or elem_type in INTS or elem_type == TensorProto.FLOAT8E8M0


def int_range(elem_type: int) -> tuple[int, int]:
    """The smallest and largest value of a 2- or 4-bit integer type."""
    bits, signed = INTS[elem_type]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def cast(x: torch.Tensor, elem_type: int, saturate: bool = True, round_mode: str = "up") -> torch.Tensor:
    """x as the narrow element type, held as the runtime holds it (see kernel.runtime_dtype)."""
    if elem_type in FLOATS:
        return to_minifloat(x, FLOATS[elem_type], saturate).to(runtime_dtype(elem_type))
    if elem_type in INTS:
        return to_narrow_int(x, elem_type)
    if elem_type == TensorProto.FLOAT8E8M0:
        return to_e8m0(x, saturate, round_mode)
    raise ValueError(f"element type {TensorProto.DataType.Name(elem_type)} is not a narrow type")


def _wide(x: torch.Tensor) -> torch.Tensor:
    if x.dtype in (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz,
                   torch.float8_e8m0fnu):
        x = x.to(torch.float32)  # exact; torch has no float64 conversion for these
    return x.to(torch.float64)


def _pow2(e: torch.Tensor) -> torch.Tensor:
    """2.0 ** e for integer e in [-1022, 1023], built from its bits (exact, unlike a pow on some backends)."""
    return ((e.to(torch.int64) + 1023) << 52).view(torch.float64)


def to_minifloat(x: torch.Tensor, fmt: MiniFloat, saturate: bool) -> torch.Tensor:
    """x rounded to nearest even onto the format's values, as float64 (exactly one of those values, or inf/NaN).

    Past the largest value (after rounding, as Cast's tables say): the largest value when saturating or when the
    format has neither infinity nor NaN; else infinity where it has one, NaN where not. Infinities saturate like
    any other large value (Cast's table, for the FNUZ types too, where docs/technical/float8.md has NaN; onnx's
    reference and onnxruntime follow the table); NaN stays NaN, or becomes the largest value where there is none."""
    x = _wide(x)
    a = x.abs()
    _, exp = torch.frexp(a)  # a = m * 2^exp, m in [0.5, 1)
    lead = (exp.to(torch.int64) - 1).clamp(min=fmt.min_exp)  # exponent of a's leading bit; subnormals share the least
    step = _pow2((lead - fmt.mantissa).clamp(max=1023))  # the distance between neighbouring values around a
    finite = torch.isfinite(a)
    r = torch.where(finite, torch.round(torch.where(finite, a, 0.0) / step) * step, a)  # torch.round: half to even
    over = r > fmt.max
    if saturate or not (fmt.inf or fmt.nan):
        r = torch.where(over, fmt.max, r)
    else:
        r = torch.where(over, float("inf") if fmt.inf else float("nan"), r)
    y = torch.copysign(r, x)  # -0 stays -0, and a NaN keeps its sign where the format has signed NaNs
    if not fmt.nan:
        y = torch.where(torch.isnan(x), fmt.max, y)
    if not fmt.neg_zero:
        y = torch.where(y == 0, 0.0, y)  # a -0 (or a negative value rounding to 0) has no encoding: +0
    return y


def to_e8m0(x: torch.Tensor, saturate: bool, round_mode: str) -> torch.Tensor:
    """x as float8e8m0 (a power of two), rounded by round_mode: "up" (to the power at or above |x|), "down" (at or
    below), "nearest" (ties up, measured linearly: 1.5 * 2^e goes to 2^(e+1)). Cast's table: NaN is NaN; with
    saturate, values past the largest (2^127, infinity included) are the largest and values below the smallest
    (2^-127, zero included) the smallest; without, both are NaN. The sign is ignored (a negative input is
    unspecified; this is what onnx's reference does)."""
    if round_mode not in ROUND_MODES:
        raise ValueError(f"round_mode must be one of {ROUND_MODES}, not {round_mode!r}")
    a = _wide(x).abs()
    m, exp = torch.frexp(a)  # a = m * 2^exp, m in [0.5, 1): a is 2^(exp - 1) * 2m
    e = exp.to(torch.int64) - 1
    if round_mode == "up":
        e = e + (m > 0.5).to(torch.int64)
    elif round_mode == "nearest":
        e = e + (m >= 0.75).to(torch.int64)
    # Cast's table compares x itself, not its rounded value, with the range (without saturate, a value past 2^127
    # is NaN even where rounding down gives 2^127); any x that rounds past 2^127 is past it already
    below = a < 2.0 ** E8M0_MIN_EXP
    above = a > 2.0 ** E8M0_MAX_EXP
    if saturate:
        e = torch.where(below, E8M0_MIN_EXP, torch.where(above, E8M0_MAX_EXP, e))
        bad = torch.isnan(a)
    else:
        bad = torch.isnan(a) | below | above
    bits = torch.where(bad, 255, e + 127)
    return bits.to(torch.uint8).view(torch.float8_e8m0fnu)


def to_narrow_int(x: torch.Tensor, elem_type: int) -> torch.Tensor:
    """x as a 2- or 4-bit integer: floats rounded to nearest even (docs/technical/int4.md, int2.md), then the low
    bits kept, as a fixed-point cast keeps them (two's complement for the signed types). A float out of range, NaN
    or infinity is undefined in ONNX; here the low bits of its int64 conversion (NaN and infinities: 0)."""
    bits, signed = INTS[elem_type]
    if x.dtype.is_floating_point:
        x = _wide(x)
        x = torch.where(torch.isfinite(x), torch.round(x), 0.0).clamp(-2.0 ** 62, 2.0 ** 62)
    v = x.to(torch.int64)
    v = torch.remainder(v, 1 << bits)
    if signed:
        v = torch.where(v >= 1 << (bits - 1), v - (1 << bits), v)
    return v.to(SUB_BYTE[elem_type])
