"""Small models the tests export: built from torch.nn and random-init transformers configs."""

from __future__ import annotations

import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 32),
                                       torch.nn.ReLU(), torch.nn.Linear(32, 4))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.AvgPool2d(2), torch.nn.AdaptiveAvgPool2d(1),
        )
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def _cnn():
    model = CNN()
    for module in model.modules():  # non-trivial running statistics, so batchnorm is really tested
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    return model


def _transformers():
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers


def gpt2(layers=2, hidden=64, vocab=1000):
    t = _transformers()
    return t.GPT2Model(t.GPT2Config(n_layer=layers, n_embd=hidden, n_head=4, vocab_size=vocab, n_positions=256,
                                    use_cache=False))


def llama(layers=2, hidden=64, vocab=1000):
    t = _transformers()
    return t.LlamaModel(t.LlamaConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=2 * hidden, vocab_size=vocab,
                                      use_cache=False))


def bert(layers=2, hidden=64, vocab=1000):
    t = _transformers()
    return t.BertModel(t.BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=4,
                                    intermediate_size=2 * hidden, vocab_size=vocab))


def token_ids(batch=2, seq=16, vocab=1000):
    return torch.randint(0, vocab, (batch, seq))


# name -> (model factory, example-args factory, lowest opset ONNX can express it at)
MODELS = {
    "mlp": (MLP, lambda: (torch.randn(3, 8),), 9),
    "cnn": (_cnn, lambda: (torch.randn(2, 3, 16, 16),), 9),
    "transformer_layer": (lambda: torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True),
                          lambda: (torch.randn(2, 7, 32),), 9),
    "gpt2": (gpt2, lambda: (token_ids(),), 11),
    "llama": (llama, lambda: (token_ids(),), 11),
    "bert": (bert, lambda: (token_ids(),), 11),
}
