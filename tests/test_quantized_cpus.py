"""Quantized models at the sizes people run (K from 256 to 4096, activations over the whole quantized range,
weights at +-127) give the quantized model's answers in onnxruntime on every x86 CPU: here, and as a CPU
without VNNI runs them (aten2onnx.testing.cpus: qemu emulating a Haswell), where onnxruntime's uint8 x int8
kernels sum pairs of products in saturating 16-bit arithmetic. The bound (aten2onnx.testing.quantized.bounds):
no element further from the quantized eager model than a quarter of the most quantization itself moved an
element plus how far the quantized model moves when every float it quantizes moves one ulp (own_rounding),
and for onnxruntime no further than its result for the model's plain QDQ file (qdq_file_error) where that is
more (the saturating kernels were 10 to 50 times further).

Also read from onnxruntime's own optimized graph, whatever the CPU: every integer kernel it runs takes
operands it sums exactly everywhere (no uint8 x int8 pair). Needs torchao; the emulated half needs
qemu-user (skipped without it)."""

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import aten2onnx
from aten2onnx.testing import cpus
from aten2onnx.testing.quantized import bounds

torchao = pytest.importorskip("torchao", exc_type=ImportError)

import torchao.quantization as tq  # noqa: E402
import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq  # noqa: E402
from torchao.quantization import quantize_  # noqa: E402
from torchao.quantization.pt2e import move_exported_model_to_eval  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e  # noqa: E402


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 4096),
                               torch.nn.ReLU(), torch.nn.Linear(4096, 64))


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(32, 64, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(64, 64, 3, padding=1)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.head(torch.relu(self.conv2(torch.relu(self.conv1(x)))).mean((2, 3)))


def encoder() -> torch.nn.Module:
    torch.backends.mha.set_fastpath_enabled(False)
    return torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)


# name -> (model, example input: spread so that activations fill their quantized range)
MODELS = {"mlp": (mlp, lambda g: torch.randn(8, 256, generator=g) * 3),
          "cnn": (CNN, lambda g: torch.randn(2, 32, 12, 12, generator=g) * 3),
          "encoder": (encoder, lambda g: torch.randn(2, 16, 256, generator=g) * 3)}

TORCHAO = {"int8-dynamic": lambda: tq.Int8DynamicActivationInt8WeightConfig(),
           "int8-weight-only": lambda: tq.Int8WeightOnlyConfig(),
           "int4-weight-only": lambda: tq.IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=tq.PerGroup(32))}

CASES = ["mlp-static", "mlp-dynamic", "mlp-qat", "mlp-int8-dynamic", "mlp-int8-weight-only", "mlp-int4-weight-only",
         "cnn-static", "cnn-qat", "encoder-static", "encoder-dynamic", "encoder-int8-dynamic"]

# what onnxruntime runs on integers, and which of its inputs are the two operands
INTEGER_OPERANDS = {"MatMulInteger": (0, 1), "ConvInteger": (0, 1), "MatMulIntegerToFloat": (0, 1),
                    "QLinearMatMul": (0, 3), "QLinearConv": (0, 3), "QGemm": (0, 3), "DynamicQuantizeMatMul": (0, 1)}
# ops making quantized values: the input holding their zero point, whose type is theirs
OUTPUT_ZERO_POINT = {"QuantizeLinear": 2, "QLinearConv": 7, "QLinearMatMul": 7, "QGemm": 8, "QLinearAdd": 7,
                     "QLinearAveragePool": 4, "QLinearGlobalAveragePool": 4, "QLinearSigmoid": 4,
                     "QLinearLeakyRelu": 4, "QLinearConcat": 1}


def quantized(case: str, model: torch.nn.Module, x: torch.Tensor) -> torch.nn.Module:
    how = case.split("-", 1)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how in TORCHAO:
            quantize_(model, TORCHAO[how]())
            return model
        quantizer = xiq.X86InductorQuantizer()
        quantizer.set_global(xiq.get_default_x86_inductor_quantization_config(is_dynamic=how == "dynamic",
                                                                             is_qat=how == "qat"))
        captured = torch.export.export(model, (x,)).module()
        if how == "qat":
            prepared = prepare_qat_pt2e(captured, quantizer)
            prepared(x)
            move_exported_model_to_eval(prepared)
        else:
            prepared = prepare_pt2e(captured, quantizer)
            prepared(x)
        return convert_pt2e(prepared)


def operand_types(model: onnx.ModelProto) -> list[tuple[str, int, int]]:
    """(op type, first operand's element type, second's) of each integer kernel in an onnxruntime-optimized
    graph; an operand's type read from its initializer, or from the zero point or quantization making it
    (DynamicQuantizeMatMul quantizes its float input to uint8 itself)."""
    initializers = {i.name: i.data_type for i in model.graph.initializer}
    producers = {out: node for node in model.graph.node for out in node.output}

    def element_type(name: str) -> int:
        if name in initializers:
            return initializers[name]
        node = producers[name]
        if node.op_type in OUTPUT_ZERO_POINT and len(node.input) > OUTPUT_ZERO_POINT[node.op_type]:
            return element_type(node.input[OUTPUT_ZERO_POINT[node.op_type]])
        if node.op_type == "DynamicQuantizeLinear":
            return onnx.TensorProto.UINT8
        if node.op_type == "Cast":
            return next(a.i for a in node.attribute if a.name == "to")
        return element_type(node.input[0])  # a layout change (Transpose, Reshape) keeps the type

    kernels = []
    for node in model.graph.node:
        if node.op_type in INTEGER_OPERANDS:
            first, second = INTEGER_OPERANDS[node.op_type]
            a = onnx.TensorProto.UINT8 if node.op_type == "DynamicQuantizeMatMul" else element_type(node.input[first])
            kernels.append((node.op_type, a, element_type(node.input[second])))
    return kernels


def run_here(path: str, x: np.ndarray) -> tuple[np.ndarray, onnx.ModelProto]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    options.optimized_model_filepath = path + ".optimized.onnx"
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: x})[0]
    return out, onnx.load(options.optimized_model_filepath)


@pytest.mark.parametrize("case", CASES)
def test_quantized_answers_on_every_cpu(case):
    factory, example = MODELS[case.split("-")[0]]
    torch.manual_seed(0)
    model = factory().eval()
    x = example(torch.Generator().manual_seed(1))
    with torch.no_grad():
        fp = model(x)
        q_model = quantized(case, model, x)
        want = q_model(x)
    bound, ort_bound = bounds(q_model, x, want, fp, 21 if "int4" in case else 18)
    opset = 21 if "int4" in case else 18
    folder = tempfile.mkdtemp()
    paths = {}
    name = None
    for optimize in (True, "onnxruntime"):
        exported = aten2onnx.export(q_model, (x,), opset=opset, optimize=optimize)
        assert exported.fallback_ops == [], exported.fallback_ops
        name = exported.input_names[0]
        paths[optimize] = os.path.join(folder, f"{optimize}.onnx")
        exported.save(paths[optimize])
    results = {}
    for optimize, path in paths.items():
        out, optimized = run_here(path, x.numpy())
        results[f"here, optimize={optimize}"] = out
        wrong = [k for k in operand_types(optimized)
                 if (k[1], k[2]) == (onnx.TensorProto.UINT8, onnx.TensorProto.INT8)]
        assert not wrong, f"uint8 x int8 kernels (saturating without VNNI): {wrong}"
    if cpus.available():
        emulated = cpus.run_onnxruntime([(path, {name: x.numpy()}) for path in paths.values()])
        for optimize, (out,) in zip(paths, emulated):
            results[f"without VNNI, optimize={optimize}"] = out
    errors = {where: float(np.abs(out - want.numpy()).max()) for where, out in results.items()}
    assert all(e <= ort_bound for e in errors.values()), (errors, ort_bound)
    assert float((exported.run(x) - want).abs().max()) <= bound  # (aten2onnx.runtime, the last export)
    # and on average a quarter of quantization's own effect: a step off on many elements (a systematic tie, as
    # QuantizeLinear's x / scale at a symmetric dynamic quantization's -127.5) is no rounding edge's
    means = {where: float(np.abs(out - want.numpy()).mean()) for where, out in results.items()}
    assert all(m <= 0.25 * float((want - fp).abs().mean()) for m in means.values()), means


def test_random_quantized_programs(tmp_path, monkeypatch):
    """The quantized fuzzer's programs (aten2onnx.testing.quantized, `scripts/fuzz_models.py --quantized`): a
    batch of them, each within the bound in onnxruntime, aten2onnx.runtime and, where qemu runs, onnxruntime
    without VNNI; most quantize and export (a run that skips them all tests nothing). The files it runs are
    removed after (a folder of them was left in the temporary directory on every call)."""
    from aten2onnx.testing.quantized import examine_quantized, generate_quantized

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    programs = [generate_quantized(seed) for seed in range(3000, 3016)]
    outcomes = examine_quantized(programs, emulate=cpus.available())
    assert list(tmp_path.iterdir()) == []
    bugs = [f"{o.status}: {o.detail}\n{p.describe()}" for p, o in zip(programs, outcomes) if o.bug]
    assert not bugs, "\n\n".join(bugs)
    assert sum(o.status == "match" for o in outcomes) >= 12, [o.status for o in outcomes]


def test_the_cpu_without_vnni_is_emulated():
    """The emulated half of these tests runs where qemu does (x86-64 Linux; .ci/run installs qemu-user), and
    there its canary proves the emulated CPU takes onnxruntime's saturating path; a skip here says that half
    did not run."""
    if cpus.emulator() is None:
        pytest.skip("qemu-x86_64 is not installed (Debian: apt-get install qemu-user) or this is not x86-64 Linux: "
                    "onnxruntime was not checked as a CPU without VNNI runs it")
    assert cpus.available(), "qemu-x86_64 runs, but its Haswell does not saturate a uint8 x int8 pair sum"
