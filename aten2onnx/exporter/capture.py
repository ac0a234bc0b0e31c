"""Capture a model as an ATen-level ExportedProgram with torch.export, leaving the model as it was."""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import logging
import os
import re
import sys
import traceback
import warnings
from typing import Any, Callable, Iterator

import sympy
import torch
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes
from torch.export.graph_signature import InputKind

from aten2onnx.errors import CaptureError, LibraryRefusal, NarrowedExportWarning, warn_user
from aten2onnx.exporter import caches, dynamic
from aten2onnx.exporter.gradients import HINT, GradientCalls, below_autograd, saved_tensors_attached, transformed
from aten2onnx.exporter.passes.libraries import library_equivalents
from aten2onnx.exporter.passes.packed import packed_sequences
from aten2onnx.exporter.passes.tracing import (DataDependentChecks, LayerEquivalents, causal_masks_taken_as_given,
                                               data_dependent_sizes_from_zero, fake_kernels, shapes_without_kernels)
from aten2onnx.exporter.provenance import source_of

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep  # (site-packages below it holds models' libraries)
_LAYERS_DIR = os.path.join(_TORCH_DIR, "nn") + os.sep  # torch.nn's own layers, model code too


class _FunctionModule(torch.nn.Module):
    """Lets torch.export capture a plain function of tensors."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn


def _function_module(fn: Callable) -> torch.nn.Module:
    """A module whose forward has fn's signature, so inputs keep the function's parameter names."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin such as torch.remainder: inputs named args_0, args_1, ...
        signature = None
    if signature is not None:
        self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        forward.__signature__ = signature.replace(parameters=[self_param, *signature.parameters.values()])
    cls = type(f"Function_{getattr(fn, '__name__', 'fn')}", (_FunctionModule,), {"forward": forward})
    # torch.export keeps stack frames of functions named "forward" only, unless a function is
    # registered as an anchor; without this, nodes of a plain function would have no source line.
    anchor = getattr(torch.fx.proxy, "_register_stack_trace_anchor", None)
    if anchor is not None:
        anchor(fn)
    return cls(fn)


@contextlib.contextmanager
def eval_mode(model: torch.nn.Module) -> Iterator[None]:
    """Export in eval mode, then put back every module's training flag and every parameter's
    requires_grad exactly as they were."""
    with training_mode(model, training=False):
        yield


@contextlib.contextmanager
def training_mode(model: torch.nn.Module, *, training: bool) -> Iterator[None]:
    """Export in train or eval mode (`model.train(training)`), then put back every module's training
    flag and every parameter's requires_grad exactly as they were."""
    training_flags = {m: m.training for m in model.modules()}
    requires_grad = {p: p.requires_grad for p in model.parameters()}
    try:
        try:
            model.train(training)
        except NotImplementedError:
            # ExportedProgram.module() and the GraphModules quantization's convert_pt2e gives refuse train() and
            # eval(): their graphs fixed the mode when captured, so there is nothing to switch
            pass
        yield
    finally:
        for module, flag in training_flags.items():
            module.training = flag
        for param, flag in requires_grad.items():
            param.requires_grad_(flag)


def _user_frame(exc: BaseException) -> str | None:
    """file:line of the innermost frame in the model's code of an exception: the user's (outside torch,
    aten2onnx, Python's standard library and generated code such as `<string>`), else a torch.nn
    layer's own forward (a layer whose code torch cannot capture)."""
    found = layer = None
    while exc is not None:
        for frame in traceback.extract_tb(exc.__traceback__):
            name = frame.filename
            if name.startswith(_LAYERS_DIR) and "/nn/modules/" in name.replace(os.sep, "/"):
                layer = f"{name}:{frame.lineno}"
            if name.startswith("<") or (name.startswith(_STDLIB_DIR) and "site-packages" not in name):
                continue
            if not name.startswith((_TORCH_DIR, _OWN_DIR)):
                found = f"{name}:{frame.lineno}"
        exc = exc.__cause__ or exc.__context__
    return found or layer


class _Recorder(logging.Filter):
    """Keeps torch's log records instead of letting its handlers print them."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.printed: list[str] = []  # what failed attempts printed to stderr

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return False


@contextlib.contextmanager
def _quiet_torch(recorder: _Recorder) -> Iterator[None]:
    """torch.export logs pages of FX dumps and guard tracebacks while it fails, and dynamo warns about
    its own workings: during capture both are kept in `recorder` (a failure reports what matters in
    its own words). Warnings raised from outside torch, the user's own, are given back."""
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name == "torch" or name.startswith("torch.")]
    handlers = {h for logger in loggers for h in logger.handlers}
    for handler in handlers:
        handler.addFilter(recorder)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            yield
    finally:
        for handler in handlers:
            handler.removeFilter(recorder)
    for w in caught:
        if not str(w.filename).startswith(_TORCH_DIR):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


_ASSERTION = re.compile(r"Runtime assertion failed for expression (?P<expr>.+) on node")
_UNBACKED = re.compile(r"\bu\d+\b")
_SIZE_BOUNDS = re.compile(r"u\d+ >= 0|u\d+ <= .+")  # what every size read from data is checked against


def data_dependent_assumptions(ep: ExportedProgram) -> list[str]:
    """The runtime assertions of ep on values read from data (torch's unbacked symbols u0, u1, ...)
    beyond a size's natural bounds, e.g. Eq(u0, 2) where a masked selection meets a fixed size: each
    with the user's line that made the value. The graph we export drops them (dead_code.ASSERTIONS)."""
    found = []
    for node in ep.graph.nodes:
        if node.target is not torch.ops.aten._assert_scalar.default:
            continue
        match = _ASSERTION.match(str(node.args[1]))
        if match is None or not _UNBACKED.search(match["expr"]) or _SIZE_BOUNDS.fullmatch(match["expr"]):
            continue
        made = next((n for n in _ancestors(node.args[0]) if isinstance(n.meta.get("val"), torch.Tensor)), None)
        where = source_of(made) if made is not None else None
        found.append(match["expr"] + (f" (the value from {where})" if where else ""))
    return found


def _check_example_holds(ep: ExportedProgram, module: torch.nn.Module, args: tuple, kwargs: dict | None,
                         assumed: list[str]) -> None:
    """CaptureError when the example inputs themselves break what torch.export assumed of values read from
    data (its own program fails on them): the ONNX graph, which cannot check the assumption, would compute
    with the assumed sizes and give wrong results on the very inputs the model was exported with."""
    copies = copy.deepcopy((args, kwargs or {}))
    # the program's module reads and writes the model's own buffers and constants: kept as they were
    state = {**{k: v for k, v in ep.state_dict.items() if k in ep.graph_signature.buffers}, **ep.constants}
    saved = {k: v.clone() for k, v in state.items() if isinstance(v, torch.Tensor)}
    try:
        with torch.no_grad():
            ep.module()(*copies[0], **copies[1])
    except RuntimeError as e:
        failed = _ASSERTION.search(str(e))
        if failed is None:
            return  # not an assumption that failed: the checks after capture report what else is wrong
        broken = next((a for a in assumed if a.startswith(failed["expr"])), failed["expr"])
        source = broken.split(" (the value from ", 1)[1].rstrip(")") if " (the value from " in broken else None
        raise CaptureError(
            f"torch.export assumed {broken}, and your example inputs themselves break it: the program torch "
            "captured fails on them, and an ONNX graph, which cannot check the assumption, would compute with the "
            "assumed sizes and give wrong results. A size read from data (unique, nonzero, a masked selection) "
            "met something that needs to know it: most often a broadcast against a fixed size, which torch "
            "resolves by assuming the size is not 1. Where you know the size, say so before it is used "
            "(torch._check(t.shape[0] == 1)); otherwise make the shapes agree without broadcasting (expand or "
            "index explicitly).", source=source) from e
    except Exception:  # another failure of torch's program: the checks after capture report what is wrong
        return
    finally:
        with torch.no_grad():
            for k, v in saved.items():
                state[k].copy_(v)


def _ancestors(node: Any) -> Iterator[torch.fx.Node]:
    """The nodes node is computed from, nearest first."""
    queue, seen = [node], set()
    while queue:
        current = queue.pop(0)
        if not isinstance(current, torch.fx.Node) or current in seen:
            continue
        seen.add(current)
        yield current
        queue.extend(current.all_input_nodes)


def _suggested_fixes(e: BaseException) -> list[str]:
    """The lines of torch.export's "Suggested fixes:" (e.g. `seq = Dim('seq', max=512)`), if any."""
    text = str(e)
    if "Suggested fixes:" not in text:
        return []
    tail = text.split("Suggested fixes:", 1)[1].strip().split("\n\n")[0]
    return [line.strip() for line in tail.splitlines() if "=" in line]


def _refined(mode: str, module: torch.nn.Module, args: tuple, kwargs: dict | None, dynamic_shapes: Any,
             e: BaseException) -> tuple[ExportedProgram, list[str]] | None:
    """When torch.export rejected declared dynamic dims and offered fixes (a narrower range, a
    relation, a constant), the non-strict (or gradient) capture again with the fixes applied, warning
    which fixes were applied."""
    fixes = _suggested_fixes(e)
    if not fixes or dynamic_shapes is None:
        return None
    traced: list[str] = []
    try:
        # torch's parser reads every line after the heading as a fix; its closing hints are not
        refined = refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n" + "\n".join(fixes), dynamic_shapes)
        with DataDependentChecks(traced), LayerEquivalents(traced), \
                (below_autograd() if mode in BELOW_AUTOGRAD else contextlib.nullcontext()):
            ep = torch.export.export(module, args, kwargs, dynamic_shapes=refined, strict=False)
    except Exception:  # the fixes did not apply: the original failure is reported
        return None
    warn_user(f"torch.export narrowed the dynamic dims you declared, applying its suggested fixes: "
              f"{'; '.join(fixes)}. The exported model accepts {', '.join(_accepted_ranges(ep)) or 'static shapes only'}. "
              "Declare the dims so in dynamic_shapes to silence this warning.", NarrowedExportWarning)
    return ep, traced


# the captures traced below autograd (gradients.py)
BELOW_AUTOGRAD = ("gradient", "transforms")


def _attempt(mode: str, module: torch.nn.Module, args: tuple, kwargs: dict | None, dynamic_shapes: Any,
             gradients: GradientCalls, recorder: _Recorder) -> tuple[ExportedProgram, list[str]]:
    """One torch.export capture: "non-strict" (watching for gradient calls), "gradient" (non-strict below
    autograd, for a forward that takes gradients), "transforms" (the same, for a forward whose only
    torch.func transform is vmap: nothing to differentiate, so the program is kept as traced) or
    "strict"; the program and the calls traced as formulas of aten2onnx's own."""
    traced: list[str] = []
    printed = io.StringIO()
    contexts = {"non-strict": lambda: (DataDependentChecks(traced), LayerEquivalents(traced), packed_sequences(),
                                       gradients),
                "gradient": lambda: (DataDependentChecks(traced), LayerEquivalents(traced), packed_sequences(),
                                     GradientCalls(), below_autograd()),
                "transforms": lambda: (DataDependentChecks(traced), LayerEquivalents(traced), packed_sequences(),
                                       below_autograd()),
                "strict": lambda: ()}[mode]()
    try:
        # torch.export prints a failed trace's partial graph to stderr: kept, and given back only when
        # the attempt succeeds (then it is the model's own output)
        with contextlib.redirect_stderr(printed), contextlib.ExitStack() as stack:
            for context in contexts:
                stack.enter_context(context)
            ep = torch.export.export(module, args, kwargs, dynamic_shapes=dynamic_shapes, strict=mode == "strict")
    except Exception:
        recorder.printed.append(printed.getvalue())
        raise
    sys.stderr.write(printed.getvalue())
    return (saved_tensors_attached(ep) if mode == "gradient" else ep), traced


def _size_oblivious(module: torch.nn.Module, args: tuple, kwargs: dict | None, dynamic_shapes: Any,
                    recorder: _Recorder) -> tuple[ExportedProgram, list[str]] | None:
    """A capture that keeps declared dynamic dims dynamic though their example size is 0 or 1 (torch
    reads a size it has seen as 0 or 1 as that constant; size-oblivious, it assumes neither), kept only
    when its program gives eager's results on the example: code whose result depends on a size being
    1 (a squeeze of that dim) then stays specialized, as torch.export made it."""
    from torch.fx.experimental import _config as fx_config

    try:
        watch = GradientCalls()
        with fx_config.patch(backed_size_oblivious=True):
            captured = _attempt("non-strict", module, args, kwargs, dynamic_shapes, watch, recorder)
        if watch.autograd or watch.transform:  # a forward taking gradients has a capture of its own
            return None
        if dynamic.specialized_small(captured[0], module, args, kwargs, dynamic_shapes) or \
                _squeezes_symbolic(captured[0]):
            return None
        with torch.no_grad():
            want = module(*args, **(kwargs or {}))
            got = captured[0].module()(*args, **(kwargs or {}))
    except Exception:  # the first capture stands
        return None
    want_leaves, want_spec = pytree.tree_flatten(want)
    got_leaves, got_spec = pytree.tree_flatten(got)
    same = want_spec == got_spec and all(
        not isinstance(w, torch.Tensor) and w == g
        or isinstance(w, torch.Tensor) and isinstance(g, torch.Tensor) and w.shape == g.shape and w.dtype == g.dtype
        and torch.allclose(w.float() if not w.is_complex() else w, g.float() if not g.is_complex() else g,
                           equal_nan=True)
        for w, g in zip(want_leaves, got_leaves))
    return captured if same else None


def _squeezes_symbolic(ep: ExportedProgram) -> bool:
    """Whether a squeeze meets a symbolic dim: whether it drops it depends on the size being 1, which a
    size-oblivious capture assumed it is not (an ONNX graph's rank is fixed; eager's would change)."""
    squeezes = (torch.ops.aten.squeeze.dim, torch.ops.aten.squeeze.dims, torch.ops.aten.squeeze.default,
                torch.ops.aten.squeeze_copy.dim, torch.ops.aten.squeeze_copy.dims, torch.ops.aten.squeeze_copy.default)
    for node in ep.graph.nodes:
        if node.op != "call_function" or node.target not in squeezes:
            continue
        val = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
        if not isinstance(val, torch.Tensor):
            return True
        dims = node.args[1] if len(node.args) > 1 else list(range(val.dim()))
        dims = [dims] if isinstance(dims, int) else dims
        if any(not isinstance(val.shape[d], int) for d in dims if -val.dim() <= d < val.dim()):
            return True
    return False


def _accepted_ranges(ep: ExportedProgram) -> list[str]:
    """`name[dim] in [lo, hi]` for each dynamic dim of the program's user inputs."""
    ranges = []
    user = {spec.arg.name for spec in ep.graph_signature.input_specs if spec.kind == InputKind.USER_INPUT}
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        if node.op != "placeholder" or node.name not in user or not isinstance(val, torch.Tensor):
            continue
        for dim, size in enumerate(val.shape):
            if isinstance(size, torch.SymInt) and size.node.expr.is_symbol:
                bounds = ep.range_constraints.get(size.node.expr)
                if bounds is not None:
                    upper = int(bounds.upper) if isinstance(bounds.upper, sympy.Integer) else "inf"
                    ranges.append(f"{node.name}[{dim}] in [{int(bounds.lower)}, {upper}]")
    return ranges


def _every_argument(module: torch.nn.Module, args: tuple, kwargs: dict | None, dynamic_shapes: Any) -> Any:
    """dynamic_shapes by argument name with the arguments it leaves out as static (None): torch.export
    wants every argument named, users (as with dynamic_axes) name the dynamic ones."""
    if not isinstance(dynamic_shapes, dict):
        return dynamic_shapes
    try:
        bound = inspect.signature(module.forward).bind(*args, **(kwargs or {}))
    except TypeError:
        return dynamic_shapes
    if not set(dynamic_shapes) <= set(bound.arguments):
        return dynamic_shapes  # torch.export names what is wrong
    return {name: dynamic_shapes.get(name) for name in bound.arguments}


# Where torch keeps eager-mode quantization's converted modules (their packed weights are TorchScript
# objects torch.export cannot trace); torch.ao.nn.qat's fake-quantized modules trace as they are
_EAGER_QUANTIZED = ("torch.ao.nn.quantized", "torch.ao.nn.intrinsic.quantized",
                    "torch.nn.quantized", "torch.nn.intrinsic.quantized")


def _refuse_eager_mode_quantization(module: torch.nn.Module) -> None:
    found = [f"{name or '<root>'} ({type(m).__module__}.{type(m).__name__})" for name, m in module.named_modules()
             if type(m).__module__.startswith(_EAGER_QUANTIZED)]
    if found:
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        raise CaptureError(f"{', '.join(found[:3])}{more}: eager-mode quantized modules (torch.ao.quantization's "
                           "convert), whose packed weights torch.export cannot capture. Quantize the float model with "
                           "PT2E (torchao.quantization.pt2e: prepare_pt2e, calibrate, convert_pt2e) or torchao's "
                           "quantize_ instead and export that: aten2onnx exports both as QuantizeLinear/"
                           "DequantizeLinear graphs", source=None)


def capture(model: Any, args: tuple, kwargs: dict | None, dynamic_shapes: Any,
            inexact: list[str] | None = None, *, training: bool = False) -> ExportedProgram:
    """The model as an ExportedProgram, captured in eval mode, or in train mode with training=True.
    inexact, when given, collects the calls traced as a formula of aten2onnx's own
    (passes/tracing.py), whose rounding may differ from eager's kernel."""
    if isinstance(model, ExportedProgram):
        return model
    module = model if isinstance(model, torch.nn.Module) else _function_module(model)
    _refuse_eager_mode_quantization(module)
    caches.register()  # a transformers cache among the inputs flattens with no registration by the user
    fake_kernels()  # ATen ops torch cannot trace for want of a fake kernel (fake quantization)
    dynamic_shapes = _every_argument(module, args, kwargs, dynamic_shapes)
    failures: list[tuple[str, BaseException]] = []
    recorder = _Recorder()
    gradients = GradientCalls()
    with training_mode(module, training=training), causal_masks_taken_as_given(), data_dependent_sizes_from_zero(), \
            shapes_without_kernels(), library_equivalents(), _quiet_torch(recorder):
        def attempt(mode: str) -> tuple[ExportedProgram, list[str]] | None:
            try:
                return _attempt(mode, module, args, kwargs, dynamic_shapes, gradients, recorder)
            except LibraryRefusal:
                raise  # an equivalent's advice, final whatever the mode
            except Exception as e:  # torch.export raises many types; all are reported below
                failures.append((mode, e))
                return None if mode == "strict" else _refined(mode, module, args, kwargs, dynamic_shapes, e)

        # an example size of 0 or 1 for a dim declared dynamic: torch would take it for a constant
        captured = None
        if not training and dynamic.small_examples(module, args, kwargs, dynamic_shapes):
            captured = _size_oblivious(module, args, kwargs, dynamic_shapes, recorder)
        if captured is None:
            captured = attempt("non-strict")
        # a forward that takes gradients is captured below autograd (gradients.py), where torch's own
        # capture sees the backward only in part (and keeps torch.func transforms as calls of their
        # own); its trace is kept for when that capture fails
        # (strict capture, dynamo, traces neither requires_grad_ nor autograd.grad: not tried then)
        if gradients.takes_gradients or (gradients.transform and (captured is None or transformed(captured[0]))):
            captured = attempt("gradient" if gradients.takes_gradients else "transforms") or captured
        elif captured is None:
            captured = attempt("strict")
        if captured is not None:
            ep, traced = captured
            assumed = data_dependent_assumptions(ep)
            if assumed:
                _check_example_holds(ep, module, args, kwargs, assumed)
                warn_user(f"torch.export assumed, of values the model reads from its inputs' data: {'; '.join(assumed)}. "
                          "Its own program checks this at run time, an ONNX graph cannot: the exported model holds "
                          "only for inputs where it holds (elsewhere it fails or computes with the assumed sizes). "
                          "Where other inputs must work, avoid what forced it (e.g. a size read from data broadcast "
                          "against a fixed size).", NarrowedExportWarning)
            if inexact is not None:
                inexact.extend(traced)
            return ep
    where = next((w for w in (_user_frame(e) for _, e in failures) if w), None)
    lines = [f"torch.export could not capture the model{f' (at {where})' if where else ''}."]
    for mode, e in failures:
        message = str(e).strip().split("\n\n")[0]
        lines.append(f"  {mode} capture: {type(e).__name__}: {message}")
    if any(mode == "gradient" for mode, _ in failures):
        lines.append(f"Fix the gradient capture's failure. {HINT}")
    else:
        lines.append("Fix the first failure: non-strict capture traces your Python as written.")
    torch_log = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in recorder.records] + \
        [text for text in recorder.printed if text.strip()]
    if torch_log:
        lines.append(f"(torch logged {len(torch_log)} messages while failing; they are in this error's `details`)")
    raise CaptureError("\n".join(lines), failures=failures, source=where, torch_log=torch_log) from failures[0][1]
