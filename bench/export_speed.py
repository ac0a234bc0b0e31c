"""Export speed: aten2onnx vs torch.onnx.export(dynamo=True) on 12-layer GPT-2, LLaMA and BERT.

For each model, in one run: torch.export.export alone (the floor of this design), aten2onnx's
export, torch.onnx's export; node counts; onnxruntime latency of each export; max abs error vs
eager. Times are medians over --repeats runs. Ratios are against torch.onnx measured in this run.

    python bench/export_speed.py [--repeats 3] [--models gpt2,llama,bert] [--layers 12]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import numpy as np
import onnxruntime as ort
import torch

import aten2onnx

BATCH, SEQ, HIDDEN, VOCAB = 2, 128, 768, 32000


def build(name: str, layers: int) -> torch.nn.Module:
    import transformers

    transformers.logging.set_verbosity_error()
    if name == "gpt2":
        config = transformers.GPT2Config(n_layer=layers, n_embd=HIDDEN, n_head=12, vocab_size=VOCAB, use_cache=False)
        return transformers.GPT2Model(config)
    if name == "llama":
        config = transformers.LlamaConfig(num_hidden_layers=layers, hidden_size=HIDDEN, num_attention_heads=12,
                                          num_key_value_heads=12, intermediate_size=4 * HIDDEN, vocab_size=VOCAB,
                                          use_cache=False)
        return transformers.LlamaModel(config)
    if name == "bert":
        config = transformers.BertConfig(num_hidden_layers=layers, hidden_size=HIDDEN, num_attention_heads=12,
                                         intermediate_size=4 * HIDDEN, vocab_size=VOCAB)
        return transformers.BertModel(config)
    raise ValueError(name)


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def ort_latency(model_bytes: bytes, feeds: dict, runs: int = 10) -> tuple[float, list]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, feeds)
    latency, _ = timed(lambda: session.run(None, feeds), runs)
    return latency, outputs


def torch_onnx_export(model, args, opset: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.onnx.export(model, args, dynamo=True, verbose=False, opset_version=opset)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default="gpt2,llama,bert")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--opset", type=int, default=18)
    options = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    for name in options.models.split(","):
        model = build(name, options.layers).eval()
        ids = torch.randint(0, VOCAB, (BATCH, SEQ))
        with torch.no_grad():
            expected = model(ids).last_hidden_state.numpy()
        t_export, _ = timed(lambda: torch.export.export(model, (ids,), strict=False), options.repeats)
        t_ours, ours = timed(lambda: aten2onnx.export(model, (ids,), opset=options.opset), options.repeats)
        t_theirs, theirs = timed(lambda: torch_onnx_export(model, (ids,), options.opset), options.repeats)
        # Both exporters hold weights lazily; writing the whole model out is timed separately.
        t_ours_bytes, ours_bytes = timed(lambda: ours.model_proto.SerializeToString(), 1)
        t_theirs_bytes, theirs_bytes = timed(lambda: theirs.model_proto.SerializeToString(), 1)
        theirs_proto = theirs.model_proto
        lat_ours, out_ours = ort_latency(ours_bytes, {ours.input_names[0]: ids.numpy()})
        lat_theirs, out_theirs = ort_latency(theirs_bytes, {theirs_proto.graph.input[0].name: ids.numpy()})
        rows.append({
            "model": name,
            "torch.export s": t_export,
            "aten2onnx s": t_ours,
            "torch.onnx s": t_theirs,
            "speedup": t_theirs / t_ours,
            "aten2onnx bytes s": t_ours_bytes,
            "torch.onnx bytes s": t_theirs_bytes,
            "aten2onnx nodes": len(ours.model_proto.graph.node),
            "torch.onnx nodes": len(theirs_proto.graph.node),
            "aten2onnx ort ms": lat_ours * 1e3,
            "torch.onnx ort ms": lat_theirs * 1e3,
            "aten2onnx err": float(np.abs(out_ours[0] - expected).max()),
            "torch.onnx err": float(np.abs(out_theirs[0] - expected).max()),
        })
        print(_format(rows[-1]), flush=True)
    print()
    print(f"{'model':8}" + "".join(f"{k:>18}" for k in rows[0] if k != "model"))
    for row in rows:
        print(f"{row['model']:8}" + "".join(f"{_cell(v):>18}" for k, v in row.items() if k != "model"))
    worst = min(r["speedup"] for r in rows)
    print(f"\nslowest aten2onnx/torch.onnx export-time ratio: {worst:.1f}x faster (target >= 5x)", file=sys.stdout)


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e-2 else f"{v:.2f}"
    return str(v)


def _format(row: dict) -> str:
    return ", ".join(f"{k}={_cell(v)}" for k, v in row.items())


if __name__ == "__main__":
    main()
