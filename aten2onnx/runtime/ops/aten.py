"""The ATen fallback node (org.pytorch.aten::ATen): runs torch.ops.<namespace>.<operator>.<overload>.
The overload is looked up, judged by the safety rule (runtime/safety.py) and every argument decoded
once, at session creation; what it returns is checked on every run (runtime/results.py)."""

from __future__ import annotations

from typing import Any

import torch

from aten2onnx import _aten_node, _dtypes
from aten2onnx import _fractional_pool, _packed_rnn  # noqa: F401  (the aten2onnx:: ops a saved model may call)
from aten2onnx.errors import InvalidModelError, KernelError
from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.safety import RUNNING_STATE, UNINITIALIZED, argument_problem, check_op

_ABSENT = object()


def _lookup(namespace: str, operator: str, overload_name: str) -> torch._ops.OpOverload:
    where = f"{namespace}::{operator}" + (f".{overload_name}" if overload_name else "")
    try:
        packet = getattr(getattr(torch.ops, namespace), operator)
    except (AttributeError, RuntimeError) as e:
        raise InvalidModelError(f"ATen node names {where}, but torch has no operator {namespace}::{operator}") from e
    overload = overload_name or "default"
    if overload not in packet.overloads():
        raise InvalidModelError(f"ATen node names {where}, but {namespace}::{operator} has no overload "
                                f"{overload!r}; it has {sorted(packet.overloads())}")
    return getattr(packet, overload)


def _from_attribute(value: Any, kind: str, is_list: bool, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):  # a float FLOAT would round, held exactly in a float64 tensor
        value = _exact_floats(value, is_list)
    if kind == "bool":
        return [bool(v) for v in value] if is_list else bool(value)
    if kind in ("int", "SymInt"):
        return [int(v) for v in value] if is_list else int(value)
    if kind == "float":
        return [float(v) for v in value] if is_list else float(value)
    if kind == "ScalarType":
        dtype = _aten_node.dtype_from_name(value)
        if not (_dtypes.has_onnx(dtype) or dtype.is_complex):
            raise InvalidModelError(f"dtype {value!r} is not one a model's tensors can have")
        return dtype
    if kind == "MemoryFormat":
        return _aten_node.MEMORY_FORMATS[value]
    if kind == "Layout":
        if value != "strided":  # the runtime holds dense tensors only; see safety.DENY on sparse layouts
            raise InvalidModelError(f"layout {value!r} is not run; only 'strided'")
        return torch.strided
    if kind == "Device":
        return device
    return value  # Scalar ("number"), str, and anything already in its Python form


def _exact_floats(value: torch.Tensor, is_list: bool) -> float | list[float]:
    if value.dtype != torch.float64 or value.dim() != int(is_list) or value.numel() > 1 << 16:
        raise InvalidModelError(f"a tensor attribute of an ATen node must be a float64 {'1-D' if is_list else '0-d'} "
                                f"tensor holding its floats exactly, not {value.dtype} of shape {list(value.shape)}")
    return value.tolist() if is_list else value.item()


def _from_input(value: torch.Tensor | None, kind: str, is_list: bool) -> Any:
    """A non-tensor argument known only at run time arrives as a tensor: 0-d for a scalar, 1-D for a list."""
    if value is None:
        return None
    if is_list:
        return value.tolist()
    item = value.item()
    return bool(item) if kind == "bool" else item


@kernel("ATen", since=1, domain=_aten_node.DOMAIN)
class ATen(Kernel):
    def setup(self, /, operator: str, overload_name: str = "", namespace: str = "aten",
              input_args: list[str] | None = None, complex_inputs: list[int] | None = None,
              complex_outputs: list[int] | None = None, complex_scalars: list[str] | None = None,
              bool_scalars: list[str] | None = None, **arguments: Any) -> None:
        self.complex_inputs = frozenset(complex_inputs or ())
        self.complex_outputs = frozenset(complex_outputs or ())
        if namespace not in self.ctx.allowed_aten_namespaces:
            raise InvalidModelError(f"ATen node runs {namespace}::{operator}, but namespace {namespace!r} is not "
                                    f"allowed; the session allows {list(self.ctx.allowed_aten_namespaces)}")
        self.op = _lookup(namespace, operator, overload_name)
        check_op(self.op, self.ctx.allowed_aten_ops)
        # An op the session was told to allow although it writes an argument runs on copies of those
        # (and of running statistics, which some ops write undeclared): graph inputs, initializers and
        # other nodes' values are never written.
        self.written = frozenset(a.name for a in self.op._schema.arguments
                                 if (a.alias_info and a.alias_info.is_write) or a.name in RUNNING_STATE)
        # A random op draws from the session's own generator state, never the process's.
        self.seeded = torch.Tag.nondeterministic_seeded in self.op.tags
        self.zeroed = bool(UNINITIALIZED.search(self.op._schema.name))
        schema = self.op._schema
        input_args = list(input_args or [])
        names = {a.name for a in schema.arguments}
        stray = sorted((set(arguments) | set(input_args)) - names)
        if stray:
            raise InvalidModelError(f"ATen node for {schema.name}.{schema.overload_name}: {stray} are not arguments "
                                    f"of its schema {schema}")
        # plan: per schema argument, (name, keyword_only, source, payload); source is "const" or "input"
        self.plan: list[tuple[str, bool, str, Any]] = []
        for arg in schema.arguments:
            kind, is_list, optional = _aten_node.schema_kind(arg)
            positions = [i for i, name in enumerate(input_args) if name == arg.name]
            if positions:
                if kind == "Tensor" and is_list:
                    payload = ("list", positions)
                elif kind == "Tensor":
                    payload = ("one", positions[0])
                else:
                    payload = ("value", positions[0], kind, is_list)
                self.plan.append((arg.name, arg.kwarg_only, "input", payload))
            elif arg.name in (complex_scalars or ()):
                pair = arguments[arg.name]
                real, imag = _exact_floats(pair, True) if isinstance(pair, torch.Tensor) else pair
                self.plan.append((arg.name, arg.kwarg_only, "const", complex(real, imag)))
            elif arg.name in (bool_scalars or ()) and arg.name in arguments:
                self.plan.append((arg.name, arg.kwarg_only, "const", bool(arguments[arg.name])))
            elif arg.name in arguments:
                value = _from_attribute(arguments[arg.name], kind, is_list, self.ctx.device)
                self.plan.append((arg.name, arg.kwarg_only, "const", value))
            elif optional:
                self.plan.append((arg.name, arg.kwarg_only, "const", None))
            elif arg.has_default_value():
                self.plan.append((arg.name, arg.kwarg_only, "const", _ABSENT))
            else:
                raise InvalidModelError(f"ATen node for {schema.name}.{schema.overload_name} gives no value for "
                                        f"the required argument {arg.name!r}")
        self.n_outputs = len(self.node.output) if self.node is not None else None
        # an op returning one list (split, unbind, chunk) returns as many pieces as its input's size
        # gives; the node names those the export saw, and a graph reads no others
        self.one_list = len(schema.returns) == 1 and isinstance(schema.returns[0].type, torch.ListType)

    def run(self, *inputs):
        if self.complex_inputs:
            inputs = tuple(_dtypes.from_pairs(x) if i in self.complex_inputs else x
                           for i, x in enumerate(inputs))
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        bound: dict[str, Any] = {}
        positional = True
        for name, keyword_only, source, payload in self.plan:
            if source == "const":
                value = payload
            elif payload[0] == "one":
                value = inputs[payload[1]]
            elif payload[0] == "list":
                value = [inputs[i] for i in payload[1]]
            else:
                value = _from_input(inputs[payload[1]], payload[2], payload[3])
            if value is _ABSENT:
                positional = False  # later positional arguments must be named
                continue
            if name in self.written:
                value = [t.clone() for t in value] if isinstance(value, list) else _cloned(value)
            bound[name] = value
            if keyword_only or not positional:
                kwargs[name] = value
            else:
                args.append(value)
        problem = argument_problem(self.op, bound)
        if problem:
            raise KernelError(f"{self.op._schema.name}.{self.op._overloadname} refused its arguments: {problem}")
        if self.seeded:
            with self.ctx.private_rng():
                results = _flatten(self.op(*args, **kwargs))
        else:
            results = _flatten(self.op(*args, **kwargs))
        if self.zeroed:
            results = [r.zero_() if isinstance(r, torch.Tensor) else r for r in results]
        if self.complex_outputs:
            results = [_dtypes.to_pairs(r) if i in self.complex_outputs else r
                       for i, r in enumerate(results)]
        if self.one_list and self.n_outputs is not None:
            results = results[:self.n_outputs]
        # the session checks the results (count, dtype, a plain dense tensor on its device): runtime/results.py
        results = [r.resolve_conj().resolve_neg() if isinstance(r, torch.Tensor) else r for r in results]
        return tuple(results)


def _cloned(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def _flatten(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        out: list[Any] = []
        for item in result:
            out.extend(_flatten(item))
        return out
    if isinstance(result, torch.Tensor) or result is None:
        return [result]
    # a Python number is a double (or a 64-bit int, or a bool), as the exporter types it
    dtype = torch.float64 if isinstance(result, float) else torch.complex128 if isinstance(result, complex) else None
    return [torch.tensor(result, dtype=dtype)]
