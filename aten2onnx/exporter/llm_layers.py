"""A decoder of N alike layers captured as three and repeated (export_llm): torch.export's capture costs
about the same per layer whatever the layer's size (symbolic shapes: a 2048-wide LLaMA layer takes ~0.6 s),
and it is most of an LLM's export. So the model is captured with its first three layers, and the program
repeated to N: layer 2's nodes copied for each further layer, reading that layer's weights and cache, and
what followed the last layer reading the last copy. The rest of the export takes the program as it would
the whole model's capture.

Only where nothing can tell the layers apart:
- the model's layers are one ModuleList of N modules of one class, alike in every submodule's class,
  parameters and buffers (names, shapes, dtypes) and plain attributes (an int that is each layer's own
  index excepted), and the config's per-layer lists (layer_types...) hold one value;
- in the three-layer capture, layer 2's nodes are layer 1's node for node: the same ops, arguments and
  shapes, each argument the same shared value, or the same node of the layer itself or of the one before,
  or the same weight or cache input of the layer; nothing but the last layer's output read after it.
Anything else is captured whole, as before. What a capture of three cannot show is a layer's code reading
its index at run time: that is read in the source (any use of the index but naming the cache, or a model
loop numbering its layers for anything but the config's per-layer lists, and the model is captured whole).
The layers keep the model's own config (its layer count); the modules on the way to them get the cut one.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec,
                                          TensorArgument)

CAPTURED = 3  # layers captured: layer 0, layer 1 (the template's predecessor) and layer 2 (the template)
FROM_LAYERS = 6  # fewer layers are captured whole (the saving is small)


@dataclasses.dataclass(frozen=True)
class Stack:
    """The model's decoder layers: the ModuleList's path in the model, and how many."""

    path: str
    count: int


def uniform_stack(model: torch.nn.Module) -> Stack | None:
    """The model's decoder layers where nothing but their index tells them apart; None otherwise."""
    config = getattr(model, "config", None)
    if config is None or config.get_text_config() is not config:
        return None  # (a composite model: its text config nested in another)
    count = getattr(config, "num_hidden_layers", None)
    if not isinstance(count, int) or count < FROM_LAYERS:
        return None
    lists = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.ModuleList) and len(m) == count]
    if len(lists) != 1:
        return None
    path, layers = lists[0]
    if any(not _alike(layers[0], layer, 0, i) for i, layer in enumerate(layers)):
        return None
    for value in vars(config).values():
        if isinstance(value, (list, tuple)) and len(value) == count and len({repr(v) for v in value}) > 1:
            return None  # (per-layer settings, such as layer_types, that differ)
    owner = model.get_submodule(path.rpartition(".")[0]) if "." in path else model
    if not _index_unread(layers[0], owner, path.rpartition(".")[2]):
        return None
    return Stack(path, count)


def _index_unread(layer: torch.nn.Module, owner: torch.nn.Module, name: str) -> bool:
    """Whether the layers' code reads a layer's index only to name its cache (`.update(..., self.layer_idx)`),
    and the model's loop over them does not number them: what an index could change at run time is then
    decided by the attributes compared. Code that cannot be read is not shown so."""
    import inspect

    sources = []
    for cls in {type(m) for m in layer.modules()} | {type(owner)}:
        try:
            sources.append(inspect.getsource(cls.forward))
        except (OSError, TypeError):
            return False
    for text in sources:
        for loop in re.finditer(rf"for\s+(\w+)\s*,\s*\w+\s+in\s+enumerate\(\s*self\.{re.escape(name)}\b", text):
            # the loop's number used only to pick a per-layer setting of the config (compared alike above)
            rest = text[loop.end():]
            uses = len(re.findall(rf"\b{loop.group(1)}\b", rest))
            if uses != len(re.findall(rf"\bconfig\.\w+\[{loop.group(1)}\]", rest)):
                return False
        for line in text.splitlines():
            if re.search(r"\blayer_(idx|id|index|number)\b", line) and ".update(" not in line \
                    and not line.strip().startswith("#"):
                return False
    return True


def _alike(a: torch.nn.Module, b: torch.nn.Module, index_a: int, index_b: int) -> bool:
    mods_a, mods_b = list(a.named_modules()), list(b.named_modules())
    if [(n, type(m)) for n, m in mods_a] != [(n, type(m)) for n, m in mods_b]:
        return False
    for (_, ma), (_, mb) in zip(mods_a, mods_b):
        for table in ("_parameters", "_buffers"):
            ta, tb = getattr(ma, table), getattr(mb, table)
            if ta.keys() != tb.keys():
                return False
            for key in ta:
                x, y = ta[key], tb[key]
                if (x is None) != (y is None) or (x is not None and (x.shape != y.shape or x.dtype != y.dtype)):
                    return False
        attrs_a = {k: v for k, v in vars(ma).items() if not k.startswith("_") and not isinstance(v, torch.Tensor)}
        attrs_b = {k: v for k, v in vars(mb).items() if not k.startswith("_") and not isinstance(v, torch.Tensor)}
        if attrs_a.keys() != attrs_b.keys():
            return False
        for key, x in attrs_a.items():
            y = attrs_b[key]
            if type(x) is int and type(y) is int and (x, y) == (index_a, index_b):
                continue  # the layer's own index
            if not _same_value(x, y):
                return False
    return True


def _same_value(x: Any, y: Any) -> bool:
    """Whether two attribute values are alike: equal, or partial functions of one function and arguments."""
    if type(x) is not type(y):
        return False
    if isinstance(x, functools.partial):
        return x.func is y.func and _same_value(x.args, y.args) and _same_value(x.keywords, y.keywords)
    try:
        return bool(x == y)
    except Exception:  # noqa: BLE001 (a value that does not compare: not shown alike)
        return False


def shallow(model: torch.nn.Module, stack: Stack) -> torch.nn.Module:
    """The model with its first CAPTURED layers only: the modules on the way to the layer list copied (their
    other submodules, parameters and buffers the model's own), the config copied saying CAPTURED layers
    (per-layer lists cut to them). The model is left as it is."""
    config = copy.deepcopy(model.config)
    for key, value in list(vars(config).items()):
        if isinstance(value, (list, tuple)) and len(value) == stack.count:
            setattr(config, key, type(value)(value[:CAPTURED]))
    config.num_hidden_layers = CAPTURED

    def copied(module: torch.nn.Module) -> torch.nn.Module:
        twin = copy.copy(module)
        twin.__dict__ = dict(module.__dict__)
        for table in ("_modules", "_parameters", "_buffers"):
            setattr(twin, table, dict(getattr(module, table)))
        if getattr(module, "config", None) is model.config:
            twin.config = config
        return twin

    root = copied(model)
    parent, names = root, stack.path.split(".")
    for name in names[:-1]:
        child = copied(parent._modules[name])
        parent._modules[name] = child
        parent = child
    parent._modules[names[-1]] = torch.nn.ModuleList(list(parent._modules[names[-1]])[:CAPTURED])
    return root


class Unlike(Exception):
    """The capture's layers are not alike: the model is captured whole."""


def repeat(ep: ExportedProgram, stack: Stack, root: str, model: torch.nn.Module,
           past_name: Callable[[int, str], str]) -> ExportedProgram:
    """ep (a capture of the module whose attribute `root` is the model cut to CAPTURED layers) with layer 2
    repeated to stack.count layers, their weights the model's. past_name(i, "key") is layer i's cache
    input's name. Raises Unlike where the capture's layers 1 and 2 are not alike."""
    prefix = f"{root}.{stack.path}." if root else f"{stack.path}."
    graph = ep.graph
    specs = {spec.arg.name: spec for spec in ep.graph_signature.input_specs}
    if any(spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR, InputKind.USER_INPUT)
           for spec in specs.values()) or any(spec.kind != OutputKind.USER_OUTPUT
                                              for spec in ep.graph_signature.output_specs):
        raise Unlike("inputs or outputs other than weights, constants and the user's")
    layer_of, constants = _layers(graph, specs, prefix, past_name)
    regions = {j: [n for n in graph.nodes if n.op == "call_function" and layer_of.get(n) == j] for j in range(CAPTURED)}
    inputs = {j: [n for n in graph.nodes if n.op == "placeholder" and layer_of.get(n) == j] for j in range(CAPTURED)}
    rename = _input_renames(inputs, specs, prefix, past_name)
    if len(regions[1]) != len(regions[2]) or not regions[2]:
        raise Unlike("layers of different lengths")
    same = dict(zip(regions[1], regions[2]))
    before: dict[torch.fx.Node, torch.fx.Node | None] = dict.fromkeys(regions[0])  # layer 0's node -> layer 1's
    values = {**ep.constants, **ep.state_dict}

    def equal_constants(x: torch.fx.Node, y: torch.fx.Node) -> bool:
        """Whether x and y compute the same constant (each layer's own copy of one, as the cache's empty start)."""
        if x is y:
            return True
        if x.op == "placeholder" or y.op == "placeholder":
            if not (x.op == y.op == "placeholder" and specs[x.name].kind == specs[y.name].kind == InputKind.CONSTANT_TENSOR):
                return False
            a, b = (values.get(specs[n.name].target) for n in (x, y))
            if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                    and a.shape == b.shape):
                return False
            if a.numel() == 0:
                return True  # (no values to differ)
            return a.device.type != "meta" and b.device.type != "meta" and bool(torch.equal(a, b))
        if x.op != "call_function" or x.op != y.op or x.target != y.target or x in layer_of or y in layer_of:
            return False
        flat_x, flat_y = _flat(x.args, x.kwargs), _flat(y.args, y.kwargs)
        return len(flat_x) == len(flat_y) and all(
            equal_constants(p, q) if isinstance(p, torch.fx.Node) and isinstance(q, torch.fx.Node)
            else not isinstance(p, torch.fx.Node) and not isinstance(q, torch.fx.Node) and type(p) is type(q) and p == q
            for p, q in zip(flat_x, flat_y))

    from aten2onnx.ir import lazy

    in_model = f"{stack.path}."  # (the layers' path in model)
    names_by_id = {id(t): name for name, t in [*model.named_parameters(remove_duplicate=False),
                                                 *model.named_buffers(remove_duplicate=False)]}

    def derivation(x: torch.fx.Node, j: int) -> tuple | None:
        """A constant a layer's code computes from layer j's weights (a packed QKV weight of a model without
        them): (how, the weights' paths in the layer), or None."""
        tag = getattr(values.get(specs[x.name].target), lazy._TAG, None)
        if not tag or tag[0] != "apply":
            return None
        roles = []
        for t in tag[2]:
            name = names_by_id.get(id(t)) if isinstance(t, torch.Tensor) else None
            if isinstance(t, torch.Tensor) and (name is None or not name.startswith(f"{in_model}{j}.")):
                return None
            roles.append(name[len(f"{in_model}{j}."):] if name is not None else ("value", t))
        return tag[1], tuple(roles), tag[3]

    derived: dict[torch.fx.Node, tuple] = {}  # layer 2's constants computed from its weights -> how

    def alike_constants(x: torch.fx.Node, y: torch.fx.Node) -> bool:
        if equal_constants(x, y):
            return True
        if x not in constants or y not in constants:
            return False
        how = derivation(y, 2)
        if how is None or derivation(x, 1) != how:
            return False
        derived[y] = how
        return True

    for a, b in same.items():
        if not _alike_nodes(a, b, same, before, rename, alike_constants):
            raise Unlike(f"{a.format_node()} / {b.format_node()}")
    last = regions[2][-1]
    order = {n: k for k, n in enumerate(graph.nodes)}
    after = [n for n in graph.nodes if n.op == "call_function" and layer_of.get(n) is None and order[n] > order[last]]
    earlier = set(regions[0]) | set(regions[1])
    if any(isinstance(x, torch.fx.Node) and x in earlier for n in after for x in _flat(n.args, n.kwargs)):
        raise Unlike("a layer but the last read after the layers")

    new_specs = {}
    placeholders: dict[int, dict[torch.fx.Node, torch.fx.Node]] = {2: {p: p for p in inputs[2]}}
    anchor: dict[Any, torch.fx.Node] = {}
    for p in inputs[2]:
        anchor[specs[p.name].kind] = p
    state_dict = dict(ep.state_dict)
    named = dict(model.named_parameters(remove_duplicate=False))
    named.update(model.named_buffers(remove_duplicate=False))
    for i in range(CAPTURED, stack.count):
        placeholders[i] = {}
        for p in inputs[2]:
            spec = specs[p.name]
            if spec.kind == InputKind.USER_INPUT:
                name, target = past_name(i, rename[p][1]), None
            else:
                target = f"{prefix}{i}.{spec.target[len(prefix) + 2:]}"
                name = re.sub(r"\W", "_", f"{'p' if spec.kind == InputKind.PARAMETER else 'b'}_{target}")
                own = target[len(root) + 1:] if root else target
                if own not in named:
                    raise Unlike(f"the model has no {own}")
                if spec.kind == InputKind.PARAMETER or spec.persistent:
                    state_dict[target] = named[own]
                else:
                    raise Unlike(f"a buffer not in the state dict: {target}")
            with graph.inserting_after(anchor[spec.kind]):
                node = graph.placeholder(name)
            node.meta = dict(p.meta)
            anchor[spec.kind] = node
            placeholders[i][p] = node
            new_specs[node.name] = InputSpec(spec.kind, TensorArgument(node.name), target,
                                             spec.persistent if spec.kind == InputKind.BUFFER else None)

    new_constants = dict(ep.constants)
    at_constants = max((n for n in order if n.op == "placeholder" and specs[n.name].kind == InputKind.CONSTANT_TENSOR),
                       key=order.get, default=None)
    for i in range(CAPTURED, stack.count):
        for y, (fn, roles, part) in derived.items():
            inputs_i = [named[f"{in_model}{i}.{r}"] if isinstance(r, str) else r[1] for r in roles]
            value = lazy.apply(fn, *inputs_i)
            value = value if part is None else value[part]
            target = f"{prefix}{i}.{specs[y.name].target[len(prefix) + 2:]}"
            with graph.inserting_after(at_constants):
                node = graph.placeholder(re.sub(r"\W", "_", f"c_{target}"))
            node.meta = dict(y.meta)
            at_constants = node
            placeholders[i][y] = node
            new_constants[target] = value
            new_specs[node.name] = InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(node.name), target)
    for y in derived:
        placeholders[2][y] = y

    copies: dict[int, dict[torch.fx.Node, torch.fx.Node]] = {2: {n: n for n in regions[2]}}
    at = last
    for i in range(CAPTURED, stack.count):
        mapping: dict[torch.fx.Node, torch.fx.Node] = {}
        previous = copies[i - 1]

        def arg(x: torch.fx.Node, i: int = i, mapping: dict = mapping, previous: dict = previous) -> torch.fx.Node:
            if x in mapping:
                return mapping[x]
            if x in same:  # the layer before's node (layer 1's in the template)
                return previous[same[x]]
            if x in placeholders[2]:
                return placeholders[i][x]
            return x

        for n in regions[2]:
            with graph.inserting_after(at):
                node = graph.node_copy(n, arg)
            node.meta = _relabelled(n.meta, prefix, 2, i)
            mapping[n] = node
            at = node
        copies[i] = mapping

    final = copies[stack.count - 1]
    for n in after:
        n.args, n.kwargs = pytree.tree_map_only(torch.fx.Node, lambda x: final.get(x, x), (n.args, n.kwargs))
    output = graph.output_node()
    results = list(output.args[0])
    presents = [r for r in results[1:] if r in copies[2]]
    if results[1 + 2 * (CAPTURED - 1):] != presents[-2:] or len(results) != 1 + 2 * CAPTURED:
        raise Unlike("the outputs are not the logits and each layer's cache")
    results += [copies[i][p] for i in range(CAPTURED, stack.count) for p in presents[-2:]]
    output.args = (tuple(results),) if isinstance(output.args[0], tuple) else (results,)
    graph.lint()

    input_specs = [new_specs.get(n.name) or specs[n.name] for n in graph.nodes if n.op == "placeholder"]
    output_specs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(r.name), None) for r in results]
    users = [s.arg.name for s in input_specs if s.kind == InputKind.USER_INPUT]
    _, in_spec = pytree.tree_flatten((tuple(users), {}))
    _, out_spec = pytree.tree_flatten(tuple(range(len(results))))
    calls = list(ep.module_call_graph)
    root_call = calls[0]
    signature = dataclasses.replace(root_call.signature, in_spec=in_spec, out_spec=out_spec,
                                    forward_arg_names=users) if root_call.signature is not None else None
    calls[0] = dataclasses.replace(root_call, signature=signature)
    ep.graph_module.recompile()
    return ExportedProgram(root=ep.graph_module, graph=graph,
                           graph_signature=ExportGraphSignature(input_specs, output_specs),
                           state_dict=state_dict, range_constraints=ep.range_constraints, module_call_graph=calls,
                           constants=new_constants, verifiers=ep.verifiers)


def _layers(graph: torch.fx.Graph, specs: dict[str, InputSpec], prefix: str,
            past_name: Callable[[int, str], str]) -> tuple[dict[torch.fx.Node, int], set[torch.fx.Node]]:
    """Each node's layer: a weight's or cache input's, a node made in the layer's module, or one made outside
    the layers from the layer's inputs and shared values only (the cache built from them); and the constants
    made inside layers (compared by value). Sizes (SymInts) are shared, whatever they are read from."""
    pasts = {past_name(j, kv): j for j in range(CAPTURED) for kv in ("key", "value")}
    pattern = re.compile(re.escape(prefix) + r"(\d+)(\.|$)")
    layer_of: dict[torch.fx.Node, int] = {}
    inputs: set[torch.fx.Node] = set()  # the layers' inputs, and what is made of them outside the layers
    constants: set[torch.fx.Node] = set()
    for n in graph.nodes:
        if n.op == "placeholder":
            spec = specs[n.name]
            found = pattern.match(spec.target or "") if spec.kind != InputKind.USER_INPUT else None
            if found and spec.kind == InputKind.CONSTANT_TENSOR:
                constants.add(n)
            elif found:
                layer_of[n] = int(found.group(1))
                inputs.add(n)
            elif n.name in pasts:
                layer_of[n] = pasts[n.name]
                inputs.add(n)
            continue
        if n.op != "call_function" or isinstance(n.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool,
                                                                         int, float, bool)):
            continue  # (a size: the same whatever it is read from)
        stack = n.meta.get("nn_module_stack") or {}
        inside = {int(m.group(1)) for path, _ in stack.values() if (m := pattern.match(path + "."))}
        if len(inside) > 1:
            raise Unlike("a node in two layers")
        if inside:
            layer_of[n] = inside.pop()
            continue
        read = [x for x in _flat(n.args, n.kwargs) if isinstance(x, torch.fx.Node) and x in layer_of]
        if read and all(x in inputs for x in read):
            if len({layer_of[x] for x in read}) > 1:
                raise Unlike(f"{n.format_node()} reads two layers' inputs")
            layer_of[n] = layer_of[read[0]]
            inputs.add(n)
    return layer_of, constants


def _input_renames(inputs: dict[int, list[torch.fx.Node]], specs: dict[str, InputSpec], prefix: str,
                   past_name: Callable[[int, str], str]) -> dict[torch.fx.Node, tuple[torch.fx.Node, str]]:
    """Each input of layer 1 -> (layer 2's same input, its role); layer 2's inputs -> (themselves, role). The role:
    the weight's path in the layer, or "key"/"value"."""
    def role(p: torch.fx.Node, j: int) -> str:
        spec = specs[p.name]
        if spec.kind == InputKind.USER_INPUT:
            return next(kv for kv in ("key", "value") if past_name(j, kv) == p.name)
        return spec.target[len(f"{prefix}{j}."):]

    by_role = {role(p, 2): p for p in inputs[2]}
    if len(by_role) != len(inputs[2]) or sorted(by_role) != sorted(role(p, 1) for p in inputs[1]):
        raise Unlike("layers 1 and 2 take other inputs")
    renames = {p: (by_role[role(p, 1)], role(p, 1)) for p in inputs[1]}
    renames.update({p: (p, role(p, 2)) for p in inputs[2]})
    return renames


def _alike_nodes(a: torch.fx.Node, b: torch.fx.Node, same: dict, before: dict, rename: dict,
                 alike_constants: Callable[[Any, Any], bool]) -> bool:
    if a.op != b.op or a.target != b.target or not _alike_values(a.meta.get("val"), b.meta.get("val")):
        return False

    def match(x: Any, y: Any) -> bool:
        if isinstance(x, torch.fx.Node):
            if x in same:
                return same[x] is y
            if x in before:  # the layer before's node (the same one each time), or one of layer 0's every layer reads
                if x is y:
                    return True
                if y not in same or before[x] not in (None, y):
                    return False
                before[x] = y
                return True
            if x in rename:
                return rename[x][0] is y
            if x is not y and isinstance(y, torch.fx.Node) and y not in same.values() and alike_constants(x, y):
                return True  # a constant each layer makes for itself: layer 2's read by every copy
            return x is y and y not in same.values()
        if isinstance(x, (list, tuple)):
            return type(x) is type(y) and len(x) == len(y) and all(match(p, q) for p, q in zip(x, y))
        if isinstance(x, dict):
            return isinstance(y, dict) and x.keys() == y.keys() and all(match(x[k], y[k]) for k in x)
        return type(x) is type(y) and (x == y or (x != x and y != y))

    return match(a.args, b.args) and match(a.kwargs, b.kwargs)


def _alike_values(x: Any, y: Any) -> bool:
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and x.dtype == y.dtype and str(x.shape) == str(y.shape)
    if isinstance(x, (list, tuple)):
        return isinstance(y, (list, tuple)) and len(x) == len(y) and all(_alike_values(p, q) for p, q in zip(x, y))
    return str(x) == str(y)


def _relabelled(meta: dict, prefix: str, old: int, new: int) -> dict:
    """A copied node's metadata: its module stack in layer `new` instead of `old`."""
    meta = dict(meta)
    stack = meta.get("nn_module_stack")
    if stack:
        was, now = f"{prefix}{old}", f"{prefix}{new}"

        def moved(text: str) -> str:
            return now + text[len(was):] if text == was or text.startswith(was + ".") else text

        meta["nn_module_stack"] = {(k[:-len(path)] + moved(path) if path and k.endswith(path) else k): (moved(path), cls)
                                   for k, (path, cls) in stack.items()}
    return meta


def _flat(args: Any, kwargs: Any) -> list[Any]:
    return pytree.tree_leaves((args, kwargs))


def capture_repeated(model: torch.nn.Module, module: torch.nn.Module, layout: Any, args: tuple, shapes: dict,
                     stack: Stack, inexact: list[str]) -> tuple[ExportedProgram, bool]:
    """The program of module (export_llm's cache module of model with a cache of that layout, its example
    inputs args and their dynamic shapes by name) with model's layers captured as CAPTURED and repeated;
    where they cannot be (the model cut to them does not capture, or its layers are not alike), module
    captured whole. Whether they were."""
    from aten2onnx.exporter import dynamic, llm
    from aten2onnx.exporter.capture import capture

    meta = any(p.device.type == "meta" for p in model.parameters())

    def on_meta(values: tuple) -> tuple:
        return tuple(v.to("meta") for v in values) if meta else values

    names = inspect_names(module)
    twin = shallow(model, stack)
    cut = llm.CacheLayout(layout.kv_heads[:CAPTURED], layout.head_sizes[:CAPTURED], layout.dtype)
    small = llm.cache_module(twin, cut, module.position_ids)
    small.on_mask = module.on_mask
    kept = len(args) - 2 * (layout.layers - CAPTURED)
    small_shapes = {name: shapes[name] for name in names[:kept]}
    try:
        ep = capture(small, on_meta(args[:kept]), None, dynamic.normalize(small_shapes), inexact)
        return repeat(ep, stack, "model", model, lambda i, kv: f"past_key_values_{i}_{kv}"), True
    except Exception:  # noqa: BLE001 (anything the cut model or its layers do otherwise: captured whole)
        del inexact[:]
    return capture(module, on_meta(args), None, dynamic.normalize(shapes), inexact), False


def inspect_names(module: torch.nn.Module) -> list[str]:
    import inspect

    return [name for name in inspect.signature(module.forward).parameters]
