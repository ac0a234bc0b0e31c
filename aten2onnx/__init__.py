"""aten2onnx: export PyTorch models to ONNX through opset-versioned symbolic functions, and run
what it exports.

    import aten2onnx
    exported = aten2onnx.export(model, (x,), opset=18)
    exported.save("model.onnx")
    y = exported.run(x)
"""

from __future__ import annotations

import os
from typing import Any, Callable, Literal, Mapping

import torch
from beartype import BeartypeConf, beartype
from torch.export import ExportedProgram

from aten2onnx.errors import (
    ArgumentError,
    Aten2OnnxError,
    CaptureError,
    ExportError,
    InvalidInputError,
    InternalError,
    InvalidModelError,
    KernelError,
    NarrowedExportWarning,
    RegistrationError,
    RunError,
    SymbolicError,
    UnsupportedOperatorError,
)
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.exporter.model import ExportedModel
from aten2onnx.exporter.training import TrainingModel
from aten2onnx.registry import REGISTRY
from aten2onnx.verification import Divergence, OutputCheck, VerificationReport

__all__ = [
    "export",
    "export_training",
    "export_llm",
    "verify",
    "ExportedModel",
    "TrainingModel",
    "VerificationReport",
    "OutputCheck",
    "Divergence",
    "register_symbolic",
    "unregister_symbolic",
    "GraphBuilder",
    "Value",
    "Aten2OnnxError",
    "ArgumentError",
    "CaptureError",
    "ExportError",
    "InvalidInputError",
    "InternalError",
    "InvalidModelError",
    "KernelError",
    "NarrowedExportWarning",
    "RegistrationError",
    "RunError",
    "SymbolicError",
    "UnsupportedOperatorError",
]
__version__ = "0.1.0"


_checked = beartype(conf=BeartypeConf(violation_param_type=ArgumentError, violation_return_type=ArgumentError))


@_checked
def export(
    model: torch.nn.Module | ExportedProgram | Callable[..., Any],
    args: tuple[Any, ...] | torch.Tensor = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    opset: int = 18,
    dynamic_shapes: Mapping[str, Any] | tuple[Any, ...] | list[Any] | None = None,
    fallback: Literal["aten", "error"] = "aten",
    input_names: list[str] | tuple[str, ...] | None = None,
    output_names: list[str] | tuple[str, ...] | None = None,
    custom_symbolics: Mapping[str, Callable[..., Any]] | None = None,
    progress: bool | None = None,
    exact: bool = False,
    functions: bool | list[type | str] | tuple[type | str, ...] = False,
    optimize: bool | Literal["onnxruntime"] = True,
) -> ExportedModel:
    """Export `model` called on `args`/`kwargs` to ONNX at `opset`.

    model: an nn.Module (exported in eval mode; its state is left exactly as it was), a plain
        function of tensors, or a torch.export.ExportedProgram.
    dynamic_shapes: torch.export's forms (Dim, Dim.AUTO, dicts/tuples by argument) or plain names,
        {"input_ids": {0: "batch", 1: "seq"}}; dynamic dims become ONNX dim_params named after them.
    fallback: "aten" exports ops with no symbolic as ATen nodes (runnable in aten2onnx.runtime) and
        warns; "error" raises one UnsupportedOperatorError listing every such op.
    custom_symbolics: {"aten::op.overload": fn} used for this export only, at every opset.
    progress: progress bars on stderr (capture, rewrite, translation); None: when stderr is a terminal.
    exact: aten2onnx.runtime runs the model bitwise equal to eager PyTorch (README "Exact mode" gives the
        conditions); the file is the same standard ONNX otherwise, with each op's ATen call in metadata.
    functions: module classes (or class names) whose every call becomes a call of an ONNX local function,
        one per class and body (domain aten2onnx.functions, named after the class), its weights passed
        in from the main graph; True: every class called more than once. Listed classes nest.
    optimize: the graph optimizer (exporter/graph_optimizer.py): no-op nodes bypassed, weight-only
        subgraphs folded, batch norms and zero pads folded into the Conv before them, a sum a layer norm
        alone reads written as Sum (not fused by onnxruntime into its slower SkipLayerNormalization),
        duplicates merged. False writes the graph as translated. Exact exports are never optimized.
        "onnxruntime": that, and what onnxruntime alone runs fastest written as its contrib ops (domain
        com.microsoft): scaled_dot_product_attention as MultiHeadAttention, or Attention where query, key
        and value are projections of one input, a causal self-attention as GroupQueryAttention
        (exporter/ort_contrib.py); an RMS norm of a residual sum as
        SkipSimplifiedLayerNormalization; a rotary embedding as RotaryEmbedding; a 4-bit quantized weight's
        matmul as MatMulNBits. Such a file runs in onnxruntime and aten2onnx.runtime only.
    """
    from aten2onnx._backend import runtime_backend
    from aten2onnx.exporter import export_program

    if isinstance(args, torch.Tensor):
        args = (args,)
    return export_program(
        model,
        args,
        dict(kwargs) if kwargs is not None else None,
        opset=opset,
        dynamic_shapes=dynamic_shapes,
        fallback=fallback,
        input_names=list(input_names) if input_names is not None else None,
        output_names=list(output_names) if output_names is not None else None,
        custom_symbolics=dict(custom_symbolics) if custom_symbolics is not None else None,
        backend=runtime_backend(),
        progress=progress,
        exact=exact,
        functions=functions if isinstance(functions, bool) else list(functions),
        optimize=optimize,
    )


@_checked
def export_training(
    model: torch.nn.Module,
    args: tuple[Any, ...] | torch.Tensor = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    targets: tuple[Any, ...] | list[Any] | torch.Tensor = (),
    loss_fn: Callable[..., Any] | None = None,
    opset: int = 18,
    dynamic_shapes: Mapping[str, Any] | tuple[Any, ...] | list[Any] | None = None,
    exact: bool = False,
    optimizer: Any = None,
    fallback: Literal["aten", "error"] = "aten",
    custom_symbolics: Mapping[str, Callable[..., Any]] | None = None,
    progress: bool | None = None,
) -> TrainingModel:
    """Export one training step's forward and backward: the loss `loss_fn(model(*args, **kwargs),
    *targets)`, or without loss_fn the model's own output (a scalar, or its first output), and its
    gradient with respect to each trainable parameter, captured in train mode (dropout and batch norm
    as `model.train()` runs them). The model is left as it was (training flags, requires_grad, .grad,
    buffers).

    The graph's inputs are args then targets (kwargs after them); its outputs `loss`, `<name>.grad`
    per trainable parameter (state_dict names; tied parameters one gradient), then `<buffer>.updated`
    per buffer the forward writes. `TrainingModel.run(*args, *targets)` returns (loss, {name: grad}).
    dynamic_shapes: by the graph's input names (the model's argument names, then `target` or
        `target_<i>`). exact, fallback, custom_symbolics, progress: as for `export`.
    optimizer: a torch.optim.SGD (momentum, dampening, nesterov, weight decay, maximize), Adam or AdamW
        (weight decay, amsgrad, maximize) instance built on the model's parameters (param groups with
        their own hyperparameters too): the graph then also applies its update, spelled as eager's
        single-tensor implementation, and writes each updated parameter and optimizer state as
        `<name>.updated` (`<param>.momentum_buffer`, `<param>.exp_avg`, `<param>.exp_avg_sq`,
        `<param>.max_exp_avg_sq`, `<param>.step`), these being inputs whose initializers are their current
        values (the optimizer's state if it has stepped); hyperparameters are constants, recorded in the
        metadata `aten2onnx.optimizer`. `TrainingModel.step(*args, *targets)` trains in our runtime;
        onnxruntime trains when fed each `.updated` output back as its input.
    """
    from aten2onnx._backend import runtime_backend
    from aten2onnx.exporter import export_traced
    from aten2onnx.exporter.optimizer import plan as optimizer_plan
    from aten2onnx.exporter.training import loss_module

    plan = optimizer_plan(optimizer, model) if optimizer is not None else None
    if isinstance(args, torch.Tensor):
        args = (args,)
    if isinstance(targets, torch.Tensor):
        targets = (targets,)
    kwargs = dict(kwargs) if kwargs is not None else None
    module = loss_module(model, args, kwargs, tuple(targets), loss_fn)
    return export_traced(
        module,
        (*args, *targets),
        kwargs,
        opset=opset,
        dynamic_shapes=dynamic_shapes,
        fallback=fallback,
        input_names=None,
        output_names=None,
        custom_symbolics=dict(custom_symbolics) if custom_symbolics is not None else None,
        backend=runtime_backend(),
        progress=progress,
        exact=exact,
        training=True,
        optimizer=plan,
    ).exported


@_checked
def export_llm(
    model: Any,
    out_dir: str | os.PathLike,
    *,
    opset: int | None = None,
    optimize: Literal["onnxruntime"] | None = None,
    dtype: torch.dtype | None = None,
    precision: Literal["float32", "float16", "bfloat16", "int8", "int4"] | None = None,
    block_size: int = 32,
    symmetric: bool = True,
    accuracy_level: int = 4,
    max_length: int | None = None,
    progress: bool | None = None,
) -> str:
    """Export a decoder-only transformers LLM with its KV cache into out_dir, as onnxruntime-genai runs
    it: `model.onnx` (weights in `model.onnx.data` when large), `genai_config.json`, and the tokenizer
    files of a model folder. Returns the path of model.onnx.

    model: a transformers causal LM, or a local folder AutoModelForCausalLM.from_pretrained loads (no
        downloads). The model is left as it was. A folder of safetensors is never loaded: the model is
        captured without its weights and each is read from the folder as it is written (peak memory
        about the largest weight's, plus the interpreter's).
    The ONNX model's inputs are input_ids [batch_size, sequence_length], attention_mask [batch_size,
    total_sequence_length], position_ids [batch_size, sequence_length] where the architecture takes
    them, and past_key_values.<i>.key/value [batch_size, kv_heads, past_sequence_length, head_size];
    its outputs logits and present.<i>.key/value. Every such dim is symbolic: one model runs prefill
    from an empty cache (past_sequence_length 0) and each decode step.
    dtype: export the model in this dtype (each weight cast as it is written; None keeps the model's).
    precision: the weights' precision. "float32", "float16", "bfloat16": the model in that dtype (as dtype=).
        "int4", "int8": every linear layer's weight (attention, MLP, LM head; not the token embedding)
        quantized per block of `block_size` along its input dim, round-to-nearest, `symmetric` (scales
        only) or with zero points, byte for byte as onnxruntime-genai's model builder quantizes them
        (aten2onnx.exporter.llm_precision); activations in float32 unless dtype says otherwise. Written as
        MatMulNBits (with `accuracy_level`: 4 quantizes activations to int8 per block, as the builder's CPU
        models) where optimize="onnxruntime", else as DequantizeLinear of int4/int8 initializers, which
        needs opset 21 (the default opset then). Each weight is quantized as it is written. A model the user
        quantized (torchao's quantize_) keeps its own quantized weights: only float weights are quantized.
    max_length: genai's context_length and search max_length (default: the model's max positions).
    optimize: None: standard ONNX, run by genai with past_present_share_buffer false. "onnxruntime":
        onnxruntime's contrib ops where the model's modules are ones they compute (checked by running
        both): each attention as a packed QKV projection, RotaryEmbedding of query and key, and one
        GroupQueryAttention (seqlens_k and total_sequence_length from the attention mask, its padding
        as attention_bias; genai's past_present_share_buffer true), RMS norms as
        SimplifiedLayerNormalization, a residual add into a norm as SkipSimplifiedLayerNormalization.
    """
    import copy
    import functools
    import json
    import warnings

    from aten2onnx.exporter import filewrite, llm, llm_fusion, llm_precision

    dtype, quantization = llm_precision.precision_spec(precision, dtype, block_size, symmetric, accuracy_level)
    blocked = quantization is not None and optimize is None  # (DequantizeLinear by blocks)
    if opset is None:
        opset = llm_precision.BLOCKED_OPSET if blocked else 18
    elif blocked and opset < llm_precision.BLOCKED_OPSET:
        raise ArgumentError(f"precision={precision!r} writes each weight as DequantizeLinear of {precision} values by "
                            f"blocks, which ONNX has from opset {llm_precision.BLOCKED_OPSET}: pass opset="
                            f"{llm_precision.BLOCKED_OPSET} or later, or optimize='onnxruntime' (MatMulNBits)")
    source = model
    # from a folder of safetensors: the model without its weights, each read and written one at a time
    streamed = (llm.causal_lm_without_weights(os.fspath(model), dtype)
                if isinstance(model, (str, os.PathLike)) and os.path.isdir(model) else None)
    model = streamed[0] if streamed is not None else llm.causal_lm(model)
    twin = False
    if streamed is None and dtype is not None and any(p.dtype != dtype for p in model.parameters() if p.is_floating_point()):
        # (the fusion check runs the cast model, so it needs one in memory)
        twin = optimize is None
        model = llm.cast_without_copy(model, dtype) if twin else copy.deepcopy(model).to(dtype)
    position_ids = llm.takes_position_ids(model)
    small = functools.cache(lambda: llm.proxy(model))  # (made once: for the fusion plan and the short contexts)
    # a model without weights (on the meta device): its cache's layout as its config says, checked on the
    # capture (which costs a capture of its own otherwise); where the capture's cache differs, or the capture
    # fails, the layout is read from a capture and the model captured again
    read_layout = functools.cache(lambda: llm.cache_layout(model))
    layout = llm.config_layout(model) if next(model.parameters()).device.type == "meta" else None
    guessed = layout is not None
    layout = layout if guessed else read_layout()

    def attempt(layout: llm.CacheLayout) -> tuple:
        return _capture_decoder(model, layout, position_ids, streamed is not None, optimize, max_length, opset,
                                progress, small)

    try:
        captured = attempt(layout)
    except Aten2OnnxError:
        if not guessed or read_layout() == layout:
            raise
        captured = None
    if guessed and (captured is None or not llm.has_layout(captured[0].graph, layout)) and read_layout() != layout:
        layout = read_layout()
        captured = attempt(layout)
    exported, caught, plan, module, args, names = captured
    if optimize == "onnxruntime" and (plan is None or not plan.attention):
        warnings.warn(f"optimize='onnxruntime': {type(model).__name__}'s attention is not one GroupQueryAttention "
                      "is emitted for here (or its fused form did not reproduce the model), so it is exported as "
                      "standard ONNX" + (", its RMS norms fused" if plan is not None else ""), stacklevel=2)
    llm.check_symbolic(exported.graph, names)
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    if plan is not None:
        llm_fusion.to_onnx_domain(exported.graph)
    if quantization is not None:
        llm_precision.quantize_matmuls(exported, quantization, nbits=optimize == "onnxruntime")
    if streamed is not None:
        exported.bind_weights(source, aliases=streamed[1])
    exported.save(path)
    # torch.export counts the past and the new tokens from 2 each (sizes it never takes for constants), so it
    # guards the total length from 4 (which the capture declares, rather than capture twice); the saved model
    # is run on the shortest contexts (total lengths 1 and 2): where it computes them as the model does, that
    # bound is torch.export's bookkeeping, not the graph's, and no narrowing is reported
    narrowed = [w for w in caught if issubclass(w.category, NarrowedExportWarning)]
    # run the saved model (loading it whole) where it is small, else a small model of the same architecture
    # (a quantized model is not the float model it is checked against: its graph is, so the small one checks it)
    direct = (streamed is None and not twin and quantization is None
              and (exported.weight_bytes <= PROXY_ABOVE or _proxying))
    if (llm.runs_short_contexts(path, module, model, layout, position_ids, names) if direct
            else _short_contexts_confirmed(small(), opset, dtype)):
        caught = [w for w in caught if w not in narrowed]
    elif not narrowed:
        warnings.warn(f"export_llm: the exported model was not shown to compute {type(model).__name__}'s results for "
                      f"total_sequence_length (attention_mask's dim 1) below {llm.TOTAL_FROM}, as in a one-token "
                      f"prompt from an empty cache and its first decode step: torch.export captured it for "
                      f"total_sequence_length from {llm.TOTAL_FROM}; prompt such a model with {llm.TOTAL_FROM} or more "
                      "tokens", NarrowedExportWarning, stacklevel=2)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    kept_positions = position_ids and "position_ids" in {i.name for i in exported.graph.input}
    config = llm.genai_config(model, layout, kept_positions, "model.onnx", max_length,
                              share_buffer=plan is not None and plan.attention > 0)
    # (a new file's mode follows the umask, as the model's: a NamedTemporaryFile would keep 0600)
    written = filewrite.write_new(out_dir, [json.dumps(config, indent=4).encode()])
    os.replace(written, os.path.join(out_dir, "genai_config.json"))
    llm.copy_tokenizer(source, out_dir)
    return path


def _capture_decoder(model: torch.nn.Module, layout: Any, position_ids: bool, streamed: bool,
                     optimize: str | None, max_length: int | None, opset: int, progress: bool | None,
                     small: Callable[[], Any]) -> tuple:
    """export_llm's export of the model with a cache of that layout: (the export, the warnings it gave, the
    fusion plan, the module captured, its example inputs, its input names)."""
    import contextlib
    import warnings

    from aten2onnx._backend import runtime_backend
    from aten2onnx.exporter import export_program
    from aten2onnx.exporter import llm, llm_fusion, llm_layers
    from aten2onnx.exporter.passes import PIPELINE

    args, shapes = llm.example_inputs(model, layout, position_ids)
    names = llm.input_names(layout, position_ids)
    module = llm.cache_module(model, layout, position_ids)
    plan = None
    if optimize == "onnxruntime":
        positions = llm.context_length(model, max_length)
        plan = (llm_fusion.choose(model, module, args, positions) if not streamed
                else _plan_like(model, module.layers, position_ids, positions, small()))
    # a model of many alike layers: captured with three, the program repeated to all (llm_layers)
    stack = llm_layers.uniform_stack(model)
    repeated = []

    def capture_with(inexact: list[str]) -> Any:
        ep, done = llm_layers.capture_repeated(model, module, layout, args, shapes, stack, inexact)
        repeated.append(done)
        return ep

    with llm_fusion.watching(module, plan) if plan is not None else contextlib.nullcontext(), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exported = export_program(module, args, None, opset=opset, dynamic_shapes=shapes, fallback="aten",
                                  input_names=names, output_names=llm.output_names(layout),
                                  custom_symbolics=llm_fusion.SYMBOLICS if plan is not None else None,
                                  backend=runtime_backend(), progress=progress, exact=False,
                                  pipeline=llm_fusion.pipeline(PIPELINE) if plan is not None else PIPELINE,
                                  capture_with=capture_with if stack is not None else None)
    if any(repeated):
        exported.notes.append(f"{type(model).__name__}'s {stack.count} layers were captured as "
                              f"{llm_layers.CAPTURED}, the program repeating the last to all of them (they are alike)")
    return exported, caught, plan, module, args, names


def _plan_like(model: torch.nn.Module, layers: int, position_ids: bool, positions: int, like: Any) -> Any:
    """export_llm's fusion plan for a model without weights: the plan chosen by running a small model of
    its architecture with weights (llm.proxy), made for the model's own modules; None where none fits."""
    from aten2onnx.exporter import llm, llm_fusion

    if like is None:
        return None
    layout = llm.cache_layout(like)
    args, _ = llm.example_inputs(like, layout, position_ids)
    chosen = llm_fusion.choose(like, llm.cache_module(like, layout, position_ids), args, positions)
    if chosen is None:
        return None
    made = llm_fusion.plan(model, positions, bool(chosen.attention), like=like)
    if made.attention not in (0, layers):  # (every layer or none, as choose requires)
        made = llm_fusion.plan(model, positions, False, like=like)
    return made if made.forwards else None


# weights above which export_llm checks the shortest contexts on a small model of the same architecture
PROXY_ABOVE = 256 << 20
_proxying = False  # (that small model's own export checks itself directly)


def _short_contexts_confirmed(model: torch.nn.Module | None, opset: int, dtype: torch.dtype | None) -> bool:
    """Whether export_llm of model (a small stand-in) reports no narrowing: its saved model ran the
    shortest contexts as the model does."""
    import tempfile
    import warnings

    global _proxying
    if model is None or _proxying:
        return False
    with tempfile.TemporaryDirectory() as out, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _proxying = True
        try:
            export_llm(model, out, opset=opset, dtype=dtype, progress=False)
        except Aten2OnnxError:
            return False
        finally:
            _proxying = False
    return not any(issubclass(w.category, NarrowedExportWarning) for w in caught)


@_checked
def verify(
    model: torch.nn.Module | ExportedProgram | Callable[..., Any],
    args: tuple[Any, ...] | torch.Tensor = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    opset: int = 18,
    runtimes: tuple[str, ...] | list[str] = ("onnxruntime", "aten2onnx"),
    inputs: tuple[Any, ...] | list[Any] = (),
    custom_symbolics: Mapping[str, Callable[..., Any]] | None = None,
    dynamic_shapes: Mapping[str, Any] | tuple[Any, ...] | list[Any] | None = None,
    fallback: Literal["aten", "error"] = "aten",
    progress: bool | None = None,
    exact: bool = False,
    optimize: bool = True,
) -> VerificationReport:
    """Export `model` as `export` does, run the export in each runtime on `args`/`kwargs` and on each of
    `inputs` (more positional arguments: a tuple, or one tensor; the same kwargs), and compare every
    output, and every buffer or input the model writes, with eager PyTorch (DEFAULT_TOLERANCES per
    dtype, NaN equal to NaN). When anything differs, `first_divergence` names the first FX node whose
    ONNX value differs from eager's value of it: the ONNX node, op type, ATen overload, the user's
    file:line and module. onnxruntime is skipped (and says why) for models it cannot run.
    exact: export with exact=True and hold aten2onnx.runtime to bitwise equality (torch.equal; NaN equal
        to NaN): the first divergence is then the first op whose value is not bitwise eager's.
    optimize: as for export; values the optimizer folded or merged away are not searched, so
        optimize=False searches every FX node's value.
    """
    from aten2onnx.verification import verify_export

    if isinstance(args, torch.Tensor):
        args = (args,)
    return verify_export(model, args, dict(kwargs) if kwargs is not None else None, opset=opset,
                         runtimes=tuple(runtimes), inputs=list(inputs),
                         custom_symbolics=dict(custom_symbolics) if custom_symbolics is not None else None,
                         dynamic_shapes=dynamic_shapes, fallback=fallback, progress=progress, exact=exact,
                         optimize=optimize)[1]


@_checked
def register_symbolic(name: str, opset: int = 9, *,
                      complex: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `fn(g, <schema arguments>)` as the translation of `name` (an ATen overload such as
    "aten::gelu.default", or a torch.library custom op "mylib::op") for every target opset >= opset.

    A user registration wins over the built-in ones at every opset at or above its own. It translates
    nodes with real tensors only, unless `complex=True`: then it translates the nodes with a complex
    tensor among their inputs or results instead, which reach it as real pairs (a trailing axis of 2).
    A real registration still reaches complex nodes whose built-in translation applies the real one to
    parts or to the pairs (docs/operators.md, "Complex tensors").
    """
    from aten2onnx import symbolic  # noqa: F401  (built-ins first, so the user layer sits on top)

    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        REGISTRY.add(name, opset, fn, user=True, complex=complex)
        return fn

    return decorator


@_checked
def unregister_symbolic(name: str, opset: int | None = None, *, complex: bool = False) -> None:
    """Remove a user registration (at one opset, or all of them); the built-in applies again."""
    REGISTRY.remove_user(name, opset, complex=complex)
