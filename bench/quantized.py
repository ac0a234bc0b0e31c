"""onnxruntime latency and file size of quantized exports against the float export and torch.onnx's.

For each model and quantization, in one run: aten2onnx's export of the float model, aten2onnx's export
of the quantized model, and torch.onnx's dynamo export of the same quantized model where it has one
(it fails on some forms, and drops torchao's weight-only quantization to float weights: its file size
shows it). Quantizations: PT2E static and dynamic with X86InductorQuantizer (CNN, MLP, a tiny BERT) and
torchao's quantize_ with int8 weight-only, int8 dynamic activation + int8 weight, int4 weight-only per
group (MLP). Each file runs in onnxruntime's CPU provider with one thread at its default graph
optimization; the sessions take turns within each round, in an order that rotates from round to round,
and each cell is the median over rounds of the mean of --inner runs. Printed per case: nodes, file size,
median latency, the ratio of each to aten2onnx's float export, the ratio of our quantized export to
torch.onnx's, and each file's largest error against the quantized eager model relative to its largest
magnitude.

Needs torchao (`pip install -e ".[quant]"`) and, for torch.onnx's export, onnxscript.

    python bench/quantized.py [--cases cnn-static,...] [--rounds 20] [--inner 5] [--opset 18]

(--opset is raised to 21 for the int4 case.)
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch

import aten2onnx

sys.path.insert(0, os.path.dirname(__file__))
from ort_latency import measure, session  # noqa: E402

import torchao.quantization as tq  # noqa: E402
import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq  # noqa: E402
from torchao.quantization import quantize_  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3, stride=2, padding=1),
            torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 128, 3, stride=2, padding=1), torch.nn.ReLU())
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 256))


class LastHidden(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).last_hidden_state


def bert() -> torch.nn.Module:
    import transformers

    config = transformers.BertConfig(vocab_size=1000, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                     intermediate_size=1024, max_position_embeddings=128)
    return LastHidden(transformers.BertModel(config, add_pooling_layer=False))


MODELS = {"cnn": (CNN, lambda g: torch.randn(4, 3, 64, 64, generator=g)),
          "mlp": (mlp, lambda g: torch.randn(32, 512, generator=g)),
          "bert": (bert, lambda g: torch.randint(0, 1000, (2, 64), generator=g))}
TORCHAO = {"int8-weight-only": lambda: tq.Int8WeightOnlyConfig(),
           "int8-dynamic": lambda: tq.Int8DynamicActivationInt8WeightConfig(),
           "int4-weight-only-g32": lambda: tq.IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                                                    granularity=tq.PerGroup(32))}
# 4-bit weights need opset 21 (int4 and blocked DequantizeLinear, which onnxruntime runs as MatMulNBits)
OPSET_AT_LEAST = {"mlp-int4-weight-only-g32": 21}
CASES = ["cnn-static", "cnn-dynamic", "mlp-static", "mlp-dynamic", "bert-static", "bert-dynamic"] + \
        [f"mlp-{name}" for name in TORCHAO]


def quantized(case: str, model: torch.nn.Module, x: torch.Tensor) -> torch.nn.Module:
    how = case.split("-", 1)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how in ("static", "dynamic"):
            quantizer = xiq.X86InductorQuantizer()
            quantizer.set_global(xiq.get_default_x86_inductor_quantization_config(is_dynamic=how == "dynamic"))
            prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
            for _ in range(4):
                prepared(x)
            return convert_pt2e(prepared)
        quantize_(model, TORCHAO[how]())
        return model


def torch_onnx(model: torch.nn.Module, x: torch.Tensor, opset: int) -> bytes | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(model, (x,), dynamo=True, opset_version=opset, verbose=False)
        return program.model_proto.SerializeToString()
    except Exception as e:
        print(f"  torch.onnx failed: {type(e).__name__}: {str(e).strip().splitlines()[-1][:160]}")
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--inner", type=int, default=5)
    parser.add_argument("--opset", type=int, default=18)
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}; 1 thread, {args.rounds} rounds of "
          f"{args.inner} runs, medians; ratios to aten2onnx's float export")
    for case in args.cases.split(","):
        opset = max(args.opset, OPSET_AT_LEAST.get(case, 0))
        factory, example = MODELS[case.split("-", 1)[0]]
        model = factory().eval()
        x = example(torch.Generator().manual_seed(0))
        files = {"aten2onnx float": aten2onnx.export(model, (x,), opset=opset).model_proto.SerializeToString()}
        q_model = quantized(case, model, x)
        with torch.no_grad():
            want = q_model(x)
        want = (want.last_hidden_state if hasattr(want, "last_hidden_state") else want).numpy()
        files["aten2onnx quantized"] = aten2onnx.export(q_model, (x,), opset=opset).model_proto.SerializeToString()
        if case in OPSET_AT_LEAST:  # the 4-bit case: MatMulNBits written by the exporter too
            files["aten2onnx onnxruntime"] = aten2onnx.export(q_model, (x,), opset=opset, optimize="onnxruntime"
                                                              ).model_proto.SerializeToString()
        print(f"\n{case} (opset {opset})")
        theirs = torch_onnx(q_model, x, opset)
        if theirs is not None:
            files["torch.onnx quantized"] = theirs
        sessions = {label: session(data) for label, data in files.items()}
        feeds = {label: {s.get_inputs()[0].name: x.numpy()} for label, s in sessions.items()}
        scale = max(float(np.abs(want).max()), np.finfo(np.float32).tiny)
        errors = {label: float(np.abs(s.run(None, feeds[label])[0] - want).max()) / scale
                  for label, s in sessions.items()}
        calls = {label: (lambda s=s, f=feeds[label]: s.run(None, f)) for label, s in sessions.items()}
        medians = measure(calls, args.rounds, args.inner)
        anchor = medians["aten2onnx float"]
        print(f"  {'export':24} {'nodes':>6} {'MB':>7} {'ms':>8} {'vs float':>9} {'rel. err':>9}")
        for label, data in files.items():
            nodes = len(onnx.load_from_string(data).graph.node)
            print(f"  {label:24} {nodes:6d} {len(data) / 2**20:7.2f} {medians[label] * 1e3:8.3f} "
                  f"{medians[label] / anchor:8.2f}x {errors[label]:9.1e}")
        if "torch.onnx quantized" in medians:
            print(f"  aten2onnx quantized / torch.onnx quantized: latency "
                  f"{medians['aten2onnx quantized'] / medians['torch.onnx quantized']:.2f}x, size "
                  f"{len(files['aten2onnx quantized']) / len(files['torch.onnx quantized']):.2f}x")


if __name__ == "__main__":
    main()
