"""InferenceSession: plans a model once (order, kernels, slots, frees), then runs it on torch tensors."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from typing import Any, Iterable, Sequence

import numpy as np
import onnx
import torch

from aten2onnx import _dtypes
from aten2onnx._aten_node import DOMAIN as ATEN_DOMAIN, is_exact
from aten2onnx._onnx_graphs import bodies
from aten2onnx.errors import InvalidInputError, InvalidModelError, KernelError, RunError, RunTimeoutError
from aten2onnx.runtime.external_data import external_tensors, load_external_data
from aten2onnx.runtime.kernel import (SUB_BYTE, Kernel, SessionContext, decode_attribute, find_kernel, from_numpy,
                                      has_kernel, op_schema, runtime_dtype, tensor_from_proto, to_numpy)
from aten2onnx.runtime.ops import MAX_OPSET, _narrow
from aten2onnx.runtime.elem_types import output_types, stated_types
from aten2onnx.runtime.exact import exact_calls, requires_grad
from aten2onnx.runtime.optimize import DOMAIN as FUSED_DOMAIN, fuse_exported_ops
from aten2onnx.runtime.results import ResultCheck
from aten2onnx.runtime.schema_functions import FunctionBody, function_schema
from aten2onnx.runtime.safety import AllowedOps, permits
from aten2onnx.runtime.validate import dims_not_one, state_updates, validate_model


@dataclasses.dataclass(frozen=True)
class NodeArg:
    """An input or output of the model, as onnxruntime describes it."""

    name: str
    shape: list[int | str | None]
    type: str


def _type_string(tp: onnx.TypeProto) -> str:
    """onnxruntime's spelling of a type: tensor(float), seq(tensor(int64)), optional(...)."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({onnx.TensorProto.DataType.Name(tp.tensor_type.elem_type).lower()})"
    if kind == "sequence_type":
        return f"seq({_type_string(tp.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({_type_string(tp.optional_type.elem_type)})"
    return kind or "unknown"


def _node_arg(info: onnx.ValueInfoProto) -> NodeArg:
    tensor_type = info.type.tensor_type
    shape: list[int | str | None] = []
    if info.type.HasField("tensor_type") and tensor_type.HasField("shape"):
        for d in tensor_type.shape.dim:
            shape.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or None))
    return NodeArg(info.name, shape, _type_string(info.type))


def free_variables(graph: onnx.GraphProto) -> set[str]:
    """Names a (sub)graph reads from its enclosing scopes."""
    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    used: set[str] = set()
    for node in graph.node:
        used.update(n for n in node.input if n)
        for sub in bodies(node):
            used |= free_variables(sub)
        defined.update(node.output)
    return used - defined


# Stands for "not fed" among GraphRunner.run's inputs: the input's initializer is used.
DEFAULT = object()


class _Step:
    __slots__ = ("kernel", "inputs", "outputs", "free", "implicit", "node", "check")

    def __init__(self, kernel: Kernel, inputs: list[int], outputs: list[int], implicit: list[tuple[str, int]],
                 node: onnx.NodeProto, check: ResultCheck) -> None:
        self.kernel = kernel
        self.inputs = inputs
        self.outputs = outputs
        self.free: list[int] = []
        self.implicit = implicit
        self.node = node
        self.check = check


def _aligned(value: Any) -> Any:
    """value in memory aligned as torch allocates it (64 bytes), copied if it is not (numpy arrays and
    weights read from a file may start anywhere): BLAS kernels may round differently by alignment, and
    eager PyTorch computes on torch's own allocations. A view into a tensor is left as it is."""
    if isinstance(value, torch.Tensor) and value.layout == torch.strided and value.storage_offset() == 0 \
            and value.numel() and value.data_ptr() % 64:
        return value.clone()
    return value


class GraphRunner:
    """A planned graph. The session runs the main graph with one; If, Loop and Scan run their
    bodies with others, passing the enclosing scope's values as `outer`."""

    def __init__(self, graph: onnx.GraphProto, ctx: SessionContext, *, outer_names: Iterable[str] = (),
                 nodes: Sequence[onnx.NodeProto] | None = None, constants: Sequence[onnx.TensorProto] = ()) -> None:
        """nodes: the graph's nodes as they run (its local functions inlined), in place of graph.node;
        constants: more initializers (the Constant nodes of inlined function bodies)."""
        self.ctx = ctx
        self.graph = graph
        self._slot: dict[str, int] = {}
        self.input_names = [i.name for i in graph.input]
        self.output_names = [o.name for o in graph.output]
        self._initial: list[Any] = []

        for init in list(graph.initializer) + list(constants):
            try:
                tensor = tensor_from_proto(init)
            except Exception as e:
                _reraise_signal(e)
                raise InvalidModelError(f"initializer {init.name!r} cannot be read: {e}") from e
            slot = self._new_slot(init.name)
            tensor = tensor.to(ctx.device) if ctx.device.type != "cpu" else tensor
            if ctx.exact:
                # a tensor of its own, as eager's weights are: ATen treats a view of a buffer that requires
                # grad differently from a leaf that does (matmul's batch folding)
                tensor = tensor.clone() if tensor._base is not None else _aligned(tensor)
                if init.name in ctx.requires_grad and (tensor.is_floating_point() or tensor.is_complex()):
                    tensor.requires_grad_(True)
            self._initial[slot] = tensor
        self._input_slots = [self._new_slot(name) for name in self.input_names]
        self._outer_slots = [(name, self._new_slot(name)) for name in outer_names if name not in self._slot]
        nodes = list(graph.node if nodes is None else nodes)
        if ctx.exact:
            nodes = exact_calls(nodes, self.output_names, lambda node: list(node.input) + sorted(_implicit_names(node)))
        elif ctx.fuse:
            known = {i.name: i for i in list(graph.initializer) + list(constants) if i.name not in self.input_names}
            nodes = fuse_exported_ops(nodes, set(self.output_names), known,
                                      lambda key: permits(ctx.allowed_aten_ops, key))
        self._declared = {v.name: v.type for v in list(graph.input) + list(graph.value_info) + list(graph.output)
                          if v.type.WhichOneof("value")}
        self._types = stated_types(graph, constants)
        self.steps = [self._plan_node(node) for node in self._ordered(graph, nodes)]
        missing = [name for name in self.output_names if name not in self._slot]
        if missing:
            raise InvalidModelError(f"graph outputs {missing} are produced by no node, input or initializer")
        self._output_slots = [self._slot[name] for name in self.output_names]
        self._plan_frees()

    def _new_slot(self, name: str) -> int:
        slot = self._slot.get(name)
        if slot is None:
            slot = len(self._initial)
            self._slot[name] = slot
            self._initial.append(None)
        return slot

    def _ordered(self, graph: onnx.GraphProto, nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
        """Nodes in an order where each reads only what is already defined (Kahn's algorithm)."""
        available = set(self._slot)
        order: list[onnx.NodeProto] = []
        pending = nodes
        while pending:
            progressed = []
            rest = []
            for node in pending:
                needs = [n for n in node.input if n] + sorted(_implicit_names(node))
                if all(n in available for n in needs):
                    progressed.append(node)
                    available.update(node.output)
                else:
                    rest.append(node)
            if not progressed:
                node = rest[0]
                unknown = [n for n in list(node.input) + sorted(_implicit_names(node)) if n and n not in available]
                raise InvalidModelError(
                    f"node {node.name!r} ({node.op_type}) reads {unknown}, which no node, graph input or "
                    "initializer defines (or the graph has a cycle)"
                )
            order.extend(progressed)
            pending = rest
        return order

    def _plan_node(self, node: onnx.NodeProto) -> _Step:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = self.ctx.opsets.get(domain)
        where = f"node {node.name!r} ({node.op_type})"
        if opset is None:
            raise InvalidModelError(f"{where} uses domain {domain!r}, which the model does not import")
        schema = op_schema(domain, node.op_type, opset)
        input_types = [self._types.get(name) for name in node.input]
        try:
            cls: type[Kernel] = find_kernel(domain, node.op_type, opset)
        except InvalidModelError as e:
            # an op onnx defines as a function, with no kernel at any version, runs as its body (a version newer
            # than the kernels' stays refused: see kernel.CHECKED_OPSET)
            if has_kernel(domain, node.op_type) or function_schema(domain, node.op_type, opset) is None:
                raise InvalidModelError(f"{where}: {e}") from e
            cls = FunctionBody
        for name, elem in zip(node.output, output_types(node, schema, input_types)):
            if name and elem:
                self._types.setdefault(name, elem)
        try:
            if cls is FunctionBody:
                attrs = {"schema": schema, "opset": opset, "types": [self._type_proto(n) for n in node.input]}
            else:
                attrs = {a.name: decode_attribute(a) for a in node.attribute}
            kernel = cls(self.ctx, node, input_types, **attrs)
        except InvalidModelError as e:
            raise InvalidModelError(f"{where}: {e}") from e
        except Exception as e:
            _reraise_signal(e)
            detail = "bad attributes" if isinstance(e, TypeError) else type(e).__name__
            raise InvalidModelError(f"{where}: {detail}: {e}") from e
        inputs = [self._slot[name] if name else -1 for name in node.input]
        implicit = [(name, self._slot[name]) for name in sorted(_implicit_names(node))]
        outputs = [self._new_slot(name) if name else -1 for name in node.output]
        if domain == ATEN_DOMAIN:
            check = ResultCheck.foreign(node, [self._declared_dtype(name, where) for name in node.output], self.ctx.device)
        else:
            check = ResultCheck.for_schema(node, schema)
        return _Step(kernel, inputs, outputs, implicit, node, check)

    def _type_proto(self, name: str) -> onnx.TypeProto | None:
        """A value's type as the model states it, else a tensor of the element type that follows (None: unknown)."""
        if name in self._declared:
            return self._declared[name]
        if name in self._types:
            return onnx.helper.make_tensor_type_proto(self._types[name], None)
        return None

    def _declared_dtype(self, name: str, where: str) -> torch.dtype | None:
        tp = self._declared.get(name)
        if tp is None or not tp.HasField("tensor_type") or not tp.tensor_type.elem_type:
            return None
        try:
            return runtime_dtype(tp.tensor_type.elem_type)
        except TypeError as e:
            raise InvalidModelError(f"{where}: output {name!r}: {e}") from e

    def _plan_frees(self) -> None:
        """Free each node-produced value after its last reader. Only what a node writes is freed: a
        graph input or initializer slot must stay set for the next run."""
        keep = set(self._output_slots)
        produced = {slot for step in self.steps for slot in step.outputs if slot >= 0}
        last: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for slot in step.inputs + [s for _, s in step.implicit]:
                if slot >= 0:
                    last[slot] = i
            for slot in step.outputs:
                if slot >= 0:
                    last.setdefault(slot, i)  # an output nobody reads is freed right away
        for slot, i in last.items():
            if slot in produced and slot not in keep:
                self.steps[i].free.append(slot)

    def run(self, inputs: Sequence[Any], outer: dict[str, Any] | None = None) -> list[Any]:
        """inputs: one per graph input, in order; DEFAULT keeps an input's initializer value."""
        values = list(self._initial)
        for slot, value in zip(self._input_slots, inputs):
            if value is not DEFAULT:
                values[slot] = _aligned(value) if self.ctx.exact else value
        if self._outer_slots:
            for name, slot in self._outer_slots:
                values[slot] = outer[name]
        deadline = self.ctx.deadline
        for step in self.steps:
            if deadline is not None and time.monotonic() > deadline:
                raise RunTimeoutError(f"the run took longer than its timeout; it stopped before node "
                                      f"{step.node.name!r} ({step.node.op_type})")
            args = [values[s] if s >= 0 else None for s in step.inputs]
            try:
                if step.implicit:
                    results = step.kernel.run(*args, outer={name: values[s] for name, s in step.implicit})
                else:
                    results = step.kernel.run(*args)
            except RunError:
                raise
            except Exception as e:  # not BaseException: KeyboardInterrupt and SystemExit pass through as they are
                _reraise_signal(e)
                shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__ for a in args]
                raise KernelError(
                    f"node {step.node.name!r} ({step.node.op_type}) failed on inputs {list(step.node.input)} "
                    f"with shapes {shapes}: {type(e).__name__}: {e}"
                ) from e
            step.check(results)
            for slot, value in zip(step.outputs, results):
                if slot >= 0:
                    values[slot] = value
            for slot in step.free:
                values[slot] = None
        return [values[s] for s in self._output_slots]


def _reraise_signal(error: Exception) -> None:
    """Raise `error` unchanged when a Python signal handler raised it (a caller's timeout, say): it
    belongs to the caller, not to the kernel that happened to be running."""
    handlers = set()
    for number in signal.valid_signals():
        handler = signal.getsignal(number)
        code = getattr(getattr(handler, "__func__", handler), "__code__", None)
        if code is not None:
            handlers.add(code)
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in handlers:
            raise error
        tb = tb.tb_next


def _implicit_names(node: onnx.NodeProto) -> set[str]:
    names: set[str] = set()
    for body in bodies(node):
        names |= free_variables(body)
    return names


class InferenceSession:
    """Runs an ONNX model with PyTorch kernels, with onnxruntime's API. A model is untrusted input: it is
    validated as onnxruntime validates it, and runs only what the safety rule admits.

    model: a path, serialized bytes or an onnx.ModelProto.
    base_dir: the folder external data files are read from; they may not resolve outside it. A path
        model defaults to its own folder; bytes or a ModelProto read external data only when given one.
    allowed_aten_namespaces: ATen fallback nodes run torch.ops.<namespace>.<op>.<overload> for these
        namespaces only. The default, "aten" and "aten2onnx", is PyTorch's operators and the few that
        aten2onnx defines itself (aten2onnx::packed_rnn, which an exact export of packed sequences calls).
    allowed_aten_ops: which of those overloads a model may run. None: the safety rule
        (aten2onnx.runtime.safety: no op that writes an argument, touches files, process state or
        memory outside its tensors). A predicate on the OpOverload replaces the rule; a collection of
        keys ("aten::add.Tensor") runs exactly those. Widening it lets the model run that code: allow
        only ops you would let the model's author call in your process.
    timeout: seconds a run may take (checked between kernels and loop iterations); None: no limit.
    exact: run an exact export's ops as their ATen calls (runtime/exact.py); None: when the model says it
        is one (metadata `aten2onnx.exact`).
    rng: where random ops draw from: "private", the session's own generator (a model neither reads nor
        advances the caller's); "process", torch's default generators, as eager PyTorch does (an exact
        export then draws what eager draws after the same torch.manual_seed).
    A model's local functions (ModelProto.functions) run inlined: each call is replaced by the function's
    body when the session is created, once the functions are checked (runtime/functions.py).
    Anything refused is refused here, before any run, with InvalidModelError.
    """

    def __init__(self, model: str | os.PathLike | bytes | onnx.ModelProto, *, device: str | torch.device = "cpu",
                 allowed_aten_namespaces: Sequence[str] = ("aten", "aten2onnx"), allowed_aten_ops: AllowedOps = None,
                 fuse: bool = True, base_dir: str | os.PathLike | None = None, timeout: float | None = None,
                 exact: bool | None = None, rng: str = "private") -> None:
        proto = _load(model, None if base_dir is None else os.fspath(base_dir))
        if rng not in ("private", "process"):
            raise ValueError(f"rng must be 'private' or 'process', not {rng!r}")
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise InvalidModelError("device='cuda' was asked for but torch sees no CUDA device")
        inlined = validate_model(proto, MAX_OPSET)
        opsets = {("" if o.domain in ("", "ai.onnx") else o.domain): o.version for o in proto.opset_import}
        opsets |= inlined.opsets
        # fuse: run node groups that aten2onnx exported for one ATen op (gelu, silu) as that op again.
        exact = is_exact(proto) if exact is None else exact
        if exact:  # the calls are ATen nodes, whatever domains the model imports
            opsets.setdefault(ATEN_DOMAIN, 1)
        self._ctx = SessionContext(self.device, {**opsets, FUSED_DOMAIN: 1}, tuple(allowed_aten_namespaces), fuse=fuse,
                                   allowed_aten_ops=allowed_aten_ops, compile_graph=self._compile_subgraph,
                                   exact=exact, process_rng=rng == "process")
        self._ctx.requires_grad = requires_grad(proto) if exact else frozenset()
        self.timeout = timeout
        initializers = {i.name for i in proto.graph.initializer}
        self._inputs = [_node_arg(i) for i in proto.graph.input if i.name not in initializers]
        self._outputs = [_node_arg(o) for o in proto.graph.output]
        self._input_types = {i.name: i.type for i in proto.graph.input}
        self._output_types = {o.name: o.type for o in proto.graph.output}
        nodes, constants = inlined.hoisted()
        self._runner = GraphRunner(proto.graph, self._ctx, nodes=nodes, constants=constants)
        self._feed_order = [n for n in self._runner.input_names if n not in initializers]
        # Inputs with an initializer as default (onnxruntime's "overridable initializers").
        self._overridable = [n for n in self._runner.input_names if n in initializers]
        self.model_proto = proto
        self._state_updates = state_updates(proto)
        self._not_one = dims_not_one(proto)
        self._state: dict[str, Any] = {}

    def _compile_subgraph(self, graph: onnx.GraphProto) -> GraphRunner:
        """A subgraph (If/Loop/Scan body, a fused group's nodes) planned to run with the values it reads from
        enclosing scopes passed in: the compiler control-flow and fused kernels get in their SessionContext."""
        return GraphRunner(graph, self._ctx, outer_names=sorted(free_variables(graph)))

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_modelmeta(self) -> dict[str, str]:
        return {p.key: p.value for p in self.model_proto.metadata_props}

    def get_overridable_initializers(self) -> list[NodeArg]:
        infos = {i.name: i for i in self.model_proto.graph.input}
        return [_node_arg(infos[n]) for n in self._overridable]

    def reset_state(self) -> None:
        """Forget buffer values carried between runs; the next run starts from the initializers."""
        self._state.clear()

    def run(self, output_names: Sequence[str] | None, feeds: dict[str, Any], *,
            timeout: float | None = None) -> list[np.ndarray]:
        """numpy in, numpy out, as onnxruntime does; bfloat16, float8 and sub-byte types as ml_dtypes
        arrays, as onnx's reference evaluator gives them. Feeds may also be onnx.TensorProtos."""
        tensors = {name: _from_feed(name, value) for name, value in feeds.items()}
        results = self.run_torch(tensors, output_names, timeout=timeout)
        return [_to_numpy(t, self._output_types[name]) for name, t in results.items()]

    def run_torch(self, feeds: dict[str, torch.Tensor], output_names: Sequence[str] | None = None, *,
                  timeout: float | None = None, carry: bool = True) -> dict[str, torch.Tensor]:
        """torch tensors in and out; inputs are used as given (no copies on the session's device).
        timeout: seconds this run may take (the session's timeout when None); RunTimeoutError after.
        carry: whether buffers the model writes carry over to the next run (False: the caller keeps
        the state and feeds it each run, as TrainingModel does)."""
        names = [o.name for o in self._outputs] if output_names is None else list(output_names)
        unknown_out = [n for n in names if n not in {o.name for o in self._outputs}]
        if unknown_out:
            raise InvalidInputError(f"unknown output names {unknown_out}; the model's outputs are {[o.name for o in self._outputs]}")
        checked = self._check_feeds(feeds)
        inputs = [checked[n] if n in checked else self._state.get(n, DEFAULT) for n in self._runner.input_names]
        limit = self.timeout if timeout is None else timeout
        self._ctx.deadline = None if limit is None else time.monotonic() + limit
        try:
            if self._ctx.exact:
                # as eager runs: in the caller's grad mode (some ATen kernels choose by requires_grad)
                results = [r.detach() if isinstance(r, torch.Tensor) else r for r in self._runner.run(inputs)]
            else:
                with torch.inference_mode():
                    results = self._runner.run(inputs)
        finally:
            self._ctx.deadline = None
        by_name = _unshared(dict(zip(self._runner.output_names, results)), self._written_feeds(feeds))
        self._write_back(feeds, by_name, carry)
        return {n: by_name[n] for n in names}

    def _written_feeds(self, feeds: dict[str, Any]) -> list[torch.Tensor]:
        """The caller's tensors this run writes new values into."""
        return [feeds[name] for _, kind, name in self._state_updates
                if kind == "input" and isinstance(feeds.get(name), torch.Tensor)]

    def _write_back(self, feeds: dict[str, Any], results: dict[str, Any], carry: bool = True) -> None:
        """Apply the model's state updates, as eager PyTorch would have done in place: a buffer's
        new value is carried to the next run; a written input is updated in the caller's tensor.
        Each new value must fit its input as the model declares it (the metadata is untrusted)."""
        for output, kind, name in self._state_updates:
            new = results[output]
            try:
                self._check_value(name, new, self._input_types[name], None)
            except InvalidInputError as e:
                raise InvalidModelError(f"state update {output!r} gives a value its input {name!r} does not "
                                        f"accept: {e}") from e
            if kind == "buffer":
                if carry:
                    self._state[name] = new.clone() if new.is_inference() else new
            elif isinstance(feeds.get(name), torch.Tensor):
                _write_input(name, feeds[name], new)

    def _check_feeds(self, feeds: dict[str, Any]) -> dict[str, Any]:
        """The checked feeds by name: every required input, and any overridable initializer given."""
        unknown = sorted(set(feeds) - set(self._feed_order) - set(self._overridable))
        missing = [n for n in self._feed_order if n not in feeds]
        if unknown or missing:
            raise InvalidInputError(
                f"inputs do not match the model: missing {missing}, unknown {unknown}; the model takes {self._feed_order}"
            )
        dims: dict[str, tuple[int, str]] = {}
        names = self._feed_order + [n for n in self._overridable if n in feeds]
        return {name: self._check_value(name, feeds[name], self._input_types[name], dims) for name in names}

    def _check_value(self, name: str, value: Any, expected: onnx.TypeProto, dims: dict[str, tuple[int, str]] | None) -> Any:
        """value checked against the declared type (tensor, sequence or optional), moved to the device."""
        kind = expected.WhichOneof("value")
        if kind is None:  # untyped input: taken as given
            return value
        if kind == "optional_type":
            if value is None:
                return None
            return self._check_value(name, value, expected.optional_type.elem_type, dims)
        if kind == "sequence_type":
            if not isinstance(value, (list, tuple)):
                raise InvalidInputError(f"input {name!r} is a {type(value).__name__}; the model expects a sequence "
                                        f"({_type_string(expected)}), given as a list")
            return [self._check_value(f"{name}[{i}]", v, expected.sequence_type.elem_type, None)
                    for i, v in enumerate(value)]
        if kind != "tensor_type":
            raise InvalidInputError(f"input {name!r} has type {_type_string(expected)}, which aten2onnx.runtime does not take")
        elem = expected.tensor_type.elem_type
        if elem == onnx.TensorProto.STRING:
            if not (isinstance(value, np.ndarray) and value.dtype == object):
                raise InvalidInputError(f"input {name!r} is a string tensor; pass it as a numpy object array")
            return value
        if not isinstance(value, torch.Tensor):
            raise InvalidInputError(f"input {name!r} is a {type(value).__name__}, not a tensor "
                                    f"(the model expects {_type_string(expected)})")
        try:
            want = runtime_dtype(elem)
        except TypeError as e:
            raise InvalidInputError(f"input {name!r}: the model's type {_type_string(expected)} has no torch dtype") from e
        if value.dtype in _dtypes.PACKED and _dtypes.to_onnx(value.dtype) == elem:
            value = value.view(_dtypes.PACKED[value.dtype])  # aten2onnx's own int4 tensors: one value a byte
        if value.dtype != want:
            raise InvalidInputError(f"input {name!r} has dtype {value.dtype}; the model expects {want}")
        if elem in SUB_BYTE and not bool((_narrow.cast(value, elem) == value).all()):
            raise InvalidInputError(f"input {name!r} holds values that are not {_type_string(expected)} values (it "
                                    f"is held as {want}, one value per element)")
        if expected.tensor_type.HasField("shape"):
            want_dims = expected.tensor_type.shape.dim
            if len(want_dims) != value.dim():
                raise InvalidInputError(f"input {name!r} has rank {value.dim()} (shape {tuple(value.shape)}); "
                                        f"the model expects rank {len(want_dims)}")
            for axis, (d, actual) in enumerate(zip(want_dims, value.shape)):
                if d.HasField("dim_value") and d.dim_value != actual:
                    raise InvalidInputError(f"input {name!r} has size {actual} in dim {axis}; the model expects {d.dim_value}")
                if d.dim_param in self._not_one and actual == 1:
                    raise InvalidInputError(
                        f"input {name!r} has size 1 in dim {axis} ({d.dim_param}), where the exported model assumes "
                        "it is not 1: a squeeze in the model drops that dim only at size 1, which the graph, whose "
                        "rank is fixed, cannot follow (the export warned of it)")
                if d.dim_param and dims is not None:
                    seen = dims.setdefault(d.dim_param, (actual, f"{name}[{axis}]"))
                    if seen[0] != actual:
                        raise InvalidInputError(
                            f"dim {d.dim_param!r} is {actual} in {name}[{axis}] but {seen[0]} in {seen[1]}")
        if value.device != self.device:
            value = value.to(self.device)
        return value


def _write_input(name: str, target: torch.Tensor, new: torch.Tensor) -> None:
    if target.shape != new.shape or target.dtype != new.dtype:
        raise InvalidModelError(f"the model writes input {name!r} with a {new.dtype} value of shape {tuple(new.shape)}, "
                                f"but the tensor passed is {target.dtype} of shape {tuple(target.shape)}")
    try:
        target.copy_(new)
    except RuntimeError as e:  # an expanded (self-overlapping) or inference-mode tensor cannot be written
        raise InvalidInputError(f"input {name!r} is written by the model, but the tensor passed cannot be "
                                f"written in place: {e}") from e


def _unshared(results: dict[str, Any], written: list[torch.Tensor]) -> dict[str, Any]:
    """Results that are (views of) an input the run writes back into, copied first: an output the graph
    passes through from an input holds the input's old value, as eager returned it."""
    if not written:
        return results
    storages = {t.untyped_storage().data_ptr() for t in written}
    return {name: value.clone() if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() in storages
            else value for name, value in results.items()}


def _from_feed(name: str, value: Any) -> Any:
    """A numpy feed (array, scalar, list of arrays for a sequence, None for an empty optional, or an
    onnx.TensorProto) as torch."""
    if isinstance(value, (list, tuple)):
        return [_from_feed(f"{name}[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, onnx.TensorProto):
        try:
            return tensor_from_proto(value)
        except Exception as e:
            raise InvalidInputError(f"input {name!r} is a TensorProto that cannot be read: {e}") from e
    if isinstance(value, np.ndarray) or np.isscalar(value):
        return from_numpy(np.asarray(value))
    return value


def _to_numpy(value: Any, tp: onnx.TypeProto) -> Any:
    if isinstance(value, torch.Tensor):
        return to_numpy(value, tp.tensor_type.elem_type if tp.HasField("tensor_type") else None)
    if isinstance(value, list):
        elem = tp.sequence_type.elem_type if tp.HasField("sequence_type") else onnx.TypeProto()
        return [_to_numpy(v, elem) for v in value]
    return value


def _load(model: Any, base_dir: str | None) -> onnx.ModelProto:
    """The model with its external data read in. A path model reads it from base_dir, by default its
    own folder (or its resolved folder, where the model is a symlink: onnxruntime's rule); bytes or a
    ModelProto only from an explicit base_dir."""
    roots = None if base_dir is None else [base_dir]
    try:
        if isinstance(model, onnx.ModelProto):
            proto = model
        elif isinstance(model, (bytes, bytearray, memoryview)):
            proto = onnx.load_from_string(bytes(model))
        else:
            path = os.fspath(model)
            proto = onnx.load(path, load_external_data=False)
            roots = roots or [os.path.dirname(os.path.abspath(path)), os.path.dirname(os.path.realpath(path))]
    except (OSError, TypeError) as e:
        raise InvalidModelError(f"cannot load the model: {e}") from e
    except Exception as e:  # protobuf's DecodeError and friends
        _reraise_signal(e)
        raise InvalidModelError(f"the model is malformed: {type(e).__name__}: {e}") from e
    external = next(external_tensors(proto), None)
    if external is None:
        return proto
    if roots is None:
        raise InvalidModelError(f"tensor {external.name!r} keeps its data in an external file; a model given as bytes "
                                "or a ModelProto reads external data only from a folder you name: pass base_dir=")
    if proto is model:  # the caller's ModelProto stays as it was
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
    load_external_data(proto, roots)
    return proto
