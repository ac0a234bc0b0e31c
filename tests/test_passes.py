"""The FX pass pipeline (aten2onnx/exporter/passes): each pass returns a new program and leaves the
graph it was given as it was; the default pipeline's results match eager; a pass plugs in by
being listed."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import aten2onnx
from aten2onnx._backend import runtime_backend
from aten2onnx.exporter import export_traced, passes
from aten2onnx.exporter.passes import dead_code


class Checked(torch.nn.Module):
    """An index read from a tensor: torch.export adds runtime assertions on it."""

    def forward(self, x, i):
        n = i.item()
        torch._check(n >= 0)
        torch._check(n < x.shape[0])
        return x[n] * 2


class CheckedBranch(torch.nn.Module):
    """The same assertions inside a torch.cond branch (a body graph module)."""

    def forward(self, x, i):
        def then(x, i):
            n = i.item()
            torch._check(n >= 0)
            torch._check(n < 5)
            return x[n] + 1

        def otherwise(x, i):
            return x[0] - 1

        return torch.cond(x.sum() > 0, then, otherwise, (x, i))


class WritesBuffer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(3))

    def forward(self, x, i):
        self.count.add_(1)
        x[0].mul_(2)  # writes the input through a view
        return x.sum(0) + self.count + i


CASES = [
    ("assertions", Checked, lambda: (torch.randn(5, 3), torch.tensor(2))),
    ("assertions_in_a_branch", CheckedBranch, lambda: (torch.randn(5, 3).abs(), torch.tensor(3))),
    ("in_place", WritesBuffer, lambda: (torch.randn(5, 3), torch.tensor(1.0))),
]


def _codes(gm: torch.fx.GraphModule) -> dict[str, str]:
    return {name: module.code for name, module in gm.named_modules() if isinstance(module, torch.fx.GraphModule)}


def _has_assertion(gm: torch.fx.GraphModule) -> bool:
    return any(node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
               and aten2onnx.registry.overload_key(node.target) in dead_code.ASSERTIONS
               for module in gm.modules() if isinstance(module, torch.fx.GraphModule) for node in module.graph.nodes)


@pytest.mark.parametrize("name,model,make", CASES, ids=[c[0] for c in CASES])
def test_pipeline_leaves_the_users_program_as_it_was(name, model, make):
    args = make()
    ep = torch.export.export(model(), args)
    before = _codes(ep.graph_module)
    program = passes.run(ep)
    assert _codes(ep.graph_module) == before
    assert not _has_assertion(program.gm)
    assert _has_assertion(ep.graph_module) == (name != "in_place")
    exported = aten2onnx.export(ep, args, opset=18)
    assert _codes(ep.graph_module) == before
    # a fresh copy of the inputs for each side: the in-place case writes them
    want = model()(*[a.clone() for a in args])
    got = exported.run(*[a.clone() for a in args])
    got = got[0] if isinstance(got, (list, tuple)) else got
    torch.testing.assert_close(got, want)


def test_drop_unused_keeps_what_is_used():
    ep = torch.export.export(Checked(), (torch.randn(5, 3), torch.tensor(2)))
    pruned = dead_code.drop_unused(passes.Program.captured(ep)).gm
    kept = [n.name for n in pruned.graph.nodes]
    assert kept == [n.name for n in ep.graph_module.graph.nodes if n.name in kept]
    assert {"item", "select", "mul"} <= set(kept)
    assert not {"ge_1", "le", "lt_1"} & set(kept)  # comparisons that fed only assertions


def test_a_pass_plugs_in_by_being_listed():
    """A pass listed after the default ones sees the functional program and changes what is translated."""
    seen = []

    def relu_as_abs(program: passes.Program) -> passes.Program:
        seen.append(program)
        graph = torch.fx.Graph()
        copies: dict = {}
        for node in program.gm.graph.nodes:
            copies[node] = graph.node_copy(node, copies.__getitem__)
            if node.target is torch.ops.aten.relu.default:
                copies[node].target = torch.ops.aten.abs.default
        return dataclasses.replace(program, gm=torch.fx.GraphModule(program.gm, graph))

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    x = torch.randn(2, 4)
    pipeline = passes.PIPELINE + (passes.Pass("relu_as_abs", relu_as_abs),)
    traced = export_traced(model, (x,), None, opset=18, dynamic_shapes=None, fallback="error", input_names=None,
                           output_names=None, custom_symbolics=None, backend=runtime_backend(), pipeline=pipeline)
    assert len(seen) == 1
    ops = [node.op_type for node in traced.exported.model_proto.graph.node]
    assert "Abs" in ops and "Relu" not in ops
    torch.testing.assert_close(traced.exported.run(x), model[0](x).abs())
    torch.testing.assert_close(model(x), model[0](x).relu())  # the model itself still computes relu
