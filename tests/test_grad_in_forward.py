"""Forwards that take gradients (torch.autograd.grad, torch.func.grad/vjp/jacrev) export with the gradient
computed in the graph: equal to eager on new inputs (a second draw, another batch where the batch is
dynamic) in our runtime and onnxruntime at every opset, without ATen fallbacks, bitwise under exact mode;
a gradient penalty through export_training equal to autograd's double backward; what cannot be captured
says what to do."""

from __future__ import annotations

import copy
import dataclasses
import warnings
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import aten2onnx
from aten2onnx import CaptureError, ExportError
from aten2onnx.symbolic import MAX_OPSET
from conftest import flat_tensors, run_ort


class Energy(nn.Module):
    """Forces from an energy model: F = -dE/dpos, the weights used by the energy and by its gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pos = pos.requires_grad_(True) if not pos.requires_grad else pos
        energy = self.net(pos).sum()
        return energy, -torch.autograd.grad(energy, pos, create_graph=True)[0]


class Saliency(nn.Module):
    """Input saliency of a small CNN's top class: |d score / d image|, without create_graph."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.head = nn.Linear(4 * 3 * 3, 5)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        image = image.detach().requires_grad_()
        features = F.max_pool2d(F.relu(self.conv(image)), 2)
        scores = self.head(features.flatten(1))
        grad, = torch.autograd.grad(scores.max(dim=1).values.sum(), image)
        return grad.abs()


class GradOutputs(nn.Module):
    """A vector-Jacobian product with grad_outputs given (ones_like), of a layer-normed softplus."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        y = F.softplus(self.norm(self.lin(x))) * x
        grad, = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))
        return grad


class TwoInputs(nn.Module):
    """Gradients with respect to two inputs at once."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x.requires_grad_()
        y.requires_grad_()
        z = (x.sin() * y.exp()).sum()
        return torch.autograd.grad(z, (x, y))


class Laplacian(nn.Module):
    """A physics-informed net's u, du/dx and d2u/dx2 (a gradient of a gradient) at points x."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = x.requires_grad_()
        u = self.net(x)
        du, = torch.autograd.grad(u.sum(), x, create_graph=True)
        d2u, = torch.autograd.grad(du.sum(), x, create_graph=True)
        return u, du, d2u


class FuncGrad(nn.Module):
    """torch.func.grad of a ReLU layer's squared output, per point by the batch dim."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.func.grad(lambda t: torch.relu(self.lin(t)).pow(2).sum())(x)


class BackwardInForward(nn.Module):
    """Calls .backward() and reads the input's .grad; a hook scales the gradient on its way."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        y = x * 3
        y.register_hook(lambda g: g * 10)
        torch.tanh(self.lin(y)).sum().backward()
        return x.grad


class ParameterGradient(nn.Module):
    """The gradient with respect to a weight, inside forward (what a per-sample-gradient layer needs)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.autograd.grad(self.lin(x).pow(2).sum(), self.lin.weight)[0]


class FuncVjp(nn.Module):
    """torch.func.vjp of x * sigmoid(x), pulled back along v."""

    def forward(self, x: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, pullback = torch.func.vjp(lambda t: t.sigmoid() * t, x)
        return out, pullback(v)[0]


class Jacobian(nn.Module):
    """torch.func.jacrev of a small function of a vector."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.func.jacrev(lambda t: t.sin() * t.sum())(x)


class PerSampleGradients(nn.Module):
    """Per-sample gradients of a classifier's loss: torch.func.vmap of torch.func.grad over the batch."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        params = {name: p.detach() for name, p in self.lin.named_parameters()}

        def loss(p: dict, xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy(torch.func.functional_call(self.lin, p, (xi[None],)), yi[None])

        grads = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, labels)
        return grads["weight"], grads["bias"]


class FuncJvp(nn.Module):
    """Forward mode: torch.func.jvp of x * sin(x) along v."""

    def forward(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.func.jvp(lambda t: t.sin() * t, (x,), (v,))[1]


class Hessian(nn.Module):
    """torch.func.hessian (jacfwd of jacrev) of a scalar function of a vector."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.func.hessian(lambda t: (t.sin() * t.sum()).sum())(x)


@dataclasses.dataclass
class Case:
    name: str
    model: Callable[[], nn.Module]
    args: Callable[[int], tuple]  # inputs of a batch size
    dynamic_shapes: Any = None  # the batch dim of each input, when dynamic


CASES = [
    Case("energy_forces", Energy, lambda n: (torch.randn(n, 3),), {"pos": {0: "atoms"}}),
    # static: convolution_backward is exported for static shapes only
    Case("cnn_saliency", Saliency, lambda n: (torch.randn(n, 2, 6, 6),)),
    Case("grad_outputs_ones_like", GradOutputs, lambda n: (torch.randn(n, 4),)),
    Case("two_inputs", TwoInputs, lambda n: (torch.randn(n, 4), torch.randn(n, 4)),
         {"x": {0: "batch"}, "y": {0: "batch"}}),
    Case("pinn_second_derivative", Laplacian, lambda n: (torch.linspace(-1, 1, n)[:, None] + 0.1 * torch.randn(n, 1),)),
    Case("backward_and_grad_attribute_with_hook", BackwardInForward, lambda n: (torch.randn(n, 3),),
         {"x": {0: "batch"}}),
    Case("parameter_gradient", ParameterGradient, lambda n: (torch.randn(n, 3),)),
    Case("func_grad", FuncGrad, lambda n: (torch.randn(4),)),
    Case("func_vjp", FuncVjp, lambda n: (torch.randn(n, 4), torch.randn(n, 4))),
    Case("func_jacrev", Jacobian, lambda n: (torch.randn(3),)),
    Case("func_jvp", FuncJvp, lambda n: (torch.randn(n, 4), torch.randn(n, 4)), {"x": {0: "batch"}, "v": {0: "batch"}}),
    Case("func_hessian", Hessian, lambda n: (torch.randn(3),)),
    # static: torch.export specializes a batch that vmap maps over (and warns so)
    Case("vmap_of_grad_per_sample", PerSampleGradients, lambda n: (torch.randn(n, 4), torch.randint(0, 3, (n,)))),
]
IDS = [case.name for case in CASES]


def export(case: Case, model: nn.Module, **options: Any) -> aten2onnx.ExportedModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export(model, case.args(5), dynamic_shapes=case.dynamic_shapes, **options)


def new_inputs(case: Case) -> tuple:
    """Other values than the export's, and another batch size where the batch is dynamic."""
    torch.manual_seed(1)
    return case.args(7 if case.dynamic_shapes else 5)


def eager(model: nn.Module, args: tuple) -> list[torch.Tensor]:
    return [t.detach() for t in flat_tensors(model(*[a.clone() for a in args]))]


@pytest.mark.parametrize("opset", [13, 18, MAX_OPSET])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients_equal_eager_on_new_inputs(case, opset):
    model = case.model().eval()
    exported = export(case, model, opset=opset)
    assert exported.fallback_ops == []
    args = new_inputs(case)
    want = eager(model, args)
    got = flat_tensors(exported.run(*args))
    ort = run_ort(exported.model_proto, dict(zip(exported.input_names, args)))
    assert len(got) == len(ort) == len(want)
    for ours, theirs, expected in zip(got, ort, want):
        torch.testing.assert_close(ours, expected, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(torch.from_numpy(theirs), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_exact_mode_is_bitwise_eager(case):
    model = case.model().eval()
    exported = export(case, model, exact=True)
    args = new_inputs(case)
    want = eager(model, args)
    got = flat_tensors(exported.run(*args))
    unequal = [i for i, (a, b) in enumerate(zip(got, want, strict=True)) if not torch.equal(a, b)]
    assert not unequal, f"outputs {unequal} not bitwise eager's"


class ManyBackwardOps(nn.Module):
    """A gradient through many layers' backward ops at once (batch, layer and group norm, embedding, conv,
    pooling, activations, softmax, losses): each must translate natively."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.bn = nn.BatchNorm1d(6)
        self.ln = nn.LayerNorm(6)
        self.gn = nn.GroupNorm(2, 6)
        self.conv = nn.Conv1d(6, 6, 3, padding=1)
        self.emb = nn.Embedding(10, 6)

    def forward(self, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        h = self.bn(self.lin(x))
        h = F.elu(h) + F.leaky_relu(h) + F.hardtanh(h) + F.mish(h) + F.hardswish(h) + F.logsigmoid(h) + h.sigmoid()
        h = self.ln(h) + self.emb(idx)
        c = F.avg_pool1d(self.gn(self.conv(h.unsqueeze(-1).expand(-1, -1, 4))), 2).flatten(1)
        s = F.softmax(h, -1) * F.log_softmax(h, -1)
        loss = (F.mse_loss(s, torch.zeros_like(s)) + F.smooth_l1_loss(h, torch.ones_like(h)) + c.pow(2).mean()
                + F.cross_entropy(h, idx % 6))
        return torch.autograd.grad(loss, x, create_graph=True)[0]


def test_backward_ops_translate_natively():
    model = ManyBackwardOps().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, (torch.randn(5, 6), torch.randint(0, 10, (5,))))
    assert exported.fallback_ops == []
    args = torch.randn(5, 6), torch.randint(0, 10, (5,))
    want = model(*[a.clone() for a in args]).detach()
    torch.testing.assert_close(exported.run(*args), want, rtol=1e-4, atol=1e-5)
    ort, = run_ort(exported.model_proto, dict(zip(exported.input_names, args)))
    torch.testing.assert_close(torch.from_numpy(ort), want, rtol=1e-4, atol=1e-5)


def test_the_example_input_is_left_without_grad():
    pos = torch.randn(5, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aten2onnx.export(Energy().eval(), (pos,))
    assert not pos.requires_grad and pos.grad is None


class Critic(nn.Module):
    """A WGAN-GP critic's loss: mean score plus the gradient penalty (|d score / d x| - 1)^2, whose
    parameter gradients need the double backward (create_graph=True); or, with create_graph=False,
    a penalty eager takes as a constant of the parameters."""

    def __init__(self, create_graph: bool = True) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 1))
        self.create_graph = create_graph

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        score = self.net(x)
        # without create_graph the backward through score below needs the graph kept
        grad, = torch.autograd.grad(score.sum(), x, create_graph=self.create_graph, retain_graph=True)
        return score.mean() + 10 * ((grad.norm(2, dim=1) - 1) ** 2).mean()


@pytest.mark.parametrize("create_graph", [True, False])
def test_gradient_penalty_trains_as_autograd(create_graph):
    model = Critic(create_graph)
    x = torch.randn(6, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trained = aten2onnx.export_training(model, (x,), dynamic_shapes={"x": {0: "batch"}})
    assert trained.fallback_ops == []
    x = torch.randn(9, 4)
    reference = copy.deepcopy(model).train()
    want_loss = reference(x.clone())
    want_loss.backward()
    want = {name: p.grad for name, p in reference.named_parameters()}
    loss, grads = trained.run(x)
    torch.testing.assert_close(loss, want_loss.detach(), rtol=1e-4, atol=1e-5)
    ort_loss, ort_grads = trained.structure_outputs(run_ort(trained.model_proto, {trained.input_names[0]: x}))
    torch.testing.assert_close(torch.from_numpy(ort_loss), want_loss.detach(), rtol=1e-4, atol=1e-5)
    assert set(grads) == set(want)
    for name, expected in want.items():
        torch.testing.assert_close(grads[name], expected, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}.grad: {m}")
        torch.testing.assert_close(torch.from_numpy(ort_grads[name]), expected, rtol=1e-4, atol=1e-5,
                                   msg=lambda m: f"onnxruntime {name}.grad: {m}")


def test_gradient_penalty_is_refused_under_exact_mode():
    with pytest.raises(ExportError, match="exact mode: the loss takes a gradient inside the forward"):
        aten2onnx.export_training(Critic(), (torch.randn(6, 4),), exact=True)


class BranchOnGradient(nn.Module):
    """Reads a gradient's value into a Python bool: no capture can trace it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        grad, = torch.autograd.grad(x.sin().sum(), x)
        return grad * 2 if grad.sum() > 0 else grad


def test_uncapturable_gradient_says_what_to_do():
    with pytest.raises(CaptureError) as caught:
        aten2onnx.export(BranchOnGradient().eval(), (torch.randn(4, 3),))
    message = str(caught.value)
    assert "gradient capture:" in message
    assert "torch.autograd.grad(outputs, inputs" in message and "Gradients inside forward" in message


class VmappedScores(nn.Module):
    """torch.vmap in the forward and no gradient (transformers 4.x builds its attention masks with vmap): a
    transform the capture lowers below autograd, but nothing the loss differentiates inside the forward.
    The second term's gradient is stopped by the user's own detach().detach()."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = torch.vmap(lambda row: self.lin(row).tanh())(x)
        return scores.square().mean() + self.lin(x).detach().detach().sum()


def test_a_vmap_alone_is_not_taken_for_a_gradient_in_the_forward():
    """It trains as autograd, bitwise under exact mode (which refuses a forward that takes gradients, and
    refused this one before), and the user's detach still stops the gradient."""
    model = VmappedScores()
    x = torch.randn(5, 4)
    trained = aten2onnx.export_training(model, (x,), exact=True)
    assert trained.fallback_ops == []
    reference = copy.deepcopy(model).train()
    want_loss = reference(x.clone())
    want_loss.backward()
    loss, grads = trained.run(x)
    assert torch.equal(loss, want_loss.detach())
    assert set(grads) == {"lin.weight", "lin.bias"}
    for name, p in reference.named_parameters():
        assert torch.equal(grads[name], p.grad), name
