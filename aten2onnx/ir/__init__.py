"""The IR symbolic functions build ONNX through: `Value`, `GraphBuilder` (nodes, constants, subgraphs,
names), the ONNX type tables (`op_types`: which element types each op takes at each opset, and which
ones onnxruntime has kernels for), and the protobuf writing helpers. It imports nothing of aten2onnx
but `errors` and `_dtypes`: the registry, the symbolic functions and the exporter are built on it."""

from aten2onnx.ir.builder import Dim, GraphBuilder, Node, Subgraph, Value, body_output, dim_of, graph_type, value_info

__all__ = ["Dim", "GraphBuilder", "Node", "Subgraph", "Value", "body_output", "dim_of", "graph_type", "value_info"]
