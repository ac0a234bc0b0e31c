"""What differs between the torch releases we support (2.13, 2.14), decided here once, so that a rename
in torch is one edit and never a deprecation warning or an AttributeError in the middle of an export."""

from __future__ import annotations

import functools
from typing import Any, Mapping

import torch


def size_hints(shape_env: Any) -> Mapping[Any, Any]:
    """The example value of each backed size symbol: ShapeEnv.backed_var_to_val (torch 2.13 deprecates
    var_to_val for it), else var_to_val on a torch that has only that."""
    hints = getattr(shape_env, "backed_var_to_val", None)
    return hints if hints is not None else shape_env.var_to_val


@functools.cache
def quantile_rank_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the running torch computes quantile's ranks (q * (n - 1)) and interpolation weights in, for
    an input of `dtype`: torch 2.14 computes them in float64 (the weight then rounded to the input's dtype
    for lerp), 2.13 in the input's dtype. Read from torch itself: q = 0.7 in float32 times 5 is 3.5 in
    float32, which rounds to 4, and 3.49999994 in float64, which rounds to 3."""
    if dtype == torch.float64:
        return torch.float64
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():  # real tensors, whatever mode the caller traces under
        x = torch.arange(6, dtype=dtype)
        rank = torch.quantile(x, torch.tensor(0.7, dtype=dtype), interpolation="nearest")
    return torch.float64 if int(rank) == 3 else dtype
