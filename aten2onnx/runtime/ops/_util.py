"""Helpers shared by the kernel families: axis handling and computing in a wider dtype where
torch has no kernel for the input's (uint16/uint32/uint64 have almost none)."""

from __future__ import annotations

from typing import Callable, Sequence

import torch

# torch keeps uint16/32/64 as storage types; arithmetic on them runs in int64 and casts back.
WIDEN = {torch.uint16: torch.int64, torch.uint32: torch.int64, torch.uint64: torch.int64}


def widened(fn: Callable[..., torch.Tensor], *tensors: torch.Tensor, cast_back: bool = True) -> torch.Tensor:
    """fn on the tensors cast to a dtype torch computes in; the result cast back to the first's dtype."""
    dtype = tensors[0].dtype
    wide = WIDEN.get(dtype, dtype)
    result = fn(*[t.to(wide) if isinstance(t, torch.Tensor) and t.dtype in WIDEN else t for t in tensors])
    return result.to(dtype) if cast_back and result.dtype == wide and wide != dtype else result


def norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def norm_axes(axes: Sequence[int], rank: int) -> list[int]:
    return [a + rank if a < 0 else a for a in axes]


def int_list(t: torch.Tensor | None) -> list[int] | None:
    """A 1-D int tensor (shape, axes, pads input) as a Python list; None stays None."""
    return None if t is None else [int(v) for v in t.reshape(-1).tolist()]


def scalar(t: torch.Tensor | None, default=None):
    return default if t is None else t.reshape(-1)[0].item()
