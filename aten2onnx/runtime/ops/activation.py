"""Pointwise activations with attributes (LeakyRelu, Elu, Selu, Celu, HardSigmoid, ...), Gelu, PRelu.
Each calls the torch.nn.functional kernel the exporter lowered from, so results equal eager's."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from aten2onnx.runtime.kernel import Kernel, kernel

_SELU_ALPHA = 1.67326319217681884765625
_SELU_GAMMA = 1.05070102214813232421875


@kernel("LeakyRelu", since=6)
class LeakyRelu(Kernel):
    def setup(self, alpha: float = 0.01) -> None:
        self.alpha = alpha

    def run(self, x):
        return (F.leaky_relu(x, self.alpha),)


@kernel("Elu", since=6)
class Elu(Kernel):
    def setup(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def run(self, x):
        return (F.elu(x, self.alpha),)


@kernel("Selu", since=6)
class Selu(Kernel):
    def setup(self, alpha: float = _SELU_ALPHA, gamma: float = _SELU_GAMMA) -> None:
        self.alpha, self.gamma = alpha, gamma
        self.default = math.isclose(alpha, _SELU_ALPHA, rel_tol=1e-7) and math.isclose(gamma, _SELU_GAMMA, rel_tol=1e-7)

    def run(self, x):
        if self.default:
            return (torch.selu(x),)
        return (torch.mul(F.elu(x, self.alpha), self.gamma),)


@kernel("Celu", since=12)
class Celu(Kernel):
    def setup(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def run(self, x):
        return (F.celu(x, self.alpha),)


@kernel("HardSigmoid", since=6)
class HardSigmoid(Kernel):
    """HardSigmoid: max(0, min(1, alpha * x + beta)); torch's hardsigmoid where alpha is 1/6."""

    def setup(self, alpha: float = 0.2, beta: float = 0.5) -> None:
        self.alpha, self.beta = alpha, beta
        self.torch_form = math.isclose(alpha, 1 / 6, rel_tol=1e-6) and beta == 0.5

    def run(self, x):
        if self.torch_form:
            return (F.hardsigmoid(x),)
        return (torch.clamp(x * self.alpha + self.beta, 0, 1),)


@kernel("HardSwish", since=14)
class HardSwish(Kernel):
    def run(self, x):
        return (F.hardswish(x),)


@kernel("Softplus", since=1)
class Softplus(Kernel):
    def run(self, x):
        return (F.softplus(x),)


@kernel("Softsign", since=1)
class Softsign(Kernel):
    def run(self, x):
        return (F.softsign(x),)


@kernel("ThresholdedRelu", since=10)
class ThresholdedRelu(Kernel):
    def setup(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def run(self, x):
        return (torch.where(x > self.alpha, x, torch.zeros((), dtype=x.dtype, device=x.device)),)


@kernel("Shrink", since=9)
class Shrink(Kernel):
    def setup(self, bias: float = 0.0, lambd: float = 0.5) -> None:
        self.bias, self.lambd = bias, lambd

    def run(self, x):
        zero = torch.zeros((), dtype=x.dtype, device=x.device)
        bias = self.bias if x.dtype.is_floating_point else int(self.bias)
        out = torch.where(x < -self.lambd, x + bias, torch.where(x > self.lambd, x - bias, zero))
        return (out.to(x.dtype),)


@kernel("Mish", since=18)
class Mish(Kernel):
    def run(self, x):
        return (F.mish(x),)


@kernel("Swish", since=24)
class Swish(Kernel):
    def setup(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def run(self, x):
        if self.alpha == 1.0:
            return (F.silu(x),)
        return (x * torch.sigmoid(x * self.alpha),)


@kernel("Gelu", since=20)
class Gelu(Kernel):
    def setup(self, approximate: str = "none") -> None:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"Gelu approximate must be 'none' or 'tanh', not {approximate!r}")
        self.approximate = approximate

    def run(self, x):
        return (F.gelu(x, approximate=self.approximate),)


@kernel("PRelu", since=7)
class PRelu(Kernel):
    """PRelu: the slope broadcasts against x (ONNX allows more shapes than torch.prelu)."""

    def run(self, x, slope):
        return (torch.where(x > 0, x, x * slope),)
