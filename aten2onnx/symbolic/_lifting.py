"""Complex entries made from real translations: a family module's table names, per complex overload,
the real overload whose translation it applies, and the family's lifting (to each part, on the pairs,
...) says how; `lift` registers one generated handler per row, with that metadata, instead of a
written-out forwarder per overload."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

from aten2onnx import registry
from aten2onnx.errors import RegistrationError
from aten2onnx.ir import GraphBuilder
from aten2onnx.registry._schema import python_name, resolve_overload


@dataclasses.dataclass(frozen=True)
class Lift:
    """One row of a lifting table: the complex overloads `keys` are translated by the real translation
    of `real` (their own key when None), lifted as the table's family says; `spec` is what the family
    needs to know of the arguments (which are complex data, which are dims of the complex tensor)."""

    keys: tuple[str, ...]
    spec: Any = None
    real: str | None = None


# A lifting: how(g, real, spec, arguments), arguments the complex node's by schema name.
Lifting = Callable[[GraphBuilder, str, Any, dict[str, Any]], Any]


def lift(table: list[Lift], how: Lifting, lifting: str, *, opset: int) -> None:
    """Register, for each key of each row, a complex handler applying the real translation through `how`,
    under the entry metadata `lifts` (the real overload) and `lifting` (the family's name)."""
    for row in table:
        for key in row.keys:
            real = row.real or key
            handler = _handler(key, real, row.spec, how)
            registry.register(key, opset=opset, complex=True, lifts=real, lifting=lifting)(handler)


def _handler(key: str, real: str, spec: Any, how: Lifting) -> Callable[..., Any]:
    """A handler for key taking its schema's arguments (as registration checks them) and applying how."""
    signature = _signature(key)
    if real != key and _names(real) != _names(key):
        raise RegistrationError(f"{key} cannot lift {real}: their arguments differ ({_names(key)}, {_names(real)})")

    def handler(g, *args, **kwargs):
        bound = signature.bind(g, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        del arguments["g"]
        return how(g, real, spec, arguments)

    handler.__signature__ = signature
    handler.__wrapped__ = how  # what coverage reads for the cases the handler leaves to fallback
    handler.__name__ = handler.__qualname__ = "aten_" + key.split("::", 1)[1].replace(".", "_")
    handler.__module__ = how.__module__
    handler.__doc__ = str(resolve_overload(key)._schema).split("::", 1)[1]
    return handler


def _names(key: str) -> list[str]:
    return [python_name(a.name) for a in resolve_overload(key)._schema.arguments]


def _signature(key: str) -> inspect.Signature:
    """(g, <the schema's arguments>) with their defaults, keyword-only ones after '*'."""
    params = [inspect.Parameter("g", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for arg in resolve_overload(key)._schema.arguments:
        kind = inspect.Parameter.KEYWORD_ONLY if arg.kwarg_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = arg.default_value if arg.has_default_value() else inspect.Parameter.empty
        params.append(inspect.Parameter(python_name(arg.name), kind, default=default))
    return inspect.Signature(params)
