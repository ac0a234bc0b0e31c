"""What differs between the transformers releases we support, decided here once: the keyword a model's
forward takes its KV cache by (`past_key_values` up to 5.x, `cache` from 5.24, which renames the old one
with a deprecation warning) and where its output holds the cache. Everything else reads the cache by its
structure (a `transformers.Cache` and its layers' keys and values), never by an argument's name, so the
graph's inputs and outputs (`past_key_values.<i>.key`, `present.<i>.key`) are the same on every release."""

from __future__ import annotations

import inspect
from typing import Any

# the cache keyword, newest first: a release takes the first its forward names
CACHE_KEYWORDS = ("cache", "past_key_values")


def cache_keyword(forward: Any) -> str:
    """The keyword `forward` takes a KV cache by: the first of CACHE_KEYWORDS its signature names
    (past_key_values when it names neither, as releases before the rename and **kwargs forwards take)."""
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return CACHE_KEYWORDS[-1]
    return next((name for name in CACHE_KEYWORDS if name in params), CACHE_KEYWORDS[-1])


def is_cache(value: Any) -> bool:
    """True for a transformers Cache (any release that has the class)."""
    try:
        from transformers import Cache
    except ImportError:
        return False
    return isinstance(value, Cache)


def output_cache(out: Any) -> Any | None:
    """The Cache a model's output holds (a ModelOutput, a dict or a tuple), found by its type; None if none."""
    values = out.values() if hasattr(out, "values") and callable(out.values) else out if isinstance(out, (tuple, list)) else ()
    return next((v for v in values if is_cache(v)), None)


def pop_cache(kwargs: dict[str, Any]) -> Any | None:
    """The cache a layer's forward was called with, under whichever keyword the calling release used
    (removed from kwargs, so that neither name is passed on twice)."""
    found = None
    for name in CACHE_KEYWORDS:
        value = kwargs.pop(name, None)
        found = value if found is None else found
    return found
