"""Weights not in memory: tensors on the meta device that say how to compute their values.

A model built on the meta device (or captured from a transformers folder without its weights) is
translated as any other: its weights are meta tensors, which have shapes and dtypes but no data. Each
such weight is tagged with where its value comes from (`source`: a state-dict key), and each weight the
exporter computes from one (a transposed or folded weight) with how (`computed`: a function of other
tensors, run on meta tensors for the result's shape). `materialize` computes a value when a model is
written, from the leaves a `load` function reads (one weight at a time: nothing else is kept).
A view of a lazy tensor (transposed, sliced) needs no tag: it is read through its base.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

_TAG = "_aten2onnx_lazy"


def is_lazy(value: Any) -> bool:
    """Whether value is a tensor without data (on the meta device)."""
    return isinstance(value, torch.Tensor) and value.device.type == "meta"


def source(tensor: torch.Tensor, key: str) -> torch.Tensor:
    """Tag a meta tensor as the weight `key` of the weights bound at save time; returns it."""
    if is_lazy(tensor) and not hasattr(tensor, _TAG):
        setattr(tensor, _TAG, ("load", key))
    return tensor


def derived(fn: Callable[[torch.Tensor], torch.Tensor], value: torch.Tensor) -> torch.Tensor:
    """A meta tensor standing for fn(value), computed only when written (a weight cast to another dtype
    without a second copy of the model)."""
    meta = fn(value.detach().to("meta"))
    setattr(meta, _TAG, ("apply", fn, (value.detach(),), None))
    return meta


def holding(value: torch.Tensor) -> torch.Tensor:
    """A meta tensor standing for `value` (a small tensor kept in memory, such as a buffer computed at
    construction that no checkpoint holds), so that it can meet meta tensors in a capture."""
    return derived(_same, value)


def computable(tensor: torch.Tensor) -> bool:
    """Whether a tensor is real, or lazy with a way to compute it."""
    if not is_lazy(tensor):
        return True
    return hasattr(tensor, _TAG) or (tensor._base is not None and computable(tensor._base))


def alias(original: torch.Tensor, copy: torch.Tensor) -> torch.Tensor:
    """Tag `copy` (a detached or re-wrapped `original`) as having original's value; returns copy."""
    if is_lazy(copy) and copy is not original and not hasattr(copy, _TAG) and is_lazy(original):
        setattr(copy, _TAG, ("apply", _same, (original,), None))
    return copy


def _same(x: torch.Tensor) -> torch.Tensor:
    return x


def apply(fn: Callable[..., Any], *inputs: Any) -> Any:
    """fn(*inputs); where an input is lazy, fn runs on the meta tensors and each tensor it returns is
    tagged to be computed by fn from the inputs' values when written. fn must be pure and must give
    the same shapes on meta tensors as on real ones (torch ops do)."""
    result = fn(*inputs)
    if not any(is_lazy(i) for i in inputs):
        return result
    def tag(r: Any, index: int | None) -> None:
        if isinstance(r, torch.Tensor) and not any(r is i for i in inputs):  # (an input returned is itself)
            setattr(r, _TAG, ("apply", fn, inputs, index))

    if isinstance(result, torch.Tensor):
        tag(result, None)
    else:
        for i, r in enumerate(result):
            tag(r, i)
    return result


class UnboundWeightError(LookupError):
    """A lazy tensor with no way to compute it (raised with the weight's name by the caller)."""


def materialize(tensor: torch.Tensor, load: Callable[[str, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """The value of a lazy tensor: `load(key, like)` gives a source's value (shaped and typed as the
    meta tensor `like`); anything else is computed from those. A real tensor is returned as it is."""
    if not is_lazy(tensor):
        return tensor
    tag = getattr(tensor, _TAG, None)
    if tag is None:
        base = tensor._base
        if base is None:
            raise UnboundWeightError("a tensor on the meta device that is no weight of the model")
        value = materialize(base, load)
        if value.stride() != base.stride():
            value = torch.empty_strided(base.shape, base.stride(), dtype=value.dtype).copy_(value)
        return value.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())
    if tag[0] == "load":
        value = load(tag[1], tensor)
        if tuple(value.shape) != tuple(tensor.shape):
            raise UnboundWeightError(f"the weight {tag[1]!r} given has shape {tuple(value.shape)}, the model's "
                                     f"{tuple(tensor.shape)}")
        return value.to(tensor.dtype).contiguous()
    _, fn, inputs, index = tag
    if index is not None and _last[0] is fn and _last[1] is inputs:
        return _last[2][index]  # (another part of the result just computed)
    result = fn(*(materialize(i, load) if isinstance(i, torch.Tensor) else i for i in inputs))
    if index is None:
        return result
    _last[:] = [fn, inputs, result]
    return result[index]


# The last result with several parts (a weight quantized to values, scales and zero points), kept so that
# its parts, written one after another, read and compute it once; the next such result replaces it.
_last: list[Any] = [None, None, None]


def keys(tensor: torch.Tensor) -> set[str]:
    """The source keys a lazy tensor's value is computed from."""
    if not is_lazy(tensor):
        return set()
    tag = getattr(tensor, _TAG, None)
    if tag is None:
        return keys(tensor._base) if tensor._base is not None else set()
    if tag[0] == "load":
        return {tag[1]}
    return set().union(*(keys(i) for i in tag[2] if isinstance(i, torch.Tensor)))
