"""Random small models for differential testing of the exporter, and the check that runs them.

A `Program` (testing/program.py) is a model written as data: inputs of random dtypes and shapes (dim 0
possibly dynamic), buffers, weights, and a list of Python statements over them drawn from an op table
(testing/generation.py: elementwise math, Python scalars, reductions, shapes and views, indexing,
matmul/conv/norms, casts, in-place writes through views into intermediates, inputs and buffers). It
prints as the Python source of its module. `check_program`, here, exports it at each opset and compares
eager PyTorch with onnxruntime and aten2onnx.runtime over several runs (state carried, fresh values,
fresh sizes of dynamic dims): the export must match or raise our error. `shrink` makes a failing
program smaller.

    from hypothesis import given
    from aten2onnx.testing import check_program, programs

    @given(programs())
    def test_exporter(program):
        check_program(program)

Values are chosen so that eager and an exported model can agree to the last bit where it matters:
floats start on a grid of quarters, and ops that jump at a threshold (floor, comparisons, argmax,
casts to integers) only take values every op before them computed exactly. A drawn statement that
eager PyTorch rejects is drawn again, so every program runs in eager.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode

import aten2onnx
from aten2onnx._compare import difference, ort_can_run, ort_session
from aten2onnx._onnx_graphs import graphs
from aten2onnx.testing.generation import generate, programs  # noqa: F401  (this module's API, with the checks)
from aten2onnx.testing.program import Program

__all__ = ["Outcome", "Program", "ProgramMismatch", "check_program", "generate", "programs", "shrink"]

OPSETS = (18, 9, 11, 13, 17, 20, 23, 26)
# Wider than DEFAULT_TOLERANCES: a program chains several ops, each rounding on its own, and a norm
# divides the rounding of a mean by sqrt(eps).
TOLERANCES = {torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 5e-2), torch.float32: (1e-4, 1e-4),
              torch.float64: (1e-7, 1e-9)}


# -- checking -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one export of a program did. status: "match"; "refused" (our error, allowed; also a run that fails on inputs outside what the export
    warned torch.export assumed, NarrowedExportWarning); "deviation" (an
    onnxruntime disagreement known to be onnxruntime's on NaN or inf, allowed); "mismatch"
    (a runtime disagrees with eager), "invalid" (onnx.checker or onnxruntime rejects the model),
    "escape" (an exception that is not ours, or our InternalError), "changed" (the export changed the
    model), "crash" (a built-in symbolic failed and its node fell back): bugs."""

    opset: int
    status: str
    detail: str = ""

    @property
    def bug(self) -> bool:
        return self.status in ("mismatch", "invalid", "escape", "changed", "crash")


class ProgramMismatch(AssertionError):
    """A program's export disagreed with eager PyTorch (or crashed, or wrote an invalid model)."""

    def __init__(self, program: Program, outcome: Outcome) -> None:
        super().__init__(f"opset {outcome.opset}: {outcome.status}: {outcome.detail}\n{program.describe()}")
        self.program = program
        self.outcome = outcome


def check_program(program: Program, *, opsets: Sequence[int] | None = None, runs: int = 3,
                  runtimes: Sequence[str] = ("onnxruntime", "aten2onnx"), exact: bool = False,
                  optimize: bool | str = True) -> list[Outcome]:
    """Export the program at each opset (default: 18 and one the program's seed picks) and compare;
    raises ProgramMismatch for the first bug, else returns the outcomes. exact: export with exact=True
    and hold aten2onnx.runtime to bitwise equality with eager. optimize: as for aten2onnx.export (the
    graph optimizer's rewrites, onnxruntime's contrib ops included, are held to eager like the
    translation)."""
    outcomes = examine(program, opsets=opsets, runs=runs, runtimes=runtimes, exact=exact, optimize=optimize)
    for outcome in outcomes:
        if outcome.bug:
            raise ProgramMismatch(program, outcome)
    return outcomes


def examine(program: Program, *, opsets: Sequence[int] | None = None, runs: int = 3,
            runtimes: Sequence[str] = ("onnxruntime", "aten2onnx"), exact: bool = False,
            optimize: bool | str = True) -> list[Outcome]:
    """The outcome of exporting the program at each opset, without raising."""
    if opsets is None:
        opsets = sorted({18, OPSETS[program.seed % len(OPSETS)]})
    return [_examine_at(program, opset, runs, runtimes, exact, optimize) for opset in opsets]


def _examine_at(program: Program, opset: int, runs: int, runtimes: Sequence[str], exact: bool = False,
                optimize: bool | str = True) -> Outcome:
    module = program.build()
    before = {k: v.clone() for k, v in module.state_dict().items()}
    example = program.tensors()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exported = aten2onnx.export(module, tuple(t.clone() for t in example), opset=opset,
                                        dynamic_shapes=program.dynamic_shapes(), exact=exact, optimize=optimize)
    except aten2onnx.InternalError as e:
        return Outcome(opset, "escape", f"{str(e).splitlines()[0]}")
    except aten2onnx.Aten2OnnxError as e:
        return Outcome(opset, "refused", f"{type(e).__name__}: {' '.join(str(e).splitlines()[:2])}")
    except Exception as e:  # anything else is a bug: export raises only our errors
        return Outcome(opset, "escape", f"export raised {type(e).__name__}: {e}")
    crashed = [str(w.message) for w in caught if "Please report this" in str(w.message)]
    if crashed:  # a built-in symbolic failed; its node fell back (right, but a bug to fix)
        return Outcome(opset, "crash", crashed[0])
    changed = [k for k, v in module.state_dict().items() if not torch.equal(v, before[k])]
    if changed:
        return Outcome(opset, "changed", f"export changed the model's {changed}")
    try:
        onnx.checker.check_model(exported.model_proto, full_check=True)
    except Exception as e:
        return Outcome(opset, "invalid", f"onnx.checker: {e}")
    # torch.export assumed something of the inputs (NarrowedExportWarning): a run on inputs outside the
    # assumption may fail (an error, as torch's own program raises), never give other values
    narrowed = next((str(w.message) for w in caught if issubclass(w.category, aten2onnx.NarrowedExportWarning)), None)
    try:
        return _compare_runs(program, module, exported, opset, runs, runtimes, exact, narrowed)
    except _Bug as bug:
        return Outcome(opset, bug.status, str(bug))


class _Bug(Exception):
    def __init__(self, status: str, detail: str, *, discrete: bool = False) -> None:
        super().__init__(detail)
        self.status = status
        self.discrete = discrete  # an integer, bool or shape disagreement (no tolerance applies)


def _compare_runs(program: Program, module: torch.nn.Module, exported: aten2onnx.ExportedModel, opset: int,
                  runs: int, runtimes: Sequence[str], exact: bool = False, narrowed: str | None = None) -> Outcome:
    from aten2onnx.runtime import InferenceSession

    eager = copy.deepcopy(module)
    proto = exported.model_proto
    namespaces = tuple(sorted({"aten"} | {op.split("::", 1)[0] for op in exported.fallback_ops}))
    ours = InferenceSession(proto, allowed_aten_namespaces=namespaces) if "aten2onnx" in runtimes else None
    ort = _ort_session(proto) if "onnxruntime" in runtimes and ort_can_run(exported) else None
    updates = json.loads({p.key: p.value for p in proto.metadata_props}.get("aten2onnx.state_updates", "[]"))
    # inputs whose dim 0 stayed dynamic (torch.export may have fixed some); each run gives them a new size
    resized = [name for name, info in zip([i.name for i in program.inputs], proto.graph.input)
               if info.type.tensor_type.shape.dim and info.type.tensor_type.shape.dim[0].dim_param == "batch"]
    ort_state: dict[str, np.ndarray] = {}
    precision = _Precisions()
    for run in range(runs):
        inputs = program.tensors(run, program.batch + run if run else None, resized)
        with torch.no_grad(), precision:
            try:
                eager_inputs = [t.clone() for t in inputs]
                expected = list(eager(*eager_inputs))
            except Exception:
                break  # eager rejects these inputs (an integer division by zero): nothing to compare
        tolerance = precision.loosest()
        feeds = dict(zip(exported.input_names, inputs))
        state = {b.name: getattr(eager, b.name) for b in program.buffers}
        written = {name: t for name, t in zip([i.name for i in program.inputs], eager_inputs)}
        if ours is not None:
            ours_feeds = {k: v.clone() for k, v in feeds.items()}
            try:
                with torch.no_grad():  # as eager ran: exact mode follows the caller's grad mode
                    results = ours.run_torch(ours_feeds)
            except Exception as e:
                if narrowed is not None:
                    return Outcome(opset, "refused", f"run {run}: aten2onnx.runtime raised {type(e).__name__} on inputs "
                                                     f"outside what the export warned of: {narrowed[:200]}")
                raise _Bug("mismatch", f"run {run}: aten2onnx.runtime raised {type(e).__name__}: {e}") from e
            try:
                _match(f"run {run}: aten2onnx.runtime", exported, results, expected, updates, ours_feeds, state, written,
                       tolerance, bitwise=exact)
            except _Bug as bug:
                return _deviation(bug, opset, program, precision, _EAGER_NONFINITE,
                                  "eager's kernel departs from its math on NaN or inf")
        if ort is not None:
            ort_feeds = {k: v.numpy() for k, v in feeds.items()}
            try:
                names = [o.name for o in ort.get_outputs()]
                results = dict(zip(names, ort.run(None, {**ort_feeds, **ort_state})))
            except Exception as e:
                if narrowed is not None:
                    return Outcome(opset, "refused", f"run {run}: onnxruntime raised on inputs outside what the "
                                                     f"export warned of: {narrowed[:200]}")
                raise _Bug("mismatch", f"run {run}: onnxruntime raised {e}") from e
            for u in updates:
                if u["kind"] == "buffer":
                    ort_state[u["input"]] = results[u["output"]]
                else:
                    ort_feeds[u["input"]] = results[u["output"]]
            tensors = {k: torch.from_numpy(np.asarray(v)) for k, v in results.items()}
            fed = {k: torch.from_numpy(np.asarray(v)) for k, v in ort_feeds.items()}
            try:
                _match(f"run {run}: onnxruntime", exported, tensors, expected, updates, fed, state, written, tolerance)
            except _Bug as bug:
                positional = sorted(_ORT_POSITIONAL & {n.op_type for graph in graphs(proto.graph) for n in graph.node})
                carried = precision.carried()
                if not bug.discrete and ours is not None and carried > 0 and _close_within(
                        exported, tensors, expected, carried):
                    return Outcome(opset, "deviation", f"{bug} (within {carried:.3g}, what onnxruntime's kernels' "
                                                       "last-ulp differences on intermediates as large as "
                                                       f"{precision.magnitude:.3g} carry; our runtime agrees)")
                if bug.discrete and ours is not None and _saturated_product(exported, tensors, expected):
                    return Outcome(opset, "deviation", f"{bug} (onnxruntime's integer ReduceProd saturates on "
                                                       "overflow, where eager's product wraps; our runtime agrees)")
                if bug.discrete and positional:
                    return Outcome(opset, "deviation", f"{bug} (onnxruntime's {', '.join(positional)} kernels give "
                                                       "equal inputs results an ulp apart at different positions, which "
                                                       "a discrete op after them (unique, a comparison) can tell apart)")
                return _deviation(bug, opset, program, precision, _ORT_NONFINITE + _EAGER_NONFINITE,
                                  "a known onnxruntime or eager deviation on NaN or inf",
                                  nodes={n.op_type for graph in graphs(proto.graph) for n in graph.node})
    return Outcome(opset, "match")


def _saturated_product(exported: aten2onnx.ExportedModel, results: dict[str, Any], expected: list[Any]) -> bool:
    """Whether the graph has an integer ReduceProd and onnxruntime's disagreeing integer outputs hold its
    type's bound where eager's do not: onnxruntime clamps an overflowing product, eager wraps it."""
    if not any(n.op_type == "ReduceProd" for graph in graphs(exported.model_proto.graph) for n in graph.node):
        return False
    for got, want in zip(pytree.tree_leaves(exported.structure_outputs(results)), expected):
        if not isinstance(want, torch.Tensor) or want.dtype.is_floating_point or want.dtype == torch.bool:
            continue
        got = torch.as_tensor(got).to(want.dtype)
        if got.shape == want.shape and not torch.equal(got, want):
            info = torch.iinfo(want.dtype)
            differ = got != want
            if not bool(((got[differ] == info.max) | (got[differ] == info.min)).all()):
                return False
    return True


def _close_within(exported: aten2onnx.ExportedModel, results: dict[str, Any], expected: list[torch.Tensor],
                  atol: float) -> bool:
    """Whether every float output is within atol of eager's (others equal)."""
    got = pytree.tree_leaves(exported.structure_outputs(results))
    for g, e in zip(got, expected):
        g = torch.as_tensor(g)
        if not isinstance(e, torch.Tensor) or g.shape != e.shape:
            return False
        if e.dtype.is_floating_point:
            if not torch.allclose(g.to(e.dtype), e, rtol=1e-3, atol=atol, equal_nan=True):
                return False
        elif not torch.equal(g.to(e.dtype), e):
            return False
    return True


def _deviation(bug: _Bug, opset: int, program: Program, precision: _Precisions, ops: tuple[str, ...],
               why: str, nodes: set[str] = frozenset()) -> Outcome:
    """A runtime's disagreement as a known deviation, when eager met NaN or inf on the run and the program
    uses one of `ops`, or its graph (`nodes`, its op types) one of _ORT_NONFINITE_NODES; otherwise the bug,
    raised."""
    if precision.nonfinite and (any(op in program.source() for op in ops) or nodes & _ORT_NONFINITE_NODES):
        return Outcome(opset, "deviation", f"{bug} ({why})")
    raise bug


# Ops whose onnxruntime kernels depart from eager on NaN and infinities (MaxPool and ArgMax skip NaN,
# ReduceMax/ReduceMin keep a NaN only where it comes first along the axis, Unique drops it, Where turns
# a -0 into +0, attention and linear Resize weigh an infinity by 0): an onnxruntime disagreement on a
# run where eager met NaN or inf is a known deviation, when these ops are in the program;
# aten2onnx.runtime must still agree.
_ORT_NONFINITE = ("max_pool", "argmax", "argmin", ".indices", "amax", "amin", ".max(", ".min(", "unique",
                  "scaled_dot_product_attention", "interpolate", "atan2", "where", "masked_fill", "clamp")
# The same for onnxruntime's Where in the graph, whatever op the export spelled with it (xlogy's x == 0 case):
# Where turns a -0 it picks into +0, which a later reciprocal or division makes an infinity of the other sign.
_ORT_NONFINITE_NODES = frozenset({"Where"})


# onnxruntime's float32 kernels that give equal inputs results an ulp apart at different positions of one
# tensor (a vectorized body and a scalar tail): a discrete op after them (unique, a comparison, a sort's ties)
# can turn that into a different shape or value where eager's, and our runtime's, agree. An onnxruntime
# disagreement in an integer, bool or shape result of a graph holding one of them is a known deviation
# (aten2onnx.runtime must still agree). tests/test_fuzz_models.py checks each is still so.
_ORT_POSITIONAL = frozenset({"Atan", "Sin", "Cos", "Asin", "Acos", "Softplus", "Log"})


# Ops whose eager CPU kernel departs from torch's own math reference on NaN and infinities: the fused
# attention kernel takes a NaN score as masked out (a weight of 0) where the reference, and the export,
# give NaN (torch.ops.aten._scaled_dot_product_attention_math agrees with the export); sinh and cosh's
# vectorized float32 kernel overflows to inf for |x| in (88.7, 89.4], where the value is finite (2.2e38)
# and eager's own scalar kernel, on a tensor too short to vectorize, gives it (eager disagrees with itself
# by tensor length). A disagreement of either runtime on a run where eager met NaN or inf is a known
# deviation when these are in the program.
_EAGER_NONFINITE = ("scaled_dot_product_attention", "sinh", "cosh")


def _ort_session(proto: onnx.ModelProto) -> Any:
    try:
        return ort_session(proto, log_severity=4)
    except Exception as e:
        if "NOT_IMPLEMENTED" in str(e) or "Could not find an implementation" in str(e):
            return None  # onnxruntime has no kernel for a type: a coverage gap, not a wrong answer
        raise _Bug("invalid", f"onnxruntime cannot load the model: {e}") from e


class _Precisions(TorchFunctionMode):
    """What eager computed on the way: the float dtypes (a float32 result of a float16 computation is
    only as close as float16 allows), and whether some value was NaN or infinite (see _ORT_NONFINITE)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[torch.dtype] = set()
        self.nonfinite = False
        self.magnitude = 0.0  # the largest finite float value eager computed on the way

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 (torch's protocol)
        result = func(*args, **(kwargs or {}))
        for t in pytree.tree_leaves(result):
            if isinstance(t, torch.Tensor):
                self.seen.add(t.dtype)
                if t.dtype.is_floating_point and t.numel() and not t.is_complex():
                    finite = torch.isfinite(t)
                    if not bool(finite.all()):
                        self.nonfinite = True
                    if bool(finite.any()):
                        self.magnitude = max(self.magnitude, float(t[finite].abs().max()))
        return result

    def carried(self) -> float:
        """An absolute error an output may carry from the last-ulp differences of another runtime's kernels
        on intermediates as large as the largest eager met (a difference of two such values keeps theirs)."""
        eps = max((torch.finfo(d).eps for d in self.seen if d.is_floating_point and not d.is_complex), default=0.0)
        return 16 * eps * self.magnitude

    def loosest(self) -> tuple[float, float] | None:
        tolerances = [TOLERANCES[d] for d in self.seen if d in TOLERANCES]
        return max(tolerances) if tolerances else None


def _match(where: str, exported: aten2onnx.ExportedModel, results: dict[str, Any], expected: list[torch.Tensor],
           updates: list[dict], feeds: dict[str, torch.Tensor], state: dict[str, torch.Tensor],
           written: dict[str, torch.Tensor], tolerance: tuple[float, float] | None, bitwise: bool = False) -> None:
    got = pytree.tree_leaves(exported.structure_outputs(results))
    if len(got) != len(expected):
        raise _Bug("mismatch", f"{where} returned {len(got)} outputs, eager {len(expected)}")
    pairs = [(f"output {i}", g, e) for i, (g, e) in enumerate(zip(got, expected))]
    for update in updates:
        if update["kind"] == "buffer":
            pairs.append((f"buffer {update['input']}", results[update["output"]], state[update["input"]]))
    for name, tensor in written.items():
        if name in feeds:
            pairs.append((f"input {name} after the run", feeds[name], tensor))
    for what, g, e in pairs:
        rtol, atol = (None, None)
        if isinstance(e, torch.Tensor) and e.dtype.is_floating_point:
            rtol, atol = (0.0, 0.0) if bitwise else max(TOLERANCES.get(e.dtype, (0, 0)), tolerance or (0, 0))
        problem = difference(torch.as_tensor(g) if not isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor)
                             else g, e, rtol, atol)
        if problem is not None:
            floats = isinstance(e, torch.Tensor) and e.dtype.is_floating_point
            same_shape = isinstance(g, (torch.Tensor, np.ndarray)) and isinstance(e, torch.Tensor) \
                and tuple(g.shape) == tuple(e.shape)
            raise _Bug("mismatch", f"{where}: {what}: {problem}", discrete=not (floats and same_shape))


# -- shrinking ------------------------------------------------------------------------------------------


def shrink(program: Program, still_fails: Callable[[Program], bool], *, budget: int = 200) -> Program:
    """A smaller program that still fails: statements and outputs removed one at a time, the
    dynamic dim dropped, while `still_fails` holds (for runs outside hypothesis, which shrinks itself)."""
    best = program
    changed = True
    while changed and budget > 0:
        changed = False
        for candidate in _simpler(best):
            budget -= 1
            if _runs_in_eager(candidate) and still_fails(candidate):
                best, changed = candidate, True
                break
            if budget <= 0:
                break
    return best


def _simpler(p: Program) -> list[Program]:
    code = "\n".join(step.code for step in p.steps)
    out = []
    unused = tuple(w for w in p.weights if f"self.{w.name}" not in code)
    if unused:
        out.append(dataclasses.replace(p, weights=tuple(w for w in p.weights if w not in unused)))
    if p.dynamic:
        out.append(dataclasses.replace(p, dynamic=False))
    if len(p.outputs) > 1:
        out += [dataclasses.replace(p, outputs=(o,)) for o in p.outputs]
    for i, step in enumerate(p.steps):
        rest = p.steps[:i] + p.steps[i + 1:]
        if step.target in p.outputs:
            earlier = [s.target for s in p.steps[:i] if s.target]
            if not earlier:
                continue
            outputs = tuple(dict.fromkeys(earlier[-1] if o == step.target else o for o in p.outputs))
            out.append(dataclasses.replace(p, steps=rest, outputs=outputs))
        else:
            out.append(dataclasses.replace(p, steps=rest))
    return out


def _runs_in_eager(p: Program) -> bool:
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p.build()(*p.tensors())
        return True
    except Exception:
        return False
