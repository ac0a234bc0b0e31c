"""Base opset, Python operators on SymInts and SymFloats that torch.export leaves in graphs
(`x.size(1) // 2`, `n > 0`, `math.trunc(f)`, `torch.sym_ite(b, x, y)`): Python values stay Python,
graph values become ops."""

from __future__ import annotations

import functools
import math
import operator

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import as_value, cast, promote
from aten2onnx.symbolic.opset9 import aten_div_mode

register = functools.partial(registry.register, opset=9)


# -- arithmetic -------------------------------------------------------


def sym_binary(g: GraphBuilder, op_type: str, fn, a, b):
    if not isinstance(a, Value) and not isinstance(b, Value):
        return fn(a, b)
    a, b = promote(g, a, b)
    return g.op(op_type, a, b)


@register("_operator::add")
def py_add(g, a, b):
    return sym_binary(g, "Add", operator.add, a, b)


@register("_operator::sub")
def py_sub(g, a, b):
    return sym_binary(g, "Sub", operator.sub, a, b)


@register("_operator::mul")
def py_mul(g, a, b):
    return sym_binary(g, "Mul", operator.mul, a, b)


@register("_operator::mod")
def py_mod(g, a, b):
    if not isinstance(a, Value) and not isinstance(b, Value):
        return a % b
    a, b = promote(g, a, b)
    # Python's % takes the divisor's sign: a - floor(a / b) * b (Mod arrives only in opset 10).
    return g.op("Sub", a, g.op("Mul", aten_div_mode(g, a, b, rounding_mode="floor"), b))


@register("_operator::neg")
def py_neg(g, a):
    return -a if not isinstance(a, Value) else g.op("Neg", a)


@register("_operator::floordiv")
def py_floordiv(g, a, b):
    if not isinstance(a, Value) and not isinstance(b, Value):
        return a // b
    return aten_div_mode(g, as_value(g, a, torch.int64), as_value(g, b, torch.int64), rounding_mode="floor")


# -- comparisons and logic


def _sym_compare(op_type: str, fn):
    def handler(g, a, b):
        if not isinstance(a, Value) and not isinstance(b, Value):
            return fn(a, b)
        a, b = promote(g, a, b)
        if op_type == "Equal":
            return g.op("Equal", a, b)
        if op_type == "NotEqual":
            return g.op("Not", g.op("Equal", a, b))
        if op_type in ("LessOrEqual", "GreaterOrEqual"):
            strict = "Greater" if op_type == "LessOrEqual" else "Less"
            return g.op("Not", g.op(strict, a, b))
        return g.op(op_type, a, b)
    return handler


for _name, _op, _fn in [("ge", "GreaterOrEqual", operator.ge), ("le", "LessOrEqual", operator.le),
                        ("gt", "Greater", operator.gt), ("lt", "Less", operator.lt),
                        ("eq", "Equal", operator.eq), ("ne", "NotEqual", operator.ne)]:
    register(f"_operator::{_name}")(_sym_compare(_op, _fn))


@register("_operator::truediv")
def py_truediv(g, a, b):
    if not isinstance(a, Value) and not isinstance(b, Value):
        return a / b
    a, b = promote(g, a, b, to=torch.float64)
    return g.op("Div", a, b)


@register("_operator::pow")
def py_pow(g, a, b):
    return sym_binary(g, "Pow", operator.pow, a, b)


@register("_operator::and_")
def py_and(g, a, b):
    if not isinstance(a, Value) and not isinstance(b, Value):
        return a and b
    return g.op("And", as_value(g, a, torch.bool), as_value(g, b, torch.bool))


@register("_operator::or_")
def py_or(g, a, b):
    if not isinstance(a, Value) and not isinstance(b, Value):
        return a or b
    return g.op("Or", as_value(g, a, torch.bool), as_value(g, b, torch.bool))


# -- SymFloat to SymInt


@register("math::trunc")
def py_trunc(g, x):
    if not isinstance(x, Value):
        return math.trunc(x)
    return cast(g, x, torch.int64)  # a float-to-int Cast truncates toward zero, as math.trunc does


# -- torch.sym_* functions on symbolic values


@register("torch::sym_ite")
def py_sym_ite(g, b, t, f):
    if not isinstance(b, Value):
        return t if b else f
    t, f = promote(g, t, f)
    return g.op("Where", as_value(g, b, torch.bool), t, f)


@register("torch::sym_float")
def py_sym_float(g, a):
    """A SymInt as a SymFloat (interpolate's recomputed scales): a graph value as float64, as Python's float."""
    return float(a) if not isinstance(a, Value) else cast(g, a, torch.float64)


@register("torch::sym_not")
def py_sym_not(g, a):
    return (not a) if not isinstance(a, Value) else g.op("Not", as_value(g, a, torch.bool))


@register("torch::sym_max")
def py_sym_max(g, a, b):
    return sym_binary(g, "Max", max, a, b)


@register("torch::sym_min")
def py_sym_min(g, a, b):
    return sym_binary(g, "Min", min, a, b)
