"""Gradient ops (aten *_backward), compared with eager calling the same ATen op on realistic inputs
(forward statistics for the norms)."""

from __future__ import annotations

import functools

import torch

from optable import Entry

aten = torch.ops.aten
FLOATS = (torch.float32, torch.float64)
NAN, INF = float("nan"), float("inf")


def edges(*values):
    """(grad, x): a grad of ones and random values paired with x at edge values."""
    def make(dtype):
        x = torch.tensor(values, dtype=dtype)
        return torch.randn(len(values)).to(dtype), x
    return make


def gx(*shape, low=-4.0, high=4.0):
    return lambda d: (torch.randn(shape).to(d), torch.empty(shape).uniform_(low, high).to(d))


def loss_args(*shape):
    return lambda d: (torch.randn(()).to(d), torch.randn(shape).to(d), torch.randn(shape).to(d))


def loss_none_args(*shape):
    return lambda d: (torch.randn(shape).to(d), torch.randn(shape).to(d), torch.randn(shape).to(d))


ACT_EDGES = (-5.0, -3.0, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 5.0, 30.0, NAN, INF, -INF)


def layer_norm_args(shape, inner, affine=True):
    def make(dtype):
        x = torch.randn(shape, dtype=dtype)
        w, b = (torch.randn(inner, dtype=dtype), torch.randn(inner, dtype=dtype)) if affine else (None, None)
        _, mean, rstd = aten.native_layer_norm(x, inner, w, b, 1e-5)
        return (torch.randn(shape, dtype=dtype), x, mean, rstd) + ((w, b) if affine else ())
    return make


def group_norm_args(n, ch, spatial, groups):
    def make(dtype):
        x = torch.randn((n, ch) + spatial, dtype=dtype)
        w, b = torch.randn(ch, dtype=dtype), torch.randn(ch, dtype=dtype)
        hxw = x[0, 0].numel()
        _, mean, rstd = aten.native_group_norm(x, w, b, n, ch, hxw, groups, 1e-5)
        return torch.randn_like(x), x, mean, rstd, w
    return make


def batch_norm_args(shape, train):
    def make(dtype):
        x = torch.randn(shape, dtype=dtype) * 2 + 1
        ch = shape[1]
        w, b = torch.randn(ch, dtype=dtype), torch.randn(ch, dtype=dtype)
        rm, rv = torch.randn(ch, dtype=dtype), torch.rand(ch, dtype=dtype) + 0.5
        _, save_mean, save_invstd = aten.native_batch_norm(x, w, b, rm.clone(), rv.clone(), train, 0.1, 1e-5)
        return torch.randn_like(x), x, w, rm, rv, save_mean, save_invstd
    return make


def nll_args(n, ch, spatial=(), reduction=1, weighted=True, ignore=-100):
    def make(dtype):
        logp = torch.log_softmax(torch.randn((n, ch) + spatial), 1).to(dtype) if n else \
            torch.log_softmax(torch.randn(ch), 0).to(dtype)
        target = torch.randint(0, ch, ((n,) + spatial) if n else ())
        if n:
            target.view(-1)[0] = ignore  # one ignored target
        w = torch.rand(ch, dtype=dtype) + 0.5 if weighted else None
        loss, total = aten.nll_loss_forward(logp, target, w, reduction, ignore) if not spatial else \
            aten.nll_loss2d_forward(logp, target, w, reduction, ignore)
        grad = torch.randn_like(loss)
        return (grad, logp, target, total) + ((w,) if weighted else ())
    return make


def conv_args(x_shape, w_shape, transposed=False):
    def make(dtype):
        x, w = torch.randn(x_shape, dtype=dtype), torch.randn(w_shape, dtype=dtype)
        return x, w
    return make


def conv_backward(stride, padding, dilation, groups, mask=(True, True, True), transposed=False, output_padding=(0,)):
    """Entry fn: the forward convolution's output shape gives grad_output (made here, deterministically)."""
    def fn(x, w):
        y = aten.convolution(x, w, None, stride, padding, dilation, transposed, output_padding, groups)
        grad = torch.sin(torch.arange(y.numel(), dtype=x.dtype)).reshape(y.shape)
        bias = [w.shape[1] * groups if transposed else w.shape[0]]
        grads = aten.convolution_backward(grad, x, w, bias, stride, padding, dilation, transposed, output_padding,
                                          groups, list(mask))
        return tuple(r for r, wanted in zip(grads, mask) if wanted)  # eager leaves the others unspecified
    return fn


FLASH = aten._scaled_dot_product_flash_attention_for_cpu
FLASH_KEY = "aten::_scaled_dot_product_flash_attention_for_cpu.default"
FLASH_BACKWARD_KEY = "aten::_scaled_dot_product_flash_attention_for_cpu_backward.default"


def flash_args(heads=3, kv_heads=3, length=5, source=6, mask=None, causal=False, scale=None):
    """(q, k, v[, mask]) and, for the backward, (grad, q, k, v, out, logsumexp[, mask]) from eager's forward.
    mask: None, "float" (broadcast over heads, random) or "masked_row" (also -inf over a whole row,
    where ATen's kernel gives output 0 and logsumexp 0)."""
    def tensors(dtype):
        q = torch.randn(2, heads, length, 4, dtype=dtype)
        k, v = torch.randn(2, kv_heads, source, 4, dtype=dtype), torch.randn(2, kv_heads, source, 4, dtype=dtype)
        m = () if mask is None else (torch.randn(2, 1, length, source, dtype=dtype),)
        if mask == "masked_row":
            m[0][:, :, 1] = float("-inf")
        return (q, k, v) + m

    def forward(dtype):
        return tensors(dtype)

    def backward(dtype):
        q, k, v, *m = tensors(dtype)
        out, lse = FLASH(q, k, v, is_causal=causal, attn_mask=m[0] if m else None, scale=scale)
        return (torch.randn_like(out), q, k, v, out, lse) + tuple(m)
    return forward, backward


def flash(causal=False, scale=None):
    def fn(q, k, v, mask=None):
        return FLASH(q, k, v, is_causal=causal, attn_mask=mask, scale=scale)
    return fn


def flash_backward(causal=False, scale=None):
    def fn(grad, q, k, v, out, lse, mask=None):
        return aten._scaled_dot_product_flash_attention_for_cpu_backward(grad, q, k, v, out, lse, 0.0, causal,
                                                                        attn_mask=mask, scale=scale)
    return fn


FLASH_CASES = {  # name: (flash_args options, causal, scale)
    "plain": ({}, False, None),
    "causal": ({"causal": True}, True, None),
    "scaled_float_mask": ({"mask": "float", "scale": 0.3}, False, 0.3),
    "masked_row": ({"mask": "masked_row"}, False, None),
    "grouped_query_causal": ({"kv_heads": 1, "causal": True}, True, None),
}


# One translation serves every opset but for log_softmax's axes (13) and the embedding's scatter (16).
E = functools.partial(Entry, opsets=(9, 18))

TABLE = [
    # -- activations, at edge values (boundaries, NaN, infinities) and on random inputs
    E("threshold_backward", lambda g, x: aten.threshold_backward(g, x, 1.0), [edges(*ACT_EDGES), gx(3, 4)], FLOATS,
      keys=("aten::threshold_backward.default",)),
    E("threshold_backward_int", lambda g, x: aten.threshold_backward(g, x, 0),
      [lambda d: (torch.tensor([1, 2, 3, 4], dtype=d), torch.tensor([-1, 0, 1, 2], dtype=d))],
      (torch.int32, torch.int64), keys=("aten::threshold_backward.default",)),
    E("sigmoid_backward", lambda g, y: aten.sigmoid_backward(g, y), [gx(3, 4, low=0.0, high=1.0)], FLOATS,
      keys=("aten::sigmoid_backward.default",)),
    E("tanh_backward", lambda g, y: aten.tanh_backward(g, y), [gx(3, 4, low=-1.0, high=1.0)], FLOATS,
      keys=("aten::tanh_backward.default",)),
    E("gelu_backward", lambda g, x: aten.gelu_backward(g, x), [edges(*ACT_EDGES[:-3]), gx(3, 4)], FLOATS,
      keys=("aten::gelu_backward.default",)),
    E("gelu_backward_tanh", lambda g, x: aten.gelu_backward(g, x, approximate="tanh"),
      [edges(*ACT_EDGES[:-3]), gx(3, 4)], FLOATS, keys=("aten::gelu_backward.default",)),
    E("silu_backward", lambda g, x: aten.silu_backward(g, x), [edges(*ACT_EDGES[:-3]), gx(3, 4)], FLOATS,
      keys=("aten::silu_backward.default",)),
    E("hardtanh_backward", lambda g, x: aten.hardtanh_backward(g, x, -1.0, 3.0), [edges(*ACT_EDGES), gx(3, 4)], FLOATS,
      keys=("aten::hardtanh_backward.default",)),
    E("leaky_relu_backward", lambda g, x: aten.leaky_relu_backward(g, x, 0.2, False), [edges(*ACT_EDGES)], FLOATS,
      keys=("aten::leaky_relu_backward.default",)),
    E("elu_backward", lambda g, x: aten.elu_backward(g, 0.7, 1.5, 2.0, False, x), [edges(*ACT_EDGES), gx(3, 4)],
      FLOATS, keys=("aten::elu_backward.default",)),
    E("elu_backward_result", lambda g, x: aten.elu_backward(g, 1.0, 1.0507, 1.0, True, aten.elu(x, 1.0, 1.0507)),
      [gx(3, 4)], FLOATS, keys=("aten::elu.default", "aten::elu_backward.default")),
    E("softplus_backward", lambda g, x: aten.softplus_backward(g, x, 2.0, 5.0), [edges(*ACT_EDGES[:-3]), gx(3, 4)],
      FLOATS, keys=("aten::softplus_backward.default",)),
    E("hardsigmoid_backward", lambda g, x: aten.hardsigmoid_backward(g, x), [edges(*ACT_EDGES), gx(3, 4)], FLOATS,
      keys=("aten::hardsigmoid_backward.default",)),
    E("hardswish_backward", lambda g, x: aten.hardswish_backward(g, x), [edges(*ACT_EDGES), gx(3, 4)], FLOATS,
      keys=("aten::hardswish_backward.default",)),
    E("mish_backward", lambda g, x: aten.mish_backward(g, x), [edges(*ACT_EDGES[:-3]), gx(3, 4)], FLOATS,
      keys=("aten::mish_backward.default",)),
    E("logit_backward", lambda g, x: aten.logit_backward(g, x),
      [edges(-0.5, 0.0, 0.25, 0.5, 0.9, 1.0, 1.5, NAN)], FLOATS, keys=("aten::logit_backward.default",)),
    E("logit_backward_eps", lambda g, x: aten.logit_backward(g, x, 0.1),
      [edges(-0.5, 0.0, 0.05, 0.1, 0.5, 0.9, 0.95, 1.5, NAN)], FLOATS, keys=("aten::logit_backward.default",)),
    E("log_sigmoid_backward", lambda g, x: aten.log_sigmoid_backward(g, x, aten.log_sigmoid_forward(x)[1]),
      [edges(-100.0, -5.0, -0.0, 0.0, 2.0, 100.0)], FLOATS,
      keys=("aten::log_sigmoid_backward.default", "aten::log_sigmoid_forward.default")),
    E("glu_backward", lambda g, x: aten.glu_backward(g, x, 1),
      [lambda d: (torch.randn(3, 2, 5).to(d), torch.randn(3, 4, 5).to(d))], FLOATS,
      keys=("aten::glu_backward.default",)),
    E("prelu_kernel_backward", lambda g, x, w: aten._prelu_kernel_backward(g, x, w),
      [lambda d: (torch.randn(2, 3, 4).to(d), torch.randn(2, 3, 4).to(d), torch.rand(3, 1).to(d))], FLOATS,
      keys=("aten::_prelu_kernel_backward.default",)),
    E("native_dropout_backward", lambda g, m: aten.native_dropout_backward(g, m > 0, 2.0), [gx(3, 4)], FLOATS,
      keys=("aten::gt.Scalar", "aten::native_dropout_backward.default")),
    # -- indexing
    E("select_backward", lambda g: (aten.select_backward(g, [3, 4, 2], 1, -1), aten.select_backward(g, [3, 1, 2], 1, 0)),
      [lambda d: (torch.randn(3, 2).to(d),)], FLOATS, keys=("aten::select_backward.default",)),
    E("slice_backward", lambda g: (aten.slice_backward(g, [2, 7], 1, -6, 100, 3), aten.slice_backward(g, [5, 2], 0, 1, 3, 1),
                                   aten.slice_backward(g, [2, 9], -1, 0, 4, 2)),
      [lambda d: (torch.randn(2, 2).to(d),)], FLOATS, keys=("aten::slice_backward.default",)),
    E("slice_backward_empty", lambda g: aten.slice_backward(g, [2, 7], 1, 5, 2, 1), [lambda d: (torch.randn(2, 0).to(d),)],
      FLOATS, keys=("aten::slice_backward.default",)),
    # -- softmax
    E("log_softmax_backward", lambda g, x: aten._log_softmax_backward_data(g, torch.log_softmax(x, 1), 1, x.dtype),
      [gx(3, 4, 2)], FLOATS, opsets=(9, 13, 18, 26),
      keys=("aten::_log_softmax_backward_data.default", "aten::log_softmax.int")),
    # -- attention: ATen's CPU flash attention (output, logsumexp) and its backward, as training graphs keep them
    *[E(f"flash_attention_{name}", flash(causal, scale), [flash_args(**options)[0]], FLOATS, opsets=(9, 11, 18, 26),
        keys=(FLASH_KEY,)) for name, (options, causal, scale) in FLASH_CASES.items()],
    *[E(f"flash_attention_backward_{name}", flash_backward(causal, scale), [flash_args(**options)[1]], FLOATS,
        opsets=(9, 11, 18, 26), keys=(FLASH_BACKWARD_KEY,)) for name, (options, causal, scale) in FLASH_CASES.items()],
    # -- losses: mean, sum and none
    E("mse_loss_backward", lambda g, x, t: (aten.mse_loss_backward(g, x, t, 1), aten.mse_loss_backward(g, x, t, 2)),
      [loss_args(3, 4)], FLOATS, keys=("aten::mse_loss_backward.default",)),
    E("mse_loss_backward_none", lambda g, x, t: aten.mse_loss_backward(g, x, t, 0), [loss_none_args(3, 4)], FLOATS,
      keys=("aten::mse_loss_backward.default",)),
    E("smooth_l1_loss_backward", lambda g, x, t: (aten.smooth_l1_loss_backward(g, x, t, 1, 0.5),
                                                  aten.smooth_l1_loss_backward(g, x, t, 2, 0.0)),
      [loss_args(4, 5)], FLOATS, keys=("aten::smooth_l1_loss_backward.default",)),
    E("smooth_l1_loss_backward_none", lambda g, x, t: aten.smooth_l1_loss_backward(g, x, t, 0, 1.0),
      [lambda d: (torch.ones(6, dtype=d), torch.tensor([-2.0, -1.0, 0.0, 0.5, 1.0, NAN], dtype=d),
                  torch.zeros(6, dtype=d))], FLOATS, keys=("aten::smooth_l1_loss_backward.default",)),
    E("huber_loss_backward", lambda g, x, t: (aten.huber_loss_backward(g, x, t, 1, 0.5),
                                              aten.huber_loss_backward(g, x, t, 2, 2.0)),
      [loss_args(4, 5)], FLOATS, keys=("aten::huber_loss_backward.default",)),
    E("soft_margin_loss_backward", lambda g, x, t: aten.soft_margin_loss_backward(g, x, t.sign(), 1),
      [loss_args(3, 4)], FLOATS, keys=("aten::sign.default", "aten::soft_margin_loss_backward.default")),
    E("binary_cross_entropy_backward", lambda g, x, t: (
        aten.binary_cross_entropy_backward(g, x.sigmoid(), t.sigmoid(), t.abs(), 1),
        aten.binary_cross_entropy_backward(g, torch.tensor([0.0, 1.0, 0.5], dtype=x.dtype),
                                       torch.tensor([1.0, 0.0, 0.5], dtype=x.dtype), None, 2)),
      [loss_args(3, 4)], FLOATS,
      keys=("aten::abs.default", "aten::binary_cross_entropy_backward.default", "aten::detach.default",
            "aten::lift_fresh_copy.default", "aten::sigmoid.default")),
    E("nll_loss_backward_mean", lambda g, x, t, tw, w: aten.nll_loss_backward(g, x, t, w, 1, -100, tw),
      [nll_args(5, 4, ignore=-100)], FLOATS, keys=("aten::nll_loss_backward.default",)),
    E("nll_loss_backward_none", lambda g, x, t, tw: aten.nll_loss_backward(g, x, t, None, 0, 2, tw),
      [nll_args(5, 4, reduction=0, weighted=False, ignore=2)], FLOATS, keys=("aten::nll_loss_backward.default",)),
    E("nll_loss_backward_sum_1d", lambda g, x, t, tw, w: aten.nll_loss_backward(g, x, t, w, 2, -100, tw),
      [nll_args(0, 4, reduction=2)], FLOATS, keys=("aten::nll_loss_backward.default",)),
    E("nll_loss2d_backward", lambda g, x, t, tw, w: aten.nll_loss2d_backward(g, x, t, w, 1, 1, tw),
      [nll_args(2, 3, (2, 3), ignore=1)], FLOATS, keys=("aten::nll_loss2d_backward.default",)),
    E("nll_loss2d_backward_none", lambda g, x, t, tw: aten.nll_loss2d_backward(g, x, t, None, 0, -100, tw),
      [nll_args(2, 3, (2, 3), reduction=0, weighted=False)], FLOATS, keys=("aten::nll_loss2d_backward.default",)),
    E("nll_loss_forward", lambda x, t, w: (aten.nll_loss_forward(x, t, w, 1, 2),
                                           aten.nll_loss_forward(x, t, None, 2, -100),
                                           aten.nll_loss_forward(x, t, w, 0, -100)),
      [lambda d: (torch.randn(5, 4).log_softmax(1).to(d), torch.tensor([0, 2, 3, 2, 1]), torch.rand(4).to(d))],
      FLOATS, keys=("aten::nll_loss_forward.default",)),
    E("nll_loss_forward_1d", lambda x, t, w: (aten.nll_loss_forward(x, t, w, 0, -100),
                                              aten.nll_loss_forward(x, t, w, 1, 3)),
      [lambda d: (torch.randn(4).log_softmax(0).to(d), torch.tensor(3), torch.rand(4).to(d))], FLOATS,
      keys=("aten::nll_loss_forward.default",)),
    E("nll_loss2d_forward", lambda x, t, w: (aten.nll_loss2d_forward(x, t, w, 1, 1),
                                             aten.nll_loss2d_forward(x, t, None, 2, -100)),
      [lambda d: (torch.randn(2, 3, 2, 2).log_softmax(1).to(d), torch.tensor([[[0, 2], [1, 1]], [[1, 1], [2, 0]]]),
                  torch.rand(3).to(d))], FLOATS, keys=("aten::nll_loss2d_forward.default",)),
    # -- pooling
    E("adaptive_avg_pool2d_backward", lambda g, x: aten._adaptive_avg_pool2d_backward(g, x),
      [lambda d: (torch.randn(2, 3, 3, 2).to(d), torch.randn(2, 3, 7, 5).to(d)),
       lambda d: (torch.randn(3, 1, 1).to(d), torch.randn(3, 4, 6).to(d))], FLOATS,
      keys=("aten::_adaptive_avg_pool2d_backward.default",)),
    E("avg_pool2d_backward", lambda g, x: aten.avg_pool2d_backward(g, x, [3, 2], [2, 1], [1, 1], False, True, None),
      [lambda d: (torch.randn(2, 3, 4, 6).to(d), torch.randn(2, 3, 7, 5).to(d))], FLOATS,
      keys=("aten::avg_pool2d_backward.default",)),
    E("avg_pool2d_backward_ceil", lambda g, x: aten.avg_pool2d_backward(g, x, [3, 3], [2, 2], [1, 0], True, False,
                                                                        None),
      [lambda d: (torch.randn(1, 2, 4, 3).to(d), torch.randn(1, 2, 7, 6).to(d))], FLOATS,
      keys=("aten::avg_pool2d_backward.default",)),
    E("avg_pool2d_backward_divisor", lambda g, x: aten.avg_pool2d_backward(g, x, [2, 2], [], [0, 0], False, True, 3),
      [lambda d: (torch.randn(2, 2, 2).to(d), torch.randn(2, 5, 4).to(d))], FLOATS,
      keys=("aten::avg_pool2d_backward.default",)),
    # -- convolution: every output_mask, strides, padding, dilation and groups; transposed too
    E("convolution_backward", conv_backward([1, 1], [0, 0], [1, 1], 1), [conv_args((2, 3, 6, 5), (4, 3, 3, 2))],
      opsets=(9, 18, 26),
      keys=("aten::arange.default", "aten::convolution_backward.default", "aten::reshape.default",
            "aten::sin.default")),
    E("convolution_backward_strided", conv_backward([2, 3], [1, 2], [2, 1], 2),
      [conv_args((2, 4, 9, 8), (6, 2, 3, 2))],
      keys=("aten::arange.default", "aten::convolution_backward.default", "aten::reshape.default",
            "aten::sin.default")),
    E("convolution_backward_1d", conv_backward([2], [1], [1], 3, (True, False, True)),
      [conv_args((3, 3, 10), (6, 1, 3))],
      keys=("aten::arange.default", "aten::convolution_backward.default", "aten::reshape.default",
            "aten::sin.default")),
    E("convolution_backward_weight_only", conv_backward([1, 1, 1], [1, 0, 1], [1, 1, 1], 1, (False, True, False)),
      [conv_args((1, 2, 4, 3, 4), (3, 2, 2, 2, 3))],
      keys=("aten::arange.default", "aten::convolution_backward.default", "aten::reshape.default",
            "aten::sin.default")),
    E("convolution_backward_input_only", conv_backward([3, 2], [0, 1], [1, 2], 1, (True, False, False)),
      [conv_args((2, 2, 8, 7), (2, 2, 2, 3))],
      keys=("aten::arange.default", "aten::convolution_backward.default", "aten::reshape.default",
            "aten::sin.default")),
    E("convolution_backward_transposed", conv_backward([2, 2], [1, 0], [1, 2], 2, transposed=True,
                                                       output_padding=[1, 1]),
      [conv_args((2, 4, 3, 4), (4, 3, 3, 2))],
      keys=("aten::arange.default", "aten::convolution_backward.default", "aten::reshape.default",
            "aten::sin.default")),
    E("convolution_backward_float64", conv_backward([2, 1], [1, 1], [1, 1], 1),
      [conv_args((2, 3, 6, 5), (4, 3, 3, 3))], (torch.float64,), opsets=(9, 18), ort=False,
      keys=("aten::arange.default", "aten::convolution_backward.default", "aten::reshape.default",
            "aten::sin.default")),  # no double Conv in ORT
    # -- embedding: repeated indices, padding_idx, scale_grad_by_freq
    E("embedding_dense_backward", lambda g, i: aten.embedding_dense_backward(g, i, 7, 2, False),
      [lambda d: (torch.randn(2, 5, 3).to(d), torch.tensor([[0, 2, 6, 0, 3], [3, 3, 1, 2, 0]]))], FLOATS,
      opsets=(9, 13, 16, 26), keys=("aten::embedding_dense_backward.default",)),
    E("embedding_dense_backward_freq", lambda g, i: aten.embedding_dense_backward(g, i, 6, -1, True),
      [lambda d: (torch.randn(7, 4).to(d), torch.tensor([5, 1, 1, 0, 5, 5, 2], dtype=torch.int32))], FLOATS,
      opsets=(9, 13, 16, 26), keys=("aten::embedding_dense_backward.default",)),
    # -- normalization, with the forward's statistics
    E("native_layer_norm_backward", lambda g, x, m, r, w, b: aten.native_layer_norm_backward(
        g, x, [3, 4], m, r, w, b, [True, True, True]), [layer_norm_args((2, 5, 3, 4), [3, 4])], FLOATS,
      keys=("aten::native_layer_norm_backward.default",)),
    E("native_layer_norm_backward_no_affine", lambda g, x, m, r: aten.native_layer_norm_backward(
        g, x, [6], m, r, None, None, [True, False, False]), [layer_norm_args((4, 6), [6], affine=False)], FLOATS,
      keys=("aten::native_layer_norm_backward.default",)),
    E("native_group_norm_backward", lambda g, x, m, r, w: aten.native_group_norm_backward(
        g, x, m, r, w, 2, 6, 12, 3, [True, True, True]), [group_norm_args(2, 6, (3, 4), 3)], FLOATS,
      keys=("aten::native_group_norm_backward.default",)),
    E("native_group_norm_backward_no_weight", lambda g, x, m, r, w: aten.native_group_norm_backward(
        g, x, m, r, None, 3, 4, 5, 2, [True, False, False]), [group_norm_args(3, 4, (5,), 2)], FLOATS,
      keys=("aten::native_group_norm_backward.default",)),
    E("native_batch_norm_backward_train", lambda g, x, w, rm, rv, sm, si: aten.native_batch_norm_backward(
        g, x, w, rm, rv, sm, si, True, 1e-5, [True, True, True]), [batch_norm_args((4, 3, 5, 2), True)], FLOATS,
      keys=("aten::native_batch_norm_backward.default",)),
    E("native_batch_norm_backward_eval", lambda g, x, w, rm, rv, sm, si: aten.native_batch_norm_backward(
        g, x, w, rm, rv, None, None, False, 1e-3, [True, True, True]), [batch_norm_args((4, 3, 5), False)], FLOATS,
      keys=("aten::native_batch_norm_backward.default",)),
    E("native_batch_norm_backward_2d", lambda g, x, w, rm, rv, sm, si: aten.native_batch_norm_backward(
        g, x, None, None, None, sm, si, True, 1e-5, [True, False, False]), [batch_norm_args((6, 4), True)], FLOATS,
      keys=("aten::native_batch_norm_backward.default",)),
    E("batch_norm_backward", lambda g, x, w, rm, rv, sm, si: aten.batch_norm_backward(
        g, x, w, rm, rv, sm, si, True, 1e-5, [True, True, True], torch.empty(0, dtype=torch.uint8)),
      [batch_norm_args((3, 2, 4), True)], FLOATS, keys=("aten::batch_norm_backward.default",)),
]
