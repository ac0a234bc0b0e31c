"""onnxruntime latency of our exports against torch.onnx's, on tiny transformers configs and CNNs.

For each model, in one run: aten2onnx's default export (the graph optimizer on), aten2onnx with
optimize=False and with optimize="onnxruntime" (onnxruntime's contrib ops), torch.onnx's dynamo
export (its default, which runs onnxscript's optimizer) and, for
the transformer models onnxruntime's transformer optimizer knows, that optimizer run on torch.onnx's
export (`onnxruntime.transformers.optimizer.optimize_model`, its fused contrib ops). Each file runs in
onnxruntime's CPU provider with one thread at its default (full) graph optimization; the sessions
take turns within each round, in an order that rotates from round to round, each running --inner
times (each file has two sessions, made in mirrored order, and the rounds alternate between them). A
latency is the median over rounds of each round's median run; a ratio is the median over rounds of
the two files' paired per-round ratio (a burst of load slows one round's files together). The models'
all-zero biases (random init) are given small random values first, as a trained model's are
(torch.onnx's optimizer drops a zero bias). Printed per model: nodes, file size, median latency, the
ratio of each to torch.onnx's (below 1.00: faster than torch.onnx), and each file's largest
error against eager relative to eager's largest magnitude.

torch.onnx's dynamo export needs onnxscript (`pip install onnxscript`), which aten2onnx does not.

    python bench/ort_latency.py [--models gpt2,bert,llama,vit,t5,whisper,resnet,mobilenetv2,efficientnet]
                                [--rounds 20] [--inner 5] [--opset 18]
"""

from __future__ import annotations

import argparse
import io
import logging
import math
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
import torch

import aten2onnx

# Our default export against torch.onnx's latency (issue 31): on every model, and in geometric mean.
WORST = 1.05
GEOMEAN = 1.00
# optimize="onnxruntime" against torch.onnx's export (geometric mean), and against onnxruntime's
# transformer optimizer run on torch.onnx's export (where it runs).
CONTRIB_GEOMEAN = 0.85
CONTRIB_VS_ORT = 0.95
ONNXRUNTIME = "aten2onnx (optimize=onnxruntime)"
ORT_OPTIMIZER = "ort optimizer on torch.onnx"


class LastHidden(torch.nn.Module):
    """The model's main tensor output (last_hidden_state), so every exporter sees one output."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model(x)
        return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


def _ids(seq: int, vocab: int) -> torch.Tensor:
    return torch.randint(0, vocab, (1, seq), generator=torch.Generator().manual_seed(0))


def _image(size: int, channels: int = 3) -> torch.Tensor:
    return torch.randn(1, channels, size, size, generator=torch.Generator().manual_seed(0))


def build(name: str) -> tuple[torch.nn.Module, torch.Tensor, str | None]:
    """A tiny random-init model, its input, and the model type onnxruntime's transformer optimizer takes."""
    import transformers as tf

    torch.manual_seed(0)
    if name == "gpt2":
        return tf.GPT2Model(tf.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000)), _ids(64, 1000), "gpt2"
    if name == "bert":
        config = tf.BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                               vocab_size=1000)
        return tf.BertModel(config), _ids(64, 1000), "bert"
    if name == "llama":
        config = tf.LlamaConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                intermediate_size=256, vocab_size=1000, use_cache=False)
        return tf.LlamaModel(config), _ids(64, 1000), None
    if name == "vit":
        config = tf.ViTConfig(image_size=64, patch_size=8, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=256)
        return tf.ViTModel(config, add_pooling_layer=False), _image(64), "vit"
    if name == "t5":
        config = tf.T5Config(d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4, vocab_size=1000)
        return tf.T5EncoderModel(config), _ids(64, 1000), None
    if name == "whisper":
        config = tf.WhisperConfig(d_model=128, encoder_layers=2, encoder_attention_heads=4, decoder_layers=1,
                                  decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256,
                                  num_mel_bins=40, max_source_positions=64, vocab_size=1000, pad_token_id=0,
                                  bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
        return tf.WhisperModel(config).get_encoder(), torch.randn(1, 40, 128), None
    if name == "resnet":
        config = tf.ResNetConfig(embedding_size=32, hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 2, 1])
        return tf.ResNetModel(config), _image(96), None
    if name == "mobilenetv2":
        config = tf.MobileNetV2Config(image_size=96, depth_multiplier=0.5)
        return tf.MobileNetV2Model(config), _image(96), None
    if name == "efficientnet":
        config = tf.EfficientNetConfig(image_size=96, width_coefficient=0.5, depth_coefficient=0.5,
                                       hidden_dim=640)
        return tf.EfficientNetModel(config), _image(96), None
    raise SystemExit(f"unknown model {name!r}")


def trained_like(model: torch.nn.Module) -> torch.nn.Module:
    """model with its all-zero 1-D parameters (the biases random init leaves at 0) given small random
    values, as a trained model's are: torch.onnx's optimizer drops an all-zero bias, a saving no trained
    model offers."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1 and not p.any():
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
    return model


def exports(model: torch.nn.Module, x: torch.Tensor, opset: int, ort_type: str | None) -> dict[str, bytes]:
    """name -> serialized model."""
    files = {
        "aten2onnx": aten2onnx.export(model, (x,), opset=opset).model_proto.SerializeToString(),
        "aten2onnx (optimize=False)": aten2onnx.export(model, (x,), opset=opset,
                                                       optimize=False).model_proto.SerializeToString(),
        ONNXRUNTIME: aten2onnx.export(model, (x,), opset=opset, optimize="onnxruntime").model_proto.SerializeToString(),
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(model, (x,), dynamo=True, opset_version=opset, verbose=False)
    except Exception as e:
        print(f"  torch.onnx failed: {type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}")
        return files
    torch_onnx = program.model_proto.SerializeToString()
    files["torch.onnx"] = torch_onnx
    if ort_type is not None:
        from onnxruntime.transformers.optimizer import optimize_model

        with tempfile.NamedTemporaryFile(suffix=".onnx") as f:
            f.write(torch_onnx)
            f.flush()
            heads, hidden = _heads_hidden(model)
            try:
                optimized = optimize_model(f.name, model_type=ort_type, num_heads=heads, hidden_size=hidden,
                                           opt_level=0)
            except Exception as e:  # (its GPT-2 fusions index a Gemm's bias that torch.onnx's graph lacks)
                print(f"  onnxruntime's transformer optimizer failed on torch.onnx's {ort_type} export: "
                      f"{type(e).__name__}: {e}")
            else:
                buffer = io.BytesIO()
                onnx.save_model(optimized.model, buffer)
                files[ORT_OPTIMIZER] = buffer.getvalue()
    return files


def _heads_hidden(model: torch.nn.Module) -> tuple[int, int]:
    config = model.model.config
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "n_head")
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd")
    return heads, hidden


def session(data: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def measure(calls: dict[str, list[Callable[[], object]]], rounds: int, inner: int) -> dict[str, list[float]]:
    """Each file's cells, one per round: in each round every file runs `inner` times in turn (the order
    rotating from round to round; round r runs each file's call r modulo how many it has), its cell the
    median of those runs."""
    for call in (c for group in calls.values() for c in group):
        call()
    cells: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            call = calls[name][r % len(calls[name])]
            runs = []
            for _ in range(inner):
                start = time.perf_counter()
                call()
                runs.append(time.perf_counter() - start)
            cells[name].append(statistics.median(runs))
    return cells


def mirrored_sessions(files: dict[str, bytes]) -> dict[str, list[ort.InferenceSession]]:
    """Two sessions of each file, made in mirrored order (each file's first in turn, then the second ones
    in reverse): a session made earlier runs a little slower than one made later (about 1% on
    MobileNetV2, in whichever file's favour the order is), so across rounds that alternate between them
    every file sits on average at the same place in the order."""
    first = {label: session(data) for label, data in files.items()}
    second = {label: session(files[label]) for label in reversed(files)}
    return {label: [first[label], second[label]] for label in files}


def paired(cells: dict[str, list[float]], name: str, anchor: str) -> float:
    """The median over rounds of name's cell over anchor's cell of the same round. A burst of load on the
    machine slows the calls of one round together, so it moves neither a paired ratio much nor a median of
    them (a ratio of two medians over rounds moves with every burst that lands on one file's cells)."""
    return statistics.median(a / b for a, b in zip(cells[name], cells[anchor]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2,bert,llama,vit,t5,whisper,resnet,mobilenetv2,efficientnet")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--inner", type=int, default=5)
    parser.add_argument("--opset", type=int, default=18)
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)  # (torch.onnx logs each torchvision op it skips)
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}, aten2onnx {aten2onnx.__version__}; "
          f"1 thread, {args.rounds} rounds of {args.inner} runs; medians of per-round medians and of paired "
          "per-round ratios to torch.onnx")
    worst, ratios, more_nodes, larger = 0.0, [], [], []
    contrib, contrib_vs_ort = [], {}
    for name in args.models.split(","):
        module, x, ort_type = build(name)
        model = LastHidden(trained_like(module)).eval()
        with torch.no_grad():
            want = model(x).numpy()
        files = exports(model, x, args.opset, ort_type)
        sessions = mirrored_sessions(files)
        feeds = {label: {s[0].get_inputs()[0].name: x.numpy()} for label, s in sessions.items()}
        scale = max(float(np.abs(want).max()), np.finfo(np.float32).tiny)
        errors = {label: max(float(np.abs(one.run(None, feeds[label])[0] - want).max()) for one in s) / scale
                  for label, s in sessions.items()}
        calls = {label: [lambda one=one, f=feeds[label]: one.run(None, f) for one in s] for label, s in sessions.items()}
        cells = measure(calls, args.rounds, args.inner)
        medians = {label: statistics.median(c) for label, c in cells.items()}
        anchor = "torch.onnx" if "torch.onnx" in cells else "aten2onnx"
        ratios_to = {label: paired(cells, label, anchor) for label in cells}
        print(f"\n{name}" + ("" if "torch.onnx" in files else " (torch.onnx failed; ratios to our default export)"))
        print(f"  {'export':30} {'nodes':>6} {'MB':>7} {'ms':>8} {'vs torch.onnx':>14} {'rel. err':>9}")
        for label, data in files.items():
            nodes = len(onnx.load_from_string(data).graph.node)
            print(f"  {label:30} {nodes:6d} {len(data) / 2**20:7.2f} {medians[label] * 1e3:8.3f} "
                  f"{ratios_to[label]:13.2f}x {errors[label]:9.1e}")
        if "torch.onnx" not in files:
            continue
        ratio = ratios_to["aten2onnx"]
        contrib.append(ratios_to[ONNXRUNTIME])
        if ORT_OPTIMIZER in medians:
            contrib_vs_ort[name] = paired(cells, ONNXRUNTIME, ORT_OPTIMIZER)
        worst = max(worst, ratio)
        ratios.append(ratio)
        counts = {label: len(onnx.load_from_string(data).graph.node) for label, data in files.items()}
        if counts["aten2onnx"] > counts["torch.onnx"]:
            more_nodes.append(name)
        if len(files["aten2onnx"]) > len(files["torch.onnx"]):
            larger.append(name)
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\naten2onnx / torch.onnx latency: worst {worst:.2f}x (target at most {WORST:.2f}x: "
          f"{'met' if worst <= WORST else 'NOT met'}), geometric mean {geomean:.2f}x (target at most "
          f"{GEOMEAN:.2f}x: {'met' if geomean <= GEOMEAN else 'NOT met'})")
    print(f"more nodes than torch.onnx: {more_nodes or 'none'}; a larger file: {larger or 'none'}")
    contrib_mean = math.exp(sum(map(math.log, contrib)) / len(contrib))
    print(f"optimize=onnxruntime / torch.onnx: geometric mean {contrib_mean:.2f}x (target at most "
          f"{CONTRIB_GEOMEAN:.2f}x: {'met' if contrib_mean <= CONTRIB_GEOMEAN else 'NOT met'})")
    if contrib_vs_ort:
        ok = all(r <= CONTRIB_VS_ORT for r in contrib_vs_ort.values())
        print("optimize=onnxruntime / onnxruntime's transformer optimizer on torch.onnx: "
              + ", ".join(f"{name} {r:.2f}x" for name, r in contrib_vs_ort.items())
              + f" (target at most {CONTRIB_VS_ORT:.2f}x each: {'met' if ok else 'NOT met'})")


if __name__ == "__main__":
    main()
