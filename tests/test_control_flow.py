"""torch.cond, while_loop and scan exported as If, Loop and Scan, checked on several inputs."""

import onnx
import pytest
import torch
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop

import aten2onnx
from aten2onnx.symbolic import MAX_OPSET
from conftest import flat_tensors, run_ort


class DataDependentCond(torch.nn.Module):
    def forward(self, x, y):
        def positive(x, y):
            return x.sin() + y, x * 2

        def negative(x, y):
            return x.cos() - y, y + 1

        return torch.cond(x.sum() > 0, positive, negative, (x, y))


class CumulativeRows(torch.nn.Module):
    """The torch.export tutorial's scan: cumulative row sums."""

    def forward(self, xs):
        def add(carry, x):
            carry = carry + x
            return carry, carry.clone()

        return scan(add, torch.zeros(xs.shape[1]), xs, dim=0)


class ReversedScan(torch.nn.Module):
    def forward(self, xs, w):
        def step(carry, x):
            carry = carry * 0.5 + x * w
            return carry, carry.sum(0, keepdim=True)

        return scan(step, torch.zeros(xs.shape[0]), xs, dim=1, reverse=True)


class CountedLoop(torch.nn.Module):
    def forward(self, limit, x, w):
        def cond_fn(i, x):
            return i < limit

        def body_fn(i, x):
            return i + 1, x * w + 1

        return while_loop(cond_fn, body_fn, (torch.zeros((), dtype=torch.int64), x))


class CondInsideScan(torch.nn.Module):
    def forward(self, xs):
        def step(carry, x):
            def grow(c, x):
                return c + x

            def shrink(c, x):
                return c - x

            carry = torch.cond(x.sum() > 0, grow, shrink, (carry, x))
            return carry, carry.clone()

        return scan(step, torch.zeros(xs.shape[1]), xs)


def inputs(name, variant):
    g = torch.Generator().manual_seed(variant)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    return {
        "cond": lambda: (r(4) + (3 if variant % 2 else -3), r(4)),
        "scan": lambda: (r(5, 3),),
        "reversed_scan": lambda: (r(3, 6), r(3)),
        "while": lambda: (torch.tensor(variant + 2), r(3), r(3)),
        "cond_in_scan": lambda: (r(6, 4),),
    }[name]()


MODELS = {"cond": DataDependentCond, "scan": CumulativeRows, "reversed_scan": ReversedScan,
          "while": CountedLoop, "cond_in_scan": CondInsideScan}
EXPECTED_OPS = {"cond": "If", "scan": "Scan", "reversed_scan": "Scan", "while": "Loop", "cond_in_scan": "Scan"}


@pytest.mark.parametrize("opset", [13, 18, MAX_OPSET])
@pytest.mark.parametrize("name", list(MODELS))
def test_control_flow_matches_eager(name, opset):
    model = MODELS[name]()
    exported = aten2onnx.export(model, inputs(name, 0), opset=opset, fallback="error")
    onnx.checker.check_model(exported.model_proto, full_check=True)
    assert EXPECTED_OPS[name] in {n.op_type for n in exported.model_proto.graph.node}
    for variant in range(3):
        args = inputs(name, variant)
        expected = flat_tensors(model(*args))
        got_ort = run_ort(exported.model_proto, dict(zip(exported.input_names, args)))
        got_ours = flat_tensors(exported.run(*args))
        assert len(got_ort) == len(expected)
        for want, a, b in zip(expected, got_ort, got_ours):
            torch.testing.assert_close(torch.from_numpy(a), want)
            torch.testing.assert_close(b, want)
