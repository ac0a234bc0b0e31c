"""Mixture-of-experts LLMs: transformers runs MoE experts on CPU through its custom op
`transformers::grouped_mm_fallback` (rows sorted by expert, per-expert cumulative offsets), which
aten2onnx translates natively. Tiny random-init Mixtral and Qwen3-MoE exported with export_llm hold no
ATen fallback node and, in onnxruntime (prefill from an empty cache, then decode steps fed `present`),
generate exactly transformers' greedy tokens for one prompt and a left-padded batch of two; the op alone
matches the op eager with a row count only known at run time, in onnxruntime and in our runtime."""

from __future__ import annotations

import os
import re
import warnings

import onnx
import pytest
import torch

import aten2onnx
from test_llm import VOCAB, Case, genai_greedy, greedy, left_padded, ort_greedy, prompt_ids, small, until_eos

transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")
try:  # defines torch.ops.transformers.grouped_mm_fallback, through which MoE layers run from transformers 5.3
    import transformers.integrations.moe  # noqa: F401
except ImportError:
    pass
# before 5.3, MoE layers loop over the experts a batch routes to (a size read from values): a DataDependentError
GROUPED_MM = hasattr(torch.ops.transformers, "grouped_mm_fallback")
MOE_SKIP = pytest.mark.skipif(not GROUPED_MM, reason=f"transformers {transformers.__version__} runs MoE layers without "
                              "grouped_mm_fallback (from 5.3): a loop over the experts routed to, not capturable")

MOE = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
           num_experts_per_tok=2, max_position_embeddings=128)
CASES = [
    Case("mixtral", small(transformers.MixtralConfig, **MOE, intermediate_size=48, num_local_experts=4,
                          sliding_window=None)),
    Case("qwen3_moe", small(transformers.Qwen3MoeConfig, **MOE, intermediate_size=96, moe_intermediate_size=32,
                            num_experts=4, head_dim=16)),
]
IDS = [case.name for case in CASES]
pytestmark = MOE_SKIP


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def exported(request, tmp_path_factory):
    case = request.param
    model = case.model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = aten2onnx.export_llm(model, tmp_path_factory.mktemp(case.name))
    return model, path


def test_experts_run_through_the_custom_op_and_no_node_falls_back(exported):
    model, path = exported
    assert model.config._experts_implementation == "grouped_mm"  # the path this file covers
    nodes = onnx.load(path).graph.node
    assert not [n.name for n in nodes if n.domain == "org.pytorch.aten"]
    assert sum(n.op_type == "TopK" for n in nodes) >= 2 * model.config.num_hidden_layers  # routing + expert sort


def test_onnxruntime_generates_transformers_greedy_tokens(exported):
    model, path = exported
    torch.manual_seed(1)
    prompt = prompt_ids(7)
    mask = torch.ones_like(prompt)
    assert torch.equal(ort_greedy(path, prompt, mask), greedy(model, prompt, mask))
    batch, mask = left_padded(6, row=1, pads=2)
    assert torch.equal(ort_greedy(path, batch, mask), greedy(model, batch, mask))


@pytest.mark.parametrize("case", CASES[:1], ids=IDS[:1])
def test_at_opset_13(case, tmp_path):
    """The lowest opset the LLM export is checked at (the tests above use export_llm's default)."""
    model = case.model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = aten2onnx.export_llm(model, tmp_path / case.name, opset=13)
    assert not any(n.domain == "org.pytorch.aten" for n in onnx.load(path).graph.node)
    torch.manual_seed(3)
    batch, mask = left_padded(6, row=0, pads=3)
    assert torch.equal(ort_greedy(path, batch, mask), greedy(model, batch, mask))


def test_onnxruntime_genai_generates_transformers_greedy_tokens(exported):
    og = pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is an optional extra")
    model, path = exported
    torch.manual_seed(2)
    prompt = prompt_ids(5)
    want = greedy(model, prompt, torch.ones_like(prompt))
    assert torch.equal(genai_greedy(og, os.path.dirname(path), prompt), until_eos(want[0]))


class GroupedMM(torch.nn.Module):
    def forward(self, input, weight, offs):
        return torch.ops.transformers.grouped_mm_fallback(input, weight, offs)


def grouped_args(rows: int, counts: list[int], dtype: torch.dtype, offs_dtype: torch.dtype) -> tuple:
    """input (rows, 8), weight (experts, 8, 5), offs the cumulative counts (their sum may stop short of
    rows: those rows are left 0)."""
    g = torch.Generator().manual_seed(rows)
    offs = torch.tensor(counts, dtype=torch.int64).cumsum(0).to(offs_dtype)
    return (torch.randn(rows, 8, generator=g).to(dtype), torch.randn(len(counts), 8, 5, generator=g).to(dtype), offs)




# (rows, rows per expert): empty experts, rows past the last offset, all of one expert; fewer rows than
# experts (a decode step: each row's expert weight gathered) and as many or more (every expert's product)
RUNS = [(9, [0, 4, 0, 3]), (4, [1, 1, 1, 1]), (5, [2, 0, 0, 0]), (6, [3, 0, 2, 1]), (3, [0, 0, 0, 0]),
        (3, [1, 0, 2, 0]), (2, [0, 1, 0, 1]), (3, [0, 2, 0, 0]), (2, [0, 0, 0, 2])]


@pytest.mark.parametrize("opset", [9, 13, 18, 26])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("offs_dtype", [torch.int32, torch.int64], ids=["offs_int32", "offs_int64"])
def test_grouped_mm_fallback_with_a_dynamic_row_count(opset, dtype, offs_dtype):
    from aten2onnx.runtime import InferenceSession

    rows = torch.export.Dim("rows", min=2, max=64)
    example = grouped_args(6, [3, 0, 2, 1], dtype, offs_dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = aten2onnx.export(GroupedMM(), example, dynamic_shapes=({0: rows}, None, None), opset=opset,
                                 fallback="error")
    assert not any(n.domain == "org.pytorch.aten" for n in model.model_proto.graph.node)
    ours = InferenceSession(model.model_proto.SerializeToString())
    theirs = ort.InferenceSession(model.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for rows_now, counts in RUNS:
        args = grouped_args(rows_now, counts, dtype, offs_dtype)
        want = GroupedMM()(*args)
        feeds = dict(zip(model.input_names, (a.numpy() for a in args)))
        tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else {}
        torch.testing.assert_close(torch.from_numpy(theirs.run(None, feeds)[0]), want, **tol)
        torch.testing.assert_close(torch.as_tensor(ours.run(None, feeds)[0]), want, **tol)


@pytest.mark.parametrize(("rows", "counts"), [(3, [1, 0, 2, 0]), (6, [3, 0, 2, 1])], ids=["gathered", "dense"])
def test_grouped_mm_fallback_with_a_static_row_count(rows, counts):
    """A static row count picks the form when exporting (no If)."""
    args = grouped_args(rows, counts, torch.float32, torch.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = aten2onnx.export(GroupedMM(), args, opset=18, fallback="error")
    assert not any(n.op_type == "If" for n in model.model_proto.graph.node)
    feeds = dict(zip(model.input_names, (a.numpy() for a in args)))
    got = ort.InferenceSession(model.model_proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    torch.testing.assert_close(torch.from_numpy(got[0]), GroupedMM()(*args), rtol=1e-5, atol=1e-5)


class OneInput(torch.nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("opset", [11, 26])
@pytest.mark.parametrize(("name", "fn"), [
    ("sort", lambda x: torch.sort(x)),
    ("sort_stable_descending", lambda x: torch.sort(x, stable=True, descending=True)),
    ("argsort", lambda x: torch.argsort(x, dim=0)),
    ("argsort_stable", lambda x: torch.argsort(x, dim=0, stable=True)),
])
def test_sort_along_a_dynamic_dim(name, fn, opset):  # noqa: ARG001  (name: the case's id)
    """The MoE routing sorts its (tokens * top_k) expert ids: a dim of run-time size; ties keep their order."""
    from aten2onnx.runtime import InferenceSession

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = aten2onnx.export(OneInput(fn), (torch.randint(0, 4, (6,), generator=torch.Generator().manual_seed(0)),),
                                 dynamic_shapes={"x": {0: "n"}},
                                 opset=opset, fallback="error")
    ours = InferenceSession(model.model_proto.SerializeToString())
    theirs = ort.InferenceSession(model.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for x in [torch.randint(0, 4, (11,), generator=torch.Generator().manual_seed(1)), torch.tensor([3, 1, 3, 0, 1, 1, 2]), torch.tensor([2])]:
        want = fn(x)
        want = [want] if isinstance(want, torch.Tensor) else list(want)
        feeds = {model.input_names[0]: x.numpy()}
        for got in (theirs.run(None, feeds), ours.run(None, feeds)):
            for g_, w in zip(got, want):
                assert torch.equal(torch.as_tensor(g_), w)


class GroupedMMBackward(torch.nn.Module):
    def forward(self, input, weight, offs, grad_output):
        return torch.ops.transformers.grouped_mm_fallback_backward(input, weight, offs, grad_output)


@pytest.mark.skipif(not hasattr(torch.ops.transformers, "grouped_mm_fallback_backward"),
                    reason=f"transformers {transformers.__version__} differentiates grouped_mm_fallback in Python (the "
                    "backward custom op comes later): a training export captures its ATen ops instead")
@pytest.mark.parametrize("opset", [9, 13, 18, 26])
@pytest.mark.parametrize("offs_dtype", [torch.int32, torch.int64], ids=["offs_int32", "offs_int64"])
def test_grouped_mm_fallback_backward_with_a_dynamic_row_count(opset, offs_dtype):
    """The backward custom op (a training export of an MoE model meets it): gradients of input and of
    every expert's weight, 0 for an expert without rows and for rows past the last offset."""
    from aten2onnx.runtime import InferenceSession

    def args(rows_now: int, counts: list[int]) -> tuple:
        input, weight, offs = grouped_args(rows_now, counts, torch.float32, offs_dtype)
        return input, weight, offs, torch.randn(rows_now, 5, generator=torch.Generator().manual_seed(7))

    rows = torch.export.Dim("rows", min=2, max=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = aten2onnx.export(GroupedMMBackward(), args(6, [3, 0, 2, 1]),
                                 dynamic_shapes=({0: rows}, None, None, {0: rows}), opset=opset, fallback="error")
    ours = InferenceSession(model.model_proto.SerializeToString())
    theirs = ort.InferenceSession(model.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for rows_now, counts in [(9, [0, 4, 0, 3]), (4, [1, 1, 1, 1]), (3, [0, 0, 0, 0])]:
        example = args(rows_now, counts)
        want = GroupedMMBackward()(*example)
        feeds = dict(zip(model.input_names, (a.numpy() for a in example)))
        for got in (theirs.run(None, feeds), ours.run(None, feeds)):
            assert len(got) == 2
            for g_, w in zip(got, want):
                torch.testing.assert_close(torch.as_tensor(g_), w, rtol=1e-5, atol=1e-5)


LIB = torch.library.Library("aten2onnx_moe_test", "FRAGMENT")  # the namespace the next test defines ops in


def test_a_library_op_registers_before_its_library_loads_and_is_checked_once_it_does(monkeypatch):
    """aten2onnx imports no transformers: registry.register(..., library=...) takes a symbolic for an op
    not yet in torch.ops, and checks it against the op's schema when an export first dispatches to it."""
    from aten2onnx.errors import RegistrationError
    from aten2onnx.registry import Registry, _schema

    monkeypatch.setitem(_schema.LIBRARIES, "aten2onnx_moe_test", "aten2onnx_moe_test_missing_module")
    with pytest.raises(RegistrationError, match="aten2onnx_moe_test_missing_module, which does not import"):
        _schema.resolve_overload("aten2onnx_moe_test::twice.default")
    reg = Registry()
    reg.add("aten2onnx_moe_test::twice", 9, lambda g, x: x, user=False)  # not loaded: not checked yet
    reg.add("aten2onnx_moe_test::thrice", 9, lambda g, y: y, user=False)
    for name in ("twice", "thrice"):
        torch.library.define(f"aten2onnx_moe_test::{name}", "(Tensor x) -> Tensor", lib=LIB)
    assert reg.resolve(torch.ops.aten2onnx_moe_test.twice.default, 13) is not None
    # a built-in whose signature the loaded library's schema does not take is kept aside, never dispatched
    # (the library's version is not one the symbolic was written for), and reported with the reason
    assert reg.resolve(torch.ops.aten2onnx_moe_test.thrice.default, 13) is None
    [aside] = reg.unavailable()
    assert aside.key == "aten2onnx_moe_test::thrice.default" and aside.exists
    assert re.search(r"takes \(g, y\).*name the parameters \(g, x\)", aside.reason)

