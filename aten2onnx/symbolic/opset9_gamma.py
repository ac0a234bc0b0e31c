"""Opset-9 base, gamma-family special functions: lgamma, digamma, polygamma, zeta, incomplete gamma, erfinv, ndtri, erfcx, log_ndtr; computed by series and rational approximations in elementwise ops."""

from __future__ import annotations

import functools

from aten2onnx import registry

register = functools.partial(registry.register, opset=9)
