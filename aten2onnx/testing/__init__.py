"""Property tests for symbolic functions, built-in or your own: export an op on inputs hypothesis
generates, run it in onnxruntime and aten2onnx.runtime, and compare with eager PyTorch.

    import torch
    from aten2onnx.testing import arguments, check_op, tensors

    check_op(torch.ops.aten.gelu.default, arguments(tensors()), opsets=(13, 20))

A failure raises `MismatchError` (an `AssertionError`) for hypothesis's shrunk, minimal input; its
message names the op, the opset, the input shapes and dtypes, the runtime that disagreed and by how
much. Needs hypothesis (`pip install hypothesis`, or the package's `test` extra).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import onnx
import torch
import torch.utils._pytree as pytree

try:
    import hypothesis
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import mutually_broadcastable_shapes
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("aten2onnx.testing needs hypothesis: pip install hypothesis") from e

import aten2onnx
from aten2onnx._compare import DEFAULT_TOLERANCES
from aten2onnx._compare import describe as _describe
from aten2onnx._compare import difference as _difference
from aten2onnx._compare import ort_can_run as _ort_can_run
from aten2onnx._compare import ort_session as _ort_session

__all__ = [
    "DEFAULT_TOLERANCES",
    "Arguments",
    "MismatchError",
    "OpCheckError",
    "Outcome",
    "Program",
    "ProgramMismatch",
    "Runtime",
    "arguments",
    "broadcastable_shapes",
    "check_op",
    "check_program",
    "default_elements",
    "dtypes",
    "programs",
    "shapes",
    "symbolic_property",
    "tensors",
]

Runtime = Literal["onnxruntime", "aten2onnx"]
DtypeKind = Literal["float", "int", "bool", "complex"]

_DTYPE_KINDS: dict[str, tuple[torch.dtype, ...]] = {
    # First of each kind is where hypothesis shrinks to.
    "float": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    "int": (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8),
    "bool": (torch.bool,),
    "complex": (torch.complex64, torch.complex128),
}


class OpCheckError(AssertionError):
    """An op could not be checked: its export, or a runtime running the export, failed. The
    message names the op, opset, inputs and stage; the original exception is chained."""

    def __init__(self, message: str, *, op: str, opset: int, stage: str, inputs: Arguments) -> None:
        super().__init__(message)
        self.op = op
        self.opset = opset
        self.stage = stage  # "export", "onnx.checker", "onnxruntime" or "aten2onnx"
        self.inputs = inputs


class MismatchError(OpCheckError):
    """A runtime's result differs from eager PyTorch in dtype, shape or values; `stage` names
    the runtime, `output` the index of the first differing output."""

    def __init__(self, message: str, *, op: str, opset: int, stage: str, inputs: Arguments, output: int) -> None:
        super().__init__(message, op=op, opset=opset, stage=stage, inputs=inputs)
        self.output = output


@dataclasses.dataclass(frozen=True)
class Arguments:
    """One call of the op: positional and keyword arguments. Tensors (also inside lists) become
    model inputs; everything else is a constant of the exported graph."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        parts = [_describe(a) for a in self.args] + [f"{k}={_describe(v)}" for k, v in self.kwargs.items()]
        return f"Arguments({', '.join(parts)})"


# -- strategies ----------------------------------------------------------------------------------------


def arguments(*args: Any, **kwargs: Any) -> st.SearchStrategy[Arguments]:
    """A strategy for one call: each argument is a strategy or a fixed value.

    arguments(tensors(), st.integers(-1, 0), False) draws softmax's (self, dim, half_to_float).
    """
    return st.builds(lambda a, k: Arguments(tuple(a), k),
                     st.tuples(*(_as_strategy(a) for a in args)),
                     st.fixed_dictionaries({k: _as_strategy(v) for k, v in kwargs.items()}))


def _as_strategy(value: Any) -> st.SearchStrategy[Any]:
    return value if isinstance(value, st.SearchStrategy) else st.just(value)


def shapes(*, min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4
           ) -> st.SearchStrategy[tuple[int, ...]]:
    """Tensor shapes; they shrink towards fewer and smaller dims. min_side=0 allows empty tensors."""
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


def broadcastable_shapes(num_shapes: int = 2, *, min_dims: int = 0, max_dims: int = 3, min_side: int = 1,
                         max_side: int = 4) -> st.SearchStrategy[tuple[tuple[int, ...], ...]]:
    """`num_shapes` shapes that broadcast together, possibly of different ranks.

    broadcastable_shapes(2).flatmap(lambda s: arguments(tensors(shape=s[0]), tensors(shape=s[1])))
    """
    return mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims,
                                         min_side=min_side, max_side=max_side).map(lambda b: b.input_shapes)


def dtypes(*kinds: DtypeKind, exclude: Iterable[torch.dtype] = ()) -> st.SearchStrategy[torch.dtype]:
    """torch dtypes of the given kinds ("float", "int", "bool", "complex"; default "float").

    "float" includes float16 and bfloat16; onnxruntime's CPU kernels lack most bfloat16 ops, and
    its Python API cannot exchange bfloat16 tensors, so models with bfloat16 inputs or outputs run
    in aten2onnx.runtime only.
    """
    unknown = [k for k in kinds if k not in _DTYPE_KINDS]
    if unknown:
        raise ValueError(f"unknown dtype kinds {unknown}; choose from {sorted(_DTYPE_KINDS)}")
    excluded = set(exclude)
    chosen = [d for k in (kinds or ("float",)) for d in _DTYPE_KINDS[k] if d not in excluded]
    if not chosen:
        raise ValueError(f"dtypes{kinds} with exclude={sorted(map(str, excluded))} leaves no dtype")
    return st.sampled_from(chosen)


def default_elements(dtype: torch.dtype) -> st.SearchStrategy[Any]:
    """Python scalars for a dtype: small finite values (floats in [-10, 10], ints in [-10, 10]
    clipped to the dtype), which keep float comparisons meaningful and integer ops from overflowing."""
    if dtype == torch.bool:
        return st.booleans()
    if dtype.is_complex:
        return st.complex_numbers(max_magnitude=10, allow_nan=False, allow_infinity=False)
    if dtype.is_floating_point:
        return st.floats(-10, 10, allow_nan=False, allow_infinity=False)
    info = torch.iinfo(dtype)
    return st.integers(max(info.min, -10), min(info.max, 10))


@st.composite
def _tensor(draw: st.DrawFn, shape: Any, dtype: Any, elements: Any) -> torch.Tensor:
    size = tuple(draw(shape) if isinstance(shape, st.SearchStrategy) else shape)
    kind = draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype
    values = elements if elements is not None else default_elements(kind)
    n = math.prod(size)
    flat = draw(st.lists(values, min_size=n, max_size=n))
    return torch.tensor(flat, dtype=kind).reshape(size)


def tensors(*, shape: Sequence[int] | st.SearchStrategy[tuple[int, ...]] | None = None,
            dtype: torch.dtype | st.SearchStrategy[torch.dtype] = torch.float32,
            elements: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[torch.Tensor]:
    """Tensors of a fixed shape or one drawn from a strategy (default `shapes()`), of a dtype or
    one drawn from `dtypes(...)`, with element values from `elements` (default
    `default_elements(dtype)`: small and finite; pass st.floats() to include NaN and infinities).
    Values shrink towards 0, shapes towards fewer and smaller dims."""
    return _tensor(shapes() if shape is None else shape, dtype, elements)


# -- the check -----------------------------------------------------------------------------------------


def check_op(op: Callable[..., Any], strategy: st.SearchStrategy[Any], *, opsets: Sequence[int] = (13, 18),
             custom_symbolics: Mapping[str, Callable[..., Any]] | None = None,
             runtimes: Sequence[Runtime] = ("onnxruntime", "aten2onnx"), fallback: Literal["aten", "error"] = "aten",
             check_model: bool = True, rtol: float | None = None, atol: float | None = None,
             max_examples: int | None = None, settings: hypothesis.settings | None = None) -> None:
    """Property-test the export of `op` now: for each input `strategy` draws and each opset, export
    `op` through the real dispatch, run it in `runtimes`, and compare with `op` run eagerly.

    op: an ATen overload (torch.ops.aten.gelu.default), a torch.library op, or any callable of tensors.
    strategy: draws an `Arguments` (see `arguments`), a tuple of positional arguments, or one tensor.
    custom_symbolics: passed to `aten2onnx.export`; symbolics registered with register_symbolic
        apply as in any export.
    runtimes: onnxruntime is skipped for models with ATen fallback nodes (it cannot run them) and
        for bfloat16 inputs or outputs.
    fallback: "error" fails the check when the op has no symbolic (or it raises
        NotImplementedError) for a drawn input; "aten" checks the ATen fallback instead.
    check_model: run onnx.checker (full check, with shape inference) on every export.
    rtol, atol: override `DEFAULT_TOLERANCES` for floating outputs; integer and bool outputs,
        dtypes and shapes must always match exactly, and NaN equals NaN.
    max_examples, settings: hypothesis settings; by default the active profile's, with no deadline.

    Raises MismatchError (a result differs) or OpCheckError (an export or a runtime failed) for
    the minimal failing input hypothesis finds.
    """
    symbolic_property(op, strategy, opsets=opsets, custom_symbolics=custom_symbolics, runtimes=runtimes,
                      fallback=fallback, check_model=check_model, rtol=rtol, atol=atol,
                      max_examples=max_examples, settings=settings)()


def symbolic_property(op: Callable[..., Any], strategy: st.SearchStrategy[Any], *, opsets: Sequence[int] = (13, 18),
                      custom_symbolics: Mapping[str, Callable[..., Any]] | None = None,
                      runtimes: Sequence[Runtime] = ("onnxruntime", "aten2onnx"),
                      fallback: Literal["aten", "error"] = "aten", check_model: bool = True,
                      rtol: float | None = None, atol: float | None = None, max_examples: int | None = None,
                      settings: hypothesis.settings | None = None) -> Callable[[], None]:
    """`check_op` as a test function for pytest to collect, taking no arguments:

        test_gelu = symbolic_property(torch.ops.aten.gelu.default, arguments(tensors()))

    It is a hypothesis test: pin a found bug with `@hypothesis.example(Arguments(...))` on top.
    """
    if not callable(op):
        raise TypeError(f"op must be an ATen overload or a callable of tensors, got {op!r}")
    if not isinstance(strategy, st.SearchStrategy):
        raise TypeError(f"strategy must be a hypothesis strategy, got {type(strategy).__name__}; "
                        "wrap fixed inputs in st.just(...) or use aten2onnx.testing.arguments(...)")
    bad = [r for r in runtimes if r not in ("onnxruntime", "aten2onnx")]
    if bad or not runtimes:
        raise ValueError(f"runtimes must name 'onnxruntime' and/or 'aten2onnx', got {list(runtimes)}")
    if not opsets or not all(isinstance(o, int) for o in opsets):
        raise ValueError(f"opsets must be a non-empty sequence of ints, got {opsets!r}")
    checker = _Checker(op, tuple(opsets), dict(custom_symbolics or {}), tuple(runtimes), fallback, check_model,
                       rtol, atol)

    def test(case: Any) -> None:
        checker.check(case)

    test.__name__ = test.__qualname__ = f"check_{_safe_name(checker.name)}"
    chosen = settings if settings is not None else hypothesis.settings(deadline=None)
    if max_examples is not None:
        chosen = hypothesis.settings(chosen, max_examples=max_examples)
    return chosen(hypothesis.given(strategy)(test))


class _Checker:
    """Runs one drawn case at every opset; caches exports by everything the graph depends on
    (shapes, dtypes and constants, not tensor values), so shrinking values re-exports nothing."""

    def __init__(self, op: Callable[..., Any], opsets: tuple[int, ...], custom: dict[str, Callable[..., Any]],
                 runtimes: tuple[str, ...], fallback: str, check_model: bool, rtol: float | None,
                 atol: float | None) -> None:
        self.op, self.opsets, self.custom, self.runtimes = op, opsets, custom, runtimes
        self.fallback, self.check_model, self.rtol, self.atol = fallback, check_model, rtol, atol
        self.name = _op_name(op)
        self._programs: dict[Any, torch.export.ExportedProgram] = {}
        self._cache: dict[Any, tuple[aten2onnx.ExportedModel, Any]] = {}

    def check(self, case: Any) -> None:
        call = _as_arguments(case)
        leaves, spec = pytree.tree_flatten((call.args, dict(call.kwargs)))
        positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        inputs = [leaves[i] for i in positions]
        try:
            expected = self.op(*_clone(call.args), **_clone(dict(call.kwargs)))
        except Exception as e:
            raise OpCheckError(f"{self.name}: eager PyTorch raised {type(e).__name__}: {e}\n  inputs: {call!r}\n"
                               "The strategy draws inputs the op does not accept; constrain it.",
                               op=self.name, opset=0, stage="eager", inputs=call) from e
        expected_flat = pytree.tree_leaves(expected)

        def fn(*tensors: torch.Tensor) -> Any:
            filled = list(leaves)
            for i, t in zip(positions, tensors):
                filled[i] = t
            args, kwargs = pytree.tree_unflatten(filled, spec)
            return self.op(*args, **kwargs)

        for opset in self.opsets:
            exported, ort_session = self._export(fn, call, leaves, spec, inputs, opset)
            for runtime in self.runtimes:
                if runtime == "onnxruntime":
                    if ort_session is None:
                        continue
                    got = self._run_ort(ort_session, exported, inputs, call, opset)
                else:
                    got = self._run_aten2onnx(exported, inputs, call, opset)
                self._compare(got, expected_flat, exported, call, opset, runtime)

    # -- stages -------------------------------------------------------------------------------------
    def _fail(self, stage: str, call: Arguments, opset: int, detail: str, exported: Any = None) -> OpCheckError:
        return OpCheckError(f"{self.name} at opset {opset}: {detail}\n{self._context(call, opset, exported)}",
                            op=self.name, opset=opset, stage=stage, inputs=call)

    def _export(self, fn: Callable[..., Any], call: Arguments, leaves: list[Any], spec: Any,
                inputs: list[torch.Tensor], opset: int) -> tuple[aten2onnx.ExportedModel, Any]:
        signature = (str(spec), tuple((t.shape, t.dtype) for t in inputs),
                     tuple(repr(leaf) for leaf in leaves if not isinstance(leaf, torch.Tensor)))
        if (opset, signature) in self._cache:
            return self._cache[opset, signature]
        try:
            # Capture once per signature, translate once per opset: capture is most of the cost.
            if signature not in self._programs:
                self._programs[signature] = torch.export.export(_Call(fn), tuple(inputs), strict=False)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the fallback warning; fallback_ops says the same
                exported = aten2onnx.export(self._programs[signature], tuple(inputs), opset=opset,
                                            fallback=self.fallback,  # type: ignore[arg-type]
                                            custom_symbolics=self.custom or None)
                model = exported.model_proto
        except Exception as e:  # an exporter crash is as much a failure of the export as an ExportError
            raise self._fail("export", call, opset, f"export failed: {type(e).__name__}: {e}") from e
        if self.check_model:
            try:
                onnx.checker.check_model(model, full_check=True)
            except Exception as e:
                raise self._fail("onnx.checker", call, opset, f"the exported model is invalid: {e}", exported) from e
        session = None
        if "onnxruntime" in self.runtimes and _ort_can_run(exported):
            try:
                session = _ort_session(model)
            except Exception as e:
                raise self._fail("onnxruntime", call, opset, f"onnxruntime cannot load the model: {e}\n"
                                 "  (pass runtimes=('aten2onnx',) or other dtypes if onnxruntime lacks the kernel)",
                                 exported) from e
        self._cache[opset, signature] = (exported, session)
        return exported, session

    def _run_ort(self, session: Any, exported: aten2onnx.ExportedModel, inputs: list[torch.Tensor],
                 call: Arguments, opset: int) -> list[Any]:
        wanted = {i.name for i in session.get_inputs()}
        feeds = {name: t.numpy() for name, t in zip(exported.input_names, inputs) if name in wanted}
        try:
            results = dict(zip(exported.output_names, session.run(None, feeds)))
        except Exception as e:
            raise self._fail("onnxruntime", call, opset, f"onnxruntime failed: {e}", exported) from e
        # Outputs that are constants of the graph are no model outputs; ExportedModel puts them back.
        structured = exported.structure_outputs({k: torch.from_numpy(v) for k, v in results.items()})
        return pytree.tree_leaves(structured)

    def _run_aten2onnx(self, exported: aten2onnx.ExportedModel, inputs: list[torch.Tensor], call: Arguments,
                       opset: int) -> list[Any]:
        try:
            return pytree.tree_leaves(exported.run(*_clone(inputs)))
        except Exception as e:
            raise self._fail("aten2onnx", call, opset, f"aten2onnx.runtime failed: {type(e).__name__}: {e}",
                             exported) from e

    def _compare(self, got: list[Any], expected: list[Any], exported: aten2onnx.ExportedModel, call: Arguments,
                 opset: int, runtime: str) -> None:
        if len(got) != len(expected):
            raise MismatchError(f"{self.name} at opset {opset}: {runtime} returned {len(got)} outputs, eager "
                                f"PyTorch {len(expected)}\n{self._context(call, opset, exported)}",
                                op=self.name, opset=opset, stage=runtime, inputs=call, output=0)
        for index, (g, e) in enumerate(zip(got, expected)):
            problem = _difference(g, e, self.rtol, self.atol)
            if problem is not None:
                raise MismatchError(f"{self.name} at opset {opset}: {runtime} disagrees with eager PyTorch on "
                                    f"output {index}: {problem}\n{self._context(call, opset, exported)}",
                                    op=self.name, opset=opset, stage=runtime, inputs=call, output=index)

    def _context(self, call: Arguments, opset: int, exported: aten2onnx.ExportedModel | None) -> str:
        lines = [f"  inputs: {call!r}"]
        if exported is not None:
            nodes = [n.op_type for n in exported.model_proto.graph.node]
            lines.append(f"  exported nodes: {', '.join(nodes) or '(none)'}"
                         + (f"; ATen fallback for {exported.fallback_ops}" if exported.fallback_ops else ""))
        handler = self._handler(opset)
        if handler:
            lines.append(f"  symbolic: {handler}")
        return "\n".join(lines)

    def _handler(self, opset: int) -> str | None:
        """Which symbolic the dispatch used for op at opset, for the failure message."""
        if not isinstance(self.op, torch._ops.OpOverload):
            return None
        from aten2onnx.registry import REGISTRY

        fn = self.custom.get(self.name)
        where = "custom_symbolics"
        if fn is None:
            resolved = REGISTRY.resolve(self.op, opset)
            if resolved is None:
                return "none (ATen fallback)"
            fn = resolved.handler
            where = f"{'user' if resolved.user else 'built-in'}, registered at opset {resolved.opset}"
        return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)} ({where})"


class _Call(torch.nn.Module):
    """The op as a module of its tensor arguments, for torch.export."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *tensors: torch.Tensor) -> Any:
        return self.fn(*tensors)


# -- helpers -------------------------------------------------------------------------------------------


def _as_arguments(case: Any) -> Arguments:
    if isinstance(case, Arguments):
        return case
    if isinstance(case, tuple):
        return Arguments(case)
    if isinstance(case, torch.Tensor):
        return Arguments((case,))
    raise TypeError(f"the strategy must draw an Arguments, a tuple of arguments or a tensor; it drew "
                    f"{type(case).__name__}: {case!r}")


def _op_name(op: Callable[..., Any]) -> str:
    if isinstance(op, torch._ops.OpOverload):
        from aten2onnx.registry import overload_key

        return overload_key(op)
    if isinstance(op, torch._ops.OpOverloadPacket):
        return op._qualified_op_name
    return getattr(op, "__qualname__", None) or repr(op)


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


def _clone(tree: Any) -> Any:
    """Fresh copies of the tensors in tree, so an in-place op cannot change the inputs we compare on."""
    return pytree.tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, tree)


from aten2onnx.testing.models import (  # noqa: E402  (random models, built on the helpers above)
    Outcome,
    Program,
    ProgramMismatch,
    check_program,
    programs,
)
