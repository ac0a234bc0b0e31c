"""aten2onnx.runtime: an ONNX runtime in Python whose kernels are PyTorch ops.

    sess = InferenceSession("model.onnx")
    outputs = sess.run(None, {"x": np.ones((2, 3), np.float32)})
"""

from aten2onnx.runtime.session import InferenceSession, NodeArg

__all__ = ["InferenceSession", "NodeArg"]
