"""Cast and CastLike, including the float8 types torch has (with ONNX's saturate rules)."""

from __future__ import annotations

import torch

from aten2onnx import _dtypes
from aten2onnx.runtime.kernel import Kernel, kernel

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


@kernel("Cast", since=6)  # 9: strings; 13: bfloat16; 19: float8 and saturate; 21: int4/uint4; 23: float4e2m1;
# 24: float8e8m0 and round_mode (refused as an unknown attribute); 25: int2/uint2; 28: float6
class Cast(Kernel):
    """Cast: `saturate` (opset 19) only affects float8 targets."""

    def setup(self, to: int, saturate: int = 1) -> None:
        self.dtype = _dtypes.to_torch(to)
        self.saturate = bool(saturate)

    def run(self, x):
        return (_cast(x, self.dtype, self.saturate),)


@kernel("CastLike", since=15)  # 19: float8 and saturate; 24: float8e8m0 and round_mode (refused as an unknown attribute)
class CastLike(Kernel):
    def setup(self, saturate: int = 1) -> None:
        self.saturate = bool(saturate)

    def run(self, x, like):
        return (_cast(x, like.dtype, self.saturate),)
