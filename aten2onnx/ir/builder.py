"""GraphBuilder: the one API through which symbolic functions, built-in and user-written, build ONNX.

    y = g.op("Add", a, b)                       # one output -> Value
    values, indices = g.op("TopK", x, k, outputs=2, axis=-1)
    half = g.const(0.5, like=x)                 # a constant of x's dtype
    x.dtype, x.shape, x.rank                    # known from the FX metadata where the exporter had it

Nodes are kept as light Python objects and turned into protobuf once, at the end; constants built
only from other constants are folded on the spot by the evaluator the builder is given (aten2onnx.export
gives the runtime's own kernels).

Complex tensors are carried as real ones with a trailing axis of 2 (real, imaginary), because
onnxruntime computes nothing in ONNX's complex types: such a Value has `complex=True`, and its
dtype and shape are those of the real carrier (a complex64 [3, 4] is a float32 [3, 4, 2]). Only
handlers registered for complex tensors (`registry.register(..., complex=True)`) are given one.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

import numpy as np
import onnx
import torch
from onnx import AttributeProto, helper

from aten2onnx import _aten_node, _dtypes
from aten2onnx.errors import ExportError
from aten2onnx.ir import lazy, op_types
from aten2onnx.ir.emitters import Emitters

Dim = int | str | None

# Largest constant (in elements) the builder folds at build time; folding bigger ones would put
# large tensors into the model where the computation is cheaper.
FOLD_LIMIT = 1 << 16
# Ops the builder never folds, whatever their inputs: a weight's DequantizeLinear is what onnxruntime's
# integer kernels look for (folded, the weight would be stored as floats).
NEVER_FOLDED = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


class Value:
    """A value in the graph being built: a name, and the dtype/shape where known.

    `const` holds the tensor of a constant made by `g.const` (or folded from constants), so
    handlers can read static values such as shapes. A written buffer (kind "state") is an input
    whose initializer is only its default: its `const` is None, so nothing reads through it, and
    the default is in `default`. `least` is the least a 0-d integer value (a SymInt of the capture) can
    be, where the capture bounds it.
    """

    __slots__ = ("name", "dtype", "shape", "const", "producer", "kind", "complex", "default", "typed", "least")

    def __init__(self, name: str, dtype: torch.dtype | None = None, shape: tuple[Dim, ...] | None = None,
                 const: torch.Tensor | None = None, kind: str = "node", complex: bool = False) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.const = const
        self.producer: Node | None = None
        self.kind = kind  # "node", "input", "initializer" (a weight), "const", "state" (a written buffer)
        self.complex = complex  # a complex tensor carried as real pairs: dtype and shape are the carrier's
        self.default: torch.Tensor | None = None  # a "state" value's initializer
        self.typed = dtype is not None  # the dtype is known for certain, not guessed (see GraphBuilder._infer)
        self.least: int | None = None

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        """True when every dim is a known int."""
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    def __repr__(self) -> str:
        return f"Value({self.name!r}, {self.dtype}, {self.shape}{', complex' if self.complex else ''})"


class ExactCall:
    """The ATen call an FX node was (exact mode): an ATen node's inputs and attributes in the fallback
    encoding (_aten_node.py), and the values it makes. Written into the metadata of the node that
    makes the first of them; its inputs count as read by that node, so they stay in the graph."""

    __slots__ = ("inputs", "outputs", "attrs")

    def __init__(self, inputs: list[Value | None], outputs: list[Value | None], attrs: dict[str, Any]) -> None:
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs


class Node:
    __slots__ = ("op_type", "inputs", "outputs", "attrs", "domain", "name", "meta", "call")

    def __init__(self, op_type: str, inputs: list[Value | None], outputs: list[Value], attrs: dict[str, Any],
                 domain: str, name: str, meta: dict[str, str]) -> None:
        self.op_type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.domain = domain
        self.name = name
        self.meta = meta
        self.call: ExactCall | None = None


class Subgraph:
    """A finished control-flow body: its builder, formal inputs and outputs; a GRAPH attribute."""

    def __init__(self, builder: GraphBuilder, inputs: list[Value], outputs: list[Value], name: str) -> None:
        self.builder = builder
        self.inputs = inputs
        self.outputs = outputs
        self.name = name

    def live(self) -> list[Node]:
        return live_nodes(self.builder.nodes, self.outputs)

    def outer_refs(self) -> list[Value]:
        """Values this body reads from enclosing graphs."""
        nodes = self.live()
        own = {id(v) for v in self.inputs} | {id(o) for n in nodes for o in n.outputs}
        refs: dict[int, Value] = {}
        for value in node_inputs(nodes):
            if id(value) not in own:
                refs[id(value)] = value
        return list(refs.values())

    def to_proto(self) -> onnx.GraphProto:
        nodes = self.live()
        return helper.make_graph(self.builder.node_protos(nodes), self.name,
                                 [value_info(v) for v in self.inputs], [value_info(v) for v in self.outputs])


def live_nodes(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """The nodes the outputs depend on, in their original order (dead nodes removed)."""
    live: set[int] = set()
    stack = [v.producer for v in outputs if v.producer is not None]
    while stack:
        node = stack.pop()
        if id(node) in live:
            continue
        live.add(id(node))
        stack.extend(v.producer for v in node_inputs([node]) if v.producer is not None)
    return [n for n in nodes if id(n) in live]


def node_inputs(nodes: list[Node]):
    """Every value the nodes read, bodies of control-flow nodes included."""
    for node in nodes:
        yield from (v for v in node.inputs if v is not None)
        if node.call is not None:
            yield from (v for v in node.call.inputs if v is not None)
        for attr in node.attrs.values():
            if isinstance(attr, Subgraph):
                yield from attr.outer_refs()


def static_ints(value: Value | None) -> list[int] | None:
    """A constant 1-D int64 value's entries (a shape, axes, sizes); None where it is not one."""
    if value is None or value.const is None or value.const.dtype != torch.int64 or value.const.dim() != 1 \
            or lazy.is_lazy(value.const):
        return None
    return [int(v) for v in value.const.tolist()]


def axes_of(node: Node) -> list[int] | None:
    """The axes a node names (Unsqueeze, Squeeze, a Reduce): its attribute, or its constant second input, as
    later opsets take them; None where neither gives them."""
    return list(node.attrs["axes"]) if len(node.inputs) < 2 and "axes" in node.attrs else static_ints(
        node.inputs[1] if len(node.inputs) > 1 else None)


def value_info(value: Value) -> onnx.ValueInfoProto:
    elem = _dtypes.to_onnx(value.dtype) if value.dtype is not None else onnx.TensorProto.UNDEFINED
    return helper.make_tensor_value_info(value.name, elem, None if value.shape is None else list(value.shape))


def dim_of(d: Any) -> Dim:
    """A dim of an FX value: an int, or a symbolic size's expression as text (an ONNX dim_param)."""
    if isinstance(d, int):
        return d
    if isinstance(d, torch.SymInt):
        expr = d.node.expr
        return int(expr) if expr.is_number else str(expr)
    return None


def graph_type(val: Any) -> tuple[torch.dtype | None, tuple[Dim, ...] | None]:
    """dtype and shape of an FX value (a node's meta["val"]) as the graph carries it: a complex tensor as
    real pairs, a Python or symbolic number as a 0-d tensor."""
    if isinstance(val, torch.Tensor):
        return _dtypes.real_part(val.dtype), tuple(dim_of(d) for d in val.shape) + (2,) * val.dtype.is_complex
    if isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool):
        return torch.int64, ()
    if isinstance(val, (torch.SymFloat, float)):
        return torch.float64, ()  # a Python float is a double, as the sym-float symbolics compute it
    if isinstance(val, (torch.SymBool, bool)):
        return torch.bool, ()
    return None, None


# Output dtype rules for ops whose output is not of their first input's dtype.
_BOOL_OUT = frozenset({"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor",
                       "IsNaN", "IsInf"})
_INT64_OUT = frozenset({"Shape", "Size", "ArgMax", "ArgMin", "NonZero"})
# Ops whose single output has the first input's shape.
_SAME_SHAPE = frozenset({
    "Identity", "Cast", "CastLike", "Neg", "Abs", "Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt",
    "Reciprocal", "Softmax", "LogSoftmax", "LeakyRelu", "Elu", "Selu", "Celu", "Gelu", "HardSigmoid",
    "HardSwish", "Softplus", "Softsign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Floor",
    "Ceil", "Round", "Sign", "Not", "IsNaN", "IsInf", "Clip", "LayerNormalization", "Dropout", "Mish",
    "CumSum", "Trilu", "ThresholdedRelu", "Shrink", "PRelu",
})
_BROADCAST = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "LessOrEqual",
                        "GreaterOrEqual", "And", "Or", "Xor", "Max", "Min", "Mod", "Where", "BitShift"})


def _attribute_dtype(op_type: str, inputs: tuple, attrs: dict) -> torch.dtype | None:
    """The result dtype an op's attributes (or CastLike's second input) set, where they set it."""
    if op_type == "Cast":
        return _dtypes.to_torch(attrs["to"])
    if op_type == "CastLike":
        return inputs[1].dtype
    if op_type in ("ConstantOfShape", "Constant"):
        tensor = attrs.get("value")
        return tensor.dtype if isinstance(tensor, torch.Tensor) else torch.float32
    if op_type == "DequantizeLinear" and len(inputs) > 1:  # (from 23 the result's type is its own, not the scale's)
        return _dtypes.to_torch(attrs["output_dtype"]) if attrs.get("output_dtype") else inputs[1].dtype
    if isinstance(attrs.get("dtype"), int):  # RandomNormal, EyeLike, Multinomial, ... (an ATen node's is a name)
        return _dtypes.to_torch(attrs["dtype"])
    return None


def body_output(body: GraphBuilder, value: Value | int | float | bool, taken: Sequence[Value]) -> Value:
    """A subgraph output must be made inside the subgraph, once: pass anything else (a formal input,
    an outer value, a constant, a repeat) through Identity."""
    if not isinstance(value, Value):
        value = body.const(value)
    made_here = value.producer is not None and any(value.producer is n for n in body.nodes)
    if made_here and all(value is not t for t in taken):
        return value
    # emitted as is: g.op would fold the Identity of a constant back into the constant
    out = body._emit("Identity", (value,), 1, "", {}, op_types.signature("Identity", body.opset))
    out.dtype, out.shape, out.complex = value.dtype, value.shape, value.complex
    return out


def broadcast_shapes(*shapes: tuple[Dim, ...] | None) -> tuple[Dim, ...] | None:
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out: list[Dim] = []
    for i in range(rank):
        dims = [s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0]
        known = [d for d in dims if d != 1]
        if not known:
            out.append(1)
        elif all(d == known[0] for d in known):
            out.append(known[0])
        else:
            ints = [d for d in known if isinstance(d, int)]
            out.append(ints[0] if ints else None)
    return tuple(out)


class GraphBuilder(Emitters):
    """Builds one ONNX graph at one target opset."""

    def __init__(self, opset: int, *, evaluator: Callable[..., tuple[torch.Tensor, ...]] | None = None,
                 resolve: Callable[[str], Callable[..., Any] | None] | None = None,
                 parent: GraphBuilder | None = None, exact: bool = False) -> None:
        self.opset = opset
        # The exporter's dispatch (registry.Resolver): the translation of an overload key at this opset,
        # for handlers that build on another op's (symbolic/_carrier.real_symbolic); None outside an export.
        self.resolve = parent.resolve if parent is not None else resolve
        # exact mode: weights are not stored pre-transposed (the ATen calls read them as the model has them)
        self.exact = exact if parent is None else parent.exact
        self.nodes: list[Node] = []
        self.inputs: list[Value] = []
        self.parent = parent
        self.meta: dict[str, str] = {}  # metadata stamped on every node built; set by the translator
        self._scope = "n"
        if parent is None:
            # the least each symbolic size can be (as shapes spell it, "s0 + 1"), where the capture bounds it
            self.dim_least: dict[str, int] = {}
            self.initializers: dict[str, Value] = {}
            self.domains: dict[str, int] = {}
            self._counter = itertools.count()
            self._const_cache: dict[tuple, Value] = {}
            self._names: set[str] = set()
            self._evaluator = evaluator
        else:
            # A subgraph (If/Loop/Scan body): value names are unique across the whole model, and
            # constants live in the main graph, which subgraphs read from their outer scope.
            self.dim_least = parent.dim_least
            self.initializers = parent.initializers
            self.domains = parent.domains
            self._counter = parent._counter
            self._const_cache = parent._const_cache
            self._names = parent._names
            self._evaluator = parent._evaluator

    def subgraph(self) -> GraphBuilder:
        """A builder for a control-flow body; it may read this graph's values as outer-scope names."""
        return GraphBuilder(self.opset, parent=self)

    # -- naming -------------------------------------------------------------------------------
    def set_scope(self, scope: str, meta: dict[str, str]) -> None:
        """Name values and nodes after the FX node being translated, and stamp its metadata."""
        self._scope = scope
        self.meta = meta

    def rename(self, value: Value, name: str) -> bool:
        """Give value the name, if no value has it yet (the exporter names each FX node's result after
        the node); False, leaving the value as it was, when the name is taken."""
        if name in self._names:
            return False
        self._names.discard(value.name)
        value.name = name
        self._names.add(name)
        return True

    def fresh_name(self, hint: str | None = None) -> str:
        """A unique name: `hint` if free, else hint.N. Without a hint, an intermediate of the FX
        node being translated, `<node>.N`: the bare node name is kept for its result."""
        base = hint or self._scope
        name = base if hint is not None else f"{base}.{next(self._counter)}"
        while name in self._names:
            name = f"{base}.{next(self._counter)}"
        self._names.add(name)
        return name

    # -- graph inputs and weights -------------------------------------------------------------
    def input(self, name: str, dtype: torch.dtype, shape: tuple[Dim, ...]) -> Value:
        """A graph input; a complex dtype is carried as real pairs (see the module docstring)."""
        value = Value(self.fresh_name(name), _dtypes.real_part(dtype), tuple(shape) + (2,) * dtype.is_complex,
                      kind="input", complex=dtype.is_complex)
        self.inputs.append(value)
        return value

    def initializer(self, name: str, tensor: torch.Tensor, *, state: bool = False) -> Value:
        """A named weight (parameter, buffer or lifted constant); stored once. A `state` value (a
        buffer the model writes) is a graph input with the tensor as its default: a run may feed
        another value, so it is never folded or read as a constant."""
        if not lazy.computable(tensor):
            # a handler computed a weight from one without data, in plain torch (see ir/lazy.apply)
            raise ExportError(f"weight {name!r} was computed from a weight on the meta device in a way that cannot "
                              "be repeated when the weights are bound; export the model with its weights")
        tensor, is_complex = carrier(lazy.alias(tensor, tensor.detach()))
        value = Value(self.fresh_name(name), tensor.dtype, tuple(tensor.shape), kind="state" if state else "initializer",
                      complex=is_complex)
        if state:
            value.default = tensor
        else:
            value.const = tensor
        self.initializers[value.name] = value
        return value

    # -- constants ----------------------------------------------------------------------------
    def const(self, value: Any, dtype: torch.dtype | None = None, like: Value | None = None) -> Value:
        """A constant tensor. `value` may be a Python number or (nested) list, a numpy array or a
        torch tensor; `dtype` or `like` (take that value's dtype) sets its element type."""
        if like is not None and dtype is None:
            dtype = like.dtype
        if isinstance(value, torch.Tensor):
            tensor = value.detach().to(dtype) if dtype is not None else value.detach()
        elif isinstance(value, np.ndarray):
            tensor = torch.from_numpy(np.ascontiguousarray(value))
            tensor = tensor.to(dtype) if dtype is not None else tensor
        else:
            if dtype is None:
                dtype = _python_dtype(value)
            tensor = torch.tensor(value, dtype=dtype)
        tensor, is_complex = carrier(tensor)
        return self._const_tensor(tensor.contiguous(), is_complex)

    def _const_tensor(self, tensor: torch.Tensor, is_complex: bool = False) -> Value:
        key = None
        if tensor.numel() <= 64 and not lazy.is_lazy(tensor):
            key = (tensor.dtype, tuple(tensor.shape), is_complex, _raw_bytes(tensor))
            cached = self._const_cache.get(key)
            if cached is not None:
                return cached
        value = Value(self.fresh_name("const"), tensor.dtype, tuple(tensor.shape), const=tensor, kind="const",
                      complex=is_complex)
        self.initializers[value.name] = value
        if key is not None:
            self._const_cache[key] = value
        return value

    def retag(self, value: Value, *, complex: bool) -> Value:
        """The same tensor read as complex (real pairs) or as the real carrier: a constant is
        re-made with the tag, a computed value passes through Identity (view_as_real/view_as_complex)."""
        if value.complex == complex:
            return value
        if value.kind == "const":
            return self._const_tensor(value.const, complex)
        out = self.op("Identity", value)
        out.dtype, out.shape, out.complex = value.dtype, value.shape, complex
        return out

    def int_list(self, items: Sequence[int | Value]) -> Value:
        """A 1-D int64 tensor from ints and 0-d int graph values (SymInts), as shape arguments need."""
        if all(isinstance(i, int) for i in items):
            return self.const(list(items), dtype=torch.int64)
        parts = []
        for item in items:
            if isinstance(item, Value):
                if item.dtype != torch.int64:
                    item = self.op("Cast", item, to=onnx.TensorProto.INT64)
                parts.append(self.op("Reshape", item, self.const([1], dtype=torch.int64)))
            else:
                parts.append(self.const([item], dtype=torch.int64))
        return self.op("Concat", *parts, axis=0)

    # -- nodes --------------------------------------------------------------------------------
    def op(self, op_type: str, *inputs: Value | None, outputs: int = 1, domain: str = "",
           **attributes: Any) -> Any:
        """Add a node; returns its Value, or a tuple of Values when outputs > 1.

        Attribute types follow the Python values: int/bool -> INT, float -> FLOAT, str -> STRING,
        list of ints/floats/strs -> INTS/FLOATS/STRINGS, tensor -> TENSOR. A None attribute is left out.
        An op the default domain does not define at the opset is NotImplementedError (the node falls back).
        """
        for i, value in enumerate(inputs):
            if value is not None and not isinstance(value, Value):
                raise TypeError(f"g.op({op_type!r}): input {i} is a {type(value).__name__}, not a Value; "
                                "wrap constants with g.const(...)")
        attrs = {k: v for k, v in attributes.items() if v is not None}
        if domain:
            self.domains.setdefault(domain, 1)
        elif op_types.signature(op_type, self.opset) is None:
            raise NotImplementedError(f"ONNX defines no {op_type} at opset {self.opset}")
        folded = self._try_fold(op_type, inputs, attrs, outputs, domain)
        if folded is not None:
            return folded
        reduction = attrs.get("reduction") if op_type in ("ScatterND", "ScatterElements") else None
        signature = None if domain else op_types.signature(op_type, self.opset, "", reduction)
        if signature is not None:
            try:
                widen = op_types.widened(signature, [None if v is None else v.dtype for v in inputs])
            except NotImplementedError as e:
                raise NotImplementedError(f"ONNX {op_type} at opset {self.opset} {e}") from None
            if op_type in ("Cast", "CastLike"):  # a cast cannot be widened by casts
                if widen and not signature.takes(signature.input_type(0), inputs[0].dtype):
                    raise NotImplementedError(f"ONNX {op_type} at opset {self.opset} takes no {inputs[0].dtype} input")
                target = _attribute_dtype(op_type, inputs, attrs)
                if target is not None and not signature.takes(signature.output_type(0), target):
                    raise NotImplementedError(f"ONNX {op_type} at opset {self.opset} makes no {target}")
                widen = {}
            if widen:
                return self._widened(op_type, inputs, outputs, domain, attributes, signature, widen)
            made = _attribute_dtype(op_type, inputs, attrs)
            formal = signature.output_type(0)
            if made is not None and op_type not in ("Cast", "CastLike") and formal in signature.allowed \
                    and not signature.takes(formal, made, "runs"):
                return self._made_wider(op_type, inputs, attributes, signature, made)
        return self._emit(op_type, inputs, outputs, domain, attrs, signature)

    def _emit(self, op_type: str, inputs: tuple, outputs: int, domain: str, attrs: dict,
              signature: op_types.Signature | None) -> Any:
        """The node itself, its results typed as far as the schema tells."""
        dtypes, typed, shape = self._infer(op_type, inputs, attrs, outputs, signature)
        outs = [Value(self.fresh_name(), dtypes[i], shape if i == 0 else None) for i in range(outputs)]
        for out, certain in zip(outs, typed):
            out.typed = certain
        node = Node(op_type, list(inputs), outs, attrs, domain, self.fresh_name(f"{self._scope}/{op_type}"), self.meta)
        for out in outs:
            out.producer = node
        self.nodes.append(node)
        return outs[0] if outputs == 1 else tuple(outs)

    def _widened(self, op_type: str, inputs: tuple, outputs: int, domain: str, attributes: dict,
                 signature: op_types.Signature, widen: dict[str, tuple[torch.dtype, torch.dtype]]) -> Any:
        """op_type computed in the wider dtypes `widen` names (see op_types), its results of a
        widened constraint cast back to the dtype the inputs had."""
        cast = []
        for i, value in enumerate(inputs):
            formal = signature.input_type(i)
            if value is not None and formal in widen:
                value = self.op("Cast", value, to=_dtypes.to_onnx(widen[formal][1]))
            cast.append(value)
        results = self.op(op_type, *cast, outputs=outputs, domain=domain, **attributes)
        results = list(results) if outputs > 1 else [results]
        for i, result in enumerate(results):
            formal = signature.output_type(i)
            if formal in widen:
                results[i] = self.op("Cast", result, to=_dtypes.to_onnx(widen[formal][0]))
        return tuple(results) if outputs > 1 else results[0]

    def _made_wider(self, op_type: str, inputs: tuple, attributes: dict, signature: op_types.Signature,
                    made: torch.dtype) -> Value:
        """An op whose result dtype an attribute sets (ConstantOfShape's value, RandomNormal's dtype),
        asked for a dtype it does not make: made in a wider one, cast back (see op_types)."""
        wider = op_types.wider_type(signature, signature.output_type(0), made)
        if wider is None:
            if signature.takes(signature.output_type(0), made):  # allowed, though onnxruntime runs none
                return self._emit(op_type, inputs, 1, "", {k: v for k, v in attributes.items() if v is not None},
                                  signature)
            raise NotImplementedError(f"ONNX {op_type} at opset {self.opset} makes no {made} result")
        attributes = dict(attributes)
        if isinstance(attributes.get("value"), torch.Tensor):
            attributes["value"] = attributes["value"].to(wider)
        else:
            attributes["dtype"] = _dtypes.to_onnx(wider)
        return self.op("Cast", self.op(op_type, *inputs, **attributes), to=_dtypes.to_onnx(made))

    def _try_fold(self, op_type: str, inputs: tuple, attrs: dict, outputs: int, domain: str) -> Any:
        if op_type == "Transpose" and not domain and inputs[0].kind == "initializer" and not self.exact:
            return self._transposed_weight(inputs[0], attrs.get("perm"))
        if self._evaluator is None or domain or not inputs or op_type in NEVER_FOLDED:
            return None
        # Small weights fold too (a slice of a position-ids buffer); large ones stay initializers. In exact
        # mode weights do not: the ATen calls read them, so a folded copy would only double them.
        foldable = ("const",) if self.exact else ("const", "initializer")
        if any(v is not None and v.kind not in foldable for v in inputs):
            return None
        if sum(v.const.numel() for v in inputs if v is not None) > FOLD_LIMIT:
            return None
        consts = [None if v is None else v.const for v in inputs]
        if any(lazy.is_lazy(c) for c in consts):
            try:  # a weight without data: its fold is computed when the model is written
                results = lazy.apply(lambda *xs: self._evaluator(op_type, self.opset, list(xs), attrs, outputs), *consts)
            except Exception:  # noqa: BLE001 (a kernel that needs the values: the node stays)
                return None
        else:
            results = self._evaluator(op_type, self.opset, consts, attrs, outputs)
        if results is None or any(r.numel() > FOLD_LIMIT for r in results):
            return None
        # a weight is not stored again in more bytes than it has (an int8 weight cast to float stays int8)
        stored = max((_nbytes(v.const) for v in inputs if v is not None and v.kind == "initializer"), default=None)
        if stored is not None and any(_nbytes(r) > stored for r in results):
            return None
        values = tuple(self._const_tensor(lazy.apply(torch.Tensor.contiguous, r)) for r in results)
        return values[0] if outputs == 1 else values

    def _transposed_weight(self, weight: Value, perm: list[int] | None) -> Value:
        """A weight stored transposed (as a lazy view, copied only when the model is written), so
        `linear` needs no Transpose node. Named after the weight: `<key>.T` for a 2-D transpose."""
        perm = list(perm) if perm is not None else list(range(weight.rank))[::-1]
        key = (weight.name, tuple(perm))
        cached = self._const_cache.get(key)
        if cached is not None:
            return cached
        suffix = ".T" if perm == [1, 0] else ".permuted_" + "_".join(map(str, perm))
        value = self.initializer(weight.name + suffix, weight.const.permute(perm))
        self._const_cache[key] = value
        return value

    def _infer(self, op_type: str, inputs: tuple, attrs: dict, outputs: int,
               signature: op_types.Signature | None) -> tuple[list, list[bool], tuple | None]:
        """Each output's dtype, whether that dtype is certain (the schema ties it to a certain input's
        or fixes it, or an attribute sets it) rather than guessed from the first input, and the
        first output's shape where it is easy to know."""
        first = next((v for v in inputs if v is not None), None)
        guess = first.dtype if first is not None else None
        if op_type in _BOOL_OUT:
            guess = torch.bool
        elif op_type in _INT64_OUT:
            guess = torch.int64
        set_by_attribute = _attribute_dtype(op_type, inputs, attrs)
        known = (op_types.result_dtypes(signature, [None if v is None else v.dtype for v in inputs], outputs)
                 if signature is not None else [(None, None)] * outputs)
        dtypes, typed = [], []
        for i, (dtype, source) in enumerate(known):
            if dtype is not None:
                dtypes.append(dtype)
                typed.append(source is None or inputs[source].typed)
            elif i == 0 and set_by_attribute is not None:
                dtypes.append(set_by_attribute)
                typed.append(True)
            else:
                dtypes.append(guess)
                typed.append(False)
        shape = None
        if op_type in _SAME_SHAPE and first is not None:
            shape = first.shape
        elif op_type in _BROADCAST:
            shape = broadcast_shapes(*(v.shape for v in inputs if v is not None))
        return dtypes, typed, shape

    # -- serialization ------------------------------------------------------------------------
    def node_protos(self, nodes: list[Node]) -> list[onnx.NodeProto]:
        protos = []
        made = {id(out) for node in nodes for out in node.outputs}
        for node in nodes:
            proto = onnx.NodeProto()
            proto.op_type = node.op_type
            proto.name = node.name
            if node.domain:
                proto.domain = node.domain
            # Trailing omitted optional inputs are left out rather than named "": onnxruntime 1.31
            # crashes on LayerNormalization(X, Scale, "").
            inputs = list(node.inputs)
            while inputs and inputs[-1] is None:
                inputs.pop()
            proto.input.extend("" if v is None else v.name for v in inputs)
            proto.output.extend(v.name for v in node.outputs)
            if node.attrs:
                proto.attribute.extend(make_attribute(k, v) for k, v in sorted(node.attrs.items()))
            for key, value in node.meta.items():
                entry = proto.metadata_props.add()
                entry.key = key
                entry.value = value
            if node.call is not None:
                entry = proto.metadata_props.add()
                entry.key, entry.value = _aten_node.EXACT_CALL, _aten_node.encode_call(self._call_proto(node.call, made))
            protos.append(proto)
        return protos


    @staticmethod
    def _call_proto(call: ExactCall, made: set[int]) -> onnx.NodeProto:
        """The call as an ATen node; a result no live node makes (nothing reads it) is left unnamed, and so
        is a result the translation gave as the same value as an earlier one (embedding_bag's bag_size
        and max_indices in sum/mean mode): a node makes each name once."""
        proto = onnx.NodeProto()
        proto.op_type, proto.domain = "ATen", _aten_node.DOMAIN
        proto.input.extend("" if v is None else v.name for v in call.inputs)
        named: set[int] = set()
        for v in call.outputs:
            keep = v is not None and id(v) in made and id(v) not in named
            proto.output.append(v.name if keep else "")
            if keep:
                named.add(id(v))
        proto.attribute.extend(make_attribute(k, v) for k, v in sorted(call.attrs.items()))
        return proto


def _raw_bytes(tensor: torch.Tensor) -> bytes:
    """A small tensor's bytes, for any dtype (numpy has no bfloat16 or float8)."""
    try:
        return tensor.numpy().tobytes()
    except TypeError:
        flat = tensor.detach().reshape(-1).contiguous()
    if flat.numel() and flat.stride(0) != 1:  # one element is contiguous whatever its stride: a view needs 1
        flat = flat.clone(memory_format=torch.contiguous_format)
    return flat.view(torch.uint8).numpy().tobytes()


def carrier(tensor: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """(the tensor as the graph holds it, whether it is complex): complex as real pairs."""
    if tensor.is_complex():
        return _dtypes.to_pairs(tensor).contiguous(), True
    return tensor, False


def _python_dtype(value: Any) -> torch.dtype:
    flat = value
    while isinstance(flat, (list, tuple)) and flat:
        flat = flat[0]
    if isinstance(flat, bool):
        return torch.bool
    if isinstance(flat, int):
        return torch.int64
    if isinstance(flat, complex):
        return torch.complex64
    return torch.float32


def tensor_view(tensor: torch.Tensor) -> memoryview:
    """A tensor's bytes in ONNX's raw_data layout, without a copy where it is contiguous on the CPU."""
    if tensor.dtype in _dtypes.PACKED:
        return _packed_nibbles(tensor.detach().view(_dtypes.PACKED[tensor.dtype]))
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    elif tensor.dtype.is_floating_point and tensor.dtype.itemsize == 1:
        tensor = tensor.view(torch.uint8)
    if tensor.numel() == 0:
        return memoryview(b"")
    return memoryview(tensor.reshape(-1).numpy()).cast("B")


def tensor_nbytes(tensor: torch.Tensor) -> int:
    """How many bytes tensor_view gives for tensor (4-bit integers: two per byte)."""
    if tensor.dtype in _dtypes.PACKED:
        return (tensor.numel() + 1) // 2
    return tensor.numel() * tensor.element_size()


def _packed_nibbles(values: torch.Tensor) -> memoryview:
    """4-bit integers (held one per byte) packed two per byte, the first in the low nibble, as ONNX's
    INT4/UINT4 raw_data lays them out (an odd count ends in half a byte)."""
    flat = values.cpu().contiguous().reshape(-1).to(torch.int16) & 0xF
    if flat.numel() % 2:
        flat = torch.cat([flat, flat.new_zeros(1)])
    packed = (flat[0::2] | (flat[1::2] << 4)).to(torch.uint8)
    return memoryview(packed.numpy()).cast("B")


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """A tensor's bytes in ONNX's raw_data layout (one copy)."""
    return tensor_view(tensor).tobytes()


def fill_tensor_proto(proto: onnx.TensorProto, tensor: torch.Tensor, name: str = "") -> onnx.TensorProto:
    proto.name = name
    proto.data_type = _dtypes.to_onnx(tensor.dtype)
    proto.dims.extend(tensor.shape)
    proto.raw_data = tensor_bytes(tensor)
    return proto


def tensor_proto(tensor: torch.Tensor, name: str = "") -> onnx.TensorProto:
    return fill_tensor_proto(onnx.TensorProto(), tensor, name)


def make_attribute(name: str, value: Any) -> onnx.AttributeProto:
    if isinstance(value, Subgraph):
        return helper.make_attribute(name, value.to_proto())
    if isinstance(value, torch.Tensor):
        return helper.make_attribute(name, tensor_proto(value))
    if isinstance(value, np.ndarray):
        return helper.make_attribute(name, tensor_proto(torch.from_numpy(value)))
    if isinstance(value, (list, tuple)) and not value:
        return helper.make_attribute(name, [], attr_type=AttributeProto.INTS)
    if isinstance(value, (list, tuple)) and any(isinstance(v, float) for v in value):
        return helper.make_attribute(name, [float(v) for v in value])
    if isinstance(value, bool):
        return helper.make_attribute(name, int(value))
    return helper.make_attribute(name, value)
