"""The runtime's kernels, one module per ONNX op family; importing this package registers them all."""

import onnx.defs

from aten2onnx.runtime.kernel import register_kernels
from aten2onnx.runtime.ops import (
    activation,
    aten,
    attention,
    cast,
    control_flow,
    creation,
    detection,
    elementwise,
    fused,
    indexing,
    linalg,
    logical,
    nn,
    quantize,
    random,
    reduction,
    resize,
    rnn,
    sequence,
    shape,
    signal,
    strings,
)

# The newest ai.onnx opset a model may import: every opset the installed onnx defines. Each node is
# still checked against its op's schema version there (see Kernel.covers), so a newer opset never
# silently runs an older version's semantics. (The exporter's own limit lives in aten2onnx.symbolic.)
MAX_OPSET = onnx.defs.onnx_opset_version()

for _module in (activation, aten, attention, cast, control_flow, creation, detection, elementwise, fused, indexing, linalg,
                logical, nn, quantize, random, reduction, resize, rnn, sequence, shape, signal, strings):
    register_kernels(_module.KERNELS)
