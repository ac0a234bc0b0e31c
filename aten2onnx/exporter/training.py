"""Training graphs (`aten2onnx.export_training`): the loss of a model as a module that capture takes in
train mode, its joint forward-backward program (torch's own joint export), and TrainingModel."""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.graph_signature import ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec

from aten2onnx import _aten_node
from aten2onnx.errors import ArgumentError, ExportError, InvalidInputError
from aten2onnx.exporter.model import STATE_KEY, ExportedModel
from aten2onnx.exporter.optimizer import OPTIMIZER_KEY

# The loss module holds the user's model under this name; the joint program's state is renamed back to
# the model's own state_dict keys.
_MODEL = "model"


class LossModule(torch.nn.Module):
    """`loss_fn(model(*args, **kwargs), *targets)`, or without loss_fn the model's own output (a
    scalar, or its first output), as one module: what torch.export captures for a training export.
    Its forward takes the args then the targets, named after the model's forward where it can."""

    def __init__(self, model: torch.nn.Module, loss_fn: Callable[..., Any] | None, n_args: int) -> None:
        super().__init__()
        self.model = model
        # a plain attribute, not a submodule: a loss module's own tensors (class weights) are constants
        object.__setattr__(self, "loss_fn", loss_fn)
        self.n_args = n_args

    def forward(self, *inputs: Any, **kwargs: Any) -> torch.Tensor:
        out = self.model(*inputs[:self.n_args], **kwargs)
        if self.loss_fn is not None:
            return self.loss_fn(out, *inputs[self.n_args:])
        return out if isinstance(out, torch.Tensor) else pytree.tree_leaves(out)[0]


def loss_module(model: torch.nn.Module, args: tuple, kwargs: dict | None, targets: tuple,
                loss_fn: Callable[..., Any] | None) -> LossModule:
    """The loss module, its forward given a signature that names the graph's inputs: the model's own
    parameter names for args (input_<i> where they are not plain parameters), then `target` (or
    `target_<i>` for several), then the model's keyword arguments."""
    if loss_fn is None and targets:
        raise ArgumentError("targets were given without a loss_fn; the model's own output is the loss only "
                            "when there is no loss_fn, and then it takes no targets (pass them in args)")
    module = LossModule(model, loss_fn, len(args))
    names = _argument_names(model, args, kwargs)
    target_names = ["target"] if len(targets) == 1 else [f"target_{i}" for i in range(len(targets))]
    if set(target_names) & set(names):
        target_names = [f"loss_{name}" for name in target_names]
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    params += [P(name, P.POSITIONAL_OR_KEYWORD) for name in names + target_names]
    params += [P(name, P.KEYWORD_ONLY) for name in (kwargs or {})]

    def forward(self: LossModule, *inputs: Any, **kw: Any) -> torch.Tensor:
        return LossModule.forward(self, *inputs, **kw)

    forward.__signature__ = inspect.Signature(params)
    # a class of its own, as capture.py's _function_module: torch.export reads the class's forward
    module.__class__ = type("Loss", (LossModule,), {"forward": forward})
    return module


def _argument_names(model: torch.nn.Module, args: tuple, kwargs: dict | None) -> list[str]:
    generic = [f"input_{i}" for i in range(len(args))]
    try:
        bound = inspect.signature(model.forward).bind(*args, **(kwargs or {}))
    except (TypeError, ValueError):
        return generic
    params = inspect.signature(model.forward).parameters
    names = [name for name in bound.arguments if params[name].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                                       inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    names = names[:len(args)]
    if len(names) != len(args) or set(names) & set(kwargs or {}):
        return generic
    return names


def joint_program(ep: ExportedProgram) -> tuple[ExportedProgram, list[str]]:
    """The loss module's program as torch's joint forward-backward program (outputs: written buffers,
    the loss, a gradient per trainable parameter), its state named by the model's own state_dict keys;
    and notes for the user. ep is the one capture just made, and is consumed."""
    from torch.export.exported_program import _decompose_exported_program

    out = ep.graph.output_node().args[0]
    loss = out[-1].meta.get("val") if out else None
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0 or not loss.dtype.is_floating_point:
        what = f"a {loss.dtype} tensor of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else repr(loss)
        raise ArgumentError(f"the loss is {what}; a training export needs a floating-point scalar loss: pass a "
                            "loss_fn that reduces the model's output, or return the loss from the model")
    ep, notes = _own_names(ep)
    try:
        # torch.export.experimental._export_forward_backward with no decomposition table: the backward
        # keeps the ATen ops autograd's formulas call (convolution_backward, native_batch_norm_backward,
        # _log_softmax_backward_data, ...), so it computes as eager's backward does (bitwise under exact
        # mode), where the core decompositions would spell each one out in other arithmetic
        joint = _decompose_exported_program(ep, cia_to_decomp={}, python_decomp_table={}, joint_loss_index=0,
                                            decompose_custom_triton_ops=False)
    except Exception as e:  # torch's joint export raises whatever its tracing raises
        raise ExportError(f"torch's joint forward-backward export failed on the model: {type(e).__name__}: "
                          f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}") from e
    _eager_backward_kernels(joint)
    return joint, notes


# torch's joint tracing (torch 2.13) takes, for SiLU's and Mish's derivatives, autograd's double-
# differentiable branch (`infinitely_differentiable_*_backward`, elementwise ATen ops; seen with grad mode
# off in the backward, so presumably chosen for the functional tensors it traces on) where eager's
# backward calls the op's own kernel, which rounds differently. The joint program gets the kernel back:
# eager's gradients (bitwise under exact mode), in fewer ops.
aten = torch.ops.aten


def _eager_backward_kernels(ep: ExportedProgram) -> None:
    """Rewrites, in the backward part of the joint program (after the loss), autograd's traced SiLU
    and Mish formulas of an x the forward called silu / mish on into silu_backward(grad, x) and
    mish_backward(grad, x)."""
    graph = ep.graph_module.graph
    loss = {spec.arg.name for spec in ep.graph_signature.output_specs if spec.kind == OutputKind.LOSS_OUTPUT}
    forward_ops = {aten.silu_backward.default: aten.silu.default, aten.mish_backward.default: aten.mish.default}
    backward = False
    changed = False
    for node in list(graph.nodes):
        if not backward:
            backward = node.name in loss
            continue
        if node.op != "call_function" or node.target != aten.mul.Tensor:
            continue
        for grad, formula in (node.args, node.args[::-1]):
            for kernel, match in ((aten.silu_backward.default, _silu_formula), (aten.mish_backward.default,
                                                                                 _mish_formula)):
                x = match(formula)
                if x is not None and isinstance(grad, torch.fx.Node) and _called_on(x, forward_ops[kernel]):
                    with graph.inserting_before(node):
                        fused = graph.call_function(kernel, (grad, x))
                    fused.meta = dict(node.meta)
                    node.replace_all_uses_with(fused)
                    changed = True
                    break
            else:
                continue
            break
    if changed:
        graph.eliminate_dead_code()
        ep.graph_module.recompile()


def _called_on(x: torch.fx.Node, op: Any) -> bool:
    """Whether the forward calls op on x, or on what x is a clone of (an in-place silu_ saves its input
    as a clone, which the backward reads)."""
    source = _call(x, aten.clone.default)
    sources = [x] + ([source[0]] if source and isinstance(source[0], torch.fx.Node) else [])
    return any(user.target == op for node in sources for user in node.users)


def _call(node: Any, target: Any) -> tuple | None:
    """node's arguments where it calls target, else None."""
    if isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target == target and not node.kwargs:
        return node.args
    return None


def _mul(node: Any) -> list[tuple]:
    """A product's two factors in both orders (a product of two floats is the same either way)."""
    args = _call(node, aten.mul.Tensor)
    return [args, args[::-1]] if args is not None else []


def _one_minus(node: Any) -> Any:
    """y where node is `1 - y` as autograd's formulas trace it: sub(fill(empty_like(y), 1), y)."""
    args = _call(node, aten.sub.Tensor)
    if args is None or len(args) != 2:
        return None
    one, y = args
    filled = _call(one, aten.fill.Scalar)
    if filled is None or filled[1] != 1 or not isinstance(filled[0], torch.fx.Node):
        return None
    like = filled[0]
    if like.op != "call_function" or like.target != aten.empty_like.default or like.args != (y,):
        return None
    return y


def _silu_formula(node: Any) -> Any:
    """x where node is sigmoid(x) * (1 + x * (1 - sigmoid(x))), else None."""
    for s, a in _mul(node):
        sigmoid = _call(s, aten.sigmoid.default)
        added = _call(a, aten.add.Scalar)
        if sigmoid is None or added is None or added[1:] != (1,):
            continue
        x = sigmoid[0]
        if any(u is x and _one_minus(v) is s for u, v in _mul(added[0])):
            return x
    return None


def _mish_formula(node: Any) -> Any:
    """x where node is tanh(softplus(x)) + x * sigmoid(x) * (1 - tanh(softplus(x))^2), else None."""
    args = _call(node, aten.add.Tensor)
    if args is None or len(args) != 2:
        return None
    for t, rest in (args, args[::-1]):
        tanh = _call(t, aten.tanh.default)
        softplus = _call(tanh[0], aten.softplus.default) if tanh else None
        if softplus is None or len(softplus) != 1:
            continue
        x = softplus[0]
        for xs, d in _mul(rest):
            if not any(u is x and _call(v, aten.sigmoid.default) == (x,) for u, v in _mul(xs)):
                continue
            if any(u is t and v is t for u, v in _mul(_one_minus(d))):
                return x
    return None


def _own_names(ep: ExportedProgram) -> tuple[ExportedProgram, list[str]]:
    """ep with its state named by the model's state_dict keys (without the loss module's `model.`),
    and without the parameter inputs the graph never reads: the second name of a tied parameter
    (torch.export lifts both, reads one) and parameters the loss does not use, for which eager leaves
    .grad None and torch's joint export fails."""
    prefix = _MODEL + "."

    def own(target: str | None) -> str | None:
        return target[len(prefix):] if target is not None and target.startswith(prefix) else target

    gm = ep.graph_module
    placeholders = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    params = [spec for spec in ep.graph_signature.input_specs if spec.kind == InputKind.PARAMETER]
    first: dict[int, InputSpec] = {}  # id of a parameter tensor -> its first spec, in state_dict order
    notes = []
    for spec in params:
        kept = first.setdefault(id(ep.state_dict[spec.target]), spec)
        if kept is not spec:  # a tied name: its readers read the first name's input, as eager's one tensor
            placeholders[spec.arg.name].replace_all_uses_with(placeholders[kept.arg.name])
            notes.append(f"parameter {own(spec.target)!r} is tied to {own(kept.target)!r}: one gradient, "
                         f"{own(kept.target)}.grad")
    dropped = set()
    for spec in params:
        node = placeholders[spec.arg.name]
        if not node.users:
            if first[id(ep.state_dict[spec.target])] is spec:
                notes.append(f"parameter {own(spec.target)!r} does not reach the loss: no gradient (eager leaves "
                             ".grad None)")
            gm.graph.erase_node(node)
            dropped.add(spec.target)
    # a tensor the model keeps outside its state_dict and writes (a plain attribute, a global) is state as a
    # buffer is: torch's joint export takes written buffers, not written constants
    written = _written_constants(ep)
    inputs = [InputSpec(InputKind.BUFFER if spec.target in written else spec.kind, spec.arg, own(spec.target),
                        True if spec.target in written else spec.persistent)
              for spec in ep.graph_signature.input_specs if spec.target not in dropped]
    outputs = [OutputSpec(spec.kind, spec.arg, own(spec.target)) for spec in ep.graph_signature.output_specs]
    gm.recompile()
    state_dict = {own(k): v for k, v in ep.state_dict.items() if k not in dropped}
    state_dict.update({own(k): ep.constants[k] for k in written})
    constants = {own(k): v for k, v in ep.constants.items() if k not in written}
    return ep._update(gm, ExportGraphSignature(inputs, outputs), state_dict=state_dict, constants=constants), notes


def _written_constants(ep: ExportedProgram) -> set[str]:
    """Targets of the constant tensors the graph writes in place, directly or through a view of them."""
    from aten2onnx.registry import is_mutating

    specs = {spec.arg.name: spec.target for spec in ep.graph_signature.input_specs
             if spec.kind == InputKind.CONSTANT_TENSOR}
    written = set()
    for node in ep.graph.nodes:
        if node.op != "placeholder" or node.name not in specs:
            continue
        queue = [node]
        while queue:
            current = queue.pop()
            for user in current.users:
                target = user.target
                if not isinstance(target, torch._ops.OpOverload):
                    continue
                if is_mutating(target) and user.args and user.args[0] is current:
                    written.add(specs[node.name])
                returns = target._schema.returns
                if returns and returns[0].alias_info is not None and user.args and user.args[0] is current:
                    queue.append(user)  # a view (or the in-place result) of the constant
    return written


class TrainingModel(ExportedModel):
    """A training export: `run(*args, *targets) -> (loss, grads)`, grads a dict by parameter name, and
    with an optimizer `step(*args, *targets) -> loss`. The graph's outputs are `loss`, `<parameter>.grad`
    per trainable parameter, then `<state>.updated` per state the graph writes: buffers the forward
    writes (batch norm's running statistics) and, with an optimizer, the parameters and the optimizer's
    states. The model keeps that state between calls (`state_dict()`, `optimizer_state()`); a runtime
    that runs the file feeds each `<state>.updated` back as the input `<state>`."""

    def __init__(self, *args: Any, model_state: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        meta = {e.key: e.value for e in self._skeleton.metadata_props}
        self._updates = {u["input"]: u["output"] for u in json.loads(meta.get(STATE_KEY, "[]")) if u["kind"] == "buffer"}
        optimizer = json.loads(meta.get(OPTIMIZER_KEY, "null"))
        self.optimizer: str | None = optimizer["optimizer"] if optimizer else None
        self._optimizer_states = {param: entry["states"] for param, entry in (optimizer or {}).get("parameters", {}).items()}
        stepped = {name for states in self._optimizer_states.values() for name in states.values()}
        stepped |= set(self._optimizer_states)
        self._stepped = stepped & set(self._updates)  # what only step() advances
        self._model_state = list(model_state)
        self._state: dict[str, torch.Tensor] | None = None
        # exact mode: eager's parameters require grad, and ATen picks some kernels by it (matmul)
        self._requires_grad = set(json.loads(meta.get(_aten_node.EXACT_REQUIRES_GRAD, "[]")))

    @property
    def parameter_names(self) -> list[str]:
        """The parameters with a gradient output, by state_dict key, in the graph's order."""
        return [name[:-len(".grad")] for name in self.output_names if name.endswith(".grad")]

    def run(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One forward and backward in aten2onnx.runtime on the args then the targets, at the current
        parameters; buffers the forward writes (batch norm's running statistics) carry over to the next
        call. The optimizer's update is not applied: step() does that."""
        return self.structure_outputs(self._run(args, kwargs, stepping=False))

    def step(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        """One training step in aten2onnx.runtime: forward, backward and the optimizer's update, which the
        model keeps (state_dict(), optimizer_state()) for the next call. Returns the loss."""
        if self.optimizer is None:
            raise ArgumentError("this training export has no optimizer step: export it with "
                                "export_training(..., optimizer=torch.optim.SGD/Adam/AdamW(model.parameters(), ...)), "
                                "or apply the update to the gradients run() returns")
        return self._run(args, kwargs, stepping=True)["loss"]

    def _run(self, args: tuple, kwargs: dict, *, stepping: bool) -> dict[str, torch.Tensor]:
        if self._session is None:
            self._session = self.session()
        state = self._current_state()
        results = self._session.run_torch({**self.feeds(*args, **kwargs), **state}, carry=False)
        for name, output in self._updates.items():
            if stepping or name not in self._stepped:
                value = results[output]
                if name in self._requires_grad and value.is_floating_point():
                    value = value.detach().requires_grad_(True)
                state[name] = value
        return results

    def _current_state(self) -> dict[str, torch.Tensor]:
        if self._state is None:
            self._state = {name: tensor for name, tensor in self._checked_weights() if name in self._updates}
        return self._state

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The model's parameters and buffers as the training steps so far left them (copies), by
        state_dict key: those the graph holds."""
        state = {**dict(self._checked_weights()), **self._current_state()}
        return {name: state[name].detach().clone() for name in self._model_state if name in state}

    def optimizer_state(self) -> dict[str, dict[str, torch.Tensor]]:
        """Per parameter, the optimizer's state (copies) as the steps so far left it: torch.optim's state
        names (`momentum_buffer`; `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`, `step`); SGD's `step` counts
        this export's steps (torch keeps none), with its first step taking the gradient as the buffer."""
        state = {**dict(self._checked_weights()), **self._current_state()}
        return {param: {key: state[name].detach().clone() for key, name in states.items()}
                for param, states in self._optimizer_states.items() if states}

    def structure_outputs(self, results: Mapping[str, Any] | Sequence[Any]) -> tuple[Any, dict[str, Any]]:
        """(loss, {parameter name: gradient}) from a runtime's outputs: a dict by output name, or a
        list in output order (onnxruntime's run(None, feeds))."""
        if not isinstance(results, Mapping):
            results = dict(zip(self.output_names, results))
        missing = [name for name in self.output_names if name not in results]
        if missing:
            raise InvalidInputError(f"outputs {missing} are missing; the model's outputs are {self.output_names}")
        return results["loss"], {name: results[f"{name}.grad"] for name in self.parameter_names}
