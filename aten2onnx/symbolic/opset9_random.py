"""Opset-9 base, random draws: rand/randn/randint (and their _like forms), bernoulli, dropout in
training mode, randperm and multinomial, by RandomUniform/RandomNormal. A graph draws its own numbers each run: results are
samples from the same distribution as eager PyTorch's, never the same numbers. (The exporter never
folds random nodes into constants.)"""

from __future__ import annotations

import functools

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, dim_size, fill, reshape, scalar_type

register = functools.partial(registry.register, opset=9)

_DRAW_DTYPES = (torch.float16, torch.float32, torch.float64)  # what RandomUniform/RandomNormal make


def draw(g: GraphBuilder, op_type: str, size: list | Value, dtype: torch.dtype, **attrs) -> Value:
    """RandomUniform or RandomNormal of `size` (ints, SymInts, or a shape tensor) in `dtype`, drawn in
    float32 when ONNX cannot draw that dtype."""
    drawn = dtype if dtype in _DRAW_DTYPES else torch.float32
    if isinstance(size, list) and all(isinstance(s, int) for s in size):
        out = g.op(op_type, dtype=_dtypes.to_onnx(drawn), shape=list(size), **attrs)
    else:
        like = fill(g, size, 0, drawn)
        out = g.op(f"{op_type}Like", like, dtype=_dtypes.to_onnx(drawn), **attrs)
    out.dtype = drawn
    return cast(g, out, dtype)


def shape_of(g: GraphBuilder, self: Value) -> list | Value:
    return list(self.shape) if self.is_static else g.op("Shape", self)


def uniform_ints(g: GraphBuilder, size: list | Value, low, high, dtype: torch.dtype) -> Value:
    """Integers uniform in [low, high): floor(low + u * (high - low)) with u uniform in [0, 1)."""
    u = draw(g, "RandomUniform", size, torch.float64)
    low_v = cast(g, low, torch.float64) if isinstance(low, Value) else g.const(float(low), dtype=torch.float64)
    high_v = cast(g, high, torch.float64) if isinstance(high, Value) else g.const(float(high), dtype=torch.float64)
    span = g.op("Sub", high_v, low_v)
    picked = g.op("Floor", g.op("Add", low_v, g.op("Mul", u, span)))
    # u < 1, but rounding of low + u * span may reach high: clamp to high - 1
    picked = g.op("Min", picked, g.op("Sub", high_v, g.const(1.0, dtype=torch.float64)))
    return cast(g, picked, dtype)


@register("aten::rand.default")
def aten_rand(g, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return draw(g, "RandomUniform", list(size), dtype or torch.get_default_dtype())


@register("aten::randn.default")
def aten_randn(g, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return draw(g, "RandomNormal", list(size), dtype or torch.get_default_dtype())


@register("aten::rand_like.default")
def aten_rand_like(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return draw(g, "RandomUniform", shape_of(g, self), dtype or self.dtype)


@register("aten::randn_like.default")
def aten_randn_like(g, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return draw(g, "RandomNormal", shape_of(g, self), dtype or self.dtype)


@register("aten::randint.default")
def aten_randint(g, high, size, *, dtype=torch.int64, layout=None, device=None, pin_memory=None):
    """randint(SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return uniform_ints(g, list(size), 0, high, scalar_type(dtype, torch.int64))


@register("aten::randint.low")
def aten_randint_low(g, low, high, size, *, dtype=torch.int64, layout=None, device=None, pin_memory=None):
    """randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    return uniform_ints(g, list(size), low, high, scalar_type(dtype, torch.int64))


@register("aten::randint_like.default")
def aten_randint_like(g, self, high, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """randint_like(Tensor self, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return uniform_ints(g, shape_of(g, self), 0, high, scalar_type(dtype, self.dtype))


@register("aten::randint_like.low_dtype")
def aten_randint_like_low(g, self, low, high, *, dtype=None, layout=None, device=None, pin_memory=None,
                          memory_format=None):
    """randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"""
    return uniform_ints(g, shape_of(g, self), low, high, scalar_type(dtype, self.dtype))


def keep_mask(g: GraphBuilder, self: Value, p: Value | float) -> Value:
    """True with probability p, per element of self: a uniform draw below p."""
    u = draw(g, "RandomUniform", shape_of(g, self), torch.float32)
    p_v = cast(g, p, torch.float32) if isinstance(p, Value) else g.const(float(p), dtype=torch.float32)
    return g.op("Less", u, p_v)


@register("aten::bernoulli.default")
def aten_bernoulli(g, self, *, generator=None):
    """bernoulli(Tensor self, *, Generator? generator=None) -> Tensor"""
    return cast(g, keep_mask(g, self, self), self.dtype)


@register("aten::bernoulli.p")
def aten_bernoulli_p(g, self, p, *, generator=None):
    """bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor"""
    return cast(g, keep_mask(g, self, p), self.dtype)


@register("aten::native_dropout.default")
def aten_native_dropout(g, input, p, train):
    """native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)"""
    if not train or p == 0:
        return input, fill(g, shape_of(g, input), True, torch.bool)
    if p == 1:
        zeros = fill(g, shape_of(g, input), 0, input.dtype)
        return zeros, fill(g, shape_of(g, input), False, torch.bool)
    mask = keep_mask(g, input, 1.0 - p)
    scaled = g.op("Mul", input, g.const(1.0 / (1.0 - p), like=input))
    return g.op("Mul", scaled, cast(g, mask, input.dtype)), mask


@register("aten::randperm.default")
def aten_randperm(g, n, *, dtype=torch.int64, layout=None, device=None, pin_memory=None):
    """randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"""
    # the order that sorts n uniform draws is a uniformly random permutation
    keys = draw(g, "RandomUniform", [n], torch.float32)
    _, order = g.topk(keys, n, 0)
    return cast(g, order, scalar_type(dtype, torch.int64))


@register("aten::multinomial.default")
def aten_multinomial(g, self, num_samples, replacement=False, *, generator=None):
    """multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor"""
    # An exponential race: category c finishes at E_c / p_c (E_c exponential, p_c its weight), first with
    # probability p_c / sum(p), and the later finishers are draws without replacement from the rest. With
    # replacement each sample runs its own race; without, the num_samples first finishers of one race.
    # A category of weight 0 never finishes (its key is -inf).
    weights = g.unsqueeze(cast(g, self, torch.float64), [self.rank - 1])  # [..., 1, categories]
    lead = [dim_size(g, self, d) for d in range(self.rank - 1)]
    races = [num_samples if replacement else 1]
    # drawn in float32 (onnxruntime draws no float64 from RandomUniformLike from opset 22)
    u = cast(g, draw(g, "RandomUniform", lead + races + [dim_size(g, self, self.rank - 1)], torch.float32),
             torch.float64)
    finish = g.op("Div", g.op("Neg", g.op("Log", g.op("Sub", g.const(1.0, dtype=torch.float64), u))), weights)
    key = g.op("Where", g.op("Greater", weights, g.const(0.0, dtype=torch.float64)), g.op("Neg", finish),
               g.const(float("-inf"), dtype=torch.float64))
    if replacement:
        return g.op("ArgMax", key, axis=self.rank, keepdims=0)
    k = num_samples if isinstance(num_samples, int) else reshape(g, num_samples, [1])
    _, order = g.topk(g.squeeze(key, [self.rank - 1]), k, self.rank - 1)
    return order
