"""Fuzz aten2onnx.runtime with mutants of exported models (aten2onnx/runtime/fuzz.py says what counts):

    python scripts/fuzz_runtime.py --n 5000 --seed 0        # last line: "5000 tried, K escapes"
    python scripts/fuzz_runtime.py --replay 1234 --seed 0    # one mutant again, in this process

Seeds are small exported models covering what the runtime does with a model file: fused groups
(gelu, silu, attention), ATen fallback nodes, control flow, written buffers (state metadata),
convolutions, indexing and shape arithmetic, at old and new opsets.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    """An MLP (exact gelu) and attention with a bool mask: the fused groups."""

    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)

    def forward(self, x, mask):
        h = self.down(F.gelu(self.up(x)))
        q = k = v = h.reshape(1, 2, 6, 4)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask) + F.gelu(h, approximate="tanh").reshape(1, 2, 6, 4)


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(3)

    def forward(self, x):
        return F.max_pool2d(F.silu(self.norm(self.conv(x))), 2).flatten(1).softmax(-1)


class Counter(torch.nn.Module):
    """A written buffer: the state-update metadata."""

    def __init__(self):
        super().__init__()
        self.register_buffer("seen", torch.zeros(3))

    def forward(self, x):
        self.seen.add_(x.sum(0))
        return x * self.seen


def indexing(x, idx):
    y = torch.cumsum(x, 1).gather(1, idx)
    values, order = torch.topk(y, 2, dim=1)
    return values, order, torch.sort(x, dim=1).values, x.scatter_add(1, idx, y)


def shapes(x):
    a, b = x.reshape(2, -1).split([1, 1], 0)
    return torch.cat([a.transpose(0, 1), b.t()], 1).unsqueeze(0).expand(2, -1, -1).sum(-1), x[..., 1:].abs().mean()


def branch(x):
    return torch.cond(x.sum() > 0, lambda x: x.sin() * 2, lambda x: x.cos() - 1, (x,))


def loop(x):
    return torch._higher_order_ops.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 1.5 + 1), (torch.tensor(0), x))[1]


def layer_norm_embedding(ids, weight):
    return F.layer_norm(F.embedding(ids, weight), (4,)).relu()


def seeds() -> list[tuple]:
    """(ModelProto, feeds) per seed: each model at an old and a new opset."""
    import aten2onnx

    torch.manual_seed(0)
    cases = [
        (Block().eval(), (torch.randn(6, 8), torch.rand(6, 6) > 0.3), (13, 18)),
        (Conv().eval(), (torch.randn(1, 2, 4, 4),), (9, 17)),
        (Counter(), (torch.randn(2, 3),), (13, 18)),
        (indexing, (torch.randn(3, 5), torch.randint(0, 5, (3, 4))), (9, 18)),
        (shapes, (torch.randn(2, 2, 3),), (9, 18)),
        (branch, (torch.randn(4),), (13,)),
        (loop, (torch.randn(3),), (13,)),
        (layer_norm_embedding, (torch.randint(0, 6, (2, 3)), torch.randn(6, 4)), (9, 18)),
    ]
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model, args, opsets in cases:
            for opset in opsets:
                exported = aten2onnx.export(model, args, opset=opset)
                feeds = {name: a.numpy() for name, a in zip(exported.input_names, args)}
                found.append((exported.model_proto, feeds))
            # exact exports: their call metadata is what the runtime runs (the "exact" mutations)
            exported = aten2onnx.export(model, args, opset=max(opsets), exact=True)
            found.append((exported.model_proto, {name: a.numpy() for name, a in zip(exported.input_names, args)}))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before a silent worker is a hang")
    parser.add_argument("--replay", type=int, default=None, help="run mutant number N here and print what happens")
    parser.add_argument("--kinds", default="", help="comma-separated mutation kinds only (aten, attribute, dims, ...)")
    args = parser.parse_args(argv)

    from aten2onnx.runtime import fuzz

    corpus = seeds()
    kinds = tuple(k for k in args.kinds.split(",") if k)
    if args.replay is not None:
        data, feeds, mutations = fuzz.replay(corpus, args.replay, args.seed, kinds)
        print("mutations:", mutations)
        fuzz._job(data, feeds, lambda stage: print(stage.name, stage.kind, stage.detail))
        return 0

    def progress(report: fuzz.Report) -> None:
        if report.tried % 250 == 0:
            print(f"... {report.tried} tried, {len(report.escapes)} escapes, {len(report.fusion)} fusion "
                  f"disagreements, {report.seconds:.0f}s", flush=True)

    report = fuzz.fuzz(corpus, args.n, args.seed, progress=progress, timeout=args.timeout, kinds=kinds)
    print(report.summary())
    return 1 if report.escapes or report.fusion else 0


if __name__ == "__main__":
    np.set_printoptions(threshold=20)
    sys.exit(main())
