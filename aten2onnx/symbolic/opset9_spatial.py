"""Opset-9 base, spatial sampling and pooling that ONNX has no single op for at this opset: adaptive max pooling, antialiased upsampling."""

from __future__ import annotations

import functools

from aten2onnx import registry

register = functools.partial(registry.register, opset=9)
