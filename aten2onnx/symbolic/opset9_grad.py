"""Opset-9 base, gradients: the ATen *_backward ops of training graphs (activations, indexing, softmax,
losses, pooling, convolution, embedding, normalization), as the closed-form derivatives ATen computes."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic import opset9_gamma as gamma, opset9_loss as loss_ops
from aten2onnx.symbolic._helpers import (as_value, cast, element_count, fill, norm_dim, promote, reshape, scalar_type,
                                         transpose_perm)
from aten2onnx.symbolic.opset9_views import static_dim
from aten2onnx.symbolic.opset9_norm import static_shape

register = functools.partial(registry.register, opset=9)

NONE, MEAN = 0, 1


def c(g: GraphBuilder, value, like: Value) -> Value:
    return g.const(value, like=like)


def at_most(g: GraphBuilder, x: Value, bound: Value) -> Value:
    """x <= bound, false where x is NaN (Not(Greater) alone would say true)."""
    above = g.op("Greater", x, bound)
    if x.dtype.is_floating_point:
        above = g.op("Or", above, g.op("IsNaN", x))
    return g.op("Not", above)


def at_least(g: GraphBuilder, x: Value, bound: Value) -> Value:
    """x >= bound, false where x is NaN."""
    below = g.op("Less", x, bound)
    if x.dtype.is_floating_point:
        below = g.op("Or", below, g.op("IsNaN", x))
    return g.op("Not", below)


def erf(g: GraphBuilder, x: Value) -> Value:
    """Erf; onnxruntime has no float64 kernel for it, so float64 takes the series of opset9_gamma."""
    if x.dtype == torch.float64:
        return gamma.unary(g, gamma.erf, x)
    return g.op("Erf", x)


def per_axis(values, spatial: int) -> list[int]:
    """An int list argument for each spatial axis (one value stands for all)."""
    values = [int(v) for v in values]
    return values * spatial if len(values) == 1 else values


def masked(mask: list[bool], *results):
    """The results output_mask asks for; the others are undefined (None), as ATen leaves them."""
    return tuple(r() if wanted else None for wanted, r in zip(mask, results))


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half-precision statistics are accumulated in float32, as ATen does."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


# -- activations -------------------------------------------------------------------------------------------


@register("aten::threshold_backward.default")
def aten_threshold_backward(g, grad_output, self, threshold):
    """threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    return g.op("Where", at_most(g, x, as_value(g, threshold, x.dtype)), c(g, 0, grad), grad)


@register("aten::sigmoid_backward.default")
def aten_sigmoid_backward(g, grad_output, output):
    """sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor"""
    grad, y = promote(g, grad_output, output)
    return g.op("Mul", g.op("Mul", grad, g.op("Sub", c(g, 1.0, y), y)), y)


@register("aten::tanh_backward.default")
def aten_tanh_backward(g, grad_output, output):
    """tanh_backward(Tensor grad_output, Tensor output) -> Tensor"""
    grad, y = promote(g, grad_output, output)
    return g.op("Mul", grad, g.op("Sub", c(g, 1.0, y), g.op("Mul", y, y)))


@register("aten::gelu_backward.default")
def aten_gelu_backward(g, grad_output, self, *, approximate="none"):
    """gelu_backward(Tensor grad_output, Tensor self, *, str approximate="none") -> Tensor"""
    grad, x = promote(g, grad_output, self)
    if approximate == "none":
        cdf = g.op("Mul", c(g, 0.5, x), g.op("Add", c(g, 1.0, x), erf(g, g.op("Mul", x, c(g, math.sqrt(0.5), x)))))
        density = g.op("Exp", g.op("Mul", g.op("Mul", x, x), c(g, -0.5, x)))
        pdf = g.op("Mul", density, c(g, 1 / math.sqrt(2 * math.pi), x))
        return g.op("Mul", grad, g.op("Add", cdf, g.op("Mul", x, pdf)))
    if approximate != "tanh":
        raise NotImplementedError(f"gelu_backward with approximate={approximate!r}")
    beta, kappa = math.sqrt(2 / math.pi), 0.044715
    x_sq = g.op("Mul", x, x)
    inner = g.op("Mul", g.op("Add", x, g.op("Mul", g.op("Mul", x_sq, x), c(g, kappa, x))), c(g, beta, x))
    t = g.op("Tanh", inner)
    left = g.op("Mul", c(g, 0.5, x), g.op("Add", c(g, 1.0, x), t))
    slope = g.op("Mul", c(g, beta, x), g.op("Add", c(g, 1.0, x), g.op("Mul", x_sq, c(g, 3 * kappa, x))))
    right = g.op("Mul", g.op("Mul", g.op("Mul", c(g, 0.5, x), x), g.op("Sub", c(g, 1.0, x), g.op("Mul", t, t))), slope)
    return g.op("Mul", grad, g.op("Add", left, right))


@register("aten::silu_backward.default")
def aten_silu_backward(g, grad_output, self):
    """silu_backward(Tensor grad_output, Tensor self) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    sig = g.op("Sigmoid", x)
    slope = g.op("Add", c(g, 1.0, x), g.op("Mul", x, g.op("Sub", c(g, 1.0, x), sig)))
    return g.op("Mul", g.op("Mul", grad, sig), slope)


@register("aten::hardtanh_backward.default")
def aten_hardtanh_backward(g, grad_output, self, min_val, max_val):
    """hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    outside = g.op("Or", at_most(g, x, as_value(g, min_val, x.dtype)), at_least(g, x, as_value(g, max_val, x.dtype)))
    return g.op("Where", outside, c(g, 0, grad), grad)


@register("aten::leaky_relu_backward.default")
def aten_leaky_relu_backward(g, grad_output, self, negative_slope, self_is_result):
    """leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, bool self_is_result) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    negative = g.op("Mul", grad, as_value(g, negative_slope, grad.dtype))
    return g.op("Where", g.op("Greater", x, c(g, 0, x)), grad, negative)


@register("aten::elu_backward.default")
def aten_elu_backward(g, grad_output, alpha, scale, input_scale, is_result, self_or_result):
    """elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, bool is_result, Tensor self_or_result) -> Tensor"""
    grad, x = promote(g, grad_output, self_or_result)
    neg_coef, input_coef = c(g, float(alpha) * float(scale), x), c(g, float(input_scale), x)
    if is_result:  # x is the output: the derivative is input_scale * (out + alpha * scale)
        neg = g.op("Mul", g.op("Mul", grad, input_coef), g.op("Add", x, neg_coef))
    else:
        neg = g.op("Mul", g.op("Mul", g.op("Mul", grad, input_coef), neg_coef), g.op("Exp", g.op("Mul", x, input_coef)))
    return g.op("Where", at_most(g, x, c(g, 0.0, x)), neg, g.op("Mul", grad, c(g, float(scale), x)))


@register("aten::softplus_backward.default")
def aten_softplus_backward(g, grad_output, self, beta, threshold):
    """softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    bx = g.op("Mul", x, c(g, float(beta), x))
    z = g.op("Exp", bx)
    soft = g.op("Div", g.op("Mul", grad, z), g.op("Add", z, c(g, 1.0, z)))
    return g.op("Where", g.op("Greater", bx, c(g, float(threshold), x)), grad, soft)


@register("aten::hardsigmoid_backward.default")
def aten_hardsigmoid_backward(g, grad_output, self):
    """hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    inside = g.op("And", g.op("Greater", x, c(g, -3.0, x)), g.op("Less", x, c(g, 3.0, x)))
    return g.op("Where", inside, g.op("Mul", grad, c(g, 1 / 6, grad)), c(g, 0.0, grad))


@register("aten::hardswish_backward.default")
def aten_hardswish_backward(g, grad_output, self):
    """hardswish_backward(Tensor grad_output, Tensor self) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    ramp = g.op("Mul", grad, g.op("Add", g.op("Div", x, c(g, 3.0, x)), c(g, 0.5, x)))
    upper = g.op("Where", g.op("Less", x, c(g, 3.0, x)), ramp, grad)
    return g.op("Where", at_most(g, x, c(g, -3.0, x)), c(g, 0.0, grad), upper)


@register("aten::mish_backward.default")
def aten_mish_backward(g, grad_output, self):
    """mish_backward(Tensor grad_output, Tensor self) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    sig = g.op("Sigmoid", x)
    t = g.op("Tanh", loss_ops.softplus(g, x))
    slope = g.op("Mul", g.op("Mul", x, sig), g.op("Sub", c(g, 1.0, x), g.op("Mul", t, t)))
    return g.op("Mul", grad, g.op("Add", t, slope))


@register("aten::logit_backward.default")
def aten_logit_backward(g, grad_output, self, eps=None):
    """logit_backward(Tensor grad_output, Tensor self, float? eps=None) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    deriv = g.op("Div", grad, g.op("Mul", x, g.op("Sub", c(g, 1.0, x), x)))
    if eps is None or eps < 0:  # no clamping in the forward: NaN outside [0, 1]
        lo, hi, fill = 0.0, 1.0, math.nan
    else:  # clamped to [eps, 1 - eps] in the forward: no gradient outside
        lo, hi, fill = eps, 1.0 - eps, 0.0
    outside = g.op("Or", g.op("Less", x, c(g, lo, x)), g.op("Greater", x, c(g, hi, x)))
    return g.op("Where", outside, c(g, fill, x), deriv)


@register("aten::log_sigmoid_backward.default")
def aten_log_sigmoid_backward(g, grad_output, self, buffer):
    """log_sigmoid_backward(Tensor grad_output, Tensor self, Tensor buffer) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    # d/dx log(sigmoid(x)) = sigmoid(-x), formed from exp(-|x|) so that it never overflows
    z = g.op("Exp", g.op("Neg", g.op("Abs", x)))
    frac = g.op("Div", z, g.op("Add", c(g, 1.0, z), z))
    negative = g.op("Less", x, c(g, 0.0, x))
    return g.op("Mul", grad, g.op("Where", negative, g.op("Sub", c(g, 1.0, x), frac), frac))


@register("aten::glu_backward.default")
def aten_glu_backward(g, grad_output, self, dim):
    """glu_backward(Tensor grad_output, Tensor self, int dim) -> Tensor"""
    grad, x = promote(g, grad_output, self)
    dim = norm_dim(dim, x.rank)
    half = static_dim(x, dim, "glu_backward") // 2
    # Gather with constant ranges reads the same at every opset (Split changed at 13 and 18)
    a = g.op("Gather", x, g.const(list(range(half)), dtype=torch.int64), axis=dim)
    b = g.op("Gather", x, g.const(list(range(half, 2 * half)), dtype=torch.int64), axis=dim)
    sig = g.op("Sigmoid", b)
    grad_a = g.op("Mul", sig, grad)
    grad_b = g.op("Mul", g.op("Mul", g.op("Mul", g.op("Sub", c(g, 1.0, sig), sig), sig), a), grad)
    return g.op("Concat", grad_a, grad_b, axis=dim)


@register("aten::_prelu_kernel_backward.default")
def aten_prelu_kernel_backward(g, grad_output, self, weight):
    """_prelu_kernel_backward(Tensor grad_output, Tensor self, Tensor weight) -> (Tensor, Tensor)"""
    grad, x, w = promote(g, grad_output, self, weight)
    positive = g.op("Greater", x, c(g, 0.0, x))
    return (g.op("Where", positive, grad, g.op("Mul", w, grad)),
            g.op("Where", positive, c(g, 0.0, x), g.op("Mul", x, grad)))


@register("aten::native_dropout_backward.default")
def aten_native_dropout_backward(g, grad_output, mask, scale):
    """native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor"""
    grad, keep = promote(g, grad_output, mask)
    return g.op("Mul", g.op("Mul", grad, keep), c(g, float(scale), grad))


# -- indexing: the gradient is zeros with grad_output put where the forward read --------------------------------


def placed(g: GraphBuilder, part: Value, shape: list[int], dim: int, start: int, length: int) -> Value:
    """Zeros of `shape` with `part` (of size `length` along dim) at `start`, by Concat along dim."""
    def zeros(n: int) -> Value:
        return fill(g, [n if d == dim else s for d, s in enumerate(shape)], 0, part.dtype)
    rest = shape[dim] - start - length
    parts = ([zeros(start)] if start > 0 else []) + [part] + ([zeros(rest)] if rest > 0 else [])
    return g.op("Concat", *parts, axis=dim) if len(parts) > 1 else part


def static_sizes(sizes, what: str) -> list[int]:
    if not all(isinstance(s, int) for s in sizes):
        raise NotImplementedError(f"{what} with dynamic input_sizes")
    return list(sizes)


@register("aten::select_backward.default")
def aten_select_backward(g, grad_output, input_sizes, dim, index):
    """select_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt index) -> Tensor"""
    shape = static_sizes(input_sizes, "select_backward")
    dim = norm_dim(dim, len(shape))
    if not isinstance(index, int):
        raise NotImplementedError("select_backward at a dynamic index")
    index = index + shape[dim] if index < 0 else index
    row = reshape(g, grad_output, [1 if d == dim else s for d, s in enumerate(shape)])
    return placed(g, row, shape, dim, index, 1)


@register("aten::slice_backward.default")
def aten_slice_backward(g, grad_output, input_sizes, dim, start, end, step):
    """slice_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt start, SymInt end, SymInt step) -> Tensor"""
    shape = static_sizes(input_sizes, "slice_backward")
    if not all(isinstance(v, int) for v in (start, end, step)):
        raise NotImplementedError("slice_backward with dynamic bounds")
    dim = norm_dim(dim, len(shape))
    n = shape[dim]
    start, end, _ = slice(start, end).indices(n)  # Python's clamping, as ATen's slice does
    count = len(range(start, end, step))
    if count == 0:
        return fill(g, shape, 0, grad_output.dtype)
    part, length = grad_output, count
    if step > 1:  # each row followed by step - 1 zero rows, cut after the last row
        rows = [count if d == dim else s for d, s in enumerate(shape)]
        spaced = rows[:dim + 1] + [1] + rows[dim + 1:]
        gap = fill(g, rows[:dim + 1] + [step - 1] + rows[dim + 1:], 0, grad_output.dtype)
        part = g.op("Concat", reshape(g, grad_output, spaced), gap, axis=dim + 1)
        part = reshape(g, part, rows[:dim] + [count * step] + rows[dim + 1:])
        length = (count - 1) * step + 1
        part = g.op("Gather", part, g.const(list(range(length)), dtype=torch.int64), axis=dim)
    return placed(g, part, shape, dim, start, length)


# -- softmax -----------------------------------------------------------------------------------------------


def log_softmax_backward(g: GraphBuilder, grad_output: Value, output: Value, dim: int, input_dtype) -> Value:
    grad, out = promote(g, grad_output, output)
    total = g.reduce("ReduceSum", grad, [norm_dim(dim, out.rank)], True)
    result = g.op("Sub", grad, g.op("Mul", g.op("Exp", out), total))
    return cast(g, result, scalar_type(input_dtype, grad_output.dtype))


@register("aten::_log_softmax_backward_data.default")
def aten__log_softmax_backward_data(g, grad_output, output, dim, input_dtype):
    """_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor"""
    return log_softmax_backward(g, grad_output, output, dim, input_dtype)


# -- losses: the elementwise derivative, scaled by 1/numel under reduction=mean -------------------------------


def norm_factor(g: GraphBuilder, value: float, self: Value, reduction: int, like: Value) -> Value:
    """value, divided by self's element count when the loss was a mean."""
    if reduction != MEAN:
        return c(g, value, like)
    if self.is_static:
        return c(g, value / max(math.prod(self.shape), 1), like)
    return g.op("Div", c(g, value, like), cast(g, g.op("Size", self), like.dtype))


@register("aten::mse_loss_backward.default")
def aten_mse_loss_backward(g, grad_output, self, target, reduction):
    """mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor"""
    x, t, grad = promote(g, self, target, grad_output)
    return g.op("Mul", g.op("Mul", norm_factor(g, 2.0, self, reduction, x), g.op("Sub", x, t)), grad)


def smooth_backward(g: GraphBuilder, grad_output, self, target, reduction: int, beta: float, *, huber: bool) -> Value:
    """Linear part (|d| >= beta): sign(d), times delta for Huber; quadratic part: d / beta for
    smooth L1, d for Huber."""
    x, t, grad = promote(g, self, target, grad_output)
    d = g.op("Sub", x, t)
    norm = norm_factor(g, 1.0, self, reduction, x)
    scaled = g.op("Mul", norm, grad)
    edge = g.op("Mul", scaled, c(g, beta, x)) if huber else scaled
    inner = g.op("Mul", g.op("Mul", norm, d), grad)
    if not huber:
        inner = g.op("Div", inner, c(g, beta, x))
    # (at |d| == beta both parts agree, so which one the boundary takes does not matter)
    below, above = at_most(g, d, c(g, -beta, x)), at_least(g, d, c(g, beta, x))
    return g.op("Where", below, g.op("Neg", edge), g.op("Where", above, edge, inner))


@register("aten::smooth_l1_loss_backward.default")
def aten_smooth_l1_loss_backward(g, grad_output, self, target, reduction, beta):
    """smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, float beta) -> Tensor"""
    return smooth_backward(g, grad_output, self, target, reduction, beta, huber=False)


@register("aten::huber_loss_backward.default")
def aten_huber_loss_backward(g, grad_output, self, target, reduction, delta):
    """huber_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, float delta) -> Tensor"""
    return smooth_backward(g, grad_output, self, target, reduction, delta, huber=True)


@register("aten::soft_margin_loss_backward.default")
def aten_soft_margin_loss_backward(g, grad_output, self, target, reduction):
    """soft_margin_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor"""
    x, t, grad = promote(g, self, target, grad_output)
    z = g.op("Exp", g.op("Neg", g.op("Mul", t, x)))
    norm = g.op("Neg", norm_factor(g, 1.0, self, reduction, x))
    return g.op("Mul", g.op("Div", g.op("Mul", g.op("Mul", norm, t), z), g.op("Add", c(g, 1.0, z), z)), grad)


@register("aten::binary_cross_entropy_backward.default")
def aten_binary_cross_entropy_backward(g, grad_output, self, target, weight=None, reduction=1):
    """binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean) -> Tensor"""
    x, t, grad = promote(g, self, target, grad_output)
    # ATen bounds the denominator below by 1e-12, so that 0 and 1 give finite gradients
    denom = g.op("Max", g.op("Mul", g.op("Sub", c(g, 1.0, x), x), x), c(g, 1e-12, x))
    out = g.op("Div", g.op("Mul", grad, g.op("Sub", x, t)), denom)
    if weight is not None:
        out = g.op("Mul", out, cast(g, weight, x.dtype))
    return g.op("Mul", out, norm_factor(g, 1.0, self, reduction, x)) if reduction == MEAN else out


def nll_forward(g: GraphBuilder, self: Value, target: Value, weight, reduction: int, ignore_index: int) -> tuple:
    """(loss, total weight): the forward that saves nll_loss_backward's total_weight, the sum of the
    weights of the targets not ignored (ATen gives 0 for an unreduced batch)."""
    loss = loss_ops.aten_nll_loss_nd(g, self, target, weight, reduction, ignore_index)
    dtype = self.dtype
    if reduction == NONE and self.rank > 1:
        return loss, g.const(0.0, dtype=dtype)
    t = cast(g, target, torch.int64)
    kept = g.op("Not", g.op("Equal", t, g.const(ignore_index, dtype=torch.int64)))
    if weight is None:
        per_target = cast(g, kept, dtype)
    else:  # ignored targets may be out of range: gather at class 0 there, then drop
        safe = g.op("Where", kept, t, g.const(0, dtype=torch.int64))
        picked = g.op("Gather", cast(g, weight, dtype), safe, axis=0)
        per_target = g.op("Where", kept, picked, g.const(0.0, dtype=dtype))
    total = per_target if per_target.rank == 0 else g.op("ReduceSum", per_target, keepdims=0)
    return loss, total


@register("aten::nll_loss_forward.default")
def aten_nll_loss_forward(g, self, target, weight, reduction, ignore_index):
    """nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)"""
    return nll_forward(g, self, target, weight, reduction, ignore_index)


@register("aten::nll_loss2d_forward.default")
def aten_nll_loss2d_forward(g, self, target, weight, reduction, ignore_index):
    """nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)"""
    return nll_forward(g, self, target, weight, reduction, ignore_index)


def nll_backward(g: GraphBuilder, grad_output: Value, self: Value, target: Value, weight, reduction: int,
                 ignore_index: int, total_weight: Value) -> Value:
    """-weight[target] * grad (divided by the total weight under mean) at each row's target class,
    by a one-hot mask laid along the class axis; zero elsewhere and at ignored targets."""
    rank = self.rank
    lay = [1] * (rank - 2)  # trailing dims the class axis (1, or 0 when unbatched) is followed by
    classes = static_dim(self, 0 if rank == 1 else 1, "nll_loss_backward")
    t = cast(g, target, torch.int64)
    if rank > 1:
        t = g.unsqueeze(t, [1])
    hot = g.op("Equal", t, g.const(torch.arange(classes).reshape([classes] + lay)))
    kept = g.op("And", hot, g.op("Not", g.op("Equal", t, g.const(ignore_index, dtype=torch.int64))))
    grad = g.op("Neg", cast(g, grad_output, self.dtype))
    if reduction == NONE and rank > 1:
        grad = g.unsqueeze(grad, [1])
    elif reduction == MEAN:
        grad = g.op("Div", grad, cast(g, total_weight, self.dtype))
    if weight is not None:
        grad = g.op("Mul", reshape(g, cast(g, weight, self.dtype), [classes] + lay), grad)
    return g.op("Where", kept, grad, c(g, 0.0, grad))


@register("aten::nll_loss_backward.default")
def aten_nll_loss_backward(g, grad_output, self, target, weight, reduction, ignore_index, total_weight):
    """nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor"""
    return nll_backward(g, grad_output, self, target, weight, reduction, ignore_index, total_weight)


@register("aten::nll_loss2d_backward.default")
def aten_nll_loss2d_backward(g, grad_output, self, target, weight, reduction, ignore_index, total_weight):
    """nll_loss2d_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor"""
    return nll_backward(g, grad_output, self, target, weight, reduction, ignore_index, total_weight)


# -- pooling: average pools are linear and separable, so their gradient applies each axis's transposed matrix --


def along(g: GraphBuilder, x: Value, rank: int, axis: int, matrix: torch.Tensor) -> Value:
    """x (of rank `rank`) with one axis contracted against a constant matrix [size there, new size], by
    MatMul (the axis moved last and back by Transpose: the same at every opset)."""
    m = g.const(matrix.to(x.dtype))
    axis = norm_dim(axis, rank)
    if axis == rank - 1:
        return g.op("MatMul", x, m)
    perm = transpose_perm(rank, axis, rank - 1)
    return g.op("Transpose", g.op("MatMul", g.op("Transpose", x, perm=perm), m), perm=perm)


def pool_transposed(g: GraphBuilder, grad_output: Value, self: Value, factors: list[torch.Tensor]) -> Value:
    """grad_output through the transposes of the per-axis pooling matrices [in, out] of the last axes."""
    grad = cast(g, grad_output, self.dtype)
    for k, matrix in enumerate(factors):
        grad = along(g, grad, self.rank, k - len(factors), matrix.T)
    return grad


@register("aten::_adaptive_avg_pool2d_backward.default")
def aten__adaptive_avg_pool2d_backward(g, grad_output, self):
    """_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor"""
    sizes = static_shape(self, "_adaptive_avg_pool2d_backward")[-2:]
    outs = static_shape(grad_output, "_adaptive_avg_pool2d_backward")[-2:]
    factors = [F.adaptive_avg_pool1d(torch.eye(n, dtype=torch.float64).reshape(n, 1, n), o).reshape(n, o)
               for n, o in zip(sizes, outs)]
    return pool_transposed(g, grad_output, self, factors)


def avg_pool_factor(n: int, kernel: int, stride: int, pad: int, ceil_mode: bool, count_include_pad: bool,
                    divisor: int | None, *, first: bool) -> torch.Tensor:
    """avg_pool2d's matrix [n, out] along its first (or second) spatial axis, pooling an identity basis."""
    def pair(v, rest):
        return (v, rest) if first else (rest, v)
    basis = torch.eye(n, dtype=torch.float64).reshape((n, 1) + pair(n, 1))
    pooled = F.avg_pool2d(basis, pair(kernel, 1), pair(stride, 1), pair(pad, 0), ceil_mode, count_include_pad, divisor)
    return pooled.reshape(n, -1)


@register("aten::avg_pool2d_backward.default")
def aten_avg_pool2d_backward(g, grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                             divisor_override):
    """avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor"""
    sizes = static_shape(self, "avg_pool2d_backward")[-2:]
    kernel = per_axis(kernel_size, 2)
    strides = per_axis(stride, 2) if stride else kernel
    pads = per_axis(padding, 2)
    # ATen divides each window by the product of its per-axis extents (or by the override), so each
    # axis's factor is pooling along it alone, the other axis a window of 1 whose divisor is 1
    factors = [avg_pool_factor(n, kernel[axis], strides[axis], pads[axis], ceil_mode, count_include_pad,
                               divisor_override if axis == 0 else (None if divisor_override is None else 1),
                               first=axis == 0)
               for axis, n in enumerate(sizes)]
    return pool_transposed(g, grad_output, self, factors)


# -- convolution -------------------------------------------------------------------------------------------


def batched_shape(x: Value) -> list[int]:
    """The shape of a batched convolution operand after its batch dim, which must be static (the batch
    dim may be symbolic)."""
    if x.shape is None or not all(isinstance(d, int) for d in x.shape[1:]):
        raise NotImplementedError("convolution_backward with symbolic channel or spatial sizes")
    return list(x.shape[1:])


def conv_weight_grad(g: GraphBuilder, input: Value, grad: Value, stride: list[int], padding: list[int],
                     dilation: list[int], groups: int, kernel: list[int]) -> Value:
    """The weight gradient [O, C/groups, *kernel] of a convolution of input [N, C, *] giving grad [N, O, *]:
    a correlation of input with grad over the batch, i.e. one grouped Conv with batch and channels
    swapped, stride and dilation exchanged, cropped to the kernel."""
    ch, *sizes = batched_shape(input)
    out_ch, *outs = batched_shape(grad)
    spatial = len(sizes)
    cg, og = ch // groups, out_ch // groups
    rest = list(range(3, 3 + spatial))
    # the batch size may be symbolic: -1 stands for it
    x = g.op("Transpose", reshape(g, input, [-1, groups, cg] + sizes), perm=[2, 1, 0] + rest)
    x = reshape(g, x, [cg, -1] + sizes)
    w = g.op("Transpose", reshape(g, grad, [-1, groups, og] + outs), perm=[1, 2, 0] + rest)
    w = reshape(g, w, [out_ch, -1] + outs)
    out = g.op("Conv", x, w, strides=list(dilation), dilations=list(stride), pads=list(padding) * 2, group=groups,
               kernel_shape=outs)
    for i in range(spatial):
        reach = (sizes[i] + 2 * padding[i] - stride[i] * (outs[i] - 1) - 1) // dilation[i] + 1
        if reach > kernel[i]:  # the correlation runs past the kernel where the stride left a remainder
            out = g.op("Gather", out, g.const(list(range(kernel[i])), dtype=torch.int64), axis=2 + i)
    return g.op("Transpose", out, perm=[1, 0] + list(range(2, 2 + spatial)))


def crop(g: GraphBuilder, x: Value, have: list[int], want: list[int]) -> Value:
    """The leading `want` elements of each spatial axis (from 2) of x, whose sizes are `have`."""
    for i, (h, w) in enumerate(zip(have, want)):
        if h > w:
            x = g.op("Gather", x, g.const(list(range(w)), dtype=torch.int64), axis=2 + i)
    return x


@register("aten::convolution_backward.default")
def aten_convolution_backward(g, grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                              output_padding, groups, output_mask):
    """convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)"""
    if input.rank != weight.rank:
        raise NotImplementedError("convolution_backward of an unbatched input")
    kernel = static_shape(weight, "convolution_backward")[2:]
    spatial = len(kernel)
    stride, padding, dilation = per_axis(stride, spatial), per_axis(padding, spatial), per_axis(dilation, spatial)
    sizes = batched_shape(input)[1:]
    outs = batched_shape(grad_output)[1:]
    groups = int(groups)
    grad = cast(g, grad_output, input.dtype)

    def grad_input():
        if transposed:  # the adjoint of a transposed convolution is the convolution itself
            out = g.op("Conv", grad, weight, strides=stride, pads=padding * 2, dilations=dilation, group=groups,
                       kernel_shape=kernel)
            reach = [(o + 2 * p - d * (k - 1) - 1) // s + 1
                     for o, p, d, k, s in zip(outs, padding, dilation, kernel, stride)]
            return crop(g, out, reach, sizes)
        # ConvTranspose with the forward weight; output_padding makes up the rows the stride skipped
        extra = [n - ((o - 1) * s - 2 * p + d * (k - 1) + 1)
                 for n, o, s, p, d, k in zip(sizes, outs, stride, padding, dilation, kernel)]
        return g.op("ConvTranspose", grad, weight, strides=stride, pads=padding * 2, dilations=dilation,
                    group=groups, output_padding=extra, kernel_shape=kernel)

    def grad_weight():
        if transposed:  # the roles of input and output swap
            return conv_weight_grad(g, grad, input, stride, padding, dilation, groups, kernel)
        return conv_weight_grad(g, input, grad, stride, padding, dilation, groups, kernel)

    def grad_bias():
        if grad.is_static:
            out = channel_sum(g, grad, list(grad.shape))
        else:
            out = g.reduce("ReduceSum", grad, [0] + list(range(2, grad.rank)), keepdims=False)
        return reshape(g, out, list(bias_sizes)) if bias_sizes is not None else out

    return masked(output_mask, grad_input, grad_weight, grad_bias)


# -- embedding ---------------------------------------------------------------------------------------------


def embedding_rows(g: GraphBuilder, grad_output: Value, indices: Value,
                   padding_idx: int) -> tuple[Value, Value, Value, int]:
    """(grad rows [L, D] with the padding positions zeroed, indices [L, 1] int64, those kept [L, 1], D)."""
    dim = static_dim(grad_output, grad_output.rank - 1, "embedding_dense_backward")
    rows = reshape(g, grad_output, [-1, dim])
    idx = reshape(g, cast(g, indices, torch.int64), [-1, 1])
    kept = g.op("Not", g.op("Equal", idx, g.const(int(padding_idx), dtype=torch.int64)))
    return g.op("Where", kept, rows, c(g, 0.0, rows)), idx, kept, dim


@register("aten::embedding_dense_backward.default")
def aten_embedding_dense_backward(g, grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor"""
    # Up to opset 15 no scatter adds repeated indices up: a one-hot [L, num_weights] matrix sums the rows
    # by MatMul, so an inf or NaN in one row of grad_output reaches every row of the result.
    if not isinstance(num_weights, int):
        raise NotImplementedError("embedding_dense_backward with a dynamic num_weights")
    rows, idx, _, _ = embedding_rows(g, grad_output, indices, padding_idx)
    hot = g.op("Equal", idx, g.const(list(range(num_weights)), dtype=torch.int64))
    hot_t = g.op("Transpose", cast(g, hot, rows.dtype), perm=[1, 0])
    out = g.op("MatMul", hot_t, rows)
    if scale_grad_by_freq:
        ones = cast(g, g.op("Equal", idx, idx), rows.dtype)  # a column of ones, as long as the indices
        counts = g.op("MatMul", hot_t, ones)
        out = g.op("Div", out, g.op("Max", counts, c(g, 1.0, counts)))
    return out


# -- normalization -----------------------------------------------------------------------------------------


def channel_sum(g: GraphBuilder, x: Value, shape: list[int], axis: int = 1) -> Value:
    """The sum of x (of static `shape`) over every axis but `axis`: [shape[axis]], by one MatMul."""
    n = shape[axis]
    if len(shape) == 1:
        return x
    if axis != 0:
        x = g.op("Transpose", x, perm=[axis] + [d for d in range(len(shape)) if d != axis])
    rest = math.prod(shape) // max(n, 1)
    flat = reshape(g, x, [n, rest])
    return reshape(g, g.op("MatMul", flat, g.const(torch.ones(rest, 1, dtype=x.dtype))), [n])


def row_mean(g: GraphBuilder, x2: Value, cols: int) -> Value:
    """The mean of each row of a [rows, cols] x2: [rows, 1]."""
    return g.op("MatMul", x2, g.const(torch.full((cols, 1), 1.0 / max(cols, 1), dtype=x2.dtype)))


def normalized_grad(g: GraphBuilder, gw: Value, xhat: Value, rstd: Value, cols: int) -> Value:
    """The gradient through (x - mean) * rstd over each row, given dL/dxhat = gw:
    rstd * (gw - mean(gw) - xhat * mean(gw * xhat))."""
    centered = g.op("Sub", gw, row_mean(g, gw, cols))
    return g.op("Mul", rstd, g.op("Sub", centered, g.op("Mul", xhat, row_mean(g, g.op("Mul", gw, xhat), cols))))


@register("aten::native_layer_norm_backward.default")
def aten_native_layer_norm_backward(g, grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
    """native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)"""
    shape = static_shape(input, "native_layer_norm_backward")
    inner = [int(s) for s in normalized_shape]
    rows, cols = math.prod(shape[:len(shape) - len(inner)]), math.prod(inner)
    dtype, acc = input.dtype, acc_dtype(input.dtype)
    x2 = reshape(g, cast(g, input, acc), [rows, cols])
    dy2 = reshape(g, cast(g, grad_out, acc), [rows, cols])
    rstd2 = reshape(g, cast(g, rstd, acc), [rows, 1])
    xhat = g.op("Mul", g.op("Sub", x2, reshape(g, cast(g, mean, acc), [rows, 1])), rstd2)
    ones_row = g.const(torch.ones(1, rows, dtype=acc))

    def grad_input():
        gw = dy2 if weight is None else g.op("Mul", dy2, reshape(g, cast(g, weight, acc), [1, cols]))
        return cast(g, reshape(g, normalized_grad(g, gw, xhat, rstd2, cols), shape), dtype)

    def param_grad(per_element: Value, like) -> Value:
        summed = reshape(g, g.op("MatMul", ones_row, per_element), inner)
        return cast(g, summed, like.dtype if like is not None else dtype)

    return masked(output_mask, grad_input, lambda: param_grad(g.op("Mul", dy2, xhat), weight),
                  lambda: param_grad(dy2, bias))


@register("aten::native_group_norm_backward.default")
def aten_native_group_norm_backward(g, grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
    """native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)"""
    if not all(isinstance(s, int) for s in (N, C, HxW)):
        raise NotImplementedError("native_group_norm_backward with dynamic sizes")
    shape = static_shape(input, "native_group_norm_backward")
    rows, cols = N * group, (C // group) * HxW
    dtype, acc = input.dtype, acc_dtype(input.dtype)
    dy = cast(g, grad_out, acc)
    x2 = reshape(g, cast(g, input, acc), [rows, cols])
    dy2 = reshape(g, dy, [rows, cols])
    rstd2 = reshape(g, cast(g, rstd, acc), [rows, 1])
    xhat = g.op("Mul", g.op("Sub", x2, reshape(g, cast(g, mean, acc), [rows, 1])), rstd2)

    def grad_input():
        gw = dy2
        if weight is not None:
            per_channel = g.op("Mul", reshape(g, dy, [N, C, HxW]), reshape(g, cast(g, weight, acc), [C, 1]))
            gw = reshape(g, per_channel, [rows, cols])
        return cast(g, reshape(g, normalized_grad(g, gw, xhat, rstd2, cols), shape), dtype)

    def param_grad(per_element: Value) -> Value:
        out = channel_sum(g, reshape(g, per_element, [N, C, HxW]), [N, C, HxW])
        return cast(g, out, weight.dtype if weight is not None else dtype)

    return masked(output_mask, grad_input, lambda: param_grad(g.op("Mul", dy2, xhat)), lambda: param_grad(dy2))


def batch_norm_backward(g: GraphBuilder, grad_out: Value, input: Value, weight, running_mean, running_var, save_mean,
                        save_invstd, train: bool, eps: float, output_mask: list[bool]) -> tuple:
    """With batch statistics (train) the gradient also flows through the mean and variance;
    with running statistics it is grad * invstd * weight. Symbolic sizes sum by ReduceSum and take
    the element count from the shape."""
    rank = input.rank
    dtype, acc = input.dtype, acc_dtype(input.dtype)
    x, dy = cast(g, input, acc), cast(g, grad_out, acc)
    if input.is_static:
        shape = list(input.shape)
        channels = shape[1]
        count: int | Value = math.prod(shape) // max(channels, 1)

        def sum_channels(v: Value) -> Value:
            return channel_sum(g, v, shape)
    else:
        axes = [0] + list(range(2, rank))
        channels = -1
        count = element_count(g, input, axes, acc)

        def sum_channels(v: Value) -> Value:
            return g.reduce("ReduceSum", v, axes, keepdims=False)

    def laid(p: Value) -> Value:
        return reshape(g, p, [channels] + [1] * (rank - 2))

    if train:
        mean, invstd = cast(g, save_mean, acc), cast(g, save_invstd, acc)
    else:
        mean = cast(g, running_mean, acc)
        invstd = g.op("Reciprocal", g.op("Sqrt", g.op("Add", cast(g, running_var, acc), g.const(eps, dtype=acc))))
    if weight is not None:
        w = cast(g, weight, acc)
    elif channels != -1:
        w = g.const(torch.ones(channels, dtype=acc))
    else:
        w = g.const(1.0, dtype=acc)
    centered = g.op("Sub", x, laid(mean))
    sum_dy = sum_channels(dy)
    dot = sum_channels(g.op("Mul", centered, dy))
    n = g.const(float(count), dtype=acc) if isinstance(count, int) else count

    def grad_input():
        if not train:
            return cast(g, g.op("Mul", dy, laid(g.op("Mul", invstd, w))), dtype)
        proj = g.op("Div", g.op("Mul", dot, g.op("Mul", invstd, invstd)), n)
        mean_dy = g.op("Div", sum_dy, n)
        inner = g.op("Sub", g.op("Sub", dy, laid(mean_dy)), g.op("Mul", centered, laid(proj)))
        return cast(g, g.op("Mul", inner, laid(g.op("Mul", invstd, w))), dtype)

    param_dtype = weight.dtype if weight is not None else dtype
    return masked(output_mask, grad_input, lambda: cast(g, g.op("Mul", dot, invstd), param_dtype),
                  lambda: cast(g, sum_dy, param_dtype))


@register("aten::native_batch_norm_backward.default")
def aten_native_batch_norm_backward(g, grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
                                    train, eps, output_mask):
    """native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)"""
    return batch_norm_backward(g, grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train,
                               eps, output_mask)


@register("aten::batch_norm_backward.default")
def aten_batch_norm_backward(g, grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps,
                             output_mask, reserve):
    """batch_norm_backward(Tensor grad_out, Tensor input, Tensor weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_var, bool update, float eps, bool[3] output_mask, Tensor reserve) -> (Tensor, Tensor, Tensor)"""
    # (save_var holds the saved inverse standard deviation, as native_batch_norm_backward's save_invstd)
    return batch_norm_backward(g, grad_out, input, weight, running_mean, running_var, save_mean, save_var, update,
                               eps, output_mask)
