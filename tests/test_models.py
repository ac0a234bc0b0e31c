"""Real models exported at several opsets: the checker passes, onnxruntime and aten2onnx.runtime match eager."""

import onnx
import pytest
import torch

import aten2onnx
from aten2onnx.symbolic import MAX_OPSET
from conftest import flat_tensors, run_ort
from models import MODELS

OPSETS = [9, 11, 13, 17, 18, MAX_OPSET]
CASES = [(name, opset) for name, (_, _, lowest) in MODELS.items() for opset in OPSETS if opset >= lowest]


@pytest.fixture(scope="module")
def built():
    cache = {}

    def get(name):
        if name not in cache:
            torch.manual_seed(0)
            factory, make_args, _ = MODELS[name]
            model = factory().eval()
            args = make_args()
            with torch.no_grad():
                expected = flat_tensors(model(*args))
            cache[name] = (model, args, expected)
        return cache[name]

    return get


@pytest.mark.parametrize("name, opset", CASES, ids=[f"{n}-opset{o}" for n, o in CASES])
def test_model_matches_eager(built, name, opset):
    model, args, expected = built(name)
    exported = aten2onnx.export(model, args, opset=opset, fallback="error")
    assert exported.fallback_ops == []
    onnx.checker.check_model(exported.model_proto, full_check=True)
    feeds = dict(zip(exported.input_names, args))
    got_ort = run_ort(exported.model_proto, feeds)
    assert len(got_ort) == len(expected)
    for got, want in zip(got_ort, expected):
        torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-4, atol=1e-5)
    got_ours = flat_tensors(exported.run(*args))
    for got, want in zip(got_ours, expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_output_structure_is_the_models_own(built):
    model, args, _ = built("bert")
    exported = aten2onnx.export(model, args, opset=17)
    out = exported.run(*args)
    eager = model(*args)
    assert type(out).__name__ == "dict" or hasattr(out, "keys")
    assert set(out.keys()) == set(eager.keys())
    torch.testing.assert_close(out["pooler_output"], eager["pooler_output"], rtol=1e-4, atol=1e-5)
