"""The runtime's kernels, one module per ONNX op family; importing this package registers them all
(each kernel class registers itself with @kernel, see runtime/kernel.py)."""

import onnx.defs

from aten2onnx.runtime.ops import (  # noqa: F401  (imported to register their kernels)
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

# The newest ai.onnx opset a model may import: every opset the installed onnx defines. A node still
# runs only where its op's schema version there is one a kernel runs (see kernel.CHECKED_OPSET), so a
# newer opset never silently runs an older version's semantics. (The exporter's own limit lives in
# aten2onnx.symbolic.)
MAX_OPSET = onnx.defs.onnx_opset_version()
