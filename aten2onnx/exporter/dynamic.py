"""Dynamic shapes: accept torch.export's forms and the plain `{"x": {0: "batch"}}` form, name ONNX
dim_params after the user's dims, and say when torch.export made a declared-dynamic dim static."""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import onnx
import torch
from torch.export import Dim, ExportedProgram
from torch.export.graph_signature import InputKind

from aten2onnx._onnx_graphs import graphs
from aten2onnx.errors import ExportError, NarrowedExportWarning, warn_user


def normalize(dynamic_shapes: Any) -> Any:
    """torch.export's dynamic_shapes, with plain dim names turned into Dim.AUTO: torch.export then
    works out each dim's range and relations itself, as users of dynamic_axes expect; the name is
    kept for the ONNX dim_param."""

    def convert(spec: Any) -> Any:
        if isinstance(spec, str):
            if not spec.isidentifier():
                raise ValueError(f"dynamic dim name {spec!r} must be a Python identifier")
            return Dim.AUTO
        if isinstance(spec, dict):
            return {k: convert(v) for k, v in spec.items()}
        if isinstance(spec, (list, tuple)):
            return type(spec)(convert(v) for v in spec)
        return spec

    return convert(dynamic_shapes)


def _declared(model: Any, args: tuple, kwargs: dict | None, dynamic_shapes: Any) -> dict[str, dict[int, str]]:
    """{argument name: {dim: display name}} for top-level tensor arguments declared dynamic."""
    if dynamic_shapes is None:
        return {}
    try:
        forward = model.forward if isinstance(model, torch.nn.Module) else model
        bound = inspect.signature(forward).bind(*args, **(kwargs or {}))
    except TypeError:
        return {}
    names = list(bound.arguments)
    if isinstance(dynamic_shapes, dict):
        items = dynamic_shapes.items()
    else:
        items = zip(names, dynamic_shapes)
    declared: dict[str, dict[int, str]] = {}
    for name, spec in items:
        if isinstance(spec, dict) and isinstance(bound.arguments.get(name), torch.Tensor):
            declared[name] = {int(d): _dim_label(v, name, d) for d, v in spec.items() if v is not None}
    return declared


def _dim_label(spec: Any, arg: str, dim: int) -> str:
    name = spec if isinstance(spec, str) else getattr(spec, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else f"{arg}_dim{dim}"


def dim_names(ep: ExportedProgram, module: Any, args: tuple, kwargs: dict | None, dynamic_shapes: Any) -> dict[str, str]:
    """torch.export's symbol names (s31) -> the user's dim names (batch); warns for each declared
    dynamic dim that torch.export specialized to a constant. dynamic_shapes is the user's own spec."""
    if not callable(module):
        return {}
    declared = _declared(module, args, kwargs, dynamic_shapes)
    if not declared:
        return {}
    user = [spec.arg.name for spec in ep.graph_signature.input_specs if spec.kind == InputKind.USER_INPUT]
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    mapping: dict[str, str] = {}
    for name in user:
        dims = declared.get(name)
        node = placeholders.get(name)
        if not dims or node is None or not isinstance(node.meta.get("val"), torch.Tensor):
            continue
        shape = node.meta["val"].shape
        for dim, label in dims.items():
            size = shape[dim] if dim < len(shape) else None
            if isinstance(size, torch.SymInt) and size.node.expr.is_symbol:
                mapping.setdefault(str(size.node.expr), label)
    return mapping


def warn_fixed_dims(model: onnx.ModelProto, module: Any, args: tuple, kwargs: dict | None, dynamic_shapes: Any,
                    input_names: list[str]) -> None:
    """A NarrowedExportWarning for each dim declared dynamic (a named Dim, Dim.AUTO or a plain name) that the
    exported model's input holds fixed, whatever fixed it (torch.export specializing it, quietly under
    Dim.AUTO; a training export's backward): the model accepts only that size there."""
    if not callable(module):
        return
    declared = _declared(module, args, kwargs, dynamic_shapes)
    inputs = {info.name: info for info in model.graph.input}
    for name, dims in declared.items():
        info = inputs.get(name)
        if info is None:
            continue
        shape = info.type.tensor_type.shape.dim
        for dim, label in sorted(dims.items()):
            if dim < len(shape) and shape[dim].HasField("dim_value"):
                warn_user(f"input {name!r} dim {dim} ({label}) was declared dynamic, but the export fixed it at "
                          f"{shape[dim].dim_value}: the exported model accepts only that size there. torch.export "
                          "specialized it where the model's code (or a training export's backward) treats the size "
                          "as a constant; export with an example size other than 0 or 1, or change that code.",
                          NarrowedExportWarning)


def small_examples(model: Any, args: tuple, kwargs: dict | None, dynamic_shapes: Any) -> bool:
    """Whether a top-level tensor argument declared dynamic has an example size of 0 or 1 there."""
    declared = _declared(model, args, kwargs, dynamic_shapes)
    if not declared:
        return False
    forward = model.forward if isinstance(model, torch.nn.Module) else model
    bound = inspect.signature(forward).bind(*args, **(kwargs or {})).arguments
    return any(d < bound[name].dim() and bound[name].shape[d] <= 1
               for name, dims in declared.items() for d in dims)


def specialized_small(ep: ExportedProgram, module: Any, args: tuple, kwargs: dict | None,
                      dynamic_shapes: Any) -> list[str]:
    """The declared dynamic dims (`input[dim]`) torch.export specialized because their example size
    is 0 or 1 (it takes a size it has seen as 0 or 1 for a constant)."""
    if not callable(module):
        return []
    declared = _declared(module, args, kwargs, dynamic_shapes)
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    small = []
    for spec in ep.graph_signature.input_specs:
        node = placeholders.get(spec.arg.name)
        if spec.kind != InputKind.USER_INPUT or spec.arg.name not in declared or node is None:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        small += [f"{spec.arg.name}[{dim}]" for dim in declared[spec.arg.name]
                  if dim < val.dim() and isinstance(val.shape[dim], int) and val.shape[dim] <= 1]
    return small


def rename_dims(model: onnx.ModelProto, mapping: dict[str, str]) -> None:
    """Replace symbol names in every dim_param of the graph's (and subgraphs') inputs and outputs."""
    if not mapping:
        return
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, mapping)) + r")\b")
    for graph in graphs(model.graph):
        for info in list(graph.input) + list(graph.output) + list(graph.value_info):
            for d in info.type.tensor_type.shape.dim:
                if d.dim_param:
                    d.dim_param = pattern.sub(lambda m: mapping[m.group(1)], d.dim_param)



# dim_params of the inputs that a squeeze meets: the graph keeps the dim (it assumes the size is not 1, as
# torch.export does), so aten2onnx.runtime refuses an input where it is 1 (runtime/validate.py reads it)
NOT_ONE_KEY = "aten2onnx.dims_not_one"


def squeezed_sizes(ep: ExportedProgram) -> list[tuple[str, str | None]]:
    """(symbol, the user's file:line) for each size given by a symbol alone that a squeeze meets: whether the
    squeeze drops that dim depends on the size being 1, which an ONNX graph, whose rank is fixed, cannot follow."""
    from aten2onnx.exporter.provenance import module_of, source_of, user_frame

    aten = torch.ops.aten
    squeezes = {aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.squeeze_copy.dim,
                aten.squeeze_copy.dims, aten.squeeze_copy.default}
    found: list[tuple[str, str | None]] = []
    for node in ep.graph.nodes:
        if node.op != "call_function" or node.target not in squeezes or not isinstance(node.args[0], torch.fx.Node):
            continue
        val = node.args[0].meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        dims = node.args[1] if len(node.args) > 1 else list(range(val.dim()))
        for d in [dims] if isinstance(dims, int) else dims:
            size = val.shape[d] if -val.dim() <= d < val.dim() else None
            if isinstance(size, torch.SymInt) and size.node.expr.is_symbol:
                found.append((str(size.node.expr), source_of(node)))
    return found


def refuse_data_dependent_squeezes(ep: ExportedProgram) -> None:
    """ExportError for a squeeze meeting a size read from data (unique, nonzero, a masked selection): whether
    it drops that dim depends on the data, which a graph of fixed rank cannot follow, and torch.export's
    program itself keeps the dim (got [1] where eager gives a scalar, fuzz_models seed 2770000)."""
    for symbol, where in squeezed_sizes(ep):
        if symbol.startswith("u"):  # torch's unbacked symbols: sizes read from data
            raise ExportError(
                f"a squeeze{f' at {where}' if where else ''} meets a size read from data ({symbol}): it drops that "
                "dim only where the data makes it 1, and an exported graph's rank is fixed, so it would keep a "
                "dim eager drops (or the reverse). Drop the dim explicitly where it is always 1 (t[0], "
                "t.reshape(...)), or leave it.")


def mark_not_one(model: onnx.ModelProto, ep: ExportedProgram, names: dict[str, str]) -> None:
    """Record (NOT_ONE_KEY) and warn of the input dims a squeeze meets: the exported graph assumes they are
    not 1; aten2onnx.runtime then refuses 1 there, and other runtimes are warned of through this warning."""
    squeezed = squeezed_sizes(ep)
    if not squeezed:
        return
    params = {d.dim_param: (info.name, axis) for info in model.graph.input
              for axis, d in enumerate(info.type.tensor_type.shape.dim) if d.dim_param}
    marked: dict[str, tuple[str, int, str | None]] = {}
    for symbol, where in squeezed:
        param = names.get(symbol, symbol)
        if param in params and param not in marked:
            marked[param] = (*params[param], where)
    if not marked:
        return
    entry = model.metadata_props.add()
    entry.key, entry.value = NOT_ONE_KEY, json.dumps(sorted(marked))
    for param, (name, axis, where) in marked.items():
        warn_user(f"input {name!r} dim {axis} ({param}) meets a squeeze{f' at {where}' if where else ''}, which "
                  "drops a dim only where its size is 1: the exported graph keeps it, assuming the size is not 1 "
                  "(as torch.export does), so an input where it is 1 would give a result of another rank than "
                  "eager's; aten2onnx.runtime refuses such inputs. Where the dim is meant to go, squeeze it by "
                  "index only where it is 1 in every input, or reshape explicitly.", NarrowedExportWarning)


# ATen's fractional max pools: torch.nn's layers given output_ratio compute their output size in Python
_FRACTIONAL_POOLS = {"fractional_max_pool2d": 2, "fractional_max_pool3d": 3}


def pin_ratio_pools(model: onnx.ModelProto, ep: ExportedProgram, module: Any, names: dict[str, str]) -> None:
    """A FractionalMaxPool layer given output_ratio computes its output size from its input's in Python, and
    torch.export (2.13, 2.14) writes the example's result as a constant without a guard: the graph would pool
    every input to that size, a silent wrong answer for any other. The input dims that size came from are
    fixed at the example's sizes in the exported model (other sizes are then refused, not pooled wrong),
    with a NarrowedExportWarning naming the layer; a size that is no input's own dim is our ExportError."""
    from aten2onnx.exporter.provenance import module_of, source_of, user_frame

    for node in ep.graph.nodes:
        schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
        rank = _FRACTIONAL_POOLS.get(schema.name.split("::")[-1]) if schema is not None else None
        layer = _layer(module, node) if rank else None
        if layer is None or getattr(layer, "output_ratio", None) is None:
            continue
        spatial = [s for s in node.args[0].meta["val"].shape[-rank:] if isinstance(s, torch.SymInt)]
        if not spatial or not all(isinstance(size, int) for size in node.args[2]):
            continue  # (a symbolic output size: computed from the input's, as the capture's equivalent does)
        where = user_frame(source_of(node))
        label = (f"{type(layer).__name__}(output_ratio={layer.output_ratio}), {module_of(node)}"
                 + (f" at {where}" if where else ""))
        # the input dims the pooled sizes are computed from (a Conv's strided output: its input's size)
        env = spatial[0].node.shape_env
        values = getattr(env, "backed_var_to_val", None)  # (torch 2.13's name; var_to_val before)
        values = env.var_to_val if values is None else values
        symbols = {symbol for s in spatial for symbol in s.node.expr.free_symbols}
        if any(symbol not in values for symbol in symbols):  # (a size read from data)
            raise ExportError(f"{label}: torch.export writes the output size it computes for the example input as a "
                              "constant, and its input's size is read from data, so no input dim can be fixed to keep "
                              "it right; give the layer output_size=(...)")
        pins = {names.get(str(symbol), str(symbol)): int(values[symbol]) for symbol in symbols}
        fixed = []
        for info in model.graph.input:
            for axis, dim in enumerate(info.type.tensor_type.shape.dim):
                if dim.HasField("dim_param") and dim.dim_param in pins:
                    fixed.append(f"{info.name!r} dim {axis} ({dim.dim_param}) at {pins[dim.dim_param]}")
                    dim.dim_value = pins[dim.dim_param]
        if fixed:
            warn_user(f"{label}: torch.export wrote the output size it computes for the example input as a constant, "
                      f"so the export would pool every input to that size; it takes only the example's sizes there: "
                      f"{', '.join(fixed)}. For other sizes, give the layer output_size=(...), a fixed output.",
                      NarrowedExportWarning)


def _layer(module: Any, node: torch.fx.Node) -> torch.nn.Module | None:
    """The torch.nn module of the model that made node (its innermost), if the model is a module."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack or not isinstance(module, torch.nn.Module):
        return None
    path = list(stack.values())[-1][0]
    path = re.sub(r"^L\['self'\]\.?", "", path or "")
    try:
        return module.get_submodule(path) if path else module
    except AttributeError:
        return None
