"""Assemble the ModelProto from a translation, and ExportedModel: what `aten2onnx.export` returns."""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import onnx
import torch
import torch.utils._pytree as pytree
from onnx import helper

from aten2onnx import _aten_node, _dtypes
from aten2onnx.errors import ArgumentError, ExportError, InvalidInputError
from aten2onnx.ir.builder import (GraphBuilder, Node, Subgraph, Value, fill_tensor_proto, live_nodes, node_inputs,
                                  tensor_nbytes, value_info)
from aten2onnx.ir import lazy, op_types
from aten2onnx.exporter.functions import DOMAIN as FUNCTIONS_DOMAIN, extract as extract_functions, same_call
from aten2onnx.exporter import filewrite, graph_optimizer, residency
from aten2onnx.exporter.progress import Progress
from aten2onnx.exporter.translate import Translation

PRODUCER = "aten2onnx"
# Model metadata listing the outputs that are new values of inputs or buffers; the runtime reads it.
STATE_KEY = "aten2onnx.state_updates"
# Model metadata naming the inputs and outputs that are complex tensors carried as real pairs (a
# trailing axis of 2: real, imaginary), as {"inputs": [...], "outputs": [...]}.
COMPLEX_KEY = "aten2onnx.complex_as_real"
TWO_GB = 2**31
MIN_IR_VERSION = 10  # node metadata_props need IR 10


def _as_number(result: Any, like: bool | int | float) -> bool | int | float:
    """A 0-d graph output made of a number torch.export baked, as that Python number again."""
    return type(like)(torch.as_tensor(result).item())


def build_model(t: Translation, *, opset: int, output_names: list[str] | None, exact: bool = False,
                functions: set[str] = frozenset(), notes: list[str] | None = None, optimize: bool | str = False,
                watched: list[torch.Tensor] | None = None
                ) -> tuple[onnx.ModelProto, list[tuple[str, torch.Tensor]], list[str], list[str]]:
    """The model without its weights (with the constants the exporter made), and the weights: they are
    written into protobuf only when the model is first needed whole (`model_proto`, `save`), and straight
    to a file for external data.
    functions: module classes (qualified names) whose calls become local functions (exporter/functions.py);
    what that could not do is added to notes. optimize: run the graph optimizer; the module tensors its
    folded weights came from are added to watched."""
    g = t.graph
    nodes = list(g.nodes)
    slots = [slot for slot in t.outputs if slot.value is not None]
    graph_outputs = [slot.value for slot in slots]
    if not graph_outputs and not t.states:
        raise ExportError("the model returns no tensors and no numbers, so the ONNX graph would have no outputs "
                          "(ONNX requires one); return what you need from forward()")
    if output_names is not None and len(output_names) != len(graph_outputs):
        raise ExportError(f"output_names has {len(output_names)} names but the model has {len(graph_outputs)} tensor outputs")
    unnamed = sum(slot.name is None for slot in slots)
    defaults = iter(["output"] if unnamed == 1 else [f"output_{i}" for i in range(unnamed)])
    names = list(output_names) if output_names is not None else [
        slot.name if slot.name is not None else next(defaults) for slot in slots]
    # names the user chose, or the roles of a joint program gave ("loss", "<parameter>.grad"), are kept
    chosen = [output_names is not None or slot.name is not None for slot in slots]
    # A written buffer or input: its new value is an output named "<state>.updated"; a buffer is
    # also an input whose initializer is the default, so callers can carry state between runs.
    state_names = [f"{state.state.name}.updated" for state in t.states]
    names = _free_output_names(g, nodes, names, state_names, chosen=chosen)
    final: list[Value] = []
    seen: set[int] = set()
    for value, name in zip(graph_outputs + [state.value for state in t.states], names + state_names):
        if value.kind != "node" or id(value) in seen or value.producer is None:
            # An input, weight, constant or repeated value: give it an output name through Identity.
            identity = op_types.signature("Identity", opset)
            if value.dtype is not None and not identity.takes(identity.input_type(0), value.dtype):
                raise ExportError(f"output {name!r} passes a {value.dtype} tensor through unchanged, which needs an "
                                  f"Identity node, and ONNX's Identity at opset {opset} takes no {value.dtype}; "
                                  "export at a newer opset")
            out = Value(name, value.dtype, value.shape, complex=value.complex)
            node = Node("Identity", [value], [out], {}, "", f"{name}/Identity", {})
            out.producer = node
            nodes.append(node)
            value = out
        else:
            value.name = name
        seen.add(id(value))
        final.append(value)
    nodes = live_nodes(nodes, final)
    if optimize:
        together = same_call(t.module_stacks, set(functions)) if functions else None
        nodes, sources = graph_optimizer.optimize(g, nodes, final, same_call=together,
                                                  onnxruntime=optimize == "onnxruntime")
        if watched is not None:
            watched.extend(sources)
    local_functions: list[onnx.FunctionProto] = []
    if functions:
        extracted = extract_functions(g, nodes, t.module_stacks, set(functions), final)
        nodes, local_functions = extracted.nodes, extracted.functions
        if notes is not None:
            notes.extend(extracted.notes)
        if local_functions:
            g.domains.setdefault(FUNCTIONS_DOMAIN, 1)
    used = {v.name for v in node_inputs(nodes)}
    state_inputs = [state.state for state in t.states if state.kind == "buffer"]
    used |= {v.name for v in state_inputs}
    # a constant computed from a weight without data is written with the weights, when they are bound
    weights = [(name, v.default if v.kind == "state" else v.const) for name, v in g.initializers.items()
               if name in used and (v.kind != "const" or lazy.is_lazy(v.const))]
    model = onnx.ModelProto()
    model.ir_version = max(MIN_IR_VERSION, helper.find_min_ir_version_for([helper.make_opsetid("", opset)]))
    model.producer_name = PRODUCER
    model.opset_import.extend([helper.make_opsetid("", opset)] +
                              [helper.make_opsetid(d, v) for d, v in sorted(g.domains.items())])
    for function in local_functions:
        function.opset_import.extend(model.opset_import)
    model.functions.extend(local_functions)
    graph = model.graph
    graph.name = "main_graph"
    graph.node.extend(g.node_protos(nodes))
    # the constants the exporter made (shapes, scalars) are part of the model, never in a data file: runtimes
    # read a Reshape's shape at load time
    for name, v in g.initializers.items():
        if name in used and v.kind == "const" and not lazy.is_lazy(v.const):
            fill_tensor_proto(graph.initializer.add(), v.const, name)
    graph.input.extend(value_info(v) for v in g.inputs + state_inputs)
    graph.output.extend(value_info(v) for v in final)
    if t.states:
        updates = [{"output": out, "kind": state.kind, "input": state.state.name}
                   for out, state in zip(state_names, t.states)]
        entry = model.metadata_props.add()
        entry.key, entry.value = STATE_KEY, json.dumps(updates)
    carried = {"inputs": [v.name for v in g.inputs if v.complex], "outputs": [v.name for v in final if v.complex]}
    if carried["inputs"] or carried["outputs"]:
        entry = model.metadata_props.add()
        entry.key, entry.value = COMPLEX_KEY, json.dumps(carried)
    if exact:
        entry = model.metadata_props.add()
        entry.key, entry.value = _aten_node.EXACT_MODEL, "1"
        # ATen picks some kernels by whether an argument requires grad (matmul folds a batch into one
        # GEMM only when it may): the weights eager has requiring grad require it in the runtime too
        entry = model.metadata_props.add()
        entry.key, entry.value = _aten_node.EXACT_REQUIRES_GRAD, json.dumps(sorted(v.name for v in t.requires_grad if v.name in used))
    return model, weights, [v.name for v in g.inputs], names


def _free_output_names(g: GraphBuilder, nodes: list[Node], names: list[str], state_names: list[str], *,
                       chosen: list[bool]) -> list[str]:
    """Output names that no other value of the graph has (ONNX names each value once). Inputs and
    weights keep their names: a chosen output name (per name, `chosen`) equal to one is an error, a
    default one is made unique. An intermediate value or a constant with an output's name is renamed
    out of the way."""
    fixed = {v.name: "input" for v in g.inputs}
    fixed |= {name: "weight" for name, v in g.initializers.items() if v.kind != "const"}
    fixed |= {name: "state update" for name in state_names}
    free = []
    for name, kept in zip(names, chosen):
        if name in fixed:
            if kept:
                raise ArgumentError(f"output name {name!r} is already the name of a graph {fixed[name]}; choose "
                                    "another in output_names (or, for a training export, other input names)")
            name = g.fresh_name(name)
        free.append(name)
    taken = set(free)
    for value in [v for n in _with_bodies(nodes) for v in n.outputs] + [v for v in g.initializers.values()
                                                                        if v.kind == "const"]:
        if value.name in taken:
            if value.kind == "const":
                del g.initializers[value.name]
            value.name = g.fresh_name(value.name)
            if value.kind == "const":
                g.initializers[value.name] = value
    return free


def _with_bodies(nodes: list[Node]) -> list[Node]:
    """The nodes and, recursively, the nodes of their control-flow bodies."""
    out = []
    for node in nodes:
        out.append(node)
        for attr in node.attrs.values():
            if isinstance(attr, Subgraph):
                out.extend(_with_bodies(attr.builder.nodes))
    return out


class ExportedModel:
    """An exported model: `.model_proto`, `.save(path)`, `.run(*args)`, and what the export did.

    Weights are copied out of the module when the model is first needed whole; if one is changed
    in place before then, that raises rather than writing weights the export did not see.
    """

    def __init__(self, skeleton: onnx.ModelProto, weights: list[tuple[str, torch.Tensor]], *,
                 input_names: list[str], output_names: list[str], fallback_ops: list[str],
                 in_spec: pytree.TreeSpec | None, out_spec: pytree.TreeSpec | None,
                 user_inputs: list[str | None], outputs: list[tuple[str | None, Any]], opset: int,
                 session_factory: Callable[[onnx.ModelProto, list[str]], Any], notes: list[str] | None = None,
                 decomposed_ops: list[str] | None = None, watched: list[torch.Tensor] | None = None) -> None:
        self._skeleton = skeleton
        self._weights = [(name, tensor, tensor._version) for name, tensor in weights]
        # module tensors that folded weights were computed from: changed in place, the folded copy is stale
        self._watched = [(tensor, tensor._version) for tensor in watched or []]
        self._proto: onnx.ModelProto | None = None
        self._load: Callable[[str, torch.Tensor], torch.Tensor] | None = None  # (bind_weights)
        self._loaded: Callable[[], None] = lambda: None  # (hands back what the last load holds: bind_weights)
        self.input_names = input_names
        self.output_names = output_names
        self.fallback_ops = fallback_ops
        # ops no symbolic expressed, exported as the standard nodes of torch's decomposition of them
        self.decomposed_ops = decomposed_ops or []
        self.opset = opset
        self.notes = notes or []  # what the export did that a user should know (e.g. which rewrite it used)
        self._in_spec = in_spec
        self._out_spec = out_spec
        self._user_inputs = user_inputs
        self._outputs = outputs
        self._session = None
        self._session_factory = session_factory  # the runtime's, given by the caller: the exporter imports none
        carried = next((json.loads(e.value) for e in skeleton.metadata_props if e.key == COMPLEX_KEY), {})
        # Complex inputs and outputs, which the graph carries as real pairs (trailing axis of 2).
        self.complex_inputs: list[str] = carried.get("inputs", [])
        self.complex_outputs: list[str] = carried.get("outputs", [])

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(opset={self.opset}, nodes={len(self._skeleton.graph.node)}, "
                f"inputs={self.input_names}, outputs={self.output_names}, fallback_ops={self.fallback_ops})")

    def _checked_weights(self) -> list[tuple[str, torch.Tensor]]:
        changed = [name for name, tensor, version in self._weights if tensor._version != version]
        if not changed and any(tensor._version != version for tensor, version in self._watched):
            changed = ["(a weight a folded one was computed from)"]
        if changed:
            raise ExportError(f"weights {changed[:5]} were changed in place after export; export the model again")
        return [(name, tensor) for name, tensor, _ in self._weights]

    @property
    def unbound_weights(self) -> list[str]:
        """The names of the weights the model was exported without (a module on the meta device) and no
        bind_weights gave yet."""
        if self._load is not None:
            return []
        return [name for name, tensor, _ in self._weights if lazy.keys(tensor)]

    def bind_weights(self, weights: Any, *, aliases: Mapping[str, list[str]] | None = None) -> ExportedModel:
        """Give the values of the weights a model exported without them (on the meta device) has: a
        state dict, a .safetensors file or a folder of them, keyed as the model's state_dict. They are
        read when the model is written (`save` streams them one at a time) or first run. aliases: other
        keys a weight may be stored under (a tied weight a checkpoint holds once). Returns self."""
        from aten2onnx.exporter.weights import loader

        load, has, done = loader(weights, aliases)
        needed = sorted(set().union(*(lazy.keys(t) for _, t, _ in self._weights)))
        missing = [key for key in needed if not has(key)]
        if missing:
            raise ArgumentError(f"the weights given lack {len(missing)} of the {len(needed)} the model needs: "
                                f"{missing[:5]}; give the model's own state_dict(), or the safetensors it was saved in")
        self._load, self._loaded = load, done
        self._proto = None
        return self

    def _value(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """A weight's value: a lazy one computed from the bound weights."""
        if not lazy.is_lazy(tensor):
            return tensor
        if self._load is None and lazy.keys(tensor):
            raise self._unbound_error(name)
        try:
            return lazy.materialize(tensor, self._load or _no_weights)
        except lazy.UnboundWeightError as e:
            raise ExportError(f"weight {name!r}: {e}") from None

    def _unbound_error(self, name: str) -> ExportError:
        return ExportError(f"the model was exported without its weights (on the meta device): "
                           f"{len(self.unbound_weights)} have no value, such as {name!r}; give them with "
                           "save(path, weights=state_dict or a safetensors file) or bind_weights(...)")

    @property
    def model_proto(self) -> onnx.ModelProto:
        """The whole model, weights included (built on first use)."""
        if self._proto is None:
            weights = self._checked_weights()
            model = self._skeleton
            values = [(name, self._value(name, tensor)) for name, tensor in weights]  # (before the skeleton changes)
            for name, tensor in values:
                fill_tensor_proto(model.graph.initializer.add(), tensor, name)
            self._loaded()
            self._proto = model
        return self._proto

    @property
    def graph(self) -> onnx.GraphProto:
        """The model's graph, for reading its nodes, inputs and outputs (and editing them before save):
        its initializers are the constants only until the model is first needed whole."""
        return (self._proto if self._proto is not None else self._skeleton).graph

    @property
    def weight_bytes(self) -> int:
        return sum(tensor_nbytes(t) for _, t, _ in self._weights)

    def weight(self, name: str) -> torch.Tensor | None:
        """The weight written as initializer `name` (lazy where the model was exported without its weights),
        or None where there is no such weight."""
        return next((tensor for n, tensor, _ in self._weights if n == name), None)

    def use_domain(self, domain: str, version: int) -> None:
        """Import `domain` at `version` where the model does not yet (for nodes of it added before save)."""
        model = self._proto if self._proto is not None else self._skeleton
        if not any(o.domain == domain for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid(domain, version))

    def replace_weight(self, name: str, parts: Sequence[tuple[str, torch.Tensor]], *, keep: bool = False) -> None:
        """Write `parts` (name, tensor) where weight `name` was written (after it where keep is true, as
        when other nodes still read it), for an edit of the graph before save (a weight quantized)."""
        if self._proto is not None:
            raise ExportError("replace_weight edits the model before it is first needed whole (save, run)")
        at = next((i for i, (n, _, _) in enumerate(self._weights) if n == name), None)
        if at is None:
            raise ArgumentError(f"the model has no weight {name!r}")
        entries = [(n, tensor, tensor._version) for n, tensor in parts]
        self._weights[at:at + 1] = ([self._weights[at]] if keep else []) + entries

    # -- running --------------------------------------------------------------------------------
    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Run in aten2onnx.runtime; takes the model's own arguments, returns its own output structure.

        State is updated as eager PyTorch does it: inputs the model writes in place are written in
        the tensors passed here, and buffers it writes carry over to the next call."""
        if self._session is None:
            self._session = self.session()
        return self.structure_outputs(self._session.run_torch(self.feeds(*args, **kwargs)))

    def session(self, model: onnx.ModelProto | None = None) -> Any:
        """An aten2onnx.runtime InferenceSession of this export (or of `model`, a variant of it). This
        process made the model from the caller's own code, so its own fallback ops run (a custom op
        included) besides what the safety rule admits."""
        return self._session_factory(self.model_proto if model is None else model, self.fallback_ops)

    def feeds(self, *args: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        """The model's own arguments as the graph's inputs by name (complex ones as real pairs); the
        tensors are the ones passed, so a runtime that writes inputs back writes into them."""
        flat, spec = pytree.tree_flatten((args, kwargs))
        if self._in_spec is not None and spec != self._in_spec:
            raise InvalidInputError(f"run() got arguments structured as {spec}; the model was exported with {self._in_spec}")
        if len(flat) != len(self._user_inputs):
            raise InvalidInputError(f"run() got {len(flat)} inputs; the model takes {len(self._user_inputs)}")
        feeds = {name: torch.as_tensor(x) for name, x in zip(self._user_inputs, flat) if name is not None}
        return self.carried_inputs(feeds)

    @property
    def flat_output_names(self) -> list[str | None]:
        """Per leaf of the model's output flattened (torch.utils._pytree), the graph output it comes
        from; None where torch.export made the leaf a constant that is no graph output."""
        return [name for name, _ in self._outputs]

    def carried_inputs(self, feeds: Mapping[str, Any]) -> dict[str, Any]:
        """Feeds as the graph takes them: complex tensors or arrays as real pairs (trailing axis of 2),
        the form onnxruntime needs too (`sess.run(None, exported.carried_inputs(feeds))`)."""
        return {name: _as_real_pairs(x) if name in self.complex_inputs else x for name, x in feeds.items()}

    def structure_outputs(self, results: Mapping[str, Any] | Sequence[Any]) -> Any:
        """The model's own output structure from a runtime's outputs: a dict by output name, or a
        list in output order (as onnxruntime's run(None, feeds) returns). Outputs that torch.export
        made constants are put back in their places: None as it was, numbers (constant graph outputs)
        as Python numbers."""
        if not isinstance(results, Mapping):
            results = dict(zip(self.output_names, results))
        missing = [n for n, _ in self._outputs if n is not None and n not in results]
        if missing:
            raise InvalidInputError(f"outputs {missing} are missing; the model's outputs are {self.output_names}")
        results = {name: _as_complex(x) if name in self.complex_outputs else x for name, x in results.items()}
        flat_out = [constant if name is None else results[name] if constant is None else _as_number(results[name], constant)
                    for name, constant in self._outputs]
        if self._out_spec is None:
            return flat_out[0] if len(flat_out) == 1 else tuple(flat_out)
        return pytree.tree_unflatten(flat_out, self._out_spec)

    # -- saving ---------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike, external_data: bool | None = None, *,
             weights: Any = None, progress: bool | None = None) -> None:
        """Write the model atomically. Weights go to a data file beside it when external_data is
        True, or when None and the model's weights exceed 2 GB; they are streamed to that file
        from the module's tensors, one at a time. The data file is named by its content
        (`<file>.<hash>.data`) and written before the model that names it, and a previous save's
        data file is removed only after: a failure at any point leaves the old model with its own
        weights, or the new one with its own. progress: a bar of MB written on stderr; None: when
        stderr is a terminal. weights: for a model exported without its weights (on the meta device),
        their values, as bind_weights takes them; each is read, transformed as the graph needs and
        written one at a time."""
        if not isinstance(path, (str, os.PathLike)):
            raise ArgumentError(f"save() takes the file to write, a str or os.PathLike (\"model.onnx\"), not "
                                f"{type(path).__name__}; the model's proto is .model_proto, its bytes "
                                ".model_proto.SerializeToString() (below 2 GB)")
        path = os.fspath(path)
        if not isinstance(path, str) or not path or os.path.isdir(path):
            raise ArgumentError(f"save() takes the file to write, not {'a folder' if path else 'an empty path'}: "
                                f"{path!r}; name the file, such as os.path.join(folder, 'model.onnx')")
        if weights is not None:
            self.bind_weights(weights)
        elif self.unbound_weights:
            raise self._unbound_error(self.unbound_weights[0])
        if external_data is None:
            external_data = self.weight_bytes >= TWO_GB - (64 << 20)
        # the folder as the system resolves it (a/b/x/.. needs a/b/x; a symlink is followed), checked before
        # anything is written: a data file written there must not stay behind a model that cannot be
        parent = os.path.dirname(path) or os.curdir
        if not os.path.isdir(parent):
            raise ArgumentError(f"save(): the folder {parent!r} of {path!r} does not exist (or is not a folder); "
                                f"create it first, e.g. os.makedirs({parent!r}, exist_ok=True)")
        folder = os.path.realpath(parent)
        base = os.path.basename(path)
        path = os.path.join(folder, base)
        stale = _data_files(folder, base)
        try:
            self._write(folder, path, base, external_data, stale, Progress(progress))
        finally:
            self._loaded()
        for name in stale:
            os.unlink(os.path.join(folder, name))

    def _write(self, folder: str, path: str, base: str, external_data: bool, stale: set[str], bars: Progress) -> None:
        """save's writing: stale (the data files of earlier saves) loses the name of the one written, if the same."""
        if not external_data:
            if self._proto is not None:
                data = self._proto.SerializeToString()
                total, chunks = len(data), [data]
            else:
                total, chunks = _stream(self._skeleton, self._checked_weights(), self._value)
            with bars.saving(total) as advance:
                _atomic_write(folder, path, chunks, advance)
        else:
            skeleton, total, chunks = self._external()
            digest = hashlib.sha256()
            with bars.saving(total) as advance:
                tmp = filewrite.write_new(folder, chunks, digest=digest, advance=advance)
            data_name = f"{base}.{digest.hexdigest()[:16]}.data"
            _commit(tmp, os.path.join(folder, data_name), folder)
            for ref in skeleton.graph.initializer:
                if ref.external_data:  # not the constants the model keeps
                    ref.external_data[0].value = data_name
            try:
                _atomic_write(folder, path, [skeleton.SerializeToString()])
            except BaseException:
                if data_name not in stale:  # (one the previous model names stays with it)
                    os.unlink(os.path.join(folder, data_name))
                raise
            stale.discard(data_name)

    def _external(self) -> tuple[onnx.ModelProto, int, Any]:
        """The model with initializers pointing into one data file (location first among each one's
        external_data entries, named once the data is written), the file's size, and a generator of its bytes."""
        weights = self._checked_weights()
        skeleton = onnx.ModelProto()
        if self._proto is None:
            skeleton.CopyFrom(self._skeleton)
        else:
            _copy_without_weights(self._proto, skeleton, {name for name, _ in weights})
        offset = 0
        layout = []
        for name, tensor in weights:
            offset += (-offset) % 64  # aligned offsets let loaders map weights without copying
            size = tensor_nbytes(tensor)
            ref = _tensor_header(skeleton.graph.initializer.add(), name, tensor)
            ref.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", ""), ("offset", str(offset)), ("length", str(size))):
                entry = ref.external_data.add()
                entry.key, entry.value = key, value
            layout.append((offset, name, tensor))
            offset += size

        def chunks():
            written = 0
            pages = residency.Releaser()
            for start, name, tensor in layout:
                if start > written:
                    yield b"\0" * (start - written)
                value = self._value(name, tensor)
                yield value  # (copied out before the generator resumes)
                start += tensor_nbytes(value)
                pages.release(value)  # written: a weight mapped from a file need not stay resident
                del value  # (a weight read from a checkpoint is freed before the next is read)
                written = start

        return skeleton, offset, chunks()


def _as_real_pairs(x: Any) -> Any:
    """A complex tensor or array as real pairs; anything else as it is."""
    if isinstance(x, torch.Tensor) and x.is_complex():
        return _dtypes.to_pairs(x)
    if isinstance(x, np.ndarray) and np.iscomplexobj(x):
        return np.ascontiguousarray(np.stack([x.real, x.imag], axis=-1))
    return x


def _as_complex(x: Any) -> Any:
    """Real pairs (trailing axis of 2) as a complex tensor or array of the same library."""
    if isinstance(x, torch.Tensor):
        return _dtypes.from_pairs(x)
    x = np.ascontiguousarray(x if x.dtype != np.float16 else x.astype(np.float32))  # numpy has no complex32
    return x.view(np.complex64 if x.dtype == np.float32 else np.complex128)[..., 0]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, length: int) -> bytes:
    """A length-delimited field's tag and length."""
    return _varint(number << 3 | 2) + _varint(length)


# Field numbers in onnx.proto: ModelProto.graph, GraphProto.initializer, TensorProto.raw_data.
_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9


def _stream(skeleton: onnx.ModelProto, weights: list[tuple[str, torch.Tensor]],
            value: Callable[[str, torch.Tensor], torch.Tensor]) -> tuple[int, Any]:
    """The serialized model's size, and its bytes, weights included, without building it in memory: the
    skeleton, then per weight a `graph { initializer { ... } }` record, which protobuf parsers merge into
    the one graph. Each weight's bytes come straight from the tensor's memory."""
    head = skeleton.SerializeToString()
    records = []
    for name, tensor in weights:
        header = _tensor_header(onnx.TensorProto(), name, tensor).SerializeToString()
        size = tensor_nbytes(tensor)
        raw = _field(_TENSOR_RAW_DATA, size)
        tensor_length = len(header) + len(raw) + size
        graph = _field(_GRAPH_INITIALIZER, tensor_length)
        records.append((_field(_MODEL_GRAPH, len(graph) + tensor_length) + graph + header + raw, name, tensor))
    total = len(head) + sum(len(prefix) + tensor_nbytes(tensor) for prefix, _, tensor in records)

    def chunks():
        yield head
        pages = residency.Releaser()
        for prefix, name, tensor in records:
            yield prefix
            weight = value(name, tensor)
            yield weight  # (copied out before the generator resumes)
            pages.release(weight)
            del weight

    return total, chunks()


def _no_weights(key: str, like: torch.Tensor) -> torch.Tensor:
    raise lazy.UnboundWeightError(f"no weights are bound to read {key!r} from")


def _tensor_header(proto: onnx.TensorProto, name: str, tensor: torch.Tensor) -> onnx.TensorProto:
    """A TensorProto's name, type and shape, without its data."""
    proto.name = name
    proto.data_type = _dtypes.to_onnx(tensor.dtype)
    proto.dims.extend(tensor.shape)
    return proto


def _copy_without_weights(model: onnx.ModelProto, out: onnx.ModelProto, weights: set[str]) -> None:
    for field in ("ir_version", "producer_name", "producer_version", "domain", "model_version", "doc_string"):
        setattr(out, field, getattr(model, field))
    out.opset_import.extend(model.opset_import)
    out.metadata_props.extend(model.metadata_props)
    out.graph.name = model.graph.name
    out.graph.node.extend(model.graph.node)
    out.graph.input.extend(model.graph.input)
    out.graph.output.extend(model.graph.output)
    out.graph.value_info.extend(model.graph.value_info)
    out.graph.initializer.extend(t for t in model.graph.initializer if t.name not in weights)
    out.functions.extend(model.functions)


def _data_files(folder: str, base: str) -> set[str]:
    """The data files earlier saves of `base` left in folder (`<base>.<hash>.data`)."""
    pattern = re.compile(re.escape(base) + r"\.[0-9a-f]{16}\.data")
    try:
        return {name for name in os.listdir(folder) if pattern.fullmatch(name)}
    except FileNotFoundError:
        return set()


def _commit(tmp: str, path: str, folder: str) -> None:
    """Rename tmp over path, and make the rename itself durable before anything that relies on it."""
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _atomic_write(folder: str, path: str, chunks: Any, advance: Callable[[int], Any] | None = None) -> None:
    _commit(filewrite.write_new(folder, chunks, advance=advance), path, folder)
