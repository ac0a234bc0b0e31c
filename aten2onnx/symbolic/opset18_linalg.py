"""Opset 18, linear algebra: the norms that reduce over axes, now every Reduce* takes its axes as an input."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic._helpers import AXES18
from aten2onnx.symbolic.opset9_linalg import cond, linalg_norm, matrix_norm

register = functools.partial(registry.register, opset=18)


@register("aten::linalg_matrix_norm.default")
def aten_linalg_matrix_norm(g, self, ord, dim=[-2, -1], keepdim=False, *, dtype=None):
    """linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return matrix_norm(g, self, ord, dim, keepdim, dtype, mode=AXES18)


@register("aten::linalg_matrix_norm.str_ord")
def aten_linalg_matrix_norm_str_ord(g, self, ord="fro", dim=[-2, -1], keepdim=False, *, dtype=None):
    """linalg_matrix_norm.str_ord(Tensor self, str ord="fro", int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return matrix_norm(g, self, ord, dim, keepdim, dtype, mode=AXES18)


@register("aten::linalg_norm.default")
def aten_linalg_norm(g, self, ord=None, dim=None, keepdim=False, *, dtype=None):
    """linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return linalg_norm(g, self, ord, dim, keepdim, dtype, mode=AXES18)


@register("aten::linalg_norm.ord_str")
def aten_linalg_norm_ord_str(g, self, ord, dim=None, keepdim=False, *, dtype=None):
    """linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return linalg_norm(g, self, ord, dim, keepdim, dtype, mode=AXES18)


@register("aten::linalg_cond.default")
def aten_linalg_cond(g, self, p=None):
    """linalg_cond(Tensor self, Scalar? p=None) -> Tensor"""
    return cond(g, self, p, mode=AXES18)


@register("aten::linalg_cond.p_str")
def aten_linalg_cond_p_str(g, self, p):
    """linalg_cond.p_str(Tensor self, str p) -> Tensor"""
    return cond(g, self, p, mode=AXES18)
