"""Cast and CastLike, including the float8 types torch has (with ONNX's saturate rules)."""

from __future__ import annotations

import torch

from aten2onnx import _dtypes
from aten2onnx.runtime.kernel import Kernel

_FLOAT8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz)
# Above this magnitude a non-saturating cast to float8_e4m3fn is NaN (it has no infinity); torch
# itself would saturate. Halfway between the largest finite value, 448, and the next step, 480.
_E4M3FN_OVERFLOW = 464.0


def _cast(x: torch.Tensor, dtype: torch.dtype, saturate: bool) -> torch.Tensor:
    if x.dtype == dtype:
        return x
    if dtype in _FLOAT8 and x.dtype.is_floating_point:
        limit = torch.finfo(dtype).max
        if saturate:
            x = torch.clamp(x, -limit, limit)
        elif dtype == torch.float8_e4m3fn:
            x = torch.where(torch.abs(x) > _E4M3FN_OVERFLOW, float("nan"), x)
    return x.to(dtype)


class Cast(Kernel):
    """Cast: `saturate` (opset 19) only affects float8 targets."""

    op_type, since_version = "Cast", 6
    covers = (9, 13)  # 9: strings, 13: bfloat16

    def setup(self, to: int, saturate: int = 1) -> None:
        self.dtype = _dtypes.to_torch(to)
        self.saturate = bool(saturate)

    def run(self, x):
        return (_cast(x, self.dtype, self.saturate),)


class CastLike(Kernel):
    op_type, since_version = "CastLike", 15

    def setup(self, saturate: int = 1) -> None:
        self.saturate = bool(saturate)

    def run(self, x, like):
        return (_cast(x, like.dtype, self.saturate),)


class Cast19(Cast):
    """Cast from opset 19: float8 targets and `saturate`; 21 adds int4/uint4, 23 float4e2m1."""

    since_version = 19
    covers = (21, 23)


class Cast24(Cast):
    """Cast from opset 24: float8e8m0 and its `round_mode`; 25 adds int2/uint2, 28 float6."""

    since_version = 24
    covers = (25, 28)


class CastLike19(CastLike):
    """CastLike from opset 19: float8 targets and `saturate`."""

    since_version = 19
    covers = (21, 23)


class CastLike24(CastLike):
    """CastLike from opset 24: float8e8m0 and its `round_mode`."""

    since_version = 24
    covers = (25,)


KERNELS = (Cast, CastLike, Cast19, Cast24, CastLike19, CastLike24)
