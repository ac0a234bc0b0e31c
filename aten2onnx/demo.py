"""The main job: export a small built-in transformer, verify it against PyTorch, print a report.

    python -m aten2onnx.demo [--opset 18] [--out demo.onnx]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnx
import torch

import aten2onnx


class TinyTransformer(torch.nn.Module):
    """Token embedding, learned positions, two pre-norm encoder layers and an LM head."""

    def __init__(self, vocab: int = 1000, dim: int = 64, heads: int = 4, layers: int = 2, max_len: int = 128):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.positions = torch.nn.Parameter(torch.randn(max_len, dim) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, 4 * dim, batch_first=True, norm_first=True,
                                                 activation="gelu")
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.positions[: tokens.shape[1]]
        return torch.log_softmax(self.head(self.encoder(x)), dim=-1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opset", type=int, default=18)
    parser.add_argument("--out", default=None, help="also save the model here")
    options = parser.parse_args(argv)

    import onnxruntime as ort

    torch.manual_seed(0)
    model = TinyTransformer().eval()
    tokens = torch.randint(0, 1000, (2, 32))
    with torch.no_grad():
        expected = model(tokens)
    start = time.perf_counter()
    exported = aten2onnx.export(model, (tokens,), opset=options.opset)
    seconds = time.perf_counter() - start
    onnx.checker.check_model(exported.model_proto, full_check=True)
    session = ort.InferenceSession(exported.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    ort_out = torch.from_numpy(session.run(None, {exported.input_names[0]: tokens.numpy()})[0])
    ours = exported.run(tokens)
    ort_err = float((ort_out - expected).abs().max())
    our_err = float((ours - expected).abs().max())
    ok = np.allclose(ort_out, expected, rtol=1e-4, atol=1e-5) and np.allclose(ours, expected, rtol=1e-4, atol=1e-5)
    if options.out:
        exported.save(options.out)
    print(f"aten2onnx {aten2onnx.__version__}: TinyTransformer ({sum(p.numel() for p in model.parameters()):,} parameters)")
    print(f"  opset {options.opset}, {len(exported.model_proto.graph.node)} nodes, exported in {seconds:.2f} s")
    print(f"  onnx checker (full): passed; fallback ops: {exported.fallback_ops or 'none'}")
    print(f"  max |onnxruntime - eager| = {ort_err:.2e}; max |aten2onnx.runtime - eager| = {our_err:.2e}")
    print(f"  {'PASS' if ok else 'FAIL'}" + (f"; saved to {options.out}" if options.out else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
