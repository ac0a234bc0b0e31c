"""Pieces the opset-9 convolution, pooling and sampling modules share: a batch dim for the unbatched
inputs torch takes, per-dim expansion of size arguments, and the constant window coordinates that
integer convolution and pooling gather by."""

from __future__ import annotations

import math

import torch

from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import reshape, unsqueeze_static


# -- batching: pooling ops want (N, C, spatial...); torch also takes (C, spatial...) ------------------------------


def batched(g: GraphBuilder, x: Value, spatial: int, fn):
    """fn on x with a batch dim: an unbatched input gets one, and the outputs lose it again."""
    if x.rank == spatial + 2:
        return fn(x)
    if x.rank != spatial + 1:
        raise NotImplementedError("pooling needs a (batched) channel-first input of known rank")
    one = unsqueeze_static(g, x, 0)
    one.shape = (1,) + tuple(x.shape)
    outs = fn(one)
    if isinstance(outs, tuple):
        return tuple(_unbatch(g, o, x.rank) for o in outs)
    return _unbatch(g, outs, x.rank)


def _unbatch(g: GraphBuilder, x: Value, rank: int) -> Value:
    if x.shape is None:
        x.shape = (1,) + (None,) * rank
    return squeeze_first(g, x)


def squeeze_first(g: GraphBuilder, x: Value) -> Value:
    """Drop a leading dim of size 1 by Reshape (the same at every opset)."""
    if x.is_static:
        return reshape(g, x, list(x.shape[1:]))
    shape = g.op("Shape", x)
    rest = g.op("Gather", shape, g.const(list(range(1, x.rank)), dtype=torch.int64), axis=0)
    return g.op("Reshape", x, rest)


def expand(v, spatial: int) -> list[int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * spatial if len(v) == 1 else v


def static_spatial(x: Value, spatial: int, what: str) -> list[int]:
    sizes = list(x.shape[-spatial:]) if x.shape is not None and x.rank >= spatial else []
    if len(sizes) != spatial or not all(isinstance(s, int) for s in sizes):
        raise NotImplementedError(f"{what} is exported for static spatial sizes only")
    return sizes


# -- window coordinates: what integer convolution and pooling gather ------------------------------------


def window_coordinates(out_sizes: list[int], kernel: list[int], strides: list[int],
                       dilations: list[int]) -> torch.Tensor:
    """[spatial, P, K]: the coordinates (in the padded input) each output position's kernel taps read."""
    spatial = len(kernel)
    starts = torch.stack(torch.meshgrid(*(torch.arange(o) * s for o, s in zip(out_sizes, strides)), indexing="ij"))
    taps = torch.stack(torch.meshgrid(*(torch.arange(k) * d for k, d in zip(kernel, dilations)), indexing="ij"))
    return starts.reshape(spatial, -1, 1) + taps.reshape(spatial, 1, -1)


def flat_positions(coords: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """Row-major flat positions of coordinates [spatial, ...] in a plane of sizes."""
    place = torch.tensor([math.prod(sizes[i + 1:]) for i in range(len(sizes))])
    return (coords * place.reshape([-1] + [1] * (coords.dim() - 1))).sum(0)
