"""InferenceSession: plans a model once (order, kernels, slots, frees), then runs it on torch tensors."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Iterable, Sequence

import numpy as np
import onnx
import torch

from aten2onnx.errors import InvalidInputError, InvalidModelError, KernelError, RunError
from aten2onnx.runtime.optimize import DOMAIN as FUSED_DOMAIN, fuse_exported_ops
from aten2onnx.runtime.kernel import (Kernel, SessionContext, decode_attribute, find_kernel, from_numpy, kernel_versions,
                                      runs_schema, runtime_dtype, tensor_from_proto)


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
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                used |= free_variables(sub)
        defined.update(node.output)
    return used - defined


# Stands for "not fed" among GraphRunner.run's inputs: the input's initializer is used.
DEFAULT = object()


class _Step:
    __slots__ = ("kernel", "inputs", "outputs", "free", "implicit", "node")

    def __init__(self, kernel: Kernel, inputs: list[int], outputs: list[int], implicit: list[tuple[str, int]],
                 node: onnx.NodeProto) -> None:
        self.kernel = kernel
        self.inputs = inputs
        self.outputs = outputs
        self.free: list[int] = []
        self.implicit = implicit
        self.node = node


class GraphRunner:
    """A planned graph. The session runs the main graph with one; If, Loop and Scan run their
    bodies with others, passing the enclosing scope's values as `outer`."""

    def __init__(self, graph: onnx.GraphProto, ctx: SessionContext, *, outer_names: Iterable[str] = (),
                 base_dir: str | None = None) -> None:
        self.ctx = ctx
        self.graph = graph
        self._slot: dict[str, int] = {}
        self.input_names = [i.name for i in graph.input]
        self.output_names = [o.name for o in graph.output]
        self._initial: list[Any] = []

        for init in graph.initializer:
            try:
                tensor = tensor_from_proto(init, base_dir)
            except Exception as e:
                raise InvalidModelError(f"initializer {init.name!r} cannot be read: {e}") from e
            slot = self._new_slot(init.name)
            self._initial[slot] = tensor.to(ctx.device) if ctx.device.type != "cpu" else tensor
        self._input_slots = [self._new_slot(name) for name in self.input_names]
        self._outer_slots = [(name, self._new_slot(name)) for name in outer_names if name not in self._slot]
        nodes = list(graph.node)
        if ctx.fuse:
            nodes = fuse_exported_ops(nodes, set(self.output_names), {i.name: i for i in graph.initializer})
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
        cls = find_kernel(domain, node.op_type, opset)
        if cls is None:
            versions = kernel_versions(domain, node.op_type)
            detail = f"kernels exist from versions {versions}" if versions else "aten2onnx.runtime has no kernel for it"
            raise InvalidModelError(f"{where}: {domain or 'ai.onnx'}::{node.op_type} at opset {opset} is not supported; {detail}")
        _check_schema_version(cls, node, domain, opset, where)
        try:
            attrs = {a.name: decode_attribute(a) for a in node.attribute}
            kernel = cls(self.ctx, node, **attrs)
        except InvalidModelError as e:
            raise InvalidModelError(f"{where}: {e}") from e
        except TypeError as e:
            raise InvalidModelError(f"{where}: bad attributes: {e}") from e
        except Exception as e:
            raise InvalidModelError(f"{where}: {type(e).__name__}: {e}") from e
        inputs = [self._slot[name] if name else -1 for name in node.input]
        implicit = [(name, self._slot[name]) for name in sorted(_implicit_names(node))]
        outputs = [self._new_slot(name) if name else -1 for name in node.output]
        return _Step(kernel, inputs, outputs, implicit, node)

    def _plan_frees(self) -> None:
        """Free each node-produced value after its last reader. Only what a node writes is freed:
        a graph input or initializer slot that no node overwrites must stay set for the next run
        (an initializer may share its name with a node output, which then overwrites it)."""
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
                values[slot] = value
        if self._outer_slots:
            for name, slot in self._outer_slots:
                values[slot] = outer[name]
        for step in self.steps:
            args = [values[s] if s >= 0 else None for s in step.inputs]
            try:
                if step.implicit:
                    results = step.kernel.run(*args, outer={name: values[s] for name, s in step.implicit})
                else:
                    results = step.kernel.run(*args)
            except RunError:
                raise
            except Exception as e:  # not BaseException: KeyboardInterrupt and SystemExit pass through as they are
                shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__ for a in args]
                raise KernelError(
                    f"node {step.node.name!r} ({step.node.op_type}) failed on inputs {list(step.node.input)} "
                    f"with shapes {shapes}: {type(e).__name__}: {e}"
                ) from e
            for slot, value in zip(step.outputs, results):
                if slot >= 0:
                    values[slot] = value
            for slot in step.free:
                values[slot] = None
        return [values[s] for s in self._output_slots]


def _check_schema_version(cls: type[Kernel], node: onnx.NodeProto, domain: str, opset: int, where: str) -> None:
    """Refuse a node whose op changed after our kernel's version in a way the kernel does not
    declare it handles (floor dispatch must never run old semantics under a newer opset)."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, domain)
    except onnx.defs.SchemaError:
        return  # an op onnx does not define (ATen, contrib): our kernel is the definition
    if schema.since_version > cls.since_version and not runs_schema(cls, schema.since_version):
        versions = kernel_versions(domain, node.op_type)
        raise InvalidModelError(
            f"{where}: {domain or 'ai.onnx'}::{node.op_type} at opset {opset} is version {schema.since_version} of "
            f"the op; aten2onnx.runtime has kernels for versions {versions} (covering also "
            f"{list(cls.covers)}), and the changes since version {cls.since_version} are not all type-only"
        )


def _implicit_names(node: onnx.NodeProto) -> set[str]:
    names: set[str] = set()
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            names |= free_variables(attr.g)
        elif attr.type == onnx.AttributeProto.GRAPHS:
            for g in attr.graphs:
                names |= free_variables(g)
    return names


class InferenceSession:
    """Runs an ONNX model with PyTorch kernels, with onnxruntime's API.

    model: a path, serialized bytes or an onnx.ModelProto. External data files are read from the
    model file's folder. ATen fallback nodes run as torch.ops.<namespace>.<op>.<overload> for the
    namespaces in allowed_aten_namespaces only; anything else is refused here, before any run.
    """

    def __init__(self, model: str | os.PathLike | bytes | onnx.ModelProto, *, device: str | torch.device = "cpu",
                 allowed_aten_namespaces: Sequence[str] = ("aten",), fuse: bool = True) -> None:
        from aten2onnx.runtime import ops  # noqa: F401  (registers the kernels)

        proto, base_dir = _load(model)
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise InvalidModelError("device='cuda' was asked for but torch sees no CUDA device")
        opsets = {("" if o.domain in ("", "ai.onnx") else o.domain): o.version for o in proto.opset_import}
        from aten2onnx.runtime.ops import MAX_OPSET

        # A model importing only other domains (ai.onnx.ml, training) is fine; a node in the default
        # domain then finds no opset and is refused when planned.
        if opsets.get("", 0) > MAX_OPSET:
            raise InvalidModelError(f"the model's opset {opsets['']} is newer than the newest this runtime runs, {MAX_OPSET}")
        # fuse: run node groups that aten2onnx exported for one ATen op (gelu, silu) as that op again.
        self._ctx = SessionContext(self.device, {**opsets, FUSED_DOMAIN: 1}, tuple(allowed_aten_namespaces), fuse=fuse)
        self._ctx.compile_graph = lambda graph, outer=(): GraphRunner(graph, self._ctx, outer_names=outer, base_dir=base_dir)
        initializers = {i.name for i in proto.graph.initializer}
        self._inputs = [_node_arg(i) for i in proto.graph.input if i.name not in initializers]
        self._outputs = [_node_arg(o) for o in proto.graph.output]
        self._input_types = {i.name: i.type for i in proto.graph.input}
        self._runner = GraphRunner(proto.graph, self._ctx, base_dir=base_dir)
        self._feed_order = [n for n in self._runner.input_names if n not in initializers]
        # Inputs with an initializer as default (onnxruntime's "overridable initializers").
        self._overridable = [n for n in self._runner.input_names if n in initializers]
        self.model_proto = proto
        self._state_updates = _state_updates(proto, set(self._runner.input_names), {o.name for o in self._outputs})
        self._state: dict[str, Any] = {}

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

    def run(self, output_names: Sequence[str] | None, feeds: dict[str, Any]) -> list[np.ndarray]:
        """numpy in, numpy out, as onnxruntime does."""
        tensors = {name: _from_feed(value) for name, value in feeds.items()}
        results = self.run_torch(tensors, output_names)
        return [_to_numpy(t) for t in results.values()]

    def run_torch(self, feeds: dict[str, torch.Tensor], output_names: Sequence[str] | None = None) -> dict[str, torch.Tensor]:
        """torch tensors in and out; inputs are used as given (no copies on the session's device)."""
        names = [o.name for o in self._outputs] if output_names is None else list(output_names)
        unknown_out = [n for n in names if n not in {o.name for o in self._outputs}]
        if unknown_out:
            raise InvalidInputError(f"unknown output names {unknown_out}; the model's outputs are {[o.name for o in self._outputs]}")
        checked = self._check_feeds(feeds)
        inputs = [checked[n] if n in checked else self._state.get(n, DEFAULT) for n in self._runner.input_names]
        with torch.inference_mode():
            results = self._runner.run(inputs)
        by_name = dict(zip(self._runner.output_names, results))
        self._write_back(feeds, by_name)
        return {n: by_name[n] for n in names}

    def _write_back(self, feeds: dict[str, Any], results: dict[str, Any]) -> None:
        """Apply the model's state updates, as eager PyTorch would have done in place: a buffer's
        new value is carried to the next run; a written input is updated in the caller's tensor."""
        for output, kind, name in self._state_updates:
            new = results[output]
            if kind == "buffer":
                self._state[name] = new.clone() if new.is_inference() else new
            elif isinstance(feeds.get(name), torch.Tensor):
                feeds[name].copy_(new)

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
        if value.dtype != want:
            raise InvalidInputError(f"input {name!r} has dtype {value.dtype}; the model expects {want}")
        if expected.tensor_type.HasField("shape"):
            want_dims = expected.tensor_type.shape.dim
            if len(want_dims) != value.dim():
                raise InvalidInputError(f"input {name!r} has rank {value.dim()} (shape {tuple(value.shape)}); "
                                        f"the model expects rank {len(want_dims)}")
            for axis, (d, actual) in enumerate(zip(want_dims, value.shape)):
                if d.HasField("dim_value") and d.dim_value != actual:
                    raise InvalidInputError(f"input {name!r} has size {actual} in dim {axis}; the model expects {d.dim_value}")
                if d.dim_param and dims is not None:
                    seen = dims.setdefault(d.dim_param, (actual, f"{name}[{axis}]"))
                    if seen[0] != actual:
                        raise InvalidInputError(
                            f"dim {d.dim_param!r} is {actual} in {name}[{axis}] but {seen[0]} in {seen[1]}")
        if value.device != self.device:
            value = value.to(self.device)
        return value


def _from_feed(value: Any) -> Any:
    """A numpy feed (array, scalar, list of arrays for a sequence, None for an empty optional) as torch."""
    if isinstance(value, (list, tuple)):
        return [_from_feed(v) for v in value]
    if isinstance(value, np.ndarray) or np.isscalar(value):
        return from_numpy(np.asarray(value))
    return value


def _to_numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, list):
        return [_to_numpy(v) for v in value]
    return value


def _state_updates(proto: onnx.ModelProto, inputs: set[str], outputs: set[str]) -> list[tuple[str, str, str]]:
    """(output, kind, input) for each state update aten2onnx recorded in the model's metadata."""
    raw = next((p.value for p in proto.metadata_props if p.key == "aten2onnx.state_updates"), None)
    if raw is None:
        return []
    try:
        updates = [(u["output"], u["kind"], u["input"]) for u in json.loads(raw)]
    except (ValueError, KeyError, TypeError) as e:
        raise InvalidModelError(f"metadata aten2onnx.state_updates is malformed: {e}") from e
    for output, kind, name in updates:
        if output not in outputs or name not in inputs or kind not in ("buffer", "input"):
            raise InvalidModelError(f"metadata aten2onnx.state_updates names output {output!r} and input {name!r} "
                                    f"({kind}), which the graph does not have")
    return updates


def _load(model: Any) -> tuple[onnx.ModelProto, str | None]:
    try:
        if isinstance(model, onnx.ModelProto):
            return model, None
        if isinstance(model, (bytes, bytearray)):
            return onnx.load_from_string(bytes(model)), None
        path = os.fspath(model)
        return onnx.load(path, load_external_data=True), os.path.dirname(os.path.abspath(path))
    except (OSError, TypeError) as e:
        raise InvalidModelError(f"cannot load the model: {e}") from e
    except Exception as e:  # protobuf's DecodeError and friends
        raise InvalidModelError(f"the model is malformed: {type(e).__name__}: {e}") from e
