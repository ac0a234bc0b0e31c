"""Sweep the in-place variant of every OpInfo of torch's op database that has one through aten2onnx, writing
five kinds of target: the model's input, a view of it, a buffer, a plain tensor attribute and a global tensor.

    python scripts/inplace_sweep.py                                    # every op, every target
    python scripts/inplace_sweep.py --ops add,index_copy --targets input,view --out inplace.md -v

Each op takes its first float32 sample (`op.sample_inputs("cpu", torch.float32)`) whose input is a tensor of
at least one dim with at least 2 elements along dim 0. An op whose in-place variant gives different results
under two seeds (`uniform_`, dropout in training) is random and left out (listed, never counted). Each
(op, target) cell is a model whose forward runs `op.inplace_variant(target, *args, **kwargs)` and returns
the target after the write (and what the target does not hold: the view's base, the state's value before the
write, the input `x` itself):

- input: the target is forward's input `x`;
- view: the target is `x[1:]`, `x` being the sample input with its first row put in front once more, so
  the view has the sample's own shape and values (the sample's other arguments fit it as they fit the
  sample) and the row before it must come out unwritten;
- buffer: a registered buffer, initialised from the sample input; attribute: a plain tensor attribute
  (`self.state = sample.input.clone()`); global: `GLOBAL_STATE`, a tensor of this module. The forward
  also takes `x` (the sample input), and returns `x * 2`.

The sample's tensor arguments are further inputs of forward; its other arguments are constants. (No tensor
argument has to be a constant: torch.export takes an index or mask tensor as an input as well.) Each model
is exported at opset 18 with dim 0 of `x` dynamic (`Dim.AUTO`; torch.export keeps it static where the
arguments' shapes fix it), eager and the export running on copies of every tensor. A cell is:

- right: the outputs and the written tensor (the input `x` after one `ExportedModel.run`, the state as the
  second run's outputs read it) equal eager's in aten2onnx.runtime (torch.testing.assert_close's default
  tolerances, NaN equal to NaN: an op may make NaN where eager does), and the export left the user's
  tensors (the state, `x`, the arguments) as they were;
- our error: the export raised one of our errors (aten2onnx.Aten2OnnxError, not InternalError) whose
  message names a line of this file's models (`file:line`);
- wrong: <why>: a result differs from eager's, or the export changed one of the user's tensors;
- escape: <exception>: anything else raised: an InternalError, any other exception, one of our errors that
  does not name the model's line, or an error raised while running the export (every such error here is a
  failure of an export that was accepted); also a cell over --timeout;
- eager refuses: the in-place variant raises in eager on the sample (a result dtype the input cannot
  hold, an op that takes no float32) or in the cell's eager model.

The last line printed is the summary: `N ops, K cells: right R, our error E, wrong W, escape X, eager
refuses Z`. --out FILE writes a markdown list of every cell that is not right, with its detail.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import inspect
import os
import re
import signal
import sys
import warnings
from typing import Any, Callable
from unittest import mock

import torch
import torch.utils._pytree as pytree

TARGETS = ("input", "view", "buffer", "attribute", "global")
KINDS = ("right", "our error", "wrong", "escape", "eager refuses")
SERIOUSNESS = ("wrong", "escape", "our error", "eager refuses")  # the order --out lists them in: silent first
OPSET = 18

GLOBAL_STATE = torch.zeros(0)  # the "global" target: each cell puts its tensor here (holding_global)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One cell: kind (KINDS), detail (the exception, mismatch or reason; empty for right)."""

    kind: str
    detail: str = ""

    @property
    def text(self) -> str:
        return f"{self.kind}: {self.detail}" if self.detail else self.kind


@dataclasses.dataclass(frozen=True)
class Case:
    """One op's sample taken apart: the input, the tensors of its args/kwargs (forward's further inputs), and
    what rebuilds (args, kwargs) from them."""

    inplace: Callable[..., Any]
    input: torch.Tensor
    tensors: tuple[torch.Tensor, ...]
    constants: tuple[Any, ...]
    positions: tuple[int, ...]
    spec: Any

    def arguments(self, tensors: tuple) -> tuple[tuple, dict]:
        """The sample's (args, kwargs) with `tensors` in the places of its tensors."""
        values = list(self.constants)
        for i, t in zip(self.positions, tensors):
            values[i] = t
        return pytree.tree_unflatten(values, self.spec)


# -- the models: every line the export may name is in here ------------------------------------------


class Writes(torch.nn.Module):
    """Applies the case's in-place variant to a target, the sample's arguments rebuilt from forward's tensors."""

    def __init__(self, case: Case) -> None:
        super().__init__()
        self.case = case

    def write(self, target: torch.Tensor, tensors: tuple) -> None:
        args, kwargs = self.case.arguments(tensors)
        self.case.inplace(target, *args, **kwargs)


class WriteInput(Writes):
    OUTPUTS = ("x after the write", "x before it")

    def forward(self, x, *tensors):
        before = x * 1
        self.write(x, tensors)
        return x * 1, before


class WriteView(Writes):
    OUTPUTS = ("the view after the write", "x, the view's base")

    def forward(self, x, *tensors):
        view = x[1:]
        self.write(view, tensors)
        return view * 1, x * 1


class WriteBuffer(Writes):
    OUTPUTS = ("the state after the write", "the state before it", "x * 2")

    def __init__(self, case: Case) -> None:
        super().__init__(case)
        self.register_buffer("state", case.input.clone())

    def forward(self, x, *tensors):
        before = self.state * 1
        self.write(self.state, tensors)
        return self.state * 1, before, x * 2


class WriteAttribute(Writes):
    OUTPUTS = WriteBuffer.OUTPUTS

    def __init__(self, case: Case) -> None:
        super().__init__(case)
        self.state = case.input.clone()

    def forward(self, x, *tensors):
        before = self.state * 1
        self.write(self.state, tensors)
        return self.state * 1, before, x * 2


class WriteGlobal(Writes):
    OUTPUTS = WriteBuffer.OUTPUTS

    def forward(self, x, *tensors):
        before = GLOBAL_STATE * 1
        self.write(GLOBAL_STATE, tensors)
        return GLOBAL_STATE * 1, before, x * 2


MODELS = {"input": WriteInput, "view": WriteView, "buffer": WriteBuffer, "attribute": WriteAttribute,
          "global": WriteGlobal}


def model_lines() -> set[int]:
    """The lines of this file an error may name as the user's: those of the model classes."""
    lines = set()
    for cls in (Writes, *MODELS.values()):
        source, first = inspect.getsourcelines(cls)
        lines.update(range(first, first + len(source)))
    return lines


MODEL_LINES = model_lines()


@contextlib.contextmanager
def holding_global(tensor: torch.Tensor):
    """GLOBAL_STATE is `tensor` inside the block, and what it was after."""
    global GLOBAL_STATE
    kept, GLOBAL_STATE = GLOBAL_STATE, tensor
    try:
        yield
    finally:
        GLOBAL_STATE = kept


# -- the ops --------------------------------------------------------------------------------------


def opinfo_name(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def inplace_ops(names: list[str] | None = None) -> list:
    """The OpInfos with an in-place variant, in op_db's order (only those named, by name or name.variant)."""
    from torch.testing._internal.common_methods_invocations import op_db

    return [op for op in op_db if op.inplace_variant is not None
            and (not names or opinfo_name(op) in names or op.name in names)]


def first_sample(op):
    """The first float32 sample whose input is a tensor with at least 2 elements along dim 0, or None."""
    torch.manual_seed(0)
    for sample in op.sample_inputs("cpu", torch.float32):
        if isinstance(sample.input, torch.Tensor) and sample.input.dim() >= 1 and sample.input.shape[0] >= 2:
            return sample
    return None


def make_case(op, sample) -> Case:
    leaves, spec = pytree.tree_flatten((tuple(sample.args), dict(sample.kwargs)))
    positions = tuple(i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor))
    return Case(op.inplace_variant, sample.input.detach().clone(),
                tuple(leaves[i].detach().clone() for i in positions),
                tuple(None if i in positions else leaf for i, leaf in enumerate(leaves)), positions, spec)


def apply_once(case: Case, seed: int) -> torch.Tensor:
    """The sample input after the in-place variant, on copies, drawing from `seed`: some OpInfo variants
    reseed torch's generator themselves (torch's wrapper_set_seed), so that eager repeats itself even where
    the sample draws (rrelu in training); here their reseeding is made a no-op."""
    target = case.input.clone()
    args, kwargs = case.arguments(copies(case.tensors))
    torch.default_generator.manual_seed(seed)
    with mock.patch.object(torch, "manual_seed", lambda seed: None), torch.no_grad(), quiet():
        case.inplace(target, *args, **kwargs)
    return target


def screen(case: Case) -> str | None:
    """Why no cell of the case can be checked: 'eager refuses: ...', 'random', or None."""
    try:
        first, second = apply_once(case, 0), apply_once(case, 1)
    except Exception as e:
        return f"eager refuses: {short(e)}"
    if first.shape != second.shape or not torch.equal(first.nan_to_num(), second.nan_to_num()):
        return "random"
    return None


@contextlib.contextmanager
def quiet():
    """Warnings off: the OpInfos' own (index_reduce is in beta, dropout2d takes 3-d input as 1-d) and the
    export's (fallback ops, narrowed dims): the outcome is judged on results alone."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# -- one cell -------------------------------------------------------------------------------------


def short(e: BaseException, n: int = 300) -> str:
    """The exception's type and first two lines (CaptureError's first is a heading, its second torch's error)."""
    text = " ".join(line.strip() for line in str(e).strip().splitlines()[:2])
    return f"{type(e).__name__}: {text}"[:n]


def names_model_line(e: BaseException) -> bool:
    """Whether the message names a line of this file's models (file:line)."""
    here = re.escape(os.path.abspath(__file__))
    return any(int(m) in MODEL_LINES for m in re.findall(here + r":(\d+)", str(e)))


def export_failure(e: BaseException) -> Outcome:
    import aten2onnx

    if isinstance(e, aten2onnx.Aten2OnnxError) and not isinstance(e, aten2onnx.InternalError):
        if names_model_line(e):
            return Outcome("our error", short(e))
        return Outcome("escape", short(e) + " (names no line of the model)")
    cause = e.__cause__ if isinstance(e, aten2onnx.InternalError) and e.__cause__ is not None else None
    return Outcome("escape", short(e) + (f" <- {short(cause)}" if cause is not None else ""))


def mismatch(got: Any, want: Any, names: tuple[str, ...], when: str) -> str | None:
    """Why got is not want (the differing one by name, assert_close's first lines), or None."""
    got, want = list(got), list(want)
    if len(got) != len(want):
        return f"{when}: {len(got)} outputs, eager has {len(want)}"
    for name, g, w in zip(names, got, want):
        try:
            torch.testing.assert_close(torch.as_tensor(g), w, equal_nan=True)
        except AssertionError as e:
            return f"{when}, {name}: " + " ".join(line for line in str(e).split("\n")[:4] if line)[:300]
    return None


def unchanged(before: list[torch.Tensor], after: list[torch.Tensor]) -> bool:
    return all(b.shape == a.shape and torch.equal(b.nan_to_num(), a.nan_to_num()) for b, a in zip(before, after))


def inputs_for(case: Case, target: str) -> tuple[torch.Tensor, ...]:
    x = torch.cat([case.input[:1], case.input]) if target == "view" else case.input
    return (x.clone(), *[t.clone() for t in case.tensors])


def copies(inputs: tuple) -> tuple:
    return tuple(t.clone() for t in inputs)


def state_of(model: torch.nn.Module, target: str) -> list[torch.Tensor]:
    """The state tensor the model writes (none for input and view)."""
    if target == "global":
        return [GLOBAL_STATE]
    return [model.state] if target in ("buffer", "attribute") else []


def calls(target: str) -> int:
    """State carries over calls: two show it; an input is written once per call."""
    return 2 if target in ("buffer", "attribute", "global") else 1


def run_eager(case: Case, target: str, inputs: tuple) -> tuple[list, tuple]:
    """(each call's outputs, the inputs after the last call), on a model and a global of their own."""
    model = MODELS[target](case).eval()
    given = copies(inputs)
    with holding_global(case.input.clone()), torch.no_grad(), quiet():
        outputs = [model(*(given if k == calls(target) - 1 else copies(inputs))) for k in range(calls(target))]
    return outputs, given


def run_cell(case: Case, target: str) -> Outcome:
    """Export the case's model for `target` and check it (the module docstring's outcomes)."""
    import aten2onnx
    from torch.export import Dim

    inputs = inputs_for(case, target)
    try:
        want, want_inputs = run_eager(case, target, inputs)
    except Exception as e:
        return Outcome("eager refuses", short(e))
    model = MODELS[target](case).eval()
    user = inputs_for(case, target)
    with holding_global(case.input.clone()):
        kept = state_of(model, target)
        before = [t.clone() for t in [*kept, *user]]
        spec = {"x": {0: Dim.AUTO}, **({"tensors": tuple(None for _ in case.tensors)} if case.tensors else {})}
        try:
            with quiet():
                exported = aten2onnx.export(model, user, opset=OPSET, dynamic_shapes=spec)
        except Exception as e:
            return export_failure(e)
        if not unchanged(before, [*kept, *user]):
            return Outcome("wrong", "aten2onnx.export changed the user's tensors")
    return check_runs(exported, inputs, want, want_inputs, MODELS[target].OUTPUTS)


def check_runs(exported, inputs: tuple, want: list, want_inputs: tuple, outputs: tuple[str, ...]) -> Outcome:
    """Run the export as often as eager ran; its outputs (named `outputs`), and the inputs after the last
    run, against eager's."""
    given = copies(inputs)
    for k, expected in enumerate(want):
        try:
            with quiet():
                got = exported.run(*(given if k == len(want) - 1 else copies(inputs)))
        except Exception as e:
            return Outcome("escape", f"run: {short(e)}")
        why = mismatch(got, expected, outputs, f"call {k + 1}")
        if why:
            return Outcome("wrong", why)
    names = ("input x", *(f"tensor argument {i + 1}" for i in range(len(given) - 1)))
    why = mismatch(given, want_inputs, names, "after the run")
    return Outcome("wrong", why) if why else Outcome("right")


class Timeout(BaseException):
    """A cell over --timeout: a BaseException, so that no `except Exception` on the way takes it for the op's."""


def _alarm(signum, frame):
    raise Timeout()


def sweep_op(op, targets: tuple[str, ...] = TARGETS, timeout: int = 300) -> dict[str, Outcome] | str:
    """{target: Outcome} for one OpInfo, or why it has no cells ('no sample ...', 'random')."""
    sample = first_sample(op)
    if sample is None:
        return "no sample with at least 2 elements along dim 0"
    case = make_case(op, sample)
    reason = screen(case)
    if reason == "random":
        return reason
    if reason:
        return {target: Outcome("eager refuses", reason.removeprefix("eager refuses: ")) for target in targets}
    cells = {}
    for target in targets:
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(timeout)
        try:
            cells[target] = run_cell(case, target)
        except Timeout:
            cells[target] = Outcome("escape", f"timeout: over {timeout}s")
        finally:
            signal.alarm(0)
    return cells


# -- the report -----------------------------------------------------------------------------------


def summary(results: dict[str, dict[str, Outcome]]) -> str:
    counts = collections.Counter(c.kind for cells in results.values() for c in cells.values())
    return (f"{len(results)} ops, {sum(counts.values())} cells: "
            + ", ".join(f"{kind} {counts[kind]}" for kind in KINDS))


def markdown(results: dict[str, dict[str, Outcome]], left_out: dict[str, str], command: str) -> str:
    lines = ["# In-place sweep", "", f"`{command}`, torch {torch.__version__}, opset {OPSET}.",
             "", summary(results), ""]
    for kind in SERIOUSNESS:
        cells = [(name, target, c) for name, by_target in results.items() for target, c in by_target.items()
                 if c.kind == kind]
        if cells:
            lines += [f"## {kind} ({len(cells)})", ""]
            lines += [f"- `{name}` / {target}: {c.detail}" for name, target, c in cells]
            lines.append("")
    if left_out:
        lines += [f"## left out ({len(left_out)})", ""]
        lines += [f"- `{name}`: {why}" for name, why in left_out.items()]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default="", help="comma-separated OpInfo names (name or name.variant)")
    parser.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated, of {','.join(TARGETS)}")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    parser.add_argument("--out", default="", help="write the cells that are not right as a markdown list here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every cell that is not right")
    args = parser.parse_args(argv)
    targets = tuple(t for t in args.targets.split(",") if t)
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        parser.error(f"--targets: unknown {unknown}; choose from {','.join(TARGETS)}")
    names = [n for n in args.ops.split(",") if n]
    ops = inplace_ops(names)
    if names and not ops:
        parser.error(f"--ops: no OpInfo with an in-place variant is named {names}")
    torch.set_num_threads(1)
    results: dict[str, dict[str, Outcome]] = {}
    left_out: dict[str, str] = {}
    for op in ops:
        cells = sweep_op(op, targets, args.timeout)
        if isinstance(cells, str):
            left_out[opinfo_name(op)] = cells
            continue
        results[opinfo_name(op)] = cells
        if args.verbose:
            for target, c in cells.items():
                if c.kind != "right":
                    print(f"{opinfo_name(op)} / {target}: {c.text}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            command = " ".join(["python scripts/inplace_sweep.py", *(sys.argv[1:] if argv is None else argv)])
            f.write(markdown(results, left_out, command))
    if left_out:
        print("left out: " + ", ".join(f"{name} ({why})" for name, why in left_out.items()))
    print(summary(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
