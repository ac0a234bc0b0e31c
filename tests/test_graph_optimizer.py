"""The graph optimizer (issue 31): each rewrite, on a model that needs it, removes what it should, and
the optimized graph agrees with the unoptimized one and with eager in onnxruntime and in our runtime;
exact exports are untouched, and a folded weight's source changed after export is refused."""

from __future__ import annotations

import math

import onnx
import pytest
import torch
import torch.nn.functional as F
from conftest import run_ort
from optable import Call

import aten2onnx
from aten2onnx.errors import ExportError


def randn(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


def with_statistics(model: torch.nn.Module) -> torch.nn.Module:
    """Batch norms with statistics that are not the identity's (a fold of the defaults proves little)."""
    gen = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) * 2 - 1)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
            m.bias.data.copy_(torch.rand(m.bias.shape, generator=gen) - 0.5)
    return model.eval()


class ConvBn(torch.nn.Module):
    def __init__(self, conv, bn):
        super().__init__()
        self.conv, self.bn = conv, bn

    def forward(self, x):
        return self.bn(self.conv(x))


class PaddedConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(F.pad(x, (1, 2, 0, 1)))


class SharedConvBn(torch.nn.Module):
    """The conv's output is read by the batch norm and by the sum: no fold."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y) + y


class ReshapedWeight(torch.nn.Module):
    """A weight too large for the translator's own folding of small constants."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(256, 300))

    def forward(self, x):
        return x @ (self.w.reshape(300, 256) * 2).t()


class Twice(torch.nn.Module):
    def forward(self, x):
        return x.sin() * 2 + x.sin() * 2


# name: (model, input, ops that must be gone, ops that must remain)
CASES = {
    "conv_bn": (lambda: with_statistics(ConvBn(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))),
                randn(2, 3, 8, 8), {"BatchNormalization"}, {"Conv"}),
    "conv_no_bias_bn": (lambda: with_statistics(ConvBn(torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.BatchNorm2d(4))),
                        randn(2, 3, 8, 8), {"BatchNormalization"}, {"Conv"}),
    "grouped_conv1d_bn": (lambda: with_statistics(ConvBn(torch.nn.Conv1d(4, 6, 3, groups=2), torch.nn.BatchNorm1d(6))),
                          randn(2, 4, 9), {"BatchNormalization"}, {"Conv"}),
    "conv_transpose_groups_bn": (lambda: with_statistics(ConvBn(torch.nn.ConvTranspose2d(4, 6, 3, groups=2),
                                                                torch.nn.BatchNorm2d(6))),
                                 randn(2, 4, 5, 5), {"BatchNormalization"}, {"ConvTranspose"}),
    "conv3d_bn": (lambda: with_statistics(ConvBn(torch.nn.Conv3d(2, 3, 2), torch.nn.BatchNorm3d(3))),
                  randn(1, 2, 4, 4, 4), {"BatchNormalization"}, {"Conv"}),
    "shared_conv_output": (lambda: with_statistics(SharedConvBn()), randn(2, 3, 8, 8), set(),
                           {"Conv", "BatchNormalization"}),
    "pad_into_conv": (lambda: PaddedConv().eval(), randn(2, 3, 8, 8), {"Pad"}, {"Conv"}),
    # a pool takes a Pad its own pads can do: -inf before MaxPool (timm's MaxPool2dSame), zeros before an
    # AveragePool that counts its pads; it keeps one they cannot
    "pad_into_max_pool": (lambda: Call(lambda x: F.max_pool2d(F.pad(x, (1, 1, 0, 1), value=-math.inf), 3, 2)),
                          randn(2, 3, 9, 8), {"Pad"}, {"MaxPool"}),
    "pad_into_max_pool1d": (lambda: Call(lambda x: F.max_pool1d(F.pad(x, (2, 1), value=-math.inf), 3)),
                            randn(2, 3, 9), {"Pad"}, {"MaxPool"}),
    "pad_into_avg_pool": (lambda: Call(lambda x: F.avg_pool2d(F.pad(x, (1, 2, 1, 0)), 3, 1)),
                          randn(2, 3, 9, 8), {"Pad"}, {"AveragePool"}),
    "zero_pad_before_max_pool": (lambda: Call(lambda x: F.max_pool2d(F.pad(x, (1, 1, 1, 1)), 3, 2)),
                                 randn(2, 3, 9, 8), set(), {"Pad", "MaxPool"}),
    "pad_before_avg_pool_not_counting_its_own": (
        lambda: Call(lambda x: F.avg_pool2d(F.pad(x, (1, 1, 1, 1)), 3, 2, padding=1, count_include_pad=False)),
        randn(2, 3, 9, 8), set(), {"Pad", "AveragePool"}),
    "pad_before_avg_pool_in_ceil_mode": (lambda: Call(lambda x: F.avg_pool2d(F.pad(x, (1, 1, 1, 1)), 3, 2, ceil_mode=True)),
                                         randn(2, 3, 9, 8), set(), {"Pad", "AveragePool"}),
    "pad_before_max_pool_with_indices": (
        lambda: Call(lambda x: F.max_pool2d(F.pad(x, (1, 1, 1, 1), value=-math.inf), 3, 2, return_indices=True)[1]),
        randn(2, 3, 9, 8), set(), {"Pad", "MaxPool"}),
    "pad_wider_than_the_window": (lambda: Call(lambda x: F.max_pool2d(F.pad(x, (3, 3, 0, 0), value=-math.inf), 2)),
                                  randn(2, 3, 9, 8), set(), {"Pad", "MaxPool"}),
    "reshaped_weight": (lambda: ReshapedWeight().eval(), randn(3, 256), {"Reshape", "Mul", "Transpose"}, {"MatMul"}),
    "duplicates": (lambda: Twice().eval(), randn(3, 4), set(), {"Sin"}),
}


def op_types(exported) -> list[str]:
    return [n.op_type for n in exported.model_proto.graph.node]


@pytest.mark.parametrize("opset", [9, 11, 18])
@pytest.mark.parametrize("name", list(CASES))
def test_optimized_graphs_agree_with_the_unoptimized_and_with_eager(name, opset):
    make, x, gone, kept = CASES[name]
    model = make()
    with torch.no_grad():
        want = model(x)
    plain = aten2onnx.export(model, (x,), opset=opset, optimize=False)
    optimized = aten2onnx.export(model, (x,), opset=opset)
    assert not gone & set(op_types(optimized)), op_types(optimized)
    assert kept <= set(op_types(optimized)), op_types(optimized)
    assert gone <= set(op_types(plain)), op_types(plain)  # (the case needs the rewrite)
    assert len(op_types(optimized)) < len(op_types(plain)) or not gone
    name_in = optimized.input_names[0]
    # a sum's rounding scales with its terms, not its result: an output that cancels to near 0 is as far from
    # eager as the largest (onnxruntime's AVX-512 matmul kernels: 1.8e-5 on an output of 0.67, K = 256)
    atol = 1e-5 * max(1.0, float(want.abs().max()))
    for exported in (plain, optimized):
        got = torch.from_numpy(run_ort(exported.model_proto, {name_in: x})[0])
        torch.testing.assert_close(got, want, rtol=1e-5, atol=atol)
        torch.testing.assert_close(exported.run(x), want, rtol=1e-5, atol=atol)
    if name == "duplicates":
        assert op_types(optimized).count("Sin") == 1 and op_types(plain).count("Sin") == 2


def test_exact_exports_are_not_optimized():
    model = with_statistics(ConvBn(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)))
    x = randn(2, 3, 8, 8)
    exported = aten2onnx.export(model, (x,), exact=True)
    assert "BatchNormalization" in op_types(exported)
    with torch.no_grad():
        assert torch.equal(exported.run(x), model(x))


def test_a_weight_a_folded_one_came_from_changed_after_export_is_refused():
    model = with_statistics(ConvBn(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)))
    exported = aten2onnx.export(model, (randn(2, 3, 8, 8),))
    with torch.no_grad():
        model.bn.running_var.mul_(2)
    with pytest.raises(ExportError, match="changed in place"):
        exported.model_proto


def test_graph_outputs_keep_their_names_when_a_node_is_bypassed():
    exported = aten2onnx.export(lambda x: (x.reshape(3, 4), x.float() + 1), (randn(3, 4),),
                                output_names=["same", "plus"])
    assert [o.name for o in exported.model_proto.graph.output] == ["same", "plus"]
    x = randn(3, 4)
    got = run_ort(exported.model_proto, {exported.input_names[0]: x})
    torch.testing.assert_close(torch.from_numpy(got[0]), x)
    torch.testing.assert_close(torch.from_numpy(got[1]), x + 1)


# name: (function, input, op type, its count after optimization)
CHAINS = {
    "reshape_of_reshape": (lambda x: x.reshape(6, 4).reshape(2, 12) * 2, randn(2, 3, 4), "Reshape", 1),
    "reshape_to_inferred": (lambda x: x.reshape(4, 6).reshape(-1, 2, 3) + 1, randn(2, 3, 4), "Reshape", 1),
    "transpose_of_transpose": (lambda x: x.transpose(0, 1).permute(2, 0, 1) + 1, randn(2, 3, 4), "Transpose", 1),
    "transposes_that_cancel": (lambda x: x.transpose(0, 1).transpose(0, 1) + 1, randn(2, 3, 4), "Transpose", 0),
    "reshape_copying_a_dim": (lambda x: x.reshape(6, 4).reshape(x.shape[0] * 3, -1) * 2, randn(2, 3, 4), "Reshape", None),
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_chains_of_reshapes_and_transposes_collapse(name):
    fn, x, op, count = CHAINS[name]
    optimized = aten2onnx.export(fn, (x,))
    plain = aten2onnx.export(fn, (x,), optimize=False)
    if count is not None:
        assert op_types(optimized).count(op) == count < op_types(plain).count(op), op_types(optimized)
    got = run_ort(optimized.model_proto, {optimized.input_names[0]: x})[0]
    torch.testing.assert_close(torch.from_numpy(got), fn(x), rtol=0, atol=0)


# OpInfos whose graphs the optimizer rewrites (batch norm after Conv, pads, reshapes and transposes of
# weights, chains of Reshape and Transpose, duplicates, casts)
REWRITTEN_OPINFOS = ["nn.functional.conv2d", "nn.functional.pad.constant", "nn.functional.max_pool2d",
                     "nn.functional.avg_pool2d", "nn.functional.linear", "reshape", "permute", "flatten",
                     "nn.functional.batch_norm", "repeat", "expand"]


@pytest.mark.parametrize("name", REWRITTEN_OPINFOS)
def test_the_optimizer_agrees_with_the_translation_on_opinfos(name):
    """The OpInfo sweep's --differential on OpInfos the optimizer rewrites: no failure of the optimized export
    where the graph as translated passes (both held to eager in both runtimes)."""
    from optable import opinfo_statuses

    for opset, entry in opinfo_statuses(name, [11, 18], samples=3, differential=True).items():
        assert not entry.get("category", "").startswith("optimizer:"), f"{name} at opset {opset}: {entry}"


def test_the_differential_sweep_names_a_mismatch_the_optimizer_makes(monkeypatch):
    """A broken rewrite (chains collapsed into Transposes that permute nothing) is found as the optimizer's."""
    from aten2onnx.exporter.rewrites import tidy
    from optable import opinfo_statuses

    collapse = tidy._collapse_chains

    def broken(nodes):
        nodes = collapse(nodes)
        for node in nodes:
            if node.op_type == "Transpose" and "perm" in node.attrs:
                node.attrs = dict(node.attrs, perm=sorted(node.attrs["perm"]))
        return nodes

    monkeypatch.setattr(tidy, "_collapse_chains", broken)
    entries = opinfo_statuses("permute", [18], samples=2, differential=True)
    assert entries["18"]["category"].startswith("optimizer:"), entries


class Rotary(torch.nn.Module):
    """A rotary table computed from a buffer at static positions (LLaMA's rotary embedding)."""

    def __init__(self, positions):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, 32, 2) / 32), persistent=False)
        self.positions = positions

    def forward(self, x):
        t = torch.arange(self.positions, dtype=torch.float32)[:, None] * self.inv_freq
        emb = torch.cat([t, t], -1)
        return x * emb.cos() + x.flip(-1) * emb.sin()


@pytest.mark.parametrize("positions, folded", [(64, True), (1024, False)])
def test_small_tables_computed_from_weights_are_folded(positions, folded):
    """A result larger than the weights it comes from is folded up to 64 KiB (the 64-position table
    is 8 KiB; the 1024-position one 128 KiB stays computed)."""
    model, x = Rotary(positions).eval(), randn(2, positions, 32)
    exported = aten2onnx.export(model, (x,))
    assert ("Cos" not in op_types(exported)) == folded, op_types(exported)
    with torch.no_grad():
        want = model(x)
    got = torch.from_numpy(run_ort(exported.model_proto, {exported.input_names[0]: x})[0])
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(exported.run(x), want, rtol=1e-5, atol=1e-5)


# name: (input dims, Reshape's shape, allowzero, whether the Reshape gives its input's dims)
RESHAPES = {
    "same_static": ((2, 3, 4), [2, 3, 4], 0, True),
    "inferred_static": ((2, 3, 4), [2, -1, 4], 0, True),
    "copied_static": ((2, 3, 4), [0, 0, -1], 0, True),
    "merged_static": ((2, 3, 4), [6, 4], 0, False),
    "swapped_static": ((2, 3), [3, 2], 0, False),
    "two_inferred": ((2, 3), [-1, -1], 0, False),
    "copied_with_allowzero": ((2, 3, 4), [0, 3, 4], 1, False),
    "same_with_allowzero": ((2, 3, 4), [2, 3, 4], 1, True),
    "empty_copied": ((0, 3), [0, 3], 0, True),
    "empty_kept_with_allowzero": ((0, 3), [0, 3], 1, False),
    "same_symbolic": (("s0", 3, 4), [0, 3, 4], 0, True),
    "inferred_symbolic": (("s0", 3, 4), [-1, 3, 4], 0, True),
    "two_symbolic": (("s0", "s1", 4), [0, -1, 4], 0, True),
    "symbolic_not_copied": (("s0", "s1", 4), [-1, 3, 4], 0, False),
    "symbolic_with_allowzero": (("s0", 3, 4), [0, 3, 4], 1, False),
    "unknown_dim": ((None, 3), [-1, 3], 0, False),
}


@pytest.mark.parametrize("name", list(RESHAPES))
def test_a_reshape_is_a_no_op_only_where_it_gives_its_input_dims(name):
    from aten2onnx.exporter.rewrites.tidy import _is_no_op
    from aten2onnx.ir.builder import Node, Value
    dims, shape, allowzero, expected = RESHAPES[name]
    x = Value("x", torch.float32, dims, kind="input")
    target = Value("shape", torch.int64, (len(shape),), const=torch.tensor(shape), kind="const")
    node = Node("Reshape", [x, target], [Value("y", torch.float32)], {"allowzero": allowzero} if allowzero else {},
                "", "reshape", {})
    assert _is_no_op(node) is expected
    if all(isinstance(d, int) for d in dims) and shape.count(-1) < 2 and not (allowzero and 0 in shape):
        # the truth for static dims: what torch's reshape gives, 0 copied as onnx copies it
        resolved = [dims[i] if n == 0 and not allowzero else n for i, n in enumerate(shape)]
        assert (list(torch.empty(dims).reshape(resolved).shape) == list(dims)) is expected


class PostNorm(torch.nn.Module):
    """BERT's block ends: a linear layer plus the residual, then a layer norm; read_sum: the sum is read
    again (a pre-norm block's residual stream)."""

    def __init__(self, read_sum=False, dtype=torch.float32):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16).to(dtype)
        self.norm = torch.nn.LayerNorm(16).to(dtype)
        self.read_sum = read_sum

    def forward(self, x):
        total = self.linear(x) + x
        return (self.norm(total), total * 2) if self.read_sum else self.norm(total)


class EmbeddingSum(torch.nn.Module):
    """BERT's embeddings: three tensors added, then a layer norm."""

    def __init__(self):
        super().__init__()
        self.positions = torch.nn.Parameter(randn(5, 16))
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        return self.norm(x + x.sin() + self.positions)


# name: (model, input dtype, whether the sum becomes a Sum)
LAYER_NORM_SUMS = {
    "linear_plus_residual": (PostNorm(), torch.float32, True),
    "three_terms": (EmbeddingSum(), torch.float32, True),
    "sum_read_again": (PostNorm(read_sum=True), torch.float32, False),
    "float64": (PostNorm(dtype=torch.float64), torch.float64, False),
}


@pytest.mark.parametrize("name", list(LAYER_NORM_SUMS))
def test_sums_a_layer_norm_alone_reads_are_not_fused_by_onnxruntime(name, tmp_path):
    """onnxruntime fuses Add + LayerNormalization into SkipLayerNormalization, several times slower on its CPU
    provider: the optimizer writes Sum there, which it leaves alone, and which adds as the Adds did."""
    import onnxruntime as ort

    model, dtype, summed = LAYER_NORM_SUMS[name]
    model = model.eval()
    x = randn(2, 5, 16).to(dtype)
    exported = aten2onnx.export(model, (x,))
    assert ("Sum" in op_types(exported)) is summed, op_types(exported)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    session = ort.InferenceSession(exported.model_proto.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    fused = {n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node}
    if summed:
        assert "SkipLayerNormalization" not in fused, fused
    with torch.no_grad():
        want = model(x)
    want = want if isinstance(want, tuple) else (want,)
    got = session.run(None, {exported.input_names[0]: x.numpy()})
    ours = exported.run(x)
    for onnxruntime_result, runtime_result, w in zip(got, ours if isinstance(ours, tuple) else (ours,), want):
        torch.testing.assert_close(torch.from_numpy(onnxruntime_result), w)
        torch.testing.assert_close(runtime_result, w)


# name: (function, whether the Mul or Div by one is bypassed)
TIMES_ONE = {
    "mul_by_one": (lambda x: (x * 1.0).exp(), True),
    "div_by_one": (lambda x: (x / 1.0).exp(), True),
    "mul_by_a_one_tensor": (lambda x: (x * torch.ones(1, 1)).exp(), True),
    "mul_by_ones_that_broadcast": (lambda x: (x * torch.ones(2, 3, 4)).exp(), False),
    "mul_by_two": (lambda x: (x * 2.0).exp(), False),
}


@pytest.mark.parametrize("name", list(TIMES_ONE))
def test_a_mul_or_div_by_one_is_bypassed(name):
    fn, bypassed = TIMES_ONE[name]
    x = torch.tensor([[float("nan"), float("inf"), -0.0, 1e-45]]).expand(3, 4).contiguous()
    optimized = aten2onnx.export(fn, (x,))
    assert ({"Mul", "Div"} & set(op_types(optimized))) == (set() if bypassed else {"Mul"}), op_types(optimized)
    got = run_ort(optimized.model_proto, {optimized.input_names[0]: x})[0]
    torch.testing.assert_close(torch.from_numpy(got), fn(x), rtol=0, atol=0, equal_nan=True)


class RMSNorm(torch.nn.Module):
    """An RMS norm as transformers' LLaMA and T5 modules write it (pow, mean, rsqrt, weight)."""

    def __init__(self, hidden=16, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + randn(hidden) / 4)
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


@pytest.mark.parametrize("opset", [18, 23, 24])
def test_rms_norms_are_rms_normalization_from_opset_23(opset):
    model = RMSNorm().eval()
    x = randn(2, 5, 16)
    exported = aten2onnx.export(model, (x,), opset=opset)
    assert (op_types(exported) == ["RMSNormalization"]) is (opset >= 23), op_types(exported)
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, {exported.input_names[0]: x})[0]), want)
    torch.testing.assert_close(exported.run(x), want)
