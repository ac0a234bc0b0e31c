"""The torch.nn layer table that scripts/nn_sweep.py sweeps and tests/test_nn_layers.py checks: for each
torch.nn module class, how to build a small one, its example inputs, and which of their dims are dynamic.

It lives beside the sweep, not in the package: it is test data, not API (in `aten2onnx/testing` it would
ship with every install, and importing that package needs hypothesis); tests import it by path, as they
import scripts/opinfo_sweep.py. It holds data and the few helpers that make inputs, nothing that exports.

A recipe's `inputs` takes a `Sizes` and returns the layer's positional arguments. A dim written as a
size (`s.batch`, `s.length`, ...) is dynamic, and named after it; a dim written as a number is static.
The sweep finds which is which by changing one size at a time, so the lambda is the one place that says.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import NamedTuple

import torch
from torch import nn


class Sizes(NamedTuple):
    """The sizes dynamic dims take; each differs from the others, so a changed dim names its size."""

    batch: int = 2
    length: int = 5
    tlength: int = 3   # a second sequence: a decoder's target, CTC's labels
    height: int = 6
    width: int = 7
    depth: int = 4


EXAMPLE = Sizes()
SECOND = Sizes(batch=3, length=8, tlength=4, height=9, width=5, depth=6)

# RNNs accumulate over time steps: the tolerance of tests/test_rnn.py (onnxruntime's kernels sum in another order)
RNN_TOLERANCE = (1e-4, 1e-5)


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One torch.nn class: make() builds it (small sizes), inputs(sizes) its arguments. sizes: (example,
    second) overriding EXAMPLE/SECOND for a size the layer constrains. tolerance: (rtol, atol) where eager
    and an export legitimately differ, else assert_close's defaults. expect: the outcome at opset 18 with
    dynamic dims that tests/test_nn_layers.py asserts, with the reason when it is not "native"; an
    outcome matches when it starts with expect ("fallback: aten::x", "fixed dim", "wrong", "error: ...")."""

    make: Callable[[], nn.Module]
    inputs: Callable[[Sizes], tuple]
    sizes: Mapping[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    tolerance: tuple[float, float] | None = None
    expect: str = "native"
    reason: str = ""

    def at(self, which: Sizes) -> Sizes:
        """EXAMPLE or SECOND with this recipe's overrides."""
        pick = 0 if which == EXAMPLE else 1
        return which._replace(**{name: both[pick] for name, both in self.sizes.items()})


# torch.nn classes with no recipe, and why: bases and containers, whose forward is another module's
SKIPPED = {
    "Module": "abstract base: forward is not implemented",
    "Container": "deprecated container (Sequential's predecessor): no forward of its own",
    "Sequential": "container: its forward is its children's, each swept on its own",
    "ModuleList": "container: no forward",
    "ModuleDict": "container: no forward",
    "ParameterList": "container of parameters: no forward",
    "ParameterDict": "container of parameters: no forward",
    "RNNBase": "abstract base of RNN, LSTM and GRU: forward is not implemented",
    "RNNCellBase": "abstract base of RNNCell, LSTMCell and GRUCell: forward is not implemented",
}


def randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def labels(n: int, classes: int, *more: int) -> torch.Tensor:
    return torch.randint(0, classes, (n, *more))


def signs(*shape: int) -> torch.Tensor:
    """-1 or 1: the targets of the margin and embedding losses."""
    return torch.randint(0, 2, shape).float() * 2 - 1


def multilabel_targets(n: int, classes: int) -> torch.Tensor:
    """MultiLabelMarginLoss's targets: each row some class indices, then -1."""
    rows = []
    for _ in range(n):
        k = int(torch.randint(1, classes, ()))
        rows.append(torch.cat([torch.randperm(classes)[:k], torch.full((classes - k,), -1)]))
    return torch.stack(rows)


def unpool_inputs(s: Sizes, dims: int) -> tuple:
    """MaxUnpool's arguments: max_pool's values and indices for an input twice the size per spatial dim."""
    spatial = (s.depth, s.height, s.width)[3 - dims:]
    pool = (nn.functional.max_pool1d, nn.functional.max_pool2d, nn.functional.max_pool3d)[dims - 1]
    return pool(randn(s.batch, 3, *(2 * d for d in spatial)), 2, return_indices=True)


def ctc_inputs(s: Sizes) -> tuple:
    """log_probs (length, batch, 5), labels (batch, tlength) without the blank 0, every sequence full."""
    return (randn(s.length, s.batch, 5).log_softmax(2), torch.randint(1, 5, (s.batch, s.tlength)),
            torch.full((s.batch,), s.length), torch.full((s.batch,), s.tlength))


def sequence(s: Sizes) -> tuple:
    return (randn(s.batch, 3, s.length),)


def image(s: Sizes) -> tuple:
    return (randn(s.batch, 3, s.height, s.width),)


def volume(s: Sizes) -> tuple:
    return (randn(s.batch, 3, s.depth, s.height, s.width),)


def features(s: Sizes) -> tuple:
    return (randn(s.batch, s.length, 8),)


def pair(s: Sizes) -> tuple:
    """(input, target) of the same shape, for the regression losses."""
    return randn(s.batch, s.length), randn(s.batch, s.length)


def tokens(s: Sizes) -> tuple:
    return (torch.randint(0, 10, (s.batch, s.length)),)


def encoder_layer() -> nn.TransformerEncoderLayer:
    return nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)


def decoder_layer() -> nn.TransformerDecoderLayer:
    return nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True)


def two_sequences(s: Sizes) -> tuple:
    """(target or source, memory or target): batch-first sequences of 8 features, of lengths tlength and length."""
    return randn(s.batch, s.tlength, 8), randn(s.batch, s.length, 8)


R = Recipe
LAYERS: dict[str, Recipe] = {
    # pooling
    "AdaptiveAvgPool1d": R(lambda: nn.AdaptiveAvgPool1d(3), sequence),
    "AdaptiveAvgPool2d": R(lambda: nn.AdaptiveAvgPool2d((3, 2)), image),
    "AdaptiveAvgPool3d": R(lambda: nn.AdaptiveAvgPool3d(2), volume),
    "AdaptiveMaxPool1d": R(lambda: nn.AdaptiveMaxPool1d(3), sequence),
    "AdaptiveMaxPool2d": R(lambda: nn.AdaptiveMaxPool2d((3, 2)), image),
    "AdaptiveMaxPool3d": R(lambda: nn.AdaptiveMaxPool3d(2), volume),
    "AvgPool1d": R(lambda: nn.AvgPool1d(3, stride=2, padding=1), sequence),
    "AvgPool2d": R(lambda: nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False), image),
    "AvgPool3d": R(lambda: nn.AvgPool3d(2), volume),
    "MaxPool1d": R(lambda: nn.MaxPool1d(3, stride=2, padding=1), sequence),
    "MaxPool2d": R(lambda: nn.MaxPool2d(2, ceil_mode=True), image),
    "MaxPool3d": R(lambda: nn.MaxPool3d(2), volume),
    "LPPool1d": R(lambda: nn.LPPool1d(2, 2), sequence),
    "LPPool2d": R(lambda: nn.LPPool2d(2, 2), image),
    "LPPool3d": R(lambda: nn.LPPool3d(2, 2), volume),
    # fixed samples: without them the pooling regions are drawn at each call; up to 8 in a batch
    "FractionalMaxPool2d": R(lambda: nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=torch.rand(8, 3, 2)),
                             image),
    "FractionalMaxPool3d": R(lambda: nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=torch.rand(8, 3, 3)),
                             volume),
    # native on one thread, as the sweep and its test run; with more, the export's check of torch's decomposition
    # of max_unpool (on random, repeated indices, where eager's kernel races) fails by chance: fallback
    "MaxUnpool1d": R(lambda: nn.MaxUnpool1d(2), lambda s: unpool_inputs(s, 1)),
    "MaxUnpool2d": R(lambda: nn.MaxUnpool2d(2), lambda s: unpool_inputs(s, 2)),
    "MaxUnpool3d": R(lambda: nn.MaxUnpool3d(2), lambda s: unpool_inputs(s, 3)),
    # convolutions
    "Conv1d": R(lambda: nn.Conv1d(3, 4, 3, padding=1), sequence),
    "Conv2d": R(lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), image),
    "Conv3d": R(lambda: nn.Conv3d(3, 4, 2), volume),
    "ConvTranspose1d": R(lambda: nn.ConvTranspose1d(3, 4, 3, stride=2), sequence),
    "ConvTranspose2d": R(lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), image),
    "ConvTranspose3d": R(lambda: nn.ConvTranspose3d(3, 4, 2), volume),
    "LazyConv1d": R(lambda: nn.LazyConv1d(4, 3, padding=1), sequence),
    "LazyConv2d": R(lambda: nn.LazyConv2d(4, 3, stride=2, padding=1), image),
    "LazyConv3d": R(lambda: nn.LazyConv3d(4, 2), volume),
    "LazyConvTranspose1d": R(lambda: nn.LazyConvTranspose1d(4, 3, stride=2), sequence),
    "LazyConvTranspose2d": R(lambda: nn.LazyConvTranspose2d(4, 3, stride=2, padding=1, output_padding=1), image),
    "LazyConvTranspose3d": R(lambda: nn.LazyConvTranspose3d(4, 2), volume),
    "Fold": R(lambda: nn.Fold((4, 5), 2), lambda s: (randn(s.batch, 12, 12),)),  # 12 blocks: fixed by output_size
    "Unfold": R(lambda: nn.Unfold(2, padding=1), image),
    # normalization
    "BatchNorm1d": R(lambda: nn.BatchNorm1d(3), sequence),
    "BatchNorm2d": R(lambda: nn.BatchNorm2d(3), image),
    "BatchNorm3d": R(lambda: nn.BatchNorm3d(3), volume),
    "LazyBatchNorm1d": R(lambda: nn.LazyBatchNorm1d(), sequence),
    "LazyBatchNorm2d": R(lambda: nn.LazyBatchNorm2d(), image),
    "LazyBatchNorm3d": R(lambda: nn.LazyBatchNorm3d(), volume),
    "SyncBatchNorm": R(lambda: nn.SyncBatchNorm(3), image),  # in eval, without a process group: batch_norm
    "InstanceNorm1d": R(lambda: nn.InstanceNorm1d(3, affine=True), sequence),
    "InstanceNorm2d": R(lambda: nn.InstanceNorm2d(3, affine=True), image),
    "InstanceNorm3d": R(lambda: nn.InstanceNorm3d(3, affine=True), volume),
    "LazyInstanceNorm1d": R(lambda: nn.LazyInstanceNorm1d(affine=True), sequence),
    "LazyInstanceNorm2d": R(lambda: nn.LazyInstanceNorm2d(affine=True), image),
    "LazyInstanceNorm3d": R(lambda: nn.LazyInstanceNorm3d(affine=True), volume),
    "GroupNorm": R(lambda: nn.GroupNorm(2, 4), lambda s: (randn(s.batch, 4, s.height, s.width),)),
    "LayerNorm": R(lambda: nn.LayerNorm(8), features),
    "RMSNorm": R(lambda: nn.RMSNorm(8), features),
    "LocalResponseNorm": R(lambda: nn.LocalResponseNorm(3), lambda s: (randn(s.batch, 5, s.height, s.width),)),
    "CrossMapLRN2d": R(lambda: nn.CrossMapLRN2d(3), lambda s: (randn(s.batch, 5, s.height, s.width),)),
    # linear, embedding, attention, recurrent
    "Identity": R(lambda: nn.Identity(), features),
    "Linear": R(lambda: nn.Linear(8, 4), features),
    "LazyLinear": R(lambda: nn.LazyLinear(4), features),
    "Bilinear": R(lambda: nn.Bilinear(4, 5, 3), lambda s: (randn(s.batch, s.length, 4), randn(s.batch, s.length, 5))),
    "DataParallel": R(lambda: nn.DataParallel(nn.Linear(8, 4)), features),  # on the CPU it calls its module
    "Embedding": R(lambda: nn.Embedding(10, 4), tokens),
    "EmbeddingBag": R(lambda: nn.EmbeddingBag(10, 4, mode="mean"), tokens),
    "MultiheadAttention": R(lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                            lambda s: (randn(s.batch, s.tlength, 8), randn(s.batch, s.length, 8),
                                       randn(s.batch, s.length, 8))),
    "Transformer": R(lambda: nn.Transformer(8, 2, 1, 1, dim_feedforward=16, batch_first=True),
                     lambda s: two_sequences(s)[::-1]),  # (source, target)
    "TransformerEncoder": R(lambda: nn.TransformerEncoder(encoder_layer(), 2, enable_nested_tensor=False), features),
    "TransformerEncoderLayer": R(encoder_layer, features),
    "TransformerDecoder": R(lambda: nn.TransformerDecoder(decoder_layer(), 2), two_sequences),
    "TransformerDecoderLayer": R(decoder_layer, two_sequences),
    "RNN": R(lambda: nn.RNN(4, 6, num_layers=2, batch_first=True), lambda s: (randn(s.batch, s.length, 4),),
             tolerance=RNN_TOLERANCE),
    "LSTM": R(lambda: nn.LSTM(4, 6, batch_first=True, bidirectional=True), lambda s: (randn(s.batch, s.length, 4),),
              tolerance=RNN_TOLERANCE),
    "GRU": R(lambda: nn.GRU(4, 6, batch_first=True), lambda s: (randn(s.batch, s.length, 4),),
             tolerance=RNN_TOLERANCE),
    "RNNCell": R(lambda: nn.RNNCell(4, 6), lambda s: (randn(s.batch, 4), randn(s.batch, 6)), tolerance=RNN_TOLERANCE),
    "LSTMCell": R(lambda: nn.LSTMCell(4, 6), lambda s: (randn(s.batch, 4),), tolerance=RNN_TOLERANCE),
    "GRUCell": R(lambda: nn.GRUCell(4, 6), lambda s: (randn(s.batch, 4), randn(s.batch, 6)), tolerance=RNN_TOLERANCE),
    # activations
    "CELU": R(lambda: nn.CELU(0.5), sequence),
    "ELU": R(lambda: nn.ELU(0.5), sequence),
    "GELU": R(lambda: nn.GELU(approximate="tanh"), sequence),
    "GLU": R(lambda: nn.GLU(1), lambda s: (randn(s.batch, 4, s.length),)),
    "Hardshrink": R(lambda: nn.Hardshrink(0.3), sequence),
    "Hardsigmoid": R(lambda: nn.Hardsigmoid(), sequence),
    "Hardswish": R(lambda: nn.Hardswish(), sequence),
    "Hardtanh": R(lambda: nn.Hardtanh(-0.5, 0.8), sequence),
    "LeakyReLU": R(lambda: nn.LeakyReLU(0.1), sequence),
    "LogSigmoid": R(lambda: nn.LogSigmoid(), sequence),
    "LogSoftmax": R(lambda: nn.LogSoftmax(1), sequence),
    "Mish": R(lambda: nn.Mish(), sequence),
    "PReLU": R(lambda: nn.PReLU(3), sequence),
    "RReLU": R(lambda: nn.RReLU(), sequence),  # in eval: leaky_relu at the slope (lower + upper) / 2
    "ReLU": R(lambda: nn.ReLU(), sequence),
    "ReLU6": R(lambda: nn.ReLU6(), sequence),
    "SELU": R(lambda: nn.SELU(), sequence),
    "SiLU": R(lambda: nn.SiLU(), sequence),
    "Sigmoid": R(lambda: nn.Sigmoid(), sequence),
    "Softmax": R(lambda: nn.Softmax(-1), sequence),
    "Softmax2d": R(lambda: nn.Softmax2d(), image),
    "Softmin": R(lambda: nn.Softmin(1), sequence),
    "Softplus": R(lambda: nn.Softplus(2.0, 5.0), sequence),
    "Softshrink": R(lambda: nn.Softshrink(0.3), sequence),
    "Softsign": R(lambda: nn.Softsign(), sequence),
    "Tanh": R(lambda: nn.Tanh(), sequence),
    "Tanhshrink": R(lambda: nn.Tanhshrink(), sequence),
    "Threshold": R(lambda: nn.Threshold(0.1, 20.0), sequence),
    # dropout: identity in eval, which is how every layer is exported
    "Dropout": R(lambda: nn.Dropout(0.5), sequence),
    "Dropout1d": R(lambda: nn.Dropout1d(0.5), sequence),
    "Dropout2d": R(lambda: nn.Dropout2d(0.5), image),
    "Dropout3d": R(lambda: nn.Dropout3d(0.5), volume),
    "AlphaDropout": R(lambda: nn.AlphaDropout(0.5), sequence),
    "FeatureAlphaDropout": R(lambda: nn.FeatureAlphaDropout(0.5), image),
    # padding
    "ConstantPad1d": R(lambda: nn.ConstantPad1d((2, 1), 0.5), sequence),
    "ConstantPad2d": R(lambda: nn.ConstantPad2d((1, 0, 2, 1), 0.5), image),
    "ConstantPad3d": R(lambda: nn.ConstantPad3d(1, 0.5), volume),
    "ZeroPad1d": R(lambda: nn.ZeroPad1d((2, 1)), sequence),
    "ZeroPad2d": R(lambda: nn.ZeroPad2d((1, 0, 2, 1)), image),
    "ZeroPad3d": R(lambda: nn.ZeroPad3d(1), volume),
    "ReflectionPad1d": R(lambda: nn.ReflectionPad1d((2, 1)), sequence),
    "ReflectionPad2d": R(lambda: nn.ReflectionPad2d((1, 0, 2, 1)), image),
    "ReflectionPad3d": R(lambda: nn.ReflectionPad3d(1), volume),
    "ReplicationPad1d": R(lambda: nn.ReplicationPad1d((2, 1)), sequence),
    "ReplicationPad2d": R(lambda: nn.ReplicationPad2d((1, 0, 2, 1)), image),
    "ReplicationPad3d": R(lambda: nn.ReplicationPad3d(1), volume),
    "CircularPad1d": R(lambda: nn.CircularPad1d((2, 1)), sequence),
    "CircularPad2d": R(lambda: nn.CircularPad2d((1, 0, 2, 1)), image),
    "CircularPad3d": R(lambda: nn.CircularPad3d(1), volume),
    # shapes and resampling
    "Flatten": R(lambda: nn.Flatten(), image),
    "Unflatten": R(lambda: nn.Unflatten(1, (2, 3)), lambda s: (randn(s.batch, 6, s.length),)),
    "ChannelShuffle": R(lambda: nn.ChannelShuffle(2), lambda s: (randn(s.batch, 4, s.height, s.width),)),
    "PixelShuffle": R(lambda: nn.PixelShuffle(2), lambda s: (randn(s.batch, 8, s.height, s.width),)),
    # height and width must be multiples of the factor
    "PixelUnshuffle": R(lambda: nn.PixelUnshuffle(2), lambda s: (randn(s.batch, 2, s.height, s.width),),
                        sizes={"height": (6, 10), "width": (4, 8)}),
    "Upsample": R(lambda: nn.Upsample(scale_factor=2, mode="bilinear"), image),
    "UpsamplingBilinear2d": R(lambda: nn.UpsamplingBilinear2d(scale_factor=2), image),
    "UpsamplingNearest2d": R(lambda: nn.UpsamplingNearest2d(scale_factor=2), image),
    # distances
    "CosineSimilarity": R(lambda: nn.CosineSimilarity(1),
                          lambda s: (randn(s.batch, 8, s.length), randn(s.batch, 8, s.length))),
    "PairwiseDistance": R(lambda: nn.PairwiseDistance(), lambda s: (randn(s.batch, 8), randn(s.batch, 8))),
    # losses: (input, target, ...) as each documents; the mean over the batch unless said
    "L1Loss": R(lambda: nn.L1Loss(), pair),
    "MSELoss": R(lambda: nn.MSELoss(), pair),
    "HuberLoss": R(lambda: nn.HuberLoss(delta=0.5), pair),
    "SmoothL1Loss": R(lambda: nn.SmoothL1Loss(beta=0.5), pair),
    "SoftMarginLoss": R(lambda: nn.SoftMarginLoss(), lambda s: (randn(s.batch, s.length), signs(s.batch, s.length))),
    "BCELoss": R(lambda: nn.BCELoss(),
                 lambda s: (torch.rand(s.batch, s.length) * 0.9 + 0.05, torch.rand(s.batch, s.length))),
    "BCEWithLogitsLoss": R(lambda: nn.BCEWithLogitsLoss(pos_weight=torch.tensor(2.0)),
                           lambda s: (randn(s.batch, s.length), torch.rand(s.batch, s.length))),
    "PoissonNLLLoss": R(lambda: nn.PoissonNLLLoss(),
                        lambda s: (randn(s.batch, s.length), torch.rand(s.batch, s.length) * 3)),
    "GaussianNLLLoss": R(lambda: nn.GaussianNLLLoss(),
                         lambda s: (randn(s.batch, s.length), randn(s.batch, s.length),
                                    torch.rand(s.batch, s.length) + 0.1)),
    "KLDivLoss": R(lambda: nn.KLDivLoss(reduction="batchmean"),
                   lambda s: (randn(s.batch, s.length).log_softmax(1), randn(s.batch, s.length).softmax(1))),
    "CrossEntropyLoss": R(lambda: nn.CrossEntropyLoss(label_smoothing=0.1),
                          lambda s: (randn(s.batch, 5, s.length), labels(s.batch, 5, s.length))),
    "NLLLoss": R(lambda: nn.NLLLoss(weight=torch.rand(5) + 0.5),
                 lambda s: (randn(s.batch, 5).log_softmax(1), labels(s.batch, 5))),
    "NLLLoss2d": R(lambda: nn.NLLLoss2d(), lambda s: (randn(s.batch, 5, s.height, s.width).log_softmax(1),
                                                      labels(s.batch, 5, s.height, s.width))),
    "MultiMarginLoss": R(lambda: nn.MultiMarginLoss(), lambda s: (randn(s.batch, 5), labels(s.batch, 5))),
    "MultiLabelMarginLoss": R(lambda: nn.MultiLabelMarginLoss(),
                              lambda s: (randn(s.batch, 5), multilabel_targets(s.batch, 5))),
    "MultiLabelSoftMarginLoss": R(lambda: nn.MultiLabelSoftMarginLoss(),
                                  lambda s: (randn(s.batch, 5), torch.randint(0, 2, (s.batch, 5)).float())),
    "HingeEmbeddingLoss": R(lambda: nn.HingeEmbeddingLoss(),
                            lambda s: (randn(s.batch, s.length), signs(s.batch, s.length))),
    "CosineEmbeddingLoss": R(lambda: nn.CosineEmbeddingLoss(0.1),
                             lambda s: (randn(s.batch, 8), randn(s.batch, 8), signs(s.batch))),
    "MarginRankingLoss": R(lambda: nn.MarginRankingLoss(0.1),
                           lambda s: (randn(s.batch), randn(s.batch), signs(s.batch))),
    "TripletMarginLoss": R(lambda: nn.TripletMarginLoss(),
                           lambda s: (randn(s.batch, 8), randn(s.batch, 8), randn(s.batch, 8))),
    "TripletMarginWithDistanceLoss": R(lambda: nn.TripletMarginWithDistanceLoss(swap=True),
                                       lambda s: (randn(s.batch, 8), randn(s.batch, 8), randn(s.batch, 8))),
    "CTCLoss": R(lambda: nn.CTCLoss(), ctc_inputs),
    "AdaptiveLogSoftmaxWithLoss": R(lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 8]),
                                    lambda s: (randn(s.batch, 8), labels(s.batch, 10))),
    "LinearCrossEntropyLoss": R(lambda: nn.LinearCrossEntropyLoss(8, 5),
                                lambda s: (randn(s.batch, 8), labels(s.batch, 5))),
}
