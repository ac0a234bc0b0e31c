"""Training exports with the optimizer step (`export_training(..., optimizer=...)`): several steps of
TrainingModel.step, and of onnxruntime fed its own `.updated` outputs, leave the parameters, buffers and
optimizer states where eager's `loss.backward(); optimizer.step()` leaves them (bitwise under
exact=True); the user's model and optimizer untouched."""

from __future__ import annotations

import copy
import dataclasses
import json
import warnings
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F

import aten2onnx
from aten2onnx import ArgumentError
from conftest import run_ort

STEPS = 5


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))


def cnn() -> torch.nn.Module:
    """Batch norm's running statistics are written by the forward, the parameters by the step. (No conv
    bias: batch norm cancels it, so its gradient is rounding noise, which Adam scales up to lr.)"""
    return torch.nn.Sequential(torch.nn.Conv2d(3, 6, 3, stride=2, groups=3, bias=False), torch.nn.BatchNorm2d(6), torch.nn.ReLU(),
                               torch.nn.Flatten(), torch.nn.Linear(6 * 3 * 3, 4))


@dataclasses.dataclass
class Case:
    name: str
    optimizer: Callable[[Any], torch.optim.Optimizer]  # takes model.parameters() or param groups
    model: Callable[[], torch.nn.Module] = mlp
    groups: Callable[[torch.nn.Module], Any] | None = None  # param groups, instead of model.parameters()


def two_groups(model: torch.nn.Module) -> list[dict]:
    return [{"params": model[0].parameters(), "lr": 0.05}, {"params": model[2].parameters()}]


CASES = [
    Case("sgd", lambda p: torch.optim.SGD(p, lr=0.1)),
    Case("sgd_momentum", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
    Case("sgd_momentum_dampening_weight_decay", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.8, dampening=0.3,
                                                                          weight_decay=0.01)),
    Case("sgd_nesterov_maximize", lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    Case("sgd_momentum_cnn_batch_norm", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), model=cnn),
    Case("adam", lambda p: torch.optim.Adam(p, lr=0.01)),
    Case("adam_weight_decay_amsgrad", lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.1, amsgrad=True)),
    Case("adamw", lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
    Case("adamw_cnn_batch_norm", lambda p: torch.optim.AdamW(p, lr=0.01), model=cnn),
    Case("adam_param_groups", lambda p: torch.optim.Adam(p, lr=0.01), groups=two_groups),
]
IDS = [case.name for case in CASES]


def data(case: Case, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    shape = (4, 3, 7, 7) if case.model is cnn else (8, 6)
    return torch.randn(shape, generator=gen), torch.randint(0, 4, (shape[0],), generator=gen)


def made(case: Case) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = case.model()
    return model, case.optimizer(case.groups(model) if case.groups else model.parameters())


def exported(model: torch.nn.Module, optimizer: torch.optim.Optimizer, case: Case, **options: Any):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export_training(model, (data(case, 0)[0],), targets=(data(case, 0)[1],),
                                         loss_fn=F.cross_entropy, optimizer=optimizer, **options)


def eager_training(model: torch.nn.Module, case: Case, steps: int) -> tuple[list[torch.Tensor], torch.nn.Module,
                                                                              torch.optim.Optimizer]:
    """Eager's losses over `steps` steps (batch i is data(case, i)), on copies of the model and optimizer."""
    reference = copy.deepcopy(model).train()
    optimizer = case.optimizer(case.groups(reference) if case.groups else reference.parameters())
    losses = []
    for i in range(steps):
        x, y = data(case, i)
        optimizer.zero_grad()
        loss = F.cross_entropy(reference(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return losses, reference, optimizer


def optimizer_states(reference: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, dict[str, torch.Tensor]]:
    by_id = {id(p): name for name, p in reference.named_parameters()}
    return {by_id[id(p)]: state for p, state in optimizer.state.items()}


def assert_same(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], exact: bool, what: str) -> None:
    assert sorted(got) == sorted(want), what
    for name, value in want.items():
        if exact:
            assert torch.equal(got[name], value), f"{what} {name}: not bitwise eager's"
        else:
            torch.testing.assert_close(got[name], value, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what} {name}: {m}")


@pytest.mark.parametrize("exact", [False, True], ids=["default", "exact"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_steps_equal_eager_training(case, exact):
    model, optimizer = made(case)
    trained = exported(model, optimizer, case, exact=exact)
    assert not trained.fallback_ops
    losses = [trained.step(*data(case, i)) for i in range(STEPS)]
    want_losses, reference, reference_optimizer = eager_training(model, case, STEPS)
    assert_same(dict(enumerate(losses)), dict(enumerate(want_losses)), exact, "loss")
    assert_same(trained.state_dict(), reference.state_dict(), exact, "state_dict")
    want_states = optimizer_states(reference, reference_optimizer)
    got_states = trained.optimizer_state()
    assert sorted(got_states) == sorted(want_states)
    for name, want in want_states.items():
        # torch keeps no step count for SGD: the export's counts its steps
        assert_same({k: v for k, v in got_states[name].items() if k in want}, want, exact, f"{name} state")


@pytest.mark.parametrize("case", [c for c in CASES if c.model is mlp][:2] + CASES[5:8:2], ids=lambda c: c.name)
def test_onnxruntime_fed_its_updated_outputs_trains_as_eager(case):
    model, optimizer = made(case)
    trained = exported(model, optimizer, case)
    proto = trained.model_proto
    updates = json.loads(next(e.value for e in proto.metadata_props if e.key == "aten2onnx.state_updates"))
    outputs = [o.name for o in proto.graph.output]
    state: dict[str, torch.Tensor] = {}
    for i in range(STEPS):
        results = run_ort(proto, {**dict(zip(trained.input_names, data(case, i))), **state})
        state = {u["input"]: torch.from_numpy(results[outputs.index(u["output"])]) for u in updates}
    _, reference, _ = eager_training(model, case, STEPS)
    assert_same({k: v for k, v in state.items() if k in reference.state_dict()}, reference.state_dict(), False,
                "onnxruntime")


def test_run_gives_gradients_without_stepping():
    case = CASES[1]
    model, optimizer = made(case)
    trained = exported(model, optimizer, case)
    x, y = data(case, 0)
    trained.run(x, y)
    loss, grads = trained.run(x, y)  # twice: the parameters have not moved
    reference = copy.deepcopy(model)
    want = F.cross_entropy(reference(x), y)
    want.backward()
    torch.testing.assert_close(loss, want.detach(), rtol=1e-4, atol=1e-5)
    for name, p in reference.named_parameters():
        torch.testing.assert_close(grads[name], p.grad, rtol=1e-4, atol=1e-5)
    assert_same(trained.state_dict(), model.state_dict(), True, "state_dict after run()")
    assert all(torch.equal(s["momentum_buffer"], torch.zeros_like(s["momentum_buffer"]))
               for s in trained.optimizer_state().values())


def test_continues_from_the_optimizers_current_state():
    """An optimizer that has stepped already: the graph starts from its state (Adam's step count and
    moments, SGD's existing momentum buffer), as eager's next steps do."""
    for case in (CASES[1], CASES[6]):
        model, optimizer = made(case)
        for i in range(2):
            optimizer.zero_grad()
            F.cross_entropy(model(data(case, 10 + i)[0]), data(case, 10 + i)[1]).backward()
            optimizer.step()
        for p in model.parameters():
            p.grad = None
        trained = exported(model, optimizer, case, exact=True)
        reference, reference_optimizer = copy.deepcopy(model), None
        reference_optimizer = case.optimizer(reference.parameters())
        reference_optimizer.load_state_dict(optimizer.state_dict())
        for i in range(3):
            trained.step(*data(case, i))
            reference_optimizer.zero_grad()
            F.cross_entropy(reference(data(case, i)[0]), data(case, i)[1]).backward()
            reference_optimizer.step()
        assert_same(trained.state_dict(), reference.state_dict(), True, case.name)


def test_the_users_model_and_optimizer_are_left_as_they_were():
    case = CASES[6]
    model, optimizer = made(case)
    optimizer.zero_grad()
    F.cross_entropy(model(data(case, 9)[0]), data(case, 9)[1]).backward()
    optimizer.step()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    state_before = copy.deepcopy(optimizer.state_dict())
    grads_before = {name: p.grad.clone() for name, p in model.named_parameters()}
    trained = exported(model, optimizer, case)
    for i in range(2):
        trained.step(*data(case, i))
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key]), key
    for name, p in model.named_parameters():
        assert torch.equal(p.grad, grads_before[name]), name
    after = optimizer.state_dict()
    assert after["param_groups"] == state_before["param_groups"]
    for index, state in state_before["state"].items():
        for key, value in state.items():
            assert torch.equal(after["state"][index][key], value), (index, key)


def test_outputs_inputs_and_metadata():
    case = CASES[9]
    model, optimizer = made(case)
    trained = exported(model, optimizer, case)
    proto = trained.model_proto
    params = [name for name, _ in model.named_parameters()]
    states = ["exp_avg", "exp_avg_sq", "step"]
    outputs = [o.name for o in proto.graph.output]
    assert outputs[:1 + len(params)] == ["loss"] + [f"{p}.grad" for p in params]
    assert sorted(outputs[1 + len(params):]) == sorted(
        [f"{p}.updated" for p in params] + [f"{p}.{s}.updated" for p in params for s in states])
    inputs = {i.name for i in proto.graph.input}
    assert {f"{p}.{s}" for p in params for s in states} | set(params) <= inputs
    meta = json.loads(next(e.value for e in proto.metadata_props if e.key == "aten2onnx.optimizer"))
    assert meta["optimizer"] == "Adam"
    assert meta["parameters"]["0.weight"]["hyperparameters"]["lr"] == 0.05
    assert meta["parameters"]["2.weight"]["hyperparameters"]["lr"] == 0.01
    assert meta["parameters"]["2.bias"]["states"]["exp_avg"] == "2.bias.exp_avg"


def test_parameters_outside_the_optimizer_are_not_updated():
    torch.manual_seed(0)
    model = mlp()
    model[0].weight.requires_grad_(False)  # frozen: no gradient, no update
    optimizer = torch.optim.SGD(model[2].parameters(), lr=0.1, momentum=0.9)  # 0.bias has a gradient, no update
    case = Case("partial", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    trained = exported(model, optimizer, case, exact=True)
    assert "0.bias" in trained.parameter_names and "0.weight" not in trained.parameter_names
    reference = copy.deepcopy(model)
    reference_optimizer = torch.optim.SGD(reference[2].parameters(), lr=0.1, momentum=0.9)
    for i in range(3):
        trained.step(*data(case, i))
        reference_optimizer.zero_grad()
        F.cross_entropy(reference(data(case, i)[0]), data(case, i)[1]).backward()
        reference_optimizer.step()
    assert_same(trained.state_dict(), reference.state_dict(), True, "state_dict")
    assert torch.equal(trained.state_dict()["0.bias"], model[0].bias)


@pytest.mark.parametrize(("optimizer", "match"), [
    (lambda p: torch.optim.RMSprop(p, lr=0.1), "applies torch.optim.SGD, Adam and AdamW"),
    (lambda p: torch.optim.Adam(p, lr=0.1, foreach=True), "foreach=True"),
    (lambda p: torch.optim.Adam(p, lr=0.1, fused=True), "fused=True"),
    (lambda p: torch.optim.SGD(list(p) + [torch.nn.Parameter(torch.ones(2))], lr=0.1), "not a parameter of the model"),
    (lambda p: torch.optim.Adam(p, lr=torch.tensor(0.1, requires_grad=True)), "cannot be a constant"),
])
def test_refusals(optimizer, match):
    model = mlp()
    with pytest.raises(ArgumentError, match=match):
        exported(model, optimizer(model.parameters()), Case("refused", optimizer))


def test_step_needs_an_optimizer():
    case = CASES[0]
    model, _ = made(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trained = aten2onnx.export_training(model, (data(case, 0)[0],), targets=(data(case, 0)[1],),
                                            loss_fn=F.cross_entropy)
    with pytest.raises(ArgumentError, match="no optimizer step"):
        trained.step(*data(case, 0))
    assert trained.optimizer is None and trained.optimizer_state() == {}


def test_dropout_steps_replay_torchs_generator_under_exact_mode():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.ReLU(), torch.nn.Dropout(0.4), torch.nn.Linear(32, 4))
    case = Case("dropout", lambda p: torch.optim.Adam(p, lr=0.01))
    trained = exported(model, case.optimizer(model.parameters()), case, exact=True)
    reference = copy.deepcopy(model)
    reference_optimizer = case.optimizer(reference.parameters())
    for i in range(3):
        torch.manual_seed(100 + i)
        loss = trained.step(*data(case, i))
        torch.manual_seed(100 + i)
        reference_optimizer.zero_grad()
        want = F.cross_entropy(reference(data(case, i)[0]), data(case, i)[1])
        want.backward()
        reference_optimizer.step()
        assert torch.equal(loss, want.detach()), i
    assert_same(trained.state_dict(), reference.state_dict(), True, "state_dict")
