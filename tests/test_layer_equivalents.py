"""torch.nn layers whose own forward torch.export cannot capture with dynamic dims, captured through the
equivalents in exporter/passes/tracing.py (LayerEquivalents): CrossMapLRN2d (its legacy Function resizes
tensors in place, which fixed every dim) and AdaptiveLogSoftmaxWithLoss (it branches on how many targets
fall in each cluster, which no capture could read). Each is held to eager on the example and on other
sizes in both runtimes; the classes' own forward is back after the export."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import aten2onnx
from optable import assert_runs_like_eager

AUTO = torch.export.Dim.AUTO


def export(model, args, dims, opset):
    with warnings.catch_warnings():
        warnings.simplefilter("error", aten2onnx.NarrowedExportWarning)
        return aten2onnx.export(model, args, opset=opset, dynamic_shapes=dims, fallback="error")


# (size, alpha, beta, k, channels): windows wider than the channels, even sizes, one channel
CROSS_MAP = [(3, 1e-4, 0.75, 1.0, 5), (4, 1e-2, 0.5, 2.0, 6), (5, 0.1, 0.75, 1.0, 3), (1, 1.0, 1.0, 0.5, 1),
             (7, 0.5, 0.25, 1.0, 9)]


@pytest.mark.parametrize("opset", [9, 18, 23])
@pytest.mark.parametrize("size,alpha,beta,k,channels", CROSS_MAP)
def test_cross_map_lrn2d_keeps_its_dims_dynamic(size, alpha, beta, k, channels, opset):
    layer = nn.CrossMapLRN2d(size, alpha, beta, k)
    x = torch.randn(2, channels, 4, 5) * 3
    exported = export(layer, (x,), ({0: AUTO, 2: AUTO, 3: AUTO},), opset)
    assert all(d.dim_param for i, d in enumerate(exported.model_proto.graph.input[0].type.tensor_type.shape.dim)
               if i != 1)
    for args in [(x,), (torch.randn(3, channels, 7, 2) * 3,), (torch.randn(1, channels, 1, 9),)]:
        assert_runs_like_eager(exported, layer, args, tol=(1e-5, 1e-6))


def targets(n, classes, *, low=0, high=None):
    return torch.randint(low, high or classes, (n,))


class Batched(nn.Module):
    def __init__(self, cutoffs, head_bias=False):
        super().__init__()
        self.asm = nn.AdaptiveLogSoftmaxWithLoss(8, 12, cutoffs, div_value=2.0, head_bias=head_bias)

    def forward(self, x, target):
        out = self.asm(x, target)
        return out.output, out.loss


@pytest.mark.parametrize("opset", [9, 18, 23])
@pytest.mark.parametrize("cutoffs,head_bias", [([4, 8], False), ([3], True), ([2, 5, 9], False)])
def test_adaptive_log_softmax_with_loss_exports_with_dynamic_batch(cutoffs, head_bias, opset):
    torch.manual_seed(0)
    model = Batched(cutoffs, head_bias).eval()
    example = (torch.randn(6, 8), targets(6, 12))
    exported = export(model, example, ({0: AUTO}, {0: AUTO}), opset)
    # targets in every cluster, in the shortlist only (each cluster empty: eager skips it), in the last only
    for args in [example, (torch.randn(9, 8), targets(9, 12)), (torch.randn(4, 8), targets(4, 12, high=cutoffs[0])),
                 (torch.randn(3, 8), targets(3, 12, low=cutoffs[-1])), (torch.randn(1, 8), targets(1, 12))]:
        assert_runs_like_eager(exported, model, args, tol=(1e-5, 1e-6))


def test_adaptive_log_softmax_unbatched_and_out_of_range():
    """A 0-d target with a 1-D input; a target eager raises on (outside [0, n_classes)) gives NaN, not
    another class's log-probability (Gather would wrap -1 to the last class)."""
    torch.manual_seed(0)
    model = Batched([4, 8]).eval()
    exported = export(model, (torch.randn(5, 8), targets(5, 12)), ({0: AUTO}, {0: AUTO}), 18)
    for bad in (-1, 12):
        target = torch.tensor([1, bad, 9])
        with pytest.raises(RuntimeError, match="Target values should be in"):
            model(torch.randn(3, 8), target)
        output, loss = exported.run(torch.randn(3, 8), target)
        assert torch.isnan(output[1]) and not torch.isnan(output[[0, 2]]).any() and torch.isnan(loss)
    single = nn.AdaptiveLogSoftmaxWithLoss(8, 12, [4, 8], div_value=2.0).eval()
    x, t = torch.randn(8), torch.tensor(6)
    exported = export(single, (x, t), None, 18)
    want = single(x, t)
    got = exported.run(x, t)
    torch.testing.assert_close(got.output if hasattr(got, "output") else got[0], want.output, rtol=1e-5, atol=1e-6)


class OwnForward(nn.CrossMapLRN2d):
    def forward(self, x):
        return x * 2


def test_layer_equivalents_leave_the_classes_and_subclasses_as_they_were():
    before = {layer: layer.__dict__["forward"] for layer in (nn.CrossMapLRN2d, nn.AdaptiveLogSoftmaxWithLoss)}
    exported = export(OwnForward(3), (torch.randn(2, 4, 3, 3),), None, 18)
    x = torch.randn(2, 4, 3, 3)
    torch.testing.assert_close(exported.run(x), x * 2)  # its own forward, not CrossMapLRN2d's equivalent
    assert {layer: layer.__dict__["forward"] for layer in before} == before
