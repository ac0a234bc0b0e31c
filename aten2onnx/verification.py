"""aten2onnx.verify: export a model, run the export in each runtime, compare with eager PyTorch, and when
anything differs name the first FX node whose ONNX value departs from eager's: its op, source line, module."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
from typing import Any, Callable, Sequence

import numpy as np
import onnx
import torch
import torch.fx
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from aten2onnx import _dtypes
from aten2onnx._backend import runtime_backend
from aten2onnx._compare import difference, ort_can_run, ort_session
from aten2onnx.errors import ArgumentError
from aten2onnx.exporter import Traced, export_traced
from aten2onnx.ir import Value
from aten2onnx.exporter.capture import eval_mode
from aten2onnx.exporter.model import STATE_KEY, ExportedModel
from aten2onnx.exporter.provenance import module_of, source_of
from aten2onnx.modelinfo import node_counts

RUNTIMES = ("onnxruntime", "aten2onnx")
# A runtime's whole run failed (it raised): the check's output name.
WHOLE_RUN = "*"


@dataclasses.dataclass
class OutputCheck:
    """One graph output of one run in one runtime, against eager PyTorch. run 0 is the example
    arguments, run i the i-th of `inputs`; output WHOLE_RUN is a run that raised."""

    runtime: str
    run: int
    output: str
    max_abs: float | None
    max_rel: float | None
    ok: bool
    detail: str | None = None  # why it differs, or what the runtime raised


@dataclasses.dataclass
class Divergence:
    """The first FX node, in topological order, whose ONNX value differs from eager's value of that node."""

    runtime: str
    run: int
    fx_node: str
    value: str  # the ONNX value compared
    onnx_node: str
    op_type: str
    aten_op: str
    source: str  # the user's file:line
    module: str  # the module path and class
    error: str


@dataclasses.dataclass
class VerificationReport:
    """What `aten2onnx.verify` found. `ok` only when every output of every run in every runtime that
    ran matches eager within DEFAULT_TOLERANCES (integers and bools exactly, NaN equal to NaN)."""

    ok: bool
    opset: int
    export_seconds: float
    node_counts: dict[str, int]
    fallback_ops: list[str]
    outputs: list[OutputCheck]
    first_divergence: Divergence | None
    skipped: dict[str, str]  # runtime -> why it did not run

    def max_errors(self) -> dict[str, dict[str, tuple[float | None, float | None]]]:
        """{runtime: {output: (max abs error, max rel error)}} over all runs."""
        table: dict[str, dict[str, tuple[float | None, float | None]]] = {}
        for check in self.outputs:
            if check.output == WHOLE_RUN:
                continue
            old = table.setdefault(check.runtime, {}).get(check.output, (None, None))
            table[check.runtime][check.output] = (_worse(old[0], check.max_abs), _worse(old[1], check.max_rel))
        return table

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(dataclasses.asdict(self) | {"max_errors": {
            runtime: {name: {"max_abs": a, "max_rel": r} for name, (a, r) in per.items()}
            for runtime, per in self.max_errors().items()}})

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_text(self) -> str:
        total = sum(self.node_counts.values())
        lines = [f"aten2onnx.verify: {'OK' if self.ok else 'MISMATCH'}",
                 f"  exported at opset {self.opset} in {self.export_seconds:.2f} s: {total} nodes; "
                 f"fallback ops: {', '.join(self.fallback_ops) or 'none'}"]
        for runtime, per in self.max_errors().items():
            for name, (abs_err, rel_err) in per.items():
                bad = [c for c in self.outputs if c.runtime == runtime and c.output == name and not c.ok]
                verdict = "ok" if not bad else f"MISMATCH in run {bad[0].run}: {bad[0].detail}"
                lines.append(f"  {runtime} {name}: max abs {_num(abs_err)}, max rel {_num(rel_err)}; {verdict}")
        lines += [f"  {c.runtime} run {c.run} failed: {c.detail}" for c in self.outputs if c.output == WHOLE_RUN]
        lines += [f"  {runtime} not run: {why}" for runtime, why in self.skipped.items()]
        d = self.first_divergence
        if d is not None:
            lines.append(f"  first divergence ({d.runtime}, run {d.run}): node {d.onnx_node!r} ({d.op_type}) for "
                         f"{d.aten_op} at {d.source or '?'} in {d.module or '?'}")
            lines.append(f"    value {d.value!r} (FX node {d.fx_node}): {d.error}")
        elif any(not c.ok and c.output != WHOLE_RUN for c in self.outputs):
            lines.append("  first divergence: not found (every node's value matched where it could be compared)")
        return "\n".join(lines)


def _worse(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return b if a is None else a
    return a if math.isnan(a) or a >= b else b


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _jsonable(value: Any) -> Any:
    """Non-finite floats as strings ("inf", "nan"): JSON has no numbers for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def errors(got: Any, expected: Any) -> tuple[float | None, float | None]:
    """Max abs and max rel error of got against expected: NaN against NaN and equal infinities are
    0, a NaN against a number inf, a difference from 0 inf relative. None when shapes differ."""
    got, expected = torch.as_tensor(got), torch.as_tensor(expected)
    if got.shape != expected.shape:
        return None, None
    if got.numel() == 0:
        return 0.0, 0.0
    wide = torch.complex128 if got.is_complex() or expected.is_complex() else torch.float64
    g, e = got.to(wide), expected.to(wide)
    same = (g == e) | (torch.isnan(g) & torch.isnan(e))
    diff = torch.where(same, 0.0, torch.nan_to_num((g - e).abs(), nan=math.inf))
    rel = torch.where(diff == 0, 0.0, diff / e.abs())
    return float(diff.max()), float(rel.max())


def verify_export(model: Any, args: tuple, kwargs: dict | None, *, opset: int, runtimes: Sequence[str],
                  inputs: Sequence[Any], custom_symbolics: dict[str, Callable] | None, dynamic_shapes: Any,
                  fallback: str, progress: bool | None, exact: bool = False,
                  functions: bool | list[Any] = False, optimize: bool = True
                  ) -> tuple[ExportedModel, VerificationReport]:
    """Export once, check every run in every runtime, search the first divergence; see aten2onnx.verify.
    functions: as for aten2onnx.export (the command's --functions); values inside functions are not
    searched for the first divergence."""
    unknown = [r for r in runtimes if r not in RUNTIMES]
    if unknown or not runtimes:
        raise ArgumentError(f"runtimes {list(runtimes)}: choose from {list(RUNTIMES)}")
    start = time.perf_counter()
    traced = export_traced(model, args, kwargs, opset=opset, dynamic_shapes=dynamic_shapes, fallback=fallback,
                           input_names=None, output_names=None, custom_symbolics=custom_symbolics,
                           backend=runtime_backend(), progress=progress, exact=exact, functions=functions,
                           optimize=optimize)
    seconds = time.perf_counter() - start
    exported = traced.exported
    proto = exported.model_proto  # weights copied out before eager runs write (and restore) buffers
    calls = [(args, kwargs or {})] + [((x,) if isinstance(x, torch.Tensor) else tuple(x), kwargs or {}) for x in inputs]
    skipped = {} if "onnxruntime" not in runtimes or ort_can_run(exported) else {"onnxruntime": (
        f"it runs no ATen fallback nodes ({', '.join(exported.fallback_ops)})" if exported.fallback_ops
        else "its Python API exchanges no bfloat16 inputs or outputs")}
    ran = [r for r in runtimes if r not in skipped]
    sessions = {runtime: _session(runtime, exported, proto) for runtime in ran}
    checks: list[OutputCheck] = []
    for run, (call_args, call_kwargs) in enumerate(calls):
        expected = _expected(exported, model, call_args, call_kwargs, run)
        for runtime in ran:
            checks += _check_run(runtime, run, sessions[runtime], exported, call_args, call_kwargs, expected,
                                 _tolerance(runtime, exact))
    failed = next((c for c in checks if not c.ok and c.output != WHOLE_RUN), None)
    divergence = None
    if failed is not None:
        call_args, call_kwargs = calls[failed.run]
        divergence = first_divergence(traced, failed.runtime, failed.run, call_args, call_kwargs,
                                      _tolerance(failed.runtime, exact))
    report = VerificationReport(all(c.ok for c in checks), opset, seconds, node_counts(proto), list(exported.fallback_ops),
                                checks, divergence, skipped)
    return exported, report


def _tolerance(runtime: str, exact: bool) -> tuple[float | None, float | None]:
    """(rtol, atol) a runtime's values are held to: none for aten2onnx.runtime on an exact export, else
    DEFAULT_TOLERANCES (None)."""
    return (0.0, 0.0) if exact and runtime == "aten2onnx" else (None, None)


def _cloned(tree: Any) -> Any:
    return pytree.tree_map(lambda x: x.detach().clone() if isinstance(x, torch.Tensor) else x, tree)


def _expected(exported: ExportedModel, model: Any, args: tuple, kwargs: dict, run: int) -> dict[str, Any]:
    """Eager's value of each graph output for one call: the model's outputs, and the new values of the
    buffers and inputs it writes. Runs on copies of the arguments; the buffers are put back after."""
    module = model.module() if isinstance(model, ExportedProgram) else model
    call_args, call_kwargs = _cloned((args, kwargs))
    buffers = dict(module.named_buffers()) if isinstance(module, torch.nn.Module) else {}
    saved = {name: b.detach().clone() for name, b in buffers.items()}
    # an ExportedProgram's module runs as exported (it refuses train/eval switches); a user's module in eval mode
    mode = eval_mode(module) if isinstance(model, torch.nn.Module) else contextlib.nullcontext()
    try:
        # random ops draw from seed 0, here and in the runtimes' runs (_run), without changing the caller's state
        with torch.random.fork_rng(), torch.no_grad(), mode:
            torch.manual_seed(0)
            out = module(*call_args, **call_kwargs)
        after = {name: b.detach().clone() for name, b in buffers.items()}
    except Exception as e:  # the user's model on the user's input: theirs to see
        raise ArgumentError(f"eager PyTorch fails on {'the example arguments' if run == 0 else f'inputs[{run - 1}]'}: "
                            f"{type(e).__name__}: {e}") from e
    finally:
        with torch.no_grad():
            for name, b in buffers.items():
                b.copy_(saved[name])
    expected = {name: leaf for name, leaf in zip(exported.flat_output_names, pytree.tree_leaves(out)) if name is not None}
    written_inputs = exported.feeds(*call_args, **call_kwargs)  # the copies, as the eager run left them
    for update in _state_updates(exported):
        if update["kind"] == "buffer":
            expected[update["output"]] = after[update["input"]]
        else:
            value = written_inputs[update["input"]]
            expected[update["output"]] = _dtypes.from_pairs(value) if update["input"] in exported.complex_inputs else value
    return expected


def _state_updates(exported: ExportedModel) -> list[dict[str, str]]:
    return next((json.loads(e.value) for e in exported.model_proto.metadata_props if e.key == STATE_KEY), [])


def _session(runtime: str, exported: ExportedModel, proto: onnx.ModelProto) -> Any:
    """A session of the runtime, or the exception creating one raised (reported per run)."""
    try:
        return exported.session(proto) if runtime == "aten2onnx" else ort_session(proto)
    except Exception as e:  # onnxruntime raises its own types; each is reported as the runtime's failure
        return e


def _run(session: Any, feeds: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """All outputs of one run by name, as torch tensors (numpy from onnxruntime)."""
    if isinstance(session, Exception):
        raise session
    if hasattr(session, "run_torch"):
        session.reset_state()  # each run starts from the export's buffers, as the eager run does
        with torch.random.fork_rng(), torch.no_grad():  # as eager ran (_expected)
            torch.manual_seed(0)
            return session.run_torch(feeds)
    names = [o.name for o in session.get_outputs()]
    results = session.run(None, {k: v.detach().cpu().numpy() for k, v in feeds.items()})
    return {name: torch.from_numpy(np.asarray(r)) for name, r in zip(names, results)}


def _check_run(runtime: str, run: int, session: Any, exported: ExportedModel, args: tuple, kwargs: dict,
               expected: dict[str, Any], tolerance: tuple[float | None, float | None]) -> list[OutputCheck]:
    call_args, call_kwargs = _cloned((args, kwargs))
    try:
        results = _run(session, exported.feeds(*call_args, **call_kwargs))
    except Exception as e:  # a runtime's failure is a finding of the report, whatever its type
        return [OutputCheck(runtime, run, WHOLE_RUN, None, None, False, f"{type(e).__name__}: {_one_line(str(e))}")]
    checks = []
    for name, want in expected.items():
        got = results[name]
        if name in exported.complex_outputs:
            got = _dtypes.from_pairs(got)
        detail = difference(got, want, *tolerance)
        abs_err, rel_err = errors(got, want)
        checks.append(OutputCheck(runtime, run, name, abs_err, rel_err, detail is None, detail))
    return checks


# -- the first diverging node -----------------------------------------------------------------------
def first_divergence(traced: Traced, runtime: str, run: int, args: tuple, kwargs: dict,
                     tolerance: tuple[float | None, float | None] = (None, None)) -> Divergence | None:
    """Run the export keeping every value an FX node was translated to, then the FX graph node by node
    in eager PyTorch, and compare each node's two values in topological order; the first that differs."""
    exported = traced.exported
    probe, compared = _probe_model(traced, runtime)
    session = _session(runtime, exported, probe)
    call_args, call_kwargs = _cloned((args, kwargs))
    try:
        values = _run(session, exported.feeds(*call_args, **call_kwargs))
    except Exception:  # the runtime cannot run the probe: no node to name
        return None
    producers = {out: node for node in probe.graph.node for out in node.output}
    program = traced.program

    def check(node: torch.fx.Node, eager: Any) -> Divergence | None:
        for value, want in _pairs(traced.values.get(node.name), eager):
            if value.name not in compared:
                continue
            got = values[value.name]
            if value.complex:
                got = _dtypes.from_pairs(got)
            detail = difference(got, want, *tolerance)
            if detail is not None:
                onnx_node = producers[value.name]
                meta = {p.key: p.value for p in onnx_node.metadata_props}
                return Divergence(runtime, run, node.name, value.name, onnx_node.name, onnx_node.op_type,
                                  meta.get("aten_op", str(node.target)), meta.get("source", source_of(node) or ""),
                                  meta.get("module", module_of(node)), detail)
        return None

    with torch.no_grad():
        return _Probe(program.gm, check).search(*_lifted_inputs(program, call_args, call_kwargs))


def _probe_model(traced: Traced, runtime: str) -> tuple[onnx.ModelProto, set[str]]:
    """The export with every value a top-level FX node became as a graph output, and those values' names
    (values that are inputs, weights or folded constants are no node's output, and are not compared)."""
    model = onnx.ModelProto()
    model.CopyFrom(traced.exported.model_proto)
    produced = {out for node in model.graph.node for out in node.output if out}
    outputs = {o.name for o in model.graph.output}
    compared = set(outputs)
    for result in traced.values.values():
        for value in _values(result):
            if value.name not in produced or value.name in compared or value.dtype is None:
                continue
            if runtime == "onnxruntime" and value.dtype == torch.bfloat16:
                continue  # onnxruntime's Python API returns no bfloat16
            model.graph.output.append(onnx.helper.make_tensor_value_info(value.name, _dtypes.to_onnx(value.dtype), None))
            compared.add(value.name)
    return model, compared & produced


def _values(result: Any) -> list[Value]:
    if isinstance(result, Value):
        return [result]
    if isinstance(result, (list, tuple)):
        return [v for item in result for v in _values(item)]
    return []


def _pairs(result: Any, eager: Any) -> list[tuple[Value, Any]]:
    """(ONNX value, eager value) for each tensor of an FX node's result."""
    if isinstance(result, Value):
        return [(result, eager)]
    if isinstance(result, (list, tuple)) and isinstance(eager, (list, tuple)):
        return [pair for r, e in zip(result, eager) for pair in _pairs(r, e)]
    return []


def _lifted_inputs(program: Any, args: tuple, kwargs: dict) -> list[Any]:
    """The FX graph's placeholders' values: weights from the program, then the user's inputs."""
    ep = program.ep
    specs = {spec.arg.name: spec for spec in ep.graph_signature.input_specs}
    user = iter(pytree.tree_leaves((args, kwargs)))
    values = []
    for node in program.gm.graph.nodes:
        if node.op != "placeholder":
            continue
        spec = specs[node.target]
        if spec.kind == InputKind.USER_INPUT:
            values.append(next(user))
        else:
            tensor = ep.state_dict.get(spec.target)
            values.append(ep.constants[spec.target] if tensor is None else tensor)
    return values


class _Probe(torch.fx.Interpreter):
    """Runs an FX graph node by node and stops at the first node `check` finds a divergence at."""

    def __init__(self, gm: torch.fx.GraphModule, check: Callable[[torch.fx.Node, Any], Divergence | None]) -> None:
        super().__init__(gm)
        self.check = check
        self.found: Divergence | None = None

    def run_node(self, node: torch.fx.Node) -> Any:
        result = super().run_node(node)
        if node.op == "call_function" and self.found is None:
            self.found = self.check(node, result)
            if self.found is not None:
                raise _Stop
        return result

    def search(self, *args: Any) -> Divergence | None:
        try:
            self.run(*args)
        except _Stop:
            pass
        return self.found


class _Stop(Exception):
    """Ends the node-by-node run at the first divergence."""
