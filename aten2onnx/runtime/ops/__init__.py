"""The runtime's kernels, one module per ONNX op family; importing this package registers them all."""

from aten2onnx.runtime.kernel import register_kernels
from aten2onnx.runtime.ops import (
    activation,
    aten,
    attention,
    cast,
    control_flow,
    creation,
    elementwise,
    indexing,
    linalg,
    logical,
    nn,
    quantize,
    reduction,
    resize,
    sequence,
    shape,
)

# The newest ai.onnx opset a model may import; kernels are registered per since_version up to it.
MAX_OPSET = 26

for _module in (activation, aten, attention, cast, control_flow, creation, elementwise, indexing, linalg, logical, nn,
                quantize, reduction, resize, sequence, shape):
    register_kernels(_module.KERNELS)
