"""Decoder-only language models with a KV cache (`aten2onnx.export_llm`): the model as a module that
takes onnxruntime-genai's and optimum's inputs (input_ids, attention_mask, position_ids where the
architecture takes them, past_key_values.<i>.key/value) and gives logits and present.<i>.key/value,
every size symbolic so that one model serves prefill from an empty cache and decode; and the
genai_config.json onnxruntime-genai reads beside it."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import itertools
import os
import shutil
from typing import Any, Callable, Iterator

import torch

from aten2onnx.errors import ArgumentError, ExportError
from aten2onnx.exporter.capture import eval_mode
from aten2onnx.exporter.transformers_compat import cache_keyword, output_cache

# Example sizes for capture: all different and above 1, so that torch.export specializes none of them.
BATCH, SEQUENCE, PAST = 2, 3, 5
# The total length's lower bound declared for capture: torch.export counts the past and the new tokens
# from 2 each, and refuses a smaller bound (a second capture would apply its fix); export_llm runs the
# shortest contexts to show the graph right below it (runs_short_contexts)
TOTAL_FROM = 4
# The files of a tokenizer that a model folder may hold, copied beside the model for onnxruntime-genai.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                   "vocab.json", "merges.txt", "added_tokens.json", "generation_config.json", "chat_template.jinja")
# onnxruntime-genai's model types that run a decoder with the inputs and outputs its config names (as ours);
# other architectures are its generic "decoder" (its "gpt2" type expects another cache layout).
GENAI_DECODER_TYPES = frozenset({"llama", "mistral", "qwen2", "phi3", "gemma", "granite", "olmo", "nemotron"})
DIMS = {"batch": "batch_size", "sequence": "sequence_length", "past": "past_sequence_length",
        "total": "total_sequence_length"}


@dataclasses.dataclass(frozen=True)
class CacheLayout:
    """What the model's cache holds per layer: key/value heads and head sizes (as one run shows)."""

    kv_heads: tuple[int, ...]
    head_sizes: tuple[int, ...]
    dtype: torch.dtype

    @property
    def layers(self) -> int:
        return len(self.kv_heads)


def causal_lm(model: Any) -> torch.nn.Module:
    """The model: a transformers causal LM instance, or one loaded from a local folder (no downloads)."""
    if isinstance(model, (str, os.PathLike)):
        if not os.path.isdir(model):
            raise ArgumentError(f"{os.fspath(model)!r} is not a folder; pass a transformers causal LM, or a local "
                                "folder that AutoModelForCausalLM.from_pretrained loads (config.json and weights)")
        from transformers import AutoModelForCausalLM
        try:
            return AutoModelForCausalLM.from_pretrained(os.fspath(model), local_files_only=True)
        except (OSError, ValueError, KeyError) as e:
            raise ArgumentError(f"AutoModelForCausalLM could not load {os.fspath(model)!r}: {e}") from e
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise ArgumentError(f"export_llm takes a transformers causal LM or a folder, not {type(model).__name__}")
    return model


@contextlib.contextmanager
def parameters_on_meta() -> Iterator[None]:
    """Modules built inside have their parameters on the meta device (no memory), their buffers computed
    as usual (a rotary table no checkpoint holds)."""
    register = torch.nn.Module.register_parameter

    def on_meta(module: torch.nn.Module, name: str, param: torch.nn.Parameter | None) -> None:
        if param is not None and param.device.type != "meta":
            param = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    torch.nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


def causal_lm_without_weights(folder: str, dtype: torch.dtype | None) -> tuple[torch.nn.Module, Any] | None:
    """The folder's causal LM with its weights on the meta device, each read from the folder's safetensors
    when the model is written, and those weights; None where the checkpoint does not name every weight by
    its module path with the model's shape (a layout transformers converts as it loads)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from aten2onnx.exporter.weights import Safetensors
    from aten2onnx.ir import lazy

    if not any(f.endswith(".safetensors") for f in os.listdir(folder)):
        return None
    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        with parameters_on_meta():
            model = AutoModelForCausalLM.from_config(config)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # (loaded whole, as from_pretrained says why)
    stored = Safetensors.at(folder)
    if dtype is None:
        floats = {stored.entries[k][1] for k in stored.entries if stored.entries[k][1].is_floating_point}
        dtype = floats.pop() if len(floats) == 1 else None
    if dtype is not None:
        model.to(dtype)  # (the meta parameters; the computed buffers keep their dtype, as from_pretrained's)
    names: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    aliases = {}
    for name, param in model.named_parameters():
        found = [n for n in names[id(param)] if n in stored]
        if not found or list(stored.shape(found[0])) != list(param.shape):
            return None
        aliases[name] = found
        lazy.source(param, name)
    for prefix, module in model.named_modules():
        for name, buffer in list(module._buffers.items()):
            key = f"{prefix}.{name}" if prefix else name
            if buffer is None or buffer.device.type == "meta":
                continue
            if key in stored and list(stored.shape(key)) == list(buffer.shape):
                module._buffers[name] = lazy.source(buffer.to("meta"), key)  # read from the checkpoint
            else:
                module._buffers[name] = lazy.holding(buffer)
    return model.eval(), aliases


def cast_without_copy(model: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """A twin of model whose floating-point weights are meta tensors standing for the model's cast to dtype
    (each cast when written): the model is left as it is and its weights are not copied."""
    import copy

    from aten2onnx.ir import lazy

    memo: dict[int, Any] = {}
    for tensor in itertools.chain(model.parameters(), model.buffers()):
        if id(tensor) in memo:
            continue
        fn = functools.partial(_cast, dtype=dtype if tensor.is_floating_point() else tensor.dtype)
        twin = lazy.derived(fn, tensor)
        if isinstance(tensor, torch.nn.Parameter):
            twin = lazy.alias(twin, torch.nn.Parameter(twin, requires_grad=False))
        memo[id(tensor)] = twin
    return copy.deepcopy(model, memo)


def _cast(tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return tensor.to(dtype)


# The MLP width of export_llm's small model of an architecture (llm.proxy).
PROXY_MLP = 256


def proxy(model: torch.nn.Module) -> torch.nn.Module | None:
    """A small model of model's architecture with random weights (one layer, an MLP at most PROXY_MLP wide, a
    vocabulary of at most 1024 where its special tokens allow): its export runs what model's export would on
    the shortest contexts, so it stands in for the checks that need weights. None where the architecture will not shrink so."""
    import copy

    from transformers import AutoModelForCausalLM

    config = copy.deepcopy(model.config)
    text = config.get_text_config()
    special = [getattr(text, key, None) for key in ("pad_token_id", "bos_token_id", "eos_token_id")]
    special = [i for s in special for i in (s if isinstance(s, (list, tuple)) else [s]) if isinstance(i, int)]
    text.vocab_size = min(text.vocab_size, max([1024] + [i + 1 for i in special]))
    text.num_hidden_layers = 1
    if isinstance(getattr(text, "intermediate_size", None), int):  # (the MLP's width changes no size handling)
        text.intermediate_size = min(text.intermediate_size, PROXY_MLP)
    if isinstance(getattr(text, "layer_types", None), list):
        text.layer_types = text.layer_types[:1]
    try:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            small = AutoModelForCausalLM.from_config(config)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    dtype = next(p.dtype for p in model.parameters() if p.is_floating_point())
    return small.to(dtype).eval()


def takes_position_ids(model: torch.nn.Module) -> bool:
    return "position_ids" in inspect.signature(model.forward).parameters


def cache_layout(model: torch.nn.Module) -> CacheLayout:
    """The cache one short run of the model makes (so architectures with their own head sizes or
    per-layer head counts are read as they are)."""
    from transformers import DynamicCache

    device = next(model.parameters()).device  # (meta for a model without its weights)
    ids = torch.zeros(1, 2, dtype=torch.long, device=device)

    def run(ids: torch.Tensor) -> list[torch.Tensor]:
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True,
                    **{cache_keyword(model.forward): DynamicCache(config=model.config)})
        layers = getattr(output_cache(out), "layers", None)
        if not layers or any(getattr(layer, "keys", None) is None for layer in layers):
            raise ExportError(f"{type(model).__name__} made no key/value cache in a run with use_cache=True; "
                              "export_llm exports decoder-only models with a transformers DynamicCache")
        return [layer.keys for layer in layers]

    with eval_mode(model), torch.no_grad():
        if device.type != "meta":
            keys = run(ids)
        else:  # the model's branches on values (a check for padding) are skipped as in any capture
            keys = [n.meta["val"] for n in torch.export.export(_Call(run), (ids,), strict=False).graph.output_node().args[0]]
    return CacheLayout(tuple(k.shape[1] for k in keys), tuple(k.shape[-1] for k in keys), keys[0].dtype)


def config_layout(model: torch.nn.Module) -> CacheLayout | None:
    """The cache's layout as the model's config says it (every layer num_key_value_heads heads of head_dim, or
    of hidden_size / num_attention_heads, in the model's dtype), to be checked on a capture (has_layout); None
    where the config does not say."""
    text = model.config.get_text_config()
    heads = getattr(text, "num_attention_heads", None)
    layers = getattr(text, "num_hidden_layers", None)
    kv = getattr(text, "num_key_value_heads", None) or heads
    head = getattr(text, "head_dim", None)
    if head is None and isinstance(heads, int) and heads > 0 and isinstance(getattr(text, "hidden_size", None), int):
        head = text.hidden_size // heads
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), None)
    if dtype is None or not all(isinstance(n, int) and n > 0 for n in (layers, kv, head)):
        return None
    return CacheLayout((kv,) * layers, (head,) * layers, dtype)


def has_layout(graph: Any, layout: CacheLayout) -> bool:
    """Whether an exported graph's cache outputs (present.<i>.key/value) are those of layout: as many layers,
    each of its heads and head size, of its dtype."""
    from aten2onnx import _dtypes

    present = {value.name: value.type.tensor_type for value in graph.output if value.name.startswith("present.")}
    if len(present) != 2 * layout.layers:
        return False
    for i in range(layout.layers):
        for kv in ("key", "value"):
            kind = present.get(f"present.{i}.{kv}")
            if kind is None or kind.elem_type != _dtypes.to_onnx(layout.dtype) or len(kind.shape.dim) != 4:
                return False
            dims = kind.shape.dim
            if (dims[1].dim_value, dims[3].dim_value) != (layout.kv_heads[i], layout.head_sizes[i]):
                return False
    return True


class _Call(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def input_names(layout: CacheLayout, position_ids: bool) -> list[str]:
    names = ["input_ids", "attention_mask"] + (["position_ids"] if position_ids else [])
    return names + [f"past_key_values.{i}.{kv}" for i in range(layout.layers) for kv in ("key", "value")]


def output_names(layout: CacheLayout) -> list[str]:
    return ["logits"] + [f"present.{i}.{kv}" for i in range(layout.layers) for kv in ("key", "value")]


class CacheModule(torch.nn.Module):
    """The model with its cache as flat tensors: forward(input_ids, attention_mask, [position_ids],
    past_key_values_0_key, past_key_values_0_value, ...) -> (logits, present_0_key, ...)."""

    def __init__(self, model: torch.nn.Module, layout: CacheLayout, position_ids: bool) -> None:
        super().__init__()
        self.model = model
        self.layers = layout.layers
        self.position_ids = position_ids
        # told each call's input_ids, attention_mask and position_ids (llm_fusion)
        self.on_mask: Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], None] | None = None

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from transformers import DynamicCache

        input_ids, attention_mask = inputs[:2]
        position_ids = inputs[2] if self.position_ids else None
        past = inputs[3 if self.position_ids else 2:]
        if self.on_mask is not None:
            self.on_mask(input_ids, attention_mask, position_ids)
        cache = DynamicCache(ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(self.layers)],
                             config=self.model.config)
        kwargs = {"position_ids": position_ids} if self.position_ids else {}
        kwargs[cache_keyword(self.model.forward)] = cache
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=True, **kwargs)
        present = [t for layer in output_cache(out).layers for t in (layer.keys, layer.values)]
        return (out.logits, *present)


def cache_module(model: torch.nn.Module, layout: CacheLayout, position_ids: bool) -> CacheModule:
    """A CacheModule whose forward's signature names its inputs (torch.export names the graph's inputs
    after it, and dynamic shapes go by those names)."""
    module = CacheModule(model, layout, position_ids)
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    params += [P(name.replace(".", "_"), P.POSITIONAL_OR_KEYWORD) for name in input_names(layout, position_ids)]

    def forward(self: CacheModule, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return CacheModule.forward(self, *inputs)

    forward.__signature__ = inspect.Signature(params)
    module.__class__ = type("CausalLMWithCache", (CacheModule,), {"forward": forward})
    return module


def example_inputs(model: torch.nn.Module, layout: CacheLayout, position_ids: bool) -> tuple[tuple, dict]:
    """Inputs of the example sizes, and their dynamic shapes by input name."""
    from torch.export import Dim

    vocab = model.config.get_text_config().vocab_size
    dims = {key: Dim(name, min={"past": 0, "total": TOTAL_FROM}.get(key, 1)) for key, name in DIMS.items()}
    ids = torch.randint(0, vocab, (BATCH, SEQUENCE))
    args = [ids, torch.ones(BATCH, PAST + SEQUENCE, dtype=torch.long)]
    shapes = {"input_ids": {0: dims["batch"], 1: dims["sequence"]},
              "attention_mask": {0: dims["batch"], 1: dims["total"]}}
    if position_ids:
        args.append(torch.arange(PAST, PAST + SEQUENCE).expand(BATCH, SEQUENCE).contiguous())
        shapes["position_ids"] = {0: dims["batch"], 1: dims["sequence"]}
    for i in range(layout.layers):
        for kv in ("key", "value"):
            args.append(torch.randn(BATCH, layout.kv_heads[i], PAST, layout.head_sizes[i]).to(layout.dtype))
            shapes[f"past_key_values_{i}_{kv}"] = {0: dims["batch"], 2: dims["past"]}
    return tuple(args), shapes


def short_context_inputs(model: torch.nn.Module, layout: CacheLayout, position_ids: bool, past: int,
                         sequence: int) -> tuple:
    """Inputs of one row with `past` cached positions and `sequence` new tokens (random ids and cache)."""
    vocab = model.config.get_text_config().vocab_size
    generator = torch.Generator().manual_seed(past * 7 + sequence)
    args = [torch.randint(0, vocab, (1, sequence), generator=generator), torch.ones(1, past + sequence, dtype=torch.long)]
    if position_ids:
        args.append(torch.arange(past, past + sequence)[None])
    for i in range(layout.layers):
        for _ in ("key", "value"):
            args.append(torch.randn(1, layout.kv_heads[i], past, layout.head_sizes[i], generator=generator).to(layout.dtype))
    return tuple(args)


# (past, sequence): a one-token prompt from an empty cache, its first decode step, a two-token prompt
SHORT_CONTEXTS = ((0, 1), (1, 1), (0, 2))


def runs_short_contexts(path: str, module: torch.nn.Module, model: torch.nn.Module, layout: CacheLayout,
                        position_ids: bool, names: list[str]) -> bool:
    """Whether onnxruntime runs the saved model as the model runs on the shortest contexts (total lengths 1
    and 2), which torch.export's bookkeeping may have placed outside the range it reports (it counts the past
    and the new tokens from 2 each, the sizes it never takes for constants): then the narrowing it reported
    is its own, not the graph's. False when they differ or onnxruntime cannot run the model."""
    import numpy as np
    import onnxruntime

    try:
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 (onnxruntime's errors are not one class): unknown, so not shown right
        return False
    given = {i.name for i in session.get_inputs()}
    tol = 1e-4 if layout.dtype == torch.float32 else 2e-2
    for past, sequence in SHORT_CONTEXTS:
        args = short_context_inputs(model, layout, position_ids, past, sequence)
        with eval_mode(model), torch.no_grad():
            want = module(*args)
        feeds = {name: arg.numpy() for name, arg in zip(names, args) if name in given}
        try:
            got = session.run(None, feeds)
        except Exception:  # noqa: BLE001
            return False
        for ours, theirs in zip(got, want):
            theirs = theirs.float().numpy()
            if ours.shape != theirs.shape or not np.allclose(ours.astype(np.float32), theirs, rtol=tol, atol=tol):
                return False
    return True


def check_symbolic(graph: Any, names: list[str]) -> None:
    """Every dim the signature makes dynamic stayed symbolic (torch.export specializes a size it finds
    fixed); a model that would fail on the next size is refused."""
    want = {"input_ids": (0, 1), "attention_mask": (0, 1), "position_ids": (0, 1)}
    for value in graph.input:
        axes = want.get(value.name, (0, 2) if value.name.startswith("past_key_values.") else ())
        dims = value.type.tensor_type.shape.dim
        fixed = [axis for axis in axes if axis < len(dims) and dims[axis].HasField("dim_value")]
        if fixed:
            raise ExportError(f"the export fixed dim(s) {fixed} of input {value.name!r} at "
                              f"{[dims[a].dim_value for a in fixed]}: the model's code treats that size as a constant, "
                              "so the ONNX model would fail on other sizes")


def context_length(model: torch.nn.Module, max_length: int | None) -> int:
    text = model.config.get_text_config()
    return max_length or getattr(text, "max_position_embeddings", None) or getattr(text, "n_positions", None) or 2048


def genai_config(model: torch.nn.Module, layout: CacheLayout, position_ids: bool, filename: str,
                 max_length: int | None, share_buffer: bool = False) -> dict:
    """onnxruntime-genai's genai_config.json for the model (greedy search by default)."""
    config = model.config
    text = config.get_text_config()
    generation = getattr(model, "generation_config", None)

    def token(name: str) -> Any:
        value = getattr(generation, name, None) if generation is not None else None
        return value if value is not None else getattr(config, name, None)

    context = context_length(model, max_length)
    inputs = {"input_ids": "input_ids", "attention_mask": "attention_mask"}
    if position_ids:
        inputs["position_ids"] = "position_ids"
    inputs.update(past_key_names="past_key_values.%d.key", past_value_names="past_key_values.%d.value")
    eos = token("eos_token_id")
    pad = token("pad_token_id")
    return {
        "model": {
            "bos_token_id": token("bos_token_id"),
            "context_length": context,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": filename,
                "head_size": layout.head_sizes[0],
                "hidden_size": text.hidden_size,
                "inputs": inputs,
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
                "num_attention_heads": text.num_attention_heads,
                "num_hidden_layers": layout.layers,
                "num_key_value_heads": layout.kv_heads[0],
            },
            "eos_token_id": eos,
            "pad_token_id": pad if pad is not None else (eos[0] if isinstance(eos, list) else eos),
            "type": config.model_type if config.model_type in GENAI_DECODER_TYPES else "decoder",
            "vocab_size": text.vocab_size,
        },
        "search": {
            "diversity_penalty": 0.0, "do_sample": False, "early_stopping": True, "length_penalty": 1.0,
            "max_length": context, "min_length": 0, "no_repeat_ngram_size": 0, "num_beams": 1,
            "num_return_sequences": 1, "past_present_share_buffer": share_buffer, "repetition_penalty": 1.0,
            "temperature": 1.0, "top_k": 1, "top_p": 1.0,
        },
    }


def copy_tokenizer(source: Any, out_dir: str) -> list[str]:
    """The tokenizer files of a model folder, copied to out_dir; their names."""
    if not isinstance(source, (str, os.PathLike)):
        return []
    copied = []
    for name in TOKENIZER_FILES:
        path = os.path.join(os.fspath(source), name)
        if os.path.isfile(path):
            shutil.copyfile(path, os.path.join(out_dir, name))
            copied.append(name)
    return copied
