"""The optimizer step of a training export (`export_training(..., optimizer=...)`): torch.optim's SGD,
Adam and AdamW as ATen nodes appended to the joint forward-backward program, after the gradients.

The update is spelled with the ATen ops, arguments and order torch.optim's single-tensor implementation
(what eager runs on CPU) calls, in-place ops as their functional twins and the step-dependent Python
floats as 0-d float64 tensors, so that an exact export steps bitwise as eager does. Parameters and
optimizer states become state the graph writes: inputs with their current values as initializers and
`<name>.updated` outputs, as written buffers already are."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

import torch
import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec,
                                          TensorArgument)

from aten2onnx.errors import ArgumentError, ExportError

aten = torch.ops.aten

# ONNX model metadata: the optimizer the graph applies, its hyperparameters per parameter, and which
# inputs are parameters and optimizer states (JSON).
OPTIMIZER_KEY = "aten2onnx.optimizer"

# per optimizer class: its hyperparameters (as torch.optim's param_groups name them) and the state each
# parameter carries (torch.optim's state names, plus `step` where torch keeps none: SGD records with it
# whether its momentum buffer exists yet)
_HYPER = {
    "SGD": ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize"),
    "Adam": ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay"),
}
_REFUSED_OPTIONS = ("capturable", "differentiable", "fused")


@dataclasses.dataclass(frozen=True)
class ParameterUpdate:
    """One parameter's update: its state_dict name, its hyperparameters, and its states' names and
    first values (in the graph's input order)."""

    name: str
    hyper: dict[str, Any]
    states: dict[str, torch.Tensor]  # state name (e.g. "exp_avg") -> current value


@dataclasses.dataclass(frozen=True)
class OptimizerPlan:
    """What the graph applies: `kind` is "SGD" or "Adam" (AdamW is Adam with decoupled weight decay)."""

    kind: str
    cls: str  # the user's class name
    updates: tuple[ParameterUpdate, ...]

    def state_name(self, parameter: str, state: str) -> str:
        return f"{parameter}.{state}"

    def holds(self, name: str) -> bool:
        """Whether name is one of the optimizer's states."""
        return any(name == self.state_name(u.name, s) for u in self.updates for s in u.states)

    def metadata(self) -> str:
        return json.dumps({
            "optimizer": self.cls,
            "parameters": {u.name: {"hyperparameters": u.hyper,
                                    "states": {s: self.state_name(u.name, s) for s in u.states}}
                           for u in self.updates},
        }, sort_keys=True)


def plan(optimizer: Any, model: torch.nn.Module) -> OptimizerPlan:
    """The update `optimizer` applies to `model`'s parameters, checked: an SGD, Adam or AdamW instance
    built on parameters of the model, with options that the graph can spell as eager runs them."""
    kind = _kind(optimizer)
    names = {}
    for name, p in model.named_parameters(remove_duplicate=True):
        names.setdefault(id(p), name)
    updates = []
    seen = set()
    for i, group in enumerate(optimizer.param_groups):
        for option in _REFUSED_OPTIONS:
            if group.get(option):
                raise ArgumentError(f"{type(optimizer).__name__}({option}=True) is not exported: the graph spells the "
                                    f"update as eager's single-tensor implementation; build the optimizer with "
                                    f"{option}=False")
        if group.get("foreach"):
            raise ArgumentError(f"{type(optimizer).__name__}(foreach=True) is not exported: eager's multi-tensor "
                                "implementation rounds differently from the single-tensor one the graph spells (the "
                                "CPU default); build the optimizer with foreach=None or False")
        hyper = _hyperparameters(kind, optimizer, group, i)
        for p in group["params"]:
            if id(p) not in names:
                raise ArgumentError(f"{type(optimizer).__name__} param_groups[{i}] holds a tensor of shape "
                                    f"{tuple(p.shape)} that is not a parameter of the model; build the optimizer on "
                                    "model.parameters()")
            if id(p) in seen:
                continue
            seen.add(id(p))
            updates.append(ParameterUpdate(names[id(p)], hyper, _states(kind, optimizer.state.get(p, {}), p, hyper)))
    return OptimizerPlan(kind, type(optimizer).__name__, tuple(updates))


def _kind(optimizer: Any) -> str:
    if isinstance(optimizer, torch.optim.SGD):
        return "SGD"
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return "Adam"
    raise ArgumentError(f"optimizer={type(optimizer).__name__}: export_training applies torch.optim.SGD, Adam and AdamW "
                        "instances; pass one of those, or optimizer=None and apply the update to the gradients")


def _scalar(name: str, value: Any, optimizer: Any, i: int) -> Any:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.requires_grad:
            raise ArgumentError(f"{type(optimizer).__name__} param_groups[{i}][{name!r}] is a tensor that cannot be "
                                "a constant of the graph; use a Python number")
        value = value.item()
    return value


def _hyperparameters(kind: str, optimizer: Any, group: dict, i: int) -> dict[str, Any]:
    hyper = {}
    for key in _HYPER[kind]:
        if key == "decoupled_weight_decay":
            value = group.get(key, isinstance(optimizer, torch.optim.AdamW))
        elif key == "betas":
            value = [_scalar(key, b, optimizer, i) for b in group[key]]
        else:
            value = _scalar(key, group.get(key, False if key in ("nesterov", "maximize", "amsgrad") else 0), optimizer, i)
        hyper[key] = value
    if kind == "SGD" and hyper["nesterov"] and (hyper["momentum"] <= 0 or hyper["dampening"] != 0):
        raise ArgumentError("SGD(nesterov=True) needs momentum > 0 and dampening 0, as torch.optim.SGD requires")
    return hyper


def _states(kind: str, state: dict, p: torch.Tensor, hyper: dict) -> dict[str, torch.Tensor]:
    """A parameter's optimizer state as the graph's inputs take it: the optimizer's current values
    (copies), or what its first step starts from."""
    def current(key: str) -> torch.Tensor:
        value = state.get(key)
        return value.detach().clone() if isinstance(value, torch.Tensor) else torch.zeros_like(p, memory_format=torch.contiguous_format).detach()

    if kind == "SGD":
        if hyper["momentum"] == 0:
            return {}
        has_buffer = isinstance(state.get("momentum_buffer"), torch.Tensor)
        # SGD's first step copies the gradient into a new buffer: `step` says whether that happened
        return {"momentum_buffer": current("momentum_buffer"),
                "step": torch.tensor(1.0 if has_buffer else 0.0)}
    states = {"exp_avg": current("exp_avg"), "exp_avg_sq": current("exp_avg_sq")}
    if hyper["amsgrad"]:
        states["max_exp_avg_sq"] = current("max_exp_avg_sq")
    step = state.get("step")
    states["step"] = (step.detach().clone().reshape(()) if isinstance(step, torch.Tensor)
                      else torch.tensor(float(step or 0.0), dtype=torch.get_default_dtype()))
    return states


class _Emitter:
    """Appends ATen nodes before the graph's output, each with its value computed on fake tensors."""

    def __init__(self, graph: torch.fx.Graph, fake_mode: Any, before: torch.fx.Node) -> None:
        self.graph, self.fake_mode, self.before = graph, fake_mode, before

    def __call__(self, op: Any, *args: Any, **kwargs: Any) -> torch.fx.Node:
        with self.graph.inserting_before(self.before):
            node = self.graph.call_function(op, args, kwargs)
        vals = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["val"])
        with self.fake_mode:
            node.meta["val"] = op(*vals[0], **vals[1])
        node.meta["stack_trace"] = f"  File \"torch.optim\", line 0, in {op}\n"
        return node


def _sgd(e: _Emitter, param: torch.fx.Node, grad: torch.fx.Node, states: dict[str, torch.fx.Node],
         h: dict[str, Any]) -> tuple[torch.fx.Node, dict[str, torch.fx.Node]]:
    """torch.optim.sgd._single_tensor_sgd for one parameter."""
    if h["maximize"]:
        grad = e(aten.neg.default, grad)
    if h["weight_decay"] != 0:
        grad = e(aten.add.Tensor, grad, param, alpha=h["weight_decay"])
    new = {}
    if h["momentum"] != 0:
        buf, step = states["momentum_buffer"], states["step"]
        later = e(aten.add.Tensor, e(aten.mul.Tensor, buf, h["momentum"]), grad, alpha=1 - h["dampening"])
        first = e(aten.eq.Scalar, step, 0)
        buf = e(aten.where.self, first, grad, later)  # the first step's buffer is the gradient itself
        new = {"momentum_buffer": buf, "step": e(aten.add.Tensor, step, 1)}
        grad = e(aten.add.Tensor, grad, buf, alpha=h["momentum"]) if h["nesterov"] else buf
    return e(aten.add.Tensor, param, grad, alpha=-h["lr"]), new


def _adam(e: _Emitter, param: torch.fx.Node, grad: torch.fx.Node, states: dict[str, torch.fx.Node],
          h: dict[str, Any]) -> tuple[torch.fx.Node, dict[str, torch.fx.Node]]:
    """torch.optim.adam._single_tensor_adam (capturable=False) for one parameter: the step-dependent
    Python floats eager computes from step.item() are 0-d float64 tensors here."""
    beta1, beta2 = h["betas"]
    lr, eps, wd = h["lr"], h["eps"], h["weight_decay"]
    step = e(aten.add.Tensor, states["step"], 1)
    if h["maximize"]:
        grad = e(aten.neg.default, grad)
    if wd != 0:
        if h["decoupled_weight_decay"]:
            param = e(aten.mul.Tensor, param, 1 - lr * wd)
        else:
            grad = e(aten.add.Tensor, grad, param, alpha=wd)
    exp_avg = e(aten.lerp.Scalar, states["exp_avg"], grad, 1 - beta1)
    exp_avg_sq = e(aten.addcmul.default, e(aten.mul.Tensor, states["exp_avg_sq"], beta2), grad, grad,
                   value=1 - beta2)
    count = e(aten._to_copy.default, step, dtype=torch.float64)
    bias_correction1 = e(aten.rsub.Scalar, e(aten.pow.Scalar, beta1, count), 1)
    bias_correction2 = e(aten.rsub.Scalar, e(aten.pow.Scalar, beta2, count), 1)
    step_size = e(aten.div.Tensor, e(aten.scalar_tensor.default, lr, dtype=torch.float64), bias_correction1)
    bias_correction2_sqrt = e(aten.pow.Tensor_Scalar, bias_correction2, 0.5)
    new = {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
    second = exp_avg_sq
    if h["amsgrad"]:
        second = new["max_exp_avg_sq"] = e(aten.maximum.default, states["max_exp_avg_sq"], exp_avg_sq)
    denom = e(aten.add.Tensor, e(aten.div.Tensor, e(aten.sqrt.default, second), bias_correction2_sqrt), eps)
    # param.addcdiv_(exp_avg, denom, value=-step_size): self + value * t1 / t2, value rounded to param's dtype
    scaled = e(aten.div.Tensor, e(aten.mul.Tensor, exp_avg, e(aten.neg.default, step_size)), denom)
    new["step"] = step
    return e(aten.add.Tensor, param, scaled), new


_RULES: dict[str, Callable[..., tuple[torch.fx.Node, dict[str, torch.fx.Node]]]] = {"SGD": _sgd, "Adam": _adam}


def apply(ep: ExportedProgram, optimizer_plan: OptimizerPlan) -> ExportedProgram:
    """The joint program with the optimizer step after its gradients: each updated parameter and each
    optimizer state is written state (a mutation output), the states inputs with their current values."""
    gm = ep.graph_module
    graph = gm.graph
    sig = ep.graph_signature
    output = graph.output_node()
    results = list(output.args[0])
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    params = {spec.target: placeholders[spec.arg.name] for spec in sig.input_specs if spec.kind == InputKind.PARAMETER}
    grads = {spec.target: results[i] for i, spec in enumerate(sig.output_specs)
             if spec.kind == OutputKind.GRADIENT_TO_PARAMETER}
    taken = set(ep.state_dict) | set(ep.constants) | set(placeholders) | {
        spec.arg.name for spec in sig.input_specs if isinstance(spec.arg, TensorArgument)}
    fake_mode = next(n.meta["val"].fake_mode for n in params.values())
    # the states' inputs come after the model's buffers, before the user's inputs
    first_user = next((placeholders[s.arg.name] for s in sig.input_specs if s.kind == InputKind.USER_INPUT), None)
    state_specs, state_dict, mutations, written = [], dict(ep.state_dict), [], []
    emit = _Emitter(graph, fake_mode, output)
    rule = _RULES[optimizer_plan.kind]
    for update in optimizer_plan.updates:
        if update.name not in grads:
            continue  # no gradient reaches it: eager's step skips a parameter whose .grad is None
        state_nodes = {}
        for state, value in update.states.items():
            target = optimizer_plan.state_name(update.name, state)
            if target in taken:
                raise ExportError(f"the optimizer state {target!r} has the name of the model's own {target!r}; "
                                  "rename the model's attribute")
            taken.add(target)
            arg_name = "opt_" + target.replace(".", "_")
            insert = graph.inserting_before(first_user) if first_user is not None else graph.inserting_before(
                next(n for n in graph.nodes if n.op != "placeholder"))
            with insert:
                node = graph.placeholder(arg_name)
            with fake_mode:
                node.meta["val"] = fake_mode.from_tensor(value, static_shapes=True)
            state_nodes[state] = node
            state_specs.append(InputSpec(InputKind.BUFFER, TensorArgument(node.name), target, True))
            state_dict[target] = value
        new_param, new_states = rule(emit, params[update.name], grads[update.name], state_nodes, update.hyper)
        mutations.append(OutputSpec(OutputKind.PARAMETER_MUTATION, TensorArgument(new_param.name), update.name))
        written.append(new_param)
        for state, node in new_states.items():
            mutations.append(OutputSpec(OutputKind.BUFFER_MUTATION, TensorArgument(node.name),
                                        optimizer_plan.state_name(update.name, state)))
            written.append(node)
    # torch's signature lists the mutations before the other outputs
    output.args = (tuple(written + results),)
    gm.recompile()
    inputs = list(sig.input_specs)
    at = next((i for i, s in enumerate(inputs) if s.kind == InputKind.USER_INPUT), len(inputs))
    inputs[at:at] = state_specs
    signature = ExportGraphSignature(inputs, mutations + list(sig.output_specs))
    return ep._update(gm, signature, state_dict=state_dict)
