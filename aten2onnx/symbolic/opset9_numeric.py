"""Opset-9 base, numeric utilities: bit shifts, gcd/lcm, trapezoid integration, gradients, renorm, frexp, margin losses, quantiles and medians."""

from __future__ import annotations

import functools

from aten2onnx import registry

register = functools.partial(registry.register, opset=9)
