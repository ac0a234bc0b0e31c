"""`export_llm(optimize="onnxruntime")`: the model's attention layers and RMS norms captured as ops of
our own whose symbolics emit onnxruntime's fused contrib ops (GroupQueryAttention after one packed QKV
projection and RotaryEmbedding, SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization).

The substitution is made on the modules at capture, not by matching ONNX patterns: a module is
replaced only when its structure is one this file knows (LLaMA-family q/k/v or packed qkv projections
with a static rotary table, GPT-2's c_attn; no sliding window or softcap), attention in every layer or
in none, and the whole replacement is then run eagerly against the model as it was; a model whose
outputs differ is exported unfused (standard ONNX), never wrong.
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
from typing import Any, Iterator

import onnx
import torch
import torch.fx
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from aten2onnx._contrib_math import causal_grouped_attention, rotate
from aten2onnx.exporter.passes import Pass, Program
from aten2onnx.exporter.transformers_compat import pop_cache
from aten2onnx.ir import lazy

MICROSOFT = "com.microsoft"
# onnxruntime registers SimplifiedLayerNormalization in the ONNX domain (it is not in ONNX's own
# schemas, so the builder, which checks default-domain ops against them, emits it in com.microsoft;
# `finish` moves it where onnxruntime looks for it).
ORT_ONNX_DOMAIN_OPS = ("SimplifiedLayerNormalization",)
# rotary embeddings whose table depends on the position only (not on the sequence length seen so far)
STATIC_ROPE = frozenset({"default", "linear", "llama3"})
GQA_HEAD_MULTIPLE = 16


# -- the ops the fused modules are captured as -------------------------------------------------------
@torch.library.custom_op("aten2onnx::group_query_attention", mutates_args=())
def group_query_attention(query: torch.Tensor, key: torch.Tensor | None, value: torch.Tensor | None,
                          past_key: torch.Tensor, past_value: torch.Tensor, seqlens_k: torch.Tensor,
                          total_sequence_length: torch.Tensor, cos_cache: torch.Tensor | None,
                          sin_cache: torch.Tensor | None, position_ids: torch.Tensor | None,
                          attention_bias: torch.Tensor | None, num_heads: int, kv_num_heads: int,
                          scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """onnxruntime's GroupQueryAttention (causal, past and present not sharing a buffer): query
    [B, S, N*H] with key and value [B, S, K*H], or query packing all three when key is None; past
    [B, K, P, H]; seqlens_k [B] int32 (each row's total length - 1), the query at index
    seqlens_k + 1 - S + s seeing the keys up to it; the rotary, when cos_cache is given, at
    position_ids (default: those indices); attention_bias [B, 1, S, T] added to the scores.
    Returns (output [B, S, N*H], present key, present value)."""
    batch, seq = query.shape[:2]
    head = past_key.shape[-1]
    if key is None:
        query, key, value = query.split([num_heads * head, kv_num_heads * head, kv_num_heads * head], -1)
    q = query.view(batch, seq, num_heads, head).transpose(1, 2)
    k = key.view(batch, seq, kv_num_heads, head).transpose(1, 2)
    v = value.view(batch, seq, kv_num_heads, head).transpose(1, 2)
    start = seqlens_k.long() + 1 - seq
    indices = start[:, None] + torch.arange(seq)[None]
    if cos_cache is not None:
        positions = indices if position_ids is None else position_ids
        cos, sin = cos_cache[positions][:, None], sin_cache[positions][:, None]
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    present_key, present_value = torch.cat([past_key, k], 2), torch.cat([past_value, v], 2)
    out = causal_grouped_attention(q, present_key, present_value, indices, scale, attention_bias)
    return out.transpose(1, 2).reshape(batch, seq, num_heads * head), present_key, present_value


@group_query_attention.register_fake
def _(query, key, value, past_key, past_value, seqlens_k, total_sequence_length, cos_cache, sin_cache, position_ids,
      attention_bias, num_heads, kv_num_heads, scale):
    batch, seq = query.shape[:2]
    head = past_key.shape[-1]
    present = past_key.new_empty(batch, kv_num_heads, past_key.shape[2] + seq, head)
    return query.new_empty(batch, seq, num_heads * head), present, torch.empty_like(present)


@torch.library.custom_op("aten2onnx::rotary_embedding", mutates_args=())
def rotary_embedding(input: torch.Tensor, position_ids: torch.Tensor, cos_cache: torch.Tensor, sin_cache: torch.Tensor,
                     num_heads: int) -> torch.Tensor:
    """onnxruntime's RotaryEmbedding (halves, not interleaved) of input [B, S, num_heads * H] at
    position_ids [B, S], on the first 2 * cos_cache.shape[-1] features of each head."""
    batch, seq = input.shape[:2]
    x = input.view(batch, seq, num_heads, -1)
    cos, sin = cos_cache[position_ids][:, :, None], sin_cache[position_ids][:, :, None]
    return rotate(x, cos, sin).reshape(input.shape)


@rotary_embedding.register_fake
def _(input, position_ids, cos_cache, sin_cache, num_heads):
    return torch.empty_like(input)


@torch.library.custom_op("aten2onnx::simplified_layer_norm", mutates_args=())
def simplified_layer_norm(input: torch.Tensor, weight: torch.Tensor, epsilon: float) -> torch.Tensor:
    """RMS norm over the last dim, computed in float32: weight * (x / rms(x)) in x's dtype."""
    x = input.float()
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + epsilon)).to(input.dtype)


@simplified_layer_norm.register_fake
def _(input, weight, epsilon):
    return torch.empty_like(input)


@torch.library.custom_op("aten2onnx::skip_simplified_layer_norm", mutates_args=())
def skip_simplified_layer_norm(input: torch.Tensor, skip: torch.Tensor, weight: torch.Tensor,
                               epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(simplified_layer_norm(input + skip), input + skip)."""
    total = input + skip
    return simplified_layer_norm(total, weight, epsilon), total


@skip_simplified_layer_norm.register_fake
def _(input, skip, weight, epsilon):
    return torch.empty_like(input), torch.empty_like(input)


# -- their symbolics ------------------------------------------------------------------------------------
def aten2onnx_group_query_attention(g, query, key, value, past_key, past_value, seqlens_k, total_sequence_length,
                                    cos_cache, sin_cache, position_ids, attention_bias, num_heads, kv_num_heads, scale):
    """group_query_attention(Tensor query, Tensor? key, Tensor? value, Tensor past_key, Tensor past_value, Tensor seqlens_k, Tensor total_sequence_length, Tensor? cos_cache, Tensor? sin_cache, Tensor? position_ids, Tensor? attention_bias, int num_heads, int kv_num_heads, float scale) -> (Tensor, Tensor, Tensor)"""
    return g.op("GroupQueryAttention", query, key, value, past_key, past_value, seqlens_k, total_sequence_length,
                cos_cache, sin_cache, position_ids, attention_bias, outputs=3, domain=MICROSOFT, num_heads=num_heads, kv_num_heads=kv_num_heads,
                scale=scale, do_rotary=int(cos_cache is not None), rotary_interleaved=0)


def aten2onnx_rotary_embedding(g, input, position_ids, cos_cache, sin_cache, num_heads):
    """rotary_embedding(Tensor input, Tensor position_ids, Tensor cos_cache, Tensor sin_cache, int num_heads) -> Tensor"""
    return g.op("RotaryEmbedding", input, position_ids, cos_cache, sin_cache, domain=MICROSOFT, interleaved=0,
                num_heads=num_heads)


def aten2onnx_simplified_layer_norm(g, input, weight, epsilon):
    """simplified_layer_norm(Tensor input, Tensor weight, float epsilon) -> Tensor"""
    return g.op("SimplifiedLayerNormalization", input, weight, domain=MICROSOFT, axis=-1, epsilon=epsilon,
                stash_type=1)


def aten2onnx_skip_simplified_layer_norm(g, input, skip, weight, epsilon):
    """skip_simplified_layer_norm(Tensor input, Tensor skip, Tensor weight, float epsilon) -> (Tensor, Tensor)"""
    out, _, _, total = g.op("SkipSimplifiedLayerNormalization", input, skip, weight, outputs=4, domain=MICROSOFT,
                            epsilon=epsilon)
    return out, total


SYMBOLICS = {
    "aten2onnx::group_query_attention": aten2onnx_group_query_attention,
    "aten2onnx::rotary_embedding": aten2onnx_rotary_embedding,
    "aten2onnx::simplified_layer_norm": aten2onnx_simplified_layer_norm,
    "aten2onnx::skip_simplified_layer_norm": aten2onnx_skip_simplified_layer_norm,
}


# -- which modules are replaced, and by what ----------------------------------------------------------
@dataclasses.dataclass
class Lengths:
    """What GroupQueryAttention reads from the model's inputs, set by the cache module per call. Every
    row is taken as the mask's full length (the cache holds a left-padded row's padding too), its
    padding masked by an additive bias and its rotary at the model's position ids, so that padded
    batches are computed as transformers computes them."""

    seqlens_k: torch.Tensor | None = None
    total: torch.Tensor | None = None
    position_ids: torch.Tensor | None = None
    padding: torch.Tensor | None = None  # [B, 1, S, T] bool: a key that is padding
    biases: dict[torch.dtype, torch.Tensor] = dataclasses.field(default_factory=dict)

    def set(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor | None) -> None:
        ones = torch.ones_like(attention_mask, dtype=torch.int32)
        self.seqlens_k = ones.sum(-1, dtype=torch.int32) - 1
        self.total = ones[0].sum(dtype=torch.int32)
        if position_ids is None:  # as transformers derives them from the mask
            position_ids = (attention_mask.cumsum(-1) - 1).masked_fill(attention_mask == 0, 1)[:, -input_ids.shape[1]:]
        self.position_ids = position_ids
        self.padding = (attention_mask == 0)[:, None, None, :].expand(-1, -1, input_ids.shape[1], -1)
        self.biases = {}

    def bias(self, dtype: torch.dtype) -> torch.Tensor:
        """The padding as an additive bias, made once per call: the dtype's lowest finite value (not
        -inf, so that a row of padding alone, whose output nothing reads, stays finite)."""
        if self.biases.get(dtype) is None:
            self.biases[dtype] = torch.zeros((), dtype=dtype).masked_fill(self.padding, torch.finfo(dtype).min)
        return self.biases[dtype]


@dataclasses.dataclass
class Plan:
    """The replacement forwards by module, and the mask lengths they share."""

    forwards: dict[torch.nn.Module, Any]
    lengths: Lengths
    attention: int = 0
    norms: int = 0


def rms_norm_kind(module: torch.nn.Module) -> str | None:
    """"plain" for an RMS norm module computing weight * x / rms(x) (LLaMA's), "shifted" for (1 + weight) * ...
    (Gemma's), told apart by running it; None for anything else."""
    weight = getattr(module, "weight", None)
    eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
    if not type(module).__name__.endswith("RMSNorm") or not isinstance(weight, torch.Tensor) or weight.dim() != 1 \
            or not isinstance(eps, float):
        return None
    x = torch.randn(2, 3, weight.shape[0], generator=torch.Generator().manual_seed(0)).to(weight.dtype)
    with torch.no_grad():
        want = module(x)
        if torch.allclose(simplified_layer_norm(x, weight, eps), want, rtol=1e-3, atol=1e-5):
            return "plain"
        if torch.allclose(simplified_layer_norm(x, _shifted(weight), eps), want, rtol=1e-3, atol=1e-5):
            return "shifted"
    return None


def _shifted(weight: torch.Tensor) -> torch.Tensor:
    return (1.0 + weight.detach().float()).to(weight.dtype)


def rms_norm_forward(module: torch.nn.Module, kind: str | None) -> Any | None:
    """A forward computing an RMS norm module of the kind rms_norm_kind tells (None: None)."""
    if kind is None:
        return None
    eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
    if kind == "plain":
        return lambda hidden_states: torch.ops.aten2onnx.simplified_layer_norm(hidden_states, module.weight, eps)
    shifted = lazy.apply(_shifted, module.weight)  # (computed when written, for a weight without data)
    return lambda hidden_states: torch.ops.aten2onnx.simplified_layer_norm(hidden_states, shifted, eps)


def rotary_tables(model: torch.nn.Module, head: int, positions: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(cos_cache, sin_cache) [positions, rotary_dim / 2] from the model's one rotary embedding module,
    if its table is static and in halves (rotate_half); None otherwise."""
    rotaries = [m for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding")]
    if len(rotaries) != 1 or getattr(rotaries[0], "rope_type", "default") not in STATIC_ROPE:
        return None
    dtype = next(p.dtype for p in model.parameters() if p.is_floating_point())
    with torch.no_grad():
        cos, sin = rotaries[0](torch.zeros(1, dtype=dtype), torch.arange(positions)[None])
    cos, sin = cos[0], sin[0]
    half = cos.shape[-1] // 2
    if cos.shape[-1] > head or cos.shape[-1] % 2 or not torch.equal(cos[:, :half], cos[:, half:]) \
            or not torch.equal(sin[:, :half], sin[:, half:]):
        return None
    return cos[:, :half].contiguous(), sin[:, :half].contiguous()


@dataclasses.dataclass
class Attention:
    """What one GroupQueryAttention computes for a module: its packed QKV projection, head counts and
    size, scale, output projection, optional per-head query/key norms, and whether the rotary is inside."""

    weight: torch.Tensor  # [(heads + 2 * kv_heads) * head, hidden], as for torch.nn.functional.linear
    bias: torch.Tensor | None
    heads: int
    kv_heads: int
    head: int
    scale: float
    out: torch.nn.Module
    norms: tuple[Any, Any] = (None, None)
    rotary: bool = True


def llama_attention(module: torch.nn.Module, config: Any) -> Attention | None:
    """The LLaMA family's self-attention (q_proj/k_proj/v_proj or a packed qkv_proj, o_proj, optional
    per-head q_norm/k_norm, the rotary from the decoder's position embeddings)."""
    names = {name for name, _ in module.named_children()}
    if not ({"q_proj", "k_proj", "v_proj", "o_proj"} <= names or {"qkv_proj", "o_proj"} <= names):
        return None
    if not isinstance(getattr(module, "scaling", None), float):
        return None
    if any(is_traceable_wrapper_subclass(p) for p in module.parameters()):
        return None  # (weights the user quantized, torchao's tensors: kept as they are, not packed in float)
    if "qkv_proj" in names:
        weight, bias = _held(module.qkv_proj.weight), _held(module.qkv_proj.bias)
    else:
        projections = [module.q_proj, module.k_proj, module.v_proj]
        if len({p.bias is None for p in projections}) != 1:
            return None
        weight = lazy.apply(_packed, *(p.weight for p in projections))
        bias = None if projections[0].bias is None else lazy.apply(_packed, *(p.bias for p in projections))
    return Attention(weight, bias, config.num_attention_heads, config.num_key_value_heads, module.head_dim,
                     module.scaling, module.o_proj, (getattr(module, "q_norm", None), getattr(module, "k_norm", None)))


def _packed(*tensors: torch.Tensor) -> torch.Tensor:
    return torch.cat([t.detach() for t in tensors])


def _held(weight: torch.Tensor | None) -> torch.Tensor | None:
    """A parameter the fused forward holds (the capture reads it as a constant, not through its module):
    detached, and for a weight without data, computed from the parameter when written."""
    return None if weight is None else lazy.apply(torch.Tensor.detach, weight)


def _transposed(weight: torch.Tensor) -> torch.Tensor:
    return weight.detach().t()


def gpt2_attention(module: torch.nn.Module, config: Any) -> Attention | None:
    """GPT-2's self-attention: one Conv1D c_attn (weight [hidden, 3 * hidden]) and c_proj, every head
    its own key and value, no rotary (positions are embedded before the first layer)."""
    if not {"c_attn", "c_proj"} <= {name for name, _ in module.named_children()} \
            or getattr(module, "is_cross_attention", True) or getattr(module, "reorder_and_upcast_attn", False):
        return None
    scaling = getattr(module, "scaling", None)
    if scaling is None and isinstance(getattr(module, "scale_attn_weights", None), bool):
        # transformers before 5 keeps the flags the scale is made from, not the scale
        scaling = module.head_dim ** -0.5 if module.scale_attn_weights else 1.0
        if getattr(module, "scale_attn_by_inverse_layer_idx", False):
            scaling /= float(module.layer_idx + 1)
    if not isinstance(scaling, float):
        return None
    heads = module.num_heads
    return Attention(lazy.apply(_transposed, module.c_attn.weight), _held(module.c_attn.bias), heads, heads, module.head_dim,
                     scaling, module.c_proj, rotary=False)


def attention_forward(module: torch.nn.Module, config: Any, tables: tuple | None, lengths: Lengths) -> Any | None:
    """A forward for a decoder self-attention module as one GroupQueryAttention; None for a module of
    another shape or with what GroupQueryAttention is not given here (sliding window, softcap, a rotary
    that is not a static table)."""
    if not isinstance(getattr(module, "layer_idx", None), int):
        return None
    if getattr(module, "sliding_window", getattr(config, "sliding_window", None)) is not None \
            or getattr(config, "attn_logit_softcapping", None) is not None:
        return None
    attention = llama_attention(module, config) or gpt2_attention(module, config)
    if attention is None or (attention.rotary and tables is None):
        return None
    heads, kv_heads, head, norms = attention.heads, attention.kv_heads, attention.head, attention.norms
    # onnxruntime's CPU GroupQueryAttention refuses a head size that is not a multiple of 16
    if attention.weight.shape[0] != (heads + 2 * kv_heads) * head or heads % kv_heads or head % GQA_HEAD_MULTIPLE:
        return None
    cos_cache, sin_cache = tables if attention.rotary else (None, None)

    def forward(hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> tuple:
        layer = pop_cache(kwargs).layers[module.layer_idx]
        qkv = torch.nn.functional.linear(hidden_states, attention.weight, attention.bias)
        query, key, value = qkv, None, None
        if any(norm is not None for norm in norms) or cos_cache is not None:
            batch, seq = hidden_states.shape[:2]
            query, key, value = qkv.split([heads * head, kv_heads * head, kv_heads * head], -1)
        if any(norm is not None for norm in norms):
            query = norms[0](query.view(batch, seq, heads, head)).view(batch, seq, heads * head)
            key = norms[1](key.view(batch, seq, kv_heads, head)).view(batch, seq, kv_heads * head)
        if cos_cache is not None:
            # the rotary outside GroupQueryAttention: onnxruntime's kernel (1.32) rotates by position_ids
            # but stores a prompt's keys rotated by their index, so a left-padded row would decode wrong
            cos, sin = cos_cache.to(hidden_states.dtype), sin_cache.to(hidden_states.dtype)
            query = torch.ops.aten2onnx.rotary_embedding(query, lengths.position_ids, cos, sin, heads)
            key = torch.ops.aten2onnx.rotary_embedding(key, lengths.position_ids, cos, sin, kv_heads)
        out, layer.keys, layer.values = torch.ops.aten2onnx.group_query_attention(
            query, key, value, layer.keys, layer.values, lengths.seqlens_k, lengths.total, None, None, None,
            lengths.bias(hidden_states.dtype), heads, kv_heads, attention.scale)
        return attention.out(out), None

    return forward


def plan(model: torch.nn.Module, positions: int, attention: bool = True,
         like: torch.nn.Module | None = None) -> Plan:
    """The replacements for model's attention modules (when `attention`) and RMS norms. like: a small model
    of the same architecture with weights, where model has none (on the meta device), run in its place to
    tell what its modules compute (the rotary table, each norm class's kind)."""
    config = model.config.get_text_config()
    lengths = Lengths()
    forwards: dict[torch.nn.Module, Any] = {}
    head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    tables = rotary_tables(like if like is not None else model, head, positions) if attention else None
    kinds = {}
    if like is not None:
        for module in like.modules():
            kinds.setdefault(type(module), rms_norm_kind(module))
    counts = {"attention": 0, "norms": 0}
    for module in model.modules():
        forward = attention_forward(module, config, tables, lengths) if attention else None
        kind = "attention"
        if forward is None:
            norm = kinds.get(type(module)) if like is not None else rms_norm_kind(module)
            forward, kind = rms_norm_forward(module, norm), "norms"
        if forward is not None:
            forwards[module] = forward
            counts[kind] += 1
    return Plan(forwards, lengths, **counts)


@contextlib.contextmanager
def applied(plan: Plan) -> Iterator[None]:
    """The plan's forwards installed on their modules (as instance attributes), removed on exit."""
    try:
        for module, forward in plan.forwards.items():
            module.forward = forward
        yield
    finally:
        for module in plan.forwards:
            module.__dict__.pop("forward", None)


# -- the FX pass: a residual add into a norm becomes one SkipSimplifiedLayerNormalization -------------
def fuse_skip_norms(program: Program) -> Program:
    """simplified_layer_norm(a + b) with a and b of one shape (the residual stream) becomes
    skip_simplified_layer_norm(a, b), whose second result replaces every other use of a + b."""
    gm = program.gm
    norm_op = torch.ops.aten2onnx.simplified_layer_norm.default
    fused: dict[torch.fx.Node, torch.fx.Node] = {}  # add -> norm
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not norm_op or node.args[0] in fused:
            continue
        add = node.args[0]
        if not isinstance(add, torch.fx.Node) or add.target is not torch.ops.aten.add.Tensor or add.kwargs \
                or len(add.args) != 2 or not all(isinstance(a, torch.fx.Node) for a in add.args):
            continue
        vals = [a.meta.get("val") for a in (add, *add.args)]
        if all(isinstance(v, torch.Tensor) and v.dim() == 3 and v.shape == vals[0].shape and v.dtype == vals[0].dtype
               for v in vals):
            fused[add] = node
    if not fused:
        return program
    graph = torch.fx.Graph()
    copies: dict[torch.fx.Node, torch.fx.Node] = {}
    norms = {norm: add for add, norm in fused.items()}
    for node in gm.graph.nodes:
        if node in norms:
            continue  # made with its add
        if node in fused:
            norm = fused[node]
            a, b = (copies[arg] for arg in node.args)
            weight, eps = norm.args[1:]
            skip = graph.call_function(torch.ops.aten2onnx.skip_simplified_layer_norm.default,
                                       (a, b, copies[weight] if isinstance(weight, torch.fx.Node) else weight, eps))
            skip.meta["val"] = (norm.meta["val"], node.meta["val"])
            out = graph.call_function(operator.getitem, (skip, 0))
            total = graph.call_function(operator.getitem, (skip, 1))
            out.meta["val"], total.meta["val"] = norm.meta["val"], node.meta["val"]
            copies[node], copies[norm] = total, out
            continue
        copies[node] = graph.node_copy(node, copies.__getitem__)
    return dataclasses.replace(program, gm=torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__))


def pipeline(base: tuple[Pass, ...]) -> tuple[Pass, ...]:
    return (*base, Pass("fuse_skip_norms", fuse_skip_norms))


# -- the model to save -------------------------------------------------------------------------------
def to_onnx_domain(graph: onnx.GraphProto) -> None:
    """onnxruntime's contrib ops that it registers in the ONNX domain, moved there (the graph builder
    writes them as com.microsoft: it takes no ONNX-domain op that ONNX does not define); done on the
    model before it is saved, so the file is written once."""
    for node in graph.node:
        if node.domain == MICROSOFT and node.op_type in ORT_ONNX_DOMAIN_OPS:
            node.domain = ""


def close(got: tuple[torch.Tensor, ...], want: tuple[torch.Tensor, ...]) -> bool:
    """Whether the fused module's outputs are the model's (up to float rounding in the model's dtype)."""
    tol = 1e-4 if want[0].dtype == torch.float32 else 2e-2
    return all(a.shape == b.shape and torch.allclose(a.float(), b.float(), rtol=tol, atol=tol) for a, b in zip(got, want))


def choose(model: torch.nn.Module, module: Any, args: tuple, positions: int) -> Plan | None:
    """The widest plan whose eager run of module (a CacheModule of model) on args gives what the model
    gives: attention and norms, else the norms alone, else None (nothing fused). The attention is
    fused in every layer or in none: genai shares past and present buffers for all layers or none."""
    from aten2onnx.exporter.capture import eval_mode

    with eval_mode(model), torch.no_grad():
        want = module(*args)
        for attention in (True, False):
            candidate = plan(model, positions, attention)
            if not candidate.forwards or candidate.attention not in (0, module.layers):
                continue
            with watching(module, candidate):
                got = module(*args)
            if close(got, want):
                return candidate
    return None


@contextlib.contextmanager
def watching(module: Any, plan: Plan) -> Iterator[None]:
    """The plan applied, and the cache module handing it each call's attention mask."""
    module.on_mask = plan.lengths.set
    try:
        with applied(plan):
            yield
    finally:
        module.on_mask = None
