"""Opset-9 complex products on carriers (see opset9_complex.py): matmul and its relatives, einsum,
linear and convolutions, as the real symbolic on each choice of parts (multilinear)."""

from __future__ import annotations

import functools

import torch

from aten2onnx import _dtypes, registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._carrier import carrier, complex_result, dtype_of, rank_of, real_symbolic, split
from aten2onnx.symbolic._complex_math import _mul_number, _scaled, multilinear
from aten2onnx.symbolic._helpers import cast

register = functools.partial(registry.register, opset=9, complex=True)


# -- products ---------------------------------------------------------------------------------------------------


def _product(key: str, *, conj_first: bool = False):
    def handler(g, self, other):
        fn = real_symbolic(g, key)
        return multilinear(g, lambda a, b: fn(g, a, b), [self, other], conj_first=conj_first)
    return handler


@register("aten::mm.default")
def aten_mm(g, self, mat2):
    """mm(Tensor self, Tensor mat2) -> Tensor"""
    return _product("aten::mm.default")(g, self, mat2)


@register("aten::bmm.default")
def aten_bmm(g, self, mat2):
    """bmm(Tensor self, Tensor mat2) -> Tensor"""
    return _product("aten::bmm.default")(g, self, mat2)


@register("aten::matmul.default")
def aten_matmul(g, self, other):
    """matmul(Tensor self, Tensor other) -> Tensor"""
    return _product("aten::matmul.default")(g, self, other)


@register("aten::dot.default")
def aten_dot(g, self, tensor):
    """dot(Tensor self, Tensor tensor) -> Tensor"""
    return _product("aten::dot.default")(g, self, tensor)


@register("aten::vdot.default")
def aten_vdot(g, self, other):
    """vdot(Tensor self, Tensor other) -> Tensor"""
    return _product("aten::dot.default", conj_first=True)(g, self, other)


@register("aten::inner.default")
def aten_inner(g, self, other):
    """inner(Tensor self, Tensor other) -> Tensor"""
    return _product("aten::inner.default")(g, self, other)


@register("aten::mv.default")
def aten_mv(g, self, vec):
    """mv(Tensor self, Tensor vec) -> Tensor"""
    return _product("aten::mv.default")(g, self, vec)


@register("aten::outer.default")
def aten_outer(g, self, vec2):
    """outer(Tensor self, Tensor vec2) -> Tensor"""
    return _product("aten::outer.default")(g, self, vec2)


@register("aten::kron.default")
def aten_kron(g, self, other):
    """kron(Tensor self, Tensor other) -> Tensor"""
    return _product("aten::kron.default")(g, self, other)


@register("aten::tensordot.default")
def aten_tensordot(g, self, other, dims_self, dims_other):
    """tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor"""
    fn = real_symbolic(g, "aten::tensordot.default")
    return multilinear(g, lambda a, b: fn(g, a, b, dims_self, dims_other), [self, other])


@register("aten::linalg_vecdot.default")
def aten_linalg_vecdot(g, x, y, *, dim=-1):
    """linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor"""
    fn = real_symbolic(g, "aten::linalg_vecdot.default")
    return multilinear(g, lambda a, b: fn(g, a, b, dim=dim), [x, y], conj_first=True)


@register("aten::trace.default")
def aten_trace(g, self):
    """trace(Tensor self) -> Tensor"""
    fn = real_symbolic(g, "aten::trace.default")
    return multilinear(g, lambda a: fn(g, a), [self])


@register("aten::linalg_cross.default")
def aten_linalg_cross(g, self, other, *, dim=-1):
    """linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor"""
    fn = real_symbolic(g, "aten::linalg_cross.default")
    return multilinear(g, lambda a, b: fn(g, a, b, dim=dim), [self, other])


@register("aten::cross.default")
def aten_cross(g, self, other, dim=None):
    """cross(Tensor self, Tensor other, int? dim=None) -> Tensor"""
    fn = real_symbolic(g, "aten::cross.default")
    return multilinear(g, lambda a, b: fn(g, a, b, dim), [self, other])


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
    product = _mul_number(g, aten_mm(g, mat1, mat2), complex(alpha))
    if complex(beta) == 0:
        return product  # eager ignores self (NaN included)
    dtype = functools.reduce(torch.promote_types, [dtype_of(x) for x in (self, mat1, mat2)])
    return g.op("Add", _scaled(g, self, beta, dtype), product)


@register("aten::einsum.default")
def aten_einsum(g, equation, tensors, *, path=None):
    """einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor"""
    fn = real_symbolic(g, "aten::einsum.default")
    return multilinear(g, lambda *xs: fn(g, equation, list(xs)), list(tensors))


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
    return _beta_alpha(g, self, aten_mv(g, mat, vec), beta, alpha, _dtype_of_all(self, mat, vec))


@register("aten::addr.default")
def aten_addr(g, self, vec1, vec2, *, beta=1, alpha=1):
    """addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return _beta_alpha(g, self, aten_outer(g, vec1, vec2), beta, alpha, _dtype_of_all(self, vec1, vec2))


@register("aten::baddbmm.default")
def aten_baddbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return _beta_alpha(g, self, aten_bmm(g, batch1, batch2), beta, alpha, _dtype_of_all(self, batch1, batch2))


@register("aten::addbmm.default")
def aten_addbmm(g, self, batch1, batch2, *, beta=1, alpha=1):
    """addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    # the sum of the batch's products, by the real addbmm with beta=0 (self only gives the shape)
    fn = real_symbolic(g, "aten::addbmm.default")
    like = split(g, self)[0]
    product = multilinear(g, lambda a, b: fn(g, like, a, b, beta=0, alpha=1), [batch1, batch2])
    return _beta_alpha(g, self, product, beta, alpha, _dtype_of_all(self, batch1, batch2))


def _convolution(g: GraphBuilder, key: str, input: Value, weight: Value, bias, **kwargs) -> Value:
    """A convolution is bilinear in input and weight; the bias is added once, along the channel dim."""
    fn = real_symbolic(g, key)
    out = multilinear(g, lambda x, w: fn(g, x, w, None, **kwargs), [input, weight])
    if bias is None:
        return out
    dtype = _dtype_of_all(input, weight, bias)
    spatial = rank_of(weight) - 2  # the output is [N, C, spatial...] or, unbatched, [C, spatial...]
    bias = g.op("Reshape", carrier(g, bias, dtype), g.const([-1] + [1] * spatial + [2], dtype=torch.int64))
    return g.op("Add", cast(g, out, _dtypes.real_part(dtype)), bias)


@register("aten::conv1d.default")
def aten_conv1d(g, input, weight, bias=None, stride=[1], padding=[0], dilation=[1], groups=1):
    """conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv1d.default", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv1d.padding")
def aten_conv1d_padding(g, input, weight, bias=None, stride=[1], padding="valid", dilation=[1], groups=1):
    """conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], str padding="valid", SymInt[1] dilation=[1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv1d.padding", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv_transpose1d.default")
def aten_conv_transpose1d(g, input, weight, bias=None, stride=[1], padding=[0], output_padding=[0], groups=1,
                        dilation=[1]):
    """conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor"""
    return _convolution(g, "aten::conv_transpose1d.default", input, weight, bias, stride=stride, padding=padding,
                        output_padding=output_padding, groups=groups, dilation=dilation)


@register("aten::conv2d.default")
def aten_conv2d(g, input, weight, bias=None, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1):
    """conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv2d.default", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv2d.padding")
def aten_conv2d_padding(g, input, weight, bias=None, stride=[1, 1], padding="valid", dilation=[1, 1], groups=1):
    """conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], str padding="valid", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv2d.padding", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv_transpose2d.input")
def aten_conv_transpose2d(g, input, weight, bias=None, stride=[1, 1], padding=[0, 0], output_padding=[0, 0], groups=1,
                        dilation=[1, 1]):
    """conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor"""
    return _convolution(g, "aten::conv_transpose2d.input", input, weight, bias, stride=stride, padding=padding,
                        output_padding=output_padding, groups=groups, dilation=dilation)


@register("aten::conv3d.default")
def aten_conv3d(g, input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1], groups=1):
    """conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv3d.default", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv3d.padding")
def aten_conv3d_padding(g, input, weight, bias=None, stride=[1, 1, 1], padding="valid", dilation=[1, 1, 1], groups=1):
    """conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], str padding="valid", SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor"""
    return _convolution(g, "aten::conv3d.padding", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, groups=groups)


@register("aten::conv_transpose3d.input")
def aten_conv_transpose3d(g, input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0], output_padding=[0, 0, 0], groups=1,
                        dilation=[1, 1, 1]):
    """conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor"""
    return _convolution(g, "aten::conv_transpose3d.input", input, weight, bias, stride=stride, padding=padding,
                        output_padding=output_padding, groups=groups, dilation=dilation)


@register("aten::convolution.default")
def aten_convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor"""
    return _convolution(g, "aten::convolution.default", input, weight, bias, stride=stride, padding=padding,
                        dilation=dilation, transposed=transposed, output_padding=output_padding, groups=groups)
