"""Opset-9 base, data movement and counting: chunked concatenation, segment and bag reductions, histograms, static nonzero, put, repeat_interleave, im2col and unfold windows."""

from __future__ import annotations

import functools

from aten2onnx import registry

register = functools.partial(registry.register, opset=9)
