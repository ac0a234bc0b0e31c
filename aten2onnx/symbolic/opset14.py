"""Opset 14: Trilu arrives for tril/triu on any shape. (Add/Sub/Mul/Div taking int8, int16 and uint8 from
14 is a type the builder widens to before it, not a change of translation.)"""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry

register = functools.partial(registry.register, opset=14)


def trilu(g, self, diagonal, *, upper: bool):
    k = diagonal if not isinstance(diagonal, int) else g.const(diagonal, dtype=torch.int64)
    return g.op("Trilu", self, k, upper=int(upper))


@register("aten::tril.default")
def aten_tril(g, self, diagonal=0):
    """tril(Tensor self, SymInt diagonal=0) -> Tensor"""
    return trilu(g, self, diagonal, upper=False)


@register("aten::triu.default")
def aten_triu(g, self, diagonal=0):
    """triu(Tensor self, SymInt diagonal=0) -> Tensor"""
    return trilu(g, self, diagonal, upper=True)
