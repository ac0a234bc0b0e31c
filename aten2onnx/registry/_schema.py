"""ATen schema facts the registry needs: overload keys, lookup by key, argument binding, the
functional twin of an in-place or out= overload, and handler signature checks."""

from __future__ import annotations

import logging

import functools
import inspect
import keyword
from typing import Any, Callable

import torch

from aten2onnx.errors import RegistrationError

OpTarget = Any  # torch._ops.OpOverload, or a Python callable such as operator.mul on SymInts


def overload_key(target: OpTarget) -> str:
    """`aten::add.Tensor` for an OpOverload; `_operator::mul` for a Python callable."""
    if isinstance(target, torch._ops.OpOverload):
        schema = target._schema
        return f"{schema.name}.{schema.overload_name or 'default'}"
    module = getattr(target, "__module__", None) or "builtins"
    return f"{module}::{getattr(target, '__name__', repr(target))}"


def normalize_key(name: str) -> str:
    """`mylib::foo` -> `mylib::foo.default`; keys naming Python callables stay as they are."""
    if "::" not in name:
        raise RegistrationError(f"{name!r} is not a qualified op name; write it as 'aten::add.Tensor'")
    namespace, rest = name.split("::", 1)
    if is_python_key(name) or "." in rest:
        return name
    return f"{namespace}::{rest}.default"


# torch's functions on symbolic values that torch.export leaves in graphs as Python calls
SYM_FUNCTIONS = ("torch::sym_ite", "torch::sym_not", "torch::sym_max", "torch::sym_min", "torch::sym_float")


def is_python_key(key: str) -> bool:
    return key.startswith(("_operator::", "builtins::", "math::")) or key in SYM_FUNCTIONS


# Namespaces of custom ops a Python library defines when one of its modules is imported
# (`transformers` -> `transformers.integrations.moe`): a built-in symbolic for such an op is registered
# without importing the library (aten2onnx imports no transformers); its op is looked up, and its
# handler checked against its schema, once the library is loaded (an export of a model that calls the
# op has loaded it), and resolve_overload imports the module when the op is not there yet.
LIBRARIES: dict[str, str] = {}


def is_loaded(key: str) -> bool:
    """True when the op a key names is in torch.ops now (False for an op of a library not yet imported)."""
    namespace, rest = key.split("::", 1)
    op_name = rest.rsplit(".", 1)[0]
    try:
        getattr(getattr(torch.ops, namespace), op_name)
    except (AttributeError, RuntimeError):
        return False
    return True


def op_exists(key: str) -> bool:
    """True when the overload a key names is in torch.ops now (False for one this torch lacks, or of a
    library not loaded)."""
    namespace, rest = key.split("::", 1)
    op_name, _, overload = rest.rpartition(".")
    packet = getattr(getattr(torch.ops, namespace, None), op_name, None) if is_loaded(key) else None
    return isinstance(packet, torch._ops.OpOverloadPacket) and overload in packet.overloads()


def resolve_overload(key: str) -> torch._ops.OpOverload:
    """The OpOverload a key names; RegistrationError naming the known overloads if there is none. An op
    of a library in LIBRARIES is loaded by importing the library's module first."""
    namespace, rest = key.split("::", 1)
    op_name, overload = rest.rsplit(".", 1)
    if namespace in LIBRARIES and not is_loaded(key):
        import importlib

        # imported on the user's behalf (to look an op's schema up): its import-time log records (torchao's
        # CUDA extensions that a CPU torch cannot load) are not the user's business
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)
        try:
            importlib.import_module(LIBRARIES[namespace])
        except ImportError as e:
            raise RegistrationError(f"{key}: its op is defined by {LIBRARIES[namespace]}, which does not "
                                    f"import ({e}); install it to use this op") from None
        finally:
            logging.disable(previous)
    try:
        packet = getattr(getattr(torch.ops, namespace), op_name)
    except (AttributeError, RuntimeError):
        raise RegistrationError(f"{key}: there is no operator {namespace}::{op_name} in torch.ops") from None
    if overload not in packet.overloads():
        known = sorted(o if o else "default" for o in packet.overloads())
        raise RegistrationError(f"{key}: {namespace}::{op_name} has no overload {overload!r}; it has {known}")
    return getattr(packet, overload)


def python_name(arg_name: str) -> str:
    """A schema argument name as a Python parameter: `from` -> `from_`."""
    return arg_name + "_" if keyword.iskeyword(arg_name) else arg_name


def bind(schema: torch._C.FunctionSchema, args: tuple, kwargs: dict) -> dict[str, Any]:
    """FX args and kwargs to a dict keyed by schema argument names, defaults filled in."""
    bound: dict[str, Any] = {}
    for i, arg in enumerate(schema.arguments):
        if not arg.kwarg_only and i < len(args):
            value = args[i]
        elif arg.name in kwargs:
            value = kwargs[arg.name]
        elif arg.has_default_value():
            value = arg.default_value
        else:
            raise TypeError(f"{schema.name}: missing argument {arg.name!r}")
        bound[python_name(arg.name)] = value
    return bound


def is_mutating(op: torch._ops.OpOverload) -> bool:
    """True for in-place and out= overloads: some argument is written (`Tensor(a!)`)."""
    return any(a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments)


def written_arguments(op: torch._ops.OpOverload) -> list[str]:
    return [a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write]


@functools.cache
def functional_twin(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The functional overload that computes what an in-place or out= overload writes.

    The twin is found through the schema, not by editing names: torchgen parses the schema into
    its structured model, whose `signature()` is the schema with mutation and out= arguments
    removed; the twin is the overload of the base operator with that same signature and no
    written argument.
    """
    if not is_mutating(op):
        return None
    from torchgen.model import FunctionSchema  # torchgen ships with torch; imported only when needed

    parsed = FunctionSchema.parse(str(op._schema))
    signature = parsed.signature()
    namespace = op._schema.name.split("::", 1)[0]
    base = str(parsed.name.name.base)
    packet = getattr(getattr(torch.ops, namespace), base, None)
    if packet is None:
        return None
    candidates = [getattr(packet, name) for name in packet.overloads()]
    candidates = [c for c in candidates if not is_mutating(c)]
    for candidate in candidates:
        if FunctionSchema.parse(str(candidate._schema)).signature() == signature:
            return candidate
    # the same arguments in another order (polygamma_(self, n) and polygamma(n, self)): callers bind by name
    wanted = _arguments_by_name(op._schema)
    return next((c for c in candidates if _arguments_by_name(c._schema) == wanted), None)


def _arguments_by_name(schema: torch._C.FunctionSchema) -> list[tuple[str, str]]:
    """A schema's non-output arguments as sorted (name, type) pairs, write annotations aside."""
    return sorted((a.name, str(a.type)) for a in schema.arguments if not a.is_out)


def check_signature(fn: Callable, schema: torch._C.FunctionSchema, key: str) -> None:
    """Raise RegistrationError unless fn is `(g, <schema arguments>)`: same names, order,
    keyword-only marker, and defaults."""
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        raise RegistrationError(f"{key}: handler {fn.__qualname__} must take the graph builder first")
    params = params[1:]
    expected = schema.arguments
    got_names = [p.name for p in params]
    want_names = [python_name(a.name) for a in expected]
    if got_names != want_names:
        raise RegistrationError(
            f"{key}: handler {fn.__qualname__} takes (g, {', '.join(got_names)}) but the schema is "
            f"{schema}; name the parameters (g, {', '.join(want_names)})"
        )
    for param, arg in zip(params, expected):
        kw_only = param.kind is inspect.Parameter.KEYWORD_ONLY
        if kw_only != arg.kwarg_only:
            where = "after" if arg.kwarg_only else "before"
            raise RegistrationError(f"{key}: parameter {param.name!r} of {fn.__qualname__} must come {where} '*' as in {schema}")
        has_default = param.default is not inspect.Parameter.empty
        if has_default != arg.has_default_value():
            raise RegistrationError(
                f"{key}: parameter {param.name!r} of {fn.__qualname__} "
                + ("has a default the schema lacks" if has_default else "needs the schema's default")
                + f" ({schema})"
            )
        if has_default and not _same_default(param.default, arg.default_value):
            raise RegistrationError(
                f"{key}: parameter {param.name!r} of {fn.__qualname__} defaults to {param.default!r}, "
                f"the schema to {arg.default_value!r}"
            )


def _same_default(ours: Any, schema_default: Any) -> bool:
    if isinstance(ours, (list, tuple)) and isinstance(schema_default, (list, tuple)):
        return list(ours) == list(schema_default)
    if isinstance(ours, (torch.dtype, torch.memory_format, torch.layout, torch.device)) or isinstance(schema_default, (torch.dtype, torch.memory_format, torch.layout, torch.device)):
        return True  # the Python binding reports these enums as ints; not comparable
    if isinstance(ours, bool) or isinstance(schema_default, bool):
        return ours is schema_default or ours == schema_default
    return ours == schema_default
