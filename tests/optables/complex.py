"""Complex tensors through the complex symbolics (symbolic/opset9_complex*.py), carried as real pairs:
conversions and creation, layout on the carrier, arithmetic with torch's type promotion (complex Python
scalars, real operands, mixed precision), elementwise functions at their edge values (signed zeros,
infinities, NaN, huge parts), reductions and products, at opsets before and after the axes inputs (13, 18)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from optable import Entry

C64, C128 = torch.complex64, torch.complex128
COMPLEX = (C64, C128)
INF, NAN = math.inf, math.nan
# before and after Squeeze/Unsqueeze/ReduceSum take axes as inputs (13), the other reductions (18)
OPSETS = (9, 13, 18)


def z(*shape):
    """A complex sample maker: random parts of the given shape."""
    return lambda dtype: (torch.randn(shape, dtype=dtype),)


def zx(a, b):
    """A complex tensor and a real one of the complex dtype's part type."""
    return lambda dtype: (torch.randn(a, dtype=dtype), torch.randn(b, dtype=dtype.to_real()))


def zz(a, b):
    return lambda dtype: (torch.randn(a, dtype=dtype), torch.randn(b, dtype=dtype))


def edges(dtype):
    """Every pair of parts from signed zeros, ones, infinities, NaN, tiny and huge values."""
    parts = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, INF, -INF, NAN, 1e30, -1e-30]
    return (torch.tensor([complex(a, b) for a in parts for b in parts], dtype=dtype),)


def huge(dtype):
    """Parts whose squares overflow (float32) or are subnormal."""
    big = torch.finfo(dtype.to_real()).max / 2
    return (torch.tensor([complex(big, big), complex(-big, 1.0), complex(1e-30, -1e-30), complex(3.0, -4.0)], dtype=dtype),)


CONVERSIONS = [
    Entry("to_dtypes", lambda a: (a.to(C128), a.to(torch.float32), a.to(torch.bool), a.to(torch.int64), a.cdouble().cfloat()),
          [lambda d: (torch.tensor([0j, 1j, -0.0 - 0j, 2.5 - 1j, complex(NAN, 0)], dtype=d),)], COMPLEX,
          keys=("complex:aten::to.dtype",)),
    Entry("real_to_complex", lambda x: (x.cfloat(), x.cdouble(), x.to(C64) * 2, torch.complex(x, -x), torch.polar(x.abs(), x)),
          [lambda d: (torch.randn(3, 4, dtype=d),)], (torch.float32, torch.float64),
          keys=("aten::abs.default", "aten::neg.default", "complex:aten::complex.default", "complex:aten::mul.Tensor",
                "complex:aten::polar.default", "complex:aten::to.dtype")),
    Entry("type_as_views", lambda a, x: (x.type_as(a), a.real.type_as(x), a.clone(), a.contiguous(), a.conj(),
                                         a.conj_physical(), a.resolve_conj(), a.resolve_neg(), torch.view_as_real(a.conj().resolve_conj()),
                                         a.imag, torch.view_as_complex(torch.view_as_real(a) * 2)),
          [zx((3, 4), (3, 4))], COMPLEX,
          keys=("aten::mul.Tensor", "aten::type_as.default", "complex:aten::_conj.default",
                "complex:aten::clone.default", "complex:aten::conj_physical.default", "complex:aten::imag.default",
                "complex:aten::real.default", "complex:aten::resolve_conj.default",
                "complex:aten::resolve_neg.default", "complex:aten::type_as.default",
                "complex:aten::view_as_complex.default", "complex:aten::view_as_real.default")),
    Entry("creation", lambda a: (torch.zeros_like(a), torch.ones_like(a), torch.full_like(a, 2 - 1j), a.new_zeros(2),
                                 a.new_full((2, 3), 1j), torch.zeros_like(a, dtype=torch.float32), torch.full((2,), 1 + 2j) + a[0, :2],
                                 torch.ones(3, dtype=a.dtype), torch.scalar_tensor(1j, dtype=a.dtype), torch.fill(a, 0.5j)),
          [z(3, 4)], COMPLEX,
          keys=("aten::select.int", "aten::slice.Tensor", "complex:aten::add.Tensor", "complex:aten::fill.Scalar",
                "complex:aten::full.default", "complex:aten::full_like.default", "complex:aten::new_full.default",
                "complex:aten::new_zeros.default", "complex:aten::ones.default", "complex:aten::ones_like.default",
                "complex:aten::scalar_tensor.default", "complex:aten::select.int", "complex:aten::slice.Tensor",
                "complex:aten::zeros_like.default")),
]

LAYOUT = [
    Entry("views", lambda a: (a.view(4, 3), a.reshape(-1), a.permute(1, 0), a.transpose(0, 1), a.t(), a.mT, a.mH, a.T,
                              a.unsqueeze(-1), a[None].squeeze(), a[None].squeeze(0), a.expand(2, 3, 4), a.flatten(),
                              a.unflatten(1, (2, 2)), a.movedim(0, 1), a.ravel(), a.view_as(a.real)),
          [z(3, 4)], COMPLEX, opsets=OPSETS,
          keys=("aten::expand.default", "aten::flatten.using_ints", "aten::permute.default", "aten::reshape.default",
                "aten::squeeze.default", "aten::squeeze.dims", "aten::transpose.int", "aten::unflatten.int",
                "aten::unsqueeze.default", "aten::view.default", "complex:aten::expand.default",
                "complex:aten::flatten.using_ints", "complex:aten::mH.default", "complex:aten::mT.default",
                "complex:aten::movedim.int", "complex:aten::numpy_T.default", "complex:aten::permute.default",
                "complex:aten::ravel.default", "complex:aten::real.default", "complex:aten::reshape.default",
                "complex:aten::squeeze.default", "complex:aten::squeeze.dim", "complex:aten::t.default",
                "complex:aten::transpose.int", "complex:aten::unflatten.int", "complex:aten::unsqueeze.default",
                "complex:aten::view.default", "complex:aten::view_as.default")),
    Entry("slices", lambda a: (a[1:, ::2], a[:, 1], a[-1], a.narrow(1, 1, 2), a.split(2, 1), a.chunk(2), a.unbind(1),
                               torch.split(a, [1, 3], 1), a.flip(0), a.flip(0, 1), a.roll(1), a.roll((1, -1), (0, 1)),
                               a.repeat(2, 1, 1), a.tile(2)),
          [z(3, 4)], (C64,), opsets=(10, 13, 18),
          keys=("aten::chunk.default", "aten::flip.default", "aten::narrow.default", "aten::repeat.default",
                "aten::roll.default", "aten::select.int", "aten::slice.Tensor", "aten::split.Tensor",
                "aten::split_with_sizes.default", "aten::unbind.int", "complex:aten::chunk.default",
                "complex:aten::flip.default", "complex:aten::narrow.default", "complex:aten::repeat.default",
                "complex:aten::roll.default", "complex:aten::select.int", "complex:aten::slice.Tensor",
                "complex:aten::split.Tensor", "complex:aten::split_with_sizes.default", "complex:aten::tile.default",
                "complex:aten::unbind.int")),
    Entry("cat_stack", lambda a, x: (torch.cat([a, x], 1), torch.cat([x, a, a]), torch.stack([a, x], -1), torch.stack([a, a]),
                                     torch.hstack([a, x]), torch.vstack([x, a])),
          [zx((3, 4), (3, 4))], COMPLEX, opsets=OPSETS,
          keys=("aten::hstack.default", "aten::vstack.default", "complex:aten::cat.default",
                "complex:aten::hstack.default", "complex:aten::stack.default", "complex:aten::vstack.default")),
    Entry("index", lambda a, i: (a.index_select(1, i), a[i], a[:, i], a[a.real > 0], a[i, i]),
          [lambda d: (torch.randn(3, 4, dtype=d), torch.tensor([0, 2]))], (C64,), opsets=(11, 18),
          keys=("aten::gt.Scalar", "aten::index.Tensor", "aten::index_select.default", "complex:aten::index.Tensor",
                "complex:aten::index_select.default", "complex:aten::real.default")),
    Entry("triangles", lambda a: (a.tril(), a.triu(1), a.diagonal(), a.diagonal(1, 1, 0), torch.diag_embed(a),
                                  torch.diag(a[0]), torch.diag(a)),
          [z(3, 4)], (C64,), opsets=(9, 14, 18),
          keys=("aten::diag_embed.default", "aten::diagonal.default", "aten::select.int", "aten::tril.default",
                "aten::triu.default", "complex:aten::diag.default", "complex:aten::diag_embed.default",
                "complex:aten::diagonal.default", "complex:aten::select.int", "complex:aten::tril.default",
                "complex:aten::triu.default")),
    Entry("where_pad", lambda a, x: (torch.where(x > 0, a, x), torch.where(x > 0, a, 1j), torch.where(x > 0, 2.0, a),
                                     a.masked_fill(x > 0, 2 + 1j), a.masked_fill(x < 0, 0.0), F.pad(a, (1, 2)),
                                     F.pad(a, (1, 1, 0, 2), value=0.5)),
          [zx((3, 4), (3, 4))], COMPLEX, opsets=OPSETS,
          keys=("aten::constant_pad_nd.default", "aten::gt.Scalar", "aten::lt.Scalar",
                "complex:aten::masked_fill.Scalar", "complex:aten::pad.default", "complex:aten::where.ScalarOther",
                "complex:aten::where.ScalarSelf", "complex:aten::where.self")),
    Entry("pad_modes", lambda a: (F.pad(a[None], (1, 2), mode="reflect"), F.pad(a[None], (1, 1, 2, 0), mode="replicate"),
                                  F.pad(a[None], (1, 1), mode="circular")),
          [z(3, 4)], (C64,), opsets=(9, 18), keys=("aten::pad.default", "aten::unsqueeze.default",
                                                   "complex:aten::pad.default", "complex:aten::unsqueeze.default")),
    Entry("scatter_gather", lambda a, i: (a.gather(1, i), a.scatter(1, i, a * 2), a.index_add(0, i[1], a, alpha=2),
                                          a.index_fill(1, i[0], 1 - 1j), torch.take(a, i)),
          [lambda d: (torch.randn(3, 4, dtype=d), torch.tensor([[0, 1, 3], [2, 2, 0], [1, 0, 0]]))], (C64,), opsets=(16, 18),
          keys=("aten::gather.default", "aten::index_add.default", "aten::index_fill.int_Scalar", "aten::scatter.src",
                "aten::select.int", "aten::take.default", "complex:aten::gather.default",
                "complex:aten::index_add.default", "complex:aten::index_fill.int_Scalar", "complex:aten::mul.Tensor",
                "complex:aten::scatter.src", "complex:aten::take.default")),
]

ARITHMETIC = [
    Entry("add_sub", lambda a, x: (a + x, x - a, a.add(x, alpha=2j), a.sub(a, alpha=0.5), torch.rsub(a, x), a - 3, 2 - a,
                                   a + (1 - 2j), x + 1j),
          [zx((3, 4), (4,))], COMPLEX, opsets=(9, 18),
          keys=("complex:aten::add.Tensor", "complex:aten::rsub.Scalar", "complex:aten::rsub.Tensor",
                "complex:aten::sub.Tensor")),
    Entry("mul_div", lambda a, b, x: (a * b, a * x, x * a, a * 1j, a * 2, 1j * x, a / b, a / x, x / a, a / 2, 2 / a,
                                      a / (1 + 1j), a.reciprocal(), -a, a.square(), torch.addcmul(a, b, x, value=2),
                                      torch.lerp(a, b, 0.3)),
          [lambda d: (torch.randn(3, 4, dtype=d), torch.randn(3, 4, dtype=d), torch.randn(4, dtype=d.to_real()))], COMPLEX,
          opsets=(9, 18),
          keys=("complex:aten::addcmul.default", "complex:aten::div.Tensor", "complex:aten::lerp.Scalar",
                "complex:aten::mul.Tensor", "complex:aten::neg.default", "complex:aten::reciprocal.default",
                "complex:aten::square.default")),
    # complex64 with float64 tensors is complex128; a complex scalar with a float32 tensor complex64
    Entry("promotion", lambda a, x, y: (a * x, a + x, x - a, torch.cat([a, x]), torch.where(x > 0, a, x), y * 1j, y + 2j,
                                        a * torch.tensor(2.0, dtype=torch.float64)),
          [lambda d: (torch.randn(4, dtype=C64), torch.randn(4, dtype=torch.float64), torch.randn(4))], (C64,), opsets=(9, 18),
          keys=("aten::detach.default", "aten::gt.Scalar", "aten::lift_fresh_copy.default",
                "complex:aten::add.Tensor", "complex:aten::cat.default", "complex:aten::mul.Tensor",
                "complex:aten::sub.Tensor", "complex:aten::where.self")),
    Entry("pow", lambda a, b, x: (a ** 2, a ** 3, a ** -2, a ** 0.5, a ** -0.5, a ** 2.5, a ** 0, a ** 1, a ** (1 + 1j),
                                  a ** b, a ** x, x.abs() ** b, 2.0 ** a, (1 - 1j) ** a, torch.float_power(a, 2)),
          [lambda d: (torch.randn(5, dtype=d), torch.randn(5, dtype=d), torch.randn(5, dtype=d.to_real()))], COMPLEX,
          opsets=(9, 18),
          keys=("aten::abs.default", "complex:aten::float_power.Tensor_Scalar", "complex:aten::pow.Scalar",
                "complex:aten::pow.Tensor_Scalar", "complex:aten::pow.Tensor_Tensor")),
    Entry("pow_zero_base", lambda a, b: (a ** b, a ** 2.5, a ** 2),
          [lambda d: (torch.zeros(3, dtype=d), torch.tensor([1 + 1j, 2.5, 0.5 - 3j], dtype=d))], COMPLEX, opsets=(18,),
          keys=("complex:aten::pow.Tensor_Scalar", "complex:aten::pow.Tensor_Tensor")),
]

FUNCTIONS = [
    Entry("unary", lambda a: (a.exp(), a.log(), a.sqrt(), a.rsqrt(), a.sin(), a.cos(), a.tan(), a.sinh(), a.cosh(),
                              a.tanh(), a.sigmoid(), a.sgn(), a.log2(), a.log10(), a.exp2(), a.abs(), a.angle(),
                              torch.sinc(a)),
          [z(2, 5)], COMPLEX, opsets=(9, 18),
          keys=("complex:aten::abs.default", "complex:aten::angle.default", "complex:aten::cos.default",
                "complex:aten::cosh.default", "complex:aten::exp.default", "complex:aten::exp2.default",
                "complex:aten::log.default", "complex:aten::log10.default", "complex:aten::log2.default",
                "complex:aten::rsqrt.default", "complex:aten::sgn.default", "complex:aten::sigmoid.default",
                "complex:aten::sin.default", "complex:aten::sinc.default", "complex:aten::sinh.default",
                "complex:aten::sqrt.default", "complex:aten::tan.default", "complex:aten::tanh.default")),
    Entry("inverse_trig", lambda a: (a.asin(), a.acos(), a.atan(), a.asinh(), a.acosh(), a.atanh()),
          [z(2, 5)], COMPLEX, opsets=(9, 18),
          keys=("complex:aten::acos.default", "complex:aten::acosh.default", "complex:aten::asin.default",
                "complex:aten::asinh.default", "complex:aten::atan.default", "complex:aten::atanh.default")),
    Entry("large_parts", lambda a: (a.tanh(), a.exp().abs().isinf(), (a * 1e-3).sin()),
          [lambda d: (torch.tensor([40 + 1j, -60 - 2j, 3 + 50j, 0.5 + 0.1j], dtype=d),)], COMPLEX, opsets=(18,),
          keys=("aten::isinf.default", "complex:aten::abs.default", "complex:aten::exp.default",
                "complex:aten::mul.Tensor", "complex:aten::sin.default", "complex:aten::tanh.default")),
    # C's atan2, hypot and csqrt at signed zeros, infinities and NaN
    Entry("edges", lambda a: (a.angle(), a.abs(), a.sqrt(), a.isnan(), a.isinf(), a.isfinite(), torch.isreal(a),
                              a == a.flip(0), a != a.conj(), a.to(torch.bool), torch.view_as_real(a.conj_physical())),
          [edges], COMPLEX, opsets=(9, 18),
          keys=("aten::eq.Tensor", "aten::flip.default", "complex:aten::_conj.default", "complex:aten::abs.default",
                "complex:aten::angle.default", "complex:aten::conj_physical.default", "complex:aten::eq.Tensor",
                "complex:aten::flip.default", "complex:aten::isfinite.default", "complex:aten::isinf.default",
                "complex:aten::isnan.default", "complex:aten::isreal.default", "complex:aten::ne.Tensor",
                "complex:aten::sqrt.default", "complex:aten::to.dtype", "complex:aten::view_as_real.default")),
    Entry("no_overflow", lambda a: (a.abs(), a.angle(), a.sqrt().abs(), a.log().real, a / a.flip(0), a.reciprocal()),
          [huge], COMPLEX, opsets=(9, 18),
          keys=("aten::flip.default", "complex:aten::abs.default", "complex:aten::angle.default",
                "complex:aten::div.Tensor", "complex:aten::flip.default", "complex:aten::log.default",
                "complex:aten::real.default", "complex:aten::reciprocal.default", "complex:aten::sqrt.default")),
    Entry("compare", lambda a, b: (a == b, a != b, a == 1j, torch.isclose(a, b), torch.isclose(a, a + 1e-7, equal_nan=True),
                                   torch.logical_and(a, b), torch.logical_not(a), a.any(), a.all(0)),
          [lambda d: (torch.tensor([1 + 1j, 2j, 0j, 3.0], dtype=d), torch.tensor([1 + 1j, 2j, 1.0, 0j], dtype=d))],
          COMPLEX, opsets=(9, 18),
          keys=("aten::all.dim", "aten::any.default", "aten::eq.Tensor", "complex:aten::add.Tensor",
                "complex:aten::all.dim", "complex:aten::any.default", "complex:aten::eq.Scalar",
                "complex:aten::eq.Tensor", "complex:aten::isclose.default", "complex:aten::logical_and.default",
                "complex:aten::logical_not.default", "complex:aten::ne.Tensor")),
    Entry("nan_to_num", lambda a: torch.nan_to_num(a, nan=1.0),
          [lambda d: (torch.tensor([complex(NAN, 1), complex(INF, -INF), 1 - 1j], dtype=d),)], (C64,), opsets=(9, 18),
          keys=("aten::nan_to_num.default", "complex:aten::nan_to_num.default")),
]

REDUCTIONS = [
    Entry("sum_mean", lambda a: (a.sum(), a.sum(1), a.sum((0, 1), keepdim=True), a.mean(), a.mean(0, keepdim=True),
                                 a.sum(dtype=C128), a[0, 0].sum()),
          [z(3, 4)], COMPLEX, opsets=OPSETS,
          keys=("aten::mean.dim", "aten::select.int", "aten::sum.dim_IntList", "complex:aten::mean.default",
                "complex:aten::mean.dim", "complex:aten::select.int", "complex:aten::sum.default",
                "complex:aten::sum.dim_IntList")),
    Entry("prod_cumsum", lambda a: (a.prod(), a.prod(1), a.cumsum(1), a.cumsum(0)),
          [z(3, 4)], COMPLEX, opsets=(11, 18),
          keys=("aten::cumsum.default", "aten::sum.dim_IntList", "complex:aten::cumsum.default",
                "complex:aten::prod.default", "complex:aten::prod.dim_int")),
    Entry("var_norm", lambda a: (a.var(), a.var(1, correction=0), a.std(0, keepdim=True), torch.var_mean(a, 1),
                                 torch.std_mean(a), torch.linalg.vector_norm(a), torch.linalg.vector_norm(a, 1, dim=1),
                                 torch.linalg.vector_norm(a, float("inf")), a.norm(), torch.dist(a, a.flip(0))),
          [z(3, 4)], COMPLEX, opsets=OPSETS,
          keys=("aten::flip.default", "aten::linalg_vector_norm.default", "aten::var_mean.correction",
                "complex:aten::dist.default", "complex:aten::flip.default",
                "complex:aten::linalg_vector_norm.default", "complex:aten::std.dim",
                "complex:aten::std_mean.correction", "complex:aten::var.correction", "complex:aten::var_mean.dim")),
]

PRODUCTS = [
    Entry("matmul", lambda a, b: (a @ b, torch.bmm(a[None], b[None]), a @ b[:, 0], a[0] @ b, torch.mv(a, b[:, 0]),
                                  torch.outer(a[0], b[0]), torch.dot(a[0], a[1]), torch.vdot(a[0], a[1]), torch.inner(a, a),
                                  torch.addmm(a @ b, a, b, beta=0.5, alpha=1j), torch.kron(a[:2, :2], b[:2, :2]),
                                  torch.linalg.vecdot(a, a)),
          [zz((3, 4), (4, 3))], COMPLEX, opsets=(9, 18),
          keys=("aten::bmm.default", "aten::dot.default", "aten::inner.default", "aten::kron.default",
                "aten::linalg_vecdot.default", "aten::matmul.default", "aten::mm.default", "aten::mv.default",
                "aten::outer.default", "aten::select.int", "aten::slice.Tensor", "aten::unsqueeze.default",
                "complex:aten::addmm.default", "complex:aten::bmm.default", "complex:aten::dot.default",
                "complex:aten::inner.default", "complex:aten::kron.default", "complex:aten::linalg_vecdot.default",
                "complex:aten::matmul.default", "complex:aten::mv.default", "complex:aten::outer.default",
                "complex:aten::select.int", "complex:aten::slice.Tensor", "complex:aten::unsqueeze.default",
                "complex:aten::vdot.default")),
    Entry("matmul_real_operand", lambda a, x: (torch.mm(a, x.T.to(a.dtype)), a @ x.T.to(a.dtype)),
          [zx((3, 4), (3, 4))], (C64,), opsets=(9, 18),
          keys=("aten::matmul.default", "aten::mm.default", "aten::numpy_T.default", "complex:aten::matmul.default",
                "complex:aten::mm.default", "complex:aten::to.dtype")),
    Entry("einsum", lambda a, b: (torch.einsum("ij,jk->ik", a, b), torch.einsum("ii->i", a[:3, :3]),
                                  torch.einsum("ij,kj,k->i", a, b.T, b[0])),
          [zz((3, 4), (4, 3))], (C64,), opsets=(12, 18),
          keys=("aten::einsum.default", "aten::permute.default", "aten::select.int", "aten::slice.Tensor",
                "complex:aten::einsum.default", "complex:aten::numpy_T.default", "complex:aten::select.int",
                "complex:aten::slice.Tensor")),
    Entry("conv_linear", lambda x, w, b: (F.conv1d(x, w, b, padding=1), F.linear(x[0].T, w[:, :, 0], b)),
          [lambda d: (torch.randn(2, 3, 5, dtype=d), torch.randn(4, 3, 2, dtype=d), torch.randn(4, dtype=d))],
          (C64,), opsets=(9, 18),
          keys=("aten::conv1d.default", "aten::linear.default", "aten::permute.default", "aten::select.int",
                "complex:aten::conv1d.default", "complex:aten::linear.default", "complex:aten::numpy_T.default",
                "complex:aten::select.int")),
]

TABLE = CONVERSIONS + LAYOUT + ARITHMETIC + FUNCTIONS + REDUCTIONS + PRODUCTS
