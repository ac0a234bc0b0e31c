"""Kernels of the internal domain aten2onnx.fused: ATen ops the exporter decomposed, run whole
again (see runtime/optimize.py)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from aten2onnx.runtime.kernel import Kernel
from aten2onnx.runtime.optimize import DOMAIN


class Gelu(Kernel):
    domain, op_type, since_version = DOMAIN, "Gelu", 1

    def setup(self, approximate: str = "none") -> None:
        self.approximate = approximate

    def run(self, x):
        return (F.gelu(x, approximate=self.approximate),)


class Silu(Kernel):
    domain, op_type, since_version = DOMAIN, "Silu", 1

    def run(self, x):
        return (F.silu(x),)


class Attention(Kernel):
    """scaled_dot_product_attention with an optional bool or additive mask ("" when none)."""

    domain, op_type, since_version = DOMAIN, "Attention", 1

    def setup(self, scale: float) -> None:
        self.scale = scale

    def run(self, q, k, v, mask=None):
        if mask is not None and mask.dtype != torch.bool:
            mask = mask.to(q.dtype)
        return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale),)


KERNELS = (Gelu, Silu, Attention)
