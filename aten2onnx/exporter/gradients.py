"""Capture of forwards that compute gradients (torch.autograd.grad, .backward(), torch.func transforms):
traced below autograd, where the backward's ATen ops are recorded into the graph like the forward's."""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
import torch.export._trace as export_trace
from torch.export import ExportedProgram
from torch.overrides import TorchFunctionMode

# The gradient calls as a TorchFunctionMode is handed them (each public function dispatches itself)
_AUTOGRAD = (torch.autograd.grad, torch.autograd.backward, torch.Tensor.backward)

HINT = ("The forward computes gradients, which aten2onnx captures below autograd with the backward's ATen ops in "
        "the graph: take them with torch.autograd.grad(outputs, inputs, ...) on tensors the forward made require "
        "grad (x.requires_grad_() or x.detach().requires_grad_()), or with torch.func.grad/vjp/jacrev, and make "
        "the failing call above traceable as for any forward (README \"Gradients inside forward\").")


class GradientCalls(TorchFunctionMode):
    """Notes, while torch.export traces the forward, whether it asks autograd for gradients (`autograd`)
    or runs ops inside a torch.func transform (`transform`: grad, vjp and jacrev, but vmap too). A
    gradient taken with create_graph=False is detached, as eager's is: traced below autograd it is an
    ordinary function of the inputs, which a training export would otherwise differentiate through."""

    def __init__(self) -> None:
        super().__init__()
        self.autograd = False
        self.transform = False
        self.differentiates = False  # a grad or jvp transform among them (vmap alone takes no gradient)

    @property
    def takes_gradients(self) -> bool:
        return self.autograd or self.differentiates

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch._C._functorch.maybe_current_level() is not None:
            self.transform = True
            self.differentiates = self.differentiates or _differentiating()
        if func in _AUTOGRAD:
            self.autograd = True
        if func is torch.autograd.grad and not _create_graph(args, kwargs):
            grads = func(*args, **kwargs)
            return tuple(g.detach() if isinstance(g, torch.Tensor) else g for g in grads)
        return func(*args, **kwargs)


def _differentiating() -> bool:
    """Whether a torch.func transform that differentiates (grad, vjp, jacrev, jvp) is active now; vmap
    alone (transformers 4.x builds its masks with it) is not."""
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters

    kinds = (torch._C._functorch.TransformType.Grad, torch._C._functorch.TransformType.Jvp)
    return any(interpreter.key() in kinds for interpreter in retrieve_all_functorch_interpreters())


def transformed(ep: ExportedProgram) -> bool:
    """Whether torch.export kept torch.func transforms in the program as functorch's own calls
    (_make_dual, _add_batch_dim, _unwrap_for_grad: no ONNX op computes them), which the capture below
    autograd traces into the ATen ops they run."""
    return any(node.op == "call_function" and getattr(node.target, "__module__", None) == _FUNCTORCH
               for node in ep.graph.nodes)


_FUNCTORCH = "torch._functorch.predispatch"


def _create_graph(args: tuple, kwargs: dict) -> bool:
    """torch.autograd.grad's create_graph (its sixth parameter), as the call gives it."""
    return bool(args[5] if len(args) > 5 else kwargs.get("create_graph", False))


@contextlib.contextmanager
def below_autograd() -> Iterator[None]:
    """torch.export's non-strict capture with its make_fx tracing after autograd (pre_dispatch=False)
    instead of before it. Before autograd, the backward that torch.autograd.grad runs reads tensors the
    forward saved inside composite ops (linear's transposed weight), which the trace never saw, and
    torch.export fails on them as fake constants; after autograd, every op of the forward and of the
    backward is an ATen call on traced tensors. The graph holds post-autograd ATen ops (linear as
    t + addmm), as eager runs them."""
    make_fx = getattr(export_trace, "make_fx", None)
    if make_fx is None:  # a torch whose export no longer traces with make_fx
        raise RuntimeError("this torch's export does not trace with make_fx, so the gradient capture cannot run")

    def after_autograd(*args, **kwargs):
        # an explicit decomposition table, even empty: torch 2.14's post-dispatch make_fx otherwise traces
        # detach as alias, and the gradient stops a training export must keep would be lost
        table = kwargs.get("decomposition_table")
        return make_fx(*args, **{**kwargs, "pre_dispatch": False, "decomposition_table": {} if table is None else table})

    export_trace.make_fx = after_autograd
    try:
        yield
    finally:
        export_trace.make_fx = make_fx


# The graph module's meta key that marks a program captured below autograd
_CAPTURED = "aten2onnx.gradients_in_forward"


def takes_gradients(ep: ExportedProgram) -> bool:
    """Whether ep was captured below autograd, for a forward that takes gradients."""
    return bool(ep.graph_module.meta.get(_CAPTURED))


def saved_tensors_attached(ep: ExportedProgram) -> ExportedProgram:
    """ep, captured below autograd, with the saved tensors of its backward read as the tensors saved
    (and marked as captured so, for takes_gradients).
    Autograd saves a forward output detached and gives it back its grad_fn when the backward unpacks it;
    below autograd that is traced as a detach whose every user is a detach (the unpacking), which a
    training export would take for a stop of the gradient, differentiating a gradient the forward took
    with create_graph=True (a gradient penalty) wrongly. Eager differentiates through the saved tensor,
    and so does the graph without those detaches. (A user's `x.detach().detach()` reads the same and
    goes too; a single detach of the user's stays.)"""
    graph = ep.graph_module.graph
    detach = torch.ops.aten.detach.default
    for node in list(graph.nodes):
        if node.target is detach and node.users and all(user.target is detach for user in node.users):
            for user in list(node.users):
                user.replace_all_uses_with(node.args[0])
                graph.erase_node(user)
            graph.erase_node(node)
    ep.graph_module.recompile()
    ep.graph_module.meta[_CAPTURED] = True
    return ep
