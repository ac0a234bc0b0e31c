"""The rewrites' differential table (issue 43): each rewrite of exporter/rewrites/ on a small model that needs
it, exported through the real exporter twice, with the optimizer's rewrites up to the one before it and up to
it (graph_optimizer.REWRITES cut there); both graphs run in onnxruntime (as users run it, and with its graph
optimizations off: its kernels on the graph as written) and in aten2onnx.runtime, on adversarial values: the
range's extremes, NaN, infinities, -0, subnormals; quantized activations over their whole range against int8
weights at +-127 with K >= 256, whose sums a saturating 16-bit kernel would clip. Each row is held to what its
rewrite declares: bitwise ones bit for bit (NaN where NaN); rounding and onnxruntime-only ones (contrib ops)
within the row's stated tolerance, NaN and infinities where they were (but on values at the top of the range,
which a sum in another order overflows or not). Where a runtime does otherwise, the entry is an xfail that
says why (KNOWN)."""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from typing import Callable

import onnxruntime as ort
import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (defines quantized_decomposed::)
import torch.nn.functional as F
from conftest import flat_tensors

import aten2onnx
from aten2onnx.exporter import graph_optimizer
from aten2onnx.exporter.graph_optimizer import REWRITES
from aten2onnx.exporter.rewrites import attention, fold, merge, norms, quantized, rotary, tidy
from aten2onnx.exporter.rewrites.core import Rewrite

FMAX, TINY = torch.finfo(torch.float32).max, torch.finfo(torch.float32).tiny
# every special value, spread over a tensor (one element in three) so that each row and channel meets some
SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, FMAX, -FMAX, TINY, -TINY, 1e-45, -3e-39, 1.0, -1.0]


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def floats(*shape: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Adversarial float32 inputs of one shape: normal values; NaN, infinities, -0, the largest and smallest
    normals and subnormals among them; values near the top of the range (whose sums overflow); subnormals."""
    normal = torch.randn(shape, generator=generator(seed))
    specials = normal.clone().reshape(-1)
    count = len(specials[::3])
    specials[::3] = torch.tensor(SPECIALS).repeat(count // len(SPECIALS) + 1)[:count]
    extremes = normal.sign() * (1 - 0.5 * torch.rand(shape, generator=generator(seed + 1))) * FMAX
    return {"normal": normal, "specials": specials.reshape(shape), "extremes": extremes, "subnormals": normal * 1e-39}


def activations(*shape: int, scale: float, low: int, high: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Inputs a quantizer of scale and range [low, high] (zero point 0) maps over its whole range: uniform over
    it and past both ends (clamped); all at the top and all at the bottom (the largest sums); alternating ends;
    and the special values, which the quantizer maps somewhere in the range."""
    gen = generator(seed)
    uniform = torch.randint(low - 4, high + 5, shape, generator=gen).float() * scale
    top, bottom = torch.full(shape, (high + 2) * scale), torch.full(shape, (low - 2) * scale)
    alternating = torch.where(torch.arange(shape[-1]) % 2 == 0, top, bottom)
    return {"whole_range": uniform, "top": top, "bottom": bottom, "alternating": alternating,
            "specials": floats(*shape, seed=seed)["specials"]}


def extreme_int8(*shape: int, seed: int = 0) -> torch.Tensor:
    """int8 weights at +-127 (random signs), the first output channel all +127 and the second all -127."""
    w = torch.where(torch.rand(shape, generator=generator(seed)) < 0.5, -127, 127).to(torch.int8)
    w[0], w[1] = 127, -127
    return w


# -- models -------------------------------------------------------------------------------------------------


class Call(torch.nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


class WeightOf(torch.nn.Module):
    """x @ f(w): a weight transformed in the graph (which the fold computes once)."""

    def __init__(self, shape: tuple[int, ...], transform: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(shape, generator=generator(1)))
        self.transform = transform

    def forward(self, x):
        return x @ self.transform(self.w)


def conv_bn(conv: torch.nn.Module, channels: int) -> torch.nn.Module:
    bn = torch.nn.BatchNorm2d(channels)
    gen = generator(2)
    with torch.no_grad():
        bn.running_mean.copy_(torch.rand(channels, generator=gen) * 2 - 1)
        bn.running_var.copy_(torch.rand(channels, generator=gen) + 0.5)
        bn.weight.copy_(torch.rand(channels, generator=gen) + 0.5)
        bn.bias.copy_(torch.rand(channels, generator=gen) - 0.5)
    return torch.nn.Sequential(conv, bn).eval()


class StaticLinear(torch.nn.Module):
    """A linear layer on activations quantized per tensor (uint8 from 0, or int8 around 0) and int8 weights at
    +-127 per output channel: K = 256."""

    def __init__(self, signed: bool, k: int = 256, n: int = 8) -> None:
        super().__init__()
        self.signed = signed
        self.register_buffer("weight", extreme_int8(n, k))
        self.register_buffer("scales", torch.rand(n, generator=generator(3)) * 0.01 + 0.001)
        self.register_buffer("zeros", torch.zeros(n, dtype=torch.int64))
        self.bias = torch.nn.Parameter(torch.randn(n, generator=generator(4)))

    def forward(self, x):
        qd = torch.ops.quantized_decomposed
        low, high, dtype = (-128, 127, torch.int8) if self.signed else (0, 255, torch.uint8)
        xd = qd.dequantize_per_tensor(qd.quantize_per_tensor(x, 0.05, 0, low, high, dtype), 0.05, 0, low, high, dtype)
        wd = qd.dequantize_per_channel(self.weight, self.scales, self.zeros, 0, -127, 127, torch.int8)
        return F.linear(xd, wd, self.bias)


class DynamicLinear(StaticLinear):
    """The activations quantized by a scale and zero point computed from them (dynamic quantization)."""

    def __init__(self) -> None:
        super().__init__(signed=False)

    def forward(self, x):
        qd = torch.ops.quantized_decomposed
        scale, zero = qd.choose_qparams.tensor(x, 0, 255, torch.finfo(torch.float32).eps, torch.uint8)
        q = qd.quantize_per_tensor.tensor(x, scale, zero, 0, 255, torch.uint8)
        xd = qd.dequantize_per_tensor.tensor(q, scale, zero, 0, 255, torch.uint8)
        wd = qd.dequantize_per_channel(self.weight, self.scales, self.zeros, 0, -127, 127, torch.int8)
        return F.linear(xd, wd)


class StaticConv(torch.nn.Module):
    """A convolution of uint8 activations and int8 weights at +-127 per output channel: K = 32 x 3 x 3."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("weight", extreme_int8(4, 32, 3, 3))
        self.register_buffer("scales", torch.rand(4, generator=generator(3)) * 0.01 + 0.001)
        self.register_buffer("zeros", torch.zeros(4, dtype=torch.int64))

    def forward(self, x):
        qd = torch.ops.quantized_decomposed
        xd = qd.dequantize_per_tensor(qd.quantize_per_tensor(x, 0.05, 0, 0, 255, torch.uint8), 0.05, 0, 0, 255,
                                      torch.uint8)
        wd = qd.dequantize_per_channel(self.weight, self.scales, self.zeros, 0, -127, 127, torch.int8)
        return F.conv2d(xd, wd)


class Requantized(torch.nn.Module):
    """A layer (StaticLinear's or StaticConv's) whose result is quantized again to uint8: the QDQ pattern
    onnxruntime's QDQ transformer runs as QGemm / QLinearConv on its weight."""

    def __init__(self, layer: torch.nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x):
        qd = torch.ops.quantized_decomposed
        y = self.layer(x)
        return qd.dequantize_per_tensor(qd.quantize_per_tensor(y, 0.5, 128, 0, 255, torch.uint8), 0.5, 128, 0, 255,
                                        torch.uint8)


def four_bit_linear() -> torch.nn.Module:
    """torchao's 4-bit weights, in groups of 32 along K = 256."""
    tq = pytest.importorskip("torchao.quantization", exc_type=ImportError)
    model = torch.nn.Sequential(torch.nn.Linear(256, 16)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tq.quantize_(model, tq.IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=tq.PerGroup(32)))
    return model


def int8_weight_only_linear() -> torch.nn.Module:
    """torchao's int8 weight-only linear layer (its weight's integers as floats, the sum scaled after): K = 256."""
    tq = pytest.importorskip("torchao.quantization", exc_type=ImportError)
    model = torch.nn.Sequential(torch.nn.Linear(256, 16)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tq.quantize_(model, tq.Int8WeightOnlyConfig())
    return model


def float8_weight_only_linear() -> torch.nn.Module:
    """torchao's float8 weight-only linear layer, its scales per group of 16 along K = 256."""
    tq = pytest.importorskip("torchao.quantization", exc_type=ImportError)
    model = torch.nn.Sequential(torch.nn.Linear(256, 16)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tq.quantize_(model, tq.Float8WeightOnlyConfig(granularity=tq.PerGroup(16)))
    return model


class PostNorm(torch.nn.Module):
    """BERT's block end: a linear layer plus the residual, then a layer norm."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.norm = torch.nn.Linear(32, 32), torch.nn.LayerNorm(32)

    def forward(self, x):
        return self.norm(self.fc(x) + x)


class SelfAttention(torch.nn.Module):
    """Query, key and value projections of one input, split into heads (what onnxruntime's Attention packs)."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(32, 32) for _ in range(3))

    def forward(self, x):
        b, s, hidden = x.shape
        q, k, v = (t.view(b, s, 4, 8).transpose(1, 2) for t in (self.q(x), self.k(x), self.v(x)))
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, hidden)


class RMSNorm(torch.nn.Module):
    """LLaMA's, as transformers computes it (float32, weight last)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(1 + 0.1 * torch.randn(32, generator=generator(5)))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class ResidualRMSNorm(RMSNorm):
    def forward(self, a, b):
        h = a + b
        return super().forward(h), h


class Rotary(torch.nn.Module):
    """x [B, S, N * H] split into heads and rotated as transformers' apply_rotary_pos_emb does, at positions
    0..S-1 (tables known at export)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8)), persistent=False)

    def forward(self, x):
        b, s, _ = x.shape
        x = x.view(b, s, 4, 8).transpose(1, 2)
        freqs = torch.arange(s).float()[None, :, None] * self.inv_freq
        emb = torch.cat([freqs, freqs], -1)
        cos, sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)
        rotated = torch.cat([-x[..., 4:], x[..., :4]], -1)
        return x * cos + rotated * sin


# -- the table ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Row:
    """A rewrite on a model: make() the model, inputs() its adversarial arguments by name; made: an op type the
    rewrite writes (None: it only removes); tolerance: for rounding and onnxruntime-only rewrites, the largest
    difference allowed, relative to the output's largest finite magnitude."""

    rewrite: Rewrite
    make: Callable[[], torch.nn.Module]
    inputs: Callable[[], dict[str, tuple[torch.Tensor, ...]]]
    made: str | None = None
    opset: int = 18
    optimize: bool | str = True
    tolerance: float = 0.0


def each(inputs: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, ...]]:
    return {name: (x,) for name, x in inputs.items()}


def paired(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, ...]]:
    return {name: (a[name], b[name]) for name in a}


def no_ops_and_chains(x):
    return (x.reshape(6, 4).reshape(2, 3, 4) * 1.0).transpose(0, 1).transpose(0, 1) / 1.0


def padded_conv(x, w=torch.randn(4, 3, 3, 3, generator=generator(6))):
    return F.conv2d(F.pad(x, (1, 2, 0, 1)), w)


def padded_max_pool(x):
    return F.max_pool2d(F.pad(x, (1, 1, 0, 1), value=-math.inf), 3, 2)


def padded_avg_pool(x):
    return F.avg_pool2d(F.pad(x, (1, 2, 1, 0)), 3, 1)


def uint8s(*shape):
    return each(activations(*shape, scale=0.05, low=0, high=255))


def int8s(*shape):
    return each(activations(*shape, scale=0.05, low=-128, high=127))


ROWS = {
    "tidy: no-ops and chains": Row(tidy.TIDY, lambda: Call(no_ops_and_chains), lambda: each(floats(2, 3, 4))),
    "fold: a reshaped, scaled, transposed weight": Row(
        fold.WEIGHTS, lambda: WeightOf((256, 300), lambda w: (w.reshape(300, 256) * 2).t()),
        lambda: each(floats(3, 256)), tolerance=1e-6),
    "fold: a rotary table from its frequencies": Row(
        fold.WEIGHTS, lambda: WeightOf((1, 16), lambda w: (torch.arange(64.0)[:, None] * w).cos()),
        lambda: each(floats(3, 64)), tolerance=1e-6),
    "fold: batch norm into Conv": Row(
        fold.BATCH_NORMS, lambda: conv_bn(torch.nn.Conv2d(3, 4, 3), 4), lambda: each(floats(2, 3, 8, 8)),
        tolerance=1e-5),
    "fold: batch norm into ConvTranspose": Row(
        fold.BATCH_NORMS, lambda: conv_bn(torch.nn.ConvTranspose2d(4, 6, 3, groups=2), 6),
        lambda: each(floats(2, 4, 5, 5)), tolerance=1e-5),
    "fold: zero pad into Conv": Row(fold.PADS, lambda: Call(padded_conv), lambda: each(floats(2, 3, 8, 8))),
    "fold: -inf pad into MaxPool": Row(fold.PADS, lambda: Call(padded_max_pool), lambda: each(floats(2, 3, 9, 8))),
    "fold: zero pad into AveragePool": Row(fold.PADS, lambda: Call(padded_avg_pool), lambda: each(floats(2, 3, 9, 8))),
    "quantized: dynamic quantization's own scale": Row(
        quantized.DYNAMIC_QUANTIZATION, DynamicLinear, lambda: int8s(8, 256)),
    "quantized: uint8 x int8 MatMulInteger": Row(
        quantized.INTEGER_KERNELS, lambda: StaticLinear(signed=False), lambda: uint8s(8, 256), made="MatMulInteger",
        tolerance=1e-5),
    "quantized: int8 x int8 MatMulInteger": Row(
        quantized.INTEGER_KERNELS, lambda: StaticLinear(signed=True), lambda: int8s(8, 256), made="MatMulInteger",
        tolerance=1e-5),
    "quantized: dynamic uint8 x int8 MatMulInteger": Row(
        quantized.INTEGER_KERNELS, DynamicLinear, lambda: int8s(8, 256), made="MatMulInteger", tolerance=1e-5),
    "quantized: uint8 x int8 ConvInteger": Row(
        quantized.INTEGER_KERNELS, StaticConv, lambda: uint8s(2, 32, 6, 6), made="ConvInteger", tolerance=1e-5),
    "quantized: a requantized linear layer's int8 weights as uint8": Row(
        quantized.UNSIGNED_WEIGHTS, lambda: Requantized(StaticLinear(signed=False)), lambda: uint8s(8, 256)),
    "quantized: a requantized convolution's int8 weights as uint8": Row(
        quantized.UNSIGNED_WEIGHTS, lambda: Requantized(StaticConv()), lambda: uint8s(2, 32, 6, 6)),
    "quantized: an int8 weight-only linear as DequantizeLinear into Gemm": Row(
        quantized.WEIGHT_ONLY_INT8, int8_weight_only_linear, lambda: each(floats(4, 256)), made="DequantizeLinear",
        tolerance=1e-6),
    "quantized: a float8 weight-only linear's weight as DequantizeLinear": Row(
        quantized.WEIGHT_ONLY_FLOAT8, float8_weight_only_linear, lambda: each(floats(4, 256)), made="DequantizeLinear",
        opset=21),
    "quantized: 4-bit weight transposed for MatMulNBits": Row(
        quantized.FOUR_BIT_MATMULS, four_bit_linear, lambda: each(floats(4, 256)), opset=21, tolerance=1e-6),
    "quantized: a 4-bit weight's bias as Sum": Row(
        quantized.BIAS_SUMS, four_bit_linear, lambda: each(floats(2, 4, 256)), made="Sum", opset=21),
    "quantized: MatMulNBits": Row(
        quantized.MATMUL_NBITS, four_bit_linear, lambda: each(floats(4, 256)), made="MatMulNBits", opset=21,
        optimize="onnxruntime", tolerance=1e-5),
    "norms: a layer norm's sum as Sum": Row(
        norms.LAYER_NORM_SUMS, PostNorm, lambda: each(floats(2, 5, 32)), made="Sum"),
    "attention: packed projections": Row(
        attention.PACKED_ATTENTION, SelfAttention, lambda: each(floats(2, 5, 32)), made="Attention",
        optimize="onnxruntime", tolerance=1e-5),
    "norms: SkipSimplifiedLayerNormalization": Row(
        norms.SKIP_RMS_NORMS, ResidualRMSNorm, lambda: paired(floats(2, 5, 32), floats(2, 5, 32, seed=1)),
        made="SkipSimplifiedLayerNormalization", optimize="onnxruntime", tolerance=1e-5),
    "rotary: onnxruntime's RotaryEmbedding": Row(
        rotary.CONTRIB_ROTARY, Rotary, lambda: each(floats(2, 6, 32)), made="RotaryEmbedding",
        optimize="onnxruntime", tolerance=1e-5),
    "rotary: ONNX's RotaryEmbedding": Row(
        rotary.ONNX_ROTARY, Rotary, lambda: each(floats(2, 6, 32)), made="RotaryEmbedding", opset=23,
        tolerance=1e-5),
    "norms: RMSNormalization": Row(
        norms.RMS_NORMALIZATIONS, RMSNorm, lambda: each(floats(2, 5, 32)), made="RMSNormalization", opset=23,
        tolerance=1e-5),
    "merge: duplicates": Row(
        merge.DUPLICATES, lambda: Call(lambda x: x.sin() * 2 + x.sin() * 2), lambda: each(floats(3, 4))),
}


# (row, input case, runtime): why that runtime does not keep what the rewrite declares there
KNOWN = {
    ("fold: -inf pad into MaxPool", "specials", runtime): (
        "onnxruntime's MaxPool (as the ONNX reference's) gives a number for most windows holding NaN, where eager "
        "and aten2onnx.runtime give NaN; which number depends on where the window starts: with the pad folded, "
        "another one")
    for runtime in ("onnxruntime", "onnxruntime, unoptimized")
} | {
    ("quantized: dynamic uint8 x int8 MatMulInteger", "specials", "onnxruntime, unoptimized"): (
        "an infinite activation makes dynamic quantization's scale infinite: dequantized floats hold 0 x inf, NaN "
        "in every sum (as eager), while the integer sum is scaled once, +-inf where it is not 0 (onnxruntime's own "
        "fusion, and aten2onnx.runtime, give the integer path's answer to the graph before the rewrite too)"),
    ("quantized: a 4-bit weight's bias as Sum", "normal", "onnxruntime"): (
        "onnxruntime fuses the bias Add before the rewrite into its MatMulNBits (at accuracy level 4, activations "
        "quantized), which adds it in its own order; the Sum after it is added apart: bitwise on the graph as "
        "written"),
    ("quantized: 4-bit weight transposed for MatMulNBits", "normal", "onnxruntime"): (
        "onnxruntime fuses the layout into MatMulNBits at its default accuracy level 4 "
        "(session.qdq_matmulnbits_accuracy_level), which quantizes the activations to int8: 0.8% of the output's "
        "scale away (bitwise at accuracy level 0)"),
} | {
    ("norms: a layer norm's sum as Sum", case, "onnxruntime"): (
        "onnxruntime runs the Add and LayerNormalization before the rewrite as its fused SkipLayerNormalization, "
        "which rounds otherwise (the fusion the rewrite avoids, 4 to 5 times slower on CPU); bitwise on the graph "
        "as written")
    for case in ("normal", "subnormals")
}


def test_every_rewrite_has_a_row():
    assert {r.name for r in REWRITES} == {row.rewrite.name for row in ROWS.values()}


RUNTIMES = ("onnxruntime", "onnxruntime, unoptimized", "aten2onnx.runtime")


@functools.cache
def exports(name: str) -> tuple[aten2onnx.ExportedModel, aten2onnx.ExportedModel, dict[str, tuple]]:
    """The row's model exported with the optimizer's rewrites up to the one before its rewrite, and up to it;
    and its inputs."""
    row = ROWS[name]
    position = REWRITES.index(row.rewrite)
    model, cases = row.make(), row.inputs()
    made = []
    for last in (position, position + 1):
        graph_optimizer.REWRITES = REWRITES[:last]  # (set and put back here: the exports outlive one test)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exported = aten2onnx.export(model, next(iter(cases.values())), opset=row.opset, optimize=row.optimize)
                exported.model_proto  # (lazy weights are folded here, while the list is cut)
        finally:
            graph_optimizer.REWRITES = REWRITES
        made.append(exported)
    return made[0], made[1], cases


def run(exported: aten2onnx.ExportedModel, args: tuple[torch.Tensor, ...], runtime: str) -> list[torch.Tensor]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if runtime == "aten2onnx.runtime":
            return flat_tensors(exported.run(*args))
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if runtime == "onnxruntime, unoptimized":
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(exported.model_proto.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {name: x.numpy() for name, x in zip(exported.input_names, args)}
        return [torch.from_numpy(o) for o in session.run(None, feeds)]


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]) if t.is_floating_point() else t


def differences(before: torch.Tensor, after: torch.Tensor, preserves: str, tolerance: float, overflows: bool
                ) -> str | None:
    """What after changed of before that the rewrite's property forbids, or None. overflows: the inputs reach the
    top of the range, where a rounding rewrite may overflow or not where the graph before it did not or did: only
    the elements finite in both are compared."""
    if before.shape != after.shape or before.dtype != after.dtype:
        return f"{after.dtype}{list(after.shape)} where {before.dtype}{list(before.shape)} was"
    if not before.is_floating_point():
        return None if torch.equal(before, after) else f"{int((before != after).sum())} integers differ"
    nan = torch.isnan(before)
    if preserves != "bitwise" and overflows:
        finite = torch.isfinite(before) & torch.isfinite(after)
        before, after = before[finite], after[finite]
        nan = torch.isnan(before)
    if not torch.equal(nan, torch.isnan(after)):
        return f"NaN at {int((nan != torch.isnan(after)).sum())} elements where the other was not"
    if preserves == "bitwise":
        changed = (bits(before) != bits(after)) & ~nan
        return None if not changed.any() else (f"{int(changed.sum())} elements differ in their bits, e.g. "
                                               f"{before[changed][:3].tolist()} -> {after[changed][:3].tolist()}")
    infinite = torch.isinf(before)
    if not torch.equal(torch.where(infinite, before, 0), torch.where(torch.isinf(after), after, 0)):
        moved = infinite != torch.isinf(after)
        return f"infinities moved: {before[moved][:3].tolist()} -> {after[moved][:3].tolist()}"
    finite = torch.isfinite(before)
    if not finite.any():
        return None
    scale = before[finite].abs().max()
    error = (after[finite] - before[finite]).abs().max()
    return None if error <= tolerance * scale else f"{float(error)} apart at most, over {tolerance} x {float(scale)}"


@pytest.mark.parametrize("name", list(ROWS))
def test_each_row_needs_its_rewrite(name):
    row = ROWS[name]
    before, after, _ = exports(name)
    ops_before = [n.op_type for n in before.model_proto.graph.node]
    ops_after = [n.op_type for n in after.model_proto.graph.node]
    # (a rewrite may change only what the ops read: the element types of the weights)
    types_before, types_after = (sorted(i.data_type for i in e.model_proto.graph.initializer) for e in (before, after))
    assert (ops_before, types_before) != (ops_after, types_after), f"the graph needs no {row.rewrite.name}: {ops_before}"
    assert row.made is None or (row.made in ops_after and row.made not in ops_before), ops_after


CASES = [pytest.param(name, case, runtime, id=f"{name}|{case}|{runtime}",
                      marks=[pytest.mark.xfail(reason=KNOWN[name, case, runtime], strict=True)]
                      if (name, case, runtime) in KNOWN else [])
         for name in ROWS for case in ROWS[name].inputs() for runtime in RUNTIMES]


@pytest.mark.parametrize("name, case, runtime", CASES)
def test_a_rewrite_keeps_what_it_declares(name, case, runtime):
    row = ROWS[name]
    before, after, cases = exports(name)
    wrong = []
    for i, (b, a) in enumerate(zip(run(before, cases[case], runtime), run(after, cases[case], runtime))):
        found = differences(b, a, row.rewrite.preserves, row.tolerance, overflows=case == "extremes")
        if found is not None:
            wrong.append(f"output {i}: {found}")
    assert not wrong, f"{row.rewrite.name} ({row.rewrite.preserves}): " + "; ".join(wrong)
