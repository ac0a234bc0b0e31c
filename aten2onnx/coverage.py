"""Operator coverage read from the symbolic registry: which overloads have built-in symbolics, at which
opsets, for complex tensors too, and which cases they leave to ATen fallback (`aten2onnx ops`, docs/operators.md)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types
from collections.abc import Callable

import torch


@dataclasses.dataclass(frozen=True)
class Limitation:
    """A `raise NotImplementedError(...)` reachable from a handler: the handler's opset, the
    function that raises (the handler or a helper it calls), and the message as written."""

    opset: int
    function: str
    message: str


@dataclasses.dataclass(frozen=True)
class Entry:
    key: str
    opsets: tuple[int, ...]
    limitations: tuple[Limitation, ...]
    lifts: str | None = None  # a complex entry made from the real translation of this overload...
    lifting: str | None = None  # ...applied so ("each part", "on the pairs": symbolic/_lifting.py)
    native_from: int = 0  # the lowest opset it translates at: a lifted entry's real translation's too
    # where torch keeps the op's decomposition (decompose.OWN_KERNEL or decompose.TABLE), which a refused
    # case, or an opset below the lowest handler, is exported as before it falls back; None: none
    decomposition: str | None = None

    def __post_init__(self) -> None:
        if not self.native_from:
            object.__setattr__(self, "native_from", self.opsets[0])

    @property
    def lifted(self) -> str:
        """How a lifted complex entry translates, in words; empty for a written-out one."""
        return f"{self.lifts}, {self.lifting}" if self.lifts else ""


def builtin_handlers(on_complex: bool = False) -> dict[str, dict[int, Callable[..., object]]]:
    """{overload key: {opset: handler}} for the built-in symbolics only (no user registrations);
    on_complex: those for nodes with complex tensors."""
    from aten2onnx import symbolic  # noqa: F401  (registers the built-ins)
    from aten2onnx.registry import REGISTRY

    return REGISTRY.builtin_handlers(complex=on_complex)


def unavailable() -> list:
    """The built-in symbolics the running torch cannot take (registry.Unavailable), kept aside at import."""
    from aten2onnx import symbolic  # noqa: F401  (registers the built-ins)
    from aten2onnx.registry import REGISTRY

    return REGISTRY.unavailable()


def why_unavailable(entry) -> str:
    """In words, why a built-in is unavailable with this torch."""
    if not entry.exists:
        return f"torch {torch.__version__} has no such overload (the symbolic serves torch versions that have it)"
    return f"its schema in torch {torch.__version__} differs from the handler's signature: {entry.reason}"


def _message(node: ast.Raise) -> str | None:
    """The message of `raise NotImplementedError(<message>)`, as written in the source."""
    exc = node.exc
    if not (isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and exc.func.id == "NotImplementedError"):
        if isinstance(exc, ast.Name) and exc.id == "NotImplementedError":
            return ""
        return None
    if not exc.args:
        return ""
    arg = exc.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr):  # an f-string: keep its placeholders, {self.dtype}
        return "".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                       for v in arg.values)
    return ast.unparse(arg)


def _syntax(fn: types.FunctionType) -> ast.AST | None:
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None


def limitations(handler: Callable[..., object], opset: int) -> list[Limitation]:
    """NotImplementedError raises in the handler and in the aten2onnx.symbolic helpers it calls,
    transitively (a helper such as slice_axis raises on behalf of every handler using it)."""
    found: list[Limitation] = []
    seen: set[int] = set()
    todo = [handler]
    while todo:
        fn = inspect.unwrap(todo.pop())
        if not isinstance(fn, types.FunctionType) or id(fn) in seen:
            continue
        seen.add(id(fn))
        tree = _syntax(fn)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                message = _message(node)
                if message is not None:
                    found.append(Limitation(opset, fn.__name__, message))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                callee = fn.__globals__.get(node.func.id)
                if isinstance(callee, types.FunctionType) and callee.__module__.startswith("aten2onnx.symbolic"):
                    todo.append(callee)
    return found


def entries(on_complex: bool = False, keys: list[str] | None = None) -> list[Entry]:
    """One entry per overload with a built-in symbolic (of `keys` only, when given), sorted by key;
    on_complex: the handlers for complex tensors."""
    from aten2onnx import symbolic  # noqa: F401  (registers the built-ins)
    from aten2onnx.registry import REGISTRY

    by_key: dict[str, list] = {}
    for entry in REGISTRY.entries(complex=on_complex):
        if keys is None or entry.key in keys:
            by_key.setdefault(entry.key, []).append(entry)
    result = []
    for key, registered in sorted(by_key.items()):
        notes: list[Limitation] = []
        for entry in registered:
            for note in limitations(entry.handler, entry.opset):
                if note not in notes:
                    notes.append(note)
        newest = registered[-1]
        lowest = registered[0].opset
        if newest.lifts:  # a lifting has nothing to apply below the real translation's lowest opset
            lowest = max([lowest, *REGISTRY.registered_opsets(newest.lifts)[:1]])
        result.append(Entry(key, tuple(e.opset for e in registered), tuple(notes), newest.lifts, newest.lifting,
                            lowest, None if on_complex else _decomposition_source(key)))
    return result


def _decomposition_source(key: str) -> str | None:
    from aten2onnx.exporter.decompose import decomposition_source
    from aten2onnx.registry._schema import resolve_overload

    try:
        op = resolve_overload(key)
    except Exception:  # a Python operator key (`_operator::add`)
        return None
    return decomposition_source(op) if isinstance(op, torch._ops.OpOverload) else None


def decomposed_overloads() -> list[tuple[str, str]]:
    """(key, where torch keeps its decomposition) for every functional ATen overload that has no built-in
    symbolic but a decomposition: exported as its pieces where they translate, else an ATen node."""
    from aten2onnx.exporter.decompose import decomposition_source

    builtin = set(builtin_handlers())
    found = []
    for name in sorted(torch._C._dispatch_get_all_op_names()):
        namespace, _, qualified = name.partition("::")
        if namespace != "aten":
            continue
        base, _, overload = qualified.partition(".")
        key = f"aten::{base}.{overload or 'default'}"
        packet = getattr(torch.ops.aten, base, None)
        if key in builtin or not isinstance(packet, torch._ops.OpOverloadPacket) \
                or (overload or "default") not in packet.overloads():
            continue
        source = decomposition_source(getattr(packet, overload or "default"))
        if source is not None:
            found.append((key, source))
    return found


def span(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}–{hi}"


def matching(query: str, keys: list[str]) -> list[str]:
    """The keys a query names: `aten::relu.default` exactly, or every overload of `relu` / `aten::relu`,
    or else every key containing the query (case-insensitive)."""
    if query in keys:
        return [query]
    name = query if "::" in query else f"aten::{query}"
    overloads = [k for k in keys if k.split(".", 1)[0] == name]
    return overloads or [k for k in keys if query.lower() in k.lower()]


def describe(key: str) -> list[str]:
    """What the registry says about one overload key: the opsets it is native at, its ATen fallback
    below them, its complex handlers, and the cases it leaves to fallback (partial)."""
    from aten2onnx.symbolic import MAX_OPSET, MIN_OPSET

    real = next(iter(entries(keys=[key])), None)
    complex_entry = next(iter(entries(on_complex=True, keys=[key])), None)
    lines = [key]
    aside = next((u for u in unavailable() if u.key == key), None)
    if aside is not None and real is None:
        return lines + [f"  unavailable: built-in symbolic at opsets {', '.join(map(str, aside.opsets))}, but "
                        f"{why_unavailable(aside)}"]
    twin = _functional_twin(key) if real is None else None
    if twin is not None:
        lines.append(f"  writes in place or to out=: exported as its functional overload {twin}, whose entry follows")
        return lines + describe(twin)
    source = _decomposition_source(key)
    # what a node no handler translates becomes
    unhandled = (f"torch's decomposition of it ({source}) where its pieces translate, else an ATen fallback node"
                 if source else "an ATen fallback node")
    if real is None:
        lines.append(f"  no built-in symbolic: exported as {unhandled} (fallback='aten'), runnable in "
                     "aten2onnx.runtime but not onnxruntime; an UnsupportedOperatorError with fallback='error'")
    else:
        lowest = real.opsets[0]
        lines.append(f"  handlers at opsets {', '.join(map(str, real.opsets))}; native at opsets {span(lowest, MAX_OPSET)}")
        if lowest > MIN_OPSET:
            lines.append(f"  at opsets {span(MIN_OPSET, lowest - 1)}: {unhandled} (no handler that low)")
        for note in real.limitations:
            lines.append(f"  partial at opset {note.opset}, in {note.function}: {note.message or '(no message)'} "
                         f"(such nodes become {unhandled})")
    if complex_entry is not None:
        how = f" (the real translation of {complex_entry.lifted})" if complex_entry.lifts else ""
        lines.append(f"  complex tensors: handlers at opsets {', '.join(map(str, complex_entry.opsets))}{how}; "
                     f"native at opsets {span(complex_entry.native_from, MAX_OPSET)}")
    else:
        lines.append("  complex tensors: no handler; a node with a complex tensor becomes an ATen fallback node")
    return lines


def _functional_twin(key: str) -> str | None:
    """The functional overload an in-place or out= overload is exported as, if key names one."""
    from aten2onnx.registry import functional_twin, is_mutating, overload_key
    from aten2onnx.registry._schema import resolve_overload

    try:
        op = resolve_overload(key)
    except Exception:  # a Python operator key (`_operator::add`), or no such op
        return None
    twin = functional_twin(op) if is_mutating(op) else None
    return overload_key(twin) if twin is not None else None


def known_overloads(query: str) -> list[str]:
    """Keys of real torch ops a query names that have no built-in symbolic (`aten::foo` or `foo`)."""
    namespace, _, name = (query if "::" in query else f"aten::{query}").partition("::")
    name, _, overload = name.partition(".")
    packet = getattr(getattr(torch.ops, namespace, None), name, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return []
    names = [overload] if overload else packet.overloads()
    return [f"{namespace}::{name}.{o}" for o in names if o in packet.overloads()]
