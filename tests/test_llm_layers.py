"""export_llm's capture of a decoder's alike layers as three, repeated to all (aten2onnx.exporter.llm_layers):
the repeated program computes what the model does, every layer with its own weights and cache (each output
against eager, from a cache that is not empty); layers that differ are captured whole."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import aten2onnx
from aten2onnx.exporter import llm, llm_layers
from test_scale import logits  # noqa: E402  (onnxruntime's logits from an empty cache)

transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")

SPECIAL = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}
LAYERS = 7
DECODER = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=LAYERS, num_attention_heads=4,
               num_key_value_heads=2, **SPECIAL)

# name: (config, whether its layers are alike)
MODELS = {
    "llama": (lambda: transformers.LlamaConfig(**DECODER), True),
    "qwen2": (lambda: transformers.Qwen2Config(**DECODER), True),
    "phi3": (lambda: transformers.Phi3Config(**DECODER), True),
    "gemma": (lambda: transformers.GemmaConfig(**DECODER, head_dim=16), True),
    "mistral": (lambda: transformers.MistralConfig(**DECODER, sliding_window=None), True),
    "qwen3": (lambda: transformers.Qwen3Config(**DECODER, head_dim=16), True),
    # sliding windows on every other layer: layer_types differ (windows longer than
    # the contexts run, which a capture of small windows with a cache does not take)
    "gemma2": (lambda: transformers.Gemma2Config(**DECODER, head_dim=16, sliding_window=512), False),
}


def _inputs(model: torch.nn.Module, layout: llm.CacheLayout, past: int, sequence: int) -> tuple:
    g = torch.Generator().manual_seed(past * 10 + sequence)
    ids = torch.randint(3, model.config.vocab_size, (2, sequence), generator=g)
    mask = torch.ones(2, past + sequence, dtype=torch.long)
    mask[1, :2] = 0  # a padded row
    position = (mask.cumsum(-1) - 1).clamp(min=0)[:, past:]
    cache = [torch.randn(2, layout.kv_heads[i], past, layout.head_sizes[i], generator=g)
             for i in range(layout.layers) for _ in ("key", "value")]
    return (ids, mask, position, *cache)


def _check(model: torch.nn.Module, path: str) -> None:
    """Every output (logits, each layer's present key and value) of onnxruntime against eager."""
    layout = llm.cache_layout(model)
    module = llm.cache_module(model, layout, llm.takes_position_ids(model))
    names = llm.input_names(layout, module.position_ids)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    given = {i.name for i in session.get_inputs()}
    for past, sequence in ((0, 5), (4, 1), (6, 3)):
        args = _inputs(model, layout, past, sequence)
        if not module.position_ids:
            args = args[:2] + args[3:]
        with torch.no_grad():
            want = module(*args)
        got = session.run(None, {n: a.numpy() for n, a in zip(names, args) if n in given})
        assert len(got) == len(want) == 1 + 2 * LAYERS
        for k, (ours, theirs) in enumerate(zip(got, want)):
            np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-4, atol=1e-4, err_msg=f"output {k}")


@pytest.fixture
def repeated(monkeypatch):
    """Whether each export_llm repeated its layers."""
    done: list[bool] = []
    capture = llm_layers.capture_repeated

    def watched(*args, **kwargs):
        ep, result = capture(*args, **kwargs)
        done.append(result)
        return ep, result

    monkeypatch.setattr(llm_layers, "capture_repeated", watched)
    return done


@pytest.mark.parametrize("name", MODELS)
def test_repeated_layers_compute_every_layer(name, repeated, tmp_path):
    config, alike = MODELS[name]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config()).eval()
    folder = tmp_path / "hf"
    model.save_pretrained(folder)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = aten2onnx.export_llm(model, tmp_path / "loaded")
        streamed = aten2onnx.export_llm(folder, tmp_path / "streamed")
        fused = aten2onnx.export_llm(folder, tmp_path / "fused", optimize="onnxruntime")
    assert (llm_layers.uniform_stack(model) is not None) == alike
    assert repeated[:2] == ([True, True] if alike else [])
    _check(model, loaded)
    _check(model, streamed)
    # onnxruntime's fused form (a packed QKV weight computed per layer as written): logits from an empty cache
    ids = torch.randint(3, 128, (2, 6), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(ids).logits.numpy()
    np.testing.assert_allclose(logits(fused, ids), want, rtol=1e-4, atol=1e-4)
    if name == "llama":
        assert repeated == [True, True, True]
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert len(model.model.layers) == LAYERS and model.config.num_hidden_layers == LAYERS


def test_a_layer_that_differs_is_not_repeated(repeated, tmp_path):
    """One layer's attribute differs (as a per-layer setting would make it): the model is captured whole."""
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(**DECODER)).eval()
    model.model.layers[5].self_attn.scaling *= 2
    assert llm_layers.uniform_stack(model) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = aten2onnx.export_llm(model, tmp_path / "out")
    assert repeated == []
    _check(model, path)


def test_layers_traced_otherwise_are_captured_whole(repeated, tmp_path, monkeypatch):
    """Layer 2 of the three captured computes otherwise than layer 1 (a module the comparison of attributes
    cannot see into): the program is not repeated, and the model is captured whole."""
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(**DECODER)).eval()
    mlp = model.model.layers[2].mlp
    act = mlp.act_fn
    calls = type(act).forward

    def doubled(self, x):
        out = calls(self, x)
        return out * 2 if self is act else out

    monkeypatch.setattr(type(act), "forward", doubled)
    assert llm_layers.uniform_stack(model) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = aten2onnx.export_llm(model, tmp_path / "out")
    assert repeated == [False]
    _check(model, path)
