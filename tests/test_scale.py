"""Models exported without their weights in memory: a module built on the meta device, its weights bound
at save time from a state dict or safetensors; export_llm from a folder, each weight read and written one
at a time. The truth each is held to: the file the same model's ordinary export writes, and eager PyTorch's
(transformers') output."""

from __future__ import annotations

import dataclasses
import gc
import os
import warnings
import weakref
from typing import Any, Callable

import numpy as np
import onnx
import pytest
import torch

import aten2onnx
from aten2onnx import ArgumentError, ExportError

safetensors_torch = pytest.importorskip("safetensors.torch")


class ConvBN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.up = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.bn2 = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn2(self.up(self.bn(self.conv(x)).relu()))


class TiedHead(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(50, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.head = torch.nn.Linear(16, 50, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.norm(self.embed(ids)))


def encoder() -> torch.nn.Module:
    return torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)


MODELS: list[tuple[str, Callable[[], torch.nn.Module], Callable[[], tuple]]] = [
    ("conv_bn", ConvBN, lambda: (torch.randn(2, 3, 8, 8),)),
    ("mlp", lambda: torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)),
     lambda: (torch.randn(5, 8),)),
    ("tied_head", TiedHead, lambda: (torch.randint(0, 50, (2, 7)),)),
    ("encoder_layer", encoder, lambda: (torch.randn(2, 5, 16),)),
    ("gru", lambda: torch.nn.GRU(8, 12, num_layers=2, batch_first=True), lambda: (torch.randn(2, 5, 8),)),
]


def randomized(model: torch.nn.Module) -> torch.nn.Module:
    """The model with every float tensor random (batch norm statistics included), in eval mode."""
    torch.manual_seed(0)
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point():
                t.copy_(torch.rand_like(t) + 0.5 if t.dim() == 1 else torch.randn_like(t) * 0.3)
    return model.eval()


def loaded(path: str) -> tuple[list[bytes], dict[str, np.ndarray]]:
    """A saved model's nodes and its initializers (external data read), by name."""
    proto = onnx.load(path)
    return ([n.SerializeToString() for n in proto.graph.node],
            {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer})


def quiet_export(*args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export(*args, **kwargs)


@pytest.mark.parametrize(("make", "inputs"), [m[1:] for m in MODELS], ids=[m[0] for m in MODELS])
def test_a_meta_device_export_bound_to_its_weights_writes_the_real_exports_file(make, inputs, tmp_path):
    real = randomized(make())
    with torch.device("meta"):
        empty = make().eval()
    args = inputs()
    want_nodes, want = quiet_export(real, args), None
    want_nodes.save(tmp_path / "real.onnx", external_data=True)
    want_nodes, want = loaded(str(tmp_path / "real.onnx"))
    exported = quiet_export(empty, args)
    assert exported.unbound_weights
    state = real.state_dict()
    exported.save(tmp_path / "bound.onnx", external_data=True, weights=state)
    nodes, got = loaded(str(tmp_path / "bound.onnx"))
    assert nodes == want_nodes
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and np.array_equal(got[name], want[name]), name
    # the same from a safetensors file (tied weights saved once, as safetensors requires)
    safetensors_torch.save_model(real, str(tmp_path / "w.safetensors"))
    exported.save(tmp_path / "file.onnx", external_data=True, weights=tmp_path / "w.safetensors")
    assert loaded(str(tmp_path / "file.onnx"))[1].keys() == want.keys()
    # and it runs as eager does
    with torch.no_grad():
        expected = real(*args)
    expected = expected[0] if isinstance(expected, tuple) else expected
    import onnxruntime
    session = onnxruntime.InferenceSession(str(tmp_path / "bound.onnx"), providers=["CPUExecutionProvider"])
    out = session.run(None, {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)})[0]
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-4, atol=1e-5)


def test_weights_that_do_not_fit_are_refused_before_anything_is_written(tmp_path):
    with torch.device("meta"):
        empty = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)).eval()
    exported = quiet_export(empty, (torch.randn(2, 4),))
    with pytest.raises(ExportError, match=r"exported without its weights .* weights=state_dict"):
        exported.save(tmp_path / "m.onnx")
    with pytest.raises(ExportError, match="exported without its weights"):
        exported.run(torch.randn(2, 4))
    with pytest.raises(ArgumentError, match=r"lack 2 of the 4 .*\['2.bias', '2.weight'\]"):
        exported.save(tmp_path / "m.onnx", weights={"0.weight": torch.zeros(3, 4), "0.bias": torch.zeros(3)})
    wrong = {"0.weight": torch.zeros(4, 3), "0.bias": torch.zeros(3), "2.weight": torch.zeros(2, 3), "2.bias": torch.zeros(2)}
    with pytest.raises(ExportError, match=r"'0.weight' given has shape \(4, 3\), the model's \(3, 4\)"):
        exported.save(tmp_path / "m.onnx", weights=wrong)
    assert not os.path.exists(tmp_path / "m.onnx")
    with pytest.raises(ArgumentError, match="neither a safetensors file nor a folder"):
        exported.save(tmp_path / "m.onnx", weights=str(tmp_path / "missing.safetensors"))
    # the advice followed: the right weights, then the model runs
    real = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)).eval()
    exported.bind_weights(real.state_dict())
    x = torch.randn(2, 4)
    torch.testing.assert_close(exported.run(x), real(x))


# -- export_llm from a folder: the model captured without its weights, each weight streamed to the file --

transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")

SPECIAL = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}
DECODER = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
               max_position_embeddings=128)
LLMS = [
    ("llama", lambda: transformers.LlamaConfig(vocab_size=96, **SPECIAL, **DECODER)),
    ("llama_tied", lambda: transformers.LlamaConfig(vocab_size=96, **SPECIAL, **DECODER, tie_word_embeddings=True)),
    ("qwen2", lambda: transformers.Qwen2Config(vocab_size=96, **SPECIAL, **DECODER)),
    ("gemma", lambda: transformers.GemmaConfig(vocab_size=96, **SPECIAL, **DECODER, head_dim=16)),
    ("gpt2", lambda: transformers.GPT2Config(vocab_size=96, **SPECIAL, n_layer=2, n_embd=64, n_head=4, n_positions=128)),
]


def logits(path: str, ids: torch.Tensor) -> np.ndarray:
    """onnxruntime's logits for a prompt from an empty cache."""
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for given in session.get_inputs():
        if given.name == "input_ids":
            feeds[given.name] = ids.numpy()
        elif given.name == "attention_mask":
            feeds[given.name] = np.ones(ids.shape, np.int64)
        elif given.name == "position_ids":
            feeds[given.name] = np.arange(ids.shape[1])[None].repeat(ids.shape[0], 0)
        else:
            heads, size = given.shape[1], given.shape[3]
            dtype = np.float16 if given.type == "tensor(float16)" else np.float32
            feeds[given.name] = np.zeros((ids.shape[0], heads, 0, size), dtype)
    return session.run(["logits"], feeds)[0]


@pytest.mark.parametrize("config", [c[1] for c in LLMS], ids=[c[0] for c in LLMS])
def test_export_llm_from_a_folder_never_loads_the_model(config, tmp_path, monkeypatch):
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config()).eval()
    folder = tmp_path / "hf"
    model.save_pretrained(folder, max_shard_size="40KB")  # sharded
    assert len([f for f in os.listdir(folder) if f.endswith(".safetensors")]) > 1
    largest = max(t.numel() * t.element_size() for t in model.state_dict().values())

    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refused)
    # at most two weights' bytes held at once: one read from the folder, and its transposed copy
    from aten2onnx.exporter import weights as weights_module
    live: dict[int, int] = {}
    peak = [0]
    read = weights_module.Safetensors.read

    def tracked(self: Any, key: str) -> torch.Tensor:
        tensor = read(self, key)
        live[id(tensor)] = tensor.numel() * tensor.element_size()
        weakref.finalize(tensor, live.pop, id(tensor), None)
        peak[0] = max(peak[0], sum(live.values()))
        return tensor

    monkeypatch.setattr(weights_module.Safetensors, "read", tracked)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = aten2onnx.export_llm(folder, tmp_path / "out")
    gc.collect()
    assert not [w for w in caught if issubclass(w.category, aten2onnx.NarrowedExportWarning)]
    assert 0 < peak[0] <= largest
    ids = torch.randint(3, 96, (2, 6))
    with torch.no_grad():
        want = model(ids).logits.numpy()
    np.testing.assert_allclose(logits(path, ids), want, rtol=1e-4, atol=1e-4)


def test_export_llm_of_a_model_in_memory_casts_each_weight_as_it_is_written(tmp_path, monkeypatch):
    """dtype= on a loaded model: no cast copy of the model (Module.to is never called), the model unchanged,
    and the shortest contexts checked on a small model of its kind (as for any model above PROXY_ABOVE)."""
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(LLMS[0][1]()).eval()
    before = {name: p for name, p in model.named_parameters()}

    to = torch.nn.Module.to

    def refused(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        if self is model:
            raise AssertionError("the model was cast whole")
        return to(self, *args, **kwargs)

    monkeypatch.setattr(aten2onnx, "PROXY_ABOVE", 0)
    with monkeypatch.context() as patched, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        patched.setattr(type(model), "to", refused)
        path = aten2onnx.export_llm(model, tmp_path / "out", dtype=torch.float16)
    assert not [w for w in caught if issubclass(w.category, aten2onnx.NarrowedExportWarning)]
    assert {name: p for name, p in model.named_parameters()} == before
    assert all(p.dtype == torch.float32 and p.device.type == "cpu" for p in model.parameters())
    ids = torch.randint(3, 96, (1, 6))
    with torch.no_grad():
        want = model.half()(ids).logits.float().numpy()
    np.testing.assert_allclose(logits(path, ids).astype(np.float32), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("config", [LLMS[1][1], LLMS[3][1], LLMS[4][1]], ids=["llama_tied", "gemma", "gpt2"])
def test_export_llm_from_a_folder_with_fused_ops_writes_the_loaded_models_file(config, tmp_path, monkeypatch):
    """optimize="onnxruntime" from a folder: the fusion plan is chosen on a small model of the architecture,
    the packed QKV weight (and Gemma's shifted norm weights, GPT-2's transposed projection) computed as
    written; the file is the one export_llm of the loaded model writes."""
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config()).eval()
    folder = tmp_path / "hf"
    model.save_pretrained(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_path = aten2onnx.export_llm(model, tmp_path / "loaded", optimize="onnxruntime")
        with monkeypatch.context() as patched:
            patched.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                            lambda *a, **k: pytest.fail("the model was loaded"))
            path = aten2onnx.export_llm(folder, tmp_path / "streamed", optimize="onnxruntime")
    want, got = onnx.load(want_path), onnx.load(path)
    assert [n.op_type for n in got.graph.node] == [n.op_type for n in want.graph.node]
    assert any(n.op_type == "GroupQueryAttention" for n in got.graph.node)
    want_values = {t.name: onnx.numpy_helper.to_array(t) for t in want.graph.initializer}
    got_values = {t.name: onnx.numpy_helper.to_array(t) for t in got.graph.initializer}
    assert got_values.keys() == want_values.keys()
    assert all(np.array_equal(got_values[k], want_values[k]) for k in want_values)


def test_onnxruntime_genai_generates_transformers_tokens_from_a_streamed_folder(tmp_path):
    og = pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is an optional extra")
    tokenizers = pytest.importorskip("tokenizers")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(LLMS[0][1]()).eval()
    folder = tmp_path / "hf"
    model.save_pretrained(folder, max_shard_size="40KB")
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({f"t{i}": i for i in range(96)}, unk_token="t0"))
    tokenizer.save(str(folder / "tokenizer.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = aten2onnx.export_llm(folder, tmp_path / "out")
    prompt = torch.randint(3, 96, (1, 5))
    want = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12, do_sample=False,
                          pad_token_id=0)[0, 5:]
    genai_model = og.Model(os.path.dirname(path))
    params = og.GeneratorParams(genai_model)
    params.set_search_options(max_length=5 + 12, do_sample=False)
    generator = og.Generator(genai_model, params)
    generator.append_tokens(prompt.numpy())
    while not generator.is_done():
        generator.generate_next_token()
    got = torch.tensor(np.asarray(generator.get_sequence(0)), dtype=torch.long)[5:]
    assert torch.equal(got[:len(want)], want)


def test_a_model_built_under_fake_tensor_mode_exports_and_binds_like_a_meta_one(tmp_path):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = ConvBN().eval()
    real = randomized(ConvBN())
    x = torch.randn(2, 3, 8, 8)
    exported = quiet_export(fake, (x,))
    assert exported.unbound_weights
    exported.save(tmp_path / "fake.onnx", external_data=True, weights=real.state_dict())
    quiet_export(real, (x,)).save(tmp_path / "real.onnx", external_data=True)
    nodes, values = loaded(str(tmp_path / "fake.onnx"))
    want_nodes, want = loaded(str(tmp_path / "real.onnx"))
    assert nodes == want_nodes and all(np.array_equal(values[k], want[k]) for k in want) and values.keys() == want.keys()
    torch.testing.assert_close(exported.run(x), real(x))


def test_a_meta_module_exported_twice_under_other_names_binds_by_each_exports_names(tmp_path):
    """The first export tagged the user's meta parameters with its own state-dict keys, so a second export
    of the same module inside a wrapper asked for '0.weight' where the wrapper's state dict has 'inner.0.weight'."""
    def make():
        return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())

    with torch.device("meta"):
        inner = make().eval()
        wrapper = torch.nn.Module()
        wrapper.inner = inner
        wrapper.forward = lambda x: inner(x) * 2
    real_inner = make().eval()
    x = torch.randn(2, 4)
    quiet_export(inner, (x,)).bind_weights(real_inner.state_dict())
    exported = quiet_export(wrapper, (x,))
    assert sorted(exported.unbound_weights) == ["inner.0.bias", "inner.0.weight"]
    exported.bind_weights({f"inner.{k}": v for k, v in real_inner.state_dict().items()})
    torch.testing.assert_close(exported.run(x), real_inner(x) * 2)
    assert not any(hasattr(p, "_aten2onnx_lazy") for p in inner.parameters())  # the user's tensors untouched


def _resident_bytes_of(path: str) -> int:
    """How much of the mappings of path this process holds resident (Rss in /proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(maxsplit=5)
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                inside = len(head) == 6 and head[5].strip() == path
            elif inside and head[0] == "Rss:":
                total += int(head[1]) * 1024
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads Linux's /proc/self/smaps")
@pytest.mark.parametrize("external_data", [True, False])
def test_save_gives_back_the_pages_of_weights_mapped_from_a_file(tmp_path, external_data):
    """A model whose weights are mapped from a file (torch.load(mmap=True); transformers maps safetensors the
    same way) holds each weight's pages once read: saving reads them all, and without giving them back the
    process held the whole model again. Once written they are given back, values unchanged."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)).eval()
    weights = str(tmp_path / "weights.pt")
    torch.save(model.state_dict(), weights)
    model.load_state_dict(torch.load(weights, mmap=True), assign=True)
    expected = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    x = torch.randn(3, 512)
    with torch.no_grad():
        want = model(x).numpy()  # reads every weight
    resident = _resident_bytes_of(weights)
    assert resident >= 4 << 20  # 4 MB of weights, mapped and read
    exported = aten2onnx.export(model, (x,))
    out = str(tmp_path / "model.onnx")
    exported.save(out, external_data=external_data)
    assert _resident_bytes_of(weights) < resident // 4
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, expected[name]), name
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with torch.no_grad():  # the model reads its weights again from the file
        np.testing.assert_array_equal(model(x).numpy(), want)


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads Linux's /proc/self/smaps")
def test_export_llm_from_a_folder_holds_one_weights_pages_at_once(tmp_path, monkeypatch):
    """The safetensors are read through mappings: at each read the pages the process holds of them are at most
    the largest weight's, and the pages the kernel maps with the ones read (its fault-around, or a large folio
    of the page cache: at most a huge page's 2 MB at either end), and none after."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=4096, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                                      num_attention_heads=4, num_key_value_heads=2, **SPECIAL)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    folder = tmp_path / "hf"
    model.save_pretrained(folder, max_shard_size="3MB")
    shards = [str(folder / f) for f in os.listdir(folder) if f.endswith(".safetensors")]
    total = sum(os.path.getsize(s) for s in shards)
    largest = max(t.numel() * t.element_size() for t in model.state_dict().values())
    slack = 2 * (2 << 20)
    assert total > 2 * (largest + slack)
    from aten2onnx.exporter import weights as weights_module
    held = []
    read = weights_module.Safetensors.read

    def tracked(self: Any, key: str) -> torch.Tensor:
        held.append(sum(_resident_bytes_of(s) for s in shards))  # (the last weight's pages, not yet given back)
        return read(self, key)

    monkeypatch.setattr(weights_module.Safetensors, "read", tracked)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = aten2onnx.export_llm(folder, tmp_path / "out")
    assert len(held) >= len(model.state_dict()) - 1  # (a tied weight is read once)
    assert max(held) <= largest + slack
    assert sum(_resident_bytes_of(s) for s in shards) == 0
    ids = torch.randint(3, 4096, (2, 6))
    with torch.no_grad():
        want = model(ids).logits.numpy()
    np.testing.assert_allclose(logits(path, ids), want, rtol=1e-4, atol=1e-4)


# config_layout's answer: the config's own, or (a config that says otherwise than the model's cache) one head more
WRONG_LAYOUTS = {"as configured": lambda layout: layout,
                 "heads": lambda layout: dataclasses.replace(layout, kv_heads=tuple(h + 1 for h in layout.kv_heads)),
                 "head size": lambda layout: dataclasses.replace(layout, head_sizes=tuple(2 * s for s in layout.head_sizes)),
                 "layers": lambda layout: dataclasses.replace(layout, kv_heads=layout.kv_heads[1:],
                                                              head_sizes=layout.head_sizes[1:])}


@pytest.mark.parametrize("said", WRONG_LAYOUTS)
def test_export_llm_from_a_folder_reads_its_cache_from_the_config_and_checks_it(said, tmp_path, monkeypatch):
    """A model without weights: its cache's layout is the config's, checked on the capture; where the config
    says otherwise than the model's cache (multi-query Falcon's config counts 1 key/value head as many), the
    layout is read from a capture of its own and the model captured again."""
    from aten2onnx.exporter import llm
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(LLMS[0][1]()).eval()
    folder = tmp_path / "hf"
    model.save_pretrained(folder)
    configured, read = llm.config_layout, []
    monkeypatch.setattr(llm, "config_layout", lambda m: WRONG_LAYOUTS[said](configured(m)))
    real = llm.cache_layout
    monkeypatch.setattr(llm, "cache_layout", lambda m: read.append(m) or real(m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = aten2onnx.export_llm(folder, tmp_path / "out")
    read_main = [m for m in read if m.config.num_hidden_layers == model.config.num_hidden_layers]
    assert len(read_main) == (0 if said == "as configured" else 1)
    ids = torch.randint(3, 96, (2, 6))
    with torch.no_grad():
        want = model(ids).logits.numpy()
    np.testing.assert_allclose(logits(path, ids), want, rtol=1e-4, atol=1e-4)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    heads = [i.shape[1] for i in session.get_inputs() if i.name.startswith("past_key_values.")]
    assert heads == [model.config.num_key_value_heads] * 2 * model.config.num_hidden_layers


def test_export_llm_writes_files_whose_mode_follows_the_umask(tmp_path):
    """Every file of the folder (the model, its data, genai_config.json, the tokenizer's) as any file a program
    creates: 0666 less the umask (genai_config.json was 0600, written through a NamedTemporaryFile)."""
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(LLMS[0][1]()).eval()
    folder = tmp_path / "hf"
    model.save_pretrained(folder)
    (folder / "tokenizer.json").write_text("{}")
    previous = os.umask(0o027)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            aten2onnx.export_llm(folder, tmp_path / "out")
    finally:
        os.umask(previous)
    modes = {name: os.stat(tmp_path / "out" / name).st_mode & 0o777 for name in os.listdir(tmp_path / "out")}
    assert {"model.onnx", "genai_config.json", "tokenizer.json"} <= set(modes)
    assert modes == dict.fromkeys(modes, 0o640)
