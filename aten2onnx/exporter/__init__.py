"""The export pipeline: capture with torch.export, rewrite with the FX passes (passes/), translate
through the registry, assemble."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from aten2onnx import _aten_node
from aten2onnx.errors import ArgumentError, Aten2OnnxError, CaptureError, ExportError, InternalError, warn_user
from aten2onnx.exporter import caches, diagnose, dynamic, passes
from aten2onnx.exporter import optimizer as optimizer_export
from aten2onnx.exporter import ort_contrib
from aten2onnx.exporter import training as training_export
from aten2onnx.exporter import exact as exact_checks
from aten2onnx.exporter import functions as local_functions
from aten2onnx.exporter.capture import capture
from aten2onnx.exporter.model import ExportedModel, build_model
from aten2onnx.exporter.progress import Progress
from aten2onnx.exporter.translate import Translator
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.registry import REGISTRY

__all__ = ["ExportedModel", "GraphBuilder", "Traced", "Value", "export_program", "export_traced"]


@dataclasses.dataclass(frozen=True)
class Backend:
    """What the exporter borrows from a runtime, handed in by its caller (aten2onnx.export passes
    aten2onnx.runtime's, see aten2onnx/_backend.py), so that the exporter imports no runtime.

    evaluate(op_type, opset, inputs, attributes, outputs) -> tensors: folds nodes of constants.
    session(model_proto, fallback_ops) -> a session with run_torch: ExportedModel.run's runner."""

    evaluate: Callable[..., tuple[torch.Tensor, ...]]
    session: Callable[[Any, list[str]], Any]


@dataclasses.dataclass
class Traced:
    """An export with what it was made from, for verification: the FX program translated, and the
    ONNX values each of its top-level nodes became ({FX node name: Value, or a tuple of them, or a number})."""

    exported: ExportedModel
    program: passes.Program
    values: dict[str, Any]


def _check_names(input_names: list[str] | None, output_names: list[str] | None) -> None:
    """Names an ONNX graph can have: non-empty, and each used once across inputs and outputs."""
    seen: dict[str, str] = {}
    for kind, names in (("input", input_names or []), ("output", output_names or [])):
        for name in names:
            if not name:
                raise ArgumentError(f"{kind}_names has an empty name; ONNX values need a name")
            if name in seen:
                raise ArgumentError(f"{kind} name {name!r} is already the name of an {seen[name]}; ONNX gives each "
                                    "value one name, so names must differ across input_names and output_names")
            seen[name] = kind


def export_program(model: Any, args: tuple, kwargs: dict | None, **options: Any) -> ExportedModel:
    """Export as `aten2onnx.export` documents."""
    return export_traced(model, args, kwargs, **options).exported


def export_traced(model: Any, args: tuple, kwargs: dict | None, **options: Any) -> Traced:
    """Export, keeping the program and its values. Every error is an ExportError: one that escapes the
    pipeline from deeper down is a bug of ours, reported as one with its cause chained."""
    try:
        return _export(model, args, kwargs, **options)
    except Aten2OnnxError:
        raise
    except Exception as e:
        raise InternalError(f"aten2onnx failed while exporting: {type(e).__name__}: {e}\nThis is a bug in aten2onnx, "
                            "not in your model; please report it with the traceback above") from e


def _without_data(model: Any) -> bool:
    """Whether model is a module with weights on the meta device."""
    if not isinstance(model, torch.nn.Module):
        return False
    return any(t.device.type == "meta" for t in itertools.chain(model.parameters(), model.buffers()))


def _fake_as_meta(model: Any) -> Any:
    """A module built under FakeTensorMode (its weights fake tensors) as the same module with its weights on
    the meta device, which any capture takes (the module itself is left as it is); anything else as it is."""
    from torch._subclasses.fake_tensor import FakeTensor

    if not isinstance(model, torch.nn.Module) or not any(
            isinstance(t, FakeTensor) for t in itertools.chain(model.parameters(), model.buffers())):
        return model
    import copy

    def meta(t: torch.Tensor) -> torch.Tensor:
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")

    memo: dict[int, Any] = {}
    for p in model.parameters():
        memo.setdefault(id(p), torch.nn.Parameter(meta(p), requires_grad=p.requires_grad))
    for b in model.buffers():
        memo.setdefault(id(b), meta(b))
    return copy.deepcopy(model, memo)


def _export(model: Any, args: tuple, kwargs: dict | None, *, opset: int, dynamic_shapes: Any,
            fallback: str, input_names: list[str] | None, output_names: list[str] | None,
            custom_symbolics: dict[str, Callable] | None, backend: Backend, progress: bool | None = None,
            exact: bool = False, pipeline: Sequence[passes.Pass] = passes.PIPELINE, training: bool = False,
            optimizer: optimizer_export.OptimizerPlan | None = None,
            functions: bool | Sequence[Any] = False, optimize: bool | str = False,
            capture_with: Callable[[list[str]], ExportedProgram] | None = None) -> Traced:
    """training: model is a training.LossModule, captured in train mode as its joint forward-backward
    program; the export is a TrainingModel. optimizer: the update a training export applies after the
    gradients. functions: module classes whose calls become ONNX local functions
    (exporter/functions.py), or True for every class called more than once. optimize: run the graph
    optimizer (exporter/graph_optimizer.py) on the translated graph (never on an exact export). capture_with:
    the program for model, made otherwise than by capturing it (export_llm's repeated layers), given the list
    capture fills with inexact traced calls."""
    from aten2onnx import symbolic  # noqa: F401  (registers the built-in symbolics)
    from aten2onnx.symbolic import MAX_OPSET, MIN_OPSET

    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ExportError(f"opset {opset} is not supported; aten2onnx exports opsets {MIN_OPSET} to {MAX_OPSET}")
    if fallback not in ("aten", "error"):
        raise ExportError(f"fallback must be 'aten' or 'error', not {fallback!r}")
    _check_names(input_names, output_names)
    # optimize="onnxruntime": onnxruntime's contrib ops where they compute what ATen does (a user's own
    # symbolic for the same op wins)
    contrib = ort_contrib.SYMBOLICS if optimize == "onnxruntime" and not exact else {}
    overrides = {REGISTRY.validate(name, fn): fn for name, fn in {**contrib, **(custom_symbolics or {})}.items()}
    stages = Progress(progress)
    notes: list[str] = []
    model = _fake_as_meta(model)
    if _without_data(model):
        # a model built on the meta device is captured on meta inputs (a device its ops can mix with); its
        # weights are bound when the model is written (ExportedModel.bind_weights)
        args, kwargs = pytree.tree_map_only(torch.Tensor, lambda t: t.to("meta"), (args, kwargs))
    try:
        if exact:  # the fast paths are taken in eval mode only; training has paths of its own
            (exact_checks.check_training_model if training else exact_checks.check_model)(model)
        inexact: list[str] = []
        with stages.stage("capture"), diagnose.guarded_globals(model), diagnose.user_tensors_kept(model) as kept:
            ep = (capture_with(inexact) if capture_with is not None else
                  capture(model, args, kwargs, dynamic.normalize(dynamic_shapes), inexact, training=training))
            # a tensor the model keeps elsewhere than its state_dict is named by where it lives
            state_names = {target: kept[id(value)][0] for target, value in ep.constants.items()
                           if isinstance(value, torch.Tensor) and id(value) in kept and kept[id(value)][1] is value}
            if training:
                if exact:
                    exact_checks.check_training_program(ep)
                ep, notes = training_export.joint_program(ep)
                if optimizer is not None:
                    ep = optimizer_export.apply(ep, optimizer)
    except CaptureError as e:
        reshaped = diagnose.reshaped_input(model, args, kwargs, e)
        if reshaped is not None:
            raise reshaped from e
        raise diagnose.classify_capture_error(e) from e.__cause__
    if passes.is_joint(ep) and not training:
        raise ExportError("the program is a joint forward-backward graph (its outputs include a loss and "
                          "gradients), which aten2onnx.export does not take; export the forward program (before "
                          "_export_forward_backward) instead, or the model with aten2onnx.export_training")
    if exact:
        exact_checks.check_traced(inexact)
    diagnose.warn_baked_globals(model)
    dynamic.refuse_data_dependent_squeezes(ep)
    names = dynamic.dim_names(ep, model, args, kwargs, dynamic_shapes)
    if input_names is None and not training:  # a transformers cache's tensors by genai's names
        vals = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
        input_names = caches.input_names(args, kwargs, [spec.arg.name for spec in ep.graph_signature.input_specs
                                                        if spec.kind == InputKind.USER_INPUT
                                                        and isinstance(vals.get(spec.arg.name), torch.Tensor)])
    with stages.stage("rewrite"):
        program = passes.run(ep, pipeline)
    for note in program.notes:
        warn_user(note)
    translator = Translator(program, opset=opset, fallback=fallback, overrides=overrides, evaluator=backend.evaluate,
                            exact=exact, state_names=state_names)
    with torch.no_grad(), stages.stage("translation", total=len(program.gm.graph.nodes) - 1, unit="node") as bar:
        translation = translator.run(input_names, advance=bar.update)
    if output_names is None and not training:
        by_leaf = caches.output_names(getattr(getattr(ep, "call_spec", None), "out_spec", None))
        if by_leaf is not None and len(by_leaf) == len(translation.outputs):
            output_names = [name for name, slot in zip(by_leaf, translation.outputs) if slot.value is not None]
    classes: set[str] = set()
    function_notes: list[str] = []
    if functions:
        classes, function_notes = local_functions.selected_classes(functions, translation.module_stacks.values())
    watched: list[torch.Tensor] = []
    skeleton, weights, in_names, out_names = build_model(translation, opset=opset, output_names=output_names,
                                                         exact=exact, functions=classes, notes=function_notes,
                                                         optimize=False if exact else optimize, watched=watched)
    for note in function_notes:
        warn_user(note)
    dynamic.rename_dims(skeleton, names)
    dynamic.warn_fixed_dims(skeleton, model, args, kwargs, dynamic_shapes, in_names)
    dynamic.mark_not_one(skeleton, ep, names)
    dynamic.pin_ratio_pools(skeleton, ep, model, names)
    if optimizer is not None:
        entry = skeleton.metadata_props.add()
        entry.key, entry.value = optimizer_export.OPTIMIZER_KEY, optimizer.metadata()
    # only fallbacks left in the graph count (one feeding only a dropped runtime assertion does not)
    in_graph = _aten_node.overload_keys(skeleton.graph).union(*(_aten_node.overload_keys(f) for f in skeleton.functions))
    translation.fallback_ops = sorted(set(translation.fallback_ops) & in_graph)
    if translation.fallback_ops:
        warn_user(
            f"{len(translation.fallback_ops)} op(s) exported as ATen fallback nodes, runnable in aten2onnx.runtime "
            f"but not in onnxruntime: {', '.join(translation.fallback_ops)}"
        )
    if translation.decomposed_ops:
        notes.append(f"{len(translation.decomposed_ops)} op(s) with no symbolic for this case exported as torch's "
                     f"decomposition of them, in standard ONNX nodes: {', '.join(translation.decomposed_ops)}")
    out_iter = iter(out_names)
    outputs = [(next(out_iter) if slot.value is not None else None, slot.constant) for slot in translation.outputs]
    call_spec = getattr(ep, "call_spec", None)
    extra = {}
    if training:  # the model's own parameters and buffers (not the optimizer's states)
        extra["model_state"] = [spec.target for spec in ep.graph_signature.input_specs
                                if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER)
                                and not (optimizer is not None and optimizer.holds(spec.target))]
    exported = (training_export.TrainingModel if training else ExportedModel)(
        skeleton,
        weights,
        input_names=in_names,
        output_names=out_names,
        fallback_ops=translation.fallback_ops,
        in_spec=call_spec.in_spec if call_spec else None,
        out_spec=call_spec.out_spec if call_spec else None,
        user_inputs=[v.name if v is not None else None for v in translation.user_inputs],
        outputs=outputs,
        opset=opset,
        session_factory=backend.session,
        notes=notes + list(program.notes) + function_notes,  # a training export's notes are facts (tied weights), not warnings
        decomposed_ops=translation.decomposed_ops,
        watched=watched,
        **extra,
    )
    return Traced(exported, program, translation.values)
