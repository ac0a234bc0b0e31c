"""The op-test table machinery: an Entry per op (a function of tensors, sample makers per dtype, dtypes,
opsets, the registry keys its export dispatches), run by tests/test_ops_generic.py through export in both
runtimes and compared with eager; and the OpInfo sweep's per-OpInfo check, for asserting that an OpInfo
exports natively."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import pathlib
import warnings
from typing import Any, Callable, Iterator
from unittest import mock

import numpy as np
import onnx
import pytest
import torch
import torch.utils._pytree as pytree

import aten2onnx
from aten2onnx.registry import Resolver
from conftest import flat_tensors, run_ort

TOL = {torch.float16: (1e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2), torch.float32: (1e-4, 1e-5),
       torch.float64: (1e-7, 1e-7), torch.complex64: (1e-4, 1e-5), torch.complex128: (1e-7, 1e-7)}


@dataclasses.dataclass
class Entry:
    """One op: a function of tensors, sample makers (dtype -> args), the dtypes and opsets to run, and
    the registry keys (see registry_key) its export dispatches at every one of them."""

    name: str
    fn: Callable
    samples: list[Callable[[torch.dtype], tuple]]
    dtypes: tuple = (torch.float32,)
    opsets: tuple = (9, 13, 18, 26)
    reason: str | None = None  # an expected failure, and why
    ort: bool = True           # onnxruntime has kernels for these dtypes
    keys: tuple[str, ...] | None = None  # None: not declared
    signed_zeros: bool = False  # a zero's sign is compared too (eager's -0.0 must not come back +0.0)

    def xfail(self, reason: str) -> Entry:
        return dataclasses.replace(self, reason=reason)


def t(*shape, low=-3.0, high=3.0):
    return lambda dtype: (torch.empty(shape).uniform_(low, high).to(dtype),)


def t2(a, b, low=-3.0, high=3.0):
    return lambda dtype: (torch.empty(a).uniform_(low, high).to(dtype), torch.empty(b).uniform_(low, high).to(dtype))


class Call(torch.nn.Module):
    """A module calling fn on its inputs, so builtins and lambdas of any arity export alike."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def assert_runs_like_eager(exported: aten2onnx.ExportedModel, fn: Callable, args: tuple, *,
                           tol: tuple[float, float] | None = None, equal_nan: bool = False) -> None:
    """An export run on args, in aten2onnx.runtime and in onnxruntime, against eager fn(*args): within
    tol (rtol, atol), or TOL by each output's dtype (exactly where it has none)."""
    with torch.no_grad():
        expected = flat_tensors(fn(*args))
    ours = flat_tensors(exported.run(*args))
    theirs = [torch.as_tensor(x) for x in run_ort(exported.model_proto, dict(zip(exported.input_names, args)))]
    assert len(ours) == len(theirs) == len(expected)
    for want, got_ours, got_ort in zip(expected, ours, theirs):
        rtol, atol = tol or TOL.get(want.dtype, (0, 0))
        torch.testing.assert_close(got_ours, want, rtol=rtol, atol=atol, equal_nan=equal_nan)
        torch.testing.assert_close(got_ort, want, rtol=rtol, atol=atol, equal_nan=equal_nan)


def bfloat16_as_float32(model: onnx.ModelProto, feeds: dict[str, torch.Tensor]
                        ) -> tuple[onnx.ModelProto, dict[str, torch.Tensor]]:
    """model with its bfloat16 inputs and outputs exchanged as float32 through Casts (exact both ways), and
    feeds to match: onnxruntime's Python API exchanges no bfloat16, though its kernels run it."""
    bf16, f32 = onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT
    if all(v.type.tensor_type.elem_type != bf16 for v in [*model.graph.input, *model.graph.output]):
        return model, feeds
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph, casts, feeds = model.graph, [], dict(feeds)
    for value in graph.input:
        if value.type.tensor_type.elem_type == bf16:
            name, value.name = value.name, f"{value.name}.float32"
            value.type.tensor_type.elem_type = f32
            casts.append(onnx.helper.make_node("Cast", [value.name], [name], to=bf16))
            feeds[value.name] = feeds.pop(name).float()
    tail = []
    for value in graph.output:
        if value.type.tensor_type.elem_type == bf16:
            name, value.name = value.name, f"{value.name}.float32"
            value.type.tensor_type.elem_type = f32
            tail.append(onnx.helper.make_node("Cast", [name], [value.name], to=f32))
    nodes = casts + list(graph.node) + tail
    del graph.node[:]
    graph.node.extend(nodes)
    return model, feeds


def assert_matches(got: torch.Tensor, want: torch.Tensor, *, signed_zeros: bool = False) -> None:
    """got within TOL of want (NaN equal to NaN); with signed_zeros, each zero with want's sign."""
    rtol, atol = TOL.get(want.dtype, (0, 0))
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if signed_zeros and want.dtype.is_floating_point:
        zeros = (want == 0) & (got == 0)
        flipped = zeros & (torch.signbit(got) != torch.signbit(want))
        assert not flipped.any(), f"{int(flipped.sum())} zeros of the other sign, first at {flipped.nonzero()[0].tolist()}"


def run_both(fn: Callable, args: tuple, opset: int, *, ort: bool = True, signed_zeros: bool = False) -> None:
    with torch.no_grad():
        expected = flat_tensors(fn(*args))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(Call(fn), args, opset=opset, fallback="error")
    got = flat_tensors(exported.run(*args))
    assert len(got) == len(expected)
    for g_, w in zip(got, expected):
        assert_matches(g_, w, signed_zeros=signed_zeros)
    if ort:
        # complex inputs and outputs travel as real pairs (trailing axis of 2)
        feeds = exported.carried_inputs(dict(zip(exported.input_names, args)))
        model, feeds = bfloat16_as_float32(exported.model_proto, feeds)
        outs = dict(zip(exported.output_names, run_ort(model, feeds)))
        theirs = [torch.as_tensor(x) for x in pytree.tree_leaves(exported.structure_outputs(outs))
                  if isinstance(x, (np.ndarray, torch.Tensor))]
        assert len(theirs) == len(expected)
        for g_, w in zip(theirs, expected):
            assert_matches(g_.to(w.dtype) if w.dtype == torch.bfloat16 else g_, w, signed_zeros=signed_zeros)


def cases(family: str, table: list[Entry]) -> list:
    """pytest params, one per entry x sample x dtype x opset, named family.entry-sample-dtype-opset; an
    entry's xfail reason marks its cases."""
    return [pytest.param(e, s, d, o, id=f"{family}.{e.name}-{i}-{str(d).split('.')[1]}-opset{o}",
                         marks=[pytest.mark.xfail(reason=e.reason, strict=True)] if e.reason else [])
            for e in table for i, s in enumerate(e.samples) for d in e.dtypes for o in e.opsets]


def registry_key(key: str, *, on_complex: bool = False) -> str:
    """How tables name a built-in registry entry: its overload key, prefixed complex: for a complex entry
    (registered with complex=True, the handler of nodes with complex tensors), as the same overload has
    both."""
    return f"complex:{key}" if on_complex else key


def registered_keys() -> set[str]:
    """Every built-in registry key, named as registry_key names them."""
    from aten2onnx import symbolic  # noqa: F401  (registers the built-ins)
    from aten2onnx.registry import REGISTRY

    return {registry_key(e.key, on_complex=e.complex) for e in REGISTRY.entries(complex=None)}


@contextlib.contextmanager
def dispatched_keys() -> Iterator[set[str]]:
    """The set of built-in registry keys the export's dispatch (registry.Resolver) resolves while the block
    runs: the translator's, one per node, and a handler's that applies another overload's real
    translation through g.resolve (a complex lifting applies the real key it lifts). An in-place node
    dispatched to its functional twin counts as the twin's key."""
    keys: set[str] = set()
    resolve = Resolver.resolve

    def recording(self, target, *, complex=False):
        resolved = resolve(self, target, complex=complex)
        if resolved is not None and not resolved.user:
            keys.add(registry_key(resolved.via_twin or resolved.key, on_complex=complex))
        return resolved

    with mock.patch.object(Resolver, "resolve", recording):
        yield keys


def check(entry: Entry, sample: Callable, dtype: torch.dtype, opset: int) -> None:
    """One case: eager's answers in both runtimes, and every key the entry declares dispatched."""
    torch.manual_seed(0)
    with dispatched_keys() as keys:
        run_both(entry.fn, sample(dtype), opset, ort=entry.ort, signed_zeros=entry.signed_zeros)
    missing = sorted(set(entry.keys or ()) - keys)
    assert not missing, f"{entry.name} declares keys its export did not dispatch: {missing}"


@functools.cache
def sweep_module():
    """scripts/opinfo_sweep.py, imported by path."""
    path = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "opinfo_sweep.py"
    spec = importlib.util.spec_from_file_location("opinfo_sweep", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def opinfo_statuses(name: str, opsets: list[int], samples: int = 1, dtype: str = "float32", *,
                    differential: bool = False) -> dict[str, dict]:
    """The sweep's verdict per opset for one OpInfo (name or name.variant): {opset: {status, ...}};
    differential: as the sweep's --differential (the optimizer's own failures are "optimizer: ...")."""
    from torch.testing._internal.common_methods_invocations import op_db

    sweep = sweep_module()
    index = next((i for i, op in enumerate(op_db) if sweep.opinfo_name(op) == name), None)
    if index is None:
        pytest.skip(f"no OpInfo {name} in this torch")
    result = sweep.sweep_op((index, list(opsets), [dtype], samples, 120, False, False, differential))
    if "skipped" in result:
        pytest.skip(f"{name}: {result['skipped']}")
    return result["opsets"]


def assert_opinfo_native(name: str, opsets: list[int], samples: int = 1, dtype: str = "float32") -> None:
    for opset, entry in opinfo_statuses(name, opsets, samples, dtype).items():
        assert entry["status"] == "native", f"{name} at opset {opset}: {entry}"
