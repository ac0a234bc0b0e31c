"""In-place ops, writes through views, and state updates of inputs and buffers: the exported model
gives eager's answers, and its state after three runs is eager's state after three runs."""

import copy
import inspect
import json
import warnings

import onnx
import onnxruntime as ort
import pytest
import torch

import aten2onnx
from aten2onnx.errors import ExportError
from aten2onnx.exporter.diagnose import DataDependentError, GlobalStateError
from conftest import flat_tensors


class LoopAfterLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        for i in range(y.shape[0]):
            y[i] += torch.sin(y[i])
        return y


class IndexAssign(torch.nn.Module):
    def forward(self, x, kv_index, update):
        x = x.clone()
        x[..., kv_index] = update
        return x


class BufferCounter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        self.count.add_(x.sum())
        return x * 2, self.count


class CopyIntoInput(torch.nn.Module):
    def forward(self, a, x):
        a.copy_(x + 1)
        return a * 3


class KVCache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("keys", torch.zeros(2, 8, 4))
        self.register_buffer("values", torch.zeros(2, 8, 4))

    def forward(self, k, v, positions):
        self.keys.index_copy_(1, positions, k)
        self.values[:, positions] = v
        return (self.keys * self.values).sum(-1)


class ChainedViews(torch.nn.Module):
    def forward(self, x):
        x = x + 0
        x.view(2, -1)[:, 1:3].mul_(2)
        return x


class InplaceActivations(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.act = torch.nn.ReLU(inplace=True)
        self.linear = torch.nn.Linear(6, 6)

    def forward(self, x):
        y = self.linear(x)
        y.relu_()
        z = self.act(self.linear(y) - 0.1)
        z.clamp_(max=0.5)
        return z


class AliasesSeeWrites(torch.nn.Module):
    """Two views of one base: a write through one is seen by the other and by the base."""

    def forward(self, x):
        base = x * 1
        row = base[1]
        col = base[:, 2]
        row.fill_(7)
        col.zero_()
        base.t()[0].sub_(1)
        return base, row * 1, col * 1


class ReadViewsAfterWrite(torch.nn.Module):
    """Views taken before a write (expand, split pieces) read the written values afterwards."""

    def forward(self, x):
        y = x * 1
        first = y[0].expand(3, 4)
        top, bottom = y.split(2)
        y.add_(1)
        y[1].mul_(3)
        return first + 0, top + 0, bottom * 1, y


class ConstantSteps(torch.nn.Module):
    """Buffers written from constants only: each run reads the state the last one left."""

    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("seen", torch.zeros(1))

    def forward(self, x):
        self.steps.add_(1)
        self.seen.add_(x.shape[0])
        return x * self.steps, self.seen * 1


class DecayedWeight(torch.nn.Module):
    """A written buffer read as a linear weight and sliced: no transposed copy or folded slice of its default."""

    def __init__(self):
        super().__init__()
        self.register_buffer("weight", torch.randn(3, 4))
        self.register_buffer("table", torch.arange(6.0))

    def forward(self, x):
        self.weight.mul_(0.5)
        self.table.add_(1)
        return torch.nn.functional.linear(x, self.weight) + self.table[1:4]


class WritesThroughPieces(torch.nn.Module):
    """Writes into an input through the pieces of list views (chunk, split, split_with_sizes, unbind,
    tensor_split), one of them through what eval dropout gave back (the piece itself, in eager)."""

    def forward(self, x):
        piece = torch.nn.functional.dropout(x.chunk(2, dim=-1)[-1], 0.5, training=False)
        piece[1:].fill_(0.75)
        x.split([1, 3])[1].mul_(2)
        x.unbind(0)[2].add_(1)
        x.tensor_split(3, dim=1)[1].neg_()
        x.split(4, dim=1)[-1][0].zero_()
        return x * 1, piece + 0


def rand(*shape):
    return torch.randn(*shape)


CASES = {
    "loop_after_linear": (LoopAfterLinear, lambda: (rand(3, 4),)),
    "index_assign_int32": (IndexAssign, lambda: (rand(3, 5), torch.tensor([1, 3], dtype=torch.int32), rand(3, 2))),
    "buffer_counter": (BufferCounter, lambda: (rand(3, 2),)),
    "constant_steps": (ConstantSteps, lambda: (rand(3, 2),)),
    "decayed_weight": (DecayedWeight, lambda: (rand(2, 4),)),
    "copy_into_input": (CopyIntoInput, lambda: (rand(4), rand(4))),
    "kv_cache": (KVCache, lambda: (rand(2, 2, 4), rand(2, 2, 4), torch.tensor([5, 1]))),
    "chained_views": (ChainedViews, lambda: (rand(4, 3),)),
    "inplace_activations": (InplaceActivations, lambda: (rand(3, 6),)),
    "aliases_see_writes": (AliasesSeeWrites, lambda: (rand(3, 4),)),
    "read_views_after_write": (ReadViewsAfterWrite, lambda: (rand(4, 4),)),
    "writes_through_pieces": (WritesThroughPieces, lambda: (rand(4, 6),)),
}


def run_ort_stateful(model: onnx.ModelProto, feeds: dict, state: dict) -> tuple[list, dict]:
    """One onnxruntime run, feeding and collecting the state the model's metadata describes."""
    updates = json.loads({p.key: p.value for p in model.metadata_props}.get("aten2onnx.state_updates", "[]"))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    outputs = dict(zip(names, session.run(None, {**{k: v.numpy() for k, v in feeds.items()}, **state})))
    new_state = dict(state)
    for update in updates:  # buffers carry over; an input written in place is the caller's, fed anew each run
        if update.get("kind") != "input":
            new_state[update["input"]] = outputs[update["output"]]
    return [outputs[n] for n in names], new_state


@pytest.mark.parametrize("name", list(CASES))
def test_mutation_matches_eager_over_three_runs(name):
    factory, make_args = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    eager = copy.deepcopy(model)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    exported = aten2onnx.export(model, make_args(), fallback="error")
    assert exported.notes == []  # aten2onnx's own rewrite handled it
    onnx.checker.check_model(exported.model_proto, full_check=True)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])  # exporting did not touch the model's state
    ort_state: dict = {}
    for _ in range(3):
        args = make_args()
        eager_args = [a.clone() for a in args]
        ours_args = [a.clone() for a in args]
        ort_args = [a.clone() for a in args]
        with torch.no_grad():
            expected = flat_tensors(eager(*eager_args))
        got = flat_tensors(exported.run(*ours_args))
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e)
        for o, e in zip(ours_args, eager_args):  # inputs written in place, as eager writes them
            torch.testing.assert_close(o, e)
        outs, ort_state = run_ort_stateful(exported.model_proto, dict(zip(exported.input_names, ort_args)), ort_state)
        for g, e in zip(outs, expected):
            torch.testing.assert_close(torch.from_numpy(g), e)
    for key, value in eager.state_dict().items():  # buffers after three runs
        if key in ort_state:
            torch.testing.assert_close(torch.from_numpy(ort_state[key]), value)


def test_mutated_buffer_is_an_overridable_input_and_an_output():
    exported = aten2onnx.export(BufferCounter(), (rand(3, 2),))
    graph = exported.model_proto.graph
    assert "count" in {i.name for i in graph.input} and "count" in {i.name for i in graph.initializer}
    assert "count.updated" in {o.name for o in graph.output}
    assert exported.input_names == ["x"]


def test_runtime_session_carries_buffer_state_and_can_reset():
    from aten2onnx.runtime import InferenceSession

    exported = aten2onnx.export(BufferCounter(), (rand(3, 2),))
    session = InferenceSession(exported.model_proto)
    x = torch.ones(3, 2)
    firsts = [session.run_torch({"x": x})["count.updated"].item() for _ in range(3)]
    assert firsts == [6.0, 12.0, 18.0]
    session.reset_state()
    assert session.run_torch({"x": x})["count.updated"].item() == 6.0


def test_unhandled_aliasing_falls_back_to_torch_functionalization():
    class UnfoldWrite(torch.nn.Module):
        def forward(self, x):
            y = x * 1
            y.unfold(0, 2, 2)[1].add_(1)  # a write through unfold's windows: handled by torch's functionalization
            return y

    x = rand(4, 3)
    with pytest.warns(UserWarning, match="used torch's functionalization"):
        exported = aten2onnx.export(UnfoldWrite(), (x,))
    assert any("torch's functionalization" in note for note in exported.notes)
    torch.testing.assert_close(exported.run(x), UnfoldWrite()(x))


def test_writes_through_pieces_of_a_dynamic_dim_reach_the_input():
    """The pieces' extents along a dynamic dim are read from the pieces when run (fuzz_models seed 2711000,
    program 2713591: a write through eval dropout of a chunk went through torch's functionalization, which
    takes dropout for a copy, and never reached the input)."""
    model = WritesThroughPieces()
    exported = aten2onnx.export(model, (rand(4, 6),), dynamic_shapes={"x": {1: torch.export.Dim.AUTO}})
    assert not any("functionalization" in note for note in exported.notes)
    for columns in (6, 7, 8):  # split(4) gives two pieces at each (torch.export fixes the count)
        x = rand(4, columns)
        ours, eager = x.clone(), x.clone()
        want = model(eager)
        for got, expected in zip(exported.run(ours), want):
            torch.testing.assert_close(got, expected)
        torch.testing.assert_close(ours, eager)


def test_a_write_through_eval_dropout_is_never_lost_to_torch_functionalization():
    """Where the rewrite cannot follow the aliasing and an eval dropout's result (its input, in eager) is
    written, torch's functionalization would lose the write: our error, naming the dropout, instead."""
    class UnfoldThroughDropout(torch.nn.Module):
        def forward(self, x):
            torch.nn.functional.dropout(x, 0.5, training=False).unfold(0, 2, 2)[1].add_(1)
            return x * 1

    with pytest.raises(ExportError, match="dropout outside training gives back its input itself"):
        aten2onnx.export(UnfoldThroughDropout(), (rand(4, 3),))


# -- diagnosis -----------------------------------------------------------------------------------------

FLAG = 3
state = None


def line_of(fn, text: str) -> str:
    lines, first = inspect.getsourcelines(fn)
    return f"{__file__}:{first + next(i for i, line in enumerate(lines) if text in line)}"


class ItemScalar(torch.nn.Module):
    def forward(self, x):
        scale = x.abs().max().item()
        return x / scale


class DataBranch(torch.nn.Module):
    def forward(self, x):
        if (x > 0).all():
            return x + 1
        return x - 1


class ShapeFromItem(torch.nn.Module):
    def forward(self, x):
        n = int(x.sum())
        return torch.zeros(n)


class MaskIndex(torch.nn.Module):
    def forward(self, x):
        return x[x > 0]


class ReadsGlobal(torch.nn.Module):
    def forward(self, x):
        return x * FLAG


class AssignsGlobal(torch.nn.Module):
    def forward(self, x):
        global state
        state = x + 1
        return x * 2


def test_item_scalar_exports_right():
    exported = aten2onnx.export(ItemScalar(), (rand(5),))
    for _ in range(3):
        x = rand(5)
        torch.testing.assert_close(exported.run(x), ItemScalar()(x))


def test_data_dependent_branch_is_diagnosed_with_the_rewrite():
    with pytest.raises(DataDependentError) as info:
        aten2onnx.export(DataBranch(), (rand(4).abs(),))
    message = str(info.value)
    assert line_of(DataBranch.forward, "if (x > 0).all()") in message
    assert "torch.where" in message and "torch.cond" in message


@pytest.mark.parametrize("model, text, make", [
    (MaskIndex, "x[x > 0]", lambda: (rand(6),)),
    (ShapeFromItem, "int(x.sum())", lambda: (rand(4).abs() * 3,)),
])
def test_data_dependent_shapes_export_right_or_are_diagnosed(model, text, make):
    """Each pattern either gives eager's answer on other inputs too, or is an error naming the line."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exported = aten2onnx.export(model(), make())
    except DataDependentError as e:
        assert line_of(model.forward, text) in str(e)
        return
    for _ in range(3):
        args = make()
        torch.testing.assert_close(exported.run(*args), model()(*args))


def test_global_number_is_warned_as_baked_in():
    with pytest.warns(UserWarning, match="global 'FLAG' .* baked") as record:
        aten2onnx.export(ReadsGlobal(), (rand(3),))
    assert any(line_of(ReadsGlobal.forward, "FLAG") in str(w.message) for w in record)


def test_assigning_a_global_tensor_is_an_error_and_leaves_the_global_alone():
    with pytest.raises(GlobalStateError) as info:
        aten2onnx.export(AssignsGlobal(), (rand(3),))
    assert line_of(AssignsGlobal.forward, "state = x + 1") in str(info.value)
    assert "state.copy_(" in str(info.value)
    assert state is None


def test_an_input_named_input_can_be_written():
    """FX renames a placeholder that shadows a builtin (`input` -> `input_1`); the export goes by the
    input's own name."""

    class Scale(torch.nn.Module):
        def forward(self, input, type):
            input.mul_(2)
            return input + type

    x, y = torch.randn(3), torch.randn(3)
    exported = aten2onnx.export(Scale(), (x.clone(), y))
    assert exported.input_names == ["input", "type"]
    ours, theirs = x.clone(), x.clone()
    torch.testing.assert_close(exported.run(ours, y), Scale()(theirs, y))
    torch.testing.assert_close(ours, theirs)


# -- state the model keeps outside its state_dict ----------------------------------------------------------
COUNT = torch.zeros((), dtype=torch.long)  # the FX2ONNX documentation's pattern: a tensor made before the call
TOTAL = torch.zeros(3)


class AttributeSteps(torch.nn.Module):
    """A plain tensor attribute (not a registered buffer), float and int64, one in a submodule."""

    def __init__(self):
        super().__init__()
        self.steps = torch.zeros(())
        self.inner = torch.nn.Module()
        self.inner.seen = torch.zeros((), dtype=torch.long)

    def forward(self, x):
        self.steps.add_(1)
        self.inner.seen.add_(x.shape[0])
        return x * self.steps + self.inner.seen


class GlobalTotal(torch.nn.Module):
    def forward(self, x):
        TOTAL.add_(x)
        return x * TOTAL


class GlobalCopied(torch.nn.Module):
    """GlobalStateError's advice followed: `TOTAL.copy_(new_value)` instead of assigning the global."""

    def forward(self, x):
        TOTAL.copy_(TOTAL + x * 2)
        return TOTAL * 1


def count_tokens(x):
    COUNT.add_((x * 10).long().sum())
    return COUNT * 1


def closure_total():
    kept = torch.zeros(3)

    def step(x):
        kept.mul_(0.5).add_(x)
        return kept + 0

    return step, kept


STATE = {
    # name: (make() -> (model, [(state name, the user's tensor)]), the state's ONNX names)
    "attribute": (lambda: (lambda m: (m, [m.steps, m.inner.seen]))(AttributeSteps()), ["steps", "inner.seen"]),
    "global": (lambda: (GlobalTotal(), [TOTAL]), [f"{__name__}.TOTAL"]),
    "global_copy": (lambda: (GlobalCopied(), [TOTAL]), [f"{__name__}.TOTAL"]),
    "global_in_function": (lambda: (count_tokens, [COUNT]), [f"{__name__}.COUNT"]),
    "closure": (lambda: (lambda fn_kept: (fn_kept[0], [fn_kept[1]]))(closure_total()), ["closure_total.<locals>.step.kept"]),
}


@pytest.mark.parametrize("name", list(STATE))
def test_state_in_any_tensor_the_model_keeps_accumulates_as_eager(name):
    """A tensor the model writes that outlives the call, wherever it lives (a plain attribute, a global, a
    closure), is a state input with its current value as default and a `<name>.updated` output named by where
    it lives; three calls accumulate as eager's in ExportedModel.run, a fresh aten2onnx.runtime session and
    onnxruntime fed the `.updated` outputs, and the export leaves the user's tensors as they were (each was an
    InternalError or an error asking for a buffer before)."""
    from aten2onnx.runtime import InferenceSession

    make, names = STATE[name]
    model, kept = make()
    originals = [t.clone() for t in kept]
    try:
        exported = aten2onnx.export(model, (torch.ones(3),), fallback="error")
        assert all(torch.equal(t, o) for t, o in zip(kept, originals))  # the export changed none of them
        graph = exported.model_proto.graph
        assert {f"{n}.updated" for n in names} <= {o.name for o in graph.output}
        assert set(names) <= {i.name for i in graph.input} & {i.name for i in graph.initializer}
        session = InferenceSession(exported.model_proto)
        ort_state: dict = {}
        for step in range(3):
            x = torch.randn(3) + step
            want = model(x.clone())  # eager writes the user's own tensors, from the same start
            torch.testing.assert_close(exported.run(x.clone()), want)
            ours = session.run_torch({exported.input_names[0]: x.clone()})
            torch.testing.assert_close(ours[exported.output_names[0]], want)
            outs, ort_state = run_ort_stateful(exported.model_proto, {exported.input_names[0]: x.clone()}, ort_state)
            torch.testing.assert_close(torch.from_numpy(outs[0]), want)
            for state_name, tensor in zip(names, kept):
                torch.testing.assert_close(torch.from_numpy(ort_state[state_name]), tensor)
    finally:
        with torch.no_grad():
            for t, o in zip(kept, originals):
                t.copy_(o)


def test_attribute_state_under_exact_mode_is_bitwise_over_three_calls():
    model = AttributeSteps()
    exported = aten2onnx.export(model, (torch.ones(3),), exact=True)
    reference = copy.deepcopy(model)
    for _ in range(3):
        x = torch.randn(3)
        assert torch.equal(exported.run(x), reference(x))


class TrainedWithSteps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)
        self.steps = torch.zeros(())

    def forward(self, x):
        self.steps.add_(1)
        return (self.lin(x) * self.steps).square().mean()


def test_attribute_state_in_a_training_export_accumulates_with_gradients_as_autograd():
    """torch's joint export takes written buffers only (it raised on the written constant): a plain attribute
    the loss writes is state there as a buffer is, `steps.updated`, carried across calls."""
    model = TrainedWithSteps()
    trained = aten2onnx.export_training(model, (torch.randn(2, 3),))
    assert "steps.updated" in {o.name for o in trained.model_proto.graph.output}
    assert torch.equal(model.steps, torch.zeros(()))
    reference = copy.deepcopy(model)
    for _ in range(3):
        x = torch.randn(2, 3)
        loss, grads = trained.run(x)
        reference.zero_grad()
        want = reference(x)
        want.backward()
        torch.testing.assert_close(loss, want.detach())
        for name, p in reference.named_parameters():
            torch.testing.assert_close(grads[name], p.grad)
