"""Models for the exact-mode table (tests/test_exact.py): each family the issue names, as a factory and
an inputs factory."""

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.b = nn.Linear(32, 8)

    def forward(self, x):
        return torch.softmax(self.b(F.gelu(self.norm(self.a(x)))), -1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 4, 3, stride=2)
        self.fc = nn.Linear(36, 10)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn(self.c1(x))), 2)
        y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        y = F.avg_pool2d(self.c2(y), 2)
        return F.log_softmax(self.fc(y.flatten(1)), -1)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(32, 8, batch_first=True)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.gru(y)[0]


class Reductions(nn.Module):
    def forward(self, x):
        return (x.sum(1), x.mean((0, 2)), x.var(1), torch.linalg.vector_norm(x, dim=-1), x.norm(),
                torch.logsumexp(x, 1), x.cumsum(1), x.std(0), x.prod(2), x.amax(1))


class Indexing(nn.Module):
    def forward(self, x, idx, src):
        written = x.clone()
        written[idx] = src
        return (x.index_add(0, idx, src), written,
                x.scatter_reduce(0, idx.unsqueeze(1).expand(-1, x.shape[1]), src, "sum", include_self=True),
                x.index_put((idx,), src, accumulate=True))


class Attention(nn.Module):
    def forward(self, q, k, v, bool_mask, float_mask):
        return (F.scaled_dot_product_attention(q, k, v),
                F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask),
                F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask),
                F.scaled_dot_product_attention(q, k, v, is_causal=True))


class Random(nn.Module):
    """Random ops draw from torch's generator in eager's order."""

    def forward(self, x):
        return (x + torch.rand_like(x), torch.randn(3, 4) * x.sum(), torch.bernoulli(torch.sigmoid(x)),
                torch.randint(0, 10, (5,)), torch.randperm(7), torch.multinomial(torch.softmax(x[0], -1), 3),
                F.dropout(x, 0.5, training=True))


class InPlace(nn.Module):
    """The mutation rewrite's scatters: a buffer and a slice of the input written in place."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(5))

    def forward(self, x):
        self.total.add_(x.sum(0))
        y = x * 1.5
        y[:, 1:3].mul_(0.3).add_(x[:, :2])
        return y.cumsum(0), self.total.clone()


def cast(factory, dtype):
    return lambda: factory().to(dtype)


# name -> (model factory, inputs factory)
MODELS = {
    "mlp": (MLP, lambda: (torch.randn(4, 5, 16),)),
    "linear_3d": (lambda: nn.Linear(16, 8), lambda: (torch.randn(2, 3, 16),)),
    "cnn": (CNN, lambda: (torch.randn(2, 3, 16, 16),)),
    "recurrent": (Recurrent, lambda: (torch.randn(2, 5, 8),)),
    "reductions": (Reductions, lambda: (torch.randn(4, 6, 5),)),
    "indexing": (Indexing, lambda: (torch.randn(6, 3), torch.tensor([0, 2, 2, 5]), torch.randn(4, 3))),
    "attention": (Attention, lambda: (torch.randn(2, 4, 6, 8), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 8),
                                      torch.rand(6, 7) > 0.3, torch.randn(2, 1, 6, 7))),
    "in_place": (InPlace, lambda: (torch.randn(4, 5),)),
    "random": (Random, lambda: (torch.randn(4, 5),)),
    # the translation gives bag_size and max_indices as one value: the call names it once
    "embedding_bag_mean": (lambda: nn.EmbeddingBag(10, 3, mode="mean"),
                           lambda: (torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4]))),
    "embedding_bag_max": (lambda: nn.EmbeddingBag(10, 3, mode="max"),
                          lambda: (torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 3]))),
    "mlp_float16": (cast(MLP, torch.float16), lambda: (torch.randn(4, 5, 16).half(),)),
    "mlp_bfloat16": (cast(MLP, torch.bfloat16), lambda: (torch.randn(4, 5, 16).bfloat16(),)),
    "cnn_bfloat16": (cast(CNN, torch.bfloat16), lambda: (torch.randn(2, 3, 16, 16).bfloat16(),)),
}
