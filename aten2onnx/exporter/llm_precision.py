"""export_llm's weight precision: float weights cast, or the weights of its linear layers quantized per block
to 4 or 8 bits as onnxruntime-genai's model builder does on CPU.

Quantization is round-to-nearest per block of `block_size` values along the input dimension K of each
output column, computed in float32 exactly as onnxruntime's MLAS quantizer (what the builder calls), so
that the same folder gives the same bytes:
- symmetric: the block's value of largest magnitude, sign kept, maps to -2^(bits-1), scale = it / -2^(bits-1)
  (negative where that value is positive: the full range [-8, 7] is used); q = round(w / scale) + 2^(bits-1).
- asymmetric: the block's range widened to hold 0, scale = range / (2^bits - 1), zero point
  round(-min / scale); q = round(w / scale) + zero point.
Rounding is half away from zero (of w * (1 / scale) + zero point), clamped to [0, 2^bits - 1]; a block of
zeros has scale 0 and its values the zero point.

Every MatMul whose second input is a float weight [K, N] is quantized (attention and MLP projections and
the LM head, as the builder does: the LM head is the largest matmul of a decode step); the token embedding
stays float (a Gather reads only its prompt's rows, so quantizing it saves disk, not time, and standard
ONNX has no quantized Gather). Two spellings:
- optimize="onnxruntime": com.microsoft MatMulNBits (values packed [N, blocks, block_size * bits / 8],
  scales [N, blocks], packed zero points where asymmetric), with the builder's accuracy level 4 (onnxruntime
  quantizes activations to int8 per block, as the builder's model does).
- standard: MatMul(x, DequantizeLinear(q [K, N], scales [blocks, N], zero points, axis=0, block_size)) of
  int4/uint4/int8/uint8 initializers (opset 21), which other backends read as a quantized weight and
  onnxruntime fuses into MatMulNBits when it loads the model.
Each weight is quantized when it is written (`lazy.apply`), so a model streamed from its folder is read,
quantized and written one weight at a time.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from typing import Any

import onnx
import torch
from onnx import helper

from aten2onnx.errors import ArgumentError
from aten2onnx.ir import lazy

FLOATS = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
BITS = {"int8": 8, "int4": 4}
PRECISIONS = (*FLOATS, *BITS)
# the opset where DequantizeLinear takes blocks and 4-bit integers
BLOCKED_OPSET = 21
MS_DOMAIN = "com.microsoft"


@dataclasses.dataclass(frozen=True)
class BlockQuantization:
    """How weights are quantized: bits per value, values per block along K, symmetric or with zero points,
    and MatMulNBits' accuracy_level (onnxruntime: 0 unset, 1 float32, 2 float16, 3 bfloat16, 4 int8
    activations)."""

    bits: int
    block_size: int = 32
    symmetric: bool = True
    accuracy_level: int = 4


def precision_spec(precision: str | None, dtype: torch.dtype | None, block_size: int, symmetric: bool,
                   accuracy_level: int) -> tuple[torch.dtype | None, BlockQuantization | None]:
    """(the dtype the model is exported in, the quantization of its linear weights) for export_llm's
    arguments; ArgumentError for a precision, dtype or block size that cannot be."""
    if precision is None:
        return dtype, None
    if precision not in PRECISIONS:
        raise ArgumentError(f"precision={precision!r} is none of {', '.join(map(repr, PRECISIONS))}")
    if precision in FLOATS:
        if dtype is not None and dtype != FLOATS[precision]:
            raise ArgumentError(f"precision={precision!r} exports the model in {FLOATS[precision]}, and dtype={dtype} "
                                "asks for another: pass one of them")
        return FLOATS[precision], None
    if block_size < 16 or block_size & (block_size - 1):
        raise ArgumentError(f"block_size={block_size}: onnxruntime's MatMulNBits takes blocks of a power of 2 from 16 "
                            "(the builder's default is 32)")
    if accuracy_level not in range(5):
        raise ArgumentError(f"accuracy_level={accuracy_level} is none of 0-4 (MatMulNBits' levels)")
    if dtype is not None and not dtype.is_floating_point:
        raise ArgumentError(f"dtype={dtype} is no float dtype for the activations of a {precision} model")
    # (activations in float32 unless dtype says otherwise, as the builder's CPU models)
    return dtype or torch.float32, BlockQuantization(BITS[precision], block_size, symmetric, accuracy_level)


def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    whole = torch.trunc(x)
    return whole + torch.sign(x) * ((x - whole).abs() >= 0.5)


# output columns quantized at once: the float32 temporaries stay near COLUMNS * K * 4 bytes each (a 2 GB LM
# head is never copied whole)
COLUMNS = 2048


def quantize_blocks(weight: torch.Tensor, bits: int, block_size: int, symmetric: bool
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A weight [K, N] quantized per block of block_size along K: (values [N, blocks, block_size] uint8, the
    padding past K zero; scales [N, blocks] float32; zero points [N, blocks] uint8)."""
    return _by_columns(weight, functools.partial(_quantize_columns, bits=bits, block_size=block_size,
                                                 symmetric=symmetric), dim=0)


def _by_columns(weight: torch.Tensor, fn: Any, dim: int) -> tuple[torch.Tensor, ...]:
    """fn's parts for weight [K, N], computed COLUMNS output columns at a time and joined along dim."""
    if weight.shape[1] <= COLUMNS or weight.device.type == "meta":
        return fn(weight)
    pieces = [fn(weight[:, i:i + COLUMNS]) for i in range(0, weight.shape[1], COLUMNS)]
    return tuple(torch.cat(part, dim) for part in zip(*pieces))


def _quantize_columns(weight: torch.Tensor, bits: int, block_size: int, symmetric: bool
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    k, n = weight.shape
    w = weight.detach().float().t()
    w = (w if k % block_size == 0 else torch.nn.functional.pad(w, (0, -k % block_size))).reshape(n, -1, block_size)
    top, middle = (1 << bits) - 1, 1 << (bits - 1)
    low, high = torch.aminmax(w, dim=-1)
    if symmetric:
        scale = torch.where(high.abs() > low.abs(), high, low) / -middle
        zero = torch.full_like(scale, middle)
    else:
        high, low = high.clamp(min=0), low.clamp(max=0)
        scale = (high - low) / top
        nonzero = torch.where(scale != 0, scale, torch.ones_like(scale))
        zero = torch.where(scale != 0, _round_half_away(-low / nonzero), torch.zeros_like(scale)).clamp(0, top)
    inverse = torch.where(scale != 0, 1 / scale, torch.zeros_like(scale))
    q = w * inverse[..., None]
    q += zero[..., None]
    # rounded half away from zero where it is kept: floor(x + 0.5) is that for x >= 0 (x + 0.5 is exact in
    # float32 below 2^22), and both clamp to 0 below; in place, as the weight's size of temporaries costs
    q = q.add_(0.5).floor_().clamp_(0, top).to(torch.uint8)
    if k % block_size:  # (the padding is written as zeros, as onnxruntime's quantizer leaves it)
        q = q.reshape(n, -1)
        q = torch.cat([q[:, :k], q.new_zeros(n, q.shape[1] - k)], 1).reshape(n, -1, block_size)
    return q, scale, zero.to(torch.uint8)


def _pack_nibbles(values: torch.Tensor) -> torch.Tensor:
    """uint8 values < 16 along the last dim, two per byte (the first in the low half)."""
    if values.shape[-1] % 2:
        values = torch.nn.functional.pad(values, (0, 1))
    pairs = values.reshape(*values.shape[:-1], -1, 2)
    return pairs[..., 0] | (pairs[..., 1] << 4)


def matmul_nbits_parts(weight: torch.Tensor, spec: BlockQuantization, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """MatMulNBits' B [N, blocks, block_size * bits / 8], scales [N, blocks] in dtype, and (asymmetric)
    zero points [N, ceil(blocks * bits / 8)] for weight [K, N]."""
    return _by_columns(weight, functools.partial(_nbits_columns, spec=spec, dtype=dtype), dim=0)


def _nbits_columns(weight: torch.Tensor, spec: BlockQuantization, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    q, scale, zero = _quantize_columns(weight, spec.bits, spec.block_size, spec.symmetric)
    parts = ((_pack_nibbles(q) if spec.bits == 4 else q).contiguous(), scale.to(dtype))
    if not spec.symmetric:
        parts += ((_pack_nibbles(zero) if spec.bits == 4 else zero).contiguous(),)
    return parts


def dequantize_linear_parts(weight: torch.Tensor, spec: BlockQuantization, dtype: torch.dtype
                            ) -> tuple[torch.Tensor, ...]:
    """DequantizeLinear's x [K, N] (int4/int8 symmetric, uint4/uint8 with zero points), scales [blocks, N] in
    dtype and (asymmetric) zero points [blocks, N], blocks along axis 0, for weight [K, N]."""
    parts = _by_columns(weight, functools.partial(_dequantize_linear_columns, spec=spec, dtype=dtype), dim=1)
    if spec.bits == 4:  # (held one value per byte, written two: viewed as the 4-bit dtype once joined)
        four = torch.int4 if spec.symmetric else torch.uint4
        parts = (parts[0].view(four), *parts[1:2], *(zero.view(four) for zero in parts[2:]))
    return parts


def _dequantize_linear_columns(weight: torch.Tensor, spec: BlockQuantization, dtype: torch.dtype
                               ) -> tuple[torch.Tensor, ...]:
    k, n = weight.shape
    q, scale, zero = _quantize_columns(weight, spec.bits, spec.block_size, spec.symmetric)
    values = q.reshape(n, -1)[:, :k].t().contiguous()
    if spec.symmetric:  # q - 2^(bits-1) as a signed value: q - 8 < 8 for 4 bits, q ^ 0x80 read as int8 for 8
        signed = values.view(torch.int8).sub_(8) if spec.bits == 4 else values.bitwise_xor_(0x80).view(torch.int8)
        return signed, scale.t().to(dtype).contiguous()
    return values, scale.t().to(dtype).contiguous(), zero.t().contiguous()


def quantize_matmuls(exported: Any, spec: BlockQuantization, *, nbits: bool) -> int:
    """Quantize the float weight of every MatMul (its B [K, N]) and Gemm (B, [N, K] where transB; as the
    addmm of GPT-2's Conv1D) of exported's graph (an ExportedModel not yet written): as MatMulNBits where
    nbits (a Gemm's C then added), else as DequantizeLinear of integer weights [K, N] (the graph at opset 21
    or later; a Gemm's transB then 0). Returns how many were quantized."""
    graph = exported.graph
    readers = Counter(name for node in graph.node for name in node.input)
    weights = [_weight_kn(exported, node) for node in graph.node]  # (before any is replaced)
    quantized = Counter(node.input[1] for node, weight in zip(graph.node, weights) if weight is not None)
    orientations: dict[str, set[bool]] = {}
    for node, weight in zip(graph.node, weights):
        if weight is not None:
            orientations.setdefault(node.input[1], set()).add(_transposed_b(node))
    written: dict[tuple[str, bool], list[str]] = {}  # (weight, transposed) -> the names of its quantized parts
    nodes = []
    for node, weight in zip(list(graph.node), weights):
        if weight is None:
            nodes.append(node)
            continue
        name, transposed = node.input[1], _transposed_b(node)
        base = f"{name}.T" if transposed else name
        k, n = weight.shape
        if (name, transposed) not in written:
            make = matmul_nbits_parts if nbits else dequantize_linear_parts
            parts = lazy.apply(functools.partial(make, spec=spec, dtype=weight.dtype), weight)
            written[name, transposed] = [f"{base}.{suffix}" for suffix in ("q", "scales", "zero_points")[:len(parts)]]
            # (kept where other nodes read it too, as a Gather the LM head's weight where they are tied)
            exported.replace_weight(name, list(zip(written[name, transposed], parts)),
                                    keep=readers[name] > quantized[name] or len(orientations[name]) > 1
                                    or (name, not transposed) in written)
            if not nbits:
                nodes.append(helper.make_node("DequantizeLinear", written[name, transposed], [f"{base}.dequantized"],
                                              name=f"{base}.dequantize", axis=0, block_size=spec.block_size))
        if nbits:
            product = node.output[0] if node.op_type == "MatMul" or len(node.input) < 3 else f"{node.output[0]}.product"
            nodes.append(helper.make_node("MatMulNBits", [node.input[0], *written[name, transposed]], [product],
                                          name=node.name, domain=MS_DOMAIN, K=k, N=n, bits=spec.bits,
                                          block_size=spec.block_size, accuracy_level=spec.accuracy_level))
            if product != node.output[0]:
                nodes.append(helper.make_node("Add", [product, node.input[2]], [node.output[0]],
                                              name=f"{node.name}.bias"))
        else:
            rewired = onnx.NodeProto()
            rewired.CopyFrom(node)
            rewired.input[1] = f"{base}.dequantized"
            if transposed:
                del rewired.attribute[:]  # (transA 0, alpha and beta 1: what remains is transB, now 0)
            nodes.append(rewired)
    done = sum(quantized.values())
    del graph.node[:]
    graph.node.extend(nodes)
    if nbits and done:
        exported.use_domain(MS_DOMAIN, 1)
    return done


def _transposed_b(node: onnx.NodeProto) -> bool:
    return node.op_type == "Gemm" and any(a.name == "transB" and a.i for a in node.attribute)


def _weight_kn(exported: Any, node: onnx.NodeProto) -> torch.Tensor | None:
    """The float weight [K, N] node multiplies by, where node is a MatMul by a weight or a plain Gemm by one
    (no transA, alpha and beta 1), else None."""
    if node.domain != "" or node.op_type not in ("MatMul", "Gemm"):
        return None
    if node.op_type == "Gemm":
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if attributes.get("transA", 0) or attributes.get("alpha", 1.0) != 1.0 or attributes.get("beta", 1.0) != 1.0:
            return None
    weight = exported.weight(node.input[1])
    if weight is None or weight.dim() != 2 or not weight.is_floating_point():
        return None
    return weight.t() if _transposed_b(node) else weight
