"""Symbolic sizes computed in the graph: ops whose translation needs a size (an element count, a class
count, a loop length) exported with every dim Dim.AUTO, with no ATen fallback, and right at the example
size and at another one, against eager, in onnxruntime and in aten2onnx.runtime."""

import warnings

import pytest
import torch

import aten2onnx
from conftest import run_ort
from optable import Call, assert_runs_like_eager

F = torch.nn.functional


def randn(*shape):
    return torch.randn(*shape)


# name: (function of the inputs, inputs at size n[, opsets]); n = 3 is exported, n = 5 checked as well, at
# opsets 13 and 18 unless the case names its own (a reducing scatter needs opset 16)
CASES = {
    "var_dim": (lambda x: torch.var(x, dim=1), lambda n: (randn(n, n + 2, 3),)),
    "var_all_correction0": (lambda x: torch.var(x, correction=0), lambda n: (randn(n, 4),)),
    "std_keepdim": (lambda x: torch.std(x, dim=(0, 2), keepdim=True), lambda n: (randn(n, 3, n + 1),)),
    "var_mean_correction2": (lambda x: torch.var_mean(x, dim=-1, correction=2), lambda n: (randn(2, n),)),
    "std_mean_unbiased": (lambda x: torch.std_mean(x), lambda n: (randn(n, n),)),
    "batch_norm_train": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                         lambda n: (randn(n, 3, n + 1), randn(3), randn(3))),
    "batch_norm_eval": (lambda x, m, v: F.batch_norm(x, m, v, training=False),
                        lambda n: (randn(n, 3, n), randn(3), torch.rand(3) + 0.5)),
    "native_batch_norm_eval": (lambda x, w, b, m, v: torch.native_batch_norm(x, w, b, m, v, False, 0.1, 1e-5),
                               lambda n: (randn(n, 4), randn(4), randn(4), randn(4), torch.rand(4) + 0.5)),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), lambda n: (randn(n, 4, n + 1), randn(4), randn(4))),
    # scatter reads src only where index reaches: src sliced to index's symbolic shape
    "scatter_src_larger": (lambda x, i, src: torch.scatter(x, 0, i, src),
                           lambda n: (randn(n, 4), torch.argsort(torch.rand(n, 3), dim=0)[:n - 1], randn(n + 1, 5))),
    "scatter_add": (lambda x, i, src: torch.scatter_add(x, 1, i, src),
                    lambda n: (randn(4, n), torch.randint(0, n, (3, n + 1)), randn(4, n + 2)), (18,)),
    "scatter_reduce_mean": (lambda x, i, src: torch.scatter_reduce(x, 0, i, src, "mean", include_self=False),
                            lambda n: (randn(n, 4), torch.randint(0, n, (n + 1, 4)), randn(n + 2, 5)), (18,)),
    # put: indices into self's symbolic element count, negative ones counted from its end
    "put": (lambda x, i, v: torch.put(x, i, v),
            lambda n: (randn(n, n + 1), torch.randperm(n * (n + 1))[:n] - n, randn(n))),
    "put_accumulate": (lambda x, i, v: torch.put(x, i, v, accumulate=True),
                       lambda n: (randn(n, n + 1), torch.randint(-n, n * (n + 1), (n, 2)), randn(n, 2))),
    "diagonal_scatter": (lambda x, src: torch.diagonal_scatter(x, src, 1, 0, 1),
                         lambda n: (randn(n, n + 2, 2), randn(2, n))),
    # losses: the class count read from the graph (one-hot, default weights, smoothing)
    "cross_entropy_smoothing": (lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2),
                                lambda n: (randn(n, n + 2, 2), torch.randint(0, n + 2, (n, 2)))),
    "nll_loss_unbatched": (lambda x, t: F.nll_loss(x, t, reduction="sum"),
                           lambda n: (randn(n).log_softmax(0), torch.tensor(n - 1))),
    "bilinear": (lambda a, b, w, bias: F.bilinear(a, b, w, bias),
                 lambda n: (randn(n, 2, 4), randn(n, 2, n + 1), randn(5, 4, n + 1), randn(5))),  # torch fixes out_features
    "addbmm": (lambda x, a, b: torch.addbmm(x, a, b), lambda n: (randn(n, n + 1), randn(2, n, 4), randn(2, 4, n + 1))),
    # cumulative ops: the [n, n] triangle built from an arange of the symbolic length
    "cumprod": (lambda x: torch.cumprod(x, 1), lambda n: (torch.rand(2, n, 3) + 0.5,)),
    "cummax": (lambda x: torch.cummax(x, 0), lambda n: (randn(n, n + 1),)),
    "cummin": (lambda x: torch.cummin(x, -1), lambda n: (torch.randint(0, 3, (n, n + 1)),)),
    # (uint8: the filler 0 past the diagonal equals real values; those positions must not count)
    "cummax_uint8": (lambda x: torch.cummax(x, 1), lambda n: (torch.randint(0, 2, (2, n + 1), dtype=torch.uint8),)),
    "logcumsumexp": (lambda x: torch.logcumsumexp(x, 1), lambda n: (randn(n, n + 2),)),
    "cosine_similarity": (lambda a, b: F.cosine_similarity(a, b, dim=-1), lambda n: (randn(n, n + 1), randn(n, n + 1))),
    # attention's default scale 1 / sqrt(head dim) of a symbolic head dim
    "sdpa_default_scale": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                           lambda n: (randn(2, n, n + 1), randn(2, n + 2, n + 1), randn(2, n + 2, 7))),  # no size equal at the example: Dim.AUTO would tie them (torch 2.14 duck-sizes)
    # mode: all-pairs counts over rows of a symbolic length (ties: the smallest value, its last index)
    "mode": (lambda x: torch.mode(x, 1), lambda n: (torch.randint(0, 3, (2, n + 3, n)),)),
    "mode_keepdim": (lambda x: torch.mode(x, 0, keepdim=True), lambda n: (torch.randint(0, 2, (n + 1, n)).float(),)),
    # bucketize/searchsorted: comparisons counted over a boundary count read from the graph
    "bucketize": (lambda x, b: torch.bucketize(x, b, right=True),
                  lambda n: (torch.randint(0, 9, (n, 2)).float(), torch.arange(0, 2 * n + 1, 2).float())),
    "searchsorted_batched": (lambda s, v: torch.searchsorted(s, v),
                             lambda n: (torch.sort(randn(2, n + 2)).values, randn(2, n))),
    "instance_norm": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                      lambda n: (randn(n, 3, n + 2, 2), randn(3), randn(3))),
}


def check(name: str, opset: int) -> None:
    fn, make = CASES[name][:2]
    model = Call(fn).eval()
    example = make(3)
    dynamic = (tuple({d: torch.export.Dim.AUTO for d in range(t.dim())} for t in example),)
    ep = torch.export.export(model, example, dynamic_shapes=dynamic, strict=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(ep, example, opset=opset, fallback="error")
    for args in (example, make(5)):
        assert_runs_like_eager(exported, model, args, tol=(1e-4, 1e-5))


@pytest.mark.parametrize("name,opset", [(name, opset) for name, case in CASES.items()
                                         for opset in (case[2] if len(case) > 2 else (13, 18))])
def test_symbolic_sizes_are_computed_in_the_graph(name, opset):
    check(name, opset)


class ReduceSelected(torch.nn.Module):
    def __init__(self, reduce):
        super().__init__()
        self.reduce = reduce

    def forward(self, x):
        return self.reduce(x[x > 0])


@pytest.mark.parametrize("name", ["any", "all", "any_dim", "all_dim"])
def test_any_and_all_of_a_selection_that_may_be_empty(name):
    """any() over no elements is False: the export reduced with ReduceMax and cast the result to bool, and over
    no elements ReduceMax gives int32's lowest value, so it said True (fuzz_models seed 1795825854)."""
    reduce = {"any": torch.any, "all": torch.all, "any_dim": lambda t: t.any(-1), "all_dim": lambda t: t.all(0)}[name]
    model = ReduceSelected(reduce)
    exported = aten2onnx.export(model, (torch.tensor([1, 2]),))
    for x in (torch.tensor([-3, -1]), torch.tensor([0, 0]), torch.tensor([2, -1]), torch.tensor([5, 7])):
        want = model(x)
        assert torch.equal(exported.run(x), want)
        assert torch.equal(torch.from_numpy(run_ort(exported.model_proto, {"x": x})[0]), want)
