"""transformers' KV caches as inputs and outputs of a plain export: DynamicCache made flattenable for
torch.export (transformers' own registration, when the model's code has imported transformers), and
the flattened cache tensors named as onnxruntime-genai and optimum name them: past_key_values.<i>.key
and .value in, present.<i>.key and .value out, the other outputs by their ModelOutput keys (logits)."""

from __future__ import annotations

import re
import sys
from typing import Any

import torch
import torch.utils._pytree as pytree

# the keys transformers' DynamicCache flattening gives its key and value lists
_CACHE_KEYS = {"key_cache": "key", "value_cache": "value"}


def register() -> None:
    """Make transformers' DynamicCache a pytree node (once; transformers' own flattening), when the
    process has imported transformers: a model that takes a cache then captures with no registration
    by the user."""
    if "transformers" not in sys.modules:
        return
    try:
        from transformers.integrations.executorch import register_dynamic_cache_export_support
    except ImportError:
        return
    register_dynamic_cache_export_support()


def _cache_name(keys: list[Any], prefix: str) -> str | None:
    """prefix.<i>.key/value for a path through a cache's key_cache/value_cache list, else None."""
    for a, b in zip(keys, keys[1:]):
        if a in _CACHE_KEYS and isinstance(b, int):
            return f"{prefix}.{b}.{_CACHE_KEYS[a]}"
    return None


def _key(entry: Any) -> Any:
    if isinstance(entry, pytree.MappingKey):
        return entry.key
    if isinstance(entry, pytree.SequenceKey):
        return entry.idx
    if isinstance(entry, pytree.GetAttrKey):
        return entry.name
    return str(entry)


def input_names(args: tuple, kwargs: dict | None, defaults: list[str]) -> list[str] | None:
    """defaults: the tensor inputs' names. The graph's input names with cache tensors named past_key_values.<i>.key/value (the other
    inputs keep their defaults); None when no input is a cache."""
    leaves = [(path, leaf) for path, leaf in pytree.tree_flatten_with_path((args, kwargs or {}))[0]
              if isinstance(leaf, torch.Tensor)]
    if len(leaves) != len(defaults):
        return None
    names = [_cache_name([_key(k) for k in path], "past_key_values") for path, _ in leaves]
    if not any(names):
        return None
    return [name or default for name, default in zip(names, defaults)]


def _spec_paths(spec: pytree.TreeSpec, prefix: list[Any]) -> list[list[Any]]:
    """The key path of each leaf of spec, read from its node contexts (dict-like keys, a cache's list
    names, or child indices)."""
    if spec.is_leaf():
        return [prefix]
    children = list(spec.children()) if callable(getattr(spec, "children", None)) else spec.children_specs
    context = spec.context
    if isinstance(context, (list, tuple)) and len(context) == len(children) and all(isinstance(c, str) for c in context):
        keys = list(context)
    elif (isinstance(context, (list, tuple)) and context and isinstance(context[0], (list, tuple))
          and len(context[0]) == len(children)):
        keys = list(context[0])  # DynamicCache: [dict keys, layout]
    else:
        keys = list(range(len(children)))
    return [path for key, child in zip(keys, children) for path in _spec_paths(child, prefix + [key])]


def output_names(out_spec: pytree.TreeSpec | None) -> list[str] | None:
    """Per leaf of the model's output, its name when the output holds a cache: present.<i>.key/value
    for the cache's tensors, the key path joined by dots for the others (logits); None when no output
    is a cache."""
    if out_spec is None:
        return None
    paths = _spec_paths(out_spec, [])
    cached = [_cache_name(path, "present") for path in paths]
    if not any(cached):
        return None
    names = []
    for path, name in zip(paths, cached):
        names.append(name or ".".join(str(k) for k in path) or "output")
    clean = [re.sub(r"[^0-9A-Za-z_.]", "_", name) for name in names]
    return clean if len(set(clean)) == len(clean) else None
