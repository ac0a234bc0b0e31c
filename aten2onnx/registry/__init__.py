"""The symbolic-function registry: one table of entries (overload key, opset, real or complex, built-in
or user, and for a complex entry made from a real handler the lifting that made it), with floor
dispatch and a user layer that wins over the built-ins at every opset at or above its own."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import torch

from aten2onnx.errors import RegistrationError
from aten2onnx.registry._schema import (
    OpTarget,
    bind,
    check_signature,
    LIBRARIES,
    functional_twin,
    is_loaded,
    is_mutating,
    is_python_key,
    normalize_key,
    op_exists,
    overload_key,
    resolve_overload,
    written_arguments,
)

__all__ = [
    "Entry",
    "Handler",
    "Registry",
    "REGISTRY",
    "Resolved",
    "Resolver",
    "Unavailable",
    "register",
    "bind",
    "functional_twin",
    "is_mutating",
    "overload_key",
    "written_arguments",
]

Handler = Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class Entry:
    """One registration: `handler` translates `key` at every target opset from `opset` up (until a
    newer entry of the same kind), for nodes with real tensors only or, `complex`, for nodes with a
    complex tensor among their inputs or results (carried as real pairs, see ir/builder.py, which a
    handler written for real tensors would misread).

    A complex entry may be a lifting (symbolic/_lifting.py): made from the real translation of the
    overload `lifts`, applied as `lifting` says ("partwise": to each part...), rather than written out.
    """

    key: str
    opset: int
    handler: Handler
    complex: bool = False
    user: bool = False
    lifts: str | None = None
    lifting: str | None = None


@dataclasses.dataclass(frozen=True)
class Unavailable:
    """A built-in registration kept aside because the running torch cannot take it: `exists` False when
    the overload is not in this torch (registered for another version), True when its schema differs."""

    key: str
    opsets: tuple[int, ...]
    handlers: tuple[str, ...]
    reason: str
    exists: bool


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
    """Every registration in one table: per overload key, its entries (built-in and user, real and
    complex). Dispatch for a kind takes, among that kind's entries at or below the target opset, the
    newest user entry, else the newest built-in one (floor dispatch)."""

    def __init__(self) -> None:
        self._entries: dict[str, list[Entry]] = {}
        self._unchecked: set[str] = set()  # keys of ops of a library not loaded when registered
        # built-in registrations this torch cannot take (the overload is gone, or its schema changed):
        # kept aside with the reason, so that a newer or older torch never breaks `import aten2onnx`
        self._unavailable: dict[str, Unavailable] = {}

    # -- registration ------------------------------------------------------------------------
    @staticmethod
    def validate(name: str, fn: Handler) -> str:
        """The overload key for name, once fn is checked against its schema (RegistrationError if not)."""
        key = normalize_key(name)
        if not is_python_key(key):
            check_signature(fn, resolve_overload(key)._schema, key)
        return key

    def _check_loaded(self, key: str) -> bool:
        """Check the handlers of an op registered before its library was loaded, once it is: False
        (and the built-in entries kept aside) when the loaded library lacks the op or changed its schema."""
        if key not in self._unchecked:
            return True
        self._unchecked.discard(key)
        try:
            schema = resolve_overload(key)._schema
        except RegistrationError as e:
            schema, failure = None, e
        for entry in list(self._entries.get(key, ())):
            try:
                if schema is None:
                    raise failure
                check_signature(entry.handler, schema, key)
            except RegistrationError as e:
                if entry.user:
                    raise
                self._entries[key].remove(entry)
                self._set_aside(key, entry.opset, entry.handler, entry.complex, e)
        if not self._entries.get(key):
            self._entries.pop(key, None)
            return False
        return True

    def _set_aside(self, key: str, opset: int, fn: Handler, complex: bool, error: RegistrationError) -> None:
        kept = self._unavailable.get(key)
        handlers = (kept.handlers if kept else ()) + (f"{fn.__module__}.{fn.__qualname__}",)
        opsets = tuple(sorted({*(kept.opsets if kept else ()), opset}))
        self._unavailable[key] = Unavailable(key, opsets, handlers, str(error), op_exists(key))

    def unavailable(self) -> list[Unavailable]:
        """The built-in registrations this torch could not take, sorted by key: their overload does not
        exist here (a newer or older torch) or its schema differs from the handler's signature."""
        return [self._unavailable[k] for k in sorted(self._unavailable)]

    def add(self, name: str, opset: int, fn: Handler, *, user: bool, complex: bool = False,
            lifts: str | None = None, lifting: str | None = None) -> str:
        if not isinstance(opset, int) or opset < 1:
            raise RegistrationError(f"{name}: opset must be a positive int, got {opset!r}")
        key = normalize_key(name)
        if key.split("::", 1)[0] in LIBRARIES and not is_loaded(key):
            self._unchecked.add(key)  # checked against its schema when its library is loaded
        elif user:
            key = self.validate(name, fn)
        else:
            try:
                key = self.validate(name, fn)
            except RegistrationError as e:
                self._set_aside(key, opset, fn, complex, e)
                return key
        entries = self._entries.setdefault(key, [])
        same = [e for e in entries if (e.opset, e.complex, e.user) == (opset, complex, user)]
        if same and not user:
            old = same[0].handler
            raise RegistrationError(
                f"{key} is registered twice at opset {opset}{' for complex tensors' if complex else ''}: "
                f"{old.__module__}.{old.__qualname__} and {fn.__module__}.{fn.__qualname__}"
            )
        entries[:] = [e for e in entries if e not in same]  # a user registration replaces its own
        entries.append(Entry(key, opset, fn, complex, user, lifts, lifting))
        return key

    def remove_user(self, name: str, opset: int | None = None, *, complex: bool = False) -> None:
        key = normalize_key(name)
        mine = [e for e in self._entries.get(key, ()) if e.user and e.complex == complex]
        gone = [e for e in mine if opset is None or e.opset == opset]
        if not gone:
            have = sorted(e.opset for e in mine)
            raise KeyError(f"no user symbolic for {key}" + (f" at opset {opset}" if opset else "") + f"; user opsets: {have}")
        self._entries[key] = [e for e in self._entries[key] if e not in gone]
        if not self._entries[key]:
            del self._entries[key]

    # -- lookup -------------------------------------------------------------------------------
    def entries(self, *, complex: bool | None = None, user: bool | None = False) -> list[Entry]:
        """Entries sorted by key and opset (None: either kind; by default the built-ins only)."""
        return sorted((e for es in self._entries.values() for e in es
                       if (complex is None or e.complex == complex) and (user is None or e.user == user)),
                      key=lambda e: (e.key, e.opset, e.complex))

    def registered_opsets(self, key: str, *, complex: bool = False) -> tuple[int, ...]:
        return tuple(sorted({e.opset for e in self._entries.get(key, ()) if e.complex == complex}))

    def keys(self, *, complex: bool = False) -> list[str]:
        return sorted(k for k, es in self._entries.items() if any(e.complex == complex for e in es))

    def builtin_table(self, *, complex: bool = False) -> dict[str, tuple[int, ...]]:
        return {k: tuple(v) for k, v in self.builtin_handlers(complex=complex).items()}

    def builtin_handlers(self, *, complex: bool = False) -> dict[str, dict[int, Handler]]:
        """{overload key: {opset: handler}} of the built-in symbolics of one kind, sorted."""
        table: dict[str, dict[int, Handler]] = {}
        for e in self.entries(complex=complex):
            table.setdefault(e.key, {})[e.opset] = e.handler
        return table

    def _floor(self, key: str, opset: int, complex: bool) -> Entry | None:
        fitting = [e for e in self._entries.get(key, ()) if e.complex == complex and e.opset <= opset]
        pool = [e for e in fitting if e.user] or fitting
        return max(pool, key=lambda e: e.opset) if pool else None

    def resolve(self, target: OpTarget, opset: int, *, complex: bool = False) -> Resolved | None:
        """The handler of one kind for target at opset (floor dispatch), or None when there is none.

        An in-place or out= overload without its own handler dispatches to its functional twin.
        """
        key = overload_key(target)
        if key in self._unchecked and not self._check_loaded(key):
            return None
        found = self._floor(key, opset, complex)
        schema = target._schema if isinstance(target, torch._ops.OpOverload) else None
        if found is not None:
            return Resolved(found.handler, key, found.opset, schema, found.user, None)
        if isinstance(target, torch._ops.OpOverload) and is_mutating(target):
            twin = functional_twin(target)
            if twin is not None:
                twin_key = overload_key(twin)
                found = self._floor(twin_key, opset, complex)
                if found is not None:
                    return Resolved(found.handler, key, found.opset, twin._schema, found.user, twin_key)
        return None

    def opsets_for(self, target: OpTarget, *, complex: bool = False) -> tuple[int, ...]:
        """Opsets with a handler of one kind for target, counting its functional twin's."""
        key = overload_key(target)
        opsets = set(self.registered_opsets(key, complex=complex))
        if isinstance(target, torch._ops.OpOverload) and is_mutating(target):
            twin = functional_twin(target)
            if twin is not None:
                opsets |= set(self.registered_opsets(overload_key(twin), complex=complex))
        return tuple(sorted(opsets))


class Resolver:
    """The one dispatch of an export at one opset: per-call overrides first (`custom_symbolics`, which
    translate real nodes), then the registry (its user layer, then its built-ins) for the node's kind.

    The translator resolves every node through it, and a handler that builds on another overload's
    translation (a complex lifting, a complex handler applying the real one to the pairs) asks it too,
    through its GraphBuilder's `resolve` (a call with the key), so overrides and user symbolics reach
    it. The rule: a user symbolic translates real nodes unless registered with complex=True; a complex
    node reaches a real one only where its translation is the real translation applied to real tensors
    (its parts, or the pairs), which a correct real symbolic computes right.
    """

    def __init__(self, registry: Registry, opset: int, overrides: Mapping[str, Handler] | None = None) -> None:
        self.registry = registry
        self.opset = opset
        self.overrides = dict(overrides or {})

    def resolve(self, target: OpTarget, *, complex: bool = False) -> Resolved | None:
        """The handler for an FX target of one kind, or None when there is none."""
        fn = None if complex else self.overrides.get(overload_key(target))
        if fn is not None:
            schema = target._schema if isinstance(target, torch._ops.OpOverload) else None
            return Resolved(fn, overload_key(target), self.opset, schema, True, None)
        return self.registry.resolve(target, self.opset, complex=complex)

    def __call__(self, key: str) -> Handler | None:
        """The real translation of the overload `key`, or None when there is none."""
        resolved = self.resolve(resolve_overload(key))
        return None if resolved is None else resolved.handler


REGISTRY = Registry()


def register(*names: str, opset: int, complex: bool = False, lifts: str | None = None,
             lifting: str | None = None, library: str | None = None) -> Callable[[Handler], Handler]:
    """Register a built-in symbolic for one or more overloads at opset; used by symbolic/opsetN.py
    as `register = functools.partial(registry.register, opset=N)`, and with `complex=True` by the
    modules of handlers for complex tensors (opset9_complex*.py). `library`: the module whose import
    defines the ops' namespace (a custom op of a Python library, `transformers.integrations.moe`), so
    registering does not import it (see _schema.LIBRARIES)."""

    def decorator(fn: Handler) -> Handler:
        if library is not None:
            for name in names:
                LIBRARIES.setdefault(name.split("::", 1)[0], library)
        for name in names:
            REGISTRY.add(name, opset, fn, user=False, complex=complex, lifts=lifts, lifting=lifting)
        return fn

    return decorator
