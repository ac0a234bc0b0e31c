"""Opset-9 base, Bessel and Airy functions by piecewise Chebyshev and rational approximations, and the classical orthogonal polynomials by their three-term recurrences."""

from __future__ import annotations

import functools

from aten2onnx import registry

register = functools.partial(registry.register, opset=9)
