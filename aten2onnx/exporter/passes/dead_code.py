"""Drop what nothing needs: the runtime assertions torch.export adds (an exported ONNX graph does
not check them), and pure computations that feed only them or nothing (e.g. a sym_storage_offset
checked >= 0), so they need no symbolic. Control-flow bodies are pruned too."""

from __future__ import annotations

import dataclasses

import torch
import torch.fx

from aten2onnx import registry as _registry
from aten2onnx.exporter.passes.program import Program

ASSERTIONS = frozenset({"aten::_assert_scalar.default", "aten::_assert_async.msg", "aten::_assert_async.default",
                        "aten::sym_constrain_range.default", "aten::sym_constrain_range_for_size.default",
                        "aten::_assert_tensor_metadata.default"})


def drop_unused(program: Program) -> Program:
    gm = _pruned(program.gm)
    return program if gm is program.gm else dataclasses.replace(program, gm=gm)


def droppable(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The nodes of graph nothing needs."""
    dead: set[torch.fx.Node] = set()
    for node in reversed(graph.nodes):
        if node.op != "call_function" or isinstance(node.target, torch._ops.HigherOrderOperator):
            continue
        if isinstance(node.target, torch._ops.OpOverload):
            if _registry.overload_key(node.target) in ASSERTIONS:
                dead.add(node)
                continue
            if node.target._schema.is_mutable:
                continue
        if all(user in dead for user in node.users):
            dead.add(node)
    return dead


def _pruned(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """gm without its droppable nodes, in a new module (gm itself when nothing goes); the new module
    shares gm's attributes and untouched submodules, and gm is left as it was."""
    bodies = {name: _pruned(sub) for name, sub in gm.named_children() if isinstance(sub, torch.fx.GraphModule)}
    changed = {name: body for name, body in bodies.items() if body is not getattr(gm, name)}
    dead = droppable(gm.graph)
    if not dead and not changed:
        return gm
    graph = torch.fx.Graph()
    copies: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in gm.graph.nodes:
        if node not in dead:
            copies[node] = graph.node_copy(node, copies.__getitem__)
    pruned = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    for name, body in changed.items():
        setattr(pruned, name, body)
    return pruned
