"""A battery of real models (random-init Hugging Face configs and hand-written torch.nn ones) exported
natively: no ATen fallback, the checker passes, onnxruntime and aten2onnx.runtime match eager."""

import onnx
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import aten2onnx
from conftest import flat_tensors, run_ort

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

VOCAB = 100


def token_ids(batch=2, seq=8):
    return torch.randint(0, VOCAB, (batch, seq))


def padding_mask(batch=2, seq=8):
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1, -3:] = 0  # a padded row, so the mask really masks
    return mask


def images(batch=2, size=32):
    return torch.randn(batch, 3, size, size)


def hf(model_cls, config_cls, attn="eager", **config):
    config = config_cls(**config)
    config._attn_implementation = attn
    return model_cls(config)


def text():
    return (token_ids(),), {"attention_mask": padding_mask()}


BERT = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=64, vocab_size=VOCAB,
            max_position_embeddings=64)
DECODER = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=64, vocab_size=VOCAB,
               max_position_embeddings=64, use_cache=False)
SEQ2SEQ = dict(encoder_layers=2, decoder_layers=2, d_model=32, encoder_attention_heads=4, decoder_attention_heads=4,
               encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=VOCAB, use_cache=False)
VIT = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=64, image_size=32, patch_size=8)


# -- hand-written models ----------------------------------------------------------------------------


class ConvNet(nn.Module):
    """Conv variants, the three norms, pools with ceil_mode and count_include_pad, adaptive pools."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(3, 2, 1, ceil_mode=True),
            nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=4), nn.GroupNorm(2, 8), nn.SiLU(),
            nn.AvgPool2d(3, 2, 1, count_include_pad=False), nn.Conv2d(8, 8, 1), nn.InstanceNorm2d(8, affine=True),
            nn.Hardswish(), nn.AdaptiveAvgPool2d((3, 3)), nn.Conv2d(8, 4, 1), nn.AdaptiveMaxPool2d(1))
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return self.body(x).flatten(1)


class UNet(nn.Module):
    """Strided encoder, ConvTranspose decoder with output_padding, skip connections, and every
    interpolate mode with align_corners both ways."""

    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.e2 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.1))
        self.e3 = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU6())
        self.up1 = nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1)
        self.up2 = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.head = nn.Conv2d(8 + 8 + 16 + 16, 4, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(a)
        c = self.e3(b)
        up = self.up2(self.up1(c) + b)
        bilinear = F.interpolate(c, size=a.shape[-2:], mode="bilinear", align_corners=False)
        bilinear_corners = F.interpolate(c, scale_factor=4, mode="bilinear", align_corners=True)
        nearest = F.interpolate(b, scale_factor=2, mode="nearest")
        bicubic = F.interpolate(b, size=a.shape[-2:], mode="bicubic", align_corners=False)
        y = self.head(torch.cat([up, a, nearest + bicubic, bilinear[:, :16]], 1))
        return (y, bilinear_corners, F.interpolate(b, size=(31, 29), mode="nearest"), F.pixel_shuffle(c, 2),
                F.interpolate(b, scale_factor=1.5, mode="nearest-exact"))


class Recurrent(nn.Module):
    """Every recurrent layer and cell torch.nn has, chained."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(32, 12)
        self.rnn = nn.RNN(12, 6, num_layers=2, nonlinearity="relu", bidirectional=True)
        self.lstm_cell = nn.LSTMCell(12, 5)
        self.gru_cell = nn.GRUCell(12, 4, bias=False)
        self.rnn_cell = nn.RNNCell(12, 3)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        z, hz = self.gru(y.transpose(0, 1))
        w, hw = self.rnn(z)
        return (y, h, c, z, hz, w, hw, *self.lstm_cell(z[-1]), self.gru_cell(z[0], torch.ones(2, 4)),
                self.rnn_cell(z[1]))


class Seq2SeqTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                          dim_feedforward=64, dropout=0.0, batch_first=True)

    def forward(self, src, tgt):
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        padding = torch.zeros(src.shape[0], src.shape[1], dtype=torch.bool)
        padding[1, -2:] = True
        # tgt_is_causal: otherwise torch checks the mask's values in Python, which torch.export cannot trace
        return self.transformer(src, tgt, tgt_mask=causal, tgt_is_causal=True, src_key_padding_mask=padding,
                                memory_key_padding_mask=padding)


class Attention(nn.Module):
    """nn.MultiheadAttention with packed projections, and with separate kdim/vdim and per-head weights."""

    def __init__(self):
        super().__init__()
        self.packed = nn.MultiheadAttention(32, 4)
        self.separate = nn.MultiheadAttention(32, 4, kdim=16, vdim=24, batch_first=True)

    def forward(self, q, k, v, k2, v2):
        return (*self.packed(q, k, v),
                *self.separate(q.transpose(0, 1), k2, v2, average_attn_weights=False))


class DetectionHead(nn.Module):
    """FPN-style: lateral 1x1 convs, upsample-and-add, class/box heads, sigmoid, top-k and gathers."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 16, 3, 2, 1), nn.Conv2d(16, 32, 3, 2, 1)
        self.l1, self.l2 = nn.Conv2d(16, 16, 1), nn.Conv2d(32, 16, 1)
        self.cls, self.box = nn.Conv2d(16, 12, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x):
        f1 = F.relu(self.c1(x))
        f2 = F.relu(self.c2(f1))
        p2 = self.l2(f2)
        p1 = self.l1(f1) + F.interpolate(p2, scale_factor=2, mode="nearest")
        cls = torch.cat([self.cls(p).permute(0, 2, 3, 1).reshape(x.shape[0], -1, 4) for p in (p1, p2)], 1)
        box = torch.cat([self.box(p).permute(0, 2, 3, 1).reshape(x.shape[0], -1, 4) for p in (p1, p2)], 1)
        scores, labels = cls.sigmoid().max(-1)
        top, idx = scores.topk(10, dim=1)
        boxes = torch.gather(box, 1, idx.unsqueeze(-1).expand(-1, -1, 4))
        xy, wh = boxes[..., :2].sigmoid(), boxes[..., 2:].exp().clamp(max=4.0)
        return top, torch.gather(labels, 1, idx), torch.cat([xy - wh / 2, xy + wh / 2], -1)


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(20, 8, padding_idx=0)
        self.bag_mean = nn.EmbeddingBag(20, 8, mode="mean")
        self.bag_sum = nn.EmbeddingBag(20, 8, mode="sum", padding_idx=1)
        self.bag_max = nn.EmbeddingBag(20, 8, mode="max")
        self.ln, self.bn, self.inorm = nn.LayerNorm(8), nn.BatchNorm1d(8), nn.InstanceNorm1d(8)

    def forward(self, ids, flat, offsets):
        e = self.ln(self.embedding(ids))
        return (e, self.bn(e.transpose(1, 2)), self.inorm(e.transpose(1, 2)), self.bag_mean(ids),
                self.bag_sum(flat, offsets), self.bag_max(flat, offsets))


def weight_normed():
    """Weight norm as a parametrization (wav2vec2's positional conv): aten::_weight_norm over dim 2."""
    conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(8, 8, 5, padding=2, groups=2), dim=2)
    return nn.Sequential(conv, nn.GELU(), nn.utils.parametrizations.weight_norm(nn.Linear(10, 6)))


# name -> (model factory, example (args, kwargs) factory, opsets); opset 17 everywhere, 13 for a few.
MODELS = {
    "convnet": (ConvNet, lambda: ((torch.randn(2, 3, 20, 20),), {}), (13, 17)),
    "unet": (UNet, lambda: ((torch.randn(2, 3, 16, 16),), {}), (17,)),
    "recurrent": (Recurrent, lambda: ((torch.randn(2, 5, 8),), {}), (13, 17)),
    "nn_transformer": (Seq2SeqTransformer, lambda: ((torch.randn(2, 6, 32), torch.randn(2, 4, 32)), {}), (17,)),
    "multihead_attention": (Attention, lambda: ((torch.randn(5, 2, 32), torch.randn(7, 2, 32), torch.randn(7, 2, 32),
                                                 torch.randn(2, 7, 16), torch.randn(2, 7, 24)), {}), (13, 17)),
    "detection_head": (DetectionHead, lambda: ((torch.randn(2, 3, 16, 16),), {}), (17,)),
    "embeddings": (Embeddings, lambda: ((torch.tensor([[0, 3, 5, 0], [7, 0, 2, 9]]), torch.tensor([1, 2, 1, 4, 5, 1, 7]),
                                         torch.tensor([0, 3, 3, 5])), {}), (17,)),
    "weight_norm": (weight_normed, lambda: ((torch.randn(2, 8, 10),), {}), (13, 17)),
    "bert": (lambda: hf(transformers.BertModel, transformers.BertConfig, **BERT), text, (13, 17)),
    "distilbert_sdpa": (lambda: hf(transformers.DistilBertModel, transformers.DistilBertConfig, "sdpa", n_layers=2,
                                   dim=32, n_heads=4, hidden_dim=64, vocab_size=VOCAB, max_position_embeddings=64),
                        text, (17,)),
    "deberta_v2": (lambda: hf(transformers.DebertaV2Model, transformers.DebertaV2Config, **BERT), text, (17,)),
    "gpt2_sdpa": (lambda: hf(transformers.GPT2Model, transformers.GPT2Config, "sdpa", n_layer=2, n_embd=32, n_head=4,
                             vocab_size=VOCAB, n_positions=64, use_cache=False), text, (17,)),
    # GPT-J splits its constant sin/cos table: the Split is folded at export
    "gptj": (lambda: hf(transformers.GPTJModel, transformers.GPTJConfig, n_layer=2, n_embd=32, n_head=4, rotary_dim=4,
                        vocab_size=VOCAB, n_positions=64, use_cache=False), text, (13, 17)),
    "bloom": (lambda: hf(transformers.BloomModel, transformers.BloomConfig, n_layer=2, hidden_size=32, n_head=4,
                         vocab_size=VOCAB, use_cache=False), text, (17,)),
    "llama_sdpa": (lambda: hf(transformers.LlamaModel, transformers.LlamaConfig, "sdpa", num_key_value_heads=2,
                              **DECODER), text, (17,)),
    "mistral_sliding_window": (lambda: hf(transformers.MistralModel, transformers.MistralConfig, num_key_value_heads=2,
                                          sliding_window=4, **DECODER), text, (17,)),
    "t5": (lambda: hf(transformers.T5Model, transformers.T5Config, num_layers=2, num_decoder_layers=2, d_model=32,
                      d_kv=8, d_ff=64, num_heads=4, vocab_size=VOCAB, use_cache=False),
           lambda: ((token_ids(),), {"attention_mask": padding_mask(), "decoder_input_ids": token_ids(2, 5)}), (17,)),
    "whisper": (lambda: hf(transformers.WhisperModel, transformers.WhisperConfig, num_mel_bins=16,
                           max_source_positions=20, max_target_positions=32, pad_token_id=1, bos_token_id=2,
                           eos_token_id=2, decoder_start_token_id=3, begin_suppress_tokens=None,
                           suppress_tokens=None, **SEQ2SEQ),
                lambda: ((torch.randn(2, 16, 40),), {"decoder_input_ids": token_ids(2, 5)}), (17,)),
    "vit": (lambda: hf(transformers.ViTModel, transformers.ViTConfig, **VIT), lambda: ((images(),), {}), (17,)),
    "swin": (lambda: hf(transformers.SwinModel, transformers.SwinConfig, image_size=32, patch_size=2, embed_dim=16,
                        depths=[2, 2], num_heads=[2, 4], window_size=4), lambda: ((images(),), {}), (17,)),
    "convnext": (lambda: hf(transformers.ConvNextModel, transformers.ConvNextConfig, hidden_sizes=[16, 32],
                            depths=[1, 1], num_stages=2), lambda: ((images(),), {}), (17,)),
    "clip_text": (lambda: hf(transformers.CLIPTextModel, transformers.CLIPTextConfig, num_hidden_layers=2,
                             hidden_size=32, num_attention_heads=4, intermediate_size=64, vocab_size=VOCAB,
                             max_position_embeddings=16), text, (17,)),
    "wav2vec2": (lambda: hf(transformers.Wav2Vec2Model, transformers.Wav2Vec2Config, num_hidden_layers=2,
                            hidden_size=32, num_attention_heads=4, intermediate_size=64, conv_dim=(16, 16),
                            conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                            num_conv_pos_embedding_groups=4), lambda: ((torch.randn(2, 400),), {}), (17,)),
    "segformer": (lambda: hf(transformers.SegformerForSemanticSegmentation, transformers.SegformerConfig,
                             num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                             num_attention_heads=[1, 2], decoder_hidden_size=32, patch_sizes=[7, 3], strides=[4, 2],
                             num_labels=3), lambda: ((images(),), {}), (17,)),
}
CASES = [(name, opset) for name, (_, _, opsets) in MODELS.items() for opset in opsets]


@pytest.fixture(scope="module")
def built():
    cache = {}

    def get(name):
        if name not in cache:
            torch.manual_seed(0)
            factory, make_inputs, _ = MODELS[name]
            model = factory().eval()
            args, kwargs = make_inputs()
            with torch.no_grad():
                expected = flat_tensors(model(*args, **kwargs))
            cache[name] = (model, args, kwargs, expected)
        return cache[name]

    return get


@pytest.mark.parametrize("name, opset", CASES, ids=[f"{n}-opset{o}" for n, o in CASES])
def test_model_exports_natively_and_matches_eager(built, name, opset):
    model, args, kwargs, expected = built(name)
    with torch.no_grad():
        exported = aten2onnx.export(model, args, kwargs, opset=opset)
    assert exported.fallback_ops == []
    onnx.checker.check_model(exported.model_proto, full_check=True)
    inputs = flat_tensors((args, kwargs))
    got_ort = run_ort(exported.model_proto, dict(zip(exported.input_names, inputs)))
    assert len(got_ort) == len(expected)
    for got, want in zip(got_ort, expected):
        torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-4, atol=1e-4)
    with torch.no_grad():
        got_ours = flat_tensors(exported.run(*args, **kwargs))
    assert len(got_ours) == len(expected)
    for got, want in zip(got_ours, expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
