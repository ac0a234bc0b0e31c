"""The graph optimizer (`export(..., optimize=True)`, the default): rewrites of the translated graph,
before it is written, that leave what it computes as it was (up to the rounding of a folded batch norm).

- nodes that do nothing (Identity, a Cast to the dtype its input has, a Reshape to the static shape
  its input has, a Transpose that keeps the axes' order, a Mul or Div by a constant 1) are bypassed,
  and chains of Reshapes or of Transposes collapse to one;
- weight-only subgraphs are folded: a node whose inputs are all weights or constants is computed
  once, with the runtime's kernels, when its result takes no more bytes than its largest input (a
  reshaped or transposed weight is stored once, transformed; a broadcast that grows, or an integer
  weight cast to floats, is not stored);
- a BatchNormalization after a Conv or ConvTranspose of constant weights is folded into its weight
  and bias, and a constant Pad before a Conv or a pool into its own pads (zeros; -inf for MaxPool);
- a Conv, Gemm or MatMul of dequantized integers (DequantizeLinear of an activation, per tensor, and of a
  constant weight, per tensor or per output channel) whose result is not quantized again (onnxruntime's
  QDQ transformer makes QLinearConv/QLinearMatMul of those that are) runs on integers: ConvInteger or
  MatMulInteger, then the float scaling and the bias; a QuantizeLinear by the scale and zero point a
  DynamicQuantizeLinear of the same input computed is that DynamicQuantizeLinear's result (onnxruntime
  fuses the chain into DynamicQuantizeMatMul); a 4-bit weight's DequantizeLinear read transposed by a Gemm
  or MatMul is stored transposed and blocked along its input channels, into a MatMul (onnxruntime's
  MatMulNBits);
- an Add a LayerNormalization alone reads is a Sum (with the Add before it that only it reads), which
  onnxruntime does not fuse into its SkipLayerNormalization, slower on CPU than the two ops;
- for onnxruntime (optimize="onnxruntime"), its contrib ops: a MultiHeadAttention whose query, key and
  value are projections of one input as Attention with one packed weight (a GroupQueryAttention's as one
  MatMul whose result packs all three), an RMS norm of a residual sum
  as SkipSimplifiedLayerNormalization, a rotary embedding as RotaryEmbedding; the chains left around
  them are collapsed again; otherwise, from opset 23, a rotary embedding as ONNX's RotaryEmbedding;
- from opset 23, an RMS norm written as its arithmetic (x / sqrt(mean(x^2) + eps) * w, as transformers'
  RMS norm modules compute it) as ONNX's RMSNormalization;
- nodes that compute the same thing from the same inputs are merged;
- what no output depends on is dropped.

What it never does: fold a quantized weight's DequantizeLinear (the weight stays an integer in the
file, for the runtime's integer kernels), touch an exact-mode export (whose nodes are the ATen calls
eager made, run bit for bit), or rewire a value a control-flow body reads. Merged and bypassed nodes
leave the provenance metadata of the node kept.

The passes are ours rather than onnxscript's optimizer or onnxslim: they run on the exporter's graph
before serialization, so the weights stay lazy references to the module's tensors (no protobuf copy
of the model), the fold uses our runtime's kernels (the ones exact mode trusts), and the rules about
quantized weights and exact mode live where the graph is built.
"""

from __future__ import annotations

import collections
import functools
import math
from typing import Any, Callable

import torch

from aten2onnx import _dtypes
from aten2onnx.ir import lazy, op_types
from aten2onnx.ir.builder import GraphBuilder, Node, Subgraph, Value, axes_of, live_nodes, static_ints

# ops never folded or merged: random (two draws differ), quantization (a weight's DequantizeLinear is what
# the runtime's integer kernels look for), and those with side outputs that a fold would lose
_KEEP = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                   "Bernoulli", "Dropout", "DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear",
                   "If", "Loop", "Scan"})
_FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


class _Uses:
    """Who reads each value: (node, input index) pairs, and the values that must keep their producer
    (graph outputs, values control-flow bodies or exact calls read)."""

    def __init__(self, nodes: list[Node], outputs: list[Value]) -> None:
        self.readers: dict[int, list[tuple[Node, int]]] = {}
        for node in nodes:
            for i, v in enumerate(node.inputs):
                if v is not None:
                    self.readers.setdefault(id(v), []).append((node, i))
        self.pinned = {id(v) for v in outputs}
        for node in nodes:
            if node.call is not None:
                self.pinned.update(id(v) for v in node.call.inputs if v is not None)
                self.pinned.update(id(v) for v in node.call.outputs if v is not None)
            for attr in node.attrs.values():
                if isinstance(attr, Subgraph):
                    self.pinned.update(id(v) for v in attr.outer_refs())

    def only_reader(self, value: Value) -> Node | None:
        readers = self.readers.get(id(value), [])
        if id(value) in self.pinned or len({id(n) for n, _ in readers}) != 1:
            return None
        return readers[0][0]

    def replace(self, old: Value, new: Value) -> bool:
        """Every reader of old reads new instead; False (nothing done) where old is pinned."""
        if id(old) in self.pinned:
            return False
        for node, i in self.readers.pop(id(old), []):
            node.inputs[i] = new
            self.readers.setdefault(id(new), []).append((node, i))
        return True


def optimize(g: GraphBuilder, nodes: list[Node], outputs: list[Value], *,
             same_call: Callable[[Node, Node], bool] | None = None,
             onnxruntime: bool = False) -> tuple[list[Node], list[torch.Tensor]]:
    """The optimized node list (outputs keep their Values and names), and the module tensors folded
    weights were computed from (an in-place change to one of them after export must be refused, as
    for the weights themselves). same_call: when local functions are extracted afterwards, whether two
    nodes were made in one module call; then no two nodes are merged (the merged one would belong to two
    calls) and a node is rewritten by what reads it only within its call (or that call's body would differ
    from the others'). onnxruntime: also write what onnxruntime runs fastest as its contrib ops (a 4-bit
    weight's matmul as MatMulNBits)."""
    sources: list[torch.Tensor] = []
    nodes = _tidy(nodes, outputs)
    nodes = _fold_weights(g, nodes, outputs, sources)
    nodes = _fold_batch_norms(g, nodes, outputs, sources)
    nodes = _fold_pads(nodes, outputs)
    nodes = _dynamic_quantization(nodes, outputs)
    nodes = _rewrite_each(g, nodes, outputs, _on_integers)
    nodes = _four_bit_matmuls(g, nodes, outputs, contrib=onnxruntime)
    nodes = _layer_norm_sums(live_nodes(nodes, outputs), outputs, same_call or (lambda a, b: True))
    if onnxruntime:
        nodes = _rewrite_each(g, nodes, outputs, lambda g, node, uses: _packed_attention(g, node, uses, sources))
        nodes = _skip_rms_norms(g, live_nodes(nodes, outputs), outputs)
        nodes = _tidy(_rewrite_each(g, nodes, outputs, functools.partial(_rotary_embedding, contrib=True)), outputs)
    elif op_types.signature("RotaryEmbedding", g.opset) is not None:  # (ONNX's own, from opset 23)
        nodes = _tidy(_rewrite_each(g, nodes, outputs, functools.partial(_rotary_embedding, contrib=False)), outputs)
    if op_types.signature("RMSNormalization", g.opset) is not None:
        nodes = _rms_normalizations(g, live_nodes(nodes, outputs), outputs)
    if same_call is None:
        nodes = _merge_duplicates(nodes, outputs)
    return live_nodes(nodes, outputs), sources


def _tidy(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """nodes with chains of Reshapes and Transposes collapsed and no-ops bypassed, until none is left."""
    nodes = live_nodes(nodes, outputs)
    while True:  # (a chain collapsed into a no-op, once bypassed, can join the next chain)
        count = len(nodes)
        nodes = live_nodes(_bypass_no_ops(_collapse_chains(nodes), outputs), outputs)
        if len(nodes) == count:
            return nodes


# -- groups -------------------------------------------------------------------------------------------------


def _scope(node: Node) -> str:
    """The FX node a node was translated from (nodes are named `<fx node>/<op type>`)."""
    return node.name.split("/", 1)[0]


class _Groups:
    """How many nodes each FX node became. A rewrite that removes or rewires a node of a group of several
    (an ATen op spelled by several nodes) would break the group, which aten2onnx.runtime re-fuses into
    the ATen op's own kernel (gelu, attention: runtime/optimize.py): rewrites touch a node of such a group
    only together with another node of the same group."""

    def __init__(self, nodes: list[Node]) -> None:
        self.sizes = collections.Counter(_scope(n) for n in nodes)
        # a group holding one of onnxruntime's contrib ops is no pattern the runtime re-fuses: its
        # layout nodes may cancel against their neighbours'
        self.free = {_scope(n) for n in nodes if n.domain == CONTRIB_DOMAIN}

    def alone(self, node: Node) -> bool:
        return self.sizes[_scope(node)] == 1 or _scope(node) in self.free

    def may_join(self, node: Node, other: Node) -> bool:
        """Whether node may be rewired to read past other (other stays, whole, for its other readers)."""
        return (_scope(node) == _scope(other) or (self.alone(node) and self.alone(other))
                or _scope(node) in self.free)


# -- no-ops -------------------------------------------------------------------------------------------------


def _is_no_op(node: Node) -> bool:
    if node.domain or node.call is not None or not node.inputs or node.inputs[0] is None:
        return False
    x, out = node.inputs[0], node.outputs[0]
    if node.op_type == "Identity":
        return True
    if node.op_type == "Cast":
        return x.typed and x.dtype is not None and _dtypes.to_onnx(x.dtype) == node.attrs.get("to") and not x.complex
    if node.op_type == "Reshape":
        shape = static_ints(node.inputs[1]) if len(node.inputs) > 1 else None
        if shape is None or x.shape is None or None in x.shape or (node.attrs.get("allowzero", 0) and 0 in shape):
            return False
        return _same_shape(tuple(x.shape), shape)
    if node.op_type == "Transpose":
        perm = node.attrs.get("perm")
        return perm is not None and list(perm) == sorted(perm)
    if node.op_type in ("Mul", "Div"):  # (x * 1 and x / 1 are x, bit for bit, whatever x holds)
        one = node.inputs[1]
        return (one is not None and _constant(one) and not lazy.is_lazy(one.const) and one.const.numel() == 1
                and bool(one.const.reshape(()) == 1)
                and one.dtype == x.dtype and x.rank is not None and one.const.dim() <= x.rank)
    return False


def _copies_kept(shape: list[int], first: Node) -> bool:
    """Whether each dim a Reshape to `shape` copies (0) from first's result is the same dim of first's
    input, so that the Reshape may read first's input instead."""
    if 0 not in shape:
        return True
    before, after = first.inputs[0].shape, first.outputs[0].shape
    return (before is not None and after is not None and "allowzero" not in first.attrs
            and all(i < min(len(before), len(after)) and before[i] is not None and before[i] == after[i]
                    for i, n in enumerate(shape) if n == 0))


def _same_shape(dims: tuple, shape: list[int]) -> bool:
    """Whether a Reshape to `shape` (whose 0s copy) of a tensor of dims, static or symbolic, gives dims:
    each entry copies its dim (0) or is that static dim, one -1 at most standing for the last unknown."""
    if len(dims) != len(shape) or shape.count(-1) > 1:
        return False
    unknown = [i for i, (d, n) in enumerate(zip(dims, shape)) if n != 0 and n != d]
    return not unknown or (len(unknown) == 1 and shape[unknown[0]] == -1)


def _bypass_no_ops(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    uses = _Uses(nodes, outputs)
    groups = _Groups(nodes)
    kept = []
    for node in nodes:
        if _is_no_op(node) and groups.alone(node) and uses.replace(node.outputs[0], node.inputs[0]):
            continue
        kept.append(node)
    return kept


def _collapse_chains(nodes: list[Node]) -> list[Node]:
    """A Reshape of a Reshape reads the first one's input (when the second's shape is constant and copies
    no dim, 0, from the first's result); a Transpose of a Transpose reads the first's input, permuted by
    both. The first stays for its other readers, if any."""
    groups = _Groups(nodes)
    for node in nodes:
        if node.domain or node.call is not None or not node.inputs or node.inputs[0] is None:
            continue
        first = node.inputs[0].producer
        if (first is None or first.op_type != node.op_type or first.domain or first.call is not None
                or not groups.may_join(node, first)):
            continue
        if node.op_type == "Reshape" and len(node.inputs) > 1 and "allowzero" not in node.attrs:
            shape = static_ints(node.inputs[1])
            if shape is not None and first.inputs[0] is not None and _copies_kept(shape, first):
                node.inputs = [first.inputs[0], node.inputs[1]]
        elif node.op_type == "Transpose" and node.attrs.get("perm") is not None and first.attrs.get("perm") is not None:
            inner, outer = list(first.attrs["perm"]), list(node.attrs["perm"])
            node.attrs = dict(node.attrs, perm=[inner[axis] for axis in outer])
            node.inputs = [first.inputs[0]]
    return nodes


# -- weight-only subgraphs ----------------------------------------------------------------------------------


def _constant(value: Value | None) -> bool:
    return value is None or (value.kind in ("const", "initializer") and value.const is not None)


# a folded result may be larger than its inputs up to this many bytes (a rotary table computed from its
# inverse frequencies at static positions: a few KiB for the nodes it saves on every run)
_SMALL_RESULT = 64 * 1024


def _fold_weights(g: GraphBuilder, nodes: list[Node], outputs: list[Value], sources: list[torch.Tensor]) -> list[Node]:
    """Nodes of weights and constants computed once, where the result is no larger than the largest
    input or than _SMALL_RESULT; the result is a weight named after the first weight it came from."""
    evaluate: Callable[..., Any] | None = g._evaluator
    if evaluate is None:
        return nodes
    uses = _Uses(nodes, outputs)
    kept = []
    for node in nodes:
        if (node.domain or node.op_type in _KEEP or node.call is not None or not node.inputs
                or any(isinstance(a, Subgraph) for a in node.attrs.values())
                or not all(_constant(v) for v in node.inputs)
                or any(id(o) in uses.pinned for o in node.outputs)):
            kept.append(node)
            continue
        largest = max((v.const.numel() * v.const.element_size() for v in node.inputs if v is not None), default=0)
        op_type, opset, attrs, count = node.op_type, g.opset, dict(node.attrs), len(node.outputs)
        try:  # (lazy: a weight without data is folded when the model is written)
            results = lazy.apply(lambda *xs: evaluate(op_type, opset, list(xs), attrs, count),
                                 *[None if v is None else v.const for v in node.inputs])
        except Exception:  # a kernel that refuses these constants: the node stays, the runtime will say why
            results = None
        # (a small result may be larger than its inputs, not wider: an integer weight stays stored as such)
        narrowest = min((v.const.element_size() for v in node.inputs if v is not None), default=8)
        if results is None or any(r.numel() * r.element_size() > (
                max(largest, _SMALL_RESULT) if r.element_size() <= narrowest else max(largest, 8)) for r in results):
            kept.append(node)
            continue
        source = next((v for v in node.inputs if v is not None and v.kind == "initializer"), None)
        if any(out.dtype is not None and r.dtype != out.dtype for out, r in zip(node.outputs, results)):
            kept.append(node)  # (a kernel's result in another dtype than the graph declares: left to run)
            continue
        for out, result in zip(node.outputs, results):
            result = lazy.apply(torch.Tensor.contiguous, result)
            folded = (g._const_tensor(result) if source is None
                      else g.initializer(f"{source.name}.{node.op_type.lower()}", result))
            uses.replace(out, folded)
        sources.extend(v.const for v in node.inputs if v is not None and v.kind == "initializer")
    return kept


# -- batch norm and pad folded into Conv --------------------------------------------------------------------


def _fold_batch_norms(g: GraphBuilder, nodes: list[Node], outputs: list[Value], sources: list[torch.Tensor]) -> list[Node]:
    uses = _Uses(nodes, outputs)
    dropped: set[int] = set()
    for bn in nodes:
        if bn.op_type != "BatchNormalization" or bn.domain or len(bn.outputs) != 1 or bn.attrs.get("training_mode"):
            continue
        x = bn.inputs[0]
        conv = x.producer if x is not None else None
        if (conv is None or conv.op_type not in ("Conv", "ConvTranspose") or conv.domain or conv.call is not None
                or uses.only_reader(x) is not bn or not all(_constant(v) for v in conv.inputs[1:])
                or not all(_constant(v) and v is not None for v in bn.inputs[1:5])
                or conv.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET")):
            continue
        weight = conv.inputs[1]
        if weight.dtype not in _FLOATS or any(v.dtype != weight.dtype for v in bn.inputs[1:5]):
            continue
        bias = conv.inputs[2].const if len(conv.inputs) > 2 and conv.inputs[2] is not None else None
        fold = functools.partial(_batch_norm_folded, float(bn.attrs.get("epsilon", 1e-5)),
                                 None if conv.op_type == "Conv" else int(conv.attrs.get("group", 1)))
        w, b = lazy.apply(fold, weight.const, bias, *(v.const for v in bn.inputs[1:5]))
        sources.extend(v.const for v in [*conv.inputs[1:], *bn.inputs[1:5]] if v is not None and v.kind == "initializer")
        conv.inputs = [conv.inputs[0], g.initializer(f"{weight.name}.bn_folded", w),
                       g.initializer(f"{bn.inputs[2].name}.bn_folded", b)]
        conv.outputs = list(bn.outputs)
        for out in conv.outputs:
            out.producer = conv
        dropped.add(id(bn))
    return [n for n in nodes if id(n) not in dropped]


def _batch_norm_folded(epsilon: float, groups: int | None, weight: torch.Tensor, bias: torch.Tensor | None,
                       scale: torch.Tensor, shift: torch.Tensor, mean: torch.Tensor, var: torch.Tensor
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """(weight, bias) of a Conv (groups None) or ConvTranspose with the batch norm after it applied, computed
    in float64 and stored in the weight's dtype."""
    scale, shift, mean, var = (t.to(torch.float64) for t in (scale, shift, mean, var))
    factor = scale / torch.sqrt(var + epsilon)
    w = weight.to(torch.float64)
    if groups is None:
        w = w * factor.reshape(-1, *[1] * (w.dim() - 1))
    else:  # ConvTranspose: [C_in, C_out / groups, k...], the output channel is (group, column)
        per = w.shape[1]
        w = (w.reshape(groups, w.shape[0] // groups, per, *w.shape[2:])
             * factor.reshape(groups, 1, per, *[1] * (w.dim() - 2))).reshape(w.shape)
    b = ((bias.to(torch.float64) if bias is not None else 0.0) - mean) * factor + shift
    return w.to(weight.dtype), b.to(weight.dtype)


def _pad_widths(pad: Node) -> tuple[list[int], float] | None:
    """A constant Pad's widths (begins, then ends, every axis) and value, where both are known."""
    if pad.attrs.get("mode", "constant") not in ("constant", b"constant"):
        return None
    if "pads" in pad.attrs:  # before opset 11: attributes
        return list(pad.attrs["pads"]), float(pad.attrs.get("value", 0.0))
    widths = static_ints(pad.inputs[1]) if len(pad.inputs) > 1 else None
    value = 0.0
    if len(pad.inputs) > 2 and pad.inputs[2] is not None:
        given = pad.inputs[2].const
        if given is None or given.numel() != 1 or lazy.is_lazy(given):
            return None
        value = float(given.reshape(()))
    if len(pad.inputs) > 3 and pad.inputs[3] is not None:  # axes (18): only all of them, in order
        return None
    return None if widths is None else (widths, value)


def _pads_taken(reader: Node, value: float, uses: _Uses) -> dict[str, Any] | None:
    """The attributes that make reader's own pads do what a constant Pad of value before it did, or None where
    they cannot: a Conv's pads are zeros; an AveragePool's too when it counts them (count_include_pad=1, which
    a pool with pads of its own must have had); a MaxPool's are -inf, and it gives no indices (they would
    count in the padded tensor). Pools in ceil mode keep their Pad: a last window that starts in padding is
    dropped where the padding is the pool's own, kept where it was data."""
    if reader.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET"):
        return None
    if reader.op_type == "Conv":
        return {} if value == 0.0 else None
    if reader.attrs.get("ceil_mode", 0):
        return None
    own = list(reader.attrs.get("pads", []))
    if reader.op_type == "AveragePool":
        if value != 0.0 or (any(own) and not reader.attrs.get("count_include_pad", 0)):
            return None
        return {"count_include_pad": 1}
    indices = reader.outputs[1:2]
    if value != -math.inf or any(v is not None and (uses.readers.get(id(v)) or id(v) in uses.pinned) for v in indices):
        return None
    return {}


_TAKE_PADS = ("Conv", "AveragePool", "MaxPool")


def _fold_pads(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """A constant Pad on the spatial axes only, read only by a Conv or a pool whose own pads can do what it
    does (_pads_taken): those pads."""
    uses = _Uses(nodes, outputs)
    dropped: set[int] = set()
    for pad in nodes:
        if pad.op_type != "Pad" or pad.domain or pad.call is not None:
            continue
        reader = uses.only_reader(pad.outputs[0])
        if reader is None or reader.op_type not in _TAKE_PADS or reader.domain or reader.inputs[0] is not pad.outputs[0]:
            continue
        known = _pad_widths(pad)
        x = pad.inputs[0]
        if known is None or x.rank is None or len(known[0]) != 2 * x.rank or min(known[0]) < 0:
            continue
        widths, value = known
        rank = x.rank
        begins, ends = widths[:rank], widths[rank:]
        if begins[:2] != [0, 0] or ends[:2] != [0, 0]:
            continue
        taken = _pads_taken(reader, value, uses)
        if taken is None:
            continue
        spatial = rank - 2
        old = list(reader.attrs.get("pads") or [0] * (2 * spatial))
        pads = [old[i] + begins[2 + i] for i in range(spatial)] + [old[spatial + i] + ends[2 + i] for i in range(spatial)]
        kernel = list(reader.attrs.get("kernel_shape", []))
        if reader.op_type != "Conv" and (len(kernel) != spatial or any(p >= kernel[i % spatial] for i, p in enumerate(pads))):
            continue  # (a pool's pads must be narrower than its window)
        reader.attrs = dict(reader.attrs, **taken, pads=pads)
        reader.inputs = [x] + reader.inputs[1:]
        dropped.add(id(pad))
    return [n for n in nodes if id(n) not in dropped]


# -- common subexpressions ----------------------------------------------------------------------------------


def _bytes(t: torch.Tensor) -> bytes:
    """A tensor's elements as bytes, whatever its dtype (numpy has no bfloat16)."""
    flat = torch.empty(t.numel(), dtype=t.dtype).copy_(t.detach().reshape(-1))  # (fresh strides: no 0 stride)
    return flat.view(torch.uint8).numpy().tobytes()


def _attr_key(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), _bytes(value) if value.numel() <= 4096 else id(value))
    if isinstance(value, (list, tuple)):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return value


def _const_key(value: Value) -> Any:
    """Small constants with equal values are one input (the exporter makes a 0-d 1.0 many times)."""
    if value.kind == "const" and value.const is not None and value.const.numel() <= 64 and not lazy.is_lazy(value.const):
        t = value.const
        return ("const", str(t.dtype), tuple(t.shape), _bytes(t), value.complex)
    return id(value)


def _merge_duplicates(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    uses = _Uses(nodes, outputs)
    groups = _Groups(nodes)
    seen: dict[Any, Node] = {}
    kept = []
    for node in nodes:
        if (node.op_type in _KEEP or node.call is not None
                or any(isinstance(a, Subgraph) for a in node.attrs.values())):
            kept.append(node)
            continue
        key = (node.domain, node.op_type, tuple(None if v is None else _const_key(v) for v in node.inputs),
               tuple(sorted((k, _attr_key(v)) for k, v in node.attrs.items())), len(node.outputs))
        first = seen.get(key)
        if (first is not None and all(a.dtype == b.dtype for a, b in zip(first.outputs, node.outputs))
                and groups.may_join(node, first)):
            if all(id(o) not in uses.pinned for o in node.outputs):
                for mine, theirs in zip(node.outputs, first.outputs):
                    uses.replace(mine, theirs)
                continue
        seen.setdefault(key, node)
        kept.append(node)
    return kept


# -- quantized ops on integer kernels -----------------------------------------------------------------------

_INTEGERS = (torch.uint8, torch.int8)
# dtypes that hold every value of a narrower one exactly (a Cast there and back changes nothing)
_HOLDS = {torch.float32: (torch.float64,), torch.uint8: (torch.int16, torch.int32, torch.int64, torch.float32,
                                                          torch.float64),
          torch.int8: (torch.int16, torch.int32, torch.int64, torch.float32, torch.float64)}


def _origin(value: Value) -> Value:
    """The furthest value back that value is a copy of, through Casts that lose nothing (to a type that
    holds value's exactly, and back), Identities and Reshapes of one element; value itself if none."""
    best, current = value, value
    while True:
        node = current.producer
        if node is None or node.domain or node.call is not None or node.op_type not in ("Cast", "Reshape", "Identity"):
            return best
        source = node.inputs[0]
        if source is None or (node.op_type == "Reshape" and not (_scalar(source) or _scalar(current))):
            return best
        if source.dtype == value.dtype:
            best = source
        elif source.dtype not in _HOLDS.get(value.dtype, ()):
            return best
        current = source


def _dynamic_quantization(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """QuantizeLinear(x, scale, zero_point), and the DequantizeLinear of its result, where the scale and
    zero point are copies of what a DynamicQuantizeLinear of x computed: its quantized result and its own
    scale and zero point read directly."""
    uses = _Uses(nodes, outputs)
    dynamic = {id(n.inputs[0]): n for n in nodes if n.op_type == "DynamicQuantizeLinear" and not n.domain}
    for node in nodes:
        if node.op_type != "QuantizeLinear" or node.domain or len(node.inputs) < 3 or node.call is not None:
            continue
        dql = dynamic.get(id(node.inputs[0]))
        if dql is None or node.attrs.get("axis") not in (None, 1) or "block_size" in node.attrs:
            continue
        _, scale, zero_point = dql.outputs
        if _origin(node.inputs[1]) is not scale or _origin(node.inputs[2]) is not zero_point:
            continue
        if node.outputs[0].dtype != zero_point.dtype:
            continue
        for reader, _ in list(uses.readers.get(id(node.outputs[0]), [])):
            if (reader.op_type == "DequantizeLinear" and not reader.domain and len(reader.inputs) == 3
                    and _origin(reader.inputs[1]) is scale and _origin(reader.inputs[2]) is zero_point):
                reader.inputs[1], reader.inputs[2] = scale, zero_point
        uses.replace(node.outputs[0], dql.outputs[0])
    return live_nodes(nodes, outputs)


def _scalar(value: Value | None) -> bool:
    """Whether value has one element (DynamicQuantizeLinear's scale and zero point always do)."""
    if value is None:
        return False
    producer = value.producer
    if producer is not None and producer.op_type == "DynamicQuantizeLinear" and value is not producer.outputs[0]:
        return True
    return value.shape is not None and all(isinstance(d, int) for d in value.shape) and math.prod(value.shape) == 1


def _one_value(value: Value | None) -> torch.Tensor | None:
    """A constant whose elements are all equal, as a 0-d tensor (None: no zero point, 0-d zero)."""
    if value is None or value.const is None or value.const.numel() == 0 or lazy.is_lazy(value.const):
        return None
    flat = value.const.reshape(-1)
    return flat[0].clone() if bool((flat == flat[0]).all()) else None


def _quantized_again(value: Value, uses: _Uses) -> bool:
    """Whether a QuantizeLinear of constant scale and zero point reads value, directly or through a Relu or
    Clip (onnxruntime fuses those into QLinearConv and QLinearMatMul, which requantize on integers)."""
    for reader, _ in uses.readers.get(id(value), []):
        if reader.op_type == "QuantizeLinear" and not reader.domain and all(_constant(v) for v in reader.inputs[1:]):
            return True
        if reader.op_type in ("Relu", "Clip") and not reader.domain and _quantized_again(reader.outputs[0], uses):
            return True
    return False


_FOUR_BITS = (torch.int4, torch.uint4)
CONTRIB_DOMAIN = "com.microsoft"


def _matmul_nbits_inputs(g: GraphBuilder, w: Value, scale: torch.Tensor, zero: torch.Tensor | None,
                         block: int) -> list[Value]:
    """MatMulNBits' B, scales and zero points for a 4-bit weight w [N, K] with scale (and zero point)
    [N, K / block]: unsigned 4-bit values (a signed one plus 8, its zero point too), each row's blocks
    of block values packed two per byte, low nibble first; the zero points packed likewise per row."""
    n, k = w.shape
    offset = 8 if w.dtype == torch.int4 else 0

    def unsigned(t: torch.Tensor) -> torch.Tensor:
        return (t.view(_dtypes.PACKED[t.dtype]) if t.dtype in _dtypes.PACKED else t).to(torch.int16) + offset

    blocks = k // block
    nibbles = unsigned(w.const).reshape(n, blocks, block // 2, 2)
    b = (nibbles[..., 0] | (nibbles[..., 1] << 4)).to(torch.uint8)
    zp = unsigned(zero) if zero is not None else torch.full((n, blocks), offset, dtype=torch.int16)
    if blocks % 2:
        zp = torch.cat([zp, zp.new_zeros(n, 1)], dim=1)
    zp = (zp[:, 0::2] | (zp[:, 1::2] << 4)).to(torch.uint8).reshape(-1)
    return [g.initializer(f"{w.name}.nbits", b.contiguous()),
            g.initializer(f"{w.name}.nbits_scales", scale.reshape(-1).to(torch.float32).contiguous()),
            g.initializer(f"{w.name}.nbits_zero_points", zp.contiguous())]


def _dequantized_weight(value: Value | None, dtypes: tuple[torch.dtype, ...] = _INTEGERS, *, blocked: bool = False
                        ) -> tuple[Node, list[int] | None] | None:
    """The DequantizeLinear of a constant weight value is (perhaps through a Transpose: its permutation)."""
    node = value.producer if value is not None else None
    perm = None
    if node is not None and node.op_type == "Transpose" and not node.domain and node.call is None:
        rank = node.inputs[0].rank
        perm = list(node.attrs["perm"]) if "perm" in node.attrs else list(range(rank or 0))[::-1]
        node = node.inputs[0].producer
    if (node is None or node.op_type != "DequantizeLinear" or node.domain or node.call is not None
            or ("block_size" in node.attrs and not blocked) or len(node.inputs) < 2):
        return None
    w, scale = node.inputs[0], node.inputs[1]
    if w.const is None or scale.const is None or w.kind not in ("initializer", "const") or w.dtype not in dtypes \
            or lazy.is_lazy(w.const) or lazy.is_lazy(scale.const):
        return None
    if len(node.inputs) > 2 and node.inputs[2] is not None and node.inputs[2].const is None:
        return None
    return node, perm


def _on_integers(g: GraphBuilder, node: Node, uses: _Uses) -> list[Node] | None:
    """node's ConvInteger/MatMulInteger spelling (the new nodes, the last making node's output), or None."""
    if node.domain or node.call is not None or node.op_type not in ("Conv", "Gemm", "MatMul"):
        return None
    if node.outputs[0].dtype != torch.float32 or _quantized_again(node.outputs[0], uses):
        return None
    dq_a = node.inputs[0].producer if node.inputs[0] is not None else None
    if (dq_a is None or dq_a.op_type != "DequantizeLinear" or dq_a.domain or dq_a.call is not None
            or "block_size" in dq_a.attrs):
        return None
    a, a_scale, a_zero = (list(dq_a.inputs) + [None])[:3]
    if (a.dtype not in _INTEGERS or not _scalar(a_scale) or a_scale.dtype != torch.float32
            or (a_zero is not None and not _scalar(a_zero))):
        return None
    found = _dequantized_weight(node.inputs[1])
    if found is None:
        return None
    dq_w, perm = found
    w, w_scale, w_zero = (list(dq_w.inputs) + [None])[:3]
    w_zero_value = _one_value(w_zero) if w_zero is not None else torch.zeros((), dtype=w.dtype)
    if w_zero_value is None or w_scale.dtype != torch.float32:
        return None
    weight = w.const
    per_channel = w_scale.const.numel() > 1
    w_axis = int(dq_w.attrs.get("axis", 1)) % w.rank if per_channel else None
    if perm is not None:
        weight = weight.permute(perm)
        w_axis = perm.index(w_axis) if per_channel else None
    rank = node.inputs[0].rank
    bias = None
    # the weight's scales must run along the output channels
    if node.op_type == "Conv":
        if a.dtype != torch.uint8 or (per_channel and w_axis != 0) or rank is None:
            return None  # onnxruntime's ConvInteger takes uint8 data
        bias = node.inputs[2] if len(node.inputs) > 2 else None
    elif node.op_type == "Gemm":
        if (node.attrs.get("transA", 0) or float(node.attrs.get("alpha", 1.0)) != 1.0
                or float(node.attrs.get("beta", 1.0)) != 1.0 or rank != 2):
            return None
        if node.attrs.get("transB", 0):
            weight = weight.t()
            w_axis = 1 - w_axis if per_channel else None
        if per_channel and w_axis != 1:
            return None
        bias = node.inputs[2] if len(node.inputs) > 2 else None
    elif weight.dim() != 2 or (per_channel and w_axis != 1) or rank is None or rank < 2:
        return None
    first = len(g.nodes)
    g.set_scope(_scope(node), node.meta)
    a_zero_value = a_zero if a_zero is not None else g.const(0, dtype=a.dtype)
    suffix = "" if weight is w.const else ".transposed"
    if node.op_type == "Conv":
        # uint8 weights: an int8 weight shifted by 128 (its zero point too), exactly
        if w.dtype == torch.int8:
            weight = (weight.to(torch.int16) + 128).to(torch.uint8)
            w_zero_value = (w_zero_value.to(torch.int16) + 128).to(torch.uint8)
            suffix += ".uint8"
        stored = w if not suffix else g.initializer(f"{w.name}{suffix}", weight.contiguous())
        acc = g.op("ConvInteger", a, stored, a_zero_value, g.const(w_zero_value), **{
            k: v for k, v in node.attrs.items() if k in ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")})
        shape = g.const([1, -1] + [1] * (rank - 2), dtype=torch.int64)
        scale = g.op("Reshape", g.op("Mul", g.op("Reshape", a_scale, g.const([], dtype=torch.int64)), w_scale), shape)
    else:
        stored = w if not suffix else g.initializer(f"{w.name}{suffix}", weight.contiguous())
        acc = g.matmul_integer(a, stored, a_zero_value, g.const(w_zero_value))
        scale = g.op("Mul", a_scale, w_scale)
    y = g.op("Mul", g.op("Cast", acc, to=_dtypes.to_onnx(torch.float32)), scale)
    if bias is not None:
        y = g.op("Add", y, bias if node.op_type == "Gemm" else g.op("Reshape", bias, shape))
    return _made_since(g, first, node, y)


def _in_place_of(node: Node, op_type: str, inputs: list[Value | None], attrs: dict[str, Any], domain: str = "",
                 outputs: list[Value] | None = None) -> Node:
    """A node op_type(inputs) making node's outputs (or the given ones) in its place, under its name and
    provenance."""
    made = Node(op_type, list(inputs), list(node.outputs if outputs is None else outputs), attrs, domain, node.name,
                dict(node.meta))
    for value in made.outputs:
        value.producer = made
    return made


def _made_since(g: GraphBuilder, first: int, node: Node, y: Value) -> list[Node] | None:
    """The nodes the builder made from index `first` on, taken out of it, the last (y's producer) making
    node's outputs in y's place: node's replacement. None where y is not the last node's (a fold)."""
    made = g.nodes[first:]
    del g.nodes[first:]
    last = y.producer
    if last is None or not made or last is not made[-1]:
        return None
    last.outputs = list(node.outputs)
    for out in last.outputs:
        out.producer = last
    return made


def _rewrite_each(g: GraphBuilder, nodes: list[Node], outputs: list[Value],
                  rewrite: Callable[[GraphBuilder, Node, _Uses], list[Node] | None]) -> list[Node]:
    """nodes with each node that rewrite(g, node, uses) replaces by new nodes replaced by them."""
    uses = _Uses(nodes, outputs)
    result: list[Node] = []
    for node in nodes:
        made = rewrite(g, node, uses)
        result.extend([node] if made is None else made)
    return result


def _four_bit_matmuls(g: GraphBuilder, nodes: list[Node], outputs: list[Value], *, contrib: bool = False
                      ) -> list[Node]:
    """Gemm(a, DequantizeLinear(w), c, transB=1) and MatMul(a, Transpose(DequantizeLinear(w))) of a 4-bit
    weight w [N, K] (per output channel, or in blocks along K) as MatMul(a, DequantizeLinear(w^T)) (+ c),
    w^T [K, N] in blocks along K: the layout onnxruntime fuses into MatMulNBits (a per-channel weight is
    one block of K). contrib: as onnxruntime's MatMulNBits itself (its fusion of the pattern above is
    preempted where a Gemm and an activation after it fuse first)."""
    return _rewrite_each(g, nodes, outputs, lambda g, node, uses: _as_four_bit_matmul(g, node, uses, contrib))


def _as_four_bit_matmul(g: GraphBuilder, node: Node, uses: _Uses, contrib: bool) -> list[Node] | None:
    if node.domain or node.call is not None or node.op_type not in ("Gemm", "MatMul"):
        return None
    if node.op_type == "Gemm" and (not node.attrs.get("transB", 0) or node.attrs.get("transA", 0)
                                   or float(node.attrs.get("alpha", 1.0)) != 1.0
                                   or float(node.attrs.get("beta", 1.0)) != 1.0):
        return None
    found = _dequantized_weight(node.inputs[1], _FOUR_BITS, blocked=True)
    if found is None:
        return None
    dq, perm = found
    if (node.op_type == "Gemm") == (perm is not None) or (perm is not None and perm != [1, 0]):
        return None
    if uses.only_reader(dq.outputs[0]) is None:
        return None
    w, scale = dq.inputs[0], dq.inputs[1]
    zero = dq.inputs[2] if len(dq.inputs) > 2 else None
    if w.rank != 2 or scale.const.dtype != torch.float32:
        return None
    n, k = w.shape
    axis = int(dq.attrs.get("axis", 1)) % 2
    block = dq.attrs.get("block_size")
    if block is None and scale.const.numel() == n and axis == 0:
        block, params = k, lambda t: t.reshape(n, 1)  # per output channel: one block of K
    elif block is not None and axis == 1 and scale.rank == 2:
        params = lambda t: t  # noqa: E731
    else:
        return None
    block = int(block)
    if block < 16 or block & (block - 1):
        return None  # (onnxruntime's MatMulNBits takes power-of-two blocks from 16)
    held = _dtypes.PACKED[w.dtype]

    def transposed(value: Value, shaped) -> Value:
        t = shaped(value.const.view(held) if value.dtype in _dtypes.PACKED else value.const)
        t = t.t().contiguous()
        return g.initializer(f"{value.name}.T", t.view(value.dtype) if value.dtype in _dtypes.PACKED else t)

    first = len(g.nodes)
    g.set_scope(_scope(node), node.meta)
    bias = node.inputs[2] if node.op_type == "Gemm" and len(node.inputs) > 2 else None
    if contrib:
        if bias is not None and (bias.rank != 1 or bias.dtype != torch.float32):
            return None
        g.domains.setdefault(CONTRIB_DOMAIN, 1)
        packed = _matmul_nbits_inputs(g, w, params(scale.const), None if zero is None else params(zero.const), block)
        inputs = [node.inputs[0], *packed] + ([None, bias] if bias is not None else [])
        y = g.op("MatMulNBits", *inputs, domain=CONTRIB_DOMAIN, K=k, N=n, bits=4, block_size=block)
        return _made_since(g, first, node, y)
    inputs = [transposed(w, lambda t: t), transposed(scale, params)]
    if zero is not None:
        inputs.append(transposed(zero, params))
    weight = g.op("DequantizeLinear", *inputs, axis=0, block_size=block)
    y = g.op("MatMul", node.inputs[0], weight)
    if bias is not None:
        y = g.op("Add", y, bias)
    return _made_since(g, first, node, y)


# -- the sum a layer norm alone reads, as Sum -----------------------------------------------------------------


def _plain_add(node: Node | None) -> bool:
    return (node is not None and node.op_type == "Add" and not node.domain and node.call is None
            and len(node.inputs) == 2 and None not in node.inputs)


def _layer_norm_sums(nodes: list[Node], outputs: list[Value], same_call: Callable[[Node, Node], bool]
                     ) -> list[Node]:
    """An Add of float32 tensors whose one reader is a LayerNormalization, as Sum; an Add before it that only it
    reads (a linear layer's bias, an embedding's first sum) joins the Sum. onnxruntime fuses Add and
    LayerNormalization into its SkipLayerNormalization, which its CPU provider (1.32) runs 4 to 5 times
    slower than the two ops it replaces (50 us against 12 us on [1, 64, 128]; BERT's five cost it about a
    fifth of its latency), and does not fuse Sum. Sum adds its inputs in order, so the result is the
    Adds' own. Only Adds the norm's module call made (same_call): the sum of the last of repeated blocks,
    which a final norm alone reads, stays the same function body as the others'."""
    uses = _Uses(nodes, outputs)
    for node in nodes:
        if not _plain_add(node) or node.outputs[0].dtype != torch.float32:
            continue
        norm = _reader(node.outputs[0], uses, "LayerNormalization")
        if norm is None or norm.inputs[0] is not node.outputs[0] or not same_call(node, norm):
            continue
        terms = list(node.inputs)
        for i, term in enumerate(node.inputs):
            if _plain_add(term.producer) and uses.only_reader(term) is node and same_call(term.producer, node):
                # (a + b) + c, or c + (a + b), which is the same float: Sum(a, b, c)
                terms = [*term.producer.inputs, node.inputs[1 - i]]
                break
        node.op_type, node.inputs = "Sum", terms
    return nodes


# -- onnxruntime's Attention: a MultiHeadAttention whose query, key and value are projections of one input ----


def _projection(value: Value | None, uses: _Uses) -> tuple[Value, Any, Any, list[Node]] | None:
    """value = x @ w (+ b) with w [K, N] and b [N] weights, read only by its reader: (x, w, b or None, the
    nodes). Spelled MatMul(x, w) [+ Add(., b)], or as a 2-D Gemm between Reshapes that flatten x's leading
    dims and restore them."""
    node = value.producer if value is not None else None
    if node is None or node.domain or uses.only_reader(value) is None:
        return None
    bias, chain = None, [node]
    if node.op_type == "Add" and _constant(node.inputs[1]) and node.inputs[1] is not None \
            and node.inputs[1].const.dim() == 1:
        bias, value = node.inputs[1].const, node.inputs[0]
        node = value.producer
        if node is None or node.domain or uses.only_reader(value) is None:
            return None
        chain.append(node)
    if node.op_type == "MatMul" and _constant(node.inputs[1]) and node.inputs[1].const.dim() == 2:
        return node.inputs[0], node.inputs[1].const, bias, chain
    if bias is not None or node.op_type != "Reshape":
        return None
    gemm = node.inputs[0].producer
    if (gemm is None or gemm.op_type != "Gemm" or gemm.domain or uses.only_reader(node.inputs[0]) is None
            or gemm.attrs.get("transA", 0) or float(gemm.attrs.get("alpha", 1.0)) != 1.0
            or float(gemm.attrs.get("beta", 1.0)) != 1.0 or not all(_constant(v) for v in gemm.inputs[1:])):
        return None
    flat = gemm.inputs[0].producer
    if flat is None or flat.op_type != "Reshape" or flat.domain or uses.only_reader(gemm.inputs[0]) is None:
        return None
    x = flat.inputs[0]
    if x.shape is None or value.shape is None or tuple(x.shape[:-1]) != tuple(value.shape[:-1]) \
            or None in x.shape or not isinstance(x.shape[-1], int):
        return None  # (the restored leading dims are the input's, symbolic ones included)
    w = gemm.inputs[1].const
    weight = lazy.apply(torch.Tensor.t, w) if gemm.attrs.get("transB", 0) else w
    c = gemm.inputs[2].const if len(gemm.inputs) > 2 and gemm.inputs[2] is not None else None
    if c is not None and c.dim() != 1:
        return None
    return x, weight, c, [node, gemm, flat]


def _split_projection(values: list[Value | None], uses: _Uses, widths: list[int] | None = None
                      ) -> tuple[Value, Any, Any, list[Node]] | None:
    """query, key and value as the three parts, in order, of one projection's last dim (Split): equal, or
    of the given widths."""
    split = values[0].producer if values[0] is not None else None
    if (split is None or split.op_type != "Split" or split.domain or len(split.outputs) != 3
            or [v for v in values] != split.outputs or split.inputs[0].rank is None
            or split.attrs.get("axis", 0) not in (-1, split.inputs[0].rank - 1)
            or any(uses.only_reader(v) is None for v in values)):
        return None
    sizes = static_ints(split.inputs[1]) if len(split.inputs) > 1 else None
    if sizes is None or (len(set(sizes)) != 1 if widths is None else sizes != widths):
        return None
    found = _projection(split.inputs[0], uses)
    return None if found is None else (*found[:3], [split, *found[3]])


def _packed_attention(g: GraphBuilder, node: Node, uses: _Uses, sources: list[torch.Tensor]) -> list[Node] | None:
    """MultiHeadAttention(x Wq + bq, x Wk + bk, x Wv + bv, attention_bias) as onnxruntime's Attention(x,
    [Wq Wk Wv], [bq bk bv], attention_bias): one projection, inside the op; GroupQueryAttention of such
    projections (fewer key and value heads) as GroupQueryAttention(x [Wq Wk Wv] + [bq bk bv]), the query
    input packing all three."""
    grouped = node.domain == CONTRIB_DOMAIN and node.op_type == "GroupQueryAttention"
    if grouped:
        if len(node.inputs) < 7 or any(v is not None for i, v in enumerate(node.inputs) if i in (3, 4) or i > 6):
            return None
    elif node.domain != CONTRIB_DOMAIN or node.op_type != "MultiHeadAttention" or len(node.inputs) < 3 \
            or any(v is not None for i, v in enumerate(node.inputs) if i in (3, 4) or i > 5):
        return None
    qkv = list(node.inputs[:3])
    attrs = dict(node.attrs)
    if any(v is None or v.shape is None or not isinstance(v.shape[-1], int) for v in qkv):
        return None
    widths = [v.shape[-1] for v in qkv]
    scaled = qkv[0].producer
    if (scaled is not None and scaled.op_type == "Mul" and not scaled.domain and _scalar(scaled.inputs[1])
            and uses.only_reader(qkv[0]) is not None and "scale" in attrs):
        # a query scaled by a constant (Whisper's q_proj(x) * scaling): the factor joins the op's scale
        factor = _one_value(scaled.inputs[1])
        if factor is None or not math.isfinite(float(factor)) or float(factor) == 0:
            return None
        qkv[0], attrs["scale"] = scaled.inputs[0], float(attrs["scale"]) * float(factor)
    found = _split_projection(qkv, uses, widths if grouped else None)
    if found is not None:
        x, weight, bias, chain = found
    else:
        parts = [_projection(v, uses) for v in qkv]
        if any(p is None for p in parts) or len({id(p[0]) for p in parts}) != 1 \
                or len({p[1].shape[0] for p in parts}) != 1 or [p[1].shape[1] for p in parts] != widths \
                or (not grouped and len(set(widths)) != 1):
            return None
        x = parts[0][0]
        weight = lazy.apply(lambda *ws: torch.cat(ws, 1), *[p[1] for p in parts])
        biases = [p[2] if p[2] is not None else torch.zeros(p[1].shape[1], dtype=p[1].dtype) for p in parts]
        bias = None if all(p[2] is None for p in parts) else lazy.apply(lambda *bs: torch.cat(bs), *biases)
        chain = [n for p in parts for n in p[3]]
    if x.rank != 3 or x.dtype != torch.float32 or weight.dtype != torch.float32 \
            or (bias is not None and bias.dtype != torch.float32):
        return None
    if weight.shape[1] != sum(widths) or weight.shape[0] != x.shape[-1]:
        return None
    if bias is None and not grouped:
        bias = torch.zeros(sum(widths))
    sources.extend(v.const for n in chain for v in n.inputs if v is not None and v.kind == "initializer")
    w = g.initializer(f"{node.outputs[0].name}.qkv_weight", lazy.apply(torch.Tensor.contiguous, weight))
    b = None if bias is None else g.initializer(f"{node.outputs[0].name}.qkv_bias",
                                                lazy.apply(torch.Tensor.contiguous, bias))
    if grouped:
        first = len(g.nodes)
        packed = g.op("MatMul", x, w)
        if b is not None:
            packed = g.op("Add", packed, b)
        packed.shape, packed.dtype = (*x.shape[:-1], sum(widths)), x.dtype
        made = g.nodes[first:]
        del g.nodes[first:]
        attention = _in_place_of(node, "GroupQueryAttention", [packed, None, None, *node.inputs[3:7]], attrs,
                                 CONTRIB_DOMAIN)
    else:
        made = []
        attention_bias = node.inputs[5] if len(node.inputs) > 5 else None
        attention = _in_place_of(node, "Attention", [x, w, b, None, None, attention_bias], attrs, CONTRIB_DOMAIN)
    return [*made, attention]  # (the projections, read by this attention only, are dead now)


# -- onnxruntime's SkipSimplifiedLayerNormalization: an RMS norm of a residual sum ---------------------------


def _reader(value: Value, uses: _Uses, op_type: str) -> Node | None:
    node = uses.only_reader(value)
    return node if node is not None and node.op_type == op_type and not node.domain and node.call is None else None


def _last_axis(node: Node, rank: int) -> bool:
    """Whether a ReduceMean reduces the last axis alone, keeping it."""
    axes = axes_of(node)
    return node.attrs.get("keepdims", 1) == 1 and axes is not None and [a % rank for a in axes] == [rank - 1]


def _rms_norm_of(total: Value, uses: _Uses) -> tuple[Node, float, Value] | None:
    """The RMS norm total * (1 / sqrt(mean(total^2, last axis) + eps)) * w (w a 1-D weight) when every step is
    read by the next alone, as the exporter writes LLaMA's and T5's norms: (its last node, eps, w)."""
    readers = {id(n): n for n, _ in uses.readers.get(id(total), [])}.values()
    squares = [n for n in readers if n.op_type == "Mul" and not n.domain and n.inputs[0] is total
               and n.inputs[1] is total]
    if len(squares) != 1:
        return None
    mean = _reader(squares[0].outputs[0], uses, "ReduceMean")
    if mean is None or not _last_axis(mean, total.rank):
        return None
    shifted = _reader(mean.outputs[0], uses, "Add")
    if shifted is None or shifted.inputs[0] is not mean.outputs[0] or not _scalar(shifted.inputs[1]):
        return None
    epsilon = _one_value(shifted.inputs[1])
    root = _reader(shifted.outputs[0], uses, "Sqrt")
    inverse = _reader(root.outputs[0], uses, "Reciprocal") if root is not None else None
    scaled = _reader(inverse.outputs[0], uses, "Mul") if inverse is not None else None
    if epsilon is None or scaled is None or scaled.inputs[0] is not total:
        return None
    last = _reader(scaled.outputs[0], uses, "Mul")
    if last is None:
        return None
    weight = last.inputs[0] if last.inputs[1] is scaled.outputs[0] else last.inputs[1]
    if not _constant(weight) or weight is None or weight.const.dim() != 1 or weight.const.shape[0] != total.shape[-1] \
            or weight.const.dtype != torch.float32:
        return None
    return last, float(epsilon), weight


def _rms_normalizations(g: GraphBuilder, nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """An RMS norm of x (_rms_norm_of: float32, over the last axis, a 1-D weight) as ONNX's RMSNormalization
    (opset 23), which computes in float32 as the nodes did; written where the norm's last node was."""
    uses = _Uses(nodes, outputs)
    norms, seen = {}, set()
    for node in nodes:
        for x in node.inputs:  # (graph inputs included)
            if x is not None and id(x) not in seen and x.dtype == torch.float32 and x.shape is not None and x.rank:
                seen.add(id(x))
                found = _rms_norm_of(x, uses)
                if found is not None:
                    norms[id(found[0])] = (x, *found[1:])
    result: list[Node] = []
    for node in nodes:
        if id(node) not in norms:
            result.append(node)
            continue
        x, epsilon, weight = norms[id(node)]
        result.append(_in_place_of(node, "RMSNormalization", [x, weight],
                                   {"axis": -1, "epsilon": epsilon, "stash_type": 1}))
    return result


def _skip_rms_norms(g: GraphBuilder, nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """An RMS norm of a + b (a residual sum, both of its shape) as onnxruntime's
    SkipSimplifiedLayerNormalization(a, b, w), whose fourth result is the sum for its other readers; written
    where the sum was made."""
    uses = _Uses(nodes, outputs)
    result: list[Node] = []
    for node in nodes:
        total = node.outputs[0] if node.op_type == "Add" and not node.domain and node.call is None else None
        found = None
        if total is not None and total.dtype == torch.float32 and total.rank == 3 and total.is_static \
                and all(v is not None and v.shape == total.shape and v.dtype == total.dtype for v in node.inputs):
            found = _rms_norm_of(total, uses)
        if found is None:
            result.append(node)
            continue
        last, epsilon, weight = found
        out = last.outputs[0]
        last.outputs = [Value(g.fresh_name(f"{out.name}.unfused"), out.dtype, out.shape)]  # (dead now)
        last.outputs[0].producer = last
        stats = [Value(g.fresh_name(f"{out.name}.{kind}"), torch.float32, (*total.shape[:-1], 1))
                 for kind in ("mean", "inv_std_var")]
        g.domains.setdefault(CONTRIB_DOMAIN, 1)
        result.append(_in_place_of(node, "SkipSimplifiedLayerNormalization", [node.inputs[0], node.inputs[1], weight],
                                   {"epsilon": epsilon}, CONTRIB_DOMAIN, outputs=[out, *stats, total]))
    return result


# -- onnxruntime's RotaryEmbedding: x * cos + rotate_half(x) * sin, at static positions -----------------------


def _slice_bounds(node: Node) -> tuple[int, int, int] | None:
    """A Slice's (start, end, axis) along one axis with step 1, from its constant inputs (or attributes, opset
    9); None where it is not that."""
    if node.op_type != "Slice" or node.domain or node.call is not None:
        return None
    if len(node.inputs) == 1:
        starts, ends, axes, steps = node.attrs.get("starts"), node.attrs.get("ends"), node.attrs.get("axes"), [1]
    else:
        starts, ends = static_ints(node.inputs[1]), static_ints(node.inputs[2])
        axes = static_ints(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else None
        steps = static_ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else [1]
    if starts is None or ends is None or axes is None or steps is None \
            or not len(starts) == len(ends) == len(axes) == len(steps) == 1 or steps[0] != 1:
        return None
    return int(starts[0]), int(ends[0]), int(axes[0])


def _rotated_half(value: Value, x: Value, uses: _Uses) -> bool:
    """Whether value is cat(-x[..., H/2:], x[..., :H/2]) along the last axis (rotate_half), each step read by
    the next alone."""
    cat = value.producer
    rank, head = x.rank, x.shape[-1]
    if cat is None or cat.op_type != "Concat" or cat.domain or len(cat.inputs) != 2 \
            or cat.attrs.get("axis") not in (-1, rank - 1) or uses.only_reader(value) is None:
        return False
    neg, first = cat.inputs[0].producer, cat.inputs[1].producer
    if neg is None or neg.op_type != "Neg" or neg.domain or uses.only_reader(cat.inputs[0]) is None \
            or first is None or uses.only_reader(cat.inputs[1]) is None:
        return False
    second = neg.inputs[0].producer
    if second is None or uses.only_reader(neg.inputs[0]) is None or first.inputs[0] is not x \
            or second.inputs[0] is not x:
        return False
    half = head // 2
    lower, upper = _slice_bounds(first), _slice_bounds(second)
    return (lower is not None and upper is not None and lower[2] % rank == upper[2] % rank == rank - 1
            and lower[:2] == (0, half) and upper[0] == half and upper[1] >= head)


def _rotary_table(value: Value | None, x: Value, op_type: str) -> torch.Tensor | tuple | None:
    """A cos (op_type "Cos") or sin table for x [B, N, S, H], [..., S, H] with leading dims 1 and two equal
    halves (the frequencies concatenated twice, as rotary embeddings build it): the [S, H / 2] cache, as a
    tensor where the table is constant (positions known at export), else as (f, factor) where the table is
    op_type(cat(f, f)) [* factor] of f [1, S, H / 2] (computed in the graph), unsqueezed at 1."""
    seq, head = x.shape[2], x.shape[3]
    if value is not None and _constant(value):
        if lazy.is_lazy(value.const):
            return None
        table = value.const
        if table.dtype != torch.float32 or table.dim() < 2 or tuple(table.shape[-2:]) != (seq, head) \
                or any(d != 1 for d in table.shape[:-2]):
            return None
        table = table.reshape(seq, head)
        first, second = table[:, :head // 2], table[:, head // 2:]
        return first.contiguous() if torch.equal(first, second) else None
    unsqueezed = value.producer if value is not None else None
    if unsqueezed is None or unsqueezed.op_type != "Unsqueeze" or unsqueezed.domain or value.rank != 4 \
            or axes_of(unsqueezed) != [1]:
        return None
    table, factor = unsqueezed.inputs[0], None
    scaled = table.producer
    if scaled is not None and scaled.op_type == "Mul" and not scaled.domain and _scalar(scaled.inputs[1]):
        table, factor = scaled.inputs[0], scaled.inputs[1]
    wave = table.producer
    if wave is None or wave.op_type != op_type or wave.domain:
        return None
    cat = wave.inputs[0].producer
    if cat is None or cat.op_type != "Concat" or cat.domain or len(cat.inputs) != 2 \
            or cat.inputs[0] is not cat.inputs[1] or cat.attrs.get("axis") not in (-1, 2):
        return None
    f = cat.inputs[0]
    if f.dtype != torch.float32 or f.shape is None or tuple(f.shape) != (1, seq, head // 2):
        return None
    return f, factor


def _rotary_of(node: Node, uses: _Uses) -> tuple[Value, tuple] | None:
    """(x, its cos and sin caches as _rotary_table gives them) where node makes x * cos + rotate_half(x) *
    sin, x [B, N, S, H] float32 (N and H static) and cos, sin tables a RotaryEmbedding can read as its
    caches: constant (positions known at export) or computed from the frequencies at each position."""
    if not _plain_add(node) or node.outputs[0].dtype != torch.float32:
        return None
    products = [v.producer for v in node.inputs]
    if any(p is None or p.op_type != "Mul" or p.domain or p.call is not None for p in products) \
            or any(uses.only_reader(v) is None for v in node.inputs):
        return None
    for straight, turned in (products, products[::-1]):
        for x, cos in (straight.inputs, straight.inputs[::-1]):
            if x.rank != 4 or x.dtype != torch.float32 or None in x.shape \
                    or not isinstance(x.shape[1], int) or not isinstance(x.shape[3], int) or x.shape[3] % 2:
                continue
            for half, sin in (turned.inputs, turned.inputs[::-1]):
                if not _rotated_half(half, x, uses):
                    continue
                caches = _rotary_table(cos, x, "Cos"), _rotary_table(sin, x, "Sin")
                if caches[0] is not None and caches[1] is not None:
                    return x, caches
    return None


def _rotary_embedding(g: GraphBuilder, node: Node, uses: _Uses, *, contrib: bool) -> list[Node] | None:
    """A rotary embedding (_rotary_of) as one RotaryEmbedding (halves, not interleaved): onnxruntime's
    (contrib), whose [S, H / 2] caches are read from a position offset of 0, or ONNX's (opset 23), whose
    caches are [B, S, H / 2]. For onnxruntime's, where x is the model's Transpose of [B, S, N, H] (it
    usually is), the op reads that as [B, S, N * H] and its result is put back in the model's layout: the
    Reshapes and Transposes around it then cancel against those around MultiHeadAttention, which reads
    [B, S, N * H] too (ONNX's Attention reads x's own [B, N, S, H])."""
    found = _rotary_of(node, uses)
    if found is None:
        return None
    x, tables = found
    b, n, s, h = x.shape
    first = len(g.nodes)
    caches = []
    for kind, table in zip(("Cos", "Sin"), tables):
        if isinstance(table, torch.Tensor):
            cache = g.initializer(g.fresh_name(f"{node.outputs[0].name}.{kind.lower()}_cache"),
                                  table if contrib else table[None])
        else:
            f, factor = table
            cache = g.op(kind, f)
            if factor is not None:
                cache = g.op("Mul", cache, factor)
            if contrib:
                cache = g.op("Reshape", cache, g.const([-1, h // 2], dtype=torch.int64))
        if not contrib and b != 1:  # (ONNX's op takes a cache row for each sequence: the table's, repeated)
            rows = g.const([b], dtype=torch.int64) if isinstance(b, int) else \
                g.op("Gather", g.op("Shape", x), g.const([0], dtype=torch.int64), axis=0)
            cache = g.op("Expand", cache, g.op("Concat", rows, g.const([1, 1], dtype=torch.int64), axis=0))
        caches.append(cache)
    position = [g.const([0], dtype=torch.int64)] if contrib else []
    rotate = functools.partial(g.op, "RotaryEmbedding", interleaved=0,
                               **({"domain": CONTRIB_DOMAIN} if contrib else {}))
    moved = x.producer
    if contrib and moved is not None and moved.op_type == "Transpose" and not moved.domain \
            and list(moved.attrs.get("perm", [])) == [0, 2, 1, 3]:
        flat = g.op("Reshape", moved.inputs[0], g.const([0, 0, n * h], dtype=torch.int64))
        rotated = rotate(flat, *position, *caches, num_heads=n)
        rotated.shape, rotated.dtype = (b, s, n * h), x.dtype
        heads = g.op("Reshape", rotated, g.const([0, 0, n, h], dtype=torch.int64))
        heads.shape = (b, s, n, h)
        out = g.op("Transpose", heads, perm=[0, 2, 1, 3])
    else:
        out = rotate(x, *position, *caches)
        out.shape, out.dtype = x.shape, x.dtype
    return _made_since(g, first, node, out)
