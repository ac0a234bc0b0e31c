"""Opset-9 base, loss functions: elementwise losses reduced over all elements (no axes, so the same
at every opset), NLL and cross entropy by a one-hot mask over the class axis, distance losses."""

from __future__ import annotations

import functools

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import (SymInt, binary, cast, dim_size, fill, half_step, norm_dim, opmath, promote,
                                         reshape, to_float)
from aten2onnx.symbolic.opset9 import aten_mul
from aten2onnx.symbolic.opset9_data import arange_of
from aten2onnx.symbolic.opset9_norm import axis_sum, static_shape
from aten2onnx.symbolic.opset9_reduce import mean_of

register = functools.partial(registry.register, opset=9)

NONE, MEAN, SUM = 0, 1, 2


def reduced(g: GraphBuilder, loss: Value, reduction: int) -> Value:
    """The mean or sum of the loss, accumulated in opmath(loss.dtype) as ATen's sum and mean do."""
    if reduction == NONE or loss.rank == 0:
        return loss
    loss_acc = cast(g, loss, opmath(loss.dtype))
    if reduction == MEAN:  # the mean of an empty loss is NaN, as eager's, also at sizes known only at run time
        return cast(g, mean_of(g, loss_acc, [], False), loss.dtype)
    return cast(g, g.op("ReduceSum", loss_acc, keepdims=0), loss.dtype)


def c(g: GraphBuilder, value: float, like: Value) -> Value:
    return g.const(value, like=like)


def relu(g: GraphBuilder, x: Value) -> Value:
    return g.op("Max", x, c(g, 0.0, x))


@register("aten::mse_loss.default")
def aten_mse_loss(g, self, target, reduction=1):
    """mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor"""
    d = g.op("Sub", *promote(g, self, target))
    return reduced(g, g.op("Mul", d, d), reduction)


@register("aten::l1_loss.default")
def aten_l1_loss(g, self, target, reduction=1):
    """l1_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor"""
    return reduced(g, g.op("Abs", g.op("Sub", *promote(g, self, target))), reduction)


def smooth(g: GraphBuilder, self: Value, target: Value, beta: float, *, huber: bool) -> Value:
    """Quadratic below beta, linear above: smooth L1 divides by beta, Huber scales the linear part.
    ATen's CPU kernels compute float16 Huber and bfloat16 smooth L1 in float32, rounding once; the
    other pairs round each step in their own dtype."""
    self, target = promote(g, self, target)
    dtype = self.dtype
    if dtype == (torch.float16 if huber else torch.bfloat16):
        self, target = cast(g, self, torch.float32), cast(g, target, torch.float32)
    return cast(g, smooth_of(g, g.op("Abs", g.op("Sub", self, target)), beta, huber=huber), dtype)


def smooth_of(g: GraphBuilder, d: Value, beta: float, *, huber: bool) -> Value:
    if beta == 0:
        return d
    quad = g.op("Mul", g.op("Mul", d, d), c(g, 0.5 if huber else 0.5 / beta, d))
    lin = g.op("Sub", d, c(g, 0.5 * beta, d))
    if huber:
        lin = g.op("Mul", lin, c(g, beta, d))
    return g.op("Where", g.op("Less", d, c(g, beta, d)), quad, lin)


@register("aten::smooth_l1_loss.default")
def aten_smooth_l1_loss(g, self, target, reduction=1, beta=1.0):
    """smooth_l1_loss(Tensor self, Tensor target, int reduction=Mean, float beta=1.) -> Tensor"""
    return reduced(g, smooth(g, self, target, beta, huber=False), reduction)


@register("aten::huber_loss.default")
def aten_huber_loss(g, self, target, reduction=1, delta=1.0):
    """huber_loss(Tensor self, Tensor target, int reduction=Mean, float delta=1.) -> Tensor"""
    return reduced(g, smooth(g, self, target, delta, huber=True), reduction)


@register("aten::binary_cross_entropy.default")
def aten_binary_cross_entropy(g, self, target, weight=None, reduction=1):
    """binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean) -> Tensor"""
    x, t = promote(g, self, target)
    # torch clamps the logs at -100 so that 0 and 1 give finite losses
    log_x = g.op("Max", g.op("Log", x), c(g, -100.0, x))
    log_1mx = g.op("Max", g.op("Log", g.op("Sub", c(g, 1.0, x), x)), c(g, -100.0, x))
    loss = g.op("Neg", g.op("Add", g.op("Mul", t, log_x), g.op("Mul", g.op("Sub", c(g, 1.0, t), t), log_1mx)))
    if weight is not None:
        loss = g.op("Mul", loss, cast(g, weight, loss.dtype))
    return reduced(g, loss, reduction)


@register("aten::binary_cross_entropy_with_logits.default")
def aten_binary_cross_entropy_with_logits(g, self, target, weight=None, pos_weight=None, reduction=1):
    """binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=Mean) -> Tensor"""
    x, t = promote(g, self, target)
    sp = softplus(g, g.op("Neg", x))  # -log(sigmoid(x)), without overflow
    one_minus_t = g.op("Sub", c(g, 1.0, t), t)
    if pos_weight is not None:
        lw = g.op("Add", g.op("Mul", g.op("Sub", cast(g, pos_weight, x.dtype), c(g, 1.0, x)), t), c(g, 1.0, x))
        sp = g.op("Mul", lw, sp)
    loss = g.op("Add", g.op("Mul", one_minus_t, x), sp)
    if weight is not None:
        loss = g.op("Mul", loss, cast(g, weight, loss.dtype))
    return reduced(g, loss, reduction)


def softplus(g: GraphBuilder, x: Value) -> Value:
    """log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|))."""
    return g.op("Add", relu(g, x), g.op("Log", g.op("Add", c(g, 1.0, x), g.op("Exp", g.op("Neg", g.op("Abs", x))))))


@register("aten::soft_margin_loss.default")
def aten_soft_margin_loss(g, self, target, reduction=1):
    """soft_margin_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor"""
    x, t = promote(g, self, target)
    return reduced(g, softplus(g, g.op("Neg", g.op("Mul", x, t))), reduction)


@register("aten::hinge_embedding_loss.default")
def aten_hinge_embedding_loss(g, self, target, margin=1.0, reduction=1):
    """hinge_embedding_loss(Tensor self, Tensor target, float margin=1., int reduction=Mean) -> Tensor"""
    x, t = promote(g, self, target)
    zero = c(g, 0.0, x)
    margin_part = g.op("Where", equal(g, t, 1.0), zero, relu(g, g.op("Sub", c(g, margin, x), x)))
    self_part = g.op("Where", equal(g, t, -1.0), zero, x)
    return reduced(g, g.op("Add", margin_part, self_part), reduction)


def equal(g: GraphBuilder, x: Value, value: float) -> Value:
    """x == value for floats, by comparisons every opset takes."""
    v = c(g, value, x)
    return g.op("Not", g.op("Or", g.op("Less", x, v), g.op("Greater", x, v)))


@register("aten::margin_ranking_loss.default")
def aten_margin_ranking_loss(g, input1, input2, target, margin=0.0, reduction=1):
    """margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0., int reduction=Mean) -> Tensor"""
    a, b, t = promote(g, input1, input2, target)
    # + margin (a Python float) promotes integer inputs to the default float, as in eager
    return reduced(g, relu(g, binary(g, "Add", g.op("Mul", g.op("Neg", t), g.op("Sub", a, b)), float(margin))),
                   reduction)


@register("aten::kl_div.default")
def aten_kl_div(g, self, target, reduction=1, *, log_target=False):
    """kl_div(Tensor self, Tensor target, int reduction=Mean, *, bool log_target=False) -> Tensor"""
    x, t = promote(g, self, target)
    if log_target:
        loss = g.op("Mul", g.op("Exp", t), g.op("Sub", t, x))
    else:
        t_log_t = g.op("Where", equal(g, t, 0.0), c(g, 0.0, t), g.op("Mul", t, g.op("Log", t)))
        loss = g.op("Sub", t_log_t, g.op("Mul", t, x))
    return reduced(g, loss, reduction)


@register("aten::poisson_nll_loss.default")
def aten_poisson_nll_loss(g, input, target, log_input, full, eps, reduction):
    """poisson_nll_loss(Tensor input, Tensor target, bool log_input, bool full, float eps, int reduction) -> Tensor"""
    x, t = promote(g, to_float(g, input), target)
    if log_input:
        loss = g.op("Sub", g.op("Exp", x), g.op("Mul", t, x))
    else:
        loss = g.op("Sub", x, g.op("Mul", t, g.op("Log", g.op("Add", x, c(g, eps, x)))))
    if full:
        two_pi_t = g.op("Mul", t, c(g, 2 * torch.pi, t))
        stirling = g.op("Add", g.op("Sub", g.op("Mul", t, g.op("Log", t)), t),
                        g.op("Mul", c(g, 0.5, t), g.op("Log", two_pi_t)))
        loss = g.op("Add", loss, g.op("Where", g.op("Greater", t, c(g, 1.0, t)), stirling, c(g, 0.0, t)))
    return reduced(g, loss, reduction)


def row_norm(g: GraphBuilder, x: Value, p: float, eps: float, keepdim: bool = False,
             dtype: torch.dtype | None = None) -> Value:
    """The p-norm over the last dim of x + eps (pairwise_distance's convention), summed in opmath
    (x + eps is rounded in the result dtype first, as ATen adds before it takes the norm). An integer
    or bool x (a difference that wrapped in its dtype) + eps promotes to the default float, as in
    torch. `dtype` is the half dtype a float32 x holds values of (see half_step)."""
    if eps:
        x = to_float(g, x)
    dtype = dtype if dtype is not None and dtype.is_floating_point else x.dtype
    d = g.op("Abs", half_step(g, g.op("Add", x, c(g, eps, x)), dtype)) if eps else g.op("Abs", x)
    return cast(g, norm_of_rows(g, cast(g, d, opmath(d.dtype)), p, keepdim), dtype)


def norm_of_rows(g: GraphBuilder, d: Value, p: float, keepdim: bool) -> Value:
    if p == 2:
        return g.op("Sqrt", axis_sum(g, g.op("Mul", d, d), -1, keepdim=keepdim))
    if p == 1:
        return axis_sum(g, d, -1, keepdim=keepdim)
    if p == float("inf"):
        raise NotImplementedError("pairwise distance with p=inf is not exported")
    if p == 0:
        nz = cast(g, g.op("Not", cast(g, cast(g, d, torch.bool), torch.bool)), d.dtype)
        return g.op("Sub", c(g, float(static_shape(d, "norm")[-1]), d), axis_sum(g, nz, -1, keepdim=keepdim))
    s = axis_sum(g, g.op("Pow", d, c(g, p, d)), -1, keepdim=keepdim)
    return g.op("Pow", s, c(g, 1.0 / p, s))


def pairwise_distance(g: GraphBuilder, x1: Value, x2: Value, p: float, eps: float, keepdim: bool) -> Value:
    a, b = promote(g, x1, x2)
    dtype = a.dtype  # half inputs: each step in float32, rounded as eager's
    diff = half_step(g, g.op("Sub", cast(g, a, opmath(dtype)), cast(g, b, opmath(dtype))), dtype)
    rank = max(a.rank, b.rank)
    if rank == 0 or diff.shape is None:
        raise NotImplementedError("pairwise_distance needs known shapes")
    # torch reduces over the last dim of the broadcast inputs, keeping 1-D inputs as one row
    return row_norm(g, diff, p, eps, keepdim, dtype)


@register("aten::pairwise_distance.default")
def aten_pairwise_distance(g, x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """pairwise_distance(Tensor x1, Tensor x2, float p=2., float eps=1e-06, bool keepdim=False) -> Tensor"""
    return pairwise_distance(g, x1, x2, p, eps, keepdim)


@register("aten::triplet_margin_loss.default")
def aten_triplet_margin_loss(g, anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=1):
    """triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1., float p=2., float eps=1e-06, bool swap=False, int reduction=Mean) -> Tensor"""
    d_pos = pairwise_distance(g, anchor, positive, p, eps, False)
    d_neg = pairwise_distance(g, anchor, negative, p, eps, False)
    if swap:
        d_neg = g.op("Min", d_neg, pairwise_distance(g, positive, negative, p, eps, False))
    # margin + d_pos - d_neg in eager's order, each step rounded in the dtype
    dtype = d_pos.dtype
    pos, neg = cast(g, d_pos, opmath(dtype)), cast(g, d_neg, opmath(dtype))
    gap = half_step(g, g.op("Sub", half_step(g, g.op("Add", pos, c(g, margin, pos)), dtype), neg), dtype)
    return reduced(g, cast(g, relu(g, gap), dtype), reduction)


@register("aten::cosine_embedding_loss.default")
def aten_cosine_embedding_loss(g, input1, input2, target, margin=0.0, reduction=1):
    """cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0., int reduction=Mean) -> Tensor"""
    a, b = promote(g, input1, input2)
    eps = 1e-12

    def total(x: Value) -> Value:
        """The sum over the last dim as torch's: integer and bool products (wrapped in their dtype) sum in
        int64, and go to the default float where eps or a float divides them."""
        if not (x.dtype.is_floating_point or x.dtype.is_complex):
            x = cast(g, x, torch.int64)
        return to_float(g, axis_sum(g, x, -1, keepdim=False))

    prod = total(aten_mul(g, a, b))
    mag = g.op("Mul", g.op("Add", total(aten_mul(g, a, a)), c(g, eps, prod)),
               g.op("Add", total(aten_mul(g, b, b)), c(g, eps, prod)))
    cos = g.op("Div", prod, g.op("Sqrt", mag))
    t = cast(g, target, cos.dtype)
    zero = c(g, 0.0, cos)
    pos = g.op("Where", equal(g, t, 1.0), g.op("Sub", c(g, 1.0, cos), cos), zero)
    neg = g.op("Where", equal(g, t, -1.0), relu(g, g.op("Sub", cos, c(g, margin, cos))), zero)
    return reduced(g, g.op("Add", pos, neg), reduction)


@register("aten::cosine_similarity.default")
def aten_cosine_similarity(g, x1, x2, dim=1, eps=1e-08):
    """cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor"""
    a, b = promote(g, x1, x2)
    ones = g.op("Add", g.op("Mul", a, c(g, 0.0, a)), g.op("Mul", b, c(g, 0.0, b)))
    a, b = g.op("Add", a, ones), g.op("Add", b, ones)  # broadcast both to one shape
    # (a symbolic shape keeps at least its rank, for the reductions along a negative dim)
    shape = static_shape(a, "cosine_similarity") if a.is_static else (None,) * max(x1.rank, x2.rank)
    a.shape = b.shape = shape
    # torch normalizes each input by max(||x||, eps) before the dot product; the norms and the sum
    # accumulate in opmath (float32 for half types) and round once, the divisions and products round
    # in the dtype (computed in opmath and rounded by half_step)
    dtype, acc = a.dtype, opmath(a.dtype)
    a, b = cast(g, a, acc), cast(g, b, acc)
    a.shape = b.shape = shape
    floor = c(g, torch.tensor(eps, dtype=dtype).item(), a)  # clamp_min's eps in the dtype

    def unit(x: Value) -> Value:
        norm = half_step(g, g.op("Sqrt", axis_sum(g, g.op("Mul", x, x), dim, keepdim=True)), dtype)
        return half_step(g, g.op("Div", x, g.op("Max", norm, floor)), dtype)

    prod = half_step(g, g.op("Mul", unit(a), unit(b)), dtype)
    prod.shape = shape
    return cast(g, axis_sum(g, prod, dim, keepdim=False), dtype)


# -- NLL and cross entropy: a one-hot mask over the class axis ----------------------------------------------


def class_last(g: GraphBuilder, x: Value) -> Value:
    """[N, C, d...] -> [N, d..., C]; [C] stays."""
    if x.rank <= 2:
        return x
    perm = [0] + list(range(2, x.rank)) + [1]
    out = g.op("Transpose", x, perm=perm)
    out.shape = tuple(x.shape[d] for d in perm)
    return out


def one_hot_of(g: GraphBuilder, target: Value, classes: SymInt) -> Value:
    """[...] int targets -> [..., C] bool (C an int, or a 0-d int64 value read from a symbolic shape)."""
    t = g.unsqueeze(target, [target.rank])
    return g.op("Equal", cast(g, t, torch.int64), arange_of(g, classes, has_range=False))


def per_class(g: GraphBuilder, value: float, classes: SymInt, like: Value) -> Value:
    """value / classes in like's dtype, classes an int or a 0-d int64 graph value."""
    if isinstance(classes, int):
        return c(g, value / classes, like)
    return g.op("Div", c(g, value, like), cast(g, classes, like.dtype))


def class_sum(g: GraphBuilder, x: Value) -> Value:
    """The sum over the last (class) axis: a MatMul with ones for static shapes (as ATen adds them up),
    ReduceSum for symbolic ones."""
    if x.is_static:
        return axis_sum(g, x, -1, keepdim=False)
    return g.reduce("ReduceSum", x, [x.rank - 1], keepdims=False)


def nll(g: GraphBuilder, logp: Value, target: Value, weight, reduction: int, ignore_index: int,
        smoothing: float = 0.0) -> Value:
    """NLL of log-probabilities logp [N, C, d...] (or [C]) at int targets; with label smoothing,
    the cross-entropy variant. Returns the loss, or (loss, per-element weight) unless reduced by mean."""
    if logp.rank == 1:  # unbatched: one row, and a 0-d loss when unreduced
        logp, target = reshape(g, logp, [1, -1]), reshape(g, target, [1])
        logp.shape = (1, logp.shape[1] if logp.shape is not None else None)
        if reduction == NONE:
            loss, w_t = nll(g, logp, target, weight, reduction, ignore_index, smoothing)
            return reshape(g, loss, []), w_t
    x = class_last(g, logp)
    classes = dim_size(g, x, x.rank - 1)
    hot = one_hot_of(g, target, classes)
    zero = c(g, 0.0, x)
    if weight is not None:
        w = cast(g, weight, x.dtype)
    elif isinstance(classes, int):
        w = g.const(torch.ones(classes, dtype=x.dtype))
    else:
        w = fill(g, reshape(g, classes, [1]), 1.0, x.dtype)
    valid = g.op("Not", g.op("Equal", cast(g, target, torch.int64), g.const(ignore_index, dtype=torch.int64)))
    w_hot = g.op("Where", hot, g.op("Add", w, g.op("Mul", x, zero)), zero)
    w_hot.shape = x.shape
    w_t = g.op("Where", valid, class_sum(g, w_hot), zero)
    picked = g.op("Where", hot, x, zero)
    picked.shape = x.shape
    loss = g.op("Neg", g.op("Mul", class_sum(g, picked), w_t))
    if smoothing:
        wx = g.op("Mul", x, w)
        wx.shape = x.shape
        smooth_loss = g.op("Where", valid, g.op("Neg", class_sum(g, wx)), zero)
        loss = g.op("Add", g.op("Mul", loss, c(g, 1.0 - smoothing, x)),
                    g.op("Mul", smooth_loss, per_class(g, smoothing, classes, x)))
    if reduction == MEAN:
        return g.op("Div", g.op("ReduceSum", loss, keepdims=0), g.op("ReduceSum", w_t, keepdims=0))
    return reduced(g, loss, reduction), w_t


@register("aten::nll_loss_nd.default", "aten::nll_loss.default")
def aten_nll_loss_nd(g, self, target, weight=None, reduction=1, ignore_index=-100):
    """nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor"""
    result = nll(g, self, target, weight, reduction, ignore_index)
    return result if reduction == MEAN else result[0]


@register("aten::cross_entropy_loss.default")
def aten_cross_entropy_loss(g, self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    """cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.) -> Tensor"""
    x = to_float(g, self)
    class_dim = 0 if x.rank == 1 else 1
    logp = g.softmax("LogSoftmax", x, norm_dim(class_dim, x.rank))
    logp.shape = x.shape
    if target.dtype.is_floating_point:
        return soft_cross_entropy(g, logp, target, weight, reduction, label_smoothing)
    result = nll(g, logp, target, weight, reduction, ignore_index, label_smoothing)
    return result if reduction == MEAN else result[0]


def soft_cross_entropy(g: GraphBuilder, logp: Value, target: Value, weight, reduction: int,
                       smoothing: float) -> Value:
    """Cross entropy against class probabilities."""
    classes = dim_size(g, logp, 0 if logp.rank == 1 else 1)
    t = cast(g, target, logp.dtype)
    if smoothing:
        t = g.op("Add", g.op("Mul", t, c(g, 1.0 - smoothing, t)), per_class(g, smoothing, classes, t))
    x = class_last(g, logp)
    if logp.is_static:
        t = reshape(g, t, list(logp.shape))
    else:  # target is logp's shape
        t.shape = logp.shape
    prod = g.op("Mul", x, class_last(g, t))
    if weight is not None:
        prod = g.op("Mul", prod, cast(g, weight, x.dtype))
    prod.shape = x.shape
    loss = g.op("Neg", axis_sum(g, prod, -1, keepdim=False))
    if reduction == MEAN and logp.rank > 1:
        batch = dim_size(g, logp, 0)
        count = c(g, float(batch), loss) if isinstance(batch, int) else cast(g, batch, loss.dtype)
        return g.op("Div", g.op("ReduceSum", loss, keepdims=0), count)
    return reduced(g, loss, reduction)
