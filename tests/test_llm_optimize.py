"""aten2onnx.export_llm(optimize="onnxruntime"): tiny random-init decoder LLMs exported with
onnxruntime's fused contrib ops generate exactly transformers' greedy tokens in plain onnxruntime (each
run fed the previous present) and in onnxruntime-genai (past and present sharing one buffer); the
fusions are there where the architecture allows them, and a model they do not fit is exported as
standard ONNX that still generates the right tokens."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import warnings
from typing import Any, Callable

import onnx
import pytest
import torch

import aten2onnx
from test_llm import (DECODER, VOCAB, assert_half_logits, genai_greedy, greedy, left_padded, ort_greedy, prompt_ids,
                      small, until_eos)

transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")
from test_llm_moe import GROUPED_MM, MOE_SKIP  # noqa: E402

MOE = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
           num_experts_per_tok=2, max_position_embeddings=128)


@dataclasses.dataclass
class Case:
    name: str
    model: Callable[[], torch.nn.Module]
    attention: int  # GroupQueryAttention nodes expected (one per layer where the attention fits)
    norms: int  # SimplifiedLayerNormalization + SkipSimplifiedLayerNormalization nodes expected


# per layer two norms, and the final one; Qwen3's per-head q_norm and k_norm besides
CASES = [
    Case("llama", small(transformers.LlamaConfig, **DECODER), 2, 5),
    Case("mistral", small(transformers.MistralConfig, **DECODER, sliding_window=None), 2, 5),
    Case("qwen2", small(transformers.Qwen2Config, **DECODER), 2, 5),
    Case("phi3", small(transformers.Phi3Config, **DECODER), 2, 5),
    Case("gemma", small(transformers.GemmaConfig, **DECODER, head_dim=16), 2, 5),
    Case("mixtral", small(transformers.MixtralConfig, **MOE, intermediate_size=48, num_local_experts=4,
                          sliding_window=None), 2, 5),
    Case("qwen3_moe", small(transformers.Qwen3MoeConfig, **MOE, intermediate_size=96, moe_intermediate_size=32,
                            num_experts=4, head_dim=16), 2, 9),
    # GPT-2: one head per key and value, no rotary (positions embedded first), LayerNorm (not fused)
    Case("gpt2", small(transformers.GPT2Config, n_layer=2, n_embd=64, n_head=4, n_positions=128), 2, 0),
    # what GroupQueryAttention is not given here: a sliding window shorter than the generation
    Case("mistral_window", small(transformers.MistralConfig, **DECODER, sliding_window=8), 0, 5),
]
# MoE models and the unfusable variants are the long tail: run by default, left out by -m "not slow"
SLOW = {"mixtral", "qwen3_moe", "mistral_window"}
PARAMS = [pytest.param(case, id=case.name, marks=([pytest.mark.slow] if case.name in SLOW else [])
                       + ([MOE_SKIP] if case.name in ("mixtral", "qwen3_moe") and not GROUPED_MM else []))
          for case in CASES]
FUSED = ("GroupQueryAttention", "SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization")


def export(model: torch.nn.Module, folder: Any) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export_llm(model, folder, optimize="onnxruntime")


@pytest.fixture(scope="module", params=PARAMS)
def exported(request, tmp_path_factory):
    case = request.param
    model = case.model()
    return case, model, export(model, tmp_path_factory.mktemp(case.name))


def op_counts(path: str) -> collections.Counter:
    return collections.Counter(node.op_type for node in onnx.load(path).graph.node)


def test_fusions_where_the_architecture_allows_them(exported):
    case, model, path = exported
    counts = op_counts(path)
    assert counts["GroupQueryAttention"] == case.attention
    assert counts["SimplifiedLayerNormalization"] + counts["SkipSimplifiedLayerNormalization"] == case.norms
    proto = onnx.load(path)
    assert not any(node.domain == "org.pytorch.aten" for node in proto.graph.node)
    rotary = case.attention and case.name != "gpt2"  # GPT-2 embeds absolute positions before its first layer
    assert counts["RotaryEmbedding"] == (2 * case.attention if rotary else 0)  # query and key per layer
    for node in proto.graph.node:
        if node.op_type == "GroupQueryAttention":
            attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            assert attributes["num_heads"] == 4 and attributes["kv_num_heads"] == (2 if rotary else 4)
            # one packed QKV where nothing comes between projection and attention, else three
            assert (node.input[1] == "") is (not rotary)
            assert node.input[10] != ""  # the padding, as an attention bias
    config = json.loads(open(os.path.join(os.path.dirname(path), "genai_config.json")).read())
    assert config["search"]["past_present_share_buffer"] is (case.attention > 0)


def test_onnxruntime_generates_transformers_greedy_tokens(exported):
    case, model, path = exported
    torch.manual_seed(1)
    prompt = prompt_ids(7)
    mask = torch.ones_like(prompt)
    assert torch.equal(ort_greedy(path, prompt, mask), greedy(model, prompt, mask))
    if case.name == "mistral_window":
        return  # its attention is not fused, and the standard export of a sliding window does not follow padding
    # a batch of two prompts of different lengths, the shorter left-padded, follows the attention mask
    batch, mask = left_padded(6, row=1, pads=2)
    assert torch.equal(ort_greedy(path, batch, mask), greedy(model, batch, mask))


def test_onnxruntime_genai_generates_transformers_greedy_tokens(exported):
    og = pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is an optional extra")
    case, model, path = exported
    if case.name == "mistral_window":
        pytest.skip("the unfused sliding-window cache keeps the last window - 1 positions; genai's cache grows by "
                    "the total length")
    torch.manual_seed(2)
    prompt = prompt_ids(5)
    want = greedy(model, prompt, torch.ones_like(prompt))
    assert torch.equal(genai_greedy(og, os.path.dirname(path), prompt), until_eos(want[0]))


def test_a_fused_module_that_differs_from_the_model_is_not_used(tmp_path, monkeypatch):
    """The replacement is checked by running it: with its rotary wrong (interleaved pairs instead of
    halves) the attention is exported unfused, with a warning, and the tokens stay right."""
    from aten2onnx.exporter import llm_fusion

    def interleaved(x, cos, sin):
        pairs = x.unflatten(-1, (-1, 2))
        return torch.stack([pairs[..., 0] * cos - pairs[..., 1] * sin, pairs[..., 1] * cos + pairs[..., 0] * sin],
                           -1).flatten(-2)

    monkeypatch.setattr(llm_fusion, "rotate", interleaved)
    model = CASES[0].model()
    with pytest.warns(UserWarning, match="exported as standard ONNX, its RMS norms fused"):
        path = aten2onnx.export_llm(model, tmp_path / "out", optimize="onnxruntime")
    counts = op_counts(path)
    assert counts["GroupQueryAttention"] == 0 and counts["SkipSimplifiedLayerNormalization"] == 4
    prompt = prompt_ids(6)
    mask = torch.ones_like(prompt)
    assert torch.equal(ort_greedy(path, prompt, mask), greedy(model, prompt, mask))


def test_command_and_half_precision(tmp_path):
    from aten2onnx.cli import main

    model = CASES[0].model()
    model.save_pretrained(tmp_path / "hf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["export-llm", str(tmp_path / "hf"), str(tmp_path / "out"), "--optimize", "onnxruntime",
                     "--max-length", "64"]) == 0
        half = aten2onnx.export_llm(model, tmp_path / "half", optimize="onnxruntime", dtype=torch.float16)
    config = json.loads((tmp_path / "out" / "genai_config.json").read_text())
    assert config["search"]["past_present_share_buffer"] is True and config["search"]["max_length"] == 64
    path = str(tmp_path / "out" / "model.onnx")
    assert op_counts(path)["GroupQueryAttention"] == 2
    prompt = prompt_ids(5)
    mask = torch.ones_like(prompt)
    assert torch.equal(ort_greedy(path, prompt, mask), greedy(model, prompt, mask))
    assert op_counts(half)["GroupQueryAttention"] == 2
    assert_half_logits(half, model, prompt, mask)


def test_attention_is_fused_in_every_layer_or_none(tmp_path, monkeypatch):
    """genai shares past and present buffers for every layer or none, so a model with one layer whose
    attention does not fit (here: as if layer 1's did not) gets no GroupQueryAttention at all."""
    from aten2onnx.exporter import llm_fusion

    fits = llm_fusion.attention_forward
    monkeypatch.setattr(llm_fusion, "attention_forward",
                        lambda module, *args: None if getattr(module, "layer_idx", None) == 1 else fits(module, *args))
    model = CASES[0].model()
    with pytest.warns(UserWarning, match="exported as standard ONNX"):
        path = aten2onnx.export_llm(model, tmp_path / "out", optimize="onnxruntime")
    assert op_counts(path)["GroupQueryAttention"] == 0
    config = json.loads((tmp_path / "out" / "genai_config.json").read_text())
    assert config["search"]["past_present_share_buffer"] is False
    prompt = prompt_ids(6)
    mask = torch.ones_like(prompt)
    assert torch.equal(ort_greedy(path, prompt, mask), greedy(model, prompt, mask))


def test_a_head_size_onnxruntime_refuses_is_not_fused(tmp_path):
    """onnxruntime's CPU GroupQueryAttention takes head sizes that are multiples of 16 only: a model
    with heads of 8 keeps its standard attention (fused, it would not run) and generates right."""
    model = small(transformers.LlamaConfig, **{**DECODER, "hidden_size": 32})()
    with pytest.warns(UserWarning, match="exported as standard ONNX"):
        path = aten2onnx.export_llm(model, tmp_path / "out", optimize="onnxruntime")
    assert op_counts(path)["GroupQueryAttention"] == 0
    prompt = prompt_ids(6)
    mask = torch.ones_like(prompt)
    assert torch.equal(ort_greedy(path, prompt, mask), greedy(model, prompt, mask))
