"""export(..., optimize="onnxruntime") (issue 31): attention becomes onnxruntime's MultiHeadAttention, and
Attention where its query, key and value are projections of one input; each case agrees with eager
in onnxruntime and in aten2onnx.runtime (NaN where eager has NaN, 0 for a fully masked row), and the
cases the contrib op does not compute as ATen does keep the standard translation."""

from __future__ import annotations

import importlib.util

import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from conftest import ROOT, run_ort

import aten2onnx


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class Sdpa(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.options)


def padding(batch, source, lengths):
    """A [B, 1, 1, T] bool mask keeping each row's first lengths[b] keys."""
    return (torch.arange(source)[None] < torch.tensor(lengths)[:, None])[:, None, None]


def rows_masked(batch, seq, source):
    """A [B, 1, S, T] bool mask with some query rows masked entirely."""
    mask = torch.rand(batch, 1, seq, source, generator=torch.Generator().manual_seed(1)) > 0.3
    mask[0, 0, 1] = False
    mask[-1, 0, -1] = False
    return mask


def as_bias(mask):
    return torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))


B, N, S, T, H = 2, 4, 6, 9, 8
q, k, v = randn(B, N, S, H), randn(B, N, T, H, seed=1), randn(B, N, T, H, seed=2)
kv_self = (randn(B, N, S, H, seed=1), randn(B, N, S, H, seed=2))

# name: (module, inputs, the contrib op it is written as: MultiHeadAttention; GroupQueryAttention for a causal
# self-attention; None where the standard translation is kept)
CASES = {
    "plain": (Sdpa(), (q, k, v), "MultiHeadAttention"),
    "self": (Sdpa(), (q, *kv_self), "MultiHeadAttention"),
    "scale": (Sdpa(scale=0.3), (q, k, v), "MultiHeadAttention"),
    "causal, S == T": (Sdpa(is_causal=True), (q, *kv_self), "GroupQueryAttention"),
    "causal gqa, S == T": (Sdpa(is_causal=True, enable_gqa=True), (q, randn(B, 2, S, H), randn(B, 2, S, H, seed=1)),
                           "GroupQueryAttention"),
    # (a mask passed in may hold anything: only a constant one is known to be causal)
    "causal bool mask as an input, S == T": (Sdpa(), (q, *kv_self, torch.ones(S, S, dtype=torch.bool).tril()),
                                             "MultiHeadAttention"),
    "causal, S < T": (Sdpa(is_causal=True), (q, k, v), "MultiHeadAttention"),
    "causal, S > T": (Sdpa(is_causal=True), (randn(B, N, T, H), randn(B, N, S, H), randn(B, N, S, H)),
                      "MultiHeadAttention"),
    "bool mask [B,1,S,T]": (Sdpa(), (q, k, v, rows_masked(B, S, T)), "MultiHeadAttention"),
    "bool mask [S,T]": (Sdpa(), (q, k, v, rows_masked(1, S, T)[0, 0]), "MultiHeadAttention"),
    "padding mask [B,1,1,T]": (Sdpa(), (q, k, v, padding(B, T, [T, 3])), "MultiHeadAttention"),
    "padding mask, an empty row": (Sdpa(), (q, k, v, padding(B, T, [0, 4])), "MultiHeadAttention"),
    "float mask with -inf rows": (Sdpa(), (q, k, v, as_bias(rows_masked(B, S, T))), "MultiHeadAttention"),
    "finite float mask": (Sdpa(), (q, k, v, randn(B, 1, S, T, seed=3)), "MultiHeadAttention"),
    "nan in a mask row": (Sdpa(), (q, k, v, randn(B, 1, S, T, seed=3).index_put_(
        (torch.tensor([0]), torch.tensor([0]), torch.tensor([2]), torch.tensor([1])), torch.tensor(float("nan")))),
        "MultiHeadAttention"),
    "gqa": (Sdpa(enable_gqa=True), (q, randn(B, 2, T, H), randn(B, 2, T, H, seed=1)), "MultiHeadAttention"),
    "3-D inputs": (Sdpa(), (q[0], k[0], v[0]), None),
    "float16": (Sdpa(), (q.half(), k.half(), v.half()), None),
    "per-head mask": (Sdpa(), (q, k, v, randn(B, N, S, T)), "MultiHeadAttention"),
    "per-head bool mask": (Sdpa(), (q, k, v, torch.rand(B, N, S, T, generator=torch.Generator().manual_seed(4)) > 0.6),
                           "MultiHeadAttention"),
    "value head dim differs": (Sdpa(), (q, k, randn(B, N, T, 5)), None),
}


def op_types(exported) -> list[str]:
    return [n.op_type for n in exported.model_proto.graph.node]


def contrib_ops(exported) -> set[str]:
    return {n.op_type for n in exported.model_proto.graph.node if n.domain == "com.microsoft"}


def assert_agrees(exported, inputs, want):
    feeds = dict(zip(exported.input_names, inputs))
    for got in (torch.from_numpy(run_ort(exported.model_proto, feeds)[0]), exported.run(*inputs)):
        tol = 1e-4 if want.dtype == torch.float32 else 2e-3
        torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("name", list(CASES))
def test_attention_as_multi_head_attention_agrees_with_eager(name, opset):
    model, inputs, op = CASES[name]
    with torch.no_grad():
        want = model(*inputs)
    exported = aten2onnx.export(model, inputs, opset=opset, optimize="onnxruntime")
    assert contrib_ops(exported) == ({op} if op else set()), contrib_ops(exported)
    assert_agrees(exported, inputs, want)


def test_a_fully_masked_row_is_zero_as_in_eager():
    mask = padding(B, T, [0, 4])
    exported = aten2onnx.export(Sdpa(), (q, k, v, mask), optimize="onnxruntime")
    got = torch.from_numpy(run_ort(exported.model_proto, dict(zip(exported.input_names, (q, k, v, mask))))[0])
    assert torch.equal(got[0], torch.zeros_like(got[0])) and not got[1].eq(0).all()


def test_dynamic_batch_and_sequence():
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    model = Sdpa(is_causal=True)
    exported = aten2onnx.export(model, (q, *kv_self), optimize="onnxruntime",
                                dynamic_shapes=({0: batch, 2: seq},) * 3)
    assert contrib_ops(exported) == {"GroupQueryAttention"}
    for b, s in ((1, 3), (3, 11)):
        inputs = (randn(b, N, s, H), randn(b, N, s, H, seed=1), randn(b, N, s, H, seed=2))
        with torch.no_grad():
            assert_agrees(exported, inputs, model(*inputs))


class SelfAttention(torch.nn.Module):
    """Projections of one input, split into heads: the layouts the optimizer packs into Attention."""

    def __init__(self, hidden=32, heads=4, packed=False, key_bias=True, query_scale=None, mask=False):
        super().__init__()
        self.heads, self.packed, self.query_scale, self.mask = heads, packed, query_scale, mask
        if packed:
            self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        else:
            self.q = torch.nn.Linear(hidden, hidden)
            self.k = torch.nn.Linear(hidden, hidden, bias=key_bias)
            self.v = torch.nn.Linear(hidden, hidden)
        self.out = torch.nn.Linear(hidden, hidden)

    def forward(self, x):
        b, s, hidden = x.shape
        if self.packed:
            q, k, v = self.qkv(x).split(hidden, -1)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        if self.query_scale is not None:
            q = q * self.query_scale
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        mask = torch.ones(s, s, dtype=torch.bool).tril() if self.mask else None
        if self.mask == "band":  # (each query sees itself and the key before)
            mask = mask & torch.ones(s, s, dtype=torch.bool).triu(-1)
        elif self.mask == "bias":
            mask = torch.zeros(s, s).masked_fill(~mask, float("-inf"))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0 if self.query_scale else None)
        return self.out(y.transpose(1, 2).reshape(b, s, hidden))


class Conv1DAttention(torch.nn.Module):
    """GPT-2's Conv1D spelling: addmm on the flattened input, one projection for q, k and v."""

    def __init__(self, hidden=32, heads=4):
        super().__init__()
        self.heads = heads
        self.weight = torch.nn.Parameter(randn(hidden, 3 * hidden) * 0.2)
        self.bias = torch.nn.Parameter(randn(3 * hidden, seed=1) * 0.1)

    def forward(self, x):
        b, s, hidden = x.shape
        qkv = torch.addmm(self.bias, x.view(-1, hidden), self.weight).view(b, s, 3 * hidden)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in qkv.split(hidden, 2))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, hidden)


class RepeatedKV(torch.nn.Module):
    """GQA as transformers writes it: fewer key/value heads, a rotary-like elementwise step on the keys in the
    [B, K, S, H] layout, then each head repeated in place (repeat_kv) for an sdpa of equal heads."""

    def __init__(self, hidden=32, heads=4, kv_heads=2, rotate=True):
        super().__init__()
        self.heads, self.kv_heads, self.rotate = heads, kv_heads, rotate
        head = hidden // heads
        self.q = torch.nn.Linear(hidden, hidden)
        self.k = torch.nn.Linear(hidden, kv_heads * head)
        self.v = torch.nn.Linear(hidden, kv_heads * head)

    @staticmethod
    def repeat_kv(x, repeats):
        b, k, s, h = x.shape
        return x[:, :, None, :, :].expand(b, k, repeats, s, h).reshape(b, k * repeats, s, h)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, -1).transpose(1, 2)
        k, v = (t.view(b, s, self.kv_heads, -1).transpose(1, 2) for t in (self.k(x), self.v(x)))
        if self.rotate:
            k = k * (0.5 + torch.arange(s)[:, None] / 8) + torch.cat([-k[..., 2:], k[..., :2]], -1)
        repeats = self.heads // self.kv_heads
        y = F.scaled_dot_product_attention(q, self.repeat_kv(k, repeats), self.repeat_kv(v, repeats), is_causal=True)
        return y.transpose(1, 2).reshape(b, s, -1)


# name: (model, the packed op: Attention, or GroupQueryAttention (causal) whose query input packs all three)
PACKED = {
    "three projections": (SelfAttention(), "Attention"),
    "one packed projection": (SelfAttention(packed=True), "Attention"),
    "a projection without bias": (SelfAttention(key_bias=False), "Attention"),
    "a scaled query": (SelfAttention(query_scale=0.125), "Attention"),
    "a constant causal mask": (SelfAttention(mask=True), "GroupQueryAttention"),
    "a constant causal bias": (SelfAttention(mask="bias"), "GroupQueryAttention"),
    "a constant mask, not causal": (SelfAttention(mask="band"), "Attention"),
    "Conv1D (addmm) projection, causal": (Conv1DAttention(), "GroupQueryAttention"),
    "fewer key heads, causal": (RepeatedKV(rotate=False), "GroupQueryAttention"),
}


@pytest.mark.parametrize("name", list(PACKED))
def test_projections_of_one_input_are_packed_into_attention(name):
    model, op = PACKED[name]
    model = model.eval()
    x = randn(2, 7, 32, seed=5)
    with torch.no_grad():
        want = model(x)
    exported = aten2onnx.export(model, (x,), optimize="onnxruntime")
    assert contrib_ops(exported) == {op}, contrib_ops(exported)
    packed = next(n for n in exported.model_proto.graph.node if n.op_type == op)
    assert op == "Attention" or (packed.input[1:3] == ["", ""] and "Expand" not in op_types(exported))
    graph = exported.model_proto.graph
    assert not {"Transpose", "Softmax"} & {n.op_type for n in graph.node}
    # the Reshape of the result to [B, S, hidden] is a no-op, kept only where it names a graph output
    assert all(n.output[0] in {o.name for o in graph.output} for n in graph.node if n.op_type == "Reshape")
    assert_agrees(exported, (x,), want)
    plain = aten2onnx.export(model, (x,))
    assert not contrib_ops(plain) and len(exported.model_proto.graph.node) < len(plain.model_proto.graph.node)


def test_projections_read_elsewhere_are_not_packed():
    class Leaky(SelfAttention):
        def forward(self, x):
            b, s, hidden = x.shape
            key = self.k(x)
            q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (self.q(x), key, self.v(x)))
            return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, hidden) + key

    model = Leaky().eval()
    x = randn(2, 7, 32, seed=5)
    exported = aten2onnx.export(model, (x,), optimize="onnxruntime")
    assert contrib_ops(exported) == {"MultiHeadAttention"}
    with torch.no_grad():
        assert_agrees(exported, (x,), model(x))


def test_torch_nn_multihead_attention():
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, batch_first=True).eval()
    x = randn(2, 10, 32, seed=6)
    padded = torch.zeros(2, 10, dtype=torch.bool)
    padded[1, 6:] = True
    with torch.no_grad():
        want = layer(x, src_key_padding_mask=padded)
    exported = aten2onnx.export(lambda x, padded: layer(x, src_key_padding_mask=padded), (x, padded),
                                optimize="onnxruntime")
    assert contrib_ops(exported) == {"MultiHeadAttention"}
    assert_agrees(exported, (x, padded), want)


def test_a_user_symbolic_for_attention_wins():
    def mine(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False):
        return g.op("Add", query, key)

    exported = aten2onnx.export(Sdpa(), (q, *kv_self), optimize="onnxruntime",
                                custom_symbolics={"aten::scaled_dot_product_attention.default": mine})
    assert not contrib_ops(exported)
    assert_agrees(exported, (q, *kv_self), q + kv_self[0])


def test_exact_exports_keep_standard_attention():
    exported = aten2onnx.export(Sdpa(), (q, k, v), exact=True, optimize="onnxruntime")
    assert not contrib_ops(exported)


@pytest.mark.parametrize("rotate", [False, True])
def test_heads_the_model_repeats_are_repeated_in_the_attention_layout(rotate, tmp_path):
    """The repeat is made after the keys are back in [B, S, K * H]: onnxruntime's optimized graph keeps no
    Transpose (its transpose optimizer cancels ours against the model's, across the elementwise step)."""
    model = RepeatedKV(rotate=rotate).eval()
    x = randn(2, 6, 32, seed=3)
    with torch.no_grad():
        want = model(x)
    exported = aten2onnx.export(model, (x,), optimize="onnxruntime")
    assert contrib_ops(exported) == {"GroupQueryAttention"}
    assert_agrees(exported, (x,), want)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(exported.model_proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    optimized = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
    assert "Transpose" not in optimized, optimized
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    dynamic = aten2onnx.export(model, (x,), optimize="onnxruntime", dynamic_shapes=({0: batch, 1: seq},))
    for shape in ((1, 9, 32), (3, 4, 32)):
        x = randn(*shape, seed=4)
        with torch.no_grad():
            assert_agrees(dynamic, (x,), model(x))


def bench_model(name: str):
    """bench/ort_latency.py's tiny random-init model and input."""
    spec = importlib.util.spec_from_file_location("ort_latency", ROOT / "bench" / "ort_latency.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    module, x, _ = bench.build(name)
    return bench.LastHidden(module).eval(), x


# bench/ort_latency.py's models: the contrib ops each export holds
TRANSFORMERS = {
    "bert": {"Attention": 2},
    "vit": {"Attention": 2},
    "gpt2": {"GroupQueryAttention": 2},
    "whisper": {"Attention": 2},
    "llama": {"GroupQueryAttention": 2, "SkipSimplifiedLayerNormalization": 4, "RotaryEmbedding": 4},
}


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_transformers_models_get_contrib_ops(name):
    model, x = bench_model(name)
    with torch.no_grad():
        want = model(x)
    exported = aten2onnx.export(model, (x,), optimize="onnxruntime")
    ops = [n.op_type for n in exported.model_proto.graph.node]
    assert {op: ops.count(op) for op in TRANSFORMERS[name]} == TRANSFORMERS[name] and "Softmax" not in ops, ops
    assert_agrees(exported, (x,), want)


class RMSNorm(torch.nn.Module):
    """LLaMA's: computed as written (float32), weight last."""

    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + randn(hidden, seed=7) * 0.1)
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Residual(torch.nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.norms = torch.nn.ModuleList(RMSNorm(hidden, eps) for eps in (1e-6, 1e-5, 1e-6))
        self.proj = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden) for _ in range(2))

    def forward(self, x):
        h = self.norms[0](x)  # (no residual sum before the first: not fused)
        for norm, proj in zip(self.norms[1:], self.proj):
            x = x + proj(h)
            h = norm(x)
        return h, x


def test_rms_norms_of_residual_sums_are_skip_simplified_layer_norms():
    model = Residual().eval()
    x = randn(2, 7, 32, seed=8) * 3
    with torch.no_grad():
        want = model(x)
    exported = aten2onnx.export(model, (x,), optimize="onnxruntime")
    ops = [n.op_type for n in exported.model_proto.graph.node]
    assert ops.count("SkipSimplifiedLayerNormalization") == 2 and ops.count("ReduceMean") == 1, ops
    feeds = dict(zip(exported.input_names, (x,)))
    for got in (run_ort(exported.model_proto, feeds), [t.numpy() for t in exported.run(x)]):
        for g, w in zip(got, want):
            torch.testing.assert_close(torch.from_numpy(g), w, rtol=1e-5, atol=1e-5)



class MaskedConv1DAttention(Conv1DAttention):
    def forward(self, x, mask):
        b, s, hidden = x.shape
        qkv = torch.addmm(self.bias, x.view(-1, hidden), self.weight).view(b, s, 3 * hidden)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in qkv.split(hidden, 2))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(b, s, hidden)


def test_conv1d_attention_packs_with_dynamic_dims():
    """GPT-2's addmm between Reshapes whose sizes are computed (transformers passes the causal mask as a bool
    mask under export): packed where the restored leading dims are the input's, symbolically."""
    model = MaskedConv1DAttention().eval()
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")

    def inputs(b, s):
        mask = torch.ones(s, s, dtype=torch.bool).tril()[None, None].expand(b, 1, s, s).clone()
        mask[-1, 0, :, 0] = False  # (left padding: the first row of the last batch sees nothing)
        return randn(b, s, 32, seed=b + s), mask

    exported = aten2onnx.export(model, inputs(2, 7), optimize="onnxruntime",
                                dynamic_shapes=({0: batch, 1: seq}, {0: batch, 2: seq, 3: seq}))
    assert contrib_ops(exported) == {"Attention"}, contrib_ops(exported)
    for b, s in ((1, 3), (3, 12)):
        with torch.no_grad():
            assert_agrees(exported, inputs(b, s), model(*inputs(b, s)))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], -1)


class Rotary(torch.nn.Module):
    """Query and key rotated as transformers' apply_rotary_pos_emb does, at the positions 0..S-1 (tables
    known at export). layout "model": the heads split from [B, S, hidden] and transposed first, as every
    transformers model does; "heads": the inputs are [B, N, S, H] already. halves="repeated": the frequencies
    concatenated twice (rotate_half's layout); "interleaved": each repeated in place, which rotate_half does
    not pair (no RotaryEmbedding). swapped: cos * x and sin * rotate_half(x), operands the other way.
    dynamic_positions: the positions start at an input's offsets, one for all sequences or one for each
    (tables computed in the graph)."""

    def __init__(self, heads=4, head=8, layout="model", halves="repeated", swapped=False, dynamic_positions=False):
        super().__init__()
        self.heads, self.head, self.layout, self.swapped = heads, head, layout, swapped
        self.dynamic_positions = dynamic_positions
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, head, 2).float() / head)))
        self.halves = halves

    def tables(self, seq, offset):
        # [rows, S, H] unsqueezed at 1, as transformers' rotary embeddings and apply_rotary_pos_emb make them
        positions = torch.arange(seq).float()[None, :, None] + offset
        freqs = positions * self.inv_freq
        emb = torch.cat([freqs, freqs], -1) if self.halves == "repeated" else freqs.repeat_interleave(2, -1)
        return emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)

    def forward(self, q, k, offset):
        if self.layout == "model":
            b, s, _ = q.shape
            q, k = (t.view(b, s, self.heads, self.head).transpose(1, 2) for t in (q, k))
        cos, sin = self.tables(q.shape[2], offset.float()[:, None, None] if self.dynamic_positions else 0.0)
        if self.swapped:
            q, k = cos * q + sin * rotate_half(q), cos * k + sin * rotate_half(k)
        else:
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        return F.scaled_dot_product_attention(q, k, k, is_causal=True)


# name: (model, how many RotaryEmbedding nodes)
ROTARIES = {
    "transformers layout": (Rotary(), 2),
    "heads layout": (Rotary(layout="heads"), 2),
    "operands swapped": (Rotary(swapped=True), 2),
    "interleaved frequencies": (Rotary(halves="interleaved"), 0),
    "positions read from an input": (Rotary(dynamic_positions=True), 2),
    "positions of each sequence": (Rotary(dynamic_positions=True), 0),
}


# onnxruntime's RotaryEmbedding (optimize="onnxruntime"), and ONNX's, which the default export writes from
# opset 23 on: export's keyword arguments
ROTARY_OPS = {"onnxruntime's": {"optimize": "onnxruntime"}, "ONNX's": {"opset": 23}}


@pytest.mark.parametrize("op", list(ROTARY_OPS))
@pytest.mark.parametrize("name", list(ROTARIES))
def test_rotary_embeddings_at_known_positions_are_rotary_embedding_nodes(name, op):
    model, count = ROTARIES[name]
    model = model.eval()
    shape = (2, 6, 32) if model.layout == "model" else (2, 4, 6, 8)
    offsets = torch.tensor([3, 1]) if name == "positions of each sequence" else torch.tensor([3])
    inputs = (randn(*shape, seed=6), randn(*shape, seed=7), offsets)
    with torch.no_grad():
        want = model(*inputs)
    exported = aten2onnx.export(model, inputs, **ROTARY_OPS[op])
    ops = [n.op_type for n in exported.model_proto.graph.node]
    assert ops.count("RotaryEmbedding") == count, ops
    if count:
        assert not {"Neg", "Concat"} & set(ops), ops
    assert_agrees(exported, inputs, want)


@pytest.mark.parametrize("op", list(ROTARY_OPS))
def test_rotary_embeddings_with_dynamic_batch_and_sequence(op):
    model = Rotary(dynamic_positions=True).eval()
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    inputs = (randn(2, 6, 32, seed=6), randn(2, 6, 32, seed=7), torch.tensor([3]))
    exported = aten2onnx.export(model, inputs, **ROTARY_OPS[op],
                                dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}, None))
    assert [n.op_type for n in exported.model_proto.graph.node].count("RotaryEmbedding") == 2
    for b, s in ((1, 9), (3, 4)):
        inputs = (randn(b, s, 32, seed=8), randn(b, s, 32, seed=9), torch.tensor([5]))
        with torch.no_grad():
            assert_agrees(exported, inputs, model(*inputs))
