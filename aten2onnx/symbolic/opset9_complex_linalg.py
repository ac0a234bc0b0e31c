"""Opset-9 complex products on carriers (see opset9_complex.py): matmul and its relatives, einsum,
linear and convolutions, as the real translation on each choice of parts (multilinear); the EACH_CHOICE
and CONVOLUTIONS tables declare those built from the real translation of their own overload."""

from __future__ import annotations

import functools

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._carrier import carrier, complex_result, dtype_of, rank_of, real_symbolic, split
from aten2onnx.symbolic._complex_math import _mul_number, _scaled, multilinear
from aten2onnx.symbolic._helpers import cast
from aten2onnx.symbolic._lifting import Lift, lift

register = functools.partial(registry.register, opset=9, complex=True)


# -- products ---------------------------------------------------------------------------------------------------


def _product(key: str, *, conj_first: bool = False):
    def handler(g, self, other):
        fn = real_symbolic(g, key)
        return multilinear(g, lambda a, b: fn(g, a, b), [self, other], conj_first=conj_first)
    return handler


def each_choice(g: GraphBuilder, real: str, operands: tuple[str, ...], arguments: dict) -> Value:
    """The lifting of EACH_CHOICE: the real translation once per choice of parts of the operands (the
    arguments named; a tensor list among them counts each of its tensors), summed by multilinear."""
    layout, tensors = [], []
    for name in operands:
        x = arguments[name]
        layout.append((name, len(x) if isinstance(x, (list, tuple)) else None))
        tensors += list(x) if isinstance(x, (list, tuple)) else [x]
    fn = real_symbolic(g, real)

    def term(*parts):
        it = iter(parts)
        picked = {name: next(it) if n is None else [next(it) for _ in range(n)] for name, n in layout}
        return fn(g, **{**arguments, **picked})

    return multilinear(g, term, tensors)


# Products linear in each operand, lifted by each_choice; spec: the operands.
EACH_CHOICE = [
    *(Lift((key,), ("self", other)) for key, other in (
        ("aten::mm.default", "mat2"), ("aten::bmm.default", "mat2"), ("aten::matmul.default", "other"),
        ("aten::dot.default", "tensor"), ("aten::inner.default", "other"), ("aten::mv.default", "vec"),
        ("aten::outer.default", "vec2"), ("aten::kron.default", "other"), ("aten::tensordot.default", "other"),
        ("aten::linalg_cross.default", "other"), ("aten::cross.default", "other"))),
    Lift(("aten::trace.default",), ("self",)),
    Lift(("aten::einsum.default",), ("tensors",)),
    # linear in y and in x (through its differences)
    *(Lift((key,), ("y", "x")) for key in ("aten::trapezoid.x", "aten::trapz.x", "aten::cumulative_trapezoid.x")),
]
lift(EACH_CHOICE, each_choice, "each choice of parts", opset=9)


@register("aten::vdot.default")
def aten_vdot(g, self, other):
    """vdot(Tensor self, Tensor other) -> Tensor"""
    return _product("aten::dot.default", conj_first=True)(g, self, other)


@register("aten::linalg_vecdot.default")
def aten_linalg_vecdot(g, x, y, *, dim=-1):
    """linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor"""
    fn = real_symbolic(g, "aten::linalg_vecdot.default")
    return multilinear(g, lambda a, b: fn(g, a, b, dim=dim), [x, y], conj_first=True)


@register("aten::linear.default")
def aten_linear(g, input, weight, bias=None):
    """linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"""
    fn = real_symbolic(g, "aten::linear.default")
    out = multilinear(g, lambda a, b: fn(g, a, b), [input, weight])
    if bias is None:
        return out
    return g.op("Add", out, carrier(g, bias, complex_result(input, weight, bias)))


@register("aten::addmm.default")
def aten_addmm(g, self, mat1, mat2, *, beta=1, alpha=1):
    """addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    product = _mul_number(g, _product("aten::mm.default")(g, mat1, mat2), complex(alpha))
    if complex(beta) == 0:
        return product  # eager ignores self (NaN included)
    dtype = functools.reduce(torch.promote_types, [dtype_of(x) for x in (self, mat1, mat2)])
    return g.op("Add", _scaled(g, self, beta, dtype), product)


def _beta_alpha(g: GraphBuilder, self: Value, product: Value, beta, alpha, dtype: torch.dtype) -> Value:
    """beta * self + alpha * product (a carrier); beta == 0 ignores self, NaN included, as eager."""
    product = _mul_number(g, cast(g, product, _dtypes.real_part(dtype)), complex(alpha))
    if complex(beta) == 0:
        return product
    return g.op("Add", _scaled(g, self, beta, dtype), product)


def _dtype_of_all(*xs: Value) -> torch.dtype:
    return functools.reduce(torch.promote_types, [dtype_of(x) for x in xs])


@register("aten::addmv.default")
def aten_addmv(g, self, mat, vec, *, beta=1, alpha=1):
    """addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return _beta_alpha(g, self, _product("aten::mv.default")(g, mat, vec), beta, alpha, _dtype_of_all(self, mat, vec))


@register("aten::addr.default")
def aten_addr(g, self, vec1, vec2, *, beta=1, alpha=1):
    """addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return _beta_alpha(g, self, _product("aten::outer.default")(g, vec1, vec2), beta, alpha, _dtype_of_all(self, vec1, vec2))


@register("aten::baddbmm.default")
def aten_baddbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return _beta_alpha(g, self, _product("aten::bmm.default")(g, batch1, batch2), beta, alpha, _dtype_of_all(self, batch1, batch2))


@register("aten::addbmm.default")
def aten_addbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    # the sum of the batch's products, by the real addbmm with beta=0 (self only gives the shape)
    fn = real_symbolic(g, "aten::addbmm.default")
    like = split(g, self)[0]
    product = multilinear(g, lambda a, b: fn(g, like, a, b, beta=0, alpha=1), [batch1, batch2])
    return _beta_alpha(g, self, product, beta, alpha, _dtype_of_all(self, batch1, batch2))


def convolution(g: GraphBuilder, real: str, spec: None, arguments: dict) -> Value:
    """The lifting of CONVOLUTIONS: bilinear in input and weight; the bias is added once, along the
    channel dim."""
    rest = dict(arguments)
    input, weight, bias = rest.pop("input"), rest.pop("weight"), rest.pop("bias")
    fn = real_symbolic(g, real)
    out = multilinear(g, lambda x, w: fn(g, x, w, None, **rest), [input, weight])
    if bias is None:
        return out
    dtype = _dtype_of_all(input, weight, bias)
    spatial = rank_of(weight) - 2  # the output is [N, C, spatial...] or, unbatched, [C, spatial...]
    bias = g.op("Reshape", carrier(g, bias, dtype), g.const([-1] + [1] * spatial + [2], dtype=torch.int64))
    return g.op("Add", cast(g, out, _dtypes.real_part(dtype)), bias)


# Convolutions, lifted by convolution: bilinear in input and weight (each_choice), the bias added once.
CONVOLUTIONS = [Lift((key,)) for key in (
    "aten::conv1d.default", "aten::conv1d.padding", "aten::conv_transpose1d.default", "aten::conv2d.default",
    "aten::conv2d.padding", "aten::conv_transpose2d.input", "aten::conv3d.default", "aten::conv3d.padding",
    "aten::conv_transpose3d.input", "aten::convolution.default")]
lift(CONVOLUTIONS, convolution, "each choice of parts, the bias once", opset=9)
