"""The graph optimizer (`export(..., optimize=True)`, the default): rewrites of the translated graph,
before it is written, that leave what it computes as it was, up to the rounding some declare (a folded batch
norm or weight, a sum on integers).
The rewrites live in exporter/rewrites/, one module per family, each declaring what it preserves (bitwise;
rounding; onnxruntime-only); REWRITES below runs them in order:

- tidy: nodes that do nothing (Identity, a Cast to the dtype its input has, a Reshape to the static shape
  its input has, a Transpose that keeps the axes' order, a Mul or Div by a constant 1) are bypassed,
  and chains of Reshapes or of Transposes collapse to one;
- fold: weight-only subgraphs are folded: a node whose inputs are all weights or constants is computed
  once, with the runtime's kernels, when its result takes no more bytes than its largest input (a
  reshaped or transposed weight is stored once, transformed; a broadcast that grows, or an integer
  weight cast to floats, is not stored);
- a BatchNormalization after a Conv or ConvTranspose of constant weights is folded into its weight
  and bias, and a constant Pad before a Conv or a pool into its own pads (zeros; -inf for MaxPool);
- quantized: a Conv, Gemm or MatMul of dequantized integers (DequantizeLinear of an activation, per tensor, and of a
  constant weight, per tensor or per output channel) whose result is not quantized again (onnxruntime's
  QDQ transformer makes QLinearConv/QLinearMatMul of those that are) runs on integers: ConvInteger or
  MatMulInteger of uint8 operands, then the float scaling and the bias; an int8 weight that one of those
  QDQ kernels reads is dequantized from uint8 (shifted by 128 with its zero point: onnxruntime's uint8 x int8
  kernels saturate on x86 CPUs without VNNI); a QuantizeLinear by the scale and zero point a
  DynamicQuantizeLinear of the same input computed is that DynamicQuantizeLinear's result (onnxruntime
  fuses the chain into DynamicQuantizeMatMul); a 4-bit weight's DequantizeLinear read transposed by a Gemm
  or MatMul is stored transposed and blocked along its input channels, into a MatMul (onnxruntime's
  MatMulNBits);
- norms: an Add a LayerNormalization alone reads is a Sum (with the Add before it that only it reads), which
  onnxruntime does not fuse into its SkipLayerNormalization, slower on CPU than the two ops;
- attention, norms, rotary: for onnxruntime (optimize="onnxruntime"), its contrib ops: a MultiHeadAttention
  whose query, key and value are projections of one input as Attention with one packed weight (a
  GroupQueryAttention's as one MatMul whose result packs all three), an RMS norm of a residual sum as
  SkipSimplifiedLayerNormalization, a rotary embedding as RotaryEmbedding; the chains left around them are
  collapsed again; otherwise, from opset 23, a rotary embedding as ONNX's RotaryEmbedding;
- norms: from opset 23, an RMS norm written as its arithmetic (x / sqrt(mean(x^2) + eps) * w, as transformers'
  RMS norm modules compute it) as ONNX's RMSNormalization;
- merge: nodes that compute the same thing from the same inputs are merged;
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

from typing import Callable

import torch

from aten2onnx.exporter.rewrites import attention, fold, merge, norms, quantized, rotary, tidy
from aten2onnx.exporter.rewrites.core import Context, Rewrite
from aten2onnx.ir.builder import GraphBuilder, Node, Value, live_nodes

# the rewrites in the order they run, each where its `when` holds: a later one matches what the earlier ones left
REWRITES: tuple[Rewrite, ...] = (
    tidy.TIDY,
    fold.WEIGHTS,
    fold.BATCH_NORMS,
    fold.PADS,
    quantized.DYNAMIC_QUANTIZATION,
    quantized.INTEGER_KERNELS,
    quantized.UNSIGNED_WEIGHTS,
    quantized.WEIGHT_ONLY_INT8,
    quantized.WEIGHT_ONLY_FLOAT8,
    quantized.FOUR_BIT_MATMULS,
    quantized.BIAS_SUMS,
    quantized.MATMUL_NBITS,
    norms.LAYER_NORM_SUMS,
    attention.PACKED_ATTENTION,
    norms.SKIP_RMS_NORMS,
    rotary.CONTRIB_ROTARY,
    rotary.ONNX_ROTARY,
    norms.RMS_NORMALIZATIONS,
    merge.DUPLICATES,
)


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
    ctx = Context(g, outputs, [], same_call, onnxruntime)
    for rewrite in REWRITES:
        if rewrite.when(ctx):
            nodes = rewrite.run(nodes, ctx)
    return live_nodes(nodes, outputs), ctx.sources
