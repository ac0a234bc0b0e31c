"""Opset-9 base, linear algebra: factorizations, solves, inverses and matrix functions written as fixed-size elimination on static shapes."""

from __future__ import annotations

import functools

from aten2onnx import registry

register = functools.partial(registry.register, opset=9)
