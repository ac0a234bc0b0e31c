"""export_llm(precision=...): int4/int8 weights quantized per block as onnxruntime's quantizer (what
onnxruntime-genai's model builder calls) quantizes them, written as MatMulNBits or as DequantizeLinear of
integer initializers; the model computes what the model with those weights dequantized computes; genai
generates the builder's int4 model's tokens; a model the user quantized keeps its own weights."""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
import warnings

import numpy as np
import onnx
import pytest
import torch

import aten2onnx
from aten2onnx import ArgumentError
from aten2onnx.exporter.llm_precision import quantize_blocks
from test_llm import genai_greedy

transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")

VOCAB = 320  # (not the MLP's width: the builder takes a weight of the LM head's shape for it)
CONFIG = dict(vocab_size=VOCAB, hidden_size=128, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=256, bos_token_id=1, eos_token_id=2, pad_token_id=0)
LINEARS_PER_LAYER = 7  # q, k, v, o, gate, up, down


def llama() -> torch.nn.Module:
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG)).eval()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A LLaMA folder as a user has one: safetensors, config and a tokenizer (built here)."""
    tokenizers = pytest.importorskip("tokenizers")
    path = tmp_path_factory.mktemp("llama")
    llama().save_pretrained(path)
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(str(path / "tokenizer.json"))
    return str(path)


def export(model, out, **options) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export_llm(model, out, **options)


# -- the quantizer against onnxruntime's -----------------------------------------------------------------------

def _onnxruntime_quantizer(bits: int):
    from onnxruntime.capi import _pybind_state
    fn = getattr(_pybind_state, f"quantize_matmul_{bits}bits", None)
    if fn is None:
        pytest.skip(f"this onnxruntime has no quantize_matmul_{bits}bits to compare with")
    return fn


def _unpack(packed: np.ndarray, bits: int) -> np.ndarray:
    return np.stack([packed & 0xF, packed >> 4], -1).reshape(*packed.shape[:-1], -1) if bits == 4 else packed


def _weights(kind: str, k: int, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "normal":  # columns of very different scales
        return (rng.standard_normal((k, n)) * rng.uniform(1e-3, 30, (1, n))).astype(np.float32)
    if kind == "ties":  # multiples of an eighth: values halfway between levels
        return (rng.integers(-20, 20, (k, n)) * 0.125).astype(np.float32)
    w = (rng.integers(-16, 16, (k, n)) * 0.5 + 0.25).astype(np.float32)  # "sparse": zeros, zero blocks, one sign
    w[rng.random((k, n)) < 0.3] = 0
    w[:, 0] = 0
    w[:, 1] = np.abs(w[:, 1])
    w[:, 2] = -np.abs(w[:, 2])
    return w


QUANTIZER_CASES = [(bits, symmetric, kind, k, block)
                   for bits in (4, 8) for symmetric in (True, False) for kind in ("normal", "ties", "sparse")
                   for k, block in ((128, 32), (100, 32), (96, 64), (64, 16))]


@pytest.mark.parametrize("bits,symmetric,kind,k,block", QUANTIZER_CASES)
def test_block_quantization_is_onnxruntimes_byte_for_byte(bits, symmetric, kind, k, block, monkeypatch):
    from aten2onnx.exporter import llm_precision

    n = 12
    if kind == "normal":  # (quantized five output columns at a time, as a wide weight is)
        monkeypatch.setattr(llm_precision, "COLUMNS", 5)
    w = _weights(kind, k, n, np.random.default_rng(k * 7 + block + bits))
    blocks = -(-k // block)
    packed = np.zeros((n, blocks, block * bits // 8), np.uint8)
    zero = np.zeros((n, -(-blocks * bits // 8)), np.uint8)
    scales = np.zeros((n, blocks), np.float32)
    _onnxruntime_quantizer(bits)(packed, w, scales, zero, block, n, k, symmetric)
    q, scale, zero_point = quantize_blocks(torch.from_numpy(w), bits, block, symmetric)
    np.testing.assert_array_equal(scale.numpy(), scales)
    np.testing.assert_array_equal(q.numpy(), _unpack(packed, bits))
    if not symmetric:
        np.testing.assert_array_equal(zero_point.numpy(), _unpack(zero, bits).reshape(n, -1)[:, :blocks])


@pytest.mark.parametrize("bits,symmetric", [(4, True), (4, False), (8, True), (8, False)])
def test_written_parts_are_the_same_column_by_column(bits, symmetric, monkeypatch):
    """A wide weight is quantized and laid out some output columns at a time: the same bytes as at once."""
    from aten2onnx.exporter import llm_precision

    spec = llm_precision.BlockQuantization(bits, 32, symmetric)
    w = torch.randn(96, 40, generator=torch.Generator().manual_seed(bits))
    whole = [make(w, spec, torch.float32) for make in (llm_precision.matmul_nbits_parts,
                                                        llm_precision.dequantize_linear_parts)]
    monkeypatch.setattr(llm_precision, "COLUMNS", 7)
    pieces = [make(w, spec, torch.float32) for make in (llm_precision.matmul_nbits_parts,
                                                         llm_precision.dequantize_linear_parts)]
    for a, b in zip(whole, pieces):
        assert len(a) == len(b) == (2 if symmetric else 3)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape and x.is_contiguous() and y.is_contiguous()
            assert torch.equal(x.view(torch.uint8) if x.element_size() == 1 else x,
                               y.view(torch.uint8) if y.element_size() == 1 else y)


# -- what the quantized model computes ------------------------------------------------------------------------

def dequantized(model: torch.nn.Module, bits: int, block: int = 32, symmetric: bool = True) -> torch.nn.Module:
    """The model with each linear weight replaced by its quantized values dequantized ((q - zero) * scale)."""
    from transformers.pytorch_utils import Conv1D

    model = copy.deepcopy(model)
    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, Conv1D)):
            w = module.weight.detach()
            w = w.t() if isinstance(module, torch.nn.Linear) else w  # [K, N] (Conv1D stores it so)
            q, scale, zero = quantize_blocks(w, bits, block, symmetric)
            values = ((q.float() - zero.float()[..., None]) * scale[..., None]).reshape(w.shape[1], -1)[:, :w.shape[0]]
            # (a new parameter: an LM head tied to the embedding is quantized, the embedding not)
            module.weight = torch.nn.Parameter(values if isinstance(module, torch.nn.Linear) else values.t())
    return model


def prefill_logits(path: str, ids: torch.Tensor, optimized: bool) -> torch.Tensor:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = {"input_ids": ids.numpy(), "attention_mask": np.ones_like(ids.numpy())}
    for i in session.get_inputs():
        if i.name.startswith("past_key_values"):
            # (the builder's model names its head size: a LLaMA of CONFIG's then)
            heads, size = [d if isinstance(d, int) else default for d, default in
                           zip((i.shape[1], i.shape[3]), (CONFIG["num_key_value_heads"],
                                                          CONFIG["hidden_size"] // CONFIG["num_attention_heads"]))]
            feeds[i.name] = np.zeros((ids.shape[0], heads, 0, size), np.float32)
        elif i.name == "position_ids":
            feeds[i.name] = np.arange(ids.shape[1])[None].repeat(ids.shape[0], 0)
    return torch.from_numpy(session.run(["logits"], feeds)[0])


FORMS = [  # (precision, options, the op holding the weights, onnxruntime's optimizations on)
    ("int4", dict(), "DequantizeLinear", False),
    ("int8", dict(), "DequantizeLinear", False),
    ("int4", dict(symmetric=False, block_size=64), "DequantizeLinear", False),
    # (accuracy level 1: MatMulNBits computes in float32, so it is held to the dequantized model's float answer)
    ("int4", dict(optimize="onnxruntime", accuracy_level=1), "MatMulNBits", True),
    ("int8", dict(optimize="onnxruntime", accuracy_level=1, symmetric=False), "MatMulNBits", True),
]


@pytest.mark.parametrize("precision,options,op,optimized", FORMS,
                         ids=[f"{p}-{o}-{'-'.join(f'{k}={v}' for k, v in opts.items())}" for p, opts, o, _ in FORMS])
def test_quantized_export_computes_the_dequantized_model(precision, options, op, optimized, folder, tmp_path):
    path = export(folder, tmp_path, precision=precision, **options)
    proto = onnx.load(path)
    counts = [node.op_type for node in proto.graph.node]
    # every projection and the LM head (query, key and value packed in one where attention is fused)
    per_layer = LINEARS_PER_LAYER - 2 if options.get("optimize") else LINEARS_PER_LAYER
    assert counts.count(op) == 2 * per_layer + 1
    assert "MatMul" not in counts or op == "DequantizeLinear"
    embedding = next(i for i in proto.graph.initializer if i.name.endswith("embed_tokens.weight"))
    assert embedding.data_type == onnx.TensorProto.FLOAT  # the embedding stays float
    if op == "DequantizeLinear":
        assert proto.opset_import[0].version == 21
        held = {i.data_type for i in proto.graph.initializer if i.name.endswith(".q")}
        want = {("int4", True): onnx.TensorProto.INT4, ("int8", True): onnx.TensorProto.INT8,
                ("int4", False): onnx.TensorProto.UINT4, ("int8", False): onnx.TensorProto.UINT8}
        assert held == {want[precision, options.get("symmetric", True)]}
    model = llama()
    bits = int(precision[3:])
    reference = dequantized(model, bits, options.get("block_size", 32), options.get("symmetric", True))
    ids = torch.randint(3, VOCAB, (2, 11), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want, full = reference(ids).logits, model(ids).logits
    got = prefill_logits(path, ids, optimized)
    assert (got - want).abs().max() <= 1e-4 * want.abs().max()
    assert (full - want).abs().max() > 100 * (got - want).abs().max()  # (the weights are quantized)


@pytest.mark.parametrize("optimize", [None, "onnxruntime"])
def test_gpt2s_conv1d_layers_are_quantized_as_gemm_weights(optimize, tmp_path):
    """GPT-2's projections are Conv1D (addmm, exported as Gemm): quantized as the linear layers are, the LM
    head (tied to the token embedding) too, the embeddings left float."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_layer=2, n_embd=64, n_head=4, n_positions=128,
                                     bos_token_id=1, eos_token_id=2)
    model = transformers.GPT2LMHeadModel(config).eval()
    path = export(model, tmp_path, precision="int4", optimize=optimize, accuracy_level=1)
    proto = onnx.load(path)
    ops = [node.op_type for node in proto.graph.node]
    assert ops.count("MatMulNBits" if optimize else "DequantizeLinear") == 2 * 4 + 1
    assert not [n for n in proto.graph.node if n.op_type == "Gemm" and n.input[1] in
                {i.name for i in proto.graph.initializer}]
    ids = torch.randint(3, VOCAB, (2, 7), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        want = dequantized(model, 4)(ids).logits
    got = prefill_logits(path, ids, optimized=optimize is not None)
    assert (got - want).abs().max() <= 1e-4 * want.abs().max()


def test_default_onnxruntime_optimizations_stay_near_the_dequantized_model(folder, tmp_path):
    """Standard int4 loaded with onnxruntime's optimizations (its DequantizeLinear-MatMul fused to MatMulNBits
    at accuracy level 4: int8 activations) stays much nearer the dequantized model than quantization moved it."""
    path = export(folder, tmp_path, precision="int4")
    model = llama()
    ids = torch.randint(3, VOCAB, (1, 16), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        want, full = dequantized(model, 4)(ids).logits, model(ids).logits
    got = prefill_logits(path, ids, optimized=True)
    assert (got - want).abs().max() < 0.25 * (full - want).abs().max()


def test_streamed_and_in_memory_exports_write_the_same_weights(folder, tmp_path):
    streamed = onnx.load(export(folder, tmp_path / "streamed", precision="int4", optimize="onnxruntime"))
    loaded = onnx.load(export(llama(), tmp_path / "loaded", precision="int4", optimize="onnxruntime"))
    a, b = ({i.name: onnx.numpy_helper.to_array(i)
             for i in proto.graph.initializer if i.name.endswith((".q", ".scales"))} for proto in (streamed, loaded))
    assert a.keys() == b.keys() and len(a) == 2 * (2 * (LINEARS_PER_LAYER - 2) + 1)  # (q, k, v packed)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_float_precisions_cast_the_model(folder, tmp_path):
    proto = onnx.load(export(folder, tmp_path, precision="float16"))
    floats = {i.data_type for i in proto.graph.initializer
              if i.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16) and len(i.dims) == 2}
    assert floats == {onnx.TensorProto.FLOAT16}


# -- onnxruntime-genai, against the model builder --------------------------------------------------------------

def genai_tokens(folder: str, prompt: torch.Tensor, steps: int) -> list[int]:
    return genai_greedy(pytest.importorskip("onnxruntime_genai"), folder, prompt, steps).tolist()


@pytest.fixture(scope="module")
def builder(folder, tmp_path_factory):
    """onnxruntime-genai's model builder's CPU models of the folder, by precision."""
    pytest.importorskip("onnxruntime_genai")
    if importlib.util.find_spec("onnx_ir") is None:
        pytest.skip("onnxruntime-genai's model builder needs onnx_ir")

    def build(precision: str) -> str:
        out = str(tmp_path_factory.mktemp(f"builder_{precision}"))
        run = subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", folder, "-o", out,
                              "-p", precision, "-e", "cpu"], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        return out
    return build


@pytest.mark.parametrize("precision", ["int4", "int8"])
def test_genai_generates_the_model_builders_tokens(precision, folder, builder, tmp_path):
    """Fused as the builder's (optimize="onnxruntime"): the same quantized bytes, the same ops, its greedy tokens."""
    theirs = builder(precision)
    ours = os.path.dirname(export(folder, tmp_path, precision=precision, optimize="onnxruntime"))
    lm_head = [{i.name: onnx.numpy_helper.to_array(i)
                for i in onnx.load(os.path.join(path, "model.onnx")).graph.initializer} for path in (ours, theirs)]
    assert np.array_equal(lm_head[0]["model.lm_head.weight.T.q"], lm_head[1][f"lm_head.MatMul.weight_Q{precision[3:]}"])
    for seed in range(3):
        prompt = torch.randint(3, VOCAB, (1, 8), generator=torch.Generator().manual_seed(seed))
        assert genai_tokens(ours, prompt, 30) == genai_tokens(theirs, prompt, 30), seed


def test_standard_int4_is_as_near_the_float_model_as_the_builders(folder, builder, tmp_path):
    """Standard ONNX (attention unfused, DequantizeLinear that onnxruntime fuses to MatMulNBits): its logits no
    further from float32 transformers' than the builder's int4 model's (its greedy tokens part from the
    builder's where two logits are nearly tied)."""
    ours = export(folder, tmp_path, precision="int4")
    theirs = os.path.join(builder("int4"), "model.onnx")
    ids = torch.randint(3, VOCAB, (1, 24), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        want = llama()(ids).logits
    distance = [float((prefill_logits(path, ids, optimized=True) - want).abs().max()) for path in (ours, theirs)]
    assert distance[0] <= 1.25 * distance[1], distance


# -- a model the user quantized ---------------------------------------------------------------------------------

@pytest.mark.parametrize("optimize", [None, "onnxruntime"])
def test_a_model_quantized_with_torchao_keeps_its_own_weights(optimize, tmp_path):
    """Its projections are not packed for GroupQueryAttention (that would concatenate its quantized tensors in
    float: torchao's tensors have no cat, and the export crashed inside torchao)."""
    tq = pytest.importorskip("torchao.quantization")
    model = llama()
    tq.quantize_(model, tq.IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=tq.PerGroup(32)))
    path = export(model, tmp_path, precision="int4", opset=21, optimize=optimize)
    proto = onnx.load(path)
    # torchao's per-group values, not requantized: no weights of ours, DequantizeLinear of its int4 values
    assert not [i.name for i in proto.graph.initializer if i.name.endswith((".q", ".scales"))]
    assert sum(node.op_type == "DequantizeLinear" for node in proto.graph.node) >= 2 * LINEARS_PER_LAYER
    ids = torch.randint(3, VOCAB, (1, 9), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        want = model(ids).logits
    got = prefill_logits(path, ids, optimized=False)
    assert (got - want).abs().max() <= 1e-4 * want.abs().max()


# -- what cannot be ---------------------------------------------------------------------------------------------

BAD = [
    (dict(precision="int3"), "'bfloat16', 'int8', or 'int4'"),
    (dict(precision="int4", opset=18), "opset 21"),
    (dict(precision="int4", block_size=24), "power of 2 from 16"),
    (dict(precision="int8", accuracy_level=7), "none of 0-4"),
    (dict(precision="float16", dtype=torch.float32), "pass one of them"),
]


@pytest.mark.parametrize("options,message", BAD, ids=[m for _, m in BAD])
def test_a_precision_that_cannot_be_is_refused_before_any_work(options, message, tmp_path):
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(")):
        export(llama(), tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()


def test_the_command_takes_a_precision(folder, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "aten2onnx", "export-llm", folder, str(out), "--precision", "int4",
                          "--optimize", "onnxruntime", "--block-size", "64"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    nodes = [n for n in onnx.load(str(out / "model.onnx")).graph.node if n.op_type == "MatMulNBits"]
    assert len(nodes) == 2 * (LINEARS_PER_LAYER - 2) + 1  # (q, k, v packed)
    assert {onnx.helper.get_attribute_value(a) for n in nodes for a in n.attribute if a.name == "block_size"} == {64}
