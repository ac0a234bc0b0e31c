"""Node counts of the mutation rewrite against torch's own functionalization.

The loop `for i in range(n): y[i] += torch.sin(y[i])` after a Linear, for n = 4 and 32: the FX
nodes each rewrite produces, and the ONNX nodes of the exported model either way.

    python bench/mutation_nodes.py
"""

from __future__ import annotations

import warnings

import torch

import aten2onnx
from aten2onnx.exporter.passes import Program
from aten2onnx.exporter.passes.functionalize import functionalize


class Loop(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.n = n

    def forward(self, x):
        y = self.linear(x)
        for i in range(self.n):
            y[i] += torch.sin(y[i])
        return y


def count(gm: torch.fx.GraphModule) -> int:
    return sum(n.op == "call_function" for n in gm.graph.nodes)


def main() -> None:
    print(f"{'iterations':>10} {'ours FX':>8} {'torch FX':>9} {'ours ONNX':>10} {'torch ONNX':>11} {'ratio':>6}")
    for n in (4, 32):
        model = Loop(n).eval()
        x = torch.randn(n, 8)
        ep = torch.export.export(model, (x,))
        ours = functionalize(Program.captured(ep))
        assert not ours.notes, ours.notes
        theirs = ep.run_decompositions({})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours_onnx = aten2onnx.export(ep, (x,))
            theirs_onnx = aten2onnx.export(theirs, (x,))
        torch.testing.assert_close(ours_onnx.run(x), model(x))
        torch.testing.assert_close(theirs_onnx.run(x), model(x))
        a, b = len(ours_onnx.model_proto.graph.node), len(theirs_onnx.model_proto.graph.node)
        print(f"{n:>10} {count(ours.gm):>8} {count(theirs.graph_module):>9} {a:>10} {b:>11} {b / a:>6.2f}")


if __name__ == "__main__":
    main()
