"""Built-in symbolic functions: opset9 and its family modules (opset9_<family>) are the base; each
later module holds only what changed.

Importing this package registers them all.
"""

from aten2onnx.symbolic import (  # noqa: F401  (imported to register)
    opset9,
    opset9_attention,
    opset9_attention_backward,
    opset9_bessel,
    opset9_complex,
    opset9_complex_fft,
    opset9_complex_linalg,
    opset9_complex_math,
    opset9_complex_partwise,
    opset9_complex_reduce,
    opset9_copy,
    opset9_creation,
    opset9_data,
    opset9_fft,
    opset9_gamma,
    opset9_grad,
    opset9_linalg,
    opset9_math,
    opset9_loss,
    opset9_nn,
    opset9_python,
    opset9_random,
    opset9_norm,
    opset9_numeric,
    opset9_quantile,
    opset9_reduce,
    opset9_rnn,
    opset9_shape,
    opset9_spatial,
    opset9_sort,
    opset9_scatter,
    opset9_special,
    opset9_transformers,
    opset10,
    opset11,
    opset11_attention_backward,
    opset11_data,
    opset11_quantize,
    opset11_sort,
    opset11_scatter,
    opset12,
    opset13_data,
    opset14,
    opset16_data,
    opset16_grad,
    opset17,
    opset18,
    opset20,
    opset23,
    opset26,
)

MIN_OPSET = 9
# The newest opset onnxruntime 1.31 runs; exports beyond it could not be checked against it.
MAX_OPSET = 26
