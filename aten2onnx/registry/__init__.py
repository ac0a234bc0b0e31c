"""The symbolic-function registry: ATen overload key -> {opset: handler}, with floor dispatch and a
user layer that wins over the built-ins at every opset at or above its own."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

from aten2onnx.errors import RegistrationError
from aten2onnx.registry._schema import (
    OpTarget,
    bind,
    check_signature,
    functional_twin,
    is_mutating,
    is_python_key,
    normalize_key,
    overload_key,
    resolve_overload,
    written_arguments,
)

__all__ = [
    "Handler",
    "Registry",
    "REGISTRY",
    "COMPLEX",
    "register",
    "register_complex",
    "bind",
    "functional_twin",
    "is_mutating",
    "overload_key",
    "written_arguments",
]

Handler = Callable[..., Any]

@dataclasses.dataclass(frozen=True)
class Resolved:
    """What dispatch found for one FX target: the handler, and the schema to bind arguments with."""

    handler: Handler
    key: str
    opset: int
    schema: torch._C.FunctionSchema | None
    user: bool
    via_twin: str | None  # the functional overload's key when an in-place op was dispatched to it


class Registry:
    def __init__(self) -> None:
        self._builtin: dict[str, dict[int, Handler]] = {}
        self._user: dict[str, dict[int, Handler]] = {}

    # -- registration ------------------------------------------------------------------------
    @staticmethod
    def validate(name: str, fn: Handler) -> str:
        """The overload key for name, once fn is checked against its schema (RegistrationError if not)."""
        key = normalize_key(name)
        if not is_python_key(key):
            check_signature(fn, resolve_overload(key)._schema, key)
        return key

    def add(self, name: str, opset: int, fn: Handler, *, user: bool) -> str:
        if not isinstance(opset, int) or opset < 1:
            raise RegistrationError(f"{name}: opset must be a positive int, got {opset!r}")
        key = self.validate(name, fn)
        table = (self._user if user else self._builtin).setdefault(key, {})
        if opset in table and not user:
            raise RegistrationError(
                f"{key} is registered twice at opset {opset}: {table[opset].__module__}.{table[opset].__qualname__} "
                f"and {fn.__module__}.{fn.__qualname__}"
            )
        table[opset] = fn
        return key

    def remove_user(self, name: str, opset: int | None = None) -> None:
        key = normalize_key(name)
        table = self._user.get(key)
        if not table or (opset is not None and opset not in table):
            have = sorted(table) if table else []
            raise KeyError(f"no user symbolic for {key}" + (f" at opset {opset}" if opset else "") + f"; user opsets: {have}")
        if opset is None:
            del self._user[key]
        else:
            del table[opset]
            if not table:
                del self._user[key]

    # -- lookup -------------------------------------------------------------------------------
    def registered_opsets(self, key: str) -> tuple[int, ...]:
        return tuple(sorted(set(self._builtin.get(key, {})) | set(self._user.get(key, {}))))

    def keys(self) -> list[str]:
        return sorted(set(self._builtin) | set(self._user))

    def builtin_table(self) -> dict[str, tuple[int, ...]]:
        return {k: tuple(sorted(v)) for k, v in sorted(self._builtin.items())}

    def builtin_handlers(self) -> dict[str, dict[int, Handler]]:
        """{overload key: {opset: handler}} of the built-in symbolics, sorted."""
        return {k: dict(sorted(v.items())) for k, v in sorted(self._builtin.items())}

    def _floor(self, key: str, opset: int) -> tuple[Handler, int, bool] | None:
        for table, user in ((self._user, True), (self._builtin, False)):
            versions = [v for v in table.get(key, ()) if v <= opset]
            if versions:
                best = max(versions)
                return table[key][best], best, user
        return None

    def resolve(self, target: OpTarget, opset: int) -> Resolved | None:
        """The handler for target at opset (floor dispatch), or None when there is none.

        An in-place or out= overload without its own handler dispatches to its functional twin.
        """
        key = overload_key(target)
        found = self._floor(key, opset)
        schema = target._schema if isinstance(target, torch._ops.OpOverload) else None
        if found is not None:
            handler, version, user = found
            return Resolved(handler, key, version, schema, user, None)
        if isinstance(target, torch._ops.OpOverload) and is_mutating(target):
            twin = functional_twin(target)
            if twin is not None:
                twin_key = overload_key(twin)
                found = self._floor(twin_key, opset)
                if found is not None:
                    handler, version, user = found
                    return Resolved(handler, key, version, twin._schema, user, twin_key)
        return None

    def opsets_for(self, target: OpTarget) -> tuple[int, ...]:
        """Opsets with a handler for target, counting its functional twin's."""
        key = overload_key(target)
        opsets = set(self.registered_opsets(key))
        if isinstance(target, torch._ops.OpOverload) and is_mutating(target):
            twin = functional_twin(target)
            if twin is not None:
                opsets |= set(self.registered_opsets(overload_key(twin)))
        return tuple(sorted(opsets))


REGISTRY = Registry()
# Handlers for nodes with a complex tensor among their inputs or results. Such tensors are carried
# as real pairs (ir/builder.py), which a handler written for real tensors would misread, so
# the translator dispatches those nodes here only.
COMPLEX = Registry()


def register(*names: str, opset: int) -> Callable[[Handler], Handler]:
    """Register a built-in symbolic for one or more overloads at opset; used by symbolic/opsetN.py
    as `register = functools.partial(registry.register, opset=N)`."""
    return _registrar(REGISTRY, names, opset)


def register_complex(*names: str, opset: int) -> Callable[[Handler], Handler]:
    """Register a built-in symbolic for nodes with complex tensors (carried as real pairs); used by
    symbolic/opsetN_complex.py as `register = functools.partial(registry.register_complex, opset=N)`."""
    return _registrar(COMPLEX, names, opset)


def _registrar(table: Registry, names: tuple[str, ...], opset: int) -> Callable[[Handler], Handler]:
    def decorator(fn: Handler) -> Handler:
        for name in names:
            table.add(name, opset, fn, user=False)
        return fn

    return decorator
