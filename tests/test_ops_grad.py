"""Gradient ops: the core backward ops registered, and a joint forward+backward graph captured by
torch.export, compared with autograd (the op table is tests/optables/grad.py)."""

from __future__ import annotations

import warnings

import pytest
import torch

import aten2onnx
from conftest import run_ort

aten = torch.ops.aten

CORE_BACKWARD = ["_adaptive_avg_pool2d_backward.default", "avg_pool2d_backward.default",
                 "convolution_backward.default", "embedding_dense_backward.default",
                 "native_group_norm_backward.default", "native_layer_norm_backward.default"]


def test_core_backward_ops_registered():
    import aten2onnx.symbolic  # noqa: F401  (registers the built-ins; alone, nothing else has)
    from aten2onnx.registry import REGISTRY

    keys = set(REGISTRY.keys())
    for key in CORE_BACKWARD:
        assert torch.Tag.core in getattr(aten, key.split(".")[0]).default.tags
        assert f"aten::{key}" in keys


# -- a training step: autograd's joint forward+backward graph, as AOTAutograd traces it ---------------------


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.gn = torch.nn.GroupNorm(2, 4)
        self.bn = torch.nn.BatchNorm2d(4)
        self.emb = torch.nn.Embedding(10, 6, padding_idx=0)
        self.ln = torch.nn.LayerNorm(22)
        self.fc = torch.nn.Linear(22, 5)

    def forward(self, x, tokens, target):
        y = torch.nn.functional.silu(self.bn(self.gn(self.conv(x))))
        y = torch.nn.functional.adaptive_avg_pool2d(torch.nn.functional.avg_pool2d(y, 2), 2).flatten(1)
        h = self.ln(torch.cat([y, self.emb(tokens).mean(1)], 1))
        return (torch.nn.functional.cross_entropy(self.fc(torch.nn.functional.gelu(h)), target),)


@pytest.fixture(scope="module")
def joint_graph():
    """The joint graph of one training step of Net, its inputs (parameters, buffers, data), and the
    loss and parameter gradients autograd computes."""
    aot = pytest.importorskip("torch._functorch.aot_autograd")
    torch.manual_seed(0)
    net = Net().train()
    data = (torch.randn(2, 3, 8, 8), torch.tensor([[1, 2, 2], [0, 9, 1]]), torch.tensor([1, 4]))
    gm, signature = aot.aot_export_module(net, data, trace_joint=True, output_loss_index=0)
    targets = {str(n.target) for n in gm.graph.nodes}
    for op in ["convolution_backward", "native_group_norm_backward", "native_batch_norm_backward",
               "avg_pool2d_backward", "_adaptive_avg_pool2d_backward", "embedding_dense_backward",
               "native_layer_norm_backward", "gelu_backward", "_log_softmax_backward_data", "nll_loss_backward"]:
        assert f"aten.{op}.default" in targets
    args = (*[p.detach() for p in net.parameters()], *[b.detach().clone() for b in net.buffers()], *data)
    reference = Net().train()
    reference.load_state_dict(net.state_dict())
    loss = reference(*data)[0]
    expected = [loss.detach(), *torch.autograd.grad(loss, list(reference.parameters()))]
    return gm, args, expected, len(list(net.buffers()))


@pytest.mark.parametrize("opset", [9, 18])
def test_joint_graph_matches_autograd(joint_graph, opset):
    gm, args, expected, buffers = joint_graph
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(gm, args, opset=opset, fallback="error")
    ours = exported.run(*args)
    theirs = run_ort(exported.model_proto, dict(zip(exported.input_names, args)))
    # outputs: the updated buffers (batch norm's running statistics), the loss, the parameter gradients
    for got, ort_got, want in zip(ours[buffers:], theirs[buffers:], expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(torch.from_numpy(ort_got), want, rtol=1e-4, atol=1e-5)
    for got, want in zip(ours[:buffers], gm(*args)[:buffers]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
