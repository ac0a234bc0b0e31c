"""What differs between the torch releases we support (2.13, 2.14), decided here once, so that a rename
in torch is one edit and never a deprecation warning or an AttributeError in the middle of an export."""

from __future__ import annotations

from typing import Any, Mapping


def size_hints(shape_env: Any) -> Mapping[Any, Any]:
    """The example value of each backed size symbol: ShapeEnv.backed_var_to_val (torch 2.13 deprecates
    var_to_val for it), else var_to_val on a torch that has only that."""
    hints = getattr(shape_env, "backed_var_to_val", None)
    return hints if hints is not None else shape_env.var_to_val
