"""Translate an ExportedProgram's ATen graph into ONNX nodes, one FX node at a time, through the
registry; an op no symbolic expresses is decomposed into ATen pieces that are translated in its place
(decompose.py), and one whose pieces cannot be expressed either becomes an ATen fallback node or is
collected into one error."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, Callable

import onnx
import torch
import torch.fx
import torch.utils._pytree as pytree
from torch.export.graph_signature import InputKind
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from aten2onnx import _dtypes, registry as _registry
from aten2onnx.errors import (ArgumentError, ExportError, KernelOnly, SymbolicError, UnsupportedOp, UnsupportedOperatorError,
                              warn_user)
from aten2onnx.ir import lazy, op_types
from aten2onnx.ir import GraphBuilder, Node, Subgraph, Value, body_output, dim_of, graph_type
from aten2onnx.ir.builder import ExactCall
from aten2onnx.exporter import decompose
from aten2onnx.exporter.fallback import aten_call, emit_aten_node
from aten2onnx.exporter.provenance import module_of, source_of
from aten2onnx.registry import REGISTRY, bind
from aten2onnx.exporter.passes import Program

import torch.export.custom_ops  # noqa: E402,F401  (defines export::access_subclass_inner_tensor)

_INNER_TENSOR = torch.ops.export.access_subclass_inner_tensor.default


@dataclasses.dataclass(frozen=True)
class SubclassWeight:
    """A weight that is a tensor subclass (torchao's Int8Tensor, IntxUnpackedToInt8Tensor, ...): the graph
    reads its inner tensors, each an initializer named `<weight>.<inner name>`."""

    name: str
    tensor: torch.Tensor

# Higher-order ops that only wrap a body in a grad or autocast mode: position of the body argument.
_WRAPPERS = {"wrap_with_set_grad_enabled": 1, "wrap_with_autocast": 4}
# Control-flow higher-order ops and the Translator method that turns each into If, Loop or Scan.
_CONTROL_FLOW = {"cond": "_cond", "while_loop": "_while_loop", "scan": "_scan"}

@dataclasses.dataclass
class OutputSlot:
    """One entry of the flattened user output: a graph output, or a constant torch.export baked.
    name: the output's name where its role gives one (a joint program's "loss", "<parameter>.grad")."""

    value: Value | None
    constant: Any = None
    name: str | None = None


@dataclasses.dataclass
class StateSlot:
    """The new value of a buffer or user input the graph writes (see passes.OutputRole)."""

    kind: str  # "buffer" or "input"
    state: Value  # the initializer or graph input that holds the old value
    value: Value


@dataclasses.dataclass
class Translation:
    graph: GraphBuilder
    nodes: list[Node]
    user_inputs: list[Value | None]  # per flattened user input: its graph input, None if baked
    outputs: list[OutputSlot]
    states: list[StateSlot]
    fallback_ops: list[str]
    decomposed_ops: list[str]  # ops no symbolic expressed, translated as torch's decomposition of them
    values: dict[str, Any]  # per top-level FX node by name: what it was translated to (Values or numbers)
    requires_grad: list[Value] = dataclasses.field(default_factory=list)  # weights that require grad in eager
    # per top-level ONNX node (by id): the module calls its FX node was made in, outermost first, as
    # (nn_module_stack key, module path, class qualified name); the key tells repeated calls apart
    module_stacks: dict[int, tuple[tuple[str, str, str], ...]] = dataclasses.field(default_factory=dict)


class Translator:
    def __init__(self, program: Program, *, opset: int, fallback: str,
                 overrides: dict[str, Callable], evaluator: Callable | None, exact: bool = False,
                 state_names: dict[str, str] | None = None) -> None:
        self.ep = program.ep
        # ONNX names of constants by where the model keeps them (a plain attribute's path, a global's
        # qualified name), for the state a written one becomes; others keep torch.export's name
        self.state_names = dict(state_names or {})
        self.gm = program.gm
        self.roles = program.roles
        self.opset = opset
        self.fallback = fallback
        self.resolver = _registry.Resolver(REGISTRY, opset, overrides)
        self.exact = exact
        self.g = GraphBuilder(opset, evaluator=evaluator, resolve=self.resolver, exact=exact)
        self.env: dict[torch.fx.Node, Any] = {}
        self.state_values: dict[tuple[str, str], Value] = {}  # ("buffer", key) / ("input", name) -> Value
        self.unsupported: list[UnsupportedOp] = []
        self.fallback_ops: set[str] = set()
        self.decomposed_ops: set[str] = set()
        # while an op's decomposition is translated: the FX node it decomposes (its provenance is the
        # pieces'), and the ops being decomposed (a piece that is one of them is not decomposed again)
        self._origin: torch.fx.Node | None = None
        self._decomposing: list[torch._ops.OpOverload] = []
        self.requires_grad: list[Value] = []
        self.module_stacks: dict[int, tuple[tuple[str, str, str], ...]] = {}

    # -- entry ----------------------------------------------------------------------------------
    def run(self, input_names: list[str] | None, advance: Callable[[], Any] | None = None) -> Translation:
        """advance: called after each top-level node (a progress bar's)."""
        user_inputs = self._bind_placeholders(input_names)
        self.g.dim_least.update(_size_bounds(self.gm))
        results = self._translate_nodes(self.gm, advance)
        if self.unsupported:
            raise UnsupportedOperatorError(self.unsupported, self.opset)
        outputs, states = self._collect_outputs(results)
        values = {node.name: self.env[node] for node in self.gm.graph.nodes
                  if node.op == "call_function" and node in self.env}
        return Translation(self.g, self.g.nodes, user_inputs, outputs, states, sorted(self.fallback_ops),
                           sorted(self.decomposed_ops), values, self.requires_grad, self.module_stacks)

    # -- placeholders -----------------------------------------------------------------------------
    def _bind_placeholders(self, input_names: list[str] | None) -> list[Value | None]:
        specs = {spec.arg.name: spec for spec in self.ep.graph_signature.input_specs}
        user_inputs: list[Value | None] = []
        names = list(input_names or [])
        written = {role.name for role in self.roles if role.kind == "buffer"}
        weights = {spec.target for spec in self.ep.graph_signature.input_specs
                   if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)}
        unbound: dict[int, torch.Tensor] = {}  # weights without data, each tagged with its first key
        taken = sorted(set(names) & weights)
        if taken:
            raise ArgumentError(f"input_names {taken} are names of the model's weights, which the ONNX model keeps as "
                                "initializers under their state_dict keys; choose other input names")
        for node in self.gm.graph.nodes:
            if node.op != "placeholder":
                continue
            spec = specs[node.target]  # the input's own name; FX renames a placeholder `input` to `input_1`
            if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                tensor = self.ep.state_dict.get(spec.target)
                if tensor is None:
                    tensor = self.ep.constants[spec.target]
                if lazy.is_lazy(tensor) and not lazy.computable(tensor):
                    # a weight without data: read by its (first) key when written, tagged on a detached alias so
                    # that the user's tensor is left as it was (another export may name it otherwise)
                    if id(tensor) not in unbound:
                        unbound[id(tensor)] = lazy.source(tensor.detach(), spec.target)
                    tensor = unbound[id(tensor)]
                name = self.state_names.get(spec.target, spec.target)
                if name != spec.target and (name in weights or name in names):
                    name = spec.target  # taken by a weight or an input: torch.export's name stays
                if is_traceable_wrapper_subclass(tensor):
                    # a weight of a tensor subclass (torchao's quantized weights): the graph reads its inner
                    # tensors (export::access_subclass_inner_tensor), each stored as it is, never a float copy
                    self.env[node] = SubclassWeight(name, tensor)
                    continue
                if spec.target in written:
                    # state: its default is its value now, copied (the model, or the global it lives in, goes on
                    # changing it as it runs; the weights the graph only reads are referenced, not copied)
                    tensor = lazy.alias(tensor, tensor.detach().clone())
                self.env[node] = self.g.initializer(name, tensor, state=spec.target in written)
                self.state_values[("buffer", spec.target)] = self.env[node]
                if tensor.requires_grad:
                    self.requires_grad.append(self.env[node])
            elif spec.kind == InputKind.USER_INPUT:
                val = node.meta.get("val")
                if isinstance(val, torch.Tensor):
                    position = sum(v is not None for v in user_inputs)  # input_names name tensor inputs only
                    name = names[position] if position < len(names) else node.target
                    value = self.g.input(name, val.dtype, tuple(dim_of(d) for d in val.shape))
                    self.env[node] = value
                    self.state_values[("input", node.target)] = value
                    user_inputs.append(value)
                else:
                    # A non-tensor input torch.export specialized: its example value is baked in.
                    self.env[node] = val
                    user_inputs.append(None)
            else:
                raise ExportError(f"input {node.name!r} is a {spec.kind.name}, which aten2onnx does not export")
        tensor_inputs = sum(v is not None for v in user_inputs)
        if input_names is not None and len(input_names) != tensor_inputs:
            raise ExportError(f"input_names has {len(input_names)} names but the model has {tensor_inputs} tensor inputs")
        return user_inputs

    # -- call_function nodes ------------------------------------------------------------------------
    def _translate_nodes(self, gm: torch.fx.GraphModule, advance: Callable[[], Any] | None = None) -> Any:
        """Translate a graph module's nodes; returns what its output node returns."""
        for node in gm.graph.nodes:
            if node.op == "output":
                return torch.fx.node.map_aggregate(node.args[0], self._lookup)
            if node.op == "call_function":
                first = len(self.g.nodes)
                self._translate_call(node)
                if self.g.parent is None:
                    self._record_stack(node, first)
            elif node.op == "get_attr":
                attr = getattr(gm, node.target)
                self.env[node] = self.g.initializer(node.target, attr) if isinstance(attr, torch.Tensor) else attr
            if advance is not None:
                advance()
        return None

    def _record_stack(self, node: torch.fx.Node, first: int) -> None:
        """The module calls node was made in, for the top-level ONNX nodes made for it (a wrapper's body
        nodes record their own first)."""
        stack = tuple((key, path or "", cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}")
                      for key, (path, cls) in (node.meta.get("nn_module_stack") or {}).items())
        for made in self.g.nodes[first:]:
            self.module_stacks.setdefault(id(made), stack)

    def _inline(self, node: torch.fx.Node, submodule: torch.fx.GraphModule, operands: tuple) -> None:
        """Translate a wrapper higher-order op's body in place (grad mode and autocast do not
        change an inference graph)."""
        self._bind(submodule, [self._lookup(o) for o in operands])
        self.env[node] = self._translate_nodes(submodule)

    # -- control flow -------------------------------------------------------------------------------
    def _bind(self, gm: torch.fx.GraphModule, bindings: list[Any]) -> None:
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for placeholder, value in zip(placeholders, bindings):
            self.env[placeholder] = value

    def _run_graph(self, gm: torch.fx.GraphModule, bindings: list[Any]) -> list[Any]:
        """Translate gm with its placeholders bound to values; its results as a list."""
        self._bind(gm, bindings)
        results = self._translate_nodes(gm)
        return list(results) if isinstance(results, (list, tuple)) else [results]

    def _body(self, inputs: list[Value], build: Callable[[], list[Any]], name: str) -> Subgraph:
        """A control-flow body: `build` translates into a fresh subgraph builder whose formal inputs
        are `inputs`; anything else it reads comes from the enclosing scope."""
        parent = self.g
        self.g = parent.subgraph()
        self.g.inputs = inputs
        try:
            outputs: list[Value] = []
            for value in build():
                outputs.append(body_output(self.g, value, outputs))
            return Subgraph(self.g, inputs, outputs, self.g.fresh_name(name))
        finally:
            self.g = parent

    def _formal(self, like: Value, name: str, *, drop_first_dim: bool = False) -> Value:
        shape = like.shape[1:] if drop_first_dim and like.shape is not None else like.shape
        return Value(self.g.fresh_name(name), like.dtype, shape, kind="input", complex=like.complex)

    def _stamp_all(self, node: torch.fx.Node, outs: Any) -> list[Value]:
        """Give a control-flow node's results FX's dtypes and shapes, which the op must carry."""
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        vals = node.meta.get("val")
        vals = list(vals) if isinstance(vals, (list, tuple)) else [vals]
        op_type = outs[0].producer.op_type if outs and outs[0].producer is not None else None
        signature = op_types.signature(op_type, self.opset) if op_type else None
        for i, (out, val) in enumerate(zip(outs, vals)):
            out.dtype, out.shape = graph_type(val)
            out.complex = _is_complex(val)
            formal = signature.output_type(i) if signature is not None else None
            if formal is not None and out.dtype is not None and not signature.takes(formal, out.dtype):
                raise ExportError(f"node {node.name!r} at {source_of(node) or '?'} makes a {out.dtype} result, which "
                                  f"ONNX's {op_type} takes only from a later opset than {self.opset}; export at a "
                                  "newer opset")
        return outs

    def _cond(self, node: torch.fx.Node) -> list[Value]:
        """torch.cond -> If; each branch reads the operands from the enclosing scope."""
        pred, true_gm, false_gm, operands = node.args
        values = [self._lookup(o) for o in operands]
        then_graph = self._body([], lambda: self._run_graph(self.env[true_gm], values), f"{node.name}_then")
        else_graph = self._body([], lambda: self._run_graph(self.env[false_gm], values), f"{node.name}_else")
        predicate = _as_bool_scalar(self.g, self._lookup(pred))
        outs = self.g.op("If", predicate, outputs=len(then_graph.outputs), then_branch=then_graph,
                         else_branch=else_graph)
        return self._stamp_all(node, outs)

    def _while_loop(self, node: torch.fx.Node) -> list[Value]:
        """while_loop -> Loop with no trip count: the condition is evaluated once before the loop,
        and again at the end of each iteration inside the body."""
        cond_gm, body_gm, carried, additional = node.args
        cond_gm, body_gm = self.env[cond_gm], self.env[body_gm]
        carried = [self._lookup(c) for c in carried]
        extra = [self._lookup(a) for a in additional]
        first = _as_bool_scalar(self.g, self._run_graph(cond_gm, carried + extra))
        counter = Value(self.g.fresh_name(f"{node.name}_iteration"), torch.int64, (), kind="input")
        condition = Value(self.g.fresh_name(f"{node.name}_condition"), torch.bool, (), kind="input")
        state = [self._formal(c, f"{node.name}_carried") for c in carried]

        def build() -> list[Any]:
            updated = self._run_graph(body_gm, state + extra)
            again = _as_bool_scalar(self.g, self._run_graph(cond_gm, updated + extra))
            return [again] + updated

        graph = self._body([counter, condition] + state, build, f"{node.name}_body")
        outs = self.g.op("Loop", None, first, *carried, outputs=len(carried), body=graph)
        return self._stamp_all(node, outs)

    def _scan(self, node: torch.fx.Node) -> list[Value]:
        """scan -> Scan along dim 0 (torch.export has already moved the scanned dim first)."""
        combine_gm, init, xs, additional = node.args
        init = [self._lookup(v) for v in init]
        xs = [self._lookup(v) for v in xs]
        extra = [self._lookup(a) for a in additional]
        formals = [self._formal(v, f"{node.name}_state") for v in init]
        formals += [self._formal(v, f"{node.name}_x", drop_first_dim=True) for v in xs]
        graph = self._body(formals, lambda: self._run_graph(self.env[combine_gm], formals + extra), f"{node.name}_body")
        outs = self.g.op("Scan", *init, *xs, outputs=len(graph.outputs), body=graph, num_scan_inputs=len(xs))
        return self._stamp_all(node, outs)

    def _translate_call(self, node: torch.fx.Node) -> None:
        target = node.target
        if target is operator.getitem:
            self.env[node] = self.env[node.args[0]][node.args[1]]
            return
        if isinstance(target, torch._ops.HigherOrderOperator):
            name = getattr(target, "__name__", None)
            if name in _WRAPPERS:
                body = _WRAPPERS[name]
                self._inline(node, self.env[node.args[body]], node.args[body + 1:])
                return
            if name in _CONTROL_FLOW:
                self._enter(node, f"higher_order::{name}")
                self.env[node] = getattr(self, _CONTROL_FLOW[name])(node)
                return
        if target is _INNER_TENSOR and isinstance(self.env.get(node.args[0]), SubclassWeight):
            weight, attr = self.env[node.args[0]], node.args[1]
            self.env[node] = self.g.initializer(f"{weight.name}.{attr}", getattr(weight.tensor, attr))
            return
        wrapped = [self.env[a] for a in node.all_input_nodes if isinstance(self.env.get(a), SubclassWeight)]
        if wrapped:
            raise ExportError(f"{node.name!r} ({_registry.overload_key(target)}) at {source_of(node) or '?'} reads "
                              f"the weight {wrapped[0].name!r}, a {type(wrapped[0].tensor).__name__} (a tensor subclass), "
                              "as a whole; aten2onnx exports a subclass weight through the inner tensors torch.export "
                              "unwraps it into. Export the model with torch.export's default subclass unwrapping (do not "
                              "call the subclass's ops from custom code), or convert the weight to a plain tensor first")
        source = self._enter(node, _registry.overload_key(target))
        self._check_result_dtypes(node, target, source)
        empty = self._empty_result(node, target)
        if empty is not None:
            self.env[node] = empty
            return
        on_complex = self._touches_complex(node)
        resolved = self.resolver.resolve(target, complex=on_complex)
        if resolved is None:
            self._unmapped(node, target, reason=self._complex_reason(target) if on_complex else None)
            return
        if resolved.schema is not None:  # an ATen overload: arguments by schema name
            args, kwargs = (), torch.fx.node.map_aggregate(bind(resolved.schema, node.args, node.kwargs), self._lookup)
        else:  # a Python operator on SymInts
            args, kwargs = torch.fx.node.map_aggregate(node.args, self._lookup), {}
        first_new = len(self.g.nodes)
        try:
            result = self._finish(node, resolved.handler(self.g, *args, **kwargs), first_new, resolved.user)
        except ExportError:
            raise
        except NotImplementedError as e:
            # The handler says ONNX cannot express this case at this opset: treat the node as unmapped.
            # Nodes it built before raising are unused and removed with the dead code.
            self._unmapped(node, target, reason=str(e) or f"not expressible at opset {self.opset}",
                           pieces=not isinstance(e, KernelOnly))
            return
        except Exception as e:
            where = f" at {source}" if source else ""
            who = "user symbolic" if resolved.user else "symbolic"
            message = (f"{who} {resolved.handler.__module__}.{resolved.handler.__qualname__} for {resolved.key} "
                       f"(registered at opset {resolved.opset}) failed on node {node.name!r}{where} "
                       f"exporting at opset {self.opset}: {type(e).__name__}: {e}")
            if not resolved.user and self.fallback == "aten" and isinstance(target, torch._ops.OpOverload):
                # A bug in a built-in handler should not cost the user the export: the ATen node
                # computes the op right; the warning makes the bug visible.
                warn_user(message + "; exported as an ATen node instead. Please report this.")
                self._unmapped(node, target, pieces=False)
                return
            raise SymbolicError(message) from e
        if self.exact and resolved.schema is not None:
            try:
                op = target if resolved.via_twin is None else _registry.functional_twin(target)
                result = self._exact(node, op, result, first_new)
            except NotImplementedError as e:
                # the call needs a node the opset cannot write (an Identity of a bfloat16 at opset 9): the
                # node becomes an ATen node, exact as such (what the handler built is dead and removed)
                self._unmapped(node, target, reason=str(e), pieces=False)
                return
        self.env[node] = result
        if resolved.via_twin is not None:
            self._rebind_written(node, target, result)

    # -- exact mode ---------------------------------------------------------------------------------
    def _exact(self, node: torch.fx.Node, op: torch._ops.OpOverload, result: Any, first_new: int) -> Any:
        """Exact mode: the node's ATen call, attached to the node that makes its first result, so the
        runtime runs the call in place of the nodes made for it; a result folded into a constant here
        is computed again by the call itself on the constants (ONNX's arithmetic may differ in the last
        bit). A result known without computing (a number, a constant the node was given) is left as it is."""
        leaves = _leaves(result)
        made = {id(out) for n in self.g.nodes[first_new:] for out in n.outputs}
        read = {id(v) for v in pytree.tree_leaves(torch.fx.node.map_aggregate((node.args, node.kwargs), self._lookup))}
        folded = [i for i, v in enumerate(leaves) if isinstance(v, Value) and id(v) not in made
                  and v.kind == "const" and id(v) not in read]
        if folded:
            result = self._recomputed(node, op, result, leaves, folded)
            leaves = _leaves(result)
        # a value the handler passed through (contiguous, clone, a view to the same shape) gets a node of its
        # own, so the call makes the result: eager's may differ from the input in strides or be a copy, and
        # a handler that wrongly passes its input on cannot make the run differ from eager
        vals = _leaves(node.meta.get("val"))
        passed = [i for i, v in enumerate(leaves) if isinstance(v, Value) and id(v) not in made and v.kind != "const"]
        if passed:
            copies = list(leaves)
            for i in passed:
                copies[i] = self.g.op("Identity", leaves[i])
                made.add(id(copies[i]))
                self._stamp(copies[i], vals[i] if i < len(vals) else None, node.name, made)
            result = _unflat(result, iter(copies))
            leaves = copies
        computed = [v for v in leaves if isinstance(v, Value) and id(v) in made]
        if not computed:
            return result
        bound = torch.fx.node.map_aggregate(bind(op._schema, node.args, node.kwargs), self._lookup)
        complex_outputs = [i for i, v in enumerate(leaves) if isinstance(v, Value) and v.complex]
        inputs, attrs = aten_call(self.g, op, bound, complex_outputs)
        # a result the call makes but the graph has otherwise (a number, a constant) is an output left unnamed
        outputs = [v if isinstance(v, Value) and id(v) in made else None for v in leaves]
        carrier = computed[0].producer
        if carrier is None or carrier.call is not None:
            raise ExportError(f"exact mode: the nodes made for {node.name!r} ({_registry.overload_key(op)}) at "
                              f"{source_of(node) or '?'} have no one node to carry its ATen call; export without "
                              "exact=True, or report this")
        carrier.call = ExactCall(inputs, outputs, attrs)
        return result

    def _recomputed(self, node: torch.fx.Node, op: torch._ops.OpOverload, result: Any, leaves: list[Any],
                    folded: list[int]) -> Any:
        """result with its folded leaves replaced by what the ATen call computes from the constants."""
        def concrete(arg: Any) -> Any:
            if not isinstance(arg, torch.fx.Node):
                return arg
            value = self.env[arg]
            if not isinstance(value, Value):
                return value
            if value.const is not None:
                return _dtypes.from_pairs(value.const) if value.complex else value.const
            val = arg.meta.get("val")
            if isinstance(val, torch.Tensor) and all(isinstance(d, int) for d in val.shape):
                # the fold did not read this input's data (only its shape): any data gives the same result
                return torch.zeros(tuple(val.shape), dtype=val.dtype)
            raise ExportError(f"exact mode: {node.name!r} ({_registry.overload_key(op)}) at {source_of(node) or '?'} "
                              f"was folded into a constant from {arg.name!r}, whose shape is dynamic, so the fold "
                              "cannot be checked against the ATen call; export without exact=True")

        args, kwargs = torch.fx.node.map_aggregate((node.args, node.kwargs), concrete)
        eager = _leaves(op(*args, **kwargs))
        replaced = list(leaves)
        for i in folded:
            if not isinstance(eager[i], torch.Tensor):
                continue
            replaced[i] = self.g.const(eager[i])
        return _unflat(result, iter(replaced))

    def _check_result_dtypes(self, node: torch.fx.Node, target: Any, source: str) -> None:
        """A result no ONNX element type can hold (quantized, bits) cannot be exported,
        not even as a fallback node: say so at the node that makes it."""
        for val in _leaves(node.meta.get("val")):
            if isinstance(val, torch.Tensor) and not _dtypes.has_onnx(_dtypes.real_part(val.dtype)):
                raise ExportError(f"node {node.name!r} ({_registry.overload_key(target)}) at {source or '?'} makes a "
                                  f"{val.dtype} tensor, which ONNX has no element type for; use a dtype ONNX has "
                                  "(float32, int64, ...) in the model there")

    def _empty_result(self, node: torch.fx.Node, target: Any) -> Any:
        """A pure op whose every result is a tensor of static shape with no elements computes nothing:
        its results are empty constants of that shape and dtype. (Whatever the op, the answer is
        known; and onnxruntime mishandles some zero-size MatMuls.)"""
        if not isinstance(target, torch._ops.OpOverload) or target._schema.is_mutable:
            return None
        val = node.meta.get("val")
        vals = list(val) if isinstance(val, (list, tuple)) else [val]
        if not vals or not all(isinstance(v, torch.Tensor) and v.layout == torch.strided
                               and all(isinstance(d, int) for d in v.shape) and v.numel() == 0 for v in vals):
            return None
        consts = [self.g.const(torch.empty(tuple(v.shape), dtype=v.dtype)) for v in vals]
        return tuple(consts) if isinstance(val, (list, tuple)) else consts[0]

    def _enter(self, node: torch.fx.Node, op_key: str) -> str:
        """Name what follows after node and stamp its source, module and op; returns the source. A piece
        of a decomposition has the source and module of the node decomposed, and names its op."""
        origin = self._origin or node
        meta = {"source": source_of(origin) or "", "module": module_of(origin), "aten_op": op_key}
        if self._origin is not None:
            meta["decomposed_from"] = _registry.overload_key(self._origin.target)
        self.g.set_scope(node.name, {k: v for k, v in meta.items() if v})
        return meta["source"]

    def _lookup(self, arg: Any) -> Any:
        return self.env[arg] if isinstance(arg, torch.fx.Node) else arg

    def _touches_complex(self, node: torch.fx.Node) -> bool:
        """Whether a complex tensor is among node's inputs or results (carried as real pairs, so
        only a handler registered for complex tensors may translate it)."""
        inputs = torch.fx.node.map_aggregate((node.args, node.kwargs), self._lookup)
        if any(isinstance(v, Value) and v.complex for v in pytree.tree_leaves(inputs)):
            return True
        return any(_is_complex(val) for val in _leaves(node.meta.get("val")))

    def _complex_reason(self, target: Any) -> str:
        real = REGISTRY.opsets_for(target)
        have = f"; the symbolic registered from opset {real[0]} is for real tensors" if real else ""
        return f"no symbolic for complex tensors{have}"

    def _rebind_written(self, node: torch.fx.Node, target: torch._ops.OpOverload, result: Any) -> None:
        """After `x.add_(y)` is translated as `add`, later readers of x see the new value."""
        bound = bind(target._schema, node.args, node.kwargs)
        for name in _registry.written_arguments(target):
            written = bound.get(name)
            if not isinstance(written, torch.fx.Node):
                continue
            if written.op == "placeholder":
                raise ExportError(
                    f"node {node.name!r} ({_registry.overload_key(target)}) at {source_of(node) or '?'} updates the "
                    f"model input or buffer {written.name!r} in place; writing state back is not supported yet. "
                    "Return the new value as an output instead."
                )
            self.env[written] = result

    def _unmapped(self, node: torch.fx.Node, target: Any, reason: str | None = None, *,
                  pieces: bool = True) -> None:
        """A node no symbolic translates: its decomposition's pieces if they translate, else an ATen
        node (or an unsupported op, with fallback="error"). pieces: whether to try the decomposition."""
        key = _registry.overload_key(target)
        tried = None  # why the decomposition did not translate, where there is one
        if pieces and isinstance(target, torch._ops.OpOverload) and target not in self._decomposing:
            try:
                self._decomposed(node, target)
                return
            except decompose.NoDecomposition as e:
                tried = None if isinstance(e, decompose.NoneKnown) else str(e)
            except _Inexpressible as e:
                tried = str(e)
        if self._decomposing:
            raise _Inexpressible(f"its piece {key} has no translation"
                                 + (f" ({reason})" if reason else "") + (f"; {tried}" if tried else ""))
        if self.fallback == "error" or not isinstance(target, torch._ops.OpOverload):
            self.unsupported.append(UnsupportedOp(key, node.name, source_of(node), REGISTRY.opsets_for(target), reason,
                                                  tried))
            self.env[node] = _placeholder_result(node)
            return
        bound = torch.fx.node.map_aggregate(bind(target._schema, node.args, node.kwargs), self._lookup)
        val = node.meta.get("val")
        # One ONNX output per leaf of the op's (possibly nested) result, as the runtime flattens it.
        leaves = _leaves(val)
        complex_outputs = [i for i, leaf in enumerate(leaves) if _is_complex(leaf)]
        outs = emit_aten_node(self.g, target, bound, max(1, len(leaves)), complex_outputs)
        outs = list(outs) if len(leaves) > 1 else [outs]
        for i, (out, leaf) in enumerate(zip(outs, leaves)):
            self._stamp(out, leaf, node.name if len(leaves) == 1 else f"{node.name}.{i}", {id(out)})
        self.env[node] = _rebuild(val, iter(outs)) if isinstance(val, (tuple, list)) else outs[0]
        self.fallback_ops.add(key)

    def _decomposed(self, node: torch.fx.Node, target: torch._ops.OpOverload) -> None:
        """Translate node as the pieces torch decomposes its op into (decompose.py), each through the
        registry and decomposed in turn where it needs to be; _Inexpressible when a piece has no
        translation. Exact mode: the pieces carry node's own ATen call, so the runtime still runs the op."""
        gm, inputs = decompose.pieces(node, target)
        for piece in gm.graph.nodes:
            if piece.op == "call_function" and isinstance(piece.target, torch._ops.OpOverload) \
                    and piece.target._schema.is_mutable:
                raise decompose.NoDecomposition(f"its decomposition writes in place ({piece.target})")
        first_new = len(self.g.nodes)
        saved = (self.exact, self._origin, set(self.decomposed_ops))
        self.exact, self._origin = False, self._origin or node
        self._decomposing.append(target)
        try:
            result = self._translate_pieces(gm, inputs)
        except (_Inexpressible, ExportError) as e:
            self.decomposed_ops = saved[2]  # a piece decomposed inside a decomposition that failed
            if isinstance(e, _Inexpressible):
                raise
            # a piece the translator refuses (one that writes to an input, a dtype ONNX lacks)
            raise _Inexpressible(f"{type(e).__name__}: {e}") from e
        finally:
            self.exact, self._origin = saved[0], saved[1]
            self._decomposing.pop()
            self._enter(node, _registry.overload_key(target))
        try:
            result = self._finish(node, result, first_new, user=False)
        except TypeError as e:  # the pieces make another dtype than the op, or another structure
            self.decomposed_ops = saved[2]
            raise _Inexpressible(f"{type(e).__name__}: {e}") from e
        if self.exact:
            result = self._exact(node, target, result, first_new)
        self.env[node] = result
        self.decomposed_ops.add(_registry.overload_key(target))

    def _translate_pieces(self, gm: torch.fx.GraphModule, inputs: list[torch.fx.Node]) -> Any:
        """Translate a decomposition's graph, its placeholders bound to what inputs were translated to;
        returns what its output node returns."""
        bindings = iter(inputs)
        for piece in gm.graph.nodes:
            if piece.op == "placeholder":
                self.env[piece] = self.env[next(bindings)]
            elif piece.op == "get_attr":
                attr = getattr(gm, piece.target)
                self.env[piece] = self.g.const(attr) if isinstance(attr, torch.Tensor) else attr
            elif piece.op == "call_function":
                self._translate_call(piece)
            elif piece.op == "output":
                return torch.fx.node.map_aggregate(piece.args[0], self._lookup)
        return None

    def _finish(self, node: torch.fx.Node, result: Any, first_new: int, user: bool) -> Any:
        """Name the handler's outputs after the FX node and give them the dtype/shape FX knows."""
        val = node.meta.get("val")
        _check_result(result, val)
        made = {id(out) for n in self.g.nodes[first_new:] for out in n.outputs}
        if isinstance(result, Value):
            return self._settle(result, val, node.name, made, user)
        if isinstance(result, (tuple, list)) and isinstance(val, (tuple, list)):
            return type(result)(self._settle(res, v, f"{node.name}.{i}", made, user) if isinstance(res, Value) else res
                                for i, (res, v) in enumerate(zip(result, val)))
        return result

    def _settle(self, value: Value, val: Any, name: str, made: set[int], user: bool) -> Value:
        """One handler result, read as complex exactly where FX's result is complex, of FX's dtype,
        then stamped. A value the handler made is stamped so; a constant or an input it did not make
        (view_as_real returns its input) is retagged, through an Identity that is then stamped as made
        here."""
        if isinstance(val, torch.Tensor) and id(value) not in made and value.complex != val.dtype.is_complex:
            first = len(self.g.nodes)
            value = self.g.retag(value, complex=val.dtype.is_complex)
            made.update(id(out) for n in self.g.nodes[first:] for out in n.outputs)
        value = self._of_fx_dtype(value, val, name, made, user)
        self._stamp(value, val, name, made)
        return value

    def _of_fx_dtype(self, value: Value, val: Any, name: str, made: set[int], user: bool) -> Value:
        """A result whose dtype is certain and differs from FX's is a handler's bug, raised, except that a
        built-in result FX's dtype holds exactly is cast to it (an FX decomposition may keep a result
        in the wider type ATen's kernel rounds from: batch norm's running statistics of half inputs)."""
        dtype = graph_type(val)[0]
        if dtype is None or not value.typed or value.dtype == dtype:
            return value
        if user or not _holds_exactly(dtype, value.dtype):
            raise TypeError(f"the handler's result {name!r} is {value.dtype} but the op makes {dtype}; a handler "
                            "casts its results to the dtype PyTorch gives them")
        value = self.g.op("Cast", value, to=_dtypes.to_onnx(dtype))
        made.add(id(value))
        return value

    def _stamp(self, value: Value, val: Any, name: str, new: set[int]) -> None:
        if isinstance(val, torch.SymInt):  # a fact about the value, whoever made it
            text = dim_of(val)
            value.least = text if isinstance(text, int) else self.g.dim_least.get(text)
        if id(value) not in new:
            return  # the handler passed an existing value through (a no-op such as contiguous)
        dtype, shape = graph_type(val)
        if dtype is not None:
            value.dtype = dtype
            value.shape = shape
            value.complex = _is_complex(val)
        self.g.rename(value, name)

    # -- outputs ----------------------------------------------------------------------------------
    def _collect_outputs(self, results: Any) -> tuple[list[OutputSlot], list[StateSlot]]:
        slots, states = [], []
        for role, value in zip(self.roles, results):
            if role.kind == "output":
                if isinstance(value, Value):
                    slots.append(OutputSlot(value))
                elif isinstance(value, (bool, int, float)):
                    # A number torch.export baked: a constant graph output, so the file is complete;
                    # run() gives it back as the Python number eager returns.
                    slots.append(OutputSlot(self.g.const(value), value))
                else:
                    slots.append(OutputSlot(None, value))
            elif role.kind == "loss":
                slots.append(OutputSlot(value, name="loss"))
            elif role.kind == "grad":
                slots.append(OutputSlot(value, name=f"{role.name}.grad"))
            else:
                states.append(StateSlot(role.kind, self.state_values[(role.kind, role.name)], value))
        return slots, states


class _Inexpressible(Exception):
    """A decomposition's piece has no translation: the node decomposed falls back whole."""


def _holds_exactly(wide: torch.dtype, narrow: torch.dtype) -> bool:
    """Whether every value of `narrow` is a value of `wide` (bool in anything, int8 in float32, float16
    in float32; not int32 in float32, nor float16 in bfloat16)."""
    if narrow == torch.bool:
        return True
    if wide == torch.bool or wide.is_complex or narrow.is_complex:
        return False
    if not narrow.is_floating_point:
        info = torch.iinfo(narrow)
        if not wide.is_floating_point:
            return torch.iinfo(wide).min <= info.min and torch.iinfo(wide).max >= info.max
        return max(-info.min, info.max) <= 2 / torch.finfo(wide).eps  # ints up to 2**(mantissa bits + 1)
    if not wide.is_floating_point:
        return False
    return torch.finfo(wide).eps <= torch.finfo(narrow).eps and torch.finfo(wide).max >= torch.finfo(narrow).max


_NUMBERS = (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)


def _size_bounds(gm: torch.fx.GraphModule) -> dict[str, int]:
    """The least each symbolic size of the program (a tensor's dim, or a SymInt it computes) can be, by the
    text shapes carry it as."""
    bounds: dict[str, int] = {}
    for node in gm.graph.nodes:
        for val in torch.utils._pytree.tree_leaves(node.meta.get("val")):
            sizes = val.shape if isinstance(val, torch.Tensor) else (val,) if isinstance(val, torch.SymInt) else ()
            for d in sizes:
                text = dim_of(d)
                if isinstance(text, str) and text not in bounds:
                    least = _least(d)
                    if least is not None:
                        bounds[text] = least
    return bounds


def _least(size: torch.SymInt) -> int | None:
    """The least a symbolic size can be, as the capture's ranges bound it (None: unbounded below)."""
    try:
        return int(size.node.shape_env.bound_sympy(size.node.expr).lower)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def _check_result(result: Any, val: Any) -> None:
    """A handler returns what the op makes: a Value per tensor, a sequence of the op's length for a
    tuple or list, a Value or a number for a number. Anything else is the handler's bug (a user symbolic
    returning 42 would make the model return 42), raised so that it is reported."""
    if val is None:
        return
    if isinstance(val, torch.Tensor):
        if not isinstance(result, Value):
            raise TypeError(f"the handler returned {_describe(result)} where the op makes a tensor; a handler "
                            "returns one Value per tensor output (g.op(...) or g.const(...)), or raises")
    elif isinstance(val, (tuple, list)):
        if not isinstance(result, (tuple, list)) or len(result) != len(val):
            raise TypeError(f"the handler returned {_describe(result)} where the op makes {len(val)} results; "
                            f"a handler returns a tuple of {len(val)} Values")
        for res, v in zip(result, val):
            _check_result(res, v)
    elif isinstance(val, _NUMBERS) and not isinstance(result, (Value, int, float, bool)):
        raise TypeError(f"the handler returned {_describe(result)} where the op makes a number; a handler "
                        "returns a Value or a Python number")


def _describe(result: Any) -> str:
    text = repr(result)
    return f"{text if len(text) <= 40 else text[:37] + '...'} ({type(result).__name__})"


def _as_bool_scalar(g: GraphBuilder, value: Any) -> Value:
    """A predicate as the 0-d bool tensor If and Loop take."""
    if isinstance(value, (list, tuple)):
        (value,) = value
    if not isinstance(value, Value):
        return g.const(bool(value))
    if value.dtype != torch.bool:
        value = g.op("Cast", value, to=onnx.TensorProto.BOOL)
    if value.shape != ():
        value = g.op("Reshape", value, g.const([], dtype=torch.int64))
    return value


def _unflat(like: Any, leaves: Any) -> Any:
    if isinstance(like, (tuple, list)):
        return type(like)(_unflat(item, leaves) for item in like)
    return next(leaves)


def _is_complex(val: Any) -> bool:
    return isinstance(val, torch.Tensor) and val.dtype.is_complex


def _leaves(val: Any) -> list[Any]:
    """An op result's leaves in order, tuples and lists flattened (None and numbers are leaves)."""
    if isinstance(val, (tuple, list)):
        return [leaf for item in val for leaf in _leaves(item)]
    return [val]


def _rebuild(val: Any, outs: Any) -> Any:
    """Values in the nesting of an op result."""
    if isinstance(val, (tuple, list)):
        return [_rebuild(item, outs) for item in val]
    return next(outs)


def _placeholder_result(node: torch.fx.Node) -> Any:
    """Stand-in values so translation can go on and find every unsupported op in one pass."""
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        return [Value(f"{node.name}.{i}", *graph_type(v), complex=_is_complex(v)) for i, v in enumerate(val)]
    return Value(node.name, *graph_type(val), complex=_is_complex(val))
