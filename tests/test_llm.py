"""aten2onnx.export_llm: tiny random-init decoder LLMs with a KV cache, exported once, run by plain
onnxruntime (prefill from an empty cache, then decode steps fed the `present` outputs) and by
onnxruntime-genai, generate exactly transformers' greedy tokens, for one prompt and for a left-padded
batch of two."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import torch

import aten2onnx
from aten2onnx import ArgumentError

transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")

VOCAB = 96
STEPS = 20
SPECIAL = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}


@dataclasses.dataclass
class Case:
    name: str
    model: Callable[[], torch.nn.Module]
    genai: bool = True  # an architecture onnxruntime-genai runs


def small(config_class: Any, **options: Any) -> Callable[[], torch.nn.Module]:
    def make() -> torch.nn.Module:
        torch.manual_seed(0)
        config = config_class(vocab_size=VOCAB, **SPECIAL, **options)
        return transformers.AutoModelForCausalLM.from_config(config).eval()
    return make


DECODER = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
               max_position_embeddings=128)
CASES = [
    Case("llama", small(transformers.LlamaConfig, **DECODER)),
    Case("mistral", small(transformers.MistralConfig, **DECODER, sliding_window=None)),
    Case("qwen2", small(transformers.Qwen2Config, **DECODER)),
    Case("phi3", small(transformers.Phi3Config, **DECODER)),
    Case("gemma", small(transformers.GemmaConfig, **DECODER, head_dim=16)),
    Case("gpt2", small(transformers.GPT2Config, n_layer=2, n_embd=64, n_head=4, n_positions=128)),
]
IDS = [case.name for case in CASES]


def exported(case: Case, tmp_path: Any) -> tuple[torch.nn.Module, str]:
    model = case.model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = aten2onnx.export_llm(model, tmp_path / case.name)
    return model, path


def left_padded(length: int, row: int, pads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) of a batch of two random prompts of `length` tokens whose `row` is
    left-padded by `pads` tokens: a shorter prompt in the same batch."""
    ids = torch.randint(3, VOCAB, (2, length), generator=torch.Generator().manual_seed(31 * length + 7 * row + pads))
    ids[row, :pads] = SPECIAL["pad_token_id"]
    mask = torch.ones_like(ids)
    mask[row, :pads] = 0
    return ids, mask


def greedy(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """transformers' greedy tokens (never stopping early at eos)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(ids, attention_mask=mask, max_new_tokens=STEPS, do_sample=False, eos_token_id=None,
                             pad_token_id=SPECIAL["pad_token_id"])
    return out[:, ids.shape[1]:]


def positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids as transformers derives them from the attention mask (padding at 1)."""
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)


def ort_greedy(path: str, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Prefill from an empty cache, then one token per step, each run fed the previous run's present."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    batch = ids.shape[0]
    dtype = np.float16 if "float16" in inputs["past_key_values.0.key"].type else np.float32
    past = {name: np.zeros((batch, i.shape[1], 0, i.shape[3]), dtype=dtype) for name, i in inputs.items()
            if name.startswith("past_key_values.")}
    tokens = []
    step_ids, step_pos = ids, positions(mask)
    for _ in range(STEPS):
        feeds = {"input_ids": step_ids.numpy(), "attention_mask": mask.numpy(), **past}
        if "position_ids" in inputs:
            feeds["position_ids"] = step_pos.numpy()
        results = dict(zip(outputs, session.run(None, feeds)))
        step_ids = torch.from_numpy(results["logits"][:, -1]).argmax(-1, keepdim=True)
        tokens.append(step_ids)
        mask = torch.cat([mask, torch.ones(batch, 1, dtype=mask.dtype)], 1)
        step_pos = positions(mask)[:, -1:]
        past = {name: results[name.replace("past_key_values", "present")] for name in past}
    return torch.cat(tokens, 1)


def prompt_ids(length: int, seed: int = 0) -> torch.Tensor:
    """A prompt [1, length] drawn from its own generator: the global one's state depends on which tests ran
    before (an export may draw from it, or not, by what it cached)."""
    return torch.randint(3, VOCAB, (1, length), generator=torch.Generator().manual_seed(seed))


def prefill_logits(path: str, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """onnxruntime's logits for the prompt from an empty cache, as float32."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    dtype = np.float16 if "float16" in inputs["past_key_values.0.key"].type else np.float32
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(),
             **{name: np.zeros((ids.shape[0], i.shape[1], 0, i.shape[3]), dtype=dtype) for name, i in inputs.items()
                if name.startswith("past_key_values.")}}
    if "position_ids" in inputs:
        feeds["position_ids"] = positions(mask).numpy()
    logits = session.run(["logits"], feeds)[0]
    return torch.from_numpy(logits.astype(np.float32))


def assert_half_logits(path: str, model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> None:
    """A float16 export's logits are as far from the float32 model's as eager float16's are, give or take as
    much again (each rounds its own ops to float16, in its own order): the bound half precision is held to,
    rather than greedy tokens, which part from eager float16's wherever two logits are closer than that."""
    with torch.no_grad():
        want = model(input_ids=ids, attention_mask=mask).logits.float()
        half = copy.deepcopy(model).to(torch.float16)(input_ids=ids, attention_mask=mask).logits.float()
    got = prefill_logits(path, ids, mask)
    allowed = 2 * float((half - want).abs().max()) + 1e-3
    assert float((got - want).abs().max()) <= allowed, (float((got - want).abs().max()), allowed)


def genai_greedy(og: Any, folder: str, prompt: torch.Tensor, steps: int = STEPS) -> torch.Tensor:
    """onnxruntime-genai's greedy tokens after the prompt [1, n] for the exported folder."""
    genai_model = og.Model(folder)
    params = og.GeneratorParams(genai_model)
    params.set_search_options(max_length=prompt.shape[1] + steps, do_sample=False)
    generator = og.Generator(genai_model, params)
    generator.append_tokens(prompt.numpy())
    while not generator.is_done():
        generator.generate_next_token()
    return torch.tensor(np.asarray(generator.get_sequence(0)), dtype=torch.long)[prompt.shape[1]:]


def until_eos(tokens: torch.Tensor) -> torch.Tensor:
    """Greedy tokens [n] up to the first end-of-sequence token, where onnxruntime-genai stops (without it)."""
    ends = (tokens == SPECIAL["eos_token_id"]).nonzero()
    return tokens[:int(ends[0])] if len(ends) else tokens


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_onnxruntime_generates_transformers_greedy_tokens(case, tmp_path):
    model, path = exported(case, tmp_path)
    torch.manual_seed(1)
    prompt = prompt_ids(7)
    mask = torch.ones_like(prompt)
    want = greedy(model, prompt, mask)
    assert torch.equal(ort_greedy(path, prompt, mask), want)
    # a batch of two prompts of different lengths, the shorter left-padded, follows the attention mask
    batch, mask = left_padded(6, row=1, pads=2)
    assert torch.equal(ort_greedy(path, batch, mask), greedy(model, batch, mask))


@pytest.mark.parametrize("case", [c for c in CASES if c.genai], ids=[c.name for c in CASES if c.genai])
def test_onnxruntime_genai_generates_transformers_greedy_tokens(case, tmp_path):
    og = pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is an optional extra")
    model, path = exported(case, tmp_path)
    torch.manual_seed(2)
    prompt = prompt_ids(5)
    want = greedy(model, prompt, torch.ones_like(prompt))
    assert torch.equal(genai_greedy(og, os.path.dirname(path), prompt), until_eos(want[0]))


@pytest.mark.parametrize("case", [CASES[0], CASES[-1]], ids=[CASES[0].name, CASES[-1].name])
def test_shortest_contexts_run_and_no_false_narrowing_is_reported(case, tmp_path):
    """torch.export counts the past and the new tokens from 2 each and so reported the total length narrowed
    to 4 and up on every export_llm; the export checks the saved model on total lengths 1 and 2 and drops
    that report. A one-token prompt from an empty cache generates transformers' tokens."""
    model = case.model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = aten2onnx.export_llm(model, tmp_path / case.name)
    assert not [w for w in caught if issubclass(w.category, aten2onnx.NarrowedExportWarning)]
    prompt = torch.tensor([[5]])
    assert torch.equal(ort_greedy(path, prompt, torch.ones_like(prompt)), greedy(model, prompt, torch.ones_like(prompt)))


def test_a_narrowing_the_shortest_contexts_confirm_is_reported(tmp_path, monkeypatch):
    """Where the saved model does not run the shortest contexts as the model does, the report stays."""
    from aten2onnx.exporter import llm

    monkeypatch.setattr(llm, "runs_short_contexts", lambda *args: False)
    with pytest.warns(aten2onnx.NarrowedExportWarning, match="total_sequence_length"):
        aten2onnx.export_llm(CASES[0].model(), tmp_path / "out")


def test_signature_names_and_symbolic_dims(tmp_path):
    import onnx

    model, path = exported(CASES[0], tmp_path)
    proto = onnx.load(path)
    inputs = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in proto.graph.input}
    assert list(inputs)[:3] == ["input_ids", "attention_mask", "position_ids"]
    assert inputs["input_ids"] == ["batch_size", "sequence_length"]
    assert inputs["attention_mask"] == ["batch_size", "total_sequence_length"]
    assert inputs["past_key_values.1.value"] == ["batch_size", 2, "past_sequence_length", 16]
    outputs = [o.name for o in proto.graph.output]
    assert outputs == ["logits", "present.0.key", "present.0.value", "present.1.key", "present.1.value"]
    config = json.loads((tmp_path / "llama" / "genai_config.json").read_text())
    decoder = config["model"]["decoder"]
    assert decoder["inputs"]["past_key_names"] == "past_key_values.%d.key"
    assert (decoder["num_hidden_layers"], decoder["num_key_value_heads"], decoder["head_size"]) == (2, 2, 16)
    assert config["model"]["eos_token_id"] == 2 and config["search"]["past_present_share_buffer"] is False
    assert not any(node.domain == "org.pytorch.aten" for node in proto.graph.node)


def test_folder_with_tokenizer_and_half_precision(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    model = CASES[0].model()
    folder = tmp_path / "hf"
    model.save_pretrained(folder)
    vocab = {f"t{i}": i for i in range(VOCAB)}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="t0"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = aten2onnx.export_llm(folder, tmp_path / "out", dtype=torch.float16)
    assert sorted(os.listdir(tmp_path / "out")) == ["genai_config.json", "generation_config.json", "model.onnx",
                                                   "tokenizer.json"]
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the model is not cast in place
    prompt = prompt_ids(6)
    assert_half_logits(path, model, prompt, torch.ones_like(prompt))


@pytest.mark.parametrize(("model", "options", "match"), [
    ("not/a/folder", {}, "is not a folder"),
    (torch.nn.Linear(2, 2), {}, "takes a transformers causal LM"),
    (None, {"optimize": "tensorrt"}, "optimize='tensorrt' violates"),
])
def test_refusals(model, options, match, tmp_path):
    model = CASES[0].model() if model is None else model
    with pytest.raises(ArgumentError, match=match):
        aten2onnx.export_llm(model, tmp_path / "out", **options)


@pytest.mark.parametrize("case", CASES[:1] + CASES[-1:], ids=["llama", "gpt2"])
def test_plain_export_takes_a_dynamic_cache_with_genai_names(case):
    """export(model, kwargs={..., "past_key_values": DynamicCache}) with no registration by the user:
    cache tensors named past_key_values.<i>.key/value in and present.<i>.key/value out, logits by its
    key; run() gives transformers' output and cache back, onnxruntime the same values."""
    model = case.model()
    with torch.no_grad():
        past = model(input_ids=torch.randint(3, VOCAB, (2, 4), generator=torch.Generator().manual_seed(1)),
                     use_cache=True).past_key_values
    ids = torch.randint(3, VOCAB, (2, 3), generator=torch.Generator().manual_seed(2))
    mask = torch.ones(2, 7, dtype=torch.long)
    kwargs = {"input_ids": ids, "attention_mask": mask, "past_key_values": past, "use_cache": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported_model = aten2onnx.export(model, (), kwargs)
    layers = len(past.layers)
    assert exported_model.input_names == ["input_ids", "attention_mask"] + sorted(
        [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")],
        key=lambda n: (n.endswith("value"), n))
    assert exported_model.output_names[0] == "logits"
    assert sorted(exported_model.output_names[1:]) == sorted(
        f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value"))
    import copy
    want = model(**{**kwargs, "past_key_values": copy.deepcopy(past)})
    got = exported_model.run(**kwargs)
    torch.testing.assert_close(got.logits, want.logits, rtol=1e-4, atol=1e-5)
    for mine, theirs in zip(got.past_key_values.layers, want.past_key_values.layers):
        torch.testing.assert_close(mine.keys, theirs.keys)
        torch.testing.assert_close(mine.values, theirs.values)
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    feeds.update({f"past_key_values.{i}.key": layer.keys.numpy() for i, layer in enumerate(past.layers)})
    feeds.update({f"past_key_values.{i}.value": layer.values.numpy() for i, layer in enumerate(past.layers)})
    session = ort.InferenceSession(exported_model.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    results = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    torch.testing.assert_close(torch.from_numpy(results["logits"]), want.logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(torch.from_numpy(results[f"present.{layers - 1}.value"]),
                               want.past_key_values.layers[-1].values, rtol=1e-4, atol=1e-5)


def test_command_exports_a_folder(tmp_path, capsys):
    from aten2onnx.cli import main

    model = CASES[0].model()
    model.save_pretrained(tmp_path / "hf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["export-llm", str(tmp_path / "hf"), str(tmp_path / "out"), "--max-length", "64"]) == 0
    assert "wrote" in capsys.readouterr().out
    config = json.loads((tmp_path / "out" / "genai_config.json").read_text())
    assert config["search"]["max_length"] == 64
    prompt = prompt_ids(5)
    mask = torch.ones_like(prompt)
    assert torch.equal(ort_greedy(str(tmp_path / "out" / "model.onnx"), prompt, mask), greedy(model, prompt, mask))
    assert main(["export-llm", str(tmp_path / "missing"), str(tmp_path / "out2")]) == 2
