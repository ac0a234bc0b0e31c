"""Random ops: the graph draws its own numbers on every run (never baked in at export), from the
distribution eager PyTorch draws from. Checked by statistics on both runtimes, against properties
of the eager op (range, moments, permutation, rate), since the numbers themselves cannot match."""

from __future__ import annotations

import warnings

import pytest
import torch

import aten2onnx
from conftest import run_ort

N = 20000
# onnxruntime (1.32) has no kernel for the random ops' opset-22 versions (RandomUniform, RandomNormal, their
# Like forms, Multinomial, Bernoulli): exports from opset 22 are checked in our runtime only
ORT_RANDOM_BELOW = 22


def stats_uniform(t):
    t = t.double()
    return bool(((t >= 0) & (t < 1)).all()) and abs(t.mean() - 0.5) < 0.02 and abs(t.var() - 1 / 12) < 0.01


def stats_normal(t):
    t = t.double()
    return abs(t.mean()) < 0.05 and abs(t.std() - 1) < 0.05


def ints_in(low, high):
    return lambda t: bool(((t >= low) & (t < high)).all()) and set(t.unique().tolist()) == set(range(low, high))


def permutation(t):
    return sorted(t.tolist()) == list(range(t.numel()))


def rate(p):
    return lambda t: abs(t.double().mean() - p) < 0.02


def dropout_ok(p):
    def check(out):
        y, mask = out
        kept = y[mask]
        return abs(mask.double().mean() - (1 - p)) < 0.02 and torch.allclose(kept, torch.full_like(kept, 1 / (1 - p))) \
            and bool((y[~mask] == 0).all())
    return check


WEIGHTS = torch.tensor([0.0, 1.0, 2.0, 5.0])  # unnormalized; category 0 can never be drawn


def categorical(first_column=False, distinct=False):
    """int64 draws from WEIGHTS' categories at their rates (of the first draw of each row, without
    replacement), never category 0, and no category twice in a row where drawn without replacement."""
    def check(t):
        drawn = t[..., 0] if first_column else t
        rates = torch.bincount(drawn.flatten(), minlength=4).double() / drawn.numel()
        ok = t.dtype == torch.int64 and bool((t > 0).all()) and bool((t < 4).all())
        ok = ok and bool((rates - WEIGHTS.double() / WEIGHTS.sum()).abs().max() < 0.02)
        if distinct:
            ok = ok and bool((t.sort(-1).values.diff(dim=-1) != 0).all())
        return ok
    return check


CASES = [  # name, fn of x (x: ones(N) float32), check on the output, opsets
    ("rand", lambda x: torch.rand(N), stats_uniform, (9, 18)),
    ("rand_float64", lambda x: torch.rand(N, dtype=torch.float64), stats_uniform, (9,)),
    ("randn", lambda x: torch.randn(2, N // 2), stats_normal, (9, 18)),
    ("rand_like_dynamic", lambda x: torch.rand_like(x), stats_uniform, (13,)),
    ("randn_like", lambda x: torch.randn_like(x), stats_normal, (9,)),
    ("randint", lambda x: torch.randint(3, 9, (N,)), ints_in(3, 9), (9, 18)),
    ("randint_like", lambda x: torch.randint_like(x, 5), ints_in(0, 5), (13,)),
    ("randperm", lambda x: torch.randperm(1000), permutation, (10, 18)),
    ("bernoulli_p", lambda x: torch.bernoulli(x * 0.3), rate(0.3), (9, 18)),
    ("multinomial", lambda x: torch.multinomial(WEIGHTS, N, replacement=True), categorical(), (9, 18, 26)),
    ("multinomial_no_replacement", lambda x: torch.multinomial(x[:, None] * WEIGHTS, 3),
     categorical(first_column=True, distinct=True), (9, 18, 26)),
    ("multinomial_dynamic", lambda x: torch.multinomial(x[:, None] * WEIGHTS, 2, replacement=True), categorical(),
     (9, 13, 18, 26)),
    ("multinomial_no_replacement_dynamic", lambda x: torch.multinomial(x[:, None] * WEIGHTS, 2),
     categorical(first_column=True, distinct=True), (10, 13, 18, 26)),
    ("native_dropout_train", lambda x: torch.ops.aten.native_dropout(x, 0.25, True), dropout_ok(0.25), (9, 18)),
]


class Call(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("name, fn, check, opsets", CASES, ids=[c[0] for c in CASES])
def test_random_op_draws_from_eager_distribution_on_every_run(name, fn, check, opsets):
    x = torch.ones(N)
    assert check(fn(x))  # the property holds for eager PyTorch itself
    dynamic = {"x": {0: "n"}} if "dynamic" in name or "like" in name else None
    for opset in opsets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exported = aten2onnx.export(Call(fn), (x,), opset=opset, fallback="error", dynamic_shapes=dynamic)
        assert not exported.fallback_ops
        first, second = exported.run(x), exported.run(x)
        assert check(first) and check(second)
        flat = lambda out: torch.cat([t.double().flatten() for t in (out if isinstance(out, tuple) else (out,))])
        assert not torch.equal(flat(first), flat(second)), "the same numbers twice: a draw was baked into the graph"
        if opset >= ORT_RANDOM_BELOW:
            continue
        ort_out = [torch.from_numpy(a) for a in run_ort(exported.model_proto, {"x": x})]
        assert check(tuple(ort_out) if len(ort_out) > 1 else ort_out[0])
