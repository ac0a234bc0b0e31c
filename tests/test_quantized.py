"""Quantized models (PT2E's convert_pt2e, torchao's quantize_) exported natively: onnxruntime's result
against the quantized eager model's (and the float model's), the integer kernels onnxruntime runs them on
(read from its optimized graph), integer weights in the file, and exact mode bit for bit in
aten2onnx.runtime. Needs torchao (`pip install aten2onnx[quant]`); skipped without it."""

from __future__ import annotations

import math
import os
import tempfile
import warnings
from unittest import mock

import onnx
import onnxruntime as ort
import pytest
import torch

import aten2onnx

torchao = pytest.importorskip("torchao", exc_type=ImportError)

from torchao.quantization import quantize_  # noqa: E402
import torchao.quantization as tq  # noqa: E402
from torchao.quantization.pt2e import move_exported_model_to_eval  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e  # noqa: E402
import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq  # noqa: E402

# what onnxruntime runs on integers (its optimized graph's op types)
INTEGER_KERNELS = {"QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger", "MatMulIntegerToFloat",
                   "DynamicQuantizeMatMul", "QGemm", "MatMulNBits"}

EIGHT_BITS = {onnx.TensorProto.INT8, onnx.TensorProto.UINT8}


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.relu(self.conv2(torch.relu(self.conv(x)))).mean((2, 3)))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(32, 64), torch.nn.Linear(64, 64), torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def encoder_layer():
    torch.backends.mha.set_fastpath_enabled(False)
    return torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)


def tiny_bert():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64)
    return transformers.BertModel(config, add_pooling_layer=False)


# name -> (model factory, example input factory)
MODELS = {
    "cnn": (CNN, lambda: torch.randn(2, 3, 16, 16)),
    "mlp": (MLP, lambda: torch.randn(8, 32)),
    "encoder_layer": (encoder_layer, lambda: torch.randn(2, 10, 32)),
    "bert": (tiny_bert, lambda: torch.randint(0, 100, (2, 12))),
}


def pt2e(model: torch.nn.Module, x: torch.Tensor, mode: str, dynamic_shapes=None) -> torch.nn.Module:
    """model quantized by X86InductorQuantizer: static, dynamic, or trained with fake quantization (qat),
    captured with dynamic_shapes (a dim dynamic in the export must be dynamic in this capture already)."""
    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config(is_dynamic=mode == "dynamic",
                                                                         is_qat=mode == "qat"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        captured = torch.export.export(model, (x,), dynamic_shapes=dynamic_shapes).module()
        if mode == "qat":
            prepared = prepare_qat_pt2e(captured, quantizer)
            prepared(x)  # a step of observing (the training loop's forward)
            move_exported_model_to_eval(prepared)
        else:
            prepared = prepare_pt2e(captured, quantizer)
            for _ in range(2):
                prepared(x)
        return convert_pt2e(prepared)


def ort_run(model: aten2onnx.ExportedModel, x: torch.Tensor) -> tuple[torch.Tensor, set[str], dict[str, int]]:
    """onnxruntime's output, the op types of its optimized graph, and the file's initializers' types."""
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "model.onnx")
    model.save(path)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.optimized_model_filepath = os.path.join(folder, "optimized.onnx")
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    out = torch.from_numpy(session.run(None, {name: x.numpy()})[0])
    optimized = onnx.load(options.optimized_model_filepath)
    saved = onnx.load(path)
    return out, {n.op_type for n in optimized.graph.node}, {i.name: i.data_type for i in saved.graph.initializer}


def first(out):
    return out[0] if isinstance(out, (tuple, list)) else getattr(out, "last_hidden_state", out)


def assert_quantized_result(ours: torch.Tensor, quantized: torch.Tensor, fp: torch.Tensor) -> None:
    """onnxruntime's output is the quantized model's, not the float model's: its mean distance to the
    quantized eager output is under a quarter of the quantization's own (quantized eager vs float), and
    no element is further from it than the quantization moved any element."""
    to_quantized = (ours - quantized).abs()
    quantization = (quantized - fp).abs()
    assert to_quantized.mean() < 0.25 * quantization.mean(), (float(to_quantized.mean()), float(quantization.mean()))
    assert to_quantized.max() <= quantization.max(), (float(to_quantized.max()), float(quantization.max()))


PT2E_CASES = [(name, mode) for name in MODELS for mode in ("static", "dynamic", "qat")]


@pytest.mark.parametrize("name,mode", PT2E_CASES)
def test_pt2e_on_integer_kernels(name, mode):
    factory, example = MODELS[name]
    model = factory().eval()
    x = example()
    fp = first(model(x))
    quantized_model = pt2e(model, x, mode)
    quantized = first(quantized_model(x))
    for opset in (13, 18, 21):
        exported = aten2onnx.export(quantized_model, (x,), opset=opset)
        assert exported.fallback_ops == [], (opset, exported.fallback_ops)
        ours, kernels, initializers = ort_run(exported, x)
        assert_quantized_result(ours, quantized, fp)
        assert kernels & INTEGER_KERNELS, (opset, sorted(kernels))
        # every float weight the quantizer quantized is stored as integers (int8, or shifted to uint8 for
        # onnxruntime's integer kernels)
        assert any(t in EIGHT_BITS for t in initializers.values()), initializers


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_pt2e_exact_is_bitwise(name):
    factory, example = MODELS[name]
    x = example()
    for mode in ("static", "dynamic"):
        quantized_model = pt2e(factory().eval(), x, mode)
        exported = aten2onnx.export(quantized_model, (x,), opset=18, exact=True)
        assert torch.equal(exported.run(x), quantized_model(x)), mode


def test_pt2e_exported_program_form():
    """convert_pt2e's GraphModule captured again by the user (an ExportedProgram) exports the same."""
    x = torch.randn(8, 32)
    quantized_model = pt2e(MLP().eval(), x, "static")
    program = torch.export.export(quantized_model, (x,))
    exported = aten2onnx.export(program, (x,), opset=18)
    assert exported.fallback_ops == []
    ours, kernels, _ = ort_run(exported, x)
    torch.testing.assert_close(ours, quantized_model(x), atol=1e-5, rtol=1e-5)
    assert kernels & INTEGER_KERNELS


TORCHAO_CONFIGS = {
    "int8_weight_only": lambda: tq.Int8WeightOnlyConfig(),
    "int8_dynamic": lambda: tq.Int8DynamicActivationInt8WeightConfig(),
    "int4_weight_only": lambda: tq.IntxWeightOnlyConfig(weight_dtype=torch.int4),
    "int4_grouped": lambda: tq.IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=tq.PerGroup(32)),
}


@pytest.mark.parametrize("config", sorted(TORCHAO_CONFIGS))
def test_torchao_quantize(config):
    model = MLP().eval()
    x = torch.randn(8, 32)
    fp = model(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(model, TORCHAO_CONFIGS[config]())
    quantized = model(x)
    for opset in (13, 18, 21):
        exported = aten2onnx.export(model, (x,), opset=opset)
        assert exported.fallback_ops == [], (opset, exported.fallback_ops)
        ours, kernels, initializers = ort_run(exported, x)
        assert_quantized_result(ours, quantized, fp)
        # the weights are integers in the file, never a float copy (4-bit ones as int4 from opset 21)
        weights = {name: t for name, t in initializers.items() if name.startswith(("fc1.weight", "fc2.weight"))}
        integers = EIGHT_BITS | ({onnx.TensorProto.INT4} if opset >= 21 else set())
        assert weights and all(t in integers for t in weights.values()), initializers
        if config != "int8_dynamic" and (opset >= 21 or config in ("int8_weight_only", "int4_weight_only")):
            # weight-only quantization as backends read it: a DequantizeLinear of each integer weight
            dequantized = {i for n in exported.model_proto.graph.node if n.op_type == "DequantizeLinear" for i in n.input}
            assert set(weights) <= dequantized, (sorted(weights), sorted(dequantized))
        if config.startswith("int4") and opset >= 21:
            assert all(t == onnx.TensorProto.INT4 for t in weights.values()), initializers
            # every 4-bit weight's matmul fused by onnxruntime, none dequantized per call (its FusedGemm of a Gemm
            # and the ReLU after it preempted the fusion, 3.2x the float export's latency, before the bias Sum)
            assert "MatMulNBits" in kernels and "DequantizeLinear" not in kernels, sorted(kernels)
        if config == "int8_dynamic":
            assert kernels & INTEGER_KERNELS, sorted(kernels)
    exact = aten2onnx.export(model, (x,), opset=18, exact=True)
    assert torch.equal(exact.run(x), quantized)


def test_tensor_subclass_weight_read_whole_is_our_error():
    """A graph that reads a subclass weight other than through its inner tensors gets our error naming it."""
    from aten2onnx.exporter.translate import SubclassWeight  # noqa: F401  (the binding the error is about)

    model = MLP().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(model, tq.Int8WeightOnlyConfig())
    program = torch.export.export(model, (torch.randn(2, 32),))
    # a node reading the weight whole: the graph rewritten so `t` takes the subclass placeholder itself
    graph = program.graph_module.graph
    inner = next(n for n in graph.nodes if n.target is torch.ops.export.access_subclass_inner_tensor.default)
    inner.target = torch.ops.aten.clone.default
    inner.args = (inner.args[0],)
    program.graph_module.recompile()
    with pytest.raises(aten2onnx.ExportError, match="tensor subclass"):
        aten2onnx.export(program, (torch.randn(2, 32),), opset=18)


def test_eager_mode_quantized_modules_get_our_error_and_its_advice_works():
    """torch.ao's eager-mode convert makes modules torch.export cannot capture: our error names them and
    advises PT2E, which exports the same float model natively."""
    def float_model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()

    x = torch.randn(4, 8)
    model = torch.nn.Sequential(torch.ao.quantization.QuantStub(), float_model(),
                                torch.ao.quantization.DeQuantStub()).eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = torch.ao.quantization.prepare(model)
        prepared(x)
        legacy = torch.ao.quantization.convert(prepared)
    with pytest.raises(aten2onnx.CaptureError, match=r"1\.0 \(torch\.ao\.nn\.quantized.*prepare_pt2e"):
        aten2onnx.export(legacy, (x,), opset=18)
    quantized_model = pt2e(float_model(), x, "static")
    exported = aten2onnx.export(quantized_model, (x,), opset=18)
    ours, kernels, _ = ort_run(exported, x)
    assert kernels & INTEGER_KERNELS
    torch.testing.assert_close(ours, quantized_model(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("form", ["pt2e-static", "pt2e-dynamic", "int8_dynamic", "int4_grouped"])
def test_quantized_model_keeps_a_dynamic_batch(form):
    """The batch declared dynamic stays dynamic: another batch size runs in onnxruntime and matches."""
    model = MLP().eval()
    x = torch.randn(8, 32)
    batch = torch.export.Dim("batch")
    if form.startswith("pt2e"):
        model = pt2e(model, x, form.split("-")[1], dynamic_shapes=({0: batch},))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantize_(model, TORCHAO_CONFIGS[form]())
    exported = aten2onnx.export(model, (x,), opset=21, dynamic_shapes=({0: batch},))
    assert exported.fallback_ops == []
    other = torch.randn(5, 32)
    ours, kernels, _ = ort_run(exported, other)
    assert ours.shape == (5, 10)
    want = model(other)
    assert (ours - want).abs().max() <= 0.25 * (want.abs().max()), float((ours - want).abs().max())
    assert kernels & INTEGER_KERNELS, sorted(kernels)


class SignedActivations(torch.nn.Module):
    """A linear layer on int8 (signed) activations and per-channel int8 weights, as quantizers targeting
    signed kernels (XNNPACK's) write it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("weight", torch.randint(-128, 128, (16, 32), dtype=torch.int8))
        self.register_buffer("scales", torch.rand(16) * 0.01 + 0.001)
        self.register_buffer("zeros", torch.zeros(16, dtype=torch.int64))
        self.bias = torch.nn.Parameter(torch.randn(16))

    def forward(self, x):
        qd = torch.ops.quantized_decomposed
        q = qd.quantize_per_tensor(x, 0.03, -5, -128, 127, torch.int8)
        xd = qd.dequantize_per_tensor(q, 0.03, -5, -128, 127, torch.int8)
        wd = qd.dequantize_per_channel(self.weight, self.scales, self.zeros, 0, -128, 127, torch.int8)
        return torch.nn.functional.linear(xd, wd, self.bias)


@pytest.mark.parametrize("batch", [(8,), (2, 8)])
def test_signed_activations_run_on_integer_kernels(batch):
    model = SignedActivations().eval()
    x = torch.randn(*batch, 32)
    exported = aten2onnx.export(model, (x,), opset=18)
    ours, kernels, _ = ort_run(exported, x)
    assert kernels & INTEGER_KERNELS, sorted(kernels)
    torch.testing.assert_close(ours, model(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("config", ["int4_grouped", "int4_weight_only"])
def test_four_bit_weights_as_matmul_nbits_for_onnxruntime(config):
    """optimize="onnxruntime" writes a 4-bit weight's matmul as MatMulNBits (onnxruntime's own fusion of
    DequantizeLinear into MatMul is preempted where a Gemm and an activation fuse first): its 4-bit bytes,
    the quantized model's result in onnxruntime and aten2onnx.runtime."""
    model = MLP().eval()
    x = torch.randn(8, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(model, TORCHAO_CONFIGS[config]())
    want = model(x)
    exported = aten2onnx.export(model, (x,), opset=21, optimize="onnxruntime")
    ops = [n.op_type for n in exported.model_proto.graph.node]
    assert ops.count("MatMulNBits") == 3, ops
    packed = {i.name: i for i in exported.model_proto.graph.initializer if i.name.endswith(".nbits")}
    assert sum(len(i.raw_data) for i in packed.values()) == (32 * 64 + 64 * 64 + 64 * 10) // 2
    ours, _, _ = ort_run(exported, x)
    torch.testing.assert_close(ours, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(exported.run(x), want, atol=1e-5, rtol=1e-5)


def test_optimize_takes_true_false_or_onnxruntime():
    with pytest.raises(aten2onnx.ArgumentError, match="optimize"):
        aten2onnx.export(MLP().eval(), (torch.randn(2, 32),), optimize="fast")


@pytest.mark.parametrize("opset", [21, 23, 25])
def test_four_bit_per_channel_weights_at_every_opset(opset):
    """A 4-bit weight per output channel (one block of K) laid out for MatMulNBits: from opset 23,
    DequantizeLinear's result has its own type (output_dtype, else the scale's), which the builder took
    for the int4 input's (an InternalError: found by the quantized fuzzer, seed 1019)."""
    model = MLP().eval()
    x = torch.randn(8, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(model, tq.IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=tq.PerAxis(0)))
    want = model(x)
    exported = aten2onnx.export(model, (x,), opset=opset)
    ours, _, initializers = ort_run(exported, x)
    assert onnx.TensorProto.INT4 in initializers.values(), initializers
    torch.testing.assert_close(exported.run(x), want, atol=1e-5, rtol=1e-5)
    assert (ours - want).abs().max() <= 0.01 * want.abs().max()  # (onnxruntime's MatMulNBits at accuracy level 4)


class PooledCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = torch.nn.Conv2d(8, 32, 3, padding=1), torch.nn.Conv2d(32, 16, 3, padding=1)
        self.head = torch.nn.Linear(16, 8)

    def forward(self, x):
        return self.head(self.conv2(torch.nn.functional.avg_pool2d(self.conv1(x), 2)).mean((2, 3)))


def test_averages_of_quantized_values_round_as_eager():
    """An average pool of dequantized values (quantized again by the same parameters, as PT2E shares them) and a
    mean land exactly between two steps for an even count: QuantizeLinear's x / scale rounds that tie to even,
    eager's x * (1 / scale) an ulp to one side. They take eager's arithmetic (found by the quantized fuzzer,
    seed 3013: half of quantization's own effect away, in both runtimes)."""
    torch.manual_seed(0)
    model = PooledCNN().eval()
    x = torch.randn(2, 8, 12, 12) * 0.5
    quantized_model = pt2e(model, x, "static")
    with torch.no_grad():
        want, fp = quantized_model(x), model(x)
    exported = aten2onnx.export(quantized_model, (x,), opset=18)
    ours, kernels, _ = ort_run(exported, x)
    torch.testing.assert_close(exported.run(x), want, atol=1e-6, rtol=1e-6)
    # onnxruntime's QLinearConv requantizes its integer sums by its own rounding, as for any QDQ file
    from aten2onnx.testing.quantized import bounds

    _, ort_bound = bounds(quantized_model, x, want, fp, 18)
    assert (ours - want).abs().max() <= ort_bound
    assert kernels & INTEGER_KERNELS, sorted(kernels)


# -- float8 ----------------------------------------------------------------------------------------------

FLOAT8 = onnx.TensorProto.FLOAT8E4M3FN


class Float8Quantizer:
    """PT2E to float8_e4m3fn: each linear layer's input and weight per tensor, symmetric, by observed ranges
    (convert_pt2e writes quantized_decomposed ops to float8; per channel it cannot, eager's dequantize_per_channel
    subtracts integer zero points from float8)."""

    def __new__(cls):
        from torchao.quantization.pt2e.observer import MinMaxObserver
        from torchao.quantization.pt2e.quantizer import QuantizationAnnotation, QuantizationSpec, Quantizer

        spec = QuantizationSpec(dtype=torch.float8_e4m3fn, quant_min=-448, quant_max=448,
                                qscheme=torch.per_tensor_symmetric, is_dynamic=False,
                                observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=2 ** -12))

        class Annotator(Quantizer):
            def annotate(self, model):
                for node in model.graph.nodes:
                    if node.target == torch.ops.aten.linear.default:
                        node.meta["quantization_annotation"] = QuantizationAnnotation(
                            input_qspec_map={node.args[0]: spec, node.args[1]: spec}, _annotated=True)
                return model

            def validate(self, model):
                pass

        return Annotator()


class AsBFloat16(torch.nn.Module):
    """A bfloat16 model between float32 inputs and outputs (onnxruntime's Python API takes no bfloat16)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x.bfloat16()).float()


def float8_pt2e(model: torch.nn.Module, x: torch.Tensor) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), Float8Quantizer())
        prepared(x)
        return convert_pt2e(prepared)


def float8_torchao_qdq(model: torch.nn.Module, x: torch.Tensor) -> torch.nn.Module:
    """torchao's float8 PT2E reference layers (torchao::quantize_affine_float8_non_decomposed and
    dequantize_affine_float8_non_decomposed, what its float8 inductor passes match)."""
    from torchao.testing.pt2e.utils import fp8_convert_

    fp8_convert_(model)
    return model


def float8_quantize_(config, dtype=torch.float32):
    """torchao's quantize_ with a float8 config. The dynamic ones refuse a machine without a float8 GPU
    (_check_hardware_support) but their tensors run on CPU (torch's _scaled_mm emulation): the check is waived
    to export the graph a GPU's capture holds (its kernel choice "torch"; mslk's is a kernel of its own)."""
    def apply(model: torch.nn.Module, x: torch.Tensor) -> torch.nn.Module:
        model = model.to(dtype)
        with warnings.catch_warnings(), mock.patch("torchao.quantization.quant_api._check_hardware_support",
                                                   lambda granularity: None):
            warnings.simplefilter("ignore")
            quantize_(model, config())
        return model if dtype == torch.float32 else AsBFloat16(model)
    return apply


# form -> the float MLP quantized (model, example input -> quantized model)
FLOAT8_FORMS = {
    "pt2e": float8_pt2e,
    "torchao_pt2e_qdq": float8_torchao_qdq,
    "weight_only": float8_quantize_(lambda: tq.Float8WeightOnlyConfig()),
    "weight_only_per_tensor": float8_quantize_(lambda: tq.Float8WeightOnlyConfig(granularity=tq.PerTensor())),
    "weight_only_grouped": float8_quantize_(lambda: tq.Float8WeightOnlyConfig(granularity=tq.PerGroup(16))),
    "dynamic": float8_quantize_(lambda: tq.Float8DynamicActivationFloat8WeightConfig()),
    "dynamic_per_row": float8_quantize_(lambda: tq.Float8DynamicActivationFloat8WeightConfig(granularity=tq.PerRow()),
                                        torch.bfloat16),
}
# forms whose captured graph dequantizes the weight in plain ATen ops (torchao's Float8Tensor: to float32, times
# the scale), which export as Cast and Mul
CAST_WEIGHTS = {"weight_only", "weight_only_per_tensor", "weight_only_grouped"}


def float8_case(form: str) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The quantized model, an input, its output and the float model's."""
    model = MLP().eval()
    x = torch.randn(8, 32)
    with torch.no_grad():
        fp = model(x)
        quantized_model = FLOAT8_FORMS[form](model, x)
        return quantized_model, x, quantized_model(x), fp


def float8_weights(model: onnx.ModelProto) -> set[str]:
    """The initializers stored as float8 other than zero points."""
    return {i.name for i in model.graph.initializer if i.data_type == FLOAT8 and "zero_point" not in i.name}


@pytest.mark.parametrize("form,opset", [(form, opset) for form in FLOAT8_FORMS for opset in (19, 21, 23)])
def test_float8(form, opset):
    """Each float8 form exports natively: its weights float8 in the file, dequantized by DequantizeLinear where
    the graph holds a quantization op; right in aten2onnx.runtime and onnxruntime (which runs every float8 op
    here on CPU)."""
    model, x, quantized, fp = float8_case(form)
    exported = aten2onnx.export(model, (x,), opset=opset)
    assert exported.fallback_ops == [], exported.fallback_ops
    weights = float8_weights(exported.model_proto)
    assert len(weights) >= 2, weights  # fc1's and fc2's (fc3's 10 outputs torchao's dynamic configs leave float)
    if form not in CAST_WEIGHTS:
        dequantized = {i for n in exported.model_proto.graph.node if n.op_type == "DequantizeLinear" for i in n.input}
        assert weights <= dequantized, (sorted(weights), sorted(dequantized))
    torch.testing.assert_close(exported.run(x), quantized, rtol=1e-5, atol=1e-5)
    ours, _, _ = ort_run(exported, x)
    assert_quantized_result(ours, quantized, fp)


@pytest.mark.parametrize("form", FLOAT8_FORMS)
def test_float8_exact_is_bitwise(form):
    model, x, quantized, _ = float8_case(form)
    for opset in (19, 21, 23):
        exact = aten2onnx.export(model, (x,), opset=opset, exact=True)
        assert torch.equal(exact.run(x), quantized), opset


@pytest.mark.parametrize("form", sorted(CAST_WEIGHTS))
def test_float8_weight_only_as_dequantize_linear(form):
    """torchao's Float8Tensor dequantizes its weight in plain ATen ops (to float32, times the scale, repeated
    over each group): a DequantizeLinear of the float8 weight (rewrites.quantized.WEIGHT_ONLY_FLOAT8, bit for
    bit), the scale stored once per group, not repeated to the weight's size in float32."""
    model, x, want, _ = float8_case(form)
    exported = aten2onnx.export(model, (x,), opset=21)
    weights = float8_weights(exported.model_proto)
    dequantized = {i for n in exported.model_proto.graph.node if n.op_type == "DequantizeLinear" for i in n.input}
    assert weights and weights <= dequantized, (sorted(weights), sorted(dequantized))
    weight_bytes = sum(math.prod(i.dims) for i in exported.model_proto.graph.initializer if i.name in weights)
    float_bytes = sum(4 * math.prod(i.dims) for i in exported.model_proto.graph.initializer
                      if i.data_type == onnx.TensorProto.FLOAT)
    assert float_bytes < weight_bytes, (float_bytes, weight_bytes)
    torch.testing.assert_close(exported.run(x), want, atol=1e-6, rtol=1e-6)


def test_symmetric_dynamic_quantization_rounds_its_ties_as_eager():
    """torchao's int8 dynamic quantization scales each row by max|x| / 127.5, which puts the row's largest
    magnitude on -127.5 exactly when it is negative: QuantizeLinear's x / scale rounds that tie to -128, eager's
    x * (1 / scale) lands an ulp to one side for about a fifth of such rows. Rows made so (the quantized fuzzer's
    torchao MLP: 0.0095 from eager in onnxruntime) run as eager in both runtimes."""
    generator = torch.Generator().manual_seed(0)
    largest = torch.rand(100000, generator=generator) * 10 + 0.1
    scale = largest / 127.5
    ties = largest[torch.round(-largest * (1.0 / scale)) != torch.round(-largest / scale)][:16]
    x = (torch.rand(16, 64, generator=generator) * 2 - 1) * ties[:, None] * 0.99
    x[:, 5] = -ties  # each row's largest magnitude, negative: on the tie
    model = torch.nn.Sequential(torch.nn.Linear(64, 32)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(model, tq.Int8DynamicActivationInt8WeightConfig())
    with torch.no_grad():
        want = model(x)
    for opset in (13, 18, 21):
        exported = aten2onnx.export(model, (x,), opset=opset)
        ours, _, _ = ort_run(exported, x)
        torch.testing.assert_close(exported.run(x), want, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(ours, want, atol=1e-6, rtol=1e-6)
