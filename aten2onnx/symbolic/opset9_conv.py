"""Opset-9 base, convolution: Conv (string padding included) where one ONNX op matches, integer
convolution as windows gathered and multiplied by the weight (Conv takes floats only), and transposed
convolution (ConvTranspose has output_padding from opset 1); these read the same at every opset."""

from __future__ import annotations

import functools
import itertools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import INT64_MAX, cast, half_step, opmath, reshape, unsqueeze_static
from aten2onnx.symbolic._spatial import batched, expand, flat_positions, squeeze_first, window_coordinates

register = functools.partial(registry.register, opset=9)


# -- transposed convolution ---------------------------------------------------------------------------------


def conv_transpose(g: GraphBuilder, input: Value, weight: Value, bias, stride, padding, output_padding, groups,
                   dilation) -> Value:
    spatial = weight.rank - 2
    strides, pads, dilations = expand(stride, spatial), expand(padding, spatial), expand(dilation, spatial)
    output_padding = expand(output_padding, spatial)

    def run(b: Value) -> Value:
        if not b.dtype.is_floating_point:
            return integer_conv_transpose(g, b, weight, bias, strides, pads, output_padding, int(groups), dilations)
        if weight.is_static and eager_adds_taps_in(b.dtype, output_padding, strides):
            return half_conv_transpose(g, b, weight, bias, strides, pads, output_padding, int(groups), dilations)
        if all(o < s for o, s in zip(output_padding, strides)):
            return g.op("ConvTranspose", b, weight, bias, strides=strides, pads=pads + pads, dilations=dilations,
                        group=int(groups), output_padding=output_padding)
        # torch takes an output padding below the dilation too, onnxruntime only one below the stride:
        # the output padding uncovers the rows the end padding would crop, and past those, rows no tap
        # reaches (the bias alone)
        # (half types in float32, rounded once with the bias, as the one ConvTranspose)
        acc = opmath(b.dtype)
        ends = [p - o for p, o in zip(pads, output_padding)]
        out = g.op("ConvTranspose", cast(g, b, acc), cast(g, weight, acc), strides=strides,
                   pads=pads + [max(e, 0) for e in ends], dilations=dilations, group=int(groups))
        if any(e < 0 for e in ends):
            out = g.pad(out, [0] * (spatial + 2) + [0, 0, *(max(-e, 0) for e in ends)])
        if bias is not None:
            out = g.op("Add", out, reshape(g, cast(g, bias, acc), [-1] + [1] * spatial))
        return cast(g, out, b.dtype)

    return batched(g, input, spatial, run)


def integer_conv_transpose(g: GraphBuilder, x: Value, weight: Value, bias: Value | None, strides: list[int],
                           pads: list[int], output_padding: list[int], groups: int, dilations: list[int]) -> Value:
    """An integer transposed convolution (ConvTranspose takes floats only): the stride's zeros put between
    the input's entries, then integer_conv at stride 1 with the weight flipped and its channels swapped,
    padded by dilation * (kernel - 1) - padding on each side (plus output_padding at the end)."""
    spatial = weight.rank - 2
    if x.shape is None or weight.shape is None or not all(isinstance(n, int) for n in [*x.shape[1:], *weight.shape]):
        raise NotImplementedError("an integer transposed convolution is exported for static sizes only")
    batch, channels, sizes, kernel = x.shape[0], x.shape[1], list(x.shape[2:]), list(weight.shape[2:])
    out_per_group = weight.shape[1]
    if any(s > 1 for s in strides):
        # each position of the spread plane reads its entry of x, or the zero appended after x's entries
        up = [(n - 1) * s + 1 for n, s in zip(sizes, strides)]
        grid = torch.stack(torch.meshgrid(*(torch.arange(u) for u in up), indexing="ij")).reshape(spatial, -1)
        strides_t = torch.tensor(strides).reshape(spatial, 1)
        on_entry = (grid % strides_t == 0).all(0)
        index = torch.where(on_entry, flat_positions(grid // strides_t, sizes), math.prod(sizes))
        flat = reshape(g, x, [0, channels, -1])
        zero = g.op("Mul", g.slice(flat, [0], [1], [2]), g.const(0, like=flat))
        x = reshape(g, g.op("Gather", g.op("Concat", flat, zero, axis=2), g.const(index), axis=2), [0, channels, *up])
        sizes = up
        x.shape = (batch, channels, *sizes)
    begin = [d * (k - 1) - p for d, k, p in zip(dilations, kernel, pads)]
    end = [b + o for b, o in zip(begin, output_padding)]
    if any(b < 0 for b in begin + end):  # more padding than the kernel reaches: those rows are cropped
        x = g.slice(x, [max(-b, 0) for b in begin], [n - max(-e, 0) for n, e in zip(sizes, end)],
                    list(range(2, 2 + spatial)))
        x.shape = (batch, channels, *(n - max(-b, 0) - max(-e, 0) for n, b, e in zip(sizes, begin, end)))
    # weight [C_in, O/groups, *k] -> [O, C_in/groups, *k], each kernel flipped
    w = reshape(g, weight, [groups, channels // groups, out_per_group, *kernel])
    w = reshape(g, g.op("Transpose", w, perm=[0, 2, 1, *range(3, 3 + spatial)]),
                [groups * out_per_group, channels // groups, *kernel])
    for axis, k in enumerate(kernel, start=2):
        w = g.op("Gather", w, g.const(list(range(k - 1, -1, -1)), dtype=torch.int64), axis=axis)
    w.shape = (groups * out_per_group, channels // groups, *kernel)
    return integer_conv(g, x, w, bias, [1] * spatial, [max(b, 0) for b in begin] + [max(e, 0) for e in end],
                        dilations, groups)


def eager_adds_taps_in(dtype: torch.dtype, output_padding: list[int], strides: list[int]) -> bool:
    """Whether eager's CPU transposed convolution of a half dtype is its slow kernel, which adds the
    kernel taps in the dtype: oneDNN's (one rounding, as one ConvTranspose) takes it where the host's
    oneDNN computes the dtype and no output padding reaches the stride."""
    if opmath(dtype) == dtype:
        return False
    supported = {torch.float16: torch.ops.mkldnn._is_mkldnn_fp16_supported,
                 torch.bfloat16: torch.ops.mkldnn._is_mkldnn_bf16_supported}[dtype]
    onednn = torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled and supported()
    return not onednn or any(o >= s for o, s in zip(output_padding, strides))


def half_conv_transpose(g: GraphBuilder, x: Value, weight: Value, bias: Value | None, strides: list[int],
                        pads: list[int], output_padding: list[int], groups: int, dilations: list[int]) -> Value:
    """A half transposed convolution rounded as ATen's slow CPU kernel rounds it: for each kernel
    position, the products summed over the input channels in float32 and rounded once (its gemm), then
    the positions added into the output one at a time in the half dtype, in row-major order of the
    kernel (its col2im), then the bias. (One ConvTranspose over half inputs rounds once, and in
    onnxruntime runs in float32.)"""
    dtype, acc = x.dtype, opmath(x.dtype)
    spatial = weight.rank - 2
    xf, wf = cast(g, x, acc), cast(g, weight, acc)
    kernel = list(weight.shape[2:])
    axes = list(range(2, 2 + spatial))
    total = None
    for position in itertools.product(*(range(k) for k in kernel)):
        tap = g.slice(wf, list(position), [p + 1 for p in position], axes)
        part = half_step(g, g.op("ConvTranspose", xf, tap, strides=strides, group=groups), dtype)
        # where this tap lands in the uncropped output, then the crop of `pads`
        before = [p * d for p, d in zip(position, dilations)]
        after = [(k - 1 - p) * d + o for k, p, d, o in zip(kernel, position, dilations, output_padding)]
        part = g.pad(part, [0, 0, *before, 0, 0, *after])
        if any(pads):
            part = g.slice(part, pads, [-p if p else INT64_MAX for p in pads], axes)
        total = part if total is None else half_step(g, g.op("Add", total, part), dtype)
    if bias is not None:
        b = reshape(g, cast(g, bias, acc), [-1] + [1] * spatial)
        total = half_step(g, g.op("Add", total, b), dtype)
    return cast(g, total, dtype)


@register("aten::conv_transpose1d.default")
def aten_conv_transpose1d(g, input, weight, bias=None, stride=[1], padding=[0], output_padding=[0], groups=1,
                          dilation=[1]):
    """conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor"""
    return conv_transpose(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


@register("aten::conv_transpose2d.input")
def aten_conv_transpose2d(g, input, weight, bias=None, stride=[1, 1], padding=[0, 0], output_padding=[0, 0], groups=1,
                          dilation=[1, 1]):
    """conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor"""
    return conv_transpose(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


@register("aten::conv_transpose3d.input")
def aten_conv_transpose3d(g, input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0],
                          output_padding=[0, 0, 0], groups=1, dilation=[1, 1, 1]):
    """conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor"""
    return conv_transpose(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


# -- convolution, where one ONNX op matches ----------------------------------------------------------------


def conv(g: GraphBuilder, input: Value, weight: Value, bias, stride, padding, dilation, groups: int) -> Value:
    spatial = weight.rank - 2
    if input.rank == spatial + 1:  # an unbatched input: add the batch dim and drop it after
        out = conv(g, unsqueeze_static(g, input, 0), weight, bias, stride, padding, dilation, groups)
        out.shape = (1,) + (None,) * (spatial + 1)
        return squeeze_first(g, out)
    expand = (lambda v: list(v) * spatial if len(v) == 1 else list(v))
    if isinstance(padding, str):
        pads = same_pads(weight, expand(dilation)) if padding == "same" else [0] * spatial * 2
    else:
        pads = expand(padding) * 2
    if not input.dtype.is_floating_point:
        return integer_conv(g, input, weight, bias, expand(stride), pads, expand(dilation), int(groups))
    return g.op("Conv", input, weight, bias, strides=expand(stride), pads=pads, dilations=expand(dilation),
                group=int(groups), kernel_shape=[d for d in weight.shape[2:]] if weight.is_static else None)


def integer_conv(g: GraphBuilder, x: Value, weight: Value, bias: Value | None, strides: list[int], pads: list[int],
                 dilations: list[int], groups: int) -> Value:
    """An integer convolution, which ONNX's Conv (floats only) cannot say: every output position's window
    gathered from the padded input (im2col, for static channel and spatial sizes), times the weight by
    MatMul per group. Integer products and sums wrap as eager's do, in any order."""
    spatial = weight.rank - 2
    sizes, kernel = x.shape[2:] if x.shape is not None else None, weight.shape[2:] if weight.shape is not None else None
    channels, out_channels = (x.shape[1] if x.shape is not None else None), (weight.shape[0] if weight.shape else None)
    if not all(isinstance(n, int) for n in [*(sizes or [None]), *(kernel or [None]), channels, out_channels]):
        raise NotImplementedError("an integer convolution is exported for static channel and spatial sizes only")
    padded = [n + pads[i] + pads[i + spatial] for i, n in enumerate(sizes)]
    out_sizes = [(p - d * (k - 1) - 1) // s + 1 for p, k, s, d in zip(padded, kernel, strides, dilations)]
    index = flat_positions(window_coordinates(out_sizes, kernel, strides, dilations), padded)
    positions, window = index.shape
    if any(pads):
        x = g.pad(x, [0, 0, *pads[:spatial], 0, 0, *pads[spatial:]])
    per_group = channels // groups
    cols = g.op("Gather", reshape(g, x, [0, channels, -1]), g.const(index), axis=2)  # [N, C, P, K]
    cols = reshape(g, cols, [0, groups, per_group, positions, window])
    cols = reshape(g, g.op("Transpose", cols, perm=[0, 1, 3, 2, 4]), [0, groups, positions, per_group * window])
    w = g.op("Transpose", reshape(g, weight, [groups, out_channels // groups, per_group * window]), perm=[0, 2, 1])
    out = g.op("Transpose", g.op("MatMul", cols, w), perm=[0, 1, 3, 2])  # [N, groups, O / groups, P]
    out = reshape(g, out, [0, out_channels, *out_sizes])
    return out if bias is None else g.op("Add", out, reshape(g, bias, [out_channels] + [1] * spatial))


def same_pads(weight: Value, dilation: list[int]) -> list[int]:
    """Pads for padding='same' at stride 1: the extra pad goes at the end, as ATen does."""
    total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
    return [t // 2 for t in total] + [t - t // 2 for t in total]


@register("aten::conv1d.default")
def aten_conv1d(g, input, weight, bias=None, stride=[1], padding=[0], dilation=[1], groups=1):
    """conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::conv2d.default")
def aten_conv2d(g, input, weight, bias=None, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1):
    """conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::conv3d.default")
def aten_conv3d(g, input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1], groups=1):
    """conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::convolution.default")
def aten_convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor"""
    if not transposed:
        return conv(g, input, weight, bias, stride, padding, dilation, groups)
    return conv_transpose(g, input, weight, bias, stride, padding, output_padding, groups, dilation)


# -- convolutions: string padding -------------------------------------------------------------------


@register("aten::conv1d.padding")
def aten_conv1d_padding(g, input, weight, bias=None, stride=[1], padding="valid", dilation=[1], groups=1):
    """conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], str padding="valid", SymInt[1] dilation=[1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::conv2d.padding")
def aten_conv2d_padding(g, input, weight, bias=None, stride=[1, 1], padding="valid", dilation=[1, 1], groups=1):
    """conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], str padding="valid", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)


@register("aten::conv3d.padding")
def aten_conv3d_padding(g, input, weight, bias=None, stride=[1, 1, 1], padding="valid", dilation=[1, 1, 1], groups=1):
    """conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], str padding="valid", SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor"""
    return conv(g, input, weight, bias, stride, padding, dilation, groups)
