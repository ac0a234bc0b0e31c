"""Rewrites of the translated ONNX graph (exporter/graph_optimizer.py runs them in order): one module per family,
each rewrite a `Rewrite` record declaring what it preserves (bitwise; rounding; onnxruntime-only)."""
