"""Quantized ops: a QuantizeLinear of what a DynamicQuantizeLinear computed read from it (bitwise); dequantized
matmuls and convolutions on integer kernels (rounding: the sum is exact, scaled once), and the int8 weights
onnxruntime's QDQ transformer fuses into its integer kernels shifted to uint8 (bitwise: the kernels it picks
for uint8 x uint8 are exact on every CPU); 4-bit weights stored
transposed, the layout onnxruntime fuses into MatMulNBits (rounding: a MatMul sums in another order than the
Gemm; onnxruntime's fusion, at its default accuracy level 4, also quantizes the activations to int8), or written
as MatMulNBits itself (onnxruntime-only; float activations)."""

from __future__ import annotations

import math

import torch

from aten2onnx import _dtypes
from aten2onnx.exporter.rewrites.core import (CONTRIB_DOMAIN, Context, Rewrite, _constant, _in_place_of,
                                              _made_since, _one_value, _rewrite_each, _scalar, _scope, _Uses)
from aten2onnx.ir import lazy
from aten2onnx.ir.builder import GraphBuilder, Node, Value, live_nodes

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


# -- quantized ops on integer kernels -----------------------------------------------------------------------


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


# -- weight-only int8: DequantizeLinear of the weight, into a Gemm --------------------------------------------


def _only(value: Value, uses: _Uses, op_type: str) -> Node | None:
    reader = uses.only_reader(value)
    return reader if reader is not None and reader.op_type == op_type and not reader.domain and reader.call is None \
        else None


def _weight_only(g: GraphBuilder, node: Node, uses: _Uses) -> list[Node] | None:
    """Mul(MatMul(a, Cast(w)), scale) of a constant int8 weight w [K, N] and a constant float32 scale per output
    column [N] (torchao's int8 weight-only linear: the integers as floats, the sum scaled after) as
    Gemm(a, DequantizeLinear(w^T, scale, axis=0), transB=1), a reshaped to 2-D and back where it has more dims:
    the weight-only quantization backends read (TensorRT, QNN, OpenVINO), rounded otherwise (each product scaled
    before the sum). The Gemm layout because onnxruntime fuses a DequantizeLinear into MatMul into its
    MatMulNBits, which by default (session.qdq_matmulnbits_accuracy_level 4) quantizes the activations to int8:
    0.5% of the output's scale away on a [32, 1024] x [1024, 1024] layer, more than the int8 weights moved it;
    the DequantizeLinear into a Gemm it runs as written (the weight dequantized per call: 1.47x the float
    MatMul's time there, exact)."""
    if node.op_type != "MatMul" or node.domain or node.call is not None:
        return None
    cast = node.inputs[1].producer if node.inputs[1] is not None else None
    if cast is None or cast.op_type != "Cast" or cast.domain or cast.outputs[0].dtype != torch.float32:
        return None
    w = cast.inputs[0]
    if w.dtype != torch.int8 or w.rank != 2 or w.kind != "initializer" or w.const is None \
            or uses.only_reader(cast.outputs[0]) is not node:
        return None
    mul = _only(node.outputs[0], uses, "Mul")
    a = node.inputs[0]
    if mul is None or a.rank is None or a.rank < 2 or a.dtype != torch.float32:
        return None
    k, n = w.shape
    scale = mul.inputs[1] if mul.inputs[0] is node.outputs[0] else mul.inputs[0]
    if (scale.dtype != torch.float32 or scale.const is None or scale.kind not in ("const", "initializer")
            or scale.shape is None or math.prod(scale.shape) != n or scale.shape[-1] != n
            or len(scale.shape) > a.rank or lazy.is_lazy(scale.const)):
        return None
    first = len(g.nodes)
    g.set_scope(_scope(mul), mul.meta)
    transposed = g.initializer(f"{w.name}.T", lazy.apply(lambda t: t.t().contiguous(), w.const))
    weight = g.dequantize_linear(transposed, g.const(scale.const.reshape(n)), None, axis=0)
    if weight is None:
        del g.nodes[first:]
        return None  # (before opset 13: no scale per channel)
    rows = a if a.rank == 2 else g.op("Reshape", a, g.const([-1, k], dtype=torch.int64))
    y = g.op("Gemm", rows, weight, transB=1)
    if a.rank != 2:
        shape = g.op("Concat", g.slice(g.op("Shape", a), [0], [-1], [0]), g.const([n], dtype=torch.int64), axis=0)
        y = g.op("Reshape", y, shape)
    made = _made_since(g, first, mul, y)
    return None if made is None else made


def _weight_only_int8(nodes: list[Node], ctx: Context) -> list[Node]:
    return live_nodes(_rewrite_each(ctx.g, nodes, ctx.outputs, _weight_only), ctx.outputs)


# -- weight-only float8: DequantizeLinear of the weight ---------------------------------------------------------

_FLOAT8 = (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)


def _scale_layout(scale: torch.Tensor, shape: tuple[int, ...]) -> tuple[torch.Tensor, int | None, int | None] | None:
    """A constant scale broadcast against a 2-D weight of `shape` as DequantizeLinear takes it: (the scale, axis,
    block size): one element (None, None); one per index along an axis (axis, None); equal over blocks of one
    axis (axis, block), as torchao's grouped float8 weights repeat their scales. None: no such layout."""
    if scale.numel() == 1:
        return scale.reshape(()), None, None
    if scale.dim() != 2:
        return None
    for axis in (0, 1):
        if scale.shape[axis] == shape[axis] and scale.shape[1 - axis] == 1:
            return scale.reshape(-1), axis, None
    if tuple(scale.shape) != tuple(shape):
        return None
    for axis in (0, 1):
        n = shape[axis]
        for block in (b for b in (256, 128, 64, 32, 16, 8, 4, 2) if n % b == 0 and b < n):
            kept = scale.narrow(axis, 0, n).unflatten(axis, (n // block, block)).select(axis + 1, 0)
            if torch.equal(kept.repeat_interleave(block, dim=axis), scale):
                return kept.contiguous(), axis, block
    return None


def _float8_weight(g: GraphBuilder, node: Node, uses: _Uses) -> list[Node] | None:
    """Mul(Cast(w), scale) of a constant float8 weight and a constant float32 scale, as torchao's float8 weights
    dequantize (the values as float32, times the scale: per tensor, per channel, or per group repeated over
    its block) as DequantizeLinear(w, scale): bit for bit the same product, as backends read a weight-only
    float8 weight (and the scale stored once per group, not repeated to the weight's size in float32)."""
    if node.op_type != "Mul" or node.domain or node.call is not None or node.outputs[0].dtype != torch.float32:
        return None
    for cast, scale in ((node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])):
        producer = cast.producer if cast is not None else None
        if (producer is None or producer.op_type != "Cast" or producer.domain or uses.only_reader(cast) is not node
                or scale is None or scale.const is None or scale.dtype != torch.float32 or lazy.is_lazy(scale.const)):
            continue
        w = producer.inputs[0]
        if w.dtype not in _FLOAT8 or w.rank != 2 or w.kind != "initializer" or w.const is None:
            continue
        layout = _scale_layout(scale.const, tuple(w.shape))
        if layout is None:
            continue
        values, axis, block = layout
        first = len(g.nodes)
        g.set_scope(_scope(node), node.meta)
        y = g.dequantize_linear(w, g.const(values), None, axis=axis, block_size=block)
        if y is None:
            del g.nodes[first:]
            return None
        return _made_since(g, first, node, y)
    return None


def _weight_only_float8(nodes: list[Node], ctx: Context) -> list[Node]:
    return live_nodes(_rewrite_each(ctx.g, nodes, ctx.outputs, _float8_weight), ctx.outputs)


# -- uint8 weights for onnxruntime's QDQ kernels ---------------------------------------------------------------

_WEIGHT_READERS = ("Conv", "ConvTranspose", "Gemm", "MatMul")
_LAYOUT = ("Transpose", "Reshape", "Identity", "Squeeze", "Unsqueeze")


def _dequantized_activation(value: Value | None) -> bool:
    """Whether value is an 8-bit quantized activation's DequantizeLinear (through layout changes)."""
    while value is not None and value.producer is not None and value.producer.op_type in _LAYOUT:
        value = value.producer.inputs[0]
    node = value.producer if value is not None else None
    return (node is not None and node.op_type == "DequantizeLinear" and not node.domain and node.call is None
            and node.inputs[0].dtype in _INTEGERS and node.inputs[0].const is None)


def _read_as_quantized_weight(value: Value, uses: _Uses) -> bool:
    """Whether a Conv, Gemm or MatMul reads value (through layout changes) as its weight while its data is a
    dequantized 8-bit activation: the pattern onnxruntime's QDQ transformer runs on an integer kernel."""
    for reader, index in uses.readers.get(id(value), []):
        if reader.domain or reader.call is not None:
            continue
        if reader.op_type in _LAYOUT and index == 0 and _read_as_quantized_weight(reader.outputs[0], uses):
            return True
        if reader.op_type in _WEIGHT_READERS and index == 1 and _dequantized_activation(reader.inputs[0]):
            return True
    return False


def _unsigned_weights(nodes: list[Node], ctx: Context) -> list[Node]:
    """A constant int8 weight's DequantizeLinear (per tensor or per channel) that onnxruntime's QDQ
    transformer fuses with a quantized activation into an integer kernel (QLinearConv, QGemm,
    QLinearMatMul, DynamicQuantizeMatMul) dequantizes the weight shifted to uint8, its zero points too
    (+128 each: the same values, bit for bit). onnxruntime's uint8 x int8 kernels sum pairs of products in
    saturating 16-bit arithmetic on x86 CPUs without VNNI (most deployed ones; bench/integer_kernels.py:
    QLinearConv 21 to 29 steps off, QLinearMatMul tens of thousands), its uint8 x uint8 ones exactly on
    every CPU. A backend that takes only int8 weights of zero point 0 (TensorRT) reads the export with
    optimize=False, which keeps the model's own types."""
    uses = _Uses(nodes, ctx.outputs)
    g = ctx.g
    for node in nodes:
        if (node.op_type != "DequantizeLinear" or node.domain or node.call is not None or "block_size" in node.attrs
                or node.inputs[0].dtype != torch.int8 or not _constant(node.inputs[0])
                or node.inputs[0].kind not in ("initializer", "const")):
            continue
        zero = node.inputs[2] if len(node.inputs) > 2 else None
        if (zero is not None and (zero.const is None or zero.dtype != torch.int8)) \
                or not _read_as_quantized_weight(node.outputs[0], uses):
            continue
        scale = node.inputs[1]
        if zero is None:
            if scale.shape is None or not all(isinstance(d, int) for d in scale.shape):
                continue
            zero_uint8 = g.const(torch.full(tuple(scale.shape), 128, dtype=torch.uint8))
        else:
            zero_uint8 = g.const(lazy.apply(_plus_128, zero.const))
        w = node.inputs[0]
        shifted = lazy.apply(_plus_128, w.const)
        weight = g.initializer(f"{w.name}.uint8", shifted) if w.kind == "initializer" else g.const(shifted)
        node.inputs = [weight, scale, zero_uint8]
    return live_nodes(nodes, ctx.outputs)


def _plus_128(t: torch.Tensor) -> torch.Tensor:
    return (t.to(torch.int16) + 128).to(torch.uint8)


# -- 4-bit weights --------------------------------------------------------------------------------------------


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
        y = g.op("Sum", y, bias)  # (see _bias_sums)
    return _made_since(g, first, node, y)


def _reads_four_bit_matmul(value: Value | None) -> bool:
    node = value.producer if value is not None else None
    if node is None or node.op_type != "MatMul" or node.domain:
        return False
    dq = node.inputs[1].producer if node.inputs[1] is not None else None
    return dq is not None and dq.op_type == "DequantizeLinear" and dq.inputs[0].dtype in _FOUR_BITS


def _bias_sums(nodes: list[Node], ctx: Context) -> list[Node]:
    """The Add of a constant bias to a 4-bit weight's MatMul as Sum (bitwise the same): onnxruntime fuses a MatMul
    and an Add of a 2-D input into a Gemm first, and a Gemm and the activation after it into a FusedGemm before it
    fuses the weight's DequantizeLinear into MatMulNBits, so the dequantization ran on every call (3.2x the float
    export's latency on bench/quantized.py's int4 MLP); it fuses no Sum."""
    result = []
    for node in nodes:
        if (node.op_type == "Add" and not node.domain and node.call is None and len(node.inputs) == 2
                and any(_reads_four_bit_matmul(v) for v in node.inputs) and any(_constant(v) for v in node.inputs)):
            node = _in_place_of(node, "Sum", node.inputs, {})
        result.append(node)
    return result


def _dynamic(nodes: list[Node], ctx: Context) -> list[Node]:
    return _dynamic_quantization(nodes, ctx.outputs)


def _integer_kernels(nodes: list[Node], ctx: Context) -> list[Node]:
    return _rewrite_each(ctx.g, nodes, ctx.outputs, _on_integers)


def _four_bits(nodes: list[Node], ctx: Context) -> list[Node]:
    return _four_bit_matmuls(ctx.g, nodes, ctx.outputs, contrib=ctx.onnxruntime)


DYNAMIC_QUANTIZATION = Rewrite("dynamic quantization", "bitwise", _dynamic)
INTEGER_KERNELS = Rewrite("integer kernels", "rounding", _integer_kernels)
UNSIGNED_WEIGHTS = Rewrite("uint8 weights", "bitwise", _unsigned_weights)
# (for onnxruntime alone the Cast stays: onnxruntime folds it at load, a float weight in memory, the float MatMul's
# speed, exact)
WEIGHT_ONLY_INT8 = Rewrite("weight-only int8", "rounding", _weight_only_int8, when=lambda ctx: not ctx.onnxruntime)
WEIGHT_ONLY_FLOAT8 = Rewrite("weight-only float8", "bitwise", _weight_only_float8, when=lambda ctx: not ctx.onnxruntime)
FOUR_BIT_MATMULS = Rewrite("4-bit matmuls", "rounding", _four_bits, when=lambda ctx: not ctx.onnxruntime)
BIAS_SUMS = Rewrite("4-bit matmuls' bias sums", "bitwise", _bias_sums, when=lambda ctx: not ctx.onnxruntime)
MATMUL_NBITS = Rewrite("MatMulNBits", "onnxruntime-only", _four_bits, when=lambda ctx: ctx.onnxruntime)
